//! Retention (SPEC section 9, issue 22): soft-deleted jobs are purged after PURGE_AFTER_DAYS
//! with their attempt and idempotency rows and their artifacts; idempotency keys expire after 24
//! hours; a result past the artifact bucket's retention answers 410 `result_expired`.

use std::time::Duration;

use serde_json::json;

use crate::helpers::*;

async fn purge(app: &TestApp, after_days: i32) -> code2des_purge::Purged {
    let deps = code2des_purge::Deps {
        pool: app.pool.clone(),
        bucket: shared::aws::bucket::ArtifactBucket::new(app.s3.clone(), BUCKET),
        after_days,
    };
    code2des_purge::purge(&deps).await.expect("the purge runs")
}

#[tokio::test]
async fn a_job_deleted_long_enough_ago_is_purged_with_its_rows_and_its_artifacts() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    // Old: deleted 31 days ago, with a result, a retry's second attempt and an idempotency key.
    let ev = trigger_event(&t, Some(&t.sub), default_body(&t), Some("key-old"));
    let old = app.trigger_raw(ev).await.json["code2desId"].as_str().unwrap().to_owned();
    assert_eq!(app.fail(&old, "first").await.status, 200);
    assert_eq!(app.retry(&t, &old, Some(1)).await.status, 202);
    assert_eq!(app.complete_at(&old, 2).await.status, 200);
    // Recent: deleted today. Live: not deleted.
    let recent = app.new_job(&t).await;
    assert_eq!(app.complete(&recent).await.status, 200);
    let live = app.new_job(&t).await;
    assert_eq!(app.complete(&live).await.status, 200);
    for id in [&old, &recent] {
        assert_eq!(app.delete(&t, Some(&t.sub), id).await.status, 204);
    }
    app.batch(&format!("UPDATE code2des SET deleted_at = now() - interval '31 days' WHERE id = '{old}'")).await;
    let objects_of = |keys: &[String], id: &str| keys.iter().filter(|k| k.contains(id)).count();
    let before = app.object_keys().await;
    assert_eq!(objects_of(&before, &old), 4, "two attempts' manifests, the second's artifact and image: {before:?}");

    let done = purge(&app, 30).await;
    assert_eq!((done.jobs, done.objects as usize), (1, objects_of(&before, &old)));
    let after = app.object_keys().await;
    assert_eq!(objects_of(&after, &old), 0, "every attempt's objects are gone");
    assert_eq!(objects_of(&after, &recent), objects_of(&before, &recent));
    assert_eq!(objects_of(&after, &live), objects_of(&before, &live));
    for (table, column) in
        [("code2des", "id"), ("code2des_attempt", "code2des_id"), ("code2des_idempotency", "code2des_id")]
    {
        let n = app.scalar_i64(&format!("SELECT count(*) FROM {table} WHERE {column} = '{old}'")).await;
        assert_eq!(n, 0, "{table}");
    }
    assert_eq!(app.scalar_i64("SELECT count(*) FROM code2des").await, 2, "the recent and the live job stay");
    assert_eq!(app.get(&t, Some(&t.sub), &live).await.status, 200);

    // Nothing left to do: a second run changes nothing.
    assert_eq!(purge(&app, 30).await, code2des_purge::Purged::default());
}

#[tokio::test]
async fn the_purge_deletes_only_what_the_rule_allows_whoever_asks() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let live = app.new_job(&t).await;
    let deleted = app.new_job(&t).await;
    assert_eq!(app.delete(&t, Some(&t.sub), &deleted).await.status, 204);
    // The function re-checks the rule: a live job, or one deleted today, named by a caller
    // that skipped the selection, stays.
    let n = app.scalar_i64(&format!("SELECT code2des_purge_jobs(ARRAY['{live}', '{deleted}'], 30)::int8")).await;
    assert_eq!(n, 0);
    assert_eq!(app.scalar_i64("SELECT count(*) FROM code2des").await, 2);
    let c = app.pool.get().await.unwrap();
    let e = c.query("SELECT code2des_purge_jobs(ARRAY[]::varchar[], 0)", &[]).await.unwrap_err();
    let message = e.as_db_error().map(|d| d.message().to_owned()).unwrap_or_default();
    assert!(message.contains("at least 1"), "{e:?}");
}

#[tokio::test]
async fn an_idempotency_key_names_its_job_for_24_hours_then_frees() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let send = || app.trigger_raw(trigger_event(&t, Some(&t.sub), default_body(&t), Some("k-1")));
    let first = send().await;
    assert_eq!(first.status, 202);
    let replay = send().await;
    assert_eq!(replay.json["code2desId"], first.json["code2desId"], "a replay within 24 hours");

    app.batch("UPDATE code2des_idempotency SET created_at = now() - interval '24 hours 1 second'").await;
    let later = send().await;
    assert_eq!(later.status, 202);
    assert_ne!(later.json["code2desId"], first.json["code2desId"], "the key is free again: a new job");
    assert_eq!(send().await.json["code2desId"], later.json["code2desId"], "and names the new one now");
    assert_eq!(app.count_jobs().await, 2);

    // The purge removes keys past their time to live, and no other.
    let other = app.trigger_raw(trigger_event(&t, Some(&t.sub), default_body(&t), Some("k-2"))).await;
    assert_eq!(other.status, 202);
    app.batch("UPDATE code2des_idempotency SET created_at = now() - interval '2 days' WHERE idempotency_key = 'k-2'")
        .await;
    assert_eq!(purge(&app, 30).await.keys, 1);
    let keys: Vec<String> =
        app.sql("SELECT idempotency_key FROM code2des_idempotency").await.iter().map(|r| r.get(0)).collect();
    assert_eq!(keys, ["k-1"]);
}

