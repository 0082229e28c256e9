//! Retry's statement (SPEC section 7): the next attempt of a failed (or overdue) job, within the
//! quotas (issue 23).

use tokio_postgres::types::Type;
use tokio_postgres::GenericClient;

use crate::db::error::DbError;
use crate::db::quota::{self, burst_ctes, quota_columns, quota_ctes, quota_ok};
use crate::db::sql::{col, fresh_attempt, job, job_columns, overdue, read_columns, the_job, visible, Binds};
use crate::domain::job::{Job, Nonce, Policy};
use crate::domain::quota::{Quota, QuotaState, BURST_WINDOW};
use crate::domain::scope::JobRef;

#[derive(Debug)]
pub enum Retried {
    NotFound,
    /// This call created the next attempt; `capture_url` of its page import goes into the
    /// new attempt's manifest.
    Created {
        job: Box<Job>,
        capture_url: Option<String>,
        /// The widths the trigger named (issue 40 item 3), for the new attempt's manifest.
        viewports: Option<Vec<u32>>,
        quota: QuotaState,
    },
    /// Nothing changed; the job as it is now (the caller decides between 200 and 409).
    Unchanged(Box<Job>),
    /// The job could have been retried, but a quota refused (`quota.refused()` says which).
    QuotaExceeded(QuotaState),
}

const RETRY: &str = concat!(
    // The locking read waits for a racing retry (or webhook, or cancel) and then sees the row
    // as that one committed it: of racing retries of attempt n, one creates n + 1 and the rest
    // find attempt n + 1 here and change nothing.
    "WITH target AS (SELECT ",
    read_columns!("$5"),
    ", ",
    overdue!("$5"),
    " AS overdue, c.status::text AS raw_status, ",
    "(SELECT pi.capture_url FROM page_import pi WHERE pi.id = c.page_import_id) AS capture_url, ",
    "a.viewports AS viewports ",
    "FROM code2des c LEFT JOIN code2des_attempt a ON a.code2des_id = c.id ",
    "WHERE ",
    the_job!(),
    " AND c.deleted_at IS NULL AND ",
    visible!("$4"),
    " FOR NO KEY UPDATE OF c), ",
    // The quotas are put only to a retry that would create the next attempt: one that would
    // not (a job not failed, attempts used up, a racing retry's attempt) answers as it always
    // did, never 429.
    "would AS (SELECT t.id FROM target t WHERE (t.raw_status = ",
    crate::db::sql::status_failed!(),
    " OR t.overdue) AND t.attempt < $7 ",
    "AND ($8::int4 IS NULL OR t.attempt = $8)), ",
    // The job's weight in the quotas: its viewports, 1 when it named none (`db::quota`).
    "weight AS (SELECT COALESCE((SELECT cardinality(t.viewports) FROM target t), 1) AS k), ",
    quota_ctes!("$2", "$9", "$10", "$5"),
    ", ",
    burst_ctes!("$2", "$4", "$11", "FROM would"),
    ", ",
    "retried AS (UPDATE code2des AS c SET attempt = c.attempt + 1, nonce = $6, status = ",
    crate::db::sql::status_processing!(),
    ", ",
    "result_url = NULL, warning_count = NULL, error_message = NULL, updated_at = now(), updated_by = $4 ",
    "FROM target t WHERE c.id = t.id AND c.deleted_at IS NULL ",
    "AND (t.raw_status = ",
    crate::db::sql::status_failed!(),
    " OR t.overdue) AND c.attempt = t.attempt AND t.attempt < $7 ",
    "AND ($8::int4 IS NULL OR t.attempt = $8) AND ",
    quota_ok!(),
    " RETURNING ",
    job_columns!("c"),
    ", t.capture_url, t.viewports), ",
    "started AS (INSERT INTO code2des_attempt AS a (code2des_id, attempt, started_at) ",
    "SELECT id, attempt, updated_at FROM retried ON CONFLICT (code2des_id) DO UPDATE SET ",
    "attempt = EXCLUDED.attempt, started_at = EXCLUDED.started_at, progress_percent = NULL, ",
    "progress_stage = NULL, progress_updated_at = NULL, cancelled_at = NULL, cancelled_by = NULL ",
    "RETURNING a.started_at), ",
    fresh_attempt!(),
    " SELECT r.*, NULL::int2 AS progress_percent, NULL::varchar AS progress_stage, ",
    "NULL::timestamptz AS progress_updated_at, (SELECT started_at FROM started) AS attempt_started_at, ",
    "NULL::timestamptz AS cancelled_at, true AS created, ",
    quota_columns!("$11", "EXISTS (SELECT 1 FROM would)"),
    " FROM retried r ",
    // Nothing changed: the job as it is now, its attempt row included (see `fresh_attempt!`).
    "UNION ALL SELECT t.id, t.organization_id, t.project_id, t.page_import_id, t.figma_file_key, t.screen_id, ",
    "t.placement_target, t.status, t.attempt, t.nonce, t.result_url, t.warning_count, t.error_message, ",
    "t.materialized_at, t.materialized_node_id, t.created_at, t.updated_at, t.created_by, t.updated_by, ",
    "t.capture_url, t.viewports, f.progress_percent, f.progress_stage, f.progress_updated_at, ",
    "COALESCE(f.started_at, t.attempt_started_at), f.cancelled_at, false, ",
    quota_columns!("$11", "EXISTS (SELECT 1 FROM would)"),
    " FROM target t LEFT JOIN fresh f ON true WHERE NOT EXISTS (SELECT 1 FROM retried)"
);

/// Starts the next attempt of a failed (or overdue) job: attempt + 1, `nonce`, outcome
/// cleared, progress reset, the deadline restarted. `expected` is the attempt the caller
/// retries (`{"attempt":n}`); at most `policy.max_attempts` attempts in all; within both quotas.
/// The caller holds the organization's lock ([`crate::db::quota::lock_organization`]) and rolls
/// back whatever does not answer [`Retried::Created`] (a counted `burst` call included).
pub async fn retry(
    client: &impl GenericClient,
    target: &JobRef,
    nonce: &Nonce,
    expected: Option<i32>,
    policy: &Policy,
    limits: &Quota,
) -> Result<Retried, DbError> {
    let rows = Binds::job(&target.id, &target.scope)
        .deadline(policy.deadline)
        .and(&nonce.expose(), Type::VARCHAR)
        .and(&policy.max_attempts, Type::INT4)
        .and(&expected, Type::INT4)
        .and(&limits.max_active_jobs_per_org, Type::INT4)
        .and(&limits.triggers_per_minute, Type::INT4)
        .and(&BURST_WINDOW.as_secs_f64(), Type::FLOAT8)
        .query(client, RETRY)
        .await?;
    let Some(row) = rows.first() else {
        return Ok(Retried::NotFound);
    };
    let j = Box::new(job(row)?);
    if col::<bool>(row, "created")? {
        let viewports: Option<Vec<i32>> = col(row, "viewports")?;
        return Ok(Retried::Created {
            job: j,
            capture_url: col(row, "capture_url")?,
            // The table's check keeps each within 320..=2560.
            viewports: viewports.map(|v| v.into_iter().map(|w| w.max(0) as u32).collect()),
            quota: quota::state(row, true)?,
        });
    }
    let state = quota::state(row, false)?;
    Ok(if state.refused().is_some() { Retried::QuotaExceeded(state) } else { Retried::Unchanged(j) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::sql::placeholders;

    #[test]
    fn the_statement_uses_the_placeholders_it_binds() {
        assert_eq!(placeholders(RETRY), (1..=11).collect());
    }
}
