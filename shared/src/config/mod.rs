//! Configuration: one typed [`Settings`], read once from the environment (SPEC section 5), with
//! nothing built yet. Values that are malformed fail here, at init; one that is missing fails
//! only when a function that needs it is built (`crate::app::resources`).
//!
//! README.md's "Configuration" table lists every variable, its Lambda value and its local
//! default; this module is where each is read.
//!
//! Local stack, tests and benchmarks change a field of [`Settings`] and build the same
//! functions from it (zero2prod's test helper, here).

use std::time::Duration;

use secrecy::SecretString;

use crate::domain::job::{Policy, DEFAULT_DEADLINE, DEFAULT_MAX_ATTEMPTS};
use crate::domain::quota::{Quota, DEFAULT_MAX_ACTIVE_JOBS_PER_ORG, DEFAULT_TRIGGERS_PER_MINUTE};

/// What building from the configuration can fail with (a message, never a secret).
pub type SetupError = Box<dyn std::error::Error + Send + Sync>;

/// The database the local stack and tests use when `DATABASE_URL` is unset.
pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/code2des";
/// Connections per Lambda instance: it serves one request at a time; the spare covers a
/// connection being replaced.
pub const DEFAULT_POOL_SIZE: usize = 2;
/// Days a soft-deleted job stays before the purge removes it (SPEC section 9).
pub const DEFAULT_PURGE_AFTER_DAYS: i32 = 30;

/// The variables the AWS SDK's set-up decides on (`AWS_*` and `S3_ENDPOINT`), as pairs: the
/// SDK's configuration (`crate::aws::sdk`) and the database's IAM token read them here, so this
/// module stays the one place that reads the environment.
pub fn aws_environment() -> Vec<(String, String)> {
    std::env::vars().filter(|(k, _)| k.starts_with("AWS_") || k == "S3_ENDPOINT").collect()
}

/// Whether log lines are JSON off Lambda (`LOG_FORMAT=json`).
pub fn json_logs() -> bool {
    var("LOG_FORMAT").is_some_and(|v| v.eq_ignore_ascii_case("json"))
}

/// Whether this process is a Lambda function (the runtime sets `AWS_LAMBDA_FUNCTION_NAME`).
pub fn in_lambda() -> bool {
    var("AWS_LAMBDA_FUNCTION_NAME").is_some()
}

/// A non-empty environment variable.
pub fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn required(name: &str) -> Result<String, SetupError> {
    var(name).ok_or_else(|| format!("{name} must be set").into())
}

fn positive<T: std::str::FromStr + PartialOrd + Default>(name: &str, default: T) -> Result<T, SetupError> {
    match var(name) {
        None => Ok(default),
        Some(v) => match v.trim().parse::<T>() {
            Ok(n) if n > T::default() => Ok(n),
            _ => Err(format!("{name} must be a positive integer").into()),
        },
    }
}

/// Where the webhook secret comes from.
#[derive(Clone, Debug)]
pub enum SecretSource {
    Arn(String),
    /// `Debug` of a `SecretString` is redacted.
    Plain(SecretString),
    Missing,
}

/// The webhook's signatures beyond its secret (SPEC section 9): the worker's ed25519 public key
/// for Standard Webhooks `v1a`, and whether the legacy `Code2des-Signature` is still accepted.
#[derive(Clone, Debug)]
pub struct WebhookSettings {
    /// `WEBHOOK_PUBLIC_KEY_ARN` (a Secrets Manager secret whose string is the `whpk_` key, so
    /// that it rotates like the secret) or `WEBHOOK_PUBLIC_KEY` (the `whpk_` key itself).
    pub public_key: SecretSource,
    /// `LEGACY_SIGNATURE` (default true): accept `Code2des-Signature`, deprecated.
    pub legacy_signature: bool,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self { public_key: SecretSource::Missing, legacy_signature: true }
    }
}

fn flag(name: &str, default: bool) -> Result<bool, SetupError> {
    match var(name).map(|v| v.trim().to_ascii_lowercase()) {
        None => Ok(default),
        Some(v) if v == "true" || v == "1" => Ok(true),
        Some(v) if v == "false" || v == "0" => Ok(false),
        Some(_) => Err(format!("{name} must be true or false").into()),
    }
}

