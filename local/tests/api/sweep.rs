//! SPEC section 7 "reads stay reads" and issue 13: lifecycle GET, list and result GET send no
//! UPDATE, INSERT or DELETE (proven from the database's side), an overdue job still reads as
//! failed `timed out`, and the sweep persists that expiry with the webhook's fence.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use shared::db::connect::DbConfig;

use crate::helpers::*;

/// Every statement that writes a job table, zero-row ones included (statement-level triggers
/// fire whether or not a row matched), is logged in `write_log`.
async fn log_writes(app: &TestApp) {
    app.batch(
        "CREATE TABLE write_log (tbl text NOT NULL, op text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp()); \
         CREATE FUNCTION log_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
           INSERT INTO write_log (tbl, op) VALUES (TG_TABLE_NAME, TG_OP); RETURN NULL; END $$; \
         CREATE TRIGGER log_write AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON code2des \
           FOR EACH STATEMENT EXECUTE FUNCTION log_write(); \
         CREATE TRIGGER log_write AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON code2des_attempt \
           FOR EACH STATEMENT EXECUTE FUNCTION log_write(); \
         CREATE TRIGGER log_write AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON code2des_idempotency \
           FOR EACH STATEMENT EXECUTE FUNCTION log_write();",
    )
    .await;
}

async fn writes(app: &TestApp) -> Vec<String> {
    app.sql("SELECT tbl || ' ' || op FROM write_log ORDER BY at").await.iter().map(|r| r.get(0)).collect()
}

/// A pool whose every transaction is READ ONLY, as a reader endpoint's would be: a statement
/// that writes (or takes a row lock) fails there instead of succeeding.
fn read_only_pool(app: &TestApp) -> deadpool_postgres::Pool {
    let url = format!("{}?options=-c%20default_transaction_read_only%3Don", db_url(&app.db_name));
    shared::db::connect::pool(&DbConfig::from_url(&url).unwrap(), None, 4).unwrap()
}

/// Everything a plugin reads about these jobs: each GET, the list under every filter, each
/// result (plain, revalidated, and by image).
async fn read_everything(app: &TestApp, t: &Tenant, ids: &[&str], completed: &str, etag: &str) -> Vec<Answer> {
    let mut out = Vec::new();
    for id in ids {
        out.push(app.get(t, Some(&t.sub), id).await);
        out.push(app.result(t, Some(&t.sub), id).await);
    }
    for q in [
        &[][..],
        &[("status", "processing")],
        &[("status", "failed")],
        &[("status", "completed")],
        &[("figmaFileKey", "FILEkey123"), ("status", "failed")],
        &[("limit", "1")],
    ] {
        out.push(app.list(t, Some(&t.sub), q).await);
    }
    let first = app.list(t, Some(&t.sub), &[("limit", "2")]).await;
    let cursor = first.json["nextCursor"].as_str().unwrap().to_owned();
    out.push(first);
    out.push(app.list(t, Some(&t.sub), &[("limit", "2"), ("cursor", &cursor)]).await);
    out.push(app.result_if_none_match(t, completed, etag).await);
    out.push(app.result_images(t, completed, "hero").await);
    out
}

