//! The webhook's keys (Standard Webhooks `v1a` public key, `v1` secret, the legacy signature's
//! secret), and how a rotation reaches a warm instance without a gap: when a signature matches
//! no key held, the Secrets Manager keys are read again, `AWSCURRENT` and `AWSPREVIOUS` (at most
//! once a minute, so forgeries cannot become a stream of calls). A failed re-read is a 503, never
//! a 401: the worker retries, and its key may be the new one. docs/OPERATIONS.md, "The webhook's
//! keys", has the steps.

use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use ed25519_dalek::VerifyingKey;
use secrecy::{ExposeSecret, SecretSlice, SecretString};

use crate::domain::signature::{self, SignatureError};
use crate::domain::standard_webhooks::{self as sw, KeyError, Keys, Scheme};

/// Least time between two re-reads of the secrets by one instance.
pub const REFRESH_EVERY: Duration = Duration::from_secs(60);
/// After a re-read that failed, the least time before the next try.
pub const RETRY_FAILED_REFRESH: Duration = Duration::from_secs(5);
/// Longest one Secrets Manager read may take on the request path (within the budget).
pub const READ_TIMEOUT: Duration = Duration::from_secs(3);

/// Why a delivery was not verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyError {
    /// The signature does not verify against any key held (401).
    Signature(SignatureError),
    /// No key held matched and the keys could not be re-read (Secrets Manager failed or was
    /// too slow): the delivery may be signed with a rotated key, so it is a 503, not a 401.
    KeysUnreadable,
}

/// The last re-read: when, and whether it worked.
#[derive(Debug, Clone, Copy)]
struct Refreshed {
    at: Instant,
    ok: bool,
}

/// One version of the webhook secret: its text (the legacy key) and, for a `whsec_` value, the
/// `v1` key.
struct Secret {
    text: SecretString,
    v1: Option<SecretSlice<u8>>,
}

impl Secret {
    fn parse(text: SecretString) -> Result<Self, KeyError> {
        let raw = text.expose_secret();
        let v1 = if raw.trim().starts_with(sw::SECRET_PREFIX) {
            Some(SecretSlice::from(sw::parse_secret(raw)?))
        } else {
            None
        };
        Ok(Self { text, v1 })
    }
}

/// The versions of each key held now.
#[derive(Default)]
struct KeySet {
    secrets: Vec<Secret>,
    public_keys: Vec<VerifyingKey>,
}

/// How a delivery proved itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verified {
    /// Standard Webhooks: its `webhook-id` (the delivery's idempotency key) and the scheme.
    Standard { webhook_id: String, scheme: Scheme },
    /// The deprecated `Code2des-Signature`.
    Legacy,
}

/// The signature headers of one delivery, as received.
#[derive(Debug, Clone, Copy, Default)]
pub struct Delivery<'a> {
    pub standard: sw::Headers<'a>,
    /// `Code2des-Signature`.
    pub legacy: Option<&'a str>,
}

pub struct WebhookKeys {
    /// Where to re-read each from; `None` for a plain value (local stack, tests).
    secret_arn: Option<String>,
    public_key_arn: Option<String>,
    legacy: bool,
    keys: RwLock<KeySet>,
    refreshed: Mutex<Option<Refreshed>>,
}

impl std::fmt::Debug for WebhookKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookKeys")
            .field("secret_arn", &self.secret_arn)
            .field("public_key_arn", &self.public_key_arn)
            .field("legacy", &self.legacy)
            .finish_non_exhaustive()
    }
}

/// A key as configured: its value now, and the secret it is re-read from, if any.
pub struct Source<T> {
    pub arn: Option<String>,
    pub value: T,
}

impl WebhookKeys {
    /// The keys as configured, read at `read_at` (an instance warm for a while, in tests). At
    /// least one of `secret` and `public_key` must be given; a `whsec_` secret that does not
    /// decode, or a public key that does not read, fails here, at init.
    pub fn new(
        secret: Option<Source<SecretString>>,
        public_key: Option<Source<SecretString>>,
        legacy: bool,
        read_at: Instant,
    ) -> Result<Self, KeyError> {
        if secret.is_none() && public_key.is_none() {
            return Err(KeyError::new("no webhook secret and no webhook public key"));
        }
        let mut keys = KeySet::default();
        let (mut secret_arn, mut public_key_arn) = (None, None);
        let mut any_arn = false;
        if let Some(s) = secret {
            keys.secrets.push(Secret::parse(s.value)?);
            any_arn |= s.arn.is_some();
            secret_arn = s.arn;
        }
        if let Some(p) = public_key {
            match (sw::parse_public_key(p.value.expose_secret()), &p.arn) {
                (Ok(key), _) => keys.public_keys.push(key),
                // The deployed secret starts as a placeholder (`whpk_unset`, template.yaml) until
                // the operator puts the worker's key in it: v1a verifies nothing meanwhile, the
                // other keys still do, and the first v1a mismatch after the key is set reads it.
                (Err(e), Some(_)) => {
                    tracing::warn!(reason = %e, "the webhook public key secret holds no usable whpk_ key yet")
                }
                // A plain value is configuration: wrong is an error, at init.
                (Err(e), None) => return Err(e),
            }
            any_arn |= p.arn.is_some();
            public_key_arn = p.arn;
        }
        Ok(Self {
            secret_arn,
            public_key_arn,
            legacy,
            keys: RwLock::new(keys),
            refreshed: Mutex::new(any_arn.then_some(Refreshed { at: read_at, ok: true })),
        })
    }

