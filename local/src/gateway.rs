//! A local stand-in for API Gateway (HTTP API, payload v2): matches the SAME routes as
//! `template.yaml`, turns each request into the SAME event JSON API Gateway sends (route key,
//! path parameters, query string, JWT claims), parses it with `lambda_http` exactly as a Lambda
//! does, and calls the SAME handler function the Lambda binary runs.
//!
//! Identity: the `x-code2des-dev-sub` header becomes the JWT `sub` claim on user routes. This
//! header exists only here; the Lambda handlers read the authorizer context, never a header.

use std::time::Instant;

use base64::Engine;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode};
use serde_json::{json, Map, Value};

pub const DEV_SUB_HEADER: &str = "x-code2des-dev-sub";
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Trigger,
    List,
    Get,
    Result,
    Placement,
    Webhook,
}

impl Route {
    /// The route key as written in template.yaml.
    pub fn key(self) -> &'static str {
        match self {
            Route::Trigger => "POST /organizations/{organizationId}/projects/{projectId}/code2des",
            Route::List => "GET /organizations/{organizationId}/projects/{projectId}/code2des",
            Route::Get => "GET /organizations/{organizationId}/projects/{projectId}/code2des/{code2desId}",
            Route::Result => "GET /organizations/{organizationId}/projects/{projectId}/code2des/{code2desId}/result",
            Route::Placement => {
                "POST /organizations/{organizationId}/projects/{projectId}/code2des/{code2desId}/placement"
            }
            Route::Webhook => "POST /code2des/webhook",
        }
    }

    fn has_authorizer(self) -> bool {
        self != Route::Webhook
    }
}

/// Matches like API Gateway: literal segments exactly, `{param}` segments any one non-empty
/// segment (percent-decoded, as API Gateway hands path parameters to the function).
pub fn route(method: &Method, path: &str) -> Option<(Route, Vec<(&'static str, String)>)> {
    let segs: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
    if segs.iter().any(|s| s.is_empty()) {
        return None;
    }
    let decode = |s: &str| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned();
    let m = method.as_str();
    match segs.as_slice() {
        ["code2des", "webhook"] if m == "POST" => Some((Route::Webhook, vec![])),
        ["organizations", org, "projects", proj, "code2des", rest @ ..] => {
            let mut params = vec![("organizationId", decode(org)), ("projectId", decode(proj))];
            let r = match (m, rest) {
                ("POST", []) => Route::Trigger,
                ("GET", []) => Route::List,
                ("GET", [id]) => {
                    params.push(("code2desId", decode(id)));
                    Route::Get
                }
                ("GET", [id, "result"]) => {
                    params.push(("code2desId", decode(id)));
                    Route::Result
                }
                ("POST", [id, "placement"]) => {
                    params.push(("code2desId", decode(id)));
                    Route::Placement
                }
                _ => return None,
            };
            Some((r, params))
        }
        _ => None,
    }
}

/// The API Gateway HTTP API (v2) event for one request.
#[allow(clippy::too_many_arguments)]
pub fn event(
    route: Route,
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
    if route.has_authorizer() {
        if let Some(sub) = headers.get(DEV_SUB_HEADER).and_then(|v| v.to_str().ok()) {
            ctx["authorizer"] = json!({"jwt": {"claims": {"sub": sub}, "scopes": null}});
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
    // Figma's plugin iframe sends `Origin: null`; any origin may call with a bearer token.
    headers.insert("access-control-allow-origin", HeaderValue::from_static("*"));
    headers.insert("access-control-expose-headers", HeaderValue::from_static("location,retry-after"));
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
        let mut r = Response::new(Bytes::new());
        *r.status_mut() = StatusCode::NO_CONTENT;
        let hm = r.headers_mut();
        hm.insert("access-control-allow-methods", HeaderValue::from_static("GET,POST"));
        hm.insert(
            "access-control-allow-headers",
            HeaderValue::from_static("authorization,content-type,idempotency-key"),
        );
        hm.insert("access-control-max-age", HeaderValue::from_static("600"));
        (r, "OPTIONS (preflight)")
    } else {
        match route(&parts.method, &path) {
            None => (error(StatusCode::NOT_FOUND, "not_found", "no such route", &request_id), "-"),
            Some((r, params)) => {
                let ev = event(r, &params, &parts.method, &path, &query, &parts.headers, &body, &request_id);
                let resp = match lambda_http::request::from_str(&ev.to_string()) {
                    Ok(lreq) => invoke(h, r, lreq).await,
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

async fn invoke(h: &Handlers, r: Route, req: lambda_http::Request) -> Response<Bytes> {
    let resp = match r {
        Route::Trigger => code2des_trigger::handler::handle(&h.trigger, req).await,
        Route::List | Route::Get => code2des_lifecycle::handler::handle(&h.lifecycle, req).await,
        Route::Result => code2des_result::handler::handle(&h.result, req).await,
        Route::Placement => code2des_placement::handler::handle(&h.placement, req).await,
        Route::Webhook => code2des_webhook::handler::handle(&h.webhook, req).await,
    };
    let (parts, body) = resp.into_parts();
    Response::from_parts(parts, Bytes::copy_from_slice(body.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_match_like_api_gateway() {
        let id = "01890a5d-ac96-774b-bcce-b302099a8057";
        assert_eq!(route(&Method::POST, "/organizations/1/projects/2/code2des").unwrap().0, Route::Trigger);
        assert_eq!(route(&Method::GET, "/organizations/1/projects/2/code2des").unwrap().0, Route::List);
        assert_eq!(route(&Method::GET, &format!("/organizations/1/projects/2/code2des/{id}")).unwrap().0, Route::Get);
        assert_eq!(
            route(&Method::GET, &format!("/organizations/1/projects/2/code2des/{id}/result")).unwrap().0,
            Route::Result
        );
        assert_eq!(
            route(&Method::POST, &format!("/organizations/1/projects/2/code2des/{id}/placement")).unwrap().0,
            Route::Placement
        );
        assert_eq!(route(&Method::POST, "/code2des/webhook").unwrap().0, Route::Webhook);
        assert!(route(&Method::GET, "/code2des/webhook").is_none());
        assert!(route(&Method::POST, "/organizations/1/projects/2/code2des/").is_none());
        assert!(route(&Method::DELETE, &format!("/organizations/1/projects/2/code2des/{id}")).is_none());
        let (_, p) = route(&Method::GET, "/organizations/a%20b/projects/2/code2des").unwrap();
        assert_eq!(p[0], ("organizationId", "a b".to_owned()));
    }
}
