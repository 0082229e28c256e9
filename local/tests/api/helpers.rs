//! The test harness: a fresh PostgreSQL database per test (migrated), a real S3-compatible
//! server (s3s-fs) on a loopback port per test, the five handlers wired to both, tenants
//! seeded with plain SQL, and requests built from the same `events/*.json` that
//! `sam local invoke -e` uses. The pieces are code2des-testkit's (the benchmarks build on them
//! too); this module wires them to the handlers and reads the answers.
#![allow(clippy::disallowed_methods)]
// tests may panic on a row that does not read: that is a failure

// Each test binary that includes this module (api, api_security, trigger_hung_database) uses a
// part of it.
#![allow(dead_code, unused_imports)]

use std::time::Duration;

use code2des_testkit::s3::LoopbackS3;
use code2des_testkit::Fixture;
use lambda_http::{Body, Response};
use serde_json::{json, Value};
use shared::config::Settings;
use shared::db::connect::DbConfig;
use shared::http::routes::{Function, Route};

pub use code2des_testkit::db::{admin_url, db_url, drop_database};
pub use code2des_testkit::events::{
    default_body, list_event, load as event, request as to_request, trigger_event, user_event, webhook_event,
};
pub use code2des_testkit::worker::{artifact, now, png, png_with, progress_body, sign};
pub use code2des_testkit::{Tenant, BUCKET, CALLBACK, SECRET};

/// A response, read.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub json: Value,
}

impl Answer {
    pub fn from(resp: Response<Body>) -> Self {
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let bytes: &[u8] = resp.body().as_ref();
        let json = if bytes.is_empty() { Value::Null } else { serde_json::from_slice(bytes).expect("a JSON body") };
        Self { status, headers, json }
    }

    pub fn code(&self) -> &str {
        self.json["error"]["code"].as_str().unwrap_or("")
    }

    pub fn message(&self) -> &str {
        self.json["error"]["message"].as_str().unwrap_or("")
    }

    /// 400 naming `field` in the message, in the SPEC error shape.
    pub fn assert_invalid(&self, field: &str) {
        assert_eq!(self.status, 400, "{field}: {self:?}");
        assert_eq!(self.code(), "invalid_request", "{self:?}");
        assert!(self.message().starts_with(field), "message should name {field}: {self:?}");
        assert!(self.json["requestId"].is_string(), "{self:?}");
    }
}

/// For a test that replays a race round after round through one tenant: more triggers and
/// retries a minute than the default quotas let one subject make, so they are raised out of its
/// way (local/tests/api/quota.rs tests the quotas themselves).
pub fn many_jobs(s: &mut Settings) {
    s.max_active_jobs_per_org = 10_000;
    s.triggers_per_minute = 10_000;
}

/// The five functions wired to a fresh database and S3 server of this test's own.
pub struct TestApp {
    pub db_name: String,
    pub db: DbConfig,
    pub pool: deadpool_postgres::Pool,
    /// A client of [`TestApp::store`].
    pub s3: aws_sdk_s3::Client,
    pub store: LoopbackS3,
    pub trigger: code2des_trigger::handler::Deps,
    pub lifecycle: code2des_lifecycle::handler::Deps,
    pub result: code2des_result::handler::Deps,
    pub webhook: code2des_webhook::handler::Deps,
    pub placement: code2des_placement::handler::Deps,
    pub policy: shared::domain::job::Policy,
}

impl TestApp {
    pub async fn new() -> Self {
        Self::with(|_| {}).await
    }

    pub async fn with_deadline(deadline: Duration) -> Self {
        Self::with(|s| s.deadline = deadline).await
    }

