//! The in-process stack the benchmarks drive, on code2des-testkit's pieces as the handler tests
//! (`local/tests/api/helpers.rs`) are: a migrated database in the private cluster, the loopback
//! S3 server, and each handler's `Deps` built directly. Its S3 client counts the requests it
//! sends (the round-trip count and hydration read them); the PostgreSQL side is counted by the
//! wire-protocol proxy ([`crate::pgproxy`]). Events are JSON text, parsed on every call as the
//! runtime parses what API Gateway sends.

use std::sync::Arc;

use code2des_testkit::s3::{LoopbackS3, S3Requests};
use code2des_testkit::{events, worker, Fixture};
use lambda_http::{Body, Request, Response};
use serde_json::json;
use shared::app::resources::Resources;
use shared::db::connect::DbConfig;

pub use code2des_testkit::{Tenant, BUCKET};

/// The nonce of every job the benchmarks insert directly.
pub const NONCE: &str = "bench-nonce-0123456789abcdef";

pub struct App {
    pub db: DbConfig,
    pub url: String,
    pub pool: deadpool_postgres::Pool,
    /// A client of [`App::store`] whose every request [`App::s3_calls`] counts.
    pub s3: aws_sdk_s3::Client,
    pub s3_calls: Arc<S3Requests>,
    pub store: LoopbackS3,
}

impl App {
    /// Creates and migrates the database of `url` (in the benchmarks' private cluster), a pool
    /// of `pool_size` to it, and starts the S3 server.
    pub async fn new(url: &str, pool_size: usize) -> Self {
        let Fixture { url, db, pool, s3: store } = Fixture::start(url, pool_size).await;
        let (s3, s3_calls) = code2des_testkit::s3::counted(&store.client);
        Self { db, url, pool, s3, s3_calls, store }
    }

    /// A pool of `size` to `url` (for instance through the counting proxy).
    pub fn pool_to(&self, url: &str, size: usize) -> deadpool_postgres::Pool {
        shared::db::connect::pool(&DbConfig::from_url(url).unwrap(), None, size).unwrap()
    }

    /// Resources around `pool` and this app's S3 client (`s3` to use another client), with the
    /// test settings.
    pub fn resources(&self, pool: &deadpool_postgres::Pool, s3: Option<aws_sdk_s3::Client>) -> Resources {
        let settings = code2des_testkit::settings(&self.url, 2);
        code2des_testkit::resources(settings, &self.db, pool, s3.unwrap_or_else(|| self.s3.clone()))
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
        code2des_testkit::tenant(&self.pool.get().await.unwrap(), "1").await
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
        let (map, refs) = worker::images(id, images);
        for (_, key) in &refs {
            self.put(key, png(side, side)).await;
        }
        let used: Vec<&str> = refs.iter().map(|(r, _)| r.as_str()).collect();
        let mut art = worker::artifact(id, NONCE, map, &used);
        art["warning_count"] = json!(0);
        let key = format!("code2des/{id}/1/result.json");
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

// --- events, as the JSON text API Gateway would deliver ----------------------------------------

/// A user-route event for this tenant, as its member.
fn user_event(file: &str, t: &Tenant, id: Option<&str>, body: Option<String>) -> String {
    events::user_event(file, t, Some(&t.sub), id, body).to_string()
}

pub fn trigger_event(t: &Tenant) -> String {
    events::trigger_event(t, Some(&t.sub), events::default_body(t), None).to_string()
}

/// `POST {base}/{id}/retry` with `{}`.
pub fn retry_event(t: &Tenant, id: &str) -> String {
    user_event("retry.json", t, Some(id), Some("{}".to_owned()))
}

pub fn get_event(t: &Tenant, id: &str) -> String {
    user_event("lifecycle-get.json", t, Some(id), None)
}

/// The list without query parameters (the first page of 50).
pub fn list_event(t: &Tenant) -> String {
    events::list_event(t, Some(&t.sub), &[]).to_string()
}

pub fn result_event(t: &Tenant, id: &str) -> String {
    user_event("result.json", t, Some(id), None)
}

pub fn placement_event(t: &Tenant, id: &str) -> String {
    user_event("placement.json", t, Some(id), Some(json!({"nodeId": "12:34"}).to_string()))
}

/// The worker's signed "completed" report for `id` (signed now).
pub fn webhook_event(id: &str) -> String {
    let key = format!("code2des/{id}/1/result.json");
    let body = worker::completed_report(id, 1, NONCE, &key, json!(0)).to_string();
    events::webhook_event(body.as_bytes(), Some(worker::sign(body.as_bytes()))).to_string()
}

pub fn request(ev: &str) -> Request {
    events::parse(ev)
}

/// Status and body length of a response.
pub fn answer(resp: Response<Body>) -> (u16, usize) {
    (resp.status().as_u16(), resp.body().len())
}

/// A real RGB PNG with random pixels (incompressible): about 3·w·h bytes.
pub fn png(w: u32, h: u32) -> Vec<u8> {
    worker::png_with(w, h, true)
}
