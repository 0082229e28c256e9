//! SPEC section 7, retry: `POST {base}/{code2desId}/retry` starts attempt + 1 of a failed job
//! with a fresh nonce and a new manifest, fences the old attempt, and converges under races.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::*;

/// A job whose attempt 1 reported progress, then failed with a failure artifact and warnings.
async fn failed_job(app: &TestApp, t: &Tenant) -> (String, String) {
    let id = app.new_job(t).await;
    let nonce = app.manifest(&id).await.nonce;
    assert_eq!(app.progress(&id, 1, &nonce, 40, "rendering").await.status, 200);
    let key = format!("code2des/{id}/1/failure.json");
    let failure = json!({"version": 1, "kind": "failure", "code2des_id": id, "attempt": 1, "nonce": nonce,
                         "warning_count": 1, "document": null, "images": {}});
    app.put(&key, serde_json::to_vec(&failure).unwrap()).await;
    let a = app
        .webhook(&json!({"code2des_id": id, "attempt": 1, "nonce": nonce, "status": "failed",
                         "result_url": format!("s3://{BUCKET}/{key}"), "warning_count": 1, "error_message": "boom"}))
        .await;
    assert_eq!(a.status, 200, "{a:?}");
    (id, nonce)
}

fn location(t: &Tenant, id: &str) -> String {
    format!("/organizations/{}/projects/{}/code2des/{id}", t.org, t.project)
}

#[tokio::test]
async fn a_retry_starts_the_next_attempt_with_a_fresh_nonce_and_a_clean_slate() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let (id, old_nonce) = failed_job(&app, &t).await;
    let before = app.get(&t, Some(&t.sub), &id).await.json;
    assert_eq!((before["errorMessage"].as_str(), before["hasResult"].as_bool()), (Some("boom"), Some(true)));
    assert_eq!(before["progress"]["percent"], 40);

    let a = app.retry(&t, &id, None).await;
    assert_eq!(a.status, 202, "{a:?}");
    assert_eq!(a.headers.get("location").unwrap().to_str().unwrap(), location(&t, &id));
    let j = &a.json;
    assert_eq!(j["code2desId"], id.as_str());
    assert_eq!(
        (j["status"].as_str(), j["attempt"].as_i64(), j["maxAttempts"].as_i64()),
        (Some("processing"), Some(2), Some(3))
    );
    for cleared in ["errorMessage", "warningCount", "progress"] {
        assert!(j[cleared].is_null(), "{cleared} not cleared: {j}");
    }
    assert_eq!(j["hasResult"], false);
    assert_eq!(j["updatedBy"], t.sub.as_str());
    assert!(j.get("nonce").is_none());
    // The answer is the job as every later read sees it.
    assert_eq!(app.get(&t, Some(&t.sub), &id).await.json, *j);

    // The new attempt's manifest, with a fresh nonce that the row holds.
    let m = app.manifest_at(&id, 2).await;
    assert_eq!((m.code2des_id.as_str(), m.attempt), (id.as_str(), 2));
    assert_ne!(m.nonce, old_nonce);
    assert_eq!(m.result_prefix, format!("s3://{BUCKET}/code2des/{id}/2/"));
    assert_eq!(m.page_import_id, t.page_import);
    let row = app.job_row(&id).await;
    assert_eq!(row.get::<_, String>("nonce"), m.nonce);
    assert_eq!(row.get::<_, i32>("attempt"), 2);
    assert!(row.get::<_, Option<String>>("result_url").is_none());
    // Earlier attempts' objects stay where they are.
    for key in [format!("code2des/{id}/1/manifest.json"), format!("code2des/{id}/1/failure.json")] {
        assert!(app.object_exists(&key).await, "{key} was removed");
    }
    assert_eq!(app.manifest_at(&id, 1).await.nonce, old_nonce, "attempt 1's manifest is untouched");

    // The new attempt runs to completion like a first one.
    assert_eq!(app.complete_at(&id, 2).await.status, 200);
    let r = app.result(&t, Some(&t.sub), &id).await;
    assert_eq!((r.status, r.json["kind"].as_str()), (200, Some("result")), "{r:?}");
}

