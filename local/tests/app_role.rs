//! The application role of migrations/V4__app_role.sql (SPEC section 8), against the machine's
//! PostgreSQL: in a freshly migrated database, `code2des_app` can do what the five functions do
//! (read the product's tables; read, insert and update the job tables; delete idempotency keys)
//! and nothing more: no DDL, no writes to the product's tables, no deletes of jobs, no
//! ownership, no superuser. Migrating many databases at once (roles are server-wide) works.
#![allow(clippy::disallowed_methods)] // tests may panic on a row that does not read: that is a failure

use code2des_testkit::db::{admin_url, create_migrated, db_url, db_url_as, unique_name, DropDatabase};
use shared::db::connect::DbConfig;
use tokio_postgres::error::SqlState;
use tokio_postgres::Client;

const APP_ROLE: &str = "code2des_app";

struct Db {
    // Dropped first: the database goes before the owner's connection closes (WITH (FORCE)).
    name: DropDatabase,
    owner: Client,
}

impl Db {
    /// A fresh database with every migration applied, as the migrate function applies them.
    async fn fresh() -> Self {
        let name = unique_name("c2d_test_role");
        let (_, owner) = create_migrated(&db_url(&name)).await;
        Self { name: DropDatabase(name), owner }
    }

    async fn app(&self) -> Client {
        let cfg = DbConfig::from_url(&db_url_as(&self.name.0, APP_ROLE)).unwrap();
        shared::db::connect::connect(&cfg, None).await.expect("the application role logs in")
    }
}

/// Runs `sql` as the application role and expects PostgreSQL to refuse it for lack of privilege.
async fn refused(app: &Client, sql: &str) {
    let err = app.batch_execute(sql).await.expect_err(sql);
    assert_eq!(err.code(), Some(&SqlState::INSUFFICIENT_PRIVILEGE), "{sql}: {err}");
}

async fn seed(owner: &Client) -> (i32, i32, String) {
    let page = format!("pi-{}", uuid::Uuid::new_v4().simple());
    let t = code2des_local::seed::tenant(owner, "o", "sub-1", &page, "1", None).await.unwrap();
    (t.org, t.project, t.page_import)
}

