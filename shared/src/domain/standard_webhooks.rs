//! Standard Webhooks 1.0 (github.com/standard-webhooks/standard-webhooks, spec/standard-webhooks.md)
//! as the worker's webhook speaks it: headers `webhook-id`, `webhook-timestamp` and
//! `webhook-signature`, each signature over `{id}.{timestamp}.{raw body}`.
//!
//! | scheme | signature | key |
//! |---|---|---|
//! | `v1` | base64 HMAC-SHA256 | `whsec_<base64 bytes>` shared by worker and backend |
//! | `v1a` | base64 ed25519 | the worker signs with `whsk_<base64 32-byte seed>`; the backend holds only `whpk_<base64 32-byte public key>` |
//!
//! `webhook-signature` is a space-separated list (`v1,… v1a,…`): a sender rotating keys signs
//! with each, and any one valid signature passes. Entries of other versions are skipped, as the
//! official libraries skip them. The official Rust crate has no `v1a`; ed25519 here is
//! ed25519-dalek, checked against the official libraries' vectors in the tests below.
//!
//! Pure functions: the keys a deployment holds, and their rotation, are in
//! `crate::app::webhook_keys`.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use hmac::{Hmac, Mac};
use sha2::Sha256;

pub use crate::domain::signature::{SignatureError, TOLERANCE_SECS};

pub const ID_HEADER: &str = "webhook-id";
pub const TIMESTAMP_HEADER: &str = "webhook-timestamp";
pub const SIGNATURE_HEADER: &str = "webhook-signature";

pub const SECRET_PREFIX: &str = "whsec_";
pub const PUBLIC_KEY_PREFIX: &str = "whpk_";
pub const SIGNING_KEY_PREFIX: &str = "whsk_";

/// A `webhook-id` is also the idempotency key of a delivery (a table's primary key).
pub const MAX_ID_LEN: usize = 255;
/// More entries than this is not a rotation but an attempt to make us verify a lot.
const MAX_SIGNATURES: usize = 8;
/// The spec's symmetric secret: "at least 24 bytes (192 bits, 512 maximum)".
const MIN_SECRET_BYTES: usize = 24;
const MAX_SECRET_BYTES: usize = 64;

type HmacSha256 = Hmac<Sha256>;

/// A key that does not read as its prefix and format say. Never carries the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct KeyError(&'static str);

impl KeyError {
    pub fn new(rule: &'static str) -> Self {
        Self(rule)
    }
}

fn decode_prefixed(raw: &str, prefix: &str) -> Option<Vec<u8>> {
    STANDARD.decode(raw.trim().strip_prefix(prefix)?).ok()
}

/// `whsec_<base64>`: the `v1` HMAC key is the decoded bytes.
pub fn parse_secret(raw: &str) -> Result<Vec<u8>, KeyError> {
    let bytes = decode_prefixed(raw, SECRET_PREFIX).ok_or(KeyError("a whsec_ secret is whsec_ and base64"))?;
    if !(MIN_SECRET_BYTES..=MAX_SECRET_BYTES).contains(&bytes.len()) {
        return Err(KeyError("a whsec_ secret decodes to 24 to 64 bytes"));
    }
    Ok(bytes)
}

/// `whpk_<base64 of the 32-byte ed25519 public key>`.
pub fn parse_public_key(raw: &str) -> Result<VerifyingKey, KeyError> {
    let bytes = decode_prefixed(raw, PUBLIC_KEY_PREFIX).ok_or(KeyError("a whpk_ key is whpk_ and base64"))?;
    let bytes: [u8; 32] = bytes.try_into().map_err(|_| KeyError("a whpk_ key decodes to 32 bytes"))?;
    let key = VerifyingKey::from_bytes(&bytes).map_err(|_| KeyError("a whpk_ key is not an ed25519 point"))?;
    // A small-order key would "verify" signatures nobody made (verify_strict refuses them too).
    if key.is_weak() {
        return Err(KeyError("a whpk_ key is a weak ed25519 key"));
    }
    Ok(key)
}

