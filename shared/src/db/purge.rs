//! Retention's statements (SPEC section 9): jobs soft-deleted `PURGE_AFTER_DAYS` ago leave the
//! database (with their attempt, idempotency and delivery rows), and idempotency keys and
//! recorded webhook answers past their time to live leave it too, and so do trigger windows that
//! ended. Each call is one short statement over at most a batch, on an index that
//! leads to exactly those rows (migration V7's online indexes).

use std::time::Duration;

use tokio_postgres::types::Type;
use tokio_postgres::GenericClient;

use crate::db::error::DbError;
use crate::db::sql::{col, Binds};
use crate::domain::ids::Code2desId;

/// Jobs deleted more than `$1` days ago, the longest-deleted first, at most `$2`.
const DUE: &str = "SELECT id FROM code2des WHERE deleted_at < now() - make_interval(days => $1) \
     ORDER BY deleted_at LIMIT $2";

/// Deletes those of `$1` that are still due (migration V7: the application role deletes jobs
/// only through this function, which re-checks the rule).
const PURGE: &str = "SELECT code2des_purge_jobs($1, $2)";

/// Idempotency keys older than `$1` seconds, at most `$2` of them.
const EXPIRE_KEYS: &str = "DELETE FROM code2des_idempotency k USING (SELECT subject, organization_id, project_id, \
     idempotency_key FROM code2des_idempotency WHERE created_at < now() - make_interval(secs => $1) \
     ORDER BY created_at LIMIT $2) old WHERE k.subject = old.subject AND k.organization_id = old.organization_id \
     AND k.project_id = old.project_id AND k.idempotency_key = old.idempotency_key RETURNING 1";

/// Recorded webhook answers (migration V9) older than `$1` seconds, at most `$2` of them.
const EXPIRE_DELIVERIES: &str = "DELETE FROM code2des_webhook_delivery d USING (SELECT webhook_id FROM \
     code2des_webhook_delivery WHERE created_at < now() - make_interval(secs => $1) ORDER BY created_at LIMIT $2) old \
     WHERE d.webhook_id = old.webhook_id RETURNING 1";

/// Trigger windows (migration V11) that ended `$1` seconds ago or more, at most `$2` of them,
/// through V12's function (the application role has no DELETE on the table).
const PRUNE_WINDOWS: &str = "SELECT code2des_prune_trigger_windows($1, $2)";

/// The jobs due for the purge, at most `limit`.
pub async fn due(client: &impl GenericClient, after_days: i32, limit: i64) -> Result<Vec<Code2desId>, DbError> {
    let rows = Binds::none().and(&after_days, Type::INT4).and(&limit, Type::INT8).query(client, DUE).await?;
    rows.iter()
        .map(|r| {
            let id: &str = col(r, 0)?;
            Code2desId::from_db(id).ok_or_else(|| DbError::bug("a job due for the purge", format!("id {id:?}")))
        })
        .collect()
}

/// Deletes `ids` that are still due; answers how many it deleted.
pub async fn purge(client: &impl GenericClient, ids: &[Code2desId], after_days: i32) -> Result<i64, DbError> {
    let ids: Vec<String> = ids.iter().map(|id| id.to_db()).collect();
    let rows = Binds::none().and(&ids, Type::VARCHAR_ARRAY).and(&after_days, Type::INT4).query(client, PURGE).await?;
    Ok(match rows.first() {
        Some(r) => i64::from(col::<i32>(r, 0)?),
        None => 0,
    })
}

/// Deletes at most `limit` idempotency keys older than `ttl`; answers how many.
pub async fn expire_keys(client: &impl GenericClient, ttl: Duration, limit: i64) -> Result<i64, DbError> {
    let rows =
        Binds::none().and(&ttl.as_secs_f64(), Type::FLOAT8).and(&limit, Type::INT8).query(client, EXPIRE_KEYS).await?;
    Ok(rows.len() as i64)
}

/// Deletes at most `limit` recorded webhook answers older than `ttl`; answers how many.
pub async fn expire_deliveries(client: &impl GenericClient, ttl: Duration, limit: i64) -> Result<i64, DbError> {
    let rows = Binds::none()
        .and(&ttl.as_secs_f64(), Type::FLOAT8)
        .and(&limit, Type::INT8)
        .query(client, EXPIRE_DELIVERIES)
        .await?;
    Ok(rows.len() as i64)
}

/// Deletes at most `limit` trigger windows that ended `window` ago or more; answers how many.
pub async fn prune_windows(client: &impl GenericClient, window: Duration, limit: i64) -> Result<i64, DbError> {
    let limit = i32::try_from(limit).map_err(|_| DbError::bug("a prune batch", format!("{limit} rows")))?;
    let rows = Binds::none()
        .and(&window.as_secs_f64(), Type::FLOAT8)
        .and(&limit, Type::INT4)
        .query(client, PRUNE_WINDOWS)
        .await?;
    Ok(match rows.first() {
        Some(r) => i64::from(col::<i32>(r, 0)?),
        None => 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::sql::placeholders;

    #[test]
    fn statements_use_the_placeholders_they_bind() {
        for sql in [DUE, PURGE, EXPIRE_KEYS, EXPIRE_DELIVERIES, PRUNE_WINDOWS] {
            assert_eq!(placeholders(sql), (1..=2).collect(), "{sql}");
        }
    }
}
