//! `POST /code2des/webhook`: the worker's signed reports. A terminal report is one fenced
//! UPDATE; a progress report (`status: "processing"`) is fenced the same way. When the fence
//! refuses, a fresh read of the row explains why (404, 409, 410, or 200 for a harmless replay
//! of the outcome already stored).
//!
//! Signed with Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`: `v1`
//! HMAC or `v1a` ed25519), or with the deprecated `Code2des-Signature` while `LEGACY_SIGNATURE`
//! is on (counted as `LegacySignatureUsed`). A Standard Webhooks delivery is idempotent by its
//! `webhook-id`: its answer (200, 409, 410) is stored, and a redelivery of the id is answered
//! the same, status and body, whatever the job has become since.
//!
//! Round trips to PostgreSQL: an accepted report, one (the fenced statement stores the answer
//! itself); a refused one, the fenced statement, the read that explains it (which also finds an
//! answer given before) and, for a first answer, the statement that stores it.

use std::time::Duration;

use lambda_http::{Body, Request, Response};
use serde::Serialize;
use shared::app::resources::Resources;
use shared::app::webhook_keys::WebhookKeys;
use shared::app::webhook_keys::{Delivery, Verified, VerifyError};
use shared::config::SetupError;
use shared::db::connect::conn;
use shared::db::sweep::expire_one;
use shared::db::webhook::{
    fence_for, progress_for, record_delivery, record_outcome_for, AttemptRef, DeliveryRef, Outcome, Progressed,
};
use shared::domain::fields::json_object;
use shared::domain::ids::Code2desId;
use shared::domain::job::{Job, Status, DEADLINE_ACTOR, WORKER_ACTOR};
use shared::domain::protocol::WebhookBody;
use shared::domain::signature;
use shared::domain::standard_webhooks as sw;
use shared::error::ErrorCode;
use shared::http::request::{raw_body, request_id};
use shared::http::response::{error_response, respond, within_budget};
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

impl shared::app::function::Function for Deps {
    fn new(r: &Resources) -> impl std::future::Future<Output = Result<Self, SetupError>> {
        Deps::new(r)
    }

    fn handle(&self, req: Request) -> impl std::future::Future<Output = Response<Body>> + Send {
        handle(self, req)
    }
}

