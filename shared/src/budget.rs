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

/// Before the invocation's deadline, when every answer must have been written: the 25 s the
/// drills (scripts/drills.py) promise with the 28 s timeout, well inside API Gateway's 29-30 s.
pub const ANSWERED_BY: Duration = Duration::from_secs(3);

/// How long before [`ANSWERED_BY`] the backstop of [`Budget::run`] fires: the backstop's own
/// answer still has to be written, and the client's clock starts before the invocation's
/// (locally the deadline is stamped when the runtime API hands the event over).
pub const BACKSTOP_LEAD: Duration = Duration::from_millis(500);

/// What compensation (failing an attempt whose manifest could not be written) may spend past
/// the budget, inside the reserve: one statement on a connection already in hand.
pub const COMPENSATION: Duration = Duration::from_millis(2000);

/// What a statement cut short may spend past its own time asking the server to cancel it
/// (`crate::db::connect`'s cancel request): the compensation's statement is one of them.
pub const CANCEL: Duration = Duration::from_secs(1);

/// Serialising and writing the answer once the handler is done.
pub const ANSWER: Duration = Duration::from_millis(500);

/// Kept back from the deadline. The arithmetic, with the 28 s timeout: the calls' budget ends
/// at 21 s; a compensation that starts then has until 23 s, its statement's cancel until 24 s,
/// and the answer is written by 24.5 s, when the backstop fires; so every answer, compensated
/// or the backstop's own, lands by 25 s. It used to be 3 s: the budget ended at 25 s, the
/// compensation ran to 27 s and the backstop answered at 26.5 s, past what the drills promise.
pub const RESERVE: Duration = Duration::from_millis(
    ANSWERED_BY.as_millis() as u64
        + BACKSTOP_LEAD.as_millis() as u64
        + ANSWER.as_millis() as u64
        + CANCEL.as_millis() as u64
        + COMPENSATION.as_millis() as u64,
);

/// The backstop fires this long before the invocation's deadline.
const BACKSTOP: Duration = Duration::from_millis(ANSWERED_BY.as_millis() as u64 + BACKSTOP_LEAD.as_millis() as u64);

// What a compensation started on a spent budget may take, with its cancel and the answer, must
// end by the backstop: otherwise the backstop cuts it (an attempt left processing with no
// manifest) and answers late.
const _: () = assert!(
    RESERVE.as_millis() >= BACKSTOP.as_millis() + ANSWER.as_millis() + CANCEL.as_millis() + COMPENSATION.as_millis()
);
// And a request still has most of its time: the result route's image reads need it.
const _: () = assert!(FUNCTION_TIMEOUT.as_millis() >= RESERVE.as_millis() + 20_000);

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

    /// Runs a request's handler under this budget. The backstop answers with `on_overrun`
    /// [`BACKSTOP_LEAD`] before [`ANSWERED_BY`] if the handler is still running: every
    /// dependency call is bounded, and compensation ends before it, so it never fires unless
    /// some await escaped [`bounded`].
    pub async fn run<T>(self, handler: impl Future<Output = T>, on_overrun: impl FnOnce() -> T) -> T {
        let backstop = self.deadline - BACKSTOP;
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
/// reason compensation is needed, so it cannot be what bounds it. Within a request it also
/// ends in time for a cancel and the answer before the backstop, should it start late (the
/// reserve gives a compensation that starts when the budget is spent all of its time).
pub async fn compensate<T>(call: impl Future<Output = T>) -> T {
    let now = Instant::now();
    let own = now + COMPENSATION;
    let budget = match current() {
        // The backstop would cut a compensation still running: its attempt stays processing
        // with no manifest, and the answer is the backstop's. Better a shorter compensation.
        // The invocation's deadline is kept, so a compensation nested in this one is held to
        // the same backstop.
        Some(request) => {
            let last = request.deadline.checked_sub(BACKSTOP + ANSWER + CANCEL).unwrap_or(now).max(now);
            Budget { end: own.min(last), deadline: request.deadline }
        }
        None => Budget { end: own, deadline: own },
    };
    BUDGET.scope(budget, call).await
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
    async fn the_backstop_answers_before_the_answer_is_due() {
        let t0 = Instant::now();
        let v = Budget::after(RESERVE).run(std::future::pending::<u8>(), || 3).await;
        assert_eq!(v, 3);
        let took = t0.elapsed();
        let due = RESERVE - ANSWERED_BY;
        assert!(took >= due - BACKSTOP_LEAD && took < due, "{took:?}");
    }

    #[tokio::test]
    async fn compensation_has_a_budget_of_its_own() {
        let spent = Budget::after(RESERVE);
        assert_eq!(spent.remaining(), Duration::ZERO);
        let left = BUDGET.scope(spent, async { compensate(async { current().map(|b| b.remaining()) }).await }).await;
        assert!(left.is_some_and(|l| l > COMPENSATION - 100 * MS && l <= COMPENSATION), "{left:?}");
    }

    /// The edge the reserve is for: the budget is spent, compensation starts and its statement
    /// hangs (PostgreSQL slow), is cut at the end of the compensation's budget and then waits
    /// out the whole cancel. The handler's own answer, not the backstop's, comes, and before
    /// it is due. With the old constants (3 s reserve, backstop at half of it) the backstop cut
    /// the compensation and answered 1.5 s past the budget.
    #[tokio::test]
    async fn a_compensation_on_a_spent_budget_ends_before_the_backstop() {
        let t0 = Instant::now();
        let handler = async {
            let slow = || std::future::pending::<()>();
            assert_eq!(bounded(Duration::from_secs(60), slow()).await, Err(OutOfTime::Budget));
            let cut = compensate(bounded(Duration::from_secs(8), slow())).await;
            tokio::time::sleep(CANCEL).await; // the cancel request, at its longest
            cut
        };
        let answer = Budget::after(RESERVE).run(handler, || Err(OutOfTime::Cap)).await;
        assert_eq!(answer, Err(OutOfTime::Budget), "the handler answered, cut by the compensation's budget");
        let took = t0.elapsed();
        let due = RESERVE - ANSWERED_BY;
        assert!(took >= COMPENSATION + CANCEL && took < due - BACKSTOP_LEAD, "{took:?}");
    }

    /// A compensation that starts late (after something else ran past the budget) gets less
    /// than its own budget rather than running into the backstop.
    #[tokio::test]
    async fn a_late_compensation_is_held_to_the_backstop() {
        let b = Budget::after(RESERVE - COMPENSATION / 2);
        let left = BUDGET.scope(b, async { compensate(async { current().map(|b| b.remaining()) }).await }).await;
        let left = left.expect("a budget");
        assert!(left <= COMPENSATION / 2 && left > COMPENSATION / 2 - 100 * MS, "{left:?}");
    }

    #[test]
    fn a_past_deadline_is_a_spent_budget() {
        let b = Budget::from_deadline_ms(1);
        assert_eq!(b.remaining(), Duration::ZERO);
    }
}
