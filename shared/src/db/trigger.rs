//! Trigger's statements (SPEC section 3): a new job with its idempotency key and its quotas, and
//! failing an attempt whose manifest could not be written (trigger and retry).

use std::time::Duration;

use tokio_postgres::types::Type;
use tokio_postgres::GenericClient;

use crate::db::error::DbError;
use crate::db::quota::{self, burst_ctes, quota_columns, quota_ctes, quota_ok};
use crate::db::sql::{col, job, job_columns, read_columns, visible, Binds};
use crate::domain::ids::{Code2desId, FigmaFileKey, PageImportId, PlacementTarget, ScreenId};
use crate::domain::job::{Job, Nonce, IDEMPOTENCY_KEY_TTL};
use crate::domain::quota::{Quota, QuotaState, BURST_WINDOW};
use crate::domain::scope::Scope;

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
    /// The widths to lay the capture out at (checked: `code2des_wire::protocol::viewports_fault`);
    /// `None`, one layout at the capture's own width. Kept on the attempt row for the retries,
    /// and the job's weight in the quotas.
    pub viewports: Option<&'a [u32]>,
}

#[derive(Debug)]
pub enum Inserted {
    /// A new row; `capture_url` of its page import goes into the manifest.
    Created {
        job: Box<Job>,
        capture_url: Option<String>,
        quota: QuotaState,
    },
    /// Not a member, project or page import not in scope, or soft-deleted.
    NotFound,
    PageImportNotCompleted,
    /// The idempotency key was used before by this caller in this scope: a replay, which no
    /// quota refuses.
    KeyTaken {
        quota: QuotaState,
    },
    /// A quota refused the job (`quota.refused()` says which); nothing was written.
    QuotaExceeded {
        quota: QuotaState,
    },
}

const INSERT_JOB: &str = concat!(
    // The job's weight in the quotas: its viewports, 1 when it names none (`db::quota`).
    "WITH weight AS (SELECT COALESCE(cardinality($17::int4[]), 1) AS k), ",
    "scope AS (",
    "SELECT pi.id, pi.status::text AS page_status, pi.capture_url FROM page_import pi ",
    "JOIN project p ON p.id = pi.project_id AND p.organization_id = $2 AND p.deleted_at IS NULL ",
    "JOIN organization o ON o.id = p.organization_id AND o.deleted_at IS NULL ",
    "JOIN organization_member m ON m.organization_id = o.id AND m.subject = $4 ",
    "WHERE pi.id = $5 AND pi.organization_id = $2 AND pi.project_id = $3 AND pi.deleted_at IS NULL), ",
    // The caller's live key, if it holds one: a replay, answered before any quota is asked.
    // Read from the snapshot, which is exact here: a trigger with the same key is in the same
    // organization, so it held the organization's lock (`db::quota`) and committed before this
    // statement started.
    "taken AS (SELECT 1 FROM code2des_idempotency k WHERE k.subject = $4 AND k.organization_id = $2 ",
    "AND k.project_id = $3 AND k.idempotency_key = $10 AND k.created_at >= now() - make_interval(secs => $12)), ",
    quota_ctes!("$2", "$13", "$14", "$16"),
    ", ",
    burst_ctes!("$2", "$4", "$15", "FROM scope WHERE scope.page_status = ", crate::db::sql::page_import_completed!(), " AND NOT EXISTS (SELECT 1 FROM taken)"),
    ", ",
    "ok AS (SELECT 1 FROM scope WHERE scope.page_status = ", crate::db::sql::page_import_completed!(), " AND NOT EXISTS (SELECT 1 FROM taken) AND ",
    quota_ok!(),
    "), ",
    // Only when the job will be inserted: the key's row refers to it (a foreign key checked at
    // the end of the statement). A key older than its time to live ($12 seconds) is free
    // again: the claim takes it over.
    "claim AS (",
    "INSERT INTO code2des_idempotency (subject, organization_id, project_id, idempotency_key, request_hash, code2des_id) ",
    "SELECT $4, $2, $3, $10, $11, $1 FROM ok WHERE $10::text IS NOT NULL ",
    "ON CONFLICT ON CONSTRAINT code2des_idempotency_pkey DO UPDATE SET request_hash = EXCLUDED.request_hash, ",
    "code2des_id = EXCLUDED.code2des_id, created_at = now() ",
    "WHERE code2des_idempotency.created_at < now() - make_interval(secs => $12) RETURNING code2des_id), ",
    "ins AS (",
    "INSERT INTO code2des AS c (id, organization_id, project_id, page_import_id, figma_file_key, screen_id, ",
    "placement_target, nonce, created_by, updated_by) ",
    "SELECT $1, $2, $3, $5, $6, $7, $8, $9, $4, $4 FROM scope, ok ",
    "WHERE ($10::text IS NULL OR EXISTS (SELECT 1 FROM claim)) ",
    "RETURNING ", job_columns!("c"), "), ",
    "att AS (INSERT INTO code2des_attempt (code2des_id, attempt, started_at, viewports) ",
    "SELECT id, attempt, created_at, $17 FROM ins RETURNING started_at) ",
    "SELECT s.page_status, s.capture_url, i.*, (SELECT started_at FROM att) AS attempt_started_at, ",
    "EXISTS (SELECT 1 FROM taken) AS key_taken, ",
    quota_columns!("$15", "(s.page_status = ", crate::db::sql::page_import_completed!(), " AND NOT EXISTS (SELECT 1 FROM taken))"),
    " FROM scope s LEFT JOIN ins i ON true"
);

