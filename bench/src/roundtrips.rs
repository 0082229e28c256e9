//! Round trips per happy-path request: every handler runs against a pool that connects
//! through the counting proxy ([`crate::pgproxy`]), so the frontend protocol messages per call
//! are counted exactly; `pg_stat_statements` (track = all, so statements run by triggers or
//! functions would count too) gives the statements the server executed; an SDK interceptor
//! counts S3 requests. Each route runs once to warm its connection, then `calls` times.
//!
//! Trigger and retry run with the default quotas (issue 23) in force, each in an organization
//! of its own that stays within them (at most `calls + 1` jobs, `calls` ≤ 20), so their rows are
//! the happy path with the quota check in it; one more row is a trigger refused 429 by the
//! `active` limit (an organization at 20 processing jobs), the other path the check can take.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::fixture::{self, answer, request, App, Tenant};
use crate::pgproxy::{self, Counts};
use crate::stats::{f1, Table};

/// The handlers run as on Lambda: on a current-thread runtime of their own (the functions'
/// `main.rs`), where the pool's connection tasks then live too. There a request's statements
/// queued together (trigger's BEGIN and INSERT) always leave in one flight; on a multi-thread
/// runtime the connection task, on another worker, may flush the first before the second is
/// queued, and the count would measure that race instead of the function.
struct LambdaRuntime {
    jobs: tokio::sync::mpsc::UnboundedSender<BoxFuture<'static, ()>>,
}

impl LambdaRuntime {
    fn start() -> Self {
        let (jobs, mut rx) = tokio::sync::mpsc::unbounded_channel::<BoxFuture<'static, ()>>();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
            rt.block_on(async move {
                while let Some(job) = rx.recv().await {
                    job.await;
                }
            });
        });
        Self { jobs }
    }

    async fn call<T: Send + 'static>(&self, f: impl Future<Output = T> + Send + 'static) -> T {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let _ = self.jobs.send(Box::pin(async move {
            let _ = tx.send(f.await);
        }));
        rx.await.expect("the Lambda runtime thread is alive")
    }
}

struct Row {
    route: &'static str,
    /// The status every call of the route must answer (429 for the refused trigger, else 2xx).
    want: u16,
    calls: u64,
    wire: Counts,
    statements: (i64, i64),
    s3: [u64; 4],
    texts: Vec<String>,
    ok: bool,
}

/// The routes measured, in the table's order.
const ROUTES: [&str; 9] = [
    "trigger",
    "trigger (refused: 429 active)",
    "retry",
    "lifecycle.get",
    "lifecycle.list",
    "result",
    "placement (first)",
    "placement (later)",
    "webhook",
];

pub async fn run(app: &App, admin: &tokio_postgres::Client, pg_port: u16, db_name: &str, calls: usize) {
    let upstream: SocketAddr = format!("127.0.0.1:{pg_port}").parse().unwrap();
    let (proxy, wire) = pgproxy::start(upstream).await;
    let pool = app.pool_to(&format!("postgres://postgres@{proxy}/{db_name}"), 2);
    admin.batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements").await.expect("pg_stat_statements");
    let jobs = Jobs::insert(app, calls).await;
    let handlers = Handlers::new(app, &pool).await;
    let bench = Bench { app, admin, db_name, calls, wire, jobs, handlers };
    let mut rows = Vec::new();
    for route in ROUTES {
        rows.push(bench.route(route).await);
    }
    print_rows(&rows, calls);
}

/// The tenants and jobs the calls act on.
struct Jobs {
    /// Holds the jobs below (`calls + 1` processing ones among them).
    t: Tenant,
    /// Trigger's own organization.
    tt: Tenant,
    /// Retry's own organization and its failed jobs, each retried once.
    rt: Tenant,
    to_retry: Vec<String>,
    /// An organization with its 20 jobs processing: the refused trigger's.
    full: Tenant,
    /// A completed job (get, result).
    done: String,
    /// Completed jobs for first placements.
    to_place: Vec<String>,
    /// Processing jobs for webhook transitions.
    to_finish: Vec<String>,
}

