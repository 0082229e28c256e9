//! SPEC section 7, progress and polling: signed `status: "processing"` reports, fenced like
//! terminal ones, a percent that never goes backwards, and `Retry-After: 2` while processing.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::helpers::*;

async fn job_and_nonce(app: &TestApp) -> (Tenant, String, String) {
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    let nonce = app.manifest(&id).await.nonce;
    (t, id, nonce)
}

#[tokio::test]
async fn a_progress_report_shows_in_the_job_json() {
    let app = TestApp::new().await;
    let (t, id, nonce) = job_and_nonce(&app).await;
    assert!(app.get(&t, Some(&t.sub), &id).await.json["progress"].is_null(), "no progress before a report");
    let a = app.progress(&id, 1, &nonce, 10, "fetching").await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.json, json!({"code2des_id": id, "status": "processing"}));
    let j = app.get(&t, Some(&t.sub), &id).await;
    assert_eq!(j.json["status"], "processing");
    let p = &j.json["progress"];
    assert_eq!((p["percent"].as_i64(), p["stage"].as_str()), (Some(10), Some("fetching")), "{p}");
    let at = chrono::DateTime::parse_from_rfc3339(p["updatedAt"].as_str().unwrap()).unwrap();
    assert!((chrono::Utc::now() - at.with_timezone(&chrono::Utc)).num_seconds().abs() < 60);
    assert_eq!(p["final"], false, "{p}");
    assert_eq!(p.as_object().unwrap().len(), 4, "{p}");
    assert_eq!(j.headers.get("retry-after").unwrap(), "2");
    // The list shows the same job.
    assert_eq!(app.list(&t, Some(&t.sub), &[]).await.json["items"][0], j.json);
    // A report's stage may say more as it goes.
    assert_eq!(app.progress(&id, 1, &nonce, 55, "rendering 3/4").await.status, 200);
    assert_eq!(app.get(&t, Some(&t.sub), &id).await.json["progress"]["stage"], "rendering 3/4");
    // Reports never complete the job.
    assert_eq!(app.job_row(&id).await.get::<_, String>("status_label"), "0");
}

#[tokio::test]
async fn a_lower_percent_is_ignored_and_an_equal_one_may_change_the_stage() {
    let app = TestApp::new().await;
    let (t, id, nonce) = job_and_nonce(&app).await;
    assert_eq!(app.progress(&id, 1, &nonce, 50, "rendering").await.status, 200);
    let before = app.get(&t, Some(&t.sub), &id).await.json;
    let lower = app.progress(&id, 1, &nonce, 30, "going back").await;
    assert_eq!(lower.status, 200, "a lower percent is answered 200: {lower:?}");
    assert_eq!(app.get(&t, Some(&t.sub), &id).await.json, before, "and ignored");
    assert_eq!(app.progress(&id, 1, &nonce, 50, "uploading").await.status, 200);
    let p = app.get(&t, Some(&t.sub), &id).await.json["progress"].clone();
    assert_eq!((p["percent"].as_i64(), p["stage"].as_str()), (Some(50), Some("uploading")));
    assert_eq!(app.progress(&id, 1, &nonce, 100, "done").await.status, 200);
    assert_eq!(app.progress(&id, 1, &nonce, 0, "restart?").await.status, 200);
    assert_eq!(app.get(&t, Some(&t.sub), &id).await.json["progress"]["percent"], 100);
}

