//! Security: no existence leak across tenants, and no secret in any answer or log line.
//!
//! - Every user route (SPEC section 7's retry, cancel and delete included) × every foreign
//!   scope (non-member, other organization, other project in another organization, other
//!   project of the same organization, soft-deleted organization, project, page import, job)
//!   answers 404 with exactly the body of a row that never existed (only `requestId` differs),
//!   and changes nothing: no row, no attempt, no manifest. Without an identity, 401.
//! - A full job lifecycle, with its error paths, runs in-process while every tracing line is
//!   captured: no nonce, webhook secret, S3 location or SQL text in any response; no nonce or
//!   secret in any log line.
//! - Hostile query parameters on the list route: only `limit` 1..=100 in digits is accepted.
#![allow(clippy::disallowed_methods)] // tests may panic on a row that does not read: that is a failure

#[path = "api/helpers.rs"]
mod helpers;

use std::sync::{Arc, Mutex, OnceLock};

use helpers::{default_body, list_event, trigger_event, user_event, Answer, Tenant, TestApp, SECRET};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use serde_json::{json, Value};
use shared::http::routes::{Route, RouteId, ROUTES};

// --- log capture -------------------------------------------------------------------------------

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

/// Every tracing line of this test binary, at debug level for all crates (stricter than the
/// `info` the service runs with).
fn logs() -> &'static Captured {
    static LOGS: OnceLock<Captured> = OnceLock::new();
    LOGS.get_or_init(|| {
        let c = Captured::default();
        let _ = tracing_subscriber::fmt()
            .with_writer(c.clone())
            .with_env_filter(tracing_subscriber::EnvFilter::new("debug"))
            .with_ansi(false)
            .try_init();
        c
    })
}

fn log_text() -> String {
    String::from_utf8_lossy(&logs().0.lock().unwrap()).into_owned()
}

// --- the matrix ----------------------------------------------------------------------------------

/// The matrix's operations: every user route of THE route table (the webhook authenticates by
/// signature and has its own checks, tests/api/webhook.rs). A route added to the table is in
/// the matrix; a route added to `RouteId` does not compile until [`request`] and
/// [`changes_the_job`] say how the matrix calls it.
fn user_routes() -> Vec<RouteId> {
    ROUTES.iter().filter(|r| r.user).map(|r| r.id).collect()
}

/// Whether the route changes a job the matrix reads: the owner's own calls to such routes come
/// after the matrix, in [`OWNER_WRITES`]' order.
fn changes_the_job(route: RouteId) -> bool {
    match route {
        RouteId::Retry | RouteId::Cancel | RouteId::Delete => true,
        RouteId::Trigger | RouteId::List | RouteId::Get | RouteId::Result | RouteId::Placement => false,
        RouteId::Webhook => unreachable!("not a user route"),
    }
}

/// The owner's calls to the routes that change a job, in an order in which each succeeds (a
/// deleted job cannot be cancelled), with the status each answers.
const OWNER_WRITES: [(RouteId, u16); 3] = [(RouteId::Retry, 202), (RouteId::Cancel, 200), (RouteId::Delete, 204)];

/// A tenant's jobs, each in the state in which its routes would act: the completed one is read
/// and placed, the failed one retried, the processing one cancelled and deleted.
#[derive(Debug, Clone)]
struct Jobs {
    completed: String,
    failed: String,
    processing: String,
}

impl Jobs {
    fn never() -> Self {
        let id = || uuid::Uuid::now_v7().to_string();
        Self { completed: id(), failed: id(), processing: id() }
    }
}

/// One request as a caller sees it: identity, path scope, job ids, page import in the body.
#[derive(Debug, Clone)]
struct Call {
    sub: String,
    org: i32,
    project: i32,
    job: Jobs,
    page_import: String,
}

impl Call {
    fn own(t: &Tenant, job: &Jobs) -> Self {
        Self {
            sub: t.sub.clone(),
            org: t.org,
            project: t.project,
            job: job.clone(),
            page_import: t.page_import.clone(),
        }
    }

    fn tenant(&self) -> Tenant {
        Tenant { org: self.org, project: self.project, sub: self.sub.clone(), page_import: self.page_import.clone() }
    }
}

async fn send(app: &TestApp, route: RouteId, c: &Call) -> Answer {
    send_as(app, route, c, Some(&c.sub)).await
}

/// `route` with `sub` as the identity (`None`: no identity at all).
async fn send_as(app: &TestApp, route: RouteId, c: &Call, sub: Option<&str>) -> Answer {
    app.dispatch(&request(route, c, sub)).await
}

