//! Hydration: result GET of a job with 32 images of ~100 KB against one with a single image
//! (latency, in-process, interleaved), with the image fetch concurrency at 1, the default
//! (`Limits::fetch_concurrency`) and 32; and the peak memory of one result call, measured in a
//! fresh child process per case (VmHWM from /proc/self/status before and after the call).
//!
//! With S3's first-byte latency injected (20 ms before every request): the S3 requests and the
//! latency of one result GET (1 and 8 images, issue 13) beside the previous request pattern
//! replayed with the same client (a HEAD before every GET: the artifact's HEAD and GET, then
//! every image's HEAD at once, then every GET at once), and a revisit with `If-None-Match`.

use std::sync::Arc;
use std::time::Instant;

use futures::future::join_all;

use code2des_local::s3server;
use shared::domain::artifact::Limits;

use crate::fixture::{self, answer, request, App, Tenant, BUCKET};
use crate::stats::{f1, f2, median, ms, pct, Table};

/// Side of the noise PNGs: 3·184² ≈ 101 KB each.
const SIDE: u32 = 184;
/// Injected per-request latency of the second table.
const S3_LATENCY_MS: u64 = 20;

pub async fn run(app: Arc<App>, quick: bool) {
    let f = Fixture::new(&app, if quick { 2 } else { 30 }).await;
    let default_conc = Limits::default().fetch_concurrency;
    fetch_concurrency(&f, default_conc).await;
    let slow_deps = injected_latency(&f, default_conc).await;
    requests_per_get(&app, &f.t, &f.jobs, &slow_deps, f.rounds).await;
    peak_memory(&f, if quick { 1 } else { 3 });
}

/// What every table reads: a tenant's completed jobs of 1, 8, 32 and 64 images.
struct Fixture<'a> {
    app: &'a App,
    t: Tenant,
    /// (images, job id)
    jobs: Vec<(usize, String)>,
    /// Timed rounds, after one untimed.
    rounds: usize,
}

impl<'a> Fixture<'a> {
    async fn new(app: &'a App, rounds: usize) -> Self {
        let t = app.tenant().await;
        let mut jobs = Vec::new();
        for n in [1usize, 8, 32, 64] {
            let id = app.insert_jobs(&t, 1).await.remove(0);
            app.complete(&id, n, SIDE).await;
            jobs.push((n, id));
        }
        Self { app, t, jobs, rounds }
    }

    /// The job with `n` images.
    fn job(&self, n: usize) -> &str {
        &self.jobs.iter().find(|j| j.0 == n).unwrap().1
    }
}

/// The first table: result GET latency by image count and fetch concurrency, on loopback S3.
async fn fetch_concurrency(f: &Fixture<'_>, default_conc: usize) {
    let (app, rounds) = (f.app, f.rounds);
    let image_bytes = fixture::png(SIDE, SIDE).len();
    println!(
        "## Hydration: result GET, images of {image_bytes} bytes each ({rounds} interleaved rounds, fetch concurrency = Limits::fetch_concurrency)\n"
    );
    let mut table = Table::new(&[
        "images",
        "fetch concurrency",
        "p50 ms",
        "p90 ms",
        "ratio to 1 image (p50)",
        "S3 requests/call (GET/HEAD)",
        "inlined/deferred",
        "body bytes",
    ]);
    let concs = [1usize, default_conc, 32];
    let mut deps = Vec::new();
    for &c in &concs {
        let mut d = app.result(&app.pool).await;
        d.limits.fetch_concurrency = c;
        deps.push(d);
    }
    // cases: (images, deps index)
    let cases: Vec<(usize, usize)> = vec![(1, 1), (32, 0), (32, 1), (32, 2), (64, 1)];
    let mut lat: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    let mut info: Vec<(String, String, usize)> = vec![Default::default(); cases.len()];
    for round in 0..=rounds {
        for (k, &(n, d)) in cases.iter().enumerate() {
            let ev = fixture::result_event(&f.t, f.job(n));
            let before = app.s3_calls.snapshot();
            let t0 = Instant::now();
            let resp = code2des_result::handler::handle(&deps[d], request(&ev)).await;
            let el = ms(t0.elapsed());
            let after = app.s3_calls.snapshot();
            let body: serde_json::Value = serde_json::from_slice(resp.body().as_ref()).unwrap_or_default();
            let (status, len) = answer(resp);
            assert_eq!(status, 200, "result with {n} images");
            if round > 0 {
                lat[k].push(el);
            }
            let inl = body["images"].as_object().map_or(0, |m| m.len());
            let def = body["deferredImages"].as_array().map_or(0, |a| a.len());
            info[k] = (format!("{}/{}", after[0] - before[0], after[1] - before[1]), format!("{inl}/{def}"), len);
        }
    }
    let base = median(&lat[0]);
    for (k, &(n, d)) in cases.iter().enumerate() {
        table.row(vec![
            n.to_string(),
            concs[d].to_string(),
            f2(median(&lat[k])),
            f2(pct(&lat[k], 90.0)),
            f2(median(&lat[k]) / base),
            info[k].0.clone(),
            info[k].1.clone(),
            info[k].2.to_string(),
        ]);
    }
    table.print();
}

