//! One Lambda entry point for the five functions: a function's dependencies are built once per
//! instance (the pool, the bucket, the keys), then its events are served one at a time.

use std::future::Future;

use lambda_http::{Body, Request, Response};

use crate::app::resources::Resources;
use crate::config::SetupError;

/// A function: its dependencies and its handler. Each function's `Deps` implements it, and its
/// `main.rs` is `shared::app::function::run::<Deps>()`.
pub trait Function: Sized + Sync {
    /// The dependencies, from the settings (once per instance, at its cold start).
    fn new(resources: &Resources) -> impl Future<Output = Result<Self, SetupError>>;
    /// One request's answer; never an error (every fault is an answer).
    fn handle(&self, req: Request) -> impl Future<Output = Response<Body>> + Send;
}

/// Runs `F` under the Lambda runtime: telemetry, the dependencies, then the event loop.
pub async fn run<F: Function>() -> Result<(), lambda_http::Error> {
    crate::obs::telemetry::init_lambda();
    let deps = F::new(&Resources::from_env()?).await?;
    let service = lambda_http::service_fn(|req| async { Ok::<_, std::convert::Infallible>(deps.handle(req).await) });
    if !crate::obs::trace::enabled() {
        return lambda_http::run(service).await;
    }
    // The runtime's OpenTelemetry layer flushes the spans after each invocation has posted its
    // response (so the export adds nothing to the client's wait) and before the runtime asks
    // for the next event, after which the instance may be frozen with spans still unsent.
    use lambda_runtime::layers::{OpenTelemetryFaasTrigger, OpenTelemetryLayer, TracingLayer};
    lambda_runtime::Runtime::new(lambda_http::Adapter::from(service))
        .layer(TracingLayer::new())
        .layer(OpenTelemetryLayer::new(crate::obs::trace::flush).with_trigger(OpenTelemetryFaasTrigger::Http))
        .run()
        .await
}
