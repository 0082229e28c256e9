//! SPEC section 9: Standard Webhooks on the webhook route (`webhook-id`, `webhook-timestamp`,
//! `webhook-signature`; `v1` HMAC with a `whsec_` secret, `v1a` ed25519 with the worker's
//! `whpk_` key), the deprecated `Code2des-Signature` while `LEGACY_SIGNATURE` is on, and the
//! idempotent delivery of one `webhook-id`. Keys are generated at test time.

use std::sync::Arc;

use secrecy::SecretString;
use serde_json::{json, Value};
use shared::config::SecretSource;
use shared::domain::standard_webhooks as sw;

use crate::helpers::*;

/// A stack whose webhook holds a fresh `whsec_` secret and a fresh worker public key.
struct Keys {
    secret: String,
    signing: ed25519_dalek::SigningKey,
}

async fn app_with_keys(legacy: bool) -> (TestApp, Keys) {
    let keys = Keys { secret: sw::generate_secret(), signing: sw::generate_signing_key() };
    let (secret, public) = (keys.secret.clone(), sw::encode_public_key(&keys.signing.verifying_key()));
    let app = TestApp::with(move |s| {
        s.webhook_secret = SecretSource::Plain(SecretString::from(secret));
        s.webhook.public_key = SecretSource::Plain(SecretString::from(public));
        s.webhook.legacy_signature = legacy;
    })
    .await;
    (app, keys)
}

/// Sends `raw` with the given headers (name, value).
async fn send(app: &TestApp, raw: &[u8], headers: &[(&str, String)]) -> Answer {
    let mut ev = webhook_event(raw, None);
    for (k, v) in headers {
        ev["headers"][*k] = json!(v);
    }
    Answer::from(code2des_webhook::handler::handle(&app.webhook, to_request(&ev)).await)
}

fn standard(id: &str, ts: i64, signature: String) -> Vec<(&'static str, String)> {
    vec![(sw::ID_HEADER, id.to_owned()), (sw::TIMESTAMP_HEADER, ts.to_string()), (sw::SIGNATURE_HEADER, signature)]
}

fn v1a(keys: &Keys, id: &str, ts: i64, raw: &[u8]) -> Vec<(&'static str, String)> {
    standard(id, ts, sw::sign_v1a(&keys.signing, id, ts, raw))
}

fn v1(keys: &Keys, id: &str, ts: i64, raw: &[u8]) -> Vec<(&'static str, String)> {
    standard(id, ts, sw::sign_v1(&sw::parse_secret(&keys.secret).unwrap(), id, ts, raw))
}

fn msg_id() -> String {
    format!("msg_{}", uuid::Uuid::new_v4().simple())
}

async fn deliveries(app: &TestApp) -> i64 {
    app.scalar_i64("SELECT count(*) FROM code2des_webhook_delivery").await
}