/// The same with S3's in-region first-byte latency injected before every request: the
/// waits, not loopback bandwidth, dominate, as they do against S3 itself. Answers the handler
/// on that slow client, which the next table uses too.
async fn injected_latency(f: &Fixture<'_>, default_conc: usize) -> code2des_result::handler::Deps {
    let app = f.app;
    let delay = std::time::Duration::from_millis(S3_LATENCY_MS);
    let slow = crate::latency::s3_with_latency(&app.s3, delay);
    let slow_deps = app.result_with_s3(&app.pool, slow).await;
    println!(
        "With {S3_LATENCY_MS} ms injected before every S3 request (S3's typical in-region first-byte latency; fetch concurrency {default_conc}):\n"
    );
    let mut slow_table = Table::new(&[
        "images",
        "p50 ms",
        "p90 ms",
        "ratio to 1 image (p50)",
        "S3 requests/call",
        "floor: sequential S3 waits ms",
    ]);
    // Artifact GET, then one wave of image GETs (none without images).
    let floor = |n: usize| S3_LATENCY_MS * if n == 0 { 1 } else { 2 };
    let slow_cases = [1usize, 32, 64];
    let mut slow_lat: Vec<Vec<f64>> = vec![Vec::new(); slow_cases.len()];
    let mut slow_calls = vec![0u64; slow_cases.len()];
    for round in 0..=f.rounds {
        for (k, n) in slow_cases.iter().enumerate() {
            let ev = fixture::result_event(&f.t, f.job(*n));
            let before = app.s3_calls.snapshot();
            let t0 = Instant::now();
            let resp = code2des_result::handler::handle(&slow_deps, request(&ev)).await;
            let el = ms(t0.elapsed());
            let after = app.s3_calls.snapshot();
            let (status, _) = answer(resp);
            assert_eq!(status, 200, "result with {n} images, injected latency");
            if round > 0 {
                slow_lat[k].push(el);
            }
            slow_calls[k] = (after[0] - before[0]) + (after[1] - before[1]);
        }
    }
    let slow_base = median(&slow_lat[0]);
    for (k, n) in slow_cases.iter().enumerate() {
        slow_table.row(vec![
            n.to_string(),
            f2(median(&slow_lat[k])),
            f2(pct(&slow_lat[k], 90.0)),
            f2(median(&slow_lat[k]) / slow_base),
            slow_calls[k].to_string(),
            floor(*n).to_string(),
        ]);
    }
    slow_table.print();
    slow_deps
}

/// Peak memory, one child process per case and repetition.
fn peak_memory(f: &Fixture<'_>, reps: usize) {
    let app = f.app;
    let mut mem = Table::new(&[
        "images",
        "body bytes",
        "VmHWM before call KiB",
        "VmHWM after call KiB",
        "peak growth KiB (median)",
        "growth / body",
    ]);
    for (n, id) in &f.jobs {
        let mut growth = Vec::new();
        let mut last = (0u64, 0u64, 0u64);
        for _ in 0..reps {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["hydration-child", &app.url, &app.store.endpoint().expect("S3 running"), &tenant_arg(&f.t), id])
                .output()
                .expect("spawn the hydration child");
            let text = String::from_utf8_lossy(&out.stdout);
            let v: Vec<u64> = text.split_whitespace().filter_map(|s| s.parse().ok()).collect();
            if !out.status.success() || v.len() != 3 {
                eprintln!("hydration child failed: {text} {}", String::from_utf8_lossy(&out.stderr));
                continue;
            }
            growth.push((v[1] - v[0]) as f64);
            last = (v[0], v[1], v[2]);
        }
        let g = median(&growth);
        mem.row(vec![
            n.to_string(),
            last.2.to_string(),
            last.0.to_string(),
            last.1.to_string(),
            f1(g),
            f2(g * 1024.0 / last.2.max(1) as f64),
        ]);
    }
    println!("Peak memory of ONE result call in a fresh process ({reps} processes per case):\n");
    mem.print();
}

