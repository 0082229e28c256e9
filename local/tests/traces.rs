//! One trace per job (issue 40 item 4): the real `code2des-local` binary, its reference worker
//! in-process (`--demo-worker`, converting in Chromium), exporting its spans over OTLP/HTTP to the
//! test kit's receiver. One job from trigger to webhook shares one trace, in both encodings;
//! the result GET and the placement name the job; no span carries a nonce or a token.

use std::process::{Command, Stdio};
use std::time::Duration;

use code2des_testkit::db::{db_url, unique_name, DropDatabase};
use code2des_testkit::otlp::{Receiver, Span};
use code2des_testkit::process::{free_port, wait_for_port, KillOnDrop};
use serde_json::{json, Value};

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

struct Stack {
    _child: KillOnDrop,
    base: String,
    db: DropDatabase,
    dir: tempfile::TempDir,
}

async fn start(receiver: &Receiver, protocol: &str) -> Stack {
    let dir = tempfile::tempdir().unwrap();
    let db = unique_name("c2d_traces");
    let (port, s3_port) = (free_port(), free_port());
    let child = Command::new(env!("CARGO_BIN_EXE_code2des-local"))
        .args(["--addr", &format!("127.0.0.1:{port}"), "--s3-addr", &format!("127.0.0.1:{s3_port}")])
        .args(["--data-dir".as_ref(), dir.path().join("data").as_os_str()])
        .arg("--demo-worker")
        .env("DATABASE_URL", db_url(&db))
        .env_remove("S3_ENDPOINT")
        .env_remove("WEBHOOK_SECRET")
        .env_remove("CALLBACK_URL")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        .env_remove("OTEL_SERVICE_NAME")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
        // The batch goes out every 100 ms rather than 5 s: the test waits for it.
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the code2des-local binary runs");
    let stack =
        Stack { _child: KillOnDrop(child), base: format!("http://127.0.0.1:{port}"), db: DropDatabase(db), dir };
    wait_for_port(port, Duration::from_secs(60), "code2des-local").await;
    stack
}

/// A tenant whose page import's capture is the landing sample.
async fn seed(stack: &Stack) -> (i32, i32, String) {
    let (c, conn) = tokio_postgres::connect(&db_url(&stack.db.0), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    let data = stack.dir.path().join("data");
    let url = code2des_local::seed::put_sample(&data, code2des_local::stack::DEFAULT_BUCKET, "landing").unwrap();
    let t = code2des_local::seed::tenant(&c, "o", "dev-user", "pi-1", "1", Some(&url)).await.unwrap();
    (t.org, t.project, t.page_import)
}

async fn call(http: &reqwest::Client, req: reqwest::RequestBuilder) -> (u16, Value) {
    let resp = http.execute(req.build().unwrap()).await.unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap_or(Value::Null))
}

/// The spans of the request whose route is `route` (`http.route`, or the webhook's path).
fn of_route<'a>(spans: &'a [Span], method: &str, route_suffix: &str) -> Vec<&'a Span> {
    spans
        .iter()
        .filter(|s| {
            s.attribute("http.request.method") == Some(method)
                && s.attribute("http.route").is_some_and(|r| r.ends_with(route_suffix))
        })
        .collect()
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

/// Drives one job through the stack (trigger, with `traceparent` when given; the worker; its
/// webhooks; the result; a placement) and answers the job's id, its manifest and the spans.
async fn one_job(protocol: &str, traceparent: Option<&str>) -> (String, Value, String, Vec<Span>) {
    let receiver = Receiver::start().await;
    let stack = start(&receiver, protocol).await;
    let (org, proj, pi) = seed(&stack).await;
    let token = code2des_local::identity::local_token("dev-user");
    let http = reqwest::Client::new();
    let base = format!("{}/organizations/{org}/projects/{proj}/code2des", stack.base);
    let mut trigger =
        http.post(&base).bearer_auth(&token).json(&json!({"pageImportId": pi, "figmaFileKey": "F", "screenId": "s"}));
    if let Some(tp) = traceparent {
        trigger = trigger.header("traceparent", tp);
    }
    let (s, job) = call(&http, trigger).await;
    assert_eq!(s, 202, "{job}");
    let id = job["code2desId"].as_str().unwrap().to_owned();
    let mut status = Value::Null;
    for _ in 0..600 {
        let (_, j) = call(&http, http.get(format!("{base}/{id}")).bearer_auth(&token)).await;
        status = j["status"].clone();
        if status != "processing" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, "completed");
    let (s, _) = call(&http, http.get(format!("{base}/{id}/result")).bearer_auth(&token)).await;
    assert_eq!(s, 200);
    let (s, _) =
        call(&http, http.post(format!("{base}/{id}/placement")).bearer_auth(&token).json(&json!({"nodeId": "1:2"})))
            .await;
    assert_eq!(s, 200);
    let manifest = stack
        .dir
        .path()
        .join("data")
        .join(code2des_local::stack::DEFAULT_BUCKET)
        .join(format!("code2des/{id}/1/manifest.json"));
    let manifest: Value = serde_json::from_slice(&std::fs::read(manifest).unwrap()).unwrap();
    let spans = receiver
        .wait_for(Duration::from_secs(30), |spans| {
            !of_route(spans, "POST", "/placement").is_empty()
                && !of_route(spans, "GET", "/result").is_empty()
                && ["load", "layout", "snapshot", "convert", "upload"].iter().all(|n| !named(spans, n).is_empty())
                && spans.iter().filter(|s| s.attribute("http.route") == Some("/code2des/webhook")).count() >= 2
        })
        .await;
    (id, manifest, token, spans)
}

