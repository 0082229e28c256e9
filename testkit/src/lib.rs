//! Test support for the Code2Des backend: what the handler tests (`local/tests`), the shared
//! crate's tests and the benchmarks (`bench/`) build around the real code, written once.
//!
//! | module | holds |
//! |---|---|
//! | [`cluster`] | a private PostgreSQL cluster on a free loopback port (no feature needed) |
//! | `db` | the tests' server, databases created and migrated, dropped again |
//! | `s3` | the loopback S3 server, and a counter of an S3 client's requests |
//! | crate root | the test settings, [`Fixture`] (database, pool and S3 together), tenants |
//! | `events` | requests from the committed `events/*.json` |
//! | `worker` | PNGs, artifacts, signed worker reports |
//! | `process` | a child process killed on drop, waiting for a port |
//! | `otlp` | an OTLP/HTTP trace receiver on loopback (feature `otlp`) |
//!
//! Everything but [`cluster`] needs the `stack` feature: it builds on the shared crate and
//! code2des-local, which the shared crate's own tests must not depend on.
#![allow(clippy::disallowed_methods)] // a benchmark or test fixture that meets a row it cannot read stops: not the request path

pub mod cluster;

#[cfg(feature = "stack")]
pub mod db;
#[cfg(feature = "stack")]
pub mod events;
#[cfg(feature = "otlp")]
pub mod otlp;
#[cfg(feature = "stack")]
pub mod process;
#[cfg(feature = "stack")]
pub mod s3;
#[cfg(feature = "stack")]
pub mod worker;

#[cfg(feature = "stack")]
pub use stack::*;

#[cfg(feature = "stack")]
mod stack {
    use secrecy::SecretString;
    use shared::app::resources::Resources;
    use shared::config::{DatabaseSource, SecretSource, Settings};
    use shared::db::connect::DbConfig;
    use shared::domain::scope::Scope;

    pub use code2des_local::seed::Tenant;

    use crate::s3::LoopbackS3;

    /// The artifact bucket of every test and benchmark.
    pub const BUCKET: &str = "code2des-artifacts";
    /// The webhook secret of every test and benchmark; `events/webhook.json` is signed with it.
    pub const SECRET: &str = "test-webhook-secret";
    /// The callback URL the manifests name.
    pub const CALLBACK: &str = "https://api.example.test/code2des/webhook";

    /// The settings the tests and the benchmarks run the functions with: SPEC's defaults, the
    /// database at `database_url`, [`BUCKET`], [`SECRET`], [`CALLBACK`].
    pub fn settings(database_url: &str, pool_size: usize) -> Settings {
        Settings {
            database: DatabaseSource::Url(SecretString::from(database_url.to_owned())),
            webhook_secret: SecretSource::Plain(SecretString::from(SECRET)),
            webhook: Default::default(),
            bucket: Some(BUCKET.into()),
            s3_endpoint: None,
            callback_url: Some(CALLBACK.into()),
            deadline: shared::domain::job::DEFAULT_DEADLINE,
            max_attempts: shared::domain::job::DEFAULT_MAX_ATTEMPTS,
            pool_size,
            ca_bundle: None,
            artifact_retention: None,
            purge_after_days: shared::config::DEFAULT_PURGE_AFTER_DAYS,
            max_active_jobs_per_org: shared::domain::quota::DEFAULT_MAX_ACTIVE_JOBS_PER_ORG,
            triggers_per_minute: shared::domain::quota::DEFAULT_TRIGGERS_PER_MINUTE,
            db_retry_after: shared::error::RETRY_AFTER_SECS,
        }
    }

    /// What the five functions run against: a new migrated database with a pool, and the
    /// loopback S3 server with [`BUCKET`].
    pub struct Fixture {
        pub url: String,
        pub db: DbConfig,
        pub pool: deadpool_postgres::Pool,
        pub s3: LoopbackS3,
    }

    impl Fixture {
        /// Creates and migrates the database of `url` (it must not exist yet), a pool of
        /// `pool_size` to it, and starts the S3 server.
        pub async fn start(url: &str, pool_size: usize) -> Self {
            let (db, _migrated) = crate::db::create_migrated(url).await;
            let pool = shared::db::connect::pool(&db, None, pool_size).unwrap();
            let s3 = LoopbackS3::start(BUCKET).await;
            Self { url: url.to_owned(), db, pool, s3 }
        }
    }

    /// The resources a function's `Deps::new` takes, around `pool` and `s3` rather than ones
    /// built from `settings` (as a Lambda would): the test's own database and S3 server.
    pub fn resources(
        settings: Settings,
        db: &DbConfig,
        pool: &deadpool_postgres::Pool,
        s3: aws_sdk_s3::Client,
    ) -> Resources {
        Resources::prebuilt(settings, pool.clone(), db.cursor_key(), s3).expect("the test settings are complete")
    }

    /// A tenant seeded by SQL (SPEC section 2 lets tests insert the product's tables): an
    /// organization with one project, a member, and a page import of status `page_status`
    /// ('0' processing, '1' completed, '2' failed) whose capture is in [`BUCKET`].
    pub async fn tenant(c: &tokio_postgres::Client, page_status: &str) -> Tenant {
        let sub = format!("sub-{}", uuid::Uuid::new_v4());
        let pi = format!("pi-{}", uuid::Uuid::new_v4().simple());
        let capture = format!("s3://{BUCKET}/captures/x.json");
        code2des_local::seed::tenant(c, "org", &sub, &pi, page_status, Some(&capture)).await.expect("tenant seeded")
    }

    /// Another page import, of status `status`, in the tenant's project; its id.
    pub async fn page_import(c: &tokio_postgres::Client, t: &Tenant, status: &str) -> String {
        let pi = format!("pi-{}", uuid::Uuid::new_v4().simple());
        c.execute(
            "INSERT INTO page_import (id, organization_id, project_id, status) \
             VALUES ($1, $2, $3, $4::text::page_import_status)",
            &[&pi, &t.org, &t.project, &status],
        )
        .await
        .expect("page import seeded");
        pi
    }

    /// Makes `sub` a member of organization `org`.
    pub async fn add_member(c: &tokio_postgres::Client, org: i32, sub: &str) {
        c.execute("INSERT INTO organization_member (organization_id, subject) VALUES ($1, $2)", &[&org, &sub])
            .await
            .expect("member added");
    }

    /// The tenant as the statements of `shared::db` take it.
    pub fn scope(t: &Tenant) -> Scope {
        use shared::domain::ids::{OrganizationId, ProjectId, Subject};
        Scope {
            organization_id: OrganizationId::parse(&t.org.to_string()).unwrap(),
            project_id: ProjectId::parse(&t.project.to_string()).unwrap(),
            subject: Subject::parse(&t.sub).unwrap(),
        }
    }
}
