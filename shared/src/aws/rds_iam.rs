//! RDS IAM authentication: the password of a connection through RDS Proxy (or to the cluster)
//! is a token signed locally with the function's own AWS credentials, so no database password
//! is fetched at a cold start and no function holds one.
//!
//! The token is a SigV4 presigned URL, without its scheme, of
//! `GET https://{host}:{port}/?Action=connect&DBUser={user}` for the service `rds-db`, valid
//! for 900 s (the longest RDS accepts). It is checked only when a connection authenticates:
//! a connection opened with it stays open after it expires. Signing is a few HMACs, no I/O,
//! so the pool signs a fresh token for every new connection ([`crate::db`]).
//!
//! The execution role needs `rds-db:connect` on
//! `arn:aws:rds-db:{region}:{account}:dbuser:{proxy resource id}/{user}`; the database user must
//! be a member of the `rds_iam` role when connecting to the cluster directly (RDS Proxy checks
//! the token itself and logs in with the user's secret).

use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SignatureLocation, SigningSettings};
use aws_sigv4::sign::v4;

/// How long a token is accepted for a new connection (RDS's maximum).
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(900);

/// The signing service of database logins.
const SERVICE: &str = "rds-db";

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("invalid database endpoint or user for an IAM auth token: {0}")]
    Request(String),
    #[error("cannot sign the IAM auth token: {0}")]
    Sign(String),
}

/// Where and as whom to log in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRequest {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub region: String,
}

/// The auth token for `req`, signed with `credentials` at `now`.
///
/// Pure and deterministic (the time is a parameter), so it is tested against the AWS SDKs'
/// published vector. The result is a password: never log it.
pub fn auth_token(req: &TokenRequest, credentials: &Credentials, now: SystemTime) -> Result<String, TokenError> {
    if req.host.is_empty() || req.host.contains(['/', '?', '#', '@', ' ']) {
        return Err(TokenError::Request("the host must be a bare host name".into()));
    }
    let user: String = url::form_urlencoded::byte_serialize(req.user.as_bytes()).collect();
    let url = format!("https://{}:{}/?Action=connect&DBUser={user}", req.host, req.port);

    let mut settings = SigningSettings::default();
    settings.signature_location = SignatureLocation::QueryParams;
    settings.expires_in = Some(TOKEN_LIFETIME);
    let identity = credentials.clone().into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(&req.region)
        .name(SERVICE)
        .time(now)
        .settings(settings)
        .build()
        .map_err(|e| TokenError::Sign(e.to_string()))?
        .into();
    let signable = SignableRequest::new("GET", &url, std::iter::empty(), SignableBody::Bytes(&[]))
        .map_err(|e| TokenError::Request(e.to_string()))?;
    let (instructions, _signature) = sign(signable, &params).map_err(|e| TokenError::Sign(e.to_string()))?.into_parts();
    let mut request = http::Request::builder().uri(&url).body(()).map_err(|e| TokenError::Request(e.to_string()))?;
    instructions.apply_to_request_http1x(&mut request);
    let signed = request.uri().to_string();
    signed
        .strip_prefix("https://")
        .map(str::to_owned)
        .ok_or_else(|| TokenError::Sign("the presigned URL lost its scheme".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds(token: Option<&str>) -> Credentials {
        Credentials::new("akid", "secret", token.map(str::to_owned), None, "test")
    }

    fn peccy() -> TokenRequest {
        TokenRequest {
            host: "prod-instance.us-east-1.rds.amazonaws.com".into(),
            port: 3306,
            user: "peccy".into(),
            region: "us-east-1".into(),
        }
    }

    /// The AWS SDK for Rust's own vector (aws-sdk-rds `auth_token`, `signing_works`), the same
    /// inputs as the other SDKs' RDS token generators: 2024-08-26T22:00:00Z, key `akid`/`secret`.
    #[test]
    fn matches_the_aws_sdk_vector() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_724_709_600);
        assert_eq!(
            auth_token(&peccy(), &creds(None), now).unwrap(),
            "prod-instance.us-east-1.rds.amazonaws.com:3306/?Action=connect&DBUser=peccy\
             &X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=akid%2F20240826%2Fus-east-1%2Frds-db%2Faws4_request\
             &X-Amz-Date=20240826T220000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host\
             &X-Amz-Signature=dd0cba843009474347af724090233265628ace491ea17ce3eb3da098b983ad89"
        );
    }

    #[test]
    fn a_session_token_is_carried_and_the_token_changes_with_time() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_724_709_600);
        let req = TokenRequest {
            host: "code2des-db.proxy-abc.eu-west-1.rds.amazonaws.com".into(),
            port: 5432,
            user: "code2des_app".into(),
            region: "eu-west-1".into(),
        };
        let a = auth_token(&req, &creds(Some("session/token+1=")), now).unwrap();
        assert!(a.starts_with(
            "code2des-db.proxy-abc.eu-west-1.rds.amazonaws.com:5432/?Action=connect&DBUser=code2des_app&"
        ));
        assert!(a.contains("X-Amz-Security-Token=session%2Ftoken%2B1%3D"), "{a}");
        assert!(a.contains("%2Feu-west-1%2Frds-db%2Faws4_request"));
        assert!(!a.contains("https://"));
        let b = auth_token(&req, &creds(Some("session/token+1=")), now + Duration::from_secs(1)).unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn a_host_with_a_path_or_credentials_is_refused() {
        let now = SystemTime::now();
        for host in ["", "a/b", "user@host", "host?x"] {
            let req = TokenRequest { host: host.into(), ..peccy() };
            assert!(auth_token(&req, &creds(None), now).is_err(), "{host}");
        }
    }
}
