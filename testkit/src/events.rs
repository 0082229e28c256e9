//! Requests built from the committed `events/*.json`, the same API Gateway v2 events that
//! `sam local invoke -e` uses: a test changes only the ids, the identity and the body, so the
//! files and the handlers cannot drift apart.

use std::path::PathBuf;

use lambda_http::Request;
use serde_json::{json, Value};

use crate::Tenant;

/// The repository's `events/` directory.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../events")
}

/// An event file, as JSON to adjust before it becomes a request.
pub fn load(name: &str) -> Value {
    let path = dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("event files are JSON")
}

/// An event's JSON text as the request `lambda_http` hands a handler.
pub fn parse(text: &str) -> Request {
    lambda_http::request::from_str(text).expect("an API Gateway v2 event")
}

/// An event as the request `lambda_http` hands a handler.
pub fn request(ev: &Value) -> Request {
    parse(&ev.to_string())
}

/// The body of a valid trigger from the tenant's page import.
pub fn default_body(t: &Tenant) -> Value {
    json!({"pageImportId": t.page_import, "figmaFileKey": "FILEkey123", "screenId": "screen-1"})
}

/// Sets the JWT subject, or removes the authorizer altogether (`None`: no identity).
fn set_identity(ev: &mut Value, sub: Option<&str>) {
    match sub {
        Some(s) => ev["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = json!(s),
        None => {
            ev["requestContext"].as_object_mut().unwrap().remove("authorizer");
        }
    }
}

/// A user-route event from its file with this tenant's path, identity and body.
pub fn user_event(file: &str, t: &Tenant, sub: Option<&str>, id: Option<&str>, body: Option<String>) -> Value {
    let mut ev = load(file);
    ev["pathParameters"]["organizationId"] = json!(t.org.to_string());
    ev["pathParameters"]["projectId"] = json!(t.project.to_string());
    if let Some(id) = id {
        ev["pathParameters"]["code2desId"] = json!(id);
    }
    set_identity(&mut ev, sub);
    if let Some(b) = body {
        ev["body"] = json!(b);
    }
    ev
}

/// A trigger with `body`, with the Idempotency-Key `key` (none when `None`; the file has one).
pub fn trigger_event(t: &Tenant, sub: Option<&str>, body: Value, key: Option<&str>) -> Value {
    let mut ev = user_event("trigger.json", t, sub, None, Some(body.to_string()));
    let headers = ev["headers"].as_object_mut().unwrap();
    headers.remove("idempotency-key");
    if let Some(k) = key {
        headers.insert("idempotency-key".into(), json!(k));
    }
    ev
}

/// A list with exactly the query parameters `query` (the file's own are replaced).
pub fn list_event(t: &Tenant, sub: Option<&str>, query: &[(&str, &str)]) -> Value {
    let mut ev = user_event("lifecycle-list.json", t, sub, None, None);
    let qs: Vec<String> = query
        .iter()
        .map(|(k, v)| format!("{k}={}", percent_encoding::utf8_percent_encode(v, percent_encoding::NON_ALPHANUMERIC)))
        .collect();
    ev["rawQueryString"] = json!(qs.join("&"));
    ev.as_object_mut().unwrap().remove("queryStringParameters");
    ev
}

/// The webhook event with `body`, signed by `signature` (no header when `None`).
pub fn webhook_event(body: &[u8], signature: Option<String>) -> Value {
    let mut ev = load("webhook.json");
    ev["body"] = json!(String::from_utf8_lossy(body));
    match signature {
        Some(s) => ev["headers"]["code2des-signature"] = json!(s),
        None => {
            ev["headers"].as_object_mut().unwrap().remove("code2des-signature");
        }
    }
    ev
}
