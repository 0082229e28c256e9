//! Lifecycle's statements (SPEC sections 3 and 7): one job, the discovery list, cancel and the
//! soft delete. The two reads never write: a processing job past its deadline is shown as
//! failed `timed out` by the read itself; the sweep persists it.

use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio_postgres::types::Type;
use tokio_postgres::GenericClient;

use crate::db::columns::Layout;
use crate::db::error::DbError;
use crate::db::sql::{col, fresh_attempt, job, overdue, read_columns, the_job, visible, Binds};
use crate::domain::ids::{Code2desId, FigmaFileKey};
use crate::domain::job::StatusLabel;
use crate::domain::job::{Job, Status};
use crate::domain::scope::{JobRef, Scope};

/// GET_JOB's statement (`read_columns!` under `visible!`) lives in migration V5 as the PL/pgSQL
/// function `code2des_read_job`, whose plan the server keeps per session: `query_typed` plans
/// only this trivial call, where it planned the six-relation read every time (issue 13,
/// docs/PERFORMANCE.md §5). Same parameters, same fields; the job comes back as ONE value, an
/// anonymous record (`crate::db::record`, fields in [`crate::db::columns::READ_COLUMNS`] order), NULL
/// when the caller may not see it: a one-column call costs the server and the client less
/// than a 24-column set (migration V5 says why).
const GET_JOB: &str = "SELECT code2des_read_job($1, $2, $3, $4, $5)";

/// One job visible to the caller, as of now (the deadline applied by the read, not written).
pub async fn get_job(client: &impl GenericClient, target: &JobRef, deadline: Duration) -> Result<Option<Job>, DbError> {
    let rows = Binds::job(&target.id, &target.scope).deadline(deadline).query(client, GET_JOB).await?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    crate::db::columns::from_read_row(row).map_err(|e| DbError::bug("reading a job record", crate::error::chain(&*e)))
}

/// Filters and position of one page of the discovery list.
#[derive(Debug, Clone)]
pub struct ListQuery<'a> {
    pub figma_file_key: Option<&'a FigmaFileKey>,
    pub status: Option<Status>,
    /// Keyset position: items strictly older than `(created_at, id)`.
    pub after: Option<(DateTime<Utc>, Code2desId)>,
    pub limit: i64,
}

/// The list's statement lives in migration V3 as `code2des_list_jobs` (see GET_JOB): the scope
/// check yields one row exactly when the caller may list this project, so "not yours" (no row:
/// 404) and "nothing yet" (one all-NULL row: empty page) stay apart in ONE statement; the
/// status filter compares the status as read, deadline applied; keyset position
/// `(created_at, id)`, newest first.
const LIST_JOBS: &str = "SELECT * FROM code2des_list_jobs($1, $2, $3, $4, $5, $6, $7, $8, $9)";

