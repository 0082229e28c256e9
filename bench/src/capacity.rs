//! What ONE job costs: the inputs of a capacity and cost model, counted rather than timed.
//!
//! N jobs live as a real one does, through the handlers built by their own `Deps::new` in a
//! database of their own: the trigger (with an Idempotency-Key), three polls, the worker's three
//! progress reports and its `completed` report (Standard Webhooks `v1a`, as the reference worker
//! signs them), the worker's artifact written by an S3 client of its own (the worker is not the
//! backend, so its requests are not the backend's), then the plugin's list, result and
//! placement. Around the N jobs: every relation's size after VACUUM, WAL written, transactions
//! and tuples from `pg_stat_database`, the server's CPU from /proc, and the backend's S3
//! requests by kind. Then the two scheduled functions: the sweep idle and with overdue jobs,
//! and the purge of the N jobs once soft-deleted past the retention, then idle.
//!
//! The quotas are raised in the settings (as local/tests/api/helpers.rs `many_jobs` does) so
//! that one organization holds every job; the quota check still runs on each trigger. The jobs
//! join a table that already holds other tenants' (see [`BACKGROUND`]).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use code2des_local::year::{self, Year};
use code2des_testkit::cluster::Cluster;
use code2des_testkit::s3::S3Requests;
use code2des_testkit::{events, worker, Tenant, BUCKET};
use serde_json::{json, Value};
use shared::config::SecretSource;
use shared::domain::protocol::Manifest;
use shared::domain::standard_webhooks as sw;

use crate::fixture::App;
use crate::stats::{f1, f2, Table};

const DB: &str = "code2des_capacity";
const JOBS: usize = 1000;
const QUICK_JOBS: usize = 30;
/// Full lifecycles run before the measurement, so the pooled connections have planned their
/// statements and loaded their catalogs (a warm Lambda's connections have).
const WARM_UP: usize = 3;
/// Polls of each job after the N jobs, to read one poll's cost apart.
const EXTRA_POLLS: usize = 5;
/// Overdue jobs for the sweep's second run.
const OVERDUE: usize = 100;
const POOL: usize = 8;
/// Quotas out of the way of one organization making every job (see the module comment).
const QUOTA: i32 = 100_000;
/// The other tenants' jobs already in the table (`scale`'s seed): in a nearly empty table the
/// planner prefers whole-table scans, and the read figures would grow with N instead of
/// describing one job in a deployment's table.
const BACKGROUND: Year = Year { jobs: 100_000, projects: 400, busy: 20_000, small: 20 };
const QUICK_BACKGROUND: Year = Year { jobs: 1_000, projects: 40, busy: 200, small: 20 };

// --- S3 requests by kind ---------------------------------------------------------------------

/// The kinds of S3 request a cost model prices differently.
const KINDS: [&str; 6] = ["PUT", "GET", "HEAD", "LIST", "DELETE", "other"];

/// What `requests` (code2des-testkit's counter, by kind) has counted so far, in [`KINDS`]' order.
fn kinds(requests: &S3Requests) -> [u64; 6] {
    let [get, head, put, list, delete, other] = requests.snapshot();
    [put, get, head, list, delete, other]
}

fn diff6(a: [u64; 6], b: [u64; 6]) -> [u64; 6] {
    std::array::from_fn(|i| b[i] - a[i])
}

// --- the functions, driven as the plugin and the worker drive them -----------------------------

const FUNCTIONS: [&str; 5] = ["trigger", "lifecycle", "result", "webhook", "placement"];

#[derive(Clone, Copy)]
enum Func {
    Trigger,
    Lifecycle,
    Result,
    Webhook,
    Placement,
}

type Sign = Box<dyn Fn(&str, i64, &[u8]) -> String + Send + Sync>;

struct Stack {
    trigger: code2des_trigger::handler::Deps,
    lifecycle: code2des_lifecycle::handler::Deps,
    result: code2des_result::handler::Deps,
    webhook: code2des_webhook::handler::Deps,
    placement: code2des_placement::handler::Deps,
    tenant: Tenant,
    /// The worker's own client, counted apart from the backend's.
    worker_s3: aws_sdk_s3::Client,
    sign: Sign,
    /// Invocations sent to each function, and the statuses they answered.
    sent: [u64; 5],
    statuses: [BTreeMap<u16, u64>; 5],
    /// The keys the worker wrote.
    worker_keys: HashSet<String>,
}

impl Stack {
    async fn call(&mut self, f: Func, ev: &Value) -> (u16, Value) {
        let req = events::request(ev);
        let resp = match f {
            Func::Trigger => code2des_trigger::handler::handle(&self.trigger, req).await,
            Func::Lifecycle => code2des_lifecycle::handler::handle(&self.lifecycle, req).await,
            Func::Result => code2des_result::handler::handle(&self.result, req).await,
            Func::Webhook => code2des_webhook::handler::handle(&self.webhook, req).await,
            Func::Placement => code2des_placement::handler::handle(&self.placement, req).await,
        };
        let status = resp.status().as_u16();
        let bytes: &[u8] = resp.body().as_ref();
        let body = serde_json::from_slice(bytes).unwrap_or(Value::Null);
        self.sent[f as usize] += 1;
        *self.statuses[f as usize].entry(status).or_default() += 1;
        (status, body)
    }

    /// Calls and insists on `want`: a refusal would make every figure describe another path.
    async fn expect(&mut self, f: Func, ev: &Value, want: u16) -> Result<Value, String> {
        let (status, body) = self.call(f, ev).await;
        if status != want {
            return Err(format!("{} answered {status} (expected {want}): {body}", FUNCTIONS[f as usize]));
        }
        Ok(body)
    }

    fn forget_counts(&mut self) {
        self.sent = [0; 5];
        self.statuses = Default::default();
        self.worker_keys.clear();
    }

    /// The plugin's trigger: the new job's id.
    async fn trigger(&mut self) -> Result<String, String> {
        let t = &self.tenant;
        let key = uuid::Uuid::new_v4().to_string();
        let ev = events::trigger_event(t, Some(&t.sub), events::default_body(t), Some(&key));
        let body = self.expect(Func::Trigger, &ev, 202).await?;
        body["code2desId"].as_str().map(str::to_owned).ok_or_else(|| format!("trigger answered no code2desId: {body}"))
    }

    async fn user(
        &mut self,
        f: Func,
        file: &str,
        id: Option<&str>,
        body: Option<String>,
        want: u16,
    ) -> Result<Value, String> {
        let t = &self.tenant;
        let ev = events::user_event(file, t, Some(&t.sub), id, body);
        self.expect(f, &ev, want).await
    }

    /// A report, signed as the reference worker signs it: a `webhook-id` of its own per message.
    async fn report(&mut self, body: &Value) -> Result<(), String> {
        let raw = serde_json::to_vec(body).map_err(|e| e.to_string())?;
        let id = format!("msg_{}", uuid::Uuid::new_v4().simple());
        let ts = worker::now();
        let mut ev = events::webhook_event(&raw, None);
        ev["headers"][sw::ID_HEADER] = json!(id);
        ev["headers"][sw::TIMESTAMP_HEADER] = json!(ts.to_string());
        ev["headers"][sw::SIGNATURE_HEADER] = json!((self.sign)(&id, ts, &raw));
        self.expect(Func::Webhook, &ev, 200).await.map(drop)
    }

