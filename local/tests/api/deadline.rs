use std::time::Duration;

use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn a_job_past_the_deadline_reads_as_failed_timed_out() {
    let app = TestApp::with_deadline(Duration::from_secs(60)).await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    let fresh = app.new_job(&t).await;
    assert_eq!(app.get(&t, Some(&t.sub), &id).await.json["status"], "processing");
    app.age(&id, 61).await;
    let a = app.get(&t, Some(&t.sub), &id).await;
    assert_eq!((a.json["status"].as_str(), a.json["errorMessage"].as_str()), (Some("failed"), Some("timed out")));
    assert_eq!(a.json["updatedBy"], "system:deadline");
    assert!(a.headers.get("retry-after").is_none(), "a failed job is not polled");
    let r = app.result(&t, Some(&t.sub), &id).await;
    assert_eq!((r.status, r.code(), r.message()), (409, "job_failed", "timed out"));
    let listed = app.list(&t, Some(&t.sub), &[]).await;
    // Reads stay reads: the row is unchanged until the sweep persists the expiry...
    let row = app.job_row(&id).await;
    assert_eq!(row.get::<_, String>("status_label"), "0");
    assert_eq!(app.get(&t, Some(&t.sub), &fresh).await.json["status"], "processing");
    assert_eq!(app.sweep().await, 1);
    let row = app.job_row(&id).await;
    assert_eq!(row.get::<_, String>("status_label"), "2");
    assert_eq!(row.get::<_, String>("updated_by"), "system:deadline");
    // ...and the sweep changes what is stored, never what anyone sees.
    assert_eq!(app.get(&t, Some(&t.sub), &id).await.json, a.json);
    assert_eq!(app.list(&t, Some(&t.sub), &[]).await.json, listed.json);
    assert_eq!(app.get(&t, Some(&t.sub), &fresh).await.json["status"], "processing");
    assert_eq!(app.sweep().await, 0, "nothing left to expire");
}

#[tokio::test]
async fn the_list_applies_the_deadline_before_filtering() {
    let app = TestApp::with_deadline(Duration::from_secs(60)).await;
    let t = app.tenant().await;
    let old = app.new_job(&t).await;
    let fresh = app.new_job(&t).await;
    app.age(&old, 120).await;
    let processing = app.list(&t, Some(&t.sub), &[("status", "processing")]).await;
    let ids: Vec<&str> =
        processing.json["items"].as_array().unwrap().iter().map(|i| i["code2desId"].as_str().unwrap()).collect();
    assert_eq!(ids, vec![fresh.as_str()]);
    let failed = app.list(&t, Some(&t.sub), &[("status", "failed")]).await;
    assert_eq!(failed.json["items"][0]["code2desId"], old.as_str());
    assert_eq!(failed.json["items"][0]["errorMessage"], "timed out");
}

#[tokio::test]
async fn a_late_webhook_after_the_deadline_is_409_already_terminal() {
    let app = TestApp::with_deadline(Duration::from_secs(60)).await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    let nonce = app.manifest(&id).await.nonce;
    app.age(&id, 61).await;
    // Nobody read the job: the webhook itself applies the deadline first.
    for body in [
        json!({"code2des_id": id, "attempt": 1, "nonce": nonce, "status": "completed",
               "result_url": format!("s3://{BUCKET}/code2des/{id}/1/result.json")}),
        json!({"code2des_id": id, "attempt": 1, "nonce": nonce, "status": "failed", "error_message": "timed out"}),
    ] {
        let a = app.webhook(&body).await;
        assert_eq!((a.status, a.code()), (409, "already_terminal"), "{a:?}");
    }
    let row = app.job_row(&id).await;
    assert_eq!(row.get::<_, Option<String>>("error_message").as_deref(), Some("timed out"));
    assert!(row.get::<_, Option<String>>("result_url").is_none());
}

#[tokio::test]
async fn the_deadline_never_touches_terminal_or_deleted_jobs() {
    let app = TestApp::with_deadline(Duration::from_secs(60)).await;
    let t = app.tenant().await;
    let done = app.new_job(&t).await;
    app.complete(&done).await;
    let deleted = app.new_job(&t).await;
    app.sql(&format!("UPDATE code2des SET deleted_at = now(), deleted_by = 'ops' WHERE id = '{deleted}'")).await;
    app.age(&done, 600).await;
    app.age(&deleted, 600).await;
    app.list(&t, Some(&t.sub), &[]).await;
    assert_eq!(app.get(&t, Some(&t.sub), &done).await.json["status"], "completed");
    assert_eq!(app.job_row(&deleted).await.get::<_, String>("status_label"), "0");
}