    /// The five functions built by their own `Deps::new`, as a Lambda builds them, from the
    /// test settings after `adjust` changed whatever the test needs.
    pub async fn with(adjust: impl FnOnce(&mut Settings)) -> Self {
        let db_name = code2des_testkit::db::unique_name("c2d_test");
        let Fixture { url, db, pool, s3: store } = Fixture::start(&db_url(&db_name), 40).await;
        let mut settings = code2des_testkit::settings(&url, 40);
        adjust(&mut settings);
        let resources = code2des_testkit::resources(settings, &db, &pool, store.client.clone());
        let h = code2des_local::stack::handlers(&resources).await.expect("the functions build");
        Self {
            trigger: h.trigger,
            lifecycle: h.lifecycle,
            result: h.result,
            webhook: h.webhook,
            placement: h.placement,
            policy: resources.settings.policy(),
            db_name,
            db,
            pool,
            s3: store.client.clone(),
            store,
        }
    }

    // --- SQL ---------------------------------------------------------------------------------

    pub async fn sql(&self, q: &str) -> Vec<tokio_postgres::Row> {
        let c = self.pool.get().await.unwrap();
        c.query(q, &[]).await.unwrap_or_else(|e| panic!("{q}: {e}"))
    }

    /// Several statements at once (DDL in tests).
    pub async fn batch(&self, q: &str) {
        let c = self.pool.get().await.unwrap();
        c.batch_execute(q).await.unwrap_or_else(|e| panic!("{q}: {e}"));
    }

    /// Makes every UPDATE of a job hold its row lock for `ms`: racing statements then reliably
    /// take their snapshots while the winner is still uncommitted, which is the window where a
    /// READ COMMITTED read-after-lost-update goes wrong.
    pub async fn widen_race_window(&self, ms: u32) {
        self.batch(&format!(
            "CREATE FUNCTION slow_update() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
               PERFORM pg_sleep({ms} / 1000.0); RETURN NEW; END $$; \
             CREATE TRIGGER slow_update BEFORE UPDATE ON code2des FOR EACH ROW EXECUTE FUNCTION slow_update();"
        ))
        .await;
    }

    pub async fn scalar_i64(&self, q: &str) -> i64 {
        self.sql(q).await[0].get(0)
    }

    pub async fn count_jobs(&self) -> i64 {
        self.scalar_i64("SELECT count(*) FROM code2des").await
    }

    pub async fn tenant(&self) -> Tenant {
        self.tenant_with("1").await
    }

    /// A tenant whose page import has `page_status` ('0', '1', '2').
    pub async fn tenant_with(&self, page_status: &str) -> Tenant {
        code2des_testkit::tenant(&self.pool.get().await.unwrap(), page_status).await
    }

    /// Another page import in the same project.
    pub async fn page_import(&self, t: &Tenant, status: &str) -> String {
        code2des_testkit::page_import(&self.pool.get().await.unwrap(), t, status).await
    }

    pub async fn add_member(&self, org: i32, sub: &str) {
        code2des_testkit::add_member(&self.pool.get().await.unwrap(), org, sub).await
    }

    pub async fn job_row(&self, id: &str) -> tokio_postgres::Row {
        let c = self.pool.get().await.unwrap();
        c.query_one("SELECT *, status::text AS status_label FROM code2des WHERE id = $1", &[&id]).await.unwrap()
    }

    /// Sets created_at back so the job is past any short deadline.
    /// Moves the job, and the start of its current attempt, `secs` into the past.
    pub async fn age(&self, id: &str, secs: i64) {
        self.batch(&format!(
            "UPDATE code2des SET created_at = created_at - interval '{secs} seconds' WHERE id = '{id}'; \
             UPDATE code2des_attempt SET started_at = started_at - interval '{secs} seconds' WHERE code2des_id = '{id}'"
        ))
        .await;
    }

    /// Runs the deadline sweep, as the scheduled function does.
    pub async fn sweep(&self) -> usize {
        let deps = code2des_sweep::Deps { pool: self.pool.clone(), deadline: self.policy.deadline };
        code2des_sweep::sweep(&deps).await.expect("the sweep runs")
    }

