//! The schema: `migrations/V*.sql`, embedded at build time and applied by refinery (which orders
//! them, runs each in a transaction and records it with its checksum), then the online steps of
//! `migrations/online/`, which must not run in a transaction.
//!
//! An online step is an index built with `CREATE INDEX CONCURRENTLY` on a table that is live
//! and large: it does not block writes while it builds, but PostgreSQL refuses it inside a
//! transaction block, and refinery wraps every migration in one. So the online files have their
//! own path here: each statement is sent on its own (an implicit transaction of one statement),
//! after the versioned migrations. They need no bookkeeping table: the catalog is the record. A
//! valid index of that name means the step is done; an INVALID one (a build that failed or was
//! cancelled half-way leaves one behind, still maintained by every write but never used by a
//! read) is dropped, concurrently too, and built again; a missing one is built.
//!
//! Migrations are never edited once written: `tests::every_migration_keeps_its_checksum` pins
//! each file. Two were edited once (V3 and V6, their comments, in the releases that followed
//! them); their text is back to the first release's, and a database that applied the edited
//! text has its recorded checksum set back to the original ([`EDITED`]), so both migrate.

use tokio_postgres::Client;

mod embedded {
    refinery::embed_migrations!("../migrations");
}

/// What applying the schema can fail with.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error(transparent)]
    Refinery(#[from] refinery::Error),
    #[error("{context}: {source}")]
    Database {
        context: String,
        #[source]
        source: tokio_postgres::Error,
    },
    #[error("online step {file}: {reason}")]
    Online { file: &'static str, reason: String },
}

fn db(context: impl Into<String>) -> impl FnOnce(tokio_postgres::Error) -> MigrateError {
    let context = context.into();
    move |source| MigrateError::Database { context, source }
}

/// One file of `migrations/online/`.
pub struct OnlineStep {
    pub file: &'static str,
    pub sql: &'static str,
}

/// The online steps, in the order they run. A new file is added here too (a test checks that
/// the folder and this list agree).
pub const ONLINE: &[OnlineStep] = &[
    OnlineStep {
        file: "N7__list_sweep_and_purge_indexes.sql",
        sql: include_str!("../../../migrations/online/N7__list_sweep_and_purge_indexes.sql"),
    },
    OnlineStep { file: "N8__quota_index.sql", sql: include_str!("../../../migrations/online/N8__quota_index.sql") },
    OnlineStep {
        file: "N9__trigger_window_start_index.sql",
        sql: include_str!("../../../migrations/online/N9__trigger_window_start_index.sql"),
    },
];

/// Versions whose file was edited after a release applied it: `(version, checksum of the edited
/// text)`. The file is back to its first text; [`migrate`] moves a database that recorded the
/// edited checksum to the file's own, the one change of refinery's history it ever makes.
pub const EDITED: &[(i32, u64)] = &[(3, 7_438_570_937_038_309_860), (6, 4_507_023_162_195_425_030)];

/// One `CREATE INDEX CONCURRENTLY IF NOT EXISTS <name> ON …` statement of an online file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnlineIndex {
    pub name: String,
    pub statement: String,
}

