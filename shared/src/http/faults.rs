//! The adapters' errors as answers, in one place: what a fault of PostgreSQL or S3 tells the
//! client. The adapters log the cause where it happens; here only the answer is decided.

use crate::aws::bucket::BucketError;
use crate::budget::OutOfTime;
use crate::db::error::DbError;
use crate::error::{ApiError, DATABASE};

/// What S3 is called in an answer.
pub const STORAGE: &str = "artifact storage";

/// A database fault is a 503 with the database's Retry-After (`dependency_timeout` when the
/// request's budget ran out); our own bug a 500 without one.
impl From<DbError> for ApiError {
    fn from(e: DbError) -> Self {
        match e {
            DbError::Unavailable | DbError::Conflict | DbError::TimedOut(OutOfTime::Cap) => {
                ApiError::Unavailable(DATABASE)
            }
            DbError::TimedOut(OutOfTime::Budget) => ApiError::DependencyTimeout(DATABASE),
            DbError::Bug(_) => ApiError::Internal,
        }
    }
}

/// A storage fault is a 503 (`dependency_timeout` when the budget ran out), a refused role a
/// 500 (retrying cannot help; the operator is alarmed); anything about the object itself (it
/// is missing, too large) is for the route to judge: `on_object_problem`.
pub fn bucket(e: BucketError, on_object_problem: impl FnOnce(BucketError) -> ApiError) -> ApiError {
    match e {
        BucketError::Unavailable | BucketError::TimedOut(OutOfTime::Cap) => ApiError::Unavailable(STORAGE),
        BucketError::TimedOut(OutOfTime::Budget) => ApiError::DependencyTimeout(STORAGE),
        BucketError::Forbidden => ApiError::Internal,
        other => on_object_problem(other),
    }
}

/// A storage error where the object's own problems are faults too (a write, a listing).
pub fn storage(e: BucketError) -> ApiError {
    bucket(e, |_| ApiError::Unavailable(STORAGE))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn every_adapter_error_has_one_answer() {
        let db = [
            (DbError::Unavailable, ErrorCode::ServiceUnavailable),
            (DbError::Conflict, ErrorCode::ServiceUnavailable),
            (DbError::TimedOut(OutOfTime::Cap), ErrorCode::ServiceUnavailable),
            (DbError::TimedOut(OutOfTime::Budget), ErrorCode::DependencyTimeout),
            (DbError::Bug("x"), ErrorCode::InternalError),
        ];
        for (e, code) in db {
            let answer = ApiError::from(e);
            assert_eq!(answer.code(), code, "{e}");
            // Faults say when to come back; a bug does not invite a retry.
            assert_eq!(answer.retry_after(20).is_some(), e.is_fault(), "{e}");
        }
        let s3 = [
            (BucketError::Unavailable, ErrorCode::ServiceUnavailable),
            (BucketError::TimedOut(OutOfTime::Cap), ErrorCode::ServiceUnavailable),
            (BucketError::TimedOut(OutOfTime::Budget), ErrorCode::DependencyTimeout),
            (BucketError::Forbidden, ErrorCode::InternalError),
            (BucketError::Missing, ErrorCode::ArtifactInvalid),
            (BucketError::TooLarge(9), ErrorCode::ArtifactInvalid),
        ];
        for (e, code) in s3 {
            assert_eq!(bucket(e.clone(), |_| ApiError::ArtifactInvalid).code(), code, "{e:?}");
        }
    }
}