    // --- requests ----------------------------------------------------------------------------

    /// Hands `ev` to the function that the route table names for its route key, as API
    /// Gateway (and code2des-local's gateway) routes it.
    pub async fn dispatch(&self, ev: &Value) -> Answer {
        let key = ev["routeKey"].as_str().expect("an event with a routeKey");
        let route = Route::by_key(key).unwrap_or_else(|| panic!("{key} is not in the route table"));
        let req = to_request(ev);
        Answer::from(match route.function {
            Function::Trigger => code2des_trigger::handler::handle(&self.trigger, req).await,
            Function::Lifecycle => code2des_lifecycle::handler::handle(&self.lifecycle, req).await,
            Function::Result => code2des_result::handler::handle(&self.result, req).await,
            Function::Webhook => code2des_webhook::handler::handle(&self.webhook, req).await,
            Function::Placement => code2des_placement::handler::handle(&self.placement, req).await,
        })
    }

    pub async fn trigger_raw(&self, ev: Value) -> Answer {
        Answer::from(code2des_trigger::handler::handle(&self.trigger, to_request(&ev)).await)
    }

    pub async fn trigger(&self, t: &Tenant) -> Answer {
        self.trigger_raw(trigger_event(t, Some(&t.sub), default_body(t), None)).await
    }

    /// Triggers and returns the new job id (asserting 202).
    pub async fn new_job(&self, t: &Tenant) -> String {
        let a = self.trigger(t).await;
        assert_eq!(a.status, 202, "{a:?}");
        a.json["code2desId"].as_str().unwrap().to_owned()
    }

    pub async fn get(&self, t: &Tenant, sub: Option<&str>, id: &str) -> Answer {
        let ev = user_event("lifecycle-get.json", t, sub, Some(id), None);
        Answer::from(code2des_lifecycle::handler::handle(&self.lifecycle, to_request(&ev)).await)
    }

    pub async fn list(&self, t: &Tenant, sub: Option<&str>, query: &[(&str, &str)]) -> Answer {
        let ev = list_event(t, sub, query);
        Answer::from(code2des_lifecycle::handler::handle(&self.lifecycle, to_request(&ev)).await)
    }

    pub async fn result(&self, t: &Tenant, sub: Option<&str>, id: &str) -> Answer {
        let ev = user_event("result.json", t, sub, Some(id), None);
        Answer::from(code2des_result::handler::handle(&self.result, to_request(&ev)).await)
    }

    pub async fn result_images(&self, t: &Tenant, id: &str, refs: &str) -> Answer {
        let mut ev = user_event("result.json", t, Some(&t.sub), Some(id), None);
        ev["rawQueryString"] = json!(format!("images={refs}"));
        Answer::from(code2des_result::handler::handle(&self.result, to_request(&ev)).await)
    }

    pub async fn place(&self, t: &Tenant, sub: Option<&str>, id: &str, node: &str) -> Answer {
        let ev = user_event("placement.json", t, sub, Some(id), Some(json!({"nodeId": node}).to_string()));
        Answer::from(code2des_placement::handler::handle(&self.placement, to_request(&ev)).await)
    }

    pub async fn webhook_raw(&self, body: &[u8], signature: Option<String>) -> Answer {
        let ev = webhook_event(body, signature);
        Answer::from(code2des_webhook::handler::handle(&self.webhook, to_request(&ev)).await)
    }

    /// Sends `body` signed now with the test secret.
    pub async fn webhook(&self, body: &Value) -> Answer {
        let raw = serde_json::to_vec(body).unwrap();
        self.webhook_raw(&raw, Some(sign(&raw))).await
    }

    // --- worker side -------------------------------------------------------------------------

    pub async fn manifest(&self, id: &str) -> shared::domain::protocol::Manifest {
        let out =
            self.s3.get_object().bucket(BUCKET).key(format!("code2des/{id}/1/manifest.json")).send().await.unwrap();
        serde_json::from_slice(&out.body.collect().await.unwrap().into_bytes()).unwrap()
    }

