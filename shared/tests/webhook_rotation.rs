//! A rotation of the webhook secret reaches a warm instance with no gap (docs/OPERATIONS.md):
//! the keys are re-read from Secrets Manager (emulated on loopback) on a signature mismatch,
//! at most once a minute, and both the current and the previous version then verify.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use shared::domain::signature::{header_value, SignatureError};

mod common;

const ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:code2des-webhook-xyz";

#[tokio::test]
async fn a_rotated_webhook_secret_verifies_new_and_previous_signatures_without_a_restart() {
    // (current, previous) as Secrets Manager holds them; the calls counted.
    let versions = Arc::new(Mutex::new(("old-secret".to_owned(), None::<String>)));
    let calls = Arc::new(AtomicUsize::new(0));
    let (v, c) = (versions.clone(), calls.clone());
    let endpoint = common::secrets_manager(Arc::new(move |body: &str| {
        c.fetch_add(1, Ordering::SeqCst);
        assert!(body.contains(ARN), "{body}");
        let (current, previous) = v.lock().unwrap().clone();
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
    std::env::set_var("WEBHOOK_SECRET_ARN", ARN);

    // A warm instance: the secret read once, at init.
    let resources = shared::app::resources::Resources::from_env().unwrap();
    let keys = resources.webhook_keys().await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let body = br#"{"code2des_id":"x"}"#;
    let now = 1_800_000_000;
    let sign = |key: &str| header_value(key.as_bytes(), now, body);
    assert!(keys.verify(Some(&sign("old-secret")), body, now).await.is_ok());
    assert_eq!(calls.load(Ordering::SeqCst), 1, "a match costs no call");

    // A forged or stale signature right after init: refused, and no call (the secret was read
    // less than a minute ago); nor does a malformed header ever cost one.
    assert!(matches!(keys.verify(Some(&sign("forged")), body, now).await, Err(SignatureError::Mismatch)));
    assert!(keys.verify(Some("t=1,v1=zz"), body, now).await.is_err());
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // A secret never rotated has no previous version (ResourceNotFoundException): a due
    // instance's re-read keeps the one key.
    let long_ago =
        std::time::Instant::now() - shared::app::webhook_keys::REFRESH_EVERY - std::time::Duration::from_secs(1);
    let unrotated = shared::app::webhook_keys::WebhookKeys::from_secret_read_at(
        ARN.into(),
        "old-secret".to_owned().into(),
        long_ago,
    );
    assert!(unrotated.verify(Some(&sign("forged")), body, now).await.is_err());
    assert_eq!(calls.load(Ordering::SeqCst), 3, "AWSCURRENT, and AWSPREVIOUS not found");
    assert!(unrotated.verify(Some(&sign("old-secret")), body, now).await.is_ok());
    assert_eq!(calls.load(Ordering::SeqCst), 3);

    // The rotation: `put-secret-value` makes the new value current and the old one previous.
    *versions.lock().unwrap() = ("new-secret".to_owned(), Some("old-secret".to_owned()));
    // The instance that read the secret under a minute ago waits for its minute (the runbook's
    // dual signing covers that minute).
    assert!(keys.verify(Some(&sign("new-secret")), body, now).await.is_err());
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    // A warm instance that read the old value over a minute ago: its first mismatch is due.
    let read_at =
        std::time::Instant::now() - shared::app::webhook_keys::REFRESH_EVERY - std::time::Duration::from_secs(1);
    let warm = shared::app::webhook_keys::WebhookKeys::from_secret_read_at(
        ARN.into(),
        "old-secret".to_owned().into(),
        read_at,
    );
    let before = calls.load(Ordering::SeqCst);
    // The worker switched to the new secret: the first mismatch re-reads both versions...
    assert!(warm.verify(Some(&sign("new-secret")), body, now).await.is_ok());
    assert_eq!(calls.load(Ordering::SeqCst), before + 2, "AWSCURRENT and AWSPREVIOUS, once");
    // ...after which both the new and the previous secret verify, with no further call.
    assert!(warm.verify(Some(&sign("old-secret")), body, now).await.is_ok());
    assert!(warm.verify(Some(&sign("new-secret")), body, now).await.is_ok());
    assert!(warm.verify(Some(&sign("forged")), body, now).await.is_err());
    assert_eq!(calls.load(Ordering::SeqCst), before + 2, "forged requests cannot drive Secrets Manager calls");
}
