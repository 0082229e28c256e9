use lambda_runtime::{run, service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    shared::obs::telemetry::init_lambda();
    // A set-up failure (an unreadable secret, a bad variable) does not end the process: as the
    // PreTraffic hook, the function must still report Failed, or CodeDeploy would wait an hour
    // for an answer. Every invocation then answers the set-up error.
    let deps = code2des_migrate::Deps::from_env().await.map_err(|e| e.to_string());
    if let Err(e) = &deps {
        tracing::error!(error = %e, "migrate function set-up failed");
    }
    let reporter = code2des_migrate::hook::Reporter::from_env().await;
    run(service_fn(|event: LambdaEvent<serde_json::Value>| {
        code2des_migrate::hook::dispatch(deps.as_ref().map_err(String::as_str), &reporter, event)
    }))
    .await
}
