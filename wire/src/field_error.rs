//! The domain's refusal of a member of the input: which member, and what is wrong with it. The
//! parsers of `ids`, `keys`, `fields`, `cursor`, `job` and `protocol` return it; the HTTP edge
//! turns it into the 400 a client reads (`shared`'s `http::refusals`), its message the field, a
//! colon and what is wrong, word for word.

use std::borrow::Cow;

/// A member of the input that is missing or malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    /// The member, as the client spelled it: `pageImportId`, `progress.percent`, `body`.
    pub field: Cow<'static, str>,
    /// What is wrong with it, after the member's name: `must be a UUID`.
    pub message: Cow<'static, str>,
}

impl FieldError {
    pub fn new(field: impl Into<Cow<'static, str>>, message: impl Into<Cow<'static, str>>) -> Self {
        Self { field: field.into(), message: message.into() }
    }
}
