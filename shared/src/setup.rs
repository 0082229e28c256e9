//! Configuration from the environment (SPEC section 5), done once per Lambda instance.
//!
//! | variable | meaning |
//! |---|---|
//! | `DB_SECRET_ARN` / `DATABASE_URL` | RDS-format secret, or a URL where the ARN is absent |
//! | `WEBHOOK_SECRET_ARN` / `WEBHOOK_SECRET` | the HMAC secret, from Secrets Manager or plain |
//! | `ARTIFACT_BUCKET` | the one artifact bucket |
//! | `S3_ENDPOINT` | an S3-compatible endpoint (path-style); absent on AWS |
//! | `CALLBACK_URL` | the public webhook URL written into manifests |
//! | `JOB_DEADLINE_SECONDS` | processing deadline, default 900 (15 minutes) |
//! | `DB_CA_BUNDLE` | extra PEM roots for PostgreSQL TLS |
//! | `DB_POOL_SIZE` | connections per instance, default 2 |
//! | `DB_HOST` / `DB_PORT` / `DB_NAME` | with `DB_SECRET_ARN`: the endpoint (RDS Proxy), over the secret's |
//! | `DB_IAM_AUTH` / `DB_USER` | `true` (with `DB_HOST`): log in as `DB_USER` with an IAM auth token signed per connection; no secret |

use std::time::Duration;

use aws_config::{BehaviorVersion, SdkConfig};
use secrecy::SecretString;
use tokio::sync::OnceCell;

use crate::db::{DbConfig, DbEndpoint, DbSetupError};

pub type SetupError = Box<dyn std::error::Error + Send + Sync>;

pub use crate::settings::DEFAULT_DEADLINE;
/// The database the local stack and tests use when `DATABASE_URL` is unset.
pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/code2des";

/// A non-empty environment variable.
pub fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn required(name: &str) -> Result<String, SetupError> {
    var(name).ok_or_else(|| format!("{name} must be set").into())
}

static SDK: OnceCell<SdkConfig> = OnceCell::const_new();

/// The AWS SDK configuration, loaded at most once. Timeouts keep a slow S3 or Secrets Manager
/// well below API Gateway's 29 s: the request fails with 503 instead of hanging.
pub async fn sdk_config() -> &'static SdkConfig {
    SDK.get_or_init(|| async {
        use aws_config::timeout::TimeoutConfig;
        let timeouts = TimeoutConfig::builder()
            .connect_timeout(Duration::from_secs(2))
            .operation_attempt_timeout(Duration::from_secs(5))
            .operation_timeout(Duration::from_secs(12))
            .build();
        let env: Vec<(String, String)> = std::env::vars().collect();
        match direct_settings(&env) {
            Some((region, credentials)) => SdkConfig::builder()
                .behavior_version(BehaviorVersion::latest())
                .region(region)
                .credentials_provider(aws_credential_types::provider::SharedCredentialsProvider::new(credentials))
                .timeout_config(timeouts)
                .http_client(https_client())
                .build(),
            None => {
                let mut loader = aws_config::defaults(BehaviorVersion::latest())
                    .timeout_config(timeouts)
                    .http_client(https_client());
                if var("AWS_REGION").is_none() && var("AWS_DEFAULT_REGION").is_none() {
                    loader = loader.region(aws_config::Region::from_static(DEFAULT_REGION));
                }
                if var("S3_ENDPOINT").is_some() && var("AWS_ACCESS_KEY_ID").is_none() {
                    loader = loader.credentials_provider(local_credentials());
                }
                loader.load().await
            }
        }
    })
    .await
}

const DEFAULT_REGION: &str = "us-east-1";

/// The local stack's fixed S3 keys, for an `S3_ENDPOINT` without keys in the environment.
fn local_credentials() -> aws_credential_types::Credentials {
    aws_credential_types::Credentials::new("local", "local-secret", None, None, "code2des-local")
}

/// `AWS_*` variables that the Lambda runtime itself sets, or that [`direct_settings`] reads.
fn understood(name: &str) -> bool {
    matches!(
        name,
        "AWS_REGION" | "AWS_DEFAULT_REGION" | "AWS_ACCESS_KEY_ID" | "AWS_SECRET_ACCESS_KEY" | "AWS_SESSION_TOKEN"
    ) || name == "AWS_EXECUTION_ENV"
        || name.starts_with("AWS_LAMBDA_")
        || name.starts_with("AWS_XRAY_")
}

