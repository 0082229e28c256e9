use std::sync::Arc;

use serde_json::{json, Value};

use crate::helpers::*;

async fn job_and_nonce(app: &TestApp) -> (Tenant, String, String) {
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    let nonce = app.manifest(&id).await.nonce;
    (t, id, nonce)
}

fn completed(id: &str, nonce: &str) -> Value {
    json!({"code2des_id": id, "attempt": 1, "nonce": nonce, "status": "completed",
           "result_url": format!("s3://{BUCKET}/code2des/{id}/1/result.json"), "warning_count": 3})
}

fn failed(id: &str, nonce: &str, msg: &str) -> Value {
    json!({"code2des_id": id, "attempt": 1, "nonce": nonce, "status": "failed", "error_message": msg})
}

#[tokio::test]
async fn a_signed_webhook_finishes_the_job_once() {
    let app = TestApp::new().await;
    let (t, id, nonce) = job_and_nonce(&app).await;
    let a = app.webhook(&completed(&id, &nonce)).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.json, json!({"code2des_id": id, "status": "completed"}));
    let row = app.job_row(&id).await;
    assert_eq!(row.get::<_, String>("status_label"), "1");
    assert_eq!(
        row.get::<_, Option<String>>("result_url").unwrap(),
        format!("s3://{BUCKET}/code2des/{id}/1/result.json")
    );
    assert_eq!(row.get::<_, Option<i32>>("warning_count"), Some(3));
    let j = app.get(&t, Some(&t.sub), &id).await.json;
    assert_eq!(
        (j["status"].as_str(), j["warningCount"].as_i64(), j["hasResult"].as_bool()),
        (Some("completed"), Some(3), Some(true))
    );
}

#[tokio::test]
async fn webhook_signature_is_required_fresh_and_exact() {
    let app = TestApp::new().await;
    let (_, id, nonce) = job_and_nonce(&app).await;
    let raw = serde_json::to_vec(&completed(&id, &nonce)).unwrap();
    let sig = |secret: &[u8], t: i64, body: &[u8]| shared::domain::signature::header_value(secret, t, body);
    let cases = vec![
        None,
        Some(String::new()),
        Some("garbage".to_owned()),
        Some(sig(b"wrong-secret", now(), &raw)),
        // Well outside the 300 s window, so a slow test run cannot bring one back inside it.
        Some(sig(SECRET.as_bytes(), now() - 330, &raw)),
        Some(sig(SECRET.as_bytes(), now() + 330, &raw)),
        Some(sig(SECRET.as_bytes(), now(), b"{}")),
        Some(format!("t={},v1={}", now(), "0".repeat(64))),
        Some(sig(SECRET.as_bytes(), now(), &raw).replace("v1=", "v0=")),
    ];
    for header in cases {
        let a = app.webhook_raw(&raw, header.clone()).await;
        assert_eq!((a.status, a.code()), (401, "unauthorized"), "{header:?}");
    }
    // A body changed after signing.
    let mut tampered = raw.clone();
    tampered.extend_from_slice(b" ");
    let a = app.webhook_raw(&tampered, Some(sig(SECRET.as_bytes(), now(), &raw))).await;
    assert_eq!(a.status, 401);
    assert_eq!(app.job_row(&id).await.get::<_, String>("status_label"), "0", "nothing changed");
    // Within the window both ways, and with a rotation's second v1 entry.
    let a = app
        .webhook_raw(
            &raw,
            Some(format!(
                "{},v1={}",
                sig(b"old-secret", now() - 290, &raw),
                shared::domain::signature::sign(SECRET.as_bytes(), now() - 290, &raw)
            )),
        )
        .await;
    assert_eq!(a.status, 200, "{a:?}");
}

#[tokio::test]
async fn webhook_body_over_64_kib_is_413() {
    let app = TestApp::new().await;
    let (_, id, nonce) = job_and_nonce(&app).await;
    let a = app.webhook(&failed(&id, &nonce, &"x".repeat(70 * 1024))).await;
    assert_eq!((a.status, a.code()), (413, "payload_too_large"));
    assert_eq!(app.job_row(&id).await.get::<_, String>("status_label"), "0");
}