#[tokio::test]
async fn progress_reports_are_fenced_like_terminal_ones() {
    let app = TestApp::with_deadline(Duration::from_secs(60)).await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    let nonce = app.manifest(&id).await.nonce;
    let p = |attempt: i32, nonce: &str| progress_body(&id, attempt, nonce, 20, "x");
    let fenced = [p(1, "not-the-nonce"), p(2, &nonce), p(1, &nonce[..63])];
    for body in &fenced {
        let a = app.webhook(body).await;
        assert_eq!((a.status, a.code()), (409, "fenced"), "{body}: {a:?}");
    }
    let unknown = progress_body(&uuid::Uuid::now_v7().to_string(), 1, &nonce, 20, "x");
    assert_eq!(app.webhook(&unknown).await.status, 404);
    assert!(app.get(&t, Some(&t.sub), &id).await.json["progress"].is_null(), "no fenced report landed");

    // Terminal: completed, failed, cancelled, timed out.
    assert_eq!(app.complete(&id).await.status, 200);
    let failed = app.new_job(&t).await;
    assert_eq!(app.fail(&failed, "boom").await.status, 200);
    let cancelled = app.new_job(&t).await;
    assert_eq!(app.cancel(&t, Some(&t.sub), &cancelled).await.status, 200);
    let overdue = app.new_job(&t).await;
    app.age(&overdue, 61).await;
    for (job, why) in [(&id, "completed"), (&failed, "failed"), (&cancelled, "cancelled"), (&overdue, "timed out")] {
        let n = app.manifest(job).await.nonce;
        let before = app.get(&t, Some(&t.sub), job).await.json;
        let a = app.progress(job, 1, &n, 99, "late").await;
        assert_eq!((a.status, a.code()), (409, "already_terminal"), "{why}: {a:?}");
        assert!(a.message().contains(why), "{why}: {a:?}");
        assert_eq!(app.get(&t, Some(&t.sub), job).await.json, before, "{why}: the report changed the job");
    }

    // Deleted: 410, and a wrong nonce on a deleted job is still 409 fenced.
    let deleted = app.new_job(&t).await;
    let n = app.manifest(&deleted).await.nonce;
    assert_eq!(app.delete(&t, Some(&t.sub), &deleted).await.status, 204);
    assert_eq!(app.progress(&deleted, 1, &n, 10, "x").await.status, 410);
    assert_eq!(app.progress(&deleted, 1, "other", 10, "x").await.code(), "fenced");
}

#[tokio::test]
async fn a_retry_resets_progress_and_fences_the_old_attempts_reports() {
    let app = TestApp::new().await;
    let (t, id, nonce) = job_and_nonce(&app).await;
    assert_eq!(app.progress(&id, 1, &nonce, 80, "uploading").await.status, 200);
    assert_eq!(app.fail(&id, "crashed").await.status, 200);
    assert_eq!(
        app.get(&t, Some(&t.sub), &id).await.json["progress"]["percent"],
        80,
        "a failed job keeps its last report"
    );
    assert!(app.retry(&t, &id, Some(1)).await.json["progress"].is_null());
    assert!(app.get(&t, Some(&t.sub), &id).await.json["progress"].is_null());
    let old = app.progress(&id, 1, &nonce, 90, "late").await;
    assert_eq!((old.status, old.code()), (409, "fenced"));
    // Percent starts over within the new attempt: 5 after attempt 1's 80 is progress.
    let n2 = app.manifest_at(&id, 2).await.nonce;
    assert_eq!(app.progress(&id, 2, &n2, 5, "fetching").await.status, 200);
    assert_eq!(app.get(&t, Some(&t.sub), &id).await.json["progress"]["percent"], 5);
}

#[tokio::test]
async fn a_processing_get_says_retry_after_2_and_a_terminal_one_does_not() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let processing = app.new_job(&t).await;
    let a = app.get(&t, Some(&t.sub), &processing).await;
    assert_eq!(a.headers.get_all("retry-after").iter().collect::<Vec<_>>(), ["2"], "{a:?}");
    let completed = app.new_job(&t).await;
    assert_eq!(app.complete(&completed).await.status, 200);
    let failed = app.new_job(&t).await;
    assert_eq!(app.fail(&failed, "boom").await.status, 200);
    let cancelled = app.new_job(&t).await;
    assert_eq!(app.cancel(&t, Some(&t.sub), &cancelled).await.status, 200);
    for id in [&completed, &failed, &cancelled] {
        let a = app.get(&t, Some(&t.sub), id).await;
        assert_eq!(a.status, 200);
        assert!(a.headers.get("retry-after").is_none(), "{}: {a:?}", a.json["status"]);
    }
    // A retried job is processing again, and polled again.
    let r = app.retry(&t, &failed, None).await;
    assert_eq!(r.status, 202);
    assert_eq!(app.get(&t, Some(&t.sub), &failed).await.headers.get("retry-after").unwrap(), "2");
}

