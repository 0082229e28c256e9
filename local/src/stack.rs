//! Starting and stopping the whole local stack: database (created and migrated), the S3
//! endpoint (embedded, or external via `S3_ENDPOINT`), the five handlers behind the gateway,
//! and optionally the demo worker. (The private PostgreSQL started when nothing answers at a
//! loopback `DATABASE_URL` is `crate::postgres`'s, started before this and stopped after.)

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use secrecy::SecretString;
use shared::app::resources::Resources;
use shared::config::DatabaseSource;
use shared::config::{SecretSource, Settings};
use shared::db::connect::DbConfig;
use shared::domain::standard_webhooks as sw;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::gateway::{self, Handlers, GATEWAY_MAX_BODY};
use crate::s3server::{self, S3Server};

pub const DEFAULT_ADDR: &str = "127.0.0.1:3000";
pub const DEFAULT_S3_ADDR: &str = "127.0.0.1:9000";
pub const DEFAULT_BUCKET: &str = "code2des-artifacts";
pub const DEFAULT_WEBHOOK_SECRET: &str = "local-webhook-secret";
pub const DEFAULT_DATA_DIR: &str = ".code2des-local";

/// The local stack's settings: the functions' own `Settings` (SPEC section 5, with the local
/// defaults of section 6 filled in) plus what only the local server has.
#[derive(Clone)]
pub struct Config {
    pub addr: SocketAddr,
    pub s3_addr: SocketAddr,
    pub data_dir: PathBuf,
    pub database_url: String,
    /// What the five functions are built from, exactly as a Lambda builds them.
    pub settings: Settings,
    pub demo_worker: bool,
    /// The worker's `whsk_` key from `WEBHOOK_SIGNING_KEY`, for the in-process worker when
    /// `WEBHOOK_PUBLIC_KEY` is given (else the stack keeps its own pair under `data_dir`).
    pub worker_signing_key: Option<ed25519_dalek::SigningKey>,
    /// How often the deadline sweep runs (`SWEEP_INTERVAL_SECONDS`, default 60: the schedule
    /// template.yaml gives it in AWS).
    pub sweep_every: Duration,
}

/// How often the local stack purges (template.yaml's schedule of the purge function).
pub const PURGE_EVERY: Duration = Duration::from_secs(60 * 60);

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("addr", &self.addr)
            .field("s3_addr", &self.s3_addr)
            .field("data_dir", &self.data_dir)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// SPEC section 6 defaults, overridden by the environment of section 5.
    pub fn from_env(
        addr: SocketAddr,
        s3_addr: SocketAddr,
        data_dir: PathBuf,
        demo_worker: bool,
    ) -> Result<Self, String> {
        use shared::config::var;
        let mut settings = Settings::from_env().map_err(|e| e.to_string())?;
        let database_url = var("DATABASE_URL").unwrap_or_else(|| shared::config::DEFAULT_DATABASE_URL.to_owned());
        settings.database = DatabaseSource::Url(SecretString::from(database_url.clone()));
        settings.bucket.get_or_insert_with(|| DEFAULT_BUCKET.to_owned());
        if matches!(settings.webhook_secret, SecretSource::Missing) {
            settings.webhook_secret = SecretSource::Plain(SecretString::from(DEFAULT_WEBHOOK_SECRET));
        }
        if var("DB_POOL_SIZE").is_none() {
            // One server stands in for many Lambda instances at once.
            settings.pool_size = 16;
        }
        let sweep_every = match var("SWEEP_INTERVAL_SECONDS") {
            None => Duration::from_secs(60),
            Some(v) => match v.trim().parse::<u64>() {
                Ok(n) if n > 0 => Duration::from_secs(n),
                _ => return Err("SWEEP_INTERVAL_SECONDS must be a positive integer".into()),
            },
        };
        let worker_signing_key = match var("WEBHOOK_SIGNING_KEY") {
            None => None,
            Some(k) => Some(sw::parse_signing_key(&k).map_err(|e| format!("WEBHOOK_SIGNING_KEY: {e}"))?),
        };
        Ok(Self { addr, s3_addr, data_dir, database_url, settings, demo_worker, worker_signing_key, sweep_every })
    }

    /// The webhook secret as the demo worker signs with it.
    pub fn webhook_secret(&self) -> String {
        use secrecy::ExposeSecret;
        match &self.settings.webhook_secret {
            SecretSource::Plain(s) => s.expose_secret().to_owned(),
            _ => DEFAULT_WEBHOOK_SECRET.to_owned(),
        }
    }

    pub fn bucket(&self) -> &str {
        self.settings.bucket.as_deref().unwrap_or(DEFAULT_BUCKET)
    }

    /// The S3 endpoint a stack started with this configuration serves its bucket at (the
    /// external `S3_ENDPOINT`, else the embedded one on `s3_addr`), and whether it is external.
    pub fn s3_endpoint(&self) -> (String, bool) {
        match &self.settings.s3_endpoint {
            Some(ep) => (ep.clone(), true),
            None => (format!("http://{}", self.s3_addr), false),
        }
    }
}