#[tokio::test]
async fn the_old_attempts_webhook_is_409_fenced_after_a_retry() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let (id, old) = failed_job(&app, &t).await;
    assert_eq!(app.retry(&t, &id, Some(1)).await.status, 202);
    let new = app.manifest_at(&id, 2).await.nonce;
    let url1 = format!("s3://{BUCKET}/code2des/{id}/1/result.json");
    for body in [
        json!({"code2des_id": id, "attempt": 1, "nonce": old, "status": "completed", "result_url": url1}),
        json!({"code2des_id": id, "attempt": 1, "nonce": old, "status": "failed", "error_message": "boom"}),
        progress_body(&id, 1, &old, 90, "late"),
        // The old nonce with the new attempt, and the new nonce with the old attempt.
        progress_body(&id, 2, &old, 90, "mixed"),
        json!({"code2des_id": id, "attempt": 1, "nonce": new, "status": "completed", "result_url": url1}),
    ] {
        let a = app.webhook(&body).await;
        assert_eq!((a.status, a.code()), (409, "fenced"), "{body}: {a:?}");
    }
    let j = app.get(&t, Some(&t.sub), &id).await.json;
    assert_eq!((j["status"].as_str(), j["attempt"].as_i64()), (Some("processing"), Some(2)));
    assert!(j["progress"].is_null(), "a fenced progress report was stored: {j}");
}

#[tokio::test]
async fn only_a_failed_job_can_be_retried() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let processing = app.new_job(&t).await;
    let completed = app.new_job(&t).await;
    assert_eq!(app.complete(&completed).await.status, 200);
    let before = app.snapshot().await;
    for (id, status) in [(&processing, "processing"), (&completed, "completed")] {
        for attempt in [None, Some(1)] {
            let a = app.retry(&t, id, attempt).await;
            assert_eq!((a.status, a.code()), (409, "not_failed"), "{status} {attempt:?}: {a:?}");
            assert!(a.message().contains(status), "{a:?}");
        }
    }
    assert_eq!(app.snapshot().await, before, "a refused retry changed nothing");
    assert!(!app.object_exists(&format!("code2des/{processing}/2/manifest.json")).await);
}

#[tokio::test]
async fn max_attempts_caps_the_retries() {
    let app = TestApp::with(|s| s.max_attempts = 2).await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    assert_eq!(app.fail(&id, "first").await.status, 200);
    assert_eq!(app.get(&t, Some(&t.sub), &id).await.json["maxAttempts"], 2);
    let a = app.retry(&t, &id, Some(1)).await;
    assert_eq!((a.status, a.json["attempt"].as_i64(), a.json["maxAttempts"].as_i64()), (202, Some(2), Some(2)));
    assert_eq!(app.fail_at(&id, 2, "second").await.status, 200);
    let before = app.snapshot().await;
    for attempt in [None, Some(2)] {
        let a = app.retry(&t, &id, attempt).await;
        assert_eq!((a.status, a.code()), (409, "attempts_exhausted"), "{attempt:?}: {a:?}");
    }
    assert_eq!(app.snapshot().await, before);
    assert!(!app.object_exists(&format!("code2des/{id}/3/manifest.json")).await);
    let j = app.get(&t, Some(&t.sub), &id).await.json;
    assert_eq!(
        (j["status"].as_str(), j["errorMessage"].as_str(), j["attempt"].as_i64()),
        (Some("failed"), Some("second"), Some(2))
    );
}

#[tokio::test]
async fn a_retry_of_an_attempt_already_past_answers_200_with_the_job() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    assert_eq!(app.fail(&id, "first").await.status, 200);
    let created = app.retry(&t, &id, Some(1)).await;
    assert_eq!(created.status, 202);
    // Attempt 2 is processing: a late retry of attempt 1 is answered with it, unchanged.
    let again = app.retry(&t, &id, Some(1)).await;
    assert_eq!(again.status, 200, "{again:?}");
    assert_eq!(again.json, created.json);
    assert_eq!(again.headers.get("location").unwrap().to_str().unwrap(), location(&t, &id));
    // Attempt 2 failed: retrying attempt 1 still does not start attempt 3.
    assert_eq!(app.fail_at(&id, 2, "second").await.status, 200);
    let late = app.retry(&t, &id, Some(1)).await;
    assert_eq!(
        (late.status, late.json["attempt"].as_i64(), late.json["status"].as_str()),
        (200, Some(2), Some("failed"))
    );
    assert!(!app.object_exists(&format!("code2des/{id}/3/manifest.json")).await);
    // An attempt the job has not reached is a bad request naming the field.
    app.retry(&t, &id, Some(5)).await.assert_invalid("attempt");
    // Naming the current attempt retries it.
    let next = app.retry(&t, &id, Some(2)).await;
    assert_eq!((next.status, next.json["attempt"].as_i64()), (202, Some(3)));
}

