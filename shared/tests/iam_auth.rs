//! RDS IAM authentication (`DB_IAM_AUTH=true`): the settings name the endpoint and the user and
//! hold no password, nothing is fetched, and the pool signs a fresh password for every new
//! connection it opens. The token's format is checked against the AWS SDKs' vector in
//! `shared::rds_iam`'s unit tests.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use shared::db::{self, DbConfig, Password};
use tokio_postgres::config::{Host, SslMode};

fn admin_url() -> String {
    std::env::var("TEST_PG_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

#[tokio::test]
async fn iam_settings_hold_no_password_and_the_pool_signs_one_per_connection() {
    // This test binary's environment is this test's own.
    for (k, v) in [
        ("AWS_REGION", "eu-west-1"),
        ("AWS_ACCESS_KEY_ID", "ASIAEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "example-secret"),
        ("AWS_SESSION_TOKEN", "example-session"),
        ("DB_IAM_AUTH", "true"),
        ("DB_HOST", "code2des-db.proxy-abc.eu-west-1.rds.amazonaws.com"),
        ("DB_USER", "code2des_app"),
        ("DB_SECRET_ARN", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:never-read"),
        ("DATABASE_URL", "postgres://ignored@127.0.0.1/ignored"),
    ] {
        std::env::set_var(k, v);
    }
    assert!(shared::setup::db_iam_auth());
    let cfg = shared::setup::db_config().await.expect("IAM settings; the secret is never read");
    assert_eq!(cfg.pg.get_hosts(), &[Host::Tcp("code2des-db.proxy-abc.eu-west-1.rds.amazonaws.com".into())]);
    assert_eq!(cfg.pg.get_ports(), &[5432]);
    assert_eq!(cfg.pg.get_user(), Some("code2des_app"));
    assert_eq!(cfg.pg.get_dbname(), Some("code2des"));
    assert_eq!(cfg.pg.get_password(), None);
    assert!(cfg.tls && cfg.pg.get_ssl_mode() == SslMode::Require, "IAM tokens only ever travel over TLS");
    // The cursor key still tells deployments apart.
    let other = DbConfig::for_iam("other.proxy.example", 5432, "code2des", "code2des_app");
    assert_ne!(cfg.cursor_key(), other.cursor_key());

    // Without DB_HOST (sam local blanks it) the other settings apply again.
    std::env::set_var("DB_HOST", "");
    assert!(!shared::setup::db_iam_auth());
    std::env::set_var("DB_IAM_AUTH", "false");
    std::env::set_var("DB_HOST", "x");
    assert!(!shared::setup::db_iam_auth());

    // The pool asks for a password for each connection it opens, and only then.
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let password: Password = Arc::new(move || {
        let n = counted.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move { Ok(format!("token-{n}")) })
    });
    let local = DbConfig::from_url(&admin_url()).unwrap();
    let pool = db::pool_with_auth(&local, None, 2, None, Some(password)).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0, "building the pool signs nothing");
    let (a, b) = (pool.get().await.unwrap(), pool.get().await.unwrap());
    let one: i32 = a.query_one("SELECT 1", &[]).await.unwrap().get(0);
    assert_eq!(one, 1);
    drop((a, b));
    let _again = pool.get().await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2, "one token per new connection, none for a reused one");

    // A source that cannot sign leaves the login without a password: the server decides (here,
    // trust authentication lets it in; RDS Proxy refuses it, and the handler answers 503).
    let failing: Password = Arc::new(|| Box::pin(async { Err("no credentials".to_owned()) }));
    let pool = db::pool_with_auth(&local, None, 1, None, Some(failing)).unwrap();
    assert!(pool.get().await.is_ok());
}
