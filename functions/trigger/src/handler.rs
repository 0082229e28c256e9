//! Trigger's two routes, both of which dispatch an attempt to the worker:
//! - `POST {base}`: a NEW job from a completed Page Import (SPEC section 3);
//! - `POST {base}/{code2desId}/retry`: the next attempt of a failed job (SPEC section 7).
//!
//! Both are held to the quotas (issue 23, `shared::domain::quota`): the organization's lock
//! and the statement that checks the limits and creates the attempt travel with BEGIN in one
//! round trip; a refusal is 429 `quota_exceeded`, and every 202 tells the quotas' state.

use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use shared::app::dispatch::{self, DispatchError, Dispatcher, Ended, Source, Tx};
use shared::app::resources::Resources;
use shared::config::SetupError;
use shared::db::connect::conn;
use shared::db::quota::lock_organization;
use shared::db::retry::{self, Retried};
use shared::db::trigger::{self, Inserted, Keyed, NewJob, Undispatched};
use shared::domain::field_error::FieldError;
use shared::domain::fields::{json_object, members};
use shared::domain::ids::{Code2desId, FigmaFileKey, IdempotencyKey, PageImportId, PlacementTarget, ScreenId};
use shared::domain::job::{Job, Nonce, Policy, Status};
use shared::domain::protocol::Viewports;
use shared::domain::quota::{Quota, QuotaState};
use shared::domain::scope::Scope;
use shared::error::{bug, ErrorCode};
use shared::http::request::{self, raw_body};
use shared::http::response::{ok_json, respond, serve, set_header, set_rate_limit};
use shared::http::routes::RouteId;
use shared::http::{caller, view};
use shared::http::{faults, refusals};
use shared::obs::metrics;
use shared::ApiError;

/// What trigger needs, built once per instance.
pub struct Deps {
    pub pool: deadpool_postgres::Pool,
    pub dispatcher: Dispatcher,
    pub policy: Policy,
    /// The deployment's quotas (an organization's override wins, in the statement).
    pub quota: Quota,
}

