//! SPEC section 7, cancel: `POST {base}/{code2desId}/cancel` is the webhook's fenced transition,
//! to failed `cancelled`; of a cancel and a racing worker exactly one wins.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn cancelling_a_processing_job_fails_it_as_cancelled() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    let a = app.cancel(&t, Some(&t.sub), &id).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!((a.json["status"].as_str(), a.json["errorMessage"].as_str()), (Some("failed"), Some("cancelled")));
    assert_eq!(a.json["updatedBy"], t.sub.as_str());
    assert!(a.headers.get("retry-after").is_none(), "a cancelled job is not polled");
    assert_eq!(app.get(&t, Some(&t.sub), &id).await.json, a.json);
    let row = app.job_row(&id).await;
    assert_eq!(row.get::<_, String>("status_label"), "2");
    let by = app.sql(&format!("SELECT cancelled_by FROM code2des_attempt WHERE code2des_id = '{id}'")).await;
    assert_eq!(by[0].get::<_, Option<String>>(0).as_deref(), Some(t.sub.as_str()));
    let r = app.result(&t, Some(&t.sub), &id).await;
    assert_eq!((r.status, r.code(), r.message()), (409, "job_failed", "cancelled"));
}

#[tokio::test]
async fn cancelling_a_cancelled_job_answers_200_again() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    let first = app.cancel(&t, Some(&t.sub), &id).await;
    assert_eq!(first.status, 200);
    let before = app.snapshot().await;
    let again = app.cancel(&t, Some(&t.sub), &id).await;
    assert_eq!(again.status, 200, "{again:?}");
    assert_eq!(again.json, first.json);
    assert_eq!(app.snapshot().await, before, "a repeated cancel writes nothing");
}

#[tokio::test]
async fn a_completed_or_otherwise_failed_job_cannot_be_cancelled() {
    let app = TestApp::with_deadline(Duration::from_secs(60)).await;
    let t = app.tenant().await;
    let completed = app.new_job(&t).await;
    assert_eq!(app.complete(&completed).await.status, 200);
    let failed = app.new_job(&t).await;
    assert_eq!(app.fail(&failed, "boom").await.status, 200);
    // A worker that itself says "cancelled" is not a user's cancel.
    let worker_said_cancelled = app.new_job(&t).await;
    assert_eq!(app.fail(&worker_said_cancelled, "cancelled").await.status, 200);
    let timed_out = app.new_job(&t).await;
    app.age(&timed_out, 61).await;
    let before = app.snapshot().await;
    for (id, why) in
        [(&completed, "completed"), (&failed, "boom"), (&worker_said_cancelled, "cancelled"), (&timed_out, "timed out")]
    {
        let a = app.cancel(&t, Some(&t.sub), id).await;
        assert_eq!((a.status, a.code()), (409, "already_terminal"), "{why}: {a:?}");
        assert!(a.message().contains(why), "{why}: {a:?}");
    }
    assert_eq!(app.snapshot().await, before, "a refused cancel writes nothing");
}

#[tokio::test]
async fn the_workers_report_after_a_cancel_is_409_already_terminal() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    let nonce = app.manifest(&id).await.nonce;
    let report = app.upload_result(&id, &artifact(&id, &nonce, json!({}), &[]), &[]).await;
    assert_eq!(app.cancel(&t, Some(&t.sub), &id).await.status, 200);
    for body in [
        report,
        json!({"code2des_id": id, "attempt": 1, "nonce": nonce, "status": "failed", "error_message": "cancelled"}),
        progress_body(&id, 1, &nonce, 50, "rendering"),
    ] {
        let a = app.webhook(&body).await;
        assert_eq!((a.status, a.code()), (409, "already_terminal"), "{body}: {a:?}");
        assert!(a.message().contains("cancelled"), "{a:?}");
    }
    let j = app.get(&t, Some(&t.sub), &id).await.json;
    assert_eq!(
        (j["status"].as_str(), j["errorMessage"].as_str(), j["hasResult"].as_bool()),
        (Some("failed"), Some("cancelled"), Some(false))
    );
}

