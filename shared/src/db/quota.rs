//! The quota check (`crate::domain::quota`) inside trigger's and retry's statements, and the
//! organization's lock that makes its count exact. Under READ COMMITTED two racing triggers
//! would count the same snapshot and both take the last slot, and a lock taken inside the
//! counting statement would not move its snapshot; so `pg_advisory_xact_lock` is taken in the
//! statement before (pipelined, the same round trip), and the count starts after the previous
//! holder committed. Only what adds processing jobs takes it. `burst` needs no lock: its
//! `INSERT … ON CONFLICT DO UPDATE` serialises on the subject's row, and a call that created no
//! attempt rolls its count back. Locks are taken in one order (organization, job, subject's
//! row), so these transactions never wait in a cycle.

use tokio_postgres::types::Type;
use tokio_postgres::{GenericClient, Row};

use crate::db::error::DbError;
use crate::db::sql::{col, Binds};
use crate::domain::ids::OrganizationId;
use crate::domain::quota::{QuotaState, BURST_WINDOW};

/// The first key of the organization's advisory lock: this module's class of lock, so that no
/// other use of two-key advisory locks can collide with it ("C2DQ"). The migrate function's
/// lock is a one-key lock, a key space of its own.
pub const ORGANIZATION_LOCK_CLASS: i32 = 0x4332_4451;

const LOCK_ORGANIZATION: &str = "SELECT 1 FROM pg_advisory_xact_lock($1, $2)";

/// Takes the organization's quota lock until the transaction ends. Sent in the same flight as
/// BEGIN and the statement that follows it (`crate::app::dispatch::transaction`).
pub async fn lock_organization(client: &impl GenericClient, organization: &OrganizationId) -> Result<(), DbError> {
    Binds::none()
        .and(&ORGANIZATION_LOCK_CLASS, Type::INT4)
        .and(organization, Type::INT4)
        .query(client, LOCK_ORGANIZATION)
        .await?;
    Ok(())
}

/// CTEs `limits` (the organization's quotas: its `code2des_quota` row over the defaults `$max`
/// and `$per`) and `active` (its processing jobs as every reader sees them: stored processing,
/// not deleted, not past the deadline `$d`; each weighing its viewports, 1 when it named none
/// (issue 40 item 3: each is a conversion's worth of work); read up to the limit's count of
/// jobs, which is all the check needs, as each weighs at least 1, so a count never reads more
/// than the limit's worth of running jobs and the few overdue ones the sweep has not reached).
/// `attempt > 0` (always true) is what lets the count, and only the count, use
/// `code2des_org_processing_idx` (migrations/online/N8).
macro_rules! quota_ctes {
    ($org:literal, $max:literal, $per:literal, $d:literal) => {
        concat!(
            "limits AS (SELECT COALESCE(q.max_active_jobs, ",
            $max,
            ") AS max_active, COALESCE(q.triggers_per_minute, ",
            $per,
            ") AS per_window FROM (VALUES (1)) v LEFT JOIN code2des_quota q ON q.organization_id = ",
            $org,
            "), active AS (SELECT COALESCE(sum(x.w), 0)::int8 AS n FROM (SELECT ",
            "COALESCE(cardinality(a.viewports), 1) AS w FROM code2des c ",
            $crate::db::sql::attempt_of_each!(),
            " WHERE c.organization_id = ",
            $org,
            " AND c.status = ",
            $crate::db::sql::status_processing!(),
            " AND c.deleted_at IS NULL AND c.attempt > 0 AND NOT ",
            $crate::db::sql::overdue!($d),
            " LIMIT (SELECT max_active FROM limits)) x)"
        )
    };
}

