//! Expand, then contract (docs/DEPLOY.md, "Expand, then contract"), against a real PostgreSQL
//! on 127.0.0.1:5432.
//!
//! During a deploy the previous release's code and the new one run side by side, and after a
//! rollback the previous code meets the new schema: so a migration must keep working every
//! statement the previous release sends. The proof here is on the catalog: the migrations are
//! applied one at a time (each in its own transaction, as refinery applies them) and, before
//! and after each one, everything a statement can name is snapshotted: relations, columns with
//! their types, nullability and defaults, functions by signature with their result types, enum
//! labels, unique indexes (what `ON CONFLICT (…)` infers), and the application role's
//! privileges. A migration may add to the snapshot, never take away or tighten: a statement
//! that parsed, type-checked and was allowed before still does. Anything else must be listed,
//! with the reason the previous release no longer reaches it, in ops/migrate/contract-allow.txt
//! (a deliberate contract step). The checker's own test feeds it each kind of contract.
#![allow(clippy::disallowed_methods)] // tests may panic on a row that does not read: that is a failure

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use shared::db::connect::DbConfig;

const ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";
/// The role the functions log in as (migrations/V4__app_role.sql).
const APP_ROLE: &str = "code2des_app";

fn admin_url() -> String {
    std::env::var("C2D_TEST_ADMIN_URL").unwrap_or_else(|_| ADMIN_URL.to_owned())
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fresh database, dropped when the returned guard's `drop_db` runs.
struct TempDb {
    admin: tokio_postgres::Client,
    name: String,
    cfg: DbConfig,
}

impl TempDb {
    async fn new() -> Self {
        let cfg = DbConfig::from_url(&admin_url()).expect("admin URL");
        let admin = shared::db::connect::connect(&cfg, None)
            .await
            .expect("PostgreSQL on 127.0.0.1:5432 (scripts/ensure-postgres)");
        let name = format!("c2d_expand_{:016x}", rand::random::<u64>());
        admin.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
        let mut cfg = cfg;
        cfg.pg.dbname(&name);
        Self { admin, name, cfg }
    }

    async fn connect(&self) -> tokio_postgres::Client {
        shared::db::connect::connect(&self.cfg, None).await.unwrap()
    }

    async fn drop_db(self) {
        self.admin.batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)).await.unwrap();
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Column {
    ty: String,
    not_null: bool,
    has_default: bool,
}

/// What a statement of the code can name, in the migrations' schema.
#[derive(Debug, Default, Clone)]
struct Snapshot {
    /// relation name → relkind
    relations: BTreeMap<String, String>,
    /// "table.column" → its definition
    columns: BTreeMap<String, Column>,
    /// "name(argument types)" → result type
    functions: BTreeMap<String, String>,
    /// "type: label"
    enum_labels: BTreeSet<String>,
    /// "table(sorted columns)" [WHERE …]
    unique_indexes: BTreeSet<String>,
    /// "PRIVILEGE on object" held by the application role
    privileges: BTreeSet<String>,
}

async fn snapshot(db: &tokio_postgres::Client) -> Snapshot {
    let mut s = Snapshot::default();
    let ours = "n.nspname = current_schema()";
    for r in db
        .query(
            &format!(
                "SELECT c.relname::text, c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE {ours} AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')"
            ),
            &[],
        )
        .await
        .unwrap()
    {
        s.relations.insert(r.get(0), r.get(1));
    }
    for r in db
        .query(
            &format!(
                "SELECT c.relname::text || '.' || a.attname::text, format_type(a.atttypid, a.atttypmod), a.attnotnull, \
                 a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> '' \
                 FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE {ours} AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND a.attnum > 0 AND NOT a.attisdropped"
            ),
            &[],
        )
        .await
        .unwrap()
    {
        s.columns.insert(r.get(0), Column { ty: r.get(1), not_null: r.get(2), has_default: r.get(3) });
    }
    for r in db
        .query(
            &format!(
                "SELECT p.proname::text || '(' || oidvectortypes(p.proargtypes) || ')', \
                 coalesce(pg_get_function_result(p.oid), p.prokind::text) \
                 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE {ours}"
            ),
            &[],
        )
        .await
        .unwrap()
    {
        s.functions.insert(r.get(0), r.get(1));
    }
    for r in db
        .query(
            &format!(
                "SELECT t.typname::text || ': ' || e.enumlabel::text FROM pg_enum e JOIN pg_type t ON t.oid = e.enumtypid \
                 JOIN pg_namespace n ON n.oid = t.typnamespace WHERE {ours}"
            ),
            &[],
        )
        .await
        .unwrap()
    {
        s.enum_labels.insert(r.get(0));
    }
    for r in db
        .query(
            &format!(
                "SELECT c.relname::text || '(' || (SELECT string_agg(a.attname::text, ', ' ORDER BY a.attname) \
                 FROM pg_attribute a WHERE a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)) || ')' \
                 || coalesce(' WHERE ' || pg_get_expr(i.indpred, i.indrelid), '') \
                 FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE {ours} AND i.indisunique"
            ),
            &[],
        )
        .await
        .unwrap()
    {
        s.unique_indexes.insert(r.get(0));
    }
    let role_exists = db.query_opt("SELECT 1 FROM pg_roles WHERE rolname = $1", &[&APP_ROLE]).await.unwrap().is_some();
    if role_exists {
        for r in db
            .query(
                &format!(
                    "SELECT p.privilege || ' on ' || c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace, \
                     unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE']) AS p(privilege) \
                     WHERE {ours} AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND has_table_privilege($1, c.oid, p.privilege) \
                     UNION ALL \
                     SELECT 'USAGE on ' || c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                     WHERE {ours} AND CASE WHEN c.relkind = 'S' THEN has_sequence_privilege($1, c.oid, 'USAGE') ELSE false END \
                     UNION ALL \
                     SELECT 'EXECUTE on ' || p.proname::text || '(' || oidvectortypes(p.proargtypes) || ')' \
                     FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
                     WHERE {ours} AND has_function_privilege($1, p.oid, 'EXECUTE') \
                     UNION ALL \
                     SELECT 'USAGE on schema' WHERE has_schema_privilege($1, current_schema(), 'USAGE')"
                ),
                &[&APP_ROLE],
            )
            .await
            .unwrap()
        {
            s.privileges.insert(r.get(0));
        }
    }
    s
}

/// What `after` took away from, or tightened in, `before`: each a statement the previous
/// release may send that could now fail.
fn contractions(before: &Snapshot, after: &Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    for (name, kind) in &before.relations {
        match after.relations.get(name) {
            None => out.push(format!("relation {name}: removed")),
            Some(k) if k != kind => out.push(format!("relation {name}: relkind {kind} -> {k}")),
            Some(_) => {}
        }
    }
    for (name, old) in &before.columns {
        let table = name.split('.').next().unwrap_or_default();
        match after.columns.get(name) {
            // A removed relation is reported once, not once per column.
            None if !after.relations.contains_key(table) => {}
            None => out.push(format!("column {name}: removed")),
            Some(new) => {
                if new.ty != old.ty {
                    out.push(format!("column {name}: type {} -> {}", old.ty, new.ty));
                }
                if new.not_null && !old.not_null {
                    out.push(format!("column {name}: became NOT NULL"));
                }
                if old.has_default && !new.has_default {
                    out.push(format!("column {name}: lost its default"));
                }
            }
        }
    }
    // A new column of an existing table: the previous release's INSERTs do not name it.
    for (name, new) in &after.columns {
        let table = name.split('.').next().unwrap_or_default();
        let existing = before.relations.get(table).is_some_and(|k| k == "r" || k == "p");
        if existing && !before.columns.contains_key(name) && new.not_null && !new.has_default {
            out.push(format!("column {name}: added NOT NULL without a default"));
        }
    }
    for (sig, result) in &before.functions {
        match after.functions.get(sig) {
            None => out.push(format!("function {sig}: removed")),
            Some(r) if r != result => out.push(format!("function {sig}: result {result} -> {r}")),
            Some(_) => {}
        }
    }
    for label in before.enum_labels.difference(&after.enum_labels) {
        out.push(format!("enum label {label}: removed"));
    }
    for index in before.unique_indexes.difference(&after.unique_indexes) {
        let table = index.split('(').next().unwrap_or_default();
        if after.relations.contains_key(table) {
            out.push(format!("unique index {index}: removed"));
        }
    }
    for privilege in before.privileges.difference(&after.privileges) {
        // A privilege on an object that is gone is reported with the object.
        let object = privilege.split_once(" on ").map(|(_, o)| o).unwrap_or_default();
        let gone = !after.relations.contains_key(object)
            && !after.functions.contains_key(object)
            && (before.relations.contains_key(object) || before.functions.contains_key(object));
        if !gone {
            out.push(format!("privilege of {APP_ROLE}: {privilege}: revoked"));
        }
    }
    out
}

/// `V<n>__<name>.sql` files of a directory, in version order.
fn migration_files(dir: &std::path::Path) -> Vec<(u32, String, String)> {
    let mut out: Vec<(u32, String, String)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let stem = name.strip_suffix(".sql")?;
            let version: u32 = stem.strip_prefix('V')?.split_once("__")?.0.parse().ok()?;
            Some((version, stem.to_owned(), std::fs::read_to_string(dir.join(&name)).ok()?))
        })
        .collect();
    out.sort();
    out
}

