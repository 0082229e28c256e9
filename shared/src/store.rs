//! Every SQL statement of the service, one small named function each. Fence conditions
//! (scope, membership, status, attempt, nonce, deadline) live in the WHERE clauses, so a
//! statement cannot succeed on a row it must not touch, whatever ran concurrently.
//!
//! Statements go through `query_typed`: parse, bind and execute travel in one round trip, and
//! no named prepared statement is left on the connection, so RDS Proxy never pins a session.
//!
//! Reads never write (SPEC section 7). A processing job past its deadline is shown as failed
//! `timed out` by the read itself (`read_columns!`); the sweep (`expire_overdue`) and the write
//! paths persist that expiry with the same fenced UPDATE a webhook uses, so exactly one of a
//! sweep and a racing webhook wins, and every reader sees the same job before and after.

use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{GenericClient, Row};

pub use crate::caller::Scope;
use crate::error::ApiError;
use crate::job_columns;
use crate::model::{Job, Layout, Nonce};
use crate::types::{Code2desId, FigmaFileKey, NodeId, PageImportId, PlacementTarget, ProgressStage, ScreenId, Status};

/// `updated_by` of a job the deadline failed; the webhook tells a timeout from a worker's
/// own failure by it.
pub const DEADLINE_ACTOR: &str = "system:deadline";
/// `error_message` of a job the deadline failed (SPEC section 4).
pub const TIMED_OUT: &str = "timed out";
/// `error_message` of a job its user cancelled (SPEC section 7).
pub const CANCELLED: &str = "cancelled";
/// `updated_by` of webhook transitions.
pub const WORKER_ACTOR: &str = "system:worker";
/// `updated_by` of a trigger or retry whose manifest could not be written.
pub const TRIGGER_ACTOR: &str = "system:trigger";

/// The caller may act on a job row `c` in ($org, $project): member of a live organization,
/// the project live and in it, the source page import live. `$sub` is the caller.
macro_rules! visible {
    ($sub:literal) => {
        concat!(
            "EXISTS (SELECT 1 FROM organization_member m ",
            "JOIN organization o ON o.id = m.organization_id AND o.deleted_at IS NULL ",
            "JOIN project p ON p.organization_id = o.id AND p.deleted_at IS NULL ",
            "JOIN page_import pi ON pi.id = c.page_import_id AND pi.deleted_at IS NULL ",
            "WHERE m.organization_id = c.organization_id AND m.subject = ",
            $sub,
            " AND p.id = c.project_id)"
        )
    };
}

/// Job `c` (joined with its attempt row `a`) is processing past the deadline `$d` seconds,
/// counted from the start of its CURRENT attempt. An attempt row of another attempt (read from
/// an older snapshot than a locked `c`) means the attempt has just been restarted: not overdue.
macro_rules! overdue {
    ($d:literal) => {
        concat!(
            "(c.status = '0' AND COALESCE(CASE WHEN a.code2des_id IS NULL THEN c.created_at ",
            "WHEN a.attempt = c.attempt THEN a.started_at END < now() - make_interval(secs => ",
            $d,
            "), false))"
        )
    };
}

/// Everything `Job::from_row` reads, as a reader must see it: a job past its deadline is failed
/// `timed out`, updated by the deadline at the moment it passed (what the sweep then persists,
/// so the JSON is the same before and after). Needs `c` and `LEFT JOIN code2des_attempt a`.
macro_rules! read_columns {
    ($d:literal) => {
        concat!(
            "c.id, c.organization_id, c.project_id, c.page_import_id, c.figma_file_key, c.screen_id, ",
            "c.placement_target, CASE WHEN ",
            overdue!($d),
            " THEN '2' ELSE c.status::text END AS status, c.attempt, c.nonce, c.result_url, c.warning_count, ",
            "CASE WHEN ",
            overdue!($d),
            " THEN 'timed out' ELSE c.error_message END AS error_message, ",
            "c.materialized_at, c.materialized_node_id, c.created_at, ",
            "CASE WHEN ",
            overdue!($d),
            " THEN COALESCE(a.started_at, c.created_at) + make_interval(secs => ",
            $d,
            ") ELSE c.updated_at END AS updated_at, c.created_by, ",
            "CASE WHEN ",
            overdue!($d),
            " THEN 'system:deadline' ELSE c.updated_by END AS updated_by, ",
            "a.progress_percent, a.progress_stage, a.progress_updated_at, ",
            "COALESCE(a.started_at, c.created_at) AS attempt_started_at, a.cancelled_at"
        )
    };
}

