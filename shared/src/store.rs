//! Every SQL statement of the service, one small named function each. Fence conditions
//! (scope, membership, status, attempt, nonce, deadline) live in the WHERE clauses, so a
//! statement cannot succeed on a row it must not touch, whatever ran concurrently.
//!
//! Statements go through `query_typed`: parse, bind and execute travel in one round trip, and
//! no named prepared statement is left on the connection, so RDS Proxy never pins a session.

use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{GenericClient, Row};

use crate::error::ApiError;
use crate::job_columns;
use crate::model::Job;
use crate::types::{Code2desId, Status};

/// Who is asking, and in which organization/project (all parsed at the edge).
#[derive(Debug, Clone)]
pub struct Scope {
    pub organization_id: i32,
    pub project_id: i32,
    pub subject: String,
}

/// `updated_by` of a job the deadline failed; the webhook tells a timeout from a worker's
/// own failure by it.
pub const DEADLINE_ACTOR: &str = "system:deadline";
/// `error_message` of a job the deadline failed (SPEC section 4).
pub const TIMED_OUT: &str = "timed out";
/// `updated_by` of webhook transitions.
pub const WORKER_ACTOR: &str = "system:worker";
/// `updated_by` of a trigger whose manifest could not be written.
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

/// The deadline expiry as a data-modifying CTE named `expired`: processing jobs past the
/// deadline become failed 'timed out', fenced exactly like a webhook (status and deleted_at in
/// the WHERE). Reads run it first so nobody ever observes an overdue job as processing.
macro_rules! expire_cte {
    ($filter:expr, $deadline:literal) => {
        concat!(
            "expired AS (UPDATE code2des AS c SET status = '2', error_message = 'timed out', ",
            "updated_at = now(), updated_by = 'system:deadline' ",
            "WHERE c.status = '0' AND c.deleted_at IS NULL ",
            "AND c.created_at < now() - make_interval(secs => ",
            $deadline,
            ") AND ",
            $filter,
            " RETURNING c.id, c.status, c.error_message, c.updated_at, c.updated_by)"
        )
    };
}

/// Job columns of `c` with the `expired` CTE's changes laid over them (the outer SELECT of
/// a statement still sees its snapshot, not its own CTE's update).
macro_rules! overlaid_columns {
    () => {
        concat!(
            "c.id, c.organization_id, c.project_id, c.page_import_id, c.figma_file_key, c.screen_id, ",
            "c.placement_target, COALESCE(e.status, c.status)::text AS status, c.attempt, c.nonce, ",
            "c.result_url, c.warning_count, COALESCE(e.error_message, c.error_message) AS error_message, ",
            "c.materialized_at, c.materialized_node_id, c.created_at, ",
            "COALESCE(e.updated_at, c.updated_at) AS updated_at, c.created_by, ",
            "COALESCE(e.updated_by, c.updated_by) AS updated_by"
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
    Job::from_row(row).map_err(|e| crate::error::unavailable("the database", &e))
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
    pub page_import_id: &'a str,
    pub figma_file_key: &'a str,
    pub screen_id: &'a str,
    pub placement_target: Option<&'a str>,
    pub nonce: &'a str,
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
    "RETURNING ", job_columns!("c"), ") ",
    "SELECT s.page_status, s.capture_url, i.* FROM scope s LEFT JOIN ins i ON true"
);

/// Membership, scope, "page import completed", the idempotency claim and the insert, in one
/// statement: nothing can change between the check and the write.
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
            (&new.scope.organization_id, Type::INT4),
            (&new.scope.project_id, Type::INT4),
            (&new.page_import_id, Type::VARCHAR),
            (&new.figma_file_key, Type::VARCHAR),
            (&new.screen_id, Type::VARCHAR),
            (&new.placement_target, Type::VARCHAR),
            (&new.nonce, Type::VARCHAR),
            (&new.scope.subject, Type::VARCHAR),
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
    job_columns!("c"),
    " FROM code2des_idempotency k ",
    "JOIN code2des c ON c.id = k.code2des_id ",
    "WHERE k.subject = $1 AND k.organization_id = $2 AND k.project_id = $3 AND k.idempotency_key = $4 ",
    "AND c.deleted_at IS NULL AND ",
    visible!("$1")
);

/// The job an earlier trigger with this idempotency key created, with its request hash.
pub async fn find_by_idempotency_key(
    client: &impl GenericClient,
    scope: &Scope,
    key: &str,
) -> Result<Option<(String, Job)>, ApiError> {
    let rows = query(
        client,
        FIND_BY_KEY,
        &[
            (&scope.subject, Type::VARCHAR),
            (&scope.organization_id, Type::INT4),
            (&scope.project_id, Type::INT4),
            (&key, Type::VARCHAR),
        ],
    )
    .await?;
    match rows.first() {
        Some(row) => Ok(Some((row.get("request_hash"), job(row)?))),
        None => Ok(None),
    }
}

const FAIL_UNDISPATCHED: &str = concat!(
    "WITH failed AS (UPDATE code2des SET status = '2', error_message = $2, updated_at = now(), ",
    "updated_by = 'system:trigger' WHERE id = $1 AND status = '0' AND deleted_at IS NULL RETURNING id) ",
    "DELETE FROM code2des_idempotency WHERE code2des_id = $1"
);

/// Fails a job whose manifest could not be written, and frees its idempotency key so that a
/// retry of the same request can create a job that is actually dispatched.
pub async fn fail_undispatched(client: &impl GenericClient, id: Code2desId, message: &str) -> Result<(), ApiError> {
    let id = id.to_db();
    query(client, FAIL_UNDISPATCHED, &[(&id, Type::VARCHAR), (&message, Type::TEXT)]).await?;
    Ok(())
}

// --- lifecycle -----------------------------------------------------------------------------

const GET_JOB: &str = concat!(
    "WITH ",
    expire_cte!(concat!("c.id = $1 AND c.organization_id = $2 AND c.project_id = $3 AND ", visible!("$4")), "$5"),
    " SELECT ",
    overlaid_columns!(),
    " FROM code2des c LEFT JOIN expired e ON e.id = c.id ",
    "WHERE c.id = $1 AND c.organization_id = $2 AND c.project_id = $3 AND c.deleted_at IS NULL AND ",
    visible!("$4")
);

/// One job visible to the caller, with the deadline applied first.
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
            (&scope.organization_id, Type::INT4),
            (&scope.project_id, Type::INT4),
            (&scope.subject, Type::VARCHAR),
            (&secs(deadline), Type::FLOAT8),
        ],
    )
    .await?;
    rows.first().map(job).transpose()
}

