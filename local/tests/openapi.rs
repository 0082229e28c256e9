//! Keeps `openapi.yaml` and the code in step: the operations are exactly the gateway's routes,
//! the Job schema is exactly what `JobView` serialises (names, nullability, types), and every
//! error code the code can emit is in the spec's `ErrorCode` enum (and nothing else is).

use std::collections::BTreeSet;
use std::path::PathBuf;

use chrono::{TimeZone, Utc};
use code2des_local::gateway;
use http::Method;
use serde_json::Value;
use shared::domain::job::Status;
use shared::domain::job::{Job, Nonce, Policy};
use shared::domain::quota::QuotaLimit;
use shared::error::ErrorCode;
use shared::http::routes::{RouteId, ROUTES};
use shared::http::view::job_view;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn spec() -> Value {
    let text = std::fs::read_to_string(root().join("openapi.yaml")).expect("openapi.yaml at the repo root");
    serde_norway::from_str(&text).expect("openapi.yaml is YAML")
}

/// Follows a local `$ref` (`#/components/...`).
fn resolve<'a>(spec: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let ptr = r.strip_prefix('#').expect("local refs only");
            resolve(spec, spec.pointer(ptr).unwrap_or_else(|| panic!("dangling $ref {r}")))
        }
        None => v,
    }
}

const METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch", "trace"];

fn operations(spec: &Value) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for (path, item) in spec["paths"].as_object().expect("paths") {
        for (k, op) in item.as_object().unwrap() {
            if METHODS.contains(&k.as_str()) {
                out.push((k.to_uppercase(), path.clone(), op.clone()));
            }
        }
    }
    out
}

#[test]
fn operations_are_exactly_the_route_table() {
    let spec = spec();
    assert_eq!(spec["openapi"].as_str().unwrap_or("").get(..3), Some("3.1"));
    let documented: BTreeSet<String> = operations(&spec).iter().map(|(m, p, _)| format!("{m} {p}")).collect();
    let served: BTreeSet<String> = ROUTES.iter().map(|r| r.key()).collect();
    assert_eq!(documented, served);

    for r in ROUTES {
        // Each operation carries the table's operationId (the generated client's method names).
        let op = &spec["paths"][r.path][r.method.to_lowercase()];
        assert_eq!(op["operationId"], r.operation_id, "{}", r.key());
        // And the gateway routes each documented path (with sample parameters) to that route.
        let concrete = r
            .path
            .replace("{organizationId}", "7")
            .replace("{projectId}", "8")
            .replace("{code2desId}", "01890a5d-ac96-774b-bcce-b302099a8057");
        let (got, _) = gateway::route(&Method::from_bytes(r.method.as_bytes()).unwrap(), &concrete)
            .unwrap_or_else(|| panic!("{}", r.key()));
        assert_eq!(got, r);
    }
}

#[test]
fn path_parameters_are_declared_as_the_routes_name_them() {
    let spec = spec();
    for (m, path, op) in operations(&spec) {
        let item = &spec["paths"][&path];
        let mut declared = BTreeSet::new();
        for p in
            item["parameters"].as_array().into_iter().flatten().chain(op["parameters"].as_array().into_iter().flatten())
        {
            let p = resolve(&spec, p);
            if p["in"] == "path" {
                assert_eq!(p["required"], Value::Bool(true), "{m} {path}");
                declared.insert(p["name"].as_str().unwrap().to_owned());
            }
        }
        let in_path: BTreeSet<String> =
            path.split('/').filter_map(|s| s.strip_prefix('{')?.strip_suffix('}').map(str::to_owned)).collect();
        assert_eq!(declared, in_path, "{m} {path}");
    }
}

