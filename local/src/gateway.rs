//! A local stand-in for API Gateway (HTTP API, payload v2): matches requests against THE
//! route table (`shared::http::routes`, which template.yaml is held to), turns each request into the
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
use lambda_http::aws_lambda_events::apigw::{
    ApiGatewayRequestAuthorizer, ApiGatewayRequestAuthorizerJwtDescription, ApiGatewayV2httpRequest,
    ApiGatewayV2httpRequestContext, ApiGatewayV2httpRequestContextHttpDescription,
};
use lambda_http::request::LambdaRequest;
use serde_json::json;
use shared::error::ErrorCode;
use shared::http::routes::{self, cors, Function, Resolved, Route};

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

/// The API Gateway HTTP API (v2) event for one request, as the typed struct `lambda_http`
/// deserialises a Lambda's event into: the gateway hands it over as it is (no JSON text to
/// write and parse back per request: that round trip was a third of a warm GET's cost here,
/// docs/PERFORMANCE.md section 5), and [`lambda_request`] converts it with `lambda_http`'s own
/// conversion, the one a Lambda runs after parsing.
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
) -> ApiGatewayV2httpRequest {
    let mut hdrs = HeaderMap::with_capacity(headers.keys_len());
    for name in headers.keys() {
        if name.as_str() == DEV_SUB_HEADER {
            continue;
        }
        // API Gateway joins repeated headers with commas.
        let mut values = headers.get_all(name).iter();
        let Some(first) = values.next() else { continue };
        let joined = match values.next() {
            None => first.clone(),
            Some(second) => {
                let mut v = first.as_bytes().to_vec();
                for next in std::iter::once(second).chain(values) {
                    v.push(b',');
                    v.extend_from_slice(next.as_bytes());
                }
                match HeaderValue::from_bytes(&v) {
                    Ok(v) => v,
                    Err(_) => continue,
                }
            }
        };
        hdrs.insert(name.clone(), joined);
    }
    let text = |name: &str| headers.get(name).and_then(|h| h.to_str().ok());
    let now = chrono::Utc::now();
    let route_key = route.key();

    let mut http_ctx = ApiGatewayV2httpRequestContextHttpDescription::default();
    http_ctx.method = method.clone();
    http_ctx.path = Some(path.to_owned());
    http_ctx.protocol = Some("HTTP/1.1".into());
    http_ctx.source_ip = Some("127.0.0.1".into());
    http_ctx.user_agent = Some(text("user-agent").unwrap_or("").to_owned());

    let mut ctx = ApiGatewayV2httpRequestContext::default();
    ctx.account_id = Some("000000000000".into());
    ctx.apiid = Some("local".into());
    ctx.domain_name = Some(text("host").unwrap_or("127.0.0.1").to_owned());
    ctx.domain_prefix = Some("local".into());
    ctx.http = http_ctx;
    ctx.request_id = Some(request_id.to_owned());
    ctx.route_key = Some(route_key.clone());
    ctx.stage = Some("$default".into());
    ctx.time = Some(now.format("%d/%b/%Y:%H:%M:%S %z").to_string());
    ctx.time_epoch = now.timestamp_millis();
    if route.user {
        if let Some(who) = crate::identity::identify(headers) {
            let mut jwt = ApiGatewayRequestAuthorizerJwtDescription::default();
            jwt.claims.insert("sub".into(), who.sub().to_owned());
            let mut authorizer = ApiGatewayRequestAuthorizer::default();
            authorizer.jwt = Some(jwt);
            ctx.authorizer = Some(authorizer);
        }
    }

    let mut ev = ApiGatewayV2httpRequest::default();
    ev.version = Some("2.0".into());
    ev.route_key = Some(route_key);
    ev.raw_path = Some(path.to_owned());
    ev.raw_query_string = Some(query.to_owned());
    ev.headers = hdrs;
    ev.path_parameters = params.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect();
    ev.request_context = ctx;
    (ev.body, ev.is_base64_encoded) = match std::str::from_utf8(body) {
        _ if body.is_empty() => (None, false),
        Ok(s) => (Some(s.to_owned()), false),
        Err(_) => (Some(base64::engine::general_purpose::STANDARD.encode(body)), true),
    };
    ev
}

/// The request a Lambda's handler gets for `event`: `lambda_http`'s conversion of a parsed
/// API Gateway v2 event (URI, path and query parameters, request context, body).
pub fn lambda_request(event: ApiGatewayV2httpRequest) -> lambda_http::Request {
    LambdaRequest::ApiGatewayV2(event).into()
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

fn error(status: StatusCode, code: ErrorCode, message: &str, request_id: &str) -> Response<Bytes> {
    let body = json!({"error": {"code": code.as_str(), "message": message}, "requestId": request_id});
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
            Resolved::NotFound => {
                (error(StatusCode::NOT_FOUND, ErrorCode::NotFound, "no such route", &request_id), "-".into())
            }
            Resolved::MethodNotAllowed(allowed) => {
                let mut r = error(
                    StatusCode::METHOD_NOT_ALLOWED,
                    ErrorCode::MethodNotAllowed,
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
                (invoke(h, r.function, lambda_request(ev)).await, r.key())
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
        let claims = &ev.request_context.authorizer.as_ref().unwrap().jwt.as_ref().unwrap().claims;
        assert_eq!(claims["sub"], "plugin-dev");
        assert_eq!(ev.route_key.as_deref(), Some(r.key().as_str()));
        let (w, _) = route(&Method::POST, "/code2des/webhook").unwrap();
        let ev = event(w, &[], &Method::POST, "/code2des/webhook", "", &headers, b"{}", "id");
        assert!(ev.request_context.authorizer.is_none());
    }

    /// The typed event converts to the same request as its JSON text parsed by `lambda_http`
    /// (what a Lambda does with the bytes API Gateway sends): method, URI, headers (repeated
    /// ones joined), path and query parameters, the request context and the body.
    #[test]
    fn the_typed_event_converts_like_its_json_does_in_a_lambda() {
        use lambda_http::RequestExt;
        let mut headers = HeaderMap::new();
        headers.insert("host", HeaderValue::from_static("127.0.0.1:3000"));
        headers.append("accept", HeaderValue::from_static("application/json"));
        headers.append("accept", HeaderValue::from_static("text/plain"));
        headers.insert(DEV_SUB_HEADER, HeaderValue::from_static("someone"));
        let path = "/organizations/1/projects/2/code2des/abc";
        let (r, params) = route(&Method::GET, path).unwrap();
        for body in [&b""[..], b"{\"a\":1}", &[0xff, 0x00, 0x10]] {
            let ev = event(r, &params, &Method::GET, path, "status=completed&limit=5", &headers, body, "rid");
            let json = serde_json::to_string(&ev).unwrap();
            let (direct, parsed) = (lambda_request(ev), lambda_http::request::from_str(&json).unwrap());
            assert_eq!(direct.method(), parsed.method());
            assert_eq!(direct.uri(), parsed.uri());
            assert_eq!(direct.headers(), parsed.headers());
            assert_eq!(direct.headers()["accept"], "application/json,text/plain");
            assert!(direct.headers().get(DEV_SUB_HEADER).is_none());
            assert_eq!(direct.path_parameters(), parsed.path_parameters());
            assert_eq!(direct.query_string_parameters(), parsed.query_string_parameters());
            let context = |r: &lambda_http::Request| serde_json::to_value(r.request_context_ref()).unwrap();
            assert_eq!(context(&direct), context(&parsed));
            assert_eq!(direct.body().as_ref(), parsed.body().as_ref());
            assert_eq!(direct.body().as_ref(), body);
        }
    }
}