/// Newest first, at most `limit` jobs (callers ask for one more to learn if a page follows).
/// `None` when the caller may not list this project at all.
pub async fn list_jobs(
    client: &impl GenericClient,
    scope: &Scope,
    q: &ListQuery<'_>,
    deadline: Duration,
) -> Result<Option<Vec<Job>>, DbError> {
    let status = q.status.map(Status::db_label);
    let figma_file_key = q.figma_file_key.map(FigmaFileKey::as_str);
    let (after_ts, after_id) = match &q.after {
        Some((t, id)) => (Some(*t), Some(*id)),
        None => (None, None),
    };
    let rows = Binds::scope(scope)
        .deadline(deadline)
        .and(&figma_file_key, Type::VARCHAR)
        .and(&status, Type::TEXT)
        .and(&after_ts, Type::TIMESTAMPTZ)
        .and(&after_id, Type::VARCHAR)
        .and(&q.limit, Type::INT8)
        .query(client, LIST_JOBS)
        .await?;
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    // The page's rows share their columns: found once, not per field of every row.
    let layout = Layout::of(first);
    rows.iter()
        .filter(|r| layout.has_job(r))
        .map(|r| {
            crate::db::columns::from_laid_row(r, &layout)
                .map_err(|e| DbError::bug("reading a job row", crate::error::chain(&*e)))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

#[derive(Debug)]
pub enum Cancelled {
    NotFound,
    /// This call cancelled it.
    Now(Box<Job>),
    /// Nothing changed; the job as it is now (cancelled earlier, or terminal otherwise).
    Unchanged(Box<Job>),
}

const CANCEL: &str = concat!(
    // Locking read first, as in RETRY: a cancel racing a webhook sees the winner's outcome.
    "WITH target AS (SELECT ",
    read_columns!("$5"),
    ", ",
    overdue!("$5"),
    " AS overdue FROM code2des c LEFT JOIN code2des_attempt a ON a.code2des_id = c.id ",
    "WHERE ",
    the_job!(),
    " AND c.deleted_at IS NULL AND ",
    visible!("$4"),
    " FOR NO KEY UPDATE OF c), ",
    // The same fence as the webhook's: processing, not deleted, within the deadline, tested on
    // the locked row (`t`): the UPDATE scans the statement's snapshot, which may predate a
    // retry or webhook committed while `target` waited, and `c` there would be that old state.
    "cancelled AS (UPDATE code2des AS c SET status = ", crate::db::sql::status_failed!(), ", error_message = ", crate::db::sql::message_cancelled!(), ", updated_at = now(), ",
    "updated_by = $4 FROM target t WHERE c.id = t.id AND t.status = ", crate::db::sql::status_processing!(), " ",
    "AND NOT t.overdue ",
    "RETURNING c.id, c.attempt, c.created_at, c.updated_at, c.updated_by), ",
    "marked AS (INSERT INTO code2des_attempt AS a (code2des_id, attempt, started_at, cancelled_at, cancelled_by) ",
    "SELECT x.id, x.attempt, x.created_at, x.updated_at, $4 FROM cancelled x ",
    "ON CONFLICT (code2des_id) DO UPDATE SET cancelled_at = EXCLUDED.cancelled_at, cancelled_by = EXCLUDED.cancelled_by ",
    "RETURNING a.cancelled_at, a.progress_percent, a.progress_stage, a.progress_updated_at, a.started_at), ",
    fresh_attempt!(),
    // The attempt row as this call left it (`marked`), or as it is now (`fresh`): see
    // `fresh_attempt!` for why not `target`'s.
    " SELECT t.id, t.organization_id, t.project_id, t.page_import_id, t.figma_file_key, t.screen_id, ",
    "t.placement_target, COALESCE(CASE WHEN x.id IS NOT NULL THEN ", crate::db::sql::status_failed!(), " END, t.status) AS status, t.attempt, t.nonce, ",
    "t.result_url, t.warning_count, COALESCE(CASE WHEN x.id IS NOT NULL THEN ", crate::db::sql::message_cancelled!(), " END, t.error_message) AS error_message, ",
    "t.materialized_at, t.materialized_node_id, t.created_at, COALESCE(x.updated_at, t.updated_at) AS updated_at, ",
    "t.created_by, COALESCE(x.updated_by, t.updated_by) AS updated_by, ",
    "CASE WHEN m.started_at IS NOT NULL THEN m.progress_percent ELSE f.progress_percent END AS progress_percent, ",
    "CASE WHEN m.started_at IS NOT NULL THEN m.progress_stage ELSE f.progress_stage END AS progress_stage, ",
    "CASE WHEN m.started_at IS NOT NULL THEN m.progress_updated_at ELSE f.progress_updated_at END AS progress_updated_at, ",
    "COALESCE(m.started_at, f.started_at, t.attempt_started_at) AS attempt_started_at, ",
    "COALESCE(m.cancelled_at, f.cancelled_at) AS cancelled_at, ",
    "x.id IS NOT NULL AS now_cancelled FROM target t LEFT JOIN cancelled x ON true LEFT JOIN marked m ON true ",
    "LEFT JOIN fresh f ON true"
);

/// The user's cancel: the webhook's fenced transition, to failed `cancelled`.
pub async fn cancel(client: &impl GenericClient, target: &JobRef, deadline: Duration) -> Result<Cancelled, DbError> {
    let rows = Binds::job(&target.id, &target.scope).deadline(deadline).query(client, CANCEL).await?;
    let Some(row) = rows.first() else {
        return Ok(Cancelled::NotFound);
    };
    let j = Box::new(job(row)?);
    Ok(if col::<bool>(row, "now_cancelled")? { Cancelled::Now(j) } else { Cancelled::Unchanged(j) })
}

const DELETE_JOB: &str = concat!(
    "UPDATE code2des AS c SET deleted_at = now(), deleted_by = $4, updated_at = now(), updated_by = $4 ",
    "WHERE ",
    the_job!(),
    " AND c.deleted_at IS NULL AND ",
    visible!("$4"),
    " RETURNING c.id"
);

/// The soft delete: true when this call deleted the job, false when there was nothing (left)
/// for this caller to delete.
pub async fn delete_job(client: &impl GenericClient, target: &JobRef) -> Result<bool, DbError> {
    let rows = Binds::job(&target.id, &target.scope).query(client, DELETE_JOB).await?;
    Ok(!rows.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::sql::placeholders;

    #[test]
    fn statements_use_the_placeholders_they_bind() {
        for (sql, n) in [(GET_JOB, 5), (LIST_JOBS, 9), (CANCEL, 5), (DELETE_JOB, 4)] {
            assert_eq!(placeholders(sql), (1..=n).collect(), "{sql}");
        }
    }

    #[test]
    fn reads_never_write() {
        for sql in [GET_JOB, LIST_JOBS] {
            for verb in ["UPDATE", "INSERT", "DELETE", "FOR NO KEY", "FOR SHARE"] {
                assert!(!sql.contains(verb), "{verb} in a read: {sql}");
            }
        }
    }
}