/// Applies the migrations one by one; every contraction, as "V<n> <what>".
async fn check(db: &mut tokio_postgres::Client, migrations: &[(u32, String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    let mut before = snapshot(db).await;
    for (version, name, sql) in migrations {
        let tx = db.transaction().await.unwrap();
        tx.batch_execute(sql).await.unwrap_or_else(|e| panic!("{name} does not apply: {e:?}"));
        tx.commit().await.unwrap();
        let after = snapshot(db).await;
        found.extend(contractions(&before, &after).into_iter().map(|c| format!("V{version} {c}")));
        before = after;
    }
    found
}

/// ops/migrate/contract-allow.txt: "V<n> <contraction> -- <reason>" lines.
fn allow_list() -> BTreeMap<String, String> {
    let path = repo().join("ops/migrate/contract-allow.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = BTreeMap::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let (entry, reason) = line.split_once(" -- ").unwrap_or((line, ""));
        assert!(reason.trim().len() >= 20, "{}: an entry without its reason: {line}", path.display());
        out.insert(entry.trim().to_owned(), reason.trim().to_owned());
    }
    out
}

#[tokio::test]
async fn every_migration_keeps_what_the_previous_release_reaches() {
    let temp = TempDb::new().await;
    let mut db = temp.connect().await;
    let migrations = migration_files(&repo().join("migrations"));
    assert!(migrations.len() >= 6, "the migrations are found");
    let found = check(&mut db, &migrations).await;
    let last = snapshot(&db).await;
    drop(db);
    temp.drop_db().await;

    let allowed = allow_list();
    println!(
        "expand/contract: {} migrations, V{}..V{}",
        migrations.len(),
        migrations[0].0,
        migrations.last().unwrap().0
    );
    println!(
        "  the last schema: {} relations, {} columns, {} functions, {} enum labels, {} unique indexes, {} privileges of {APP_ROLE}",
        last.relations.len(),
        last.columns.len(),
        last.functions.len(),
        last.enum_labels.len(),
        last.unique_indexes.len(),
        last.privileges.len()
    );
    for c in &found {
        match allowed.get(c) {
            Some(reason) => println!("  allowed contract step: {c} ({reason})"),
            None => println!("  NOT ALLOWED: {c}"),
        }
    }
    let unlisted: Vec<&String> = found.iter().filter(|c| !allowed.contains_key(*c)).collect();
    assert!(
        unlisted.is_empty(),
        "a migration takes away or tightens what the previous release's statements use: {unlisted:#?}\n\
         Expand first (add the new, keep the old), ship the code that stops using the old, and remove it in a \
         later release, listing it with its reason in ops/migrate/contract-allow.txt (docs/DEPLOY.md)."
    );
    let stale: Vec<&String> = allowed.keys().filter(|a| !found.contains(a)).collect();
    assert!(stale.is_empty(), "ops/migrate/contract-allow.txt lists what no migration does: {stale:#?}");
}

/// The checker against one synthetic migration after a common base: the contractions it finds.
async fn contractions_of(change: &str) -> Vec<String> {
    let base = "CREATE TABLE job (id integer PRIMARY KEY, name varchar(20) NOT NULL, note text, \
                state text NOT NULL DEFAULT 'new');
                CREATE UNIQUE INDEX job_name_idx ON job (name);
                CREATE TYPE job_kind AS ENUM ('a', 'b');
                CREATE FUNCTION job_count(p integer) RETURNS bigint LANGUAGE sql AS 'SELECT count(*) FROM job';
                CREATE VIEW job_names AS SELECT id, name FROM job;
                DO $$ BEGIN CREATE ROLE code2des_app; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;
                GRANT USAGE ON SCHEMA public TO code2des_app;
                GRANT SELECT, INSERT ON job TO code2des_app;";
    let temp = TempDb::new().await;
    let mut db = temp.connect().await;
    let found = check(&mut db, &[(1, "V1__base".into(), base.into()), (2, "V2__change".into(), change.into())]).await;
    drop(db);
    temp.drop_db().await;
    found
}

#[tokio::test]
async fn the_check_catches_each_kind_of_contract_and_lets_expansions_pass() {
    let cases: &'static [(&str, &[&str])] = &[
        // Expansions: nothing the previous release uses changes.
        (
            "ALTER TABLE job ADD COLUMN extra text; ALTER TABLE job ADD COLUMN flag boolean NOT NULL DEFAULT false; \
             CREATE TABLE other (id int); ALTER TYPE job_kind ADD VALUE 'c'; \
             CREATE FUNCTION job_count(p integer, q integer) RETURNS bigint LANGUAGE sql AS 'SELECT 1::bigint'; \
             ALTER TABLE job ALTER COLUMN name DROP NOT NULL; GRANT UPDATE ON job TO code2des_app",
            &[],
        ),
        ("ALTER TABLE job DROP COLUMN note", &["V2 column job.note: removed"]),
        ("ALTER TABLE job RENAME COLUMN note TO remark", &["V2 column job.note: removed"]),
        (
            "ALTER TABLE job ALTER COLUMN note TYPE varchar(200)",
            &["V2 column job.note: type text -> character varying(200)"],
        ),
        ("ALTER TABLE job ALTER COLUMN note SET NOT NULL", &["V2 column job.note: became NOT NULL"]),
        ("ALTER TABLE job ALTER COLUMN state DROP DEFAULT", &["V2 column job.state: lost its default"]),
        ("ALTER TABLE job ADD COLUMN owner text NOT NULL", &["V2 column job.owner: added NOT NULL without a default"]),
        ("DROP VIEW job_names", &["V2 relation job_names: removed"]),
        ("ALTER TABLE job RENAME TO jobs", &["V2 relation job: removed"]),
        ("DROP FUNCTION job_count(integer)", &["V2 function job_count(integer): removed"]),
        (
            "DROP FUNCTION job_count(integer); \
             CREATE FUNCTION job_count(p integer) RETURNS integer LANGUAGE sql AS 'SELECT 1'",
            &["V2 function job_count(integer): result bigint -> integer"],
        ),
        ("ALTER TYPE job_kind RENAME VALUE 'b' TO 'bee'", &["V2 enum label job_kind: b: removed"]),
        ("DROP INDEX job_name_idx", &["V2 unique index job(name): removed"]),
        ("REVOKE INSERT ON job FROM code2des_app", &["V2 privilege of code2des_app: INSERT on job: revoked"]),
    ];
    // Each case in its own database, all at once.
    let mut runs = tokio::task::JoinSet::new();
    for (i, (change, _)) in cases.iter().enumerate() {
        runs.spawn(async move { (i, contractions_of(change).await) });
    }
    while let Some(run) = runs.join_next().await {
        let (i, found) = run.unwrap();
        let (change, expected) = cases[i];
        assert_eq!(found, expected, "{change}");
    }
}
