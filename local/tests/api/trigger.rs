use serde_json::{json, Value};

use crate::helpers::*;

#[tokio::test]
async fn trigger_creates_a_processing_job_with_location_and_manifest() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let body = json!({"pageImportId": t.page_import, "figmaFileKey": "FILEkey123", "screenId": "screen-1", "placementTarget": "page:1"});
    let a = app.trigger_raw(trigger_event(&t, Some(&t.sub), body, None)).await;
    assert_eq!(a.status, 202, "{a:?}");
    let id = a.json["code2desId"].as_str().unwrap();
    assert_eq!(uuid::Uuid::parse_str(id).unwrap().get_version_num(), 7);
    assert_eq!(
        a.headers["location"].to_str().unwrap(),
        format!("/organizations/{}/projects/{}/code2des/{id}", t.org, t.project)
    );
    let j = &a.json;
    assert_eq!(j["status"], "processing");
    assert_eq!(j["attempt"], 1);
    assert_eq!(j["organizationId"], t.org);
    assert_eq!(j["projectId"], t.project);
    assert_eq!(j["pageImportId"], t.page_import.as_str());
    assert_eq!(j["figmaFileKey"], "FILEkey123");
    assert_eq!(j["screenId"], "screen-1");
    assert_eq!(j["placementTarget"], "page:1");
    assert_eq!(j["hasResult"], false);
    assert_eq!(j["createdBy"], t.sub.as_str());
    let keys: Vec<&String> = j.as_object().unwrap().keys().collect();
    let mut expected = vec![
        "code2desId",
        "organizationId",
        "projectId",
        "pageImportId",
        "figmaFileKey",
        "screenId",
        "placementTarget",
        "status",
        "attempt",
        "warningCount",
        "maxAttempts",
        "progress",
        "errorMessage",
        "hasResult",
        "resultExpiresAt",
        "materializedAt",
        "materializedNodeId",
        "createdAt",
        "updatedAt",
        "createdBy",
        "updatedBy",
    ];
    expected.sort();
    let mut got: Vec<&str> = keys.iter().map(|k| k.as_str()).collect();
    got.sort();
    assert_eq!(got, expected, "job JSON has exactly the SPEC fields");

    let row = app.job_row(id).await;
    let nonce: String = row.get("nonce");
    assert_eq!(nonce.len(), 64, "256-bit nonce, hex");
    assert_eq!(row.get::<_, String>("status_label"), "0");
    let m = app.manifest(id).await;
    assert_eq!(m.version, 1);
    assert_eq!(m.code2des_id, id);
    assert_eq!(m.attempt, 1);
    assert_eq!(m.nonce, nonce);
    assert_eq!((m.organization_id, m.project_id), (t.org, t.project));
    assert_eq!(m.page_import_id, t.page_import);
    assert_eq!(m.capture_url.as_deref(), Some("s3://code2des-artifacts/captures/x.json"));
    assert_eq!(m.figma_file_key, "FILEkey123");
    assert_eq!(m.placement_target.as_deref(), Some("page:1"));
    assert_eq!(m.callback_url, CALLBACK);
    assert_eq!(m.result_prefix, format!("s3://{BUCKET}/code2des/{id}/1/"));
    assert!(!a.json.to_string().contains(&nonce), "the nonce never reaches the user API");
}

#[tokio::test]
async fn retrigger_of_the_same_page_import_creates_a_new_row() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let a = app.new_job(&t).await;
    app.complete(&a).await;
    let b = app.new_job(&t).await;
    assert_ne!(a, b);
    assert_eq!(app.count_jobs().await, 2);
    assert_eq!(app.get(&t, Some(&t.sub), &a).await.json["status"], "completed", "earlier job is kept");
}

#[tokio::test]
async fn page_import_not_completed_is_409_and_writes_nothing() {
    let app = TestApp::new().await;
    for status in ["0", "2"] {
        let t = app.tenant_with(status).await;
        let a = app.trigger(&t).await;
        assert_eq!((a.status, a.code()), (409, "page_import_not_completed"), "{a:?}");
    }
    assert_eq!(app.count_jobs().await, 0);
}

#[tokio::test]
async fn trigger_without_identity_is_401() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let a = app.trigger_raw(trigger_event(&t, None, default_body(&t), None)).await;
    assert_eq!((a.status, a.code()), (401, "unauthorized"));
    let long = "x".repeat(51);
    let a = app.trigger_raw(trigger_event(&t, Some(&long), default_body(&t), None)).await;
    assert_eq!(a.status, 401);
    assert_eq!(app.count_jobs().await, 0);
}

