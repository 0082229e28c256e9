//! The cold-start reference: a hello-world `lambda_http` function, as `cargo lambda new`
//! makes it (tracing subscriber, `run(service_fn)`), built with the workspace release profile.

use lambda_http::{run, service_fn, Body, Error, Request, Response};

async fn hello(_req: Request) -> Result<Response<Body>, Error> {
    Ok(Response::new(Body::Text("hello".into())))
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_http::tracing::init_default_subscriber();
    run(service_fn(hello)).await
}
