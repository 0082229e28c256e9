//! Reads at the database's speed (issue 13): the lifecycle GET and the list through the
//! release `code2des-local` (HTTP on loopback, driven by a minimal keep-alive HTTP/1.1 client
//! so the client costs little), beside the ways to run the same read on plain tokio-postgres
//! connections, all in ONE run at concurrency 1 and 8:
//!
//! - the baseline: the read's SELECT as a named prepared statement (the best known way to get
//!   the same answer; what RDS Proxy cannot have without pinning the session);
//! - the options for `query_typed` (unnamed: parsed and planned on every call): the SELECT
//!   itself (what the handlers sent before V3), a simpler equivalent SELECT, the PL/pgSQL
//!   functions of migrations V3, V5 and V6 and their successors V7 and V10 (what shared::db
//!   runs now), the same with the SET clause they had before V6, V3's set-returning GET, SQL
//!   functions, and a SELECT without the visibility rules (NOT equivalent: the floor).
//!
//! The SELECTs are read back from the functions' bodies in pg_proc, so the baseline is exactly
//! the statement the function runs. Variants rotate their order every round; each ratio is
//! taken to the prepared baseline of the same round, then its median across rounds. Every
//! variant is checked to return the same job(s) before anything is timed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use code2des_testkit::scope;
use shared::db::columns::Layout;
use shared::db::lifecycle::{self as store, ListQuery};
use shared::domain::ids::Code2desId;
use shared::domain::job::Job;
use shared::domain::scope::JobRef;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Row, Statement};

use crate::fixture::{App, Tenant};
use crate::load::{drive, warn_failures, Op, Sample, Summary};
use crate::stack::{get_request, http_op, LocalStack};
use crate::stats::{f2, median, Table};

const DEADLINE: Duration = shared::domain::job::DEFAULT_DEADLINE;
/// shared::db's GET_JOB and LIST_JOBS (checked below to answer exactly as shared::db does).
const GET_CALL: &str = "SELECT code2des_read_job($1, $2, $3, $4, $5)";
const LIST_CALL: &str = "SELECT * FROM code2des_list_jobs($1, $2, $3, $4, $5, $6, $7, $8, $9)";
/// Rows per page the list handler asks for by default (limit 50, plus one to see a next page).
const LIST_LIMIT: i64 = 51;
/// Jobs in the listed project (one page).
const LIST_ITEMS: usize = 20;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Read {
    Get,
    List,
}

struct Variant {
    read: Read,
    name: String,
    /// The baseline of its read (a ratio of 1 by definition).
    baseline: bool,
    op: Op,
    /// SQL run (by the admin connection) before and after this variant's calls: the "before"
    /// rows swap the stack's function for one that plans its SELECT on every call.
    swap: Option<(Arc<str>, Arc<str>)>,
}

// --- the local stack and a minimal HTTP client ------------------------------------------------

// --- the statements ----------------------------------------------------------------------------

/// What the benchmark knows of a V3 function: its SELECT, as a statement of its own (comments
/// dropped, whitespace collapsed, GET's INTO clause removed), and its definition.
struct Function {
    /// The SELECT, with the function's positional parameters.
    sql: String,
    /// `pg_get_functiondef`: CREATE OR REPLACE FUNCTION … with its clauses and body.
    def: String,
    /// The input parameters (`pg_get_function_arguments` without the OUT ones).
    inputs: String,
    /// The result columns (`name type, …`), from its OUT parameters or its RETURNS TABLE.
    columns: String,
}

async fn function(c: &Client, name: &str) -> Function {
    let row = c
        .query_one(
            "SELECT prosrc, pg_get_functiondef(oid), pg_get_function_arguments(oid), pg_get_function_result(oid) \
             FROM pg_proc WHERE proname = $1",
            &[&name],
        )
        .await
        .unwrap_or_else(|e| panic!("{name} in pg_proc: {e}"));
    let (src, def, args, result): (String, String, String, String) = (row.get(0), row.get(1), row.get(2), row.get(3));
    let code: String = src.lines().filter(|l| !l.trim_start().starts_with("--")).collect::<Vec<_>>().join("\n");
    let code = code.split_whitespace().collect::<Vec<_>>().join(" ");
    let body = code.split_once("BEGIN ").map(|(_, b)| b).expect("a BEGIN");
    // The read is the body's first statement (GET's is followed by its NOT FOUND check). The
    // list (migration V7) has one statement per shape: the benchmark's is the project's whole
    // list (no file, no status), whose keyset position is the function's COALESCEd variables.
    let body = match body.split_once("WHEN 'all' THEN RETURN QUERY ") {
        Some((_, all)) => all,
        None => body,
    };
    let body = &body[..body.find(';').expect("a statement end")];
    let mut sql = body
        .strip_prefix("RETURN QUERY ")
        .unwrap_or(body)
        .replace("v_after_created_at", "COALESCE($7::timestamptz, 'infinity')")
        .replace("v_after_id", "COALESCE($8::varchar, '')");
    if let Some(i) = sql.find(" INTO ") {
        if let Some(j) = sql[i..].find(" FROM ") {
            sql.replace_range(i..i + j, "");
        }
    }
    let (inputs, columns) = match args.split_once(", OUT ") {
        Some((inputs, outs)) => (inputs.to_owned(), outs.replace(", OUT ", ", ")),
        None if result == "record" => {
            // One anonymous record (code2des_read_job): its fields are the SELECT's columns.
            let stmt = c.prepare(&sql).await.unwrap_or_else(|e| panic!("describe {name}'s SELECT: {e}"));
            let cols: Vec<String> =
                stmt.columns().iter().map(|c| format!("{} {}", c.name(), c.type_().name())).collect();
            (args, cols.join(", "))
        }
        None => {
            let table = result.strip_prefix("TABLE(").and_then(|r| r.strip_suffix(')')).expect("RETURNS TABLE");
            (args, table.to_owned())
        }
    };
    Function { sql, def, inputs, columns }
}