#[tokio::test]
async fn reads_send_no_insert_update_or_delete() {
    let mut app = TestApp::with_deadline(Duration::from_secs(60)).await;
    let t = app.tenant().await;
    let overdue = app.new_job(&t).await;
    let nonce = app.manifest(&overdue).await.nonce;
    assert_eq!(app.progress(&overdue, 1, &nonce, 30, "rendering").await.status, 200);
    app.age(&overdue, 120).await;
    let fresh = app.new_job(&t).await;
    let completed = app.new_job(&t).await;
    assert_eq!(app.complete(&completed).await.status, 200);
    let failed = app.new_job(&t).await;
    assert_eq!(app.fail(&failed, "boom").await.status, 200);
    let cancelled = app.new_job(&t).await;
    assert_eq!(app.cancel(&t, Some(&t.sub), &cancelled).await.status, 200);
    let etag = app.result(&t, Some(&t.sub), &completed).await.headers["etag"].to_str().unwrap().to_owned();
    let ids = [overdue.as_str(), &fresh, &completed, &failed, &cancelled];
    log_writes(&app).await;
    let rows = app.snapshot().await;

    let reads = read_everything(&app, &t, &ids, &completed, &etag).await;
    assert_eq!(writes(&app).await, Vec::<String>::new(), "a read sent a write statement");
    assert_eq!(app.snapshot().await, rows);

    // The overdue job reads as failed `timed out` everywhere, from the row as it is stored.
    assert_eq!(app.job_row(&overdue).await.get::<_, String>("status_label"), "0");
    let j = &reads[0].json;
    assert_eq!((j["status"].as_str(), j["errorMessage"].as_str()), (Some("failed"), Some("timed out")), "{j}");
    assert_eq!(j["updatedBy"], "system:deadline");
    assert!(reads[0].headers.get("retry-after").is_none());
    assert_eq!((reads[1].status, reads[1].code(), reads[1].message()), (409, "job_failed", "timed out"));
    let listed = |a: &Answer| -> Vec<String> {
        a.json["items"].as_array().unwrap().iter().map(|i| i["code2desId"].as_str().unwrap().to_owned()).collect()
    };
    let n = ids.len() * 2;
    assert_eq!(listed(&reads[n + 1]), vec![fresh.clone()], "status=processing");
    assert!(listed(&reads[n + 2]).contains(&overdue), "status=failed");
    assert_eq!(
        reads[n].json["items"].as_array().unwrap().iter().find(|i| i["code2desId"] == overdue.as_str()).unwrap(),
        j
    );

    // The probe sees a write statement even when it matches no row: a refused cancel's
    // fenced UPDATE, the shape of the read-time expiry reads used to carry.
    assert_eq!(app.cancel(&t, Some(&t.sub), &completed).await.status, 409);
    assert!(writes(&app).await.contains(&"code2des UPDATE".to_owned()), "{:?}", writes(&app).await);
    assert_eq!(app.snapshot().await, rows);

    // The same reads on a connection that refuses to write: the same answers.
    let ro = read_only_pool(&app);
    app.lifecycle.pool = ro.clone();
    app.result.pool = ro;
    let refused = app.cancel(&t, Some(&t.sub), &fresh).await;
    assert_ne!(refused.status, 200, "the read-only pool took a write: {refused:?}");
    assert_eq!(app.job_row(&fresh).await.get::<_, String>("status_label"), "0");
    let again = read_everything(&app, &t, &ids, &completed, &etag).await;
    for (a, b) in reads.iter().zip(&again) {
        assert_eq!((a.status, &a.json), (b.status, &b.json), "a read behaves differently when it may not write");
    }

    // Persisting the expiry is the sweep's work, off the read path.
    assert_eq!(app.sweep().await, 1);
    assert_eq!(app.job_row(&overdue).await.get::<_, String>("status_label"), "2");
}

