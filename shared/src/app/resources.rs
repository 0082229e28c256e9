//! What [`Settings`] builds, each part at most once and only when a function asks for it, so
//! lifecycle's cold start never builds an S3 client it does not use: the PostgreSQL pool (its
//! credentials from a URL, a Secrets Manager secret or IAM tokens), the artifact bucket and the
//! webhook's keys.
//!
//! Every function's `Deps::new(&Resources)` is the ONE constructor of its dependencies: the
//! Lambda `main`s call it with [`Resources::from_env`], and the local stack, the tests and the
//! benchmarks with [`Resources::prebuilt`] around their own pool and S3 client, after changing
//! whichever field of `Settings` they need.

use secrecy::SecretString;
use tokio::sync::OnceCell;

use crate::aws::bucket::ArtifactBucket;
use crate::aws::secrets::{forget_secret, secret};
use crate::config::{DatabaseSource, SecretSource, Settings, SetupError};
use crate::db::connect::{DbConfig, DbSetupError};

/// Connection settings for `source`; reads the secret (once per instance) for
/// [`DatabaseSource::Secret`].
pub async fn db_config(source: &DatabaseSource) -> Result<DbConfig, SetupError> {
    use secrecy::ExposeSecret;
    match source {
        DatabaseSource::Iam { host, port, dbname, user } => Ok(DbConfig::for_iam(host, *port, dbname, user)),
        DatabaseSource::Secret { arn, endpoint } => {
            let json = secret(arn).await?;
            Ok(DbConfig::from_rds_secret_via(json.expose_secret(), endpoint)?)
        }
        DatabaseSource::Url(url) => Ok(DbConfig::from_url(url.expose_secret())?),
        DatabaseSource::Missing => Err("DB_SECRET_ARN or DATABASE_URL must be set".into()),
    }
}

/// Database settings straight from the environment (the migrate function and tests).
pub async fn db_config_from_env() -> Result<DbConfig, SetupError> {
    db_config(&DatabaseSource::from_env()?).await
}

/// The pool for one Lambda instance: lazily connecting, `settings.pool_size` connections.
pub async fn db_pool(settings: &Settings) -> Result<(deadpool_postgres::Pool, DbConfig), SetupError> {
    let source = settings.database.clone();
    let cfg = db_config(&source).await?;
    // With a Secrets Manager secret, a refused login re-reads it: RDS rotates it under us.
    // With IAM authentication there is nothing to re-read: every connection gets a new token.
    let refresh: Option<crate::db::connect::Refresh> = match &source {
        DatabaseSource::Secret { arn, .. } => {
            let (arn, source) = (arn.clone(), source.clone());
            Some(std::sync::Arc::new(move || {
                let (arn, source) = (arn.clone(), source.clone());
                Box::pin(async move {
                    forget_secret(&arn).await;
                    db_config(&source).await.map_err(|e| e.to_string())
                })
            }))
        }
        _ => None,
    };
    let password = match source {
        DatabaseSource::Iam { .. } => Some(iam_password(&cfg).await?),
        _ => None,
    };
    let pool =
        crate::db::connect::pool_with_auth(&cfg, settings.ca_bundle.as_deref(), settings.pool_size, refresh, password)
            .map_err(|e: DbSetupError| -> SetupError { e.into() })?;
    Ok((pool, cfg))
}

