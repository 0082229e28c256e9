//! `GET {base}` (discovery list) and `GET {base}/{code2desId}` (one job): the row as
//! control-plane metadata. Never the nonce, never an S3 location.

use std::time::Duration;

use lambda_http::{Body, Request, RequestExt, Response};
use serde::Serialize;
use shared::cursor::{self, Binding};
use shared::http::{self, path_param, query_param};
use shared::model::JobView;
use shared::store::{self, ListQuery, Scope};
use shared::types::{Code2desId, FigmaFileKey, OrganizationId, ProjectId, Status};
use shared::ApiError;

pub const DEFAULT_LIMIT: i64 = 50;
pub const MAX_LIMIT: i64 = 100;

pub struct Deps {
    pub pool: deadpool_postgres::Pool,
    /// Authenticates list cursors (see `shared::cursor`).
    pub cursor_key: [u8; 32],
    pub deadline: Duration,
}

impl Deps {
    pub async fn from_env() -> Result<Self, shared::setup::SetupError> {
        let (pool, cfg) = shared::setup::db_pool().await?;
        Ok(Self { pool, cursor_key: cfg.cursor_key(), deadline: shared::setup::deadline()? })
    }
}

pub async fn handle(deps: &Deps, req: Request) -> Response<Body> {
    let request_id = http::request_id(&req);
    let is_item = req.path_parameters_ref().and_then(|p| p.first("code2desId")).is_some();
    let route = if is_item { "lifecycle.get" } else { "lifecycle.list" };
    http::finish(route, &request_id, run(deps, &req, &request_id, is_item).await)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Page<'a> {
    items: Vec<JobView<'a>>,
    next_cursor: Option<String>,
}

fn parse_limit(raw: Option<&str>) -> Result<i64, ApiError> {
    let Some(raw) = raw else {
        return Ok(DEFAULT_LIMIT);
    };
    let bad = || ApiError::invalid("limit", format!("must be an integer from 1 to {MAX_LIMIT}"));
    if raw.len() > 3 || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    match raw.parse::<i64>() {
        Ok(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
        _ => Err(bad()),
    }
}

async fn run(deps: &Deps, req: &Request, request_id: &str, is_item: bool) -> Result<Response<Body>, ApiError> {
    let subject = http::subject(req)?;
    let organization_id = OrganizationId::parse(path_param(req, "organizationId")?)?;
    let project_id = ProjectId::parse(path_param(req, "projectId")?)?;
    let scope = Scope {
        organization_id: organization_id.get(),
        project_id: project_id.get(),
        subject: subject.as_str().to_owned(),
    };

    if is_item {
        let id = Code2desId::parse(path_param(req, "code2desId")?)?;
        let client = shared::db::conn(&deps.pool).await?;
        return match store::get_job(&**client, &scope, id, deps.deadline).await? {
            Some(job) => Ok(http::ok_json(200, &job.view(), request_id)),
            None => Err(ApiError::NotFound("job not found")),
        };
    }

    let figma_file_key = query_param(req, "figmaFileKey")?.map(FigmaFileKey::parse).transpose()?;
    let status = query_param(req, "status")?.map(|s| Status::parse_api("status", s)).transpose()?;
    let limit = parse_limit(query_param(req, "limit")?)?;
    let binding = Binding {
        organization_id: scope.organization_id,
        project_id: scope.project_id,
        figma_file_key: figma_file_key.as_ref().map(FigmaFileKey::as_str),
        status: status.map(Status::api_name),
    };
    let after = query_param(req, "cursor")?.map(|c| cursor::decode(&deps.cursor_key, c, &binding)).transpose()?;

    let client = shared::db::conn(&deps.pool).await?;
    let q = ListQuery { figma_file_key: binding.figma_file_key, status, after, limit: limit + 1 };
    let mut jobs =
        store::list_jobs(&**client, &scope, &q, deps.deadline).await?.ok_or(ApiError::NotFound("project not found"))?;
    let more = jobs.len() as i64 > limit;
    jobs.truncate(limit as usize);
    let next_cursor = match jobs.last() {
        Some(last) if more => Some(cursor::encode(&deps.cursor_key, last.created_at, &last.id, &binding)),
        _ => None,
    };
    let page = Page { items: jobs.iter().map(|j| j.view()).collect(), next_cursor };
    Ok(http::ok_json(200, &page, request_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_is_one_to_one_hundred() {
        assert_eq!(parse_limit(None).unwrap(), 50);
        assert_eq!(parse_limit(Some("1")).unwrap(), 1);
        assert_eq!(parse_limit(Some("100")).unwrap(), 100);
        for bad in ["0", "101", "-1", "1.5", "abc", " 5", "0100", "99999999999999999999"] {
            assert!(parse_limit(Some(bad)).is_err(), "{bad}");
        }
    }
}
