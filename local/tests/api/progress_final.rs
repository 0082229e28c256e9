//! A finished job's progress is final (SPEC section 9): a completed job reads 100 `completed`;
//! a failed, cancelled or timed-out job keeps its last report, marked `final`. Derived in the
//! job's view: the reads that show it write nothing.

use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::*;

fn progress(j: &Value) -> (Option<i64>, Option<&str>, Option<bool>) {
    let p = &j["progress"];
    (p["percent"].as_i64(), p["stage"].as_str(), p["final"].as_bool())
}

#[tokio::test]
async fn a_completed_job_reads_100_and_a_failed_one_keeps_its_last_report_marked_final() {
    let app = TestApp::with_deadline(Duration::from_secs(60)).await;
    let t = app.tenant().await;

    // Completed after reports (the demo's 80 "uploading images"), and without any report.
    let reported = app.new_job(&t).await;
    let n = app.manifest(&reported).await.nonce;
    assert_eq!(app.progress(&reported, 1, &n, 80, "uploading images").await.status, 200);
    assert_eq!(
        progress(&app.get(&t, Some(&t.sub), &reported).await.json),
        (Some(80), Some("uploading images"), Some(false))
    );
    assert_eq!(app.complete(&reported).await.status, 200);
    let silent = app.new_job(&t).await;
    assert_eq!(app.complete(&silent).await.status, 200);
    for id in [&reported, &silent] {
        let j = app.get(&t, Some(&t.sub), id).await.json;
        assert_eq!(progress(&j), (Some(100), Some("completed"), Some(true)), "{j}");
        let listed = app.list(&t, Some(&t.sub), &[]).await.json["items"].as_array().unwrap().clone();
        assert_eq!(listed.iter().find(|x| x["code2desId"] == json!(id)).unwrap()["progress"], j["progress"]);
    }
    // The stored report is what the worker said: 100 is the view's, not a write.
    let stored: Option<i16> =
        app.sql(&format!("SELECT progress_percent FROM code2des_attempt WHERE code2des_id = '{reported}'")).await[0]
            .get(0);
    assert_eq!(stored, Some(80));

    // Failed by the worker, cancelled, timed out: the last report, final; none stays none.
    let failed = app.new_job(&t).await;
    let cancelled = app.new_job(&t).await;
    let overdue = app.new_job(&t).await;
    for id in [&failed, &cancelled, &overdue] {
        let n = app.manifest(id).await.nonce;
        assert_eq!(app.progress(id, 1, &n, 45, "building nodes").await.status, 200);
    }
    assert_eq!(app.fail(&failed, "boom").await.status, 200);
    assert_eq!(app.cancel(&t, Some(&t.sub), &cancelled).await.status, 200);
    app.age(&overdue, 61).await;
    for id in [&failed, &cancelled, &overdue] {
        let j = app.get(&t, Some(&t.sub), id).await.json;
        assert_eq!(j["status"], "failed");
        assert_eq!(progress(&j), (Some(45), Some("building nodes"), Some(true)), "{j}");
    }
    let no_report = app.new_job(&t).await;
    assert_eq!(app.fail(&no_report, "early").await.status, 200);
    assert!(app.get(&t, Some(&t.sub), &no_report).await.json["progress"].is_null());
}
