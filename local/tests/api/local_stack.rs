//! The real `code2des-local` binary on free ports, driven over HTTP with the reference
//! worker in-process (`--demo-worker`), exactly as a plugin developer would use it.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use code2des_testkit::db::{db_url, unique_name, DropDatabase};
use code2des_testkit::process::{free_port, wait_for_port, KillOnDrop};
use serde_json::{json, Value};

/// The running binary; dropped, it is killed and then its database dropped.
struct Stack {
    child: KillOnDrop,
    base: String,
    db: DropDatabase,
    _dir: tempfile::TempDir,
}

async fn start() -> Stack {
    start_with(&[]).await
}

async fn start_with(env: &[(&str, &str)]) -> Stack {
    let dir = tempfile::tempdir().unwrap();
    let db = unique_name("c2d_stack");
    let (port, s3_port) = (free_port(), free_port());
    let child = Command::new(env!("CARGO_BIN_EXE_code2des-local"))
        .args(["--addr", &format!("127.0.0.1:{port}"), "--s3-addr", &format!("127.0.0.1:{s3_port}")])
        .args(["--data-dir".as_ref(), dir.path().join("data").as_os_str()])
        .arg("--demo-worker")
        .env("DATABASE_URL", db_url(&db))
        .env_remove("S3_ENDPOINT")
        .env_remove("WEBHOOK_SECRET")
        .env_remove("CALLBACK_URL")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the code2des-local binary runs");
    let stack =
        Stack { child: KillOnDrop(child), base: format!("http://127.0.0.1:{port}"), db: DropDatabase(db), _dir: dir };
    wait_for_port(port, Duration::from_secs(60), "code2des-local").await;
    stack
}