/// Filters and position of one page of the discovery list.
#[derive(Debug, Clone)]
pub struct ListQuery<'a> {
    pub figma_file_key: Option<&'a str>,
    pub status: Option<Status>,
    /// Keyset position: items strictly older than `(created_at, id)`.
    pub after: Option<(DateTime<Utc>, String)>,
    pub limit: i64,
}

const LIST_JOBS: &str = concat!(
    // `scope` yields one row exactly when the caller may list this project, so "not yours"
    // (no row: 404) and "nothing yet" (one all-NULL row: empty page) stay apart in ONE statement.
    "WITH scope AS (SELECT 1 AS ok FROM organization_member m ",
    "JOIN organization o ON o.id = m.organization_id AND o.deleted_at IS NULL ",
    "JOIN project p ON p.organization_id = o.id AND p.deleted_at IS NULL ",
    "WHERE m.organization_id = $1 AND m.subject = $3 AND p.id = $2), ",
    expire_cte!(
        concat!(
            "c.organization_id = $1 AND c.project_id = $2 AND ($5::varchar IS NULL OR c.figma_file_key = $5) AND ",
            visible!("$3")
        ),
        "$4"
    ),
    " SELECT j.* FROM scope LEFT JOIN LATERAL (SELECT ",
    overlaid_columns!(),
    " FROM code2des c LEFT JOIN expired e ON e.id = c.id ",
    "WHERE c.organization_id = $1 AND c.project_id = $2 AND c.deleted_at IS NULL ",
    "AND ($5::varchar IS NULL OR c.figma_file_key = $5) ",
    "AND ($6::text IS NULL OR COALESCE(e.status, c.status) = $6::code2des_status) ",
    "AND ($7::timestamptz IS NULL OR (c.created_at, c.id) < ($7::timestamptz, $8::varchar)) AND ",
    visible!("$3"),
    " ORDER BY c.created_at DESC, c.id DESC LIMIT $9) j ON true"
);

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
            (&scope.organization_id, Type::INT4),
            (&scope.project_id, Type::INT4),
            (&scope.subject, Type::VARCHAR),
            (&secs(deadline), Type::FLOAT8),
            (&q.figma_file_key, Type::VARCHAR),
            (&status, Type::TEXT),
            (&after_ts, Type::TIMESTAMPTZ),
            (&after_id, Type::VARCHAR),
            (&q.limit, Type::INT8),
        ],
    )
    .await?;
    if rows.is_empty() {
        return Ok(None);
    }
    rows.iter().filter(|r| r.get::<_, Option<String>>("id").is_some()).map(job).collect::<Result<Vec<_>, _>>().map(Some)
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
    job_columns!("c"),
    " FROM code2des c ",
    "WHERE c.id = $1 AND c.organization_id = $2 AND c.project_id = $3 AND c.deleted_at IS NULL AND ",
    visible!("$4"),
    " FOR NO KEY UPDATE OF c), ",
    "placed AS (UPDATE code2des AS c SET materialized_at = now(), materialized_node_id = $5, ",
    "updated_at = now(), updated_by = $4 FROM target t ",
    "WHERE c.id = t.id AND c.status = '1' AND c.deleted_at IS NULL AND c.materialized_node_id IS NULL ",
    "RETURNING ",
    job_columns!("c"),
    ") ",
    "SELECT * FROM placed UNION ALL SELECT * FROM target WHERE NOT EXISTS (SELECT 1 FROM placed)"
);

