//! Warm path: each route's handler in-process (event JSON -> `Request` -> handler ->
//! response, as the runtime drives it minus its HTTP hop) beside the same SQL statement run
//! directly through tokio-postgres on plain connections (the public `shared::db` function,
//! which is exactly one `query_typed` plus row decoding), at concurrency 1, 8 and 32.
//! Handler and raw runs alternate within each round; the ratio is taken per round (paired),
//! then its median across rounds.

use std::sync::Arc;
use std::time::Duration;

use code2des_testkit::scope;
use futures::future::BoxFuture;
use shared::db::lifecycle::{get_job, list_jobs, ListQuery};
use shared::db::placement::{place, Placed};
use shared::db::trigger::{insert_job, Inserted, NewJob};
use shared::db::webhook::{record_outcome, AttemptRef, Outcome};
use shared::domain::ids::Code2desId;
use shared::domain::job::Status;
use shared::domain::quota::Quota;
use shared::domain::scope::JobRef;

use crate::fixture::{self, request, App, Tenant, BUCKET, NONCE};
use crate::load::{drive, warn_failures, Op, Summary};
use crate::stats::{f2, median, Table};

/// Builds, per case of `total` calls: the handler op, the raw op, and optionally raw SQL + S3.
type MakeOps = Box<dyn Fn(usize) -> BoxFuture<'static, (Op, Op, Option<Op>)> + Send + Sync>;

const DEADLINE: Duration = shared::domain::job::DEFAULT_DEADLINE;

/// One route: how to build (per case) the handler op and the raw op.
struct Route {
    name: &'static str,
    /// Handler op, raw op, and (trigger, result) a raw op that adds the handler's S3 calls.
    make: MakeOps,
}

fn ok_status(resp: lambda_http::Response<lambda_http::Body>) -> bool {
    resp.status().is_success()
}

pub async fn run(app: Arc<App>, raw: Raw, quick: bool, rounds: usize) {
    let t = fixture_tenant(&app).await;
    let routes = routes(app.clone(), raw.clone(), t).await;
    let concs = [1usize, 8, 32];
    let total_for = |c: usize| {
        if quick {
            8 * c.max(4)
        } else if c == 1 {
            500
        } else {
            2000
        }
    };

    println!(
        "## Warm path: handler in-process vs the same statement through tokio-postgres ({rounds} rounds, handler/raw alternating)\n"
    );
    let mut table = Table::new(&[
        "route",
        "conc",
        "handler p50 ms",
        "handler p99 ms",
        "handler req/s",
        "raw p50 ms",
        "raw p99 ms",
        "raw req/s",
        "handler/raw throughput",
        "raw SQL+S3 req/s",
        "handler/(SQL+S3)",
    ]);
    for route in &routes {
        for &c in &concs {
            let total = total_for(c);
            let (mut h, mut r, mut r2) = (Vec::new(), Vec::new(), Vec::new());
            let mut ratios = Vec::new();
            let mut ratios2 = Vec::new();
            for round in 0..rounds {
                let (hop, rop, r2op) = (route.make)(total).await;
                // Alternate which side goes first.
                let (hs, rs) = if round % 2 == 0 {
                    let rs = drive(c, total, None, rop).await;
                    (drive(c, total, None, hop).await, rs)
                } else {
                    let hs = drive(c, total, None, hop).await;
                    (hs, drive(c, total, None, rop).await)
                };
                ratios.push(hs.tput / rs.tput);
                if let Some(op) = r2op {
                    let s = drive(c, total, None, op).await;
                    ratios2.push(hs.tput / s.tput);
                    r2.push(s);
                }
                h.push(hs);
                r.push(rs);
            }
            let (h, r) = (Summary::of(&h), Summary::of(&r));
            let r2 = (!r2.is_empty()).then(|| Summary::of(&r2));
            warn_failures(route.name, c, h.failures + r.failures + r2.as_ref().map_or(0, |s| s.failures));
            table.row(vec![
                route.name.to_owned(),
                c.to_string(),
                f2(h.p50_ms),
                f2(h.p99_ms),
                format!("{:.0}", h.tput),
                f2(r.p50_ms),
                f2(r.p99_ms),
                format!("{:.0}", r.tput),
                f2(median(&ratios)),
                r2.map_or_else(String::new, |s| format!("{:.0}", s.tput)),
                if ratios2.is_empty() { "".into() } else { f2(median(&ratios2)) },
            ]);
        }
    }
    table.print();
}

