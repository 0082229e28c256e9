//! The in-process stack the benchmarks drive, built like `local/tests/api/helpers.rs` does:
//! a migrated database in the private cluster, the s3s server from `code2des_local::s3server`
//! on a loopback port, and each handler's `Deps` built directly. Plus the two instruments the
//! round-trip count uses: a PostgreSQL wire-protocol counting proxy and an S3 request counter.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use code2des_local::s3server::{self, S3Server};
use lambda_http::{Body, Request, Response};
use secrecy::SecretString;
use serde_json::{json, Value};
use shared::app::resources::Resources;
use shared::config::DatabaseSource;
use shared::config::{SecretSource, Settings};
use shared::db::connect::DbConfig;

pub const BUCKET: &str = "code2des-artifacts";
pub const SECRET: &str = "bench-webhook-secret";
pub const CALLBACK: &str = "https://api.example.test/code2des/webhook";
pub const NONCE: &str = "bench-nonce-0123456789abcdef";

pub struct App {
    pub db: DbConfig,
    pub url: String,
    pub pool: deadpool_postgres::Pool,
    pub s3: aws_sdk_s3::Client,
    pub s3_calls: Arc<S3Counter>,
    pub s3_server: S3Server,
    _s3_dir: tempfile::TempDir,
}

pub use code2des_local::seed::Tenant;

impl App {
    /// Creates (if needed) and migrates `db_name` in the cluster at `admin_url`'s server.
    pub async fn new(url: &str, pool_size: usize) -> Self {
        shared::db::connect::install_crypto_provider();
        let db = DbConfig::from_url(url).expect("a database URL");
        shared::db::connect::ensure_database(&db, None).await.expect("PostgreSQL reachable");
        let mut client = shared::db::connect::connect(&db, None).await.unwrap();
        shared::db::migrate::migrate(&mut client).await.expect("migrations apply");
        let pool = shared::db::connect::pool(&db, None, pool_size).unwrap();
        let s3_dir = tempfile::tempdir().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let s3_server = s3server::serve(listener, s3_dir.path(), BUCKET).unwrap();
        let plain = s3server::client(&s3_server.endpoint(), s3server::ACCESS_KEY, s3server::SECRET_KEY);
        let s3_calls = Arc::new(S3Counter::default());
        let conf = plain.config().to_builder().interceptor(CountS3(s3_calls.clone())).build();
        let s3 = aws_sdk_s3::Client::from_conf(conf);
        Self { db, url: url.to_owned(), pool, s3, s3_calls, s3_server, _s3_dir: s3_dir }
    }

    /// A pool of `size` to `url` (for instance through the counting proxy).
    pub fn pool_to(&self, url: &str, size: usize) -> deadpool_postgres::Pool {
        shared::db::connect::pool(&DbConfig::from_url(url).unwrap(), None, size).unwrap()
    }

    /// The bench settings: SPEC's defaults, this bucket, the bench webhook secret.
    pub fn settings(&self) -> Settings {
        Settings {
            database: DatabaseSource::Url(SecretString::from(self.url.clone())),
            webhook_secret: SecretSource::Plain(SecretString::from(SECRET)),
            webhook: Default::default(),
            bucket: Some(BUCKET.into()),
            s3_endpoint: None,
            callback_url: Some(CALLBACK.into()),
            deadline: shared::domain::job::DEFAULT_DEADLINE,
            max_attempts: shared::domain::job::DEFAULT_MAX_ATTEMPTS,
            pool_size: 2,
            ca_bundle: None,
        }
    }

    /// Resources around `pool` and this app's S3 client (`s3` to use another client).
    pub fn resources(&self, pool: &deadpool_postgres::Pool, s3: Option<aws_sdk_s3::Client>) -> Resources {
        Resources::prebuilt(self.settings(), pool.clone(), self.db.cursor_key(), s3.unwrap_or_else(|| self.s3.clone()))
            .expect("bench settings are complete")
    }

    // Each function is built by its own `Deps::new`, as its Lambda `main` builds it.

    pub async fn trigger(&self, pool: &deadpool_postgres::Pool) -> code2des_trigger::handler::Deps {
        code2des_trigger::handler::Deps::new(&self.resources(pool, None)).await.unwrap()
    }

    pub async fn lifecycle(&self, pool: &deadpool_postgres::Pool) -> code2des_lifecycle::handler::Deps {
        code2des_lifecycle::handler::Deps::new(&self.resources(pool, None)).await.unwrap()
    }

