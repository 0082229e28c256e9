//! The domain: what a job, its ids, its worker protocol and its artifact are, as pure types and
//! functions. The bottom layer: it imports no other part of the crate, no adapter (no SQL, no
//! S3, no HTTP plumbing) and no answer. What it refuses it says in its own errors
//! ([`field_error::FieldError`], the artifact's reason, [`signature::SignatureError`]); the HTTP
//! edge alone turns them into statuses and messages (`crate::http::refusals`).

// First, so its `wire_enum!` is in scope for the modules after it.
#[macro_use]
pub mod wire;
pub mod artifact;
pub mod cursor;
pub mod field_error;
pub mod fields;
pub mod ids;
pub mod job;
pub mod keys;
pub mod protocol;
pub mod quota;
pub mod scope;
pub mod signature;
pub mod standard_webhooks;
