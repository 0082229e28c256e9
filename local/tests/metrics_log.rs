//! SPEC section 8's metrics, read back from the log: the real `code2des-local` binary with
//! `LOG_FORMAT=json` prints one CloudWatch Embedded Metric Format record per job transition and
//! webhook refusal on stdout, as a Lambda does. The jobs are driven over HTTP, the worker is
//! the reference worker against the stack's S3, and the deadline is persisted by the stack's
//! own sweep.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use code2des_testkit::db::{db_url, unique_name, DropDatabase};
use code2des_testkit::process::{free_port, wait_for_port, KillOnDrop};
use code2des_testkit::{BUCKET, SECRET};
use serde_json::{json, Value};

/// The EMF records among stdout's lines: JSON objects with an `_aws` member.
fn records(stdout: &str) -> Vec<Value> {
    stdout.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(|v| v.get("_aws").is_some()).collect()
}

/// The sum of `metric` over the records (a value or an array of values), optionally for one
/// `Reason`; every record naming it must declare it in its CloudWatchMetrics block.
fn total(recs: &[Value], metric: &str, reason: Option<&str>) -> f64 {
    let mut sum = 0.0;
    for r in recs.iter().filter(|r| r.get(metric).is_some()) {
        if reason.is_some_and(|want| r["Reason"] != want) {
            continue;
        }
        let declared = r["_aws"]["CloudWatchMetrics"][0]["Metrics"].as_array().unwrap();
        assert!(declared.iter().any(|m| m["Name"] == metric), "{metric} undeclared in {r}");
        assert_eq!(r["_aws"]["CloudWatchMetrics"][0]["Namespace"], "Code2Des", "{r}");
        sum += match &r[metric] {
            Value::Array(a) => a.iter().filter_map(Value::as_f64).sum(),
            v => v.as_f64().unwrap(),
        };
    }
    sum
}

