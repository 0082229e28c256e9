//! A JSON object body, and members of the user API's bodies, read with errors that name the
//! field (a 400's message). The worker protocol is read through its types
//! ([`crate::domain::wire`]).

use serde_json::{Map, Value};

use crate::error::ApiError;

/// A JSON object body.
pub fn json_object(bytes: &[u8]) -> Result<Map<String, Value>, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::invalid("body", "a JSON object is required"));
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::invalid("body", "must be a JSON object")),
        Err(_) => Err(ApiError::invalid("body", "must be valid JSON")),
    }
}

/// A required string member of a JSON body.
pub fn required_str<'a>(body: &'a Map<String, Value>, field: &'static str) -> Result<&'a str, ApiError> {
    match body.get(field) {
        None | Some(Value::Null) => Err(ApiError::invalid(field, "is required")),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(ApiError::invalid(field, "must be a string")),
    }
}

/// An optional string member (absent or null mean absent).
pub fn optional_str<'a>(body: &'a Map<String, Value>, field: &'static str) -> Result<Option<&'a str>, ApiError> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ApiError::invalid(field, "must be a string")),
    }
}