#[tokio::test]
async fn v1_and_v1a_signatures_are_accepted_and_any_tampering_is_401() {
    let (app, keys) = app_with_keys(true).await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    let nonce = app.manifest(&id).await.nonce;
    let raw = serde_json::to_vec(&progress_body(&id, 1, &nonce, 10, "v1")).unwrap();
    let a = send(&app, &raw, &v1(&keys, &msg_id(), now(), &raw)).await;
    assert_eq!((a.status, &a.json), (200, &json!({"code2des_id": id, "status": "processing"})), "{a:?}");
    let raw = serde_json::to_vec(&progress_body(&id, 1, &nonce, 20, "v1a")).unwrap();
    assert_eq!(send(&app, &raw, &v1a(&keys, &msg_id(), now(), &raw)).await.status, 200);
    assert_eq!(app.get(&t, Some(&t.sub), &id).await.json["progress"]["stage"], "v1a");

    // Each of body, timestamp, id and signature tampered with: 401, and nothing stored.
    let raw = serde_json::to_vec(&progress_body(&id, 1, &nonce, 30, "tampered")).unwrap();
    let (wid, ts) = (msg_id(), now());
    for sign in [v1, v1a] {
        let good = sign(&keys, &wid, ts, &raw);
        let other_body = serde_json::to_vec(&progress_body(&id, 1, &nonce, 31, "tampered")).unwrap();
        let mut later = good.clone();
        later[1].1 = (ts + 1).to_string();
        let mut other_id = good.clone();
        other_id[0].1 = msg_id();
        let mut flipped = good.clone();
        let sig = &mut flipped[2].1;
        let last = sig.pop().unwrap();
        sig.push(if last == 'A' { 'B' } else { 'A' });
        let mut stale = sign(&keys, &wid, ts - 301, &raw);
        stale[1].1 = (ts - 301).to_string();
        let mut missing = good.clone();
        missing.remove(0);
        for (what, body, headers) in [
            ("body", &other_body, &good),
            ("timestamp", &raw, &later),
            ("id", &raw, &other_id),
            ("signature", &raw, &flipped),
            ("stale", &raw, &stale),
            ("missing webhook-id", &raw, &missing),
        ] {
            let a = send(&app, body, headers).await;
            assert_eq!((a.status, a.code()), (401, "unauthorized"), "{what}: {a:?}");
        }
    }
    // Another worker's key, or a secret of the right form that is not ours.
    let stranger = Keys { secret: sw::generate_secret(), signing: sw::generate_signing_key() };
    assert_eq!(send(&app, &raw, &v1a(&stranger, &wid, ts, &raw)).await.status, 401);
    assert_eq!(send(&app, &raw, &v1(&stranger, &wid, ts, &raw)).await.status, 401);
    // A rotation: the worker signs with a new key and the old one; any valid one passes.
    let rotating =
        format!("{} {}", sw::sign_v1a(&stranger.signing, &wid, ts, &raw), sw::sign_v1a(&keys.signing, &wid, ts, &raw));
    assert_eq!(send(&app, &raw, &standard(&wid, ts, rotating)).await.status, 200);
    assert_eq!(app.get(&t, Some(&t.sub), &id).await.json["progress"]["percent"], 30);
}

#[tokio::test]
async fn the_legacy_signature_is_accepted_and_counted_only_while_legacy_signature_is_on() {
    let capture = shared::obs::metrics::capture();
    let (app, keys) = app_with_keys(true).await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    let nonce = app.manifest(&id).await.nonce;
    let raw = serde_json::to_vec(&progress_body(&id, 1, &nonce, 10, "legacy")).unwrap();
    let legacy = shared::domain::signature::header_value(keys.secret.as_bytes(), now(), &raw);
    let agent = format!("legacy-worker/{}", uuid::Uuid::new_v4().simple());
    let a = send(&app, &raw, &[("code2des-signature", legacy.clone()), ("user-agent", agent.clone())]).await;
    assert_eq!(a.status, 200, "{a:?}");
    let counted = capture
        .records()
        .iter()
        .filter(|r| r["userAgent"] == agent.as_str())
        .map(|r| r["LegacySignatureUsed"].as_f64().unwrap_or(0.0))
        .sum::<f64>();
    assert_eq!(counted, 1.0, "LegacySignatureUsed names who sent it");
    // No webhook-id: nothing to remember.
    assert_eq!(deliveries(&app).await, 0);
    // A Standard Webhooks delivery is not counted as legacy.
    let raw2 = serde_json::to_vec(&progress_body(&id, 1, &nonce, 20, "standard")).unwrap();
    let mut h = v1a(&keys, &msg_id(), now(), &raw2);
    h.push(("user-agent", agent.clone()));
    assert_eq!(send(&app, &raw2, &h).await.status, 200);
    assert_eq!(capture.records().iter().filter(|r| r["userAgent"] == agent.as_str()).count(), 1);

    // LEGACY_SIGNATURE=false: the same header is refused; Standard Webhooks still pass.
    let (strict, keys) = app_with_keys(false).await;
    let t = strict.tenant().await;
    let id = strict.new_job(&t).await;
    let nonce = strict.manifest(&id).await.nonce;
    let raw = serde_json::to_vec(&progress_body(&id, 1, &nonce, 10, "legacy")).unwrap();
    let legacy = shared::domain::signature::header_value(keys.secret.as_bytes(), now(), &raw);
    let a = send(&strict, &raw, &[("code2des-signature", legacy)]).await;
    assert_eq!((a.status, a.code()), (401, "unauthorized"), "{a:?}");
    assert_eq!(send(&strict, &raw, &v1(&keys, &msg_id(), now(), &raw)).await.status, 200);
}

