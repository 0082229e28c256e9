//! `code2des-local demo`: seeds a demo tenant and runs one job end to end over HTTP
//! (trigger → worker → lifecycle → result → placement), printing each step.

use std::time::Duration;

use serde_json::{json, Value};

use crate::stack::{self, Config};

pub const DEMO_SUB: &str = "demo-user";

/// A tenant whose page import's capture is the landing page sample, put into the bucket.
async fn seed(running: &stack::Running) -> Result<(i32, i32, String), String> {
    let client = running.pool.get().await.map_err(|e| e.to_string())?;
    let page_import = format!("demo-{}", uuid::Uuid::now_v7());
    let (name, bytes) = crate::seed::SAMPLES[0];
    let key = crate::seed::sample_key(name);
    running
        .s3
        .put_object()
        .bucket(&running.bucket)
        .key(&key)
        .content_type("text/html")
        .body(bytes.to_vec().into())
        .send()
        .await
        .map_err(|e| shared::error::chain(&e))?;
    let capture = format!("s3://{}/{key}", running.bucket);
    let t = crate::seed::tenant(&client, "Demo organization", DEMO_SUB, &page_import, "1", Some(&capture))
        .await
        .map_err(|e| e.to_string())?;
    Ok((t.org, t.project, t.page_import))
}

fn show(step: &str, status: u16, body: &Value) {
    let text = serde_json::to_string_pretty(body).unwrap_or_default();
    let text = if text.len() > 1200 { format!("{}\n  …", &text[..text.floor_char_boundary(1200)]) } else { text };
    println!("\n== {step} → HTTP {status}\n{text}");
}

async fn call(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    body: Option<Value>,
) -> Result<(u16, Value), String> {
    let mut req = http.request(method, url).header("x-code2des-dev-sub", DEMO_SUB);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    let value = resp.json::<Value>().await.unwrap_or(Value::Null);
    Ok((status, value))
}

/// Shortens inline base64 so the printed result stays readable.
fn abbreviate_images(mut v: Value) -> Value {
    if let Some(images) = v.get_mut("images").and_then(Value::as_object_mut) {
        for img in images.values_mut() {
            if let Some(data) = img.get_mut("data") {
                let n = data.as_str().map_or(0, str::len);
                *data = json!(format!("<{n} base64 characters>"));
            }
        }
    }
    v
}

pub async fn run(mut cfg: Config) -> Result<(), String> {
    // The demo plays the worker itself, so that it can fail the first attempt on purpose.
    cfg.demo_worker = false;
    let secret = cfg.webhook_secret();
    let own_key = cfg.worker_signing_key.clone();
    let running = stack::start(cfg).await.map_err(|e| e.to_string())?;
    // The demo worker signs as a real one does: v1a with the key the stack keeps (or was given).
    // It converts the capture for real, in headless Chromium.
    let mut worker = code2des_worker::Worker::new(running.s3.clone(), running.bucket.clone(), secret)
        .with_conversion(Default::default());
    if let Some(key) = running.worker_keys.as_ref().map(stack::WorkerKeys::signing_key).or(own_key) {
        worker = worker.with_signing_key(key);
    }
    let outcome = steps(&running, &worker).await;
    running.shutdown().await;
    outcome
}

/// Polls the job until it leaves processing. The worker runs in this process, so the demo
/// polls faster than the Retry-After a plugin honours.
async fn wait(http: &reqwest::Client, url: &str) -> Result<Value, String> {
    for _ in 0..100 {
        let (s, job) = call(http, reqwest::Method::GET, url, None).await?;
        if s != 200 || job["status"] != "processing" {
            return Ok(job);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err("the job stayed processing".into())
}

async fn steps(running: &stack::Running, worker: &code2des_worker::Worker) -> Result<(), String> {
    let (org, project, page_import) = seed(running).await?;
    println!(
        "Seeded organization {org}, project {project}, member {DEMO_SUB:?}, completed page import {page_import:?} (capture: samples/landing.html)"
    );
    let http = reqwest::Client::new();
    let base = format!("{}/organizations/{org}/projects/{project}/code2des", running.base_url());

    let body = json!({"pageImportId": page_import, "figmaFileKey": "DEMOfileKey", "screenId": "home", "placementTarget": "page:1"});
    let (status, job) = call(&http, reqwest::Method::POST, &base, Some(body)).await?;
    show("1. plugin triggers a conversion (POST …/code2des)", status, &job);
    let id = job["code2desId"].as_str().ok_or("trigger did not return a job")?.to_owned();
    let item = format!("{base}/{id}");

    let m1 = worker.read_manifest(&format!("code2des/{id}/1/manifest.json")).await.map_err(|e| e.to_string())?;
    let r = worker.progress(&m1, 10, "reading capture").await.map_err(|e| e.to_string())?;
    println!("\n== 2. the worker reads code2des/{id}/1/manifest.json and reports progress → HTTP {}", r.status);
    let (s, polled) = call(&http, reqwest::Method::GET, &item, None).await?;
    show("3. plugin polls (GET …/code2des/{id}): processing, with progress and Retry-After", s, &polled);
    let r = worker.fail(&m1, "the capture could not be read").await.map_err(|e| e.to_string())?;
    println!("\n== 4. attempt 1 fails: the worker reports failed → HTTP {}", r.status);
    let failed = wait(&http, &item).await?;
    show("5. plugin sees the failure", 200, &failed);
    if failed["status"] != "failed" {
        return Err(format!("attempt 1 did not fail: {failed}"));
    }

    let (s, retried) =
        call(&http, reqwest::Method::POST, &format!("{item}/retry"), Some(json!({"attempt": 1}))).await?;
    show("6. the user retries attempt 1 (POST …/retry {\"attempt\":1})", s, &retried);
    let m2 = worker.read_manifest(&format!("code2des/{id}/2/manifest.json")).await.map_err(|e| e.to_string())?;
    let late = worker.fail(&m1, "a late report of attempt 1").await.map_err(|e| e.to_string())?;
    println!("\n== 7. a late webhook of attempt 1 is fenced → HTTP {} {}", late.status, late.body);
    let r = worker.complete(&m2).await.map_err(|e| e.to_string())?;
    println!("\n== 8. the worker converts attempt 2, reporting each stage, and completes it → HTTP {}", r.status);
    let job = wait(&http, &item).await?;
    show("9. plugin polls the lifecycle (GET …/code2des/{id})", 200, &job);
    if job["status"] != "completed" {
        return Err(format!("the job did not complete: {job}"));
    }
    let (s, list) = call(&http, reqwest::Method::GET, &format!("{base}?figmaFileKey=DEMOfileKey"), None).await?;
    println!("\n== 9b. discovery by figmaFileKey → HTTP {s}: {} job(s)", list["items"].as_array().map_or(0, Vec::len));
    let (s, result) = call(&http, reqwest::Method::GET, &format!("{item}/result"), None).await?;
    show("10. plugin fetches the hydrated result (GET …/result)", s, &abbreviate_images(result));
    let (s, placed) =
        call(&http, reqwest::Method::POST, &format!("{item}/placement"), Some(json!({"nodeId": "12:34"}))).await?;
    show("11. plugin records the Figma root it built (POST …/placement)", s, &placed);
    let (s, again) =
        call(&http, reqwest::Method::POST, &format!("{item}/placement"), Some(json!({"nodeId": "56:78"}))).await?;
    println!(
        "\n== 12. a second placement is idempotent → HTTP {s}, materializedNodeId stays {}",
        again["materializedNodeId"]
    );
    println!("\nDone: one job through a failure, a retry and a completion.");
    Ok(())
}