/// Region and credentials straight from the environment, when that is all there is to know.
///
/// On Lambda the environment holds everything: the region and the execution role's
/// credentials (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), the source
/// `aws_config`'s chain would pick first anyway. Building from them skips constructing that
/// chain (profile files, SSO, web identity, ECS and IMDS providers), a large share of trigger's
/// and result's cold start (docs/PERFORMANCE.md). Against a local `S3_ENDPOINT` without keys in
/// the environment, the local stack's fixed keys are used. `None` — use the full loader — when
/// there are no credentials, or when any other `AWS_*` variable is set (an endpoint URL, a
/// retry mode, a profile, container or web-identity credentials…): someone configured the SDK
/// on purpose, and only the loader honours all of it.
fn direct_settings(env: &[(String, String)]) -> Option<(aws_config::Region, aws_credential_types::Credentials)> {
    let get = |name: &str| env.iter().find(|(k, v)| k == name && !v.trim().is_empty()).map(|(_, v)| v.clone());
    if env.iter().any(|(k, _)| k.starts_with("AWS_") && !understood(k)) {
        return None;
    }
    let region = get("AWS_REGION").or_else(|| get("AWS_DEFAULT_REGION")).unwrap_or_else(|| DEFAULT_REGION.into());
    let credentials = match (get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY")) {
        (Some(key), Some(secret)) => {
            aws_credential_types::Credentials::new(key, secret, get("AWS_SESSION_TOKEN"), None, "environment")
        }
        (None, None) if get("S3_ENDPOINT").is_some() => local_credentials(),
        _ => return None,
    };
    Some((aws_config::Region::new(region), credentials))
}

/// Whether a root certificate belongs to Amazon Trust Services, the CAs of every AWS endpoint
/// (S3, Secrets Manager, STS): Amazon Root CA 1–4 and Starfield Services Root CA G2. Roots are
/// self-signed, so the name can only appear in an Amazon root's own subject. `memmem` matters:
/// a naive byte-window scan of the ~150 roots cost 0.4 ms of every cold start.
fn amazon_root_filter() -> impl Fn(&[u8]) -> bool {
    let names = [
        memchr::memmem::Finder::new(b"Amazon Root CA"),
        memchr::memmem::Finder::new(b"Starfield Services Root Certificate Authority"),
    ];
    move |der| names.iter().any(|n| n.find(der).is_some())
}

/// The SDK's HTTPS client with its trust store compiled in, as PostgreSQL's TLS has: Amazon
/// Trust Services' roots for AWS endpoints, all Mozilla roots when `S3_ENDPOINT` is some other
/// HTTPS server. The SDK's default client reads the system store instead, every file of the
/// certificate directory, whenever a client is built: measurably slower cold starts
/// (docs/PERFORMANCE.md), and a trust store that depends on the image.
fn https_client() -> aws_sdk_s3::config::SharedHttpClient {
    use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode, TlsContext, TrustStore};
    use base64::Engine;
    let all_roots = var("S3_ENDPOINT").is_some_and(|e| e.starts_with("https://"));
    let mut pem = String::new();
    let is_amazon_root = amazon_root_filter();
    for cert in webpki_root_certs::TLS_SERVER_ROOT_CERTS {
        if !all_roots && !is_amazon_root(cert.as_ref()) {
            continue;
        }
        pem.push_str("-----BEGIN CERTIFICATE-----\n");
        let b64 = base64::engine::general_purpose::STANDARD.encode(cert.as_ref());
        for line in b64.as_bytes().chunks(64) {
            pem.push_str(std::str::from_utf8(line).unwrap_or_default());
            pem.push('\n');
        }
        pem.push_str("-----END CERTIFICATE-----\n");
    }
    let builder = aws_smithy_http_client::Builder::new().tls_provider(tls::Provider::Rustls(CryptoMode::AwsLc));
    match TlsContext::builder()
        .with_trust_store(TrustStore::empty().with_native_roots(false).with_pem_certificate(pem))
        .build()
    {
        Ok(ctx) => builder.tls_context(ctx).build_https(),
        // Cannot happen with well-formed roots; the default trust store is the safe fallback.
        Err(_) => builder.build_https(),
    }
}

/// An S3 client; path-style against `S3_ENDPOINT` when given.
pub async fn s3_client(settings: &crate::settings::Settings) -> aws_sdk_s3::Client {
    let sdk = sdk_config().await;
    let mut b = aws_sdk_s3::config::Builder::from(sdk);
    if let Some(ep) = settings.s3_endpoint.clone() {
        b = b.endpoint_url(ep).force_path_style(true);
    }
    aws_sdk_s3::Client::from_conf(b.build())
}

/// Fetches a secret string once per process (Lambda instance) and keeps it.
static SECRETS: OnceCell<tokio::sync::Mutex<std::collections::HashMap<String, SecretString>>> = OnceCell::const_new();