impl Deps {
    pub async fn new(r: &Resources) -> Result<Self, SetupError> {
        Ok(Self {
            pool: r.pool().await?,
            dispatcher: Dispatcher { bucket: r.bucket().await?, callback_url: r.settings.callback_url()?.to_owned() },
            policy: r.settings.policy(),
            quota: r.settings.quota(),
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
    let request_id = request::request_id(&req);
    match request::route(&req).map(|r| r.id) {
        Some(RouteId::Trigger) => serve("trigger", &request_id, &req, trigger(deps, &req, &request_id)).await,
        Some(RouteId::Retry) => serve("retry", &request_id, &req, retry(deps, &req, &request_id)).await,
        // API Gateway sends this function only its own routes: anything else is a deployment bug.
        other => respond(
            "trigger",
            &request_id,
            Err(bug("an event of a route trigger does not serve", format!("{other:?}"))),
        ),
    }
}

/// The trigger's body (openapi.yaml's `TriggerRequest`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Input {
    page_import_id: PageImportId,
    figma_file_key: FigmaFileKey,
    screen_id: ScreenId,
    placement_target: Option<PlacementTarget>,
    /// 1 to 4 widths to lay the capture out at, in the caller's order (issue 40 item 3).
    viewports: Option<Viewports>,
}

impl Input {
    fn parse(bytes: &[u8]) -> Result<Self, ApiError> {
        Ok(members(&json_object(bytes)?)?)
    }

    fn widths(&self) -> Option<&[u32]> {
        self.viewports.as_ref().map(Viewports::widths)
    }

    /// The request's meaning, independent of JSON spelling (key order, whitespace), so a
    /// retried request with the same Idempotency-Key is recognised as the same request. A
    /// request without `viewports` hashes as it always did, so keys claimed before them still
    /// recognise their requests.
    fn fingerprint(&self) -> String {
        let mut h = Sha256::new();
        let widths = self.widths().map(|w| w.iter().map(u32::to_string).collect::<Vec<_>>().join(","));
        let mut parts = vec![
            Some(self.page_import_id.as_str()),
            Some(self.figma_file_key.as_str()),
            Some(self.screen_id.as_str()),
            self.placement_target.as_ref().map(PlacementTarget::as_str),
        ];
        if let Some(w) = widths.as_deref() {
            parts.push(Some(w));
        }
        for part in parts {
            match part {
                Some(s) => {
                    h.update([1]);
                    h.update((s.len() as u64).to_be_bytes());
                    h.update(s.as_bytes());
                }
                None => h.update([0]),
            }
        }
        hex::encode(h.finalize())
    }
}

/// The job with `Location`, as 202 (a new attempt dispatched, with the quotas' state) or 200
/// (one that exists).
fn answer(
    status: StatusCode,
    deps: &Deps,
    scope: &Scope,
    job: &Job,
    quota: Option<&QuotaState>,
    request_id: &str,
) -> Response<Body> {
    // The trigger learns the id only now (a new job's, or the one an Idempotency-Key names).
    tracing::Span::current().record("code2des.id", tracing::field::display(job.id));
    let mut resp = ok_json(status, &view::job_view(job, &deps.policy), request_id);
    set_header(&mut resp, lambda_http::http::header::LOCATION, &scope.job_path(job.id));
    if let Some(q) = quota {
        set_rate_limit(&mut resp, q);
    }
    resp
}

/// A quota's 429, counted and logged.
fn refused(quota: &QuotaState, scope: &Scope, route: &'static str) -> ApiError {
    match (quota.refused(), refusals::quota_exceeded(quota)) {
        (Some(limit), Some(err)) => {
            metrics::quota_refused(limit);
            tracing::info!(
                route,
                limit = limit.as_str(),
                organization_id = scope.organization_id.get(),
                subject = scope.subject.as_str(),
                "refused by a quota"
            );
            err
        }
        _ => bug("a quota refusal", "no limit refused"),
    }
}

/// A manifest that was not written, as an answer: the bucket's fault a 503 as every storage
/// fault is (`faults::storage`), our own bug a 500.
fn undispatched(e: DispatchError) -> ApiError {
    match e {
        DispatchError::Bucket(e) => faults::storage(e),
        DispatchError::Bug => ApiError::Internal,
    }
}

async fn trigger(deps: &Deps, req: &Request, request_id: &str) -> Result<Response<Body>, ApiError> {
    let bytes = raw_body(req)?;
    let scope = caller::scope(req)?;
    let key =
        request::header_str(req, "idempotency-key", IdempotencyKey::FIELD)?.map(IdempotencyKey::parse).transpose()?;
    let input = Input::parse(bytes)?;
    let fingerprint = input.fingerprint();

    let nonce = Nonce::generate();
    let new = NewJob {
        id: Code2desId::new_v7(),
        scope: &scope,
        page_import_id: &input.page_import_id,
        figma_file_key: &input.figma_file_key,
        screen_id: &input.screen_id,
        placement_target: input.placement_target.as_ref(),
        nonce: &nonce,
        idempotency: key.as_ref().map(|k| (k.as_str(), fingerprint.as_str())),
        viewports: input.widths(),
    };
    let source = |capture_url| Source { capture_url, viewports: input.widths().map(<[u32]>::to_vec) };
    let client = conn(&deps.pool).await?;
    let ended = dispatch::transaction(client, async |c| {
        // Both queued before either is sent: one flight with BEGIN (`dispatch::transaction`).
        let (locked, inserted) = tokio::join!(
            lock_organization(c, &scope.organization_id),
            trigger::insert_job(c, &new, &deps.quota, deps.policy.deadline)
        );
        locked?;
        Ok(match inserted? {
            created @ Inserted::Created { .. } => Tx::Commit(created),
            other => Tx::Rollback(other),
        })
    })
    .await?;
    match ended {
        Ended::Committed(client, Inserted::Created { job, capture_url, quota }) => {
            deps.dispatcher
                .dispatch(&client, &job, &nonce, source(capture_url), request::traceparent(req), Undispatched::NewJob)
                .await
                .map_err(undispatched)?;
            metrics::job_triggered();
            tracing::info!(code2des_id = %job.id, organization_id = job.organization_id.get(), project_id = job.project_id.get(), "job created");
            Ok(answer(StatusCode::ACCEPTED, deps, &scope, &job, Some(&quota), request_id))
        }
        Ended::Uncertain(Inserted::Created { job, capture_url, .. }, e) => {
            // The row may exist: dispatch it anyway and answer 503; a retry with the same
            // Idempotency-Key finds this job.
            deps.dispatcher.dispatch_uncertain(&job, &nonce, source(capture_url), request::traceparent(req)).await;
            Err(e.into())
        }
        Ended::RolledBack(Inserted::NotFound) => Err(ApiError::NotFound("page import not found")),
        Ended::RolledBack(Inserted::PageImportNotCompleted) => {
            Err(ApiError::conflict(ErrorCode::PageImportNotCompleted, "the page import is not completed"))
        }
        Ended::RolledBack(Inserted::QuotaExceeded { quota }) => Err(refused(&quota, &scope, "trigger")),
        Ended::RolledBack(Inserted::KeyTaken { quota }) => {
            // Only a request with a key can find its key taken; one without is a bug, said as
            // one, not a look-up of the empty key.
            let Some(key) = key.as_ref().map(IdempotencyKey::as_str) else {
                return Err(bug("trigger's transaction", "an Idempotency-Key taken by a request without one"));
            };
            let job = replayed(deps, &scope, key, &fingerprint).await?;
            Ok(answer(StatusCode::ACCEPTED, deps, &scope, &job, Some(&quota), request_id))
        }
        // A transaction commits only what created a row, and rolls back only what did not.
        Ended::Committed(..) | Ended::Uncertain(..) | Ended::RolledBack(Inserted::Created { .. }) => {
            Err(bug("trigger's transaction", "a commit without a new job, or a rollback with one"))
        }
    }
}

/// The job a claimed Idempotency-Key created, when this request is the one that claimed it. The
/// key was claimed before (possibly by a request racing this one, which the organization's lock
/// waited for, so it has committed): that job is the answer, whatever the quotas say now.
async fn replayed(deps: &Deps, scope: &Scope, key: &str, fingerprint: &str) -> Result<Box<Job>, ApiError> {
    let client = conn(&deps.pool).await?;
    match trigger::find_by_idempotency_key(&**client, scope, key, deps.policy.deadline).await? {
        Some(Keyed::Live { request_hash, job }) if request_hash == fingerprint => Ok(job),
        // The key stays claimed for its time to live even after its job is deleted: a late
        // retry of the same request must not create a second job (openapi.yaml).
        Some(Keyed::Deleted { request_hash }) if request_hash == fingerprint => Err(ApiError::Gone(
            "the job this Idempotency-Key created was deleted; trigger again with a new Idempotency-Key",
        )),
        Some(_) => Err(ApiError::Unprocessable {
            code: ErrorCode::IdempotencyKeyReused,
            message: "this Idempotency-Key was used with a different request body".into(),
        }),
        // The key's job exists but the caller may no longer see it (its page import, project
        // or membership is gone).
        None => Err(ApiError::NotFound("page import not found")),
    }
}

/// The retry's body: `{}` or `{"attempt": n}`, the attempt being retried, so racing retries
/// converge.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RetryBody {
    attempt: Option<RetriedAttempt>,
}

struct RetriedAttempt(i32);

impl<'de> Deserialize<'de> for RetriedAttempt {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(v) if (1..=i64::from(i32::MAX)).contains(&v) => Ok(Self(v as i32)),
                _ => Err(D::Error::custom("must be a positive 32-bit integer")),
            },
            _ => Err(D::Error::custom("must be an integer")),
        }
    }
}

