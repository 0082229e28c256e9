//! The application role's login (SPEC section 8): the functions log in through RDS Proxy as
//! `code2des_app`, whose password the proxy reads from the role's own Secrets Manager secret.
//!
//! RDS Proxy checks a function's IAM token itself, then logs in to Aurora as the application
//! role with the password in that role's Secrets Manager secret (`DbAppSecret`). The role's
//! password in PostgreSQL must therefore match the secret: the migrate function, which logs in
//! as the owner, sets it after migrating (and again after the secret rotated). It sends only a
//! SCRAM-SHA-256 verifier, the form PostgreSQL stores, so the password itself never reaches the
//! server, a statement log or `pg_stat_statements`.
//!
//! Without RDS Proxy (template.yaml `DatabaseAccess=direct`) the functions log in to Aurora
//! itself with their IAM tokens, which Aurora accepts only for a member of `rds_iam`: the
//! migrate function grants it ([`grant_rds_iam`]) instead of setting a password, and takes it
//! back ([`revoke_rds_iam`]) when the stack returns to the proxy.

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

/// A plain lowercase identifier (letters, digits, `_`), which needs no quoting or escaping.
fn plain(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && s.len() <= 63
}

/// RDS's role whose members log in with IAM auth tokens, and only with them.
pub const RDS_IAM: &str = "rds_iam";

/// Direct database access (template.yaml `DatabaseAccess=direct`, no RDS Proxy): the functions
/// log in to Aurora itself with IAM auth tokens, which Aurora accepts only for a member of
/// `rds_iam`. Grants it to `role` (idempotent). Fails where the server has no `rds_iam` role
/// (not RDS): IAM logins cannot work there, and saying so beats a login failure later.
pub async fn grant_rds_iam(client: &tokio_postgres::Client, role: &str) -> Result<(), PasswordError> {
    if !plain(role) {
        return Err(PasswordError::Role(role.to_owned()));
    }
    let db = |e: tokio_postgres::Error| PasswordError::Database(crate::error::chain(&e));
    let exists: bool = client
        .query_one("SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", &[&RDS_IAM])
        .await
        .map_err(db)?
        .try_get(0)
        .map_err(db)?;
    if !exists {
        return Err(PasswordError::Database(format!("this server has no {RDS_IAM} role: IAM logins need RDS")));
    }
    client.batch_execute(&format!("GRANT {RDS_IAM} TO \"{role}\"")).await.map_err(db)
}

/// Proxy mode: RDS Proxy logs in to Aurora as `role` with its password, which a member of
/// `rds_iam` can no longer use (a role on RDS logs in by one method). A stack switched back from
/// direct access therefore takes the membership away. Answers whether there was one; nothing to
/// do where the server has no `rds_iam` role (a local PostgreSQL).
pub async fn revoke_rds_iam(client: &tokio_postgres::Client, role: &str) -> Result<bool, PasswordError> {
    if !plain(role) {
        return Err(PasswordError::Role(role.to_owned()));
    }
    let db = |e: tokio_postgres::Error| PasswordError::Database(crate::error::chain(&e));
    let member: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid \
             JOIN pg_roles u ON u.oid = m.member WHERE g.rolname = $1 AND u.rolname = $2)",
            &[&RDS_IAM, &role],
        )
        .await
        .map_err(db)?
        .try_get(0)
        .map_err(db)?;
    if member {
        client.batch_execute(&format!("REVOKE {RDS_IAM} FROM \"{role}\"")).await.map_err(db)?;
    }
    Ok(member)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