#[tokio::test]
async fn trigger_outside_the_callers_scope_is_404() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let other = app.tenant().await;
    // Not a member.
    let a = app.trigger_raw(trigger_event(&t, Some(&other.sub), default_body(&t), None)).await;
    assert_eq!(a.status, 404, "{a:?}");
    // Member, but the page import belongs to another tenant.
    let a = app.trigger_raw(trigger_event(&t, Some(&t.sub), default_body(&other), None)).await;
    assert_eq!(a.status, 404);
    // Project of another organization under this organization's path.
    let mut mixed = t.clone();
    mixed.project = other.project;
    let a = app.trigger_raw(trigger_event(&mixed, Some(&t.sub), default_body(&t), None)).await;
    assert_eq!(a.status, 404);
    // Unknown page import.
    let a = app
        .trigger_raw(trigger_event(
            &t,
            Some(&t.sub),
            json!({"pageImportId": "nope", "figmaFileKey": "f", "screenId": "s"}),
            None,
        ))
        .await;
    assert_eq!(a.status, 404);
    assert_eq!(app.count_jobs().await, 0);
}

#[tokio::test]
async fn soft_deleted_organization_project_or_page_import_count_as_absent() {
    let app = TestApp::new().await;
    for table in ["organization", "project", "page_import"] {
        let t = app.tenant().await;
        let id = match table {
            "organization" => t.org.to_string(),
            "project" => t.project.to_string(),
            _ => format!("'{}'", t.page_import),
        };
        app.sql(&format!("UPDATE {table} SET deleted_at = now() WHERE id = {id}")).await;
        let a = app.trigger(&t).await;
        assert_eq!(a.status, 404, "{table}: {a:?}");
    }
    assert_eq!(app.count_jobs().await, 0);
}

#[tokio::test]
async fn idempotency_key_replays_the_first_job_and_refuses_another_body() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let first = app.trigger_raw(trigger_event(&t, Some(&t.sub), default_body(&t), Some("k-1"))).await;
    assert_eq!(first.status, 202);
    // Same body, other key order and spacing: the same request.
    let raw =
        format!(r#"{{ "screenId":"screen-1", "figmaFileKey":"FILEkey123", "pageImportId":"{}" }}"#, t.page_import);
    let mut ev = trigger_event(&t, Some(&t.sub), Value::Null, Some("k-1"));
    ev["body"] = json!(raw);
    let again = app.trigger_raw(ev).await;
    assert_eq!(again.status, 202);
    assert_eq!(again.json["code2desId"], first.json["code2desId"]);
    assert_eq!(again.headers["location"], first.headers["location"]);
    assert_eq!(app.count_jobs().await, 1);

    let mut other = default_body(&t);
    other["screenId"] = json!("screen-2");
    let a = app.trigger_raw(trigger_event(&t, Some(&t.sub), other, Some("k-1"))).await;
    assert_eq!((a.status, a.code()), (422, "idempotency_key_reused"));
    assert_eq!(app.count_jobs().await, 1);

    // Another caller's identical key is their own.
    let colleague = "colleague-sub";
    app.add_member(t.org, colleague).await;
    let a = app.trigger_raw(trigger_event(&t, Some(colleague), default_body(&t), Some("k-1"))).await;
    assert_eq!(a.status, 202);
    assert_ne!(a.json["code2desId"], first.json["code2desId"]);
    // No key: always a new job.
    app.trigger(&t).await;
    assert_eq!(app.count_jobs().await, 3);
}

