//! The capture contained to the end (issue 37, item 5): Chromium's memory, its DevTools
//! messages and commands have limits; a page that exhausts one fails with a clear error and the
//! next page converts; a timed-out page leaves nothing behind; and no process of the browser
//! outlives its renderer, nor the process that started it.
//!
//! The tests of this file run one at a time (`SERIAL`): they count the processes and tasks of
//! this test process, which a concurrent test's browser would muddle.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use code2des_convert::{convert, ConvertError, Options, RenderError, Renderer};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime")
}

/// A live process: its parent, state and resident memory, from `/proc/PID/stat`.
struct Proc {
    ppid: u32,
    rss_bytes: u64,
}

/// Every live (not zombie) process of the machine.
fn processes() -> HashMap<u32, Proc> {
    let mut out = HashMap::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // The command name is in parentheses and may hold spaces: the fields follow the last ')'.
        let Some((_, rest)) = stat.rsplit_once(')') else { continue };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.first().is_none_or(|s| *s == "Z" || *s == "X") {
            continue;
        }
        let ppid = f.get(1).and_then(|p| p.parse().ok()).unwrap_or(0);
        let pages: u64 = f.get(21).and_then(|p| p.parse().ok()).unwrap_or(0);
        out.insert(pid, Proc { ppid, rss_bytes: pages * 4096 });
    }
    out
}

/// The live descendants of this test process: the browsers its renderers started, whatever
/// wraps them.
fn descendants() -> HashMap<u32, u64> {
    let all = processes();
    let me = std::process::id();
    let mut out = HashMap::new();
    let mut frontier = vec![me];
    while let Some(p) = frontier.pop() {
        for (pid, proc_) in &all {
            if proc_.ppid == p && !out.contains_key(pid) {
                out.insert(*pid, proc_.rss_bytes);
                frontier.push(*pid);
            }
        }
    }
    out
}

fn alive(pids: &HashSet<u32>) -> Vec<u32> {
    let now = processes();
    pids.iter().copied().filter(|p| now.contains_key(p)).collect()
}