/// Membership, scope, "page import completed", the idempotency claim, both quotas, the job and
/// its first attempt, in one statement: nothing can change between the checks and the write.
/// The caller holds the organization's lock ([`crate::db::quota::lock_organization`]) and rolls
/// back whatever does not answer [`Inserted::Created`] (a counted `burst` call included).
pub async fn insert_job(
    client: &impl GenericClient,
    new: &NewJob<'_>,
    limits: &Quota,
    deadline: Duration,
) -> Result<Inserted, DbError> {
    let (key, hash) = match new.idempotency {
        Some((k, h)) => (Some(k), Some(h)),
        None => (None, None),
    };
    let placement_target = new.placement_target.map(PlacementTarget::as_str);
    // Widths are at most 2 560 (checked before): each is an int4.
    let viewports: Option<Vec<i32>> = new.viewports.map(|v| v.iter().map(|w| *w as i32).collect());
    let rows = Binds::job(&new.id, new.scope)
        .and(&new.page_import_id.as_str(), Type::VARCHAR)
        .and(&new.figma_file_key.as_str(), Type::VARCHAR)
        .and(&new.screen_id.as_str(), Type::VARCHAR)
        .and(&placement_target, Type::VARCHAR)
        .and(&new.nonce.expose(), Type::VARCHAR)
        .and(&key, Type::TEXT)
        .and(&hash, Type::VARCHAR)
        .and(&IDEMPOTENCY_KEY_TTL.as_secs_f64(), Type::FLOAT8)
        .and(&limits.max_active_jobs_per_org, Type::INT4)
        .and(&limits.triggers_per_minute, Type::INT4)
        .and(&BURST_WINDOW.as_secs_f64(), Type::FLOAT8)
        .and(&deadline.as_secs_f64(), Type::FLOAT8)
        .and(&viewports, Type::INT4_ARRAY)
        .query(client, INSERT_JOB)
        .await?;
    let Some(row) = rows.first() else {
        return Ok(Inserted::NotFound);
    };
    let page_status: String = col(row, "page_status")?;
    if page_status != crate::domain::job::PAGE_IMPORT_COMPLETED {
        return Ok(Inserted::PageImportNotCompleted);
    }
    if col::<Option<String>>(row, "id")?.is_some() {
        return Ok(Inserted::Created {
            job: Box::new(job(row)?),
            capture_url: col(row, "capture_url")?,
            quota: quota::state(row, true)?,
        });
    }
    let state = quota::state(row, false)?;
    Ok(if col::<bool>(row, "key_taken")? || (state.refused().is_none() && key.is_some()) {
        // A live key, or (never expected under the organization's lock) a claim that lost to
        // a key committed after the snapshot: either way the key's job is the answer.
        Inserted::KeyTaken { quota: state }
    } else if state.refused().is_some() {
        Inserted::QuotaExceeded { quota: state }
    } else {
        return Err(DbError::bug("trigger's statement", "no job, no key, no quota refused"));
    })
}

const FIND_BY_KEY: &str = concat!(
    "SELECT k.request_hash, c.deleted_at IS NOT NULL AS job_deleted, ",
    read_columns!("$4"),
    " FROM code2des_idempotency k ",
    "JOIN code2des c ON c.id = k.code2des_id LEFT JOIN code2des_attempt a ON a.code2des_id = c.id ",
    "WHERE k.subject = $3 AND k.organization_id = $1 AND k.project_id = $2 AND k.idempotency_key = $5 ",
    "AND k.created_at >= now() - make_interval(secs => $6) AND ",
    visible!("$3")
);

/// What an earlier trigger with an idempotency key created.
#[derive(Debug)]
pub enum Keyed {
    /// The job, with the request hash the key was claimed with.
    Live { request_hash: String, job: Box<Job> },
    /// The job was deleted since; the key stays claimed for its time to live.
    Deleted { request_hash: String },
}

/// The job an earlier trigger with this idempotency key created, with its request hash; none
/// once the key is older than its time to live, or when the caller may no longer see the job.
pub async fn find_by_idempotency_key(
    client: &impl GenericClient,
    scope: &Scope,
    key: &str,
    deadline: Duration,
) -> Result<Option<Keyed>, DbError> {
    let rows = Binds::scope(scope)
        .deadline(deadline)
        .and(&key, Type::VARCHAR)
        .and(&IDEMPOTENCY_KEY_TTL.as_secs_f64(), Type::FLOAT8)
        .query(client, FIND_BY_KEY)
        .await?;
    match rows.first() {
        Some(row) => {
            let request_hash = col(row, "request_hash")?;
            Ok(Some(match col::<bool>(row, "job_deleted")? {
                true => Keyed::Deleted { request_hash },
                false => Keyed::Live { request_hash, job: Box::new(job(row)?) },
            }))
        }
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
    "WITH failed AS (UPDATE code2des SET status = ",
    crate::db::sql::status_failed!(),
    ", error_message = $4, updated_at = now(), ",
    "updated_by = ",
    crate::db::sql::actor_trigger!(),
    " WHERE id = $1 AND attempt = $2 AND nonce = $3 AND status = ",
    crate::db::sql::status_processing!(),
    " ",
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
) -> Result<(), DbError> {
    let release = what == Undispatched::NewJob;
    Binds::none()
        .and(&id, Type::VARCHAR)
        .and(&attempt, Type::INT4)
        .and(&nonce.expose(), Type::VARCHAR)
        .and(&message, Type::TEXT)
        .and(&release, Type::BOOL)
        .query(client, FAIL_UNDISPATCHED)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::sql::placeholders;

    #[test]
    fn statements_use_the_placeholders_they_bind() {
        for (sql, n) in [(INSERT_JOB, 17), (FIND_BY_KEY, 6), (FAIL_UNDISPATCHED, 5)] {
            assert_eq!(placeholders(sql), (1..=n).collect(), "{sql}");
        }
    }
}
