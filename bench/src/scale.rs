//! A year of data (issue 22): every read at three table sizes, through the release
//! `code2des-local` (HTTP, as a plugin calls it), for the busy project beside the small tenant.
//!
//! For each size a fresh database of the benchmark's cluster is seeded with plain SQL
//! (`code2des_local::year`: 400 projects, one busy project holding a fifth of the table, a
//! small tenant of 20 jobs), the stack is started on it, and each read is sent sequentially
//! (one connection, one request at a time: latency, not throughput), small tenant and busy
//! project alternating, so both see the same machine. The ratio busy / small is the figure:
//! the goal is at most 2 at p50 and p99, at every size. The idle sweep is timed the same way.
//!
//! `--json PATH` also writes every figure for scripts/plot-scale (docs/PERFORMANCE.md's plot).

use std::time::Instant;

use code2des_local::seed::Tenant;
use code2des_local::year::{self, Seeded, Year};
use serde_json::json;
use shared::db::connect::DbConfig;
use shared::domain::cursor::{self, Binding};
use shared::domain::ids::Code2desId;

use crate::stack::{get_request, HttpConn, LocalStack};
use crate::stats::{f2, ms, pct, Table};

/// Rows the session's transaction has read of the sweep's two tables, by scan or by index.
const ROWS_READ: &str = "SELECT sum(idx_tup_fetch + seq_tup_read)::int8 FROM pg_stat_xact_user_tables \
     WHERE relid IN ('code2des'::regclass, 'code2des_attempt'::regclass)";

/// The table sizes: 1 k, 100 k and the year (1.5 M jobs, a project of 300 000).
const FULL: [Year; 3] = [
    Year { jobs: 1_000, projects: 40, busy: 200, small: 20 },
    Year { jobs: 100_000, projects: 400, busy: 20_000, small: 20 },
    Year::FULL,
];
/// `--quick` (CI: it still runs): two small sizes, few samples.
const QUICK: [Year; 2] = [
    Year { jobs: 1_000, projects: 40, busy: 200, small: 20 },
    Year { jobs: 10_000, projects: 40, busy: 2_000, small: 20 },
];

/// One read, as the plugin sends it.
#[derive(Clone, Copy)]
enum Read {
    Get,
    File,
    FileFailed,
    FileProcessing,
    Project,
    ProjectDeep,
    ProjectCompletedDeep,
}

const READS: [Read; 7] = [
    Read::Get,
    Read::File,
    Read::FileFailed,
    Read::FileProcessing,
    Read::Project,
    Read::ProjectDeep,
    Read::ProjectCompletedDeep,
];

impl Read {
    fn name(self) -> &'static str {
        match self {
            Read::Get => "GET one job",
            Read::File => "list by figmaFileKey, first page",
            Read::FileFailed => "list by file, status=failed",
            Read::FileProcessing => "list by file, status=processing",
            Read::Project => "list the project, first page",
            Read::ProjectDeep => "list the project, half-way down (cursor)",
            Read::ProjectCompletedDeep => "list the project, status=completed, half-way down",
        }
    }
}

/// What a tenant's requests need: its ids, a job, its file, and cursors half-way down.
struct Target {
    tenant: Tenant,
    job: String,
    file: String,
    deep: String,
    completed_deep: String,
}

fn base(t: &Tenant) -> String {
    format!("/organizations/{}/projects/{}/code2des", t.org, t.project)
}

fn path(read: Read, t: &Target) -> String {
    let b = base(&t.tenant);
    match read {
        Read::Get => format!("{b}/{}", t.job),
        Read::File => format!("{b}?figmaFileKey={}&limit=20", t.file),
        Read::FileFailed => format!("{b}?figmaFileKey={}&status=failed&limit=20", t.file),
        Read::FileProcessing => format!("{b}?figmaFileKey={}&status=processing&limit=20", t.file),
        Read::Project => format!("{b}?limit=20"),
        Read::ProjectDeep => format!("{b}?limit=20&cursor={}", t.deep),
        Read::ProjectCompletedDeep => format!("{b}?status=completed&limit=20&cursor={}", t.completed_deep),
    }
}

