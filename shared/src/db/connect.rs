//! PostgreSQL connections: settings, the TLS policy, the pool, one statement's time bound and
//! how its errors are answered, and creating a database.
//!
//! TLS policy: a connection to a loopback host (or a Unix socket) with no `sslmode` in the URL
//! is plain, since nothing crosses a network; `sslmode=disable` is always plain; everything
//! else REQUIRES TLS and verifies the server certificate against the Mozilla roots (which
//! cover RDS Proxy's ACM certificates) plus an optional PEM bundle named by `DB_CA_BUNDLE`
//! (for the RDS CA when connecting to a cluster directly). There is no "prefer": a
//! man-in-the-middle could otherwise downgrade the connection to plaintext.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use deadpool_postgres::{Connect, Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use futures::future::BoxFuture;
use tokio::task::JoinHandle;
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::budget::bounded;
use crate::config::DbEndpoint;
use crate::db::error::DbError;

/// Longest a single database call may take, when the request's budget has that much left
/// (`crate::budget`): the budget, not this, bounds a request.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(8);

/// Longest a request waits for a pooled connection (the pool's own wait and create timeouts
/// are 5 s each), when its budget has that much left.
pub const CHECKOUT_TIMEOUT: Duration = Duration::from_secs(6);

#[derive(Debug, thiserror::Error)]
pub enum DbSetupError {
    #[error("invalid database URL: {0}")]
    Url(String),
    #[error("cannot read DB_CA_BUNDLE {path}: {reason}")]
    CaBundle { path: String, reason: String },
    #[error("cannot build the connection pool: {0}")]
    Pool(String),
}

/// Parsed connection settings plus whether TLS is used.
#[derive(Clone)]
pub struct DbConfig {
    pub pg: tokio_postgres::Config,
    pub tls: bool,
}

impl std::fmt::Debug for DbConfig {
    // tokio_postgres::Config's Debug redacts the password; say so explicitly anyway.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbConfig")
            .field("hosts", &self.pg.get_hosts())
            .field("dbname", &self.pg.get_dbname())
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

fn is_loopback(host: &Host) -> bool {
    match host {
        Host::Tcp(h) => h == "localhost" || h.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback()),
        #[cfg(unix)]
        Host::Unix(_) => true,
    }
}

impl DbConfig {
    /// From a `postgres://` URL (local stack, tests, `sam local`).
    pub fn from_url(url: &str) -> Result<Self, DbSetupError> {
        let mut pg: tokio_postgres::Config = url
            .parse()
            // The parser's message can quote the URL, password included: never echo it.
            .map_err(|_| DbSetupError::Url("DATABASE_URL is not a valid postgres:// URL".into()))?;
        let explicit = url.contains("sslmode=");
        let tls = match pg.get_ssl_mode() {
            SslMode::Disable => false,
            _ if !explicit && pg.get_hosts().iter().all(is_loopback) => false,
            _ => true,
        };
        pg.ssl_mode(if tls { SslMode::Require } else { SslMode::Disable });
        Ok(Self::finish(pg, tls))
    }

    /// From the RDS-format secret `{host,port,username,password,dbname}`: always verified TLS.
    pub fn from_rds_secret(json: &str) -> Result<Self, DbSetupError> {
        Self::from_rds_secret_via(json, &DbEndpoint::default())
    }

