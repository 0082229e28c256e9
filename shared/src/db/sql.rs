//! What every statement shares: the SQL fragments that spell the rules (who may see a job,
//! when a job is overdue, what a reader sees), and [`Binds`], the ONE place where the leading
//! parameters of a scoped statement are bound.
//!
//! Statements go through `query_typed`: parse, bind and execute travel in one round trip, and
//! no named prepared statement is left on the connection, so RDS Proxy never pins a session.
//! Fence conditions (scope, membership, status, attempt, nonce, deadline) live in the WHERE
//! clauses, so a statement cannot succeed on a row it must not touch, whatever ran concurrently.

use std::time::Duration;

use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{GenericClient, Row};

use crate::db::connect::timed_on;
use crate::db::error::DbError;
use crate::domain::ids::Code2desId;
use crate::domain::scope::Scope;

/// The column list every job query returns, in the names [`crate::db::columns::from_row`] reads.
/// `status` comes back as its label text so no enum OID lookup is needed.
macro_rules! job_columns {
    ($c:literal) => {
        concat!(
            $c,
            ".id, ",
            $c,
            ".organization_id, ",
            $c,
            ".project_id, ",
            $c,
            ".page_import_id, ",
            $c,
            ".figma_file_key, ",
            $c,
            ".screen_id, ",
            $c,
            ".placement_target, ",
            $c,
            ".status::text AS status, ",
            $c,
            ".attempt, ",
            $c,
            ".nonce, ",
            $c,
            ".result_url, ",
            $c,
            ".warning_count, ",
            $c,
            ".error_message, ",
            $c,
            ".materialized_at, ",
            $c,
            ".materialized_node_id, ",
            $c,
            ".created_at, ",
            $c,
            ".updated_at, ",
            $c,
            ".created_by, ",
            $c,
            ".updated_by"
        )
    };
}

pub(crate) use job_columns;

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

/// Job `c` (joined with its attempt row `a`) is processing past the deadline `$d` seconds: THE
/// rule, `code2des_overdue` (migration V7), which every read, write and the sweep call, and which
/// PostgreSQL inlines into each plan.
macro_rules! overdue {
    ($d:literal) => {
        concat!("code2des_overdue(c.status, c.attempt, c.created_at, a.attempt, a.started_at, ", $d, ")")
    };
}

/// The attempt row `a` (its `attempt` and `started_at`, what [`overdue!`] needs) of each job `c`
/// of a statement that reads MANY jobs (the quota's count, the sweep): one probe of
/// `code2des_attempt_pkey` per job. A plain `LEFT JOIN` lets the planner hash the whole attempt
/// table whenever it expects a few hundred jobs, and on a year of data it did so for the count
/// of a busy organization (149 620 rows read for 15 jobs; local/tests/api/scale.rs). `LIMIT 1`
/// (there is at most one row per job: the key) keeps the subquery from being pulled up into
/// such a join. A statement about one job keeps its plain join: its outer side is one row.
macro_rules! attempt_of_each {
    () => {
        concat!(
            "LEFT JOIN LATERAL (SELECT a.attempt, a.started_at, a.viewports FROM code2des_attempt a ",
            "WHERE a.code2des_id = c.id LIMIT 1) a ON true"
        )
    };
}

