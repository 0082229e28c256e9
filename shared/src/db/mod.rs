//! The PostgreSQL adapter: every SQL statement of the service and everything needed to send
//! one. It may import the domain, `error` and `config`; nothing above it (no HTTP, no AWS).
//!
//! - `connect`: settings, TLS, the pool, the time bound on a statement;
//! - `migrate`: the schema (`migrations/`), `roles`: the application role's login;
//! - `sql`: the fragments every statement shares, and the one binding of leading parameters;
//! - `columns` and `record`: reading a [`crate::domain::job::Job`] from rows;
//! - one module of statements per feature: `trigger`, `retry`, `lifecycle`, `placement`,
//!   `webhook`, `sweep`, `purge`, `quota` (the organization's lock, and the fragments of the
//!   quota check that trigger's and retry's statements share). A new statement goes into its
//!   feature's module, as a `const` SQL text and one `pub async fn` that binds it.

pub mod columns;
pub mod connect;
pub mod error;
pub mod lifecycle;
pub mod migrate;
pub mod placement;
pub mod purge;
pub mod quota;
pub mod record;
pub mod retry;
pub mod roles;
pub(crate) mod sql;
pub mod sweep;
pub mod trigger;
pub mod webhook;