    pub async fn put(&self, key: &str, bytes: Vec<u8>) {
        self.s3.put_object().bucket(BUCKET).key(key).body(bytes.into()).send().await.unwrap();
    }

    /// Worker: writes `artifact` (JSON) as result.json and the images, then the webhook.
    pub async fn complete_with(&self, id: &str, artifact: Value, images: &[(&str, Vec<u8>)]) -> Answer {
        let report = self.upload_result(id, &artifact, images).await;
        self.webhook(&report).await
    }

    /// Worker: writes the images and `artifact` as result.json; the completion report to send.
    pub async fn upload_result(&self, id: &str, artifact: &Value, images: &[(&str, Vec<u8>)]) -> Value {
        for (key, bytes) in images {
            self.put(key, bytes.clone()).await;
        }
        let key = format!("code2des/{id}/1/result.json");
        self.put(&key, serde_json::to_vec(artifact).unwrap()).await;
        let m = self.manifest(id).await;
        code2des_testkit::worker::completed_report(id, 1, &m.nonce, &key, artifact["warning_count"].clone())
    }

    /// Worker: a valid artifact with one PNG of `w`×`h` as image "hero".
    pub async fn complete(&self, id: &str) -> Answer {
        let m = self.manifest(id).await;
        let key = format!("code2des/{id}/1/images/hero.png");
        let artifact = artifact(id, &m.nonce, json!({"hero": {"key": key, "mime_type": "image/png"}}), &["hero"]);
        self.complete_with(id, artifact, &[(&key, png(8, 8))]).await
    }

    pub async fn fail(&self, id: &str, message: &str) -> Answer {
        let m = self.manifest(id).await;
        self.webhook(
            &json!({"code2des_id": id, "attempt": 1, "nonce": m.nonce, "status": "failed", "error_message": message}),
        )
        .await
    }

    /// Stops the S3 server: the next S3 call fails like an outage.
    pub async fn stop_s3(&mut self) {
        self.store.stop().await;
    }

    // --- SPEC section 7: retry, cancel, delete, progress --------------------------------------

    /// `POST {base}/{id}/retry` with `body` (JSON text, or anything a client might send).
    pub async fn retry_raw(&self, t: &Tenant, sub: Option<&str>, id: &str, body: &str) -> Answer {
        let ev = user_event("retry.json", t, sub, Some(id), Some(body.to_owned()));
        Answer::from(code2des_trigger::handler::handle(&self.trigger, to_request(&ev)).await)
    }

    /// Retries as the tenant's member: `Some(n)` sends `{"attempt":n}`, `None` sends `{}`.
    pub async fn retry(&self, t: &Tenant, id: &str, attempt: Option<i32>) -> Answer {
        self.retry_as(t, Some(&t.sub), id, attempt).await
    }

    pub async fn retry_as(&self, t: &Tenant, sub: Option<&str>, id: &str, attempt: Option<i32>) -> Answer {
        let body = match attempt {
            Some(n) => json!({ "attempt": n }),
            None => json!({}),
        };
        self.retry_raw(t, sub, id, &body.to_string()).await
    }

    /// `POST {base}/{id}/cancel`.
    pub async fn cancel(&self, t: &Tenant, sub: Option<&str>, id: &str) -> Answer {
        let ev = user_event("lifecycle-cancel.json", t, sub, Some(id), None);
        Answer::from(code2des_lifecycle::handler::handle(&self.lifecycle, to_request(&ev)).await)
    }

    /// `DELETE {base}/{id}`.
    pub async fn delete(&self, t: &Tenant, sub: Option<&str>, id: &str) -> Answer {
        let ev = user_event("lifecycle-delete.json", t, sub, Some(id), None);
        Answer::from(code2des_lifecycle::handler::handle(&self.lifecycle, to_request(&ev)).await)
    }