/// A cursor half-way down the tenant's jobs of `status` (a database label), made with the key
/// the stack derives from the same database URL, as if the client had paged there.
async fn deep_cursor(
    c: &tokio_postgres::Client,
    key: &[u8; 32],
    t: &Tenant,
    status: Option<&str>,
) -> Result<String, String> {
    let filter = format!(
        "organization_id = {} AND project_id = {} AND deleted_at IS NULL {}",
        t.org,
        t.project,
        status.map(|s| format!("AND status = '{s}'")).unwrap_or_default()
    );
    let row = c
        .query_one(
            &format!(
                "SELECT created_at, id FROM code2des WHERE {filter} ORDER BY created_at DESC, id DESC \
                 OFFSET (SELECT count(*) / 2 FROM code2des WHERE {filter}) LIMIT 1"
            ),
            &[],
        )
        .await
        .map_err(|e| e.to_string())?;
    let id = Code2desId::parse(row.get(1)).map_err(|e| e.to_string())?;
    let binding = Binding {
        organization_id: t.org,
        project_id: t.project,
        figma_file_key: None,
        status: status.map(|s| match s {
            "0" => "processing",
            "1" => "completed",
            _ => "failed",
        }),
    };
    Ok(cursor::encode(key, row.get(0), id, &binding))
}

/// p50 and p99 (ms) of `n` sequential calls of `read` for each target, alternating.
async fn measure(conn: &mut HttpConn, read: Read, targets: &[&Target; 2], n: usize) -> Result<[(f64, f64); 2], String> {
    let mut lat = [Vec::with_capacity(n), Vec::with_capacity(n)];
    let requests: Vec<Vec<u8>> = targets.iter().map(|t| get_request(&path(read, t), Some(&t.tenant.sub))).collect();
    // Warm-up: each tenant's statements planned and cached by the backends.
    for _ in 0..10 {
        for r in &requests {
            conn.call(r).await.map_err(|e| e.to_string())?;
        }
    }
    for _ in 0..n {
        for (i, r) in requests.iter().enumerate() {
            let t0 = Instant::now();
            let status = conn.call(r).await.map_err(|e| e.to_string())?;
            lat[i].push(ms(t0.elapsed()));
            if status != 200 {
                return Err(format!("{} answered {status}", read.name()));
            }
        }
    }
    Ok([(pct(&lat[0], 50.0), pct(&lat[0], 99.0)), (pct(&lat[1], 50.0), pct(&lat[1], 99.0))])
}

pub async fn run(
    cluster_url: impl Fn(&str) -> String,
    quick: bool,
    json_out: Option<&std::path::Path>,
) -> Result<(), String> {
    let sizes: &[Year] = if quick { &QUICK } else { &FULL };
    let samples = if quick { 20 } else { 300 };
    println!("## A year of data: every read at {} table sizes, busy project beside small tenant\n", sizes.len());
    println!(
        "{samples} sequential requests per read and tenant through code2des-local (HTTP), alternating; \
         p50 / p99 in ms; the goal is busy / small ≤ 2 at both.\n"
    );
    let mut report = Report::new();
    for y in sizes {
        let size = SizeDb::seed(&cluster_url, y).await?;
        size.reads(y, samples, &mut report).await?;
        size.idle_sweep(samples, &mut report).await?;
        size.drop_database().await?;
    }
    report.print(json_out)
}

/// The two tables and the figures for `--json`, filled size by size.
struct Report {
    reads: Table,
    sweep: Table,
    figures: Vec<serde_json::Value>,
}

impl Report {
    fn new() -> Self {
        let reads = Table::new(&[
            "read",
            "jobs",
            "small p50",
            "busy p50",
            "busy/small p50",
            "small p99",
            "busy p99",
            "busy/small p99",
        ]);
        let sweep = Table::new(&["jobs", "seeded in (s)", "idle sweep p50 (ms)", "rows it read (jobs and attempts)"]);
        Self { reads, sweep, figures: Vec::new() }
    }

    fn print(self, json_out: Option<&std::path::Path>) -> Result<(), String> {
        self.reads.print();
        println!();
        self.sweep.print();
        println!();
        if let Some(path) = json_out {
            std::fs::write(path, serde_json::to_string_pretty(&self.figures).unwrap())
                .map_err(|e| format!("{}: {e}", path.display()))?;
            println!("figures written to {}", path.display());
        }
        Ok(())
    }
}

/// One size's database of its own, freshly seeded, and what the reads need of it.
struct SizeDb {
    db: String,
    url: String,
    /// On the maintenance database, to drop this one afterwards.
    admin: tokio_postgres::Client,
    c: tokio_postgres::Client,
    seeded: Seeded,
    seed_secs: f64,
    /// The small tenant, then the busy project.
    targets: Vec<Target>,
}

