//! The `failed` list of a file with 3 000 jobs running (issue 40), beside a small tenant's,
//! before and after migration V13, side by side in one run.
//!
//! The list's failed shapes merge the stored-failed jobs with the processing ones past the
//! deadline. Before V13 that second branch walked the file's processing jobs newest first to
//! find the overdue ones, so a file with 3 000 running read 3 000 rows for a page of 21; V13
//! starts it at now() - deadline. "Before" is the installed function with V13's one change
//! undone (the overdue branch's keyset bound back to the page's position), under another name,
//! so the two differ in nothing else; both are checked to answer the same rows first.
//!
//! Each call is `SELECT * FROM <function>(…)` on one plain connection (the database's time
//! and the round trip, which is what the list handler adds to a request), the four variants
//! taking turns call by call so all see the same machine. The figure is the ratio of the busy
//! file's p50 to the small tenant's, before and after; the rows of `code2des` one call fetches
//! are counted too (`pg_stat_xact_user_tables`: exact where timings are noisy).

use std::time::Instant;

use code2des_testkit::Tenant;
use tokio_postgres::{Client, Statement};

use crate::fixture::App;
use crate::stats::{f2, median, pct, Table};

/// Jobs running in their first attempt in the busy file.
const RUNNING: i64 = 3_000;
/// The page the plugin's handler asks for (20, and one more to learn if a next page follows).
const LIMIT: i64 = 21;
/// The deadline the seed's ages are set against (JOB_DEADLINE_SECONDS's default).
const DEADLINE_SECS: f64 = 900.0;

/// The bound V13 gave the failed shapes' overdue branch, as the function's body spells it.
const V13_BOUND: &str = "(LEAST(v_after_created_at, now() - make_interval(secs => $4)),\n                \
     CASE WHEN v_after_created_at < now() - make_interval(secs => $4) THEN v_after_id ELSE '' END)";

/// `n` jobs of `t` in file `file`, status `status`, created `age` seconds ago and the i-th
/// `step` seconds before that, each with its attempt row (started when created).
fn jobs_sql(t: &Tenant, tag: &str, file: &str, n: i64, status: &str, age: f64, step: f64) -> String {
    format!(
        "WITH ins AS (INSERT INTO code2des (id, organization_id, project_id, page_import_id, figma_file_key, \
             screen_id, status, nonce, created_by, updated_by, created_at) \
         SELECT md5('{tag}-{org}-' || g)::uuid::text, {org}, {project}, '{pi}', '{file}', 'screen', '{status}', \
             'nonce', 'seed', 'seed', now() - make_interval(secs => {age} + g * {step}) \
         FROM generate_series(1, {n}) g RETURNING id, attempt, created_at) \
         INSERT INTO code2des_attempt (code2des_id, attempt, started_at) SELECT id, attempt, created_at FROM ins;",
        org = t.org,
        project = t.project,
        pi = t.page_import,
    )
}

/// One list call of one variant.
struct Variant {
    name: &'static str,
    tenant: Tenant,
    file: &'static str,
    statement: Statement,
}

impl Variant {
    async fn call(&self, c: &Client) -> Vec<tokio_postgres::Row> {
        let t = &self.tenant;
        let none: (Option<std::time::SystemTime>, Option<&str>) = (None, None);
        c.query(
            &self.statement,
            &[&t.org, &t.project, &t.sub, &DEADLINE_SECS, &self.file, &"2", &none.0, &none.1, &LIMIT],
        )
        .await
        .expect("the list answers")
    }

    /// The rows of `code2des` one call fetches through its indexes (counted inside one
    /// transaction: the backend flushes its counters only between transactions).
    async fn fetched(&self, c: &Client) -> i64 {
        const FETCHED: &str = "SELECT COALESCE(idx_tup_fetch, 0) FROM pg_stat_xact_user_tables \
             WHERE relid = 'code2des'::regclass";
        c.batch_execute("BEGIN").await.unwrap();
        let before: i64 = c.query_one(FETCHED, &[]).await.unwrap().get(0);
        self.call(c).await;
        let after: i64 = c.query_one(FETCHED, &[]).await.unwrap().get(0);
        c.batch_execute("ROLLBACK").await.unwrap();
        after - before
    }
}

