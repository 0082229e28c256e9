use lambda_http::{run, service_fn, Error};

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::telemetry::init_lambda();
    let deps = code2des_result::handler::Deps::from_env().await?;
    run(service_fn(|req| async {
        Ok::<_, std::convert::Infallible>(code2des_result::handler::handle(&deps, req).await)
    }))
    .await
}