/// Issue 13's figures: S3 requests and latency of one result GET now, beside the previous
/// request pattern replayed, and a revisit that names the ETag it holds.
async fn requests_per_get(
    app: &App,
    t: &Tenant,
    jobs: &[(usize, String)],
    deps: &code2des_result::handler::Deps,
    rounds: usize,
) {
    let slow = crate::latency::s3_with_latency(&app.s3, std::time::Duration::from_millis(S3_LATENCY_MS));
    let cases = [1usize, 8];
    // (now, previous replayed, revisit): latencies and S3 requests of the last call.
    let mut lat = vec![[Vec::new(), Vec::new(), Vec::new()]; cases.len()];
    let mut calls = vec![[[0u64; 2]; 3]; cases.len()];
    for round in 0..=rounds {
        for (k, n) in cases.iter().enumerate() {
            let id = &jobs.iter().find(|j| j.0 == *n).unwrap().1;
            let ev = fixture::result_event(t, id);
            let mut etag = String::new();
            for (side, l) in lat[k].iter_mut().enumerate() {
                let before = app.s3_calls.snapshot();
                let t0 = Instant::now();
                let ok = match side {
                    0 => {
                        let resp = code2des_result::handler::handle(deps, request(&ev)).await;
                        etag = resp.headers().get("etag").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
                        resp.status() == 200
                    }
                    1 => previous_pattern(app, &slow, t, id, *n).await,
                    _ => {
                        let revisit = with_header(&ev, "if-none-match", &etag);
                        code2des_result::handler::handle(deps, request(&revisit)).await.status() == 304
                    }
                };
                let el = ms(t0.elapsed());
                let after = app.s3_calls.snapshot();
                assert!(ok, "result GET with {n} images, case {side}");
                if round > 0 {
                    l.push(el);
                }
                calls[k][side] = [after[0] - before[0], after[1] - before[1]];
            }
        }
    }
    println!(
        "S3 requests per result GET with {S3_LATENCY_MS} ms injected before every S3 request ({rounds} rounds): \
         the handler now, the previous pattern (HEAD before every GET) replayed, a revisit with If-None-Match:\n"
    );
    let mut table = Table::new(&[
        "result GET",
        "S3 requests (GET/HEAD)",
        "p50 ms",
        "p90 ms",
        "previous pattern: S3 requests (GET/HEAD)",
        "previous pattern: p50 ms",
        "now / previous (p50)",
    ]);
    for (k, n) in cases.iter().enumerate() {
        let [now, prev, revisit] = &lat[k];
        let [c_now, c_prev, c_rev] = calls[k];
        table.row(vec![
            format!("{n} image{}", if *n == 1 { "" } else { "s" }),
            format!("{} ({}/{})", c_now[0] + c_now[1], c_now[0], c_now[1]),
            f2(median(now)),
            f2(pct(now, 90.0)),
            format!("{} ({}/{})", c_prev[0] + c_prev[1], c_prev[0], c_prev[1]),
            f2(median(prev)),
            f2(median(now) / median(prev)),
        ]);
        table.row(vec![
            format!("{n} image{}, revisit: If-None-Match → 304", if *n == 1 { "" } else { "s" }),
            format!("{} ({}/{})", c_rev[0] + c_rev[1], c_rev[0], c_rev[1]),
            f2(median(revisit)),
            f2(pct(revisit, 90.0)),
            String::new(),
            String::new(),
            f2(median(revisit) / median(prev)),
        ]);
    }
    table.print();
}