/// The attempt a retry's body names, if any (an empty body names none). Public for
/// shared/tests/fuzz.rs.
pub fn parse_retry_body(bytes: &[u8]) -> Result<Option<i32>, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let body: RetryBody = members(&json_object(bytes)?).map_err(|e| match e {
        FieldError { field, message } if field == "body" => {
            FieldError::new(field, format!("{message}; only \"attempt\" is accepted"))
        }
        other => other,
    })?;
    Ok(body.attempt.map(|a| a.0))
}

async fn retry(deps: &Deps, req: &Request, request_id: &str) -> Result<Response<Body>, ApiError> {
    let bytes = raw_body(req)?;
    let job_ref = caller::job_ref(req)?;
    let expected = parse_retry_body(bytes)?;
    let policy = deps.policy;

    let nonce = Nonce::generate();
    let scope = &job_ref.scope;
    let client = conn(&deps.pool).await?;
    let ended = dispatch::transaction(client, async |c| {
        // Both queued before either is sent: one flight with BEGIN (`dispatch::transaction`).
        let (locked, retried) = tokio::join!(
            lock_organization(c, &scope.organization_id),
            retry::retry(c, &job_ref, &nonce, expected, &policy, &deps.quota)
        );
        locked?;
        Ok(match retried? {
            created @ Retried::Created { .. } => Tx::Commit(created),
            other => Tx::Rollback(other),
        })
    })
    .await?;
    let job = match ended {
        Ended::Committed(client, Retried::Created { job, capture_url, viewports, quota }) => {
            deps.dispatcher
                .dispatch(
                    &client,
                    &job,
                    &nonce,
                    Source { capture_url, viewports },
                    request::traceparent(req),
                    Undispatched::Retry,
                )
                .await
                .map_err(undispatched)?;
            metrics::job_retried();
            tracing::info!(code2des_id = %job.id, attempt = job.attempt, "job retried");
            return Ok(answer(StatusCode::ACCEPTED, deps, scope, &job, Some(&quota), request_id));
        }
        Ended::Uncertain(Retried::Created { job, capture_url, viewports, .. }, e) => {
            let source = Source { capture_url, viewports };
            deps.dispatcher.dispatch_uncertain(&job, &nonce, source, request::traceparent(req)).await;
            return Err(e.into());
        }
        Ended::RolledBack(Retried::NotFound) => return Err(ApiError::NotFound("job not found")),
        Ended::RolledBack(Retried::QuotaExceeded(quota)) => return Err(refused(&quota, scope, "retry")),
        Ended::RolledBack(Retried::Unchanged(job)) => job,
        Ended::Committed(..) | Ended::Uncertain(..) | Ended::RolledBack(Retried::Created { .. }) => {
            return Err(bug("retry's transaction", "a commit without a new attempt, or a rollback with one"))
        }
    };
    // Nothing changed: say why, or (a racing retry of the same attempt won) show its job.
    match (job.status, expected) {
        (_, Some(n)) if job.attempt > n => Ok(answer(StatusCode::OK, deps, scope, &job, None, request_id)),
        (_, Some(n)) if job.attempt < n => {
            Err(ApiError::invalid("attempt", format!("names attempt {n}, but the job is at attempt {}", job.attempt)))
        }
        (Status::Failed, _) if job.attempt >= policy.max_attempts => Err(ApiError::conflict(
            ErrorCode::AttemptsExhausted,
            format!("the job has used all {} attempts", policy.max_attempts),
        )),
        (status, _) => Err(ApiError::conflict(
            ErrorCode::NotFailed,
            format!("only a failed job can be retried; this one is {}", status.api_name()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_bodies_are_empty_or_name_the_attempt() {
        assert_eq!(parse_retry_body(b"").unwrap(), None);
        assert_eq!(parse_retry_body(b" {} ").unwrap(), None);
        assert_eq!(parse_retry_body(br#"{"attempt":2}"#).unwrap(), Some(2));
        assert_eq!(parse_retry_body(br#"{"attempt":null}"#).unwrap(), None);
        for bad in [&br#"{"attempt":0}"#[..], br#"{"attempt":-1}"#, br#"{"attempt":1.5}"#, br#"{"attempt":"1"}"#] {
            assert!(parse_retry_body(bad).unwrap_err().to_string().starts_with("attempt"), "{bad:?}");
        }
        assert!(parse_retry_body(br#"{"attempt":1,"x":1}"#).unwrap_err().to_string().starts_with("body"));
        assert!(parse_retry_body(b"[1]").is_err());
        assert!(parse_retry_body(br#"{"attempt":4294967296}"#).is_err());
    }
}
