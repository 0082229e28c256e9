//! What a handler reads from a request: its id, identity, route, path and query parameters,
//! headers, and the body (bounded before anything parses it).

use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};

use crate::domain::ids::Subject;
use crate::error::ApiError;

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
pub fn route(req: &Request) -> Option<&'static crate::http::routes::Route> {
    match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(ctx)) => {
            ctx.route_key.as_deref().and_then(crate::http::routes::Route::by_key)
        }
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

/// The request's W3C `traceparent` header, when it is a valid one (an invalid one is ignored,
/// as the specification says: the request starts a trace of its own).
pub fn traceparent(req: &Request) -> Option<crate::domain::trace::Traceparent> {
    let value = req.headers().get(crate::obs::trace::TRACEPARENT)?.to_str().ok()?;
    crate::domain::trace::Traceparent::parse(value)
}

/// The request's span, when spans are exported (else none, at no cost): named by its route
/// (`POST /organizations/{organizationId}/…`), a child of the caller's span when the request
/// carries a `traceparent`, with the job's `code2des.id` when the path names one (a handler that
/// learns it later records it: the trigger and the webhook). Nothing of the request's headers
/// or body: no token, nonce or signature can reach an attribute.
pub fn span(req: &Request) -> tracing::Span {
    if !crate::obs::trace::enabled() {
        return tracing::Span::none();
    }
    let route = route(req);
    let span = tracing::info_span!(
        "request",
        otel.name = %route.map_or_else(|| req.method().to_string(), |r| r.key()),
        otel.kind = "server",
        http.request.method = %req.method(),
        http.route = route.map_or("", |r| r.path),
        code2des.id = tracing::field::Empty,
        code2des.attempt = tracing::field::Empty,
        code2des.request_id = %request_id(req),
    );
    // Only an id that is one: a path parameter is the caller's text.
    let id = req.path_parameters_ref().and_then(|p| p.first("code2desId"));
    if let Some(id) = id.and_then(|id| uuid::Uuid::parse_str(id).ok()) {
        span.record("code2des.id", tracing::field::display(id));
    }
    crate::obs::trace::continue_trace(&span, traceparent(req));
    span
}
