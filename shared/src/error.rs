//! The one error type at the HTTP boundary, and the one list of error codes.
//!
//! Every [`ApiError`] maps to a status and the SPEC body `{"error":{"code","message"},"requestId"}`
//! (`crate::http::response`). Its `code` is an [`ErrorCode`]: the codes a client can see are
//! exactly [`ErrorCode::ALL`], which `local/tests/openapi.rs` holds openapi.yaml's `ErrorCode`
//! enum to. Causes of faults (database, S3) are logged with their chain where they happen and
//! answered generically, so no SQL text, S3 location or secret ever reaches a client.
//!
//! Only this module and `http` name the answer: the layers between return their own errors
//! (`FieldError`, `DbError`, `BucketError`, `DispatchError`), which `http::refusals` and
//! `http::faults` turn into an [`ApiError`]. This module is at the bottom of the crate with
//! `domain` and `budget`.

use std::borrow::Cow;

use http::StatusCode;

/// Seconds a client should wait before retrying a 503.
pub const RETRY_AFTER_SECS: u32 = 2;

/// Seconds a client should wait before retrying a 503 of the database (`DB_RETRY_AFTER_SECONDS`):
/// a cluster that pauses at 0 ACU takes about 15 s to resume, so "2" would only fail again.
static DATABASE_RETRY_AFTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(RETRY_AFTER_SECS);

/// Sets the database's Retry-After for this process (`crate::app::resources::Resources::new`).
pub fn set_database_retry_after(secs: u32) {
    DATABASE_RETRY_AFTER.store(secs.max(1), std::sync::atomic::Ordering::Relaxed);
}

/// What a dependency's 503 names as the database.
pub const DATABASE: &str = "the database";

/// Declares [`ErrorCode`] and its wire names from one list, so the two cannot drift apart.
macro_rules! error_codes {
    ($($(#[$doc:meta])* $variant:ident = $name:literal => $status:ident,)*) => {
        /// Every `error.code` the service answers (openapi.yaml's `ErrorCode`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $($(#[$doc])* $variant,)*
        }

        impl ErrorCode {
            /// Every code, in declaration order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)*];

            /// The snake_case name on the wire.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $name,)*
                }
            }

            /// The status every answer with this code has: a code decides its own status, so
            /// no code can be answered with two.
            pub fn status(self) -> StatusCode {
                match self {
                    $(ErrorCode::$variant => StatusCode::$status,)*
                }
            }
        }
    };
}

