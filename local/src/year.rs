//! A year of data, seeded with plain SQL (generate_series) in seconds, for the plan-shape tests
//! and `scripts/bench scale`: many projects of ordinary size, one busy project with most of its
//! jobs in one Figma file, and a small tenant beside them, with the statuses, retries, soft
//! deletes and running jobs that a year of production leaves behind.
//!
//! The shape (issue 22): 1.5 M jobs over 400 projects (one organization each), one of them with
//! 300 000, a small one with 20. Every organization has a few jobs running now (within its
//! quota), and a handful are overdue and not yet swept (the sweep runs every minute).

use shared::db::migrate::{build_index, online_indexes, MigrateError, OnlineIndex, ONLINE};
use tokio_postgres::Client;

use crate::seed::Tenant;

/// Why seeding failed.
#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    #[error(transparent)]
    Database(#[from] tokio_postgres::Error),
    #[error(transparent)]
    Index(#[from] MigrateError),
}

/// How much to seed.
#[derive(Debug, Clone, Copy)]
pub struct Year {
    /// Jobs in the whole table.
    pub jobs: i64,
    /// Ordinary projects (one organization each) sharing what the busy and small ones leave.
    pub projects: i32,
    /// Jobs of the busy project.
    pub busy: i64,
    /// Jobs of the small tenant.
    pub small: i64,
}

impl Year {
    /// The year: 1.5 M jobs, 400 projects, one of 300 000, a small one of 20.
    pub const FULL: Year = Year { jobs: 1_500_000, projects: 400, busy: 300_000, small: 20 };
}

/// What [`seed`] made: the busy and the small tenant, the Figma file most of each one's jobs
/// are in, and the numbers a test or a benchmark reads.
#[derive(Debug, Clone)]
pub struct Seeded {
    pub busy: Tenant,
    pub small: Tenant,
    /// The busy project's main file (nine jobs in ten), and the small tenant's only one.
    pub busy_file: String,
    pub small_file: String,
    /// Jobs in the table after seeding.
    pub jobs: i64,
    /// A job of each tenant to GET.
    pub busy_job: String,
    pub small_job: String,
}

/// Jobs running in every project right now (not overdue): a busy team keeps its quota busy.
const RUNNING_PER_PROJECT: i64 = 3;
const RUNNING_BUSY: i64 = 15;
/// Processing jobs past the deadline that the sweep has not reached yet, in the busy project.
const OVERDUE_BUSY: i64 = 3;

/// Seeds `y` into a migrated, empty database (it creates organizations, projects, members and
/// page imports too). Sub of the busy tenant: `busy-user`; of the small one: `small-user`.
pub async fn seed(c: &Client, y: &Year) -> Result<Seeded, SeedError> {
    // Bulk loading: the indexes of migrations/online are dropped first and built again at the
    // end, from their own definitions (shared::db::migrate), which is several times faster than
    // maintaining them row by row. Nothing else is written meanwhile: this is a fresh database.
    let online: Vec<OnlineIndex> =
        ONLINE.iter().flat_map(|step| online_indexes(step.sql).unwrap_or_default()).collect();
    for index in &online {
        c.batch_execute(&format!("DROP INDEX IF EXISTS {}", index.name)).await?;
    }
    c.batch_execute("SET synchronous_commit = off; SET maintenance_work_mem = '256MB'").await?;
    let busy = crate::seed::tenant(c, "busy", "busy-user", "pi-busy", "1", Some("https://example.test/busy")).await?;
    let small =
        crate::seed::tenant(c, "small", "small-user", "pi-small", "1", Some("https://example.test/small")).await?;
    let others = y.jobs - y.busy - y.small;
    let per_project = (others / i64::from(y.projects.max(1))).max(1);
    // The ordinary organizations, each with one project, a member and a page import.
    c.batch_execute(&format!(
        "INSERT INTO organization (name) SELECT 'org-' || g FROM generate_series(1, {n}) g;
         INSERT INTO project (organization_id, name)
             SELECT o.id, o.name FROM organization o WHERE o.name LIKE 'org-%';
         INSERT INTO organization_member (organization_id, subject)
             SELECT o.id, 'user-' || o.id FROM organization o WHERE o.name LIKE 'org-%';
         INSERT INTO page_import (id, organization_id, project_id, status)
             SELECT 'pi-' || p.id, p.organization_id, p.id, '1' FROM project p WHERE p.name LIKE 'org-%';",
        n = y.projects
    ))
    .await?;
    // Every job, its values as long as real ones (a 64-character nonce, a full result URL). Of
    // the jobs older than an hour: 93 % completed (a third of them placed), 6 % failed (some by the
    // deadline, some cancelled), 1 % soft-deleted (half of those over 30 days ago). The newest
    // RUNNING are processing; in the busy project, OVERDUE of them started past the deadline.
    let job = |project: &str, org: &str, page_import: &str, file: &str, n: i64, running: i64, overdue: i64| {
        format!(
            "INSERT INTO code2des (id, organization_id, project_id, page_import_id, figma_file_key, screen_id,
                 status, attempt, nonce, result_url, warning_count, error_message, materialized_at,
                 materialized_node_id, created_at, updated_at, deleted_at, created_by, updated_by, deleted_by)
             SELECT t.id, {org}, {project}, {page_import}, {file}, 'screen-' || (g % 97),
                 CASE WHEN g > {n} - {running} THEN '0' WHEN g % 100 < 6 THEN '2' ELSE '1' END::code2des_status,
                 CASE WHEN g % 50 = 7 AND g <= {n} - {running} THEN 2 ELSE 1 END, md5(g::text || {project}) || md5({project} || g::text),
                 CASE WHEN g > {n} - {running} OR g % 100 < 6 THEN NULL
                      ELSE 's3://code2des-artifacts/code2des/' || t.id || '/1/result.json' END,
                 CASE WHEN g > {n} - {running} OR g % 100 < 6 THEN NULL ELSE g % 4 END,
                 CASE WHEN g > {n} - {running} THEN NULL WHEN g % 100 < 2 THEN 'timed out'
                      WHEN g % 100 < 3 THEN 'cancelled' WHEN g % 100 < 6 THEN 'conversion failed' END,
                 CASE WHEN g % 3 = 0 AND g <= {n} - {running} AND g % 100 >= 6 THEN at + interval '1 minute' END,
                 CASE WHEN g % 3 = 0 AND g <= {n} - {running} AND g % 100 >= 6 THEN g || ':1' END,
                 at, at + interval '1 minute',
                 CASE WHEN g % 100 = 99 AND g <= {n} - {running} THEN at + interval '1 day' END,
                 'user', 'system:worker',
                 CASE WHEN g % 100 = 99 AND g <= {n} - {running} THEN 'user' END
             FROM generate_series(1, {n}) g,
                 LATERAL (SELECT gen_random_uuid()::text AS id, CASE
                     WHEN g > {n} - {overdue} THEN now() - interval '1 hour' - (g % 7) * interval '1 second'
                     WHEN g > {n} - {running} THEN now() - ({n} - g + 1) * interval '5 seconds'
                     ELSE now() - interval '2 hours' - ({n} - g) * (interval '365 days' / {n})
                 END AS at) t"
        )
    };
    // The busy project: nine jobs in ten in one file, the rest over 50 others.
    c.batch_execute(&job(
        &busy.project.to_string(),
        &busy.org.to_string(),
        "'pi-busy'",
        "CASE WHEN g % 10 = 0 THEN 'busy-file-' || (g % 50) ELSE 'busy-file' END",
        y.busy,
        RUNNING_BUSY,
        OVERDUE_BUSY,
    ))
    .await?;
    c.batch_execute(&job(
        &small.project.to_string(),
        &small.org.to_string(),
        "'pi-small'",
        "'small-file'",
        y.small,
        1,
        0,
    ))
    .await?;
    // The ordinary projects, all in one statement (one file each, and a few others).
    c.batch_execute(
        &job(
            "p.id",
            "p.organization_id",
            "'pi-' || p.id",
            "'file-' || p.id || '-' || (g % 5)",
            per_project,
            RUNNING_PER_PROJECT,
            0,
        )
        .replace(
            &format!("FROM generate_series(1, {per_project}) g,"),
            &format!("FROM project p CROSS JOIN generate_series(1, {per_project}) g,"),
        )
        .replace("END AS at) t", "END AS at) t WHERE p.name LIKE 'org-%'"),
    )
    .await?;
    // Every job's attempt row: the current attempt started when the job was created (a second
    // attempt an hour later, as a retry would have).
    c.batch_execute(
        "INSERT INTO code2des_attempt (code2des_id, attempt, started_at)
             SELECT id, attempt, created_at + (attempt - 1) * interval '1 hour' FROM code2des
             ON CONFLICT (code2des_id) DO NOTHING;
",
    )
    .await?;
    for index in &online {
        build_index(c, index).await?;
    }
    c.batch_execute("ANALYZE organization, project, organization_member, page_import, code2des, code2des_attempt")
        .await?;
    let jobs: i64 = c.query_one("SELECT count(*) FROM code2des", &[]).await?.try_get(0)?;
    let one = |t: &Tenant| {
        format!(
            "SELECT id FROM code2des WHERE project_id = {} AND status = '1' AND deleted_at IS NULL \
             ORDER BY created_at DESC LIMIT 1",
            t.project
        )
    };
    let busy_job: String = c.query_one(&one(&busy), &[]).await?.try_get(0)?;
    let small_job: String = c.query_one(&one(&small), &[]).await?.try_get(0)?;
    Ok(Seeded {
        busy,
        small,
        busy_file: "busy-file".into(),
        small_file: "small-file".into(),
        jobs,
        busy_job,
        small_job,
    })
}

