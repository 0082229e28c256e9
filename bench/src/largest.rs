//! The largest result served (issue 37): result GETs of long documentation pages, as the
//! converter writes them, through the real result handler against the loopback S3 and the
//! bench database. First the page issue 37 asks to serve (50 000 px, 20 000 nodes), then the
//! same page with ever longer paragraphs, up to `Limits::max_artifact_bytes`: the artifact's
//! size, the answer's bytes in each coding, the GET's time, and the peak memory of one GET in a
//! fresh process (VmHWM before and after, as the hydration benchmark measures it).

use std::sync::Arc;
use std::time::Instant;

use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use shared::domain::artifact::{Limits, COMPRESSED_BUDGET};

use crate::fixture::{request, App, Tenant, BUCKET, NONCE};
use crate::stats::{f1, f2, median, ms, Table};

/// A long documentation page as the converter writes one: sections down a page of `height`
/// px, each a heading, ten paragraphs of `words` words and a code block, `nodes` nodes in all.
/// The prose is drawn at random from 4 096 made-up words of 2 to 9 letters (seeded): about 12
/// bits a word, so it compresses about as English does (a tiny vocabulary in a fixed order
/// would compress a hundredfold and prove nothing).
pub fn documentation_page(nodes: usize, height: f64, words: usize) -> Value {
    let mut rng = rand::rngs::StdRng::seed_from_u64(37);
    let vocabulary: Vec<String> = (0..4096)
        .map(|_| (0..rng.random_range(2..10)).map(|_| rng.random_range(b'a'..=b'z') as char).collect())
        .collect();
    let mut text = |n: usize| -> String {
        (0..n).map(|_| vocabulary[rng.random_range(0..vocabulary.len())].as_str()).collect::<Vec<_>>().join(" ")
    };
    let run = |name: String, chars: String, x: f64, y: f64, size: f64, family: &str| {
        json!({"type": "TEXT", "name": name, "x": x, "y": y, "width": 860.0, "height": size * 1.5,
               "fills": [{"type": "SOLID", "color": {"r": 0.133, "g": 0.157, "b": 0.192}}],
               "characters": chars, "fontSize": size, "fontName": {"family": family, "style": "Regular"},
               "textAlignHorizontal": "LEFT", "textAutoResize": "HEIGHT",
               "lineHeight": {"unit": "PIXELS", "value": size * 1.5}, "letterSpacing": {"unit": "PIXELS", "value": 0.0}})
    };
    let per_section = 20;
    let sections = nodes.div_ceil(per_section + 1);
    let step = height / sections as f64;
    let mut made = 1;
    let mut children = Vec::new();
    for s in 0..sections {
        let y = s as f64 * step;
        let mut kids = vec![run(format!("h2 {s}"), text(6), 0.0, 0.0, 28.0, "Inter")];
        for p in 0..10 {
            kids.push(run(format!("p {s}.{p}"), text(words), 0.0, 48.0 + p as f64 * 72.0, 16.0, "Inter"));
        }
        kids.push(json!({"type": "RECTANGLE", "name": "pre", "x": 0.0, "y": 780.0, "width": 860.0, "height": 200.0,
            "cornerRadius": 6.0, "fills": [{"type": "SOLID", "color": {"r": 0.965, "g": 0.973, "b": 0.98}}]}));
        for l in 0..(per_section - 12) {
            let code = format!("let x{l} = worker.{}();", text(1));
            kids.push(run(format!("code {s}.{l}"), code, 16.0, 792.0 + l as f64 * 22.0, 13.0, "JetBrains Mono"));
        }
        kids.truncate(nodes.saturating_sub(made + 1));
        made += 1 + kids.len();
        children.push(json!({"type": "FRAME", "name": format!("section {s}"), "x": 290.0, "y": y, "width": 860.0,
            "height": step.min(1000.0), "fills": [], "children": kids}));
        if made >= nodes {
            break;
        }
    }
    json!({"type": "FRAME", "name": "docs", "x": 0.0, "y": 0.0, "width": 1440.0, "height": height,
           "fills": [{"type": "SOLID", "color": {"r": 1.0, "g": 1.0, "b": 1.0}}], "children": children})
}

/// The artifact the worker writes for `doc` (as `Worker::finish` lays it out), with the
/// converter's most warnings (500).
fn artifact(id: &str, doc: Value) -> Vec<u8> {
    let warnings: Vec<Value> = (0..500)
        .map(|i| {
            json!({"code": "font_substituted", "message": "JetBrains Mono is not available: DejaVu Sans Mono drawn",
                        "path": format!("main > section:nth-child({i}) > pre > code"), "node": format!("code {i}.0")})
        })
        .collect();
    serde_json::to_vec(&json!({"version": 1, "kind": "result", "code2des_id": id, "attempt": 1, "nonce": NONCE,
        "warning_count": 500, "document": doc, "images": {}, "warnings": warnings}))
    .unwrap()
}