impl Jobs {
    async fn insert(app: &App, calls: usize) -> Self {
        let t = app.tenant().await;
        let q = shared::domain::quota::Quota::default();
        assert!(
            calls < q.max_active_jobs_per_org.min(q.triggers_per_minute) as usize,
            "trigger must stay within the quotas"
        );
        // Trigger's and retry's own organizations: `t` holds `calls + 1` processing jobs below.
        let (tt, rt, full) = (app.tenant().await, app.tenant().await, app.tenant().await);
        // Retry: `calls + 1` failed jobs, each retried once.
        let to_retry = app.insert_jobs(&rt, calls + 1).await;
        app.pool
            .get()
            .await
            .unwrap()
            .execute("UPDATE code2des SET status = '2', error_message = 'boom' WHERE organization_id = $1", &[&rt.org])
            .await
            .unwrap();
        // The refused trigger: an organization with its 20 jobs processing.
        app.insert_jobs(&full, q.max_active_jobs_per_org as usize).await;
        // Jobs: one completed (get, result), `calls + 1` completed for first placements, and
        // `calls + 1` processing for webhook transitions.
        let done = app.insert_jobs(&t, 1).await.remove(0);
        app.complete(&done, 1, 8).await;
        let to_place = app.insert_jobs(&t, calls + 1).await;
        for id in &to_place {
            app.complete(id, 0, 8).await;
        }
        let to_finish = app.insert_jobs(&t, calls + 1).await;
        Self { t, tt, rt, to_retry, full, done, to_place, to_finish }
    }
}

/// Every function, built on the counted pool, and the runtime it runs on.
struct Handlers {
    lambda: LambdaRuntime,
    trigger: Arc<code2des_trigger::handler::Deps>,
    lifecycle: Arc<code2des_lifecycle::handler::Deps>,
    result: Arc<code2des_result::handler::Deps>,
    webhook: Arc<code2des_webhook::handler::Deps>,
    placement: Arc<code2des_placement::handler::Deps>,
}

impl Handlers {
    async fn new(app: &App, pool: &deadpool_postgres::Pool) -> Self {
        let lambda = LambdaRuntime::start();
        let trigger = Arc::new(app.trigger(pool).await);
        let lifecycle = Arc::new(app.lifecycle(pool).await);
        let result = Arc::new(app.result(pool).await);
        let webhook = Arc::new(app.webhook(pool).await);
        let placement = Arc::new(app.placement(pool).await);
        Self { lambda, trigger, lifecycle, result, webhook, placement }
    }

    /// Call `i` of `route`, on the Lambda runtime.
    async fn call(&self, route: &str, i: usize, j: &Jobs) -> lambda_http::Response<lambda_http::Body> {
        let lambda = &self.lambda;
        match route {
            "trigger" | "trigger (refused: 429 active)" | "retry" => {
                let ev = match route {
                    "trigger" => fixture::trigger_event(&j.tt),
                    "retry" => fixture::retry_event(&j.rt, &j.to_retry[i]),
                    _ => fixture::trigger_event(&j.full),
                };
                let d = self.trigger.clone();
                lambda.call(async move { code2des_trigger::handler::handle(&d, request(&ev)).await }).await
            }
            "lifecycle.get" | "lifecycle.list" => {
                let ev = if route == "lifecycle.get" {
                    fixture::get_event(&j.t, &j.done)
                } else {
                    fixture::list_event(&j.t)
                };
                let d = self.lifecycle.clone();
                lambda.call(async move { code2des_lifecycle::handler::handle(&d, request(&ev)).await }).await
            }
            "result" => {
                let (d, ev) = (self.result.clone(), fixture::result_event(&j.t, &j.done));
                lambda.call(async move { code2des_result::handler::handle(&d, request(&ev)).await }).await
            }
            "placement (first)" | "placement (later)" => {
                let id = if route == "placement (first)" { &j.to_place[i] } else { &j.to_place[0] };
                let (d, ev) = (self.placement.clone(), fixture::placement_event(&j.t, id));
                lambda.call(async move { code2des_placement::handler::handle(&d, request(&ev)).await }).await
            }
            _ => {
                let (d, ev) = (self.webhook.clone(), fixture::webhook_event(&j.to_finish[i]));
                lambda.call(async move { code2des_webhook::handler::handle(&d, request(&ev)).await }).await
            }
        }
    }
}

