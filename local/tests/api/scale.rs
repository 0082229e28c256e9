//! A year of data (issue 22, SPEC section 9): with 100 000 jobs in one project and more beside
//! it, every read and write costs what it costs a small tenant. Proved by what PostgreSQL
//! itself counts, never by time: `pg_stat_xact_user_tables` (the rows of `code2des` that one
//! transaction fetched, and whether it scanned the table) and the plans auto_explain reports
//! for the statements inside the read functions (no sort anywhere, no scan of the table). The
//! list's plans are checked after the sixth call, when PostgreSQL may switch a function's
//! statement to a generic plan, and with generic plans forced.

use std::time::Duration;

use code2des_local::year::{self, Seeded, Year};
use futures::StreamExt;
use shared::db::lifecycle::{self, ListQuery};
use shared::domain::ids::{Code2desId, FigmaFileKey, NodeId, OrganizationId, ProgressStage, ProjectId, Subject};
use shared::domain::job::{Nonce, Policy, Status, StatusLabel};
use shared::domain::quota::Quota;
use shared::domain::scope::{JobRef, Scope};
use tokio_postgres::{AsyncMessage, Client};

use crate::helpers::*;

/// The shape of this test's year: 100 000 jobs in the busy project, 150 000 in all.
const YEAR: Year = Year { jobs: 150_000, projects: 400, busy: 100_000, small: 20 };
/// The page the handler asks for (a page of 20, and one more to learn if a next one follows).
const LIMIT: i64 = 21;
/// What a list may read beyond its page: one row past the page per merged branch (three), and
/// the project's processing jobs when the page's status is computed from the deadline (its
/// running jobs and the overdue ones the sweep has not reached: 15 + 3 in the busy project).
const SLACK: i64 = 3 + 18;
/// What a statement about one job may fetch of `code2des`: the job, read, locked, read again by
/// a subquery and updated.
const ONE_JOB: i64 = 6;
/// The busy organization's processing jobs (code2des_local::year: 15 running, 3 overdue that
/// the sweep has not reached): what the quota count of a trigger or a retry there reads.
const ORG_PROCESSING: i64 = 15 + 3;

/// A session of its own whose notices (auto_explain's plans) are collected.
struct Probe {
    client: Client,
    notices: std::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<String>>,
}

/// What one transaction did to `code2des`.
#[derive(Debug)]
struct Reads {
    /// Sequential scans of `code2des` or of `code2des_attempt` (whatever reads the deadline
    /// joins the attempt, and a hash join over it would read it whole).
    seq_scans: i64,
    /// Rows of the table fetched through its indexes.
    fetched: i64,
    /// Entries of its indexes read (an index scan that filters reads entries it never fetches).
    entries: i64,
    plans: String,
}

impl Probe {
    async fn open(app: &TestApp, generic: bool) -> Self {
        let (client, mut connection) = app.db.pg.connect(tokio_postgres::NoTls).await.unwrap();
        let (tx, notices) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
            while let Some(Ok(message)) = messages.next().await {
                if let AsyncMessage::Notice(n) = message {
                    let _ = tx.send(n.message().to_owned());
                }
            }
        });
        client
            .batch_execute(&format!(
                "LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; \
                 SET auto_explain.log_nested_statements = on; SET auto_explain.log_analyze = on; \
                 SET auto_explain.log_timing = off; SET auto_explain.log_level = notice; \
                 SET client_min_messages = notice; SET plan_cache_mode = {}",
                if generic { "force_generic_plan" } else { "auto" }
            ))
            .await
            .unwrap();
        Self { client, notices: std::sync::Mutex::new(notices) }
    }

    fn drain(&self) -> String {
        let mut rx = self.notices.lock().unwrap();
        let mut out = String::new();
        while let Ok(n) = rx.try_recv() {
            out.push_str(&n);
            out.push('\n');
        }
        out
    }

    /// The counters of `code2des` so far. They are the backend's pending counts, which may still
    /// hold earlier transactions' until the backend flushes them (when idle, at most once a
    /// second), so a measure is the difference between two readings in one transaction: no
    /// flush happens inside a transaction. auto_explain is quiet for the reading itself.
    async fn counters(&self) -> (i64, i64, i64) {
        self.client.batch_execute("SET LOCAL auto_explain.log_min_duration = -1").await.unwrap();
        let row = self
            .client
            .query_one(
                "SELECT COALESCE(seq_scan, 0) + (SELECT COALESCE(seq_scan, 0) FROM pg_stat_xact_user_tables \
                 WHERE relid = 'code2des_attempt'::regclass), COALESCE(idx_tup_fetch, 0), \
                 (SELECT COALESCE(sum(pg_stat_get_xact_tuples_returned(indexrelid)), 0)::int8 FROM pg_index \
                 WHERE indrelid = 'code2des'::regclass) FROM pg_stat_xact_user_tables \
                 WHERE relid = 'code2des'::regclass",
                &[],
            )
            .await
            .unwrap();
        self.client.batch_execute("SET LOCAL auto_explain.log_min_duration = 0").await.unwrap();
        (row.get(0), row.get(1), row.get(2))
    }

    /// A transaction to measure begins (what it does is rolled back by [`Self::end`]).
    async fn begin(&self) -> (i64, i64, i64) {
        self.client.batch_execute("BEGIN").await.unwrap();
        let base = self.counters().await;
        self.drain();
        base
    }

    /// What the transaction fetched of `code2des` since `base`, and the plans of its statements.
    async fn end(&self, base: (i64, i64, i64)) -> Reads {
        let now = self.counters().await;
        self.client.batch_execute("ROLLBACK").await.unwrap();
        Reads { seq_scans: now.0 - base.0, fetched: now.1 - base.1, entries: now.2 - base.2, plans: self.drain() }
    }
}