/// `fresh`: the job's attempt row as committed NOW, for a statement whose `target` is a locking
/// read of `c` joined with `a` (RETRY, CANCEL). When that locking read waits for a racing writer
/// (a retry, a cancel, a progress report), PostgreSQL re-reads the row it locks (`c`), but its
/// join partner `a` stays as the statement's snapshot had it, from before the winner: a losing
/// retry answered attempt n + 1 with attempt n's progress, and a losing cancel missed the
/// winner's cancel mark (409 instead of 200). A locking read returns the newest version instead.
/// It runs only once `target` holds the job's row lock (its rows come from `target`), and every
/// writer of code2des_attempt holds that lock too, so it never waits; the lock order is the
/// same as everyone's (job, then attempt row). A row this statement itself has just updated is
/// skipped (such a branch reads its own RETURNING instead).
macro_rules! fresh_attempt {
    () => {
        concat!(
            "fresh AS (SELECT a.progress_percent, a.progress_stage, a.progress_updated_at, a.started_at, ",
            "a.cancelled_at FROM code2des_attempt a JOIN target t ON a.code2des_id = t.id AND a.attempt = t.attempt ",
            "FOR SHARE OF a)"
        )
    };
}

async fn query(
    client: &impl GenericClient,
    sql: &str,
    params: &[(&(dyn ToSql + Sync), Type)],
) -> Result<Vec<Row>, ApiError> {
    crate::db::timed(client.query_typed(sql, params)).await
}

fn job(row: &Row) -> Result<Job, ApiError> {
    Job::from_row(row).map_err(|e| crate::error::internal("reading a job row", &*e))
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

// --- trigger -------------------------------------------------------------------------------

/// Everything trigger inserts.
#[derive(Debug)]
pub struct NewJob<'a> {
    pub id: Code2desId,
    pub scope: &'a Scope,
    pub page_import_id: &'a PageImportId,
    pub figma_file_key: &'a FigmaFileKey,
    pub screen_id: &'a ScreenId,
    pub placement_target: Option<&'a PlacementTarget>,
    pub nonce: &'a Nonce,
    /// `(key, sha256 of the normalised body)` when the caller sent `Idempotency-Key`.
    pub idempotency: Option<(&'a str, &'a str)>,
}

#[derive(Debug)]
pub enum Inserted {
    /// A new row; `capture_url` of its page import goes into the manifest.
    Created {
        job: Box<Job>,
        capture_url: Option<String>,
    },
    /// Not a member, project or page import not in scope, or soft-deleted.
    NotFound,
    PageImportNotCompleted,
    /// The idempotency key was used before by this caller in this scope.
    KeyTaken,
}

const INSERT_JOB: &str = concat!(
    "WITH scope AS (",
    "SELECT pi.id, pi.status::text AS page_status, pi.capture_url FROM page_import pi ",
    "JOIN project p ON p.id = pi.project_id AND p.organization_id = $2 AND p.deleted_at IS NULL ",
    "JOIN organization o ON o.id = p.organization_id AND o.deleted_at IS NULL ",
    "JOIN organization_member m ON m.organization_id = o.id AND m.subject = $9 ",
    "WHERE pi.id = $4 AND pi.organization_id = $2 AND pi.project_id = $3 AND pi.deleted_at IS NULL), ",
    "claim AS (",
    "INSERT INTO code2des_idempotency (subject, organization_id, project_id, idempotency_key, request_hash, code2des_id) ",
    "SELECT $9, $2, $3, $10, $11, $1 FROM scope WHERE scope.page_status = '1' AND $10::text IS NOT NULL ",
    "ON CONFLICT DO NOTHING RETURNING code2des_id), ",
    "ins AS (",
    "INSERT INTO code2des AS c (id, organization_id, project_id, page_import_id, figma_file_key, screen_id, ",
    "placement_target, nonce, created_by, updated_by) ",
    "SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $9 FROM scope ",
    "WHERE scope.page_status = '1' AND ($10::text IS NULL OR EXISTS (SELECT 1 FROM claim)) ",
    "RETURNING ", job_columns!("c"), "), ",
    "att AS (INSERT INTO code2des_attempt (code2des_id, attempt, started_at) ",
    "SELECT id, attempt, created_at FROM ins RETURNING started_at) ",
    "SELECT s.page_status, s.capture_url, i.*, (SELECT started_at FROM att) AS attempt_started_at ",
    "FROM scope s LEFT JOIN ins i ON true"
);

