use lambda_runtime::{run, service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::obs::telemetry::init_lambda();
    let deps = code2des_migrate::Deps::from_env().await?;
    run(service_fn(|event: LambdaEvent<serde_json::Value>| code2des_migrate::handle(&deps, event))).await
}
