//! The committed `events/*.json` are the ones `sam local invoke -e` uses; these tests keep
//! them valid for the handlers, so the two cannot drift (tests/routes.rs holds them to the route
//! table).

use serde_json::Value;

use crate::helpers::*;

#[test]
fn the_webhook_event_is_signed_with_the_documented_test_secret() {
    let ev = event("webhook.json");
    let body = ev["body"].as_str().unwrap();
    let header = ev["headers"]["code2des-signature"].as_str().unwrap();
    let t: i64 = header.split(',').find_map(|p| p.strip_prefix("t=")).unwrap().parse().unwrap();
    shared::domain::signature::verify(SECRET.as_bytes(), Some(header), body.as_bytes(), t)
        .expect("valid at its own timestamp");
}

#[tokio::test]
async fn the_event_files_drive_the_handlers_unchanged_but_for_ids() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    // trigger.json, with this tenant's ids in path and body.
    let mut ev = user_event("trigger.json", &t, Some(&t.sub), None, None);
    let mut body: Value = serde_json::from_str(ev["body"].as_str().unwrap()).unwrap();
    body["pageImportId"] = t.page_import.clone().into();
    ev["body"] = body.to_string().into();
    let a = app.trigger_raw(ev).await;
    assert_eq!(a.status, 202, "{a:?}");
    let id = a.json["code2desId"].as_str().unwrap().to_owned();
    app.complete(&id).await;
    // lifecycle-list.json keeps its query string: figmaFileKey=FILEkey123&status=completed&limit=20.
    let list = user_event("lifecycle-list.json", &t, Some(&t.sub), None, None);
    let a = Answer::from(code2des_lifecycle::handler::handle(&app.lifecycle, to_request(&list)).await);
    assert_eq!((a.status, a.json["items"][0]["code2desId"].as_str()), (200, Some(id.as_str())));
    assert_eq!(app.get(&t, Some(&t.sub), &id).await.status, 200);
    assert_eq!(app.result(&t, Some(&t.sub), &id).await.status, 200);
    assert_eq!(app.place(&t, Some(&t.sub), &id, "12:34").await.status, 200);
}

#[tokio::test]
async fn the_webhook_event_reaches_the_fence() {
    let app = TestApp::new().await;
    // Re-signed now: the committed signature is older than the 300 s window.
    let ev = event("webhook.json");
    let body = ev["body"].as_str().unwrap().as_bytes().to_vec();
    let a = app.webhook_raw(&body, Some(sign(&body))).await;
    assert_eq!((a.status, a.code()), (404, "not_found"), "signature and body accepted; no such job here");
}
