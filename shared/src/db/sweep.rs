//! The sweep's statement (SPEC sections 4 and 7): persisting the deadline that every read
//! already shows.

use std::time::Duration;

use tokio_postgres::types::Type;
use tokio_postgres::GenericClient;

use crate::db::sql::{overdue, Binds};
use crate::domain::ids::Code2desId;
use crate::error::ApiError;

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
    let rows = Binds::none()
        .deadline(deadline)
        .and(&only, Type::VARCHAR)
        .and(&limit, Type::INT8)
        .query(client, EXPIRE)
        .await?;
    Ok(rows.iter().map(|r| Duration::from_secs_f64(r.get::<_, f64>("duration_ms").max(0.0) / 1000.0)).collect())
}

/// Applies the deadline to one job; true if this call failed it.
pub async fn expire_one(client: &impl GenericClient, id: Code2desId, deadline: Duration) -> Result<bool, ApiError> {
    Ok(!expire_overdue(client, Some(id), deadline, 1).await?.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::sql::placeholders;

    #[test]
    fn the_statement_uses_the_placeholders_it_binds() {
        assert_eq!(placeholders(EXPIRE), (1..=3).collect());
    }
}
