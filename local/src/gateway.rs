//! A local stand-in for API Gateway (HTTP API, payload v2): matches requests against THE
//! route table (`shared::routes`, which template.yaml is held to), turns each request into the
//! SAME event JSON API Gateway sends (route key, path parameters, query string, JWT claims),
//! parses it with `lambda_http` exactly as a Lambda does, and calls the SAME handler function
//! the Lambda binary runs.
//!
//! Identity (`crate::identity`): the `x-code2des-dev-sub` header, or the unverified `sub` of an
//! `Authorization: Bearer` token, becomes the JWT `sub` claim on user routes. Neither exists in
//! a Lambda: the handlers read the authorizer context, never a header.

use std::time::Instant;

use base64::Engine;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode};
use serde_json::{json, Map, Value};
use shared::routes::{self, cors, Function, Resolved, Route};

pub use crate::identity::DEV_SUB_HEADER;
/// API Gateway's own payload limit; the handlers enforce SPEC's 64 KiB themselves.
pub const GATEWAY_MAX_BODY: usize = 10 * 1024 * 1024;

/// The five functions' dependencies, built once like five warm Lambda instances.
pub struct Handlers {
    pub trigger: code2des_trigger::handler::Deps,
    pub lifecycle: code2des_lifecycle::handler::Deps,
    pub result: code2des_result::handler::Deps,
    pub webhook: code2des_webhook::handler::Deps,
    pub placement: code2des_placement::handler::Deps,
}

/// The route a request's method and path resolve to, with its path parameters.
pub fn route(method: &Method, path: &str) -> Option<(&'static Route, Vec<(&'static str, String)>)> {
    match routes::resolve(method.as_str(), path) {
        Resolved::Route(r, params) => Some((r, params)),
        _ => None,
    }
}