/// The lifecycle GET reads a job as one record, by position (`code2des_read_job`, migration
/// V5); the list reads rows by column name. Both decode into the same `Job` for every kind of
/// job, every field set and unset: a field out of place in either function or in
/// `shared::db::columns::READ_COLUMNS` shows here as a difference (one of the same type included).
#[tokio::test]
async fn the_read_record_and_the_list_row_decode_to_the_same_job() {
    use shared::db::lifecycle::{self as store, ListQuery};
    use shared::domain::scope::JobRef;
    let app = TestApp::with_deadline(Duration::from_secs(60)).await;
    let t = app.tenant().await;
    let fresh = app.new_job(&t).await;
    let reporting = app.new_job(&t).await;
    let nonce = app.manifest(&reporting).await.nonce;
    assert_eq!(app.progress(&reporting, 1, &nonce, 40, "rendering").await.status, 200);
    let overdue = app.new_job(&t).await;
    app.age(&overdue, 120).await;
    let completed = app.new_job(&t).await;
    assert_eq!(app.complete(&completed).await.status, 200);
    let placed = app.new_job(&t).await;
    assert_eq!(app.complete(&placed).await.status, 200);
    assert_eq!(app.place(&t, Some(&t.sub), &placed, "12:34").await.status, 200);
    let failed = app.new_job(&t).await;
    assert_eq!(app.fail(&failed, "boom").await.status, 200);
    let cancelled = app.new_job(&t).await;
    assert_eq!(app.cancel(&t, Some(&t.sub), &cancelled).await.status, 200);
    let retried = app.new_job(&t).await;
    assert_eq!(app.fail(&retried, "first try").await.status, 200);
    assert_eq!(app.retry(&t, &retried, None).await.status, 202);

    let scope = shared::domain::scope::Scope {
        organization_id: shared::domain::ids::OrganizationId::parse(&t.org.to_string()).unwrap(),
        project_id: shared::domain::ids::ProjectId::parse(&t.project.to_string()).unwrap(),
        subject: shared::domain::ids::Subject::parse(&t.sub).unwrap(),
    };
    let client = app.pool.get().await.unwrap();
    let deadline = app.policy.deadline;
    let q = ListQuery { figma_file_key: None, status: None, after: None, limit: 100 };
    let listed = store::list_jobs(&**client, &scope, &q, deadline).await.unwrap().unwrap();
    let ids = [&fresh, &reporting, &overdue, &completed, &placed, &failed, &cancelled, &retried];
    assert_eq!(listed.len(), ids.len());
    for id in ids {
        let code2des_id = shared::domain::ids::Code2desId::parse(id).unwrap();
        let read = store::get_job(&**client, &JobRef { scope: scope.clone(), id: code2des_id }, deadline)
            .await
            .unwrap()
            .expect("visible");
        let row = listed.iter().find(|j| j.id == code2des_id).unwrap();
        assert_eq!(&read, row, "{id}");
    }
    // Every optional field is set in at least one of them, and unset in another.
    let all: Vec<_> = listed.iter().collect();
    for (name, set) in [
        ("progress", all.iter().filter(|j| j.progress.is_some()).count()),
        ("cancelled_at", all.iter().filter(|j| j.cancelled_at.is_some()).count()),
        ("materialized_at", all.iter().filter(|j| j.materialized_at.is_some()).count()),
        ("result_url", all.iter().filter(|j| j.result_url.is_some()).count()),
        ("error_message", all.iter().filter(|j| j.error_message.is_some()).count()),
        ("warning_count", all.iter().filter(|j| j.warning_count.is_some()).count()),
        ("attempt > 1", all.iter().filter(|j| j.attempt > 1).count()),
    ] {
        assert!(set > 0 && set < all.len(), "{name}: set in {set} of {}", all.len());
    }
    // Not visible: NULL, not a record of NULLs.
    let other =
        shared::domain::scope::Scope { subject: shared::domain::ids::Subject::parse("someone-else").unwrap(), ..scope };
    let id = shared::domain::ids::Code2desId::parse(&fresh).unwrap();
    assert!(store::get_job(&**client, &JobRef { scope: other, id }, deadline).await.unwrap().is_none());

    // And by name: the function's SELECT, described by the server, has READ_COLUMNS' columns
    // in READ_COLUMNS' order.
    let src: String = app.sql("SELECT prosrc FROM pg_proc WHERE proname = 'code2des_read_job'").await[0].get(0);
    let select = &src[src.find("SELECT c.id").unwrap()..];
    let select = select[..select.find(';').unwrap()].replacen("INTO r", "", 1);
    let described = client.prepare(&select).await.unwrap();
    let names: Vec<&str> = described.columns().iter().map(|c| c.name()).collect();
    assert_eq!(names, shared::db::columns::READ_COLUMNS);
}