    /// From an RDS-format secret, with the endpoint's fields taking precedence over the
    /// secret's. A secret that RDS manages for the master user holds only `username` and
    /// `password`, and the functions must reach the database through RDS Proxy anyway, so the
    /// deployment names the proxy endpoint (`DB_HOST`, `DB_PORT`, `DB_NAME`). Always verified TLS.
    pub fn from_rds_secret_via(json: &str, endpoint: &DbEndpoint) -> Result<Self, DbSetupError> {
        #[derive(serde::Deserialize)]
        struct RdsSecret {
            host: Option<String>,
            port: Option<serde_json::Value>,
            username: String,
            password: String,
            dbname: Option<String>,
        }
        let s: RdsSecret = serde_json::from_str(json)
            .map_err(|_| DbSetupError::Url("the database secret is not RDS-format JSON".into()))?;
        let host = endpoint
            .host
            .clone()
            .or(s.host)
            .ok_or_else(|| DbSetupError::Url("the database secret has no host and DB_HOST is not set".into()))?;
        // An absent port is PostgreSQL's; a present one that is not a port is a broken secret,
        // said at init, not silently replaced by 5432 (a connection to the wrong port).
        let secret_port = match s.port {
            None => Some(5432),
            Some(serde_json::Value::Number(n)) => n.as_u64().and_then(|p| u16::try_from(p).ok()),
            Some(serde_json::Value::String(p)) => p.trim().parse().ok(),
            Some(_) => None,
        }
        .filter(|p| *p != 0);
        let port = match (endpoint.port, secret_port) {
            (Some(p), _) => p,
            (None, Some(p)) => p,
            (None, None) => return Err(DbSetupError::Url("the database secret's port is not a port number".into())),
        };
        let dbname = endpoint.dbname.clone().or(s.dbname).unwrap_or_else(|| "postgres".into());
        let mut pg = tokio_postgres::Config::new();
        pg.host(&host)
            .port(port)
            .user(&s.username)
            .password(s.password.as_bytes())
            .dbname(&dbname)
            .ssl_mode(SslMode::Require);
        Ok(Self::finish(pg, true))
    }

    /// For IAM authentication (RDS Proxy or the cluster): the endpoint and the database user,
    /// no password. The pool signs a token per new connection ([`pool_with_auth`] with a
    /// [`Password`] source, see [`crate::aws::rds_iam`]). Always verified TLS: RDS refuses IAM logins
    /// without it, and the token must never cross a network in the clear.
    pub fn for_iam(host: &str, port: u16, dbname: &str, user: &str) -> Self {
        let mut pg = tokio_postgres::Config::new();
        pg.host(host).port(port).user(user).dbname(dbname).ssl_mode(SslMode::Require);
        Self::finish(pg, true)
    }

    fn finish(mut pg: tokio_postgres::Config, tls: bool) -> Self {
        pg.connect_timeout(Duration::from_secs(3))
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(30))
            .application_name("code2des");
        Self { pg, tls }
    }

    /// Key material for list cursors, which makes a cursor from another deployment, another
    /// query or a typo fail as a clear 400. With a password it is bound to it, so a rotation only
    /// makes outstanding cursors start over. With IAM authentication there is no password, and
    /// the key is derived from public values (endpoint, user): it tells deployments apart and
    /// is NOT a secret. No guarantee rests on it: a cursor is only a position, and the list
    /// statement applies the caller's scope to every page, so even a forged cursor pages only
    /// through what its caller may list (docs/SECURITY.md, "List cursors").
    pub fn cursor_key(&self) -> [u8; 32] {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(b"code2des list cursor v1\0");
        h.update(self.pg.get_user().unwrap_or_default().as_bytes());
        h.update(b"\0");
        h.update(self.pg.get_password().unwrap_or_default());
        h.update(b"\0");
        h.update(self.pg.get_dbname().unwrap_or_default().as_bytes());
        if self.pg.get_password().is_none() {
            for host in self.pg.get_hosts() {
                if let Host::Tcp(name) = host {
                    h.update(b"\0");
                    h.update(name.as_bytes());
                }
            }
            for port in self.pg.get_ports() {
                h.update(port.to_be_bytes());
            }
        }
        h.finalize().into()
    }
}

/// The rustls client configuration: Mozilla roots plus an optional extra PEM bundle.
pub fn tls_connector(ca_bundle: Option<&str>) -> Result<MakeRustlsConnect, DbSetupError> {
    install_crypto_provider();
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = ca_bundle.filter(|p| !p.is_empty()) {
        let bad = |reason: String| DbSetupError::CaBundle { path: path.to_owned(), reason };
        let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
        let mut added = 0;
        for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
            let cert = cert.map_err(|e| bad(e.to_string()))?;
            roots.add(cert).map_err(|e| bad(e.to_string()))?;
            added += 1;
        }
        if added == 0 {
            return Err(bad("no certificates in the file".into()));
        }
    }
    let config = rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// rustls needs one process-wide crypto provider; aws-lc-rs is the one the AWS SDK uses too.
pub fn install_crypto_provider() {
    // Err means one is installed already, which is just as good.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
}