impl WebhookSettings {
    pub fn from_env() -> Result<Self, SetupError> {
        let public_key = match (var("WEBHOOK_PUBLIC_KEY_ARN"), var("WEBHOOK_PUBLIC_KEY")) {
            (Some(arn), _) => SecretSource::Arn(arn),
            (None, Some(k)) => {
                // Malformed values fail at init, with the rule broken (never the value).
                crate::domain::standard_webhooks::parse_public_key(&k)
                    .map_err(|e| format!("WEBHOOK_PUBLIC_KEY: {e}"))?;
                SecretSource::Plain(SecretString::from(k))
            }
            (None, None) => SecretSource::Missing,
        };
        Ok(Self { public_key, legacy_signature: flag("LEGACY_SIGNATURE", true)? })
    }
}

/// Everything the environment says, parsed once.
#[derive(Clone, Debug)]
pub struct Settings {
    pub database: DatabaseSource,
    /// `WEBHOOK_SECRET_ARN` / `WEBHOOK_SECRET`: the legacy signature's key (the text as it is)
    /// and, when it is a `whsec_` value, the Standard Webhooks `v1` key (its decoded bytes).
    pub webhook_secret: SecretSource,
    pub webhook: WebhookSettings,
    pub bucket: Option<String>,
    pub s3_endpoint: Option<String>,
    pub callback_url: Option<String>,
    pub deadline: Duration,
    pub max_attempts: i32,
    pub pool_size: usize,
    pub ca_bundle: Option<String>,
    /// `ARTIFACT_RETENTION_DAYS`: the artifact bucket's lifecycle rule (results expire).
    pub artifact_retention: Option<Duration>,
    /// `PURGE_AFTER_DAYS`: soft-deleted jobs leave the database this many days after.
    pub purge_after_days: i32,
    /// `MAX_ACTIVE_JOBS_PER_ORG`: processing jobs an organization may have at once.
    pub max_active_jobs_per_org: i32,
    /// `TRIGGERS_PER_MINUTE`: triggers and retries a subject may make per minute.
    pub triggers_per_minute: i32,
    /// `DB_RETRY_AFTER_SECONDS`: the Retry-After of a 503 for the database (default 2; 20 for a
    /// cluster that pauses, whose resume takes about 15 s).
    pub db_retry_after: u32,
}

impl Settings {
    pub fn from_env() -> Result<Self, SetupError> {
        let webhook_secret = match (var("WEBHOOK_SECRET_ARN"), var("WEBHOOK_SECRET")) {
            (Some(arn), _) => SecretSource::Arn(arn),
            (None, Some(s)) => {
                if s.trim().starts_with(crate::domain::standard_webhooks::SECRET_PREFIX) {
                    crate::domain::standard_webhooks::parse_secret(&s).map_err(|e| format!("WEBHOOK_SECRET: {e}"))?;
                }
                SecretSource::Plain(SecretString::from(s))
            }
            (None, None) => SecretSource::Missing,
        };
        let max_attempts: i32 = positive("MAX_ATTEMPTS", DEFAULT_MAX_ATTEMPTS)?;
        if max_attempts > 100 {
            return Err("MAX_ATTEMPTS must be at most 100".into());
        }
        Ok(Self {
            database: DatabaseSource::from_env()?,
            webhook_secret,
            webhook: WebhookSettings::from_env()?,
            bucket: var("ARTIFACT_BUCKET"),
            s3_endpoint: var("S3_ENDPOINT"),
            callback_url: var("CALLBACK_URL"),
            deadline: Duration::from_secs(positive("JOB_DEADLINE_SECONDS", DEFAULT_DEADLINE.as_secs())?),
            max_attempts,
            pool_size: positive("DB_POOL_SIZE", DEFAULT_POOL_SIZE)?,
            ca_bundle: var("DB_CA_BUNDLE"),
            purge_after_days: positive("PURGE_AFTER_DAYS", DEFAULT_PURGE_AFTER_DAYS)?,
            max_active_jobs_per_org: positive("MAX_ACTIVE_JOBS_PER_ORG", DEFAULT_MAX_ACTIVE_JOBS_PER_ORG)?,
            triggers_per_minute: positive("TRIGGERS_PER_MINUTE", DEFAULT_TRIGGERS_PER_MINUTE)?,
            db_retry_after: positive("DB_RETRY_AFTER_SECONDS", crate::error::RETRY_AFTER_SECS)?,
            artifact_retention: match var("ARTIFACT_RETENTION_DAYS") {
                None => None,
                Some(_) => Some(Duration::from_secs(positive::<u64>("ARTIFACT_RETENTION_DAYS", 1)? * 24 * 60 * 60)),
            },
        })
    }