/// The access key and secret a client of the stack's S3 signs with: the embedded endpoint's
/// own pair, or for an external one (`S3_ENDPOINT`) the environment's, else that same pair.
pub fn s3_keys(external: bool) -> (String, String) {
    let pair = (s3server::ACCESS_KEY.to_owned(), s3server::SECRET_KEY.to_owned());
    if !external {
        return pair;
    }
    let key = shared::config::var("AWS_ACCESS_KEY_ID").unwrap_or(pair.0);
    let secret = shared::config::var("AWS_SECRET_ACCESS_KEY").unwrap_or(pair.1);
    (key, secret)
}

/// The worker's key pair as the local stack keeps it: generated at its first start (when
/// `WEBHOOK_PUBLIC_KEY` is not set) under its data directory, the `whsk_` key in a file of mode
/// 0600 that a worker reads (`WEBHOOK_SIGNING_KEY_FILE`), the `whpk_` key beside it. The stack
/// verifies `v1a` with the public key, as a deployed backend does with `WEBHOOK_PUBLIC_KEY_ARN`.
#[derive(Clone)]
pub struct WorkerKeys {
    pub signing_key_path: PathBuf,
    pub public_key: String,
    /// Made at this start (else read from an earlier one).
    pub created: bool,
    signing_key: ed25519_dalek::SigningKey,
}

impl std::fmt::Debug for WorkerKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerKeys")
            .field("signing_key_path", &self.signing_key_path)
            .field("public_key", &self.public_key)
            .finish_non_exhaustive()
    }
}

impl WorkerKeys {
    pub fn signing_key(&self) -> ed25519_dalek::SigningKey {
        self.signing_key.clone()
    }

    /// Reads the pair under `data_dir`, or makes it there.
    pub fn ensure(data_dir: &std::path::Path) -> Result<Self, String> {
        let signing_key_path = data_dir.join(code2des_worker::SIGNING_KEY_FILE);
        let problem = |what: &str, e: std::io::Error| format!("{what} {}: {e}", signing_key_path.display());
        std::fs::create_dir_all(data_dir).map_err(|e| problem("cannot create the directory of", e))?;
        let (signing_key, created) = match std::fs::read_to_string(&signing_key_path) {
            Ok(text) => {
                let key = sw::parse_signing_key(&text).map_err(|e| format!("{}: {e}", signing_key_path.display()))?;
                (key, false)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = sw::generate_signing_key();
                write_private(&signing_key_path, &sw::encode_signing_key(&key))
                    .map_err(|e| problem("cannot write", e))?;
                (key, true)
            }
            Err(e) => return Err(problem("cannot read", e)),
        };
        let public_key = sw::encode_public_key(&signing_key.verifying_key());
        // A convenience copy for whoever configures a worker elsewhere; the stack reads it never.
        let _ = std::fs::write(data_dir.join(code2des_worker::PUBLIC_KEY_FILE), format!("{public_key}\n"));
        Ok(Self { signing_key_path, public_key, created, signing_key })
    }
}

/// Creates `path` readable and writable by its owner only, before anything is written to it.
fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(text.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()
}

/// The five functions, each built by its own `Deps::new` from one set of resources: the
/// same constructors the Lambda `main`s call.
pub async fn handlers(resources: &Resources) -> Result<Handlers, shared::config::SetupError> {
    Ok(Handlers {
        trigger: code2des_trigger::handler::Deps::new(resources).await?,
        lifecycle: code2des_lifecycle::handler::Deps::new(resources).await?,
        result: code2des_result::handler::Deps::new(resources).await?,
        webhook: code2des_webhook::handler::Deps::new(resources).await?,
        placement: code2des_placement::handler::Deps::new(resources).await?,
    })
}

