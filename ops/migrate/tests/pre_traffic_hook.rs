//! The PreTraffic hook (docs/DEPLOY.md, "Safe deployments") against a real PostgreSQL on
//! 127.0.0.1:5432 and an emulated CodeDeploy endpoint on loopback: the hook is fed the event
//! CodeDeploy sends (events/codedeploy/pre-traffic.json) and must report, with the real SDK's
//! signed PutLifecycleEventHookExecutionStatus, Succeeded when the migrations apply and Failed
//! when one cannot, so that CodeDeploy shifts traffic only to code whose schema is in place.
#![allow(clippy::disallowed_methods)] // tests may panic on a row that does not read: that is a failure

use std::sync::{Arc, Mutex};

use code2des_migrate::hook::{dispatch, Reporter};
use code2des_migrate::{handle, Deps};
use lambda_runtime::{Context, LambdaEvent};
use serde_json::{json, Value};
use shared::db::connect::DbConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

fn admin_url() -> String {
    std::env::var("C2D_TEST_ADMIN_URL").unwrap_or_else(|_| ADMIN_URL.to_owned())
}

async fn admin() -> tokio_postgres::Client {
    let cfg = DbConfig::from_url(&admin_url()).expect("admin URL");
    shared::db::connect::connect(&cfg, None).await.expect("PostgreSQL on 127.0.0.1:5432 (scripts/ensure-postgres)")
}

/// A fresh database, dropped by [`drop_db`]; its settings for the migrate function.
async fn fresh_db(admin: &tokio_postgres::Client) -> (String, DbConfig) {
    let name = format!("c2d_hook_{:016x}", rand::random::<u64>());
    admin.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
    let mut cfg = DbConfig::from_url(&admin_url()).unwrap();
    cfg.pg.dbname(&name);
    (name, cfg)
}

async fn drop_db(admin: &tokio_postgres::Client, name: &str) {
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await.unwrap();
}

/// The event CodeDeploy sends a BeforeAllowTraffic hook, as committed in events/.
fn codedeploy_event() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../events/codedeploy/pre-traffic.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect(path)).expect("event JSON")
}

fn invocation(payload: Value) -> LambdaEvent<Value> {
    LambdaEvent::new(payload, Context::default())
}

/// One request the emulated CodeDeploy received.
#[derive(Debug, Clone)]
struct Call {
    target: String,
    authorization: String,
    body: Value,
}

/// An emulated CodeDeploy endpoint on loopback: records every request and answers
/// PutLifecycleEventHookExecutionStatus as CodeDeploy does (200 and the execution id), or with
/// the given error type.
struct CodeDeploy {
    url: String,
    calls: Arc<Mutex<Vec<Call>>>,
}

impl CodeDeploy {
    async fn start(error: Option<&'static str>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let calls = Arc::new(Mutex::new(Vec::new()));
        let recorded = calls.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else { return };
                let recorded = recorded.clone();
                tokio::spawn(async move {
                    while let Some((head, body)) = read_request(&mut sock).await {
                        let header = |name: &str| {
                            head.lines()
                                .find_map(|l| {
                                    let (k, v) = l.split_once(':')?;
                                    k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
                                })
                                .unwrap_or_default()
                        };
                        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        let (status, answer) = match error {
                            None => (
                                "200 OK",
                                json!({"lifecycleEventHookExecutionId": body["lifecycleEventHookExecutionId"]}),
                            ),
                            Some(kind) => ("400 Bad Request", json!({"__type": kind, "message": "emulated refusal"})),
                        };
                        recorded.lock().unwrap().push(Call {
                            target: header("x-amz-target"),
                            authorization: header("authorization"),
                            body,
                        });
                        let answer = answer.to_string();
                        let resp = format!(
                            "HTTP/1.1 {status}\r\ncontent-type: application/x-amz-json-1.1\r\nx-amzn-requestid: emulated\r\ncontent-length: {}\r\n\r\n{answer}",
                            answer.len()
                        );
                        if sock.write_all(resp.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Self { url, calls }
    }

    /// A client of this endpoint, as the function builds it in AWS but for the endpoint and
    /// fixed test credentials.
    fn reporter(&self) -> Reporter {
        let config = aws_sdk_codedeploy::Config::builder()
            .behavior_version(aws_sdk_codedeploy::config::BehaviorVersion::latest())
            .region(aws_sdk_codedeploy::config::Region::new("eu-west-1"))
            .credentials_provider(aws_sdk_codedeploy::config::Credentials::new("AKIDTEST", "test", None, None, "test"))
            .endpoint_url(&self.url)
            .build();
        Reporter::new(aws_sdk_codedeploy::Client::from_conf(config))
    }

    fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }
}

/// One HTTP/1.1 request off a kept-alive connection: its head and its Content-Length body.
async fn read_request(sock: &mut tokio::net::TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let len = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap_or(0))
                })
                .unwrap_or(0usize);
            if buf.len() >= end + 4 + len {
                return Some((head, buf[end + 4..end + 4 + len].to_vec()));
            }
        }
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

