//! RDS IAM authentication (`DB_IAM_AUTH=true`): the settings name the endpoint and the user and
//! hold no password, nothing is fetched, and the pool signs a fresh password for every new
//! connection it opens. The token's format is checked against the AWS SDKs' vector in
//! `shared::aws::rds_iam`'s unit tests.
#![allow(clippy::disallowed_methods)] // tests may panic on a row that does not read: that is a failure

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use shared::db::connect::{self as db, DbConfig, Password};
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
    assert!(shared::config::db_iam_auth());
    let cfg = shared::app::resources::db_config_from_env().await.expect("IAM settings; the secret is never read");
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
    assert!(!shared::config::db_iam_auth());
    std::env::set_var("DB_IAM_AUTH", "false");
    std::env::set_var("DB_HOST", "x");
    assert!(!shared::config::db_iam_auth());

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

// ------------------------------------------------------------------------------------------
// Measurement (ignored; run with `cargo test --release -p code2des-shared --test iam_auth --
// --ignored --nocapture`): what IAM authentication does to a cold start and to the first
// request, against fetching the database password from Secrets Manager, side by side in one run.
//
// Init: each sample is a fresh process (this test binary again), so nothing is cached, timing
// `shared::app::resources::db_pool()` from the first call to the ready pool: with `DB_SECRET_ARN` it
// builds the SDK configuration and fetches the secret from an emulated Secrets Manager on
// loopback (plain HTTP, so without the TLS handshake and the network a real call has); with
// `DB_IAM_AUTH` it reads the execution role's credentials from the environment and prepares the
// signer. First request: what the client does differently per new connection, i.e. signing
// a token, and a first connection to the machine's PostgreSQL with a fixed password against one
// with a freshly signed token (RDS Proxy's own validation of the token cannot run here).

const MODE: &str = "C2D_MEASURE_MODE";

/// Answers every GetSecretValue with an RDS-format secret.
async fn secrets_manager_on_loopback() -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else { return };
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let Ok(n) = sock.read(&mut chunk).await else { return };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).to_string();
                    let Some(end) = text.find("\r\n\r\n") else { continue };
                    let len = text[..end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned())
                        })
                        .and_then(|v| v.parse::<usize>().ok())
                        .unwrap_or(0);
                    if buf.len() < end + 4 + len {
                        continue;
                    }
                    buf.drain(..end + 4 + len);
                    let secret = r#"{"username":"code2des","password":"measured-password"}"#;
                    let out = serde_json::json!({"ARN": "a", "Name": "n", "SecretString": secret, "VersionId": "v"})
                        .to_string();
                    let resp = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.1\r\ncontent-length: {}\r\n\r\n{out}",
                        out.len()
                    );
                    if sock.write_all(resp.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

/// One cold init in this process, printed as `MEASURED <mode> <microseconds>`.
#[tokio::test]
#[ignore = "a measurement child; run through measure_iam_auth_against_secrets_manager"]
async fn measure_child() {
    let Ok(mode) = std::env::var(MODE) else { return };
    let start = std::time::Instant::now();
    let (_pool, cfg) =
        shared::app::resources::db_pool(&shared::config::Settings::from_env().unwrap()).await.expect("pool");
    let micros = start.elapsed().as_micros();
    assert_eq!(cfg.pg.get_password().is_some(), mode == "secret");
    println!("MEASURED {mode} {micros}");
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run with --ignored --nocapture, in release"]
async fn measure_iam_auth_against_secrets_manager() {
    let endpoint = secrets_manager_on_loopback().await;
    let exe = std::env::current_exe().unwrap();
    const ROUNDS: usize = 15;
    let (mut secret, mut iam) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        // Alternate, so that machine load hits both alike.
        for mode in ["secret", "iam"] {
            let mut cmd = std::process::Command::new(&exe);
            cmd.args(["--exact", "measure_child", "--ignored", "--nocapture", "--test-threads=1"])
                .env_clear()
                .env("PATH", std::env::var("PATH").unwrap_or_default())
                .env(MODE, mode)
                .env("AWS_REGION", "eu-west-1")
                .env("AWS_ACCESS_KEY_ID", "ASIAEXAMPLE")
                .env("AWS_SECRET_ACCESS_KEY", "example-secret")
                .env("AWS_SESSION_TOKEN", "example-session")
                .env("AWS_LAMBDA_FUNCTION_NAME", "measure")
                .env("DB_HOST", "code2des-db.proxy-abc.eu-west-1.rds.amazonaws.com")
                .env("DB_NAME", "code2des");
            if mode == "secret" {
                cmd.env("DB_SECRET_ARN", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:rds!cluster-x")
                    .env("AWS_ENDPOINT_URL_SECRETS_MANAGER", &endpoint);
            } else {
                cmd.env("DB_IAM_AUTH", "true").env("DB_USER", "code2des_app");
            }
            let out = cmd.output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let micros: f64 = text
                .lines()
                .find_map(|l| l.split_once(&format!("MEASURED {mode} ")).map(|(_, rest)| rest))
                .unwrap_or_else(|| panic!("{mode}: {text}{}", String::from_utf8_lossy(&out.stderr)))
                .trim()
                .parse()
                .unwrap();
            if mode == "secret" { &mut secret } else { &mut iam }.push(micros / 1000.0);
        }
    }
    let (s, i) = (median(&mut secret), median(&mut iam));
    println!("cold init, median of {ROUNDS} processes each: Secrets Manager (loopback) {s:.2} ms, IAM {i:.3} ms, ratio {:.1}x", s / i);

    // Per new connection: signing a token.
    let creds = aws_credential_types::Credentials::new("ASIAEXAMPLE", "example-secret", Some("t".into()), None, "m");
    let req = shared::aws::rds_iam::TokenRequest {
        host: "code2des-db.proxy-abc.eu-west-1.rds.amazonaws.com".into(),
        port: 5432,
        user: "code2des_app".into(),
        region: "eu-west-1".into(),
    };
    const SIGNS: u32 = 20_000;
    let start = std::time::Instant::now();
    for _ in 0..SIGNS {
        std::hint::black_box(shared::aws::rds_iam::auth_token(&req, &creds, std::time::SystemTime::now()).unwrap());
    }
    let sign_us = start.elapsed().as_secs_f64() * 1e6 / f64::from(SIGNS);
    println!("signing one token: {sign_us:.1} us");

    // A first connection and query on a fresh pool, fixed password against a signed token.
    let local = DbConfig::from_url(&admin_url()).unwrap();
    let (mut fixed, mut signed) = (Vec::new(), Vec::new());
    for _ in 0..40 {
        for with_token in [false, true] {
            let password: Option<Password> = with_token.then(|| -> Password {
                let (req, creds) = (req.clone(), creds.clone());
                Arc::new(move || {
                    let token = shared::aws::rds_iam::auth_token(&req, &creds, std::time::SystemTime::now());
                    Box::pin(async move { token.map_err(|e| e.to_string()) })
                })
            });
            let start = std::time::Instant::now();
            let pool = db::pool_with_auth(&local, None, 1, None, password).unwrap();
            let c = pool.get().await.unwrap();
            c.query_one("SELECT 1", &[]).await.unwrap();
            let ms = start.elapsed().as_secs_f64() * 1000.0;
            if with_token { &mut signed } else { &mut fixed }.push(ms);
        }
    }
    let (f, t) = (median(&mut fixed), median(&mut signed));
    println!(
        "first connection + SELECT 1, median of 40: fixed password {f:.3} ms, signed token {t:.3} ms, ratio {:.2}x",
        t / f
    );
}