    /// One fixed secret, legacy signatures accepted.
    pub fn fixed(key: SecretString) -> Self {
        Self::new(Some(Source { arn: None, value: key }), None, true, Instant::now())
            .expect("a fixed secret that reads (whsec_ values are checked at configuration)")
    }

    /// The secret read from `arn` at init, re-read from it on a mismatch.
    pub fn from_secret(arn: String, current: SecretString) -> Self {
        Self::from_secret_read_at(arn, current, Instant::now())
    }

    /// As [`Self::from_secret`], the key having been read at `read_at`.
    pub fn from_secret_read_at(arn: String, current: SecretString, read_at: Instant) -> Self {
        Self::new(Some(Source { arn: Some(arn), value: current }), None, true, read_at)
            .expect("a secret that reads (whsec_ values are checked at configuration)")
    }

    /// Whether the legacy `Code2des-Signature` is accepted (`LEGACY_SIGNATURE`).
    pub fn legacy_accepted(&self) -> bool {
        self.legacy
    }

    fn check(&self, d: &Delivery<'_>, body: &[u8], now: i64) -> Result<Verified, SignatureError> {
        let keys = self.keys.read().unwrap_or_else(|p| p.into_inner());
        let mut outcome = Err(SignatureError::Missing);
        if d.standard.present() {
            let hmac: Vec<&[u8]> =
                keys.secrets.iter().filter_map(|s| s.v1.as_ref().map(|k| k.expose_secret())).collect();
            match sw::verify(&d.standard, body, now, Keys { hmac: &hmac, ed25519: &keys.public_keys }) {
                Ok((id, scheme)) => return Ok(Verified::Standard { webhook_id: id.to_owned(), scheme }),
                Err(e) => outcome = Err(e),
            }
        }
        // A sender migrating may send both headers; the legacy one counts only while accepted.
        if let (true, Some(header)) = (self.legacy, d.legacy) {
            for s in &keys.secrets {
                match signature::verify(s.text.expose_secret().as_bytes(), Some(header), body, now) {
                    Ok(()) => return Ok(Verified::Legacy),
                    // A mismatch anywhere is what a re-read key could cure: it wins.
                    Err(e) if outcome != Err(SignatureError::Mismatch) => outcome = Err(e),
                    Err(_) => {}
                }
            }
        }
        outcome
    }

    /// Whether this instance may re-read the secrets now (and, if so, counts this as the read):
    /// `Ok(true)` yes, `Ok(false)` not yet (the last read worked), `Err` not yet, and the last
    /// read failed (so the keys held may be stale).
    fn due(&self) -> Result<bool, VerifyError> {
        let mut last = self.refreshed.lock().unwrap_or_else(|p| p.into_inner());
        match *last {
            Some(r) if r.ok && r.at.elapsed() < REFRESH_EVERY => Ok(false),
            Some(r) if !r.ok && r.at.elapsed() < RETRY_FAILED_REFRESH => Err(VerifyError::KeysUnreadable),
            _ => {
                *last = Some(Refreshed { at: Instant::now(), ok: true });
                Ok(true)
            }
        }
    }

    fn refresh_failed(&self) {
        *self.refreshed.lock().unwrap_or_else(|p| p.into_inner()) = Some(Refreshed { at: Instant::now(), ok: false });
    }