    pub async fn result(&self, pool: &deadpool_postgres::Pool) -> code2des_result::handler::Deps {
        code2des_result::handler::Deps::new(&self.resources(pool, None)).await.unwrap()
    }

    pub async fn result_with_s3(
        &self,
        pool: &deadpool_postgres::Pool,
        s3: aws_sdk_s3::Client,
    ) -> code2des_result::handler::Deps {
        code2des_result::handler::Deps::new(&self.resources(pool, Some(s3))).await.unwrap()
    }

    pub async fn webhook(&self, pool: &deadpool_postgres::Pool) -> code2des_webhook::handler::Deps {
        code2des_webhook::handler::Deps::new(&self.resources(pool, None)).await.unwrap()
    }

    pub async fn placement(&self, pool: &deadpool_postgres::Pool) -> code2des_placement::handler::Deps {
        code2des_placement::handler::Deps::new(&self.resources(pool, None)).await.unwrap()
    }

    /// A plain tokio-postgres connection (the "raw" side of the warm-path comparison).
    pub async fn raw_client(&self) -> tokio_postgres::Client {
        let (c, conn) = self.db.pg.connect(tokio_postgres::NoTls).await.expect("connect");
        tokio::spawn(conn);
        c
    }

    /// An organization with one project, a member and a completed page import.
    pub async fn tenant(&self) -> Tenant {
        let c = self.pool.get().await.unwrap();
        let sub = format!("sub-{}", uuid::Uuid::new_v4());
        let pi = format!("pi-{}", uuid::Uuid::new_v4().simple());
        let capture = format!("s3://{BUCKET}/captures/x.json");
        code2des_local::seed::tenant(&c, "org", &sub, &pi, "1", Some(&capture)).await.unwrap()
    }

    /// `n` processing jobs (nonce [`NONCE`]) inserted directly; their ids.
    pub async fn insert_jobs(&self, t: &Tenant, n: usize) -> Vec<String> {
        let ids: Vec<String> = (0..n).map(|_| uuid::Uuid::now_v7().to_string()).collect();
        let c = self.pool.get().await.unwrap();
        for chunk in ids.chunks(5000) {
            c.execute(
                "INSERT INTO code2des (id, organization_id, project_id, page_import_id, figma_file_key, screen_id, \
                 nonce, created_by, updated_by) \
                 SELECT id, $2, $3, $4, 'FILEkey123', 'screen-1', $5, $6, $6 FROM unnest($1::varchar[]) AS id",
                &[&chunk, &t.org, &t.project, &t.page_import, &NONCE, &t.sub],
            )
            .await
            .unwrap();
        }
        ids
    }

    /// Completes `id` as a worker would: `images` PNGs of `side`×`side` (noise, so about
    /// 3·side² bytes each) and a result artifact using them, then the row set completed.
    pub async fn complete(&self, id: &str, images: usize, side: u32) {
        let prefix = format!("code2des/{id}/1/");
        let mut map = serde_json::Map::new();
        let mut refs = Vec::new();
        for i in 0..images {
            let r = format!("img{i}");
            let key = format!("{prefix}images/{r}.png");
            self.put(&key, png(side, side)).await;
            map.insert(r.clone(), json!({"key": key, "mime_type": "image/png"}));
            refs.push(r);
        }
        let children: Vec<Value> = refs
            .iter()
            .map(|r| json!({"type": "RECTANGLE", "name": r, "fills": [{"type": "IMAGE", "imageRef": r, "scaleMode": "FILL"}]}))
            .collect();
        let art = json!({
            "version": 1, "kind": "result", "code2des_id": id, "attempt": 1, "nonce": NONCE, "warning_count": 0,
            "document": {"type": "FRAME", "name": "Screen", "children": children}, "images": map,
        });
        let key = format!("{prefix}result.json");
        self.put(&key, serde_json::to_vec(&art).unwrap()).await;
        let c = self.pool.get().await.unwrap();
        c.execute(
            "UPDATE code2des SET status = '1', result_url = $2, warning_count = 0, updated_by = 'system:worker' WHERE id = $1",
            &[&id, &format!("s3://{BUCKET}/{key}")],
        )
        .await
        .unwrap();
    }

