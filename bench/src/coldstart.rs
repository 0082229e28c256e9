//! Cold start: each function binary (and a hello-world `lambda_http` binary built with the
//! same profile) is spawned against a local stand-in for the Lambda Runtime API; init is the
//! time from just before `spawn` to the first `GET /2018-06-01/runtime/invocation/next`, i.e.
//! settings read, clients built, runtime ready. Binaries are interleaved round by round, the
//! starting one rotating, so a noisy neighbour hits them all alike.
//!
//! `DATABASE_URL` and `S3_ENDPOINT` point at loopback sentinel listeners that only count
//! connections: a function that touched the database or S3 during init would show it.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use code2des_local::runtime_api::{Report, RuntimeApi};

use crate::stats::{f1, f2, median, ms, pct, Table};

pub const FUNCTIONS: [&str; 5] = ["trigger", "lifecycle", "result", "webhook", "placement"];

/// A listener that only counts connections (and keeps them open).
fn sentinel() -> (u16, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let n = Arc::new(AtomicU64::new(0));
    let n2 = n.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            n2.fetch_add(1, Ordering::Relaxed);
            held.push(s);
        }
    });
    (port, n)
}

fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Size of `path` zipped as `bootstrap`, the way a provided.al2023 function is deployed.
fn zip_size(path: &PathBuf) -> Option<u64> {
    let dir = tempfile::tempdir().ok()?;
    std::fs::copy(path, dir.path().join("bootstrap")).ok()?;
    let ok = Command::new("zip")
        .current_dir(dir.path())
        .args(["-q", "-9", "-X", "f.zip", "bootstrap"])
        .stderr(Stdio::null())
        .status()
        .ok()?
        .success();
    if !ok {
        return None;
    }
    std::fs::metadata(dir.path().join("f.zip")).ok().map(|m| m.len())
}

struct Target {
    name: String,
    path: PathBuf,
    inits: Vec<f64>,
    hwm: Vec<u64>,
    db_conns: u64,
    s3_conns: u64,
}

/// The directory this bench binary was built into (`target/release/` from `scripts/bench`, or the
/// shared build CI hands it through `CODE2DES_BIN_DIR`): every workspace binary sits beside it.
pub fn bin_dir() -> PathBuf {
    std::env::current_exe().unwrap().parent().unwrap().to_path_buf()
}

pub fn run(rounds: usize, extra: &[(String, PathBuf)]) -> Result<(), String> {
    let mut targets = targets(extra)?;
    let sandbox = Sandbox::start()?;
    sandbox.measure(&mut targets, rounds)?;
    print_table(&targets, rounds);
    Ok(())
}

/// The hello-world reference, the five functions and the `--extra` binaries, each present.
fn targets(extra: &[(String, PathBuf)]) -> Result<Vec<Target>, String> {
    let dir = bin_dir();
    let targets: Vec<Target> = std::iter::once("hello")
        .chain(FUNCTIONS)
        .map(|n| (n.to_owned(), dir.join(n)))
        .chain(extra.iter().cloned())
        .map(|(name, path)| Target { name, path, inits: vec![], hwm: vec![], db_conns: 0, s3_conns: 0 })
        .collect();
    for t in &targets {
        if !t.path.exists() {
            return Err(format!(
                "{} not found: build every binary with this one (scripts/bench does `cargo build --release --workspace --bins`)",
                t.path.display()
            ));
        }
    }
    Ok(targets)
}

/// What the binaries start in: the Runtime API stand-in, the sentinels standing for the
/// database and S3, and a Lambda's environment pointing at them.
struct Sandbox {
    api: RuntimeApi,
    db_hits: Arc<AtomicU64>,
    s3_hits: Arc<AtomicU64>,
    env: Vec<(String, String)>,
    /// `LAMBDA_TASK_ROOT`, kept for as long as the binaries run.
    _task_root: tempfile::TempDir,
}

impl Sandbox {
    fn start() -> Result<Self, String> {
        // Nothing is ever queued: the first /next poll is held until the process is killed.
        let api = RuntimeApi::start().map_err(|e| e.to_string())?;
        let (db_port, db_hits) = sentinel();
        let (s3_port, s3_hits) = sentinel();
        let task_root = tempfile::tempdir().map_err(|e| e.to_string())?;
        let env = lambda_env(&api, db_port, s3_port, &task_root);
        Ok(Self { api, db_hits, s3_hits, env, _task_root: task_root })
    }

    /// Spawns every target once a round, the first rotating, and records what it took.
    fn measure(&self, targets: &mut [Target], rounds: usize) -> Result<(), String> {
        let n = targets.len();
        // Round 0 warms the page cache and is not counted.
        for round in 0..=rounds {
            for k in 0..n {
                let t = &mut targets[(round + k) % n];
                let (db0, s30) = (self.db_hits.load(Ordering::Relaxed), self.s3_hits.load(Ordering::Relaxed));
                let (init, hwm) = spawn_once(&t.path, &t.name, &self.env, &self.api)?;
                // Connections may still be in flight right after the poll: count them at the end.
                std::thread::sleep(Duration::from_millis(2));
                if round > 0 {
                    t.inits.push(init);
                    t.hwm.push(hwm);
                    t.db_conns += self.db_hits.load(Ordering::Relaxed) - db0;
                    t.s3_conns += self.s3_hits.load(Ordering::Relaxed) - s30;
                }
            }
        }
        Ok(())
    }
}