impl Function {
    /// This function's definition under another name, changed by `edit`.
    fn renamed(&self, name: &str, copy: &str, edit: impl Fn(&str) -> String) -> String {
        edit(&self.def).replacen(&format!(".{name}("), &format!(".{copy}("), 1)
    }

    /// The definition (same signature, SET clause, privileges) with `body` as its code.
    fn with_body(&self, body: &str) -> String {
        let start = self.def.find("AS $function$").expect("a $function$ body");
        format!("{}AS $function$\n{body}\n$function$\n", &self.def[..start])
    }

    /// A new function `copy` returning the same columns as a set, in `language`.
    fn set_returning(&self, copy: &str, language: &str, set: bool, body: &str) -> String {
        let set = if set { " SET search_path = pg_catalog, public, pg_temp" } else { "" };
        format!(
            "CREATE FUNCTION {copy}({}) RETURNS TABLE({}) LANGUAGE {language} STABLE{set} AS $bench$ {body} $bench$",
            self.inputs, self.columns
        )
    }

    /// Names of the result columns.
    fn column_names(&self) -> String {
        self.columns.split(", ").map(|c| c.split(' ').next().unwrap_or(c)).collect::<Vec<_>>().join(", ")
    }
}

/// The definition with the SET clause V3 and V5 gave the functions before V6 (the bench's
/// schema is public).
fn with_set(def: &str) -> String {
    def.replacen("\nAS $function$", "\n SET search_path = pg_catalog, public, pg_temp\nAS $function$", 1)
}

fn placeholders(n: usize) -> String {
    (1..=n).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ")
}

struct GetArgs {
    id: String,
    org: i32,
    project: i32,
    sub: String,
    deadline: f64,
}

const GET_TYPES: [Type; 5] = [Type::VARCHAR, Type::INT4, Type::INT4, Type::VARCHAR, Type::FLOAT8];
const LIST_TYPES: [Type; 9] = [
    Type::INT4,
    Type::INT4,
    Type::VARCHAR,
    Type::FLOAT8,
    Type::VARCHAR,
    Type::TEXT,
    Type::TIMESTAMPTZ,
    Type::VARCHAR,
    Type::INT8,
];

fn get_params(a: &GetArgs) -> [&(dyn ToSql + Sync); 5] {
    [&a.id, &a.org, &a.project, &a.sub, &a.deadline]
}

struct ListArgs {
    org: i32,
    project: i32,
    sub: String,
    deadline: f64,
    none_text: Option<String>,
    none_ts: Option<std::time::SystemTime>,
    limit: i64,
}

fn list_params(a: &ListArgs) -> [&(dyn ToSql + Sync); 9] {
    [&a.org, &a.project, &a.sub, &a.deadline, &a.none_text, &a.none_text, &a.none_ts, &a.none_text, &a.limit]
}

fn typed<'a, const N: usize>(
    params: [&'a (dyn ToSql + Sync); N],
    types: &[Type; N],
) -> Vec<(&'a (dyn ToSql + Sync), Type)> {
    params.into_iter().zip(types.iter().cloned()).collect()
}

/// The jobs of a read's rows, as shared::db decodes them: a row of columns by name (a list's
/// all-NULL scope row skipped), or one record (`code2des_read_job`, NULL when not visible).
fn jobs(rows: &[Row]) -> Option<Vec<Job>> {
    if let [row] = rows {
        if row.columns().len() == 1 && *row.columns()[0].type_() == Type::RECORD {
            return shared::db::columns::from_read_row(row).ok().map(|job| job.into_iter().collect());
        }
    }
    // As shared::db reads a list: the columns found once per statement.
    let layout = Layout::of(rows.first()?);
    rows.iter().filter(|r| layout.has_job(r)).map(|r| shared::db::columns::from_laid_row(r, &layout).ok()).collect()
}