pub async fn secret(arn: &str) -> Result<SecretString, SetupError> {
    let cache = SECRETS.get_or_init(|| async { Default::default() }).await;
    let mut cache = cache.lock().await;
    if let Some(s) = cache.get(arn) {
        return Ok(s.clone());
    }
    let client = aws_sdk_secretsmanager::Client::new(sdk_config().await);
    let out = client
        .get_secret_value()
        .secret_id(arn)
        .send()
        .await
        // The error names the operation and service; it never contains the value.
        .map_err(|e| format!("cannot read secret {arn}: {}", crate::error::chain(&e)))?;
    let value = out.secret_string().ok_or_else(|| format!("secret {arn} has no string value"))?;
    let s = SecretString::from(value.to_owned());
    cache.insert(arn.to_owned(), s.clone());
    Ok(s)
}

/// One version stage of a secret (`AWSCURRENT`, `AWSPREVIOUS`), read now, never cached; `None`
/// when the secret has no version in that stage (a secret never rotated has no previous one).
pub async fn secret_stage(arn: &str, stage: &str) -> Result<Option<SecretString>, SetupError> {
    use aws_sdk_secretsmanager::operation::get_secret_value::GetSecretValueError;
    let client = aws_sdk_secretsmanager::Client::new(sdk_config().await);
    match client.get_secret_value().secret_id(arn).version_stage(stage).send().await {
        Ok(out) => Ok(out.secret_string().map(|v| SecretString::from(v.to_owned()))),
        Err(e) if matches!(e.as_service_error(), Some(GetSecretValueError::ResourceNotFoundException(_))) => Ok(None),
        Err(e) => Err(format!("cannot read secret {arn} ({stage}): {}", crate::error::chain(&e)).into()),
    }
}

/// Drops a cached secret so the next read fetches it again (after a rotation).
pub async fn forget_secret(arn: &str) {
    if let Some(cache) = SECRETS.get() {
        cache.lock().await.remove(arn);
    }
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

    /// Connection settings; reads the secret (once per instance) for [`Self::Secret`].
    pub async fn config(&self) -> Result<DbConfig, SetupError> {
        use secrecy::ExposeSecret;
        match self {
            Self::Iam { host, port, dbname, user } => Ok(DbConfig::for_iam(host, *port, dbname, user)),
            Self::Secret { arn, endpoint } => {
                let json = secret(arn).await?;
                Ok(DbConfig::from_rds_secret_via(json.expose_secret(), endpoint)?)
            }
            Self::Url(url) => Ok(DbConfig::from_url(url.expose_secret())?),
            Self::Missing => Err("DB_SECRET_ARN or DATABASE_URL must be set".into()),
        }
    }
}

/// Database settings straight from the environment (the migrate function and tests).
pub async fn db_config() -> Result<DbConfig, SetupError> {
    DatabaseSource::from_env()?.config().await
}

/// The pool for one Lambda instance: lazily connecting, `settings.pool_size` connections.
pub async fn db_pool(settings: &crate::settings::Settings) -> Result<(deadpool_postgres::Pool, DbConfig), SetupError> {
    let source = settings.database.clone();
    let cfg = source.config().await?;
    // With a Secrets Manager secret, a refused login re-reads it: RDS rotates it under us.
    // With IAM authentication there is nothing to re-read: every connection gets a new token.
    let refresh: Option<crate::db::Refresh> = match &source {
        DatabaseSource::Secret { arn, .. } => {
            let (arn, source) = (arn.clone(), source.clone());
            Some(std::sync::Arc::new(move || {
                let (arn, source) = (arn.clone(), source.clone());
                Box::pin(async move {
                    forget_secret(&arn).await;
                    source.config().await.map_err(|e| e.to_string())
                })
            }))
        }
        _ => None,
    };
    let password = match source {
        DatabaseSource::Iam { .. } => Some(iam_password(&cfg).await?),
        _ => None,
    };
    let pool = crate::db::pool_with_auth(&cfg, settings.ca_bundle.as_deref(), settings.pool_size, refresh, password)
        .map_err(|e: DbSetupError| -> SetupError { e.into() })?;
    Ok((pool, cfg))
}