/// Start-up failures, each with a message a newcomer can act on.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Config(String),
    #[error("cannot reach PostgreSQL ({0}). Is it running? Set DATABASE_URL to point elsewhere.")]
    Database(String),
    #[error(
        "nothing answers at {addr} (DATABASE_URL) and no PostgreSQL server is installed to start there \
         ({reason}). Install it with: {install} (or set PG_BIN to its binaries' directory, or DATABASE_URL to a \
         running PostgreSQL)",
        install = code2des_pgcluster::INSTALL_COMMAND
    )]
    NoPostgres { addr: String, reason: String },
    #[error("private PostgreSQL: {0}")]
    LocalPostgres(String),
    #[error("cannot apply migrations: {0}")]
    Migrate(String),
    #[error("cannot listen on {addr}: {reason} (choose another with {flag})")]
    Bind { addr: SocketAddr, reason: String, flag: &'static str },
    #[error("S3 endpoint {endpoint}: {reason}")]
    S3 { endpoint: String, reason: String },
}

/// Creates the database if missing and applies the migrations.
pub async fn prepare_database(url: &str) -> Result<DbConfig, StartError> {
    let cfg = DbConfig::from_url(url).map_err(|e| StartError::Config(e.to_string()))?;
    let created =
        shared::db::connect::ensure_database(&cfg, None).await.map_err(|e| StartError::Database(clean(&*e)))?;
    if created {
        tracing::info!(database = cfg.pg.get_dbname().unwrap_or_default(), "created database");
    }
    let mut client = shared::db::connect::connect(&cfg, None).await.map_err(|e| StartError::Database(clean(&*e)))?;
    let applied = shared::db::migrate::migrate(&mut client).await.map_err(|e| StartError::Migrate(e.to_string()))?;
    for m in applied {
        tracing::info!(migration = %m, "applied migration");
    }
    Ok(cfg)
}

fn clean(e: &(dyn std::error::Error + 'static)) -> String {
    shared::error::chain(e)
}

/// A running stack.
pub struct Running {
    pub addr: SocketAddr,
    /// The worker key pair the stack keeps, unless `WEBHOOK_PUBLIC_KEY` was given.
    pub worker_keys: Option<WorkerKeys>,
    pub s3_endpoint: String,
    pub s3: aws_sdk_s3::Client,
    pub pool: deadpool_postgres::Pool,
    pub bucket: String,
    stop: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    s3_server: Option<S3Server>,
}

impl Running {
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting, lets in-flight requests finish (up to 10 s), stops S3.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        for t in self.tasks {
            let _ = t.await;
        }
        if let Some(s3) = self.s3_server {
            s3.stop().await;
        }
    }
}

async fn bind(addr: SocketAddr, flag: &'static str) -> Result<TcpListener, StartError> {
    TcpListener::bind(addr).await.map_err(|e| StartError::Bind { addr, reason: e.to_string(), flag })
}

