//! Observability: CloudWatch EMF metrics (SPEC section 8) and logging set-up. It imports nothing
//! of the crate but the domain.

pub mod metrics;
pub mod otlp_http;
pub mod telemetry;
pub mod trace;
