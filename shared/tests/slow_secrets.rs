//! Issue 29's drill of a slow Secrets Manager (emulated on loopback, switchable while it runs):
//! when a webhook's signature matches no key held, the keys are re-read, and that re-read is
//! concurrent and capped. With every read answering 10 s late, the delivery is refused as
//! "keys unreadable" (the webhook's 503, never a 401) after the 3 s cap, not after four reads in
//! a row; while the failure is fresh no read is tried again; once Secrets Manager answers again,
//! the same delivery (a worker's redelivery) verifies with the rotated key.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use secrecy::SecretString;
use shared::app::webhook_keys::{Delivery, Source, VerifyError, WebhookKeys, READ_TIMEOUT, RETRY_FAILED_REFRESH};
use shared::budget::Budget;
use shared::domain::standard_webhooks as sw;

mod common;

const SECRET_ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:code2des-webhook-secret";
const KEY_ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:code2des-webhook-public-key";

#[tokio::test]
async fn a_slow_secrets_manager_costs_one_capped_concurrent_read_and_a_503_then_heals() {
    let (old_key, new_key) = (sw::generate_signing_key(), sw::generate_signing_key());
    let pk = |k: &ed25519_dalek::SigningKey| sw::encode_public_key(&k.verifying_key());
    let current = Arc::new(Mutex::new(pk(&new_key)));
    let secret = sw::generate_secret();
    let calls = Arc::new(AtomicUsize::new(0));
    let delay_ms = Arc::new(AtomicU64::new(10_000));
    let (c, k, s) = (calls.clone(), current.clone(), secret.clone());
    let endpoint = common::secrets_manager_slow(
        Arc::new(move |body: &str| {
            c.fetch_add(1, Ordering::SeqCst);
            match (body.contains(KEY_ARN), body.contains("AWSPREVIOUS")) {
                (_, true) => None,
                (true, false) => Some(k.lock().unwrap().clone()),
                (false, false) => Some(s.clone()),
            }
        }),
        delay_ms.clone(),
    )
    .await;
    std::env::set_var("AWS_ENDPOINT_URL_SECRETS_MANAGER", &endpoint);
    std::env::set_var("AWS_REGION", "us-east-1");
    std::env::set_var("AWS_ACCESS_KEY_ID", "test");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "test");

    // Warm for longer than the refresh interval, holding the old public key: the worker has
    // switched to the new one.
    let keys = WebhookKeys::new(
        Some(Source { arn: Some(SECRET_ARN.into()), value: SecretString::from(secret.clone()) }),
        Some(Source { arn: Some(KEY_ARN.into()), value: SecretString::from(pk(&old_key)) }),
        false,
        Instant::now() - Duration::from_secs(3600),
    )
    .unwrap();
    let body = br#"{"code2des_id":"x"}"#;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let ts = now.to_string();
    let sig = sw::sign_v1a(&new_key, "msg_1", now, body);
    let delivery = Delivery {
        standard: sw::Headers { id: Some("msg_1"), timestamp: Some(&ts), signature: Some(&sig) },
        legacy: None,
    };
    let verify = || {
        Budget::after(shared::budget::FUNCTION_TIMEOUT).run(keys.verify_or_unreadable(&delivery, body, now), || {
            panic!("the budget's backstop fired: the re-read was not bounded")
        })
    };

    let t0 = Instant::now();
    assert_eq!(verify().await, Err(VerifyError::KeysUnreadable));
    let took = t0.elapsed();
    assert!(took >= READ_TIMEOUT && took < READ_TIMEOUT + Duration::from_secs(1), "took {took:?}");
    // All four reads (two secrets, two stages each) were in flight at once.
    assert_eq!(calls.load(Ordering::SeqCst), 4);

    // While the failure is fresh: the same answer at once, and no read.
    let t1 = Instant::now();
    assert_eq!(verify().await, Err(VerifyError::KeysUnreadable));
    assert!(t1.elapsed() < Duration::from_millis(200));
    assert_eq!(calls.load(Ordering::SeqCst), 4);

    // Secrets Manager recovers: the redelivery verifies with the rotated key.
    delay_ms.store(0, Ordering::SeqCst);
    tokio::time::sleep(RETRY_FAILED_REFRESH).await;
    assert!(verify().await.is_ok());
    // A forged signature after a successful re-read is a plain mismatch (401), and costs no read.
    let forged = sw::sign_v1a(&sw::generate_signing_key(), "msg_1", now, body);
    let bad = Delivery {
        standard: sw::Headers { id: Some("msg_1"), timestamp: Some(&ts), signature: Some(&forged) },
        legacy: None,
    };
    let before = calls.load(Ordering::SeqCst);
    assert!(matches!(keys.verify_or_unreadable(&bad, body, now).await, Err(VerifyError::Signature(_))));
    assert_eq!(calls.load(Ordering::SeqCst), before);
}