/// The request the matrix sends on `route` as the caller `c` with identity `sub`: each route
/// acts on the job in the state in which it would succeed for its owner.
fn request(route: RouteId, c: &Call, sub: Option<&str>) -> Value {
    let t = c.tenant();
    let on = |job: &str, body: Option<Value>| {
        user_event(Route::get(route).event_file, &t, sub, Some(job), body.map(|b| b.to_string()))
    };
    match route {
        RouteId::Trigger => trigger_event(&t, sub, default_body(&t), None),
        RouteId::List => list_event(&t, sub, &[]),
        RouteId::Get | RouteId::Result => on(&c.job.completed, None),
        RouteId::Placement => on(&c.job.completed, Some(json!({"nodeId": "1:2"}))),
        RouteId::Retry => on(&c.job.failed, Some(json!({"attempt": 1}))),
        RouteId::Cancel | RouteId::Delete => on(&c.job.processing, None),
        RouteId::Webhook => unreachable!("not a user route"),
    }
}

enum Cell {
    /// 404 with the never-existed body.
    NotFound,
    /// The project is the caller's own and alive: the list answers 200 without the job.
    ListedWithout,
    /// The cell is not foreign at all (e.g. triggering from a live page import of one's own).
    Skip,
}

fn cell(route: RouteId, scope: &str) -> Cell {
    match (route, scope) {
        // A member may list every live project of the organization.
        (RouteId::List, "soft-deleted job" | "soft-deleted page import" | "other project of the same organization") => {
            Cell::ListedWithout
        }
        (RouteId::List, "own organization path, job and page import of another") => Cell::Skip,
        (RouteId::Trigger, "soft-deleted job") => Cell::Skip,
        _ => Cell::NotFound,
    }
}

/// A tenant with a completed job (artifact and image in S3), a failed one and a processing one.
async fn tenant_with_jobs(app: &TestApp) -> (Tenant, Jobs) {
    let t = app.tenant().await;
    let completed = app.new_job(&t).await;
    assert_eq!(app.complete(&completed).await.status, 200);
    let failed = app.new_job(&t).await;
    assert_eq!(app.fail(&failed, "boom").await.status, 200);
    let processing = app.new_job(&t).await;
    (t, Jobs { completed, failed, processing })
}