/// `whsk_<base64 of the 32-byte seed>` (what the official Go library and PyNaCl's
/// `SigningKey.encode()` give), or of libsodium's 64 bytes `seed ‖ public key`.
pub fn parse_signing_key(raw: &str) -> Result<SigningKey, KeyError> {
    let bytes = decode_prefixed(raw, SIGNING_KEY_PREFIX).ok_or(KeyError("a whsk_ key is whsk_ and base64"))?;
    match bytes.len() {
        32 => Ok(SigningKey::from_bytes(bytes.as_slice().try_into().expect("32 bytes"))),
        64 => SigningKey::from_keypair_bytes(bytes.as_slice().try_into().expect("64 bytes"))
            .map_err(|_| KeyError("a 64-byte whsk_ key's public half does not match its seed")),
        _ => Err(KeyError("a whsk_ key decodes to a 32-byte seed (or 64 bytes seed and public key)")),
    }
}

pub fn encode_public_key(key: &VerifyingKey) -> String {
    format!("{PUBLIC_KEY_PREFIX}{}", STANDARD.encode(key.as_bytes()))
}

/// The seed form (32 bytes), which every library reads.
pub fn encode_signing_key(key: &SigningKey) -> String {
    format!("{SIGNING_KEY_PREFIX}{}", STANDARD.encode(key.to_bytes()))
}

/// A fresh key pair from the operating system's randomness (through rand's thread-local CSPRNG,
/// seeded and reseeded from it).
pub fn generate_signing_key() -> SigningKey {
    SigningKey::from_bytes(&rand::random::<[u8; 32]>())
}

/// A fresh `whsec_` secret of 32 bytes.
pub fn generate_secret() -> String {
    format!("{SECRET_PREFIX}{}", STANDARD.encode(rand::random::<[u8; 32]>()))
}

/// What is signed: `{id}.{timestamp}.{body}`.
pub fn signed_content(id: &str, timestamp: i64, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(id.len() + 24 + body.len());
    out.extend_from_slice(id.as_bytes());
    out.push(b'.');
    out.extend_from_slice(timestamp.to_string().as_bytes());
    out.push(b'.');
    out.extend_from_slice(body);
    out
}

fn mac(key: &[u8], content: &[u8]) -> HmacSha256 {
    // HMAC accepts keys of any length; new_from_slice cannot fail for it.
    let mut m = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    m.update(content);
    m
}

/// One `v1,<base64>` entry.
pub fn sign_v1(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let tag = mac(key, &signed_content(id, timestamp, body)).finalize().into_bytes();
    format!("v1,{}", STANDARD.encode(tag))
}

/// One `v1a,<base64>` entry.
pub fn sign_v1a(key: &SigningKey, id: &str, timestamp: i64, body: &[u8]) -> String {
    let sig = key.sign(&signed_content(id, timestamp, body));
    format!("v1a,{}", STANDARD.encode(sig.to_bytes()))
}

/// The three headers of one delivery, as received (absent ones `None`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Headers<'a> {
    pub id: Option<&'a str>,
    pub timestamp: Option<&'a str>,
    pub signature: Option<&'a str>,
}

impl Headers<'_> {
    /// Whether the sender used Standard Webhooks at all (any of the three headers).
    pub fn present(&self) -> bool {
        self.id.is_some() || self.timestamp.is_some() || self.signature.is_some()
    }
}

/// Which scheme a valid signature was in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    V1,
    V1a,
}

impl Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::V1 => "v1",
            Scheme::V1a => "v1a",
        }
    }
}

/// The keys one verification may use: `v1` HMAC keys and `v1a` public keys.
#[derive(Clone, Copy)]
pub struct Keys<'a> {
    pub hmac: &'a [&'a [u8]],
    pub ed25519: &'a [VerifyingKey],
}

/// A `webhook-id` that can be signed unambiguously and stored: 1 to 255 visible ASCII
/// characters, no `.` (the spec: an id with a `.` would let `{id}.{timestamp}.` be split
/// another way).
pub fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_ID_LEN && id.bytes().all(|b| b.is_ascii_graphic() && b != b'.')
}

