//! Logging set-up, and the span export when one is asked for (`crate::obs::trace`). Lambda: the
//! runtime's subscriber, which follows the function's log configuration (JSON when
//! `AWS_LAMBDA_LOG_FORMAT=JSON`, level from `AWS_LAMBDA_LOG_LEVEL` or `RUST_LOG`). Elsewhere:
//! human-readable lines, or JSON with `LOG_FORMAT=json`.
//!
//! With `OTEL_EXPORTER_OTLP_ENDPOINT` set, the same log lines go out through a layer of their own
//! beside the span exporter's: the log level filters the lines only, and spans are exported from
//! the INFO level whatever it is (a `RUST_LOG=warn` must not cut a job's trace in pieces).

use tracing_subscriber::filter::{EnvFilter, LevelFilter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

use crate::obs::trace;

type Boxed = Box<dyn Layer<Registry> + Send + Sync>;

pub fn init_lambda() {
    if !trace::requested() {
        lambda_http::tracing::init_default_subscriber();
        return;
    }
    // The runtime's own default subscriber, rebuilt so that the span exporter can sit beside it.
    let level = std::env::var("AWS_LAMBDA_LOG_LEVEL").or_else(|_| std::env::var("RUST_LOG"));
    let level = level.ok().and_then(|l| l.parse::<LevelFilter>().ok()).unwrap_or(LevelFilter::INFO);
    let filter = EnvFilter::builder().with_default_directive(level.into()).from_env_lossy();
    let json = std::env::var("AWS_LAMBDA_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    let lines = tracing_subscriber::fmt::layer().with_target(false).without_time();
    let lines: Boxed = if json { lines.json().boxed() } else { lines.boxed() };
    let service = std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|_| "code2des".into());
    install(lines.with_filter(filter).boxed(), &service);
}

pub fn init_local() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    if !trace::requested() {
        let builder = tracing_subscriber::fmt().with_env_filter(filter).with_target(false);
        // try_init: a test harness may have installed one already.
        if crate::config::json_logs() {
            let _ = builder.json().flatten_event(true).try_init();
        } else {
            let _ = builder.try_init();
        }
        return;
    }
    let lines = tracing_subscriber::fmt::layer().with_target(false);
    let lines: Boxed =
        if crate::config::json_logs() { lines.json().flatten_event(true).boxed() } else { lines.boxed() };
    // The program's name (code2des-local, code2des-worker) names the service.
    let program = std::env::args().next().unwrap_or_default();
    let service = std::path::Path::new(&program).file_name().and_then(|n| n.to_str()).unwrap_or("code2des");
    install(lines.with_filter(filter).boxed(), service);
}

/// The log lines and, when it can be built, the span exporter; a set-up that fails (an
/// unknown protocol) is logged and the process runs on without spans.
fn install(lines: Boxed, service: &str) {
    let (spans, problem): (Option<Boxed>, _) = match trace::layer::<Registry>(service) {
        Ok(layer) => (layer.map(|l| l.with_filter(LevelFilter::INFO).boxed()), None),
        Err(e) => (None, Some(e)),
    };
    // try_init: a test harness may have installed one already.
    let _ = tracing_subscriber::registry().with(vec![lines].into_iter().chain(spans).collect::<Vec<_>>()).try_init();
    if let Some(e) = problem {
        tracing::error!(error = %e, "spans are not exported");
    }
}