/// An event with one more request header (API Gateway v2 lower-cases header names).
fn with_header(ev: &str, name: &str, value: &str) -> String {
    let mut v: Value = serde_json::from_str(ev).expect("an event");
    v["headers"][name] = json!(value);
    v.to_string()
}

/// One row: an artifact written for a completed job, then its GETs.
struct Case {
    label: String,
    id: String,
    artifact_bytes: usize,
}

async fn case(app: &App, t: &Tenant, label: String, doc: Value) -> Case {
    let id = app.insert_jobs(t, 1).await.remove(0);
    let bytes = artifact(&id, doc);
    let artifact_bytes = bytes.len();
    let key = format!("code2des/{id}/1/result.json");
    app.put(&key, bytes).await;
    let c = app.pool.get().await.unwrap();
    c.execute(
        "UPDATE code2des SET status = '1', result_url = $2, warning_count = 500, updated_by = 'system:worker' WHERE id = $1",
        &[&id, &format!("s3://{BUCKET}/{key}")],
    )
    .await
    .unwrap();
    Case { label, id, artifact_bytes }
}

pub async fn run(app: Arc<App>, quick: bool) {
    let t = app.tenant().await;
    let deps = app.result(&app.pool).await;
    let limits = Limits::default();
    let rounds = if quick { 1 } else { 5 };
    println!(
        "## The largest result served (issue 37): max_artifact_bytes {}, response budget {} (text) / {} (compressed), {rounds} rounds\n",
        limits.max_artifact_bytes, limits.response_budget, COMPRESSED_BUDGET
    );
    let mut cases = vec![
        case(&app, &t, "docs page, 50 000 px, 20 000 nodes".into(), documentation_page(20_000, 50_000.0, 28)).await,
    ];
    if !quick {
        // Longer paragraphs, the same 20 000 nodes: the largest artifact the route still serves.
        for words in [60, 90, 120, 150, 180, 240, 360, 480] {
            let doc = documentation_page(20_000, 50_000.0, words);
            let c = case(&app, &t, format!("docs page, 20 000 nodes, paragraphs of {words} words"), doc).await;
            let over = c.artifact_bytes as u64 > limits.max_artifact_bytes;
            cases.push(c);
            if over {
                break;
            }
        }
    }
    let mut table = Table::new(&[
        "case",
        "artifact bytes",
        "coding",
        "status",
        "bytes sent",
        "of artifact",
        "Lambda envelope",
        "GET p50 ms",
        "peak growth KiB",
        "growth / artifact",
    ]);
    for c in &cases {
        for coding in ["br", "gzip", "identity"] {
            let ev = with_header(&crate::fixture::result_event(&t, &c.id), "accept-encoding", coding);
            let mut times = Vec::new();
            let mut last = (0u16, 0usize, false);
            for _ in 0..rounds {
                let start = Instant::now();
                let resp = code2des_result::handler::handle(&deps, request(&ev)).await;
                times.push(ms(start.elapsed()));
                let binary = matches!(resp.body(), lambda_http::Body::Binary(_));
                last = (resp.status().as_u16(), resp.body().len(), binary);
            }
            let (status, sent, binary) = last;
            let envelope = if binary { sent.div_ceil(3) * 4 } else { sent };
            let growth = if coding == "identity" { None } else { peak_growth(&app, &t, &c.id, coding) };
            table.row(vec![
                c.label.clone(),
                c.artifact_bytes.to_string(),
                coding.into(),
                status.to_string(),
                sent.to_string(),
                f2(sent as f64 / c.artifact_bytes as f64),
                envelope.to_string(),
                f1(median(&times)),
                growth.map_or("".into(), f1),
                growth.map_or("".into(), |g| f2(g * 1024.0 / c.artifact_bytes as f64)),
            ]);
        }
    }
    table.print();
}

/// The peak memory growth of one GET (KiB), in a fresh child process per call
/// (`hydration-child`, with the request's Accept-Encoding).
fn peak_growth(app: &App, t: &Tenant, id: &str, coding: &str) -> Option<f64> {
    let tenant = format!("{},{},{}", t.org, t.project, t.sub);
    let out = std::process::Command::new(std::env::current_exe().ok()?)
        .args(["hydration-child", &app.url, &app.store.endpoint()?, &tenant, id, coding])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Vec<u64> = text.split_whitespace().filter_map(|s| s.parse().ok()).collect();
    if !out.status.success() || v.len() != 3 {
        eprintln!("largest: child failed: {text} {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    Some((v[1] - v[0]) as f64)
}
