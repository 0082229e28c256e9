//! Logging set-up. Lambda: the runtime's subscriber, which follows the function's log
//! configuration (JSON when `AWS_LAMBDA_LOG_FORMAT=JSON`, level from `AWS_LAMBDA_LOG_LEVEL`
//! or `RUST_LOG`). Elsewhere: human-readable lines, or JSON with `LOG_FORMAT=json`.

pub fn init_lambda() {
    lambda_http::tracing::init_default_subscriber();
}

pub fn init_local() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_target(false);
    // try_init: a test harness may have installed one already.
    if crate::config::json_logs() {
        let _ = builder.json().flatten_event(true).try_init();
    } else {
        let _ = builder.try_init();
    }
}
