//! Quotas (SPEC section 9): `active`, an organization's processing jobs, and `burst`, a
//! subject's accepted triggers and retries per 60 s window, checked in the statement that creates
//! an attempt (defaults and per-organization values: docs/OPERATIONS.md, "Quota refusals").
//! Both are published as draft-ietf-httpapi-ratelimit-headers-11 fields; `active` is a
//! concurrency quota, so it has no window and no `t`: a slot frees when a job ends, which no
//! clock predicts.

use std::time::Duration;

/// The window of the `burst` limit: the "per minute" of `TRIGGERS_PER_MINUTE`.
pub const BURST_WINDOW: Duration = Duration::from_secs(60);
/// Processing jobs an organization may have at once when `MAX_ACTIVE_JOBS_PER_ORG` is not set.
pub const DEFAULT_MAX_ACTIVE_JOBS_PER_ORG: i32 = 20;
/// Triggers and retries a subject may make per [`BURST_WINDOW`] when `TRIGGERS_PER_MINUTE` is
/// not set.
pub const DEFAULT_TRIGGERS_PER_MINUTE: i32 = 30;
/// `Retry-After` of a 429 for `active`. Nothing tells when a slot frees (a job ends when its
/// worker reports, when its user cancels or deletes it, or at its deadline), so the answer is a
/// pace rather than a time: the 2 s at which a client polls a processing job (SPEC section 7),
/// where it would learn of a job ending anyway. A refused call counts against no limit, so
/// trying again at this pace costs the caller nothing but the request.
pub const ACTIVE_RETRY_AFTER: Duration = Duration::from_secs(2);

/// The deployment's defaults (`MAX_ACTIVE_JOBS_PER_ORG`, `TRIGGERS_PER_MINUTE`); an
/// organization's row of `code2des_quota` overrides either.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quota {
    pub max_active_jobs_per_org: i32,
    pub triggers_per_minute: i32,
}

impl Default for Quota {
    fn default() -> Self {
        Self {
            max_active_jobs_per_org: DEFAULT_MAX_ACTIVE_JOBS_PER_ORG,
            triggers_per_minute: DEFAULT_TRIGGERS_PER_MINUTE,
        }
    }
}

/// Which limit: the RateLimit policy's name, the 429 body's `limit`, the metric's `Limit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QuotaLimit {
    Active,
    Burst,
}

impl QuotaLimit {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Burst => "burst",
        }
    }
}

/// The quotas as the statement that checked them saw them, for one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuotaState {
    /// The organization's limit of processing jobs (its override, or the default).
    pub max_active: i32,
    /// The organization's processing jobs, this call's job included when it created one.
    pub active: i64,
    /// The subject's limit per window (the organization's override, or the default).
    pub per_window: i32,
    /// Calls counted in the subject's current window, this one included when it created an
    /// attempt; 0 when no window is running.
    pub window_used: i64,
    /// Whole seconds (at least 1) until the subject's current window ends; `None` when no
    /// window is running (the next counted call starts one).
    pub window_resets_in: Option<u32>,
    /// The limits that refused this call (both may): empty for a call they let through.
    pub refused_active: bool,
    pub refused_burst: bool,
}

impl QuotaState {
    /// The limit a 429 names: `active` when the organization is full (a new window would not
    /// help), else `burst`. `None` when nothing refused.
    pub fn refused(&self) -> Option<QuotaLimit> {
        if self.refused_active {
            Some(QuotaLimit::Active)
        } else if self.refused_burst {
            Some(QuotaLimit::Burst)
        } else {
            None
        }
    }

    fn burst_t(&self) -> u32 {
        self.window_resets_in.unwrap_or(BURST_WINDOW.as_secs() as u32).max(1)
    }

    /// `Retry-After` of a 429: the longest wait among the limits that refused, so that the
    /// call sent again after it is not refused by one of them again for the same reason.
    pub fn retry_after_secs(&self) -> u32 {
        let mut wait = 0;
        if self.refused_active {
            wait = wait.max(ACTIVE_RETRY_AFTER.as_secs() as u32);
        }
        if self.refused_burst {
            wait = wait.max(self.burst_t());
        }
        wait.max(1)
    }

    /// `RateLimit-Policy`: one policy per limit, the organization's values.
    pub fn policy_field(&self) -> String {
        format!(
            "\"active\";q={};qu=\"concurrent-requests\", \"burst\";q={};w={}",
            self.max_active,
            self.per_window,
            BURST_WINDOW.as_secs()
        )
    }

    /// `RateLimit`: what is left of each limit. `active` has no `t` (no window); `burst`'s `t`
    /// is the seconds left in the current window, or the whole window when none is running.
    pub fn limit_field(&self) -> String {
        let active_left = (i64::from(self.max_active) - self.active).max(0);
        let burst_left = (i64::from(self.per_window) - self.window_used).max(0);
        format!("\"active\";r={active_left}, \"burst\";r={burst_left};t={}", self.burst_t())
    }

    /// The 429's message, for people.
    pub fn message(&self) -> String {
        match self.refused() {
            Some(QuotaLimit::Active) => format!(
                "the organization's processing jobs use its limit of {} (a job weighs one per viewport); \
                 try again when one of them ends",
                self.max_active
            ),
            _ => format!(
                "at most {} triggers and retries per {} s; this window ends in {} s",
                self.per_window,
                BURST_WINDOW.as_secs(),
                self.burst_t()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> QuotaState {
        QuotaState {
            max_active: 20,
            active: 5,
            per_window: 30,
            window_used: 3,
            window_resets_in: Some(41),
            refused_active: false,
            refused_burst: false,
        }
    }

    #[test]
    fn the_fields_are_the_drafts_lists_one_policy_per_limit() {
        let s = state();
        assert_eq!(s.policy_field(), r#""active";q=20;qu="concurrent-requests", "burst";q=30;w=60"#);
        assert_eq!(s.limit_field(), r#""active";r=15, "burst";r=27;t=41"#);
        assert_eq!(s.refused(), None);
        // No window running: the next counted call starts a whole one.
        let idle = QuotaState { window_used: 0, window_resets_in: None, ..s };
        assert_eq!(idle.limit_field(), r#""active";r=15, "burst";r=30;t=60"#);
        // Over a limit (a lowered override): nothing left, never negative.
        let over = QuotaState { active: 25, window_used: 31, ..s };
        assert_eq!(over.limit_field(), r#""active";r=0, "burst";r=0;t=41"#);
    }

    #[test]
    fn a_refusal_names_one_limit_and_waits_for_every_limit_that_refused() {
        let burst = QuotaState { window_used: 30, refused_burst: true, ..state() };
        assert_eq!((burst.refused(), burst.retry_after_secs()), (Some(QuotaLimit::Burst), 41));
        let active = QuotaState { active: 20, refused_active: true, ..state() };
        assert_eq!((active.refused(), active.retry_after_secs()), (Some(QuotaLimit::Active), 2));
        let both = QuotaState { refused_active: true, refused_burst: true, ..burst };
        assert_eq!((both.refused(), both.retry_after_secs()), (Some(QuotaLimit::Active), 41));
        let ending = QuotaState { window_resets_in: Some(1), ..burst };
        assert_eq!(ending.retry_after_secs(), 1);
        assert!(active.message().contains("its limit of 20"), "{}", active.message());
        assert!(burst.message().contains("ends in 41 s"), "{}", burst.message());
    }
}