#[tokio::test]
async fn a_webhook_answer_is_kept_for_redeliveries_for_a_week() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    for (webhook_id, age) in [("msg_recent", "6 days"), ("msg_old", "8 days")] {
        app.batch(&format!(
            "INSERT INTO code2des_webhook_delivery (webhook_id, code2des_id, status, body, created_at) \
             VALUES ('{webhook_id}', '{id}', 200, '{{}}', now() - interval '{age}')"
        ))
        .await;
    }
    assert_eq!(purge(&app, 30).await.deliveries, 1);
    let left: Vec<String> =
        app.sql("SELECT webhook_id FROM code2des_webhook_delivery").await.iter().map(|r| r.get(0)).collect();
    assert_eq!(left, ["msg_recent"]);
}

/// Issue 40: a trigger window (the `burst` quota's counter, one row per organization and
/// caller) leaves once its window ended; a live one stays, and the caller's next trigger opens a
/// new window as before.
#[tokio::test]
async fn a_trigger_window_that_ended_is_pruned_and_a_live_one_stays() {
    let app = TestApp::new().await;
    let (old, live) = (app.tenant().await, app.tenant().await);
    app.new_job(&old).await;
    app.new_job(&live).await;
    let windows =
        |t: &Tenant| format!("SELECT count(*) FROM code2des_org_trigger_window WHERE organization_id = {}", t.org);
    assert_eq!(app.scalar_i64(&windows(&old)).await, 1);
    app.batch(&format!(
        "UPDATE code2des_org_trigger_window SET window_start = now() - interval '61 seconds' WHERE organization_id = {}",
        old.org
    ))
    .await;
    assert_eq!(purge(&app, 30).await.windows, 1);
    assert_eq!(app.scalar_i64(&windows(&old)).await, 0, "the ended window is gone");
    assert_eq!(app.scalar_i64(&windows(&live)).await, 1, "the live window stays");
    assert_eq!(purge(&app, 30).await.windows, 0, "nothing more to prune");
    // The caller triggers again: a new window of one call.
    assert_eq!(app.trigger(&old).await.status, 202);
    let hits = format!("SELECT hits::int8 FROM code2des_org_trigger_window WHERE organization_id = {}", old.org);
    assert_eq!(app.scalar_i64(&hits).await, 1);
    // No caller prunes a live window: the function's floor is the burst window.
    let c = app.pool.get().await.unwrap();
    let e = c.query("SELECT code2des_prune_trigger_windows(1, 10)", &[]).await.unwrap_err();
    let message = e.as_db_error().map(|d| d.message().to_owned()).unwrap_or_default();
    assert!(message.contains("at least 60"), "{e:?}");
}

#[tokio::test]
async fn a_result_past_the_buckets_retention_is_410_result_expired() {
    let retention = Duration::from_secs(30 * 24 * 60 * 60);
    let app = TestApp::with(|s| s.artifact_retention = Some(retention)).await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    let processing = app.get(&t, Some(&t.sub), &id).await;
    assert_eq!(processing.json["resultExpiresAt"], json!(null), "no result yet");
    assert_eq!(app.complete(&id).await.status, 200);

    let job = app.get(&t, Some(&t.sub), &id).await.json;
    let started: chrono::DateTime<chrono::Utc> =
        app.sql(&format!("SELECT started_at FROM code2des_attempt WHERE code2des_id = '{id}'")).await[0].get(0);
    let expires = chrono::DateTime::parse_from_rfc3339(job["resultExpiresAt"].as_str().unwrap()).unwrap();
    assert_eq!(expires, started + chrono::Duration::days(30), "the attempt's start plus the retention");
    assert_eq!(app.result(&t, Some(&t.sub), &id).await.status, 200);

    // A month and a day later.
    app.batch(&format!(
        "UPDATE code2des_attempt SET started_at = started_at - interval '31 days' WHERE code2des_id = '{id}'"
    ))
    .await;
    let expired = app.result(&t, Some(&t.sub), &id).await;
    assert_eq!((expired.status, expired.code()), (410, "result_expired"), "{expired:?}");
    assert!(expired.message().contains("expired at"), "{expired:?}");
    let gone_at = app.get(&t, Some(&t.sub), &id).await.json["resultExpiresAt"].clone();
    assert!(expired.message().contains(gone_at.as_str().unwrap()), "the message says when: {expired:?}");
    // Even the client's cached copy is no longer confirmed: the result is gone.
    let etag = "\"r1-00000000000000000000000000000000\"";
    assert_eq!(app.result_if_none_match(&t, &id, etag).await.status, 410);

    // Where results do not expire (the local stack), the JSON says so.
    let local = TestApp::new().await;
    let t = local.tenant().await;
    let id = local.new_job(&t).await;
    assert_eq!(local.complete(&id).await.status, 200);
    assert_eq!(local.get(&t, Some(&t.sub), &id).await.json["resultExpiresAt"], json!(null));
}