/// Everything [`crate::db::columns::decode`] reads, as a reader must see it: a job past its deadline is failed
/// `timed out`, updated by the deadline at the moment it passed (what the sweep then persists,
/// so the JSON is the same before and after). Needs `c` and `LEFT JOIN code2des_attempt a`.
macro_rules! read_columns {
    ($d:literal) => {
        concat!(
            "c.id, c.organization_id, c.project_id, c.page_import_id, c.figma_file_key, c.screen_id, ",
            "c.placement_target, CASE WHEN ",
            $crate::db::sql::overdue!($d),
            " THEN ",
            $crate::db::sql::status_failed!(),
            " ELSE c.status::text END AS status, c.attempt, c.nonce, c.result_url, c.warning_count, ",
            "CASE WHEN ",
            $crate::db::sql::overdue!($d),
            " THEN ",
            $crate::db::sql::message_timed_out!(),
            " ELSE c.error_message END AS error_message, ",
            "c.materialized_at, c.materialized_node_id, c.created_at, ",
            "CASE WHEN ",
            $crate::db::sql::overdue!($d),
            " THEN COALESCE(a.started_at, c.created_at) + make_interval(secs => ",
            $d,
            ") ELSE c.updated_at END AS updated_at, c.created_by, ",
            "CASE WHEN ",
            $crate::db::sql::overdue!($d),
            " THEN ",
            $crate::db::sql::actor_deadline!(),
            " ELSE c.updated_by END AS updated_by, ",
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

/// Job `c` is the caller's job `$1` in organization `$2` and project `$3`. The organization and
/// the project are compared with IS NOT DISTINCT FROM (the same as `=` for these NOT NULL
/// columns) so that the primary key is the statement's only indexable condition: with `=`, the
/// planner multiplies the two selectivities as if a project could belong to any organization,
/// estimates an ordinary project at one row, and reads the whole project through an
/// (organization, project, …) index, filtering it by id (local/tests/api/scale.rs measures it;
/// migration V10 does the same for the GET's read).
macro_rules! the_job {
    () => {
        "c.id = $1 AND c.organization_id IS NOT DISTINCT FROM $2 AND c.project_id IS NOT DISTINCT FROM $3"
    };
}

pub(crate) use {attempt_of_each, fresh_attempt, overdue, read_columns, the_job, visible};

// The labels the statements compare and write, each named once, as the SQL literal `concat!`
// takes (a `const &str` cannot go into `concat!`; a macro that expands to a literal can). The
// test `labels_are_the_rust_values` holds each to the Rust value it stands for, so a label
// cannot mean one thing in SQL and another in Rust.
macro_rules! status_processing {
    () => {
        "'0'"
    };
}
macro_rules! status_completed {
    () => {
        "'1'"
    };
}
macro_rules! status_failed {
    () => {
        "'2'"
    };
}
/// `page_import.status` of a completed capture, the one a trigger accepts.
macro_rules! page_import_completed {
    () => {
        "'1'"
    };
}
macro_rules! actor_deadline {
    () => {
        "'system:deadline'"
    };
}
macro_rules! actor_worker {
    () => {
        "'system:worker'"
    };
}
macro_rules! actor_trigger {
    () => {
        "'system:trigger'"
    };
}
macro_rules! message_timed_out {
    () => {
        "'timed out'"
    };
}
macro_rules! message_cancelled {
    () => {
        "'cancelled'"
    };
}
pub(crate) use {
    actor_deadline, actor_trigger, actor_worker, message_cancelled, message_timed_out, page_import_completed,
    status_completed, status_failed, status_processing,
};

/// The leading parameters of a statement, bound in one fixed order, then its own:
///
/// | statement about | `$1` | `$2` | `$3` | `$4` | `$5` | then |
/// |---|---|---|---|---|---|---|
/// | one job of the caller ([`Binds::job`]) | job id | organization | project | caller | deadline (s) | [`Binds::and`] |
/// | the caller's project ([`Binds::scope`]) | organization | project | caller | deadline (s) | | [`Binds::and`] |
/// | anything else ([`Binds::none`]) | [`Binds::and`] | | | | | |
///
/// The deadline is bound only with [`Binds::deadline`], as seconds (`float8`); a statement that
/// has no use for it leaves it out and numbers its own parameters from there.
pub(crate) struct Binds<'a> {
    id: Option<&'a Code2desId>,
    scope: Option<&'a Scope>,
    deadline: Option<f64>,
    more: Vec<(&'a (dyn ToSql + Sync), Type)>,
}

impl<'a> Binds<'a> {
    /// `$1` the job, `$2` `$3` its organization and project, `$4` the caller.
    pub fn job(id: &'a Code2desId, scope: &'a Scope) -> Self {
        Self { id: Some(id), scope: Some(scope), deadline: None, more: Vec::new() }
    }

    /// `$1` `$2` the organization and project, `$3` the caller.
    pub fn scope(scope: &'a Scope) -> Self {
        Self { id: None, scope: Some(scope), deadline: None, more: Vec::new() }
    }

    /// No leading parameters.
    pub fn none() -> Self {
        Self { id: None, scope: None, deadline: None, more: Vec::new() }
    }

    /// The deadline, in seconds, right after the leading parameters.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline.as_secs_f64());
        self
    }

    /// The next parameter.
    pub fn and(mut self, value: &'a (dyn ToSql + Sync), ty: Type) -> Self {
        self.more.push((value, ty));
        self
    }

    /// Runs `sql` with these parameters, within the query timeout.
    pub async fn query(&self, client: &impl GenericClient, sql: &str) -> Result<Vec<Row>, DbError> {
        let mut params: Vec<(&(dyn ToSql + Sync), Type)> = Vec::with_capacity(5 + self.more.len());
        if let Some(id) = self.id {
            params.push((id, Type::VARCHAR));
        }
        if let Some(scope) = self.scope {
            params.push((&scope.organization_id, Type::INT4));
            params.push((&scope.project_id, Type::INT4));
            params.push((&scope.subject, Type::VARCHAR));
        }
        if let Some(secs) = &self.deadline {
            params.push((secs, Type::FLOAT8));
        }
        params.extend(self.more.iter().cloned());
        timed_on(client.client(), client.query_typed(sql, &params)).await
    }
}

/// A column of a row, or a logged 500 when it does not read (a bug: the statement and its
/// reader disagree). `Row::get` panics instead, so clippy.toml keeps it out of non-test code.
pub(crate) fn col<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a Row,
    name: impl tokio_postgres::row::RowIndex + std::fmt::Display,
) -> Result<T, DbError> {
    row.try_get(name).map_err(|e| DbError::bug("reading a column", crate::error::chain(&e)))
}

/// A job read by a statement, or a logged 500 when the row does not read (a bug).
pub(crate) fn job(row: &Row) -> Result<crate::domain::job::Job, DbError> {
    crate::db::columns::from_row(row).map_err(|e| DbError::bug("reading a job row", crate::error::chain(&*e)))
}

// The ids bind as the columns they are stored in: `code2des-wire`'s `sql` feature.

/// The placeholders `$1`…`$n` a statement's text uses, each counted once (`$1` inside `$10` is
/// not `$1`): the statement tests hold every statement to the parameters it binds.
#[cfg(test)]
pub(crate) fn placeholders(sql: &str) -> std::collections::BTreeSet<u32> {
    let b = sql.as_bytes();
    let mut out = std::collections::BTreeSet::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' {
            let start = i + 1;
            let mut end = start;
            while end < b.len() && b[end].is_ascii_digit() {
                end += 1;
            }
            if end > start {
                out.insert(sql[start..end].parse().expect("digits"));
            }
            i = end.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_the_rust_values() {
        use crate::domain::job::StatusLabel;
        use crate::domain::job::{
            Status, CANCELLED, DEADLINE_ACTOR, PAGE_IMPORT_COMPLETED, TIMED_OUT, TRIGGER_ACTOR, WORKER_ACTOR,
        };
        let sql = |s: &str| format!("'{s}'");
        assert_eq!(status_processing!(), sql(Status::Processing.db_label()));
        assert_eq!(status_completed!(), sql(Status::Completed.db_label()));
        assert_eq!(status_failed!(), sql(Status::Failed.db_label()));
        assert_eq!(page_import_completed!(), sql(PAGE_IMPORT_COMPLETED));
        assert_eq!(actor_deadline!(), sql(DEADLINE_ACTOR));
        assert_eq!(actor_worker!(), sql(WORKER_ACTOR));
        assert_eq!(actor_trigger!(), sql(TRIGGER_ACTOR));
        assert_eq!(message_timed_out!(), sql(TIMED_OUT));
        assert_eq!(message_cancelled!(), sql(CANCELLED));
    }

    #[test]
    fn placeholders_are_read_whole() {
        let p = placeholders("SELECT $1, $10, $2::int4, $$body$$, x$3");
        assert_eq!(p.into_iter().collect::<Vec<_>>(), vec![1, 2, 3, 10]);
        assert!(!placeholders("SELECT $10").contains(&1), "$1 is not in $10");
    }

    #[test]
    fn ids_bind_as_their_columns() {
        use crate::domain::ids::{OrganizationId, ProjectId};
        use bytes::BytesMut;

        let id = Code2desId::parse("01890A5D-AC96-774B-BCCE-B302099A8057").unwrap();
        let mut out = BytesMut::new();
        id.to_sql(&Type::VARCHAR, &mut out).unwrap();
        assert_eq!(&out[..], b"01890a5d-ac96-774b-bcce-b302099a8057");
        assert!(<Code2desId as ToSql>::accepts(&Type::VARCHAR) && !<Code2desId as ToSql>::accepts(&Type::INT4));
        assert!(<OrganizationId as ToSql>::accepts(&Type::INT4) && !<ProjectId as ToSql>::accepts(&Type::VARCHAR));
    }
}