#[tokio::test]
async fn a_redelivery_is_answered_what_the_first_delivery_was_even_after_the_job_moved_on() {
    let (app, keys) = app_with_keys(true).await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    let nonce = app.manifest(&id).await.nonce;
    let deliver = |wid: &str, body: &Value| {
        let raw = serde_json::to_vec(body).unwrap();
        let h = v1a(&keys, wid, now(), &raw);
        let app = &app;
        async move { send(app, &raw, &h).await }
    };

    // A progress report, then the failure: both 200.
    let (p1, f1) = (msg_id(), msg_id());
    let progress = progress_body(&id, 1, &nonce, 40, "rendering");
    let failed = json!({"code2des_id": id, "attempt": 1, "nonce": nonce, "status": "failed", "error_message": "x"});
    let first_p = deliver(&p1, &progress).await;
    let first_f = deliver(&f1, &failed).await;
    assert_eq!((first_p.status, first_f.status), (200, 200));
    // The job moved on: failed, then retried (attempt 2). Without the stored answers the
    // progress report would be 409 and the failure 409 fenced.
    assert_eq!(app.retry(&t, &id, Some(1)).await.status, 202);
    for (wid, body, first) in [(&p1, &progress, &first_p), (&f1, &failed, &first_f)] {
        let again = deliver(wid, body).await;
        assert_eq!((again.status, &again.json), (first.status, &first.json), "{wid}");
    }
    // The same bodies under new ids are refused as the job is now.
    assert_eq!(deliver(&msg_id(), &failed).await.code(), "fenced");

    // A first answer that is a refusal is stored too: a completion of attempt 1 now is fenced,
    // and stays exactly that answer (its requestId included), whatever happens next.
    let late = msg_id();
    let refused = deliver(&late, &failed).await;
    assert_eq!((refused.status, refused.code()), (409, "fenced"));
    let n2 = app.manifest_at(&id, 2).await.nonce;
    let done = json!({"code2des_id": id, "attempt": 2, "nonce": n2, "status": "failed", "error_message": "y"});
    assert_eq!(deliver(&msg_id(), &done).await.status, 200);
    let again = deliver(&late, &failed).await;
    assert_eq!((again.status, &again.json), (409, &refused.json));

    // already_terminal stays already_terminal after the job is retried (not fenced), and 410
    // after a delete stays 410.
    let at = msg_id();
    let terminal = deliver(
        &at,
        &json!({"code2des_id": id, "attempt": 2, "nonce": n2, "status": "completed",
        "result_url": format!("s3://{BUCKET}/code2des/{id}/2/result.json")}),
    )
    .await;
    assert_eq!(terminal.code(), "already_terminal");
    assert_eq!(app.retry(&t, &id, Some(2)).await.status, 202);
    let terminal_again = deliver(
        &at,
        &json!({"code2des_id": id, "attempt": 2, "nonce": n2, "status": "completed",
        "result_url": format!("s3://{BUCKET}/code2des/{id}/2/result.json")}),
    )
    .await;
    assert_eq!((terminal_again.status, &terminal_again.json), (409, &terminal.json));

    let n3 = app.manifest_at(&id, 3).await.nonce;
    let gone_id = msg_id();
    assert_eq!(app.delete(&t, Some(&t.sub), &id).await.status, 204);
    let p3 = progress_body(&id, 3, &n3, 5, "x");
    let gone = deliver(&gone_id, &p3).await;
    assert_eq!(gone.status, 410);
    assert_eq!(deliver(&gone_id, &p3).await.json, gone.json);

    // What is stored: one row per id answered, none for the 401 or 400 a worker may get.
    let stored = deliveries(&app).await;
    assert_eq!(stored, 7, "p1, f1, the fenced new id, late, done, at, gone");
    let raw = br#"{"code2des_id":"nope"}"#;
    assert_eq!(send(&app, raw, &v1a(&keys, &msg_id(), now(), raw)).await.status, 400);
    assert_eq!(send(&app, raw, &v1a(&stranger_keys(), &msg_id(), now(), raw)).await.status, 401);
    assert_eq!(deliveries(&app).await, stored);
    // A purge of the job takes its deliveries with it.
    app.sql(&format!("DELETE FROM code2des WHERE id = '{id}'")).await;
    assert_eq!(deliveries(&app).await, 0);
}