/// Records the first root of a completed job; every later call returns that root unchanged.
pub async fn place(
    client: &impl GenericClient,
    scope: &Scope,
    id: Code2desId,
    node_id: &str,
) -> Result<Placed, ApiError> {
    let id = id.to_db();
    let rows = query(
        client,
        PLACE,
        &[
            (&id, Type::VARCHAR),
            (&scope.organization_id, Type::INT4),
            (&scope.project_id, Type::INT4),
            (&scope.subject, Type::VARCHAR),
            (&node_id, Type::VARCHAR),
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

const FINISH: &str = concat!(
    "UPDATE code2des SET status = $4::code2des_status, result_url = $5, warning_count = $6, ",
    "error_message = $7, updated_at = now(), updated_by = 'system:worker' ",
    "WHERE id = $1 AND attempt = $2 AND nonce = $3 AND status = '0' AND deleted_at IS NULL ",
    "AND created_at >= now() - make_interval(secs => $8) RETURNING id"
);

/// THE fenced transition: id, attempt, nonce, still processing, not deleted, within the
/// deadline. Exactly one of any set of racing callers gets `true`.
pub async fn finish(
    client: &impl GenericClient,
    id: Code2desId,
    attempt: i32,
    nonce: &str,
    outcome: &Outcome<'_>,
    deadline: Duration,
) -> Result<bool, ApiError> {
    let id = id.to_db();
    let status = outcome.status.db_label();
    let rows = query(
        client,
        FINISH,
        &[
            (&id, Type::VARCHAR),
            (&attempt, Type::INT4),
            (&nonce, Type::VARCHAR),
            (&status, Type::TEXT),
            (&outcome.result_url, Type::VARCHAR),
            (&outcome.warning_count, Type::INT4),
            (&outcome.error_message, Type::TEXT),
            (&secs(deadline), Type::FLOAT8),
        ],
    )
    .await?;
    Ok(!rows.is_empty())
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
    ", c.deleted_at IS NOT NULL AS deleted, ",
    "c.created_at < now() - make_interval(secs => $2) AS overdue FROM code2des c WHERE c.id = $1"
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

const EXPIRE_ONE: &str = concat!("WITH ", expire_cte!("c.id = $1", "$2"), " SELECT count(*) AS n FROM expired");

/// Applies the deadline to one job (same fence as the reads); true if this call failed it.
pub async fn expire_one(client: &impl GenericClient, id: Code2desId, deadline: Duration) -> Result<bool, ApiError> {
    let id = id.to_db();
    let rows = query(client, EXPIRE_ONE, &[(&id, Type::VARCHAR), (&secs(deadline), Type::FLOAT8)]).await?;
    Ok(rows.first().map(|r| r.get::<_, i64>("n")).unwrap_or(0) > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_use_every_placeholder_they_bind() {
        // A cheap guard against a placeholder typo in the concat! fragments.
        for (sql, n) in [
            (INSERT_JOB, 11),
            (GET_JOB, 5),
            (LIST_JOBS, 9),
            (PLACE, 5),
            (FINISH, 8),
            (FENCE, 2),
            (EXPIRE_ONE, 2),
            (FIND_BY_KEY, 4),
            (FAIL_UNDISPATCHED, 2),
        ] {
            for i in 1..=n {
                assert!(sql.contains(&format!("${i}")), "${i} missing in {sql}");
            }
            assert!(!sql.contains(&format!("${}", n + 1)), "too many placeholders in {sql}");
        }
    }
}