    pub async fn put(&self, key: &str, bytes: Vec<u8>) {
        self.s3.put_object().bucket(BUCKET).key(key).body(bytes.into()).send().await.unwrap();
    }
}

// --- events ---------------------------------------------------------------------------------

pub fn events_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../events")
}

pub fn event(name: &str) -> Value {
    let path = events_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("event files are JSON")
}

/// A user-route event for this tenant as the JSON text API Gateway would deliver.
pub fn user_event(file: &str, t: &Tenant, id: Option<&str>, body: Option<String>) -> String {
    let mut ev = event(file);
    ev["pathParameters"]["organizationId"] = json!(t.org.to_string());
    ev["pathParameters"]["projectId"] = json!(t.project.to_string());
    if let Some(id) = id {
        ev["pathParameters"]["code2desId"] = json!(id);
    }
    ev["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = json!(t.sub);
    if let Some(b) = body {
        ev["body"] = json!(b);
    }
    if let Some(h) = ev["headers"].as_object_mut() {
        h.remove("idempotency-key");
    }
    ev.to_string()
}

pub fn trigger_event(t: &Tenant) -> String {
    let body = json!({"pageImportId": t.page_import, "figmaFileKey": "FILEkey123", "screenId": "screen-1"});
    user_event("trigger.json", t, None, Some(body.to_string()))
}

pub fn get_event(t: &Tenant, id: &str) -> String {
    user_event("lifecycle-get.json", t, Some(id), None)
}

pub fn list_event(t: &Tenant) -> String {
    let mut ev: Value = serde_json::from_str(&user_event("lifecycle-list.json", t, None, None)).unwrap();
    ev["rawQueryString"] = json!("");
    ev.as_object_mut().unwrap().remove("queryStringParameters");
    ev.to_string()
}

pub fn result_event(t: &Tenant, id: &str) -> String {
    user_event("result.json", t, Some(id), None)
}

pub fn placement_event(t: &Tenant, id: &str) -> String {
    user_event("placement.json", t, Some(id), Some(json!({"nodeId": "12:34"}).to_string()))
}

/// The worker's signed "completed" report for `id` (signed now).
pub fn webhook_event(id: &str) -> String {
    let body = json!({
        "code2des_id": id, "attempt": 1, "nonce": NONCE, "status": "completed",
        "result_url": format!("s3://{BUCKET}/code2des/{id}/1/result.json"), "warning_count": 0,
    })
    .to_string();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let mut ev = event("webhook.json");
    ev["headers"]["code2des-signature"] =
        json!(shared::domain::signature::header_value(SECRET.as_bytes(), now, body.as_bytes()));
    ev["body"] = json!(body);
    ev.to_string()
}

pub fn request(ev: &str) -> Request {
    lambda_http::request::from_str(ev).expect("an API Gateway v2 event")
}

/// Status and body length of a response.
pub fn answer(resp: Response<Body>) -> (u16, usize) {
    (resp.status().as_u16(), resp.body().len())
}

// --- images ---------------------------------------------------------------------------------

/// A real RGB PNG with random pixels (incompressible): about 3·w·h bytes.
pub fn png(w: u32, h: u32) -> Vec<u8> {
    code2des_local::seed::png(w, h, true)
}

// --- S3 request counter ---------------------------------------------------------------------

/// S3 requests sent (every attempt), by method.
#[derive(Debug, Default)]
pub struct S3Counter {
    pub get: AtomicU64,
    pub head: AtomicU64,
    pub put: AtomicU64,
    pub other: AtomicU64,
}

impl S3Counter {
    pub fn snapshot(&self) -> [u64; 4] {
        [&self.get, &self.head, &self.put, &self.other].map(|c| c.load(Ordering::Relaxed))
    }
}

#[derive(Debug)]
struct CountS3(Arc<S3Counter>);

impl aws_sdk_s3::config::Intercept for CountS3 {
    fn name(&self) -> &'static str {
        "bench-s3-counter"
    }

    fn read_before_transmit(
        &self,
        context: &aws_sdk_s3::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _rc: &aws_sdk_s3::config::RuntimeComponents,
        _cfg: &mut aws_sdk_s3::config::ConfigBag,
    ) -> Result<(), aws_sdk_s3::error::BoxError> {
        let c = &self.0;
        let counter = match context.request().method() {
            "GET" => &c.get,
            "HEAD" => &c.head,
            "PUT" => &c.put,
            _ => &c.other,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}