/// Signs an IAM auth token for each new connection of `cfg`'s endpoint and user.
///
/// On Lambda the region and the execution role's credentials are in the environment and are
/// used as they are: no SDK configuration is built and nothing is fetched, so a cold start
/// costs only what signing costs (microseconds). Where the SDK was configured otherwise (see
/// [`crate::aws::sdk::direct_settings`]), its credentials provider supplies them, which caches and refreshes.
async fn iam_password(cfg: &DbConfig) -> Result<crate::db::connect::Password, SetupError> {
    use aws_credential_types::provider::ProvideCredentials;
    use tokio_postgres::config::Host;
    let host = match cfg.pg.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        _ => return Err("DB_HOST must be a host name for IAM authentication".into()),
    };
    let port = cfg.pg.get_ports().first().copied().unwrap_or(5432);
    let user = cfg.pg.get_user().unwrap_or_default().to_owned();
    let (region, provider) = match crate::aws::sdk::direct_settings(&crate::config::aws_environment()) {
        Some((region, credentials)) => {
            (region, aws_credential_types::provider::SharedCredentialsProvider::new(credentials))
        }
        None => {
            let sdk = crate::aws::sdk::sdk_config().await;
            let region = sdk
                .region()
                .cloned()
                .unwrap_or_else(|| aws_config::Region::from_static(crate::aws::sdk::DEFAULT_REGION));
            let provider = sdk.credentials_provider().ok_or("no AWS credentials to sign the database auth token")?;
            (region, provider)
        }
    };
    let request = crate::aws::rds_iam::TokenRequest { host, port, user, region: region.to_string() };
    // Fails now, at init, on an endpoint that cannot be signed, rather than on every connection.
    let probe = aws_credential_types::Credentials::new("probe", "probe", None, None, "probe");
    crate::aws::rds_iam::auth_token(&request, &probe, std::time::SystemTime::now())?;
    Ok(std::sync::Arc::new(move || {
        let (request, provider) = (request.clone(), provider.clone());
        Box::pin(async move {
            let credentials = provider.provide_credentials().await.map_err(|e| crate::error::chain(&e))?;
            crate::aws::rds_iam::auth_token(&request, &credentials, std::time::SystemTime::now())
                .map_err(|e| e.to_string())
        })
    }))
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
        crate::error::set_database_retry_after(settings.db_retry_after);
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
                let (pool, cfg) = db_pool(&self.settings).await?;
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

    /// The artifact bucket, with an S3 client for this instance, which a thread of its own
    /// builds while the caller goes on (`ArtifactBucket::building`).
    pub async fn bucket(&self) -> Result<ArtifactBucket, SetupError> {
        self.bucket
            .get_or_try_init(|| async {
                let name = self.settings.bucket()?.to_owned();
                let settings = self.settings.clone();
                let build = async move { crate::aws::sdk::s3_client(&settings).await };
                Ok::<_, SetupError>(ArtifactBucket::building(build, name))
            })
            .await
            .cloned()
    }

    /// The webhook's keys (see `crate::app::webhook_keys`): the secret and the worker's public
    /// key, each re-read from Secrets Manager on a mismatch when it comes from there. At least
    /// one of the two must be configured.
    pub async fn webhook_keys(&self) -> Result<crate::app::webhook_keys::WebhookKeys, SetupError> {
        use crate::app::webhook_keys::{Source, WebhookKeys};
        let hmac = match &self.settings.webhook_secret {
            SecretSource::Missing => None,
            SecretSource::Arn(arn) => Some(Source { arn: Some(arn.clone()), value: self.webhook_secret().await? }),
            SecretSource::Plain(_) => Some(Source { arn: None, value: self.webhook_secret().await? }),
        };
        let public_key = match &self.settings.webhook.public_key {
            SecretSource::Missing => None,
            SecretSource::Arn(arn) => Some(Source { arn: Some(arn.clone()), value: secret(arn).await? }),
            SecretSource::Plain(k) => Some(Source { arn: None, value: k.clone() }),
        };
        if hmac.is_none() && public_key.is_none() {
            return Err(
                "WEBHOOK_SECRET_ARN, WEBHOOK_SECRET, WEBHOOK_PUBLIC_KEY_ARN or WEBHOOK_PUBLIC_KEY must be set".into()
            );
        }
        WebhookKeys::new(hmac, public_key, self.settings.webhook.legacy_signature, std::time::Instant::now())
            .map_err(|e| format!("the webhook keys: {e}").into())
    }

    /// The webhook HMAC secret (fetched once when it is an ARN).
    pub async fn webhook_secret(&self) -> Result<SecretString, SetupError> {
        self.secret
            .get_or_try_init(|| async {
                match &self.settings.webhook_secret {
                    SecretSource::Arn(arn) => secret(arn).await,
                    SecretSource::Plain(s) => Ok(s.clone()),
                    SecretSource::Missing => Err("WEBHOOK_SECRET_ARN or WEBHOOK_SECRET must be set".into()),
                }
            })
            .await
            .cloned()
    }
}
