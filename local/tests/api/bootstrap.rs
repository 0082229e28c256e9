//! The five Lambda binaries themselves, as Lambda runs them: each process is started with a
//! Lambda's environment against a stand-in Runtime API (`code2des_local::runtime_api`), given
//! an event from `events/*.json` and read back through the response it posts. This covers
//! what the in-process tests cannot: each `main.rs` (runtime flavor, settings read from the
//! environment, SDK configuration from it) and `lambda_http`'s own event and response mapping.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use code2des_local::runtime_api::{Report, RuntimeApi};
use code2des_testkit::process::KillOnDrop;
use serde_json::{json, Value};

use crate::helpers::*;

/// The function binaries of the profile this test was built with, from the profile's directory
/// (`target/<profile>/`, the parent of the `deps/` this test runs from). `cargo test` builds
/// only the binaries of the package whose integration tests run, and these belong to the five
/// function packages, so the outer command builds them in the same invocation as the tests:
/// `scripts/test` runs `cargo build --workspace --all-targets` first (by hand:
/// `cargo build --workspace --all-targets && cargo test --workspace`). No nested build here.
/// A binary older than its sources (a function's or the shared crate's `src/`) fails the test
/// rather than testing old code.
fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let dir = exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>");
    let bin = dir.join(name);
    let rebuild = "build them with the tests first: `cargo build --workspace --all-targets` (same profile)";
    let built = std::fs::metadata(&bin)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("{}: {e}: {rebuild}", bin.display()));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root");
    for src in [root.join("functions").join(name).join("src"), root.join("shared/src")] {
        if let Some((path, changed)) = newest(&src) {
            assert!(changed <= built, "{} is older than {}: {rebuild}", bin.display(), path.display());
        }
    }
    bin
}

/// The most recently modified `.rs` file under `dir`, with its time.
fn newest(dir: &Path) -> Option<(PathBuf, SystemTime)> {
    let mut best: Option<(PathBuf, SystemTime)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let found = if path.is_dir() {
            newest(&path)
        } else if path.extension().is_some_and(|e| e == "rs") {
            entry.metadata().and_then(|m| m.modified()).ok().map(|t| (path, t))
        } else {
            None
        };
        if let Some((p, t)) = found {
            if best.as_ref().is_none_or(|(_, b)| t > *b) {
                best = Some((p, t));
            }
        }
    }
    best
}

/// One function process with a Lambda's environment (no AWS keys: the local S3 keys apply).
struct Function {
    api: RuntimeApi,
    child: KillOnDrop,
}

impl Function {
    fn start(app: &TestApp, name: &str) -> Self {
        Self::start_with(app, name, &[])
    }

    /// [`Function::start`] with more variables.
    fn start_with(app: &TestApp, name: &str, env: &[(&str, &str)]) -> Self {
        let api = RuntimeApi::start().unwrap();
        let bin = binary(name);
        let s3 = app.store.endpoint().expect("S3 running");
        let child = Command::new(&bin)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("AWS_LAMBDA_RUNTIME_API", api.host_port())
            .env("AWS_LAMBDA_FUNCTION_NAME", name)
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_LAMBDA_LOG_GROUP_NAME", format!("/aws/lambda/{name}"))
            .env("AWS_LAMBDA_LOG_STREAM_NAME", "2026/11/29/[$LATEST]test")
            .env("AWS_REGION", "us-east-1")
            .env("DATABASE_URL", db_url(&app.db_name))
            .env("S3_ENDPOINT", s3)
            .env("ARTIFACT_BUCKET", BUCKET)
            .env("WEBHOOK_SECRET", SECRET)
            .env("CALLBACK_URL", CALLBACK)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            // The function's log lines (stdout, as on Lambda) appear with a failing test's output.
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
        Self { api, child: KillOnDrop(child) }
    }

    /// Hands the process `event` and waits for what it posts back: (status, headers, body).
    fn invoke(&mut self, event: &Value) -> (u16, Value, Value) {
        // The wait blocks; the test's S3 server must keep running on the runtime's other thread.
        tokio::task::block_in_place(|| self.invoke_blocking(event))
    }

