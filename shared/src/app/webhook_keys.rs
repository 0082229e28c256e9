//! The webhook's HMAC keys, and how a rotation reaches a warm instance without a gap.
//!
//! A key from Secrets Manager is read once, at init. When a signature matches none of the keys
//! held, the secret is read again (at most once a minute per instance, so forged requests
//! cannot turn into a stream of Secrets Manager calls): its `AWSCURRENT` and `AWSPREVIOUS`
//! versions both become valid. So after `put-secret-value`, a worker may switch to the new
//! secret at once (a warm instance picks it up on the first mismatch), and one still signing
//! with the old secret keeps working until the next rotation. docs/OPERATIONS.md has the steps.

use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use secrecy::{ExposeSecret, SecretString};

use crate::domain::signature::{self, SignatureError};

/// Least time between two re-reads of the secret by one instance.
pub const REFRESH_EVERY: Duration = Duration::from_secs(60);

pub struct WebhookKeys {
    /// Where to re-read from; `None` for a plain secret (local stack, tests).
    arn: Option<String>,
    keys: RwLock<Vec<SecretString>>,
    refreshed: Mutex<Option<Instant>>,
}

impl std::fmt::Debug for WebhookKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookKeys").field("arn", &self.arn).finish_non_exhaustive()
    }
}

impl WebhookKeys {
    /// One fixed key.
    pub fn fixed(key: SecretString) -> Self {
        Self { arn: None, keys: RwLock::new(vec![key]), refreshed: Mutex::new(None) }
    }

    /// The key read from `arn` at init, re-read from it on a mismatch.
    pub fn from_secret(arn: String, current: SecretString) -> Self {
        Self::from_secret_read_at(arn, current, Instant::now())
    }

    /// As [`Self::from_secret`], the key having been read at `read_at` (an instance warm for a
    /// while, in tests).
    pub fn from_secret_read_at(arn: String, current: SecretString, read_at: Instant) -> Self {
        Self { arn: Some(arn), keys: RwLock::new(vec![current]), refreshed: Mutex::new(Some(read_at)) }
    }

    fn check(&self, header: Option<&str>, body: &[u8], now: i64) -> Result<(), SignatureError> {
        let keys = self.keys.read().unwrap_or_else(|p| p.into_inner());
        let mut last = Err(SignatureError::Missing);
        for key in keys.iter() {
            last = signature::verify(key.expose_secret().as_bytes(), header, body, now);
            if last.is_ok() {
                return last;
            }
        }
        last
    }

    /// Whether this instance may re-read the secret now (and, if so, counts this as the read).
    fn due(&self) -> bool {
        let mut at = self.refreshed.lock().unwrap_or_else(|p| p.into_inner());
        match *at {
            Some(t) if t.elapsed() < REFRESH_EVERY => false,
            _ => {
                *at = Some(Instant::now());
                true
            }
        }
    }

    /// Checks the signature against every key held; on a mismatch, re-reads the secret's
    /// current and previous versions when due, and checks once more.
    pub async fn verify(&self, header: Option<&str>, body: &[u8], now: i64) -> Result<(), SignatureError> {
        let first = self.check(header, body, now);
        // Only a wrong signature can be cured by another key: a malformed or stale header
        // cannot, and must not cost a Secrets Manager call.
        let (Err(SignatureError::Mismatch), Some(arn)) = (&first, &self.arn) else { return first };
        if !self.due() {
            return first;
        }
        let mut fresh = Vec::new();
        for stage in ["AWSCURRENT", "AWSPREVIOUS"] {
            match crate::aws::secrets::secret_stage(arn, stage).await {
                Ok(Some(key)) => fresh.push(key),
                Ok(None) => {}
                Err(e) => {
                    // Keep the keys held; the next due mismatch tries again.
                    tracing::warn!(error = %e, "re-reading the webhook secret failed");
                    return first;
                }
            }
        }
        if fresh.is_empty() {
            return first;
        }
        tracing::info!(keys = fresh.len(), "webhook secret re-read after a signature mismatch");
        *self.keys.write().unwrap_or_else(|p| p.into_inner()) = fresh;
        self.check(header, body, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_key_verifies_its_own_signatures_only() {
        let keys = WebhookKeys::fixed(SecretString::from("k1"));
        let body = b"{}";
        let good = signature::header_value(b"k1", 100, body);
        let bad = signature::header_value(b"k2", 100, body);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        assert!(rt.block_on(keys.verify(Some(&good), body, 100)).is_ok());
        assert!(matches!(rt.block_on(keys.verify(Some(&bad), body, 100)), Err(SignatureError::Mismatch)));
        assert!(rt.block_on(keys.verify(None, body, 100)).is_err());
    }
}
