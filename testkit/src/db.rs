//! Databases for tests: where they are created (the machine's PostgreSQL unless `TEST_PG_URL`
//! says otherwise), created and migrated as the migrate function does it, and dropped again.

use shared::db::connect::DbConfig;

/// The maintenance database tests create theirs from; the machine's PostgreSQL by default.
pub fn admin_url() -> String {
    std::env::var("TEST_PG_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

/// [`admin_url`] without its database: `postgres://user@host:port`.
pub fn server_url() -> String {
    let admin = admin_url();
    admin.rsplit_once('/').map(|(b, _)| b.to_owned()).unwrap_or(admin)
}

/// The URL of database `name` on the tests' server.
pub fn db_url(name: &str) -> String {
    format!("{}/{name}", server_url())
}

/// The URL of database `name` as another user (say, the application role of migration V4).
pub fn db_url_as(name: &str, user: &str) -> String {
    db_url(name).replacen("postgres@", &format!("{user}@"), 1)
}

/// A database name no other test uses: `prefix` and a random suffix.
pub fn unique_name(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

/// Creates the database of `url`, which must not exist yet (a test's data is its own), and
/// applies every migration to it; its settings and the connection that migrated it.
pub async fn create_migrated(url: &str) -> (DbConfig, tokio_postgres::Client) {
    shared::db::connect::install_crypto_provider();
    let cfg = DbConfig::from_url(url).expect("a database URL");
    let created = shared::db::connect::ensure_database(&cfg, None).await.expect("PostgreSQL reachable");
    assert!(created, "the database of {url} existed already");
    let mut client = shared::db::connect::connect(&cfg, None).await.expect("connect to the new database");
    shared::db::migrate::migrate(&mut client).await.expect("migrations apply");
    (cfg, client)
}

/// Drops database `name` on the tests' server, from a thread of its own: this runs in `Drop`,
/// which cannot await, and the test's runtime may be shutting down.
pub fn drop_database(name: &str) {
    let name = name.to_owned();
    let _ = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            if let Ok((c, conn)) = tokio_postgres::connect(&admin_url(), tokio_postgres::NoTls).await {
                tokio::spawn(conn);
                let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")).await;
            }
        })
    })
    .join();
}

/// Drops the database it names when it goes out of scope, the test passing or not.
pub struct DropDatabase(pub String);

impl Drop for DropDatabase {
    fn drop(&mut self) {
        drop_database(&self.0);
    }
}
