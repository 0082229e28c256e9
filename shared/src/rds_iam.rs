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

// ------------------------------------------------------------------------------------------
// The proxy's side of the application role.
//
// RDS Proxy checks a function's IAM token itself, then logs in to Aurora as the application
// role with the password in that role's Secrets Manager secret (`DbAppSecret`). The role's
// password in PostgreSQL must therefore match the secret: the migrate function, which logs in
// as the owner, sets it after migrating (and again after the secret rotated). It sends only a
// SCRAM-SHA-256 verifier, the form PostgreSQL stores, so the password itself never reaches the
// server, a statement log or `pg_stat_statements`.

#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    #[error("the application role's secret is not {{\"username\",\"password\"}} JSON")]
    Secret,
    #[error("the application role's name {0:?} is not a plain lowercase identifier")]
    Role(String),
    #[error("cannot set the application role's password: {0}")]
    Database(String),
}

/// PBKDF2-HMAC-SHA-256 with one output block (32 bytes), as SCRAM-SHA-256 uses it.
fn salted_password(password: &[u8], salt: &[u8], iterations: u32) -> [u8; 32] {
    use hmac::{Hmac, Mac};
    let prf = Hmac::<sha2::Sha256>::new_from_slice(password).expect("HMAC takes any key length");
    let mut u: [u8; 32] = {
        let mut m = prf.clone();
        m.update(salt);
        m.update(&1u32.to_be_bytes());
        m.finalize().into_bytes().into()
    };
    let mut out = u;
    for _ in 1..iterations {
        let mut m = prf.clone();
        m.update(&u);
        u = m.finalize().into_bytes().into();
        out.iter_mut().zip(u.iter()).for_each(|(o, x)| *o ^= x);
    }
    out
}

/// PostgreSQL's stored form of a SCRAM-SHA-256 password (`rolpassword`):
/// `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>` (RFC 5802, RFC 7677).
/// `password` is used as its bytes: SASLprep leaves the generated secrets (letters and digits)
/// unchanged.
pub fn scram_sha256_verifier(password: &str, salt: &[u8], iterations: u32) -> String {
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;
    use hmac::{Hmac, Mac};
    use sha2::Digest;
    let salted = salted_password(password.as_bytes(), salt, iterations);
    let key = |label: &[u8]| -> [u8; 32] {
        let mut m = Hmac::<sha2::Sha256>::new_from_slice(&salted).expect("HMAC takes any key length");
        m.update(label);
        m.finalize().into_bytes().into()
    };
    let stored_key = sha2::Sha256::digest(key(b"Client Key"));
    let server_key = key(b"Server Key");
    format!(
        "SCRAM-SHA-256${iterations}:{}${}:{}",
        STANDARD.encode(salt),
        STANDARD.encode(stored_key),
        STANDARD.encode(server_key)
    )
}

/// Sets the login password of the role named in `secret_json` (`{"username","password"}`, the
/// format of `DbAppSecret`) to that secret's password, as a SCRAM verifier with a fresh salt.
/// Returns the role's name. The connection must be the owner's (it needs CREATEROLE, which
/// Aurora's master user has); the role must exist (migrations/V4__app_role.sql).
pub async fn set_app_role_password(
    client: &tokio_postgres::Client,
    secret_json: &str,
) -> Result<String, PasswordError> {
    #[derive(serde::Deserialize)]
    struct Secret {
        username: String,
        password: String,
    }
    let secret: Secret = serde_json::from_str(secret_json).map_err(|_| PasswordError::Secret)?;
    let plain = |s: &str| {
        s.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
            && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            && s.len() <= 63
    };
    if !plain(&secret.username) {
        return Err(PasswordError::Role(secret.username));
    }
    if secret.password.is_empty() {
        return Err(PasswordError::Secret);
    }
    let salt: [u8; 16] = rand::random();
    let verifier = scram_sha256_verifier(&secret.password, &salt, 4096);
    // Identifier and verifier are both checked plain (letters, digits, `_`; base64, `$`, `:`):
    // nothing to escape. ALTER ROLE takes no bind parameters.
    client
        .batch_execute(&format!("ALTER ROLE \"{}\" WITH LOGIN PASSWORD '{verifier}'", secret.username))
        .await
        .map_err(|e| PasswordError::Database(crate::error::chain(&e)))?;
    Ok(secret.username)
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

    /// Cross-checked against an independent implementation (Python's hashlib.pbkdf2_hmac and
    /// hmac, the formula of PostgreSQL's scram_build_secret).
    #[test]
    fn the_scram_verifier_is_the_one_postgresql_stores() {
        let salt: Vec<u8> = (0u8..16).collect();
        assert_eq!(
            scram_sha256_verifier("pencil", &salt, 4096),
            "SCRAM-SHA-256$4096:AAECAwQFBgcICQoLDA0ODw==$zHCdol2044/ZyWzPLi7oxApCkamKw9Z+E4U/QApd/5Y=:\
             dd5peBOitVnLNFu7VmwP+HiDaaw4OUCv396eVCWhYiE="
        );
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