pub async fn run(app: &App, quick: bool, rounds: usize) -> Result<(), String> {
    let small = app.tenant().await;
    let busy = app.tenant().await;
    let c = app.raw_client().await;
    // The busy file: 3 000 running, 3 overdue (an hour past), 40 failed, 500 completed. The small
    // tenant: 14 running, 1 overdue, 5 failed.
    let seed = [
        jobs_sql(&busy, "run", "file-busy", RUNNING, "0", 0.0, 0.2),
        jobs_sql(&busy, "due", "file-busy", 3, "0", 3_600.0, 600.0),
        jobs_sql(&busy, "fail", "file-busy", 40, "2", 1_000.0, 700.0),
        jobs_sql(&busy, "done", "file-busy", 500, "1", 900.0, 100.0),
        jobs_sql(&small, "run", "file-small", 14, "0", 0.0, 30.0),
        jobs_sql(&small, "due", "file-small", 1, "0", 3_600.0, 0.0),
        jobs_sql(&small, "fail", "file-small", 5, "2", 1_000.0, 300.0),
        "ANALYZE code2des, code2des_attempt".to_owned(),
    ]
    .concat();
    c.batch_execute(&seed).await.map_err(|e| format!("seeding the failed list: {e}"))?;

    let def: String = c
        .query_one("SELECT pg_get_functiondef('code2des_list_jobs'::regproc)", &[])
        .await
        .map_err(|e| e.to_string())?
        .get(0);
    if def.matches(V13_BOUND).count() != 2 {
        return Err("code2des_list_jobs does not hold V13's bound in both failed shapes".into());
    }
    let before = def.replace(V13_BOUND, "(v_after_created_at, v_after_id)").replacen(
        "code2des_list_jobs(",
        "bench_list_jobs_v12(",
        1,
    );
    c.batch_execute(&before).await.map_err(|e| format!("the list before V13: {e}"))?;
    let result = measure(&c, &small, &busy, quick, rounds).await;
    let _ = c.batch_execute("DROP FUNCTION IF EXISTS bench_list_jobs_v12").await;
    result
}

async fn measure(c: &Client, small: &Tenant, busy: &Tenant, quick: bool, rounds: usize) -> Result<(), String> {
    let call = |f: &str| format!("SELECT * FROM {f}($1, $2, $3, $4, $5, $6, $7, $8, $9)");
    let old = c.prepare(&call("bench_list_jobs_v12")).await.map_err(|e| e.to_string())?;
    let new = c.prepare(&call("code2des_list_jobs")).await.map_err(|e| e.to_string())?;
    let variant = |name, tenant: &Tenant, file, statement: &Statement| Variant {
        name,
        tenant: tenant.clone(),
        file,
        statement: statement.clone(),
    };
    let variants = [
        variant("before V13, small tenant", small, "file-small", &old),
        variant("before V13, 3 000 running in the file", busy, "file-busy", &old),
        variant("V13, small tenant", small, "file-small", &new),
        variant("V13, 3 000 running in the file", busy, "file-busy", &new),
    ];
    // The same page, before and after: the rows as text.
    let text = |rows: Vec<tokio_postgres::Row>| -> Vec<String> {
        rows.iter()
            .map(|r| format!("{:?} {:?}", r.get::<_, Option<String>>("id"), r.get::<_, Option<String>>("status")))
            .collect()
    };
    for pair in [(0, 2), (1, 3)] {
        let (a, b) = (text(variants[pair.0].call(c).await), text(variants[pair.1].call(c).await));
        // The busy file's page is full: 21 of its 40 failed and 3 overdue.
        let full = pair.0 == 0 || a.len() == LIMIT as usize;
        if a != b || !full {
            return Err(format!(
                "{} and {} answer differently, or the busy page is not full:\n{a:?}\n{b:?}",
                variants[pair.0].name, variants[pair.1].name
            ));
        }
    }
    let mut fetched = Vec::new();
    for v in &variants {
        fetched.push(v.fetched(c).await);
    }

    // Warm-up, then the calls, the variants taking turns.
    let per_round = if quick { 20 } else { 400 };
    for v in &variants {
        for _ in 0..per_round / 4 {
            v.call(c).await;
        }
    }
    let mut ms: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
    let mut ratios: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for round in 0..rounds.max(1) {
        let mut this: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
        for turn in 0..per_round {
            // Each turn starts at another variant, and every other turn runs backwards, so each
            // variant follows each of the others as often (a call after the slow one pays for
            // what the slow one evicted).
            for k in 0..variants.len() {
                let n = variants.len();
                let step = if turn % 2 == 0 { k } else { n - 1 - k };
                let i = (step + turn / 2 + round) % n;
                let t = Instant::now();
                variants[i].call(c).await;
                this[i].push(t.elapsed().as_secs_f64() * 1000.0);
            }
        }
        ratios[0].push(median(&this[1]) / median(&this[0]));
        ratios[1].push(median(&this[3]) / median(&this[2]));
        for (all, r) in ms.iter_mut().zip(this) {
            all.extend(r);
        }
    }

    println!(
        "## The failed list of a file with {RUNNING} jobs running, beside a small tenant's (issue 40)\n\n\
         `SELECT * FROM code2des_list_jobs(…)` by file, status failed, first page of {LIMIT}, on one \
         connection; {} calls per variant in {} rounds, taking turns. x small: the busy file's p50 over \
         the small tenant's, per round, then the median of the rounds.\n",
        per_round * rounds.max(1),
        rounds.max(1)
    );
    let mut table = Table::new(&["statement, tenant", "rows of code2des fetched", "p50 ms", "p90 ms", "x small (p50)"]);
    for (i, v) in variants.iter().enumerate() {
        let ratio = match i {
            1 => f2(median(&ratios[0])),
            3 => f2(median(&ratios[1])),
            _ => String::new(),
        };
        table.row(vec![v.name.to_owned(), fetched[i].to_string(), f2(median(&ms[i])), f2(pct(&ms[i], 90.0)), ratio]);
    }
    table.print();
    Ok(())
}