async fn table_exists(cfg: &DbConfig, table: &str) -> bool {
    let db = shared::db::connect::connect(cfg, None).await.unwrap();
    db.query_one("SELECT to_regclass($1) IS NOT NULL", &[&table]).await.unwrap().get(0)
}

fn assert_reported(calls: &[Call], status: &str) {
    let event = codedeploy_event();
    assert_eq!(calls.len(), 1, "exactly one report: {calls:?}");
    let call = &calls[0];
    assert_eq!(call.target, "CodeDeploy_20141006.PutLifecycleEventHookExecutionStatus");
    // Signed as CodeDeploy requires (SigV4, service codedeploy), as by the function's own role.
    assert!(
        call.authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIDTEST/")
            && call.authorization.contains("/eu-west-1/codedeploy/aws4_request"),
        "{}",
        call.authorization
    );
    assert_eq!(
        call.body,
        json!({
            "deploymentId": event["DeploymentId"],
            "lifecycleEventHookExecutionId": event["LifecycleEventHookExecutionId"],
            "status": status,
        })
    );
}

#[tokio::test]
async fn the_hook_migrates_then_reports_succeeded() {
    let admin = admin().await;
    let (name, cfg) = fresh_db(&admin).await;
    let codedeploy = CodeDeploy::start(None).await;
    let deps = Deps { db: cfg.clone(), ca_bundle: None, app_role: None, app_iam_role: None };

    let answer = dispatch(Ok(&deps), &codedeploy.reporter(), invocation(codedeploy_event())).await;
    let migrated = table_exists(&cfg, "code2des").await;
    // The next deployment's hook (another function of the same deploy, or the next deploy)
    // finds the schema current and succeeds again.
    let again = dispatch(Ok(&deps), &codedeploy.reporter(), invocation(codedeploy_event())).await;
    drop_db(&admin, &name).await;

    let answer = answer.expect("the hook succeeds");
    assert!(migrated, "the migrations were applied before Succeeded was reported");
    assert!(answer["applied"].as_array().is_some_and(|a| !a.is_empty()), "{answer}");
    assert_eq!(answer["hook"], json!({"deploymentId": "d-Q2D3SW7XB", "status": "Succeeded"}));
    let again = again.expect("a second hook succeeds");
    assert_eq!(again["applied"], json!([]), "{again}");
    let calls = codedeploy.calls();
    assert_reported(&calls[..1], "Succeeded");
    assert_reported(&calls[1..], "Succeeded");
}

#[tokio::test]
async fn a_migration_that_cannot_apply_reports_failed_and_applies_nothing() {
    let admin = admin().await;
    let (name, cfg) = fresh_db(&admin).await;
    // A database where V1 cannot apply: the type it creates already exists, with other labels.
    {
        let db = shared::db::connect::connect(&cfg, None).await.unwrap();
        db.batch_execute("CREATE TYPE code2des_status AS ENUM ('queued')").await.unwrap();
    }
    let codedeploy = CodeDeploy::start(None).await;
    let deps = Deps { db: cfg.clone(), ca_bundle: None, app_role: None, app_iam_role: None };

    let outcome = dispatch(Ok(&deps), &codedeploy.reporter(), invocation(codedeploy_event())).await;
    let table = table_exists(&cfg, "code2des").await;
    let history = {
        let db = shared::db::connect::connect(&cfg, None).await.unwrap();
        let exists: bool =
            db.query_one("SELECT to_regclass('refinery_schema_history') IS NOT NULL", &[]).await.unwrap().get(0);
        if exists {
            db.query_one("SELECT count(*) FROM refinery_schema_history", &[]).await.unwrap().get::<_, i64>(0)
        } else {
            0
        }
    };
    drop_db(&admin, &name).await;

    let err = outcome.expect_err("the invocation fails too, so the function's Errors alarm sees it");
    let err = err.to_string();
    assert!(err.contains("V1__code2des") && err.contains("code2des_status"), "the version and the cause: {err}");
    assert_reported(&codedeploy.calls(), "Failed");
    assert!(!table, "V1 rolled back: no table");
    assert_eq!(history, 0, "no version recorded as applied");
}