#[tokio::test]
async fn completed_needs_a_result_url_under_the_jobs_own_prefix() {
    let app = TestApp::new().await;
    let (t, id, nonce) = job_and_nonce(&app).await;
    let other = app.new_job(&t).await;
    for url in [
        Value::Null,
        json!(format!("s3://other-bucket/code2des/{id}/1/result.json")),
        json!(format!("s3://{BUCKET}/code2des/{other}/1/result.json")),
        json!(format!("s3://{BUCKET}/code2des/{id}/2/result.json")),
        json!(format!("s3://{BUCKET}/code2des/{id}/1/../../{other}/1/result.json")),
        json!(format!("s3://{BUCKET}/code2des/{id}/1/")),
        json!(format!("https://{BUCKET}.s3.amazonaws.com/code2des/{id}/1/result.json")),
        json!(12),
    ] {
        let mut b = completed(&id, &nonce);
        b["result_url"] = url.clone();
        app.webhook(&b).await.assert_invalid("result_url");
    }
    assert_eq!(app.job_row(&id).await.get::<_, String>("status_label"), "0");
}

#[tokio::test]
async fn webhook_fields_are_validated() {
    let app = TestApp::new().await;
    let (_, id, nonce) = job_and_nonce(&app).await;
    for (field, bad) in [
        ("code2des_id", json!("nope")),
        ("code2des_id", Value::Null),
        ("attempt", json!(0)),
        ("attempt", json!("1")),
        ("attempt", json!(1.5)),
        ("nonce", json!("")),
        ("nonce", Value::Null),
        ("status", json!("running")),
        ("warning_count", json!(-1)),
        ("warning_count", json!("3")),
        ("error_message", json!(5)),
    ] {
        let mut b = failed(&id, &nonce, "m");
        b[field] = bad;
        app.webhook(&b).await.assert_invalid(field);
    }
    for raw in [&b"not json"[..], b"[]", b""] {
        let a = app.webhook_raw(raw, Some(sign(raw))).await;
        a.assert_invalid("body");
    }
}

#[tokio::test]
async fn webhook_for_an_unknown_job_is_404() {
    let app = TestApp::new().await;
    let id = uuid::Uuid::now_v7().to_string();
    let a = app.webhook(&completed(&id, "whatever")).await;
    assert_eq!((a.status, a.code()), (404, "not_found"));
}

#[tokio::test]
async fn webhook_with_stale_attempt_or_wrong_nonce_is_fenced() {
    let app = TestApp::new().await;
    let (_, id, nonce) = job_and_nonce(&app).await;
    let mut b = completed(&id, "wrong-nonce");
    let a = app.webhook(&b).await;
    assert_eq!((a.status, a.code()), (409, "fenced"));
    b = completed(&id, &nonce);
    b["attempt"] = json!(2);
    b["result_url"] = json!(format!("s3://{BUCKET}/code2des/{id}/2/result.json"));
    let a = app.webhook(&b).await;
    assert_eq!((a.status, a.code()), (409, "fenced"));
    assert_eq!(app.job_row(&id).await.get::<_, String>("status_label"), "0");
    // After the real outcome, a wrong nonce is still fenced (not "already terminal").
    app.webhook(&completed(&id, &nonce)).await;
    assert_eq!(app.webhook(&failed(&id, "wrong", "x")).await.code(), "fenced");
}

#[tokio::test]
async fn webhook_for_a_soft_deleted_job_is_410() {
    let app = TestApp::new().await;
    let (_, id, nonce) = job_and_nonce(&app).await;
    app.sql(&format!("UPDATE code2des SET deleted_at = now(), deleted_by = 'ops' WHERE id = '{id}'")).await;
    let a = app.webhook(&completed(&id, &nonce)).await;
    assert_eq!((a.status, a.code()), (410, "gone"));
    assert_eq!(app.job_row(&id).await.get::<_, String>("status_label"), "0");
}