pub async fn handle(deps: &Deps, req: Request) -> Response<Body> {
    let request_id = request_id(&req);
    let outcome = within_budget(&req, run(deps, &req, &request_id)).await;
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

fn header<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

/// A JSON response with a body rendered before (an ack, or an answer stored for a webhook-id);
/// a status that is not one (never stored: the table's CHECK) is a logged 500, never a 200.
fn stored(status: u16, body: String) -> Result<Response<Body>, ApiError> {
    let status = lambda_http::http::StatusCode::from_u16(status)
        .map_err(|e| shared::error::internal("a stored webhook answer's status", &e))?;
    let mut resp = Response::new(Body::Text(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        lambda_http::http::header::CONTENT_TYPE,
        lambda_http::http::HeaderValue::from_static("application/json"),
    );
    Ok(resp)
}

fn ack_body(id: Code2desId, status: Status) -> Result<String, ApiError> {
    serde_json::to_string(&Ack { code2des_id: id, status: status.api_name() })
        .map_err(|e| shared::error::internal("serialising a webhook ack", &e))
}

async fn run(deps: &Deps, req: &Request, request_id: &str) -> Result<Response<Body>, ApiError> {
    let bytes = raw_body(req)?;
    let delivery = Delivery {
        standard: sw::Headers {
            id: header(req, sw::ID_HEADER),
            timestamp: header(req, sw::TIMESTAMP_HEADER),
            signature: header(req, sw::SIGNATURE_HEADER),
        },
        legacy: header(req, signature::HEADER),
    };
    let webhook_id = match deps.keys.verify_or_unreadable(&delivery, bytes, now_unix()).await {
        Ok(Verified::Standard { webhook_id, .. }) => Some(webhook_id),
        Ok(Verified::Legacy) => {
            metrics::legacy_signature_used(header(req, "user-agent"));
            None
        }
        Err(VerifyError::Signature(e)) => {
            tracing::warn!(request_id, reason = %e, "webhook signature refused");
            return Err(ApiError::Unauthorized("invalid or missing webhook signature"));
        }
        Err(VerifyError::KeysUnreadable) => {
            tracing::error!(request_id, "no key held verifies the delivery and the keys could not be re-read");
            return Err(ApiError::Unavailable("Secrets Manager"));
        }
    };
    let body = WebhookBody::parse(&json_object(bytes)?, &deps.bucket)?;
    // The job and attempt this report is about, on the request's span (never its nonce).
    let span = tracing::Span::current();
    span.record("code2des.id", tracing::field::display(body.code2des_id));
    span.record("code2des.attempt", body.attempt);
    let client = conn(&deps.pool).await?;
    let refused = match decide(deps, &client, &body, webhook_id.as_deref()).await? {
        Decision::Answer(status, text) => return stored(status, text),
        Decision::Refused(e) => e,
    };
    match (webhook_id, refused) {
        // A refusal that is final for this delivery (the job exists: 409, 410) is stored, so a
        // redelivery is answered the same even if the job moves on; unless a concurrent delivery
        // of the same id stored its answer first, which then stands for both.
        (Some(webhook_id), e @ (ApiError::Conflict { .. } | ApiError::Gone(_))) => {
            let rendered = error_response(&e, request_id);
            let text = match rendered.body() {
                Body::Text(t) => t.clone(),
                _ => String::new(),
            };
            let (status, standing) =
                record_delivery(&**client, &webhook_id, body.code2des_id, rendered.status().as_u16(), &text).await?;
            if standing == text {
                Err(e)
            } else {
                stored(status, standing)
            }
        }
        (_, e) => Err(e),
    }
}

/// What the webhook answers a report, when the request itself did not fail.
enum Decision {
    /// An answer to give: 200 and its ack (already stored for the webhook-id when the fenced
    /// statement applied it), or the answer a webhook-id was given before.
    Answer(u16, String),
    /// A refusal to give now (404, 409, 410).
    Refused(ApiError),
}

/// What reading the row as it is says about a report the fenced write did not apply.
enum Explained {
    Decided(Decision),
    /// Still processing, at the deadline's edge: the fenced write is tried once more.
    WriteAgain,
    /// This read changed the row (it persisted the deadline): read it again.
    ReadAgain,
}

/// Applies the report, or explains why not; `Err` only for what fails the request (the
/// database). The fenced write is tried first; when it is refused, the row as committed now
/// says why. Two passes always suffice; the third is a guard.
async fn decide(
    deps: &Deps,
    client: &tokio_postgres::Client,
    body: &WebhookBody,
    webhook_id: Option<&str>,
) -> Result<Decision, ApiError> {
    // The answer if the report is applied, rendered first so that the statement stores it.
    let ack = ack_body(body.code2des_id, if body.progress.is_some() { Status::Processing } else { body.status })?;
    let delivery = webhook_id.map(|w| DeliveryRef { webhook_id: w, ack: &ack });
    let mut write = true;
    for _ in 0..3 {
        if write && apply(deps, client, body, delivery).await? {
            return Ok(Decision::Answer(200, ack));
        }
        match explain(deps, client, body, webhook_id).await? {
            Explained::Decided(d) => return Ok(d),
            Explained::WriteAgain => write = true,
            Explained::ReadAgain => write = false,
        }
    }
    Err(ApiError::Unavailable(shared::error::DATABASE))
}

/// The fenced write of the report: whether it applied (a progress report past its attempt's
/// last one is applied by being ignored).
async fn apply(
    deps: &Deps,
    client: &tokio_postgres::Client,
    body: &WebhookBody,
    delivery: Option<DeliveryRef<'_>>,
) -> Result<bool, ApiError> {
    let at = AttemptRef { id: body.code2des_id, attempt: body.attempt, nonce: &body.nonce };
    if let Some(p) = &body.progress {
        return Ok(match progress_for(client, at, p.percent, &p.stage, deps.deadline, delivery).await? {
            Progressed::Stored | Progressed::Ignored => true,
            Progressed::Fenced => false,
        });
    }
    let outcome = Outcome {
        status: body.status,
        result_url: body.result_url.as_deref(),
        warning_count: body.warning_count,
        error_message: body.error_message.as_deref(),
    };
    let Some(took) = record_outcome_for(client, at, &outcome, deps.deadline, delivery).await? else {
        return Ok(false);
    };
    match body.status {
        Status::Completed => metrics::job_completed(Some(took)),
        _ => metrics::job_failed(Some(took)),
    }
    tracing::info!(code2des_id = %body.code2des_id, status = body.status.api_name(), "job finished");
    Ok(true)
}

/// Why the fenced write did not apply, from the row as committed now.
async fn explain(
    deps: &Deps,
    client: &tokio_postgres::Client,
    body: &WebhookBody,
    webhook_id: Option<&str>,
) -> Result<Explained, ApiError> {
    let id = body.code2des_id;
    let refused = |e| Ok(Explained::Decided(Decision::Refused(e)));
    let Some(f) = fence_for(client, id, deps.deadline, webhook_id).await? else {
        return refused(ApiError::NotFound("job not found"));
    };
    if let Some((status, text)) = f.delivered {
        // A redelivery: answered as the first delivery was, whatever the job is now.
        return Ok(Explained::Decided(Decision::Answer(status, text)));
    }
    if f.job.attempt != body.attempt || !f.job.nonce.matches(&body.nonce) {
        return refused(ApiError::conflict(ErrorCode::Fenced, "attempt or nonce does not match the job"));
    }
    if f.deleted {
        return refused(ApiError::Gone("the job was deleted"));
    }
    match f.job.status {
        Status::Processing if f.overdue => {
            if expire_one(client, id, deps.deadline).await? {
                metrics::job_timed_out(1);
            }
            Ok(Explained::ReadAgain)
        }
        Status::Processing => Ok(Explained::WriteAgain),
        _ if body.progress.is_none() && same_outcome(&f.job, body) => {
            let replay = ack_body(id, f.job.status)?;
            // A replay of the stored outcome under a new webhook-id: remembered too.
            let (status, text) = match webhook_id {
                Some(w) => record_delivery(client, w, id, 200, &replay).await?,
                None => (200, replay),
            };
            Ok(Explained::Decided(Decision::Answer(status, text)))
        }
        _ => {
            let why = if f.job.updated_by == DEADLINE_ACTOR {
                "timed out"
            } else if f.job.is_cancelled() {
                "cancelled"
            } else {
                f.job.status.api_name()
            };
            refused(ApiError::conflict(ErrorCode::AlreadyTerminal, format!("the job is already terminal ({why})")))
        }
    }
}
