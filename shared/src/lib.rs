//! The shared crate of the Code2Des backend, by layer (ARCHITECTURE.md draws it). Imports point
//! down this list, never up:
//!
//! | layer | holds | may import |
//! |---|---|---|
//! | [`error`], [`budget`], [`domain`] | the error codes and a request's time budget; ids, the job, the worker protocol, the artifact, cursors, signatures (the domain refuses in its own `FieldError`) | nothing of the crate |
//! | [`config`], [`obs`] | typed settings from the environment; metrics and logs | the layers above (`obs` also `config`) |
//! | [`db`], [`aws`] | the adapters: SQL statements (`DbError`), AWS SDK calls (`BucketError`) | the layers above, not each other |
//! | [`http`] | the edge: the only layer, with `error`, that turns errors into answers (`refusals`, `faults`) | the layers above; of `db` and `aws` only their errors |
//! | [`app`] | the resources built from settings, dispatching an attempt (`DispatchError`), webhook keys | every layer but `http` |
//!
//! `shared/tests/layers.rs` holds every file of every folder to this table.
//!
//! The five functions (`functions/`) and the operations functions (`ops/`) stand on all of it.

pub mod app;
pub mod aws;
pub mod budget;
pub mod config;
pub mod db;
pub mod domain;
pub mod error;
pub mod http;
pub mod obs;

pub use error::ApiError;
pub use lambda_http;