/// CTEs `burst` (the subject `$sub`'s window in the organization `$org`, counted: the call's
/// weight more in the running window, or a new window of `$w` seconds when it ended; for each row of
/// `$from`, a FROM clause that yields one row exactly when the call would create an attempt)
/// and `win` (that window as counted, or as stored when nothing was counted; `tried` tells
/// which). A caller has one window per organization (V11).
macro_rules! burst_ctes {
    // `$from` may be several `concat!` arguments (a label macro among literals).
    ($org:literal, $sub:literal, $w:literal, $($from:tt)+) => {
        concat!(
            "burst AS (INSERT INTO code2des_org_trigger_window AS w (organization_id, subject, window_start, hits) ",
            "SELECT ",
            $org,
            ", ",
            $sub,
            ", now(), ",
            $crate::db::quota::burst_weight!(),
            " ",
            $($from)+,
            " ON CONFLICT ON CONSTRAINT code2des_org_trigger_window_pkey DO UPDATE SET ",
            "window_start = CASE WHEN w.window_start > now() - make_interval(secs => ",
            $w,
            ") THEN w.window_start ELSE now() END, ",
            "hits = CASE WHEN w.window_start > now() - make_interval(secs => ",
            $w,
            ") THEN w.hits + EXCLUDED.hits ELSE EXCLUDED.hits END RETURNING w.hits, w.window_start), ",
            "win AS (SELECT b.hits, b.window_start, true AS tried FROM burst b UNION ALL ",
            "SELECT w.hits, w.window_start, false FROM code2des_org_trigger_window w WHERE w.organization_id = ",
            $org,
            " AND w.subject = ",
            $sub,
            " AND w.window_start > now() - make_interval(secs => ",
            $w,
            ") AND NOT EXISTS (SELECT 1 FROM burst))"
        )
    };
}

/// A call's weight against each limit (needs `weight`, a CTE of one row whose `k` is the job's
/// viewports, 1 when it named none): `k`, but never more than the limit itself, so that a job
/// larger than an organization's whole quota still runs, alone.
macro_rules! active_weight {
    () => {
        "LEAST((SELECT k FROM weight), (SELECT max_active FROM limits))"
    };
}
macro_rules! burst_weight {
    () => {
        "LEAST((SELECT k FROM weight), (SELECT per_window FROM limits))"
    };
}

/// Both limits let the call through (needs `limits`, `active`, `burst`, `weight`).
macro_rules! quota_ok {
    () => {
        concat!(
            "(SELECT n FROM active) + ",
            $crate::db::quota::active_weight!(),
            " <= (SELECT max_active FROM limits) ",
            "AND EXISTS (SELECT 1 FROM burst, limits WHERE burst.hits <= limits.per_window)"
        )
    };
}

/// The columns [`state`] reads; `$checked` is true when the call would have created an attempt
/// but for the quotas (the limits were put to it).
macro_rules! quota_columns {
    ($w:literal, $($checked:tt)+) => {
        concat!(
            "(SELECT max_active FROM limits) AS quota_max_active, (SELECT n FROM active) AS quota_active, ",
            "(SELECT per_window FROM limits) AS quota_per_window, (SELECT hits FROM win) AS quota_window_hits, ",
            "(SELECT tried FROM win) AS quota_window_tried, (SELECT ceil(extract(epoch FROM ",
            "window_start + make_interval(secs => ",
            $w,
            ") - now()))::int4 FROM win) AS quota_window_resets_in, ",
            $($checked)+,
            " AS quota_checked, ",
            $crate::db::quota::active_weight!(),
            " AS quota_active_weight, ",
            $crate::db::quota::burst_weight!(),
            " AS quota_burst_weight"
        )
    };
}

pub(crate) use {active_weight, burst_ctes, burst_weight, quota_columns, quota_ctes, quota_ok};

/// The quotas as the statement saw them; `created` when it created the attempt (whose job then
/// counts among the active ones, and whose call among the window's).
pub(crate) fn state(row: &Row, created: bool) -> Result<QuotaState, DbError> {
    let max_active: i32 = col(row, "quota_max_active")?;
    let before: i64 = col(row, "quota_active")?;
    let per_window: i32 = col(row, "quota_per_window")?;
    let hits = i64::from(col::<Option<i32>>(row, "quota_window_hits")?.unwrap_or(0));
    let tried = col::<Option<bool>>(row, "quota_window_tried")?.unwrap_or(false);
    let resets_in: Option<i32> = col(row, "quota_window_resets_in")?;
    let checked = col::<Option<bool>>(row, "quota_checked")?.unwrap_or(false) && !created;
    let active_weight = i64::from(col::<i32>(row, "quota_active_weight")?);
    let burst_weight = i64::from(col::<i32>(row, "quota_burst_weight")?);
    let window = BURST_WINDOW.as_secs() as i32;
    Ok(QuotaState {
        max_active,
        active: before + if created { active_weight } else { 0 },
        per_window,
        // A counted call that created nothing is rolled back: it is not in the window.
        window_used: if tried && !created { hits - burst_weight } else { hits },
        window_resets_in: resets_in.map(|s| s.clamp(1, window) as u32),
        refused_active: checked && before + active_weight > i64::from(max_active),
        refused_burst: checked && tried && hits > i64::from(per_window),
    })
}