/// Membership, scope, "page import completed", the idempotency claim, the job and its first
/// attempt, in one statement: nothing can change between the check and the write.
pub async fn insert_job(client: &impl GenericClient, new: &NewJob<'_>) -> Result<Inserted, ApiError> {
    let id = new.id.to_db();
    let (key, hash) = match new.idempotency {
        Some((k, h)) => (Some(k), Some(h)),
        None => (None, None),
    };
    let rows = query(
        client,
        INSERT_JOB,
        &[
            (&id, Type::VARCHAR),
            (&new.scope.organization_id.get(), Type::INT4),
            (&new.scope.project_id.get(), Type::INT4),
            (&new.page_import_id.as_str(), Type::VARCHAR),
            (&new.figma_file_key.as_str(), Type::VARCHAR),
            (&new.screen_id.as_str(), Type::VARCHAR),
            (&new.placement_target.map(PlacementTarget::as_str), Type::VARCHAR),
            (&new.nonce.expose(), Type::VARCHAR),
            (&new.scope.subject.as_str(), Type::VARCHAR),
            (&key, Type::TEXT),
            (&hash, Type::VARCHAR),
        ],
    )
    .await?;
    let Some(row) = rows.first() else {
        return Ok(Inserted::NotFound);
    };
    let page_status: String = row.get("page_status");
    if page_status != "1" {
        return Ok(Inserted::PageImportNotCompleted);
    }
    if row.get::<_, Option<String>>("id").is_none() {
        return Ok(Inserted::KeyTaken);
    }
    Ok(Inserted::Created { job: Box::new(job(row)?), capture_url: row.get("capture_url") })
}

const FIND_BY_KEY: &str = concat!(
    "SELECT k.request_hash, ",
    read_columns!("$5"),
    " FROM code2des_idempotency k ",
    "JOIN code2des c ON c.id = k.code2des_id LEFT JOIN code2des_attempt a ON a.code2des_id = c.id ",
    "WHERE k.subject = $1 AND k.organization_id = $2 AND k.project_id = $3 AND k.idempotency_key = $4 ",
    "AND c.deleted_at IS NULL AND ",
    visible!("$1")
);

/// The job an earlier trigger with this idempotency key created, with its request hash.
pub async fn find_by_idempotency_key(
    client: &impl GenericClient,
    scope: &Scope,
    key: &str,
    deadline: Duration,
) -> Result<Option<(String, Job)>, ApiError> {
    let rows = query(
        client,
        FIND_BY_KEY,
        &[
            (&scope.subject.as_str(), Type::VARCHAR),
            (&scope.organization_id.get(), Type::INT4),
            (&scope.project_id.get(), Type::INT4),
            (&key, Type::VARCHAR),
            (&secs(deadline), Type::FLOAT8),
        ],
    )
    .await?;
    match rows.first() {
        Some(row) => Ok(Some((row.get("request_hash"), job(row)?))),
        None => Ok(None),
    }
}

/// What to undo when an attempt's manifest could not be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undispatched {
    /// A new job (trigger): also free its idempotency key, so a retry of the same request
    /// creates a job that is actually dispatched.
    NewJob,
    /// A retry's new attempt: the job keeps its key.
    Retry,
}

const FAIL_UNDISPATCHED: &str = concat!(
    "WITH failed AS (UPDATE code2des SET status = '2', error_message = $4, updated_at = now(), ",
    "updated_by = 'system:trigger' WHERE id = $1 AND attempt = $2 AND nonce = $3 AND status = '0' ",
    "AND deleted_at IS NULL RETURNING id) ",
    "DELETE FROM code2des_idempotency WHERE code2des_id = $1 AND $5 AND EXISTS (SELECT 1 FROM failed)"
);

/// Fails an attempt whose manifest could not be written (fenced by attempt and nonce, so it
/// can only ever fail the attempt it dispatched).
pub async fn fail_undispatched(
    client: &impl GenericClient,
    id: Code2desId,
    attempt: i32,
    nonce: &Nonce,
    message: &str,
    what: Undispatched,
) -> Result<(), ApiError> {
    let id = id.to_db();
    let release = what == Undispatched::NewJob;
    query(
        client,
        FAIL_UNDISPATCHED,
        &[
            (&id, Type::VARCHAR),
            (&attempt, Type::INT4),
            (&nonce.expose(), Type::VARCHAR),
            (&message, Type::TEXT),
            (&release, Type::BOOL),
        ],
    )
    .await?;
    Ok(())
}

// --- retry ---------------------------------------------------------------------------------