/// A deleted job's Idempotency-Key (issue 29): the same request again is told the job was
/// deleted (410 `gone`), not that the page import is missing; the key stays claimed, so no second
/// job appears; another body with it is still 422; a new key triggers anew.
#[tokio::test]
async fn the_idempotency_key_of_a_deleted_job_answers_410_and_creates_nothing() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let first = app.trigger_raw(trigger_event(&t, Some(&t.sub), default_body(&t), Some("k-del"))).await;
    assert_eq!(first.status, 202);
    let id = first.json["code2desId"].as_str().unwrap().to_owned();
    assert_eq!(app.delete(&t, Some(&t.sub), &id).await.status, 204);
    let again = app.trigger_raw(trigger_event(&t, Some(&t.sub), default_body(&t), Some("k-del"))).await;
    assert_eq!((again.status, again.code()), (410, "gone"), "{again:?}");
    assert!(again.json["error"]["message"].as_str().unwrap().contains("deleted"));
    assert_eq!(app.count_jobs().await, 1);
    let mut other = default_body(&t);
    other["screenId"] = json!("screen-2");
    let reused = app.trigger_raw(trigger_event(&t, Some(&t.sub), other, Some("k-del"))).await;
    assert_eq!((reused.status, reused.code()), (422, "idempotency_key_reused"));
    let fresh = app.trigger_raw(trigger_event(&t, Some(&t.sub), default_body(&t), Some("k-new"))).await;
    assert_eq!(fresh.status, 202);
    assert_eq!(app.count_jobs().await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_triggers_with_one_idempotency_key_create_one_job() {
    let app = std::sync::Arc::new(TestApp::new().await);
    let t = app.tenant().await;
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let (app, t) = (app.clone(), t.clone());
        tasks.push(tokio::spawn(async move {
            app.trigger_raw(trigger_event(&t, Some(&t.sub), default_body(&t), Some("race-key"))).await
        }));
    }
    let mut ids = std::collections::HashSet::new();
    for task in tasks {
        let a = task.await.unwrap();
        assert_eq!(a.status, 202, "{a:?}");
        ids.insert(a.json["code2desId"].as_str().unwrap().to_owned());
    }
    assert_eq!(ids.len(), 1, "every racing retry answers the same job");
    assert_eq!(app.count_jobs().await, 1);
}

#[tokio::test]
async fn bad_input_on_every_field_is_400_naming_it_and_writes_nothing() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let long = "x".repeat(256);
    let mut cases: Vec<(Value, &str)> = Vec::new();
    for field in ["pageImportId", "figmaFileKey", "screenId"] {
        for bad in [Value::Null, json!(""), json!(long), json!("a\u{0}b"), json!("tab\there"), json!(12), json!(["x"])]
        {
            let mut b = default_body(&t);
            if bad.is_null() {
                b.as_object_mut().unwrap().remove(field);
            } else {
                b[field] = bad;
            }
            cases.push((b, field));
        }
    }
    for bad in [json!(""), json!(long), json!("\u{1b}[31m"), json!(1), json!({})] {
        let mut b = default_body(&t);
        b["placementTarget"] = bad;
        cases.push((b, "placementTarget"));
    }
    for (body, field) in cases {
        app.trigger_raw(trigger_event(&t, Some(&t.sub), body, None)).await.assert_invalid(field);
    }
    for raw in ["", "not json", "[1,2]", "\"str\"", "{\"pageImportId\":"] {
        let mut ev = trigger_event(&t, Some(&t.sub), Value::Null, None);
        ev["body"] = json!(raw);
        app.trigger_raw(ev).await.assert_invalid("body");
    }
    for (org, proj, field) in [
        ("0", "1", "organizationId"),
        ("-1", "1", "organizationId"),
        ("abc", "1", "organizationId"),
        ("2147483648", "1", "organizationId"),
        ("1", "0", "projectId"),
        ("1", "1.5", "projectId"),
    ] {
        let mut ev = trigger_event(&t, Some(&t.sub), default_body(&t), None);
        ev["pathParameters"]["organizationId"] = json!(org);
        ev["pathParameters"]["projectId"] = json!(proj);
        app.trigger_raw(ev).await.assert_invalid(field);
    }
    for key in ["", &"k".repeat(256), "ключ"] {
        let ev = trigger_event(&t, Some(&t.sub), default_body(&t), Some(key));
        app.trigger_raw(ev).await.assert_invalid("Idempotency-Key");
    }
    assert_eq!(app.count_jobs().await, 0);
    let listed = app.s3.list_objects_v2().bucket(BUCKET).send().await.unwrap();
    assert_eq!(listed.key_count(), Some(0), "no manifest written");
}

#[tokio::test]
async fn body_over_64_kib_is_413_before_parsing() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let mut ev = trigger_event(&t, Some(&t.sub), Value::Null, None);
    ev["body"] = json!("x".repeat(64 * 1024 + 1));
    let a = app.trigger_raw(ev).await;
    assert_eq!((a.status, a.code()), (413, "payload_too_large"));
    let mut body = default_body(&t);
    body["padding"] = json!("y".repeat(64 * 1024 - 200));
    let a = app.trigger_raw(trigger_event(&t, Some(&t.sub), body, None)).await;
    assert_eq!(a.status, 202, "just under the limit is fine: {a:?}");
}
