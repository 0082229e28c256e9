use std::time::{Duration, Instant};

use serde_json::json;
use shared::db::connect::DbConfig;

use crate::helpers::*;

/// A loopback port that accepts connections and never answers: a hung dependency.
async fn black_hole() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = l.accept().await {
            held.push(s);
        }
    });
    (addr, task)
}

/// A loopback port with nothing listening: a dependency that is down.
fn dead_port() -> u16 {
    code2des_testkit::process::free_port()
}

fn assert_unavailable(a: &Answer) {
    assert_eq!((a.status, a.code()), (503, "service_unavailable"), "{a:?}");
    assert!(a.headers.contains_key("retry-after"), "503 carries Retry-After");
}

#[tokio::test]
async fn s3_down_at_trigger_is_503_and_the_row_is_failed_not_stuck() {
    let mut app = TestApp::new().await;
    let t = app.tenant().await;
    app.stop_s3().await;
    let a = app.trigger_raw(trigger_event(&t, Some(&t.sub), default_body(&t), Some("retry-me"))).await;
    assert_unavailable(&a);
    let rows = app.sql("SELECT status::text, error_message FROM code2des").await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].get::<_, String>(0), "2", "failed, never left processing without a manifest");
    assert_eq!(rows[0].get::<_, String>(1), "the job could not be dispatched to the worker");
    assert_eq!(app.scalar_i64("SELECT count(*) FROM code2des_idempotency").await, 0, "the key is free for a retry");
}

#[tokio::test]
async fn database_down_is_503_with_retry_after_on_every_route() {
    let mut app = TestApp::new().await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    let nonce = app.manifest(&id).await.nonce;
    let down = DbConfig::from_url(&format!("postgres://postgres@127.0.0.1:{}/x", dead_port())).unwrap();
    let pool = shared::db::connect::pool(&down, None, 2).unwrap();
    app.trigger.pool = pool.clone();
    app.lifecycle.pool = pool.clone();
    app.result.pool = pool.clone();
    app.webhook.pool = pool.clone();
    app.placement.pool = pool.clone();
    assert_unavailable(&app.trigger(&t).await);
    assert_unavailable(&app.get(&t, Some(&t.sub), &id).await);
    assert_unavailable(&app.list(&t, Some(&t.sub), &[]).await);
    assert_unavailable(&app.result(&t, Some(&t.sub), &id).await);
    assert_unavailable(&app.place(&t, Some(&t.sub), &id, "1:2").await);
    let body = json!({"code2des_id": id, "attempt": 1, "nonce": nonce, "status": "failed"});
    assert_unavailable(&app.webhook(&body).await);
    // Nothing leaked about the cause.
    let a = app.get(&t, Some(&t.sub), &id).await;
    assert!(!a.message().contains("127.0.0.1") && !a.message().to_lowercase().contains("connection refused"));
}

#[tokio::test]
async fn s3_down_at_result_is_503_not_502() {
    let mut app = TestApp::new().await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    app.complete(&id).await;
    app.stop_s3().await;
    assert_unavailable(&app.result(&t, Some(&t.sub), &id).await);
}

#[tokio::test]
async fn a_hung_database_or_s3_is_cut_well_below_the_gateway_limit() {
    let mut app = TestApp::new().await;
    let t = app.tenant().await;
    let (db_addr, _db) = black_hole().await;
    let hung = DbConfig::from_url(&format!("postgres://postgres@{db_addr}/x")).unwrap();
    app.lifecycle.pool = shared::db::connect::pool(&hung, None, 2).unwrap();
    let started = Instant::now();
    assert_unavailable(&app.list(&t, Some(&t.sub), &[]).await);
    assert!(started.elapsed() < Duration::from_secs(20), "cut after {:?}", started.elapsed());

    let (s3_addr, _s3) = black_hole().await;
    app.trigger.dispatcher.bucket = shared::aws::bucket::ArtifactBucket::new(
        code2des_local::s3server::client(&format!("http://{s3_addr}"), "local", "local-secret"),
        BUCKET,
    );
    let started = Instant::now();
    assert_unavailable(&app.trigger(&t).await);
    assert!(started.elapsed() < Duration::from_secs(20), "cut after {:?}", started.elapsed());
}

#[tokio::test]
async fn a_statement_the_database_refuses_is_a_500_without_retry_after_and_writes_nothing() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    // A bug of ours, simulated: a constraint every new attempt row violates. Retrying cannot
    // help, so the client is not told to (no 503, no Retry-After), and trigger's transaction
    // leaves no job behind.
    app.batch("ALTER TABLE code2des_attempt ADD CONSTRAINT simulated_bug CHECK (attempt < 0) NOT VALID").await;
    let a = app.trigger(&t).await;
    assert_eq!((a.status, a.code()), (500, "internal_error"), "{a:?}");
    assert!(!a.headers.contains_key("retry-after"), "{a:?}");
    assert!(a.json["requestId"].is_string());
    assert!(!a.message().contains("simulated_bug") && !a.message().contains("code2des_attempt"), "no SQL leaks");
    assert_eq!(app.count_jobs().await, 0);
    // The connection went back to the pool clean: the next request works.
    app.batch("ALTER TABLE code2des_attempt DROP CONSTRAINT simulated_bug").await;
    assert_eq!(app.trigger(&t).await.status, 202);
}