pub async fn start(mut cfg: Config) -> Result<Running, StartError> {
    let db = prepare_database(&cfg.database_url).await?;
    // After the database answered: a start that fails leaves no files behind.
    let worker_keys = match cfg.settings.webhook.public_key {
        SecretSource::Missing => {
            let keys = WorkerKeys::ensure(&cfg.data_dir).map_err(StartError::Config)?;
            cfg.settings.webhook.public_key = SecretSource::Plain(SecretString::from(keys.public_key.clone()));
            Some(keys)
        }
        _ => None,
    };
    let signing_key = worker_keys.as_ref().map(WorkerKeys::signing_key).or_else(|| cfg.worker_signing_key.clone());

    let (endpoint, s3_server, keys) = match &cfg.settings.s3_endpoint {
        Some(ep) => (ep.clone(), None, s3_keys(true)),
        None => {
            let listener = bind(cfg.s3_addr, "--s3-addr").await?;
            let server = s3server::serve(listener, &cfg.data_dir, cfg.bucket())
                .map_err(|e| StartError::S3 { endpoint: cfg.s3_addr.to_string(), reason: e.to_string() })?;
            (server.endpoint(), Some(server), s3_keys(false))
        }
    };
    let s3 = s3server::client(&endpoint, &keys.0, &keys.1);
    s3server::ensure_bucket(&s3, cfg.bucket())
        .await
        .map_err(|reason| StartError::S3 { endpoint: endpoint.clone(), reason })?;

    let pool =
        shared::db::connect::pool(&db, None, cfg.settings.pool_size).map_err(|e| StartError::Config(e.to_string()))?;
    let listener = bind(cfg.addr, "--addr").await?;
    let addr = listener.local_addr().map_err(|e| StartError::Bind {
        addr: cfg.addr,
        reason: e.to_string(),
        flag: "--addr",
    })?;
    let mut settings = cfg.settings.clone();
    settings.callback_url.get_or_insert_with(|| format!("http://{addr}/code2des/webhook"));
    let resources = Resources::prebuilt(settings, pool.clone(), db.cursor_key(), s3.clone())
        .map_err(|e| StartError::Config(e.to_string()))?;
    let handlers = Arc::new(handlers(&resources).await.map_err(|e| StartError::Config(e.to_string()))?);

    let (stop, stopped) = watch::channel(false);
    let mut tasks = vec![tokio::spawn(serve_http(listener, handlers, stopped.clone()))];
    if cfg.demo_worker {
        // Real conversions of captures (Chromium starts at the first one); a page import with
        // no capture fails its job with a message (no canned success: `code2des-worker --sample`
        // is the only way to the sample document).
        let mut worker = code2des_worker::Worker::new(s3.clone(), cfg.bucket().to_owned(), cfg.webhook_secret())
            .with_conversion(Default::default());
        if let Some(key) = signing_key.clone() {
            worker = worker.with_signing_key(key);
        }
        let mut stopped = stopped.clone();
        tasks.push(tokio::spawn(async move {
            worker
                .run(Duration::from_millis(300), async move {
                    let _ = stopped.changed().await;
                })
                .await
        }));
    }
    // The sweep, as EventBridge Scheduler runs it in AWS: the same function, on a timer.
    let sweep = code2des_sweep::Deps::new(&resources).await.map_err(|e| StartError::Config(e.to_string()))?;
    let mut sweep_stopped = stopped.clone();
    let every = cfg.sweep_every;
    tasks.push(tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = sweep_stopped.changed() => return,
                _ = tick.tick() => {
                    if let Err(e) = code2des_sweep::sweep(&sweep).await {
                        tracing::warn!(error = %e, "sweep failed; the next tick tries again");
                    }
                }
            }
        }
    }));
    // The purge (retention), as the schedule runs it in AWS: the same function, every hour.
    let purge = code2des_purge::Deps::new(&resources).await.map_err(|e| StartError::Config(e.to_string()))?;
    let mut purge_stopped = stopped.clone();
    tasks.push(tokio::spawn(async move {
        let mut tick = tokio::time::interval(PURGE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = purge_stopped.changed() => return,
                _ = tick.tick() => {
                    if let Err(e) = code2des_purge::purge(&purge).await {
                        tracing::warn!(error = %e, "purge failed; the next tick tries again");
                    }
                }
            }
        }
    }));
    // SPEC section 6: said once, at start-up, so nobody mistakes this for the deployed API.
    tracing::warn!(
        "local identity: `x-code2des-dev-sub`, or the `sub` of an `Authorization: Bearer` token read WITHOUT \
         verifying its signature (code2des-local only; a deployed API verifies tokens)"
    );
    tracing::info!(api = %format!("http://{addr}"), s3 = %endpoint, bucket = %cfg.bucket(), demo_worker = cfg.demo_worker, "code2des-local ready");
    Ok(Running {
        addr,
        worker_keys,
        s3_endpoint: endpoint,
        s3,
        pool,
        bucket: cfg.bucket().to_owned(),
        stop,
        tasks,
        s3_server,
    })
}

async fn serve_http(listener: TcpListener, handlers: Arc<Handlers>, stopped: watch::Receiver<bool>) {
    let make = move || {
        let h = handlers.clone();
        hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
            let h = h.clone();
            async move { Ok::<_, Infallible>(handle(&h, req).await) }
        })
    };
    crate::serve::until_stopped(listener, make, stopped, Duration::from_secs(10)).await;
}

async fn handle(h: &Handlers, req: http::Request<hyper::body::Incoming>) -> http::Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let bytes = match Limited::new(body, GATEWAY_MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            let mut r = http::Response::new(Full::new(Bytes::from_static(
                br#"{"error":{"code":"payload_too_large","message":"request body over the gateway limit"},"requestId":""}"#,
            )));
            *r.status_mut() = http::StatusCode::PAYLOAD_TOO_LARGE;
            r.headers_mut().insert("content-type", http::HeaderValue::from_static("application/json"));
            return r;
        }
    };
    let resp = gateway::dispatch(h, http::Request::from_parts(parts, bytes)).await;
    resp.map(Full::new)
}
