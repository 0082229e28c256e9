//! The domain's refusals as answers, in one place: a malformed member is a 400 naming it, a
//! quota's refusal a 429 with its fields. The domain says what is wrong in its own types
//! (`crate::domain::field_error::FieldError`, `crate::domain::quota::QuotaState`); only here
//! does that become a status and a code, with the domain's words as the message.

use crate::domain::field_error::FieldError;
use crate::domain::quota::QuotaState;
use crate::error::{ApiError, QuotaRefusal};

/// 400 `invalid_request`, its message `field: message` as the domain wrote it.
impl From<FieldError> for ApiError {
    fn from(e: FieldError) -> Self {
        ApiError::Invalid { field: e.field, message: e.message }
    }
}

/// The 429 of a call a quota refused; `None` when nothing refused.
pub fn quota_exceeded(quota: &QuotaState) -> Option<ApiError> {
    let limit = quota.refused()?;
    Some(ApiError::QuotaExceeded(Box::new(QuotaRefusal {
        limit: limit.as_str(),
        message: quota.message(),
        retry_after_secs: quota.retry_after_secs(),
        policy: quota.policy_field(),
        state: quota.limit_field(),
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn a_malformed_member_is_a_400_that_names_it() {
        let answer = ApiError::from(FieldError::new("progress.percent", "must be an integer from 0 to 100"));
        assert_eq!(answer.code(), ErrorCode::InvalidRequest);
        assert_eq!(answer.to_string(), "progress.percent: must be an integer from 0 to 100");
        assert_eq!(answer, ApiError::invalid("progress.percent", "must be an integer from 0 to 100"));
    }

    #[test]
    fn a_refused_quota_is_a_429_with_its_fields() {
        let quota = QuotaState {
            max_active: 20,
            active: 5,
            per_window: 30,
            window_used: 30,
            window_resets_in: Some(41),
            refused_active: false,
            refused_burst: true,
        };
        let Some(ApiError::QuotaExceeded(r)) = quota_exceeded(&quota) else { panic!("a 429") };
        assert_eq!((r.limit, r.retry_after_secs, r.message.as_str()), ("burst", 41, quota.message().as_str()));
        assert_eq!((r.policy, r.state), (quota.policy_field(), quota.limit_field()));
        assert_eq!(quota_exceeded(&QuotaState { refused_burst: false, ..quota }), None);
    }
}
