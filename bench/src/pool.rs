//! What recycling a pooled connection costs per checkout, side by side in one run: deadpool's
//! `Fast` (what the functions use: no statement), `Verified` (an empty query, one round trip)
//! and a pool-level transaction check (a statement that fails inside a transaction, so the
//! pool drops such a connection: also one round trip). Neither `Fast` nor `Verified` notices a
//! connection handed back inside an open transaction; `dispatch::transaction` discards such a
//! connection itself, at no cost per checkout (docs/RELIABILITY.md, "A transaction dropped
//! half-way"). Each variant is a 1-connection pool on the private cluster, same connector, only
//! the recycling differs; the variants take turns checkout by checkout so that the machine's
//! noise falls on all of them alike.

use std::time::Instant;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};

use crate::stats::{f1, f2, median, pct, Table};

/// Fails (division by zero) inside a transaction block, where now() is the transaction's start
/// and no longer the statement's.
const NOT_IN_TRANSACTION: &str = "SELECT 1 / (now() = statement_timestamp())::int";

fn pool(url: &str, method: RecyclingMethod) -> Result<Pool, String> {
    let cfg: tokio_postgres::Config = url.parse().map_err(|e| format!("{e}"))?;
    let mgr = Manager::from_config(cfg, tokio_postgres::NoTls, ManagerConfig { recycling_method: method });
    Pool::builder(mgr).max_size(1).runtime(Runtime::Tokio1).build().map_err(|e| e.to_string())
}

/// Microseconds one checkout took (dropped at once, or after one `SELECT 1`).
async fn once(pool: &Pool, query: bool) -> Result<f64, String> {
    let t0 = Instant::now();
    let c = pool.get().await.map_err(|e| e.to_string())?;
    if query {
        c.simple_query("SELECT 1").await.map_err(|e| e.to_string())?;
    }
    Ok(t0.elapsed().as_secs_f64() * 1e6)
}

pub async fn run(url: &str, quick: bool) -> Result<(), String> {
    let n = if quick { 300 } else { 20_000 };
    let variants = [
        ("Fast (the functions' pool)", RecyclingMethod::Fast),
        ("Verified (empty query)", RecyclingMethod::Verified),
        ("transaction check (Custom)", RecyclingMethod::Custom(NOT_IN_TRANSACTION.into())),
    ];
    let mut pools = Vec::new();
    for (_, m) in &variants {
        let p = pool(url, m.clone())?;
        drop(p.get().await.map_err(|e| e.to_string())?); // connected before anything is timed
        pools.push(p);
    }
    println!("## Pool recycling: cost per checkout ({n} checkouts each, 1-connection pools)\n");
    println!("The variants take turns checkout by checkout, so a burst of load falls on all alike.\n");
    for query in [false, true] {
        let mut us = vec![Vec::with_capacity(n); variants.len()];
        for _ in 0..n {
            for (i, p) in pools.iter().enumerate() {
                us[i].push(once(p, query).await?);
            }
        }
        let what = if query { "checkout + SELECT 1" } else { "checkout alone" };
        let mut t = Table::new(&["recycling", &format!("{what}: µs p50"), "p90", "p50 x Fast"]);
        let fast = median(&us[0]);
        for (i, (name, _)) in variants.iter().enumerate() {
            let m = median(&us[i]);
            t.row(vec![name.to_string(), f1(m), f1(pct(&us[i], 90.0)), f2(m / fast)]);
        }
        t.print();
    }
    Ok(())
}
