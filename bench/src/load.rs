//! The one load loop of the benchmarks (the warm path and the reads measure with it): `conc`
//! workers share `total` calls of an operation, optionally cut at a wall-time cap, each call
//! timed; and what a case's samples across rounds come to (latency percentiles over every
//! call, the median throughput of the rounds, the failed calls).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;

use crate::stats::{median, ms, pct};

/// One call: `op(worker, call)` with the worker's index (`0..conc`, so a worker can own a
/// connection) and the call's (`0..total`, so a call can own a job). True when it succeeded.
pub type Op = Arc<dyn Fn(usize, usize) -> BoxFuture<'static, bool> + Send + Sync>;

/// One run of [`drive`].
pub struct Sample {
    pub lat_ms: Vec<f64>,
    /// Calls made per second of the run.
    pub tput: f64,
    pub failures: usize,
}

/// `total` calls of `op` by `conc` workers, or fewer if `cap` runs out first (the run is then
/// bounded in time as well as in count). A worker takes the next call as soon as its last
/// one returned: concurrency `conc` throughout.
pub async fn drive(conc: usize, total: usize, cap: Option<Duration>, op: Op) -> Sample {
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let fails = Arc::new(AtomicUsize::new(0));
    let lats = Arc::new(Mutex::new(Vec::with_capacity(total)));
    let start = Instant::now();
    let tasks: Vec<_> = (0..conc)
        .map(|w| {
            let (next, done, fails, lats, op) = (next.clone(), done.clone(), fails.clone(), lats.clone(), op.clone());
            tokio::spawn(async move {
                let mut mine = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total || cap.is_some_and(|cap| start.elapsed() >= cap) {
                        break;
                    }
                    let t0 = Instant::now();
                    if !op(w, i).await {
                        fails.fetch_add(1, Ordering::Relaxed);
                    }
                    mine.push(ms(t0.elapsed()));
                    done.fetch_add(1, Ordering::Relaxed);
                }
                lats.lock().unwrap().extend(mine);
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let elapsed = start.elapsed();
    let lat_ms = std::mem::take(&mut *lats.lock().unwrap());
    Sample {
        lat_ms,
        tput: done.load(Ordering::Relaxed) as f64 / elapsed.as_secs_f64(),
        failures: fails.load(Ordering::Relaxed),
    }
}

/// The samples of one case across its rounds.
pub struct Summary {
    /// Percentiles of every call's latency, all rounds together.
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// The median of the rounds' throughputs.
    pub tput: f64,
    pub failures: usize,
}

impl Summary {
    pub fn of(samples: &[Sample]) -> Self {
        let lat: Vec<f64> = samples.iter().flat_map(|s| s.lat_ms.iter().copied()).collect();
        Self {
            p50_ms: median(&lat),
            p99_ms: pct(&lat, 99.0),
            tput: median(&samples.iter().map(|s| s.tput).collect::<Vec<_>>()),
            failures: samples.iter().map(|s| s.failures).sum(),
        }
    }
}

/// Says on stderr that calls of a case failed: its figures then time errors, not the case.
pub fn warn_failures(case: &str, conc: usize, failures: usize) {
    if failures > 0 {
        eprintln!("warning: {case} c={conc}: {failures} calls failed");
    }
}
