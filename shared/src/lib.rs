//! The shared crate of the Code2Des backend, by layer (ARCHITECTURE.md draws it). Imports point
//! down this list, never up:
//!
//! | layer | holds | may import |
//! |---|---|---|
//! | [`error`], [`budget`], [`domain`] | the error codes and a request's time budget; ids, the job, the worker protocol, the artifact, cursors, signatures | nothing of the crate (domain: `error`) |
//! | [`config`], [`obs`] | typed settings from the environment; metrics and logs | the domain |
//! | [`db`], [`aws`], [`http`] | the adapters: SQL statements, AWS SDK calls, the HTTP edge | the layers above in this table |
//! | [`app`] | the resources built from settings, dispatching an attempt, webhook keys | every layer but `http` |
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