/// Re-reads the database settings, e.g. after the secret rotated.
pub type Refresh = Arc<dyn Fn() -> BoxFuture<'static, Result<DbConfig, String>> + Send + Sync>;

/// Signs the password of one new connection (an RDS IAM auth token, valid 15 minutes): called
/// for every connection the pool opens, so no token outlives its use.
pub type Password = Arc<dyn Fn() -> BoxFuture<'static, Result<String, String>> + Send + Sync>;

/// Least time between two refreshes: a wrong password must not turn every connection attempt
/// into a Secrets Manager call.
const REFRESH_INTERVAL: Duration = Duration::from_secs(30);

/// Connects with the current settings; when the server refuses the credentials (RDS rotates
/// the master password, by default every 7 days, under a warm instance), re-reads them once
/// through `refresh` and retries, so the instance heals instead of answering 503 until Lambda
/// retires it.
struct RotatingConnect {
    current: Mutex<tokio_postgres::Config>,
    last_refresh: Mutex<Option<Instant>>,
    tls: MakeRustlsConnect,
    refresh: Option<Refresh>,
    password: Option<Password>,
}

fn is_auth_failure(e: &tokio_postgres::Error) -> bool {
    use tokio_postgres::error::SqlState;
    matches!(e.code(), Some(c) if *c == SqlState::INVALID_PASSWORD || *c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION)
}

async fn open(
    cfg: tokio_postgres::Config,
    tls: MakeRustlsConnect,
) -> Result<(tokio_postgres::Client, JoinHandle<()>), tokio_postgres::Error> {
    let (client, connection) = cfg.connect(tls).await?;
    let task = tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "database connection closed");
        }
    });
    Ok((client, task))
}

impl RotatingConnect {
    /// `cfg` with a freshly signed password when there is a [`Password`] source.
    async fn signed(&self, mut cfg: tokio_postgres::Config) -> tokio_postgres::Config {
        if let Some(password) = &self.password {
            match password().await {
                Ok(token) => {
                    cfg.password(token);
                }
                // Without a token the server refuses the login, and the handler answers 503 as
                // for any connection that cannot be opened. The reason names no secret.
                Err(reason) => tracing::error!(error = %reason, "cannot sign the database auth token"),
            }
        }
        cfg
    }
}

impl Connect for RotatingConnect {
    fn connect(
        &self,
        _: &tokio_postgres::Config,
    ) -> BoxFuture<'_, Result<(tokio_postgres::Client, JoinHandle<()>), tokio_postgres::Error>> {
        Box::pin(async move {
            let cfg = self.current.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let err = match open(self.signed(cfg).await, self.tls.clone()).await {
                Err(e) if is_auth_failure(&e) => e,
                other => return other,
            };
            let Some(refresh) = &self.refresh else { return Err(err) };
            {
                let mut last = self.last_refresh.lock().unwrap_or_else(|p| p.into_inner());
                if last.is_some_and(|t| t.elapsed() < REFRESH_INTERVAL) {
                    return Err(err);
                }
                *last = Some(Instant::now());
            }
            match refresh().await {
                Ok(fresh) => {
                    tracing::warn!("the database refused the credentials; re-read them, retrying once");
                    *self.current.lock().unwrap_or_else(|p| p.into_inner()) = fresh.pg.clone();
                    open(self.signed(fresh.pg).await, self.tls.clone()).await
                }
                Err(reason) => {
                    tracing::error!(error = %reason, "cannot re-read the database credentials");
                    Err(err)
                }
            }
        })
    }
}

/// A pool that connects lazily: building it does no I/O, so a cold start never waits on the
/// database and an outage at init does not kill the instance.
pub fn pool(cfg: &DbConfig, ca_bundle: Option<&str>, max_size: usize) -> Result<Pool, DbSetupError> {
    pool_with_refresh(cfg, ca_bundle, max_size, None)
}

/// [`pool`], re-reading the settings through `refresh` when the server refuses them.
pub fn pool_with_refresh(
    cfg: &DbConfig,
    ca_bundle: Option<&str>,
    max_size: usize,
    refresh: Option<Refresh>,
) -> Result<Pool, DbSetupError> {
    pool_with_auth(cfg, ca_bundle, max_size, refresh, None)
}

