//! Retention (SPEC section 9): storage does not grow forever.
//!
//! - A job soft-deleted `PURGE_AFTER_DAYS` (default 30) ago leaves: first its artifact objects
//!   (everything under `code2des/{id}/`, every attempt), then its row, which takes its attempt
//!   and idempotency rows with it. In that order, so an interrupted run leaves a row that the
//!   next run purges again, never an object nobody can find.
//! - An `Idempotency-Key` leaves 24 hours after its first use (trigger stops honouring it at
//!   that moment, so this only frees the space).
//! - A recorded webhook answer (a `webhook-id` and what the first delivery was told) leaves
//!   after [`DELIVERY_TTL`]: longer than any worker's redelivery schedule.
//! - A caller's trigger window (the `burst` quota's counter, one row per organization and
//!   subject) leaves once its window ended: it counts nothing any more, and a caller's next
//!   trigger opens a new one.
//!
//! Everything goes in batches, each one short statement, until a batch comes back short: a run
//! after a quiet hour reads a few index entries and stops. EventBridge Scheduler runs it every
//! hour (template.yaml); the local stack on a timer.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use lambda_runtime::{Error, LambdaEvent};
use serde_json::{json, Value};
use shared::app::resources::Resources;
use shared::aws::bucket::ArtifactBucket;
use shared::config::SetupError;
use shared::db::purge;
use shared::domain::job::IDEMPOTENCY_KEY_TTL;
use shared::domain::keys::job_root;
use shared::domain::quota::BURST_WINDOW;
use shared::obs::metrics;
use shared::ApiError;

/// How long a webhook's answer is kept for its redeliveries: the Standard Webhooks senders
/// retry for up to a few days (Svix's schedule ends after about 5), so a week covers them.
pub const DELIVERY_TTL: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// Jobs (or keys) per statement.
pub const BATCH: i64 = 200;
/// Jobs whose objects are deleted at once (each costs a list and a delete request).
const S3_CONCURRENCY: usize = 8;

pub struct Deps {
    pub pool: deadpool_postgres::Pool,
    pub bucket: ArtifactBucket,
    pub after_days: i32,
}

impl Deps {
    pub async fn new(r: &Resources) -> Result<Self, SetupError> {
        Ok(Self { pool: r.pool().await?, bucket: r.bucket().await?, after_days: r.settings.purge_after_days })
    }
}

/// What one run removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Purged {
    pub jobs: u64,
    pub objects: u64,
    pub keys: u64,
    pub deliveries: u64,
    pub windows: u64,
}

/// One run: every job due, then every expired key, a batch at a time.
pub async fn purge(deps: &Deps) -> Result<Purged, ApiError> {
    let client = shared::db::connect::conn(&deps.pool).await?;
    let mut done = Purged::default();
    loop {
        let due = purge::due(&**client, deps.after_days, BATCH).await?;
        // Each deletion owns what it uses: a stream of futures borrowing `deps` would not be
        // `Send` for every lifetime, which a spawned task (the local stack's timer) requires.
        let deletes: Vec<_> = due
            .iter()
            .map(|id| {
                let (bucket, root) = (deps.bucket.clone(), job_root(*id));
                async move { bucket.delete_prefix(&root).await }
            })
            .collect();
        let objects: Vec<u64> = futures::stream::iter(deletes)
            .buffer_unordered(S3_CONCURRENCY)
            .try_collect()
            .await
            .map_err(shared::http::faults::storage)?;
        done.objects += objects.iter().sum::<u64>();
        done.jobs += purge::purge(&**client, &due, deps.after_days).await? as u64;
        if (due.len() as i64) < BATCH {
            break;
        }
    }
    loop {
        let n = purge::expire_keys(&**client, IDEMPOTENCY_KEY_TTL, BATCH).await?;
        done.keys += n as u64;
        if n < BATCH {
            break;
        }
    }
    loop {
        let n = purge::expire_deliveries(&**client, DELIVERY_TTL, BATCH).await?;
        done.deliveries += n as u64;
        if n < BATCH {
            break;
        }
    }
    loop {
        let n = purge::prune_windows(&**client, BURST_WINDOW, BATCH).await?;
        done.windows += n as u64;
        if n < BATCH {
            break;
        }
    }
    metrics::purged(done.jobs, done.objects, done.keys, done.deliveries, done.windows);
    Ok(done)
}

/// The handler: any event (the scheduler's payload is ignored) runs one purge and answers
/// `{"jobs","objects","keys","deliveries","windows"}`. A failure is the invocation's error, so the schedule's metrics
/// and the function's Errors alarm see it.
pub async fn handle(deps: &Deps, _event: LambdaEvent<Value>) -> Result<Value, Error> {
    let p = purge(deps).await.map_err(|e| Error::from(e.to_string()))?;
    if p != Purged::default() {
        tracing::info!(
            jobs = p.jobs,
            objects = p.objects,
            keys = p.keys,
            deliveries = p.deliveries,
            windows = p.windows,
            "purged"
        );
    }
    Ok(
        json!({ "jobs": p.jobs, "objects": p.objects, "keys": p.keys, "deliveries": p.deliveries, "windows": p.windows }),
    )
}
