//! A request's JSON object body, and its members read as a serde type whose errors name the
//! member (a 400's message), as the worker protocol is read ([`crate::domain::wire`]).

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::domain::field_error::FieldError;
use crate::domain::wire::read;

/// A JSON object body.
pub fn json_object(bytes: &[u8]) -> Result<Map<String, Value>, FieldError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(FieldError::new("body", "a JSON object is required"));
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(FieldError::new("body", "must be a JSON object")),
        Err(_) => Err(FieldError::new("body", "must be valid JSON")),
    }
}

/// A body's members as `T`, a 400 naming the first member at fault (in key order).
pub fn members<'a, T: Deserialize<'a>>(body: &'a Map<String, Value>) -> Result<T, FieldError> {
    read(body).map_err(|fault| FieldError::new(fault.field(), fault.message().into_owned()))
}