/// Migration V6 took the read functions' SET clause away (its cost, docs/PERFORMANCE.md
/// section 5) and named their tables with the schema instead: temporary tables of the same
/// names, which a caller's search_path finds first, do not stand in for them.
#[tokio::test]
async fn the_read_functions_read_their_own_tables_whatever_the_callers_search_path() {
    use shared::db::lifecycle::{self as store, ListQuery};
    use shared::domain::scope::JobRef;
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    // No search_path of their own (V6); the list prices sorts out of its plans (V7), nothing else.
    let config: Vec<(String, Option<Vec<String>>)> = app
        .sql("SELECT proname::text, proconfig FROM pg_proc WHERE proname IN ('code2des_read_job', 'code2des_list_jobs') ORDER BY 1")
        .await
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        config,
        [
            (
                "code2des_list_jobs".to_owned(),
                Some(vec!["enable_sort=off".to_owned(), "enable_incremental_sort=off".to_owned()])
            ),
            ("code2des_read_job".to_owned(), None)
        ],
        "no search_path set by either"
    );

    // Its own session (not the pool's): temporary tables standing in for every table the
    // functions read, each empty, and a search_path that finds them first or not at all.
    let client = shared::db::connect::connect(&app.db, None).await.unwrap();
    let mut shadow = String::new();
    for table in ["code2des", "code2des_attempt", "organization_member", "organization", "project", "page_import"] {
        shadow.push_str(&format!("CREATE TEMP TABLE {table} (LIKE public.{table}); "));
    }
    client.batch_execute(&shadow).await.unwrap();
    let scope = shared::domain::scope::Scope {
        organization_id: shared::domain::ids::OrganizationId::parse(&t.org.to_string()).unwrap(),
        project_id: shared::domain::ids::ProjectId::parse(&t.project.to_string()).unwrap(),
        subject: shared::domain::ids::Subject::parse(&t.sub).unwrap(),
    };
    let code2des_id = shared::domain::ids::Code2desId::parse(&id).unwrap();
    let q = ListQuery { figma_file_key: None, status: None, after: None, limit: 10 };
    // The statements name the functions through the search_path, as every statement of the
    // service names what it reads, so the schema stays on it; the temporary schema comes first
    // (named, or implicitly: it is searched first for relations unless listed).
    for path in ["pg_temp, public, pg_catalog", "public", "pg_temp, public"] {
        client.batch_execute(&format!("SET search_path = {path}")).await.unwrap();
        let job = store::get_job(&client, &JobRef { scope: scope.clone(), id: code2des_id }, app.policy.deadline)
            .await
            .unwrap();
        assert_eq!(job.map(|j| j.id), Some(code2des_id), "GET with search_path {path}");
        let listed = store::list_jobs(&client, &scope, &q, app.policy.deadline).await.unwrap().unwrap();
        assert_eq!(listed.iter().map(|j| j.id).collect::<Vec<_>>(), [code2des_id], "list with search_path {path}");
    }
}