#[tokio::test]
async fn every_user_route_answers_404_alike_for_every_foreign_scope() {
    let app = TestApp::new().await;
    let (a, job_a) = tenant_with_jobs(&app).await;
    let (b, _job_b) = tenant_with_jobs(&app).await;
    let own = Call::own(&a, &job_a);

    // A second project in A's organization, with nothing in it.
    let a2: i32 =
        app.sql(&format!("INSERT INTO project (organization_id, name) VALUES ({}, 'p2') RETURNING id", a.org)).await[0]
            .get(0);

    // Tenants whose org / project / page import / job is then soft-deleted.
    let (del_org, del_org_job) = tenant_with_jobs(&app).await;
    let (del_project, del_project_job) = tenant_with_jobs(&app).await;
    let (del_pi, del_pi_job) = tenant_with_jobs(&app).await;
    let (del_job, del_job_job) = tenant_with_jobs(&app).await;
    app.sql(&format!("UPDATE organization SET deleted_at = now() WHERE id = {}", del_org.org)).await;
    app.sql(&format!("UPDATE project SET deleted_at = now() WHERE id = {}", del_project.project)).await;
    app.sql(&format!("UPDATE page_import SET deleted_at = now() WHERE id = '{}'", del_pi.page_import)).await;
    for id in [&del_job_job.completed, &del_job_job.failed, &del_job_job.processing] {
        app.sql(&format!("UPDATE code2des SET deleted_at = now(), deleted_by = 'test' WHERE id = '{id}'")).await;
    }

    // Never existed: the reference body per route, in the caller's own valid scope.
    let never = Call { project: i32::MAX, job: Jobs::never(), page_import: "pi-never-existed".into(), ..own.clone() };
    let never_job = Call { job: Jobs::never(), page_import: "pi-never-existed".into(), ..own.clone() };

    let stranger = format!("stranger-{}", uuid::Uuid::new_v4());
    let scopes: Vec<(&str, Call)> = vec![
        ("non-member", Call { sub: stranger, ..own.clone() }),
        ("member of another organization", Call { sub: b.sub.clone(), ..own.clone() }),
        (
            "own organization path, job and page import of another",
            Call { org: b.org, project: b.project, sub: b.sub.clone(), ..own.clone() },
        ),
        ("other project in another organization", Call { project: b.project, ..own.clone() }),
        ("other organization with its project", Call { org: b.org, project: b.project, ..own.clone() }),
        ("other project of the same organization", Call { project: a2, ..own.clone() }),
        ("soft-deleted organization", Call::own(&del_org, &del_org_job)),
        ("soft-deleted project", Call::own(&del_project, &del_project_job)),
        ("soft-deleted page import", Call::own(&del_pi, &del_pi_job)),
        ("soft-deleted job", Call::own(&del_job, &del_job_job)),
    ];

    let routes = user_routes();
    // The owner gets through on every route that reads (the ones that write: after the matrix):
    // the 404s below are about scope, nothing else.
    for &route in routes.iter().filter(|r| !changes_the_job(**r)) {
        let a = send(&app, route, &own).await;
        assert!(a.status == 200 || a.status == 202, "{route:?} own scope: {a:?}");
    }
    let rows = app.snapshot().await;
    let objects = app.object_keys().await;

    // No identity at all: 401 on every route.
    for &route in &routes {
        let a = send_as(&app, route, &own, None).await;
        assert_eq!((a.status, a.code()), (401, "unauthorized"), "{route:?} without identity: {a:?}");
    }

    let mut checked = 0;
    for &route in &routes {
        let reference = if matches!(route, RouteId::List) {
            send(&app, route, &never).await
        } else {
            send(&app, route, &never_job).await
        };
        assert_eq!(reference.status, 404, "{route:?} never existed: {reference:?}");
        assert!(reference.json["requestId"].is_string());
        for (name, call) in &scopes {
            let cell = cell(route, name);
            if matches!(cell, Cell::Skip) {
                // Not sent at all: such a call is the caller's own and would succeed.
                continue;
            }
            let a = send(&app, route, call).await;
            if matches!(cell, Cell::ListedWithout) {
                assert_eq!(a.status, 200, "{name}: {a:?}");
                let items = a.json["items"].as_array().unwrap();
                for hidden in [&call.job.completed, &call.job.failed, &call.job.processing] {
                    assert!(
                        !items.iter().any(|j| j["code2desId"] == hidden.as_str()),
                        "{name}: a hidden job is listed"
                    );
                }
                continue;
            }
            assert_eq!(a.status, 404, "{route:?} × {name}: {a:?}");
            assert_eq!(
                a.json["error"], reference.json["error"],
                "{route:?} × {name}: the body differs from never-existed"
            );
            let keys: Vec<&String> = a.json.as_object().unwrap().keys().collect();
            assert_eq!(keys, ["error", "requestId"], "{route:?} × {name}");
            checked += 1;
        }
    }
    // Every user route (8 today) × 10 scopes, less the cells where the project is the caller's
    // own and alive.
    let expected = routes
        .iter()
        .flat_map(|route| scopes.iter().map(move |(n, _)| cell(*route, n)))
        .filter(|c| matches!(c, Cell::NotFound))
        .count();
    assert_eq!(checked, expected);
    assert!(checked >= 75, "{checked}");

    // Nothing changed through any of those calls: no job, attempt or key row, no manifest.
    assert_eq!(app.snapshot().await, rows, "a refused call wrote");
    assert_eq!(app.object_keys().await, objects, "a refused call dispatched an attempt");
    let row = app.job_row(&job_a.completed).await;
    assert_eq!(row.get::<_, Option<String>>("materialized_node_id").as_deref(), Some("1:2"));

    // And the jobs were live all along: their owner retries, cancels and deletes them.
    for (route, status) in OWNER_WRITES {
        assert_eq!(send(&app, route, &own).await.status, status, "{route:?} own scope");
    }
}

/// The matrix covers the route table: it sends every user route (and nothing else), each
/// request reaching the route it is built for, and every route that changes a job is called by
/// its owner after the matrix.
#[test]
fn the_matrix_is_the_route_tables_user_routes() {
    let table: Vec<RouteId> = RouteId::ALL.into_iter().filter(|id| Route::get(*id).user).collect();
    assert_eq!(user_routes(), table);
    assert!(!table.contains(&RouteId::Webhook));
    let t = Tenant { org: 1, project: 2, sub: "s".into(), page_import: "pi".into() };
    let c = Call::own(&t, &Jobs::never());
    for route in table {
        let ev = request(route, &c, Some("s"));
        assert_eq!(ev["routeKey"], Route::get(route).key(), "{route:?}");
        assert_eq!(ev["requestContext"]["routeKey"], Route::get(route).key(), "{route:?}");
        assert_eq!(OWNER_WRITES.iter().any(|(r, _)| *r == route), changes_the_job(route), "{route:?}");
    }
}