    fn invoke_blocking(&mut self, event: &Value) -> (u16, Value, Value) {
        let id = self.api.queue(event.to_string());
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.api.recv_timeout(left) {
                Some(Report::Next { .. }) => continue,
                Some(Report::Response { request_id, body }) => {
                    assert_eq!(request_id, id, "the response answers the invocation it was given");
                    let resp: Value = serde_json::from_slice(&body).expect("an API Gateway v2 response");
                    assert_eq!(resp["isBase64Encoded"], json!(false), "JSON goes out as text");
                    let body = serde_json::from_str(resp["body"].as_str().expect("a body")).expect("a JSON body");
                    let status = resp["statusCode"].as_u64().expect("a status") as u16;
                    // Wait for the process to ask for more: the next event is then queued while
                    // its poll is held open, the path a warm Lambda instance takes.
                    match self.api.recv_timeout(Duration::from_secs(30)) {
                        Some(Report::Next { .. }) => {}
                        other => panic!("after its response the function reported {other:?}"),
                    }
                    return (status, resp["headers"].clone(), body);
                }
                Some(other) => panic!("the function reported {other:?}"),
                None => {
                    let exited = self.child.0.try_wait().ok().flatten();
                    panic!("no response within 60 s (process: {exited:?})");
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_five_binaries_take_a_job_through_its_lifecycle_from_the_event_files() {
    let app = TestApp::new().await;
    let t = app.tenant().await;

    // trigger: 202 with Location, the row, and the manifest written for the worker.
    let mut f = Function::start(&app, "trigger");
    let (status, headers, body) = f.invoke(&trigger_event(&t, Some(&t.sub), default_body(&t), Some("bootstrap-1")));
    assert_eq!(status, 202, "{body}");
    let id = body["code2desId"].as_str().expect("code2desId").to_owned();
    assert_eq!(body["status"], "processing");
    assert_eq!(app.count_jobs().await, 1);
    let location = format!("/organizations/{}/projects/{}/code2des/{id}", t.org, t.project);
    assert_eq!(headers["location"], json!(location));
    let m = app.manifest(&id).await;
    assert_eq!((m.code2des_id.as_str(), m.callback_url.as_str()), (id.as_str(), CALLBACK));
    drop(f);

    // lifecycle: the job, then the list holding it; one process serves both events.
    let mut f = Function::start(&app, "lifecycle");
    let (status, _, body) = f.invoke(&user_event("lifecycle-get.json", &t, Some(&t.sub), Some(&id), None));
    assert_eq!(
        (status, body["code2desId"].as_str(), body["status"].as_str()),
        (200, Some(id.as_str()), Some("processing"))
    );
    let (status, _, body) = f.invoke(&list_event(&t, Some(&t.sub), &[]));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["items"].as_array().map(|a| a.len()), Some(1));
    drop(f);

    // webhook: the worker's signed report, after it wrote the artifact and its image.
    let key = format!("code2des/{id}/1/images/hero.png");
    let art = artifact(&id, &m.nonce, json!({"hero": {"key": key, "mime_type": "image/png"}}), &["hero"]);
    let report = serde_json::to_vec(&app.upload_result(&id, &art, &[(&key, png(8, 8))]).await).unwrap();
    let mut ev = webhook_event(&report, Some(sign(&report)));
    let mut f = Function::start(&app, "webhook");
    let (status, _, body) = f.invoke(&ev);
    assert_eq!((status, body["status"].as_str()), (200, Some("completed")), "{body}");
    // The same report again is a harmless replay; a forged one is refused.
    assert_eq!(f.invoke(&ev).0, 200);
    ev["headers"]["code2des-signature"] = json!(format!("t={},v1={}", now(), "0".repeat(64)));
    let (status, _, body) = f.invoke(&ev);
    assert_eq!((status, body["error"]["code"].as_str()), (401, Some("unauthorized")), "{body}");
    drop(f);

    // result: the artifact, validated, with the image inlined.
    let mut f = Function::start(&app, "result");
    let (status, _, body) = f.invoke(&user_event("result.json", &t, Some(&t.sub), Some(&id), None));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["document"], art["document"]);
    assert!(body.to_string().contains(&base64_of(&png(8, 8))), "the image bytes are inlined");
    drop(f);

    // placement: the first node is recorded; a later call with another node returns it unchanged.
    let mut f = Function::start(&app, "placement");
    let place = |node: &str| {
        user_event("placement.json", &t, Some(&t.sub), Some(&id), Some(json!({"nodeId": node}).to_string()))
    };
    let (status, _, body) = f.invoke(&place("12:34"));
    assert_eq!((status, body["materializedNodeId"].as_str()), (200, Some("12:34")), "{body}");
    let (status, _, again) = f.invoke(&place("56:78"));
    assert_eq!(
        (status, &again["materializedNodeId"], &again["materializedAt"]),
        (200, &body["materializedNodeId"], &body["materializedAt"])
    );
    let row = app.job_row(&id).await;
    assert_eq!(row.get::<_, Option<String>>("materialized_node_id").as_deref(), Some("12:34"));
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// With `OTEL_EXPORTER_OTLP_ENDPOINT` set, a function binary exports its spans and flushes them
/// after each invocation (the runtime's OpenTelemetry layer): the batch's own timer is set to 10
/// minutes here, so the spans are at the receiver only if the invocation flushed them, by the
/// time the process asks for its next event. The request continues the caller's `traceparent`,
/// and the manifest carries the trigger's span on to the worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_binary_exports_its_spans_before_its_next_event() {
    let receiver = code2des_testkit::otlp::Receiver::start().await;
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.as_str()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
        ("OTEL_BSP_SCHEDULE_DELAY", "600000"),
    ];
    let mut f = Function::start_with(&app, "trigger", &env);
    let mut ev = trigger_event(&t, Some(&t.sub), default_body(&t), None);
    let caller = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    ev["headers"]["traceparent"] = json!(format!("00-{}-{}-01", caller.0, caller.1));
    let (status, _, body) = f.invoke(&ev);
    assert_eq!(status, 202, "{body}");
    let id = body["code2desId"].as_str().unwrap().to_owned();
    // `invoke` returned once the process asked for its next event: no waiting for a timer.
    let spans = receiver.spans();
    let route = spans.iter().find(|s| s.attribute("http.route").is_some_and(|r| r.ends_with("/code2des")));
    let route = route.unwrap_or_else(|| panic!("the trigger's span was flushed: {spans:?}"));
    assert_eq!((route.trace_id.as_str(), route.parent_span_id.as_str()), caller);
    assert_eq!(route.attribute("code2des.id"), Some(id.as_str()));
    assert_eq!(route.service, "trigger", "the function's name names the service");
    assert!(spans.iter().any(|s| s.attribute("faas.coldstart").is_some()), "the runtime's invocation span");
    let m = app.manifest(&id).await;
    assert_eq!(m.traceparent, Some(format!("00-{}-{}-01", caller.0, route.span_id)));
}
