//! Placement's statement (SPEC section 3): the first root of a completed job, kept forever.

use std::time::Duration;

use tokio_postgres::types::Type;
use tokio_postgres::GenericClient;

use crate::db::error::DbError;
use crate::db::sql::{job, read_columns, the_job, visible, Binds};
use crate::domain::ids::NodeId;
use crate::domain::job::{Job, Status};
use crate::domain::scope::JobRef;

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
    read_columns!("$5"),
    " FROM code2des c LEFT JOIN code2des_attempt a ON a.code2des_id = c.id ",
    "WHERE ",
    the_job!(),
    " AND c.deleted_at IS NULL AND ",
    visible!("$4"),
    " FOR NO KEY UPDATE OF c), ",
    // The conditions are the locked row's (`t`), not `c`'s: the UPDATE scans the statement's
    // snapshot, which may predate a completion committed while `target` waited for the row; a
    // `c.status` test there would see the job processing and place nothing. `t` is the newest
    // version, and the lock held since then means nothing changed it meanwhile.
    "placed AS (UPDATE code2des AS c SET materialized_at = now(), materialized_node_id = $6, ",
    "updated_at = now(), updated_by = $4 FROM target t ",
    "WHERE c.id = t.id AND t.status = ",
    crate::db::sql::status_completed!(),
    " AND t.materialized_node_id IS NULL ",
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
    target: &JobRef,
    node_id: &NodeId,
    deadline: Duration,
) -> Result<Placed, DbError> {
    let rows = Binds::job(&target.id, &target.scope)
        .deadline(deadline)
        .and(&node_id.as_str(), Type::VARCHAR)
        .query(client, PLACE)
        .await?;
    let Some(row) = rows.first() else {
        return Ok(Placed::NotFound);
    };
    let j = job(row)?;
    Ok(if j.status == Status::Completed { Placed::Done(j) } else { Placed::NotCompleted(j) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::sql::placeholders;

    #[test]
    fn the_statement_uses_the_placeholders_it_binds() {
        assert_eq!(placeholders(PLACE), (1..=6).collect());
    }
}
