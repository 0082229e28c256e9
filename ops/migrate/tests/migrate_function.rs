//! The migrate function against a fresh PostgreSQL database on 127.0.0.1:5432: the first
//! invocation creates the `code2des` table with its three named indexes, the second applies
//! nothing.
#![allow(clippy::disallowed_methods)] // tests may panic on a row that does not read: that is a failure

use code2des_migrate::{handle, Deps};
use lambda_runtime::{Context, LambdaEvent};
use serde_json::{json, Value};
use shared::db::connect::DbConfig;

const ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

fn admin_url() -> String {
    std::env::var("C2D_TEST_ADMIN_URL").unwrap_or_else(|_| ADMIN_URL.to_owned())
}

async fn admin() -> tokio_postgres::Client {
    let cfg = DbConfig::from_url(&admin_url()).expect("admin URL");
    shared::db::connect::connect(&cfg, None).await.expect("PostgreSQL on 127.0.0.1:5432 (scripts/ensure-postgres)")
}

fn invocation() -> LambdaEvent<Value> {
    LambdaEvent::new(json!({}), Context::default())
}

#[tokio::test]
async fn migrate_function_applies_every_version_once() {
    let name = format!("c2d_migrate_{:016x}", rand::random::<u64>());
    let admin = admin().await;
    admin.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();

    let mut cfg = DbConfig::from_url(&admin_url()).unwrap();
    cfg.pg.dbname(&name);
    let deps = Deps { db: cfg.clone(), ca_bundle: None, app_role: None, app_iam_role: None };
    let outcome = async {
        let first = handle(&deps, invocation()).await.expect("first run");
        let second = handle(&deps, invocation()).await.expect("second run");
        let db = shared::db::connect::connect(&cfg, None).await.unwrap();
        let table = db
            .query_one("SELECT count(*) FROM information_schema.tables WHERE table_name = 'code2des'", &[])
            .await
            .unwrap()
            .get::<_, i64>(0);
        let mut indexes: Vec<String> = db
            .query(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'code2des' AND indexname LIKE 'code2des_%_idx'",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        indexes.sort();
        (first, second, table, indexes)
    }
    .await;
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await.unwrap();

    let (first, second, table, indexes) = outcome;
    assert_eq!(first["database"], json!(name));
    let applied = first["applied"].as_array().expect("applied is a list");
    assert!(!applied.is_empty(), "a fresh database gets every migration: {first}");
    assert!(applied[0].as_str().is_some_and(|v| v.starts_with("V1__")), "{first}");
    assert_eq!(second["applied"], json!([]), "a second run applies nothing: {second}");
    assert_eq!(table, 1, "the code2des table exists");
    // The seed's three, with their exact names (SPEC section 2), and the online ones of
    // migrations V7 (N7) and V8 (N8: the quota count's).
    assert_eq!(
        indexes,
        [
            "code2des_deleted_idx",
            "code2des_file_status_created_idx",
            "code2des_org_processing_idx",
            "code2des_org_project_file_status_idx",
            "code2des_page_import_idx",
            "code2des_processing_idx",
            "code2des_project_status_created_idx",
            "code2des_project_status_idx"
        ]
    );
}

#[tokio::test]
async fn migrate_function_sets_the_application_role_password_from_its_secret() {
    let name = format!("c2d_migrate_{:016x}", rand::random::<u64>());
    let admin = admin().await;
    admin.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
    let mut cfg = DbConfig::from_url(&admin_url()).unwrap();
    cfg.pg.dbname(&name);
    let password = format!("p{:032x}", rand::random::<u128>());
    let secret = json!({"username": "code2des_app", "password": password}).to_string();
    let deps = Deps {
        db: cfg.clone(),
        ca_bundle: None,
        app_role: Some(code2des_migrate::AppRoleSecret::Json(secret.into())),
        app_iam_role: None,
    };
    let outcome = handle(&deps, invocation()).await;
    // Roles are the cluster's: the verifier stored for it is read back as the owner.
    let stored: Option<String> =
        admin.query_one("SELECT rolpassword FROM pg_authid WHERE rolname = 'code2des_app'", &[]).await.unwrap().get(0);
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await.unwrap();

    let out = outcome.expect("migrate and set the password");
    assert_eq!(out["appRole"], "code2des_app", "{out}");
    let stored = stored.expect("a password is set");
    assert!(stored.starts_with("SCRAM-SHA-256$4096:"), "a SCRAM verifier, never the password itself");
    assert!(!stored.contains(&password) && !out.to_string().contains(&password));
}

/// Direct database access (template.yaml `DatabaseAccess=direct`): `DB_APP_IAM_ROLE` makes the
/// migrate function grant the role `rds_iam`, so that Aurora accepts its IAM tokens; switching
/// back to the proxy takes the membership away again (the proxy logs in with the password, which
/// `rds_iam` would refuse). A local PostgreSQL has no `rds_iam`: the test creates one, as RDS
/// has it (a NOLOGIN role), and uses a role of its own so that parallel tests do not meet it.
#[tokio::test]
async fn migrate_function_grants_rds_iam_in_direct_mode_and_the_proxy_mode_takes_it_back() {
    let name = format!("c2d_migrate_{:016x}", rand::random::<u64>());
    let role = format!("c2d_iam_{:016x}", rand::random::<u64>());
    let admin = admin().await;
    admin
        .batch_execute(
            "DO $$ BEGIN CREATE ROLE rds_iam NOLOGIN; \
             EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$",
        )
        .await
        .unwrap();
    // Two calls: CREATE DATABASE refuses the implicit transaction of a multi-statement batch.
    admin.batch_execute(&format!("CREATE ROLE {role} LOGIN")).await.unwrap();
    admin.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
    let mut cfg = DbConfig::from_url(&admin_url()).unwrap();
    cfg.pg.dbname(&name);
    let deps = Deps { db: cfg.clone(), ca_bundle: None, app_role: None, app_iam_role: Some(role.clone()) };
    let first = handle(&deps, invocation()).await;
    let granted = is_member(&admin, &role).await;
    let again = handle(&deps, invocation()).await;
    let db = shared::db::connect::connect(&cfg, None).await.unwrap();
    let revoked = shared::db::roles::revoke_rds_iam(&db, &role).await;
    let after = is_member(&admin, &role).await;
    let revoked_twice = shared::db::roles::revoke_rds_iam(&db, &role).await;
    drop(db);
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await.unwrap();
    admin.batch_execute(&format!("DROP ROLE {role}")).await.unwrap();

    let first = first.expect("migrate and grant rds_iam");
    assert_eq!(first["appRole"], json!(role), "{first}");
    assert!(granted, "the role is a member of rds_iam after a direct-mode run");
    again.expect("a second run grants again without error");
    assert!(revoked.expect("revoke"), "the proxy mode finds the membership and takes it");
    assert!(!after, "no longer a member");
    assert!(!revoked_twice.expect("revoke again"), "nothing to take the second time");
}

async fn is_member(admin: &tokio_postgres::Client, role: &str) -> bool {
    admin.query_one("SELECT pg_has_role($1, 'rds_iam', 'MEMBER')", &[&role]).await.unwrap().get(0)
}
