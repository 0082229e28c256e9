//! `code2des-bench`: benchmarks that print tables of ratios measured side by side in one run
//! (the machine is noisy; absolute numbers are not the point). See docs/PERFORMANCE.md.
//!
//! ```text
//! code2des-bench [all|coldstart|compression|roundtrips|warm|reads|failed|hydration|largest|scale|capacity|pool] [--quick] [--rounds N] [--extra NAME=PATH]... [--json PATH]
//! ```
//! `--quick` runs every benchmark with a few iterations (CI checks that they still run; it
//! asserts nothing about speed). `--extra` adds another binary to the cold-start table (a
//! build of a function with another release profile, for instance). `--json PATH` writes the
//! year-of-data figures (`scale`) for scripts/plot-scale; with the command `capacity`, what one
//! job costs (the inputs of a capacity and cost model) instead.
#![allow(clippy::disallowed_methods)] // a benchmark or test fixture that meets a row it cannot read stops: not the request path

mod capacity;
mod coldstart;
mod compression;
mod convert;
mod failed;
mod fixture;
mod hydration;
mod largest;
mod latency;
mod load;
mod pg;
mod pgproxy;
mod pool;
mod reads;
mod roundtrips;
mod scale;
mod stack;
mod stats;
mod warm;

use std::path::PathBuf;
use std::sync::Arc;

const DB: &str = "code2des_bench";

struct Args {
    command: String,
    quick: bool,
    rounds: Option<usize>,
    extra: Vec<(String, PathBuf)>,
    json: Option<PathBuf>,
}

fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut a = Args { command: "all".into(), quick: false, rounds: None, extra: Vec::new(), json: None };
    let mut command = None;
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--quick" => a.quick = true,
            "--rounds" => a.rounds = Some(it.next().and_then(|n| n.parse().ok()).ok_or("--rounds needs a number")?),
            "--extra" => {
                let v = it.next().ok_or("--extra needs NAME=PATH")?;
                let (n, p) = v.split_once('=').ok_or("--extra needs NAME=PATH")?;
                a.extra.push((n.to_owned(), PathBuf::from(p)));
            }
            "--json" => a.json = Some(PathBuf::from(it.next().ok_or("--json needs a path")?)),
            "-h" | "--help" => return Err(String::new()),
            c if command.is_none() && !c.starts_with('-') => command = Some(c.to_owned()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if let Some(c) = command {
        a.command = c;
    }
    Ok(a)
}

fn machine() {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| s.lines().next().map(|l| l.split_whitespace().nth(1).unwrap_or("0").parse::<u64>().unwrap_or(0)))
        .unwrap_or(0);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let nproc = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    println!(
        "# code2des benchmarks\n\nmachine: {nproc} CPUs ({cpu}), {:.1} GiB RAM, load average {}\n",
        mem as f64 / 1024.0 / 1024.0,
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
}

fn main() {
    let mut argv = std::env::args().skip(1).peekable();
    if argv.peek().map(String::as_str) == Some("hydration-child") {
        let rest: Vec<String> = argv.skip(1).collect();
        if let Err(e) = hydration::child(&rest) {
            eprintln!("{e}");
            std::process::exit(1);
        }
        return;
    }
    let args = match parse(argv) {
        Ok(a) => a,
        Err(e) => {
            eprintln!(
                "{e}\nusage: code2des-bench [all|coldstart|compression|convert|roundtrips|warm|reads|failed|hydration|largest|scale|capacity|pool] [--quick] [--rounds N] [--extra NAME=PATH]... [--json PATH]"
            );
            std::process::exit(2);
        }
    };
    if let Err(e) = run(args) {
        eprintln!("code2des-bench: {e}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> Result<(), String> {
    machine();
    let c = args.command.as_str();
    if !matches!(
        c,
        "all"
            | "coldstart"
            | "compression"
            | "convert"
            | "roundtrips"
            | "warm"
            | "reads"
            | "failed"
            | "hydration"
            | "largest"
            | "scale"
            | "capacity"
            | "pool"
    ) {
        return Err(format!("unknown command {c:?}"));
    }
    if c == "convert" {
        // Needs Chromium, which `all` (and CI's quick run) does not assume; run on its own.
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
        return rt.block_on(convert::run(args.quick));
    }
    if matches!(c, "all" | "compression") {
        compression::run(args.quick);
    }
    if c == "compression" {
        return Ok(());
    }
    if matches!(c, "all" | "coldstart") {
        let rounds = args.rounds.unwrap_or(if args.quick { 3 } else { 30 });
        coldstart::run(rounds, &args.extra)?;
    }
    if c == "coldstart" {
        return Ok(());
    }
    let cluster = pg::cluster()?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    if matches!(c, "all" | "pool") {
        rt.block_on(pool::run(&cluster.url("postgres"), args.quick))?;
    }
    if c == "pool" {
        return Ok(());
    }
    let quick = args.quick;
    let rounds = args.rounds.unwrap_or(if quick { 1 } else { 5 });
    let result = rt.block_on(async {
        let app = Arc::new(fixture::App::new(&cluster.url(DB), 40).await);
        let (admin, conn) = tokio_postgres::connect(&cluster.url("postgres"), tokio_postgres::NoTls)
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        if matches!(c, "all" | "roundtrips") {
            roundtrips::run(&app, &admin, cluster.port, DB, if quick { 2 } else { 10 }).await;
        }
        if matches!(c, "all" | "warm") {
            // 32 plain connections for the raw side, and the pool warmed to 32.
            let mut raw = Vec::new();
            for _ in 0..32 {
                raw.push(app.raw_client().await);
            }
            let held: Vec<_> = futures::future::join_all((0..32).map(|_| app.pool.get())).await;
            drop(held);
            warm::run(app.clone(), Arc::new(raw), quick, rounds).await;
        }
        if matches!(c, "all" | "reads") {
            reads::run(app.clone(), quick, rounds).await?;
        }
        if matches!(c, "all" | "failed") {
            failed::run(&app, quick, rounds).await?;
        }
        if matches!(c, "all" | "hydration") {
            hydration::run(app.clone(), quick).await;
        }
        if matches!(c, "all" | "largest") {
            largest::run(app.clone(), quick).await;
        }
        if matches!(c, "all" | "scale") {
            scale::run(|db| cluster.url(db), quick, args.json.as_deref()).await?;
        }
        if matches!(c, "all" | "capacity") {
            // `all` leaves --json to scale's figures, as before.
            capacity::run(&cluster, quick, if c == "capacity" { args.json.as_deref() } else { None }).await?;
        }
        Ok::<_, String>(())
    });
    drop(rt);
    drop(cluster);
    result
}