/// The API Gateway HTTP API (v2) event for one request.
#[allow(clippy::too_many_arguments)]
pub fn event(
    route: &Route,
    params: &[(&'static str, String)],
    method: &Method,
    path: &str,
    query: &str,
    headers: &HeaderMap,
    body: &[u8],
    request_id: &str,
) -> Value {
    let mut hdrs = Map::new();
    for (name, value) in headers {
        if name.as_str() == DEV_SUB_HEADER {
            continue;
        }
        let v = String::from_utf8_lossy(value.as_bytes()).into_owned();
        // API Gateway joins repeated headers with commas.
        match hdrs.get_mut(name.as_str()) {
            Some(Value::String(existing)) => {
                existing.push(',');
                existing.push_str(&v);
            }
            _ => {
                hdrs.insert(name.as_str().to_owned(), Value::String(v));
            }
        }
    }
    let now = chrono::Utc::now();
    let mut ctx = json!({
        "accountId": "000000000000",
        "apiId": "local",
        "domainName": headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or("127.0.0.1"),
        "domainPrefix": "local",
        "http": {
            "method": method.as_str(),
            "path": path,
            "protocol": "HTTP/1.1",
            "sourceIp": "127.0.0.1",
            "userAgent": headers.get("user-agent").and_then(|h| h.to_str().ok()).unwrap_or(""),
        },
        "requestId": request_id,
        "routeKey": route.key(),
        "stage": "$default",
        "time": now.format("%d/%b/%Y:%H:%M:%S %z").to_string(),
        "timeEpoch": now.timestamp_millis(),
    });
    if route.user {
        if let Some(who) = crate::identity::identify(headers) {
            ctx["authorizer"] = json!({"jwt": {"claims": {"sub": who.sub()}, "scopes": null}});
        }
    }
    let path_params: Map<String, Value> =
        params.iter().map(|(k, v)| ((*k).to_owned(), Value::String(v.clone()))).collect();
    let (body, b64) = match std::str::from_utf8(body) {
        _ if body.is_empty() => (Value::Null, false),
        Ok(s) => (Value::String(s.to_owned()), false),
        Err(_) => (Value::String(base64::engine::general_purpose::STANDARD.encode(body)), true),
    };
    let mut ev = json!({
        "version": "2.0",
        "routeKey": route.key(),
        "rawPath": path,
        "rawQueryString": query,
        "headers": hdrs,
        "requestContext": ctx,
        "isBase64Encoded": b64,
        "body": body,
    });
    if !path_params.is_empty() {
        ev["pathParameters"] = Value::Object(path_params);
    }
    ev
}

fn cors(headers: &mut HeaderMap) {
    headers.insert("access-control-allow-origin", HeaderValue::from_static(cors::ALLOW_ORIGIN));
    if let Ok(v) = HeaderValue::from_str(&cors::EXPOSE_HEADERS.join(",")) {
        headers.insert("access-control-expose-headers", v);
    }
}

/// The preflight answer, built from the route table (HttpApi `CorsConfiguration`).
fn preflight() -> Response<Bytes> {
    let mut r = Response::new(Bytes::new());
    *r.status_mut() = StatusCode::NO_CONTENT;
    let hm = r.headers_mut();
    for (name, value) in [
        ("access-control-allow-methods", cors::allow_methods().join(",")),
        ("access-control-allow-headers", cors::ALLOW_HEADERS.join(",")),
        ("access-control-max-age", cors::MAX_AGE_SECS.to_string()),
    ] {
        if let Ok(v) = HeaderValue::from_str(&value) {
            hm.insert(name, v);
        }
    }
    r
}

fn plain(status: StatusCode, body: Response<Bytes>) -> Response<Bytes> {
    let mut r = body;
    *r.status_mut() = status;
    r
}

fn error(status: StatusCode, code: &str, message: &str, request_id: &str) -> Response<Bytes> {
    let body = json!({"error": {"code": code, "message": message}, "requestId": request_id});
    let mut r = Response::new(Bytes::from(body.to_string()));
    r.headers_mut().insert("content-type", HeaderValue::from_static("application/json"));
    plain(status, r)
}

/// Handles one HTTP request as API Gateway + Lambda would.
pub async fn dispatch(h: &Handlers, req: http::Request<Bytes>) -> Response<Bytes> {
    let started = Instant::now();
    let request_id = uuid::Uuid::now_v7().to_string();
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().unwrap_or("").to_owned();
    let has_origin = parts.headers.contains_key("origin");

    let (mut resp, route_key) = if parts.method == Method::OPTIONS {
        // CORS preflight, answered by the gateway itself (HttpApi CorsConfiguration).
        (preflight(), "OPTIONS (preflight)".to_owned())
    } else {
        match routes::resolve(parts.method.as_str(), &path) {
            Resolved::NotFound => (error(StatusCode::NOT_FOUND, "not_found", "no such route", &request_id), "-".into()),
            Resolved::MethodNotAllowed(allowed) => {
                let mut r = error(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "method_not_allowed",
                    &format!("{} is not allowed here; allowed: {}", parts.method, allowed.join(", ")),
                    &request_id,
                );
                if let Ok(v) = HeaderValue::from_str(&allowed.join(", ")) {
                    r.headers_mut().insert(http::header::ALLOW, v);
                }
                (r, "-".into())
            }
            Resolved::Route(r, params) => {
                let ev = event(r, &params, &parts.method, &path, &query, &parts.headers, &body, &request_id);
                let resp = match lambda_http::request::from_str(&ev.to_string()) {
                    Ok(lreq) => invoke(h, r.function, lreq).await,
                    Err(e) => {
                        tracing::error!(error = %e, "could not build the Lambda request");
                        error(StatusCode::BAD_REQUEST, "invalid_request", "the request could not be read", &request_id)
                    }
                };
                (resp, r.key())
            }
        }
    };
    if has_origin || parts.method == Method::OPTIONS {
        cors(resp.headers_mut());
    }
    tracing::info!(
        request_id,
        method = %parts.method,
        route = route_key,
        status = resp.status().as_u16(),
        latency_ms = started.elapsed().as_secs_f64() * 1000.0,
        "request"
    );
    resp
}

async fn invoke(h: &Handlers, f: Function, req: lambda_http::Request) -> Response<Bytes> {
    let resp = match f {
        Function::Trigger => code2des_trigger::handler::handle(&h.trigger, req).await,
        Function::Lifecycle => code2des_lifecycle::handler::handle(&h.lifecycle, req).await,
        Function::Result => code2des_result::handler::handle(&h.result, req).await,
        Function::Placement => code2des_placement::handler::handle(&h.placement, req).await,
        Function::Webhook => code2des_webhook::handler::handle(&h.webhook, req).await,
    };
    let (parts, body) = resp.into_parts();
    Response::from_parts(parts, Bytes::copy_from_slice(body.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_sub_becomes_the_jwt_claim_on_user_routes_only() {
        let token = crate::identity::local_token("plugin-dev");
        let mut headers = HeaderMap::new();
        headers.insert("authorization", HeaderValue::from_str(&format!("Bearer {token}")).unwrap());
        let (r, params) = route(&Method::GET, "/organizations/1/projects/2/code2des").unwrap();
        let ev = event(r, &params, &Method::GET, "/organizations/1/projects/2/code2des", "", &headers, b"", "id");
        assert_eq!(ev["requestContext"]["authorizer"]["jwt"]["claims"]["sub"], "plugin-dev");
        assert_eq!(ev["routeKey"], r.key());
        let (w, _) = route(&Method::POST, "/code2des/webhook").unwrap();
        let ev = event(w, &[], &Method::POST, "/code2des/webhook", "", &headers, b"{}", "id");
        assert!(ev["requestContext"]["authorizer"].is_null());
    }
}
