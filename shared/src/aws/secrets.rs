//! Secrets Manager: a secret string read once per process and cached, one version stage read
//! afresh (a rotation), and forgetting a cached value. Values are `SecretString`s: never
//! printed, never logged; errors name the secret and the operation, never the value.

use secrecy::SecretString;
use tokio::sync::OnceCell;

use crate::aws::sdk::sdk_config;
use crate::config::SetupError;

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