/// Signs an IAM auth token for each new connection of `cfg`'s endpoint and user.
///
/// On Lambda the region and the execution role's credentials are in the environment and are
/// used as they are: no SDK configuration is built and nothing is fetched, so a cold start
/// costs only what signing costs (microseconds). Where the SDK was configured otherwise (see
/// [`direct_settings`]), its credentials provider supplies them, which caches and refreshes.
async fn iam_password(cfg: &DbConfig) -> Result<crate::db::Password, SetupError> {
    use aws_credential_types::provider::ProvideCredentials;
    use tokio_postgres::config::Host;
    let host = match cfg.pg.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        _ => return Err("DB_HOST must be a host name for IAM authentication".into()),
    };
    let port = cfg.pg.get_ports().first().copied().unwrap_or(5432);
    let user = cfg.pg.get_user().unwrap_or_default().to_owned();
    let env: Vec<(String, String)> = std::env::vars().collect();
    let (region, provider) = match direct_settings(&env) {
        Some((region, credentials)) => {
            (region, aws_credential_types::provider::SharedCredentialsProvider::new(credentials))
        }
        None => {
            let sdk = sdk_config().await;
            let region = sdk.region().cloned().unwrap_or_else(|| aws_config::Region::from_static(DEFAULT_REGION));
            let provider = sdk.credentials_provider().ok_or("no AWS credentials to sign the database auth token")?;
            (region, provider)
        }
    };
    let request = crate::rds_iam::TokenRequest { host, port, user, region: region.to_string() };
    // Fails now, at init, on an endpoint that cannot be signed, rather than on every connection.
    let probe = aws_credential_types::Credentials::new("probe", "probe", None, None, "probe");
    crate::rds_iam::auth_token(&request, &probe, std::time::SystemTime::now())?;
    Ok(std::sync::Arc::new(move || {
        let (request, provider) = (request.clone(), provider.clone());
        Box::pin(async move {
            let credentials = provider.provide_credentials().await.map_err(|e| crate::error::chain(&e))?;
            crate::rds_iam::auth_token(&request, &credentials, std::time::SystemTime::now()).map_err(|e| e.to_string())
        })
    }))
}

#[cfg(test)]
mod tests {
    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    const LAMBDA: [(&str, &str); 8] = [
        ("AWS_REGION", "eu-west-1"),
        ("AWS_DEFAULT_REGION", "eu-west-1"),
        ("AWS_ACCESS_KEY_ID", "ASIAEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("AWS_SESSION_TOKEN", "token"),
        ("AWS_LAMBDA_FUNCTION_NAME", "trigger"),
        ("AWS_EXECUTION_ENV", "AWS_Lambda_provided.al2023"),
        ("AWS_XRAY_DAEMON_ADDRESS", "169.254.79.129:2000"),
    ];

    #[test]
    fn a_lambda_environment_is_used_directly() {
        use aws_credential_types::provider::ProvideCredentials;
        let mut e = env(&LAMBDA);
        e.push(("ARTIFACT_BUCKET".into(), "b".into()));
        let (region, creds) = super::direct_settings(&e).expect("direct");
        assert_eq!(region.as_ref(), "eu-west-1");
        let c = futures::executor::block_on(creds.provide_credentials()).unwrap();
        assert_eq!(
            (c.access_key_id(), c.secret_access_key(), c.session_token()),
            ("ASIAEXAMPLE", "secret", Some("token"))
        );
    }

    #[test]
    fn anything_that_configures_the_sdk_goes_through_the_loader() {
        for extra in [
            "AWS_ENDPOINT_URL",
            "AWS_ENDPOINT_URL_SECRETS_MANAGER",
            "AWS_PROFILE",
            "AWS_MAX_ATTEMPTS",
            "AWS_RETRY_MODE",
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            "AWS_WEB_IDENTITY_TOKEN_FILE",
            "AWS_USE_FIPS_ENDPOINT",
        ] {
            let mut e = env(&LAMBDA);
            e.push((extra.into(), "x".into()));
            assert!(super::direct_settings(&e).is_none(), "{extra}");
        }
        // No credentials at all, or half of a key pair: the loader's chain decides.
        assert!(super::direct_settings(&env(&[("AWS_REGION", "eu-west-1")])).is_none());
        assert!(super::direct_settings(&env(&[("AWS_ACCESS_KEY_ID", "k"), ("S3_ENDPOINT", "http://x")])).is_none());
    }

    #[test]
    fn a_local_endpoint_without_keys_uses_the_local_stack_keys() {
        let (region, creds) = super::direct_settings(&env(&[("S3_ENDPOINT", "http://127.0.0.1:9000")])).unwrap();
        assert_eq!(region.as_ref(), "us-east-1");
        assert_eq!(creds.access_key_id(), "local");
        // Empty values count as absent, as `var` does.
        let e = env(&[("S3_ENDPOINT", "http://127.0.0.1:9000"), ("AWS_REGION", " "), ("AWS_ACCESS_KEY_ID", "")]);
        assert_eq!(super::direct_settings(&e).unwrap().0.as_ref(), "us-east-1");
    }

    #[test]
    fn amazon_trust_services_roots_are_found_among_the_mozilla_roots() {
        let is_amazon_root = super::amazon_root_filter();
        let n = webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().filter(|c| is_amazon_root(c.as_ref())).count();
        assert_eq!(n, 5, "Amazon Root CA 1-4 and Starfield Services Root CA G2");
    }
}