#[tokio::test]
async fn no_overdue_job_survives_a_sweep() {
    let app = TestApp::with_deadline(Duration::from_secs(60)).await;
    let t = app.tenant().await;
    let mut overdue = Vec::new();
    let mut others = Vec::new();
    for i in 0..6 {
        let id = app.new_job(&t).await;
        if i % 2 == 0 {
            let n = app.manifest(&id).await.nonce;
            assert_eq!(app.progress(&id, 1, &n, 70, "uploading").await.status, 200);
        }
        app.age(&id, 61 + i * 1000).await;
        overdue.push(id);
    }
    for _ in 0..3 {
        others.push(app.new_job(&t).await);
    }
    for _ in 0..2 {
        let done = app.new_job(&t).await;
        assert_eq!(app.complete(&done).await.status, 200);
        app.age(&done, 600).await;
        let failed = app.new_job(&t).await;
        assert_eq!(app.fail(&failed, "boom").await.status, 200);
        app.age(&failed, 600).await;
        let cancelled = app.new_job(&t).await;
        assert_eq!(app.cancel(&t, Some(&t.sub), &cancelled).await.status, 200);
        app.age(&cancelled, 600).await;
        others.extend([done, failed, cancelled]);
    }
    let mut deleted = Vec::new();
    for _ in 0..3 {
        let id = app.new_job(&t).await;
        assert_eq!(app.delete(&t, Some(&t.sub), &id).await.status, 204);
        app.age(&id, 600).await;
        deleted.push(id);
    }
    // Retried: created long ago, its second attempt fresh (not overdue) or itself overdue.
    let retried_fresh = app.new_job(&t).await;
    assert_eq!(app.fail(&retried_fresh, "first").await.status, 200);
    app.age(&retried_fresh, 3600).await;
    assert_eq!(app.retry(&t, &retried_fresh, Some(1)).await.status, 202);
    others.push(retried_fresh);
    let retried_overdue = app.new_job(&t).await;
    assert_eq!(app.fail(&retried_overdue, "first").await.status, 200);
    assert_eq!(app.retry(&t, &retried_overdue, Some(1)).await.status, 202);
    app.age(&retried_overdue, 61).await;
    overdue.push(retried_overdue);
    // And more overdue jobs than one batch of the sweep holds, seeded in SQL.
    app.batch(&format!(
        "INSERT INTO code2des (id, organization_id, project_id, page_import_id, figma_file_key, screen_id, nonce, \
           created_by, updated_by, created_at, updated_at) \
         SELECT gen_random_uuid()::text, {org}, {project}, '{pi}', 'bulk', 'screen', md5(g::text), 'seed', 'seed', \
           now() - interval '2 hours', now() - interval '2 hours' FROM generate_series(1, 1234) g; \
         INSERT INTO code2des_attempt (code2des_id, attempt, started_at) \
         SELECT id, 1, created_at FROM code2des WHERE figma_file_key = 'bulk'",
        org = t.org,
        project = t.project,
        pi = t.page_import
    ))
    .await;

    let views = |ids: Vec<String>| {
        let app = &app;
        let t = &t;
        async move {
            let mut out = Vec::new();
            for id in ids {
                out.push(app.get(t, Some(&t.sub), &id).await.json);
            }
            out
        }
    };
    let all: Vec<String> = overdue.iter().chain(&others).cloned().collect();
    let seen_before = views(all.clone()).await;
    let not_overdue: Vec<String> = others.iter().chain(&deleted).cloned().collect();
    let rows_before = rows_of(&app, &not_overdue).await;

    assert_eq!(app.sweep().await, overdue.len() + 1234, "every overdue job, across batches");

    let left = app
        .scalar_i64(
            "SELECT count(*) FROM code2des c LEFT JOIN code2des_attempt a ON a.code2des_id = c.id \
             WHERE c.status = '0' AND c.deleted_at IS NULL \
             AND COALESCE(a.started_at, c.created_at) < now() - interval '60 seconds'",
        )
        .await;
    assert_eq!(left, 0, "an overdue job survived the sweep");
    for id in &overdue {
        let row = app.job_row(id).await;
        assert_eq!(row.get::<_, String>("status_label"), "2");
        assert_eq!(row.get::<_, Option<String>>("error_message").as_deref(), Some("timed out"));
        assert_eq!(row.get::<_, String>("updated_by"), "system:deadline");
    }
    assert_eq!(
        rows_of(&app, &not_overdue).await,
        rows_before,
        "the sweep touched a job that was not overdue, or an attempt row"
    );
    for id in &deleted {
        assert_eq!(app.job_row(id).await.get::<_, String>("status_label"), "0", "a deleted job was swept");
    }
    // The sweep changes what is stored, never what anyone sees.
    assert_eq!(views(all).await, seen_before);
    assert_eq!(app.sweep().await, 0);
}

#[tokio::test]
async fn a_late_webhook_after_the_sweep_is_409_already_terminal() {
    let app = TestApp::with_deadline(Duration::from_secs(60)).await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    let report = app.upload_result(&id, &artifact(&id, &app.manifest(&id).await.nonce, json!({}), &[]), &[]).await;
    let nonce = report["nonce"].as_str().unwrap().to_owned();
    app.age(&id, 61).await;
    assert_eq!(app.sweep().await, 1);
    let before = app.snapshot().await;
    for body in [
        report,
        json!({"code2des_id": id, "attempt": 1, "nonce": nonce, "status": "failed", "error_message": "timed out"}),
        progress_body(&id, 1, &nonce, 99, "late"),
    ] {
        let a = app.webhook(&body).await;
        assert_eq!((a.status, a.code()), (409, "already_terminal"), "{body}: {a:?}");
        assert!(a.message().contains("timed out"), "{a:?}");
    }
    assert_eq!(app.snapshot().await, before);
    let j = app.get(&t, Some(&t.sub), &id).await.json;
    assert_eq!((j["status"].as_str(), j["errorMessage"].as_str()), (Some("failed"), Some("timed out")));
}

