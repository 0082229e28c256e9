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
    lambda_http::run(lambda_http::service_fn(|req| async { Ok::<_, std::convert::Infallible>(deps.handle(req).await) }))
        .await
}