    /// The current and previous versions of one secret, read at once; `None` when a read
    /// failed or ran out of time, `Some(empty)` for no secret to read.
    async fn versions(arn: Option<&str>) -> Option<Vec<SecretString>> {
        let Some(arn) = arn else { return Some(Vec::new()) };
        let read = |stage| crate::budget::bounded(READ_TIMEOUT, crate::aws::secrets::secret_stage(arn, stage));
        let (current, previous) = tokio::join!(read("AWSCURRENT"), read("AWSPREVIOUS"));
        let mut fresh = Vec::new();
        for got in [current, previous] {
            match got {
                Ok(Ok(Some(key))) => fresh.push(key),
                Ok(Ok(None)) => {}
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "re-reading a webhook key failed");
                    return None;
                }
                Err(why) => {
                    tracing::warn!(reason = %why, "re-reading a webhook key ran out of time");
                    return None;
                }
            }
        }
        Some(fresh)
    }

    /// Re-reads every key that came from Secrets Manager, all at once; keeps what is held for
    /// any that does not parse (a bad value put in the secret must not lock every worker out).
    /// `false` when a read failed: then nothing is replaced.
    async fn refresh(&self) -> bool {
        let (secrets, public_keys) =
            tokio::join!(Self::versions(self.secret_arn.as_deref()), Self::versions(self.public_key_arn.as_deref()));
        let (Some(secrets), Some(public_keys)) = (secrets, public_keys) else { return false };
        // A version that does not parse is left out, and said: an operator who put a bad value
        // in the secret learns it here, not from workers locked out after the next rotation.
        // The error names the format only, never the value.
        let secrets: Vec<Secret> = secrets
            .into_iter()
            .filter_map(|s| {
                Secret::parse(s)
                    .inspect_err(|e| tracing::error!(error = %e, "a webhook secret version does not parse; ignored"))
                    .ok()
            })
            .collect();
        let public_keys: Vec<VerifyingKey> = public_keys
            .iter()
            .filter_map(|k| {
                sw::parse_public_key(k.expose_secret())
                    .inspect_err(
                        |e| tracing::error!(error = %e, "a webhook public key version does not parse; ignored"),
                    )
                    .ok()
            })
            .collect();
        let secrets = (!secrets.is_empty()).then_some(secrets);
        let public_keys = (!public_keys.is_empty()).then_some(public_keys);
        if secrets.is_none() && public_keys.is_none() {
            return true;
        }
        let mut keys = self.keys.write().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = secrets {
            tracing::info!(versions = s.len(), "webhook secret re-read after a signature mismatch");
            keys.secrets = s;
        }
        if let Some(p) = public_keys {
            tracing::info!(versions = p.len(), "webhook public key re-read after a signature mismatch");
            keys.public_keys = p;
        }
        true
    }

    /// Verifies a delivery's signature headers against every key held: Standard Webhooks first,
    /// then, while accepted, the legacy header. On a mismatch, re-reads the keys from Secrets
    /// Manager when due, and checks once more.
    pub async fn verify_delivery(&self, d: &Delivery<'_>, body: &[u8], now: i64) -> Result<Verified, SignatureError> {
        self.verify_or_unreadable(d, body, now).await.map_err(|e| match e {
            VerifyError::Signature(s) => s,
            VerifyError::KeysUnreadable => SignatureError::Mismatch,
        })
    }

    /// [`Self::verify_delivery`], telling a mismatch apart from keys that could not be re-read.
    pub async fn verify_or_unreadable(&self, d: &Delivery<'_>, body: &[u8], now: i64) -> Result<Verified, VerifyError> {
        let first = self.check(d, body, now).map_err(VerifyError::Signature);
        // Only a wrong signature can be cured by another key: a malformed or stale header
        // cannot, and must not cost a Secrets Manager call.
        let mismatch = Err(VerifyError::Signature(SignatureError::Mismatch));
        if first != mismatch || (self.secret_arn.is_none() && self.public_key_arn.is_none()) {
            return first;
        }
        if !self.due()? {
            return first;
        }
        // Boxed: the refresh (two Secrets Manager reads at once) is the largest future of the
        // webhook's path and the rarest; unboxed, every delivery's future would carry its room.
        if !Box::pin(self.refresh()).await {
            self.refresh_failed();
            return Err(VerifyError::KeysUnreadable);
        }
        self.check(d, body, now).map_err(VerifyError::Signature)
    }

    /// The legacy header alone (what a worker that predates Standard Webhooks sends).
    pub async fn verify(&self, header: Option<&str>, body: &[u8], now: i64) -> Result<(), SignatureError> {
        let d = Delivery { standard: sw::Headers::default(), legacy: header };
        self.verify_delivery(&d, body, now).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().build().unwrap()
    }

    #[test]
    fn a_fixed_key_verifies_its_own_signatures_only() {
        let keys = WebhookKeys::fixed(SecretString::from("k1"));
        let body = b"{}";
        let good = signature::header_value(b"k1", 100, body);
        let bad = signature::header_value(b"k2", 100, body);
        let rt = rt();
        assert!(rt.block_on(keys.verify(Some(&good), body, 100)).is_ok());
        assert!(matches!(rt.block_on(keys.verify(Some(&bad), body, 100)), Err(SignatureError::Mismatch)));
        assert!(rt.block_on(keys.verify(None, body, 100)).is_err());
    }

    fn standard<'a>(id: &'a str, ts: &'a str, sig: &'a str) -> sw::Headers<'a> {
        sw::Headers { id: Some(id), timestamp: Some(ts), signature: Some(sig) }
    }

    #[test]
    fn standard_webhooks_v1_v1a_and_legacy_as_configured() {
        let secret = sw::generate_secret();
        let sk = sw::generate_signing_key();
        let pk = sw::encode_public_key(&sk.verifying_key());
        let body = br#"{"a":1}"#;
        let now = 1_800_000_000;
        let ts = now.to_string();
        let v1 = sw::sign_v1(&sw::parse_secret(&secret).unwrap(), "msg_1", now, body);
        let v1a = sw::sign_v1a(&sk, "msg_1", now, body);
        let legacy = signature::header_value(secret.as_bytes(), now, body);
        let rt = rt();
        let src = |v: &str| Some(Source { arn: None, value: SecretString::from(v.to_owned()) });

        let all = WebhookKeys::new(src(&secret), src(&pk), true, Instant::now()).unwrap();
        let v = |k: &WebhookKeys, d: Delivery<'_>| rt.block_on(k.verify_delivery(&d, body, now));
        let std_only = |sig| Delivery { standard: standard("msg_1", &ts, sig), legacy: None };
        assert_eq!(v(&all, std_only(&v1)), Ok(Verified::Standard { webhook_id: "msg_1".into(), scheme: Scheme::V1 }));
        assert_eq!(v(&all, std_only(&v1a)), Ok(Verified::Standard { webhook_id: "msg_1".into(), scheme: Scheme::V1a }));
        assert_eq!(v(&all, Delivery { legacy: Some(&legacy), ..Default::default() }), Ok(Verified::Legacy));
        // A migrating sender's two headers: the standard one wins when valid...
        let both = Delivery { standard: standard("msg_1", &ts, &v1a), legacy: Some(&legacy) };
        assert!(matches!(v(&all, both), Ok(Verified::Standard { .. })));
        // ...and the legacy one still passes when the standard one cannot (no key for it yet).
        let other = sw::sign_v1a(&sw::generate_signing_key(), "msg_1", now, body);
        let both = Delivery { standard: standard("msg_1", &ts, &other), legacy: Some(&legacy) };
        assert_eq!(v(&all, both), Ok(Verified::Legacy));

        // LEGACY_SIGNATURE=false: the legacy header alone is as good as none.
        let strict = WebhookKeys::new(src(&secret), src(&pk), false, Instant::now()).unwrap();
        assert_eq!(v(&strict, Delivery { legacy: Some(&legacy), ..Default::default() }), Err(SignatureError::Missing));
        assert!(v(&strict, std_only(&v1a)).is_ok());

        // A public key only: v1a passes, v1 cannot (no secret), nor legacy.
        let pk_only = WebhookKeys::new(None, src(&pk), true, Instant::now()).unwrap();
        assert!(v(&pk_only, std_only(&v1a)).is_ok());
        assert_eq!(v(&pk_only, std_only(&v1)), Err(SignatureError::Mismatch));
        assert!(v(&pk_only, Delivery { legacy: Some(&legacy), ..Default::default() }).is_err());

        // A secret that is not whsec_: the legacy key only; v1 cannot match.
        let plain = WebhookKeys::new(src("local-webhook-secret"), None, true, Instant::now()).unwrap();
        assert_eq!(v(&plain, std_only(&v1)), Err(SignatureError::Mismatch));

        // The deployed secret's placeholder: v1a verifies nothing until the key is set, v1 still does.
        let arn =
            |v: &str| Some(Source { arn: Some("arn:placeholder".into()), value: SecretString::from(v.to_owned()) });
        let placeholder = WebhookKeys::new(src(&secret), arn("whpk_unset"), true, Instant::now()).unwrap();
        assert_eq!(v(&placeholder, std_only(&v1a)), Err(SignatureError::Mismatch));
        assert!(v(&placeholder, std_only(&v1)).is_ok());

        // Nothing configured, or a plain key that does not read: an error at init.
        assert!(WebhookKeys::new(None, None, true, Instant::now()).is_err());
        assert!(WebhookKeys::new(src("whsec_!!"), None, true, Instant::now()).is_err());
        assert!(WebhookKeys::new(None, src("whpk_AAAA"), true, Instant::now()).is_err());
    }
}