#[tokio::test]
async fn bad_progress_reports_are_400_naming_the_field() {
    let app = TestApp::new().await;
    let (t, id, nonce) = job_and_nonce(&app).await;
    let with = |progress: serde_json::Value| json!({"code2des_id": id, "attempt": 1, "nonce": nonce, "status": "processing", "progress": progress});
    for (body, field) in [
        (with(json!({"percent": 101, "stage": "x"})), "progress.percent"),
        (with(json!({"percent": -1, "stage": "x"})), "progress.percent"),
        (with(json!({"percent": "50", "stage": "x"})), "progress.percent"),
        (with(json!({"percent": 5.5, "stage": "x"})), "progress.percent"),
        (with(json!({"stage": "x"})), "progress.percent"),
        (with(json!({"percent": 5, "stage": ""})), "progress.stage"),
        (with(json!({"percent": 5, "stage": "s".repeat(65)})), "progress.stage"),
        (with(json!({"percent": 5, "stage": "a\u{0}b"})), "progress.stage"),
        (with(json!({"percent": 5})), "progress.stage"),
        (with(json!({"percent": 5, "stage": "x", "eta": 1})), "progress"),
        (with(json!([5, "x"])), "progress"),
        (json!({"code2des_id": id, "attempt": 1, "nonce": nonce, "status": "processing"}), "progress"),
    ] {
        app.webhook(&body).await.assert_invalid(field);
    }
    // A stage of exactly 64 characters (not bytes) is fine.
    assert_eq!(app.progress(&id, 1, &nonce, 5, &"é".repeat(64)).await.status, 200);
    assert_eq!(app.get(&t, Some(&t.sub), &id).await.json["progress"]["stage"], "é".repeat(64));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_progress_reports_never_go_backwards() {
    let app = Arc::new(TestApp::new().await);
    let (t, id, nonce) = job_and_nonce(&app).await;
    // Percents in a scrambled order, all sent at once; every one is answered 200.
    let percents: Vec<i64> = (0..=30).map(|i| (i * 37) % 31 * 3).collect();
    let top = *percents.iter().max().unwrap();
    let tasks: Vec<_> = percents
        .iter()
        .map(|p| {
            let (app, id, nonce, p) = (app.clone(), id.clone(), nonce.clone(), *p);
            tokio::spawn(async move { app.progress(&id, 1, &nonce, p, &format!("at {p}")).await })
        })
        .collect();
    let mut seen = Vec::new();
    for task in tasks {
        assert_eq!(task.await.unwrap().status, 200);
        seen.push(app.get(&t, Some(&t.sub), &id).await.json["progress"]["percent"].as_i64().unwrap());
    }
    let p = app.get(&t, Some(&t.sub), &id).await.json["progress"].clone();
    assert_eq!((p["percent"].as_i64(), p["stage"].as_str()), (Some(top), Some(format!("at {top}").as_str())));
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "a reader saw the percent go backwards: {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn progress_racing_a_terminal_report_never_lands_after_it() {
    let app = Arc::new(TestApp::new().await);
    let t = app.tenant().await;
    app.widen_race_window(20).await;
    let (mut landed, mut refused) = (0, 0);
    for round in 0..20 {
        let id = app.new_job(&t).await;
        let nonce = app.manifest(&id).await.nonce;
        let report = app.upload_result(&id, &artifact(&id, &nonce, json!({}), &[]), &[]).await;
        let progress = {
            let (app, id, nonce) = (app.clone(), id.clone(), nonce.clone());
            tokio::spawn(async move { app.progress(&id, 1, &nonce, 60, "rendering").await })
        };
        let finish = {
            let app = app.clone();
            tokio::spawn(async move { app.webhook(&report).await })
        };
        let (p, f) = (progress.await.unwrap(), finish.await.unwrap());
        assert_eq!(f.status, 200, "round {round}: the completion always lands: {f:?}");
        let j = app.get(&t, Some(&t.sub), &id).await.json;
        assert_eq!(j["status"], "completed", "round {round}");
        // A completed job reads 100 whatever was reported: what landed is in the row.
        assert_eq!((j["progress"]["percent"].as_i64(), j["progress"]["final"].as_bool()), (Some(100), Some(true)));
        let stored: Option<i16> =
            app.sql(&format!("SELECT progress_percent FROM code2des_attempt WHERE code2des_id = '{id}'")).await[0]
                .get(0);
        match p.status {
            200 => {
                assert_eq!(stored, Some(60), "round {round}: 200 but not stored");
                landed += 1;
            }
            409 => {
                assert_eq!(p.code(), "already_terminal", "round {round}");
                assert_eq!(stored, None, "round {round}: refused but stored");
                refused += 1;
            }
            _ => panic!("round {round}: {p:?}"),
        }
    }
    eprintln!("progress vs completion, 20 rounds: progress first {landed}, completion first {refused}");
}