/// `code2des-local seed-year`: migrates the database named by `DATABASE_URL` (creating it if
/// missing), refuses one that has jobs already, seeds `y` and prints what it made.
pub async fn seed_command(cfg: &crate::stack::Config, y: &Year) -> Result<(), String> {
    if y.busy + y.small >= y.jobs || y.busy < 1 {
        return Err("--busy must be at least 1 and leave room for the other projects in --jobs".into());
    }
    let db = crate::stack::prepare_database(&cfg.database_url).await.map_err(|e| e.to_string())?;
    let client = shared::db::connect::connect(&db, None).await.map_err(|e| shared::error::chain(&*e))?;
    let existing: i64 = client
        .query_one("SELECT count(*) FROM code2des", &[])
        .await
        .map_err(|e| shared::error::chain(&e))?
        .try_get(0)
        .map_err(|e| shared::error::chain(&e))?;
    if existing > 0 {
        return Err(format!("the database already has {existing} jobs; seed-year fills an empty one"));
    }
    let started = std::time::Instant::now();
    let s = seed(&client, y).await.map_err(|e| shared::error::chain(&e))?;
    println!(
        "seeded {} jobs in {:.1} s; busy: organization {} project {} (sub {}, file {}), small: organization {} \
         project {} (sub {}, file {})",
        s.jobs,
        started.elapsed().as_secs_f64(),
        s.busy.org,
        s.busy.project,
        s.busy.sub,
        s.busy_file,
        s.small.org,
        s.small.project,
        s.small.sub,
        s.small_file
    );
    Ok(())
}