    /// The worker reads the manifest the trigger wrote: the attempt's nonce.
    async fn nonce(&mut self, id: &str) -> Result<String, String> {
        let out = self
            .worker_s3
            .get_object()
            .bucket(BUCKET)
            .key(Manifest::key(id, 1))
            .send()
            .await
            .map_err(|e| format!("the manifest of {id}: {e}"))?;
        let bytes = out.body.collect().await.map_err(|e| e.to_string())?.into_bytes();
        let m: Manifest = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
        Ok(m.nonce)
    }

    async fn worker_put(&mut self, key: String, bytes: Vec<u8>) -> Result<(), String> {
        self.worker_s3
            .put_object()
            .bucket(BUCKET)
            .key(&key)
            .body(bytes.into())
            .send()
            .await
            .map_err(|e| e.to_string())?;
        self.worker_keys.insert(key);
        Ok(())
    }

    /// One job's whole life; its id.
    async fn job(&mut self) -> Result<String, String> {
        let id = self.trigger().await?;
        let nonce = self.nonce(&id).await?;
        for (percent, stage) in [(25, "parsing"), (50, "converting"), (75, "images")] {
            self.report(&worker::progress_body(&id, 1, &nonce, percent, stage)).await?;
            if percent < 75 {
                self.user(Func::Lifecycle, "lifecycle-get.json", Some(&id), None, 200).await?;
            }
        }
        // The worker's artifact as the handler tests write it: result.json and one PNG.
        let image = format!("code2des/{id}/1/images/hero.png");
        let art = worker::artifact(&id, &nonce, json!({"hero": {"key": image, "mime_type": "image/png"}}), &["hero"]);
        self.worker_put(image, worker::png(8, 8)).await?;
        let key = format!("code2des/{id}/1/result.json");
        self.worker_put(key.clone(), serde_json::to_vec(&art).map_err(|e| e.to_string())?).await?;
        self.report(&worker::completed_report(&id, 1, &nonce, &key, art["warning_count"].clone())).await?;
        let seen = self.user(Func::Lifecycle, "lifecycle-get.json", Some(&id), None, 200).await?;
        if seen["status"] != "completed" {
            return Err(format!("the last poll of {id} saw {seen}"));
        }
        let t = &self.tenant;
        let list = events::list_event(t, Some(&t.sub), &[]);
        self.expect(Func::Lifecycle, &list, 200).await?;
        self.user(Func::Result, "result.json", Some(&id), None, 200).await?;
        let node = Some(json!({"nodeId": "12:34"}).to_string());
        self.user(Func::Placement, "placement.json", Some(&id), node, 200).await?;
        Ok(id)
    }
}

// --- PostgreSQL ------------------------------------------------------------------------------