/// What measuring a route needs: the counters (proxy, S3, pg_stat_statements) and the calls.
struct Bench<'a> {
    app: &'a App,
    admin: &'a tokio_postgres::Client,
    db_name: &'a str,
    calls: usize,
    wire: Arc<pgproxy::Wire>,
    jobs: Jobs,
    handlers: Handlers,
}

impl Bench<'_> {
    /// One warm-up call of `route`, then `calls` counted ones.
    async fn route(&self, route: &'static str) -> Row {
        let mut row = Row {
            route,
            want: if route.contains("429") { 429 } else { 200 },
            calls: 0,
            wire: [0; 9],
            statements: (0, 0),
            s3: [0; 4],
            texts: vec![],
            ok: true,
        };
        // The first call opens the connection (its startup messages are not the request's).
        let mut statuses = Vec::new();
        for i in 0..=self.calls {
            if i == 1 {
                self.admin.execute("SELECT pg_stat_statements_reset()", &[]).await.unwrap();
            }
            let before = (self.wire.snapshot(), self.app.s3_calls.snapshot());
            let resp = self.handlers.call(route, i, &self.jobs).await;
            statuses.push(answer(resp).0);
            if i >= 1 {
                let after = (self.wire.snapshot(), self.app.s3_calls.snapshot());
                let w = pgproxy::diff(&before.0, &after.0);
                let s3: [u64; 4] = std::array::from_fn(|k| after.1[k] - before.1[k]);
                row.calls += 1;
                for (acc, x) in row.wire.iter_mut().zip(w) {
                    *acc += x;
                }
                for (acc, x) in row.s3.iter_mut().zip(s3) {
                    *acc += x;
                }
            }
        }
        row.ok = statuses.iter().all(|s| if row.want == 429 { *s == 429 } else { (200..300).contains(s) });
        self.statements(&mut row).await;
        if !row.ok {
            eprintln!("warning: {route} answered {statuses:?}");
        }
        row
    }

    /// What pg_stat_statements saw since its reset: the counts, and the statements' texts.
    async fn statements(&self, r: &mut Row) {
        let stats = self
            .admin
            .query_one(
                "SELECT coalesce(sum(calls), 0)::int8, coalesce(sum(calls) FILTER (WHERE toplevel), 0)::int8 \
                 FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)",
                &[&self.db_name],
            )
            .await
            .unwrap();
        r.statements = (stats.get(0), stats.get(1));
        r.texts = self
            .admin
            .query(
                "SELECT calls, left(regexp_replace(query, '\\s+', ' ', 'g'), 70) FROM pg_stat_statements \
                 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1) ORDER BY calls DESC",
                &[&self.db_name],
            )
            .await
            .unwrap()
            .iter()
            .map(|row| format!("{}x {}", row.get::<_, i64>(0), row.get::<_, String>(1)))
            .collect();
    }
}

fn print_rows(rows: &[Row], calls: usize) {
    println!("## Round trips per happy-path request ({calls} calls each, after one warm-up call)\n");
    let mut table = Table::new(&[
        "route",
        "SQL statements (pg_stat_statements, all / top-level)",
        "requests (Sync+Query)",
        "round trips (flights)",
        "Parse",
        "Bind",
        "Execute",
        "new connections",
        "S3 GET/HEAD/PUT",
        "answered as expected (2xx; 429 for the refusal)",
    ]);
    for r in rows {
        let per = |x: f64| f1(x / r.calls as f64);
        table.row(vec![
            r.route.to_owned(),
            format!("{} / {}", per(r.statements.0 as f64), per(r.statements.1 as f64)),
            per((r.wire[5] + r.wire[6]) as f64),
            per(r.wire[8] as f64),
            per(r.wire[1] as f64),
            per(r.wire[2] as f64),
            per(r.wire[4] as f64),
            r.wire[0].to_string(),
            format!("{}/{}/{}", per(r.s3[0] as f64), per(r.s3[1] as f64), per(r.s3[2] as f64)),
            if r.ok { "yes".into() } else { "NO".into() },
        ]);
    }
    table.print();
    println!("Statements seen by the server (normalised text, first 70 characters):\n");
    for r in rows {
        println!("- {}: {}", r.route, r.texts.join(" · "));
    }
    println!();
}