impl SizeDb {
    /// A fresh database for `y`: migrated, seeded (timed), its seeded overdue jobs swept,
    /// vacuumed, and the targets' cursors made.
    async fn seed(cluster_url: &impl Fn(&str) -> String, y: &Year) -> Result<Self, String> {
        let db = format!("code2des_scale_{}", y.jobs);
        let url = cluster_url(&db);
        let cfg = DbConfig::from_url(&url).map_err(|e| e.to_string())?;
        let admin = shared::db::connect::connect(&DbConfig::from_url(&cluster_url("postgres")).unwrap(), None)
            .await
            .map_err(|e| e.to_string())?;
        admin.batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).await.map_err(|e| e.to_string())?;
        shared::db::connect::ensure_database(&cfg, None).await.map_err(|e| e.to_string())?;
        let mut c = shared::db::connect::connect(&cfg, None).await.map_err(|e| e.to_string())?;
        shared::db::migrate::migrate(&mut c).await.map_err(|e| e.to_string())?;
        let t0 = Instant::now();
        let seeded: Seeded = year::seed(&c, y).await.map_err(|e| e.to_string())?;
        let seed_secs = t0.elapsed().as_secs_f64();
        // The seeded year's overdue jobs are the sweep's first run; the next ones are idle.
        shared::db::sweep::expire_overdue(&c, shared::domain::job::DEFAULT_DEADLINE, 500)
            .await
            .map_err(|e| e.to_string())?;
        c.batch_execute("VACUUM ANALYZE code2des, code2des_attempt").await.map_err(|e| e.to_string())?;
        let key = cfg.cursor_key();
        let mut targets = Vec::new();
        for (t, job, file) in [
            (&seeded.small, &seeded.small_job, &seeded.small_file),
            (&seeded.busy, &seeded.busy_job, &seeded.busy_file),
        ] {
            targets.push(Target {
                tenant: t.clone(),
                job: job.clone(),
                file: file.clone(),
                deep: deep_cursor(&c, &key, t, None).await?,
                completed_deep: deep_cursor(&c, &key, t, Some("1")).await?,
            });
        }
        Ok(Self { db, url, admin, c, seeded, seed_secs, targets })
    }

    /// Every read through a stack of its own on this database: a row of the reads table each.
    async fn reads(&self, y: &Year, samples: usize, report: &mut Report) -> Result<(), String> {
        let stack = LocalStack::start(&self.url).await?;
        let mut conn = HttpConn::connect(stack.addr).await.map_err(|e| e.to_string())?;
        for read in READS {
            let [small, busy] = measure(&mut conn, read, &[&self.targets[0], &self.targets[1]], samples).await?;
            report.reads.row(vec![
                read.name().into(),
                y.jobs.to_string(),
                f2(small.0),
                f2(busy.0),
                f2(busy.0 / small.0),
                f2(small.1),
                f2(busy.1),
                f2(busy.1 / small.1),
            ]);
            report.figures.push(json!({"read": read.name(), "jobs": self.seeded.jobs, "small_p50": small.0,
                "busy_p50": busy.0, "small_p99": small.1, "busy_p99": busy.1}));
        }
        drop(stack);
        Ok(())
    }

    /// The idle sweep, and the rows it read of code2des and of the attempt table it joins
    /// (the statistics counters of its session, flushed by ending each run's transaction).
    async fn idle_sweep(&self, samples: usize, report: &mut Report) -> Result<(), String> {
        let c = &self.c;
        let mut lat = Vec::new();
        let mut read_rows = 0;
        for _ in 0..samples.min(50) {
            c.batch_execute("BEGIN").await.map_err(|e| e.to_string())?;
            let before: i64 = c.query_one(ROWS_READ, &[]).await.map_err(|e| e.to_string())?.get(0);
            let t0 = Instant::now();
            shared::db::sweep::expire_overdue(c, shared::domain::job::DEFAULT_DEADLINE, 500)
                .await
                .map_err(|e| e.to_string())?;
            lat.push(ms(t0.elapsed()));
            let after: i64 = c.query_one(ROWS_READ, &[]).await.map_err(|e| e.to_string())?.get(0);
            read_rows = read_rows.max(after - before);
            c.batch_execute("ROLLBACK").await.map_err(|e| e.to_string())?;
        }
        let jobs = self.seeded.jobs;
        report.sweep.row(vec![
            jobs.to_string(),
            format!("{:.1}", self.seed_secs),
            f2(pct(&lat, 50.0)),
            read_rows.to_string(),
        ]);
        report.figures.push(json!({"read": "idle sweep", "jobs": jobs, "p50": pct(&lat, 50.0), "rows": read_rows,
            "seed_secs": self.seed_secs}));
        Ok(())
    }

    /// Closes this database's connection, then drops it.
    async fn drop_database(self) -> Result<(), String> {
        let Self { db, admin, c, .. } = self;
        drop(c);
        admin.batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")).await.map_err(|e| e.to_string())
    }
}
