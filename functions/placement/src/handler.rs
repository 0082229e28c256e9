//! `POST {base}/{code2desId}/placement` `{"nodeId"}`: records the FIRST Figma root of a
//! completed job. Every later call, sequential or concurrent, answers that stored root.

use lambda_http::{Body, Request, Response};
use shared::http::{self, json_object, path_param, raw_body, required_str};
use shared::store::{self, Placed, Scope};
use shared::types::{Code2desId, NodeId, OrganizationId, ProjectId};
use shared::ApiError;

pub struct Deps {
    pub pool: deadpool_postgres::Pool,
}

impl Deps {
    pub async fn from_env() -> Result<Self, shared::setup::SetupError> {
        let (pool, _) = shared::setup::db_pool().await?;
        Ok(Self { pool })
    }
}

pub async fn handle(deps: &Deps, req: Request) -> Response<Body> {
    let request_id = http::request_id(&req);
    http::finish("placement", &request_id, run(deps, &req, &request_id).await)
}

async fn run(deps: &Deps, req: &Request, request_id: &str) -> Result<Response<Body>, ApiError> {
    let bytes = raw_body(req)?;
    let subject = http::subject(req)?;
    let organization_id = OrganizationId::parse(path_param(req, "organizationId")?)?;
    let project_id = ProjectId::parse(path_param(req, "projectId")?)?;
    let id = Code2desId::parse(path_param(req, "code2desId")?)?;
    let node_id = NodeId::parse(required_str(&json_object(bytes)?, "nodeId")?)?;
    let scope = Scope {
        organization_id: organization_id.get(),
        project_id: project_id.get(),
        subject: subject.as_str().to_owned(),
    };
    let client = shared::db::conn(&deps.pool).await?;
    match store::place(&**client, &scope, id, node_id.as_str()).await? {
        Placed::Done(job) => Ok(http::ok_json(200, &job.view(), request_id)),
        Placed::NotFound => Err(ApiError::NotFound("job not found")),
        Placed::NotCompleted(job) => Err(ApiError::conflict(
            "job_not_completed",
            format!("only a completed job can be placed; this one is {}", job.status.api_name()),
        )),
    }
}