#[derive(Debug)]
pub enum Retried {
    NotFound,
    /// This call created the next attempt; `capture_url` of its page import goes into the
    /// new attempt's manifest.
    Created {
        job: Box<Job>,
        capture_url: Option<String>,
    },
    /// Nothing changed; the job as it is now (the caller decides between 200 and 409).
    Unchanged(Box<Job>),
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
    "(SELECT pi.capture_url FROM page_import pi WHERE pi.id = c.page_import_id) AS capture_url ",
    "FROM code2des c LEFT JOIN code2des_attempt a ON a.code2des_id = c.id ",
    "WHERE c.id = $1 AND c.organization_id = $2 AND c.project_id = $3 AND c.deleted_at IS NULL AND ",
    visible!("$4"),
    " FOR NO KEY UPDATE OF c), ",
    "retried AS (UPDATE code2des AS c SET attempt = c.attempt + 1, nonce = $6, status = '0', ",
    "result_url = NULL, warning_count = NULL, error_message = NULL, updated_at = now(), updated_by = $4 ",
    "FROM target t WHERE c.id = t.id AND c.deleted_at IS NULL ",
    "AND (t.raw_status = '2' OR t.overdue) AND c.attempt = t.attempt AND t.attempt < $7 ",
    "AND ($8::int4 IS NULL OR t.attempt = $8) ",
    "RETURNING ",
    job_columns!("c"),
    ", t.capture_url), ",
    "started AS (INSERT INTO code2des_attempt AS a (code2des_id, attempt, started_at) ",
    "SELECT id, attempt, updated_at FROM retried ON CONFLICT (code2des_id) DO UPDATE SET ",
    "attempt = EXCLUDED.attempt, started_at = EXCLUDED.started_at, progress_percent = NULL, ",
    "progress_stage = NULL, progress_updated_at = NULL, cancelled_at = NULL, cancelled_by = NULL ",
    "RETURNING a.started_at), ",
    fresh_attempt!(),
    " SELECT r.*, NULL::int2 AS progress_percent, NULL::varchar AS progress_stage, ",
    "NULL::timestamptz AS progress_updated_at, (SELECT started_at FROM started) AS attempt_started_at, ",
    "NULL::timestamptz AS cancelled_at, true AS created FROM retried r ",
    // Nothing changed: the job as it is now, its attempt row included (see `fresh_attempt!`).
    "UNION ALL SELECT t.id, t.organization_id, t.project_id, t.page_import_id, t.figma_file_key, t.screen_id, ",
    "t.placement_target, t.status, t.attempt, t.nonce, t.result_url, t.warning_count, t.error_message, ",
    "t.materialized_at, t.materialized_node_id, t.created_at, t.updated_at, t.created_by, t.updated_by, ",
    "t.capture_url, f.progress_percent, f.progress_stage, f.progress_updated_at, ",
    "COALESCE(f.started_at, t.attempt_started_at), f.cancelled_at, false ",
    "FROM target t LEFT JOIN fresh f ON true WHERE NOT EXISTS (SELECT 1 FROM retried)"
);

/// Starts the next attempt of a failed (or overdue) job: attempt + 1, `nonce`, outcome
/// cleared, progress reset, the deadline restarted. `expected` is the attempt the caller
/// retries (`{"attempt":n}`); at most `max_attempts` attempts in all.
pub async fn retry(
    client: &impl GenericClient,
    scope: &Scope,
    id: Code2desId,
    nonce: &Nonce,
    expected: Option<i32>,
    max_attempts: i32,
    deadline: Duration,
) -> Result<Retried, ApiError> {
    let id = id.to_db();
    let rows = query(
        client,
        RETRY,
        &[
            (&id, Type::VARCHAR),
            (&scope.organization_id.get(), Type::INT4),
            (&scope.project_id.get(), Type::INT4),
            (&scope.subject.as_str(), Type::VARCHAR),
            (&secs(deadline), Type::FLOAT8),
            (&nonce.expose(), Type::VARCHAR),
            (&max_attempts, Type::INT4),
            (&expected, Type::INT4),
        ],
    )
    .await?;
    let Some(row) = rows.first() else {
        return Ok(Retried::NotFound);
    };
    let j = Box::new(job(row)?);
    Ok(if row.get::<_, bool>("created") {
        Retried::Created { job: j, capture_url: row.get("capture_url") }
    } else {
        Retried::Unchanged(j)
    })
}

// --- lifecycle -----------------------------------------------------------------------------

/// GET_JOB's statement (`read_columns!` under `visible!`) lives in migration V5 as the PL/pgSQL
/// function `code2des_read_job`, whose plan the server keeps per session: `query_typed` plans
/// only this trivial call, where it planned the six-relation read every time (issue 13,
/// docs/PERFORMANCE.md §5). Same parameters, same fields; the job comes back as ONE value, an
/// anonymous record (`shared::record`, fields in [`crate::model::READ_COLUMNS`] order), NULL
/// when the caller may not see it: a one-column call costs the server and the client less
/// than a 24-column set (migration V5 says why).
const GET_JOB: &str = "SELECT code2des_read_job($1, $2, $3, $4, $5)";

