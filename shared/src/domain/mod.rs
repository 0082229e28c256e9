//! The domain: what a job, its ids, its worker protocol and its artifact are, as pure types and
//! functions. The bottom layer: it imports no other part of the crate, no adapter (no SQL, no
//! S3, no HTTP plumbing) and no answer. What it refuses it says in its own errors
//! ([`field_error::FieldError`], the artifact's reason, [`signature::SignatureError`]); the HTTP
//! edge alone turns them into statuses and messages (`crate::http::refusals`).

pub mod artifact;
pub mod cursor;
pub mod fields;
pub mod job;
pub mod quota;
pub mod scope;
pub mod signature;
pub mod standard_webhooks;

// The wire (`code2des-wire`): the types every participant reads and writes, and the ids and
// keys they carry, under the names the rest of the crate has always used.
pub use code2des_wire as wire;
pub use code2des_wire::{field_error, ids, keys, protocol, trace};