/// Statement text → an op on the raw connections: prepared once per connection (named), or
/// sent with `query_typed` (unnamed) every call. Succeeds when it decodes `rows` jobs.
async fn sql_op<const N: usize>(
    raw: &Arc<Vec<Client>>,
    sql: &str,
    types: &'static [Type; N],
    prepared: bool,
    args: ArgsFn<N>,
    rows: usize,
) -> Op {
    let stmts: Option<Arc<Vec<Statement>>> = if prepared {
        let mut v = Vec::new();
        for c in raw.iter() {
            v.push(c.prepare_typed(sql, types).await.unwrap_or_else(|e| panic!("prepare {sql}: {e}")));
        }
        Some(Arc::new(v))
    } else {
        None
    };
    let (raw, sql) = (raw.clone(), Arc::<str>::from(sql));
    let a = Arc::<dyn ArgsOf<N>>::from(args());
    Arc::new(move |w, _| {
        let (raw, sql, stmts, a) = (raw.clone(), sql.clone(), stmts.clone(), a.clone());
        Box::pin(async move {
            let params = a.params();
            let result = match &stmts {
                Some(s) => raw[w].query(&s[w], &params).await,
                None => raw[w].query_typed(&sql, &typed(params, types)).await,
            };
            matches!(result.ok().as_deref().and_then(jobs), Some(j) if j.len() == rows)
        })
    })
}

trait ArgsOf<const N: usize>: Send + Sync {
    fn params(&self) -> [&(dyn ToSql + Sync); N];
}

impl ArgsOf<5> for GetArgs {
    fn params(&self) -> [&(dyn ToSql + Sync); 5] {
        get_params(self)
    }
}

impl ArgsOf<9> for ListArgs {
    fn params(&self) -> [&(dyn ToSql + Sync); 9] {
        list_params(self)
    }
}

/// Median planning and execution time (ms) of `sql` by EXPLAIN ANALYZE, unnamed, `n` times.
async fn explain<const N: usize>(
    c: &Client,
    sql: &str,
    params: [&(dyn ToSql + Sync); N],
    types: &[Type; N],
    n: usize,
) -> (f64, f64) {
    let (mut plan, mut exec) = (Vec::new(), Vec::new());
    let text = format!("EXPLAIN (ANALYZE, TIMING OFF) {sql}");
    for _ in 0..n {
        let rows = c.query_typed(&text, &typed(params, types)).await.unwrap_or_else(|e| panic!("{text}: {e}"));
        for r in rows {
            let line: String = r.get(0);
            let value = |p: &str| line.strip_prefix(p)?.trim().trim_end_matches(" ms").parse::<f64>().ok();
            if let Some(v) = value("Planning Time:") {
                plan.push(v);
            }
            if let Some(v) = value("Execution Time:") {
                exec.push(v);
            }
        }
    }
    (median(&plan), median(&exec))
}

/// One sample of a variant, its function swapped in for the time of it.
async fn run_variant(admin: &Client, v: &Variant, conc: usize, total: usize, cap: Duration) -> Result<Sample, String> {
    if let Some((swap, _)) = &v.swap {
        admin.batch_execute(swap).await.map_err(|e| format!("swap for {}: {e}", v.name))?;
    }
    let s = drive(conc, total, Some(cap), v.op.clone()).await;
    if let Some((_, undo)) = &v.swap {
        admin.batch_execute(undo).await.map_err(|e| format!("undo the swap for {}: {e}", v.name))?;
    }
    Ok(s)
}

/// The benchmark's own functions (variants of V3's), created for the run and dropped after it.
const DROP_COPIES: &str = "DROP FUNCTION IF EXISTS bench_read_job_set, bench_get_job_table, bench_get_job_out, \
     bench_get_job_sql, bench_get_job_sql_set, bench_list_jobs_set, bench_read_job_execute";

// --- the benchmark -----------------------------------------------------------------------------

pub async fn run(app: Arc<App>, quick: bool, rounds: usize) -> Result<(), String> {
    // Data: a completed job to read (issue 13's case), a project of 20 completed jobs to list,
    // and other tenants' jobs around them so the tables are not trivially small.
    let t = app.tenant().await;
    let done = app.insert_jobs(&t, 1).await.remove(0);
    app.complete(&done, 1, 8).await;
    let lt = app.tenant().await;
    for id in app.insert_jobs(&lt, LIST_ITEMS).await {
        app.complete(&id, 0, 8).await;
    }
    for _ in 0..if quick { 2 } else { 40 } {
        let other = app.tenant().await;
        app.insert_jobs(&other, 50).await;
    }
    let admin = app.raw_client().await;
    let db_name = app.db.pg.get_dbname().unwrap_or("code2des_bench").to_owned();
    // pg_stat_statements.track = top for the sessions of this benchmark, as on Aurora by default:
    // the bench cluster tracks nested statements for the round-trip count (§2), which would
    // charge a function call for a second entry that production does not record.
    admin
        .batch_execute(&format!("ANALYZE; ALTER DATABASE \"{db_name}\" SET pg_stat_statements.track = 'top'"))
        .await
        .map_err(|e| e.to_string())?;
    let result = measure(&app, &admin, &Subjects { t: &t, done: &done, lt: &lt }, quick, rounds).await;
    let _ = admin
        .batch_execute(&format!("ALTER DATABASE \"{db_name}\" RESET pg_stat_statements.track; {DROP_COPIES}"))
        .await;
    result
}