/// One job visible to the caller, as of now (the deadline applied by the read, not written).
pub async fn get_job(
    client: &impl GenericClient,
    scope: &Scope,
    id: Code2desId,
    deadline: Duration,
) -> Result<Option<Job>, ApiError> {
    let id = id.to_db();
    let rows = query(
        client,
        GET_JOB,
        &[
            (&id, Type::VARCHAR),
            (&scope.organization_id.get(), Type::INT4),
            (&scope.project_id.get(), Type::INT4),
            (&scope.subject.as_str(), Type::VARCHAR),
            (&secs(deadline), Type::FLOAT8),
        ],
    )
    .await?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    Job::from_read_row(row).map_err(|e| crate::error::internal("reading a job record", &*e))
}

/// Filters and position of one page of the discovery list.
#[derive(Debug, Clone)]
pub struct ListQuery<'a> {
    pub figma_file_key: Option<&'a FigmaFileKey>,
    pub status: Option<Status>,
    /// Keyset position: items strictly older than `(created_at, id)`.
    pub after: Option<(DateTime<Utc>, String)>,
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
) -> Result<Option<Vec<Job>>, ApiError> {
    let status = q.status.map(Status::db_label);
    let (after_ts, after_id) = match &q.after {
        Some((t, id)) => (Some(*t), Some(id.as_str())),
        None => (None, None),
    };
    let rows = query(
        client,
        LIST_JOBS,
        &[
            (&scope.organization_id.get(), Type::INT4),
            (&scope.project_id.get(), Type::INT4),
            (&scope.subject.as_str(), Type::VARCHAR),
            (&secs(deadline), Type::FLOAT8),
            (&q.figma_file_key.map(FigmaFileKey::as_str), Type::VARCHAR),
            (&status, Type::TEXT),
            (&after_ts, Type::TIMESTAMPTZ),
            (&after_id, Type::VARCHAR),
            (&q.limit, Type::INT8),
        ],
    )
    .await?;
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    // The page's rows share their columns: found once, not per field of every row.
    let layout = Layout::of(first);
    rows.iter()
        .filter(|r| layout.has_job(r))
        .map(|r| Job::from_laid_row(r, &layout).map_err(|e| crate::error::internal("reading a job row", &*e)))
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
    "WHERE c.id = $1 AND c.organization_id = $2 AND c.project_id = $3 AND c.deleted_at IS NULL AND ",
    visible!("$4"),
    " FOR NO KEY UPDATE OF c), ",
    // The same fence as the webhook's: processing, not deleted, within the deadline.
    "cancelled AS (UPDATE code2des AS c SET status = '2', error_message = 'cancelled', updated_at = now(), ",
    "updated_by = $4 FROM target t WHERE c.id = t.id AND c.attempt = t.attempt AND c.status = '0' ",
    "AND c.deleted_at IS NULL AND NOT t.overdue ",
    "RETURNING c.id, c.attempt, c.created_at, c.updated_at, c.updated_by), ",
    "marked AS (INSERT INTO code2des_attempt AS a (code2des_id, attempt, started_at, cancelled_at, cancelled_by) ",
    "SELECT x.id, x.attempt, x.created_at, x.updated_at, $4 FROM cancelled x ",
    "ON CONFLICT (code2des_id) DO UPDATE SET cancelled_at = EXCLUDED.cancelled_at, cancelled_by = EXCLUDED.cancelled_by ",
    "RETURNING a.cancelled_at, a.progress_percent, a.progress_stage, a.progress_updated_at, a.started_at), ",
    fresh_attempt!(),
    // The attempt row as this call left it (`marked`), or as it is now (`fresh`): see
    // `fresh_attempt!` for why not `target`'s.
    " SELECT t.id, t.organization_id, t.project_id, t.page_import_id, t.figma_file_key, t.screen_id, ",
    "t.placement_target, COALESCE(CASE WHEN x.id IS NOT NULL THEN '2' END, t.status) AS status, t.attempt, t.nonce, ",
    "t.result_url, t.warning_count, COALESCE(CASE WHEN x.id IS NOT NULL THEN 'cancelled' END, t.error_message) AS error_message, ",
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
pub async fn cancel(
    client: &impl GenericClient,
    scope: &Scope,
    id: Code2desId,
    deadline: Duration,
) -> Result<Cancelled, ApiError> {
    let id = id.to_db();
    let rows = query(
        client,
        CANCEL,
        &[
            (&id, Type::VARCHAR),
            (&scope.organization_id.get(), Type::INT4),
            (&scope.project_id.get(), Type::INT4),
            (&scope.subject.as_str(), Type::VARCHAR),
            (&secs(deadline), Type::FLOAT8),
        ],
    )
    .await?;
    let Some(row) = rows.first() else {
        return Ok(Cancelled::NotFound);
    };
    let j = Box::new(job(row)?);
    Ok(if row.get::<_, bool>("now_cancelled") { Cancelled::Now(j) } else { Cancelled::Unchanged(j) })
}

const DELETE_JOB: &str = concat!(
    "UPDATE code2des AS c SET deleted_at = now(), deleted_by = $4, updated_at = now(), updated_by = $4 ",
    "WHERE c.id = $1 AND c.organization_id = $2 AND c.project_id = $3 AND c.deleted_at IS NULL AND ",
    visible!("$4"),
    " RETURNING c.id"
);

/// The soft delete: true when this call deleted the job, false when there was nothing (left)
/// for this caller to delete.
pub async fn delete_job(client: &impl GenericClient, scope: &Scope, id: Code2desId) -> Result<bool, ApiError> {
    let id = id.to_db();
    let rows = query(
        client,
        DELETE_JOB,
        &[
            (&id, Type::VARCHAR),
            (&scope.organization_id.get(), Type::INT4),
            (&scope.project_id.get(), Type::INT4),
            (&scope.subject.as_str(), Type::VARCHAR),
        ],
    )
    .await?;
    Ok(!rows.is_empty())
}

// --- placement -----------------------------------------------------------------------------

#[derive(Debug)]
pub enum Placed {
    NotFound,
    NotCompleted(Job),
    /// The job with its first root (this call's, or an earlier call's).
    Done(Job),
}

const PLACE: &str = concat!(
    // The locking read waits for a concurrent placement and then returns the row as that one
    // committed it. A plain read here would use the statement's snapshot and could miss the
    // winner under READ COMMITTED (the UPDATE below then finds nothing to do).
    "WITH target AS (SELECT ",
    read_columns!("$6"),
    " FROM code2des c LEFT JOIN code2des_attempt a ON a.code2des_id = c.id ",
    "WHERE c.id = $1 AND c.organization_id = $2 AND c.project_id = $3 AND c.deleted_at IS NULL AND ",
    visible!("$4"),
    " FOR NO KEY UPDATE OF c), ",
    "placed AS (UPDATE code2des AS c SET materialized_at = now(), materialized_node_id = $5, ",
    "updated_at = now(), updated_by = $4 FROM target t ",
    "WHERE c.id = t.id AND c.status = '1' AND c.deleted_at IS NULL AND c.materialized_node_id IS NULL ",
    "RETURNING c.id, c.materialized_at, c.materialized_node_id, c.updated_at, c.updated_by) ",
    "SELECT t.id, t.organization_id, t.project_id, t.page_import_id, t.figma_file_key, t.screen_id, ",
    "t.placement_target, t.status, t.attempt, t.nonce, t.result_url, t.warning_count, t.error_message, ",
    "COALESCE(x.materialized_at, t.materialized_at) AS materialized_at, ",
    "COALESCE(x.materialized_node_id, t.materialized_node_id) AS materialized_node_id, t.created_at, ",
    "COALESCE(x.updated_at, t.updated_at) AS updated_at, t.created_by, ",
    "COALESCE(x.updated_by, t.updated_by) AS updated_by, t.progress_percent, t.progress_stage, ",
    "t.progress_updated_at, t.attempt_started_at, t.cancelled_at FROM target t LEFT JOIN placed x ON true"
);

/// Records the first root of a completed job; every later call returns that root unchanged.
pub async fn place(
    client: &impl GenericClient,
    scope: &Scope,
    id: Code2desId,
    node_id: &NodeId,
    deadline: Duration,
) -> Result<Placed, ApiError> {
    let id = id.to_db();
    let rows = query(
        client,
        PLACE,
        &[
            (&id, Type::VARCHAR),
            (&scope.organization_id.get(), Type::INT4),
            (&scope.project_id.get(), Type::INT4),
            (&scope.subject.as_str(), Type::VARCHAR),
            (&node_id.as_str(), Type::VARCHAR),
            (&secs(deadline), Type::FLOAT8),
        ],
    )
    .await?;
    let Some(row) = rows.first() else {
        return Ok(Placed::NotFound);
    };
    let j = job(row)?;
    Ok(if j.status == Status::Completed { Placed::Done(j) } else { Placed::NotCompleted(j) })
}

// --- webhook -------------------------------------------------------------------------------

/// A worker's terminal report, validated.
#[derive(Debug)]
pub struct Outcome<'a> {
    pub status: Status,
    pub result_url: Option<&'a str>,
    pub warning_count: Option<i32>,
    pub error_message: Option<&'a str>,
}

