//! `code2des-bench convert`: what one capture costs the reference worker (issue 30, item 7), per
//! sample page and for a tall page (the landing page's body twice, 1440 px wide): Chromium
//! started once, then per page the capture read, Chromium's part (a fresh context and page,
//! load, layout, one DOMSnapshot, the crops), the conversion, and the upload to S3 (the worker's
//! own `put_images`, and the artifact), each the median of the rounds. Peak memory is the
//! proportional set size (PSS: shared pages split between the processes that map them) of this
//! process and every Chromium process under it, sampled every 50 ms.
//!
//! The baseline is Chromium alone: its part of the time is what any DOM-snapshot converter
//! pays for the same page, so `of Chromium` is the conversion's and upload's cost on top.

use shared::domain::wire::artifact::{Document, Kind, ResultArtifact, Warnings};
use shared::domain::wire::Obj;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use code2des_testkit::s3::LoopbackS3;

use crate::stats::{f2, median, ms, Table};

const BUCKET: &str = "code2des-bench";

struct Page {
    name: String,
    html: Vec<u8>,
}

fn pages() -> Result<Vec<Page>, String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples");
    let mut pages = Vec::new();
    for name in ["landing", "article", "form"] {
        let html = std::fs::read(dir.join(format!("{name}.html"))).map_err(|e| format!("samples/{name}.html: {e}"))?;
        pages.push(Page { name: format!("{name}.html"), html });
    }
    // A tall page: the landing page's body twice (its layout is 1 986 px tall once).
    let landing = String::from_utf8_lossy(&pages[0].html).into_owned();
    let tall = match (landing.find("<body"), landing.rfind("</body>")) {
        (Some(open), Some(close)) => {
            let start = open + landing[open..].find('>').map_or(0, |i| i + 1);
            format!("{}{}{}", &landing[..close], &landing[start..close], &landing[close..])
        }
        _ => return Err("samples/landing.html has no body".into()),
    };
    pages.push(Page { name: "landing.html, body twice".into(), html: tall.into_bytes() });
    Ok(pages)
}

/// PSS in KiB of this process and its descendants (Chromium's browser, renderer, GPU and
/// utility processes).
fn tree_pss_kib() -> u64 {
    let me = std::process::id();
    let mut parent = std::collections::HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        // /proc/PID/stat: "pid (comm) state ppid …"; comm may hold spaces and parentheses.
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            if let Some(ppid) =
                stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(1)?.parse::<u32>().ok())
            {
                parent.insert(pid, ppid);
            }
        }
    }
    let in_tree = |mut pid: u32| {
        for _ in 0..64 {
            if pid == me {
                return true;
            }
            match parent.get(&pid) {
                Some(&p) if p != 0 => pid = p,
                _ => return false,
            }
        }
        false
    };
    parent
        .keys()
        .filter(|&&pid| in_tree(pid))
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok())
        .filter_map(|s| {
            s.lines().find(|l| l.starts_with("Pss:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .sum()
}

/// Samples the tree's PSS every 50 ms while it runs; `peak` holds the largest.
struct Sampler {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(0));
        let (s, p) = (stop.clone(), peak.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(tree_pss_kib(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        Self { stop, peak, thread: Some(thread) }
    }

    /// The peak since the last call, in MiB.
    fn take_peak_mib(&self) -> f64 {
        self.peak.swap(0, Ordering::Relaxed) as f64 / 1024.0
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[derive(Default)]
struct Round {
    load: Duration,
    chromium: Duration,
    convert: Duration,
    upload: Duration,
    total: Duration,
}

pub async fn run(quick: bool) -> Result<(), String> {
    let rounds = if quick { 1 } else { 5 };
    let pages = pages()?;
    let s3 = LoopbackS3::start(BUCKET).await;
    let worker = code2des_worker::Worker::new(s3.client.clone(), BUCKET, "bench-secret");
    let sampler = Sampler::start();
    let t0 = Instant::now();
    let renderer = code2des_convert::Renderer::start(Default::default()).await.map_err(|e| e.to_string())?;
    let start = t0.elapsed();
    let start_peak = sampler.take_peak_mib();
    println!("## Converting a capture (code2des-convert, upload with the worker's own code)\n");
    println!("Chromium started once: {:.0} ms (peak PSS {start_peak:.0} MiB). Each page: the median of {rounds} round(s), a fresh context each.\n", ms(start));
    let mut table = Table::new(&[
        "page",
        "layout",
        "nodes",
        "images",
        "read capture",
        "Chromium: context, load, layout, snapshot, crops",
        "convert",
        "upload",
        "total",
        "of Chromium",
        "peak PSS",
    ]);
    for (i, page) in pages.iter().enumerate() {
        let mut measured = Vec::new();
        let mut shape = (0u32, 0f64, 0usize, 0usize);
        // One round before the measured ones warms this page's fonts and Chromium's caches,
        // as a worker's steady state has them.
        for r in 0..=rounds {
            let t = Instant::now();
            let out = code2des_convert::convert(&renderer, &page.html, false)
                .await
                .map_err(|e| format!("{}: {e}", page.name))?;
            let converted = t.elapsed();
            let prefix = format!("code2des/bench-{i}-{r}/1/");
            let tu = Instant::now();
            let images = worker.put_images(&prefix, &out.images).await.map_err(|e| e.to_string())?;
            let artifact = ResultArtifact {
                version: 1,
                kind: Kind::Result,
                code2des_id: format!("bench-{i}-{r}"),
                attempt: 1,
                nonce: "bench".into(),
                warning_count: Some(out.warnings.len() as i64),
                document: Some(Document::of(&out.document)),
                images: Some(images.into_iter().map(|(name, image)| (name, Obj(image))).collect()),
                warnings: Some(Warnings::of(&out.warnings)),
            };
            let body = serde_json::to_vec(&artifact).map_err(|e| e.to_string())?;
            s3.client
                .put_object()
                .bucket(BUCKET)
                .key(format!("{prefix}result.json"))
                .body(body.into())
                .send()
                .await
                .map_err(|e| shared::error::chain(&e))?;
            let upload = tu.elapsed();
            shape = (out.width, out.height, out.document.walk().count(), out.images.len());
            if r > 0 {
                let tm = &out.timings;
                measured.push(Round {
                    load: tm.load,
                    chromium: tm.render,
                    convert: tm.convert,
                    upload,
                    total: converted + upload,
                });
            }
        }
        let peak = sampler.take_peak_mib();
        let pick = |f: fn(&Round) -> Duration| median(&measured.iter().map(|r| ms(f(r))).collect::<Vec<_>>());
        let (load, chromium, convert, upload, total) =
            (pick(|r| r.load), pick(|r| r.chromium), pick(|r| r.convert), pick(|r| r.upload), pick(|r| r.total));
        let whole = |x: f64| format!("{x:.0}");
        table.row(vec![
            page.name.clone(),
            format!("{} × {:.0}", shape.0, shape.1),
            shape.2.to_string(),
            shape.3.to_string(),
            whole(load),
            whole(chromium),
            whole(convert),
            whole(upload),
            format!("**{}**", whole(total)),
            f2(total / chromium.max(1e-9)),
            format!("{peak:.0} MiB"),
        ]);
    }
    table.print();
    renderer.close().await;
    println!("times in ms; `of Chromium`: total ÷ Chromium's part (1.00 would be Chromium alone)\n");
    Ok(())
}
