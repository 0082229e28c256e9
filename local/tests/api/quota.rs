//! Quotas (issue 23, SPEC section 9): per organization at most `MAX_ACTIVE_JOBS_PER_ORG` jobs
//! processing (as every reader sees them), per subject at most `TRIGGERS_PER_MINUTE` triggers and
//! retries a minute, an organization's override in `code2des_quota`. Over a limit: 429
//! `quota_exceeded` naming it, with Retry-After and the RateLimit fields of
//! draft-ietf-httpapi-ratelimit-headers-11, which every 202 carries too. Exact under races,
//! never refusing a replay, counting nothing it refused.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use shared::obs::metrics;

use crate::helpers::*;

/// The functions with these quotas as the deployment's defaults.
async fn app_with(active: i32, per_minute: i32) -> TestApp {
    TestApp::with(|s| {
        s.max_active_jobs_per_org = active;
        s.triggers_per_minute = per_minute;
    })
    .await
}

fn header<'a>(a: &'a Answer, name: &str) -> &'a str {
    a.headers.get(name).unwrap_or_else(|| panic!("no {name}: {a:?}")).to_str().unwrap()
}

/// `t` of the `burst` item of a RateLimit field.
fn burst_t(field: &str) -> u64 {
    let item = field.split(", ").find(|i| i.starts_with("\"burst\"")).unwrap_or_else(|| panic!("{field}"));
    item.rsplit(";t=").next().unwrap().parse().unwrap_or_else(|_| panic!("{field}"))
}

/// A 429 in the SPEC error shape naming `limit`, with its Retry-After and RateLimit fields.
fn assert_refused(a: &Answer, limit: &str) {
    assert_eq!((a.status, a.code()), (429, "quota_exceeded"), "{a:?}");
    let error = a.json["error"].as_object().unwrap();
    let mut keys: Vec<&str> = error.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["code", "limit", "message"], "{a:?}");
    assert_eq!(error["limit"], limit, "{a:?}");
    assert!(!a.message().is_empty() && a.json["requestId"].is_string(), "{a:?}");
    let retry_after: u64 = header(a, "retry-after").parse().unwrap();
    assert!((1..=60).contains(&retry_after), "{a:?}");
    assert!(header(a, "ratelimit-policy").starts_with("\"active\";q="), "{a:?}");
    let state = header(a, "ratelimit");
    assert!(state.contains(&format!("\"{limit}\";r=0")), "the refusing limit has nothing left: {state}");
    if limit == "burst" {
        assert_eq!(retry_after, burst_t(state), "Retry-After is the window's end: {a:?}");
    }
}

/// Sends `n` triggers of `t` at once (each its own task) and answers the statuses, sorted.
async fn racing_triggers(app: &Arc<TestApp>, t: &Tenant, n: usize) -> Vec<Answer> {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (app, t) = (app.clone(), t.clone());
            tokio::spawn(async move { app.trigger(&t).await })
        })
        .collect();
    let mut out = Vec::new();
    for task in tasks {
        out.push(task.await.unwrap());
    }
    out
}

async fn window_hits(app: &TestApp, sub: &str) -> i64 {
    let rows = app.sql(&format!("SELECT hits::int8 FROM code2des_org_trigger_window WHERE subject = '{sub}'")).await;
    rows.first().map_or(0, |r| r.get(0))
}