    pub fn bucket(&self) -> Result<&str, SetupError> {
        self.bucket.as_deref().ok_or_else(|| "ARTIFACT_BUCKET must be set".into())
    }

    pub fn callback_url(&self) -> Result<&str, SetupError> {
        self.callback_url.as_deref().ok_or_else(|| "CALLBACK_URL must be set".into())
    }

    /// The rules every route applies to a job.
    pub fn policy(&self) -> Policy {
        Policy { deadline: self.deadline, max_attempts: self.max_attempts, result_retention: self.artifact_retention }
    }

    /// The quotas trigger and retry enforce, before an organization's override.
    pub fn quota(&self) -> Quota {
        Quota { max_active_jobs_per_org: self.max_active_jobs_per_org, triggers_per_minute: self.triggers_per_minute }
    }
}

/// Where to connect when the database secret does not say (or says the cluster, not the
/// proxy): `DB_HOST`, `DB_PORT`, `DB_NAME`. Each field given wins over the secret's.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DbEndpoint {
    pub host: Option<String>,
    pub port: Option<u16>,
    pub dbname: Option<String>,
}

fn db_port() -> Result<Option<u16>, SetupError> {
    match var("DB_PORT") {
        None => Ok(None),
        Some(v) => Ok(Some(v.parse().map_err(|_| -> SetupError { "DB_PORT must be a port number".into() })?)),
    }
}

/// Whether the functions log in with IAM auth tokens: `DB_IAM_AUTH=true` and an endpoint in
/// `DB_HOST`. Without `DB_HOST` (e.g. `sam local invoke` blanking it) the other settings apply.
pub fn db_iam_auth() -> bool {
    var("DB_IAM_AUTH").is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1") && var("DB_HOST").is_some()
}

/// Where the database is and how to log in, as the environment says: with IAM authentication
/// ([`db_iam_auth`]) the endpoint `DB_HOST` / `DB_PORT` (default 5432) / `DB_NAME` (default
/// `code2des`) and the user `DB_USER`, no password (nothing is fetched); else the RDS secret
/// when `DB_SECRET_ARN` is set (its endpoint overridden by `DB_HOST` / `DB_PORT` / `DB_NAME`
/// where given); else `DATABASE_URL`.
#[derive(Clone)]
pub enum DatabaseSource {
    Iam {
        host: String,
        port: u16,
        dbname: String,
        user: String,
    },
    Secret {
        arn: String,
        endpoint: DbEndpoint,
    },
    /// The URL may hold a password: never printed.
    Url(SecretString),
    Missing,
}

impl std::fmt::Debug for DatabaseSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Iam { host, port, dbname, user } => f
                .debug_struct("Iam")
                .field("host", host)
                .field("port", port)
                .field("dbname", dbname)
                .field("user", user)
                .finish(),
            Self::Secret { arn, endpoint } => {
                f.debug_struct("Secret").field("arn", arn).field("endpoint", endpoint).finish()
            }
            Self::Url(_) => f.write_str("Url(<redacted>)"),
            Self::Missing => f.write_str("Missing"),
        }
    }
}

impl DatabaseSource {
    pub fn from_env() -> Result<Self, SetupError> {
        if db_iam_auth() {
            return Ok(Self::Iam {
                host: required("DB_HOST")?,
                port: db_port()?.unwrap_or(5432),
                dbname: var("DB_NAME").unwrap_or_else(|| "code2des".into()),
                user: var("DB_USER").ok_or_else(|| -> SetupError { "DB_IAM_AUTH needs DB_USER".into() })?,
            });
        }
        if let Some(arn) = var("DB_SECRET_ARN") {
            return Ok(Self::Secret {
                arn,
                endpoint: DbEndpoint { host: var("DB_HOST"), port: db_port()?, dbname: var("DB_NAME") },
            });
        }
        Ok(var("DATABASE_URL").map(|u| Self::Url(SecretString::from(u))).unwrap_or(Self::Missing))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_defaults_match_spec() {
        let p = Policy::default();
        assert_eq!((p.deadline.as_secs(), p.max_attempts), (900, 3));
        let q = Quota::default();
        assert_eq!((q.max_active_jobs_per_org, q.triggers_per_minute), (20, 30));
    }
}
