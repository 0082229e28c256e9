//! Settings from Secrets Manager (SPEC section 5), against an emulated Secrets Manager endpoint
//! on loopback (the one AWS component that cannot run here): the RDS-format database secret
//! and the webhook secret are fetched once per process and cached, and the database secret
//! always means verified TLS.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use secrecy::ExposeSecret;

mod common;

const DB_ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:rds!cluster-abc";
const HOOK_ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:code2des-webhook-xyz";

/// Answers GetSecretValue for two ARNs and counts the calls per ARN.
async fn emulator() -> (String, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let (db_calls, hook_calls) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (d, h) = (db_calls.clone(), hook_calls.clone());
    let endpoint = common::secrets_manager(Arc::new(move |body: &str| {
        Some(if body.contains(DB_ARN) {
            d.fetch_add(1, Ordering::SeqCst);
            serde_json::json!({"engine": "postgres", "host": "db.internal.example", "port": 5433,
                "username": "code2des", "password": "p@ss w0rd", "dbname": "code2des"})
            .to_string()
        } else {
            h.fetch_add(1, Ordering::SeqCst);
            "generated-webhook-secret".to_owned()
        })
    }))
    .await;
    (endpoint, db_calls, hook_calls)
}

#[tokio::test]
async fn secrets_are_fetched_once_per_instance_and_the_db_secret_means_verified_tls() {
    let (endpoint, db_calls, hook_calls) = emulator().await;
    // This test binary holds only this test, so the process environment is ours.
    std::env::set_var("AWS_ENDPOINT_URL_SECRETS_MANAGER", &endpoint);
    std::env::set_var("AWS_REGION", "us-east-1");
    std::env::set_var("AWS_ACCESS_KEY_ID", "test");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "test");
    std::env::set_var("DB_SECRET_ARN", DB_ARN);
    std::env::set_var("DATABASE_URL", "postgres://ignored@127.0.0.1/ignored");
    std::env::set_var("WEBHOOK_SECRET_ARN", HOOK_ARN);
    std::env::set_var("WEBHOOK_SECRET", "ignored-when-the-arn-is-set");

    for _ in 0..3 {
        let cfg = shared::app::resources::db_config_from_env().await.expect("db config from the secret");
        assert!(cfg.tls, "a database secret always means TLS");
        assert_eq!(cfg.pg.get_ssl_mode(), tokio_postgres::config::SslMode::Require);
        assert_eq!(cfg.pg.get_dbname(), Some("code2des"));
        assert_eq!(cfg.pg.get_user(), Some("code2des"));
        assert_eq!(cfg.pg.get_ports(), &[5433]);
        assert_eq!(cfg.pg.get_password(), Some(&b"p@ss w0rd"[..]));
        assert!(!format!("{cfg:?}").contains("w0rd"), "Debug never shows the password");
        // Through the same Resources a function's Deps::new uses (a new one each round: the
        // secret cache is per process, as it is per Lambda instance).
        let resources = shared::app::resources::Resources::from_env().unwrap();
        let hook = resources.webhook_secret().await.unwrap();
        assert_eq!(hook.expose_secret(), "generated-webhook-secret");
        assert!(!format!("{hook:?}").contains("generated"), "Debug never shows the secret");
    }
    assert_eq!(db_calls.load(Ordering::SeqCst), 1, "fetched once, then cached");
    assert_eq!(hook_calls.load(Ordering::SeqCst), 1, "fetched once, then cached");
}
