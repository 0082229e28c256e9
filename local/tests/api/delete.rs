//! SPEC section 7, delete: `DELETE {base}/{code2desId}` is a soft delete (`deleted_at`,
//! `deleted_by` = the caller); afterwards the job is absent on every route and its webhook 410.

use std::sync::Arc;

use serde_json::json;

use crate::helpers::*;

fn listed(a: &Answer, id: &str) -> bool {
    a.json["items"].as_array().unwrap().iter().any(|j| j["code2desId"] == id)
}

#[tokio::test]
async fn a_deleted_job_is_absent_from_every_route() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let processing = app.new_job(&t).await;
    let nonce = app.manifest(&processing).await.nonce;
    let completed = app.new_job(&t).await;
    let completed_report = app
        .upload_result(&completed, &artifact(&completed, &app.manifest(&completed).await.nonce, json!({}), &[]), &[])
        .await;
    assert_eq!(app.webhook(&completed_report).await.status, 200);
    let kept = app.new_job(&t).await;

    for id in [&processing, &completed] {
        let a = app.delete(&t, Some(&t.sub), id).await;
        assert_eq!(a.status, 204, "{a:?}");
        assert!(a.json.is_null(), "204 has no body: {a:?}");
        let row = app.job_row(id).await;
        assert!(row.get::<_, Option<chrono::DateTime<chrono::Utc>>>("deleted_at").is_some());
        assert_eq!(row.get::<_, Option<String>>("deleted_by").as_deref(), Some(t.sub.as_str()));
    }
    for id in [&processing, &completed] {
        for (route, a) in [
            ("get", app.get(&t, Some(&t.sub), id).await),
            ("result", app.result(&t, Some(&t.sub), id).await),
            ("placement", app.place(&t, Some(&t.sub), id, "1:2").await),
            ("retry", app.retry(&t, id, None).await),
            ("retry attempt 1", app.retry(&t, id, Some(1)).await),
            ("cancel", app.cancel(&t, Some(&t.sub), id).await),
            ("delete", app.delete(&t, Some(&t.sub), id).await),
        ] {
            assert_eq!((a.status, a.code()), (404, "not_found"), "{route} of a deleted job: {a:?}");
        }
    }
    for q in [&[][..], &[("status", "processing")], &[("status", "completed")], &[("figmaFileKey", "FILEkey123")]] {
        let page = app.list(&t, Some(&t.sub), q).await;
        assert!(!listed(&page, &processing) && !listed(&page, &completed), "{q:?}: {page:?}");
    }
    assert!(listed(&app.list(&t, Some(&t.sub), &[]).await, &kept), "other jobs stay listed");

    // The worker of a deleted job: 410 for its completion, a replay, a failure and progress.
    let url = format!("s3://{BUCKET}/code2des/{processing}/1/result.json");
    for body in [
        json!({"code2des_id": processing, "attempt": 1, "nonce": nonce, "status": "completed", "result_url": url}),
        json!({"code2des_id": processing, "attempt": 1, "nonce": nonce, "status": "failed"}),
        progress_body(&processing, 1, &nonce, 10, "fetching"),
        completed_report.clone(),
    ] {
        let a = app.webhook(&body).await;
        assert_eq!(a.status, 410, "{body}: {a:?}");
    }
    assert_eq!(app.job_row(&processing).await.get::<_, String>("status_label"), "0", "no report landed");
}

#[tokio::test]
async fn another_tenants_delete_is_404_and_changes_nothing() {
    let app = TestApp::new().await;
    let a = app.tenant().await;
    let b = app.tenant().await;
    let id = app.new_job(&a).await;
    let before = app.snapshot().await;
    let b_path_a_job = app.delete(&b, Some(&b.sub), &id).await;
    let a_path_b_sub = app.delete(&a, Some(&b.sub), &id).await;
    let a_path_stranger = app.delete(&a, Some("stranger"), &id).await;
    for r in [&b_path_a_job, &a_path_b_sub, &a_path_stranger] {
        assert_eq!((r.status, r.code()), (404, "not_found"), "{r:?}");
    }
    assert_eq!(app.delete(&a, None, &id).await.status, 401);
    assert_eq!(app.snapshot().await, before, "a refused delete writes nothing");
    assert_eq!(app.delete(&a, Some(&a.sub), &id).await.status, 204);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_deletes_delete_once() {
    let app = Arc::new(TestApp::new().await);
    let t = app.tenant().await;
    let other = format!("member-{}", uuid::Uuid::new_v4());
    app.add_member(t.org, &other).await;
    let id = app.new_job(&t).await;
    app.widen_race_window(50).await;
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let (app, t, id) = (app.clone(), t.clone(), id.clone());
            let sub = if i % 2 == 0 { t.sub.clone() } else { other.clone() };
            tokio::spawn(async move { (sub.clone(), app.delete(&t, Some(&sub), &id).await) })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    let winners: Vec<&(String, Answer)> = answers.iter().filter(|(_, a)| a.status == 204).collect();
    assert_eq!(winners.len(), 1, "{answers:?}");
    assert!(answers.iter().all(|(_, a)| a.status == 204 || a.status == 404), "{answers:?}");
    let row = app.job_row(&id).await;
    assert_eq!(
        row.get::<_, Option<String>>("deleted_by").as_deref(),
        Some(winners[0].0.as_str()),
        "deleted_by is the winner"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_delete_racing_a_webhook_is_consistent_every_round() {
    let app = Arc::new(TestApp::with(many_jobs).await);
    let t = app.tenant().await;
    app.widen_race_window(20).await;
    let (mut before, mut after) = (0, 0);
    for round in 0..40 {
        let id = app.new_job(&t).await;
        let nonce = app.manifest(&id).await.nonce;
        let report = app.upload_result(&id, &artifact(&id, &nonce, json!({}), &[]), &[]).await;
        let delete = {
            let (app, t, id) = (app.clone(), t.clone(), id.clone());
            async move { app.delete(&t, Some(&t.sub), &id).await }
        };
        let webhook = {
            let (app, report) = (app.clone(), report.clone());
            async move { app.webhook(&report).await }
        };
        let (d, w) = if round % 2 == 0 {
            let d = tokio::spawn(delete);
            let w = tokio::spawn(webhook);
            (d.await.unwrap(), w.await.unwrap())
        } else {
            let w = tokio::spawn(webhook);
            let d = tokio::spawn(delete);
            (d.await.unwrap(), w.await.unwrap())
        };
        assert_eq!(d.status, 204, "round {round}: the delete always succeeds: {d:?}");
        let row = app.job_row(&id).await;
        assert!(row.get::<_, Option<chrono::DateTime<chrono::Utc>>>("deleted_at").is_some(), "round {round}");
        assert_eq!(row.get::<_, Option<String>>("deleted_by").as_deref(), Some(t.sub.as_str()), "round {round}");
        let status = row.get::<_, String>("status_label");
        match w.status {
            // The report landed first: the job was completed, then deleted.
            200 => {
                assert_eq!(status, "1", "round {round}: 200 but the outcome was not stored");
                before += 1;
            }
            // The delete landed first: the report changed nothing.
            410 => {
                assert_eq!(status, "0", "round {round}: 410 but the outcome was stored");
                after += 1;
            }
            _ => panic!("round {round}: webhook {w:?}"),
        }
        assert_eq!(app.get(&t, Some(&t.sub), &id).await.status, 404, "round {round}");
        // Whichever came first, a replay now finds the job deleted.
        assert_eq!(app.webhook(&report).await.status, 410, "round {round}");
    }
    eprintln!("delete vs webhook, 40 rounds: webhook before the delete {before}, after {after}");
}
