//! `POST {base}/{code2desId}/placement` `{"nodeId"}`: records the FIRST Figma root of a
//! completed job. Every later call, sequential or concurrent, answers that stored root.

use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde::Deserialize;
use shared::app::resources::Resources;
use shared::config::SetupError;
use shared::db::connect::conn;
use shared::db::placement::{place, Placed};
use shared::domain::fields::{json_object, members};
use shared::domain::ids::NodeId;
use shared::domain::job::Policy;
use shared::error::ErrorCode;
use shared::http::caller;
use shared::http::request::{raw_body, request_id};
use shared::http::response::{ok_json, serve};
use shared::http::view::job_view;
use shared::ApiError;

pub struct Deps {
    pub pool: deadpool_postgres::Pool,
    pub policy: Policy,
}

impl Deps {
    pub async fn new(r: &Resources) -> Result<Self, SetupError> {
        Ok(Self { pool: r.pool().await?, policy: r.settings.policy() })
    }
}

impl shared::app::function::Function for Deps {
    fn new(r: &Resources) -> impl std::future::Future<Output = Result<Self, SetupError>> {
        Deps::new(r)
    }

    fn handle(&self, req: Request) -> impl std::future::Future<Output = Response<Body>> + Send {
        handle(self, req)
    }
}

/// The placement's body (openapi.yaml's `PlacementRequest`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PlacementBody {
    node_id: NodeId,
}

pub async fn handle(deps: &Deps, req: Request) -> Response<Body> {
    let request_id = request_id(&req);
    serve("placement", &request_id, &req, run(deps, &req, &request_id)).await
}

async fn run(deps: &Deps, req: &Request, request_id: &str) -> Result<Response<Body>, ApiError> {
    let bytes = raw_body(req)?;
    let j = caller::job_ref(req)?;
    let PlacementBody { node_id } = members(&json_object(bytes)?)?;
    let client = conn(&deps.pool).await?;
    match place(&**client, &j, &node_id, deps.policy.deadline).await? {
        Placed::Done(job) => Ok(ok_json(StatusCode::OK, &job_view(&job, &deps.policy), request_id)),
        Placed::NotFound => Err(ApiError::NotFound("job not found")),
        Placed::NotCompleted(job) => Err(ApiError::conflict(
            ErrorCode::JobNotCompleted,
            format!("only a completed job can be placed; this one is {}", job.status.api_name()),
        )),
    }
}
