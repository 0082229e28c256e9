//! Responses: JSON bodies, the SPEC error body `{"error":{"code","message"},"requestId"}` (503
//! with Retry-After; 429 with its `limit`, Retry-After and the RateLimit fields), and the one
//! line logged per request.

use std::future::Future;

use http::StatusCode;
use lambda_http::{Body, Request, RequestExt, Response};
use serde::Serialize;

use crate::budget::{Budget, FUNCTION_TIMEOUT};
use crate::domain::quota::QuotaState;
use crate::error::ApiError;

/// The fields of draft-ietf-httpapi-ratelimit-headers-11 (lowercase, as HTTP/2 sends them).
pub const RATELIMIT_POLICY: &str = "ratelimit-policy";
pub const RATELIMIT: &str = "ratelimit";

/// JSON goes out as `Body::Text`: a binary body would be base64-encoded into the Lambda
/// response envelope, a third larger.
fn json_response(status: StatusCode, body: String) -> Response<Body> {
    let mut resp = Response::new(Body::Text(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    resp
}

/// A success response with a JSON body.
pub fn ok_json<T: Serialize>(status: StatusCode, value: &T, request_id: &str) -> Response<Body> {
    match serde_json::to_string(value) {
        Ok(bytes) => json_response(status, bytes),
        // Our own types always serialise: a failure is a bug, logged and answered 500 (retrying
        // would fail the same way).
        Err(e) => error_response(&crate::error::internal("serialising a response", &e), request_id),
    }
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: ErrorDetail<'a>,
    #[serde(rename = "requestId")]
    request_id: &'a str,
}

#[derive(Serialize)]
struct ErrorDetail<'a> {
    code: &'a str,
    message: String,
    /// The quota a 429 names (`active` or `burst`); absent from every other error.
    #[serde(skip_serializing_if = "Option::is_none")]
    limit: Option<&'a str>,
}

/// A response with no body (204, 304).
pub fn empty(status: StatusCode) -> Response<Body> {
    let mut resp = Response::new(Body::Empty);
    *resp.status_mut() = status;
    resp
}

/// Sets a header whose value we built ourselves (ASCII by construction; a value that is not
/// is dropped rather than failing the response).
pub fn set_header(resp: &mut Response<Body>, name: http::header::HeaderName, value: &str) {
    if let Ok(v) = http::HeaderValue::from_str(value) {
        resp.headers_mut().insert(name, v);
    }
}

/// `RateLimit-Policy` and `RateLimit` of a call the quotas let through (every 202 of trigger
/// and retry), so that a client can pace itself before it is refused.
pub fn set_rate_limit(resp: &mut Response<Body>, quota: &QuotaState) {
    set_header(resp, http::HeaderName::from_static(RATELIMIT_POLICY), &quota.policy_field());
    set_header(resp, http::HeaderName::from_static(RATELIMIT), &quota.limit_field());
}

/// The SPEC error body; 503 carries `Retry-After`, 429 `Retry-After` and the RateLimit fields.
pub fn error_response(err: &ApiError, request_id: &str) -> Response<Body> {
    let refusal = match err {
        ApiError::QuotaExceeded(r) => Some(r),
        _ => None,
    };
    let body = ErrorBody {
        error: ErrorDetail { code: err.code().as_str(), message: err.to_string(), limit: refusal.map(|r| r.limit) },
        request_id,
    };
    // Strings and a &str: it cannot fail to serialise. Were it ever to, the answer is still a
    // SPEC error body, built by hand from the code alone (no message text to escape).
    let bytes = serde_json::to_string(&body).unwrap_or_else(|e| {
        tracing::error!(error = %e, "serialising an error body");
        format!(r#"{{"error":{{"code":"{}","message":"internal error"}},"requestId":""}}"#, err.code().as_str())
    });
    let mut resp = json_response(err.status(), bytes);
    if let Some(secs) = err.retry_after_now() {
        resp.headers_mut().insert(http::header::RETRY_AFTER, http::HeaderValue::from(secs));
    }
    if let Some(r) = refusal {
        resp.headers_mut().insert(http::header::RETRY_AFTER, http::HeaderValue::from(r.retry_after_secs));
        set_header(&mut resp, http::HeaderName::from_static(RATELIMIT_POLICY), &r.policy);
        set_header(&mut resp, http::HeaderName::from_static(RATELIMIT), &r.state);
    }
    resp
}

/// The budget of a request: from its Lambda context's deadline, or, where there is none (a
/// handler called directly), the function timeout from now: the same rule as in AWS.
pub fn budget_of(req: &Request) -> Budget {
    match req.lambda_context_ref().map(|c| c.deadline).filter(|d| *d > 0) {
        Some(deadline_ms) => Budget::from_deadline_ms(deadline_ms),
        None => Budget::after(FUNCTION_TIMEOUT),
    }
}

/// Runs a function's handler for one request under the request's budget, and answers: the
/// entry point of every API function's `handle`. A handler that outruns its budget (a bug: every
/// dependency call is bounded) is answered 503 `dependency_timeout` at the backstop, before the
/// invocation's own timeout, so a client never sees a gateway error.
///
/// Not an `async fn`: an async fn keeps its arguments in its own future, so the handler's
/// future would be held twice, and every caller above would hold it again (see
/// [`within_budget`]).
pub fn serve<'a, F>(
    route: &'static str,
    request_id: &'a str,
    req: &Request,
    handler: F,
) -> impl Future<Output = Response<Body>> + 'a
where
    F: Future<Output = Result<Response<Body>, ApiError>> + 'a,
{
    let outcome = within_budget(req, handler);
    async move { respond(route, request_id, outcome.await) }
}

/// The handler's outcome under the request's budget ([`serve`] without the answer, for a
/// function that looks at the outcome first).
///
/// The handler's future is boxed here, where it is made: unoptimised (the dev profile that
/// `cargo run` and `cargo lambda watch` build), every async layer above it holds a copy of a
/// future it contains, and the poll of each keeps another on its stack frame; a handler's tens of
/// kilobytes grew past a tokio worker's 2 MiB stack at the first request (issue 37). Boxed, each
/// layer holds a pointer; the one allocation per request costs nothing next to the request
/// (`local/tests/future_sizes.rs` holds the sizes).
pub fn within_budget<'a, F>(req: &Request, handler: F) -> impl Future<Output = Result<Response<Body>, ApiError>> + 'a
where
    F: Future<Output = Result<Response<Body>, ApiError>> + 'a,
{
    let handler = Box::pin(handler);
    // The request's span (none when spans are not exported) covers the handler and its backstop.
    tracing::Instrument::instrument(
        budget_of(req).run(handler, || Err(ApiError::DependencyTimeout("a dependency"))),
        crate::http::request::span(req),
    )
}

/// Turns a handler's outcome into its response, and logs one line per request.
pub fn respond(route: &'static str, request_id: &str, outcome: Result<Response<Body>, ApiError>) -> Response<Body> {
    match outcome {
        Ok(resp) => {
            tracing::info!(route, request_id, status = resp.status().as_u16(), "handled");
            resp
        }
        Err(err) => {
            let status = err.status().as_u16();
            if let ApiError::DependencyTimeout(dependency) = &err {
                crate::obs::metrics::budget_exhausted(route, dependency);
            }
            if status >= 500 {
                tracing::warn!(route, request_id, status, code = err.code().as_str(), "answered with a fault");
            } else {
                tracing::info!(route, request_id, status, code = err.code().as_str(), "refused");
            }
            error_response(&err, request_id)
        }
    }
}
