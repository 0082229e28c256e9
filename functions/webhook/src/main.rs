// A Lambda instance handles one event at a time, on a fraction of a vCPU at its memory size:
// worker threads would add only their start-up to the cold start (docs/PERFORMANCE.md §1).
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    shared::app::function::run::<code2des_webhook::handler::Deps>().await
}
