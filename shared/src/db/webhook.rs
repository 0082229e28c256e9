//! The webhook's statements (SPEC sections 4, 7 and 9): a worker's terminal report (the fenced
//! transition), its progress reports, the row as committed now, to explain a refusal, and the
//! answers given to each Standard Webhooks `webhook-id` (`code2des_webhook_delivery`, V9).
//!
//! Idempotent delivery costs no round trip where it can: an accepted report records its answer
//! in the statement that applies it (a data-modifying CTE), and the read that explains a refusal
//! also reads the answer already given to the id. Only a refusal's own answer is one more
//! statement ([`record_delivery`]).

use std::time::Duration;

use tokio_postgres::types::Type;
use tokio_postgres::GenericClient;

use crate::db::error::DbError;
use crate::db::sql::{col, job, job_columns, overdue, Binds};
use crate::domain::ids::{Code2desId, ProgressStage};
use crate::domain::job::StatusLabel;
use crate::domain::job::{Job, Status};

/// A worker's terminal report, validated.
#[derive(Debug)]
pub struct Outcome<'a> {
    pub status: Status,
    pub result_url: Option<&'a str>,
    pub warning_count: Option<i32>,
    pub error_message: Option<&'a str>,
}

/// A Standard Webhooks delivery to remember: its `webhook-id` and the 200 body it is answered
/// with if the statement applies it.
#[derive(Debug, Clone, Copy)]
pub struct DeliveryRef<'a> {
    pub webhook_id: &'a str,
    pub ack: &'a str,
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
    "LEFT JOIN code2des_attempt a ON a.code2des_id = x.id WHERE x.id = $1), ",
    "up AS (UPDATE code2des AS c SET status = $4::code2des_status, result_url = $5, warning_count = $6, ",
    "error_message = $7, updated_at = now(), updated_by = ",
    crate::db::sql::actor_worker!(),
    " FROM t ",
    "WHERE c.id = t.id AND c.attempt = $2 AND c.nonce = $3 AND c.status = ",
    crate::db::sql::status_processing!(),
    " AND c.deleted_at IS NULL ",
    "AND NOT code2des_overdue(c.status, c.attempt, c.created_at, t.attempt, t.started_at, $8) ",
    "RETURNING c.id, (extract(epoch FROM now() - COALESCE(CASE WHEN t.attempt = c.attempt THEN t.started_at END, ",
    "c.created_at)) * 1000)::float8 AS duration_ms), ",
    // The answer to this webhook-id, in the same statement: no round trip of its own.
    "d AS (INSERT INTO code2des_webhook_delivery (webhook_id, code2des_id, status, body) ",
    "SELECT $9, up.id, 200, $10 FROM up WHERE $9::varchar IS NOT NULL ON CONFLICT (webhook_id) DO NOTHING) ",
    "SELECT duration_ms FROM up"
);

/// THE fenced transition: id, attempt, nonce, still processing, not deleted, within the
/// deadline. Exactly one of any set of racing callers gets `Some` (the attempt's duration).
pub async fn record_outcome(
    client: &impl GenericClient,
    at: AttemptRef<'_>,
    outcome: &Outcome<'_>,
    deadline: Duration,
) -> Result<Option<Duration>, DbError> {
    record_outcome_for(client, at, outcome, deadline, None).await
}

