//! The deadline rule is written once (`code2des_overdue`, migration V7) and every path that
//! applies it agrees (issue 22). A property test: random job states and clocks, each run
//! through every read, write and the sweep, each compared with the rule as this file states it.
//!
//! Each path runs in a transaction of its own that inserts the job, applies the path and rolls
//! back: `now()` is the transaction's start, so the job's ages are exact and no run depends on
//! how fast the machine is.

use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use shared::db::lifecycle::{self, Cancelled, ListQuery};
use shared::db::retry::Retried;
use shared::db::webhook::{AttemptRef, Outcome, Progressed};
use shared::domain::ids::{Code2desId, OrganizationId, ProgressStage, ProjectId, Subject};
use shared::domain::job::{Nonce, Policy, Status};
use shared::domain::scope::{JobRef, Scope};
use tokio_postgres::Client;

use crate::helpers::*;

/// The job's attempt row (migration V2), as the paths may find it.
#[derive(Debug, Clone, Copy)]
enum AttemptRow {
    /// None: a job from before V2, whose one attempt started when it was created.
    Absent,
    /// The current attempt's, started this many seconds ago.
    Current(i64),
    /// Another attempt's (a retry restarted the job between a statement's snapshot and its lock).
    Other(i64),
}

#[derive(Debug, Clone, Copy)]
struct State {
    /// '0' processing, '1' completed, '2' failed (stored).
    status: u8,
    attempt: i32,
    created_ago: i64,
    row: AttemptRow,
    deadline: i64,
}

impl State {
    /// THE rule, as SPEC sections 4 and 7 state it: processing, and the current attempt started
    /// longer ago than the deadline (an attempt row of another attempt: just restarted).
    fn overdue(&self) -> bool {
        let started_ago = match self.row {
            AttemptRow::Absent => Some(self.created_ago),
            AttemptRow::Current(s) => Some(s),
            AttemptRow::Other(_) => None,
        };
        self.status == 0 && started_ago.is_some_and(|s| s > self.deadline)
    }

    fn status_as_read(&self) -> Status {
        match (self.status, self.overdue()) {
            (_, true) | (2, false) => Status::Failed,
            (0, false) => Status::Processing,
            _ => Status::Completed,
        }
    }
}

fn states() -> impl Strategy<Value = State> {
    (0u8..3, 1i32..4, 0i64..4000, 0u8..3, 0i64..4000, prop::sample::select(vec![60i64, 900, 1800])).prop_map(
        |(status, attempt, created_ago, kind, started, deadline)| {
            // An attempt never starts before its job exists.
            let started_ago = started.min(created_ago);
            let row = match kind {
                0 => AttemptRow::Absent,
                1 => AttemptRow::Current(started_ago),
                _ => AttemptRow::Other(started_ago),
            };
            State { status, attempt, created_ago, row, deadline }
        },
    )
}

const NONCE: &str = "rule-nonce";

/// Inserts the job of `s` in the open transaction; returns its id.
async fn insert(c: &Client, t: &Tenant, s: &State) -> Code2desId {
    let id = Code2desId::new_v7();
    let (result_url, error) = match s.status {
        1 => (Some(format!("s3://{BUCKET}/code2des/{id}/{}/result.json", s.attempt)), None),
        2 => (None, Some("boom")),
        _ => (None, None),
    };
    c.execute(
        "INSERT INTO code2des (id, organization_id, project_id, page_import_id, figma_file_key, screen_id, status, \
         attempt, nonce, result_url, error_message, created_at, updated_at, created_by, updated_by) \
         VALUES ($1, $2, $3, $4, 'rule-file', 's', $5::text::code2des_status, $6, $7, $8, $9, \
         now() - make_interval(secs => $10), now() - make_interval(secs => $10), $11, $11)",
        &[
            &id.to_db(),
            &t.org,
            &t.project,
            &t.page_import,
            &s.status.to_string(),
            &s.attempt,
            &NONCE,
            &result_url,
            &error,
            &(s.created_ago as f64),
            &t.sub,
        ],
    )
    .await
    .unwrap();
    let row = match s.row {
        AttemptRow::Absent => None,
        AttemptRow::Current(ago) => Some((s.attempt, ago)),
        AttemptRow::Other(ago) => Some((s.attempt + 1, ago)),
    };
    if let Some((attempt, ago)) = row {
        c.execute(
            "INSERT INTO code2des_attempt (code2des_id, attempt, started_at) \
             VALUES ($1, $2, now() - make_interval(secs => $3))",
            &[&id.to_db(), &attempt, &(ago as f64)],
        )
        .await
        .unwrap();
    }
    id
}

/// What each path did with the job of one state.
#[derive(Debug, PartialEq)]
struct Seen {
    get: Status,
    listed: Status,
    in_filters: [bool; 3],
    fence_overdue: bool,
    webhook_won: bool,
    progress_fenced: bool,
    cancel_won: bool,
    retry_created: bool,
    expire_one: bool,
    swept: bool,
}