/// What the reads read: `done`, a completed job of `t`, for the GET, and `lt`'s project of
/// [`LIST_ITEMS`] completed jobs for the list.
struct Subjects<'a> {
    t: &'a Tenant,
    done: &'a str,
    lt: &'a Tenant,
}

/// A variant's parameters, made afresh for each op (see [`sql_op`]).
type ArgsFn<const N: usize> = Arc<dyn Fn() -> Box<dyn ArgsOf<N>> + Send + Sync>;

async fn measure(app: &App, admin: &Client, s: &Subjects<'_>, quick: bool, rounds: usize) -> Result<(), String> {
    let stack = LocalStack::start(&app.url).await?;
    let conc_max = 8;
    let mut raw = Vec::new();
    for _ in 0..conc_max {
        raw.push(app.raw_client().await);
    }
    let raw = Arc::new(raw);
    let st = Statements::read(admin).await;
    st.create_copies(admin).await?;
    let lifecycle = Arc::new(app.lifecycle(&app.pool).await);
    let src = Sources {
        raw,
        addr: stack.addr,
        lifecycle,
        get_args: get_args(s),
        list_args: list_args(s),
        get_path: format!("/organizations/{}/projects/{}/code2des/{}", s.t.org, s.t.project, s.done),
        list_path: format!("/organizations/{}/projects/{}/code2des", s.lt.org, s.lt.project),
        st: &st,
        s,
    };
    src.check_answers().await?;
    // Why: planning against execution of the SELECT and of the function call, unnamed.
    let n = if quick { 5 } else { 50 };
    let explained = src.explain(admin, n).await;

    let concs = [1usize, conc_max];
    // Each sample: as many calls as fit in `cap`, at most `total` (bounded in count and time);
    // throughput = calls / elapsed.
    let (total, cap) = if quick { (2_000, Duration::from_millis(100)) } else { (100_000, Duration::from_secs(1)) };
    let budget = Budget { rounds, total, cap };
    let mut report = Report::new();
    for &c in &concs {
        let variants = src.variants(c).await;
        let (samples, ratios) = sample(admin, &variants, c, &budget).await?;
        report.add(&variants, c, &samples, &ratios);
    }
    drop(stack);
    report.print(rounds, n, explained);
    Ok(())
}

/// The statements the variants send, and the definitions the "before" variants swap in.
struct Statements {
    get_fn: Function,
    list_fn: Function,
    /// The functions' own SELECTs.
    get_sql: String,
    list_sql: String,
    /// GET: a simpler equivalent SELECT, and the floor (no visibility rules: NOT equivalent).
    simpler: String,
    floor: String,
    /// (swap in, swap back) for each read.
    get_swap: (String, String),
    list_swap: (String, String),
}

impl Statements {
    async fn read(admin: &Client) -> Self {
        // The statements: the functions' own SELECTs, a simpler equivalent, the floor.
        let get_fn = function(admin, "code2des_read_job").await;
        let list_fn = function(admin, "code2des_list_jobs").await;
        let (get_sql, list_sql) = (get_fn.sql.clone(), list_fn.sql.clone());
        // (The functions name their tables with the schema, migration V6; these two statements
        // resolve them through the benchmark's search_path, the same schema.)
        let from = " FROM code2des c LEFT JOIN code2des_attempt a ON a.code2des_id = c.id WHERE ";
        let columns = &get_sql[..get_sql.find(" FROM ").expect("GET's FROM clause")];
        // Equivalent: the row must be in ($2, $3), so membership, organization and project are one
        // uncorrelated check (planned as a one-time filter), the page import another.
        let simpler = format!(
            "{columns}{from}c.id = $1 AND c.organization_id = $2 AND c.project_id = $3 AND c.deleted_at IS NULL \
             AND EXISTS (SELECT 1 FROM organization_member m JOIN organization o ON o.id = m.organization_id \
             AND o.deleted_at IS NULL JOIN project p ON p.organization_id = o.id AND p.deleted_at IS NULL \
             WHERE m.organization_id = $2 AND m.subject = $4 AND p.id = $3) \
             AND EXISTS (SELECT 1 FROM page_import pi WHERE pi.id = c.page_import_id AND pi.deleted_at IS NULL)"
        );
        let floor = format!(
            "{columns}{from}c.id = $1 AND c.organization_id = $2 AND c.project_id = $3 AND c.deleted_at IS NULL"
        );
        // The "before" swaps: each function planning its SELECT on every call, as the unnamed
        // SELECT did (dynamic SQL has no cached plan), same signature, SET clause and privileges.
        let get_swap = {
            let body = format!(
                "DECLARE\n    r record;\n    n bigint;\nBEGIN\n    EXECUTE $bench${}$bench$ INTO r USING {};\n    \
                 GET DIAGNOSTICS n = ROW_COUNT;\n    IF n = 0 THEN\n        RETURN NULL;\n    END IF;\n    RETURN r;\nEND",
                get_fn.sql,
                placeholders(5)
            );
            (get_fn.with_body(&body), get_fn.def.clone())
        };
        let list_swap = replanning(&list_fn, 9);
        Self { get_fn, list_fn, get_sql, list_sql, simpler, floor, get_swap, list_swap }
    }

