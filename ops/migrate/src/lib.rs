//! The migrate function: applies `migrations/V*.sql` to the deployed database (through RDS
//! Proxy, with the same secret and TLS policy as the API functions) and answers which versions
//! it applied. It is invoked by hand (or by the deploy pipeline) after each `sam deploy`:
//!
//! ```sh
//! aws lambda invoke --function-name "$MIGRATE_FUNCTION" out.json && cat out.json
//! # {"database":"code2des","applied":["V1__code2des"]}   then, on a second run: "applied":[]
//! ```
//!
//! The API functions never migrate on their own: a cold start must not wait on DDL, and two
//! instances must not race to apply the same version.

use lambda_runtime::{Error, LambdaEvent};
use serde_json::{json, Value};
use shared::db::DbConfig;

/// Session advisory lock key held while migrating, so that two overlapping invocations (a
/// retried deploy step, a double click) apply each version once; the second one waits and then
/// finds nothing to do. The value is arbitrary but fixed: "c2dmigr" in ASCII.
pub const MIGRATION_LOCK: i64 = 0x0063_3264_6d69_6772;

/// Settings read once per instance.
pub struct Deps {
    pub db: DbConfig,
    pub ca_bundle: Option<String>,
}

impl Deps {
    /// `DB_SECRET_ARN` (+ `DB_HOST`/`DB_PORT`/`DB_NAME`) in AWS, `DATABASE_URL` elsewhere.
    pub async fn from_env() -> Result<Self, shared::setup::SetupError> {
        Ok(Self { db: shared::setup::db_config().await?, ca_bundle: shared::setup::var("DB_CA_BUNDLE") })
    }
}

/// The handler: any event (the payload is ignored) applies the pending migrations and answers
/// `{"database", "applied": ["V1__code2des", …]}`; an empty list means the schema was current.
/// A failure is returned as the invocation's error, so `aws lambda invoke` shows
/// `FunctionError` and the deploy step fails loudly.
pub async fn handle(deps: &Deps, _event: LambdaEvent<Value>) -> Result<Value, Error> {
    let mut client = shared::db::connect(&deps.db, deps.ca_bundle.as_deref()).await?;
    client.execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK]).await?;
    let applied = shared::db::migrate(&mut client).await;
    // The lock is per session; unlocking explicitly matters only if the connection outlives us.
    client.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]).await?;
    let applied = applied?;
    tracing::info!(applied = ?applied, "migrations applied");
    Ok(json!({ "database": deps.db.pg.get_dbname(), "applied": applied }))
}