/// [`pool_with_refresh`], and with `password`, a password signed for each new connection (RDS
/// IAM authentication) in place of the one in `cfg`.
pub fn pool_with_auth(
    cfg: &DbConfig,
    ca_bundle: Option<&str>,
    max_size: usize,
    refresh: Option<Refresh>,
    password: Option<Password>,
) -> Result<Pool, DbSetupError> {
    let tls = tls_connector(ca_bundle)?;
    let _ = CANCEL_TLS.set(tls.clone());
    let connect =
        RotatingConnect { current: Mutex::new(cfg.pg.clone()), last_refresh: Mutex::new(None), tls, refresh, password };
    // Fast recycling: no health-check round trip per checkout. A connection the server closed
    // is detected by tokio-postgres and dropped by the pool on return.
    let mgr = Manager::from_connect(cfg.pg.clone(), connect, ManagerConfig { recycling_method: RecyclingMethod::Fast });
    Pool::builder(mgr)
        .max_size(max_size.max(1))
        // Last in, first out: a request gets the connection used most recently, whose server
        // backend and TLS state are still hot; the others stay idle instead of being cycled
        // through (FIFO, deadpool's default, spreads even one caller over every connection).
        .queue_mode(deadpool_postgres::QueueMode::Lifo)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(Duration::from_secs(5)))
        .create_timeout(Some(Duration::from_secs(5)))
        .recycle_timeout(Some(Duration::from_secs(2)))
        .build()
        .map_err(|e| DbSetupError::Pool(e.to_string()))
}

/// A pooled connection within the request's budget.
pub async fn conn(pool: &Pool) -> Result<deadpool_postgres::Object, DbError> {
    match bounded(CHECKOUT_TIMEOUT, pool.get()).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(e)) => {
            tracing::error!(dependency = "the database", error = %crate::error::chain(&e), "no pooled connection");
            Err(DbError::Unavailable)
        }
        Err(why) => Err(DbError::out_of_time(why)),
    }
}

/// Runs one database call within [`QUERY_TIMEOUT`] and the request's budget; its error as
/// [`DbError::from_driver`] judges it.
pub async fn timed<T>(fut: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>) -> Result<T, DbError> {
    match bounded(QUERY_TIMEOUT, fut).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(DbError::from_driver("a database statement", &e)),
        Err(why) => Err(DbError::out_of_time(why)),
    }
}

/// The TLS configuration of the process's pool, for cancel requests (a cancel request opens a
/// connection of its own, with the same TLS policy as the one it cancels for).
static CANCEL_TLS: OnceLock<MakeRustlsConnect> = OnceLock::new();

/// Longest a request waits for the server to take a cancel request (spent in the reserve,
/// which counts it: `crate::budget::RESERVE`).
const CANCEL_TIMEOUT: Duration = crate::budget::CANCEL;

/// [`timed`] for a statement on `client`: when its time runs out, the server is asked to cancel
/// it. Otherwise the statement runs on after the client was told 503: a lock wait that commits
/// its write when the lock is released, or a slow scan that the connection's next user (LIFO:
/// the next request of the instance) would queue behind.
pub async fn timed_on<T>(
    client: &tokio_postgres::Client,
    fut: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
) -> Result<T, DbError> {
    match bounded(QUERY_TIMEOUT, fut).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(DbError::from_driver("a database statement", &e)),
        Err(why) => {
            cancel(client).await;
            Err(DbError::out_of_time(why))
        }
    }
}

/// Asks the server to cancel what `client` is running; a failure is logged (the statement then
/// ends by itself: its connection's next statement queues behind it).
async fn cancel(client: &tokio_postgres::Client) {
    let token = client.cancel_token();
    let tls = match CANCEL_TLS.get() {
        Some(tls) => tls.clone(),
        None => match tls_connector(None) {
            Ok(tls) => tls,
            Err(e) => return tracing::warn!(error = %e, "cannot cancel a timed-out statement"),
        },
    };
    match tokio::time::timeout(CANCEL_TIMEOUT, token.cancel_query(tls)).await {
        Ok(Ok(())) => tracing::warn!("cancelled a statement that ran out of time"),
        Ok(Err(e)) => tracing::warn!(error = %e, "cancelling a timed-out statement failed"),
        Err(_) => tracing::warn!("cancelling a timed-out statement timed out"),
    }
}

