use std::collections::HashSet;

use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn lifecycle_get_returns_the_job_without_nonce_or_s3_location() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    app.complete(&id).await;
    let a = app.get(&t, Some(&t.sub), &id).await;
    assert_eq!(a.status, 200);
    assert_eq!(a.json["status"], "completed");
    assert_eq!(a.json["hasResult"], true);
    assert_eq!(a.json["warningCount"], 2);
    let text = a.json.to_string();
    let row = app.job_row(&id).await;
    assert!(!text.contains(&row.get::<_, String>("nonce")));
    assert!(!text.contains("s3://") && !text.contains("code2des/"), "{text}");
    assert!(a.json.get("nonce").is_none() && a.json.get("resultUrl").is_none());
}

#[tokio::test]
async fn lifecycle_get_outside_scope_is_404_without_existence_leak() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let other = app.tenant().await;
    let id = app.new_job(&t).await;
    let unknown = uuid::Uuid::now_v7().to_string();
    let missing = app.get(&t, Some(&t.sub), &unknown).await;
    assert_eq!(missing.status, 404);
    let cases = [
        app.get(&t, Some(&other.sub), &id).await,     // not a member
        app.get(&other, Some(&other.sub), &id).await, // job of another tenant
    ];
    for a in cases {
        assert_eq!(a.status, 404);
        assert_eq!(a.json["error"], missing.json["error"], "same body as a job that does not exist");
    }
    let mut wrong_project = t.clone();
    wrong_project.project = other.project;
    assert_eq!(app.get(&wrong_project, Some(&t.sub), &id).await.status, 404);
    app.sql(&format!("UPDATE code2des SET deleted_at = now(), deleted_by = 'x' WHERE id = '{id}'")).await;
    assert_eq!(app.get(&t, Some(&t.sub), &id).await.json["error"], missing.json["error"]);
}

#[tokio::test]
async fn lifecycle_get_with_malformed_ids_is_400() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    for bad in ["not-a-uuid", "0192f1a47c3e7b2a9d415e6f7a8b9c0d", "{0192f1a4-7c3e-7b2a-9d41-5e6f7a8b9c0d}"] {
        app.get(&t, Some(&t.sub), bad).await.assert_invalid("code2desId");
    }
    assert_eq!(app.get(&t, None, &uuid::Uuid::now_v7().to_string()).await.status, 401);
}

#[tokio::test]
async fn list_is_newest_first_and_pages_cover_every_job_once() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let mut made = Vec::new();
    for _ in 0..7 {
        made.push(app.new_job(&t).await);
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut q = vec![("limit", "3".to_owned())];
        if let Some(c) = &cursor {
            q.push(("cursor", c.clone()));
        }
        let q: Vec<(&str, &str)> = q.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let a = app.list(&t, Some(&t.sub), &q).await;
        assert_eq!(a.status, 200, "{a:?}");
        let items = a.json["items"].as_array().unwrap();
        assert!(items.len() <= 3);
        seen.extend(items.iter().map(|i| i["code2desId"].as_str().unwrap().to_owned()));
        match a.json["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => {
                assert!(a.json["nextCursor"].is_null());
                break;
            }
        }
    }
    made.reverse();
    assert_eq!(seen, made, "newest first, each exactly once");
    let all = app.list(&t, Some(&t.sub), &[]).await;
    assert_eq!(all.json["items"].as_array().unwrap().len(), 7, "default limit 50");
    assert!(all.json["nextCursor"].is_null());
}

#[tokio::test]
async fn list_filters_by_figma_file_key_and_status() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let a = app.new_job(&t).await;
    let b = app.new_job(&t).await;
    let mut body = default_body(&t);
    body["figmaFileKey"] = json!("OTHERfile");
    let c = app.trigger_raw(trigger_event(&t, Some(&t.sub), body, None)).await.json["code2desId"]
        .as_str()
        .unwrap()
        .to_owned();
    app.complete(&a).await;
    app.fail(&b, "boom").await;
    let ids = |r: &Answer| -> HashSet<String> {
        r.json["items"].as_array().unwrap().iter().map(|i| i["code2desId"].as_str().unwrap().to_owned()).collect()
    };
    let by_file = app.list(&t, Some(&t.sub), &[("figmaFileKey", "FILEkey123")]).await;
    assert_eq!(ids(&by_file), HashSet::from([a.clone(), b.clone()]));
    let done = app.list(&t, Some(&t.sub), &[("figmaFileKey", "FILEkey123"), ("status", "completed")]).await;
    assert_eq!(ids(&done), HashSet::from([a.clone()]));
    let failed = app.list(&t, Some(&t.sub), &[("status", "failed")]).await;
    assert_eq!(ids(&failed), HashSet::from([b.clone()]));
    let processing = app.list(&t, Some(&t.sub), &[("status", "processing")]).await;
    assert_eq!(ids(&processing), HashSet::from([c]));
    let none = app.list(&t, Some(&t.sub), &[("figmaFileKey", "nothing-here")]).await;
    assert_eq!((none.status, none.json["items"].as_array().unwrap().len()), (200, 0));
}