async fn connect(url: &str) -> Result<tokio_postgres::Client, String> {
    let (c, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.map_err(|e| format!("{url}: {e}"))?;
    tokio::spawn(conn);
    Ok(c)
}

fn sql(e: tokio_postgres::Error) -> String {
    e.as_db_error().map(|d| d.message().to_owned()).unwrap_or_else(|| e.to_string())
}

/// The WAL position in bytes.
async fn lsn(c: &tokio_postgres::Client) -> Result<i64, String> {
    Ok(c.query_one("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::int8", &[]).await.map_err(sql)?.get(0))
}

/// A backend reports its statistics at most once a second, else after 10 s idle (PostgreSQL
/// 15+). Making every pooled connection ask for its next flush, which happens before the answer
/// to that very statement is sent, puts everything they did so far in the shared statistics.
/// Answers how many connections it touched: one transaction each, in the figures after it.
async fn flush(pool: &deadpool_postgres::Pool) -> Result<i64, String> {
    let n = pool.status().size;
    let held = futures::future::try_join_all((0..n).map(|_| pool.get())).await.map_err(|e| e.to_string())?;
    for c in &held {
        c.batch_execute("SELECT pg_stat_force_next_flush()").await.map_err(sql)?;
    }
    Ok(n as i64)
}

/// Waits until backend `pid` has exited: its statistics are flushed on exit, before it leaves
/// `pg_stat_activity`.
async fn gone(admin: &tokio_postgres::Client, pid: i32) -> Result<(), String> {
    for _ in 0..500 {
        let n: i64 =
            admin.query_one("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", &[&pid]).await.map_err(sql)?.get(0);
        if n == 0 {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Err(format!("backend {pid} did not exit"))
}

const DB_STATS: [&str; 7] =
    ["xact_commit", "xact_rollback", "tup_inserted", "tup_updated", "tup_deleted", "tup_fetched", "tup_returned"];

/// `pg_stat_database` of the capacity database, read from the maintenance database so that
/// reading it adds nothing to it.
async fn db_stats(admin: &tokio_postgres::Client) -> Result<[i64; 7], String> {
    admin.batch_execute("SELECT pg_stat_clear_snapshot()").await.map_err(sql)?;
    let r = admin
        .query_one(&format!("SELECT {} FROM pg_stat_database WHERE datname = $1", DB_STATS.join(", ")), &[&DB])
        .await
        .map_err(sql)?;
    Ok(std::array::from_fn(|i| r.get(i)))
}

/// Rows read (sequential scans' tuples plus index scans' heap fetches) from each table, as
/// `pg_stat_user_tables` has them.
async fn rows_read(c: &tokio_postgres::Client) -> Result<BTreeMap<String, i64>, String> {
    c.batch_execute("SELECT pg_stat_clear_snapshot()").await.map_err(sql)?;
    let rows = c
        .query("SELECT relname::text, seq_tup_read + coalesce(idx_tup_fetch, 0) FROM pg_stat_user_tables", &[])
        .await
        .map_err(sql)?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

/// A relation of the schema: its table, its kind, its main fork, its free-space and visibility
/// maps, and (with pgstattuple) the bytes of its live tuples.
#[derive(Clone)]
struct Rel {
    table: String,
    kind: String,
    main: i64,
    forks: i64,
    live: Option<i64>,
}

const USER_SCHEMAS: &str = "n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_(toast|temp)'";

struct Sizes {
    rels: BTreeMap<String, Rel>,
    database: i64,
    /// WAL written by the VACUUM before the sizes were read.
    vacuum_wal: i64,
    /// Each relation's scan and write counters when [`sizes`] began, and when it ended (its own
    /// pgstattuple scans included): a window runs from one call's `end` to the next's `start`.
    start: BTreeMap<String, [i64; 9]>,
    end: BTreeMap<String, [i64; 9]>,
}

const SCANS: [&str; 9] = [
    "seq scans",
    "rows read by seq scans",
    "index scans",
    "index entries read",
    "rows fetched by index",
    "inserted",
    "updated",
    "of which HOT",
    "deleted",
];

/// [`SCANS`] of every table and index of the schema, as the shared statistics hold them.
async fn scans(c: &tokio_postgres::Client) -> Result<BTreeMap<String, [i64; 9]>, String> {
    c.batch_execute("SELECT pg_stat_clear_snapshot()").await.map_err(sql)?;
    let rows = c
        .query(
            "SELECT relid::regclass::text, seq_scan, seq_tup_read, coalesce(idx_scan, 0), 0::int8,              coalesce(idx_tup_fetch, 0), n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables              UNION ALL              SELECT indexrelid::regclass::text, 0, 0, idx_scan, idx_tup_read, idx_tup_fetch, 0, 0, 0, 0              FROM pg_stat_user_indexes",
            &[],
        )
        .await
        .map_err(sql)?;
    Ok(rows.iter().map(|r| (r.get(0), std::array::from_fn(|i| r.get(i + 1)))).collect())
}

/// VACUUM of every non-empty table (what dead row versions leave becomes free space, as
/// autovacuum leaves it), then every relation's size, on a connection of its own that is gone
/// (and its statistics flushed) before this returns: pgstattuple's scans must not land in a
/// later window's figures.
async fn sizes(url: &str, admin: &tokio_postgres::Client, pgstattuple: bool) -> Result<Sizes, String> {
    let c = connect(url).await?;
    let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).await.map_err(sql)?.get(0);
    let start = scans(&c).await?;
    let tables: Vec<String> = c
        .query(
            &format!(
                "SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE {USER_SCHEMAS} AND c.relkind IN ('r', 'm') AND pg_relation_size(c.oid) > 0 ORDER BY 1"
            ),
            &[],
        )
        .await
        .map_err(sql)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let before = lsn(&c).await?;
    if !tables.is_empty() {
        c.batch_execute(&format!("VACUUM (ANALYZE) {}", tables.join(", "))).await.map_err(sql)?;
    }
    let vacuum_wal = lsn(&c).await? - before;
    let rows = c
        .query(
            &format!(
                "SELECT c.oid::regclass::text, coalesce(x.indrelid::regclass::text, c.oid::regclass::text), \
                 CASE WHEN c.relkind IN ('i', 'I') THEN 'index' ELSE 'heap' END, pg_relation_size(c.oid), \
                 pg_relation_size(c.oid, 'fsm') + pg_relation_size(c.oid, 'vm') \
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN pg_index x ON x.indexrelid = c.oid \
                 WHERE {USER_SCHEMAS} AND c.relkind IN ('r', 'm', 'p', 'i', 'I') \
                 UNION ALL \
                 SELECT c.oid::regclass::text || ' (TOAST)', c.oid::regclass::text, 'TOAST', \
                 pg_total_relation_size(c.reltoastrelid), 0::int8 \
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE {USER_SCHEMAS} AND c.relkind IN ('r', 'm') AND c.reltoastrelid <> 0"
            ),
            &[],
        )
        .await
        .map_err(sql)?;
    let mut rels = BTreeMap::new();
    for r in rows {
        let (name, kind): (String, String) = (r.get(0), r.get(2));
        let live = if pgstattuple && kind != "TOAST" {
            // Heaps and B-tree indexes; any other access method it refuses stays unknown.
            c.query_one("SELECT tuple_len FROM pgstattuple($1::text::regclass)", &[&name]).await.ok().map(|r| r.get(0))
        } else {
            None
        };
        rels.insert(name, Rel { table: r.get(1), kind, main: r.get(3), forks: r.get(4), live });
    }
    let database: i64 = c.query_one("SELECT pg_database_size(current_database())", &[]).await.map_err(sql)?.get(0);
    // Flushed before the answer to this statement: the next read sees this connection's scans.
    c.batch_execute("SELECT pg_stat_force_next_flush()").await.map_err(sql)?;
    let end = scans(&c).await?;
    drop(c);
    gone(admin, pid).await?;
    Ok(Sizes { rels, database, vacuum_wal, start, end })
}

// --- the server's CPU ------------------------------------------------------------------------

fn clock_ticks() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .filter(|t: &f64| *t > 0.0)
        .unwrap_or(100.0)
}

/// (ppid, utime + stime, cutime + cstime) of a process, in clock ticks.
fn proc_times(pid: u32) -> Option<(u32, u64, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields count from the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    Some((f.get(1)?.parse().ok()?, n(11)? + n(12)?, n(13)? + n(14)?))
}

/// CPU ticks the cluster used so far: the postmaster's own, its live children's, and through
/// the postmaster's cutime/cstime the children it has reaped. A backend that exited keeps
/// counting that way, but only once reaped, and an exited process of a grandchild never (the
/// postmaster forks every server process itself). The handlers' pool keeps its connections
/// open, so the backends doing the work stay in /proc anyway.
fn cluster_ticks(data_dir: &Path) -> Option<u64> {
    let pid: u32 =
        std::fs::read_to_string(data_dir.join("postmaster.pid")).ok()?.lines().next()?.trim().parse().ok()?;
    let (_, own, reaped) = proc_times(pid)?;
    let mut total = own + reaped;
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(child) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        if let Some((ppid, t, _)) = proc_times(child) {
            if ppid == pid {
                total += t;
            }
        }
    }
    Some(total)
}

// --- the run ---------------------------------------------------------------------------------

/// One timed run of a scheduled function: what it did, how long, rows read, S3 requests.
struct OpsRun {
    done: u64,
    objects: u64,
    ms: f64,
    /// Rows read by table, the tables it read only.
    rows: BTreeMap<String, i64>,
    s3: [u64; 6],
}

impl OpsRun {
    fn job_rows(&self) -> i64 {
        self.rows.get("code2des").copied().unwrap_or(0)
    }

    fn all_rows(&self) -> i64 {
        self.rows.values().sum()
    }

    /// "table rows, …", the most read first.
    fn by_table(&self) -> String {
        let mut v: Vec<(&String, &i64)> = self.rows.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        v.iter().map(|(t, r)| format!("{t} {r}")).collect::<Vec<_>>().join(", ")
    }
}

/// Runs `f` between two flushes of the pool and answers its figures.
async fn ops_run<F, Fut>(
    pool: &deadpool_postgres::Pool,
    stats: &tokio_postgres::Client,
    requests: &S3Requests,
    f: F,
) -> Result<OpsRun, String>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<(u64, u64), String>>,
{
    flush(pool).await?;
    let (r0, s0) = (rows_read(stats).await?, kinds(requests));
    let t0 = Instant::now();
    let (done, objects) = f().await?;
    let ms = t0.elapsed().as_secs_f64() * 1000.0;
    flush(pool).await?;
    let (r1, s1) = (rows_read(stats).await?, kinds(requests));
    let rows =
        r1.iter().map(|(t, v)| (t.clone(), v - r0.get(t).copied().unwrap_or(0))).filter(|(_, v)| *v != 0).collect();
    Ok(OpsRun { done, objects, ms, rows, s3: diff6(s0, s1) })
}

/// Every object of the bucket: key and size.
async fn objects(s3: &aws_sdk_s3::Client) -> Result<Vec<(String, i64)>, String> {
    let mut out = Vec::new();
    let mut token = None;
    loop {
        let page = s3
            .list_objects_v2()
            .bucket(BUCKET)
            .set_continuation_token(token.take())
            .send()
            .await
            .map_err(|e| e.to_string())?;
        out.extend(page.contents().iter().filter_map(|o| Some((o.key()?.to_owned(), o.size().unwrap_or(0)))));
        match page.next_continuation_token() {
            Some(t) if page.is_truncated() == Some(true) => token = Some(t.to_owned()),
            _ => return Ok(out),
        }
    }
}

/// The job id of a key under `code2des/{id}/`.
fn job_of(key: &str) -> Option<&str> {
    key.strip_prefix("code2des/")?.split('/').next()
}

fn per(x: f64, n: usize) -> f64 {
    x / n as f64
}

pub async fn run(cluster: &Cluster, quick: bool, json_out: Option<&Path>) -> Result<(), String> {
    let mut b = Bench::new(cluster, quick).await?;
    let pgstattuple = b.warm_up().await?;
    let jobs = b.jobs(pgstattuple).await?;
    let polls = b.polls(&jobs.ids).await?;
    let stored = b.stored(&jobs.ids).await?;
    let stats = connect(&b.url).await?;
    let sweeps = b.sweeps(&stats).await?;
    let purges = b.purges(&stats, &jobs.ids).await?;
    let report = Report { b: &b, pgstattuple, jobs, polls, stored, sweeps, purges };
    let (rel_json, scan_json) = report.print();
    if let Some(path) = json_out {
        report.write_json(path, rel_json, scan_json)?;
    }
    drop(stats);
    b.admin.batch_execute(&format!("DROP DATABASE IF EXISTS {DB} WITH (FORCE)")).await.map_err(sql)?;
    Ok(())
}

/// The capacity database, seeded, and the functions that drive it.
struct Bench {
    /// Jobs measured.
    n: usize,
    url: String,
    data_dir: PathBuf,
    app: App,
    /// On the maintenance database: reads the capacity database's statistics without adding to them.
    admin: tokio_postgres::Client,
    /// What the seed made of the other tenants' jobs, and how many it made.
    background: Year,
    seeded: i64,
    /// `server_version_num`.
    version: i32,
    f: Functions,
}

/// The functions, built as their Lambdas build them, and the S3 requests of each client.
struct Functions {
    settings: shared::config::Settings,
    stack: Stack,
    sweep: code2des_sweep::Deps,
    purge: code2des_purge::Deps,
    backend_requests: Arc<S3Requests>,
    purge_requests: Arc<S3Requests>,
    worker_counts: Arc<S3Requests>,
}

impl Functions {
    async fn new(app: &App, url: &str) -> Result<Self, String> {
        // The reference worker signs with its ed25519 key (`v1a`); the webhook holds the public one.
        let signing = sw::generate_signing_key();
        let mut settings = code2des_testkit::settings(url, POOL);
        settings.max_active_jobs_per_org = QUOTA;
        settings.triggers_per_minute = QUOTA;
        settings.webhook.public_key = SecretSource::Plain(sw::encode_public_key(&signing.verifying_key()).into());
        let (backend_s3, backend_requests) = code2des_testkit::s3::counted(&app.s3);
        let resources = code2des_testkit::resources(settings.clone(), &app.db, &app.pool, backend_s3);
        let (purge_s3, purge_requests) = code2des_testkit::s3::counted(&app.s3);
        // The worker is not the backend: its requests go through the S3 server's own client, counted apart.
        let (worker_s3, worker_counts) = code2des_testkit::s3::counted(&app.store.client);
        let purge_resources = code2des_testkit::resources(settings.clone(), &app.db, &app.pool, purge_s3);
        let e = |e: shared::config::SetupError| e.to_string();
        let stack = Stack {
            trigger: code2des_trigger::handler::Deps::new(&resources).await.map_err(e)?,
            lifecycle: code2des_lifecycle::handler::Deps::new(&resources).await.map_err(e)?,
            result: code2des_result::handler::Deps::new(&resources).await.map_err(e)?,
            webhook: code2des_webhook::handler::Deps::new(&resources).await.map_err(e)?,
            placement: code2des_placement::handler::Deps::new(&resources).await.map_err(e)?,
            tenant: app.tenant().await,
            worker_s3,
            sign: Box::new(move |id: &str, ts: i64, raw: &[u8]| sw::sign_v1a(&signing, id, ts, raw)),
            sent: [0; 5],
            statuses: Default::default(),
            worker_keys: HashSet::new(),
        };
        let sweep = code2des_sweep::Deps::new(&resources).await.map_err(e)?;
        let purge = code2des_purge::Deps::new(&purge_resources).await.map_err(e)?;
        // The seed leaves a few overdue jobs and some deleted long ago, as a year does; the
        // scheduled functions have dealt with them in a running deployment.
        code2des_sweep::sweep(&sweep).await.map_err(|e| e.to_string())?;
        code2des_purge::purge(&purge).await.map_err(|e| e.to_string())?;
        Ok(Self { settings, stack, sweep, purge, backend_requests, purge_requests, worker_counts })
    }
}

/// The N jobs' figures: each counter read before and after them.
struct Jobs {
    ids: Vec<String>,
    wall: Duration,
    before: Sizes,
    after: Sizes,
    /// [`DB_STATS`] over the jobs, the flush's own transactions taken out.
    db: [i64; 7],
    /// WAL bytes written.
    wal: i64,
    /// The backend's S3 requests, and the worker's, by [`KINDS`].
    s3: [u64; 6],
    worker_requests: [u64; 6],
    /// The server's CPU seconds.
    cpu: Option<f64>,
    /// Invocations of each function, and their statuses.
    functions: [u64; 5],
    statuses: [BTreeMap<u16, u64>; 5],
}

/// One poll's cost apart: ms in-process end to end, the server's CPU seconds.
struct Polls {
    ms: f64,
    cpu: Option<f64>,
}

/// The sweep's two runs, and the jobs in the table at the idle one.
struct Sweeps {
    table_jobs: i64,
    idle: OpsRun,
    overdue: OpsRun,
}

/// The N jobs deleted (lifecycle) and purged, and what one LIST costs the loopback server.
struct Purges {
    list_ms: f64,
    bucket_objects: usize,
    delete_s3: [u64; 6],
    /// The purge's runs until one found nothing: all but the last, summed, and the last.
    purged: OpsRun,
    runs: i32,
    idle: OpsRun,
}

impl Bench {
    /// The capacity database seeded with the other tenants' jobs, and the functions on it.
    async fn new(cluster: &Cluster, quick: bool) -> Result<Self, String> {
        let n = if quick { QUICK_JOBS } else { JOBS };
        let url = cluster.url(DB);
        let data_dir = cluster.dir().join("data");
        let app = App::new(&url, POOL).await;
        let admin = connect(&cluster.url("postgres")).await?;
        let background = if quick { QUICK_BACKGROUND } else { BACKGROUND };
        let seeded = {
            let c = connect(&url).await?;
            year::seed(&c, &background).await.map_err(|e| e.to_string())?.jobs
        };
        let version: i32 =
            admin.query_one("SELECT current_setting('server_version_num')::int4", &[]).await.map_err(sql)?.get(0);
        if version < 150_000 {
            return Err(format!(
                "capacity needs PostgreSQL 15 or later (pg_stat_force_next_flush); the server is {version}"
            ));
        }
        let f = Functions::new(&app, &url).await?;
        Ok(Self { n, url, data_dir, app, admin, background, seeded, version, f })
    }

    /// Full lifecycles before the measurement; answers whether pgstattuple is there.
    async fn warm_up(&mut self) -> Result<bool, String> {
        let stack = &mut self.f.stack;
        for _ in 0..WARM_UP {
            stack.job().await?;
        }
        stack.forget_counts();
        // Live bytes beside file sizes, where the server has the contrib module.
        let pgstattuple = {
            let c = connect(&self.url).await?;
            let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).await.map_err(sql)?.get(0);
            let made = c.batch_execute("CREATE EXTENSION IF NOT EXISTS pgstattuple").await.is_ok();
            drop(c);
            gone(&self.admin, pid).await?;
            made
        };
        Ok(pgstattuple)
    }

    /// The N jobs, between two readings of every counter.
    async fn jobs(&mut self, pgstattuple: bool) -> Result<Jobs, String> {
        let (n, url, admin, data_dir) = (self.n, self.url.as_str(), &self.admin, self.data_dir.as_path());
        let (backend_requests, worker_counts) = (&self.f.backend_requests, &self.f.worker_counts);
        let stack = &mut self.f.stack;
        flush(&self.app.pool).await?;
        let before = sizes(url, admin, pgstattuple).await?;
        let db0 = db_stats(admin).await?;
        let (lsn0, cpu0, s3_0, worker0) =
            (lsn(admin).await?, cluster_ticks(data_dir), kinds(backend_requests), kinds(worker_counts));
        let t0 = Instant::now();
        let mut ids = Vec::with_capacity(n);
        for _ in 0..n {
            ids.push(stack.job().await?);
        }
        let wall = t0.elapsed();
        let (cpu1, lsn1, s3_1, worker1) =
            (cluster_ticks(data_dir), lsn(admin).await?, kinds(backend_requests), kinds(worker_counts));
        let touched = flush(&self.app.pool).await?;
        let db1 = db_stats(admin).await?;
        let after = sizes(url, admin, pgstattuple).await?;
        let mut db: [i64; 7] = std::array::from_fn(|i| db1[i] - db0[i]);
        // The flush's own statements, one transaction per pooled connection.
        db[0] -= touched;
        let s3 = diff6(s3_0, s3_1);
        let cpu = match (cpu0, cpu1) {
            (Some(a), Some(b)) => Some((b - a) as f64 / clock_ticks()),
            _ => None,
        };
        let functions = stack.sent;
        let statuses = stack.statuses.clone();
        let worker_requests = diff6(worker0, worker1);
        Ok(Jobs { ids, wall, before, after, db, wal: lsn1 - lsn0, s3, worker_requests, cpu, functions, statuses })
    }

    /// A poll alone: the job above has 3, a real conversion as many as its duration over the
    /// Retry-After (docs/CAPACITY.md), so the model needs one poll's cost apart from the rest.
    async fn polls(&mut self, ids: &[String]) -> Result<Polls, String> {
        let (n, data_dir, stack) = (self.n, self.data_dir.as_path(), &mut self.f.stack);
        let (poll_cpu0, poll_t0) = (cluster_ticks(data_dir), Instant::now());
        for _ in 0..EXTRA_POLLS {
            for id in ids {
                stack.user(Func::Lifecycle, "lifecycle-get.json", Some(id), None, 200).await?;
            }
        }
        let polls = EXTRA_POLLS * n;
        let poll_ms = poll_t0.elapsed().as_secs_f64() * 1000.0 / polls as f64;
        let poll_cpu = match (poll_cpu0, cluster_ticks(data_dir)) {
            (Some(a), Some(b)) => Some((b - a) as f64 / clock_ticks() / polls as f64),
            _ => None,
        };
        Ok(Polls { ms: poll_ms, cpu: poll_cpu })
    }

    /// What the bucket holds for the N jobs, by writer: (objects, bytes) of the backend, the worker.
    async fn stored(&self, ids: &[String]) -> Result<[(u64, i64); 2], String> {
        let measured: HashSet<&str> = ids.iter().map(String::as_str).collect();
        let mut stored = [(0u64, 0i64); 2];
        for (key, size) in objects(&self.app.store.client).await? {
            if job_of(&key).is_some_and(|id| measured.contains(id)) {
                let w = usize::from(self.f.stack.worker_keys.contains(&key));
                stored[w].0 += 1;
                stored[w].1 += size;
            }
        }
        Ok(stored)
    }

    /// The sweep idle, then with [`OVERDUE`] jobs past their deadline.
    async fn sweeps(&mut self, stats: &tokio_postgres::Client) -> Result<Sweeps, String> {
        let (app, sweep, backend_requests) = (&self.app, &self.f.sweep, &self.f.backend_requests);
        let stack = &mut self.f.stack;
        // Through the pool, whose reads the next flush accounts for before the sweep's window opens.
        let table_jobs: i64 = {
            let c = app.pool.get().await.map_err(|e| e.to_string())?;
            c.query_one("SELECT count(*) FROM code2des", &[]).await.map_err(sql)?.get(0)
        };
        let run_sweep =
            || async { Ok::<_, String>((code2des_sweep::sweep(sweep).await.map_err(|e| e.to_string())? as u64, 0)) };
        let sweep_idle = ops_run(&app.pool, stats, backend_requests, run_sweep).await?;
        let mut overdue = Vec::with_capacity(OVERDUE);
        for _ in 0..OVERDUE {
            overdue.push(stack.trigger().await?);
        }
        // As the tests' `age`: the job and its attempt's start, past the deadline.
        let back = format!("{} seconds", self.f.settings.deadline.as_secs() + 60);
        let c = app.pool.get().await.map_err(|e| e.to_string())?;
        c.execute(
            "UPDATE code2des SET created_at = created_at - $2::text::interval WHERE id = ANY($1)",
            &[&overdue, &back],
        )
        .await
        .map_err(sql)?;
        c.execute(
            "UPDATE code2des_attempt SET started_at = started_at - $2::text::interval WHERE code2des_id = ANY($1)",
            &[&overdue, &back],
        )
        .await
        .map_err(sql)?;
        drop(c);
        let sweep_overdue = ops_run(&app.pool, stats, backend_requests, run_sweep).await?;
        // More only on a machine slow enough for the seed's running jobs to pass their deadline.
        if sweep_overdue.done < OVERDUE as u64 {
            return Err(format!("the sweep expired {} of {OVERDUE} overdue jobs", sweep_overdue.done));
        }
        Ok(Sweeps { table_jobs, idle: sweep_idle, overdue: sweep_overdue })
    }

    /// The N jobs deleted through the lifecycle function, then, once past the retention, purged
    /// until a run finds nothing; checks that nothing of them is left.
    async fn purges(&mut self, stats: &tokio_postgres::Client, ids: &[String]) -> Result<Purges, String> {
        let (list_ms, bucket_objects) = self.list_cost(&ids[0]).await?;
        let delete_s3 = self.delete(ids).await?;
        let (app, n) = (&self.app, self.n);
        let (purge, purge_requests) = (&self.f.purge, &self.f.purge_requests);
        let measured: HashSet<&str> = ids.iter().map(String::as_str).collect();
        let run_purge = || async {
            let p = code2des_purge::purge(purge).await.map_err(|e| e.to_string())?;
            Ok::<_, String>((p.jobs, p.objects))
        };
        let mut purged = OpsRun { done: 0, objects: 0, ms: 0.0, rows: BTreeMap::new(), s3: [0; 6] };
        let mut purge_runs = 0;
        let purge_idle = loop {
            let r = ops_run(&app.pool, stats, purge_requests, run_purge).await?;
            if r.done == 0 {
                break r;
            }
            purge_runs += 1;
            if purge_runs > 50 {
                return Err("the purge did not finish in 50 runs".into());
            }
            purged.done += r.done;
            purged.objects += r.objects;
            purged.ms += r.ms;
            for (t, v) in r.rows {
                *purged.rows.entry(t).or_default() += v;
            }
            purged.s3 = std::array::from_fn(|i| purged.s3[i] + r.s3[i]);
        };
        let left: i64 =
            stats.query_one("SELECT count(*) FROM code2des WHERE id = ANY($1)", &[&ids]).await.map_err(sql)?.get(0);
        let objects_left = objects(&app.store.client)
            .await?
            .iter()
            .filter(|(k, _)| job_of(k).is_some_and(|id| measured.contains(id)))
            .count();
        if purged.done != n as u64 || left != 0 || objects_left != 0 {
            return Err(format!(
                "the purge removed {} of {n} jobs; {left} rows and {objects_left} objects of them are left",
                purged.done
            ));
        }
        Ok(Purges { list_ms, bucket_objects, delete_s3, purged, runs: purge_runs, idle: purge_idle })
    }

    /// What one LIST costs the loopback server with the bucket as full as it is (ms), and the
    /// bucket's objects: the purge lists each job's prefix twice, and s3s-fs walks the whole
    /// bucket for every LIST.
    async fn list_cost(&self, id: &str) -> Result<(f64, usize), String> {
        let app = &self.app;
        let t_list = Instant::now();
        app.store
            .client
            .list_objects_v2()
            .bucket(BUCKET)
            .prefix(format!("code2des/{id}/"))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let list_ms = t_list.elapsed().as_secs_f64() * 1000.0;
        let bucket_objects = objects(&app.store.client).await?.len();
        Ok((list_ms, bucket_objects))
    }

    /// Each job's DELETE through the lifecycle function (answers the backend's S3 requests for
    /// them), then their `deleted_at` moved past the retention.
    async fn delete(&mut self, ids: &[String]) -> Result<[u64; 6], String> {
        let (app, backend_requests) = (&self.app, &self.f.backend_requests);
        let stack = &mut self.f.stack;
        let s3_d0 = kinds(backend_requests);
        for id in ids {
            stack.user(Func::Lifecycle, "lifecycle-delete.json", Some(id.as_str()), None, 204).await?;
        }
        let delete_s3 = diff6(s3_d0, kinds(backend_requests));
        let c = app.pool.get().await.map_err(|e| e.to_string())?;
        c.execute(
            "UPDATE code2des SET deleted_at = now() - make_interval(days => $2 + 1) WHERE id = ANY($1)",
            &[&ids, &self.f.settings.purge_after_days],
        )
        .await
        .map_err(sql)?;
        drop(c);
        Ok(delete_s3)
    }
}