fn job(with_options: bool) -> Job {
    let t = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
    let some = |s: &str| with_options.then(|| s.to_owned());
    Job {
        id: shared::domain::ids::Code2desId::parse("01890a5d-ac96-774b-bcce-b302099a8057").unwrap(),
        organization_id: shared::domain::ids::OrganizationId::new(1).unwrap(),
        project_id: shared::domain::ids::ProjectId::new(2).unwrap(),
        page_import_id: "pi".into(),
        figma_file_key: "F".into(),
        screen_id: "s".into(),
        placement_target: some("target"),
        status: if with_options { Status::Completed } else { Status::Processing },
        attempt: 1,
        nonce: Nonce::from_db("secret-nonce".into()),
        result_url: some("s3://b/code2des/x/1/result.json"),
        warning_count: with_options.then_some(3),
        error_message: some("boom"),
        materialized_at: with_options.then_some(t),
        materialized_node_id: some("1:2"),
        created_at: t,
        updated_at: t,
        created_by: "sub".into(),
        updated_by: "worker".into(),
        attempt_started_at: t,
        progress: with_options.then(|| shared::domain::job::Progress {
            percent: 40,
            stage: "rendering".into(),
            updated_at: t,
        }),
        cancelled_at: None,
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn schema_types(spec: &Value, schema: &Value) -> BTreeSet<String> {
    let s = resolve(spec, schema);
    match &s["type"] {
        Value::String(t) => [t.clone()].into(),
        Value::Array(ts) => ts.iter().map(|t| t.as_str().unwrap().to_owned()).collect(),
        _ => panic!("schema without a type: {s}"),
    }
}

#[test]
fn job_schema_is_what_job_view_serialises() {
    let spec = spec();
    let schema = &spec["components"]["schemas"]["Job"];
    let props = schema["properties"].as_object().expect("Job.properties");
    let documented: BTreeSet<&str> = props.keys().map(String::as_str).collect();
    let required: BTreeSet<&str> = schema["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(schema["additionalProperties"], Value::Bool(false));

    let full = serde_json::to_value(job_view(
        &job(true),
        &Policy {
            max_attempts: 3,
            result_retention: Some(std::time::Duration::from_secs(30 * 86_400)),
            ..Policy::default()
        },
    ))
    .unwrap();
    let empty = serde_json::to_value(job_view(&job(false), &Policy { max_attempts: 3, ..Policy::default() })).unwrap();
    let fields: BTreeSet<&str> = full.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(documented, fields, "Job.properties vs JobView");
    assert_eq!(required, fields, "every Job field is always present");
    assert!(!full.to_string().contains("secret-nonce") && !full.to_string().contains("s3://"));

    for name in fields {
        let types = schema_types(&spec, &props[name]);
        for sample in [&full[name], &empty[name]] {
            assert!(types.contains(json_type(sample)), "{name}: {sample} is not of type {types:?}");
        }
        // Nullable in the spec exactly when the code can send null.
        assert_eq!(types.contains("null"), empty[name].is_null(), "{name}: nullability");
    }
    let statuses: BTreeSet<&str> =
        resolve(&spec, &props["status"])["enum"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let names: BTreeSet<&str> = [Status::Processing, Status::Completed, Status::Failed].map(Status::api_name).into();
    assert_eq!(statuses, names);
}

#[test]
fn every_error_code_is_documented() {
    let spec = spec();
    let documented: BTreeSet<String> = spec["components"]["schemas"]["ErrorCode"]["enum"]
        .as_array()
        .expect("ErrorCode enum")
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    // Every code the service can answer is an `ErrorCode` (ApiError and the local gateway take
    // no other), so the enum is the list to document.
    let emitted: BTreeSet<String> = ErrorCode::ALL.iter().map(|c| c.as_str().to_owned()).collect();
    assert_eq!(documented, emitted, "openapi.yaml's ErrorCode enum vs shared::error::ErrorCode");

    let error = &spec["components"]["schemas"]["Error"];
    assert_eq!(error["required"], serde_json::json!(["error", "requestId"]));
    assert_eq!(error["properties"]["error"]["required"], serde_json::json!(["code", "message"]));
    // A 429 names its limit: the names shared::domain::quota answers.
    let limits: Vec<&str> = [QuotaLimit::Active, QuotaLimit::Burst].iter().map(|l| l.as_str()).collect();
    assert_eq!(error["properties"]["error"]["properties"]["limit"]["enum"], serde_json::json!(limits));
}

#[test]
fn every_warning_code_is_documented() {
    let spec = spec();
    let documented: Vec<String> = spec["components"]["schemas"]["ResultWarning"]["properties"]["code"]["enum"]
        .as_array()
        .expect("ResultWarning code enum")
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    // The result route accepts exactly these (worker/tests/warning_codes.rs holds the converter
    // to the same list; the artifact schema is held to it in shared::domain::wire's tests).
    assert_eq!(documented, shared::domain::artifact::WARNING_CODES, "openapi.yaml's ResultWarning codes");
}

/// The statuses each route documents: an exhaustive match, so a new route does not compile
/// here until its answers are listed (ARCHITECTURE.md, "Adding a route").
fn documented_statuses(id: RouteId) -> &'static [&'static str] {
    match id {
        RouteId::Trigger => &["202", "400", "401", "404", "409", "410", "413", "422", "429", "503"],
        RouteId::List | RouteId::Get => &["200", "400", "401", "404", "503"],
        RouteId::Result => &["200", "304", "400", "401", "404", "409", "410", "502", "503"],
        RouteId::Retry => &["200", "202", "400", "401", "404", "409", "413", "429", "503"],
        RouteId::Cancel => &["200", "400", "401", "404", "409", "503"],
        RouteId::Delete => &["204", "400", "401", "404", "503"],
        RouteId::Placement => &["200", "400", "401", "404", "409", "413", "503"],
        RouteId::Webhook => &["200", "400", "401", "404", "409", "410", "413", "503"],
    }
}

#[test]
fn statuses_headers_and_security_are_documented() {
    let spec = spec();
    let ops = operations(&spec);
    for r in shared::http::routes::ROUTES {
        let key = &format!("{} {}", r.method, r.path);
        let statuses = documented_statuses(r.id);
        let (_, _, op) = ops.iter().find(|(m, p, _)| format!("{m} {p}") == *key).expect(key);
        let got: BTreeSet<&str> = op["responses"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(got, statuses.iter().copied().collect::<BTreeSet<_>>(), "{key}");
        for (status, resp) in op["responses"].as_object().unwrap() {
            let resp = resolve(&spec, resp);
            if status.starts_with('4') || status.starts_with('5') {
                let schema = &resp["content"]["application/json"]["schema"];
                assert_eq!(schema["$ref"], "#/components/schemas/Error", "{key} {status}");
            }
            if status == "503" || status == "429" {
                assert_eq!(resp["headers"]["Retry-After"]["required"], Value::Bool(true), "{key}");
            }
            // Issue 23: the quotas' fields on every 202 and 429 (trigger and retry).
            if status == "429" || (status == "202" && key.starts_with("POST")) {
                for h in ["RateLimit-Policy", "RateLimit"] {
                    assert_eq!(
                        resolve(&spec, &resp["headers"][h])["required"],
                        Value::Bool(true),
                        "{key} {status} {h}"
                    );
                }
            }
        }
        if key.starts_with("POST /code2des/webhook") {
            assert_eq!(op["security"], serde_json::json!([]));
            let sig = op["parameters"].as_array().unwrap().iter().any(|p| p["name"] == "Code2des-Signature");
            assert!(sig, "the webhook documents Code2des-Signature");
        }
    }
    let trigger = &ops.iter().find(|(m, p, _)| m == "POST" && p.ends_with("/code2des")).unwrap().2;
    assert_eq!(trigger["responses"]["202"]["headers"]["Location"]["required"], Value::Bool(true));
    assert!(trigger["parameters"].as_array().unwrap().iter().any(|p| resolve(&spec, p)["name"] == "Idempotency-Key"));

    // SPEC section 7's headers: polling, caching, and where a retried attempt lives.
    let op = |m: &str, tail: &str| {
        ops.iter()
            .find(|(om, p, _)| {
                om == m && *p == format!("/organizations/{{organizationId}}/projects/{{projectId}}/code2des{tail}")
            })
            .map(|(_, _, op)| op.clone())
            .unwrap_or_else(|| panic!("{m} {tail}"))
    };
    let get = op("GET", "/{code2desId}");
    assert!(
        resolve(&spec, &get["responses"]["200"])["headers"]["Retry-After"].is_object(),
        "GET job documents Retry-After"
    );
    let result = op("GET", "/{code2desId}/result");
    let ok = resolve(&spec, &result["responses"]["200"]);
    assert!(
        ok["headers"]["ETag"].is_object() && ok["headers"]["Cache-Control"].is_object(),
        "result documents caching"
    );
    assert!(resolve(&spec, &result["responses"]["304"])["content"].is_null(), "304 has no body");
    assert!(result["parameters"].as_array().unwrap().iter().any(|p| resolve(&spec, p)["name"] == "If-None-Match"));
    let retry = op("POST", "/{code2desId}/retry");
    assert_eq!(retry["responses"]["202"]["headers"]["Location"]["required"], Value::Bool(true));

    let schemes = &spec["components"]["securitySchemes"];
    assert_eq!(schemes["cognitoJwt"]["scheme"], "bearer");
    assert_eq!(schemes["localDevSub"]["name"], gateway::DEV_SUB_HEADER);
    assert!(schemes["localDevSub"]["description"].as_str().unwrap().contains("LOCAL"));
}
