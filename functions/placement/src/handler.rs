//! `POST {base}/{code2desId}/placement` `{"nodeId"}`: records the FIRST Figma root of a
//! completed job. Every later call, sequential or concurrent, answers that stored root.

use lambda_http::{Body, Request, Response};
use shared::caller::JobRef;
use shared::http::{self, json_object, raw_body, required_str};
use shared::settings::{Policy, Resources};
use shared::setup::SetupError;
use shared::store::{self, Placed};
use shared::types::NodeId;
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

pub async fn handle(deps: &Deps, req: Request) -> Response<Body> {
    let request_id = http::request_id(&req);
    http::finish("placement", &request_id, run(deps, &req, &request_id).await)
}

async fn run(deps: &Deps, req: &Request, request_id: &str) -> Result<Response<Body>, ApiError> {
    let bytes = raw_body(req)?;
    let j = JobRef::from_request(req)?;
    let node_id = NodeId::parse(required_str(&json_object(bytes)?, "nodeId")?)?;
    let client = shared::db::conn(&deps.pool).await?;
    match store::place(&**client, &j.scope, j.id, &node_id, deps.policy.deadline).await? {
        Placed::Done(job) => Ok(http::ok_json(200, &job.view(deps.policy.max_attempts), request_id)),
        Placed::NotFound => Err(ApiError::NotFound("job not found")),
        Placed::NotCompleted(job) => Err(ApiError::conflict(
            "job_not_completed",
            format!("only a completed job can be placed; this one is {}", job.status.api_name()),
        )),
    }
}
