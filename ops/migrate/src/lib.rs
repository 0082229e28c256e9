//! The migrate function: applies `migrations/V*.sql` to the deployed database (through RDS
//! Proxy, or straight to the cluster in direct mode, with the same TLS policy as the API
//! functions) and answers which versions it applied. CodeDeploy invokes it as the PreTraffic
//! hook of every deployment, before any new code takes traffic ([`hook`]); it can also be
//! invoked by hand (the first deploy, which creates the stack and so starts no deployment, and
//! any time after):
//!
//! ```sh
//! aws lambda invoke --function-name "$MIGRATE_FUNCTION" out.json && cat out.json
//! # {"database":"code2des","applied":["V1__code2des",…],"appRole":"code2des_app"}
//! # then, on a second run: "applied":[] (the role's password is set again from its secret)
//! ```
//!
//! The API functions never migrate on their own: a cold start must not wait on DDL, and two
//! instances must not race to apply the same version.

use lambda_runtime::{Error, LambdaEvent};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{json, Value};
use shared::db::connect::DbConfig;

pub mod hook;
pub mod rollback;

/// Session advisory lock key held while migrating, so that two overlapping invocations (a
/// retried deploy step, a double click) apply each version once; the second one waits and then
/// finds nothing to do. The value is arbitrary but fixed: "c2dmigr" in ASCII.
pub const MIGRATION_LOCK: i64 = 0x0063_3264_6d69_6772;

/// Where the application role's login secret (`{"username","password"}`) comes from.
pub enum AppRoleSecret {
    /// `DB_APP_SECRET_ARN`: read afresh at every invocation, so a rotated secret is applied by
    /// the next run.
    Arn(String),
    /// The JSON itself (tests).
    Json(SecretString),
}

/// Settings read once per instance.
pub struct Deps {
    pub db: DbConfig,
    pub ca_bundle: Option<String>,
    /// The application role the functions log in as through RDS Proxy: after migrating, its
    /// password is set to this secret's, so the proxy's `code2des_app` user can log in (and
    /// `rds_iam`, which would refuse that password, is taken away).
    pub app_role: Option<AppRoleSecret>,
    /// `DB_APP_IAM_ROLE`: without RDS Proxy (template.yaml `DatabaseAccess=direct`) the
    /// functions log in to Aurora itself with IAM tokens, so this role is granted `rds_iam`.
    pub app_iam_role: Option<String>,
}

impl Deps {
    /// `DB_SECRET_ARN` (+ `DB_HOST`/`DB_PORT`/`DB_NAME`) in AWS, `DATABASE_URL` elsewhere;
    /// `DB_APP_SECRET_ARN` when the application role's password is to be set (proxy mode),
    /// `DB_APP_IAM_ROLE` when the role is to log in with IAM tokens (direct mode).
    pub async fn from_env() -> Result<Self, shared::config::SetupError> {
        Ok(Self {
            db: shared::app::resources::db_config_from_env().await?,
            ca_bundle: shared::config::var("DB_CA_BUNDLE"),
            app_role: shared::config::var("DB_APP_SECRET_ARN").map(AppRoleSecret::Arn),
            app_iam_role: shared::config::var("DB_APP_IAM_ROLE"),
        })
    }
}

/// The handler: any event (the payload is ignored) applies the pending migrations and answers
/// `{"database", "applied": ["V1__code2des", …]}`; an empty list means the schema was current,
/// and `"databaseAhead": "V7__…"` that a newer release had migrated it ([`rollback`]).
/// A failure is returned as the invocation's error, so `aws lambda invoke` shows
/// `FunctionError` and the deploy step fails loudly.
pub async fn handle(deps: &Deps, _event: LambdaEvent<Value>) -> Result<Value, Error> {
    let mut client = shared::db::connect::connect(&deps.db, deps.ca_bundle.as_deref()).await?;
    client.execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK]).await?;
    let applied = shared::db::migrate::migrate(&mut client).await;
    // The lock is per session; unlocking explicitly matters only if the connection outlives us.
    client.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]).await?;
    let (applied, ahead) = match applied {
        Ok(applied) => (applied, None),
        Err(e) => match rollback::database_ahead(&e) {
            Some(version) => (Vec::new(), Some(version)),
            None => return Err(e.into()),
        },
    };
    match &ahead {
        None => tracing::info!(applied = ?applied, "migrations applied"),
        Some(version) => tracing::warn!(
            database_holds = %version,
            "the database is ahead of this release (a rollback): nothing to apply"
        ),
    }
    let app_role = match &deps.app_role {
        None => None,
        Some(source) => {
            let secret = match source {
                AppRoleSecret::Arn(arn) => {
                    shared::aws::secrets::forget_secret(arn).await;
                    shared::aws::secrets::secret(arn).await?
                }
                AppRoleSecret::Json(json) => json.clone(),
            };
            let role = shared::db::roles::set_app_role_password(&client, secret.expose_secret()).await?;
            tracing::info!(role = %role, "application role password set");
            if shared::db::roles::revoke_rds_iam(&client, &role).await? {
                tracing::info!(role = %role, "rds_iam revoked: the role logs in through RDS Proxy with its password");
            }
            Some(role)
        }
    };
    // Direct database access: the role logs in to Aurora with IAM tokens (and so by them alone).
    let app_role = match &deps.app_iam_role {
        None => app_role,
        Some(role) => {
            shared::db::roles::grant_rds_iam(&client, role).await?;
            tracing::info!(role = %role, "rds_iam granted: the role logs in with IAM auth tokens");
            Some(role.clone())
        }
    };
    let mut answer = json!({ "database": deps.db.pg.get_dbname(), "applied": applied, "appRole": app_role });
    if let Some(version) = ahead {
        answer["databaseAhead"] = json!(version);
    }
    Ok(answer)
}