/// The attempt a worker's report names: `(id, attempt, nonce)` as the body gives them.
#[derive(Debug, Clone, Copy)]
pub struct AttemptRef<'a> {
    pub id: Code2desId,
    pub attempt: i32,
    pub nonce: &'a str,
}

const FINISH: &str = concat!(
    "UPDATE code2des AS c SET status = $4::code2des_status, result_url = $5, warning_count = $6, ",
    "error_message = $7, updated_at = now(), updated_by = 'system:worker' ",
    "WHERE c.id = $1 AND c.attempt = $2 AND c.nonce = $3 AND c.status = '0' AND c.deleted_at IS NULL ",
    "AND COALESCE((SELECT a.started_at FROM code2des_attempt a WHERE a.code2des_id = c.id AND a.attempt = c.attempt), ",
    "c.created_at) >= now() - make_interval(secs => $8) ",
    "RETURNING (extract(epoch FROM now() - COALESCE((SELECT a.started_at FROM code2des_attempt a ",
    "WHERE a.code2des_id = c.id AND a.attempt = c.attempt), c.created_at)) * 1000)::float8 AS duration_ms"
);

/// THE fenced transition: id, attempt, nonce, still processing, not deleted, within the
/// deadline. Exactly one of any set of racing callers gets `Some` (the attempt's duration).
pub async fn finish(
    client: &impl GenericClient,
    at: AttemptRef<'_>,
    outcome: &Outcome<'_>,
    deadline: Duration,
) -> Result<Option<Duration>, ApiError> {
    let id = at.id.to_db();
    let status = outcome.status.db_label();
    let rows = query(
        client,
        FINISH,
        &[
            (&id, Type::VARCHAR),
            (&at.attempt, Type::INT4),
            (&at.nonce, Type::VARCHAR),
            (&status, Type::TEXT),
            (&outcome.result_url, Type::VARCHAR),
            (&outcome.warning_count, Type::INT4),
            (&outcome.error_message, Type::TEXT),
            (&secs(deadline), Type::FLOAT8),
        ],
    )
    .await?;
    Ok(rows.first().map(|r| Duration::from_secs_f64(r.get::<_, f64>("duration_ms").max(0.0) / 1000.0)))
}