async fn fixture_tenant(app: &App) -> Tenant {
    app.tenant().await
}

/// Fresh tenants enough for `calls` triggers within the default quotas: at most as many calls
/// each as both limits let through (processing jobs per organization, triggers per subject
/// and minute), since their jobs stay processing.
async fn quota_tenants(app: &App, calls: usize) -> Arc<Vec<Tenant>> {
    let q = Quota::default();
    let each = q.max_active_jobs_per_org.min(q.triggers_per_minute) as usize;
    let mut out = Vec::new();
    for _ in 0..calls.div_ceil(each) {
        out.push(app.tenant().await);
    }
    Arc::new(out)
}

/// What the routes' calls act on, made once before any is timed.
struct Ctx {
    app: Arc<App>,
    raw: Raw,
    pool: deadpool_postgres::Pool,
    t: Arc<Tenant>,
    /// lifecycle.get / result: one completed job with one small image.
    done: String,
    /// lifecycle.list: a tenant of its own with 20 completed jobs (one page).
    lt: Arc<Tenant>,
    /// placement: one placed job per worker and side (the steady "later call" path: the
    /// statement is the same; per-worker jobs keep row locks out of the picture).
    place_h: Arc<Vec<String>>,
    place_r: Arc<Vec<String>>,
}

type Raw = Arc<Vec<tokio_postgres::Client>>;

impl Ctx {
    async fn new(app: Arc<App>, raw: Raw, t: Tenant) -> Self {
        let t = Arc::new(t);
        let done = app.insert_jobs(&t, 1).await.remove(0);
        app.complete(&done, 1, 8).await;
        let lt = Arc::new(app.tenant().await);
        for id in app.insert_jobs(&lt, 20).await {
            app.complete(&id, 0, 8).await;
        }
        let mut place_h = Vec::new();
        let mut place_r = Vec::new();
        for v in [&mut place_h, &mut place_r] {
            for id in app.insert_jobs(&t, 32).await {
                app.complete(&id, 0, 8).await;
                v.push(id);
            }
        }
        let pool = app.pool.clone();
        Self { app, raw, pool, t, done, lt, place_h: Arc::new(place_h), place_r: Arc::new(place_r) }
    }
}

async fn routes(app: Arc<App>, raw: Raw, t: Tenant) -> Vec<Route> {
    let x = Ctx::new(app, raw, t).await;
    vec![
        trigger_route(&x).await,
        get_route(&x).await,
        list_route(&x).await,
        result_route(&x).await,
        placement_route(&x).await,
        webhook_route(&x).await,
    ]
}

async fn trigger_route(x: &Ctx) -> Route {
    let (app, raw) = (x.app.clone(), x.raw.clone());
    let deps = Arc::new(x.app.trigger(&x.pool).await);
    Route {
        name: "trigger",
        make: Box::new(move |total| Box::pin(trigger_ops(deps.clone(), raw.clone(), app.clone(), total))),
    }
}

/// Every side of every round triggers as tenants of its own, each within the default quotas
/// (one tenant would be refused 429 after 20 jobs): what a trigger costs a tenant that is let
/// through, the quota check included. Calls go round the tenants, so concurrent ones rarely
/// share an organization's lock.
async fn trigger_ops(
    deps: Arc<code2des_trigger::handler::Deps>,
    raw: Raw,
    app: Arc<App>,
    total: usize,
) -> (Op, Op, Option<Op>) {
    let hs = quota_tenants(&app, total).await;
    let events: Arc<Vec<String>> = Arc::new(hs.iter().map(fixture::trigger_event).collect());
    let hop: Op = Arc::new(move |_, i| {
        let (deps, events) = (deps.clone(), events.clone());
        Box::pin(async move {
            let ev = &events[i % events.len()];
            ok_status(code2des_trigger::handler::handle(&deps, request(ev)).await)
        })
    });
    let (raw1, rs) = (raw.clone(), quota_tenants(&app, total).await);
    let rop: Op = Arc::new(move |w, i| {
        let (raw, t) = (raw1.clone(), rs[i % rs.len()].clone());
        Box::pin(async move { insert_raw(raw, t, w).await.is_some() })
    });
    let r2s = quota_tenants(&app, total).await;
    let r2op: Op = Arc::new(move |w, i| {
        let (raw, t, app) = (raw.clone(), r2s[i % r2s.len()].clone(), app.clone());
        Box::pin(async move {
            let Some(id) = insert_raw(raw, t, w).await else { return false };
            let key = format!("code2des/{id}/1/manifest.json");
            app.s3.put_object().bucket(BUCKET).key(key).body(vec![b'x'; 600].into()).send().await.is_ok()
        })
    });
    (hop, rop, Some(r2op))
}

