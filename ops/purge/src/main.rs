use lambda_runtime::{run, service_fn, Error, LambdaEvent};

// One event at a time per instance, as the API functions (docs/PERFORMANCE.md §1).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::obs::telemetry::init_lambda();
    let deps = code2des_purge::Deps::new(&shared::app::resources::Resources::from_env()?).await?;
    run(service_fn(|event: LambdaEvent<serde_json::Value>| code2des_purge::handle(&deps, event))).await
}