fn parse_timestamp(raw: &str) -> Option<i64> {
    // Digits only (no sign, no spaces), at most 12: a plain unix time in seconds.
    if raw.is_empty() || raw.len() > 12 || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    raw.parse().ok()
}

/// Verifies a delivery at `now` (unix seconds) and returns its `webhook-id` and the scheme of
/// the first valid signature. Missing headers → `Missing`; an unusable id, timestamp or list →
/// `Malformed`; |now − timestamp| > 300 s → `Expired`; no entry valid under any key →
/// `Mismatch` (the only error another key could cure). HMAC tags are compared in constant time
/// (`Mac::verify_slice`); ed25519 with `verify_strict` (no malleable or small-order forms).
pub fn verify<'h>(
    headers: &Headers<'h>,
    body: &[u8],
    now: i64,
    keys: Keys<'_>,
) -> Result<(&'h str, Scheme), SignatureError> {
    let (Some(id), Some(ts), Some(list)) = (headers.id, headers.timestamp, headers.signature) else {
        return Err(SignatureError::Missing);
    };
    if !valid_id(id) {
        return Err(SignatureError::Malformed);
    }
    let timestamp = parse_timestamp(ts).ok_or(SignatureError::Malformed)?;
    let entries: Vec<(&str, &str)> =
        list.split(' ').filter(|e| !e.is_empty()).filter_map(|e| e.split_once(',')).collect();
    if entries.len() > MAX_SIGNATURES || list.len() > MAX_SIGNATURES * 128 {
        return Err(SignatureError::Malformed);
    }
    if !entries.iter().any(|(v, _)| matches!(*v, "v1" | "v1a")) {
        return Err(SignatureError::Malformed);
    }
    if (now - timestamp).abs() > TOLERANCE_SECS {
        return Err(SignatureError::Expired);
    }
    let content = signed_content(id, timestamp, body);
    for (version, encoded) in entries {
        // An entry that does not decode is one that does not match (the official libraries
        // skip it too): another entry of the list may still be valid.
        let Ok(sig) = STANDARD.decode(encoded) else { continue };
        let valid = match version {
            "v1" => sig.len() == 32 && keys.hmac.iter().any(|k| mac(k, &content).verify_slice(&sig).is_ok()),
            "v1a" => Signature::from_slice(&sig)
                .is_ok_and(|sig| keys.ed25519.iter().any(|k| k.verify_strict(&content, &sig).is_ok())),
            _ => false,
        };
        if valid {
            return Ok((id, if version == "v1" { Scheme::V1 } else { Scheme::V1a }));
        }
    }
    Err(SignatureError::Mismatch)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The official libraries' vectors (libraries/go/webhook_symmetric_test.go and
    // webhook_asymmetric_test.go of standard-webhooks/standard-webhooks).
    const MSG_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TS: i64 = 1614265330;
    const PAYLOAD: &[u8] = br#"{"test": 2432232314}"#;
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const V1: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    const SIGNING_SEED: &str = "whsk_VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk=";
    const V1A: &str = "v1a,tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag==";

    fn headers<'a>(id: &'a str, ts: &'a str, sig: &'a str) -> Headers<'a> {
        Headers { id: Some(id), timestamp: Some(ts), signature: Some(sig) }
    }

    fn ts() -> String {
        TS.to_string()
    }

    #[test]
    fn the_official_vectors_sign_and_verify() {
        let key = parse_secret(SECRET).unwrap();
        assert_eq!(sign_v1(&key, MSG_ID, TS, PAYLOAD), V1);
        let sk = parse_signing_key(SIGNING_SEED).unwrap();
        assert_eq!(sign_v1a(&sk, MSG_ID, TS, PAYLOAD), V1A);

        let pk = sk.verifying_key();
        let keys = Keys { hmac: &[&key], ed25519: &[pk] };
        let t = ts();
        assert_eq!(verify(&headers(MSG_ID, &t, V1), PAYLOAD, TS, keys), Ok((MSG_ID, Scheme::V1)));
        assert_eq!(verify(&headers(MSG_ID, &t, V1A), PAYLOAD, TS, keys), Ok((MSG_ID, Scheme::V1a)));
        // The public key alone verifies v1a; round trip of its text form.
        let only_pk = [parse_public_key(&encode_public_key(&pk)).unwrap()];
        let keys = Keys { hmac: &[], ed25519: &only_pk };
        assert_eq!(verify(&headers(MSG_ID, &t, V1A), PAYLOAD, TS, keys), Ok((MSG_ID, Scheme::V1a)));
        assert_eq!(verify(&headers(MSG_ID, &t, V1), PAYLOAD, TS, keys), Err(SignatureError::Mismatch));
    }

    #[test]
    fn tampering_with_body_id_timestamp_or_signature_is_refused() {
        let key = parse_secret(SECRET).unwrap();
        let pk = parse_signing_key(SIGNING_SEED).unwrap().verifying_key();
        let keys = Keys { hmac: &[&key], ed25519: &[pk] };
        let t = ts();
        for sig in [V1, V1A] {
            assert_eq!(
                verify(&headers(MSG_ID, &t, sig), br#"{"test": 2432232315}"#, TS, keys),
                Err(SignatureError::Mismatch)
            );
            assert_eq!(verify(&headers("msg_other", &t, sig), PAYLOAD, TS, keys), Err(SignatureError::Mismatch));
            let later = (TS + 1).to_string();
            assert_eq!(verify(&headers(MSG_ID, &later, sig), PAYLOAD, TS, keys), Err(SignatureError::Mismatch));
            // One character of the signature changed.
            let mut bad = sig.to_owned();
            let i = bad.len() - 5;
            bad.replace_range(i..i + 1, if &sig[i..i + 1] == "A" { "B" } else { "A" });
            assert_eq!(verify(&headers(MSG_ID, &t, &bad), PAYLOAD, TS, keys), Err(SignatureError::Mismatch));
        }
        // The official tests' cases: a wrong signature, a partial one.
        let wrong = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=";
        assert_eq!(verify(&headers(MSG_ID, &t, wrong), PAYLOAD, TS, keys), Err(SignatureError::Mismatch));
        assert_eq!(verify(&headers(MSG_ID, &t, "v1,"), PAYLOAD, TS, keys), Err(SignatureError::Mismatch));
        assert_eq!(verify(&headers(MSG_ID, &t, "v1a,"), PAYLOAD, TS, keys), Err(SignatureError::Mismatch));
        // A v1 tag is not a v1a signature, nor the other way round.
        let swapped = format!("v1a,{}", V1.trim_start_matches("v1,"));
        assert_eq!(verify(&headers(MSG_ID, &t, &swapped), PAYLOAD, TS, keys), Err(SignatureError::Mismatch));
    }

    #[test]
    fn the_timestamp_is_within_five_minutes_either_way() {
        let key = parse_secret(SECRET).unwrap();
        let keys = Keys { hmac: &[&key], ed25519: &[] };
        let t = ts();
        for now in [TS - 300, TS, TS + 300] {
            assert!(verify(&headers(MSG_ID, &t, V1), PAYLOAD, now, keys).is_ok(), "{now}");
        }
        for now in [TS - 301, TS + 301, TS + 100_000] {
            assert_eq!(verify(&headers(MSG_ID, &t, V1), PAYLOAD, now, keys), Err(SignatureError::Expired), "{now}");
        }
    }

    #[test]
    fn any_one_valid_signature_of_a_list_passes() {
        let key = parse_secret(SECRET).unwrap();
        let pk = parse_signing_key(SIGNING_SEED).unwrap().verifying_key();
        let t = ts();
        // The official multi-signature case: unknown versions and wrong signatures around a good one.
        let wrong = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=";
        let v2 = "v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=";
        let list = format!("{wrong} {v2} {V1} {wrong}");
        let keys = Keys { hmac: &[&key], ed25519: &[] };
        assert_eq!(verify(&headers(MSG_ID, &t, &list), PAYLOAD, TS, keys), Ok((MSG_ID, Scheme::V1)));
        // A rotation of the backend's keys: the old and the new key are both held.
        let old = parse_secret(&generate_secret()).unwrap();
        let keys = Keys { hmac: &[&old, &key], ed25519: &[] };
        assert!(verify(&headers(MSG_ID, &t, V1), PAYLOAD, TS, keys).is_ok());
        // A rotation of the worker's keys: it signs with both; the backend holds one.
        let other = generate_signing_key();
        let list = format!("{} {V1A}", sign_v1a(&other, MSG_ID, TS, PAYLOAD));
        let keys = Keys { hmac: &[], ed25519: &[pk] };
        assert_eq!(verify(&headers(MSG_ID, &t, &list), PAYLOAD, TS, keys), Ok((MSG_ID, Scheme::V1a)));
    }

    #[test]
    fn missing_and_malformed_headers() {
        let key = parse_secret(SECRET).unwrap();
        let keys = Keys { hmac: &[&key], ed25519: &[] };
        let t = ts();
        let h = |id: Option<&'static str>, ts: Option<&str>, sig: Option<&'static str>| {
            verify(&Headers { id, timestamp: ts, signature: sig }, PAYLOAD, TS, keys).map(|(_, s)| s)
        };
        assert_eq!(h(None, Some(&t), Some(V1)), Err(SignatureError::Missing));
        assert_eq!(h(Some(MSG_ID), None, Some(V1)), Err(SignatureError::Missing));
        assert_eq!(h(Some(MSG_ID), Some(&t), None), Err(SignatureError::Missing));
        for bad_ts in ["", "-1", "1e9", " 1614265330", "16142653300000", "x"] {
            assert_eq!(h(Some(MSG_ID), Some(bad_ts), Some(V1)), Err(SignatureError::Malformed), "{bad_ts:?}");
        }
        for bad_id in ["", "a.b", "with space", "tab\t", "é"] {
            let id: &'static str = Box::leak(bad_id.to_owned().into_boxed_str());
            assert_eq!(h(Some(id), Some(&t), Some(V1)), Err(SignatureError::Malformed), "{bad_id:?}");
        }
        let long: &'static str = Box::leak("i".repeat(256).into_boxed_str());
        assert_eq!(h(Some(long), Some(&t), Some(V1)), Err(SignatureError::Malformed));
        // Nothing of a scheme we know: no key could make it match.
        for list in ["", "garbage", "v2,abc", "v1abc"] {
            assert_eq!(h(Some(MSG_ID), Some(&t), Some(list)), Err(SignatureError::Malformed), "{list:?}");
        }
        let many: &'static str = Box::leak([V1; 9].join(" ").into_boxed_str());
        assert_eq!(h(Some(MSG_ID), Some(&t), Some(many)), Err(SignatureError::Malformed));
    }

    #[test]
    fn keys_read_only_in_their_own_form() {
        assert!(parse_secret("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_err(), "the prefix is required");
        assert!(parse_secret("whsec_not base64").is_err());
        assert!(parse_secret("whsec_c2hvcnQ=").is_err(), "too short");
        assert!(parse_secret(&generate_secret()).is_ok());
        let sk = generate_signing_key();
        let pk = sk.verifying_key();
        assert_eq!(parse_signing_key(&encode_signing_key(&sk)).unwrap().to_bytes(), sk.to_bytes());
        let keypair = format!("whsk_{}", STANDARD.encode(sk.to_keypair_bytes()));
        assert_eq!(parse_signing_key(&keypair).unwrap().to_bytes(), sk.to_bytes());
        let mut mismatched = sk.to_keypair_bytes();
        mismatched[40] ^= 1;
        assert!(parse_signing_key(&format!("whsk_{}", STANDARD.encode(mismatched))).is_err());
        assert!(parse_public_key(&encode_public_key(&pk)).is_ok());
        assert!(parse_public_key(&encode_signing_key(&sk)).is_err(), "a whsk_ is not a whpk_");
        assert!(parse_public_key("whpk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=").is_err(), "small order");
        // Errors never echo the value.
        let e = parse_public_key("whpk_secretish!!").unwrap_err().to_string();
        assert!(!e.contains("secretish"));
    }
}