    /// `GET {base}/{id}/result` with `If-None-Match: etag`.
    pub async fn result_if_none_match(&self, t: &Tenant, id: &str, etag: &str) -> Answer {
        let mut ev = user_event("result.json", t, Some(&t.sub), Some(id), None);
        ev["headers"]["if-none-match"] = json!(etag);
        Answer::from(code2des_result::handler::handle(&self.result, to_request(&ev)).await)
    }

    /// The manifest of attempt `attempt`, as the worker reads it.
    pub async fn manifest_at(&self, id: &str, attempt: i32) -> shared::domain::protocol::Manifest {
        let key = shared::domain::protocol::Manifest::key(id, attempt);
        let out = self.s3.get_object().bucket(BUCKET).key(&key).send().await.unwrap_or_else(|e| panic!("{key}: {e}"));
        serde_json::from_slice(&out.body.collect().await.unwrap().into_bytes()).unwrap()
    }

    /// Whether the artifact bucket holds `key`.
    pub async fn object_exists(&self, key: &str) -> bool {
        self.s3.head_object().bucket(BUCKET).key(key).send().await.is_ok()
    }

    /// Worker: a signed progress report for `(id, attempt, nonce)`.
    pub async fn progress(&self, id: &str, attempt: i32, nonce: &str, percent: i64, stage: &str) -> Answer {
        self.webhook(&progress_body(id, attempt, nonce, percent, stage)).await
    }

    /// Worker of attempt `attempt`: a valid result (one 8×8 PNG "hero") under that attempt's
    /// prefix, then the completion report.
    pub async fn complete_at(&self, id: &str, attempt: i32) -> Answer {
        let report = self.upload_result_at(id, attempt).await;
        self.webhook(&report).await
    }

    /// Worker of attempt `attempt`: uploads a valid result; the completion report to send.
    pub async fn upload_result_at(&self, id: &str, attempt: i32) -> Value {
        let m = self.manifest_at(id, attempt).await;
        let prefix = format!("code2des/{id}/{attempt}/");
        let image = format!("{prefix}images/hero.png");
        let mut art = artifact(id, &m.nonce, json!({"hero": {"key": image, "mime_type": "image/png"}}), &["hero"]);
        art["attempt"] = json!(attempt);
        self.put(&image, png(8, 8)).await;
        let key = format!("{prefix}result.json");
        self.put(&key, serde_json::to_vec(&art).unwrap()).await;
        code2des_testkit::worker::completed_report(id, attempt, &m.nonce, &key, art["warning_count"].clone())
    }

    /// Worker of attempt `attempt`: a failure report with `message`.
    pub async fn fail_at(&self, id: &str, attempt: i32, message: &str) -> Answer {
        let m = self.manifest_at(id, attempt).await;
        self.webhook(&json!({"code2des_id": id, "attempt": attempt, "nonce": m.nonce, "status": "failed",
                              "error_message": message}))
            .await
    }

    /// Every row of the job tables as text, in a stable order: equal before and after means
    /// nothing was written.
    pub async fn snapshot(&self) -> Vec<String> {
        let mut out = Vec::new();
        for table in ["code2des", "code2des_attempt", "code2des_idempotency"] {
            for r in
                self.sql(&format!("SELECT row_to_json(t)::text FROM {table} t ORDER BY row_to_json(t)::text")).await
            {
                out.push(format!("{table}: {}", r.get::<_, String>(0)));
            }
        }
        out
    }

    /// Every key in the artifact bucket.
    pub async fn object_keys(&self) -> Vec<String> {
        let out = self.s3.list_objects_v2().bucket(BUCKET).send().await.unwrap();
        let mut keys: Vec<String> = out.contents().iter().filter_map(|o| o.key().map(str::to_owned)).collect();
        keys.sort();
        keys
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        drop_database(&self.db_name);
    }
}