/// These jobs' rows, and every attempt row, as text.
async fn rows_of(app: &TestApp, ids: &[String]) -> Vec<String> {
    let ids = ids.iter().map(|i| format!("'{i}'")).collect::<Vec<_>>().join(",");
    let mut out = Vec::new();
    for q in [
        format!("SELECT row_to_json(c)::text FROM code2des c WHERE id IN ({ids}) ORDER BY id"),
        "SELECT row_to_json(a)::text FROM code2des_attempt a ORDER BY code2des_id".to_owned(),
    ] {
        out.extend(app.sql(&q).await.iter().map(|r| r.get::<_, String>(0)));
    }
    out
}

/// Puts the start of the job's current attempt `secs` (fractional) into the past.
async fn started_ago(app: &TestApp, id: &str, secs: f64) {
    app.batch(&format!(
        "UPDATE code2des_attempt SET started_at = clock_timestamp() - make_interval(secs => {secs}) \
         WHERE code2des_id = '{id}'"
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sweep_racing_a_webhook_has_exactly_one_winner() {
    let deadline = 2.0;
    let app = Arc::new(
        TestApp::with(|s| {
            s.deadline = Duration::from_secs_f64(deadline);
            many_jobs(s);
        })
        .await,
    );
    let t = app.tenant().await;
    app.widen_race_window(30).await;
    let (mut worker, mut sweep) = (0, 0);
    for round in 0..30 {
        let id = app.new_job(&t).await;
        let nonce = app.manifest(&id).await.nonce;
        let report = app.upload_result(&id, &artifact(&id, &nonce, json!({}), &[]), &[]).await;
        // The deadline passes within a few milliseconds of now, before or after.
        started_ago(&app, &id, deadline - 0.04 + f64::from(round % 10) * 0.01).await;
        let w = {
            let (app, report) = (app.clone(), report.clone());
            tokio::spawn(async move { app.webhook(&report).await })
        };
        let s = {
            let app = app.clone();
            tokio::spawn(async move { app.sweep().await })
        };
        let (w, expired) = (w.await.unwrap(), s.await.unwrap());
        let row = app.job_row(&id).await;
        let stored = (
            row.get::<_, String>("status_label"),
            row.get::<_, Option<String>>("error_message"),
            row.get::<_, String>("updated_by"),
        );
        match (w.status, w.code()) {
            (200, _) => {
                assert_eq!(stored, ("1".to_owned(), None, "system:worker".to_owned()), "round {round}: {w:?}");
                assert_eq!(expired, 0, "round {round}: the sweep expired a job the worker completed");
                worker += 1;
            }
            (409, "already_terminal") => {
                let timed_out = ("2".to_owned(), Some("timed out".to_owned()), "system:deadline".to_owned());
                assert_eq!(stored, timed_out, "round {round}: {w:?}");
                assert!(expired <= 1, "round {round}");
                sweep += 1;
            }
            _ => panic!("round {round}: webhook {w:?}, sweep expired {expired}, row {stored:?}"),
        }
    }
    eprintln!("sweep vs webhook, 30 rounds: worker won {worker}, deadline won {sweep}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sweep_racing_a_retry_never_fails_the_new_attempt() {
    let app = Arc::new(
        TestApp::with(|s| {
            s.deadline = Duration::from_secs(60);
            many_jobs(s);
        })
        .await,
    );
    let t = app.tenant().await;
    app.widen_race_window(30).await;
    for round in 0..20 {
        let id = app.new_job(&t).await;
        app.age(&id, 61).await;
        let r = {
            let (app, t, id) = (app.clone(), t.clone(), id.clone());
            tokio::spawn(async move { app.retry(&t, &id, Some(1)).await })
        };
        let s = {
            let app = app.clone();
            tokio::spawn(async move { app.sweep().await })
        };
        let (r, expired) = (r.await.unwrap(), s.await.unwrap());
        assert_eq!(r.status, 202, "round {round}: an overdue job is retried whether or not it was swept: {r:?}");
        assert!(expired <= 1, "round {round}");
        let j: Value = app.get(&t, Some(&t.sub), &id).await.json;
        assert_eq!((j["status"].as_str(), j["attempt"].as_i64()), (Some("processing"), Some(2)), "round {round}");
        assert_eq!(j, r.json, "round {round}");
        assert_eq!(app.complete_at(&id, 2).await.status, 200, "round {round}: attempt 2 is alive");
    }
}
