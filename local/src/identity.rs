//! Local identity: what stands in for API Gateway's JWT authorizer in `code2des-local`.
//!
//! Two sources, in this order:
//! - the `x-code2des-dev-sub` header, for curl and the tests;
//! - `Authorization: Bearer <JWT>`, whose `sub` claim is read WITHOUT verifying the signature,
//!   so that a real Figma plugin (whose iframe may send only what CORS allows) can develop
//!   against the local stack with the same header it sends to the deployed API.
//!
//! This module belongs to the local server only: no Lambda binary depends on this crate, so
//! none of it can be compiled into one. In AWS the authorizer verifies the token and the
//! handlers read the claim from the request context, never from a header.

use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use http::HeaderMap;
use serde_json::Value;

pub const DEV_SUB_HEADER: &str = "x-code2des-dev-sub";

/// Where a request's local identity came from (the gateway logs it, never the token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    DevHeader(String),
    UnverifiedBearer(String),
}

impl Identity {
    pub fn sub(&self) -> &str {
        match self {
            Identity::DevHeader(s) | Identity::UnverifiedBearer(s) => s,
        }
    }
}

/// The caller's `sub` as the local gateway sees it, or `None` (the handler then answers 401).
pub fn identify(headers: &HeaderMap) -> Option<Identity> {
    if let Some(sub) = headers.get(DEV_SUB_HEADER).and_then(|v| v.to_str().ok()) {
        return Some(Identity::DevHeader(sub.to_owned()));
    }
    let auth = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = auth.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    unverified_sub(token.trim()).map(Identity::UnverifiedBearer)
}

/// The `sub` claim of a compact JWS (`header.payload.signature`), signature NOT checked.
/// Only a string claim counts: API Gateway's authorizer hands the handlers strings.
pub fn unverified_sub(token: &str) -> Option<String> {
    let mut parts = token.split('.');
    let (_header, payload, _sig) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(payload).or_else(|_| URL_SAFE.decode(payload)).ok()?;
    match serde_json::from_slice::<Value>(&bytes).ok()?.get("sub")? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// A token for `sub` that [`unverified_sub`] reads back, signed with nothing (`alg: none`):
/// what `code2des-local seed` prints for a plugin developer. Useless against a deployed API,
/// whose authorizer verifies tokens.
pub fn local_token(sub: &str) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(serde_json::json!({ "sub": sub, "iss": "code2des-local" }).to_string());
    format!("{header}.{payload}.local")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn a_local_token_reads_back_as_its_sub() {
        let t = local_token("user-1");
        assert_eq!(unverified_sub(&t).as_deref(), Some("user-1"));
        let h = headers(&[("authorization", &format!("Bearer {t}"))]);
        assert_eq!(identify(&h), Some(Identity::UnverifiedBearer("user-1".into())));
        let h = headers(&[("authorization", &format!("bearer   {t}"))]);
        assert_eq!(identify(&h).unwrap().sub(), "user-1");
    }

    #[test]
    fn the_dev_header_wins_over_a_bearer_token() {
        let h = headers(&[("authorization", &format!("Bearer {}", local_token("a"))), (DEV_SUB_HEADER, "b")]);
        assert_eq!(identify(&h), Some(Identity::DevHeader("b".into())));
    }

    #[test]
    fn malformed_tokens_give_no_identity() {
        for bad in [
            "Basic dXNlcjpwYXNz".to_owned(),
            "Bearer".to_owned(),
            "Bearer a.b".to_owned(),
            "Bearer a.b.c.d".to_owned(),
            "Bearer x.!!!.y".to_owned(),
            format!("Bearer h.{}.s", URL_SAFE_NO_PAD.encode(b"not json")),
            format!("Bearer h.{}.s", URL_SAFE_NO_PAD.encode(br#"{"sub":42}"#)),
            format!("Bearer h.{}.s", URL_SAFE_NO_PAD.encode(br#"{"sub":""}"#)),
            format!("Bearer h.{}.s", URL_SAFE_NO_PAD.encode(br#"{"iss":"x"}"#)),
        ] {
            assert_eq!(identify(&headers(&[("authorization", &bad)])), None, "{bad}");
        }
    }
}