fn plan_nodes(plans: &str) -> Vec<String> {
    plans
        .lines()
        .map(|l| l.trim_start().trim_start_matches("->").trim_start().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

/// No node of any plan sorts, and none scans `code2des` whole.
fn assert_streams(what: &str, r: &Reads) {
    let nodes = plan_nodes(&r.plans);
    assert!(!nodes.is_empty(), "{what}: auto_explain reported no plan");
    for n in &nodes {
        let sorts = (n.starts_with("Sort") || n.starts_with("Incremental Sort"))
            && !n.starts_with("Sort Key")
            && !n.starts_with("Sort Method");
        assert!(!sorts, "{what}: a sort in the plan:\n{}", r.plans);
        assert!(!n.starts_with("Seq Scan on code2des "), "{what}: the table scanned:\n{}", r.plans);
    }
    assert_eq!(r.seq_scans, 0, "{what}: {r:?}");
}

/// A statement about one job read that job and no other: no scan, a few fetches, a few index
/// entries (a read that filtered a project by id shows here as thousands of entries).
fn assert_one_job(what: &str, r: &Reads) {
    assert_eq!(r.seq_scans, 0, "{what}: {r:?}");
    assert!(
        r.fetched <= ONE_JOB && r.entries <= ONE_JOB,
        "{what}: {} fetched, {} index entries read:\n{}",
        r.fetched,
        r.entries,
        r.plans
    );
}

fn scope(t: &code2des_local::seed::Tenant) -> Scope {
    Scope {
        organization_id: OrganizationId::new(t.org).unwrap(),
        project_id: ProjectId::new(t.project).unwrap(),
        subject: Subject::parse(&t.sub).unwrap(),
    }
}

async fn seeded() -> (TestApp, Seeded) {
    // The index-build step triggers through the small tenant for as long as the build runs,
    // which depends on the machine: the quotas are raised out of its way.
    let app = TestApp::with(|s| {
        s.deadline = Duration::from_secs(900);
        many_jobs(s);
    })
    .await;
    let c = app.pool.get().await.unwrap();
    let s = year::seed(&c, &YEAR).await.expect("the year seeds");
    assert!(s.jobs >= 100_000 + YEAR.small, "{}", s.jobs);
    (app, s)
}

/// Every list shape, first page and deep in the project.
fn shapes(s: &Seeded) -> Vec<(String, Option<FigmaFileKey>, Option<Status>)> {
    let mut out = Vec::new();
    for file in [None, Some(s.busy_file.as_str())] {
        for status in [None, Some(Status::Processing), Some(Status::Completed), Some(Status::Failed)] {
            let name = format!(
                "{}{}",
                status.map(Status::api_name).unwrap_or("all"),
                if file.is_some() { " by file" } else { "" }
            );
            out.push((name, file.map(|f| FigmaFileKey::parse(f).unwrap()), status));
        }
    }
    out
}

/// Lists `t`'s jobs as the handler does (the same statement), measured.
async fn list(
    p: &Probe,
    t: &code2des_local::seed::Tenant,
    file: Option<&FigmaFileKey>,
    status: Option<Status>,
    after: Option<(chrono::DateTime<chrono::Utc>, Code2desId)>,
) -> (usize, Reads) {
    let q = ListQuery { figma_file_key: file, status, after, limit: LIMIT };
    let base = p.begin().await;
    let page =
        lifecycle::list_jobs(&p.client, &scope(t), &q, Policy::default().deadline).await.unwrap().expect("visible");
    (page.len(), p.end(base).await)
}

/// One seeded year serves every step (seeding it is most of this test's time).
#[tokio::test]
async fn a_year_of_data_costs_every_tenant_what_a_small_one_costs() {
    let (app, s) = seeded().await;
    every_list_shape_reads_its_page_and_sorts_nothing_at_any_depth_and_after_the_sixth_call(&app, &s).await;
    every_statement_about_one_job_fetches_that_job_only(&app, &s).await;
    the_quota_count_reads_the_organizations_processing_jobs_not_its_history(&app, &s).await;
    an_idle_sweep_reads_fewer_than_a_thousand_rows_and_a_busy_one_what_it_expires(&app, &s).await;
    an_index_builds_while_triggers_and_webhooks_keep_answering(&app, &s).await;
    an_index_left_invalid_by_a_failed_build_is_found_and_built_again(&app).await;
}

async fn every_list_shape_reads_its_page_and_sorts_nothing_at_any_depth_and_after_the_sixth_call(
    app: &TestApp,
    s: &Seeded,
) {
    // Deep in the busy project: the position of its 50 000th newest job of the shape's stored
    // status (half-way down a shorter set, such as the few processing ones), in the file too.
    let deep = |file: Option<&str>, status: Option<Status>| {
        let filter = format!(
            "project_id = {} AND deleted_at IS NULL {} {}",
            s.busy.project,
            file.map(|f| format!("AND figma_file_key = '{f}'")).unwrap_or_default(),
            status.map(|st| format!("AND status = '{}'", st.db_label())).unwrap_or_default()
        );
        format!(
            "SELECT created_at, id FROM code2des WHERE {filter} ORDER BY created_at DESC, id DESC \
             OFFSET (SELECT LEAST(50000, count(*) / 2) FROM code2des WHERE {filter}) LIMIT 1"
        )
    };
    for generic in [false, true] {
        let p = Probe::open(app, generic).await;
        for (name, file, status) in shapes(s) {
            let row = &app.sql(&deep(file.as_ref().map(FigmaFileKey::as_str), status)).await[0];
            let position = (row.get::<_, chrono::DateTime<chrono::Utc>>(0), Code2desId::parse(row.get(1)).unwrap());
            // Six calls first, over both tenants and positions: PostgreSQL decides on a
            // function statement's generic plan after five custom ones.
            for i in 0..6 {
                let (t, after) = if i % 2 == 0 { (&s.busy, Some(position)) } else { (&s.small, None) };
                let file = if std::ptr::eq(t, &s.small) {
                    file.as_ref().map(|_| FigmaFileKey::parse(&s.small_file).unwrap())
                } else {
                    file.clone()
                };
                list(&p, t, file.as_ref(), status, after).await;
            }
            for (where_, after) in [("first page", None), ("deep", Some(position))] {
                let what = format!("{name}, {where_}, {}", if generic { "generic plan" } else { "seventh call" });
                let (n, r) = list(&p, &s.busy, file.as_ref(), status, after).await;
                assert!(n > 0, "{what}: an empty page proves nothing");
                assert_streams(&what, &r);
                assert!(
                    r.fetched <= LIMIT + SLACK,
                    "{what}: {} rows of code2des fetched for a page of {n}:\n{}",
                    r.fetched,
                    r.plans
                );
            }
        }
    }
}

async fn every_statement_about_one_job_fetches_that_job_only(app: &TestApp, s: &Seeded) {
    // The busy project, and an ordinary one (of the 400: its statistics are not among the most
    // common values the planner keeps, which is where a one-row estimate misleads it).
    let row = &app
        .sql("SELECT o.id, p.id FROM organization o JOIN project p ON p.organization_id = o.id WHERE o.name = 'org-7'")
        .await[0];
    let (org, project): (i32, i32) = (row.get(0), row.get(1));
    let ordinary =
        code2des_local::seed::Tenant { org, project, sub: format!("user-{org}"), page_import: format!("pi-{project}") };
    let job: String = app
        .sql(&format!(
            "SELECT id FROM code2des WHERE project_id = {project} AND status = '1' AND deleted_at IS NULL \
             ORDER BY created_at DESC LIMIT 1"
        ))
        .await[0]
        .get(0);
    statements_about_one_job(app, s, &s.busy, &s.busy_job).await;
    statements_about_one_job(app, s, &ordinary, &job).await;
}

async fn statements_about_one_job(app: &TestApp, s: &Seeded, t: &code2des_local::seed::Tenant, completed_job: &str) {
    let p = Probe::open(app, false).await;
    let deadline = Policy::default().deadline;
    let running: Vec<(String, i32, String)> = app
        .sql(&format!(
            "SELECT id, attempt, nonce FROM code2des WHERE project_id = {} AND status = '0' \
             AND created_at > now() - interval '5 minutes' ORDER BY created_at DESC LIMIT 4",
            t.project
        ))
        .await
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let failed: String = app
        .sql(&format!(
            "SELECT id FROM code2des WHERE project_id = {} AND status = '2' AND attempt = 1 AND deleted_at IS NULL LIMIT 1",
            t.project
        ))
        .await[0]
        .get(0);
    let job = |id: &str| JobRef { scope: scope(t), id: Code2desId::parse(id).unwrap() };
    let completed = job(completed_job);
    let nonce = Nonce::generate();
    let policy = Policy::default();

    // The GET's read lives in a function whose statement PostgreSQL may cache as a generic plan:
    // checked on its seventh call, and with generic plans forced.
    for generic in [false, true] {
        let p = Probe::open(app, generic).await;
        let small = JobRef { scope: scope(&s.small), id: Code2desId::parse(&s.small_job).unwrap() };
        for i in 0..6 {
            let j = if i % 2 == 0 { &completed } else { &small };
            assert!(lifecycle::get_job(&p.client, j, deadline).await.unwrap().is_some());
        }
        let base = p.begin().await;
        assert!(lifecycle::get_job(&p.client, &completed, deadline).await.unwrap().is_some());
        let r = p.end(base).await;
        assert_streams("GET", &r);
        assert_one_job(if generic { "GET, generic plan" } else { "GET, seventh call" }, &r);
    }
    // Retry counts the organization's processing jobs (the `active` quota): those, and none of
    // its thousands of others.
    let base = p.begin().await;
    let retried =
        shared::db::retry::retry(&p.client, &job(&failed), &nonce, Some(1), &policy, &Quota::default()).await.unwrap();
    assert!(matches!(retried, shared::db::retry::Retried::Created { .. }), "{retried:?}");
    let r = p.end(base).await;
    assert_eq!(r.seq_scans, 0, "retry: {r:?}");
    assert!(
        r.fetched <= ONE_JOB + ORG_PROCESSING && r.entries <= ONE_JOB + ORG_PROCESSING,
        "retry: {} fetched, {} index entries read:\n{}",
        r.fetched,
        r.entries,
        r.plans
    );
    for (what, id) in [("cancel", &running[0].0), ("delete", &running[1].0)] {
        let base = p.begin().await;
        match what {
            "cancel" => drop(lifecycle::cancel(&p.client, &job(id), deadline).await.unwrap()),
            _ => drop(lifecycle::delete_job(&p.client, &job(id)).await.unwrap()),
        }
        assert_one_job(what, &p.end(base).await);
    }
    let base = p.begin().await;
    let node = NodeId::parse("12:34").unwrap();
    shared::db::placement::place(&p.client, &completed, &node, deadline).await.unwrap();
    assert_one_job("placement", &p.end(base).await);
    let (id, attempt, nonce) = &running[2];
    let at = shared::db::webhook::AttemptRef { id: Code2desId::parse(id).unwrap(), attempt: *attempt, nonce };
    let outcome = shared::db::webhook::Outcome {
        status: Status::Completed,
        result_url: Some("s3://code2des-artifacts/code2des/x/1/result.json"),
        warning_count: Some(0),
        error_message: None,
    };
    let base = p.begin().await;
    assert!(shared::db::webhook::record_outcome(&p.client, at, &outcome, deadline).await.unwrap().is_some());
    assert_one_job("webhook", &p.end(base).await);
    let base = p.begin().await;
    let stage = ProgressStage::parse("stage", "rendering").unwrap();
    shared::db::webhook::progress(&p.client, at, 50, &stage, deadline).await.unwrap();
    shared::db::webhook::fence(&p.client, at.id, deadline).await.unwrap();
    assert_one_job("progress and fence", &p.end(base).await);
}

async fn the_quota_count_reads_the_organizations_processing_jobs_not_its_history(app: &TestApp, s: &Seeded) {
    let p = Probe::open(app, false).await;
    let page_import_id = shared::domain::ids::PageImportId::parse(&s.busy.page_import).unwrap();
    let file = FigmaFileKey::parse(&s.busy_file).unwrap();
    let screen = shared::domain::ids::ScreenId::parse("screen-1").unwrap();
    let (nonce, scope) = (Nonce::generate(), scope(&s.busy));
    let new = shared::db::trigger::NewJob {
        id: Code2desId::new_v7(),
        scope: &scope,
        page_import_id: &page_import_id,
        figma_file_key: &file,
        screen_id: &screen,
        placement_target: None,
        nonce: &nonce,
        idempotency: None,
        viewports: None,
    };
    let deadline = Policy::default().deadline;
    // Let through at the default, then refused at a limit of what is running now: the same reads.
    let mut running = None;
    for _ in 0..2 {
        let quota = match running {
            None => Quota::default(),
            Some(n) => Quota { max_active_jobs_per_org: n, ..Quota::default() },
        };
        let base = p.begin().await;
        let outcome = shared::db::trigger::insert_job(&p.client, &new, &quota, deadline).await.unwrap();
        let r = p.end(base).await;
        match (&outcome, running) {
            (shared::db::trigger::Inserted::Created { quota: q, .. }, None) => running = Some(q.active as i32 - 1),
            (shared::db::trigger::Inserted::QuotaExceeded { quota: q }, Some(n)) => assert_eq!(q.active, i64::from(n)),
            other => panic!("{other:?}"),
        }
        assert_eq!(r.seq_scans, 0, "{r:?}");
        assert!(r.plans.contains("code2des_org_processing_idx"), "the count reads its partial index:\n{}", r.plans);
        assert!(r.fetched <= ORG_PROCESSING + 2, "{} rows of code2des for the count: {r:?}", r.fetched);
    }
}

async fn an_idle_sweep_reads_fewer_than_a_thousand_rows_and_a_busy_one_what_it_expires(app: &TestApp, s: &Seeded) {
    let p = Probe::open(app, false).await;
    let deadline = Policy::default().deadline;
    // The seeded year has three overdue jobs in the busy project: the sweep expires those.
    let base = p.begin().await;
    let expired = shared::db::sweep::expire_overdue(&p.client, deadline, code2des_sweep::BATCH).await.unwrap();
    let r = p.end(base).await;
    assert_eq!(expired.len(), 3, "{r:?}");
    assert_eq!(r.seq_scans, 0, "{r:?}");
    // Found, read again by its primary key, locked and updated, through a few indexes: a
    // handful of fetches per job it expires, and nothing for the 100 000 it does not.
    assert!(r.fetched <= 8 * 3, "it reads what it expires: {r:?}");
    // Persist that run, then an idle one.
    let c = app.pool.get().await.unwrap();
    assert_eq!(shared::db::sweep::expire_overdue(&**c, deadline, code2des_sweep::BATCH).await.unwrap().len(), 3);
    let base = p.begin().await;
    assert!(shared::db::sweep::expire_overdue(&p.client, deadline, code2des_sweep::BATCH).await.unwrap().is_empty());
    let r = p.end(base).await;
    assert_eq!(r.seq_scans, 0, "{r:?}");
    assert!(r.fetched < 1_000, "an idle sweep: {r:?}");
    let jobs = app.count_jobs().await;
    assert!(jobs >= 150_000 - 400, "{jobs}");
    // And every reader sees exactly what it saw before the sweep: the lists above read the
    // deadline themselves. The small tenant's list is the same either way.
    let q = ListQuery { figma_file_key: None, status: Some(Status::Failed), after: None, limit: LIMIT };
    let failed = lifecycle::list_jobs(&**c, &scope(&s.small), &q, deadline).await.unwrap().unwrap();
    assert!(failed.iter().all(|j| j.status == Status::Failed));
    // A hundred overdue at once (the workers down for longer than a deadline): each is still
    // reached through the index and its attempt probed by key, never a scan of either table.
    app.batch(&format!(
        "UPDATE code2des SET status = '0', error_message = NULL WHERE id IN (SELECT id FROM code2des \
         WHERE project_id = {} AND status = '1' AND deleted_at IS NULL ORDER BY created_at LIMIT 100)",
        s.busy.project
    ))
    .await;
    let base = p.begin().await;
    let expired = shared::db::sweep::expire_overdue(&p.client, deadline, code2des_sweep::BATCH).await.unwrap();
    let r = p.end(base).await;
    assert_eq!(expired.len(), 100, "{r:?}");
    assert_eq!(r.seq_scans, 0, "{r:?}");
    assert!(r.fetched <= 8 * 100, "it reads what it expires: {r:?}");
    assert_eq!(shared::db::sweep::expire_overdue(&**c, deadline, code2des_sweep::BATCH).await.unwrap().len(), 100);
}

/// Migration V7's indexes are built by `CREATE INDEX CONCURRENTLY` (shared::db::migrate's online
/// path): while one builds on the year's table, triggers and webhooks go on. Each request is
/// counted as "during the build" when PostgreSQL's progress view shows the build both before
/// and after it.
async fn an_index_builds_while_triggers_and_webhooks_keep_answering(app: &TestApp, s: &Seeded) {
    use shared::db::migrate::{build_index, index_validity, online_indexes, ONLINE};
    let index = online_indexes(ONLINE[0].sql)
        .unwrap()
        .into_iter()
        .find(|i| i.name == "code2des_file_status_created_idx")
        .expect("the list's file index");
    let admin = shared::db::connect::connect(&app.db, None).await.unwrap();
    admin.batch_execute(&format!("DROP INDEX {}", index.name)).await.unwrap();
    let builder = shared::db::connect::connect(&app.db, None).await.unwrap();
    // A small sort memory makes the build spill and take long enough to be watched.
    builder.batch_execute("SET maintenance_work_mem = '1MB'").await.unwrap();
    let build = tokio::spawn({
        let index = index.clone();
        async move { build_index(&builder, &index).await.map(|built| (built, builder)) }
    });
    let building = async || {
        let n: i64 = admin
            .query_one("SELECT count(*) FROM pg_stat_progress_create_index WHERE relid = 'code2des'::regclass", &[])
            .await
            .unwrap()
            .get(0);
        n > 0
    };
    let (mut during, mut answered) = (0, 0);
    while !build.is_finished() {
        let before = building().await;
        let created = app.trigger(&s.small).await;
        assert_eq!(created.status, 202, "{created:?}");
        let id = created.json["code2desId"].as_str().unwrap().to_owned();
        let done = app.complete(&id).await;
        assert_eq!(done.status, 200, "{done:?}");
        answered += 2;
        if before && building().await {
            during += 2;
        }
    }
    let (built, _builder) = build.await.unwrap().expect("the index builds");
    assert!(built);
    assert_eq!(index_validity(&admin, &index.name).await.unwrap(), Some(true));
    assert!(during >= 4, "{during} of {answered} answers came while the index was building");
}

/// A build that fails half-way (here cancelled by a statement timeout) leaves an INVALID index,
/// still maintained by every write but used by no read: the migrate step finds it and builds
/// it again.
async fn an_index_left_invalid_by_a_failed_build_is_found_and_built_again(app: &TestApp) {
    use shared::db::migrate::{index_validity, online_indexes, ONLINE};
    let index = online_indexes(ONLINE[0].sql)
        .unwrap()
        .into_iter()
        .find(|i| i.name == "code2des_project_status_created_idx")
        .expect("the list's project index");
    let c = shared::db::connect::connect(&app.db, None).await.unwrap();
    c.batch_execute(&format!("DROP INDEX {}", index.name)).await.unwrap();
    c.batch_execute("SET statement_timeout = '20ms'; SET maintenance_work_mem = '1MB'").await.unwrap();
    let e = c.batch_execute(&index.statement).await.expect_err("the build is cancelled");
    assert_eq!(e.code(), Some(&tokio_postgres::error::SqlState::QUERY_CANCELED), "{e:?}");
    c.batch_execute("RESET statement_timeout").await.unwrap();
    assert_eq!(index_validity(&c, &index.name).await.unwrap(), Some(false), "left invalid");
    let mut c = c;
    let applied = shared::db::migrate::migrate(&mut c).await.unwrap();
    assert_eq!(applied, [format!("N7__list_sweep_and_purge_indexes: {}", index.name)]);
    assert_eq!(index_validity(&c, &index.name).await.unwrap(), Some(true));
}

/// The busy file's jobs (issue 40): 3 000 running in their first attempt, beside what its
/// `failed` list shows, the 3 overdue and the 40 stored failed, and what it does not, 500
/// completed and 2 jobs created two hours ago whose second attempt is running. Another file of
/// the project holds 2 overdue jobs and 10 failed ones; the small tenant's 20 jobs hold 5 failed
/// and 1 overdue. Every overdue job is older than the deadline (900 s) by an hour or more.
const RUNNING: i64 = 3_000;
/// What the busy project's failed list may read beyond its page: one row past the page per
/// merged branch (two), and the processing jobs created more than a deadline ago, which the
/// overdue branch reads: the file's 3 overdue and 2 retried, the other file's 2 overdue.
const FAILED_SLACK: i64 = 2 + 3 + 2 + 2;

/// Seeds one tenant's jobs: `n` jobs of file `file`, status `status`, attempt `attempt`,
/// created `age` seconds ago and the i-th `step` seconds before that, their current attempt
/// started `started` seconds after creation.
#[allow(clippy::too_many_arguments)]
fn jobs_sql(
    t: &code2des_local::seed::Tenant,
    tag: &str,
    file: &str,
    n: i64,
    status: &str,
    attempt: i32,
    age: f64,
    step: f64,
    started: f64,
) -> String {
    format!(
        "WITH ins AS (INSERT INTO code2des (id, organization_id, project_id, page_import_id, figma_file_key, \
             screen_id, status, attempt, nonce, created_by, updated_by, created_at) \
         SELECT md5('{tag}-{org}-' || g)::uuid::text, {org}, {project}, '{pi}', '{file}', 'screen', '{status}', \
             {attempt}, 'nonce', 'seed', 'seed', now() - make_interval(secs => {age} + g * {step}) \
         FROM generate_series(1, {n}) g RETURNING id, attempt, created_at) \
         INSERT INTO code2des_attempt (code2des_id, attempt, started_at) \
         SELECT id, attempt, created_at + make_interval(secs => {started}) FROM ins;",
        org = t.org,
        project = t.project,
        pi = t.page_import,
    )
}

/// V12's list: the installed one with V13's one change undone (the overdue branch's keyset bound
/// back to the page's position), under another name. The two then differ in nothing else.
async fn install_the_list_before_v13(app: &TestApp) {
    let def: String = app.sql("SELECT pg_get_functiondef('code2des_list_jobs'::regproc)").await[0].get(0);
    let bound = "(LEAST(v_after_created_at, now() - make_interval(secs => $4)),\n                \
                 CASE WHEN v_after_created_at < now() - make_interval(secs => $4) THEN v_after_id ELSE '' END)";
    assert_eq!(def.matches(bound).count(), 2, "V13's bound, once per failed shape:\n{def}");
    let old = def.replace(bound, "(v_after_created_at, v_after_id)").replacen(
        "code2des_list_jobs(",
        "code2des_list_jobs_v12(",
        1,
    );
    app.batch(&old).await;
}

/// Every page of one list shape through `function`, as `row_to_json` text, in one snapshot.
async fn every_page(
    c: &Client,
    function: &str,
    t: &code2des_local::seed::Tenant,
    file: Option<&str>,
    status: Option<&str>,
    deadline: f64,
) -> Vec<String> {
    let sql = format!(
        "SELECT row_to_json(j)::text, j.created_at, j.id FROM {function}($1, $2, $3, $4, $5, $6, $7, $8, $9) j"
    );
    let mut out = Vec::new();
    let mut after: (Option<chrono::DateTime<chrono::Utc>>, Option<String>) = (None, None);
    loop {
        let rows = c
            .query(&sql, &[&t.org, &t.project, &t.sub, &deadline, &file, &status, &after.0, &after.1, &LIMIT])
            .await
            .unwrap();
        out.extend(rows.iter().map(|r| r.get::<_, String>(0)));
        match rows.last() {
            Some(last) if rows.len() == LIMIT as usize => after = (last.get(1), last.get(2)),
            _ => return out,
        }
    }
}

/// Issue 40, migration V13: the failed list's overdue branch starts at now() - deadline, so the
/// jobs running in their first attempt are never read, however many; and it answers what V12's
/// statement answered, page by page. A seed of its own (4 000 jobs): the year above holds 15
/// running jobs in its busy project, too few to tell the two statements apart.
#[tokio::test]
async fn the_failed_list_of_a_file_with_3000_running_jobs_reads_the_overdue_ones_and_its_page() {
    let app = TestApp::new().await;
    let c = app.pool.get().await.unwrap();
    let small = code2des_local::seed::tenant(&c, "small", "sub-small", "pi-small", "1", None).await.unwrap();
    let busy = code2des_local::seed::tenant(&c, "busy", "sub-busy", "pi-busy", "1", None).await.unwrap();
    let hour = 3_600.0;
    app.batch(
        &[
            jobs_sql(&busy, "run", "file-busy", RUNNING, "0", 1, 0.0, 0.2, 0.0),
            jobs_sql(&busy, "due", "file-busy", 3, "0", 1, hour, 600.0, 0.0),
            jobs_sql(&busy, "fail", "file-busy", 40, "2", 1, 1_000.0, 700.0, 0.0),
            jobs_sql(&busy, "done", "file-busy", 500, "1", 1, 900.0, 100.0, 0.0),
            jobs_sql(&busy, "again", "file-busy", 2, "0", 2, 2.0 * hour, 60.0, 2.0 * hour - 300.0),
            jobs_sql(&busy, "due2", "file-other", 2, "0", 1, hour, 900.0, 0.0),
            jobs_sql(&busy, "fail2", "file-other", 10, "2", 1, 500.0, 500.0, 0.0),
            jobs_sql(&small, "run", "file-small", 14, "0", 1, 0.0, 30.0, 0.0),
            jobs_sql(&small, "due", "file-small", 1, "0", 1, hour, 0.0, 0.0),
            jobs_sql(&small, "fail", "file-small", 5, "2", 1, 1_000.0, 300.0, 0.0),
            "ANALYZE code2des, code2des_attempt".to_owned(),
        ]
        .concat(),
    )
    .await;
    let deadline = Policy::default().deadline;
    assert_eq!(deadline, Duration::from_secs(900), "the seed's ages are against this deadline");
    let file = |t: &code2des_local::seed::Tenant| {
        FigmaFileKey::parse(if t.org == busy.org { "file-busy" } else { "file-small" }).unwrap()
    };

    // The status as read, the order and every keyset page are V12's: each list shape (the
    // failed ones changed, the others are the same text), each tenant, by project and by file,
    // at the deadline, at one second (every processing job overdue, the 3 000 running ones too)
    // and at three hours (none overdue).
    install_the_list_before_v13(&app).await;
    c.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ").await.unwrap();
    for deadline in [900.0, 1.0, 3.0 * hour] {
        for t in [&busy, &small] {
            for file in [None, Some(file(t))] {
                for status in [None, Some("0"), Some("1"), Some("2")] {
                    let f = file.as_ref().map(FigmaFileKey::as_str);
                    let now = every_page(&c, "code2des_list_jobs", t, f, status, deadline).await;
                    let before = every_page(&c, "code2des_list_jobs_v12", t, f, status, deadline).await;
                    assert_eq!(now, before, "{} {f:?} status {status:?} deadline {deadline}", t.sub);
                    assert!(!now.is_empty());
                }
            }
        }
    }
    c.batch_execute("COMMIT").await.unwrap();

    // What it reads: the page, and of the 3 000 running jobs none; as many rows as the small
    // tenant's list give or take the overdue ones. After the sixth call, and with generic plans.
    for generic in [false, true] {
        let p = Probe::open(&app, generic).await;
        for by_file in [false, true] {
            for i in 0..6 {
                let t = if i % 2 == 0 { &busy } else { &small };
                list(&p, t, by_file.then(|| file(t)).as_ref(), Some(Status::Failed), None).await;
            }
            let what = format!(
                "failed{}, {}",
                if by_file { " by file" } else { "" },
                if generic { "generic plan" } else { "seventh call" }
            );
            let (n, r) = list(&p, &busy, by_file.then(|| file(&busy)).as_ref(), Some(Status::Failed), None).await;
            assert_eq!(n, LIMIT as usize, "{what}");
            assert_streams(&what, &r);
            assert!(
                r.fetched <= LIMIT + FAILED_SLACK && r.entries <= LIMIT + FAILED_SLACK,
                "{what}: {} rows of code2des fetched, {} index entries read, for a page of {n}:\n{}",
                r.fetched,
                r.entries,
                r.plans
            );
        }
    }

    // The statement before V13 read every running job of the file to find the overdue ones:
    // the measure above tells the two apart.
    let p = Probe::open(&app, false).await;
    let base = p.begin().await;
    let old = every_page(&p.client, "code2des_list_jobs_v12", &busy, Some("file-busy"), Some("2"), 900.0).await;
    let r = p.end(base).await;
    assert_eq!(old.len(), 43);
    assert!(r.fetched >= RUNNING, "V12's failed list: {r:?}");
}
