//! Request and response plumbing shared by the five handlers: identity, path and query
//! parameters, bounded JSON bodies, and the SPEC error body.

use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{ApiError, RETRY_AFTER_SECS};
use crate::types::Subject;

/// Largest accepted request body (SPEC: 413 over 64 KiB).
pub const MAX_BODY: usize = 64 * 1024;

/// The API Gateway request id, so a client's error report can be matched to our logs.
pub fn request_id(req: &Request) -> String {
    if let Some(RequestContext::ApiGatewayV2(ctx)) = req.request_context_ref() {
        if let Some(id) = ctx.request_id.as_deref().filter(|s| !s.is_empty()) {
            return id.to_owned();
        }
    }
    req.lambda_context_ref()
        .map(|c| c.request_id.clone())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| uuid::Uuid::now_v7().to_string())
}

/// The caller's identity: the `sub` claim of the HTTP API JWT authorizer. Nothing else is
/// trusted, in particular no header: API Gateway has already verified the token.
pub fn subject(req: &Request) -> Result<Subject, ApiError> {
    let sub = match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(ctx)) => {
            ctx.authorizer.as_ref().and_then(|a| a.jwt.as_ref()).and_then(|jwt| jwt.claims.get("sub"))
        }
        _ => None,
    };
    sub.and_then(|s| Subject::parse(s)).ok_or(ApiError::Unauthorized("a valid identity (JWT sub claim) is required"))
}

/// The route this request came in on, by its route key (`requestContext.routeKey`), never by
/// the path alone: `GET` and `DELETE` of one path are different routes.
pub fn route(req: &Request) -> Option<&'static crate::routes::Route> {
    match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(ctx)) => ctx.route_key.as_deref().and_then(crate::routes::Route::by_key),
        _ => None,
    }
}

/// A path parameter that the route guarantees; absent only if the event is malformed.
pub fn path_param<'a>(req: &'a Request, name: &'static str) -> Result<&'a str, ApiError> {
    req.path_parameters_ref()
        .and_then(|p| p.first(name))
        .ok_or_else(|| ApiError::invalid(name, "is required in the path"))
}

/// An optional query parameter: present at most once and never empty (SPEC section 3).
pub fn query_param<'a>(req: &'a Request, name: &'static str) -> Result<Option<&'a str>, ApiError> {
    let Some(params) = req.query_string_parameters_ref() else {
        return Ok(None);
    };
    match params.all(name) {
        None => Ok(None),
        Some(values) if values.len() > 1 => Err(ApiError::invalid(name, "must be given at most once")),
        Some(values) => match values.first() {
            Some(v) if !v.is_empty() => Ok(Some(v)),
            _ => Err(ApiError::invalid(name, "must not be empty")),
        },
    }
}

/// The raw body, refused with 413 past [`MAX_BODY`] before anything parses it.
pub fn raw_body(req: &Request) -> Result<&[u8], ApiError> {
    let bytes: &[u8] = req.body().as_ref();
    if bytes.len() > MAX_BODY {
        return Err(ApiError::PayloadTooLarge { limit: MAX_BODY });
    }
    Ok(bytes)
}

/// A JSON object body.
pub fn json_object(bytes: &[u8]) -> Result<Map<String, Value>, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::invalid("body", "a JSON object is required"));
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::invalid("body", "must be a JSON object")),
        Err(_) => Err(ApiError::invalid("body", "must be valid JSON")),
    }
}

/// A required string member of a JSON body.
pub fn required_str<'a>(body: &'a Map<String, Value>, field: &'static str) -> Result<&'a str, ApiError> {
    match body.get(field) {
        None | Some(Value::Null) => Err(ApiError::invalid(field, "is required")),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(ApiError::invalid(field, "must be a string")),
    }
}

/// An optional string member (absent or null mean absent).
pub fn optional_str<'a>(body: &'a Map<String, Value>, field: &'static str) -> Result<Option<&'a str>, ApiError> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ApiError::invalid(field, "must be a string")),
    }
}

/// An optional header, given at most once, as visible ASCII; errors name it as `field`.
pub fn header_str<'a>(req: &'a Request, name: &'static str, field: &'static str) -> Result<Option<&'a str>, ApiError> {
    let mut values = req.headers().get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(ApiError::invalid(field, "must be given at most once"));
    }
    first.to_str().map(Some).map_err(|_| ApiError::invalid(field, "must be visible ASCII"))
}

/// JSON goes out as `Body::Text`: a binary body would be base64-encoded into the Lambda
/// response envelope, a third larger.
fn json_response(status: u16, body: String) -> Response<Body> {
    let mut resp = Response::new(Body::Text(body));
    *resp.status_mut() = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::OK);
    resp.headers_mut().insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    resp
}

/// A success response with a JSON body.
pub fn ok_json<T: Serialize>(status: u16, value: &T, request_id: &str) -> Response<Body> {
    match serde_json::to_string(value) {
        Ok(bytes) => json_response(status, bytes),
        Err(e) => {
            // Our own types always serialise; this guards the "no 500" promise anyway.
            tracing::error!(error = %e, "response serialisation failed");
            error_response(&ApiError::Unavailable("the service"), request_id)
        }
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
}

/// A response with no body (204, 304).
pub fn empty(status: u16) -> Response<Body> {
    let mut resp = Response::new(Body::Empty);
    *resp.status_mut() = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::NO_CONTENT);
    resp
}

/// Sets a header whose value we built ourselves (ASCII by construction; a value that is not
/// is dropped rather than failing the response).
pub fn set_header(resp: &mut Response<Body>, name: http::header::HeaderName, value: &str) {
    if let Ok(v) = http::HeaderValue::from_str(value) {
        resp.headers_mut().insert(name, v);
    }
}

/// The SPEC error body; 503 carries `Retry-After`.
pub fn error_response(err: &ApiError, request_id: &str) -> Response<Body> {
    let body = ErrorBody { error: ErrorDetail { code: err.code(), message: err.to_string() }, request_id };
    let bytes = serde_json::to_string(&body).unwrap_or_else(|_| "{}".to_owned());
    let mut resp = json_response(err.status().as_u16(), bytes);
    if matches!(err, ApiError::Unavailable(_)) {
        resp.headers_mut().insert(http::header::RETRY_AFTER, http::HeaderValue::from(RETRY_AFTER_SECS));
    }
    resp
}

/// Turns a handler outcome into a response and logs one line per request.
pub fn finish(route: &'static str, request_id: &str, outcome: Result<Response<Body>, ApiError>) -> Response<Body> {
    match outcome {
        Ok(resp) => {
            tracing::info!(route, request_id, status = resp.status().as_u16(), "handled");
            resp
        }
        Err(err) => {
            let status = err.status().as_u16();
            if status >= 500 {
                tracing::warn!(route, request_id, status, code = err.code(), "answered with a fault");
            } else {
                tracing::info!(route, request_id, status, code = err.code(), "refused");
            }
            error_response(&err, request_id)
        }
    }
}
