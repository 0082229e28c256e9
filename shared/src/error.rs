//! The one error type at the HTTP boundary. Every variant maps to a status and the SPEC body
//! `{"error":{"code","message"},"requestId"}`. Causes of faults (database, S3) are logged with
//! their chain where they happen and answered generically, so no SQL text, S3 location or
//! secret ever reaches a client.

use std::borrow::Cow;

use http::StatusCode;

/// Seconds a client should wait before retrying a 503.
pub const RETRY_AFTER_SECS: u32 = 2;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// 400: the named field is missing or malformed.
    #[error("{field}: {message}")]
    Invalid { field: Cow<'static, str>, message: Cow<'static, str> },
    /// 401: no usable identity or signature.
    #[error("{0}")]
    Unauthorized(&'static str),
    /// 404: absent, or not visible to this caller (no existence leak across tenants).
    #[error("{0}")]
    NotFound(&'static str),
    /// 409 with a specific code.
    #[error("{message}")]
    Conflict { code: &'static str, message: Cow<'static, str> },
    /// 410: the job existed but was soft-deleted.
    #[error("{0}")]
    Gone(&'static str),
    /// 413: request body over the limit.
    #[error("request body must be at most {limit} bytes")]
    PayloadTooLarge { limit: usize },
    /// 422 with a specific code.
    #[error("{message}")]
    Unprocessable { code: &'static str, message: Cow<'static, str> },
    /// 502: the worker's artifact failed validation (the reason is logged, not answered).
    #[error("the result artifact failed validation")]
    ArtifactInvalid,
    /// 503: a dependency (PostgreSQL, S3, Secrets Manager) is unreachable or timed out.
    #[error("{0} is temporarily unavailable; retry later")]
    Unavailable(&'static str),
    /// 500: a bug of ours (a statement the database refuses, a row that does not read). Logged
    /// with its cause; answered WITHOUT Retry-After, since retrying cannot help.
    #[error("internal error; the request was not completed")]
    Internal,
}

impl ApiError {
    pub fn invalid(field: impl Into<Cow<'static, str>>, message: impl Into<Cow<'static, str>>) -> Self {
        Self::Invalid { field: field.into(), message: message.into() }
    }

    pub fn conflict(code: &'static str, message: impl Into<Cow<'static, str>>) -> Self {
        Self::Conflict { code, message: message.into() }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::Invalid { .. } => StatusCode::BAD_REQUEST,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Conflict { .. } => StatusCode::CONFLICT,
            Self::Gone(_) => StatusCode::GONE,
            Self::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Unprocessable { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            Self::ArtifactInvalid => StatusCode::BAD_GATEWAY,
            Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            Self::Invalid { .. } => "invalid_request",
            Self::Unauthorized(_) => "unauthorized",
            Self::NotFound(_) => "not_found",
            Self::Conflict { code, .. } | Self::Unprocessable { code, .. } => code,
            Self::Gone(_) => "gone",
            Self::PayloadTooLarge { .. } => "payload_too_large",
            Self::ArtifactInvalid => "artifact_invalid",
            Self::Unavailable(_) => "service_unavailable",
            Self::Internal => "internal_error",
        }
    }
}

/// Logs a dependency fault with its whole cause chain and turns it into a 503.
pub fn unavailable(what: &'static str, err: &(dyn std::error::Error + 'static)) -> ApiError {
    tracing::error!(dependency = what, error = %chain(err), "dependency fault");
    ApiError::Unavailable(what)
}

/// Logs a bug with its whole cause chain and turns it into a 500.
pub fn internal(context: &'static str, err: &(dyn std::error::Error + 'static)) -> ApiError {
    tracing::error!(context, error = %chain(err), "internal error");
    ApiError::Internal
}

/// `err: cause: cause…` on one line.
pub fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = err.to_string();
    let mut cur = err.source();
    while let Some(e) = cur {
        let s = e.to_string();
        if !out.ends_with(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        cur = e.source();
    }
    out
}