#[tokio::test]
async fn list_parameters_are_validated() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    for (k, v) in [
        ("limit", "0"),
        ("limit", "101"),
        ("limit", "x"),
        ("limit", ""),
        ("status", "done"),
        ("status", ""),
        ("figmaFileKey", ""),
        ("cursor", ""),
        ("cursor", "garbage"),
        ("cursor", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
    ] {
        app.list(&t, Some(&t.sub), &[(k, v)]).await.assert_invalid(k);
    }
    let long = "f".repeat(256);
    app.list(&t, Some(&t.sub), &[("figmaFileKey", &long)]).await.assert_invalid("figmaFileKey");
    app.list(&t, Some(&t.sub), &[("figmaFileKey", "a\u{1}")]).await.assert_invalid("figmaFileKey");
    app.list(&t, Some(&t.sub), &[("limit", "5"), ("limit", "6")]).await.assert_invalid("limit");
    assert_eq!(app.list(&t, Some(&t.sub), &[("limit", "100")]).await.status, 200);
}

#[tokio::test]
async fn a_cursor_for_another_query_or_tampered_is_400() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    for _ in 0..3 {
        app.new_job(&t).await;
    }
    let a = app.list(&t, Some(&t.sub), &[("limit", "1")]).await;
    let cursor = a.json["nextCursor"].as_str().unwrap().to_owned();
    // Bound to the filters it was issued for.
    app.list(&t, Some(&t.sub), &[("cursor", &cursor), ("status", "processing")]).await.assert_invalid("cursor");
    app.list(&t, Some(&t.sub), &[("cursor", &cursor), ("figmaFileKey", "FILEkey123")]).await.assert_invalid("cursor");
    // ...and to the project.
    let other = app.tenant().await;
    app.list(&other, Some(&other.sub), &[("cursor", &cursor)]).await.assert_invalid("cursor");
    // One flipped character.
    let mut chars: Vec<char> = cursor.chars().collect();
    let i = chars.len() / 2;
    chars[i] = if chars[i] == 'A' { 'B' } else { 'A' };
    let tampered: String = chars.into_iter().collect();
    app.list(&t, Some(&t.sub), &[("cursor", &tampered)]).await.assert_invalid("cursor");
    // A different limit with the same cursor is fine.
    assert_eq!(app.list(&t, Some(&t.sub), &[("cursor", &cursor), ("limit", "5")]).await.status, 200);
}

/// The cursor's key is no secret under IAM authentication (docs/SECURITY.md): someone who
/// knows it can forge any position. A forged cursor is still only a position: the statement
/// applies the caller's scope to every page, so it cannot reach another tenant's jobs.
#[tokio::test]
async fn a_forged_cursor_at_another_tenants_job_pages_only_the_callers_own() {
    let app = TestApp::new().await;
    let (victim, caller) = (app.tenant().await, app.tenant().await);
    let mine: HashSet<String> = [app.new_job(&caller).await, app.new_job(&caller).await].into();
    let theirs = [app.new_job(&victim).await, app.new_job(&victim).await];
    let row = &app.sql(&format!("SELECT created_at FROM code2des WHERE id = '{}'", theirs[1])).await[0];
    let at: chrono::DateTime<chrono::Utc> = row.get(0);
    let binding = shared::domain::cursor::Binding {
        organization_id: caller.org,
        project_id: caller.project,
        figma_file_key: None,
        status: None,
    };
    let id = shared::domain::ids::Code2desId::parse(&theirs[1]).unwrap();
    // Just after the victim's newest job: every job older than that is on the page.
    let forged =
        shared::domain::cursor::encode(&app.lifecycle.cursor_key, at + chrono::Duration::seconds(1), id, &binding);
    let page = app.list(&caller, Some(&caller.sub), &[("cursor", &forged)]).await;
    assert_eq!(page.status, 200, "{page:?}");
    let seen: HashSet<String> =
        page.json["items"].as_array().unwrap().iter().map(|j| j["code2desId"].as_str().unwrap().to_owned()).collect();
    assert!(seen.is_subset(&mine), "{seen:?}");
    assert!(theirs.iter().all(|t| !seen.contains(t)));
}

#[tokio::test]
async fn list_outside_scope_is_404() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let other = app.tenant().await;
    app.new_job(&t).await;
    assert_eq!(app.list(&t, Some(&other.sub), &[]).await.status, 404, "not a member");
    let mut mixed = t.clone();
    mixed.project = other.project;
    assert_eq!(app.list(&mixed, Some(&t.sub), &[]).await.status, 404, "project of another organization");
    assert_eq!(app.list(&t, None, &[]).await.status, 401);
    app.sql(&format!("UPDATE project SET deleted_at = now() WHERE id = {}", t.project)).await;
    assert_eq!(app.list(&t, Some(&t.sub), &[]).await.status, 404, "soft-deleted project");
}