#[tokio::test]
async fn every_transition_and_refusal_is_one_emf_record_on_stdout() {
    let db = unique_name("c2d_metrics");
    let database_url = db_url(&db);
    let _cleanup = DropDatabase(db);
    let dir = tempfile::tempdir().unwrap();
    let (port, s3_port) = (free_port(), free_port());
    let exe = env!("CARGO_BIN_EXE_code2des-local");

    // `seed --json`: the tenant, through the command a plugin developer uses.
    let seeded = Command::new(exe).args(["seed", "--json"]).env("DATABASE_URL", &database_url).output().unwrap();
    assert!(seeded.status.success(), "{}", String::from_utf8_lossy(&seeded.stderr));
    let tenant: Value = serde_json::from_slice(&seeded.stdout).expect("seed --json prints one JSON object");
    let token = tenant["token"].as_str().unwrap().to_owned();
    let (org, project, page_import) = (&tenant["organizationId"], &tenant["projectId"], &tenant["pageImportId"]);

    let child = Command::new(exe)
        .args(["--addr", &format!("127.0.0.1:{port}"), "--s3-addr", &format!("127.0.0.1:{s3_port}")])
        .args(["--data-dir".as_ref(), dir.path().as_os_str()])
        .env("DATABASE_URL", &database_url)
        .env("LOG_FORMAT", "json")
        .env("WEBHOOK_SECRET", SECRET)
        .env("JOB_DEADLINE_SECONDS", "3")
        .env("SWEEP_INTERVAL_SECONDS", "1")
        .env_remove("S3_ENDPOINT")
        .env_remove("CALLBACK_URL")
        .env_remove("AWS_LAMBDA_FUNCTION_NAME")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("code2des-local runs");
    let mut child = KillOnDrop(child);
    wait_for_port(port, Duration::from_secs(60), "code2des-local").await;

    let http = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}/organizations/{org}/projects/{project}/code2des");
    let call = |method: reqwest::Method, url: String, body: Option<Value>| {
        let mut req = http.request(method, url).bearer_auth(&token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        async move {
            let resp = req.send().await.unwrap();
            (resp.status().as_u16(), resp.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let trigger = || {
        call(
            reqwest::Method::POST,
            base.clone(),
            Some(json!({"pageImportId": page_import, "figmaFileKey": "F", "screenId": "s"})),
        )
    };
    let s3 = code2des_local::s3server::client(
        &format!("http://127.0.0.1:{s3_port}"),
        code2des_local::s3server::ACCESS_KEY,
        code2des_local::s3server::SECRET_KEY,
    );
    // The canned sample answers: this test is about the counters, not the conversion.
    let worker = code2des_worker::Worker::new(s3, BUCKET, SECRET).with_sample();
    let manifest = |id: String, attempt: i32| {
        let worker = worker.clone();
        async move { worker.read_manifest(&format!("code2des/{id}/{attempt}/manifest.json")).await.unwrap() }
    };

    // A completes (its stages reported on the way), and its result is fetched.
    let (s, a) = trigger().await;
    assert_eq!(s, 202, "{a}");
    let a_id = a["code2desId"].as_str().unwrap().to_owned();
    let m = manifest(a_id.clone(), 1).await;
    assert_eq!(worker.complete(&m).await.unwrap().status, 200);
    let (s, result) = call(reqwest::Method::GET, format!("{base}/{a_id}/result"), None).await;
    assert_eq!(s, 200, "{result}");
    // A forged report (another secret) and another attempt's report are refused.
    let forger = code2des_worker::Worker::new(
        code2des_local::s3server::client(&format!("http://127.0.0.1:{s3_port}"), "local", "local-secret"),
        BUCKET,
        "not-the-secret",
    );
    let body = json!({"code2des_id": a_id, "attempt": 1, "nonce": m.nonce, "status": "failed"});
    assert_eq!(forger.send_webhook(&m.callback_url, &body).await.unwrap().status, 401);
    let fenced = json!({"code2des_id": a_id, "attempt": 2, "nonce": m.nonce, "status": "failed"});
    assert_eq!(worker.send_webhook(&m.callback_url, &fenced).await.unwrap().status, 409);

    // B fails, is retried, and its second attempt is cancelled by its user.
    let (_, b) = trigger().await;
    let b_id = b["code2desId"].as_str().unwrap().to_owned();
    assert_eq!(worker.fail(&manifest(b_id.clone(), 1).await, "boom").await.unwrap().status, 200);
    let (s, _) = call(reqwest::Method::POST, format!("{base}/{b_id}/retry"), Some(json!({"attempt": 1}))).await;
    assert_eq!(s, 202);
    let (s, _) = call(reqwest::Method::POST, format!("{base}/{b_id}/cancel"), None).await;
    assert_eq!(s, 200);
    // The worker's late report on the cancelled attempt: already terminal.
    let m2 = manifest(b_id.clone(), 2).await;
    assert_eq!(worker.progress(&m2, 50, "late").await.unwrap().status, 409);

    // C is left alone: the stack's sweep times it out.
    let (_, c) = trigger().await;
    let c_id = c["code2desId"].as_str().unwrap().to_owned();
    let waited = Instant::now();
    loop {
        let (_, job) = call(reqwest::Method::GET, format!("{base}/{c_id}"), None).await;
        if job["status"] == "failed" {
            assert_eq!(job["errorMessage"], "timed out", "{job}");
            break;
        }
        assert!(waited.elapsed() < Duration::from_secs(60), "never timed out: {job}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Reads show the timeout at once; give the sweep (every second) time to persist it.
    tokio::time::sleep(Duration::from_secs(3)).await;

    let _ = child.0.kill();
    let mut out = String::new();
    child.0.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    let _ = child.0.wait();
    let recs = records(&out);

    assert_eq!(total(&recs, "JobsTriggered", None), 3.0, "{out}");
    assert_eq!(total(&recs, "JobsCompleted", None), 1.0);
    assert_eq!(total(&recs, "JobsFailed", None), 1.0);
    assert_eq!(total(&recs, "JobsRetried", None), 1.0);
    assert_eq!(total(&recs, "JobsCancelled", None), 1.0);
    assert_eq!(total(&recs, "JobsTimedOut", None), 1.0);
    assert!(total(&recs, "ResultBytes", None) > 1000.0, "the result with its inline images");
    // One duration per terminal transition: completed, failed, cancelled, timed out.
    let durations: Vec<f64> = recs
        .iter()
        .flat_map(|r| match &r["JobDurationMs"] {
            Value::Array(a) => a.iter().filter_map(Value::as_f64).collect(),
            Value::Number(n) => vec![n.as_f64().unwrap()],
            _ => vec![],
        })
        .collect();
    assert_eq!(durations.len(), 4, "{durations:?}");
    assert!(durations.iter().all(|d| *d >= 0.0 && *d < 600_000.0), "{durations:?}");
    assert_eq!(total(&recs, "WebhookRejected", Some("signature")), 1.0);
    assert_eq!(total(&recs, "WebhookRejected", Some("fenced")), 1.0);
    assert_eq!(total(&recs, "WebhookRejected", Some("already_terminal")), 1.0);
    assert_eq!(total(&recs, "WebhookRejected", None), 3.0);
    // Every record carries the dimension set the template's alarms and dashboard query
    // (`Namespace: Code2Des`, `Service: code2des`): a metric published under any other set is
    // a metric no alarm sees.
    let template = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml")).unwrap();
    assert!(
        template.contains("Namespace: Code2Des")
            && template.contains("- Name: Service\n                  Value: code2des")
    );
    for r in &recs {
        assert_eq!(r["Service"], "code2des", "{r}");
        let sets = r["_aws"]["CloudWatchMetrics"][0]["Dimensions"].as_array().unwrap();
        assert!(sets.contains(&json!(["Service"])), "{r}");
    }
    // Nothing secret rides along.
    for secret in [SECRET, m.nonce.as_str(), m2.nonce.as_str(), token.as_str()] {
        assert!(!out.contains(secret), "a secret in the log");
    }
}
