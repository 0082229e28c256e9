//! The shared crate of the Code2Des backend: the `code2des` table model and all of its SQL,
//! the newtypes every outside input is parsed into, the worker protocol, settings and secrets,
//! and the HTTP plumbing the five Lambda handlers share.

pub mod artifact;
pub mod bucket;
pub mod caller;
pub mod cursor;
pub mod db;
pub mod dispatch;
pub mod error;
pub mod http;
pub mod metrics;
pub mod model;
pub mod protocol;
pub mod rds_iam;
pub mod record;
pub mod routes;
pub mod settings;
pub mod setup;
pub mod signature;
pub mod store;
pub mod telemetry;
pub mod types;
pub mod webhook_keys;

pub use error::ApiError;
pub use lambda_http;