/// [`record_outcome`] for a Standard Webhooks delivery: the winner's answer is stored for its
/// webhook-id in the same statement.
pub async fn record_outcome_for(
    client: &impl GenericClient,
    at: AttemptRef<'_>,
    outcome: &Outcome<'_>,
    deadline: Duration,
    delivery: Option<DeliveryRef<'_>>,
) -> Result<Option<Duration>, DbError> {
    let status = outcome.status.db_label();
    let (webhook_id, ack) = (delivery.map(|d| d.webhook_id), delivery.map(|d| d.ack));
    let rows = Binds::none()
        .and(&at.id, Type::VARCHAR)
        .and(&at.attempt, Type::INT4)
        .and(&at.nonce, Type::VARCHAR)
        .and(&status, Type::TEXT)
        .and(&outcome.result_url, Type::VARCHAR)
        .and(&outcome.warning_count, Type::INT4)
        .and(&outcome.error_message, Type::TEXT)
        .and(&deadline.as_secs_f64(), Type::FLOAT8)
        .and(&webhook_id, Type::VARCHAR)
        .and(&ack, Type::TEXT)
        .query(client, RECORD_OUTCOME)
        .await?;
    match rows.first() {
        Some(r) => Ok(Some(Duration::from_secs_f64(col::<f64>(r, "duration_ms")?.max(0.0) / 1000.0))),
        None => Ok(None),
    }
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
    "WHERE c.id = $1 AND c.attempt = $2 AND c.nonce = $3 AND c.status = ", crate::db::sql::status_processing!(), " AND c.deleted_at IS NULL AND NOT ",
    overdue!("$6"),
    " FOR SHARE OF c), ",
    "up AS (INSERT INTO code2des_attempt AS a (code2des_id, attempt, started_at, progress_percent, ",
    "progress_stage, progress_updated_at) SELECT j.id, j.attempt, j.created_at, $4, $5, now() FROM j ",
    "ON CONFLICT (code2des_id) DO UPDATE SET progress_percent = EXCLUDED.progress_percent, ",
    "progress_stage = EXCLUDED.progress_stage, progress_updated_at = EXCLUDED.progress_updated_at ",
    "WHERE a.attempt = EXCLUDED.attempt AND (a.progress_percent IS NULL OR a.progress_percent <= EXCLUDED.progress_percent) ",
    "RETURNING 1), ",
    // A report the fence lets through is answered 200 whether or not its percent was stored.
    "d AS (INSERT INTO code2des_webhook_delivery (webhook_id, code2des_id, status, body) ",
    "SELECT $7, j.id, 200, $8 FROM j WHERE $7::varchar IS NOT NULL ON CONFLICT (webhook_id) DO NOTHING) ",
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
) -> Result<Progressed, DbError> {
    progress_for(client, at, percent, stage, deadline, None).await
}

/// [`progress`] for a Standard Webhooks delivery: the 200 answer is stored for its webhook-id in
/// the same statement when the fence lets the report through.
pub async fn progress_for(
    client: &impl GenericClient,
    at: AttemptRef<'_>,
    percent: i16,
    stage: &ProgressStage,
    deadline: Duration,
    delivery: Option<DeliveryRef<'_>>,
) -> Result<Progressed, DbError> {
    let (webhook_id, ack) = (delivery.map(|d| d.webhook_id), delivery.map(|d| d.ack));
    let rows = Binds::none()
        .and(&at.id, Type::VARCHAR)
        .and(&at.attempt, Type::INT4)
        .and(&at.nonce, Type::VARCHAR)
        .and(&percent, Type::INT2)
        .and(&stage.as_str(), Type::VARCHAR)
        .and(&deadline.as_secs_f64(), Type::FLOAT8)
        .and(&webhook_id, Type::VARCHAR)
        .and(&ack, Type::TEXT)
        .query(client, PROGRESS)
        .await?;
    let (matched, stored): (i64, i64) = match rows.first() {
        Some(r) => (col(r, "matched")?, col(r, "stored")?),
        None => (0, 0),
    };
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
    /// What this webhook-id was answered before, if it was: `(status, body)`.
    pub delivered: Option<(u16, String)>,
}

const FENCE: &str = concat!(
    "SELECT ",
    job_columns!("c"),
    ", a.cancelled_at, c.deleted_at IS NOT NULL AS deleted, ",
    overdue!("$2"),
    " AS overdue, d.status AS delivered_status, d.body AS delivered_body ",
    "FROM code2des c LEFT JOIN code2des_attempt a ON a.code2des_id = c.id ",
    "LEFT JOIN code2des_webhook_delivery d ON d.webhook_id = $3 AND d.code2des_id = c.id WHERE c.id = $1"
);