#[tokio::test]
async fn the_deadline_counts_from_the_current_attempts_start() {
    let app = TestApp::with_deadline(Duration::from_secs(60)).await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    assert_eq!(app.fail(&id, "first").await.status, 200);
    // Created (and first attempted) an hour ago.
    app.age(&id, 3600).await;
    assert_eq!(app.retry(&t, &id, Some(1)).await.status, 202);
    let j = app.get(&t, Some(&t.sub), &id).await;
    assert_eq!((j.json["status"].as_str(), j.json["attempt"].as_i64()), (Some("processing"), Some(2)), "{j:?}");
    assert_eq!(j.headers.get("retry-after").unwrap(), "2");
    let listed = app.list(&t, Some(&t.sub), &[("status", "processing")]).await;
    assert_eq!(listed.json["items"][0]["code2desId"], id.as_str());
    assert_eq!(app.sweep().await, 0, "the new attempt is not overdue");
    assert_eq!(app.complete_at(&id, 2).await.status, 200);
    assert_eq!(app.get(&t, Some(&t.sub), &id).await.json["status"], "completed");
}

#[tokio::test]
async fn an_overdue_processing_job_can_be_retried() {
    let app = TestApp::with_deadline(Duration::from_secs(60)).await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    let old = app.manifest(&id).await.nonce;
    app.age(&id, 61).await;
    assert_eq!(app.get(&t, Some(&t.sub), &id).await.json["errorMessage"], "timed out");
    let a = app.retry(&t, &id, Some(1)).await;
    assert_eq!(
        (a.status, a.json["attempt"].as_i64(), a.json["status"].as_str()),
        (202, Some(2), Some("processing")),
        "{a:?}"
    );
    assert!(a.json["errorMessage"].is_null());
    let late = app.webhook(&json!({"code2des_id": id, "attempt": 1, "nonce": old, "status": "failed"})).await;
    assert_eq!((late.status, late.code()), (409, "fenced"));
    assert_eq!(app.sweep().await, 0);
    assert_eq!(app.get(&t, Some(&t.sub), &id).await.json, a.json);
    assert_eq!(app.complete_at(&id, 2).await.status, 200);
}

#[tokio::test]
async fn a_retry_whose_manifest_cannot_be_written_fails_the_new_attempt_with_503() {
    let mut app = TestApp::new().await;
    let t = app.tenant().await;
    let first = app.trigger_raw(trigger_event(&t, Some(&t.sub), default_body(&t), Some("key-1"))).await;
    let id = first.json["code2desId"].as_str().unwrap().to_owned();
    assert_eq!(app.fail(&id, "first").await.status, 200);
    app.stop_s3().await;
    let a = app.retry(&t, &id, Some(1)).await;
    assert_eq!((a.status, a.code()), (503, "service_unavailable"), "{a:?}");
    assert!(a.headers.contains_key("retry-after"));
    let row = app.job_row(&id).await;
    assert_eq!(row.get::<_, i32>("attempt"), 2, "the attempt was started");
    assert_eq!(row.get::<_, String>("status_label"), "2", "and failed, never left processing without a manifest");
    assert_eq!(
        row.get::<_, Option<String>>("error_message").as_deref(),
        Some("the job could not be dispatched to the worker")
    );
    let j = app.get(&t, Some(&t.sub), &id).await.json;
    assert_eq!((j["status"].as_str(), j["attempt"].as_i64()), (Some("failed"), Some(2)));
    assert_eq!(j["errorMessage"], "the job could not be dispatched to the worker");
    // A retry keeps the job's Idempotency-Key: the same trigger still answers this job.
    assert_eq!(app.scalar_i64("SELECT count(*) FROM code2des_idempotency").await, 1);
}

#[tokio::test]
async fn bad_retry_bodies_are_400_naming_the_field_and_change_nothing() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    assert_eq!(app.fail(&id, "first").await.status, 200);
    let before = app.snapshot().await;
    for (body, field) in [
        ("[1]", "body"),
        ("not json", "body"),
        ("{\"attempt\":1,\"extra\":true}", "body"),
        ("{\"attempt\":0}", "attempt"),
        ("{\"attempt\":-1}", "attempt"),
        ("{\"attempt\":1.5}", "attempt"),
        ("{\"attempt\":\"1\"}", "attempt"),
        ("{\"attempt\":2147483648}", "attempt"),
    ] {
        app.retry_raw(&t, Some(&t.sub), &id, body).await.assert_invalid(field);
    }
    let a = app.retry_raw(&t, Some(&t.sub), "not-a-uuid", "{}").await;
    a.assert_invalid("code2desId");
    assert_eq!(app.retry_as(&t, None, &id, None).await.status, 401);
    assert_eq!(app.snapshot().await, before);
    // An empty body is `{}`.
    assert_eq!(app.retry_raw(&t, Some(&t.sub), &id, "").await.status, 202);
}

