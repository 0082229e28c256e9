//! A warm instance survives a rotated database secret: when the server refuses the
//! credentials, the pool re-reads them once (rate-limited) and connects with the new ones.
//! The refusal is real: a login as a role that does not exist is refused by PostgreSQL with
//! the same class of error (28xxx) as a stale password.
#![allow(clippy::disallowed_methods)] // tests may panic on a row that does not read: that is a failure

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use shared::db::connect::{self as db, DbConfig, Refresh};

fn admin_url() -> String {
    std::env::var("TEST_PG_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

fn stale() -> DbConfig {
    let url = admin_url().replacen("postgres@", &format!("rotated_away_{}@", std::process::id()), 1);
    DbConfig::from_url(&url).unwrap()
}

fn refresh_to(cfg: DbConfig, calls: Arc<AtomicUsize>) -> Refresh {
    Arc::new(move || {
        let cfg = cfg.clone();
        let calls = calls.clone();
        Box::pin(async move {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok(cfg)
        })
    })
}

#[tokio::test]
async fn refused_credentials_are_re_read_once_and_the_pool_heals() {
    let calls = Arc::new(AtomicUsize::new(0));
    let fresh = DbConfig::from_url(&admin_url()).unwrap();
    let pool = db::pool_with_refresh(&stale(), None, 2, Some(refresh_to(fresh, calls.clone()))).unwrap();
    let c = pool.get().await.expect("connects after re-reading the credentials");
    let one: i32 = c.query_one("SELECT 1", &[]).await.unwrap().get(0);
    assert_eq!(one, 1);
    drop(c);
    // Later connections use the new credentials directly.
    let (a, b) = (pool.get().await.unwrap(), pool.get().await.unwrap());
    drop((a, b));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn credentials_that_stay_wrong_are_not_re_read_on_every_attempt() {
    let calls = Arc::new(AtomicUsize::new(0));
    let pool = db::pool_with_refresh(&stale(), None, 2, Some(refresh_to(stale(), calls.clone()))).unwrap();
    for _ in 0..3 {
        assert!(pool.get().await.is_err());
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1, "at most one refresh per interval");
    // Without a refresh the refusal is simply reported (a 503 at the handler).
    assert!(db::pool(&stale(), None, 1).unwrap().get().await.is_err());
}
