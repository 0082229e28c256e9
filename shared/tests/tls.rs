//! TLS to PostgreSQL verifies the server certificate (SPEC section 5): a server whose
//! certificate no trusted root signed is refused, never silently accepted.

use shared::db::connect::{self as db, DbConfig};

fn admin_url() -> String {
    std::env::var("TEST_PG_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

#[tokio::test]
async fn an_untrusted_server_certificate_is_refused() {
    // The machine's PostgreSQL serves a self-signed certificate (when it serves TLS at all).
    let plain = DbConfig::from_url(&admin_url()).unwrap();
    assert!(!plain.tls, "loopback without sslmode is plain");
    let client = db::connect(&plain, None).await.expect("plain loopback connection works");
    let ssl_on: String = client.query_one("SHOW ssl", &[]).await.unwrap().get(0);

    let url = format!("{}?sslmode=require", admin_url());
    let cfg = DbConfig::from_url(&url).unwrap();
    assert!(cfg.tls);
    let err = match db::connect(&cfg, None).await {
        Ok(_) => panic!("a connection to a server with an untrusted certificate must fail"),
        Err(e) => shared::error::chain(&*e),
    };
    if ssl_on == "on" {
        assert!(err.to_lowercase().contains("certificate"), "refused for its certificate: {err}");
    }
    // "prefer" is upgraded to "require": no silent downgrade to plaintext.
    let prefer = DbConfig::from_url(&format!("{}?sslmode=prefer", admin_url())).unwrap();
    assert!(prefer.tls);
    assert!(db::connect(&prefer, None).await.is_err());
    let disabled = DbConfig::from_url(&format!("{}?sslmode=disable", admin_url())).unwrap();
    assert!(!disabled.tls);
    assert!(db::connect(&disabled, None).await.is_ok());
}

#[test]
fn a_ca_bundle_that_is_missing_or_empty_is_a_clear_setup_error() {
    let missing = db::tls_connector(Some("/nonexistent/ca.pem")).err().expect("missing file refused");
    assert!(missing.to_string().contains("DB_CA_BUNDLE"));
    let dir = std::env::temp_dir().join(format!("c2d-empty-{}.pem", std::process::id()));
    std::fs::write(&dir, "not a certificate").unwrap();
    let empty = db::tls_connector(dir.to_str()).err().expect("no certificates refused");
    assert!(empty.to_string().contains("no certificates"));
    let _ = std::fs::remove_file(dir);
}