    /// Creates the benchmark's own functions, the variants of the stack's.
    async fn create_copies(&self, admin: &Client) -> Result<(), String> {
        let (get_fn, get_sql) = (&self.get_fn, &self.get_sql);
        // GET as a function with OUT parameters (SELECT … INTO them: one row, no result set).
        let out_def = format!(
            "CREATE FUNCTION bench_get_job_out({}, {}) LANGUAGE plpgsql STABLE \
             SET search_path = pg_catalog, public, pg_temp AS $bench$ #variable_conflict use_column\nBEGIN {}; END $bench$",
            get_fn.inputs,
            get_fn.columns.split(", ").map(|c| format!("OUT {c}")).collect::<Vec<_>>().join(", "),
            get_sql.replacen(" FROM ", &format!(" INTO {} FROM ", get_fn.column_names()), 1)
        );
        admin.batch_execute(DROP_COPIES).await.map_err(|e| e.to_string())?;
        for def in [
            get_fn.renamed("code2des_read_job", "bench_read_job_set", with_set),
            // V3's shape, the job as a set of 24 columns in FROM (what the GET sent before V5).
            get_fn.set_returning(
                "bench_get_job_table",
                "plpgsql",
                true,
                &format!("#variable_conflict use_column\nBEGIN RETURN QUERY {get_sql}; END"),
            ),
            self.list_fn.renamed("code2des_list_jobs", "bench_list_jobs_set", with_set),
            out_def,
            get_fn.set_returning("bench_get_job_sql", "sql", false, get_sql),
            get_fn.set_returning("bench_get_job_sql_set", "sql", true, get_sql),
            self.get_swap.0.replacen(".code2des_read_job(", ".bench_read_job_execute(", 1),
        ] {
            admin.batch_execute(&def).await.map_err(|e| format!("{def}: {e}"))?;
        }
        Ok(())
    }
}

/// `f` planning its SELECT on every call (dynamic SQL), and its definition to swap back.
fn replanning(f: &Function, n: usize) -> (String, String) {
    let body = format!("BEGIN\n    RETURN QUERY EXECUTE $bench${}$bench$ USING {};\nEND", f.sql, placeholders(n));
    (f.with_body(&body), f.def.clone())
}

fn get_args(s: &Subjects<'_>) -> ArgsFn<5> {
    let deadline = DEADLINE.as_secs_f64();
    let (done, t) = (s.done.to_owned(), (s.t.org, s.t.project, s.t.sub.clone()));
    Arc::new(move || -> Box<dyn ArgsOf<5>> {
        Box::new(GetArgs { id: done.clone(), org: t.0, project: t.1, sub: t.2.clone(), deadline })
    })
}

fn list_args(s: &Subjects<'_>) -> ArgsFn<9> {
    let deadline = DEADLINE.as_secs_f64();
    let t = (s.lt.org, s.lt.project, s.lt.sub.clone());
    Arc::new(move || -> Box<dyn ArgsOf<9>> {
        Box::new(ListArgs {
            org: t.0,
            project: t.1,
            sub: t.2.clone(),
            deadline,
            none_text: None,
            none_ts: None,
            limit: LIST_LIMIT,
        })
    })
}

/// What the variants are built from.
struct Sources<'a> {
    /// Plain connections: worker w uses connection w (at concurrency 1, the first only).
    raw: Arc<Vec<Client>>,
    /// The local stack's.
    addr: SocketAddr,
    lifecycle: Arc<code2des_lifecycle::handler::Deps>,
    get_args: ArgsFn<5>,
    list_args: ArgsFn<9>,
    get_path: String,
    list_path: String,
    st: &'a Statements,
    s: &'a Subjects<'a>,
}