/// The trigger's raw side: the statement alone, auto-committed: no BEGIN, no lock statement,
/// no COMMIT (the handler pipelines the first two with it).
async fn insert_raw(raw: Raw, t: Tenant, w: usize) -> Option<Code2desId> {
    let scope = scope(&t);
    let nonce = shared::domain::job::Nonce::generate();
    let page_import_id = shared::domain::ids::PageImportId::parse(&t.page_import).unwrap();
    let figma_file_key = shared::domain::ids::FigmaFileKey::parse("FILEkey123").unwrap();
    let screen_id = shared::domain::ids::ScreenId::parse("screen-1").unwrap();
    let new = NewJob {
        id: Code2desId::new_v7(),
        scope: &scope,
        page_import_id: &page_import_id,
        figma_file_key: &figma_file_key,
        screen_id: &screen_id,
        placement_target: None,
        nonce: &nonce,
        idempotency: None,
        viewports: None,
    };
    match insert_job(&raw[w], &new, &Quota::default(), DEADLINE).await {
        Ok(Inserted::Created { job, .. }) => Some(job.id),
        _ => None,
    }
}

/// The lifecycle handler answering `ev` on every call.
fn lifecycle_op(deps: Arc<code2des_lifecycle::handler::Deps>, ev: String) -> Op {
    let ev = Arc::new(ev);
    Arc::new(move |_, _| {
        let (deps, ev) = (deps.clone(), ev.clone());
        Box::pin(async move { ok_status(code2des_lifecycle::handler::handle(&deps, request(&ev)).await) })
    })
}

/// `get_job` of `id` as `t` on worker w's connection.
fn get_job_op(raw: Raw, t: Arc<Tenant>, id: Code2desId) -> Op {
    Arc::new(move |w, _| {
        let (raw, t) = (raw.clone(), t.clone());
        Box::pin(
            async move { matches!(get_job(&raw[w], &JobRef { scope: scope(&t), id }, DEADLINE).await, Ok(Some(_))) },
        )
    })
}

async fn get_route(x: &Ctx) -> Route {
    let (raw, t, done) = (x.raw.clone(), x.t.clone(), x.done.clone());
    let deps = Arc::new(x.app.lifecycle(&x.pool).await);
    Route {
        name: "lifecycle.get",
        make: Box::new(move |_| {
            let (deps, raw, t, done) = (deps.clone(), raw.clone(), t.clone(), done.clone());
            Box::pin(async move {
                let hop = lifecycle_op(deps, fixture::get_event(&t, &done));
                let id = Code2desId::parse(&done).unwrap();
                (hop, get_job_op(raw, t, id), None)
            })
        }),
    }
}

async fn list_route(x: &Ctx) -> Route {
    let (raw, lt) = (x.raw.clone(), x.lt.clone());
    let deps = Arc::new(x.app.lifecycle(&x.pool).await);
    Route {
        name: "lifecycle.list (20 items)",
        make: Box::new(move |_| {
            let (deps, raw, lt) = (deps.clone(), raw.clone(), lt.clone());
            Box::pin(async move {
                let hop = lifecycle_op(deps, fixture::list_event(&lt));
                let rop: Op = Arc::new(move |w, _| {
                    let (raw, lt) = (raw.clone(), lt.clone());
                    Box::pin(async move {
                        let q = ListQuery { figma_file_key: None, status: None, after: None, limit: 51 };
                        matches!(list_jobs(&raw[w], &scope(&lt), &q, DEADLINE).await, Ok(Some(v)) if v.len() == 20)
                    })
                });
                (hop, rop, None)
            })
        }),
    }
}

async fn result_route(x: &Ctx) -> Route {
    let (app2, raw, t, done) = (x.app.clone(), x.raw.clone(), x.t.clone(), x.done.clone());
    let deps = Arc::new(x.app.result(&x.pool).await);
    Route {
        name: "result (1 small image)",
        make: Box::new(move |_| {
            let (deps, raw, t, done, app) = (deps.clone(), raw.clone(), t.clone(), done.clone(), app2.clone());
            Box::pin(async move {
                let ev = Arc::new(fixture::result_event(&t, &done));
                let hop: Op = Arc::new(move |_, _| {
                    let (deps, ev) = (deps.clone(), ev.clone());
                    Box::pin(async move { ok_status(code2des_result::handler::handle(&deps, request(&ev)).await) })
                });
                let id = Code2desId::parse(&done).unwrap();
                let rop = get_job_op(raw.clone(), t.clone(), id);
                let prefix = format!("code2des/{done}/1/");
                let r2op: Op = Arc::new(move |w, _| {
                    let (raw, t, app, prefix) = (raw.clone(), t.clone(), app.clone(), prefix.clone());
                    Box::pin(result_sql_s3(raw, t, id, app, prefix, w))
                });
                (hop, rop, Some(r2op))
            })
        }),
    }
}

