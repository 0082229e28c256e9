//! A rotation of the worker's public key (`WEBHOOK_PUBLIC_KEY_ARN`, Standard Webhooks `v1a`) or
//! of a `whsec_` secret (`v1`) reaches a warm instance with no gap, as the legacy secret's does
//! (webhook_rotation.rs): on a signature mismatch, at most once a minute, every key from Secrets
//! Manager (emulated on loopback) is read again, and its current and previous versions verify.
//! Keys are generated at test time.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use secrecy::SecretString;
use shared::app::webhook_keys::{Delivery, Source, WebhookKeys};
use shared::domain::signature::SignatureError;
use shared::domain::standard_webhooks as sw;

mod common;

const SECRET_ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:code2des-webhook-secret";
const KEY_ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:code2des-webhook-public-key";

type Versions = Arc<Mutex<(String, Option<String>)>>;

fn delivery<'a>(id: &'a str, ts: &'a str, sig: &'a str) -> Delivery<'a> {
    Delivery { standard: sw::Headers { id: Some(id), timestamp: Some(ts), signature: Some(sig) }, legacy: None }
}

#[tokio::test]
async fn rotated_public_keys_and_whsec_secrets_verify_new_and_previous_signatures_without_a_restart() {
    let old_key = sw::generate_signing_key();
    let new_key = sw::generate_signing_key();
    let (old_secret, new_secret) = (sw::generate_secret(), sw::generate_secret());
    let pk = |k: &ed25519_dalek::SigningKey| sw::encode_public_key(&k.verifying_key());
    let keys_at: Versions = Arc::new(Mutex::new((pk(&old_key), None)));
    let secret_at: Versions = Arc::new(Mutex::new((old_secret.clone(), None)));
    let calls = Arc::new(AtomicUsize::new(0));
    let (k, s, c) = (keys_at.clone(), secret_at.clone(), calls.clone());
    let endpoint = common::secrets_manager(Arc::new(move |body: &str| {
        c.fetch_add(1, Ordering::SeqCst);
        let (current, previous) =
            if body.contains(KEY_ARN) { k.lock().unwrap().clone() } else { s.lock().unwrap().clone() };
        if body.contains("AWSPREVIOUS") {
            previous
        } else {
            Some(current)
        }
    }))
    .await;
    std::env::set_var("AWS_ENDPOINT_URL_SECRETS_MANAGER", &endpoint);
    std::env::set_var("AWS_REGION", "us-east-1");
    std::env::set_var("AWS_ACCESS_KEY_ID", "test");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "test");
    std::env::set_var("WEBHOOK_SECRET_ARN", SECRET_ARN);
    std::env::set_var("WEBHOOK_PUBLIC_KEY_ARN", KEY_ARN);

    let body = br#"{"code2des_id":"x"}"#;
    let now = 1_800_000_000;
    let ts = now.to_string();
    let v1a = |key: &ed25519_dalek::SigningKey| sw::sign_v1a(key, "msg_1", now, body);
    let v1 = |secret: &str| sw::sign_v1(&sw::parse_secret(secret).unwrap(), "msg_1", now, body);

    // A cold start reads both secrets once.
    let resources = shared::app::resources::Resources::from_env().unwrap();
    let keys = resources.webhook_keys().await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(keys.verify_delivery(&delivery("msg_1", &ts, &v1a(&old_key)), body, now).await.is_ok());
    assert!(keys.verify_delivery(&delivery("msg_1", &ts, &v1(&old_secret)), body, now).await.is_ok());
    // A forged signature right after init: refused, and no call.
    let forged = v1a(&sw::generate_signing_key());
    let refused = keys.verify_delivery(&delivery("msg_1", &ts, &forged), body, now).await;
    assert_eq!(refused, Err(SignatureError::Mismatch));
    assert_eq!(calls.load(Ordering::SeqCst), 2, "a match or a forgery within the minute costs no call");

    // The rotation: new values current, old ones previous.
    *keys_at.lock().unwrap() = (pk(&new_key), Some(pk(&old_key)));
    *secret_at.lock().unwrap() = (new_secret.clone(), Some(old_secret.clone()));
    let read_at = Instant::now() - shared::app::webhook_keys::REFRESH_EVERY - Duration::from_secs(1);
    let warm = WebhookKeys::new(
        Some(Source { arn: Some(SECRET_ARN.into()), value: SecretString::from(old_secret.clone()) }),
        Some(Source { arn: Some(KEY_ARN.into()), value: SecretString::from(pk(&old_key)) }),
        true,
        read_at,
    )
    .unwrap();
    let before = calls.load(Ordering::SeqCst);
    // The worker switched to its new key: the first mismatch re-reads every key, once.
    assert!(warm.verify_delivery(&delivery("msg_1", &ts, &v1a(&new_key)), body, now).await.is_ok());
    assert_eq!(calls.load(Ordering::SeqCst), before + 4, "both stages of both secrets");
    for sig in [v1a(&old_key), v1a(&new_key), v1(&old_secret), v1(&new_secret)] {
        assert!(warm.verify_delivery(&delivery("msg_1", &ts, &sig), body, now).await.is_ok(), "{sig}");
    }
    let refused = warm.verify_delivery(&delivery("msg_1", &ts, &forged), body, now).await;
    assert_eq!(refused, Err(SignatureError::Mismatch));
    // A malformed or stale delivery never costs a call, due or not.
    let stale = (now - 1000).to_string();
    assert_eq!(
        warm.verify_delivery(&delivery("msg_1", &stale, &v1a(&new_key)), body, now).await,
        Err(SignatureError::Expired)
    );
    assert_eq!(calls.load(Ordering::SeqCst), before + 4, "forged requests cannot drive Secrets Manager calls");

    // A deployment whose public key secret still holds template.yaml's placeholder starts (v1
    // and legacy keep working) and takes the worker's key at the first v1a mismatch once the
    // operator has put it there.
    let placeholder = WebhookKeys::new(
        Some(Source { arn: Some(SECRET_ARN.into()), value: SecretString::from(new_secret.clone()) }),
        Some(Source { arn: Some(KEY_ARN.into()), value: SecretString::from("whpk_unset") }),
        true,
        read_at,
    )
    .unwrap();
    assert!(placeholder.verify_delivery(&delivery("msg_1", &ts, &v1a(&new_key)), body, now).await.is_ok());
}