async fn trigger_with_key(app: &TestApp, t: &Tenant, key: &str) -> Answer {
    app.trigger_raw(trigger_event(t, Some(&t.sub), default_body(t), Some(key))).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_racing_triggers_against_an_active_limit_of_five_create_exactly_five_jobs() {
    let app = Arc::new(app_with(5, 1000).await);
    let t = app.tenant().await;
    let refusals = metrics::capture();
    let answers = racing_triggers(&app, &t, 64).await;
    let accepted = answers.iter().filter(|a| a.status == 202).count();
    assert_eq!(accepted, 5, "{:?}", answers.iter().map(|a| a.status).collect::<Vec<_>>());
    for a in answers.iter().filter(|a| a.status != 202) {
        assert_refused(a, "active");
        assert_eq!(header(a, "retry-after"), "2", "the active limit's pace");
        assert_eq!(header(a, "ratelimit-policy"), r#""active";q=5;qu="concurrent-requests", "burst";q=1000;w=60"#);
    }
    assert_eq!(app.count_jobs().await, 5);
    assert_eq!(app.object_keys().await.len(), 5, "one manifest per job, none for a refusal");
    // The refused calls counted nothing: the window holds the five accepted ones.
    assert_eq!(window_hits(&app, &t.sub).await, 5);
    let active: f64 = refusals
        .records()
        .iter()
        .filter(|r| {
            r["Limit"] == "active" && r["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == json!([["Service", "Limit"]])
        })
        .filter_map(|r| r["QuotaRefused"].as_f64())
        .sum();
    assert!(active >= 59.0, "one QuotaRefused per refusal, dimension Limit: {active}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_racing_triggers_against_a_burst_limit_of_five_create_exactly_five_jobs() {
    let app = Arc::new(app_with(1000, 5).await);
    let t = app.tenant().await;
    let answers = racing_triggers(&app, &t, 64).await;
    assert_eq!(answers.iter().filter(|a| a.status == 202).count(), 5);
    for a in answers.iter().filter(|a| a.status != 202) {
        assert_refused(a, "burst");
        assert!(header(a, "ratelimit").starts_with(r#""active";r=995, "burst";r=0;t="#), "{a:?}");
    }
    assert_eq!(app.count_jobs().await, 5);
    assert_eq!(window_hits(&app, &t.sub).await, 5, "refused calls leave no count behind");
}

#[tokio::test]
async fn every_202_tells_both_quotas_and_what_is_left_of_them() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    for n in 1..=3 {
        let a = app.trigger(&t).await;
        assert_eq!(a.status, 202, "{a:?}");
        assert_eq!(header(&a, "ratelimit-policy"), r#""active";q=20;qu="concurrent-requests", "burst";q=30;w=60"#);
        let state = header(&a, "ratelimit");
        // `active` has no window, so no `t`; `burst`'s window started with the first trigger.
        assert!(state.starts_with(&format!("\"active\";r={}, \"burst\";r={};t=", 20 - n, 30 - n)), "{state}");
        assert!((58..=60).contains(&burst_t(state)), "{state}");
    }
}

#[tokio::test]
async fn two_organizations_quotas_are_independent() {
    let app = app_with(1, 1000).await;
    let (a, b) = (app.tenant().await, app.tenant().await);
    assert_eq!(app.trigger(&a).await.status, 202);
    assert_refused(&app.trigger(&a).await, "active");
    let other = app.trigger(&b).await;
    assert_eq!(other.status, 202, "{other:?}");
    assert!(header(&other, "ratelimit").starts_with("\"active\";r=0"), "{other:?}");
    assert_refused(&app.trigger(&b).await, "active");
}

/// A caller has one burst window per organization (V11): triggers in organization A do not
/// spend the caller's window in organization B, whose own limit applies to its own count.
#[tokio::test]
async fn one_callers_window_is_counted_per_organization() {
    let app = app_with(1000, 3).await;
    let (a, b) = (app.tenant().await, app.tenant().await);
    let b_as_a = Tenant { sub: a.sub.clone(), ..b.clone() };
    app.add_member(b.org, &a.sub).await;
    for _ in 0..3 {
        assert_eq!(app.trigger(&a).await.status, 202);
    }
    assert_refused(&app.trigger(&a).await, "burst");
    for _ in 0..3 {
        let other = app.trigger(&b_as_a).await;
        assert_eq!(other.status, 202, "{other:?}");
    }
    assert_refused(&app.trigger(&b_as_a).await, "burst");
    let per_org = app
        .sql(&format!(
            "SELECT organization_id, hits FROM code2des_org_trigger_window WHERE subject = '{}' ORDER BY 1",
            a.sub
        ))
        .await;
    let per_org: Vec<(i32, i32)> = per_org.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(per_org, vec![(a.org, 3), (b.org, 3)]);
}

#[tokio::test]
async fn a_job_that_leaves_processing_frees_its_slot_at_once() {
    // Deadline 60 s: a job aged past it is overdue, which every reader sees as failed before
    // the sweep persists it.
    let app = TestApp::with(|s| {
        s.max_active_jobs_per_org = 1;
        s.deadline = Duration::from_secs(60);
    })
    .await;
    for way in ["completed", "failed", "cancelled", "timed out (not swept yet)", "timed out (swept)", "deleted"] {
        let t = app.tenant().await;
        let id = app.new_job(&t).await;
        assert_refused(&app.trigger(&t).await, "active");
        match way {
            "completed" => assert_eq!(app.complete(&id).await.status, 200),
            "failed" => assert_eq!(app.fail(&id, "boom").await.status, 200),
            "cancelled" => assert_eq!(app.cancel(&t, Some(&t.sub), &id).await.status, 200),
            "deleted" => assert_eq!(app.delete(&t, Some(&t.sub), &id).await.status, 204),
            _ => {
                app.age(&id, 61).await;
                if way.contains("(swept)") {
                    assert!(app.sweep().await >= 1);
                }
                assert_eq!(app.get(&t, Some(&t.sub), &id).await.json["errorMessage"], "timed out");
            }
        }
        let a = app.trigger(&t).await;
        assert_eq!(a.status, 202, "{way}: {a:?}");
    }
}

#[tokio::test]
async fn a_replay_is_never_refused_even_with_both_limits_used_up() {
    let app = app_with(1, 1).await;
    let t = app.tenant().await;
    let first = trigger_with_key(&app, &t, "key-1").await;
    assert_eq!(first.status, 202, "{first:?}");
    for _ in 0..3 {
        let again = trigger_with_key(&app, &t, "key-1").await;
        assert_eq!(again.status, 202, "{again:?}");
        assert_eq!(again.json["code2desId"], first.json["code2desId"]);
        assert_eq!(
            header(&again, "ratelimit"),
            r#""active";r=0, "burst";r=0;t=60"#
                .replace(";t=60", &format!(";t={}", burst_t(header(&again, "ratelimit"))))
        );
    }
    // A new request is refused (both limits are full: the organization's comes first).
    let other = trigger_with_key(&app, &t, "key-2").await;
    assert_refused(&other, "active");
    assert_eq!(app.count_jobs().await, 1);
    assert_eq!(window_hits(&app, &t.sub).await, 1, "replays and refusals count nothing");
    assert_eq!(app.scalar_i64("SELECT count(*) FROM code2des_idempotency").await, 1, "key-2 was not claimed");
    // Once a slot frees (and the window ends), key-2 creates its job; key-1 still replays.
    app.complete(first.json["code2desId"].as_str().unwrap()).await;
    app.batch(&format!(
        "UPDATE code2des_org_trigger_window SET window_start = now() - interval '61 seconds' WHERE subject = '{}'",
        t.sub
    ))
    .await;
    assert_eq!(trigger_with_key(&app, &t, "key-2").await.status, 202);
    assert_eq!(trigger_with_key(&app, &t, "key-1").await.json["code2desId"], first.json["code2desId"]);
}

#[tokio::test]
async fn retry_counts_against_both_limits_and_only_a_retry_that_would_run_is_refused() {
    let app = app_with(1, 1000).await;
    let t = app.tenant().await;
    let first = app.new_job(&t).await;
    assert_eq!(app.fail(&first, "boom").await.status, 200);
    let second = app.new_job(&t).await;
    // The organization is full: retrying the failed job would make two processing.
    let a = app.retry(&t, &first, Some(1)).await;
    assert_refused(&a, "active");
    let j = app.get(&t, Some(&t.sub), &first).await.json;
    assert_eq!((j["status"].as_str(), j["attempt"].as_i64()), (Some("failed"), Some(1)), "nothing changed");
    // A retry that would not run answers as it always did, full or not.
    let b = app.retry(&t, &second, None).await;
    assert_eq!((b.status, b.code()), (409, "not_failed"), "{b:?}");
    assert_eq!(app.complete(&second).await.status, 200);
    let c = app.retry(&t, &first, Some(1)).await;
    assert_eq!((c.status, c.json["attempt"].as_i64()), (202, Some(2)), "{c:?}");
    assert!(header(&c, "ratelimit").starts_with("\"active\";r=0, \"burst\";r=997;t="), "{c:?}");
    // The next attempt is processing again, so it holds the slot.
    assert_refused(&app.trigger(&t).await, "active");

    // The burst limit: two calls a minute, a trigger and a retry.
    let app = app_with(1000, 2).await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    app.fail(&id, "boom").await;
    assert_eq!(app.retry(&t, &id, Some(1)).await.status, 202);
    app.fail_at(&id, 2, "boom again").await;
    assert_refused(&app.retry(&t, &id, Some(2)).await, "burst");
    assert_eq!(window_hits(&app, &t.sub).await, 2);
}

#[tokio::test]
async fn an_organizations_override_is_read_by_the_next_call() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    app.batch(&format!("INSERT INTO code2des_quota (organization_id, max_active_jobs) VALUES ({}, 2)", t.org)).await;
    for _ in 0..2 {
        let a = app.trigger(&t).await;
        assert_eq!(a.status, 202, "{a:?}");
        // The per-minute column is NULL: the deployment's default stays.
        assert_eq!(header(&a, "ratelimit-policy"), r#""active";q=2;qu="concurrent-requests", "burst";q=30;w=60"#);
    }
    assert_refused(&app.trigger(&t).await, "active");
    // A larger customer: one row, in force from the next call.
    app.batch(&format!(
        "UPDATE code2des_quota SET max_active_jobs = 3, triggers_per_minute = 4, updated_at = now() WHERE organization_id = {}",
        t.org
    ))
    .await;
    let a = app.trigger(&t).await;
    assert_eq!(a.status, 202, "{a:?}");
    assert!(header(&a, "ratelimit").starts_with(r#""active";r=0, "burst";r=1;t="#), "{a:?}");
    assert_refused(&app.trigger(&t).await, "active");
    // Another organization keeps the defaults.
    let other = app.tenant().await;
    assert!(header(&app.trigger(&other).await, "ratelimit-policy").starts_with("\"active\";q=20;"));
}

#[tokio::test]
async fn a_zero_or_negative_quota_is_refused_by_the_table_not_read_as_unlimited() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let c = app.pool.get().await.unwrap();
    for (column, value) in
        [("max_active_jobs", 0), ("max_active_jobs", -1), ("triggers_per_minute", 0), ("triggers_per_minute", -5)]
    {
        let err = c
            .execute(
                &format!("INSERT INTO code2des_quota (organization_id, {column}) VALUES ($1, $2)"),
                &[&t.org, &value],
            )
            .await
            .expect_err(&format!("{column} = {value}"));
        let db = err.as_db_error().unwrap();
        assert_eq!(db.code(), &tokio_postgres::error::SqlState::CHECK_VIOLATION, "{err}");
        assert_eq!(db.constraint(), Some(format!("code2des_quota_{column}_check").as_str()));
    }
    // Nothing was stored, and the defaults hold.
    assert_eq!(app.scalar_i64("SELECT count(*) FROM code2des_quota").await, 0);
    assert!(header(&app.trigger(&t).await, "ratelimit-policy").starts_with("\"active\";q=20;"));
}

#[tokio::test]
async fn the_window_starts_again_once_a_minute_has_passed() {
    let app = app_with(1000, 2).await;
    let t = app.tenant().await;
    app.new_job(&t).await;
    app.new_job(&t).await;
    let refused = app.trigger(&t).await;
    assert_refused(&refused, "burst");
    let t_left = burst_t(header(&refused, "ratelimit"));
    assert!((58..=60).contains(&t_left), "{refused:?}");
    app.batch(&format!(
        "UPDATE code2des_org_trigger_window SET window_start = window_start - interval '60 seconds' WHERE subject = '{}'",
        t.sub
    ))
    .await;
    let a = app.trigger(&t).await;
    assert_eq!(a.status, 202, "{a:?}");
    assert!(header(&a, "ratelimit").ends_with(&format!("\"burst\";r=1;t={}", burst_t(header(&a, "ratelimit")))));
    assert_eq!(window_hits(&app, &t.sub).await, 1);
}

/// The 429 in full, as a client reads it.
#[tokio::test]
async fn a_refusal_is_the_spec_error_body_with_its_limit() {
    let app = app_with(1, 1000).await;
    let t = app.tenant().await;
    app.new_job(&t).await;
    let a = app.trigger(&t).await;
    assert_refused(&a, "active");
    assert_eq!(header(&a, "content-type"), "application/json");
    let body: Value = a.json.clone();
    assert_eq!(body["error"]["code"], "quota_exceeded");
    assert!(body["error"]["message"].as_str().unwrap().contains("its limit of 1 "), "{body}");
    assert_eq!(
        header(&a, "ratelimit"),
        r#""active";r=0, "burst";r=999;t=60"#.replace(";t=60", &format!(";t={}", burst_t(header(&a, "ratelimit"))))
    );
}
