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

use std::time::Duration;

use aws_config::{BehaviorVersion, SdkConfig};
use secrecy::SecretString;
use tokio::sync::OnceCell;

use crate::db::{DbConfig, DbEndpoint, DbSetupError};

pub type SetupError = Box<dyn std::error::Error + Send + Sync>;

pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(15 * 60);
/// The database the local stack and tests use when `DATABASE_URL` is unset.
pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/code2des";

/// A non-empty environment variable.
pub fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn required(name: &str) -> Result<String, SetupError> {
    var(name).ok_or_else(|| format!("{name} must be set").into())
}

pub fn bucket() -> Result<String, SetupError> {
    required("ARTIFACT_BUCKET")
}

pub fn callback_url() -> Result<String, SetupError> {
    required("CALLBACK_URL")
}

pub fn deadline() -> Result<Duration, SetupError> {
    match var("JOB_DEADLINE_SECONDS") {
        None => Ok(DEFAULT_DEADLINE),
        Some(v) => match v.parse::<u64>() {
            Ok(s) if s > 0 => Ok(Duration::from_secs(s)),
            _ => Err("JOB_DEADLINE_SECONDS must be a positive integer".into()),
        },
    }
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
        let mut loader =
            aws_config::defaults(BehaviorVersion::latest()).timeout_config(timeouts).http_client(https_client());
        if var("AWS_REGION").is_none() && var("AWS_DEFAULT_REGION").is_none() {
            loader = loader.region(aws_config::Region::from_static("us-east-1"));
        }
        // Against a local S3-compatible endpoint without AWS credentials in the environment,
        // use the local stack's fixed keys instead of walking the whole provider chain.
        if var("S3_ENDPOINT").is_some() && var("AWS_ACCESS_KEY_ID").is_none() {
            loader = loader.credentials_provider(aws_credential_types::Credentials::new(
                "local",
                "local-secret",
                None,
                None,
                "code2des-local",
            ));
        }
        loader.load().await
    })
    .await
}

/// Whether a root certificate belongs to Amazon Trust Services, the CAs of every AWS endpoint
/// (S3, Secrets Manager, STS): Amazon Root CA 1–4 and Starfield Services Root CA G2. Roots are
/// self-signed, so the name can only appear in an Amazon root's own subject.
fn is_amazon_root(der: &[u8]) -> bool {
    let has = |needle: &[u8]| der.windows(needle.len()).any(|w| w == needle);
    has(b"Amazon Root CA") || has(b"Starfield Services Root Certificate Authority")
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
pub async fn s3_client() -> aws_sdk_s3::Client {
    let sdk = sdk_config().await;
    let mut b = aws_sdk_s3::config::Builder::from(sdk);
    if let Some(ep) = var("S3_ENDPOINT") {
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

/// Drops a cached secret so the next read fetches it again (after a rotation).
pub async fn forget_secret(arn: &str) {
    if let Some(cache) = SECRETS.get() {
        cache.lock().await.remove(arn);
    }
}

/// The webhook HMAC secret.
pub async fn webhook_secret() -> Result<SecretString, SetupError> {
    if let Some(arn) = var("WEBHOOK_SECRET_ARN") {
        return secret(&arn).await;
    }
    var("WEBHOOK_SECRET")
        .map(SecretString::from)
        .ok_or_else(|| "WEBHOOK_SECRET_ARN or WEBHOOK_SECRET must be set".into())
}

/// Database settings: the RDS secret when `DB_SECRET_ARN` is set (its endpoint overridden by
/// `DB_HOST` / `DB_PORT` / `DB_NAME` where given), else `DATABASE_URL`.
pub async fn db_config() -> Result<DbConfig, SetupError> {
    if let Some(arn) = var("DB_SECRET_ARN") {
        use secrecy::ExposeSecret;
        let port = match var("DB_PORT") {
            None => None,
            Some(v) => Some(v.parse().map_err(|_| -> SetupError { "DB_PORT must be a port number".into() })?),
        };
        let endpoint = DbEndpoint { host: var("DB_HOST"), port, dbname: var("DB_NAME") };
        let json = secret(&arn).await?;
        return Ok(DbConfig::from_rds_secret_via(json.expose_secret(), &endpoint)?);
    }
    let url =
        var("DATABASE_URL").ok_or_else(|| -> SetupError { "DB_SECRET_ARN or DATABASE_URL must be set".into() })?;
    Ok(DbConfig::from_url(&url)?)
}

/// The pool for one Lambda instance: lazily connecting, sized by `DB_POOL_SIZE` (default 2:
/// an instance serves one request at a time; the spare covers a connection being replaced).
pub async fn db_pool() -> Result<(deadpool_postgres::Pool, DbConfig), SetupError> {
    let cfg = db_config().await?;
    let size = match var("DB_POOL_SIZE") {
        None => 2,
        Some(v) => v.parse().map_err(|_| -> SetupError { "DB_POOL_SIZE must be a positive integer".into() })?,
    };
    // With a Secrets Manager secret, a refused login re-reads it: RDS rotates it under us.
    let refresh: Option<crate::db::Refresh> = var("DB_SECRET_ARN").map(|arn| -> crate::db::Refresh {
        std::sync::Arc::new(move || {
            let arn = arn.clone();
            Box::pin(async move {
                forget_secret(&arn).await;
                db_config().await.map_err(|e| e.to_string())
            })
        })
    });
    let pool = crate::db::pool_with_refresh(&cfg, var("DB_CA_BUNDLE").as_deref(), size, refresh)
        .map_err(|e: DbSetupError| -> SetupError { e.into() })?;
    Ok((pool, cfg))
}

#[cfg(test)]
mod tests {
    #[test]
    fn amazon_trust_services_roots_are_found_among_the_mozilla_roots() {
        let n = webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().filter(|c| super::is_amazon_root(c.as_ref())).count();
        assert_eq!(n, 5, "Amazon Root CA 1-4 and Starfield Services Root CA G2");
    }
}