/// `n` retries of the same job at once, each on its own task.
async fn racing_retries(app: &Arc<TestApp>, t: &Tenant, id: &str, attempt: Option<i32>, n: usize) -> Vec<Answer> {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (app, t, id) = (app.clone(), t.clone(), id.to_owned());
            tokio::spawn(async move { app.retry(&t, &id, attempt).await })
        })
        .collect();
    let mut out = Vec::new();
    for task in tasks {
        out.push(task.await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_racing_retries_of_one_attempt_create_exactly_one() {
    let app = Arc::new(TestApp::new().await);
    let t = app.tenant().await;
    let (id, _) = failed_job(&app, &t).await;
    // Every UPDATE holds its lock long enough for the others to queue behind it.
    app.widen_race_window(50).await;
    let answers = racing_retries(&app, &t, &id, Some(1), 32).await;

    let created: Vec<&Answer> = answers.iter().filter(|a| a.status == 202).collect();
    assert_eq!(created.len(), 1, "exactly one retry creates attempt 2: {answers:?}");
    let statuses: Vec<u16> = answers.iter().map(|a| a.status).collect();
    assert!(statuses.iter().all(|s| *s == 202 || *s == 200), "{statuses:?}");
    let now = app.get(&t, Some(&t.sub), &id).await.json;
    assert_eq!((now["attempt"].as_i64(), now["status"].as_str()), (Some(2), Some("processing")));
    for a in &answers {
        assert_eq!(a.json["attempt"], 2, "never attempt 3: {a:?}");
        // "the others answer 200 with that same job": the job as it is, progress reset included.
        assert_eq!(a.json, now, "a racing retry answered another job than the one stored");
    }
    let row = app.job_row(&id).await;
    assert_eq!(row.get::<_, String>("nonce"), app.manifest_at(&id, 2).await.nonce, "the winner's manifest");
    assert!(!app.object_exists(&format!("code2des/{id}/3/manifest.json")).await);
    let attempt_row =
        app.sql(&format!("SELECT attempt, progress_percent FROM code2des_attempt WHERE code2des_id = '{id}'")).await;
    assert_eq!(attempt_row[0].get::<_, i32>(0), 2);
    assert_eq!(attempt_row[0].get::<_, Option<i16>>(1), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_retries_without_an_attempt_create_one_and_refuse_the_rest() {
    let app = Arc::new(TestApp::new().await);
    let t = app.tenant().await;
    let (id, _) = failed_job(&app, &t).await;
    app.widen_race_window(50).await;
    let answers = racing_retries(&app, &t, &id, None, 16).await;
    let codes: Vec<(u16, String)> = answers.iter().map(|a| (a.status, a.code().to_owned())).collect();
    assert_eq!(codes.iter().filter(|c| c.0 == 202).count(), 1, "{codes:?}");
    assert_eq!(codes.iter().filter(|c| *c == &(409, "not_failed".to_owned())).count(), 15, "{codes:?}");
    let row = app.job_row(&id).await;
    assert_eq!(row.get::<_, i32>("attempt"), 2);
    assert!(!app.object_exists(&format!("code2des/{id}/3/manifest.json")).await);
    let created: &Value = &answers.iter().find(|a| a.status == 202).unwrap().json;
    assert_eq!(app.get(&t, Some(&t.sub), &id).await.json, *created);
}

/// Without span export (these handlers run with no exporter), the manifest still carries the
/// job's trace to the worker: the caller's `traceparent` on the retry as it came, a new one on a
/// trigger without any, and a malformed header is ignored (a new trace), never refused.
#[tokio::test]
async fn the_manifest_carries_the_callers_traceparent_or_a_new_one() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let (id, _) = failed_job(&app, &t).await;
    let first = app.manifest(&id).await.trace().expect("a trigger without traceparent starts a trace");
    assert!(first.sampled());
    let caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let mut ev = user_event("retry.json", &t, Some(&t.sub), Some(&id), Some(r#"{"attempt":1}"#.into()));
    ev["headers"]["traceparent"] = json!(caller);
    assert_eq!(app.dispatch(&ev).await.status, 202);
    assert_eq!(app.manifest_at(&id, 2).await.traceparent.as_deref(), Some(caller));

    let (bad, _) = failed_job(&app, &t).await;
    let mut ev = user_event("retry.json", &t, Some(&t.sub), Some(&bad), Some("{}".into()));
    ev["headers"]["traceparent"] = json!("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01");
    assert_eq!(app.dispatch(&ev).await.status, 202, "a bad traceparent is no reason to refuse");
    let fresh = app.manifest_at(&bad, 2).await.trace().expect("a new, valid traceparent");
    assert_ne!(fresh.to_string(), caller.to_lowercase());
    assert_ne!(fresh.trace_id, first.trace_id);
}