error_codes! {
    /// 400: a field of the request is missing or malformed; the message names it.
    InvalidRequest = "invalid_request" => BAD_REQUEST,
    /// 401: no usable identity (JWT `sub`) or webhook signature.
    Unauthorized = "unauthorized" => UNAUTHORIZED,
    /// 404: absent, or not visible to this caller.
    NotFound = "not_found" => NOT_FOUND,
    /// 409: trigger from a page import that is not completed.
    PageImportNotCompleted = "page_import_not_completed" => CONFLICT,
    /// 409: the result of a job that is still processing.
    NotReady = "not_ready" => CONFLICT,
    /// 409: the result of a failed job that left no failure artifact.
    JobFailed = "job_failed" => CONFLICT,
    /// 409: placement of a job that is not completed.
    JobNotCompleted = "job_not_completed" => CONFLICT,
    /// 409: a worker report for another attempt or nonce.
    Fenced = "fenced" => CONFLICT,
    /// 409: the job is terminal already (with another outcome).
    AlreadyTerminal = "already_terminal" => CONFLICT,
    /// 410: the job was soft-deleted (the webhook; a trigger replaying its Idempotency-Key).
    Gone = "gone" => GONE,
    /// 413: a body over 64 KiB.
    PayloadTooLarge = "payload_too_large" => PAYLOAD_TOO_LARGE,
    /// 422: an Idempotency-Key reused with another body.
    IdempotencyKeyReused = "idempotency_key_reused" => UNPROCESSABLE_ENTITY,
    /// 502: the worker's artifact failed validation.
    ArtifactInvalid = "artifact_invalid" => BAD_GATEWAY,
    /// 503: PostgreSQL, S3 or Secrets Manager is unreachable; with Retry-After.
    ServiceUnavailable = "service_unavailable" => SERVICE_UNAVAILABLE,
    /// 409: retry of a job that is not failed.
    NotFailed = "not_failed" => CONFLICT,
    /// 409: retry of a job that has used all its attempts.
    AttemptsExhausted = "attempts_exhausted" => CONFLICT,
    /// 500: a bug of ours, logged; no input yields it.
    InternalError = "internal_error" => INTERNAL_SERVER_ERROR,
    /// 405: the local gateway's answer to a known path with another method.
    MethodNotAllowed = "method_not_allowed" => METHOD_NOT_ALLOWED,
    /// 410: the result's artifact is past the bucket's retention (`resultExpiresAt`).
    ResultExpired = "result_expired" => GONE,
    /// 429: trigger or retry over a quota (`active` or `burst`, the body's `limit`); with
    /// Retry-After, RateLimit-Policy and RateLimit.
    QuotaExceeded = "quota_exceeded" => TOO_MANY_REQUESTS,
    /// 503: the request's time budget ran out while a dependency (PostgreSQL, S3, Secrets
    /// Manager) was slow; with Retry-After. Nothing was changed that a retry would duplicate.
    DependencyTimeout = "dependency_timeout" => SERVICE_UNAVAILABLE,
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

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
    Conflict { code: ErrorCode, message: Cow<'static, str> },
    /// 410: the job existed but was soft-deleted.
    #[error("{0}")]
    Gone(&'static str),
    /// 410: the job's result existed but its artifact is past the bucket's retention.
    #[error("the result expired at {expired_at}; the job can be triggered again from its page import")]
    ResultExpired { expired_at: String },
    /// 413: request body over the limit.
    #[error("request body must be at most {limit} bytes")]
    PayloadTooLarge { limit: usize },
    /// 422 with a specific code.
    #[error("{message}")]
    Unprocessable { code: ErrorCode, message: Cow<'static, str> },
    /// 502: the worker's artifact failed validation (the reason is logged, not answered).
    #[error("the result artifact failed validation")]
    ArtifactInvalid,
    /// 429: a quota refused a trigger or a retry; nothing was done.
    #[error("{}", .0.message)]
    QuotaExceeded(Box<QuotaRefusal>),
    /// 503: a dependency (PostgreSQL, S3, Secrets Manager) is unreachable or failing.
    #[error("{0} is temporarily unavailable; retry later")]
    Unavailable(&'static str),
    /// 503: the request's time budget ran out waiting for a dependency (`crate::budget`).
    #[error("{0} did not answer within the request's time budget; retry later")]
    DependencyTimeout(&'static str),
    /// 500: a bug of ours (a statement the database refuses, a row that does not read, a value
    /// that does not serialise). Logged with its cause where it happens; answered WITHOUT
    /// Retry-After, since retrying cannot help.
    #[error("internal error; the request was not completed")]
    Internal,
}

/// What a 429 says, already in its wire form: this module sits below the domain, which knows
/// the quotas (`crate::domain::quota::QuotaState` builds one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaRefusal {
    /// The body's `error.limit`: `active` or `burst`.
    pub limit: &'static str,
    pub message: String,
    pub retry_after_secs: u32,
    /// The `RateLimit-Policy` and `RateLimit` field values.
    pub policy: String,
    pub state: String,
}

impl ApiError {
    pub fn invalid(field: impl Into<Cow<'static, str>>, message: impl Into<Cow<'static, str>>) -> Self {
        Self::Invalid { field: field.into(), message: message.into() }
    }

    /// A 409; `code` must be one whose status is 409 (a test holds every use to it).
    pub fn conflict(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Self {
        debug_assert_eq!(code.status(), StatusCode::CONFLICT, "{code} is not a conflict");
        Self::Conflict { code, message: message.into() }
    }

    /// Whether the answer carries Retry-After: a dependency fault or timeout, retried later.
    pub fn is_retryable_fault(&self) -> bool {
        matches!(self, Self::Unavailable(_) | Self::DependencyTimeout(_))
    }

    /// The Retry-After of a dependency's 503 (`None` for any other answer), the database's
    /// being `database_secs`.
    pub fn retry_after(&self, database_secs: u32) -> Option<u32> {
        match self {
            Self::Unavailable(d) | Self::DependencyTimeout(d) if *d == DATABASE => Some(database_secs),
            Self::Unavailable(_) | Self::DependencyTimeout(_) => Some(RETRY_AFTER_SECS),
            _ => None,
        }
    }

    /// [`Self::retry_after`] with this process's database Retry-After.
    pub fn retry_after_now(&self) -> Option<u32> {
        self.retry_after(DATABASE_RETRY_AFTER.load(std::sync::atomic::Ordering::Relaxed))
    }

    pub fn status(&self) -> StatusCode {
        self.code().status()
    }

    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Invalid { .. } => ErrorCode::InvalidRequest,
            Self::Unauthorized(_) => ErrorCode::Unauthorized,
            Self::NotFound(_) => ErrorCode::NotFound,
            Self::Conflict { code, .. } | Self::Unprocessable { code, .. } => *code,
            Self::Gone(_) => ErrorCode::Gone,
            Self::ResultExpired { .. } => ErrorCode::ResultExpired,
            Self::PayloadTooLarge { .. } => ErrorCode::PayloadTooLarge,
            Self::QuotaExceeded(_) => ErrorCode::QuotaExceeded,
            Self::ArtifactInvalid => ErrorCode::ArtifactInvalid,
            Self::Unavailable(_) => ErrorCode::ServiceUnavailable,
            Self::DependencyTimeout(_) => ErrorCode::DependencyTimeout,
            Self::Internal => ErrorCode::InternalError,
        }
    }
}

/// Logs a bug with its whole cause chain and turns it into a 500.
pub fn internal(context: &'static str, err: &(dyn std::error::Error + 'static)) -> ApiError {
    tracing::error!(context, error = %chain(err), "internal error");
    ApiError::Internal
}

/// Logs a bug that has no error value of its own (a state the code does not expect) and turns
/// it into a 500.
pub fn bug(context: &'static str, detail: impl std::fmt::Display) -> ApiError {
    tracing::error!(context, detail = %detail, "internal error");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_503_says_when_the_database_can_answer_again() {
        for e in [ApiError::Unavailable(DATABASE), ApiError::DependencyTimeout(DATABASE)] {
            assert_eq!(e.retry_after(20), Some(20), "{e}");
        }
        assert_eq!(ApiError::Unavailable("artifact storage").retry_after(20), Some(RETRY_AFTER_SECS));
        assert_eq!(ApiError::Internal.retry_after(20), None);
    }

    #[test]
    fn every_code_has_one_distinct_snake_case_name() {
        let mut names: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        assert!(names.iter().all(|n| n.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')));
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ErrorCode::ALL.len());
    }
}
