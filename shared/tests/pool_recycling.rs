//! A transaction whose future is dropped half-way (the budget's backstop answering, a client
//! gone) must not hand its connection back to the pool inside the open transaction. If it did,
//! the next request on that connection would run inside it: its auto-committed writes never
//! committed (lost, although answered 200), and the dropped transaction's row locks held for as
//! long as the connection lives. deadpool's recycling does not look: `Fast` (the functions')
//! checks only that the socket is open, and `Verified` sends an empty query, which an open
//! transaction answers like any other. So `dispatch::transaction` discards such a connection.
//!
//! The pool is the functions' own (`shared::db::connect::pool`), with one connection, so the
//! next checkout is the same connection unless it was discarded. PostgreSQL on 127.0.0.1:5432,
//! or `TEST_PG_URL`; the test creates and drops a database of its own.
#![allow(clippy::disallowed_methods)] // tests may panic on a row that does not read: that is a failure

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use shared::app::dispatch::{transaction, Tx};
use shared::db::connect::{pool, timed, DbConfig};

fn admin_url() -> String {
    std::env::var("TEST_PG_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

async fn admin(url: &str) -> tokio_postgres::Client {
    let (c, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("PostgreSQL reachable");
    tokio::spawn(conn);
    c
}

/// A database of the test's own, dropped again when the test ends, passed or not.
struct Scratch {
    name: String,
    url: String,
}

impl Scratch {
    async fn new() -> Self {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let name = format!("c2d_pool_{}_{nanos}", std::process::id());
        admin(&admin_url()).await.batch_execute(&format!("CREATE DATABASE \"{name}\"")).await.unwrap();
        let url = format!("{}/{name}", admin_url().rsplit_once('/').unwrap().0);
        admin(&url)
            .await
            .batch_execute("CREATE TABLE counter (id int PRIMARY KEY, v int); INSERT INTO counter VALUES (1, 0)")
            .await
            .unwrap();
        Self { name, url }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let name = self.name.clone();
        // Drop cannot await, and the test's runtime may be going away: a runtime of its own.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let _ = admin(&admin_url())
                    .await
                    .batch_execute(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                    .await;
            })
        })
        .join();
    }
}

#[tokio::test]
async fn a_transaction_dropped_half_way_does_not_return_its_connection_mid_transaction() {
    let db = Scratch::new().await;
    let cfg = DbConfig::from_url(&db.url).unwrap();
    let pool = pool(&cfg, None, 1).unwrap();

    let updated = Arc::new(AtomicBool::new(false));
    let flag = updated.clone();
    let client = pool.get().await.unwrap();
    let half_way = transaction(client, async move |c: &tokio_postgres::Client| {
        timed(c.execute("UPDATE counter SET v = v + 1 WHERE id = 1", &[])).await?;
        flag.store(true, Ordering::SeqCst);
        // Where the request's future is dropped: after a write, before COMMIT.
        std::future::pending::<()>().await;
        Ok(Tx::Commit(()))
    });
    assert!(tokio::time::timeout(Duration::from_secs(2), half_way).await.is_err(), "the transaction never ends");
    assert!(updated.load(Ordering::SeqCst), "the UPDATE ran inside the transaction before the drop");

    // The next request of the instance: the pool's only connection, or a new one.
    let next = tokio::time::timeout(Duration::from_secs(5), pool.get()).await.expect("a connection in time").unwrap();
    // The simple protocol: under the extended one, now() and statement_timestamp() differ even
    // outside a transaction block (Parse and Bind are messages of their own).
    let rows = next
        .simple_query("SELECT now() = statement_timestamp(), pg_current_xact_id_if_assigned() IS NULL")
        .await
        .unwrap();
    let row = rows.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(r) => Some(r),
        _ => None,
    });
    let row = row.expect("one row");
    let (own_transaction, no_xid) = (row.get(0) == Some("t"), row.get(1) == Some("t"));
    assert!(own_transaction && no_xid, "the next checkout is inside the dropped transaction");

    // What that request writes, auto-committed, is committed: another session sees it. Inside
    // the dropped transaction it would not be, and would wait on its lock were it not the same.
    tokio::time::timeout(Duration::from_secs(5), next.execute("UPDATE counter SET v = v + 10 WHERE id = 1", &[]))
        .await
        .expect("the next request's write is not stuck behind the dropped transaction's lock")
        .unwrap();
    let seen: i32 = admin(&db.url).await.query_one("SELECT v FROM counter WHERE id = 1", &[]).await.unwrap().get(0);
    assert_eq!(seen, 10, "the dropped transaction's +1 rolled back, the next request's +10 committed");
}

/// Why the guard, and not the pool's recycling: a `Verified` pool (an empty query before each
/// checkout) hands a connection dropped inside a transaction straight back, still inside it.
/// If deadpool ever learns to notice, this fails, and the guard could give way to the pool.
#[tokio::test]
async fn verified_recycling_alone_hands_back_the_open_transaction() {
    use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
    let db = Scratch::new().await;
    let mgr = Manager::from_config(
        db.url.parse().unwrap(),
        tokio_postgres::NoTls,
        ManagerConfig { recycling_method: RecyclingMethod::Verified },
    );
    let pool = Pool::builder(mgr).max_size(1).runtime(Runtime::Tokio1).build().unwrap();
    let client = pool.get().await.unwrap();
    let half_way = async move {
        client.batch_execute("BEGIN; UPDATE counter SET v = v + 1 WHERE id = 1").await.unwrap();
        std::future::pending::<()>().await
    };
    assert!(tokio::time::timeout(Duration::from_secs(2), half_way).await.is_err());
    let next = pool.get().await.unwrap();
    let rows = next.simple_query("SELECT pg_current_xact_id_if_assigned() IS NOT NULL").await.unwrap();
    let in_it = rows.iter().any(|m| matches!(m, tokio_postgres::SimpleQueryMessage::Row(r) if r.get(0) == Some("t")));
    assert!(in_it, "Verified recycling now notices an open transaction: see the note above");
    next.batch_execute("ROLLBACK").await.unwrap();
}
