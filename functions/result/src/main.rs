use lambda_http::{run, service_fn, Error};

// A Lambda instance handles one event at a time, on a fraction of a vCPU at its memory size:
// worker threads would add only their start-up to the cold start (docs/PERFORMANCE.md §1).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    shared::obs::telemetry::init_lambda();
    let deps = code2des_result::handler::Deps::new(&shared::app::resources::Resources::from_env()?).await?;
    run(service_fn(|req| async {
        Ok::<_, std::convert::Infallible>(code2des_result::handler::handle(&deps, req).await)
    }))
    .await
}