impl Sources<'_> {
    /// Every variant must give the same answer as shared::db.
    async fn check_answers(&self) -> Result<(), String> {
        let (raw, st, s) = (&self.raw[0], self.st, self.s);
        let id = Code2desId::parse(s.done).unwrap();
        let want_get = format!(
            "{:?}",
            store::get_job(raw, &JobRef { scope: scope(s.t), id }, DEADLINE).await.map_err(|e| e.to_string())?
        );
        let q = ListQuery { figma_file_key: None, status: None, after: None, limit: LIST_LIMIT };
        let want_list =
            format!("{:?}", store::list_jobs(raw, &scope(s.lt), &q, DEADLINE).await.map_err(|e| e.to_string())?);
        let get_texts = [
            GET_CALL.to_owned(),
            st.get_sql.clone(),
            st.simpler.clone(),
            "SELECT bench_read_job_set($1, $2, $3, $4, $5)".into(),
            "SELECT bench_read_job_execute($1, $2, $3, $4, $5)".into(),
            "SELECT * FROM bench_get_job_table($1, $2, $3, $4, $5)".into(),
            "SELECT * FROM bench_get_job_out($1, $2, $3, $4, $5) WHERE id IS NOT NULL".into(),
            "SELECT * FROM bench_get_job_sql($1, $2, $3, $4, $5)".into(),
            "SELECT * FROM bench_get_job_sql_set($1, $2, $3, $4, $5)".into(),
        ];
        for sql in &get_texts {
            let a = (self.get_args)();
            let rows = raw.query_typed(sql, &typed(a.params(), &GET_TYPES)).await.map_err(|e| format!("{sql}: {e}"))?;
            let got = format!("{:?}", jobs(&rows).and_then(|mut v| v.pop()));
            if got != want_get {
                return Err(format!("{sql} answers {got}, shared::db {want_get}"));
            }
        }
        for sql in [
            LIST_CALL.to_owned(),
            st.list_sql.clone(),
            "SELECT * FROM bench_list_jobs_set($1, $2, $3, $4, $5, $6, $7, $8, $9)".into(),
        ] {
            let a = (self.list_args)();
            let rows =
                raw.query_typed(&sql, &typed(a.params(), &LIST_TYPES)).await.map_err(|e| format!("{sql}: {e}"))?;
            let got = format!("{:?}", jobs(&rows));
            if got != want_list {
                return Err(format!("{sql} answers {got}, shared::db {want_list}"));
            }
        }
        Ok(())
    }

    /// Planning and execution of each read's SELECT and function call, `n` times each.
    async fn explain(&self, admin: &Client, n: usize) -> [(&'static str, (f64, f64)); 4] {
        let st = self.st;
        let (a, la) = ((self.get_args)(), (self.list_args)());
        [
            ("lifecycle GET: the SELECT", explain(admin, &st.get_sql, a.params(), &GET_TYPES, n).await),
            ("lifecycle GET: SELECT code2des_read_job(…)", explain(admin, GET_CALL, a.params(), &GET_TYPES, n).await),
            ("list: the SELECT", explain(admin, &st.list_sql, la.params(), &LIST_TYPES, n).await),
            (
                "list: SELECT * FROM code2des_list_jobs(…)",
                explain(
                    admin,
                    "SELECT * FROM code2des_list_jobs($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                    la.params(),
                    &LIST_TYPES,
                    n,
                )
                .await,
            ),
        ]
    }

    /// Every variant at concurrency `c`, GET's then the list's, each read's baseline among them.
    async fn variants(&self, c: usize) -> Vec<Variant> {
        // shared::db's own statements, sent like the other options (store::get_job adds
        // only its query timeout around the same query_typed).
        let store_get = self.get_op(GET_CALL, false).await;
        let store_list = self.list_op(LIST_CALL, false).await;
        let mut v = self.http_get_variants(c).await;
        v.extend(self.sql_get_variants(store_get).await);
        v.extend(self.list_variants(c, store_list).await);
        v
    }

    /// GET through the stack over HTTP and through the handler in-process.
    async fn http_get_variants(&self, c: usize) -> Vec<Variant> {
        let (addr, t) = (self.addr, self.s.t);
        let get = |name: &str, op: Op| Variant::new(Read::Get, name, false, op);
        vec![
            get(
                "HTTP: unrouted request (404), code2des-local",
                http_op(addr, c, get_request("/bench-unrouted", None), 404).await,
            ),
            get(
                "HTTP: lifecycle GET, code2des-local",
                http_op(addr, c, get_request(&self.get_path, Some(&t.sub)), 200).await,
            ),
            get(
                "HTTP: lifecycle GET, code2des-local, SELECT planned every call (as before V3)",
                http_op(addr, c, get_request(&self.get_path, Some(&t.sub)), 200).await,
            )
            .swapping(&self.st.get_swap),
            get(
                "in-process lifecycle handler: GET event → response (no HTTP)",
                self.handler_op(crate::fixture::get_event(t, self.s.done)),
            ),
        ]
    }

    /// GET's statement options on the plain connections, the prepared baseline first.
    async fn sql_get_variants(&self, store_get: Op) -> Vec<Variant> {
        let st = self.st;
        let get = |name: &str, op: Op| Variant::new(Read::Get, name, false, op);
        vec![
            Variant::new(Read::Get, "GET: prepared SELECT (baseline)", true, self.get_op(&st.get_sql, true).await),
            get("GET: code2des_read_job, one record, unnamed (= shared::db now)", store_get),
            get(
                "GET: V3's code2des_get_job, a 24-column set in FROM, unnamed (= shared::db before)",
                self.get_op("SELECT * FROM bench_get_job_table($1, $2, $3, $4, $5)", false).await,
            ),
            get(
                "GET: code2des_read_job with V5's SET clause, unnamed (= shared::db before V6)",
                self.get_op("SELECT bench_read_job_set($1, $2, $3, $4, $5)", false).await,
            ),
            get(
                "GET: function with OUT parameters (SELECT … INTO), unnamed",
                self.get_op("SELECT * FROM bench_get_job_out($1, $2, $3, $4, $5) WHERE id IS NOT NULL", false).await,
            ),
            get("GET: the SELECT, unnamed (= shared::db before V3)", self.get_op(&st.get_sql, false).await),
            get(
                "GET: function planning every call (EXECUTE), unnamed",
                self.get_op("SELECT bench_read_job_execute($1, $2, $3, $4, $5)", false).await,
            ),
            get(
                "GET: simpler SELECT (scope as one uncorrelated EXISTS), unnamed",
                self.get_op(&st.simpler, false).await,
            ),
            get(
                "GET: LANGUAGE sql function (inlined), unnamed",
                self.get_op("SELECT * FROM bench_get_job_sql($1, $2, $3, $4, $5)", false).await,
            ),
            get(
                "GET: LANGUAGE sql function with SET (not inlined), unnamed",
                self.get_op("SELECT * FROM bench_get_job_sql_set($1, $2, $3, $4, $5)", false).await,
            ),
            get("GET: no visibility rules, unnamed (NOT equivalent: floor)", self.get_op(&st.floor, false).await),
        ]
    }

    /// The list: over HTTP, in-process, and its statement options, the prepared baseline among them.
    async fn list_variants(&self, c: usize, store_list: Op) -> Vec<Variant> {
        let (addr, lt, st) = (self.addr, self.s.lt, self.st);
        let list = |name: &str, op: Op| Variant::new(Read::List, name, false, op);
        vec![
            list(
                "HTTP: list (20 items), code2des-local",
                http_op(addr, c, get_request(&self.list_path, Some(&lt.sub)), 200).await,
            ),
            list(
                "HTTP: list (20 items), code2des-local, SELECT planned every call (as before V3)",
                http_op(addr, c, get_request(&self.list_path, Some(&lt.sub)), 200).await,
            )
            .swapping(&st.list_swap),
            list(
                "in-process lifecycle handler: list event → response (no HTTP)",
                self.handler_op(crate::fixture::list_event(lt)),
            ),
            Variant::new(Read::List, "list: prepared SELECT (baseline)", true, self.list_op(&st.list_sql, true).await),
            list("list: code2des_list_jobs, unnamed (= shared::db now)", store_list),
            list(
                "list: code2des_list_jobs with V3's SET clause, unnamed (= shared::db before V6)",
                self.list_op("SELECT * FROM bench_list_jobs_set($1, $2, $3, $4, $5, $6, $7, $8, $9)", false).await,
            ),
            list("list: the SELECT, unnamed (= shared::db before V3)", self.list_op(&st.list_sql, false).await),
        ]
    }

    /// `sql` with GET's parameters on the plain connections, expecting the one job.
    async fn get_op(&self, sql: &str, prepared: bool) -> Op {
        sql_op(&self.raw, sql, &GET_TYPES, prepared, self.get_args.clone(), 1).await
    }

    /// `sql` with the list's parameters on the plain connections, expecting the page.
    async fn list_op(&self, sql: &str, prepared: bool) -> Op {
        sql_op(&self.raw, sql, &LIST_TYPES, prepared, self.list_args.clone(), LIST_ITEMS).await
    }

    /// The lifecycle handler in-process, answering `ev` (no HTTP).
    fn handler_op(&self, ev: String) -> Op {
        let (deps, ev) = (self.lifecycle.clone(), Arc::new(ev));
        Arc::new(move |_, _| {
            let (deps, ev) = (deps.clone(), ev.clone());
            Box::pin(async move {
                code2des_lifecycle::handler::handle(&deps, crate::fixture::request(&ev)).await.status() == 200
            })
        })
    }
}