#[tokio::test]
async fn replay_of_the_same_outcome_is_200_and_another_outcome_is_409() {
    let app = TestApp::new().await;
    let (_, id, nonce) = job_and_nonce(&app).await;
    let body = completed(&id, &nonce);
    assert_eq!(app.webhook(&body).await.status, 200);
    let updated_at: chrono::DateTime<chrono::Utc> = app.job_row(&id).await.get("updated_at");
    let replay = app.webhook(&body).await;
    assert_eq!(replay.status, 200, "{replay:?}");
    assert_eq!(
        app.job_row(&id).await.get::<_, chrono::DateTime<chrono::Utc>>("updated_at"),
        updated_at,
        "a replay writes nothing"
    );
    let a = app.webhook(&failed(&id, &nonce, "late failure")).await;
    assert_eq!((a.status, a.code()), (409, "already_terminal"));
    let mut other = body.clone();
    other["warning_count"] = json!(9);
    assert_eq!(app.webhook(&other).await.code(), "already_terminal");
    let row = app.job_row(&id).await;
    assert_eq!(
        (row.get::<_, String>("status_label"), row.get::<_, Option<i32>>("warning_count")),
        ("1".into(), Some(3))
    );
}

#[tokio::test]
async fn failure_message_is_stripped_of_control_characters_and_capped() {
    let app = TestApp::new().await;
    let (t, id, nonce) = job_and_nonce(&app).await;
    let msg = format!("line1\nline2\u{0}\u{1b}[31m{}", "é".repeat(3000));
    assert_eq!(app.webhook(&failed(&id, &nonce, &msg)).await.status, 200);
    let stored: String = app.job_row(&id).await.get::<_, Option<String>>("error_message").unwrap();
    assert!(stored.starts_with("line1line2[31m"), "{stored:.40}");
    assert_eq!(stored.chars().count(), 2000);
    assert!(!stored.chars().any(char::is_control));
    let j = app.get(&t, Some(&t.sub), &id).await.json;
    assert_eq!(j["status"], "failed");
    assert_eq!(j["errorMessage"].as_str().unwrap(), stored);
    // The same report again is a harmless replay.
    assert_eq!(app.webhook(&failed(&id, &nonce, &msg)).await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_webhooks_make_exactly_one_transition() {
    let app = Arc::new(TestApp::new().await);
    let (_, id, nonce) = job_and_nonce(&app).await;
    // Count real transitions in the database itself, not in our answers.
    app.batch(
        "CREATE TABLE transitions (id varchar(255), from_status text, to_status text); \
         CREATE FUNCTION log_transition() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
           INSERT INTO transitions VALUES (NEW.id, OLD.status::text, NEW.status::text); RETURN NEW; END $$; \
         CREATE TRIGGER log_transition AFTER UPDATE ON code2des FOR EACH ROW \
           WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION log_transition();",
    )
    .await;
    app.widen_race_window(300).await;
    let mut bodies = Vec::new();
    for i in 0..48 {
        bodies.push(match i % 4 {
            0 => completed(&id, &nonce),
            1 => failed(&id, &nonce, "worker gave up"),
            2 => completed(&id, "stale-nonce"),
            _ => {
                let mut b = completed(&id, &nonce);
                b["warning_count"] = json!(i);
                b
            }
        });
    }
    let barrier = Arc::new(tokio::sync::Barrier::new(bodies.len()));
    let mut tasks = Vec::new();
    for b in bodies {
        let (app, barrier) = (app.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let a = app.webhook(&b).await;
            (b, a)
        }));
    }
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    let row = app.job_row(&id).await;
    let final_status = row.get::<_, String>("status_label");
    let final_warnings: Option<i32> = row.get("warning_count");
    let final_message: Option<String> = row.get("error_message");
    assert_ne!(final_status, "0", "some webhook won");
    let mut applied = 0;
    for (b, a) in &answers {
        if b["nonce"] == "stale-nonce" {
            assert_eq!((a.status, a.code()), (409, "fenced"));
            continue;
        }
        let same = match b["status"].as_str().unwrap() {
            "completed" => final_status == "1" && b["warning_count"].as_i64() == final_warnings.map(i64::from),
            _ => final_status == "2" && final_message.as_deref() == b["error_message"].as_str(),
        };
        if same {
            assert_eq!(a.status, 200, "the winner and its replays: {a:?}");
            applied += 1;
        } else {
            assert_eq!((a.status, a.code()), (409, "already_terminal"), "{b} → {a:?}");
        }
    }
    assert!(applied >= 1);
    assert_eq!(app.scalar_i64("SELECT count(*) FROM transitions").await, 1, "exactly one transition");
}
