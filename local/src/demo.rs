//! `code2des-local demo`: seeds a demo tenant and runs one job end to end over HTTP
//! (trigger → worker → lifecycle → result → placement), printing each step.

use std::time::Duration;

use serde_json::{json, Value};

use crate::stack::{self, Config};

pub const DEMO_SUB: &str = "demo-user";

async fn seed(pool: &deadpool_postgres::Pool) -> Result<(i32, i32, String), String> {
    let client = pool.get().await.map_err(|e| e.to_string())?;
    let page_import = format!("demo-{}", uuid::Uuid::now_v7());
    let capture = format!("s3://code2des-artifacts/captures/{page_import}.json");
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
    cfg.demo_worker = true;
    let running = stack::start(cfg).await.map_err(|e| e.to_string())?;
    let outcome = steps(&running).await;
    running.shutdown().await;
    outcome
}

async fn steps(running: &stack::Running) -> Result<(), String> {
    let (org, project, page_import) = seed(&running.pool).await?;
    println!(
        "Seeded organization {org}, project {project}, member {DEMO_SUB:?}, completed page import {page_import:?}"
    );
    let http = reqwest::Client::new();
    let base = format!("{}/organizations/{org}/projects/{project}/code2des", running.base_url());

    let body = json!({"pageImportId": page_import, "figmaFileKey": "DEMOfileKey", "screenId": "home", "placementTarget": "page:1"});
    let (status, job) = call(&http, reqwest::Method::POST, &base, Some(body)).await?;
    show("1. plugin triggers a conversion (POST …/code2des)", status, &job);
    let id = job["code2desId"].as_str().ok_or("trigger did not return a job")?.to_owned();

    println!(
        "\n== 2. the demo worker reads code2des/{id}/1/manifest.json, writes the artifact and sends the signed webhook"
    );
    let mut job = Value::Null;
    for _ in 0..100 {
        let (s, j) = call(&http, reqwest::Method::GET, &format!("{base}/{id}"), None).await?;
        job = j;
        if s != 200 || job["status"] != "processing" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    show("3. plugin polls the lifecycle (GET …/code2des/{id})", 200, &job);
    if job["status"] != "completed" {
        return Err(format!("the job did not complete: {job}"));
    }
    let (s, list) = call(&http, reqwest::Method::GET, &format!("{base}?figmaFileKey=DEMOfileKey"), None).await?;
    println!("\n== 3b. discovery by figmaFileKey → HTTP {s}: {} job(s)", list["items"].as_array().map_or(0, Vec::len));
    let (s, result) = call(&http, reqwest::Method::GET, &format!("{base}/{id}/result"), None).await?;
    show("4. plugin fetches the hydrated result (GET …/result)", s, &abbreviate_images(result));
    let (s, placed) =
        call(&http, reqwest::Method::POST, &format!("{base}/{id}/placement"), Some(json!({"nodeId": "12:34"}))).await?;
    show("5. plugin records the Figma root it built (POST …/placement)", s, &placed);
    let (s, again) =
        call(&http, reqwest::Method::POST, &format!("{base}/{id}/placement"), Some(json!({"nodeId": "56:78"}))).await?;
    println!(
        "\n== 6. a second placement is idempotent → HTTP {s}, materializedNodeId stays {}",
        again["materializedNodeId"]
    );
    println!("\nDone: one job through its whole lifecycle.");
    Ok(())
}