fn stranger_keys() -> Keys {
    Keys { secret: sw::generate_secret(), signing: sw::generate_signing_key() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_webhook_id_delivered_concurrently_gets_one_answer_and_applies_once() {
    let (app, keys) = app_with_keys(true).await;
    let app = Arc::new(app);
    let keys = Arc::new(keys);
    let t = app.tenant().await;
    // Racing statements take their snapshots while the winner still holds the row.
    app.widen_race_window(20).await;
    for round in 0..6 {
        let id = app.new_job(&t).await;
        let nonce = app.manifest(&id).await.nonce;
        let report = if round % 2 == 0 {
            app.upload_result(&id, &artifact(&id, &nonce, json!({}), &[]), &[]).await
        } else {
            progress_body(&id, 1, &nonce, 50, "racing")
        };
        let raw = serde_json::to_vec(&report).unwrap();
        let wid = msg_id();
        let tasks: Vec<_> = (0..6)
            .map(|_| {
                let (app, keys, raw, wid) = (app.clone(), keys.clone(), raw.clone(), wid.clone());
                // Each a delivery of its own: its own timestamp and signature, the same id.
                tokio::spawn(async move { send(&app, &raw, &v1a(&keys, &wid, now(), &raw)).await })
            })
            .collect();
        let mut answers = Vec::new();
        for task in tasks {
            let a = task.await.unwrap();
            answers.push((a.status, a.json));
        }
        assert!(answers.iter().all(|a| a == &answers[0]), "round {round}: {answers:?}");
        assert_eq!(answers[0].0, 200, "round {round}: {answers:?}");
        let stored =
            app.scalar_i64(&format!("SELECT count(*) FROM code2des_webhook_delivery WHERE webhook_id = '{wid}'")).await;
        assert_eq!(stored, 1, "round {round}");
        let status: String = app.job_row(&id).await.get("status_label");
        assert_eq!(status, if round % 2 == 0 { "1" } else { "0" }, "round {round}");
    }
}

/// A stored answer belongs to its job (issue 29): the same `webhook-id` on a report about
/// another job is a delivery of its own, applied and answered for that job, never the first
/// job's stored answer.
#[tokio::test]
async fn a_webhook_id_reused_for_another_job_is_not_answered_with_the_first_jobs_answer() {
    let (app, keys) = app_with_keys(false).await;
    let t = app.tenant().await;
    let (a, b) = (app.new_job(&t).await, app.new_job(&t).await);
    let (na, nb) = (app.manifest(&a).await.nonce, app.manifest(&b).await.nonce);
    let wid = msg_id();
    let failed = |id: &str, nonce: &str| json!({"code2des_id": id, "attempt": 1, "nonce": nonce, "status": "failed", "error_message": "x"});
    let send_as = |body: Value| {
        let raw = serde_json::to_vec(&body).unwrap();
        let h = v1a(&keys, &wid, now(), &raw);
        let app = &app;
        async move { send(app, &raw, &h).await }
    };
    let first = send_as(failed(&a, &na)).await;
    assert_eq!((first.status, first.json["code2des_id"].as_str()), (200, Some(a.as_str())));
    let second = send_as(failed(&b, &nb)).await;
    assert_eq!((second.status, second.json["code2des_id"].as_str()), (200, Some(b.as_str())), "{second:?}");
    assert_eq!(app.get(&t, Some(&t.sub), &b).await.json["status"], "failed", "the second job's report was applied");
}