/// Opens one plain connection (migrations, database creation) with the same TLS policy.
pub async fn connect(
    cfg: &DbConfig,
    ca_bundle: Option<&str>,
) -> Result<tokio_postgres::Client, Box<dyn std::error::Error + Send + Sync>> {
    let tls = tls_connector(ca_bundle)?;
    let (client, connection) = cfg.pg.connect(tls).await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "setup connection closed");
        }
    });
    Ok(client)
}

/// Creates the database named in `cfg` if it does not exist, via the `postgres` maintenance db.
pub async fn ensure_database(
    cfg: &DbConfig,
    ca_bundle: Option<&str>,
) -> Result<bool, Box<dyn std::error::Error + Send + Sync>> {
    let name = cfg.pg.get_dbname().unwrap_or("postgres").to_owned();
    let mut admin = cfg.clone();
    admin.pg.dbname("postgres");
    let client = connect(&admin, ca_bundle).await?;
    let exists = client.query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&name]).await?.is_some();
    if exists {
        return Ok(false);
    }
    let quoted = format!("\"{}\"", name.replace('"', "\"\""));
    match client.batch_execute(&format!("CREATE DATABASE {quoted}")).await {
        Ok(()) => Ok(true),
        // Someone else created it between our check and our CREATE: just as good.
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::DUPLICATE_DATABASE) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rds_managed_secret_without_host_connects_through_the_named_proxy() {
        let managed = r#"{"username":"code2des","password":"p@ss w0rd"}"#;
        let missing = DbConfig::from_rds_secret(managed).unwrap_err();
        assert!(missing.to_string().contains("DB_HOST"), "{missing}");

        let proxy = DbEndpoint {
            host: Some("code2des.proxy-abc.eu-west-1.rds.amazonaws.com".into()),
            port: None,
            dbname: Some("code2des".into()),
        };
        let cfg = DbConfig::from_rds_secret_via(managed, &proxy).unwrap();
        assert_eq!(cfg.pg.get_hosts(), &[Host::Tcp("code2des.proxy-abc.eu-west-1.rds.amazonaws.com".into())]);
        assert_eq!(cfg.pg.get_ports(), &[5432]);
        assert_eq!(cfg.pg.get_dbname(), Some("code2des"));
        assert_eq!(cfg.pg.get_user(), Some("code2des"));
        assert!(cfg.tls, "a database secret always means verified TLS");
    }

    #[test]
    fn a_secret_whose_port_is_not_a_port_is_refused() {
        for port in [r#""54x2""#, "70000", "-1", "0", r#""""#, "true", "5432.5"] {
            let json = format!(r#"{{"host":"h","port":{port},"username":"u","password":"p"}}"#);
            let err = DbConfig::from_rds_secret(&json).unwrap_err().to_string();
            assert!(err.contains("port"), "{port}: {err}");
        }
        for (port, want) in [("6432", 6432), (r#""6433""#, 6433), ("null", 5432)] {
            let json = format!(r#"{{"host":"h","port":{port},"username":"u","password":"p"}}"#);
            assert_eq!(DbConfig::from_rds_secret(&json).unwrap().pg.get_ports(), &[want], "{port}");
        }
    }

    #[test]
    fn endpoint_fields_win_over_the_secrets_own() {
        let full = r#"{"host":"cluster.example","port":"5433","username":"u","password":"p","dbname":"other"}"#;
        let cfg = DbConfig::from_rds_secret(full).unwrap();
        assert_eq!(cfg.pg.get_hosts(), &[Host::Tcp("cluster.example".into())]);
        assert_eq!(cfg.pg.get_ports(), &[5433]);

        let proxy = DbEndpoint { host: Some("proxy.example".into()), port: Some(6432), dbname: None };
        let cfg = DbConfig::from_rds_secret_via(full, &proxy).unwrap();
        assert_eq!(cfg.pg.get_hosts(), &[Host::Tcp("proxy.example".into())]);
        assert_eq!(cfg.pg.get_ports(), &[6432]);
        assert_eq!(cfg.pg.get_dbname(), Some("other"), "an absent field keeps the secret's");
    }
}