/// Waits up to `within` for `done`, polling.
fn wait_for(within: Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + within;
    loop {
        if done() {
            return true;
        }
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Enough parsing and layout to keep a renderer busy for seconds.
fn heavy_page(spans: usize) -> String {
    let mut html = String::from("<!DOCTYPE html><body>");
    for i in 0..spans {
        html.push_str(&format!("<span style=\"display:inline-block;padding:{}px\">{i}</span>", i % 7));
    }
    html
}

fn converts(rt: &tokio::runtime::Runtime, r: &Renderer, html: &str) {
    let out = rt.block_on(convert(r, html.as_bytes(), false)).expect("the page converts");
    assert!(json(&out.document)["children"].as_array().is_some_and(|c| !c.is_empty()), "{:?}", out.document);
}

/// The document as the artifact carries it (kept for the test's life: tests borrow into it).
fn json(n: &code2des_convert::Node) -> &'static serde_json::Value {
    Box::leak(Box::new(serde_json::to_value(n).expect("a node tree is JSON")))
}

/// A renderer dropped while its page is still being laid out takes every process of its
/// browser with it at once: the busy renderer process included, which on its own notices the
/// browser's death only when its layout ends.
#[test]
fn a_dropped_renderer_leaves_no_process() {
    let _serial = serial();
    let rt = runtime();
    let r = Arc::new(rt.block_on(Renderer::start(Options::default())).expect("Chromium starts"));
    converts(&rt, &r, "<!DOCTYPE html><p>warm");
    let busy = {
        let r = r.clone();
        rt.spawn(async move {
            let html = heavy_page(400_000);
            let _ = convert(&r, html.as_bytes(), false).await;
        })
    };
    // The page is in the renderer: parsing and layout take seconds from here.
    std::thread::sleep(Duration::from_millis(2500));
    let tree: HashSet<u32> = descendants().into_keys().collect();
    assert!(tree.len() >= 3, "a browser, its zygotes and renderers: {tree:?}");
    busy.abort();
    let _ = rt.block_on(busy);
    drop(r);
    let gone = wait_for(Duration::from_millis(1000), || alive(&tree).is_empty());
    assert!(gone, "alive a second after the renderer was dropped: {:?}", alive(&tree));
}

/// A process that exits without dropping its renderer (a static, as tests/chromium.rs has; a
/// worker killed) leaves no browser behind either. The helper below is that process.
#[test]
fn a_renderer_never_dropped_dies_with_its_process() {
    let _serial = serial();
    let exe = std::env::current_exe().expect("this test binary");
    let out = std::process::Command::new(exe)
        .args(["--exact", "exits_without_dropping_its_renderer", "--ignored", "--nocapture", "--test-threads=1"])
        .env("CODE2DES_CONTAINMENT_HELPER", "1")
        .output()
        .expect("the helper runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let pids: HashSet<u32> = stdout
        .split("browser processes: ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .unwrap_or_else(|| panic!("the helper named no process: {stdout} {}", String::from_utf8_lossy(&out.stderr)))
        .split(',')
        .filter_map(|p| p.trim().parse().ok())
        .collect();
    assert!(pids.len() >= 3, "{pids:?}");
    let gone = wait_for(Duration::from_secs(2), || alive(&pids).is_empty());
    assert!(gone, "alive after their process exited: {:?}", alive(&pids));
    // Its cgroups too: the wrapper shell left them and removed them.
    let cgroups: Vec<std::path::PathBuf> = stdout
        .split("browser cgroups: ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .expect("the helper's cgroups")
        .split(',')
        .filter(|c| !c.is_empty())
        .map(Into::into)
        .collect();
    let removed = wait_for(Duration::from_secs(3), || cgroups.iter().all(|c| !c.exists()));
    assert!(removed, "left behind: {cgroups:?}");
}

/// The cgroups of a process of this machine that is gone, which it could not remove (its
/// wrapper shell was killed too), are removed by the next renderer to start; those of a live
/// process are left to it.
#[test]
fn a_dead_process_cgroups_are_swept() {
    let _serial = serial();
    let rt = runtime();
    let r = rt.block_on(Renderer::start(Options::default())).expect("Chromium starts");
    let health = rt.block_on(r.health()).expect("a browser");
    rt.block_on(r.close());
    if health.cgroups.is_empty() {
        return; // nowhere to make a cgroup: nothing to sweep
    }
    // A pid that is gone: a child that has exited and been waited for.
    let mut child = std::process::Command::new("true").spawn().expect("true runs");
    let dead = child.id();
    child.wait().expect("true exits");
    let mut made = Vec::new();
    for cgroup in &health.cgroups {
        // Named `code2des-chromium-{pid namespace}-{pid}-{n}`: this one's, the dead pid's.
        let name = cgroup.file_name().expect("a name").to_string_lossy().into_owned();
        let f: Vec<&str> = name.split('-').collect();
        let parent = cgroup.parent().expect("a parent");
        let stale = parent.join(format!("{}-{}-{}-{dead}-0", f[0], f[1], f[2]));
        let live = parent.join(format!("{}-{}-{}-{}-999", f[0], f[1], f[2], std::process::id()));
        std::fs::create_dir(&stale).expect("a stale cgroup");
        std::fs::create_dir(&live).expect("a live process's cgroup");
        made.push((stale, live));
    }
    let r = rt.block_on(Renderer::start(Options::default())).expect("Chromium starts");
    let swept = wait_for(Duration::from_secs(3), || made.iter().all(|(stale, _)| !stale.exists()));
    let kept = made.iter().all(|(_, live)| live.exists());
    for (_, live) in &made {
        let _ = std::fs::remove_dir(live);
    }
    rt.block_on(r.close());
    assert!(swept, "not swept: {made:?}");
    assert!(kept, "a live process's cgroup was swept: {made:?}");
}

/// Run by the test above in a process of its own: starts a renderer, names its processes and
/// exits at once, the renderer never dropped.
#[test]
#[ignore = "a helper process of a_renderer_never_dropped_dies_with_its_process"]
fn exits_without_dropping_its_renderer() {
    if std::env::var_os("CODE2DES_CONTAINMENT_HELPER").is_none() {
        return;
    }
    let rt = runtime();
    let r = rt.block_on(Renderer::start(Options::default())).expect("Chromium starts");
    converts(&rt, &r, "<!DOCTYPE html><p>converted");
    let pids: Vec<String> = descendants().into_keys().map(|p| p.to_string()).collect();
    println!("browser processes: {}", pids.join(","));
    let health = rt.block_on(r.health()).expect("a browser");
    let cgroups: Vec<String> = health.cgroups.iter().map(|c| c.display().to_string()).collect();
    println!("browser cgroups: {}", cgroups.join(","));
    std::process::exit(0);
}

/// 50 pages timed out at every stage of their rendering (the time limit from 10 ms to 1 s), then
/// nothing of them is left: no task, no process, no memory beyond the browser's own.
#[test]
fn fifty_timed_out_pages_leave_nothing_behind() {
    let _serial = serial();
    let rt = runtime();
    let r = rt.block_on(Renderer::start(Options::default())).expect("Chromium starts");
    // A page that loads in a fraction of a second and snapshots in about as long, so that the
    // limits below fall before, during and after its load event.
    let page = {
        let mut html = String::from("<!DOCTYPE html><body>");
        for i in 0..6000 {
            html.push_str(&format!("<div class=\"c{}\"><p>Paragraph <b>{i}</b> of the page.</p></div>", i % 13));
        }
        html
    };
    for _ in 0..3 {
        converts(&rt, &r, &page);
    }
    let settle = |rt: &tokio::runtime::Runtime| {
        // Background closes of timed-out pages have a limit of their own (10 s).
        wait_for(Duration::from_secs(15), || rt.metrics().num_alive_tasks() <= 8);
        std::thread::sleep(Duration::from_millis(500));
    };
    settle(&rt);
    let tasks_before = rt.metrics().num_alive_tasks();
    let procs_before = descendants();
    let rss_before: u64 = procs_before.values().sum();
    let mut timeouts = 0;
    for i in 0..50u64 {
        r.set_page_timeout(Duration::from_millis(10 + i * 20));
        match rt.block_on(convert(&r, page.as_bytes(), false)) {
            Err(ConvertError::Render(RenderError::Timeout(_))) => timeouts += 1,
            Err(e) => panic!("page {i}: {e}"),
            Ok(_) => {}
        }
    }
    assert!(timeouts >= 25, "only {timeouts} of the 50 pages timed out");
    settle(&rt);
    let tasks_after = rt.metrics().num_alive_tasks();
    let procs_after = descendants();
    let rss_after: u64 = procs_after.values().sum();
    println!(
        "{timeouts} timeouts; tasks {tasks_before} -> {tasks_after}; processes {} -> {}; \
         browser tree RSS {} MiB -> {} MiB",
        procs_before.len(),
        procs_after.len(),
        rss_before >> 20,
        rss_after >> 20
    );
    assert!(tasks_after <= tasks_before, "tasks {tasks_before} -> {tasks_after}");
    let health = rt.block_on(r.health()).expect("a browser");
    println!(
        "renderer: {} sessions, {} commands pending, {} tasks, {} browsers started",
        health.sessions, health.pending, health.tasks, health.browsers_started
    );
    assert_eq!((health.sessions, health.pending), (0, 0), "{health:?}");
    assert!(procs_after.len() <= procs_before.len() + 1, "{procs_before:?} -> {procs_after:?}");
    assert!(rss_after <= rss_before + (150 << 20), "RSS {rss_before} -> {rss_after}");
    // And the renderer goes on.
    r.set_page_timeout(Duration::from_secs(20));
    converts(&rt, &r, &page);
    rt.block_on(r.close());
}

/// A documentation page: 330 sections of a heading and a paragraph of 14 sentences with inline
/// code, links and emphasis. 44 000 snapshot nodes (15 000 elements and their text), 54 000 px
/// tall at 1440 px.
fn documentation_page() -> String {
    let mut html = String::from(
        "<!DOCTYPE html><html><head><title>Reference</title><style>\
         body{font:15px/1.4 sans-serif;margin:0 auto;max-width:1100px;padding:0 20px}\
         h2{margin:18px 0 6px} p{margin:0 0 8px} code{background:#f2f2f2;padding:0 3px} a{color:#06c}\
         </style></head><body>",
    );
    for i in 0..330 {
        html.push_str(&format!("<section id=\"s{i}\"><h2>Section {i}: the <code>item_{i}</code> call</h2><p>"));
        for j in 0..14 {
            html.push_str(&format!(
                "Takes <code>arg_{j}</code> and returns <a href=\"#s{j}\">the {j}th value</a>, <em>unless</em> it fails; "
            ));
        }
        html.push_str("</p></section>");
    }
    html.push_str("</body></html>");
    html
}

/// The caps leave room for a big real page: the documentation page converts with the default
/// options, its largest message and its memory far below their limits.
#[test]
fn a_big_documentation_page_converts_within_the_caps() {
    let _serial = serial();
    let rt = runtime();
    let r = rt.block_on(Renderer::start(Options::default())).expect("Chromium starts");
    let html = documentation_page();
    let (_, (nodes, height)) = rt
        .block_on(r.render(&html, 1440, false, |snap, height, _| {
            ((snap["documents"][0]["nodes"]["nodeType"].as_array().map_or(0, Vec::len), height), Vec::new())
        }))
        .expect("the page renders");
    assert!(nodes >= 20_000 && height >= 50_000.0, "{nodes} nodes, {height} px");
    let out = rt.block_on(convert(&r, html.as_bytes(), false)).expect("the page converts");
    assert!(out.height >= 50_000.0);
    let health = rt.block_on(r.health()).expect("a browser");
    println!(
        "{nodes} nodes, {height} px: largest message {:.1} MB (limit {} MiB); memory peak {:?} MiB (limit {} MiB); {}",
        health.largest_message as f64 / 1e6,
        code2des_convert::render::DEFAULT_MAX_MESSAGE_BYTES >> 20,
        health.memory_peak_bytes.map(|b| b >> 20),
        code2des_convert::render::DEFAULT_MEMORY_LIMIT >> 20,
        health.containment
    );
    // A quarter of each limit at most: room for pages several times this one.
    assert!(health.largest_message < code2des_convert::render::DEFAULT_MAX_MESSAGE_BYTES / 4, "{health:?}");
    if let Some(peak) = health.memory_peak_bytes {
        assert!(peak < code2des_convert::render::DEFAULT_MEMORY_LIMIT / 2, "{health:?}");
    }
    assert_eq!(health.browsers_started, 1);
    rt.block_on(r.close());
}

/// Where this process may make a cgroup, every process of the browser is in it, under the
/// memory cap; the cgroups go with the renderer.
#[test]
fn the_browser_is_held_in_its_cgroups() {
    let _serial = serial();
    let rt = runtime();
    let options = Options { memory_limit: 700 << 20, ..Options::default() };
    let r = rt.block_on(Renderer::start(options)).expect("Chromium starts");
    converts(&rt, &r, "<!DOCTYPE html><p>held");
    let health = rt.block_on(r.health()).expect("a browser");
    println!("{}", health.containment);
    // Crashpad's handlers leave the process tree (they are reparented to init) and the process
    // group: the cgroup holds them still, and the renderer counts them.
    let pids: HashSet<u32> = health.pids.iter().copied().collect();
    let mine: HashSet<u32> = descendants().into_keys().collect();
    assert!(mine.is_subset(&pids), "{mine:?} not all in {pids:?}");
    for p in pids.difference(&mine) {
        let cmdline = std::fs::read_to_string(format!("/proc/{p}/cmdline")).unwrap_or_default();
        if cmdline.is_empty() {
            continue; // exited since (a closed page's renderer)
        }
        assert!(cmdline.contains("crashpad"), "{p}: {cmdline}");
    }
    if health.cgroups.is_empty() {
        // Nowhere to make one (a read-only /sys/fs/cgroup): the watch holds the memory.
        assert!(!health.hard_memory_cap && health.containment.contains("watched"), "{health:?}");
    } else {
        assert!(health.hard_memory_cap, "{health:?}");
        for cgroup in &health.cgroups {
            let procs = std::fs::read_to_string(cgroup.join("cgroup.procs")).expect("cgroup.procs");
            let procs: HashSet<u32> = procs.lines().filter_map(|l| l.parse().ok()).collect();
            // Read after the list: a process missing from it that is still alive is outside.
            let live = processes();
            let outside: Vec<&u32> = pids.iter().filter(|p| !procs.contains(p) && live.contains_key(p)).collect();
            assert!(outside.is_empty(), "outside {}: {outside:?}", cgroup.display());
        }
        let limit = ["memory.max", "memory.limit_in_bytes"]
            .iter()
            .find_map(|f| health.cgroups.iter().find_map(|c| std::fs::read_to_string(c.join(f)).ok()))
            .expect("a memory cap");
        assert_eq!(limit.trim(), (700u64 << 20).to_string());
    }
    drop(r);
    let gone = wait_for(Duration::from_secs(5), || health.cgroups.iter().all(|c| !c.exists()));
    assert!(gone, "left behind: {:?}", health.cgroups);
}

/// A page that needs more memory than the cap fails, saying so, and the next page converts on
/// the same renderer: with the cgroup's cap, and with the watch where there is no cgroup.
#[test]
fn a_page_over_the_memory_cap_fails_and_the_next_converts() {
    let _serial = serial();
    let rt = runtime();
    for cgroup in [true, false] {
        let probe = rt.block_on(Renderer::start(Options { cgroup, ..Options::default() })).expect("Chromium starts");
        converts(&rt, &probe, "<!DOCTYPE html><p>warm");
        let idle = rt.block_on(probe.health()).expect("a browser");
        rt.block_on(probe.close());
        println!(
            "cgroup {cgroup}: idle {:?} MiB charged, {} MiB PSS",
            idle.memory_bytes.map(|b| b >> 20),
            idle.pss_bytes >> 20
        );
        // 100 000 boxes take the browser's memory up by 800 MiB for seconds (the snapshot's
        // peak); a small page adds next to nothing.
        let limit = match idle.memory_bytes {
            Some(charged) => charged + (150 << 20),
            None => idle.pss_bytes + (150 << 20),
        };
        let r = rt
            .block_on(Renderer::start(Options { cgroup, memory_limit: limit, ..Options::default() }))
            .expect("Chromium starts");
        assert_eq!(rt.block_on(r.health()).expect("a browser").hard_memory_cap, cgroup && !idle.cgroups.is_empty());
        let t = Instant::now();
        let err = rt.block_on(convert(&r, heavy_page(100_000).as_bytes(), false)).map(|_| ()).unwrap_err();
        let want = format!(
            "the page is too large to convert: it needed more than the renderer's memory limit of {} MiB",
            limit >> 20
        );
        assert_eq!(err.to_string(), want, "cgroup {cgroup}");
        assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
        converts(&rt, &r, "<!DOCTYPE html><p>the next page");
        let health = rt.block_on(r.health()).expect("a browser");
        assert_eq!(health.browsers_started, 2, "a fresh browser after the failure");
        println!("cgroup {cgroup}: limit {} MiB, failed in {:?}: {err}", limit >> 20, t.elapsed());
        rt.block_on(r.close());
    }
}

/// A DevTools message over the cap fails the page at once with a clear error (no hang), and
/// the next page converts on the same renderer.
#[test]
fn a_message_over_its_cap_fails_and_the_next_converts() {
    let _serial = serial();
    let rt = runtime();
    let options = Options { max_message_bytes: 4 << 20, ..Options::default() };
    let r = rt.block_on(Renderer::start(options)).expect("Chromium starts");
    let t = Instant::now();
    let err = rt.block_on(convert(&r, documentation_page().as_bytes(), false)).map(|_| ()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ConvertError::Render(RenderError::TooLarge(_))), "{err:?}");
    assert!(msg.starts_with("the page is too large to convert: Chromium's answer was 1"), "{msg}");
    assert!(msg.ends_with("MB, over the limit of 4 MiB for one DevTools message"), "{msg}");
    // Well within the page limit (20 s), which a hang would reach.
    assert!(t.elapsed() < Duration::from_secs(18), "{:?}", t.elapsed());
    converts(&rt, &r, "<!DOCTYPE html><p>the next page");
    let health = rt.block_on(r.health()).expect("a browser");
    assert_eq!((health.browsers_started, health.sessions, health.pending), (2, 0, 0), "{health:?}");
    println!("failed in {:?}: {msg}", t.elapsed());
    rt.block_on(r.close());
}

/// Every command has a time limit of its own: one Chromium does not answer in time fails the
/// page with its name, long before the page's limit, and the next page converts.
#[test]
fn a_command_over_its_time_limit_fails_and_the_next_converts() {
    let _serial = serial();
    let rt = runtime();
    let options = Options {
        command_timeout: Duration::from_secs(1),
        page_timeout: Duration::from_secs(120),
        ..Options::default()
    };
    let r = rt.block_on(Renderer::start(options)).expect("Chromium starts");
    let t = Instant::now();
    let err = rt.block_on(convert(&r, heavy_page(100_000).as_bytes(), false)).map(|_| ()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with("the renderer failed: Chromium did not answer "), "{msg}");
    assert!(msg.ends_with(" within 1 s"), "{msg}");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    converts(&rt, &r, "<!DOCTYPE html><p>the next page");
    println!("failed in {:?}: {msg}", t.elapsed());
    rt.block_on(r.close());
}
