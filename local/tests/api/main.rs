//! Handler tests, one module per route or rule, named after the SPEC rule each proves.
//! Real PostgreSQL, a real S3-compatible server on loopback, the same events as `sam local`.
#![allow(clippy::disallowed_methods)] // tests may panic on a row that does not read: that is a failure

mod helpers;

mod bootstrap;
mod caching;
mod cancel;
mod deadline;
mod deadline_rule;
mod delete;
mod events;
mod faults;
mod lifecycle;
mod local_postgres;
mod local_stack;
mod local_worker_keys;
mod placement;
mod progress;
mod progress_final;
mod quota;
mod result_get;
mod retention;
mod retry;
mod scale;
mod standard_webhooks;
mod sweep;
mod trigger;
mod viewports;
mod webhook;
