//! The legacy signature, deprecated for Standard Webhooks ([`crate::domain::standard_webhooks`]):
//! `Code2des-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`, with the
//! secret's text as the key. Accepted while `LEGACY_SIGNATURE=true` (the default for now).
//! Several `v1` entries may be present (the sender signs with old and new secret while it
//! rotates); one valid entry is enough. Comparison is constant-time (`Mac::verify_slice`).

use hmac::{Hmac, Mac};
use sha2::Sha256;

pub const HEADER: &str = "code2des-signature";
/// Allowed clock difference between signer and verifier, both ways (SPEC: 300 s).
pub const TOLERANCE_SECS: i64 = 300;
/// More entries than this is not a rotation but an attempt to make us hash a lot.
const MAX_SIGNATURES: usize = 8;

type HmacSha256 = Hmac<Sha256>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the signature headers are missing")]
    Missing,
    #[error("the signature headers are malformed")]
    Malformed,
    #[error("the signature timestamp is outside the allowed window")]
    Expired,
    #[error("no signature matches a key held")]
    Mismatch,
}

fn mac(secret: &[u8], t: i64, body: &[u8]) -> HmacSha256 {
    // HMAC accepts keys of any length; new_from_slice cannot fail for it.
    let mut m = HmacSha256::new_from_slice(secret).expect("HMAC takes any key length");
    m.update(t.to_string().as_bytes());
    m.update(b".");
    m.update(body);
    m
}

/// The hex signature for `body` at time `t`.
pub fn sign(secret: &[u8], t: i64, body: &[u8]) -> String {
    hex::encode(mac(secret, t, body).finalize().into_bytes())
}

/// A complete header value.
pub fn header_value(secret: &[u8], t: i64, body: &[u8]) -> String {
    format!("t={t},v1={}", sign(secret, t, body))
}

/// Verifies `header` for `body` at time `now` (unix seconds).
pub fn verify(secret: &[u8], header: Option<&str>, body: &[u8], now: i64) -> Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let mut t: Option<i64> = None;
    let mut sigs: Vec<[u8; 32]> = Vec::new();
    for part in header.split(',') {
        let (k, v) = part.trim().split_once('=').ok_or(SignatureError::Malformed)?;
        match k {
            "t" => {
                if t.is_some() || v.is_empty() || v.len() > 12 || !v.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(SignatureError::Malformed);
                }
                t = Some(v.parse().map_err(|_| SignatureError::Malformed)?);
            }
            "v1" => {
                let mut sig = [0u8; 32];
                hex::decode_to_slice(v, &mut sig).map_err(|_| SignatureError::Malformed)?;
                sigs.push(sig);
                if sigs.len() > MAX_SIGNATURES {
                    return Err(SignatureError::Malformed);
                }
            }
            // Other schemes (a future v2) are skipped, as Stripe-style verifiers do.
            _ => {}
        }
    }
    let t = t.ok_or(SignatureError::Malformed)?;
    if sigs.is_empty() {
        return Err(SignatureError::Malformed);
    }
    if (now - t).abs() > TOLERANCE_SECS {
        return Err(SignatureError::Expired);
    }
    let expected = mac(secret, t, body);
    if sigs.iter().any(|s| expected.clone().verify_slice(s).is_ok()) {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;

    #[test]
    fn a_fresh_signature_verifies() {
        let h = header_value(b"s3cret", NOW, b"{}");
        assert_eq!(verify(b"s3cret", Some(&h), b"{}", NOW), Ok(()));
        assert_eq!(verify(b"s3cret", Some(&h), b"{}", NOW + 300), Ok(()));
        assert_eq!(verify(b"s3cret", Some(&h), b"{}", NOW - 300), Ok(()));
    }

    #[test]
    fn tampering_time_and_key_are_refused() {
        let h = header_value(b"s3cret", NOW, b"{}");
        assert_eq!(verify(b"s3cret", Some(&h), b"{ }", NOW), Err(SignatureError::Mismatch));
        assert_eq!(verify(b"other", Some(&h), b"{}", NOW), Err(SignatureError::Mismatch));
        assert_eq!(verify(b"s3cret", Some(&h), b"{}", NOW + 301), Err(SignatureError::Expired));
        assert_eq!(verify(b"s3cret", Some(&h), b"{}", NOW - 301), Err(SignatureError::Expired));
        assert_eq!(verify(b"s3cret", None, b"{}", NOW), Err(SignatureError::Missing));
        for bad in ["", "t=1", "v1=00", "t=x,v1=00", "t=1,t=2,v1=00", "t=1,v1=zz", "garbage"] {
            assert_eq!(verify(b"s3cret", Some(bad), b"{}", NOW), Err(SignatureError::Malformed), "{bad}");
        }
    }

    #[test]
    fn any_one_of_several_v1_entries_is_enough() {
        let good = sign(b"new", NOW, b"{}");
        let old = sign(b"old", NOW, b"{}");
        let h = format!("t={NOW},v1={old},v1={good}");
        assert_eq!(verify(b"new", Some(&h), b"{}", NOW), Ok(()));
        assert_eq!(verify(b"old", Some(&h), b"{}", NOW), Ok(()));
    }
}