async fn seen(c: &Client, t: &Tenant, s: &State) -> Seen {
    let scope = Scope {
        organization_id: OrganizationId::new(t.org).unwrap(),
        project_id: ProjectId::new(t.project).unwrap(),
        subject: Subject::parse(&t.sub).unwrap(),
    };
    let deadline = Duration::from_secs(s.deadline as u64);
    let policy = Policy { deadline, ..Policy::default() };
    // Every path in its own transaction, the job inserted in it and rolled back with it.
    async fn run<T>(c: &Client, t: &Tenant, s: &State, path: impl AsyncFnOnce(Code2desId) -> T) -> T {
        c.batch_execute("BEGIN").await.unwrap();
        let id = insert(c, t, s).await;
        let out = path(id).await;
        c.batch_execute("ROLLBACK").await.unwrap();
        out
    }
    let job = |id: Code2desId| JobRef { scope: scope.clone(), id };
    let at = |id: Code2desId| AttemptRef { id, attempt: s.attempt, nonce: NONCE };
    let list = async |status: Option<Status>| {
        let q = ListQuery { figma_file_key: None, status, after: None, limit: 101 };
        lifecycle::list_jobs(c, &scope, &q, deadline).await.unwrap().unwrap()
    };
    let get = run(c, t, s, async |id| lifecycle::get_job(c, &job(id), deadline).await.unwrap().unwrap().status).await;
    let listed = run(c, t, s, async |_| list(None).await[0].status).await;
    let mut in_filters = [false; 3];
    for (i, status) in [Status::Processing, Status::Completed, Status::Failed].into_iter().enumerate() {
        in_filters[i] = run(c, t, s, async |_| !list(Some(status)).await.is_empty()).await;
    }
    let fence_overdue =
        run(c, t, s, async |id| shared::db::webhook::fence(c, id, deadline).await.unwrap().unwrap().overdue).await;
    let outcome = Outcome {
        status: Status::Completed,
        result_url: Some("s3://code2des-artifacts/x/result.json"),
        warning_count: None,
        error_message: None,
    };
    let webhook_won = run(c, t, s, async |id| {
        shared::db::webhook::record_outcome(c, at(id), &outcome, deadline).await.unwrap().is_some()
    })
    .await;
    let stage = ProgressStage::parse("stage", "s").unwrap();
    let progress_fenced = run(c, t, s, async |id| {
        shared::db::webhook::progress(c, at(id), 50, &stage, deadline).await.unwrap() == Progressed::Fenced
    })
    .await;
    let cancel_won =
        run(c, t, s, async |id| matches!(lifecycle::cancel(c, &job(id), deadline).await.unwrap(), Cancelled::Now(_)))
            .await;
    let retry_created = run(c, t, s, async |id| {
        let nonce = Nonce::generate();
        matches!(
            shared::db::retry::retry(c, &job(id), &nonce, None, &policy, &shared::domain::quota::Quota::default())
                .await
                .unwrap(),
            Retried::Created { .. }
        )
    })
    .await;
    let expire_one = run(c, t, s, async |id| shared::db::sweep::expire_one(c, id, deadline).await.unwrap()).await;
    let swept =
        run(c, t, s, async |_| !shared::db::sweep::expire_overdue(c, deadline, 10).await.unwrap().is_empty()).await;
    Seen {
        get,
        listed,
        in_filters,
        fence_overdue,
        webhook_won,
        progress_fenced,
        cancel_won,
        retry_created,
        expire_one,
        swept,
    }
}

/// What every path must do with the job of `s`, from the rule alone.
fn expected(s: &State) -> Seen {
    let overdue = s.overdue();
    let read = s.status_as_read();
    let live = s.status == 0 && !overdue;
    Seen {
        get: read,
        listed: read,
        in_filters: [read == Status::Processing, read == Status::Completed, read == Status::Failed],
        fence_overdue: overdue,
        webhook_won: live,
        progress_fenced: !live,
        cancel_won: live,
        retry_created: read == Status::Failed && s.attempt < Policy::default().max_attempts,
        expire_one: overdue,
        swept: overdue,
    }
}

#[test]
fn every_path_that_applies_the_deadline_agrees_with_the_rule() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (app, t) = rt.block_on(async {
        let app = TestApp::new().await;
        let t = app.tenant().await;
        (app, t)
    });
    let client = rt.block_on(async { shared::db::connect::connect(&app.db, None).await.unwrap() });
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(128);
    let mut runner = TestRunner::new(Config { cases, ..Config::default() });
    runner
        .run(&states(), |s| {
            let got = rt.block_on(seen(&client, &t, &s));
            prop_assert_eq!(got, expected(&s), "{:?}", s);
            Ok(())
        })
        .unwrap();
    // A few states by hand, so the random ones are known to reach both sides of the rule.
    for s in [
        State { status: 0, attempt: 1, created_ago: 901, row: AttemptRow::Absent, deadline: 900 },
        State { status: 0, attempt: 1, created_ago: 900, row: AttemptRow::Absent, deadline: 900 },
        State { status: 0, attempt: 2, created_ago: 3000, row: AttemptRow::Current(10), deadline: 900 },
        State { status: 0, attempt: 2, created_ago: 3000, row: AttemptRow::Other(3000), deadline: 900 },
        State { status: 2, attempt: 3, created_ago: 3000, row: AttemptRow::Current(3000), deadline: 60 },
    ] {
        assert_eq!(rt.block_on(seen(&client, &t, &s)), expected(&s), "{s:?}");
    }
    drop(client);
    drop(app);
}