/// Everything measured, to print and to write as JSON.
struct Report<'a> {
    b: &'a Bench,
    pgstattuple: bool,
    jobs: Jobs,
    polls: Polls,
    stored: [(u64, i64); 2],
    sweeps: Sweeps,
    purges: Purges,
}

impl Report<'_> {
    /// Prints every table; answers the relations' and the scans' figures for the JSON.
    fn print(&self) -> (Vec<Value>, Vec<Value>) {
        self.print_assumptions();
        self.print_functions();
        self.print_postgres();
        let rel_json = self.print_relations();
        let scan_json = self.print_scans();
        self.print_s3();
        self.print_scheduled();
        (rel_json, scan_json)
    }

    fn print_assumptions(&self) {
        let (n, b, wall, seeded) = (self.b.n, self.b, self.jobs.wall, self.b.seeded);
        println!("## Capacity: what one job costs ({n} jobs through the in-process handlers)\n");
        println!(
            "Assumptions: one organization and project, the quotas raised to {QUOTA} in the settings (as \
             local/tests/api/helpers.rs `many_jobs` does) so one organization holds every job, in a table already \
             holding {seeded} jobs of {} other projects (the seed of `scale`, swept and purged once); per job: a trigger with \
             an Idempotency-Key, the worker's 3 progress reports and its `completed` report (Standard Webhooks `v1a`, a \
             webhook-id each), 3 polls, the worker's artifact (result.json and one 8×8 PNG) written with its own S3 \
             client, then a list (first page), the result and a placement. Jobs one after another, after {WARM_UP} \
             warm-up jobs; figures are (after − before) / {n}. PostgreSQL {} with fsync off and autovacuum on; sizes are \
             read after VACUUM (ANALYZE). Not counted: the plugin's downloads of presigned image URLs, API Gateway, Lambda.\n",
            b.background.projects + 2,
            b.version / 10_000
        );
        println!(
            "Wall time of the {n} jobs: {:.1} s ({} ms a job, not a figure of interest).\n",
            wall.as_secs_f64(),
            f2(wall.as_secs_f64() * 1000.0 / n as f64)
        );
    }

    fn print_functions(&self) {
        let (n, functions, statuses) = (self.b.n, self.jobs.functions, &self.jobs.statuses);
        let mut t = Table::new(&["function", "invocations per job", "answers"]);
        for (i, name) in FUNCTIONS.iter().enumerate() {
            let answers: Vec<String> = statuses[i].iter().map(|(s, c)| format!("{s} ×{c}")).collect();
            t.row(vec![(*name).into(), f2(per(functions[i] as f64, n)), answers.join(", ")]);
        }
        t.row(vec!["all".into(), f2(per(functions.iter().sum::<u64>() as f64, n)), String::new()]);
        println!("### Requests per function per job\n");
        t.print();
    }

    fn xacts(&self) -> i64 {
        self.jobs.db[0] + self.jobs.db[1]
    }

    /// Growth of every relation's bytes, all forks and TOAST.
    fn rels_growth(&self) -> i64 {
        let rel_bytes = |s: &Sizes| s.rels.values().map(|r| r.main + r.forks).sum::<i64>();
        rel_bytes(&self.jobs.after) - rel_bytes(&self.jobs.before)
    }

    fn db_growth(&self) -> i64 {
        self.jobs.after.database - self.jobs.before.database
    }

    /// Growth of the live tuples' bytes, where pgstattuple read them.
    fn live_growth(&self) -> Option<i64> {
        let (before, after) = (&self.jobs.before, &self.jobs.after);
        if self.pgstattuple {
            Some(
                after
                    .rels
                    .iter()
                    .map(|(k, r)| r.live.unwrap_or(0) - before.rels.get(k).and_then(|b| b.live).unwrap_or(0))
                    .sum(),
            )
        } else {
            None
        }
    }

    fn print_postgres(&self) {
        let (n, db, after, cpu) = (self.b.n, &self.jobs.db, &self.jobs.after, self.jobs.cpu);
        let mut t = Table::new(&["PostgreSQL", "per job", "in all"]);
        let xacts = self.xacts();
        t.row(vec!["transactions (commit + rollback)".into(), f2(per(xacts as f64, n)), xacts.to_string()]);
        t.row(vec!["  of which rolled back".into(), f2(per(db[1] as f64, n)), db[1].to_string()]);
        for (i, name) in DB_STATS.iter().enumerate().skip(2) {
            t.row(vec![
                format!("tuples {}", name.trim_start_matches("tup_")),
                f1(per(db[i] as f64, n)),
                db[i].to_string(),
            ]);
        }
        let wal = self.jobs.wal;
        t.row(vec!["WAL bytes".into(), f1(per(wal as f64, n)), wal.to_string()]);
        t.row(vec![
            "WAL bytes of the VACUUM ANALYZE afterwards".into(),
            f1(per(after.vacuum_wal as f64, n)),
            after.vacuum_wal.to_string(),
        ]);
        let rels_growth = self.rels_growth();
        t.row(vec![
            "bytes of the relations (all forks, TOAST)".into(),
            f1(per(rels_growth as f64, n)),
            rels_growth.to_string(),
        ]);
        let db_growth = self.db_growth();
        t.row(vec![
            "bytes of the database (pg_database_size)".into(),
            f1(per(db_growth as f64, n)),
            db_growth.to_string(),
        ]);
        if let Some(l) = self.live_growth() {
            t.row(vec!["bytes of live tuples (pgstattuple)".into(), f1(per(l as f64, n)), l.to_string()]);
        }
        match cpu {
            Some(s) => t.row(vec![
                "server CPU ms (utime + stime of the cluster's processes, /proc)".into(),
                format!("{:.3}", s * 1000.0 / n as f64),
                format!("{:.0}", s * 1000.0),
            ]),
            None => t.row(vec!["server CPU ms".into(), "not read (no /proc or postmaster.pid)".into(), String::new()]),
        }
        println!("### PostgreSQL per job\n");
        t.print();
        println!(
            "One poll more (GET of a completed job, {EXTRA_POLLS} per job after the {n} jobs, not in the figures above): \
             server CPU {} ms, {} ms in-process end to end.\n",
            self.polls.cpu.map(|s| format!("{:.3}", s * 1000.0)).unwrap_or_else(|| "not read".into()),
            f2(self.polls.ms)
        );
    }

    /// Bytes per relation; answers each one's figures for the JSON.
    fn print_relations(&self) -> Vec<Value> {
        let (n, pgstattuple, before, after) = (self.b.n, self.pgstattuple, &self.jobs.before, &self.jobs.after);
        let mut t = Table::new(&[
            "relation",
            "kind",
            "main fork before",
            "after",
            "bytes per job",
            "FSM+VM per job",
            "live tuple bytes per job",
        ]);
        let mut by_table: Vec<(&String, &Rel)> = after.rels.iter().collect();
        by_table.sort_by(|a, b| (&a.1.table, &a.1.kind, a.0).cmp(&(&b.1.table, &b.1.kind, b.0)));
        let mut rel_json = Vec::new();
        for (name, r) in by_table {
            let b = before.rels.get(name).cloned().unwrap_or(Rel {
                table: r.table.clone(),
                kind: r.kind.clone(),
                main: 0,
                forks: 0,
                live: None,
            });
            let live = match (r.live, pgstattuple) {
                (Some(l), true) => Some(l - b.live.unwrap_or(0)),
                _ => None,
            };
            t.row(vec![
                name.clone(),
                r.kind.clone(),
                b.main.to_string(),
                r.main.to_string(),
                f1(per((r.main - b.main) as f64, n)),
                f1(per((r.forks - b.forks) as f64, n)),
                // 0.0 rather than -0.0 when a B-tree's deduplication saved a few bytes over N jobs.
                live.map(|l| f1((per(l as f64, n) * 10.0).round() / 10.0 + 0.0)).unwrap_or_else(|| "–".into()),
            ]);
            rel_json.push(
                json!({"relation": name, "table": r.table, "kind": r.kind, "main_before": b.main, "main_after": r.main,
                "bytes_per_job": per((r.main - b.main) as f64, n), "fsm_vm_per_job": per((r.forks - b.forks) as f64, n),
                "live_bytes_per_job": live.map(|l| per(l as f64, n))}),
            );
        }
        println!(
            "### Bytes per relation (after VACUUM (ANALYZE){})\n",
            if pgstattuple { "; live tuples by pgstattuple" } else { "" }
        );
        t.print();
        rel_json
    }

    /// Reads and writes per relation; answers each one's figures for the JSON.
    fn print_scans(&self) -> Vec<Value> {
        let (n, before, after) = (self.b.n, &self.jobs.before, &self.jobs.after);
        let mut head = vec!["relation"];
        head.extend(SCANS);
        let mut t = Table::new(&head);
        let mut scan_json = Vec::new();
        for (name, a) in &after.start {
            let b = before.end.get(name).copied().unwrap_or_default();
            let d: [i64; 9] = std::array::from_fn(|i| a[i] - b[i]);
            if d.iter().all(|x| *x == 0) {
                continue;
            }
            let mut cells = vec![name.clone()];
            cells.extend(d.iter().map(|x| f2(per(*x as f64, n))));
            t.row(cells);
            let fields: serde_json::Map<_, _> =
                SCANS.iter().zip(d).map(|(k, v)| (k.to_string(), json!(per(v as f64, n)))).collect();
            scan_json.push(json!({"relation": name, "per_job": fields}));
        }
        println!(
            "### Reads and writes per job by relation (pg_stat_user_tables, pg_stat_user_indexes; relations with any)\n"
        );
        t.print();
        scan_json
    }

    /// S3 requests and storage per job.
    fn print_s3(&self) {
        let (n, j, stored) = (self.b.n, &self.jobs, &self.stored);
        let mut t = Table::new(&["S3 requests per job", "PUT", "GET", "HEAD", "LIST", "DELETE", "other", "all"]);
        let row = |what: &str, r: [u64; 6], jobs: usize| {
            let mut cells = vec![what.to_owned()];
            cells.extend(r.iter().map(|x| f2(per(*x as f64, jobs))));
            cells.push(f2(per(r.iter().sum::<u64>() as f64, jobs)));
            cells
        };
        t.row(row("backend (the functions' counted client)", j.s3, n));
        t.row(row("worker (what it sent; its own client)", j.worker_requests, n));
        t.row(row("DELETE of the job (lifecycle)", self.purges.delete_s3, n));
        t.row(row("purge (ops/purge)", self.purges.purged.s3, n));
        println!("### S3 requests per job (presigning is not a request)\n");
        t.print();

        let mut t = Table::new(&["S3 objects stored, written by", "objects per job", "bytes per job"]);
        for (i, who) in ["backend", "worker"].iter().enumerate() {
            t.row(vec![(*who).into(), f2(per(stored[i].0 as f64, n)), f1(per(stored[i].1 as f64, n))]);
        }
        println!("### S3 storage per job (the bucket listed after the {n} jobs)\n");
        t.print();
    }

    fn print_scheduled(&self) {
        let (n, s, p) = (self.b.n, &self.sweeps, &self.purges);
        let (table_jobs, purge_runs, bucket_objects) = (s.table_jobs, p.runs, p.bucket_objects);
        let mut t = Table::new(&[
            "scheduled run",
            "jobs",
            "objects deleted",
            "time (ms)",
            "rows of code2des read",
            "rows read, all tables",
            "S3 PUT/GET/HEAD/LIST/DELETE",
            "rows read by table",
        ]);
        let s3_cells = |r: &[u64; 6]| r[..5].iter().map(u64::to_string).collect::<Vec<_>>().join("/");
        let sweep_idle_name = format!("sweep, idle ({table_jobs} jobs in the table, none overdue)");
        let sweep_overdue_name = format!("sweep, {OVERDUE} overdue");
        let purge_name = format!(
            "purge of {n} jobs deleted {} days ago ({purge_runs} run{})",
            self.b.f.settings.purge_after_days + 1,
            if purge_runs == 1 { "" } else { "s" }
        );
        let runs: [(&str, &OpsRun); 4] = [
            (&sweep_idle_name, &s.idle),
            (&sweep_overdue_name, &s.overdue),
            (&purge_name, &p.purged),
            ("purge, idle", &p.idle),
        ];
        for (name, r) in runs {
            t.row(vec![
                name.to_owned(),
                r.done.to_string(),
                r.objects.to_string(),
                f2(r.ms),
                r.job_rows().to_string(),
                r.all_rows().to_string(),
                s3_cells(&r.s3),
                r.by_table(),
            ]);
        }
        println!("### The scheduled functions (each run between two statistics flushes)\n");
        t.print();
        println!(
            "One LIST of a job's prefix on the loopback S3 server took {} ms with {bucket_objects} objects in the bucket \
             (it walks the whole bucket's directory for every LIST, whatever the prefix; S3 does not): the purge's time here is that server's more \
             than the database's, whose idle run takes milliseconds.\n",
            f2(p.list_ms)
        );
        println!(
            "Purge per job: {} objects deleted, {} rows read, {} ms, S3 {} requests ({} LIST, {} DELETE).\n",
            f2(per(p.purged.objects as f64, n)),
            f2(per(p.purged.all_rows() as f64, n)),
            f2(p.purged.ms / n as f64),
            f2(per(p.purged.s3.iter().sum::<u64>() as f64, n)),
            f2(per(p.purged.s3[3] as f64, n)),
            f2(per(p.purged.s3[4] as f64, n)),
        );
    }

    /// What one job costs, as scripts read it: every figure of the tables per job.
    fn write_json(&self, path: &Path, rel_json: Vec<Value>, scan_json: Vec<Value>) -> Result<(), String> {
        let (n, b, j, p) = (self.b.n, self.b, &self.jobs, &self.purges);
        let stored = &self.stored;
        let kinds_json = |r: [u64; 6], jobs: usize| -> Value {
            KINDS
                .iter()
                .zip(r)
                .map(|(k, v)| (k.to_string(), json!(per(v as f64, jobs))))
                .collect::<serde_json::Map<_, _>>()
                .into()
        };
        let ops = |r: &OpsRun| {
            json!({"done": r.done, "objects": r.objects, "ms": r.ms, "rows_code2des": r.job_rows(),
            "rows_all_tables": r.all_rows(), "rows_by_table": r.rows, "s3": KINDS.iter().zip(r.s3).map(|(k, v)| (k.to_string(), json!(v))).collect::<HashMap<_, _>>()})
        };
        let figures = json!({
            "jobs": n,
            "assumptions": {"organizations": 1, "quotas_raised_to": QUOTA, "polls": 3, "progress_reports": 3,
                "background_jobs": b.seeded, "background_projects": b.background.projects + 2,
                "worker_artifact": "result.json + one 8x8 PNG", "signature": "Standard Webhooks v1a",
                "postgres_major": b.version / 10_000, "warm_up_jobs": WARM_UP},
            "invocations_per_job": FUNCTIONS.iter().zip(j.functions).map(|(f, c)| (f.to_string(), json!(per(c as f64, n)))).collect::<serde_json::Map<_, _>>(),
            "postgres_per_job": {
                "transactions": per(self.xacts() as f64, n),
                "tuples": DB_STATS[2..].iter().zip(&j.db[2..]).map(|(k, v)| (k.to_string(), json!(per(*v as f64, n)))).collect::<serde_json::Map<_, _>>(),
                "wal_bytes": per(j.wal as f64, n),
                "vacuum_wal_bytes": per(j.after.vacuum_wal as f64, n),
                "relation_bytes": per(self.rels_growth() as f64, n),
                "database_bytes": per(self.db_growth() as f64, n),
                "live_tuple_bytes": self.live_growth().map(|l| per(l as f64, n)),
                "cpu_seconds": j.cpu.map(|s| s / n as f64),
                "cpu_seconds_per_extra_poll": self.polls.cpu,
            },
            "relations": rel_json,
            "reads_and_writes": scan_json,
            "s3_requests_per_job": {"backend": kinds_json(j.s3, n), "worker": kinds_json(j.worker_requests, n),
                "delete": kinds_json(p.delete_s3, n), "purge": kinds_json(p.purged.s3, n)},
            "s3_stored_per_job": {"backend": {"objects": per(stored[0].0 as f64, n), "bytes": per(stored[0].1 as f64, n)},
                "worker": {"objects": per(stored[1].0 as f64, n), "bytes": per(stored[1].1 as f64, n)}},
            "sweep": {"idle": ops(&self.sweeps.idle), "overdue": ops(&self.sweeps.overdue)},
            "purge": {"runs": p.runs, "due": ops(&p.purged), "idle": ops(&p.idle)},
        });
        std::fs::write(path, serde_json::to_string_pretty(&figures).unwrap())
            .map_err(|e| format!("{}: {e}", path.display()))?;
        println!("figures written to {}\n", path.display());
        Ok(())
    }
}