/// The assertions both encodings share; answers the trigger's span.
fn one_trace(id: &str, manifest: &Value, token: &str, spans: &[Span], content_type: &str) -> Span {
    assert!(spans.iter().all(|s| s.content_type == content_type), "every export in {content_type}");
    assert!(spans.iter().all(|s| s.service == "code2des-local"), "the service is named");
    let trigger = of_route(spans, "POST", "/code2des");
    assert_eq!(trigger.len(), 1, "one trigger span: {trigger:?}");
    let trigger = trigger[0].clone();
    let trace = trigger.trace_id.clone();
    assert_eq!(trigger.attribute("code2des.id"), Some(id), "{trigger:?}");
    // The manifest names the trigger's span as the worker's parent.
    assert_eq!(manifest["traceparent"], format!("00-{trace}-{}-01", trigger.span_id));
    let worker = named(spans, "worker");
    assert_eq!(worker.len(), 1);
    assert_eq!(
        (worker[0].trace_id.as_str(), worker[0].parent_span_id.as_str()),
        (trace.as_str(), trigger.span_id.as_str())
    );
    assert_eq!(worker[0].attribute("code2des.id"), Some(id));
    for stage in ["load", "layout", "snapshot", "convert", "upload"] {
        for s in named(spans, stage) {
            assert_eq!(s.trace_id, trace, "{stage} is in the job's trace");
        }
    }
    let webhooks: Vec<_> = spans.iter().filter(|s| s.attribute("http.route") == Some("/code2des/webhook")).collect();
    for w in &webhooks {
        assert_eq!(w.trace_id, trace, "the webhook continues the job's trace: {w:?}");
        assert!(
            spans.iter().any(|p| p.span_id == w.parent_span_id && p.trace_id == trace),
            "its parent is the worker's"
        );
        assert_eq!(w.attribute("code2des.id"), Some(id));
    }
    for (method, route) in [("GET", "/result"), ("POST", "/placement")] {
        for s in of_route(spans, method, route) {
            assert_eq!(s.attribute("code2des.id"), Some(id), "{route} names the job: {s:?}");
        }
    }
    let nonce = manifest["nonce"].as_str().unwrap();
    for s in spans {
        for v in &s.all_values {
            assert!(!v.contains(nonce), "the nonce is in span {}: {v}", s.name);
            assert!(!v.contains(token) && !v.contains("Bearer"), "the token is in span {}: {v}", s.name);
            assert!(!v.contains("v1a,") && !v.contains("v1,"), "a signature is in span {}: {v}", s.name);
        }
    }
    trigger
}

#[tokio::test]
async fn a_job_is_one_trace_continuing_the_callers_in_protobuf() {
    let caller = format!("00-{TRACE_ID}-{CALLER_SPAN}-01");
    let (id, manifest, token, spans) = one_job("http/protobuf", Some(&caller)).await;
    let trigger = one_trace(&id, &manifest, &token, &spans, "application/x-protobuf");
    assert_eq!((trigger.trace_id.as_str(), trigger.parent_span_id.as_str()), (TRACE_ID, CALLER_SPAN));
}

#[tokio::test]
async fn a_job_without_a_traceparent_starts_one_trace_in_json() {
    let (id, manifest, token, spans) = one_job("http/json", None).await;
    let trigger = one_trace(&id, &manifest, &token, &spans, "application/json");
    assert_ne!(trigger.trace_id, TRACE_ID);
    assert!(trigger.trace_id.len() == 32 && trigger.trace_id != "0".repeat(32));
}
