//! Lifecycle's routes, told apart by the event's route key (`shared::http::routes`):
//! - `GET {base}` (discovery list) and `GET {base}/{code2desId}` (one job): the row as
//!   control-plane metadata, never the nonce or an S3 location. Reads only: no statement here
//!   writes, and an overdue job reads as failed `timed out` all the same (SPEC section 7);
//! - `POST {base}/{code2desId}/cancel` and `DELETE {base}/{code2desId}`: the user's changes
//!   to a job's lifecycle.

use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use shared::app::resources::Resources;
use shared::config::SetupError;
use shared::db::connect::conn;
use shared::db::lifecycle::{self as statements, Cancelled, ListQuery};
use shared::domain::cursor::{self, Binding};
use shared::domain::ids::FigmaFileKey;
use shared::domain::job::{Job, Policy, Status};
use shared::error::{bug, ErrorCode};
use shared::http::caller;
use shared::http::request::{self, query_param};
use shared::http::response::{empty, ok_json, respond, set_header, within_budget};
use shared::http::routes::RouteId;
use shared::http::view::{job_view, JobView};
use shared::obs::metrics;
use shared::ApiError;

pub const DEFAULT_LIMIT: i64 = 50;
pub const MAX_LIMIT: i64 = 100;
/// Seconds a client should wait before polling a processing job again (SPEC section 7).
pub const POLL_AFTER_SECS: u32 = 2;

pub struct Deps {
    pub pool: deadpool_postgres::Pool,
    /// Authenticates list cursors (see `shared::domain::cursor`).
    pub cursor_key: [u8; 32],
    pub policy: Policy,
}

impl Deps {
    pub async fn new(r: &Resources) -> Result<Self, SetupError> {
        Ok(Self { pool: r.pool().await?, cursor_key: r.cursor_key().await?, policy: r.settings.policy() })
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

pub async fn handle(deps: &Deps, req: Request) -> Response<Body> {
    let request_id = request::request_id(&req);
    let req = &req;
    let (name, outcome) = match request::route(req).map(|r| r.id) {
        Some(RouteId::Get) => ("lifecycle.get", within_budget(req, get(deps, req, &request_id)).await),
        Some(RouteId::Cancel) => ("lifecycle.cancel", within_budget(req, cancel(deps, req, &request_id)).await),
        Some(RouteId::Delete) => ("lifecycle.delete", within_budget(req, delete(deps, req)).await),
        Some(RouteId::List) => ("lifecycle.list", within_budget(req, list(deps, req, &request_id)).await),
        // API Gateway sends this function only its own routes: anything else is a deployment bug.
        other => ("lifecycle", Err(bug("an event of a route lifecycle does not serve", format!("{other:?}")))),
    };
    respond(name, &request_id, outcome)
}

/// One job; a processing one says when to look again.
fn job_response(status: StatusCode, deps: &Deps, job: &Job, request_id: &str) -> Response<Body> {
    let mut resp = ok_json(status, &job_view(job, &deps.policy), request_id);
    if job.status == Status::Processing {
        set_header(&mut resp, lambda_http::http::header::RETRY_AFTER, &POLL_AFTER_SECS.to_string());
    }
    resp
}

async fn get(deps: &Deps, req: &Request, request_id: &str) -> Result<Response<Body>, ApiError> {
    let j = caller::job_ref(req)?;
    let client = conn(&deps.pool).await?;
    match statements::get_job(&**client, &j, deps.policy.deadline).await? {
        Some(job) => Ok(job_response(StatusCode::OK, deps, &job, request_id)),
        None => Err(ApiError::NotFound("job not found")),
    }
}

async fn cancel(deps: &Deps, req: &Request, request_id: &str) -> Result<Response<Body>, ApiError> {
    let j = caller::job_ref(req)?;
    let client = conn(&deps.pool).await?;
    match statements::cancel(&**client, &j, deps.policy.deadline).await? {
        Cancelled::NotFound => Err(ApiError::NotFound("job not found")),
        Cancelled::Now(job) => {
            metrics::job_cancelled(
                Some(job.updated_at.signed_duration_since(job.attempt_started_at)).and_then(|d| d.to_std().ok()),
            );
            tracing::info!(code2des_id = %job.id, attempt = job.attempt, "job cancelled");
            Ok(job_response(StatusCode::OK, deps, &job, request_id))
        }
        // Cancelling a cancelled job answers it again; any other terminal job lost nothing.
        Cancelled::Unchanged(job) if job.is_cancelled() => Ok(job_response(StatusCode::OK, deps, &job, request_id)),
        Cancelled::Unchanged(job) => Err(ApiError::conflict(
            ErrorCode::AlreadyTerminal,
            format!(
                "the job is already {}{}",
                job.status.api_name(),
                job.error_message.as_deref().map(|m| format!(" ({m})")).unwrap_or_default()
            ),
        )),
    }
}

async fn delete(deps: &Deps, req: &Request) -> Result<Response<Body>, ApiError> {
    let j = caller::job_ref(req)?;
    let client = conn(&deps.pool).await?;
    if statements::delete_job(&**client, &j).await? {
        tracing::info!(code2des_id = %j.id, "job deleted");
        Ok(empty(StatusCode::NO_CONTENT))
    } else {
        Err(ApiError::NotFound("job not found"))
    }
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

async fn list(deps: &Deps, req: &Request, request_id: &str) -> Result<Response<Body>, ApiError> {
    let scope = caller::scope(req)?;

    let figma_file_key = query_param(req, "figmaFileKey")?.map(FigmaFileKey::parse).transpose()?;
    let status = query_param(req, "status")?.map(|s| Status::parse_api("status", s)).transpose()?;
    let limit = parse_limit(query_param(req, "limit")?)?;
    let binding = Binding {
        organization_id: scope.organization_id.get(),
        project_id: scope.project_id.get(),
        figma_file_key: figma_file_key.as_ref().map(FigmaFileKey::as_str),
        status: status.map(Status::api_name),
    };
    let after = query_param(req, "cursor")?.map(|c| cursor::decode(&deps.cursor_key, c, &binding)).transpose()?;

    let client = conn(&deps.pool).await?;
    let q = ListQuery { figma_file_key: figma_file_key.as_ref(), status, after, limit: limit + 1 };
    let mut jobs = statements::list_jobs(&**client, &scope, &q, deps.policy.deadline)
        .await?
        .ok_or(ApiError::NotFound("project not found"))?;
    let more = jobs.len() as i64 > limit;
    jobs.truncate(limit as usize);
    let next_cursor = match jobs.last() {
        Some(last) if more => Some(cursor::encode(&deps.cursor_key, last.created_at, last.id, &binding)),
        _ => None,
    };
    let page = Page { items: jobs.iter().map(|j| job_view(j, &deps.policy)).collect(), next_cursor };
    Ok(ok_json(StatusCode::OK, &page, request_id))
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