/// The result GET's S3 requests as they were before issue 13, replayed on `s3`: the job read,
/// HEAD then GET of the artifact, then every image's HEAD at once, then every image's GET at
/// once (bodies read; no validation or encoding).
async fn previous_pattern(app: &App, s3: &aws_sdk_s3::Client, t: &Tenant, id: &str, images: usize) -> bool {
    let scope = code2des_testkit::scope(t);
    let job_id = shared::domain::ids::Code2desId::parse(id).unwrap();
    {
        let c = app.pool.get().await.unwrap();
        let deadline = shared::domain::job::DEFAULT_DEADLINE;
        if !matches!(
            shared::db::lifecycle::get_job(
                &**c,
                &shared::domain::scope::JobRef { scope: scope.clone(), id: job_id },
                deadline
            )
            .await,
            Ok(Some(_))
        ) {
            return false;
        }
    }
    let head = |key: String| async move { s3.head_object().bucket(BUCKET).key(key).send().await.is_ok() };
    let get = |key: String| async move {
        match s3.get_object().bucket(BUCKET).key(key).send().await {
            Ok(o) => o.body.collect().await.is_ok(),
            Err(_) => false,
        }
    };
    let prefix = format!("code2des/{id}/1/");
    if !head(format!("{prefix}result.json")).await || !get(format!("{prefix}result.json")).await {
        return false;
    }
    let keys: Vec<String> = (0..images).map(|i| format!("{prefix}images/img{i}.png")).collect();
    join_all(keys.iter().cloned().map(head)).await.into_iter().all(|ok| ok)
        && join_all(keys.into_iter().map(get)).await.into_iter().all(|ok| ok)
}

/// An event with one more request header (API Gateway v2 lower-cases header names).
fn with_header(ev: &str, name: &str, value: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(ev).expect("an event");
    v["headers"][name] = serde_json::json!(value);
    v.to_string()
}

fn tenant_arg(t: &Tenant) -> String {
    format!("{},{},{}", t.org, t.project, t.sub)
}

fn vm_hwm_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()).unwrap_or(0)
}

/// The child: builds the result handler's Deps like the Lambda does (multi-thread runtime,
/// lazily connecting pool, S3 client), opens its connections, then makes ONE result call
/// and prints `VmHWM-before VmHWM-after body-bytes`. A fifth argument is the request's
/// Accept-Encoding (the largest-result benchmark's compressed answers).
pub fn child(args: &[String]) -> Result<(), String> {
    let (url, endpoint, tenant, id, coding) = match args {
        [url, endpoint, tenant, id] => (url, endpoint, tenant, id, None),
        [url, endpoint, tenant, id, coding] => (url, endpoint, tenant, id, Some(coding.as_str())),
        _ => return Err("hydration-child URL S3_ENDPOINT ORG,PROJECT,SUB JOB_ID [ACCEPT_ENCODING]".into()),
    };
    let mut parts = tenant.splitn(3, ',');
    let (org, project, sub) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
    let t = Tenant {
        org: org.parse().unwrap(),
        project: project.parse().unwrap(),
        sub: sub.to_owned(),
        page_import: String::new(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async move {
        shared::db::connect::install_crypto_provider();
        let db = shared::db::connect::DbConfig::from_url(url).unwrap();
        let pool = shared::db::connect::pool(&db, None, 2).unwrap();
        let s3 = s3server::client(endpoint, s3server::ACCESS_KEY, s3server::SECRET_KEY);
        drop(pool.get().await.map_err(|e| e.to_string())?);
        s3.head_bucket().bucket(BUCKET).send().await.map_err(|e| e.to_string())?;
        // The child builds the function as its Lambda `main` does, around its own pool and
        // client (it measures its own peak memory, so it shares nothing with the parent).
        let mut settings = shared::config::Settings::from_env().map_err(|e| e.to_string())?;
        settings.bucket = Some(BUCKET.into());
        let resources = shared::app::resources::Resources::prebuilt(settings, pool, db.cursor_key(), s3)
            .map_err(|e| e.to_string())?;
        let deps = code2des_result::handler::Deps::new(&resources).await.map_err(|e| e.to_string())?;
        let ev = fixture::result_event(&t, id);
        let ev = coding.map_or(ev.clone(), |c| with_header(&ev, "accept-encoding", c));
        let before = vm_hwm_kib();
        let resp = code2des_result::handler::handle(&deps, request(&ev)).await;
        let (status, len) = answer(resp);
        let after = vm_hwm_kib();
        if status != 200 {
            return Err(format!("status {status}"));
        }
        println!("{before} {after} {len}");
        Ok(())
    })
}
