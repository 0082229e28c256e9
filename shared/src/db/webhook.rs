//! The webhook's statements (SPEC sections 4 and 7): a worker's terminal report (the fenced
//! transition), its progress reports, and the row as committed now, to explain a refusal.

use std::time::Duration;

use tokio_postgres::types::Type;
use tokio_postgres::GenericClient;

use crate::db::sql::{job, job_columns, overdue, Binds};
use crate::domain::ids::{Code2desId, ProgressStage};
use crate::domain::job::{Job, Status};
use crate::error::ApiError;

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

const RECORD_OUTCOME: &str = concat!(
    // `t` is the job's attempt row as of this statement's snapshot; should a retry commit between
    // that snapshot and the row lock, the re-check sees another attempt (`c.attempt = $2` fails).
    "WITH t AS (SELECT x.id, a.attempt, a.started_at FROM code2des x ",
    "LEFT JOIN code2des_attempt a ON a.code2des_id = x.id WHERE x.id = $1) ",
    "UPDATE code2des AS c SET status = $4::code2des_status, result_url = $5, warning_count = $6, ",
    "error_message = $7, updated_at = now(), updated_by = 'system:worker' FROM t ",
    "WHERE c.id = t.id AND c.attempt = $2 AND c.nonce = $3 AND c.status = '0' AND c.deleted_at IS NULL ",
    "AND NOT code2des_overdue(c.status, c.attempt, c.created_at, t.attempt, t.started_at, $8) ",
    "RETURNING (extract(epoch FROM now() - COALESCE(CASE WHEN t.attempt = c.attempt THEN t.started_at END, ",
    "c.created_at)) * 1000)::float8 AS duration_ms"
);

/// THE fenced transition: id, attempt, nonce, still processing, not deleted, within the
/// deadline. Exactly one of any set of racing callers gets `Some` (the attempt's duration).
pub async fn record_outcome(
    client: &impl GenericClient,
    at: AttemptRef<'_>,
    outcome: &Outcome<'_>,
    deadline: Duration,
) -> Result<Option<Duration>, ApiError> {
    let status = outcome.status.db_label();
    let rows = Binds::none()
        .and(&at.id, Type::VARCHAR)
        .and(&at.attempt, Type::INT4)
        .and(&at.nonce, Type::VARCHAR)
        .and(&status, Type::TEXT)
        .and(&outcome.result_url, Type::VARCHAR)
        .and(&outcome.warning_count, Type::INT4)
        .and(&outcome.error_message, Type::TEXT)
        .and(&deadline.as_secs_f64(), Type::FLOAT8)
        .query(client, RECORD_OUTCOME)
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
    let rows = Binds::none()
        .and(&at.id, Type::VARCHAR)
        .and(&at.attempt, Type::INT4)
        .and(&at.nonce, Type::VARCHAR)
        .and(&percent, Type::INT2)
        .and(&stage.as_str(), Type::VARCHAR)
        .and(&deadline.as_secs_f64(), Type::FLOAT8)
        .query(client, PROGRESS)
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
    let rows =
        Binds::none().and(&id, Type::VARCHAR).and(&deadline.as_secs_f64(), Type::FLOAT8).query(client, FENCE).await?;
    match rows.first() {
        Some(row) => Ok(Some(Fence { job: job(row)?, deleted: row.get("deleted"), overdue: row.get("overdue") })),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::sql::placeholders;

    #[test]
    fn statements_use_the_placeholders_they_bind() {
        for (sql, n) in [(RECORD_OUTCOME, 8), (PROGRESS, 6), (FENCE, 2)] {
            assert_eq!(placeholders(sql), (1..=n).collect(), "{sql}");
        }
    }
}