/// What a progress report did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progressed {
    /// Stored: the attempt is processing and the percent did not go backwards.
    Stored,
    /// The attempt is processing, but the percent is below the one stored: ignored.
    Ignored,
    /// The fence refused it (wrong attempt or nonce, terminal, deleted, overdue, unknown).
    Fenced,
}

const PROGRESS: &str = concat!(
    // FOR SHARE waits for a racing terminal report or cancel and re-checks the fence against
    // the row it committed: a progress report never lands on a terminal attempt.
    "WITH j AS (SELECT c.id, c.attempt, c.created_at FROM code2des c ",
    "LEFT JOIN code2des_attempt a ON a.code2des_id = c.id ",
    "WHERE c.id = $1 AND c.attempt = $2 AND c.nonce = $3 AND c.status = '0' AND c.deleted_at IS NULL AND NOT ",
    overdue!("$6"),
    " FOR SHARE OF c), ",
    "up AS (INSERT INTO code2des_attempt AS a (code2des_id, attempt, started_at, progress_percent, ",
    "progress_stage, progress_updated_at) SELECT j.id, j.attempt, j.created_at, $4, $5, now() FROM j ",
    "ON CONFLICT (code2des_id) DO UPDATE SET progress_percent = EXCLUDED.progress_percent, ",
    "progress_stage = EXCLUDED.progress_stage, progress_updated_at = EXCLUDED.progress_updated_at ",
    "WHERE a.attempt = EXCLUDED.attempt AND (a.progress_percent IS NULL OR a.progress_percent <= EXCLUDED.progress_percent) ",
    "RETURNING 1) ",
    "SELECT (SELECT count(*) FROM j) AS matched, (SELECT count(*) FROM up) AS stored"
);

/// A worker's progress report, fenced exactly like a terminal one. The percent never goes
/// backwards within an attempt (an equal one may change the stage).
pub async fn progress(
    client: &impl GenericClient,
    at: AttemptRef<'_>,
    percent: i16,
    stage: &ProgressStage,
    deadline: Duration,
) -> Result<Progressed, ApiError> {
    let id = at.id.to_db();
    let rows = query(
        client,
        PROGRESS,
        &[
            (&id, Type::VARCHAR),
            (&at.attempt, Type::INT4),
            (&at.nonce, Type::VARCHAR),
            (&percent, Type::INT2),
            (&stage.as_str(), Type::VARCHAR),
            (&secs(deadline), Type::FLOAT8),
        ],
    )
    .await?;
    let (matched, stored) =
        rows.first().map(|r| (r.get::<_, i64>("matched"), r.get::<_, i64>("stored"))).unwrap_or((0, 0));
    Ok(match (matched, stored) {
        (0, _) => Progressed::Fenced,
        (_, 0) => Progressed::Ignored,
        _ => Progressed::Stored,
    })
}