/// The environment Lambda gives a provided.al2023 function, plus the functions' settings,
/// with the database and S3 at the sentinels.
fn lambda_env(api: &RuntimeApi, db_port: u16, s3_port: u16, task_root: &tempfile::TempDir) -> Vec<(String, String)> {
    [
        ("AWS_LAMBDA_RUNTIME_API", api.host_port()),
        ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "512".into()),
        ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".into()),
        ("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand".into()),
        ("AWS_LAMBDA_LOG_GROUP_NAME", "/aws/lambda/bench".into()),
        ("AWS_LAMBDA_LOG_STREAM_NAME", "2026/01/01/[$LATEST]bench".into()),
        ("AWS_EXECUTION_ENV", "AWS_Lambda_provided.al2023".into()),
        ("AWS_REGION", "us-east-1".into()),
        ("AWS_DEFAULT_REGION", "us-east-1".into()),
        ("AWS_ACCESS_KEY_ID", "AKIDBENCHDUMMY".into()),
        ("AWS_SECRET_ACCESS_KEY", "bench-dummy-secret".into()),
        ("AWS_SESSION_TOKEN", "bench-dummy-token".into()),
        ("LAMBDA_TASK_ROOT", task_root.path().display().to_string()),
        ("LANG", "en_US.UTF-8".into()),
        ("TZ", ":UTC".into()),
        ("PATH", "/usr/local/bin:/usr/bin:/bin".into()),
        ("DATABASE_URL", format!("postgres://postgres@127.0.0.1:{db_port}/code2des")),
        ("WEBHOOK_SECRET", "bench-webhook-secret".into()),
        ("ARTIFACT_BUCKET", "code2des-artifacts".into()),
        ("S3_ENDPOINT", format!("http://127.0.0.1:{s3_port}")),
        ("CALLBACK_URL", "https://api.example.test/code2des/webhook".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

fn print_table(targets: &[Target], rounds: usize) {
    println!("## Cold start: process start -> first /next poll ({rounds} interleaved rounds)\n");
    // A release-profile variant `NAME@V` (scripts/bench-profiles) is compared with `hello@V`,
    // the hello-world built with the same variant; everything else with `hello`.
    let hello_of = |name: &str| -> f64 {
        let reference = name.split_once('@').map_or("hello".to_owned(), |(_, v)| format!("hello@{v}"));
        targets.iter().find(|t| t.name == reference).map_or(median(&targets[0].inits), |t| median(&t.inits))
    };
    let mut table = Table::new(&[
        "binary",
        "size KiB",
        "zip KiB",
        "init median ms",
        "init p90 ms",
        "min ms",
        "ratio to hello of the same profile (median)",
        "VmHWM at init KiB",
        "DB/S3 conns at init",
    ]);
    for t in targets {
        let size = std::fs::metadata(&t.path).map(|m| m.len()).unwrap_or(0);
        let zip = zip_size(&t.path).map_or("n/a".to_owned(), |z| (z / 1024).to_string());
        let med = median(&t.inits);
        table.row(vec![
            t.name.clone(),
            (size / 1024).to_string(),
            zip,
            f2(med),
            f2(pct(&t.inits, 90.0)),
            f2(pct(&t.inits, 0.0)),
            f2(med / hello_of(&t.name)),
            f1(median(&t.hwm.iter().map(|&x| x as f64).collect::<Vec<_>>())),
            format!("{}/{}", t.db_conns, t.s3_conns),
        ]);
    }
    table.print();
}

fn spawn_once(path: &PathBuf, name: &str, env: &[(String, String)], api: &RuntimeApi) -> Result<(f64, u64), String> {
    api.drain();
    let stderr = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    let start = Instant::now();
    let mut child = Command::new(path)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("AWS_LAMBDA_FUNCTION_NAME", name)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr.reopen().map_err(|e| e.to_string())?)
        .spawn()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let deadline = start + Duration::from_secs(15);
    let outcome = loop {
        match api.recv_timeout(Duration::from_millis(5)) {
            Some(Report::Next { at }) => {
                let hwm = vm_hwm_kib(child.id()).unwrap_or(0);
                break Ok((ms(at - start), hwm));
            }
            Some(Report::InitError { body }) => {
                break Err(format!("{name}: init error reported: {}", String::from_utf8_lossy(&body)))
            }
            Some(other) => break Err(format!("{name}: unexpected {other:?} during init")),
            None => {
                if let Ok(Some(status)) = child.try_wait() {
                    let err = std::fs::read_to_string(stderr.path()).unwrap_or_default();
                    break Err(format!("{name} exited ({status}) before polling: {err}"));
                }
                if Instant::now() > deadline {
                    break Err(format!("{name}: no /next poll within 15 s"));
                }
            }
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    outcome
}
