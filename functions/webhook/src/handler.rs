//! `POST /code2des/webhook`: the worker's signed reports. A terminal report is one fenced
//! UPDATE; a progress report (`status: "processing"`) is fenced the same way. When the fence
//! refuses, a fresh read of the row explains why (404, 409, 410, or 200 for a harmless replay
//! of the outcome already stored).

use std::time::Duration;

use lambda_http::{Body, Request, Response};
use serde::Serialize;
use shared::app::resources::Resources;
use shared::app::webhook_keys::WebhookKeys;
use shared::config::SetupError;
use shared::db::connect::conn;
use shared::db::sweep::expire_one;
use shared::db::webhook::{fence, progress, record_outcome, AttemptRef, Outcome, Progressed};
use shared::domain::fields::json_object;
use shared::domain::ids::Code2desId;
use shared::domain::job::{Job, Status, DEADLINE_ACTOR, WORKER_ACTOR};
use shared::domain::protocol::WebhookBody;
use shared::domain::signature;
use shared::error::ErrorCode;
use shared::http::request::{raw_body, request_id};
use shared::http::response::{ok_json, respond};
use shared::obs::metrics::{self, Reason};
use shared::ApiError;

pub struct Deps {
    pub pool: deadpool_postgres::Pool,
    pub keys: WebhookKeys,
    pub bucket: String,
    pub deadline: Duration,
}

impl Deps {
    pub async fn new(r: &Resources) -> Result<Self, SetupError> {
        Ok(Self {
            pool: r.pool().await?,
            keys: r.webhook_keys().await?,
            bucket: r.settings.bucket()?.to_owned(),
            deadline: r.settings.deadline,
        })
    }
}

pub async fn handle(deps: &Deps, req: Request) -> Response<Body> {
    let request_id = request_id(&req);
    let outcome = run(deps, &req, &request_id).await;
    if let Err(e) = &outcome {
        // Every refusal of a worker's report is counted by why (SPEC section 8).
        let reason = match e {
            ApiError::Unauthorized(_) => Some(Reason::Signature),
            ApiError::Conflict { code: ErrorCode::Fenced, .. } => Some(Reason::Fenced),
            ApiError::Conflict { code: ErrorCode::AlreadyTerminal, .. } => Some(Reason::AlreadyTerminal),
            ApiError::Gone(_) => Some(Reason::Deleted),
            ApiError::Invalid { .. } | ApiError::PayloadTooLarge { .. } | ApiError::NotFound(_) => {
                Some(Reason::Invalid)
            }
            _ => None,
        };
        if let Some(r) = reason {
            metrics::webhook_rejected(r);
        }
    }
    respond("webhook", &request_id, outcome)
}

#[derive(Serialize)]
struct Ack {
    code2des_id: Code2desId,
    status: &'static str,
}

fn now_unix() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// The stored outcome is the one this body reports (a replay), and it came from a worker.
fn same_outcome(job: &Job, body: &WebhookBody) -> bool {
    job.updated_by == WORKER_ACTOR
        && job.status == body.status
        && job.result_url == body.result_url
        && job.warning_count == body.warning_count
        && job.error_message == body.error_message
}

async fn run(deps: &Deps, req: &Request, request_id: &str) -> Result<Response<Body>, ApiError> {
    let bytes = raw_body(req)?;
    let header = req.headers().get(signature::HEADER).and_then(|v| v.to_str().ok());
    if let Err(e) = deps.keys.verify(header, bytes, now_unix()).await {
        tracing::warn!(request_id, reason = %e, "webhook signature refused");
        return Err(ApiError::Unauthorized("invalid or missing Code2des-Signature"));
    }
    let body = WebhookBody::parse(&json_object(bytes)?, &deps.bucket)?;
    let at = AttemptRef { id: body.code2des_id, attempt: body.attempt, nonce: &body.nonce };
    let id = body.code2des_id;
    let ack = |status: Status| ok_json(200, &Ack { code2des_id: id, status: status.api_name() }, request_id);

    let client = conn(&deps.pool).await?;
    let outcome = Outcome {
        status: body.status,
        result_url: body.result_url.as_deref(),
        warning_count: body.warning_count,
        error_message: body.error_message.as_deref(),
    };
    // One attempt at the fenced write; if it is refused, explain why from the row as it is.
    let mut write = true;
    for _ in 0..3 {
        if write {
            match &body.progress {
                Some(p) => match progress(&**client, at, p.percent, &p.stage, deps.deadline).await? {
                    Progressed::Stored | Progressed::Ignored => return Ok(ack(Status::Processing)),
                    Progressed::Fenced => {}
                },
                None => {
                    if let Some(took) = record_outcome(&**client, at, &outcome, deps.deadline).await? {
                        match body.status {
                            Status::Completed => metrics::job_completed(Some(took)),
                            _ => metrics::job_failed(Some(took)),
                        }
                        tracing::info!(code2des_id = %id, status = body.status.api_name(), "job finished");
                        return Ok(ack(body.status));
                    }
                }
            }
        }
        write = false;
        // Nothing changed. Each pass reads the row as committed now; a pass that itself changes
        // the row (the deadline) reads again. Two passes always suffice; the third is a guard.
        let Some(f) = fence(&**client, body.code2des_id, deps.deadline).await? else {
            return Err(ApiError::NotFound("job not found"));
        };
        if f.job.attempt != body.attempt || !f.job.nonce.matches(&body.nonce) {
            return Err(ApiError::conflict(ErrorCode::Fenced, "attempt or nonce does not match the job"));
        }
        if f.deleted {
            return Err(ApiError::Gone("the job was deleted"));
        }
        match f.job.status {
            Status::Processing if f.overdue => {
                if expire_one(&**client, body.code2des_id, deps.deadline).await? {
                    metrics::job_timed_out(1);
                }
            }
            // Only at the deadline's edge: the fenced write is tried once more.
            Status::Processing => write = true,
            _ if body.progress.is_none() && same_outcome(&f.job, &body) => return Ok(ack(f.job.status)),
            _ => {
                let why = if f.job.updated_by == DEADLINE_ACTOR {
                    "timed out"
                } else if f.job.is_cancelled() {
                    "cancelled"
                } else {
                    f.job.status.api_name()
                };
                return Err(ApiError::conflict(
                    ErrorCode::AlreadyTerminal,
                    format!("the job is already terminal ({why})"),
                ));
            }
        }
    }
    Err(ApiError::Unavailable("the database"))
}