// --- responses and logs --------------------------------------------------------------------------

const SQL_WORDS: &[&str] = &[
    "SELECT ",
    "UPDATE code2des",
    "INSERT INTO",
    "DELETE FROM",
    " WHERE ",
    "RETURNING",
    "tokio_postgres",
    "syntax error",
];

fn scan_answer(a: &Answer, secrets: &[String], seen: &mut Vec<String>) {
    let mut text = a.json.to_string();
    for (k, v) in &a.headers {
        text.push_str(&format!("\n{k}: {}", String::from_utf8_lossy(v.as_bytes())));
    }
    for s in secrets {
        assert!(!text.contains(s.as_str()), "a response contains a secret: {text}");
    }
    assert!(!text.contains("s3://"), "a response contains an S3 location: {text}");
    assert!(!text.contains("AKIA") && !text.contains("local-secret"), "a response contains S3 credentials: {text}");
    for w in SQL_WORDS {
        assert!(!text.contains(w), "a response contains SQL text {w:?}: {text}");
    }
    seen.push(format!("{} {}", a.status, a.json["error"]["code"].as_str().unwrap_or("")));
}

#[tokio::test]
async fn no_secret_in_any_response_or_log_line() {
    logs();
    let mut app = TestApp::new().await;
    let t = app.tenant().await;
    let mut answers: Vec<Answer> = Vec::new();

    // Trigger (with an Idempotency-Key, then its retry and its misuse), list with a cursor.
    let first = app.trigger_raw(trigger_event(&t, Some(&t.sub), default_body(&t), Some("k-1"))).await;
    let id = first.json["code2desId"].as_str().unwrap().to_owned();
    answers.push(first);
    answers.push(app.trigger_raw(trigger_event(&t, Some(&t.sub), default_body(&t), Some("k-1"))).await);
    let mut other = default_body(&t);
    other["screenId"] = json!("another");
    answers.push(app.trigger_raw(trigger_event(&t, Some(&t.sub), other, Some("k-1"))).await);
    let second = app.new_job(&t).await;
    let page = app.list(&t, Some(&t.sub), &[("limit", "1")]).await;
    let cursor = page.json["nextCursor"].as_str().unwrap().to_owned();
    answers.push(page);
    answers.push(app.list(&t, Some(&t.sub), &[("limit", "1"), ("cursor", &cursor)]).await);
    answers.push(app.list(&t, Some(&t.sub), &[("cursor", "forged")]).await);

    // Before completion: result not ready, placement refused.
    answers.push(app.result(&t, Some(&t.sub), &id).await);
    answers.push(app.place(&t, Some(&t.sub), &id, "1:2").await);

    // Webhooks: bad signature, wrong nonce, completion, replay, conflicting outcome.
    let m = app.manifest(&id).await;
    let nonces = vec![m.nonce.clone(), app.manifest(&second).await.nonce];
    let wrong = json!({"code2des_id": id, "attempt": 1, "nonce": "not-the-nonce", "status": "failed"});
    answers.push(app.webhook_raw(wrong.to_string().as_bytes(), Some("t=1,v1=00".into())).await);
    answers.push(app.webhook(&wrong).await);
    answers.push(app.complete(&id).await);
    let key = format!("code2des/{id}/1/result.json");
    let replay = json!({"code2des_id": id, "attempt": 1, "nonce": m.nonce, "status": "completed",
                        "result_url": format!("s3://{}/{key}", helpers::BUCKET), "warning_count": 2});
    answers.push(app.webhook(&replay).await);
    answers.push(app.webhook(&json!({"code2des_id": id, "attempt": 1, "nonce": m.nonce, "status": "failed"})).await);

    // Completed: get, result, placement twice.
    answers.push(app.get(&t, Some(&t.sub), &id).await);
    answers.push(app.result(&t, Some(&t.sub), &id).await);
    answers.push(app.place(&t, Some(&t.sub), &id, "1:2").await);
    answers.push(app.place(&t, Some(&t.sub), &id, "3:4").await);

    // A failed job, and an artifact whose nonce is wrong (502, reason only in the log).
    answers.push(app.fail(&second, "conversion blew up").await);
    answers.push(app.result(&t, Some(&t.sub), &second).await);
    let third = app.new_job(&t).await;
    let m3 = app.manifest(&third).await;
    let bad = helpers::artifact(&third, "a-forged-nonce", json!({}), &[]);
    answers.push(app.complete_with(&third, bad, &[]).await);
    answers.push(app.result(&t, Some(&t.sub), &third).await);

    // SPEC section 7: a retry (its new nonce is a secret too), progress, cancels, a retry of an
    // attempt already past and one of a completed job, a revalidated result, a delete and the
    // deleted job's webhook.
    answers.push(app.retry(&t, &second, Some(1)).await);
    let n2 = app.manifest_at(&second, 2).await.nonce;
    answers.push(app.progress(&second, 2, &n2, 50, "rendering").await);
    answers.push(app.progress(&second, 1, &nonces[1], 60, "fenced").await);
    answers.push(app.get(&t, Some(&t.sub), &second).await);
    answers.push(app.cancel(&t, Some(&t.sub), &second).await);
    answers.push(app.cancel(&t, Some(&t.sub), &id).await);
    answers.push(app.retry(&t, &second, Some(1)).await);
    answers.push(app.retry(&t, &id, None).await);
    let etag = app.result(&t, Some(&t.sub), &id).await.headers["etag"].to_str().unwrap().to_owned();
    answers.push(app.result_if_none_match(&t, &id, &etag).await);
    answers.push(app.delete(&t, Some(&t.sub), &third).await);
    answers.push(app.progress(&third, 1, &m3.nonce, 1, "gone").await);

    // Dependency faults: S3 gone at trigger and at result.
    app.stop_s3().await;
    answers.push(app.trigger(&t).await);
    answers.push(app.result(&t, Some(&t.sub), &id).await);

    let mut secrets: Vec<String> = nonces;
    secrets.push(m3.nonce.clone());
    secrets.push(n2);
    secrets.push(SECRET.to_owned());
    let mut seen = Vec::new();
    for a in &answers {
        scan_answer(a, &secrets, &mut seen);
    }
    // The run went through the paths it claims to (so the scan scanned something).
    for expected in [
        "202 ",
        "422 idempotency_key_reused",
        "400 invalid_request",
        "409 not_ready",
        "409 job_not_completed",
        "401 unauthorized",
        "409 fenced",
        "409 already_terminal",
        "409 job_failed",
        "502 artifact_invalid",
        "503 service_unavailable",
        "409 not_failed",
        "410 gone",
        "304 ",
        "204 ",
    ] {
        assert!(
            seen.iter().any(|s| s == expected || (expected.ends_with(' ') && s.starts_with(expected))),
            "{expected} not seen: {seen:?}"
        );
    }

    // Every nonce of the run also went through the handlers (manifest, webhook, artifact).
    let log = log_text();
    assert!(log.contains("job finished") && log.contains("artifact failed validation"), "the log was captured");
    for line in log.lines() {
        for s in &secrets {
            assert!(!line.contains(s.as_str()), "a log line contains a secret: {line}");
        }
    }
}

