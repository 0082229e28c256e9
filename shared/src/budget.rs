//! One time budget per request. A request may spend until its deadline (the Lambda context's,
//! or the same rule locally) less [`RESERVE`] for answering; every PostgreSQL and AWS call runs
//! through [`bounded`], which gives it what remains of the budget, capped by its own timeout.
//! So the sum of timeouts no longer bounds a request: its deadline does (docs/RELIABILITY.md).
//!
//! The budget travels as a task-local, set once by the HTTP edge around a handler: no adapter
//! signature changes, and code outside a request (migrations, the sweep, tests calling a
//! statement directly) has no budget and keeps its own timeouts. At the bottom of the crate
//! with `error`: it imports nothing of the crate.

use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

/// The function timeout the template gives every API function (`Globals.Function.Timeout`),
/// used as the deadline where no Lambda context gives one (the local stack, tests).
pub const FUNCTION_TIMEOUT: Duration = Duration::from_secs(28);

/// Kept back from the deadline: serialising and writing the answer, and the compensation a
/// refused dispatch needs ([`compensate`]). With the 28 s timeout a request's calls end by
/// 25 s, and API Gateway's 30 s is never reached.
pub const RESERVE: Duration = Duration::from_secs(3);

/// What compensation (failing an attempt whose manifest could not be written) may spend past
/// the budget, inside the reserve.
pub const COMPENSATION: Duration = Duration::from_millis(2000);

/// The end of a request's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    end: Instant,
    /// The invocation's own deadline, past the reserve: the backstop of [`Budget::run`].
    deadline: Instant,
}

tokio::task_local! {
    static BUDGET: Budget;
}

/// A call ran out of time: its own timeout, or the request's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum OutOfTime {
    /// The call's own cap elapsed while the budget still had time.
    #[error("the call timed out")]
    Cap,
    /// The request's budget ran out.
    #[error("the request's time budget ran out")]
    Budget,
}

impl Budget {
    /// A budget ending `RESERVE` before a deadline given as milliseconds since the epoch (the
    /// Lambda context's `deadline`). A missing or past deadline gives an already spent budget.
    pub fn from_deadline_ms(deadline_ms: u64) -> Self {
        let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64;
        Self::after(Duration::from_millis(deadline_ms.saturating_sub(now_ms)))
    }

    /// A budget for an invocation that has `timeout` left.
    pub fn after(timeout: Duration) -> Self {
        let now = Instant::now();
        Self { end: now + timeout.saturating_sub(RESERVE), deadline: now + timeout }
    }

    /// Time left before the budget ends.
    pub fn remaining(&self) -> Duration {
        self.end.saturating_duration_since(Instant::now())
    }

    /// Runs a request's handler under this budget. The backstop answers with `on_overrun` half
    /// a reserve before the invocation's deadline if the handler is still running: every
    /// dependency call is bounded, so it never fires unless some await escaped [`bounded`].
    pub async fn run<T>(self, handler: impl Future<Output = T>, on_overrun: impl FnOnce() -> T) -> T {
        let backstop = self.deadline - RESERVE / 2;
        match tokio::time::timeout_at(backstop, BUDGET.scope(self, handler)).await {
            Ok(v) => v,
            Err(_) => {
                tracing::error!("the request outran its budget (an unbounded await); answered at the backstop");
                on_overrun()
            }
        }
    }
}

/// The current request's budget, if any.
pub fn current() -> Option<Budget> {
    BUDGET.try_with(|b| *b).ok()
}

/// How long a call capped at `cap` may take now: the cap, or less when the budget has less.
/// `Err(OutOfTime::Budget)` when the budget is spent.
pub fn allowance(cap: Duration) -> Result<(Duration, bool), OutOfTime> {
    match current() {
        None => Ok((cap, false)),
        Some(b) => {
            let left = b.remaining();
            if left.is_zero() {
                Err(OutOfTime::Budget)
            } else if left < cap {
                Ok((left, true))
            } else {
                Ok((cap, false))
            }
        }
    }
}

/// Runs one dependency call within `cap` and what remains of the request's budget.
pub async fn bounded<T>(cap: Duration, call: impl Future<Output = T>) -> Result<T, OutOfTime> {
    let (limit, by_budget) = allowance(cap)?;
    tokio::time::timeout(limit, call).await.map_err(|_| if by_budget { OutOfTime::Budget } else { OutOfTime::Cap })
}

/// Runs compensation (undoing what a refused request began) under a budget of its own,
/// [`COMPENSATION`], spent inside the reserve: the request's budget running out is the usual
/// reason compensation is needed, so it cannot be what bounds it.
pub async fn compensate<T>(call: impl Future<Output = T>) -> T {
    let now = Instant::now();
    BUDGET.scope(Budget { end: now + COMPENSATION, deadline: now + COMPENSATION }, call).await
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[tokio::test]
    async fn a_call_gets_the_smaller_of_its_cap_and_the_budget() {
        let slow = || tokio::time::sleep(Duration::from_secs(60));
        assert_eq!(bounded(100 * MS, slow()).await, Err(OutOfTime::Cap), "no budget: the cap");
        let t0 = Instant::now();
        let budget = Budget::after(RESERVE + 700 * MS); // 0.7 s after the reserve
        let out = BUDGET
            .scope(budget, async {
                assert_eq!(bounded(400 * MS, slow()).await, Err(OutOfTime::Cap));
                assert_eq!(bounded(400 * MS, slow()).await, Err(OutOfTime::Budget));
                bounded(400 * MS, async { 7 }).await
            })
            .await;
        assert_eq!(out, Err(OutOfTime::Budget), "spent");
        let took = t0.elapsed();
        assert!(took >= 700 * MS && took < 900 * MS, "0.4 s capped, then the 0.3 s left: {took:?}");
    }

    #[tokio::test]
    async fn the_backstop_answers_before_the_deadline() {
        let t0 = Instant::now();
        let v = Budget::after(RESERVE).run(std::future::pending::<u8>(), || 3).await;
        assert_eq!(v, 3);
        let took = t0.elapsed();
        assert!(took >= RESERVE / 2 && took < RESERVE, "{took:?}");
    }

    #[tokio::test]
    async fn compensation_has_a_budget_of_its_own() {
        let spent = Budget::after(RESERVE);
        assert_eq!(spent.remaining(), Duration::ZERO);
        let left = BUDGET.scope(spent, async { compensate(async { current().map(|b| b.remaining()) }).await }).await;
        assert!(left.is_some_and(|l| l > COMPENSATION - 100 * MS && l <= COMPENSATION), "{left:?}");
    }

    #[test]
    fn a_past_deadline_is_a_spent_budget() {
        let b = Budget::from_deadline_ms(1);
        assert_eq!(b.remaining(), Duration::ZERO);
    }
}