#[tokio::test]
async fn a_cancelled_job_can_be_retried_and_cancelled_again() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    assert_eq!(app.cancel(&t, Some(&t.sub), &id).await.status, 200);
    let r = app.retry(&t, &id, Some(1)).await;
    assert_eq!((r.status, r.json["attempt"].as_i64(), r.json["status"].as_str()), (202, Some(2), Some("processing")));
    assert!(r.json["errorMessage"].is_null());
    // Attempt 2's worker failing with "cancelled" is not a cancel (the mark was reset)...
    let second = app.new_job(&t).await;
    assert_eq!(app.cancel(&t, Some(&t.sub), &second).await.status, 200);
    assert_eq!(app.retry(&t, &second, Some(1)).await.status, 202);
    assert_eq!(app.fail_at(&second, 2, "cancelled").await.status, 200);
    let a = app.cancel(&t, Some(&t.sub), &second).await;
    assert_eq!((a.status, a.code()), (409, "already_terminal"), "{a:?}");
    // ...while cancelling attempt 2 itself is.
    let c = app.cancel(&t, Some(&t.sub), &id).await;
    assert_eq!(
        (c.status, c.json["attempt"].as_i64(), c.json["errorMessage"].as_str()),
        (200, Some(2), Some("cancelled"))
    );
    assert_eq!(app.cancel(&t, Some(&t.sub), &id).await.json, c.json);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancel_racing_the_workers_webhook_has_exactly_one_winner() {
    let app = Arc::new(TestApp::with(many_jobs).await);
    let t = app.tenant().await;
    app.widen_race_window(20).await;
    let (mut cancelled, mut finished) = (0, 0);
    for round in 0..40 {
        let id = app.new_job(&t).await;
        let nonce = app.manifest(&id).await.nonce;
        // Half the rounds the worker completes, half it fails; the task started first alternates.
        let report = if round % 4 < 2 {
            app.upload_result(&id, &artifact(&id, &nonce, json!({}), &[]), &[]).await
        } else {
            json!({"code2des_id": id, "attempt": 1, "nonce": nonce, "status": "failed", "error_message": "worker gave up"})
        };
        let cancel = {
            let (app, t, id) = (app.clone(), t.clone(), id.clone());
            async move { app.cancel(&t, Some(&t.sub), &id).await }
        };
        let webhook = {
            let (app, report) = (app.clone(), report.clone());
            async move { app.webhook(&report).await }
        };
        let (c, w) = if round % 2 == 0 {
            let c = tokio::spawn(cancel);
            let w = tokio::spawn(webhook);
            (c.await.unwrap(), w.await.unwrap())
        } else {
            let w = tokio::spawn(webhook);
            let c = tokio::spawn(cancel);
            (c.await.unwrap(), w.await.unwrap())
        };
        let j = app.get(&t, Some(&t.sub), &id).await.json;
        match (c.status, w.status) {
            (200, 409) => {
                assert_eq!(w.code(), "already_terminal", "round {round}: {w:?}");
                assert_eq!(
                    (j["status"].as_str(), j["errorMessage"].as_str()),
                    (Some("failed"), Some("cancelled")),
                    "round {round}"
                );
                assert_eq!(c.json, j, "round {round}: the cancel answers the job it made");
                cancelled += 1;
            }
            (409, 200) => {
                assert_eq!(c.code(), "already_terminal", "round {round}: {c:?}");
                assert_eq!(j["status"], report["status"], "round {round}: the worker's outcome is stored");
                assert_eq!(j["updatedBy"], "system:worker", "round {round}");
                finished += 1;
            }
            other => panic!("round {round}: not exactly one winner: {other:?}\ncancel {c:?}\nwebhook {w:?}\njob {j}"),
        }
    }
    eprintln!("cancel vs webhook, 40 rounds: cancel won {cancelled}, worker won {finished}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_cancels_all_answer_200_with_the_cancelled_job() {
    let app = Arc::new(TestApp::new().await);
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    let nonce = app.manifest(&id).await.nonce;
    assert_eq!(app.progress(&id, 1, &nonce, 30, "fetching").await.status, 200);
    app.widen_race_window(50).await;
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (app, t, id) = (app.clone(), t.clone(), id.clone());
            tokio::spawn(async move { app.cancel(&t, Some(&t.sub), &id).await })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    let now = app.get(&t, Some(&t.sub), &id).await.json;
    assert_eq!(now["errorMessage"], "cancelled");
    for a in &answers {
        assert_eq!(a.status, 200, "cancelling a cancelled job answers 200, racing or not: {a:?}");
        assert_eq!(a.json, now);
    }
}

/// A cancel that starts while a retry is being written waits for the row, and then cancels the
/// attempt the retry started: the locked row's status decides, not the statement's snapshot
/// (which still holds the failed attempt).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancel_racing_a_retry_cancels_the_new_attempt() {
    let app = Arc::new(TestApp::new().await);
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    app.fail(&id, "first attempt").await;
    // Every UPDATE of the job holds its row 800 ms: the retry is still writing when the cancel
    // starts.
    app.widen_race_window(800).await;
    let retrying = {
        let (app, t, id) = (app.clone(), t.clone(), id.clone());
        tokio::spawn(async move { app.retry(&t, &id, Some(1)).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cancelled = app.cancel(&t, Some(&t.sub), &id).await;
    assert_eq!(retrying.await.unwrap().status, 202);
    assert_eq!(cancelled.status, 200, "{cancelled:?}");
    assert_eq!(cancelled.json["attempt"], 2);
    assert_eq!(
        (cancelled.json["status"].as_str(), cancelled.json["errorMessage"].as_str()),
        (Some("failed"), Some("cancelled"))
    );
    assert_eq!(app.job_row(&id).await.get::<_, String>("status_label"), "2");
}
