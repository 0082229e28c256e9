//! The deadline sweep (SPEC section 7, "reads stay reads"): every processing attempt past its
//! deadline becomes failed `timed out`, persisted here instead of by the reads. Reads already
//! SHOW such a job as timed out, so the sweep changes what is stored, never what anyone sees:
//! it even writes `updated_at` as the moment the deadline passed, as the reads show it.
//!
//! Each batch is the webhook's kind of fenced UPDATE (processing, not deleted, same attempt),
//! so of a sweep and a racing webhook exactly one wins. The webhook and retry persist the
//! expiry of the one job they touch themselves, so nothing depends on the sweep's timing.

use std::time::Duration;

use lambda_runtime::{Error, LambdaEvent};
use serde_json::{json, Value};
use shared::app::resources::Resources;
use shared::config::SetupError;
use shared::obs::metrics;
use shared::ApiError;

/// Jobs per statement: each batch is one short transaction holding few row locks.
pub const BATCH: i64 = 500;

pub struct Deps {
    pub pool: deadpool_postgres::Pool,
    pub deadline: Duration,
}

impl Deps {
    pub async fn new(r: &Resources) -> Result<Self, SetupError> {
        Ok(Self { pool: r.pool().await?, deadline: r.settings.deadline })
    }
}

/// Expires every overdue job, a batch at a time; returns how many it expired.
pub async fn sweep(deps: &Deps) -> Result<usize, ApiError> {
    let client = shared::db::connect::conn(&deps.pool).await?;
    let mut total = 0;
    loop {
        let expired = shared::db::sweep::expire_overdue(&**client, deps.deadline, BATCH).await?;
        metrics::jobs_timed_out(&expired);
        total += expired.len();
        if (expired.len() as i64) < BATCH {
            return Ok(total);
        }
    }
}

/// The handler: any event (the scheduler's payload is ignored) runs one sweep and answers
/// `{"expired": n}`. A failure is the invocation's error, so the schedule's metrics and the
/// function's Errors alarm see it.
pub async fn handle(deps: &Deps, _event: LambdaEvent<Value>) -> Result<Value, Error> {
    let n = sweep(deps).await.map_err(|e| Error::from(e.to_string()))?;
    if n > 0 {
        tracing::info!(expired = n, "overdue jobs failed as timed out");
    }
    Ok(json!({ "expired": n }))
}