/// The row as committed now (a new statement, so a new snapshot that includes the winner).
pub async fn fence(client: &impl GenericClient, id: Code2desId, deadline: Duration) -> Result<Option<Fence>, DbError> {
    fence_for(client, id, deadline, None).await
}

/// [`fence`], and the answer given before to `webhook_id`, if any.
pub async fn fence_for(
    client: &impl GenericClient,
    id: Code2desId,
    deadline: Duration,
    webhook_id: Option<&str>,
) -> Result<Option<Fence>, DbError> {
    let rows = Binds::none()
        .and(&id, Type::VARCHAR)
        .and(&deadline.as_secs_f64(), Type::FLOAT8)
        .and(&webhook_id, Type::VARCHAR)
        .query(client, FENCE)
        .await?;
    match rows.first() {
        Some(row) => {
            let status: Option<i16> = col(row, "delivered_status")?;
            let body: Option<String> = col(row, "delivered_body")?;
            Ok(Some(Fence {
                job: job(row)?,
                deleted: col(row, "deleted")?,
                overdue: col(row, "overdue")?,
                delivered: match status.zip(body) {
                    Some((s, b)) => Some((stored_status(s)?, b)),
                    None => None,
                },
            }))
        }
        None => Ok(None),
    }
}

/// A stored answer's status, as the table's CHECK allows it (200–499); anything else is a bug,
/// never an answer of 200.
fn stored_status(status: i16) -> Result<u16, DbError> {
    match u16::try_from(status) {
        Ok(s @ 200..=499) => Ok(s),
        _ => Err(DbError::bug("a stored webhook answer", format!("status {status}"))),
    }
}

const RECORD_DELIVERY: &str = concat!(
    "WITH ins AS (INSERT INTO code2des_webhook_delivery (webhook_id, code2des_id, status, body) ",
    "SELECT $1, c.id, $3, $4 FROM code2des c WHERE c.id = $2 ON CONFLICT (webhook_id) DO NOTHING ",
    "RETURNING status, body) ",
    "SELECT status, body FROM ins UNION ALL ",
    "SELECT status, body FROM code2des_webhook_delivery WHERE webhook_id = $1 AND code2des_id = $2 ",
    "AND NOT EXISTS (SELECT 1 FROM ins)"
);

const DELIVERED: &str = "SELECT status, body FROM code2des_webhook_delivery WHERE webhook_id = $1 AND code2des_id = $2";

/// Stores `(status, body)` as the answer to `webhook_id` unless one is stored already, and
/// returns the answer that stands: ours, or the one a concurrent delivery of the same id stored
/// first. One statement; a second only when the first could not see the winner (it committed
/// after the statement's snapshot was taken).
pub async fn record_delivery(
    client: &impl GenericClient,
    webhook_id: &str,
    code2des_id: Code2desId,
    status: u16,
    body: &str,
) -> Result<(u16, String), DbError> {
    let status_i16 = status as i16;
    let rows = Binds::none()
        .and(&webhook_id, Type::VARCHAR)
        .and(&code2des_id, Type::VARCHAR)
        .and(&status_i16, Type::INT2)
        .and(&body, Type::TEXT)
        .query(client, RECORD_DELIVERY)
        .await?;
    let rows = match rows.is_empty() {
        false => rows,
        true => {
            Binds::none()
                .and(&webhook_id, Type::VARCHAR)
                .and(&code2des_id, Type::VARCHAR)
                .query(client, DELIVERED)
                .await?
        }
    };
    Ok(match rows.first() {
        Some(r) => (stored_status(col(r, "status")?)?, col(r, "body")?),
        // The job (and with it the answer) was purged meanwhile: ours is the answer.
        None => (status, body.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::sql::placeholders;

    #[test]
    fn statements_use_the_placeholders_they_bind() {
        for (sql, n) in [(RECORD_OUTCOME, 10), (PROGRESS, 8), (FENCE, 3), (RECORD_DELIVERY, 4), (DELIVERED, 2)] {
            assert_eq!(placeholders(sql), (1..=n).collect(), "{sql}");
        }
    }
}