#[tokio::test]
async fn the_application_role_reads_and_writes_what_the_functions_need() {
    let db = Db::fresh().await;
    let (org, project, page) = seed(&db.owner).await;
    let app = db.app().await;

    // The product's tables: readable.
    for table in ["organization", "project", "organization_member", "page_import"] {
        let n: i64 = app.query_one(&format!("SELECT count(*) FROM {table}"), &[]).await.unwrap().get(0);
        assert_eq!(n, 1, "{table}");
    }

    // A job: insert (with its foreign keys checked), read, update, lock.
    let id = uuid::Uuid::now_v7().to_string();
    app.execute(
        "INSERT INTO code2des (id, organization_id, project_id, page_import_id, figma_file_key, screen_id, nonce, \
         created_by, updated_by) VALUES ($1, $2, $3, $4, 'file', 'screen', 'n', 'sub-1', 'sub-1')",
        &[&id, &org, &project, &page],
    )
    .await
    .unwrap();
    app.execute("UPDATE code2des SET status = '1', updated_at = now() WHERE id = $1", &[&id]).await.unwrap();
    app.query_one("SELECT status::text FROM code2des WHERE id = $1 FOR NO KEY UPDATE", &[&id]).await.unwrap();

    // Idempotency keys: insert, read, delete (a trigger releases its key).
    app.execute(
        "INSERT INTO code2des_idempotency (subject, organization_id, project_id, idempotency_key, request_hash, \
         code2des_id) VALUES ('sub-1', $1, $2, 'k', 'h', $3)",
        &[&org, &project, &id],
    )
    .await
    .unwrap();
    assert_eq!(app.execute("DELETE FROM code2des_idempotency WHERE code2des_id = $1", &[&id]).await.unwrap(), 1);

    // Every other job table the migrations made: read, insert and update granted; the quota
    // overrides (V8) only read: operators raise a quota, never the functions.
    let tables: Vec<String> = db
        .owner
        .query(
            "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = current_schema() AND c.relkind IN ('r','p') AND c.relname LIKE 'code2des%' \
             AND c.relname <> 'code2des_quota'",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(tables.len() >= 2, "{tables:?}");
    assert!(tables.iter().any(|t| t == "code2des_org_trigger_window"), "{tables:?}");
    let n: i64 = app.query_one("SELECT count(*) FROM code2des_quota", &[]).await.unwrap().get(0);
    assert_eq!(n, 0, "the overrides are readable");
    for table in &tables {
        for privilege in ["SELECT", "INSERT", "UPDATE"] {
            let ok: bool = app
                .query_one("SELECT has_table_privilege(current_user, $1::text::regclass, $2)", &[table, &privilege])
                .await
                .unwrap()
                .get(0);
            assert!(ok, "{privilege} on {table}");
        }
    }
    // Functions the later migrations made for the job tables are executable.
    let functions: Vec<bool> = app
        .query(
            "SELECT has_function_privilege(current_user, p.oid, 'EXECUTE') FROM pg_proc p \
             JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = current_schema() \
             AND p.proname LIKE 'code2des%'",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(functions.iter().all(|ok| *ok));

    // The purge: the role deletes a job only through code2des_purge_jobs, which checks the rule
    // (migration V7) as the owner. One deleted today stays; one deleted 31 days ago goes.
    db.owner
        .execute("UPDATE code2des SET deleted_at = now(), deleted_by = 'sub-1' WHERE id = $1", &[&id])
        .await
        .unwrap();
    let purge = "SELECT code2des_purge_jobs(ARRAY[$1::varchar], 30)";
    assert_eq!(app.query_one(purge, &[&id]).await.unwrap().get::<_, i32>(0), 0);
    db.owner
        .execute("UPDATE code2des SET deleted_at = now() - interval '31 days' WHERE id = $1", &[&id])
        .await
        .unwrap();
    assert_eq!(app.query_one(purge, &[&id]).await.unwrap().get::<_, i32>(0), 1);
}

#[tokio::test]
async fn the_application_role_can_run_no_ddl_and_touch_nothing_else() {
    let db = Db::fresh().await;
    let (org, _, page) = seed(&db.owner).await;
    let app = db.app().await;

    // No DDL: not in the schema, not on the job tables, not on the product's.
    refused(&app, "CREATE TABLE sneaky (id int)").await;
    refused(&app, "ALTER TABLE code2des ADD COLUMN sneaky int").await;
    refused(&app, "ALTER TABLE code2des DISABLE TRIGGER ALL").await;
    refused(&app, "CREATE INDEX sneaky ON code2des (screen_id)").await;
    refused(&app, "DROP TABLE code2des_idempotency").await;
    refused(&app, "DROP TABLE organization").await;
    refused(&app, "TRUNCATE code2des").await;
    refused(&app, "CREATE FUNCTION sneaky() RETURNS int LANGUAGE sql AS 'SELECT 1'").await;
    // Granting on: PostgreSQL only warns ("no privileges were granted") without a grant option.
    let _ = app.batch_execute("GRANT SELECT ON code2des TO PUBLIC").await;
    let passes_on: bool = app
        .query_one("SELECT has_table_privilege(current_user, 'code2des', 'SELECT WITH GRANT OPTION')", &[])
        .await
        .unwrap()
        .get(0);
    assert!(!passes_on);
    let public: i64 = db
        .owner
        .query_one(
            "SELECT count(*) FROM pg_class c, aclexplode(c.relacl) a WHERE c.relname = 'code2des' AND a.grantee = 0",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(public, 0, "nothing granted to PUBLIC");
    refused(&app, "DROP TABLE refinery_schema_history").await;

    // The product's tables are read only; jobs are soft-deleted, never deleted.
    refused(&app, "INSERT INTO organization (name) VALUES ('x')").await;
    refused(&app, &format!("UPDATE organization SET name = 'x' WHERE id = {org}")).await;
    refused(&app, &format!("DELETE FROM organization_member WHERE organization_id = {org}")).await;
    refused(&app, &format!("UPDATE page_import SET status = '2' WHERE id = '{page}'")).await;
    refused(&app, &format!("INSERT INTO page_import (id, organization_id, project_id) VALUES ('x', {org}, 1)")).await;
    refused(&app, "DELETE FROM code2des").await;
    // A function cannot raise its own tenant's quota.
    refused(&app, &format!("INSERT INTO code2des_quota (organization_id, max_active_jobs) VALUES ({org}, 1000)")).await;
    refused(&app, "UPDATE code2des_quota SET max_active_jobs = 1000").await;
    refused(&app, "DELETE FROM code2des_org_trigger_window").await;
    // Nor the migrations' bookkeeping.
    refused(&app, "SELECT * FROM refinery_schema_history").await;
    refused(&app, "DELETE FROM refinery_schema_history").await;

    // Not a superuser, cannot create roles or databases, owns nothing, not the owner's member.
    let row = app
        .query_one(
            "SELECT rolsuper, rolcreaterole, rolcreatedb, rolbypassrls, rolreplication FROM pg_roles \
             WHERE rolname = current_user",
            &[],
        )
        .await
        .unwrap();
    for i in 0..5 {
        assert!(!row.get::<_, bool>(i), "attribute {i} of {APP_ROLE}");
    }
    let owned: i64 = app
        .query_one(
            "SELECT count(*) FROM pg_class WHERE relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(owned, 0);
    let owner: String = db.owner.query_one("SELECT current_user::text", &[]).await.unwrap().get(0);
    let member: bool =
        app.query_one("SELECT pg_has_role(current_user, $1::text, 'MEMBER')", &[&owner]).await.unwrap().get(0);
    assert!(!member, "{APP_ROLE} is not a member of the owner {owner}");
    refused(&app, "CREATE ROLE sneaky").await;
    refused(&app, &format!("ALTER ROLE {APP_ROLE} SUPERUSER")).await;
}

#[tokio::test]
async fn many_databases_migrate_at_once_and_share_the_role() {
    let dbs = futures::future::join_all((0..6).map(|_| Db::fresh())).await;
    for db in &dbs {
        let app = db.app().await;
        let n: i64 = app.query_one("SELECT count(*) FROM code2des", &[]).await.unwrap().get(0);
        assert_eq!(n, 0);
    }
}

/// The migrate function's half of the proxy design: the role's password is set from its
/// secret as a SCRAM verifier, which PostgreSQL stores as sent (so the password itself never
/// reaches the server). On a throwaway role: the application role is shared by every database.
#[tokio::test]
async fn the_role_password_is_set_from_the_secret_as_a_scram_verifier() {
    use base64::Engine;
    shared::db::connect::install_crypto_provider();
    let admin = shared::db::connect::connect(&DbConfig::from_url(&admin_url()).unwrap(), None).await.unwrap();
    let role = format!("c2d_pw_probe_{}", std::process::id());
    admin.batch_execute(&format!("DROP ROLE IF EXISTS {role}; CREATE ROLE {role} NOLOGIN")).await.unwrap();

    let secret = serde_json::json!({"username": role, "password": "Gen3ratedWithoutPunctuation"}).to_string();
    assert_eq!(shared::db::roles::set_app_role_password(&admin, &secret).await.unwrap(), role);
    let row =
        admin.query_one("SELECT rolcanlogin, rolpassword FROM pg_authid WHERE rolname = $1", &[&role]).await.unwrap();
    let stored: String = row.get(1);
    assert!(row.get::<_, bool>(0), "LOGIN");
    // Recomputed from the stored salt: PostgreSQL kept exactly the verifier sent.
    let salt_b64 = stored.strip_prefix("SCRAM-SHA-256$4096:").and_then(|r| r.split('$').next()).expect(&stored);
    let salt = base64::engine::general_purpose::STANDARD.decode(salt_b64).unwrap();
    assert_eq!(stored, shared::db::roles::scram_sha256_verifier("Gen3ratedWithoutPunctuation", &salt, 4096));
    // A second run salts afresh.
    shared::db::roles::set_app_role_password(&admin, &secret).await.unwrap();
    let again: String =
        admin.query_one("SELECT rolpassword FROM pg_authid WHERE rolname = $1", &[&role]).await.unwrap().get(0);
    assert_ne!(again, stored);

    for bad in
        [r#"{"username":"x\"; DROP TABLE t; --","password":"p"}"#, r#"{"username":"Upper","password":"p"}"#, "{}"]
    {
        assert!(shared::db::roles::set_app_role_password(&admin, bad).await.is_err(), "{bad}");
    }
    admin.batch_execute(&format!("DROP ROLE {role}")).await.unwrap();
}
