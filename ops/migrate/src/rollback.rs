//! A release older than the database: what a rollback looks like to the migrate function.
//!
//! After a failed canary, or when an operator redeploys the previous release, the previous
//! release's migrate function runs (as the PreTraffic hook of the rollback's deployments, or
//! by hand) against a database that the newer release has already migrated. Migrations are
//! never undone: the expand-then-contract rule (docs/DEPLOY.md, checked in CI by
//! scripts/check-migrations) is what keeps the previous release's statements working on the
//! newer schema. So "the database holds a version this release does not know" is not a
//! failure: there is nothing for this release to apply, and failing would block the very
//! rollback that restores service.
//!
//! refinery reports that case as `MissingVersion` of an *applied* migration (one it read from
//! the history table, which carries its `applied_on`); every other error, a divergent
//! checksum or a migration of this release left unapplied among them, stays an error.

/// The applied migration this release does not know, when that is why the migration failed.
pub fn database_ahead(err: &shared::db::migrate::MigrateError) -> Option<String> {
    let shared::db::migrate::MigrateError::Refinery(err) = err else { return None };
    match err.kind() {
        refinery::error::Kind::MissingVersion(m) if m.applied_on().is_some() => Some(m.to_string()),
        _ => None,
    }
}