/// What the webhook needs to explain a transition that did not happen.
#[derive(Debug)]
pub struct Fence {
    pub job: Job,
    pub deleted: bool,
    pub overdue: bool,
}

const FENCE: &str = concat!(
    "SELECT ",
    job_columns!("c"),
    ", a.cancelled_at, c.deleted_at IS NOT NULL AS deleted, ",
    overdue!("$2"),
    " AS overdue FROM code2des c LEFT JOIN code2des_attempt a ON a.code2des_id = c.id WHERE c.id = $1"
);

/// The row as committed now (a new statement, so a new snapshot that includes the winner).
pub async fn fence(client: &impl GenericClient, id: Code2desId, deadline: Duration) -> Result<Option<Fence>, ApiError> {
    let id = id.to_db();
    let rows = query(client, FENCE, &[(&id, Type::VARCHAR), (&secs(deadline), Type::FLOAT8)]).await?;
    match rows.first() {
        Some(row) => Ok(Some(Fence { job: job(row)?, deleted: row.get("deleted"), overdue: row.get("overdue") })),
        None => Ok(None),
    }
}

// --- deadline ------------------------------------------------------------------------------

const EXPIRE: &str = concat!(
    // `c.attempt = s.attempt`: should a retry restart the job between this statement's snapshot
    // and its row lock, the re-check sees another attempt and leaves it alone.
    "UPDATE code2des AS c SET status = '2', error_message = 'timed out', ",
    "updated_at = s.started + make_interval(secs => $1), updated_by = 'system:deadline' ",
    "FROM (SELECT c.id, c.attempt, COALESCE(a.started_at, c.created_at) AS started FROM code2des c ",
    "LEFT JOIN code2des_attempt a ON a.code2des_id = c.id ",
    "WHERE c.status = '0' AND c.deleted_at IS NULL AND ($2::varchar IS NULL OR c.id = $2) AND ",
    overdue!("$1"),
    " ORDER BY c.id LIMIT $3) s ",
    "WHERE c.id = s.id AND c.attempt = s.attempt AND c.status = '0' AND c.deleted_at IS NULL ",
    "RETURNING c.id, (extract(epoch FROM now() - s.started) * 1000)::float8 AS duration_ms"
);

/// Persists the deadline: processing jobs past it become failed `timed out`, with the fence of
/// the webhook (processing, not deleted, same attempt), so exactly one of this and a racing
/// webhook wins. At most `limit` jobs per call; returns each expired job's attempt duration.
pub async fn expire_overdue(
    client: &impl GenericClient,
    only: Option<Code2desId>,
    deadline: Duration,
    limit: i64,
) -> Result<Vec<Duration>, ApiError> {
    let only = only.map(Code2desId::to_db);
    let rows =
        query(client, EXPIRE, &[(&secs(deadline), Type::FLOAT8), (&only, Type::VARCHAR), (&limit, Type::INT8)]).await?;
    Ok(rows.iter().map(|r| Duration::from_secs_f64(r.get::<_, f64>("duration_ms").max(0.0) / 1000.0)).collect())
}

/// Applies the deadline to one job; true if this call failed it.
pub async fn expire_one(client: &impl GenericClient, id: Code2desId, deadline: Duration) -> Result<bool, ApiError> {
    Ok(!expire_overdue(client, Some(id), deadline, 1).await?.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_use_every_placeholder_they_bind() {
        // A cheap guard against a placeholder typo in the concat! fragments.
        for (sql, n) in [
            (INSERT_JOB, 11),
            (FIND_BY_KEY, 5),
            (FAIL_UNDISPATCHED, 5),
            (RETRY, 8),
            (GET_JOB, 5),
            (LIST_JOBS, 9),
            (CANCEL, 5),
            (DELETE_JOB, 4),
            (PLACE, 6),
            (FINISH, 8),
            (PROGRESS, 6),
            (FENCE, 2),
            (EXPIRE, 3),
        ] {
            for i in 1..=n {
                assert!(sql.contains(&format!("${i}")), "${i} missing in {sql}");
            }
            assert!(!sql.contains(&format!("${}", n + 1)), "too many placeholders in {sql}");
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