impl Variant {
    fn new(read: Read, name: &str, baseline: bool, op: Op) -> Self {
        Self { read, name: name.into(), baseline, op, swap: None }
    }

    /// This variant with `swap` (in, back) run around its calls.
    fn swapping(mut self, swap: &(String, String)) -> Self {
        self.swap = Some((swap.0.as_str().into(), swap.1.as_str().into()));
        self
    }
}

/// How long each variant runs: rounds, and per sample at most `total` calls within `cap`.
struct Budget {
    rounds: usize,
    total: usize,
    cap: Duration,
}

/// A warm-up of every variant, then `rounds` rounds of all of them, their order rotating:
/// every variant's samples, and its throughput over its read's baseline's, round by round.
async fn sample(
    admin: &Client,
    variants: &[Variant],
    c: usize,
    budget: &Budget,
) -> Result<(Vec<Vec<Sample>>, Vec<Vec<f64>>), String> {
    // Warm-up: every connection's plan caches (and the stack's pool) before timing.
    for v in variants {
        let s = run_variant(admin, v, c, 30 * c, budget.cap).await?;
        if s.failures > 0 {
            return Err(format!("{} failed {} of its warm-up calls", v.name, s.failures));
        }
    }
    let mut samples: Vec<Vec<Sample>> = variants.iter().map(|_| Vec::new()).collect();
    let mut ratios: Vec<Vec<f64>> = variants.iter().map(|_| Vec::new()).collect();
    for round in 0..budget.rounds {
        let n = variants.len();
        let mut tput = vec![0.0; n];
        for k in 0..n {
            let i = (k + round * 5) % n;
            let s = run_variant(admin, &variants[i], c, budget.total, budget.cap).await?;
            tput[i] = s.tput;
            samples[i].push(s);
        }
        for (i, v) in variants.iter().enumerate() {
            let base = variants.iter().position(|b| b.baseline && b.read == v.read).unwrap();
            ratios[i].push(tput[i] / tput[base]);
        }
    }
    Ok((samples, ratios))
}