/// A tenant whose page import's capture is the landing sample, written where the stack's S3
/// serves it (its objects are files under the data directory): the reference worker converts
/// it for real, as it would a plugin's capture.
async fn seed(stack: &Stack) -> (i32, i32, String) {
    let (c, conn) = tokio_postgres::connect(&db_url(&stack.db.0), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    let data = stack._dir.path().join("data");
    let url = code2des_local::seed::put_sample(&data, code2des_local::stack::DEFAULT_BUCKET, "landing").unwrap();
    let t = code2des_local::seed::tenant(&c, "o", "dev-user", "pi-1", "1", Some(&url)).await.unwrap();
    (t.org, t.project, t.page_import)
}

async fn call(
    http: &reqwest::Client,
    m: reqwest::Method,
    url: &str,
    body: Option<Value>,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut r = http.request(m, url).header("x-code2des-dev-sub", "dev-user").header("origin", "null");
    if let Some(b) = body {
        r = r.json(&b);
    }
    let resp = r.send().await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (status, headers, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn the_local_binary_runs_one_job_end_to_end() {
    let stack = start().await;
    let (org, proj, pi) = seed(&stack).await;
    let http = reqwest::Client::new();
    let base = format!("{}/organizations/{org}/projects/{proj}/code2des", stack.base);

    let (s, h, job) = call(
        &http,
        reqwest::Method::POST,
        &base,
        Some(json!({"pageImportId": pi, "figmaFileKey": "F", "screenId": "s"})),
    )
    .await;
    assert_eq!(s, 202, "{job}");
    assert_eq!(h["access-control-allow-origin"], "*", "CORS for Figma's null origin");
    let id = job["code2desId"].as_str().unwrap().to_owned();
    assert!(h["location"].to_str().unwrap().ends_with(&id));

    // Chromium starts at the first conversion: up to a minute on a busy 2-core machine.
    let mut status = Value::Null;
    for _ in 0..600 {
        let (_, _, j) = call(&http, reqwest::Method::GET, &format!("{base}/{id}"), None).await;
        status = j["status"].clone();
        if status != "processing" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, "completed", "the demo worker completed the job through the signed webhook");
    let (s, _, res) = call(&http, reqwest::Method::GET, &format!("{base}/{id}/result"), None).await;
    assert_eq!(s, 200);
    // The landing page converted, not a canned frame: its hero picture travels as a PNG image.
    assert_eq!(res["document"]["type"], "FRAME", "{res}");
    assert!(res["document"]["children"].as_array().is_some_and(|c| !c.is_empty()), "{res}");
    use base64::Engine;
    let images = res["images"].as_object().expect("images");
    assert!(!images.is_empty(), "the landing page has images");
    for (name, img) in images {
        let bytes = base64::engine::general_purpose::STANDARD.decode(img["data"].as_str().unwrap()).unwrap();
        assert_ne!(bytes, code2des_worker::HERO_PNG, "{name} is the page's, not the sample's");
    }
    let (s, _, p) =
        call(&http, reqwest::Method::POST, &format!("{base}/{id}/placement"), Some(json!({"nodeId": "1:2"}))).await;
    assert_eq!((s, p["materializedNodeId"].as_str()), (200, Some("1:2")));
    let (s, _, p) =
        call(&http, reqwest::Method::POST, &format!("{base}/{id}/placement"), Some(json!({"nodeId": "3:4"}))).await;
    assert_eq!((s, p["materializedNodeId"].as_str()), (200, Some("1:2")));
    let (s, _, l) = call(&http, reqwest::Method::GET, &format!("{base}?figmaFileKey=F"), None).await;
    assert_eq!((s, l["items"].as_array().unwrap().len()), (200, 1));
}

#[tokio::test]
async fn the_local_gateway_answers_preflight_unknown_routes_and_missing_identity() {
    let stack = start().await;
    let http = reqwest::Client::new();
    let url = format!("{}/organizations/1/projects/1/code2des", stack.base);
    let pre = http
        .request(reqwest::Method::OPTIONS, &url)
        .header("origin", "null")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "authorization,content-type,idempotency-key")
        .send()
        .await
        .unwrap();
    assert_eq!(pre.status().as_u16(), 204);
    let h = pre.headers();
    assert_eq!(h["access-control-allow-origin"], "*");
    // SPEC section 7's CORS, exactly.
    let list = |name: &str| {
        let mut v: Vec<String> = h[name].to_str().unwrap().split(',').map(|s| s.trim().to_lowercase()).collect();
        v.sort();
        v
    };
    assert_eq!(list("access-control-allow-methods"), ["delete", "get", "post"]);
    assert_eq!(
        list("access-control-allow-headers"),
        ["authorization", "content-type", "idempotency-key", "if-none-match"]
    );
    let r = http.get(format!("{}/nope", stack.base)).header("origin", "null").send().await.unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let mut exposed: Vec<String> =
        r.headers()["access-control-expose-headers"].to_str().unwrap().split(',').map(str::to_owned).collect();
    exposed.sort();
    assert_eq!(exposed, ["etag", "location", "ratelimit", "ratelimit-policy", "retry-after"]);
    // A known path with a method it does not serve: 405 naming the ones it does, never served
    // by a route of another method (a DELETE is not a GET).
    let item = format!("{url}/01890a5d-ac96-774b-bcce-b302099a8057");
    let r = http.put(&item).header("x-code2des-dev-sub", "u").send().await.unwrap();
    assert_eq!(r.status().as_u16(), 405);
    assert_eq!(r.headers()["allow"], "GET, DELETE");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "method_not_allowed");
    let r = http.get(format!("{}/code2des/webhook", stack.base)).send().await.unwrap();
    assert_eq!((r.status().as_u16(), r.headers()["allow"].to_str().unwrap()), (405, "POST"));
    let r = http.get(&url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 401, "no x-code2des-dev-sub, no identity");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unauthorized");
    assert!(body["requestId"].is_string());
}

#[tokio::test]
async fn an_unreachable_database_gives_a_clear_message_not_a_stack_trace() {
    let dead = free_port();
    let out = Command::new(env!("CARGO_BIN_EXE_code2des-local"))
        .args(["--addr", &format!("127.0.0.1:{}", free_port()), "--s3-addr", &format!("127.0.0.1:{}", free_port())])
        .env("DATABASE_URL", format!("postgres://postgres@127.0.0.1:{dead}/code2des"))
        // Else a loopback address where nothing answers gets a private cluster (local_postgres.rs).
        .env("LOCAL_POSTGRES", "off")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot reach PostgreSQL") && stderr.contains("DATABASE_URL"), "{stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "{stderr}");
}

#[tokio::test]
async fn ctrl_c_shuts_the_stack_down_cleanly() {
    let mut stack = start().await;
    let pid = stack.child.0.id().to_string();
    assert!(Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(status) = stack.child.0.try_wait().unwrap() {
            assert!(status.success(), "exit status {status}");
            break;
        }
        assert!(Instant::now() < deadline, "did not stop after Ctrl-C");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn s3_endpoint_points_the_stack_at_an_external_server() {
    // An independent S3-compatible server, with no bucket yet: the stack creates it.
    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let external = code2des_local::s3server::serve(listener, dir.path(), "unused-bucket").unwrap();
    let endpoint = external.endpoint();
    let stack = start_with(&[("S3_ENDPOINT", endpoint.as_str()), ("ARTIFACT_BUCKET", "external-artifacts")]).await;
    let (org, proj, pi) = seed(&stack).await;
    let http = reqwest::Client::new();
    let base = format!("{}/organizations/{org}/projects/{proj}/code2des", stack.base);
    let (s, _, job) = call(
        &http,
        reqwest::Method::POST,
        &base,
        Some(json!({"pageImportId": pi, "figmaFileKey": "F", "screenId": "s"})),
    )
    .await;
    assert_eq!(s, 202, "{job}");
    let id = job["code2desId"].as_str().unwrap();
    let s3 = code2des_local::s3server::client(&endpoint, "local", "local-secret");
    let m = s3.get_object().bucket("external-artifacts").key(format!("code2des/{id}/1/manifest.json")).send().await;
    assert!(m.is_ok(), "the manifest is on the external server");
    drop(stack);
    external.stop().await;
}

#[tokio::test]
async fn demo_runs_one_job_end_to_end_and_prints_each_step() {
    let db = DropDatabase(unique_name("c2d_demo"));
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_code2des-local"))
        .arg("demo")
        .args(["--data-dir".as_ref(), dir.path().as_os_str()])
        .env("DATABASE_URL", db_url(&db.0))
        .env_remove("S3_ENDPOINT")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    drop(db);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    for step in [
        "1. plugin triggers",
        "3. plugin polls",
        "\"stage\": \"reading capture\"",
        "4. attempt 1 fails",
        "\"errorMessage\": \"the capture could not be read\"",
        "6. the user retries attempt 1",
        "\"attempt\": 2",
        "7. a late webhook of attempt 1 is fenced → HTTP 409",
        "8. the worker converts attempt 2",
        "10. plugin fetches",
        "11. plugin records",
        "12. a second placement",
        "Done",
    ] {
        assert!(stdout.contains(step), "missing {step:?} in:\n{stdout}");
    }
}
