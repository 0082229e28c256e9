//! `POST /code2des/webhook`: the worker's signed terminal report. One fenced UPDATE decides;
//! when it changes nothing, a fresh read of the row explains why (404, 409, 410, or 200 for a
//! harmless replay of the outcome already stored).

use std::time::Duration;

use lambda_http::{Body, Request, Response};
use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;
use shared::http::{self, json_object, raw_body};
use shared::model::Job;
use shared::protocol::WebhookBody;
use shared::signature;
use shared::store::{self, Outcome, DEADLINE_ACTOR, WORKER_ACTOR};
use shared::types::Status;
use shared::ApiError;

pub struct Deps {
    pub pool: deadpool_postgres::Pool,
    pub secret: SecretString,
    pub bucket: String,
    pub deadline: Duration,
}

impl Deps {
    pub async fn from_env() -> Result<Self, shared::setup::SetupError> {
        let (pool, _) = shared::setup::db_pool().await?;
        Ok(Self {
            pool,
            secret: shared::setup::webhook_secret().await?,
            bucket: shared::setup::bucket()?,
            deadline: shared::setup::deadline()?,
        })
    }
}

pub async fn handle(deps: &Deps, req: Request) -> Response<Body> {
    let request_id = http::request_id(&req);
    http::finish("webhook", &request_id, run(deps, &req, &request_id).await)
}

#[derive(Serialize)]
struct Ack<'a> {
    code2des_id: &'a str,
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
    if let Err(e) = signature::verify(deps.secret.expose_secret().as_bytes(), header, bytes, now_unix()) {
        tracing::warn!(request_id, reason = %e, "webhook signature refused");
        return Err(ApiError::Unauthorized("invalid or missing Code2des-Signature"));
    }
    let body = WebhookBody::parse(&json_object(bytes)?, &deps.bucket)?;
    let outcome = Outcome {
        status: body.status,
        result_url: body.result_url.as_deref(),
        warning_count: body.warning_count,
        error_message: body.error_message.as_deref(),
    };
    let id = body.code2des_id.to_string();
    let ack = |status: Status| http::ok_json(200, &Ack { code2des_id: &id, status: status.api_name() }, request_id);

    let client = shared::db::conn(&deps.pool).await?;
    if store::finish(&**client, body.code2des_id, body.attempt, &body.nonce, &outcome, deps.deadline).await? {
        tracing::info!(code2des_id = %id, status = body.status.api_name(), "job finished");
        return Ok(ack(body.status));
    }
    // Nothing changed. Each pass reads the row as committed now; a pass that itself changes
    // the row (the deadline) reads again. Two passes always suffice; the third is a guard.
    for _ in 0..3 {
        let Some(f) = store::fence(&**client, body.code2des_id, deps.deadline).await? else {
            return Err(ApiError::NotFound("job not found"));
        };
        if f.job.attempt != body.attempt || !f.job.nonce.matches(&body.nonce) {
            return Err(ApiError::conflict("fenced", "attempt or nonce does not match the job"));
        }
        if f.deleted {
            return Err(ApiError::Gone("the job was deleted"));
        }
        match f.job.status {
            Status::Processing if f.overdue => {
                store::expire_one(&**client, body.code2des_id, deps.deadline).await?;
            }
            Status::Processing => {
                // Only at the deadline's edge; try the same fenced transition once more.
                if store::finish(&**client, body.code2des_id, body.attempt, &body.nonce, &outcome, deps.deadline)
                    .await?
                {
                    return Ok(ack(body.status));
                }
            }
            _ if same_outcome(&f.job, &body) => return Ok(ack(f.job.status)),
            _ => {
                let why = if f.job.updated_by == DEADLINE_ACTOR { "timed out" } else { f.job.status.api_name() };
                return Err(ApiError::conflict("already_terminal", format!("the job is already terminal ({why})")));
            }
        }
    }
    Err(ApiError::Unavailable("the database"))
}
