//! TLS to PostgreSQL verifies the server certificate (SPEC section 5): a server whose
//! certificate no trusted root signed is refused, never silently accepted, nor downgraded to
//! plaintext; one whose certificate the deployment trusts (`DB_CA_BUNDLE`) is reached over TLS.
//!
//! The server is a private cluster of the test's own (code2des-testkit's) serving a
//! certificate the test makes, so the checks run whatever the machine's PostgreSQL serves, and
//! nothing is skipped: without the PostgreSQL server binaries the test fails and says so.
#![allow(clippy::disallowed_methods)] // tests may panic on a row that does not read: that is a failure

use std::path::PathBuf;

use code2des_testkit::cluster::Cluster;
use shared::db::connect::{self as db, DbConfig};

/// A self-signed certificate for the names a client on this machine connects with, as PEM:
/// (certificate, private key).
fn self_signed() -> (String, String) {
    let names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
    let made = rcgen::generate_simple_self_signed(names).expect("a self-signed certificate");
    (made.cert.pem(), made.signing_key.serialize_pem())
}

/// A private cluster serving TLS with a certificate of its own, and a CA bundle that trusts
/// exactly that certificate. Dropped, the cluster stops and its directory goes.
fn tls_cluster() -> (Cluster, PathBuf) {
    let cluster = Cluster::init().unwrap_or_else(|e| panic!("the TLS test needs a private PostgreSQL cluster: {e}"));
    let (cert, key) = self_signed();
    let cert_file = cluster.write_private("server.crt", cert.as_bytes()).unwrap();
    let key_file = cluster.write_private("server.key", key.as_bytes()).unwrap();
    let bundle = cluster.dir().join("ca-bundle.pem");
    std::fs::write(&bundle, &cert).unwrap();
    let (cert_file, key_file) = (cert_file.to_str().unwrap().to_owned(), key_file.to_str().unwrap().to_owned());
    let cluster = cluster
        .start(&[("ssl", "on"), ("ssl_cert_file", &cert_file), ("ssl_key_file", &key_file)])
        .unwrap_or_else(|e| panic!("PostgreSQL with ssl=on: {e}"));
    (cluster, bundle)
}

/// Whether the session of `client` is encrypted, as the server sees it.
async fn is_tls(client: &tokio_postgres::Client) -> bool {
    client.query_one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[]).await.unwrap().get(0)
}

async fn refused(cfg: &DbConfig, ca_bundle: Option<&str>) -> String {
    match db::connect(cfg, ca_bundle).await {
        Ok(_) => panic!("{cfg:?} with CA bundle {ca_bundle:?}: connected, must be refused"),
        Err(e) => shared::error::chain(&*e),
    }
}

#[tokio::test]
async fn the_server_certificate_is_verified_and_only_a_trusted_one_connects() {
    let (cluster, bundle) = tls_cluster();
    let bundle = bundle.to_str().unwrap();
    let url = cluster.url("postgres");

    // The server really serves TLS (a plain loopback URL stays plain: local development).
    let plain = DbConfig::from_url(&url).unwrap();
    assert!(!plain.tls, "loopback without sslmode is plain");
    let client = db::connect(&plain, None).await.expect("plain loopback connection works");
    let ssl: String = client.query_one("SHOW ssl", &[]).await.unwrap().get(0);
    assert_eq!(ssl, "on");
    assert!(!is_tls(&client).await);

    // `require` against a certificate no trusted root signed: refused for its certificate.
    let require = DbConfig::from_url(&format!("{url}?sslmode=require")).unwrap();
    assert!(require.tls);
    let err = refused(&require, None).await;
    assert!(err.to_lowercase().contains("certificate"), "refused for its certificate: {err}");

    // "prefer" is upgraded to "require": no silent downgrade to plaintext.
    let prefer = DbConfig::from_url(&format!("{url}?sslmode=prefer")).unwrap();
    assert!(prefer.tls);
    let err = refused(&prefer, None).await;
    assert!(err.to_lowercase().contains("certificate"), "refused for its certificate: {err}");

    // A bundle of another certificate is no better than none.
    let other = cluster.dir().join("other-ca.pem");
    std::fs::write(&other, self_signed().0).unwrap();
    let err = refused(&require, other.to_str()).await;
    assert!(err.to_lowercase().contains("certificate"), "refused for its certificate: {err}");

    // DB_CA_BUNDLE trusting the server's certificate: connected, and the session is TLS, by
    // the address and by the name the certificate was made for.
    for host in ["127.0.0.1", "localhost"] {
        let trusted_url = format!("postgres://postgres@{host}:{}/postgres?sslmode=require", cluster.port);
        let trusted = DbConfig::from_url(&trusted_url).unwrap();
        let client = db::connect(&trusted, Some(bundle))
            .await
            .unwrap_or_else(|e| panic!("{host} with DB_CA_BUNDLE trusting the server: {}", shared::error::chain(&*e)));
        assert!(is_tls(&client).await, "{host}: the session is encrypted");
    }

    // `disable` is plain, and works.
    let disabled = DbConfig::from_url(&format!("{url}?sslmode=disable")).unwrap();
    assert!(!disabled.tls);
    let client = db::connect(&disabled, None).await.expect("sslmode=disable connects");
    assert!(!is_tls(&client).await);
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
