//! A trigger answered 503 because the database hung must not leave a job behind that commits
//! later, processing with no manifest (found by `scripts/faults.py`, PostgreSQL frozen with
//! SIGSTOP). Here the hang is a lock another session holds on the table: the trigger's INSERT
//! waits past the query timeout, the client gets 503, then the lock goes away and the INSERT
//! runs on the server. Auto-committed, it created a processing row nobody dispatched, and a
//! retry with the same Idempotency-Key answered 202 with that undispatched job.

#[path = "api/helpers.rs"]
mod helpers;

use std::time::{Duration, Instant};

use helpers::*;

#[tokio::test]
async fn a_trigger_cut_by_the_query_timeout_leaves_no_undispatched_row() {
    let app = TestApp::new().await;
    let t = app.tenant().await;

    let locker = shared::db::connect::connect(&app.db, None).await.unwrap();
    locker.batch_execute("BEGIN; LOCK TABLE code2des IN ACCESS EXCLUSIVE MODE").await.unwrap();

    let started = Instant::now();
    let a = app.trigger_raw(trigger_event(&t, Some(&t.sub), default_body(&t), Some("hung-db"))).await;
    assert_eq!((a.status, a.code()), (503, "service_unavailable"), "{a:?}");
    assert!(a.headers.contains_key("retry-after"));
    assert!(started.elapsed() < Duration::from_secs(29), "cut below API Gateway's limit");

    // The database comes back; the statement the client gave up on now runs on the server.
    locker.batch_execute("COMMIT").await.unwrap();
    let settled = Instant::now();
    while app.scalar_i64("SELECT count(*) FROM pg_locks WHERE NOT granted").await > 0
        || app
            .scalar_i64(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                 AND state NOT IN ('idle') AND pid <> pg_backend_pid()",
            )
            .await
            > 0
    {
        assert!(settled.elapsed() < Duration::from_secs(10), "the abandoned statement did not settle");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        app.scalar_i64("SELECT count(*) FROM code2des WHERE status = '0'").await,
        0,
        "a trigger answered 503 left a processing row that no manifest dispatched"
    );
    assert_eq!(app.scalar_i64("SELECT count(*) FROM code2des_idempotency").await, 0, "the key stays free");

    // The client's retry creates a job that really is dispatched.
    let a = app.trigger_raw(trigger_event(&t, Some(&t.sub), default_body(&t), Some("hung-db"))).await;
    assert_eq!(a.status, 202, "{a:?}");
    let id = a.json["code2desId"].as_str().unwrap().to_owned();
    assert_eq!(app.manifest(&id).await.code2des_id.to_string(), id);
    assert_eq!(app.count_jobs().await, 1);
}
