//! Opaque keyset cursors for the discovery list. A cursor carries the position (created_at,
//! id) of the last item of a page, authenticated with an HMAC that also covers the query it
//! belongs to (scope and filters), so a cursor we did not issue for this query is refused with
//! 400 instead of silently paging somewhere else.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use uuid::Uuid;

use crate::domain::field_error::FieldError;
use crate::domain::ids::Code2desId;

const VERSION: u8 = 1;
const TAG: usize = 16;

/// What a cursor is bound to.
pub struct Binding<'a> {
    pub organization_id: i32,
    pub project_id: i32,
    pub figma_file_key: Option<&'a str>,
    pub status: Option<&'a str>,
}

fn tag(key: &[u8; 32], payload: &[u8], b: &Binding<'_>) -> [u8; TAG] {
    let mut m = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    m.update(payload);
    m.update(&b.organization_id.to_be_bytes());
    m.update(&b.project_id.to_be_bytes());
    for part in [b.figma_file_key, b.status] {
        match part {
            Some(s) => {
                m.update(&[1]);
                m.update(&(s.len() as u32).to_be_bytes());
                m.update(s.as_bytes());
            }
            None => m.update(&[0]),
        }
    }
    let full = m.finalize().into_bytes();
    let mut out = [0u8; TAG];
    out.copy_from_slice(&full[..TAG]);
    out
}

pub fn encode(key: &[u8; 32], created_at: DateTime<Utc>, id: Code2desId, b: &Binding<'_>) -> String {
    let mut payload = Vec::with_capacity(1 + 8 + 16 + TAG);
    payload.push(VERSION);
    payload.extend_from_slice(&created_at.timestamp_micros().to_be_bytes());
    payload.extend_from_slice(id.uuid().as_bytes());
    let t = tag(key, &payload, b);
    payload.extend_from_slice(&t);
    URL_SAFE_NO_PAD.encode(payload)
}

pub fn decode(key: &[u8; 32], raw: &str, b: &Binding<'_>) -> Result<(DateTime<Utc>, Code2desId), FieldError> {
    let bad = || FieldError::new("cursor", "is not a cursor this API issued for this query");
    if raw.len() > 64 {
        return Err(bad());
    }
    let bytes = URL_SAFE_NO_PAD.decode(raw).map_err(|_| bad())?;
    if bytes.len() != 1 + 8 + 16 + TAG || bytes[0] != VERSION {
        return Err(bad());
    }
    let (payload, given) = bytes.split_at(1 + 8 + 16);
    let expected = tag(key, payload, b);
    if !bool::from(subtle::ConstantTimeEq::ct_eq(expected.as_slice(), given)) {
        return Err(bad());
    }
    let micros = i64::from_be_bytes(payload[1..9].try_into().map_err(|_| bad())?);
    let created_at = DateTime::<Utc>::from_timestamp_micros(micros).ok_or_else(bad)?;
    let id = Uuid::from_slice(&payload[9..25]).map_err(|_| bad())?;
    Ok((created_at, Code2desId::from_uuid(id)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_tampering() {
        let key = [7u8; 32];
        let b = Binding { organization_id: 1, project_id: 2, figma_file_key: Some("F"), status: None };
        let now = DateTime::<Utc>::from_timestamp_micros(1_700_000_000_123_456).unwrap();
        let id = Code2desId::new_v7();
        let c = encode(&key, now, id, &b);
        assert_eq!(decode(&key, &c, &b).unwrap(), (now, id));
        let other = Binding { organization_id: 1, project_id: 2, figma_file_key: Some("G"), status: None };
        assert!(decode(&key, &c, &other).is_err());
        assert!(decode(&[8u8; 32], &c, &b).is_err());
        let mut chars: Vec<char> = c.chars().collect();
        chars[5] = if chars[5] == 'A' { 'B' } else { 'A' };
        assert!(decode(&key, &chars.into_iter().collect::<String>(), &b).is_err());
        for junk in ["", "abc", "!!!!", &"A".repeat(100)] {
            assert!(decode(&key, junk, &b).is_err());
        }
    }
}