// --- hostile list parameters ---------------------------------------------------------------------

#[tokio::test]
async fn list_limit_accepts_exactly_1_to_100() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let mut runner = TestRunner::deterministic();
    let strategy = proptest::prop_oneof![
        "[0-9]{1,4}",
        "[-+ 0-9a-z.]{0,6}",
        proptest::string::string_regex(".{0,8}").unwrap(),
        (0i64..=200).prop_map(|n| n.to_string()),
    ];
    let cases: usize = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
    for _ in 0..cases {
        let raw = strategy.new_tree(&mut runner).unwrap().current();
        let a = app.list(&t, Some(&t.sub), &[("limit", &raw)]).await;
        let valid = !raw.is_empty()
            && raw.len() <= 3
            && raw.bytes().all(|b| b.is_ascii_digit())
            && (1..=100).contains(&raw.parse::<i64>().unwrap_or(0));
        if valid {
            assert_eq!(a.status, 200, "limit={raw:?}: {a:?}");
        } else {
            a.assert_invalid("limit");
        }
        let status = a.status;
        assert!(status == 200 || status == 400, "limit={raw:?}: {a:?}");
    }
    // Other parameters: repeated, empty, or not a status.
    for q in ["status=done", "status=", "figmaFileKey=", "figmaFileKey=a&figmaFileKey=b", "cursor=", "limit=5&limit=6"]
    {
        let mut ev = helpers::list_event(&t, Some(&t.sub), &[]);
        ev["rawQueryString"] = Value::String(q.to_owned());
        let a = Answer::from(code2des_lifecycle::handler::handle(&app.lifecycle, helpers::to_request(&ev)).await);
        assert_eq!(a.status, 400, "{q}: {a:?}");
        assert!(a.message().starts_with(q.split('=').next().unwrap()), "{q}: {a:?}");
    }
}
