//! The domain: what a job, its ids, its worker protocol and its artifact are, as pure types and
//! functions. The bottom layer with `crate::error`: it imports no other part of the crate, and
//! no adapter (no SQL, no S3, no HTTP plumbing).

// First, so its `wire_enum!` is in scope for the modules after it.
#[macro_use]
pub mod wire;
pub mod artifact;
pub mod cursor;
pub mod fields;
pub mod ids;
pub mod job;
pub mod keys;
pub mod protocol;
pub mod quota;
pub mod scope;
pub mod signature;
pub mod standard_webhooks;