/// The statements of an online file: `;`-terminated, `--` comments ignored. Anything but a
/// concurrent, idempotent index build is refused, so nothing else ever runs outside a
/// transaction.
pub fn online_indexes(sql: &str) -> Result<Vec<OnlineIndex>, String> {
    let text: String = sql
        .lines()
        .map(|l| match l.find("--") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    for raw in text.split(';') {
        let statement = raw.split_whitespace().collect::<Vec<_>>().join(" ");
        if statement.is_empty() {
            continue;
        }
        const HEAD: &str = "CREATE INDEX CONCURRENTLY IF NOT EXISTS ";
        let rest = statement
            .strip_prefix(HEAD)
            .ok_or_else(|| format!("not a `{}` statement: {statement}", HEAD.trim_end()))?;
        let name = rest.split_whitespace().next().unwrap_or_default();
        let plain = !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !plain || !rest[name.len()..].trim_start().starts_with("ON ") {
            return Err(format!("an index needs a plain lowercase name: {statement}"));
        }
        out.push(OnlineIndex { name: name.to_owned(), statement });
    }
    Ok(out)
}

/// Applies the versioned migrations, then the online steps; answers what it applied (versions
/// as `V7__name`, online indexes as `N7__file: index_name`).
pub async fn migrate(client: &mut Client) -> Result<Vec<String>, MigrateError> {
    repair_edited(client).await?;
    let report = embedded::migrations::runner().run_async(client).await?;
    let mut applied: Vec<String> = report.applied_migrations().iter().map(|m| m.to_string()).collect();
    for step in ONLINE {
        for index in online_indexes(step.sql).map_err(|reason| MigrateError::Online { file: step.file, reason })? {
            if build_index(client, &index).await? {
                applied.push(format!("{}: {}", step.file.trim_end_matches(".sql"), index.name));
            }
        }
    }
    Ok(applied)
}

/// Moves the recorded checksum of an edited migration back to its file's (see [`EDITED`]).
async fn repair_edited(client: &Client) -> Result<(), MigrateError> {
    let exists: bool = client
        .query_one("SELECT to_regclass('refinery_schema_history') IS NOT NULL", &[])
        .await
        .map_err(db("looking for refinery's history"))?
        .try_get(0)
        .map_err(db("reading refinery's history"))?;
    if !exists {
        return Ok(());
    }
    let runner = embedded::migrations::runner();
    for (version, edited) in EDITED {
        let Some(file) = runner.get_migrations().iter().find(|m| m.version() == *version) else { continue };
        let n = client
            .execute(
                "UPDATE refinery_schema_history SET checksum = $1 WHERE version = $2 AND checksum = $3",
                &[&file.checksum().to_string(), version, &edited.to_string()],
            )
            .await
            .map_err(db("repairing an edited migration's checksum"))?;
        if n > 0 {
            tracing::warn!(
                version,
                "this database applied an edited text of the migration; its checksum is the file's again"
            );
        }
    }
    Ok(())
}

/// Builds one online index unless a valid one exists; an invalid one is dropped first. True
/// when it built.
pub async fn build_index(client: &Client, index: &OnlineIndex) -> Result<bool, MigrateError> {
    match index_validity(client, &index.name).await? {
        Some(true) => return Ok(false),
        Some(false) => {
            tracing::warn!(index = %index.name, "an invalid index (a build that did not finish) is dropped and built again");
            client
                .batch_execute(&format!("DROP INDEX CONCURRENTLY IF EXISTS {}", index.name))
                .await
                .map_err(db(format!("dropping the invalid index {}", index.name)))?;
        }
        None => {}
    }
    tracing::info!(index = %index.name, "building an index concurrently (writes go on)");
    client.batch_execute(&index.statement).await.map_err(db(format!("building the index {}", index.name)))?;
    match index_validity(client, &index.name).await? {
        Some(true) => Ok(true),
        _ => Err(MigrateError::Online {
            file: "?",
            reason: format!("the index {} is not valid after its build", index.name),
        }),
    }
}

/// `Some(valid)` for an index of this name in the current schema, `None` when there is none.
pub async fn index_validity(client: &Client, name: &str) -> Result<Option<bool>, MigrateError> {
    let row = client
        .query_opt(
            "SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid \
             WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace",
            &[&name],
        )
        .await
        .map_err(db(format!("reading the state of the index {name}")))?;
    row.map(|r| r.try_get(0)).transpose().map_err(db(format!("reading the state of the index {name}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every migration file's refinery checksum (SipHash-1-3 of its name, version and text). A
    /// migration is never edited once written: a database that applied it would refuse the new
    /// text. A NEW migration adds its line here.
    const PINNED: &[(i32, &str, u64)] = &[
        (1, "code2des", 7_012_166_128_957_231_705),
        (2, "code2des_attempt", 8_289_755_896_207_080_379),
        (3, "read_functions", 14_145_719_960_726_794_871),
        (4, "app_role", 7_991_378_282_181_815_516),
        (5, "read_job_record", 14_754_233_565_330_919_464),
        (6, "read_functions_schema_qualified", 18_341_990_582_593_701_485),
        (7, "a_year_of_data", 5_568_498_233_389_187_292),
        (8, "quotas", 18_441_217_784_941_682_201),
        (9, "webhook_delivery", 14_121_678_433_869_384_731),
        (10, "read_job_by_key", 9_898_043_728_040_015_612),
        (11, "trigger_window_per_organization", 15_059_579_405_312_878_062),
        (12, "prune_trigger_windows", 3_054_903_474_671_515_884),
        (13, "failed_list_reads_the_overdue_range", 3_031_224_614_711_212_879),
        (14, "viewports", 4_918_593_250_469_964_037),
    ];

    #[test]
    fn every_migration_keeps_its_checksum() {
        let runner = embedded::migrations::runner();
        // In version order: the files are embedded in name order, where V10 comes before V1.
        let mut found: Vec<(i32, String, u64)> =
            runner.get_migrations().iter().map(|m| (m.version(), m.name().to_owned(), m.checksum())).collect();
        found.sort();
        let pinned: Vec<(i32, String, u64)> = PINNED.iter().map(|(v, n, c)| (*v, (*n).to_owned(), *c)).collect();
        assert_eq!(found, pinned, "a migration was edited, added without a pin, or removed");
    }

    #[test]
    fn the_edited_texts_are_known_and_are_not_the_files() {
        let runner = embedded::migrations::runner();
        for (version, edited) in EDITED {
            let file = runner.get_migrations().iter().find(|m| m.version() == *version).expect("the version exists");
            assert_ne!(file.checksum(), *edited, "V{version}'s file is its first text, not the edited one");
        }
    }

    #[test]
    fn the_online_folder_and_the_list_agree_and_hold_only_concurrent_index_builds() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations/online");
        let mut files: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        files.sort();
        let listed: Vec<String> = ONLINE.iter().map(|s| s.file.to_owned()).collect();
        assert_eq!(files, listed);
        for step in ONLINE {
            let indexes = online_indexes(step.sql).unwrap();
            assert!(!indexes.is_empty(), "{}", step.file);
        }
    }

    #[test]
    fn only_concurrent_idempotent_index_builds_are_online_statements() {
        let ok = online_indexes("-- why\nCREATE INDEX CONCURRENTLY IF NOT EXISTS a_idx ON t (x); -- note\n").unwrap();
        assert_eq!(
            ok,
            vec![OnlineIndex {
                name: "a_idx".into(),
                statement: "CREATE INDEX CONCURRENTLY IF NOT EXISTS a_idx ON t (x)".into()
            }]
        );
        for bad in [
            "CREATE INDEX a_idx ON t (x);",
            "CREATE INDEX CONCURRENTLY a_idx ON t (x);",
            "DROP TABLE t;",
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS \"A\" ON t (x);",
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS a_idx ON t (x); DELETE FROM t;",
        ] {
            assert!(online_indexes(bad).is_err(), "{bad}");
        }
    }
}
