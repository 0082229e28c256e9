//! The sweep's statement (SPEC sections 4 and 7): persisting the deadline that every read
//! already shows.

use std::time::Duration;

use tokio_postgres::types::Type;
use tokio_postgres::GenericClient;

use crate::db::error::DbError;
use crate::db::sql::{attempt_of_each, col, overdue, Binds};
use crate::domain::ids::Code2desId;

/// The jobs `EXPIRE_*` fail: those of `$ids` (an array of job ids) that are processing, not
/// deleted and past the deadline `$1` seconds; `s` is the attempt each was found on, `started`
/// when it started. Every row is reached by its primary key, so a statement reads what it
/// expires and nothing else. `c.attempt = s.attempt`: should a retry restart a job between this
/// statement's snapshot and its row lock, the re-check sees another attempt and leaves it.
macro_rules! expire {
    ($ids:expr) => {
        concat!(
            "WITH due AS (SELECT ",
            $ids,
            " AS ids) UPDATE code2des AS c SET status = ",
            $crate::db::sql::status_failed!(),
            ", error_message = ",
            $crate::db::sql::message_timed_out!(),
            ", ",
            "updated_at = s.started + make_interval(secs => $1), updated_by = ",
            $crate::db::sql::actor_deadline!(),
            " ",
            "FROM (SELECT c.id, c.attempt, COALESCE(a.started_at, c.created_at) AS started FROM code2des c ",
            $crate::db::sql::attempt_of_each!(),
            " WHERE c.id = ANY ((SELECT ids FROM due)::varchar[]) ",
            "AND c.status = ",
            $crate::db::sql::status_processing!(),
            " AND c.deleted_at IS NULL AND ",
            overdue!("$1"),
            ") s WHERE c.id = ANY ((SELECT ids FROM due)::varchar[]) AND c.id = s.id AND c.attempt = s.attempt ",
            "AND c.status = ",
            $crate::db::sql::status_processing!(),
            " AND c.deleted_at IS NULL ",
            "RETURNING c.id, (extract(epoch FROM now() - s.started) * 1000)::float8 AS duration_ms"
        )
    };
}

/// The sweep's batch: the oldest `$2` overdue jobs. An attempt never starts before its job was
/// created, so every overdue job was created before now() - deadline: that bound is a range of
/// `code2des_processing_idx` (processing jobs by age), so a run reads the overdue jobs and the
/// few still processing a later attempt, never the table.
const EXPIRE_BATCH: &str = expire!(concat!(
    "ARRAY(SELECT c.id FROM code2des c ",
    attempt_of_each!(),
    " WHERE c.status = ",
    crate::db::sql::status_processing!(),
    " AND c.deleted_at IS NULL AND c.created_at < now() - make_interval(secs => $1) AND ",
    overdue!("$1"),
    " ORDER BY c.created_at LIMIT $2)"
));

/// One job, by its id `$2` (the webhook and retry persist the deadline of the job they touch).
const EXPIRE_ONE: &str = expire!("ARRAY[$2::varchar]");

fn durations(rows: &[tokio_postgres::Row]) -> Result<Vec<Duration>, DbError> {
    rows.iter().map(|r| Ok(Duration::from_secs_f64(col::<f64>(r, "duration_ms")?.max(0.0) / 1000.0))).collect()
}

/// Persists the deadline: processing jobs past it become failed `timed out`, with the fence of
/// the webhook (processing, not deleted, same attempt), so exactly one of this and a racing
/// webhook wins. At most `limit` jobs per call (one short transaction); returns each expired
/// job's attempt duration. Fewer than `limit` means none is left.
pub async fn expire_overdue(
    client: &impl GenericClient,
    deadline: Duration,
    limit: i64,
) -> Result<Vec<Duration>, DbError> {
    let rows = Binds::none().deadline(deadline).and(&limit, Type::INT8).query(client, EXPIRE_BATCH).await?;
    durations(&rows)
}

/// Applies the deadline to one job; true if this call failed it.
pub async fn expire_one(client: &impl GenericClient, id: Code2desId, deadline: Duration) -> Result<bool, DbError> {
    let rows = Binds::none().deadline(deadline).and(&id, Type::VARCHAR).query(client, EXPIRE_ONE).await?;
    Ok(!rows.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::sql::placeholders;

    #[test]
    fn statements_use_the_placeholders_they_bind() {
        assert_eq!(placeholders(EXPIRE_BATCH), (1..=2).collect());
        assert_eq!(placeholders(EXPIRE_ONE), (1..=2).collect());
    }
}