/// The result handler's reads done by hand: `get_job`, then its S3 requests, one GET per
/// object (its size comes with the response headers), the artifact, then the image.
async fn result_sql_s3(raw: Raw, t: Arc<Tenant>, id: Code2desId, app: Arc<App>, prefix: String, w: usize) -> bool {
    if !matches!(get_job(&raw[w], &JobRef { scope: scope(&t), id }, DEADLINE).await, Ok(Some(_))) {
        return false;
    }
    for key in [format!("{prefix}result.json"), format!("{prefix}images/img0.png")] {
        let Ok(o) = app.s3.get_object().bucket(BUCKET).key(&key).send().await else {
            return false;
        };
        if o.body.collect().await.is_err() {
            return false;
        }
    }
    true
}

async fn placement_route(x: &Ctx) -> Route {
    let (raw, t, place_h, place_r) = (x.raw.clone(), x.t.clone(), x.place_h.clone(), x.place_r.clone());
    let deps = Arc::new(x.app.placement(&x.pool).await);
    Route {
        name: "placement (later call)",
        make: Box::new(move |_| {
            let (deps, raw, t, place_h, place_r) =
                (deps.clone(), raw.clone(), t.clone(), place_h.clone(), place_r.clone());
            Box::pin(async move {
                let evs: Arc<Vec<String>> =
                    Arc::new(place_h.iter().map(|id| fixture::placement_event(&t, id)).collect());
                let hop: Op = Arc::new(move |w, _| {
                    let (deps, evs) = (deps.clone(), evs.clone());
                    Box::pin(
                        async move { ok_status(code2des_placement::handler::handle(&deps, request(&evs[w])).await) },
                    )
                });
                let rop: Op = Arc::new(move |w, _| {
                    let (raw, t, place_r) = (raw.clone(), t.clone(), place_r.clone());
                    Box::pin(async move {
                        let id = Code2desId::parse(&place_r[w]).unwrap();
                        let node = shared::domain::ids::NodeId::parse("12:34").unwrap();
                        matches!(
                            place(&raw[w], &JobRef { scope: scope(&t), id }, &node, DEADLINE).await,
                            Ok(Placed::Done(_))
                        )
                    })
                });
                (hop, rop, None)
            })
        }),
    }
}

async fn webhook_route(x: &Ctx) -> Route {
    let (app2, raw, t) = (x.app.clone(), x.raw.clone(), x.t.clone());
    let deps = Arc::new(x.app.webhook(&x.pool).await);
    Route {
        name: "webhook (fresh transition)",
        make: Box::new(move |total| {
            let (deps, raw, t, app) = (deps.clone(), raw.clone(), t.clone(), app2.clone());
            Box::pin(async move {
                let hids = app.insert_jobs(&t, total).await;
                let rids = Arc::new(app.insert_jobs(&t, total).await);
                let evs: Arc<Vec<String>> = Arc::new(hids.iter().map(|id| fixture::webhook_event(id)).collect());
                let hop: Op = Arc::new(move |_, i| {
                    let (deps, evs) = (deps.clone(), evs.clone());
                    Box::pin(async move { ok_status(code2des_webhook::handler::handle(&deps, request(&evs[i])).await) })
                });
                let rop: Op = Arc::new(move |w, i| {
                    let (raw, rids) = (raw.clone(), rids.clone());
                    Box::pin(async move {
                        let id = Code2desId::parse(&rids[i]).unwrap();
                        let url = format!("s3://{BUCKET}/code2des/{id}/1/result.json");
                        let outcome = Outcome {
                            status: Status::Completed,
                            result_url: Some(&url),
                            warning_count: Some(0),
                            error_message: None,
                        };
                        let at = AttemptRef { id, attempt: 1, nonce: NONCE };
                        matches!(record_outcome(&raw[w], at, &outcome, DEADLINE).await, Ok(Some(_)))
                    })
                });
                (hop, rop, None)
            })
        }),
    }
}