/// The main table and issue 13's goals, filled concurrency by concurrency.
struct Report {
    table: Table,
    goals: Vec<String>,
}

impl Report {
    fn new() -> Self {
        let table = Table::new(&["read", "conc", "p50 ms", "p99 ms", "req/s", "× prepared (same read, same round)"]);
        Self { table, goals: Vec::new() }
    }

    /// A row per variant at concurrency `c`; the goals' lines of the HTTP ones.
    fn add(&mut self, variants: &[Variant], c: usize, samples: &[Vec<Sample>], ratios: &[Vec<f64>]) {
        for (i, v) in variants.iter().enumerate() {
            let s = Summary::of(&samples[i]);
            warn_failures(&v.name, c, s.failures);
            let ratio = median(&ratios[i]);
            self.table.row(vec![
                v.name.clone(),
                c.to_string(),
                f2(s.p50_ms),
                f2(s.p99_ms),
                format!("{:.0}", s.tput),
                f2(ratio),
            ]);
            if v.name.starts_with("HTTP: lifecycle GET") || v.name.starts_with("HTTP: list") {
                self.goals.push(format!("- {}, concurrency {c}: {ratio:.2} × prepared", v.name));
            }
            if v.name.starts_with("HTTP: unrouted") {
                self.ceilings(variants, c, &ratios[i], ratios);
            }
        }
    }

    /// The goals' ceilings from the unrouted request's ratios (`unrouted`) at concurrency `c`.
    fn ceilings(&mut self, variants: &[Variant], c: usize, unrouted: &[f64], ratios: &[Vec<f64>]) {
        // A handler that cost nothing beyond the prepared SELECT and the HTTP hop: its
        // time per request is the sum of the two.
        let ceiling = median(&unrouted.iter().map(|r| 1.0 / (1.0 + 1.0 / r)).collect::<Vec<_>>());
        self.goals.push(format!(
            "- ceiling, concurrency {c}: a handler costing nothing but the prepared SELECT plus the HTTP hop \
             of an unrouted request would reach {ceiling:.2} × prepared (GET)"
        ));
        // The same with the read as the handler sends it (one unnamed call, no named
        // statement): what any handler reading this way can reach at most.
        let now = variants.iter().position(|v| v.name.contains("(= shared::db now)") && v.read == Read::Get);
        if let Some(k) = now {
            let per_round: Vec<f64> = unrouted.iter().zip(&ratios[k]).map(|(h, r)| 1.0 / (1.0 / h + 1.0 / r)).collect();
            self.goals.push(format!(
                "- ceiling, concurrency {c}: a handler costing nothing but its read as sent (one unnamed call) \
                 plus the HTTP hop of an unrouted request would reach {:.2} × prepared (GET)",
                median(&per_round)
            ));
        }
    }

    fn print(self, rounds: usize, n: usize, explained: [(&str, (f64, f64)); 4]) {
        println!(
            "## Reads at the database's speed: lifecycle GET and list through code2des-local vs the same read on \
             plain connections ({rounds} rounds, variants rotating, ratios per round)\n"
        );
        self.table.print();
        println!("Planning and execution of one read, unnamed (EXPLAIN ANALYZE, median of {n}):\n");
        let mut ex = Table::new(&["statement", "planning ms", "execution ms"]);
        for (name, (plan, exec)) in explained {
            ex.row(vec![name.into(), format!("{plan:.3}"), format!("{exec:.3}")]);
        }
        ex.print();
        println!("Goals of issue 13 (≥ 0.5 × the prepared SELECT of the same read at concurrency 8):\n");
        for line in self.goals {
            println!("{line}");
        }
        println!();
    }
}
