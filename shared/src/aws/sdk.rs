//! The AWS SDK's configuration, built once per process: credentials and region straight from a
//! Lambda environment where that is all there is, a trust store compiled in, per-attempt
//! timeouts and at most one retry; a request's budget (`crate::budget`) bounds each call whole.

use std::time::Duration;

use aws_config::{BehaviorVersion, SdkConfig};
use tokio::sync::OnceCell;

use crate::config::{var, Settings};

static SDK: OnceCell<SdkConfig> = OnceCell::const_new();

/// The AWS SDK configuration, loaded at most once. Timeouts keep a slow S3 or Secrets Manager
/// well below API Gateway's 29 s: the request fails with 503 instead of hanging.
pub async fn sdk_config() -> &'static SdkConfig {
    SDK.get_or_init(|| async {
        use aws_config::retry::RetryConfig;
        use aws_config::timeout::TimeoutConfig;
        // At most one retry of a call on the request path, and only inside the request's
        // budget (`crate::budget` bounds the whole call, retries included).
        let retries = RetryConfig::standard().with_max_attempts(2);
        let timeouts = TimeoutConfig::builder()
            .connect_timeout(Duration::from_secs(2))
            .operation_attempt_timeout(Duration::from_secs(5))
            .operation_timeout(Duration::from_secs(12))
            .build();
        match direct_settings(&crate::config::aws_environment()) {
            Some((region, credentials)) => SdkConfig::builder()
                .behavior_version(BehaviorVersion::latest())
                .region(region)
                .credentials_provider(aws_credential_types::provider::SharedCredentialsProvider::new(credentials))
                .timeout_config(timeouts)
                .retry_config(retries)
                .http_client(https_client())
                .build(),
            None => {
                let mut loader = aws_config::defaults(BehaviorVersion::latest())
                    .timeout_config(timeouts)
                    .retry_config(retries)
                    .http_client(https_client());
                if var("AWS_REGION").is_none() && var("AWS_DEFAULT_REGION").is_none() {
                    loader = loader.region(aws_config::Region::from_static(DEFAULT_REGION));
                }
                if let Some(endpoint) = var("S3_ENDPOINT").filter(|e| is_loopback(e)) {
                    if var("AWS_ACCESS_KEY_ID").is_none() {
                        loader = loader.credentials_provider(local_credentials(&endpoint));
                    }
                }
                loader.load().await
            }
        }
    })
    .await
}

pub(crate) const DEFAULT_REGION: &str = "us-east-1";

/// The local stack's fixed S3 keys, for a loopback `S3_ENDPOINT` (the local stack's own S3)
/// without keys in the environment; said in the log, so that nobody mistakes them for theirs.
/// An endpoint elsewhere never gets them: its keys come from the environment or the SDK's
/// chain, or its calls fail and say so.
fn local_credentials(endpoint: &str) -> aws_credential_types::Credentials {
    tracing::info!(endpoint, "S3_ENDPOINT is on loopback and no AWS keys are set: using the local stack's S3 keys");
    aws_credential_types::Credentials::new("local", "local-secret", None, None, "code2des-local")
}

/// Whether an endpoint URL names a loopback host (127.0.0.0/8, ::1 or localhost).
fn is_loopback(endpoint: &str) -> bool {
    let Ok(url) = url::Url::parse(endpoint) else { return false };
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
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
pub(crate) fn direct_settings(
    env: &[(String, String)],
) -> Option<(aws_config::Region, aws_credential_types::Credentials)> {
    let get = |name: &str| env.iter().find(|(k, v)| k == name && !v.trim().is_empty()).map(|(_, v)| v.clone());
    if env.iter().any(|(k, _)| k.starts_with("AWS_") && !understood(k)) {
        return None;
    }
    let region = get("AWS_REGION").or_else(|| get("AWS_DEFAULT_REGION")).unwrap_or_else(|| DEFAULT_REGION.into());
    let credentials = match (get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY")) {
        (Some(key), Some(secret)) => {
            aws_credential_types::Credentials::new(key, secret, get("AWS_SESSION_TOKEN"), None, "environment")
        }
        (None, None) => match get("S3_ENDPOINT").filter(|e| is_loopback(e)) {
            Some(endpoint) => local_credentials(&endpoint),
            None => return None,
        },
        _ => return None,
    };
    Some((aws_config::Region::new(region), credentials))
}

/// Whether a root certificate belongs to Amazon Trust Services, the CAs of every AWS endpoint
/// (S3, Secrets Manager, STS): Amazon Root CA 1–4 and Starfield Services Root CA G2. Roots are
/// self-signed, so the name can only appear in an Amazon root's own issuer and subject. `memmem`
/// matters: a naive byte-window scan of the ~150 roots cost 0.4 ms of every cold start. Only the
/// head of each certificate is searched: the issuer comes first in a certificate, after the
/// version, serial and algorithm; the whole certificates cost 540 000 instructions of the S3
/// functions' 3.2 million at init (callgrind), the heads a third of that.
fn amazon_root_filter() -> impl Fn(&[u8]) -> bool {
    let names = AMAZON_ROOT_NAMES.map(memchr::memmem::Finder::new);
    move |der| names.iter().any(|n| n.find(&der[..der.len().min(ISSUER_WITHIN)]).is_some())
}

/// The names in Amazon Trust Services' roots.
const AMAZON_ROOT_NAMES: [&[u8]; 2] = [b"Amazon Root CA", b"Starfield Services Root Certificate Authority"];

/// Bytes of a root certificate's DER that hold its issuer's name (a test checks every root).
const ISSUER_WITHIN: usize = 320;

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
pub async fn s3_client(settings: &Settings) -> aws_sdk_s3::Client {
    let sdk = sdk_config().await;
    let mut b = aws_sdk_s3::config::Builder::from(sdk);
    if let Some(ep) = settings.s3_endpoint.clone() {
        b = b.endpoint_url(ep).force_path_style(true);
    }
    aws_sdk_s3::Client::from_conf(b.build())
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
    fn an_endpoint_elsewhere_without_keys_never_gets_the_local_keys() {
        for elsewhere in ["http://10.0.0.5:9000", "https://s3.example.com", "not a url"] {
            assert!(super::direct_settings(&env(&[("S3_ENDPOINT", elsewhere)])).is_none(), "{elsewhere}");
        }
        for local in ["http://localhost:9000", "http://[::1]:9000", "http://127.0.0.2:9000"] {
            assert!(super::direct_settings(&env(&[("S3_ENDPOINT", local)])).is_some(), "{local}");
        }
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
        // The head searched holds the issuer of every root: the same five as the whole would.
        let whole =
            |der: &[u8]| super::AMAZON_ROOT_NAMES.iter().any(|name| der.windows(name.len()).any(|w| w == *name));
        for c in webpki_root_certs::TLS_SERVER_ROOT_CERTS {
            assert_eq!(is_amazon_root(c.as_ref()), whole(c.as_ref()));
        }
    }
}
