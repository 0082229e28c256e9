//! Several viewports from one capture (issue 40 item 3): the trigger's optional `viewports`
//! (1 to 4 widths of 320 to 2 560 px, no two equal, kept in the caller's order) goes into the
//! manifest of every attempt, retries included, and a job weighs one per width in both quotas.

use serde_json::{json, Value};

use crate::helpers::*;

fn body_with(t: &Tenant, viewports: Value) -> Value {
    let mut body = default_body(t);
    body["viewports"] = viewports;
    body
}

async fn trigger_with(app: &TestApp, t: &Tenant, viewports: Value) -> Answer {
    app.trigger_raw(trigger_event(t, Some(&t.sub), body_with(t, viewports), None)).await
}

fn header<'a>(a: &'a Answer, name: &str) -> &'a str {
    a.headers.get(name).unwrap_or_else(|| panic!("no {name}: {a:?}")).to_str().unwrap()
}

#[tokio::test]
async fn bad_viewports_are_a_400_naming_the_member_and_create_nothing() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    for (bad, says) in [
        (json!([]), "no width"),
        (json!([1440, 1280, 1024, 768, 390]), "5 widths, at most 4"),
        (json!([319]), "319 is outside 320-2560 px"),
        (json!([1440, 2561]), "2561 is outside 320-2560 px"),
        (json!([1440, 390, 1440]), "1440 is given twice"),
        (json!([390.5]), "390.5 is not a whole number"),
        (json!(["390"]), "\"390\" is not a whole number"),
        (json!([-390]), "-390 is not a whole number"),
        (json!([4294967296_u64]), "4294967296 is outside 320-2560 px"),
        (json!([null]), "null is not a whole number"),
        (json!(1440), "must be an array"),
        (json!({"width": 1440}), "must be an array"),
    ] {
        let a = trigger_with(&app, &t, bad.clone()).await;
        a.assert_invalid("viewports");
        assert!(a.message().contains(says), "{bad}: {a:?}");
    }
    assert_eq!(app.count_jobs().await, 0, "no row for a refused body");
    assert!(app.object_keys().await.is_empty(), "no manifest either");
}

#[tokio::test]
async fn the_manifest_and_every_retry_carry_the_viewports_in_the_callers_order() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let a = trigger_with(&app, &t, json!([390, 1440])).await;
    assert_eq!(a.status, 202, "{a:?}");
    let id = a.json["code2desId"].as_str().unwrap().to_owned();
    assert_eq!(app.manifest(&id).await.viewports, Some(vec![390, 1440]), "kept as given, not sorted");
    let raw = app.sql(&format!("SELECT viewports FROM code2des_attempt WHERE code2des_id = '{id}'")).await;
    assert_eq!(raw[0].get::<_, Option<Vec<i32>>>(0), Some(vec![390, 1440]));

    assert_eq!(app.fail(&id, "boom").await.status, 200);
    assert_eq!(app.retry(&t, &id, Some(1)).await.status, 202);
    assert_eq!(app.manifest_at(&id, 2).await.viewports, Some(vec![390, 1440]), "the retry's manifest");
    app.fail_at(&id, 2, "boom again").await;
    assert_eq!(app.retry(&t, &id, Some(2)).await.status, 202);
    assert_eq!(app.manifest_at(&id, 3).await.viewports, Some(vec![390, 1440]));

    // Without the member (or with null): no viewports in the manifest at all, as before.
    let plain = app.new_job(&t).await;
    let m = app.manifest(&plain).await;
    assert_eq!(m.viewports, None);
    let written = serde_json::to_value(&m).unwrap();
    assert!(written.get("viewports").is_none(), "absent, not null: {written}");
    let null = trigger_with(&app, &t, Value::Null).await;
    assert_eq!(null.status, 202, "{null:?}");
    assert_eq!(app.manifest(null.json["code2desId"].as_str().unwrap()).await.viewports, None);
}

#[tokio::test]
async fn an_idempotency_key_tells_requests_apart_by_their_viewports() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let send = |v: Value| app.trigger_raw(trigger_event(&t, Some(&t.sub), body_with(&t, v), Some("key-vp")));
    let first = send(json!([1440, 390])).await;
    assert_eq!(first.status, 202, "{first:?}");
    let again = send(json!([1440, 390])).await;
    assert_eq!((again.status, &again.json["code2desId"]), (202, &first.json["code2desId"]), "a replay");
    let other = send(json!([390, 1440])).await;
    assert_eq!((other.status, other.code()), (422, "idempotency_key_reused"), "{other:?}");
    assert_eq!(app.count_jobs().await, 1);
}

#[tokio::test]
async fn a_job_weighs_one_per_viewport_in_both_quotas() {
    let app = TestApp::with(|s| {
        s.max_active_jobs_per_org = 5;
        s.triggers_per_minute = 6;
    })
    .await;
    let t = app.tenant().await;
    let four = trigger_with(&app, &t, json!([1440, 1024, 768, 390])).await;
    assert_eq!(four.status, 202, "{four:?}");
    assert!(header(&four, "ratelimit").starts_with("\"active\";r=1, \"burst\";r=2;t="), "{four:?}");
    // Two more widths do not fit in the one conversion left; nothing is counted for the refusal.
    let two = trigger_with(&app, &t, json!([1440, 390])).await;
    assert_eq!((two.status, two.json["error"]["limit"].as_str()), (429, Some("active")), "{two:?}");
    let one = app.trigger(&t).await;
    assert_eq!(one.status, 202, "one width fits: {one:?}");
    assert!(header(&one, "ratelimit").starts_with("\"active\";r=0, \"burst\";r=1;t="), "{one:?}");

    // The four-width job ends: its four slots are free at once, and its retry weighs four again.
    let id = four.json["code2desId"].as_str().unwrap().to_owned();
    assert_eq!(app.fail(&id, "boom").await.status, 200);
    let retried = app.retry(&t, &id, Some(1)).await;
    assert_eq!((retried.status, retried.json["error"]["limit"].as_str()), (429, Some("burst")), "{retried:?}");
    let hits = app.sql(&format!("SELECT hits FROM code2des_org_trigger_window WHERE subject = '{}'", t.sub)).await;
    assert_eq!(hits[0].get::<_, i32>(0), 5, "4 + 1 counted; the refused retry's 4 rolled back");
}

#[tokio::test]
async fn a_job_wider_than_the_whole_quota_still_runs_alone() {
    let app = TestApp::with(|s| {
        s.max_active_jobs_per_org = 2;
        s.triggers_per_minute = 1000;
    })
    .await;
    let t = app.tenant().await;
    let four = trigger_with(&app, &t, json!([1440, 1024, 768, 390])).await;
    assert_eq!(four.status, 202, "weighs the whole limit, not more: {four:?}");
    assert!(header(&four, "ratelimit").starts_with("\"active\";r=0,"), "{four:?}");
    let next = app.trigger(&t).await;
    assert_eq!((next.status, next.json["error"]["limit"].as_str()), (429, Some("active")), "{next:?}");
}