#[tokio::test]
async fn a_set_up_failure_still_reports_failed() {
    let codedeploy = CodeDeploy::start(None).await;
    let outcome = dispatch(
        Err("cannot read secret arn:aws:secretsmanager:eu-west-1:1:secret:db: AccessDenied"),
        &codedeploy.reporter(),
        invocation(codedeploy_event()),
    )
    .await;
    assert!(outcome.expect_err("fails").to_string().contains("AccessDenied"));
    assert_reported(&codedeploy.calls(), "Failed");
}

#[tokio::test]
async fn a_manual_invocation_reports_nothing() {
    let admin = admin().await;
    let (name, cfg) = fresh_db(&admin).await;
    let codedeploy = CodeDeploy::start(None).await;
    let deps = Deps { db: cfg.clone(), ca_bundle: None, app_role: None, app_iam_role: None };
    let answer = dispatch(Ok(&deps), &codedeploy.reporter(), invocation(json!({}))).await;
    drop_db(&admin, &name).await;
    let answer = answer.expect("a manual run migrates");
    assert!(answer["applied"].as_array().is_some_and(|a| !a.is_empty()) && answer.get("hook").is_none(), "{answer}");
    assert!(codedeploy.calls().is_empty(), "no CodeDeploy call without a hook event");
}

#[tokio::test]
async fn a_report_codedeploy_refuses_fails_the_invocation() {
    let admin = admin().await;
    let (name, cfg) = fresh_db(&admin).await;
    let codedeploy = CodeDeploy::start(Some("LifecycleEventAlreadyCompletedException")).await;
    let deps = Deps { db: cfg.clone(), ca_bundle: None, app_role: None, app_iam_role: None };
    let outcome = dispatch(Ok(&deps), &codedeploy.reporter(), invocation(codedeploy_event())).await;
    drop_db(&admin, &name).await;
    let err = outcome.expect_err("an unreported outcome is a failed invocation");
    assert!(err.to_string().contains("d-Q2D3SW7XB"), "{err}");
    assert_eq!(codedeploy.calls().len(), 1, "a refusal is not retried: {:?}", codedeploy.calls());
}

/// Records `version` in the history table as if a newer release had applied it.
async fn record_applied(cfg: &DbConfig, version: i32, name: &str, checksum: &str) {
    let db = shared::db::connect::connect(cfg, None).await.unwrap();
    db.execute(
        "INSERT INTO refinery_schema_history (version, name, applied_on, checksum) VALUES ($1, $2, $3, $4)",
        &[&version, &name, &"2026-12-01T12:00:00Z", &checksum],
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn a_rollback_to_a_release_older_than_the_database_reports_succeeded() {
    let admin = admin().await;
    let (name, cfg) = fresh_db(&admin).await;
    let codedeploy = CodeDeploy::start(None).await;
    let deps = Deps { db: cfg.clone(), ca_bundle: None, app_role: None, app_iam_role: None };
    // This release's migrations, then one that only a later release knows (its deploy was
    // rolled back, or an operator redeploys this release on purpose).
    let first = handle(&deps, invocation(json!({}))).await;
    record_applied(&cfg, 9999, "from_a_later_release", "1").await;
    let answer = dispatch(Ok(&deps), &codedeploy.reporter(), invocation(codedeploy_event())).await;
    drop_db(&admin, &name).await;

    first.expect("this release's migrations");
    let answer = answer.expect("the rollback's hook succeeds");
    assert_eq!(answer["applied"], json!([]), "{answer}");
    assert_eq!(answer["databaseAhead"], "V9999__from_a_later_release", "{answer}");
    assert_reported(&codedeploy.calls(), "Succeeded");
}

#[tokio::test]
async fn an_edited_released_migration_still_reports_failed() {
    let admin = admin().await;
    let (name, cfg) = fresh_db(&admin).await;
    let codedeploy = CodeDeploy::start(None).await;
    let deps = Deps { db: cfg.clone(), ca_bundle: None, app_role: None, app_iam_role: None };
    let first = handle(&deps, invocation(json!({}))).await;
    // V1 as the database recorded it differs from this release's V1: someone edited a released
    // migration. Tolerating a newer database must not hide that.
    {
        let db = shared::db::connect::connect(&cfg, None).await.unwrap();
        db.execute("UPDATE refinery_schema_history SET checksum = '1' WHERE version = 1", &[]).await.unwrap();
    }
    let outcome = dispatch(Ok(&deps), &codedeploy.reporter(), invocation(codedeploy_event())).await;
    drop_db(&admin, &name).await;

    first.expect("this release's migrations");
    let err = outcome.expect_err("a divergent migration fails the hook").to_string();
    assert!(err.contains("V1__code2des"), "{err}");
    assert_reported(&codedeploy.calls(), "Failed");
}
