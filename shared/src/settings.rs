//! One typed `Settings`, read once from the environment (SPEC section 5), and `Resources`:
//! what the settings build (the pool, the artifact bucket, the webhook secret), each built at
//! most once and only when a function asks for it, so lifecycle's cold start never builds an
//! S3 client it does not use.
//!
//! Every function's `Deps::new(&Resources)` is the ONE constructor of its dependencies: the
//! Lambda `main`s call it with `Resources::from_env()`, and the local stack, the tests and the
//! benchmarks with `Resources::prebuilt(..)` around their own pool and S3 client, after
//! changing whichever field of `Settings` they need (zero2prod's test helper, here).
//!
//! | variable | meaning |
//! |---|---|
//! | `DB_SECRET_ARN` / `DATABASE_URL` | RDS-format secret, or a URL where the ARN is absent |
//! | `DB_IAM_AUTH` / `DB_HOST` / `DB_PORT` / `DB_NAME` / `DB_USER` | IAM auth tokens instead of a password |
//! | `DB_CA_BUNDLE` / `DB_POOL_SIZE` | extra PEM roots for PostgreSQL TLS / connections per instance (2) |
//! | `WEBHOOK_SECRET_ARN` / `WEBHOOK_SECRET` | the HMAC secret, from Secrets Manager or plain |
//! | `ARTIFACT_BUCKET` | the one artifact bucket |
//! | `S3_ENDPOINT` | an S3-compatible endpoint (path-style); absent on AWS |
//! | `CALLBACK_URL` | the public webhook URL written into manifests |
//! | `JOB_DEADLINE_SECONDS` | processing deadline per attempt, default 900 (15 minutes) |
//! | `MAX_ATTEMPTS` | attempts a job may have in all (SPEC section 7), default 3 |

use std::time::Duration;

use secrecy::SecretString;
use tokio::sync::OnceCell;

use crate::bucket::ArtifactBucket;
use crate::setup::{var, SetupError};

pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(15 * 60);
pub const DEFAULT_MAX_ATTEMPTS: i32 = 3;
/// Connections per Lambda instance: it serves one request at a time; the spare covers a
/// connection being replaced.
pub const DEFAULT_POOL_SIZE: usize = 2;

/// Where the webhook secret comes from.
#[derive(Clone, Debug)]
pub enum SecretSource {
    Arn(String),
    /// `Debug` of a `SecretString` is redacted.
    Plain(SecretString),
    Missing,
}

/// Everything the environment says, parsed once. A value that is malformed fails here, at
/// init; one that is missing fails only when a function that needs it is built.
#[derive(Clone, Debug)]
pub struct Settings {
    pub database: crate::setup::DatabaseSource,
    pub webhook_secret: SecretSource,
    pub bucket: Option<String>,
    pub s3_endpoint: Option<String>,
    pub callback_url: Option<String>,
    pub deadline: Duration,
    pub max_attempts: i32,
    pub pool_size: usize,
    pub ca_bundle: Option<String>,
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

impl Settings {
    pub fn from_env() -> Result<Self, SetupError> {
        let webhook_secret = match (var("WEBHOOK_SECRET_ARN"), var("WEBHOOK_SECRET")) {
            (Some(arn), _) => SecretSource::Arn(arn),
            (None, Some(s)) => SecretSource::Plain(SecretString::from(s)),
            (None, None) => SecretSource::Missing,
        };
        let max_attempts: i32 = positive("MAX_ATTEMPTS", DEFAULT_MAX_ATTEMPTS)?;
        if max_attempts > 100 {
            return Err("MAX_ATTEMPTS must be at most 100".into());
        }
        Ok(Self {
            database: crate::setup::DatabaseSource::from_env()?,
            webhook_secret,
            bucket: var("ARTIFACT_BUCKET"),
            s3_endpoint: var("S3_ENDPOINT"),
            callback_url: var("CALLBACK_URL"),
            deadline: Duration::from_secs(positive("JOB_DEADLINE_SECONDS", DEFAULT_DEADLINE.as_secs())?),
            max_attempts,
            pool_size: positive("DB_POOL_SIZE", DEFAULT_POOL_SIZE)?,
            ca_bundle: var("DB_CA_BUNDLE"),
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
        Policy { deadline: self.deadline, max_attempts: self.max_attempts }
    }
}

/// The job rules of this deployment (SPEC sections 4 and 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// A processing attempt older than this is failed `timed out`.
    pub deadline: Duration,
    /// Attempts a job may have in all; `maxAttempts` in the job JSON.
    pub max_attempts: i32,
}

impl Default for Policy {
    fn default() -> Self {
        Self { deadline: DEFAULT_DEADLINE, max_attempts: DEFAULT_MAX_ATTEMPTS }
    }
}

/// What `Settings` builds, each part at most once, on first use.
pub struct Resources {
    pub settings: Settings,
    pool: OnceCell<(deadpool_postgres::Pool, [u8; 32])>,
    bucket: OnceCell<ArtifactBucket>,
    secret: OnceCell<SecretString>,
}

impl Resources {
    /// A Lambda instance: everything from the environment.
    pub fn from_env() -> Result<Self, SetupError> {
        Ok(Self::new(Settings::from_env()?))
    }

