use std::collections::HashSet;
use std::sync::Arc;

use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn first_placement_wins_and_later_calls_return_it_unchanged() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    app.complete(&id).await;
    let first = app.place(&t, Some(&t.sub), &id, "12:34").await;
    assert_eq!(first.status, 200, "{first:?}");
    assert_eq!(first.json["materializedNodeId"], "12:34");
    let at = first.json["materializedAt"].as_str().unwrap().to_owned();
    for node in ["12:34", "56:78", "I1:2;3:4"] {
        let again = app.place(&t, Some(&t.sub), &id, node).await;
        assert_eq!(again.status, 200);
        assert_eq!(again.json["materializedNodeId"], "12:34");
        assert_eq!(again.json["materializedAt"], at.as_str());
    }
    assert_eq!(app.get(&t, Some(&t.sub), &id).await.json["materializedNodeId"], "12:34");
}

#[tokio::test]
async fn placement_needs_a_completed_job() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let processing = app.new_job(&t).await;
    let failed = app.new_job(&t).await;
    app.fail(&failed, "nope").await;
    for id in [&processing, &failed] {
        let a = app.place(&t, Some(&t.sub), id, "1:2").await;
        assert_eq!((a.status, a.code()), (409, "job_not_completed"), "{a:?}");
    }
    let n = app.scalar_i64("SELECT count(*) FROM code2des WHERE materialized_node_id IS NOT NULL").await;
    assert_eq!(n, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_placements_all_answer_the_same_stored_root() {
    let app = Arc::new(TestApp::new().await);
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    app.complete(&id).await;
    app.widen_race_window(300).await;
    let barrier = Arc::new(tokio::sync::Barrier::new(48));
    let mut tasks = Vec::new();
    for i in 0..48 {
        let (app, t, id, barrier) = (app.clone(), t.clone(), id.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            app.place(&t, Some(&t.sub), &id, &format!("{i}:{}", i + 100)).await
        }));
    }
    let mut roots = HashSet::new();
    let mut times = HashSet::new();
    for task in tasks {
        let a = task.await.unwrap();
        assert_eq!(a.status, 200, "{a:?}");
        roots.insert(a.json["materializedNodeId"].as_str().expect("every answer names the root").to_owned());
        times.insert(a.json["materializedAt"].as_str().unwrap().to_owned());
    }
    assert_eq!(roots.len(), 1, "all answers name one root: {roots:?}");
    assert_eq!(times.len(), 1);
    let row = app.job_row(&id).await;
    assert_eq!(row.get::<_, Option<String>>("materialized_node_id").as_ref(), roots.iter().next());
}

/// A placement that starts while the completion is being written: it waits for the row, and
/// then sees the job completed. Its statement's snapshot predates the completion, so an UPDATE
/// that checked the status on that snapshot would place nothing and answer 200 with no root
/// (what the load test once caught); the status is the locked row's.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_placement_racing_the_completion_places_its_root() {
    let app = Arc::new(TestApp::new().await);
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    let m = app.manifest(&id).await;
    let key = format!("code2des/{id}/1/images/hero.png");
    let artifact = artifact(&id, &m.nonce, json!({"hero": {"key": key, "mime_type": "image/png"}}), &["hero"]);
    let report = app.upload_result(&id, &artifact, &[(&key, png(8, 8))]).await;
    // Every UPDATE of the job holds its row 800 ms: the completion is still writing when the
    // placement starts.
    app.widen_race_window(800).await;
    let completing = {
        let app = app.clone();
        tokio::spawn(async move { app.webhook(&report).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let placed = app.place(&t, Some(&t.sub), &id, "7:8").await;
    assert_eq!(completing.await.unwrap().status, 200);
    assert_eq!(placed.status, 200, "{placed:?}");
    assert_eq!(placed.json["materializedNodeId"], "7:8", "{placed:?}");
    let row = app.job_row(&id).await;
    assert_eq!(row.get::<_, Option<String>>("materialized_node_id").as_deref(), Some("7:8"));
}

#[tokio::test]
async fn placement_input_is_validated_and_scoped() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let other = app.tenant().await;
    let id = app.new_job(&t).await;
    app.complete(&id).await;
    for bad in ["", "12", "abc", "1:2:3", "I1:2", "12:34;", " 12:34", "12:34\n"] {
        app.place(&t, Some(&t.sub), &id, bad).await.assert_invalid("nodeId");
    }
    let ev = user_event("placement.json", &t, Some(&t.sub), Some(&id), Some("{}".into()));
    let a = Answer::from(code2des_placement::handler::handle(&app.placement, to_request(&ev)).await);
    a.assert_invalid("nodeId");
    assert_eq!(app.place(&t, Some(&other.sub), &id, "1:2").await.status, 404);
    assert_eq!(app.place(&other, Some(&other.sub), &id, "1:2").await.status, 404);
    assert_eq!(app.place(&t, None, &id, "1:2").await.status, 401);
    app.place(&t, Some(&t.sub), "nope", "1:2").await.assert_invalid("code2desId");
    let n = app.scalar_i64("SELECT count(*) FROM code2des WHERE materialized_node_id IS NOT NULL").await;
    assert_eq!(n, 0, "nothing written by refused calls");
}