    pub fn new(settings: Settings) -> Self {
        Self { settings, pool: OnceCell::new(), bucket: OnceCell::new(), secret: OnceCell::new() }
    }

    /// Around a pool and an S3 client built elsewhere (the local stack and the tests share
    /// one of each between the five functions). `cursor_key` authenticates list cursors.
    pub fn prebuilt(
        settings: Settings,
        pool: deadpool_postgres::Pool,
        cursor_key: [u8; 32],
        s3: aws_sdk_s3::Client,
    ) -> Result<Self, SetupError> {
        let bucket = ArtifactBucket::new(s3, settings.bucket()?);
        let secret = match &settings.webhook_secret {
            SecretSource::Plain(s) => OnceCell::new_with(Some(s.clone())),
            _ => OnceCell::new(),
        };
        Ok(Self {
            settings,
            pool: OnceCell::new_with(Some((pool, cursor_key))),
            bucket: OnceCell::new_with(Some(bucket)),
            secret,
        })
    }

    async fn pool_and_key(&self) -> Result<&(deadpool_postgres::Pool, [u8; 32]), SetupError> {
        self.pool
            .get_or_try_init(|| async {
                let (pool, cfg) = crate::setup::db_pool(&self.settings).await?;
                Ok::<_, SetupError>((pool, cfg.cursor_key()))
            })
            .await
    }

    /// The PostgreSQL pool (lazily connecting).
    pub async fn pool(&self) -> Result<deadpool_postgres::Pool, SetupError> {
        Ok(self.pool_and_key().await?.0.clone())
    }

    /// The key that authenticates list cursors (derived from the database credentials).
    pub async fn cursor_key(&self) -> Result<[u8; 32], SetupError> {
        Ok(self.pool_and_key().await?.1)
    }

    /// The artifact bucket, with an S3 client for this instance.
    pub async fn bucket(&self) -> Result<ArtifactBucket, SetupError> {
        self.bucket
            .get_or_try_init(|| async {
                let name = self.settings.bucket()?.to_owned();
                Ok::<_, SetupError>(ArtifactBucket::new(crate::setup::s3_client(&self.settings).await, name))
            })
            .await
            .cloned()
    }

    /// The webhook's HMAC keys: the secret, re-read from Secrets Manager on a mismatch when it
    /// comes from there (see `shared::webhook_keys`).
    pub async fn webhook_keys(&self) -> Result<crate::webhook_keys::WebhookKeys, SetupError> {
        let secret = self.webhook_secret().await?;
        Ok(match &self.settings.webhook_secret {
            SecretSource::Arn(arn) => crate::webhook_keys::WebhookKeys::from_secret(arn.clone(), secret),
            _ => crate::webhook_keys::WebhookKeys::fixed(secret),
        })
    }

    /// The webhook HMAC secret (fetched once when it is an ARN).
    pub async fn webhook_secret(&self) -> Result<SecretString, SetupError> {
        self.secret
            .get_or_try_init(|| async {
                match &self.settings.webhook_secret {
                    SecretSource::Arn(arn) => crate::setup::secret(arn).await,
                    SecretSource::Plain(s) => Ok(s.clone()),
                    SecretSource::Missing => Err("WEBHOOK_SECRET_ARN or WEBHOOK_SECRET must be set".into()),
                }
            })
            .await
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_defaults_match_spec() {
        let p = Policy::default();
        assert_eq!((p.deadline.as_secs(), p.max_attempts), (900, 3));
    }
}
