//! Headless Chromium, started once per process and reused: each capture gets a fresh browser
//! context (no shared cache, cookies or storage) and page, closed after its snapshot.
//!
//! The capture is untrusted. Before its HTML is loaded: scripts are disabled
//! (`Emulation.setScriptExecutionDisabled`), and every request is intercepted (`Fetch.enable`)
//! and failed unless it is a `data:` URL. The browser itself runs with
//! `--host-resolver-rules=MAP * ~NOTFOUND`, so even a request the interception missed resolves
//! no host. The HTML is loaded with `Page.setDocumentContent` into `about:blank`: no `file://`
//! URL is ever opened. Every page has a hard time limit; past it the page is closed and the
//! capture fails.
//!
//! The browser is contained to the end (docs/WORKER.md, section 8): all its processes are in one
//! process group and, where the machine lets this process make one, one cgroup with a memory
//! cap; every DevTools message has a size limit and every command a time limit. A page that
//! exhausts a limit fails with a message that says which; the browser is then killed, its whole
//! process tree with it, and the next page starts a fresh one. Dropping the renderer kills the
//! tree too, and so does the exit of this process however it ends (the wrapper shell below).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tracing::Instrument;

use crate::cdp::{Cdp, CdpError, Events, Tasks};

/// Why rendering failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    #[error("the renderer could not start: {0}")]
    Start(String),
    #[error("the page did not load and lay out within {} s", .0.as_secs_f64())]
    Timeout(Duration),
    #[error("the renderer failed: {0}")]
    Protocol(String),
    /// The page exhausted one of the renderer's limits: memory, or the size of one DevTools
    /// message (its snapshot, a screenshot).
    #[error("the page is too large to convert: {0}")]
    TooLarge(String),
    #[error("the renderer crashed on the page")]
    Crashed,
}

/// The browser's memory cap, all its processes together: [`Options::memory_limit`]'s default.
/// The worker's Lambda has 2048 MB; this leaves the other half to the worker, which parses the
/// snapshot and builds the document from it. Measured (convert/tests/containment.rs): an idle
/// browser is charged 75 to 150 MiB, a documentation page 54 600 px tall with 44 000 snapshot
/// nodes peaks at 384 MiB, and 100 000 inline boxes (a 57 MB snapshot) at 950 MiB, the edge.
pub const DEFAULT_MEMORY_LIMIT: u64 = 1 << 30;

/// The largest DevTools message read: [`Options::max_message_bytes`]'s default. The largest
/// message is the page's snapshot: the documentation page above makes one of 13.5 MB
/// (convert/tests/containment.rs measures it); 64 MiB is five times that, and an eighth of what
/// was accepted before (512 MiB, which the worker then held several times over: as text, as
/// parsed JSON).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 64 << 20;

/// How the browser is started and how long a page may take.
#[derive(Debug, Clone)]
pub struct Options {
    /// The Chromium binary; default `$CHROMIUM_PATH`, else the first of chromium,
    /// chromium-browser, google-chrome on the PATH.
    pub binary: Option<PathBuf>,
    /// Load, settle and snapshot of one page, all included.
    pub page_timeout: Duration,
    /// The viewport height (`100vh`); the page is laid out at its full height regardless.
    pub viewport_height: u32,
    /// The memory of all the browser's processes together, in bytes: a cgroup's hard cap where
    /// one can be made, else a watch on their resident memory.
    pub memory_limit: u64,
    /// The largest DevTools message read, in bytes.
    pub max_message_bytes: usize,
    /// The time limit of any one DevTools command, the browser's own (a context's creation and
    /// disposal) included, which the page limit does not cover.
    pub command_timeout: Duration,
    /// Whether to put the browser in cgroups of its own where this process may make them
    /// (false: the process group and the memory watch only, as where it may not).
    pub cgroup: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            binary: None,
            page_timeout: Duration::from_secs(20),
            viewport_height: 900,
            memory_limit: DEFAULT_MEMORY_LIMIT,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            command_timeout: Duration::from_secs(30),
            cgroup: true,
        }
    }
}

/// One rendered page: the raw `DOMSnapshot.captureSnapshot` answer and what was measured.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub snapshot: Value,
    pub width: u32,
    /// The document's full height in CSS pixels.
    pub height: f64,
    /// Requests the interception failed (anything but `data:`).
    pub blocked_requests: usize,
    /// The font family Chromium drew with, by the CSS `font-family` list that asked for it:
    /// from `CSS.getPlatformFontsForNode`.
    pub platform_fonts: Vec<(String, String)>,
    /// A PNG of the whole page, when asked for (the fidelity benchmark's reference picture).
    pub screenshot: Option<Vec<u8>>,
    /// PNG crops of the page, of the rectangles (x, y, w, h) the plan asked for.
    pub crops: Vec<Vec<u8>>,
}

/// What the running browser holds, for monitoring and for the tests that check nothing leaks.
#[derive(Debug, Clone)]
pub struct Health {
    /// How the browser is contained, in words: its cgroups and the memory cap, or the process
    /// group and the watch on its memory.
    pub containment: String,
    /// The cgroups the browser's processes are in (removed when it goes).
    pub cgroups: Vec<PathBuf>,
    /// Whether the memory cap is a cgroup's (hard) rather than the watch's.
    pub hard_memory_cap: bool,
    /// The browser's live processes.
    pub pids: Vec<u32>,
    /// Their memory, summed: each process's proportional set size (PSS: a page shared by n
    /// processes counts 1/n in each), what the memory watch compares with the limit.
    pub pss_bytes: u64,
    /// The memory the cgroup charges the browser now, and at most so far, where a cgroup caps it.
    pub memory_bytes: Option<u64>,
    pub memory_peak_bytes: Option<u64>,
    /// DevTools sessions with an event channel, and commands awaiting an answer.
    pub sessions: usize,
    pub pending: usize,
    /// Tasks of this renderer alive (the connection's two, the stderr drain, the memory
    /// watch, and those of pages in flight or being closed).
    pub tasks: usize,
    /// The largest DevTools message read from this browser, in bytes.
    pub largest_message: usize,
    /// Browsers this renderer has started: one more after each reset.
    pub browsers_started: u64,
}

/// The computed styles the snapshot asks for, in this order (`Styles` reads them by index).
pub const STYLES: &[&str] = &[
    "display",
    "visibility",
    "opacity",
    "overflow-x",
    "overflow-y",
    "position",
    // A float lies beside the blocks it sits among: no vertical auto layout (convert/layout).
    "float",
    "background-color",
    "background-image",
    "background-size",
    "border-top-width",
    "border-right-width",
    "border-bottom-width",
    "border-left-width",
    "border-top-style",
    "border-right-style",
    "border-bottom-style",
    "border-left-style",
    "border-top-color",
    "border-right-color",
    "border-bottom-color",
    "border-left-color",
    "border-top-left-radius",
    "border-top-right-radius",
    "border-bottom-right-radius",
    "border-bottom-left-radius",
    "box-shadow",
    "color",
    "font-family",
    "font-size",
    "font-weight",
    "font-style",
    "line-height",
    "letter-spacing",
    "text-align",
    "text-decoration-line",
    // How Figma's text decoration members draw it (convert/text).
    "text-decoration-style",
    "text-decoration-color",
    "text-decoration-thickness",
    "text-underline-offset",
    "text-decoration-skip-ink",
    "text-transform",
    "flex-direction",
    "flex-wrap",
    "justify-content",
    "align-items",
    // How an item's size follows its container's (convert/layout: FILL).
    "align-self",
    "flex-grow",
    "row-gap",
    "column-gap",
    "padding-top",
    "padding-right",
    "padding-bottom",
    "padding-left",
    "object-fit",
    "transform",
    "white-space",
    // A paragraph is one TEXT node only where these are as a TEXT node draws (convert/paragraph).
    "text-indent",
    "direction",
    "vertical-align",
    "margin-left",
    "margin-right",
    "margin-top",
    "margin-bottom",
    // A grid container's tracks, as laid out (px), for Figma's GRID (convert/layout).
    "grid-template-columns",
    "grid-template-rows",
    "appearance",
    "list-style-type",
    "border-collapse",
    "background-repeat",
    // Read to stack and clip as CSS does, and to warn of what the document does not draw.
    "z-index",
    "isolation",
    "filter",
    "backdrop-filter",
    "clip-path",
    "mask-image",
    "mix-blend-mode",
    "background-blend-mode",
    "text-shadow",
    "perspective",
    "contain",
    "will-change",
];

/// Renders pages in one headless Chromium, started again after a page that broke it.
pub struct Renderer {
    options: Options,
    /// The page time limit in ms: [`Options::page_timeout`] until [`Renderer::set_page_timeout`].
    page_timeout_ms: AtomicU64,
    browser: tokio::sync::Mutex<Option<Arc<Browser>>>,
    tasks: Tasks,
    started: AtomicU64,
}

impl Renderer {
    /// Starts the browser (about a second) and connects to it.
    pub async fn start(options: Options) -> Result<Self, RenderError> {
        let tasks = Tasks::default();
        let browser = Browser::start(&options, &tasks).await?;
        let page_timeout_ms = AtomicU64::new(options.page_timeout.as_millis() as u64);
        Ok(Self {
            options,
            page_timeout_ms,
            browser: tokio::sync::Mutex::new(Some(Arc::new(browser))),
            tasks,
            started: AtomicU64::new(1),
        })
    }

    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Changes the time limit of the pages rendered from now on.
    pub fn set_page_timeout(&self, limit: Duration) {
        self.page_timeout_ms.store(limit.as_millis() as u64, Ordering::Relaxed);
    }

    /// The running browser; a new one if the last was killed after a failure.
    async fn browser(&self) -> Result<Arc<Browser>, RenderError> {
        let mut slot = self.browser.lock().await;
        if let Some(b) = slot.as_ref() {
            if !b.is_broken() {
                return Ok(b.clone());
            }
        }
        if let Some(old) = slot.take() {
            tracing::warn!(reason = old.cdp.closed().map(|e| e.to_string()), "the browser failed: starting another");
            old.tree.kill();
        }
        let b = Arc::new(Browser::start(&self.options, &self.tasks).await?);
        self.started.fetch_add(1, Ordering::Relaxed);
        *slot = Some(b.clone());
        Ok(b)
    }

    /// What the running browser holds; `None` while none runs (after a failure, until the next
    /// page starts one).
    pub async fn health(&self) -> Option<Health> {
        let b = self.browser.lock().await.clone()?;
        if b.is_broken() {
            return None;
        }
        let pids = b.tree.pids();
        let pss_bytes = pids.iter().map(|p| pss(*p)).sum();
        Some(Health {
            containment: b.tree.describe(&self.options),
            cgroups: b.tree.cgroups.iter().map(|c| c.dir.clone()).collect(),
            hard_memory_cap: b.tree.hard_cap(),
            pids,
            pss_bytes,
            memory_bytes: b.tree.memory("memory.current", "memory.usage_in_bytes"),
            memory_peak_bytes: b.tree.memory("memory.peak", "memory.max_usage_in_bytes"),
            sessions: b.cdp.sessions(),
            pending: b.cdp.pending(),
            tasks: self.tasks.live(),
            largest_message: b.cdp.largest_message(),
            browsers_started: self.started.load(Ordering::Relaxed),
        })
    }

    /// Renders one HTML document at `width` and snapshots it, within the page time limit.
    /// `plan` sees the snapshot while the page is still open, and answers its own result and
    /// the page rectangles to crop as PNG (images whose format Figma does not take);
    /// `screenshot` takes the whole page too.
    ///
    /// A page that fails otherwise than by its time limit (a crash, a limit exhausted, a
    /// protocol error) leaves the browser in doubt: it is killed, its whole process tree with
    /// it, and the next page starts another. A page past its time limit has its context disposed
    /// of behind the caller; the browser is started again only if that fails.
    pub async fn render<T>(
        &self,
        html: &str,
        width: u32,
        screenshot: bool,
        plan: impl FnOnce(&Value, f64, &[(String, String)]) -> (T, Vec<[f64; 4]>),
    ) -> Result<(Rendered, T), RenderError> {
        let limit = Duration::from_millis(self.page_timeout_ms.load(Ordering::Relaxed));
        let browser = self.browser().await?;
        let oom_before = browser.tree.oom_kills();
        let page = browser.render(&self.tasks, html, width, screenshot, self.options.viewport_height, plan);
        match tokio::time::timeout(limit, page).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => {
                let e = browser.explain(e, oom_before, &self.options);
                tracing::warn!(error = %e, "the page failed: the browser is killed");
                browser.broken.store(true, Ordering::Relaxed);
                browser.tree.kill();
                Err(e)
            }
            Err(_) => Err(RenderError::Timeout(limit)),
        }
    }

    /// Stops the browser: asked to close, then its process tree killed.
    pub async fn close(self) {
        let Some(b) = self.browser.lock().await.take() else { return };
        let _ = tokio::time::timeout(Duration::from_secs(2), b.cdp.call(None, "Browser.close", json!({}))).await;
        b.tree.kill();
    }
}

/// One running Chromium: its connection and its process tree.
struct Browser {
    cdp: Cdp,
    // Declared before the profile: fields drop in order, and the processes die before their
    // profile directory is removed.
    tree: Tree,
    /// Set after a failure, or when a timed-out page's context could not be disposed of.
    broken: Arc<AtomicBool>,
    /// Set when the memory watch killed a renderer (no cgroup caps the memory).
    over_memory: Arc<AtomicBool>,
    _watch: Option<AbortOnDrop>,
    _profile: tempfile::TempDir,
}

impl Browser {
    async fn start(options: &Options, tasks: &Tasks) -> Result<Self, RenderError> {
        let binary = match &options.binary {
            Some(b) => b.clone(),
            None => find_binary().ok_or_else(|| {
                RenderError::Start("no Chromium found (set CHROMIUM_PATH, or install the chromium package)".into())
            })?,
        };
        let profile = tempfile::tempdir().map_err(|e| RenderError::Start(format!("profile directory: {e}")))?;
        let args = chromium_args(profile.path());
        let (tree, stderr) = Tree::spawn(&binary, &args, options.memory_limit, options.cgroup)?;
        let mut lines = BufReader::new(stderr).lines();
        let url = tokio::time::timeout(Duration::from_secs(30), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(url) = line.strip_prefix("DevTools listening on ") {
                    return Some(url.trim().to_owned());
                }
            }
            None
        })
        .await
        .ok()
        .flatten()
        .ok_or_else(|| RenderError::Start("Chromium did not open its DevTools endpoint".into()))?;
        // Keep draining stderr, or Chromium blocks once the pipe fills. It ends with the tree.
        tasks.spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let cdp = Cdp::connect(&url, options.max_message_bytes, options.command_timeout, tasks)
            .await
            .map_err(RenderError::Start)?;
        let over_memory = Arc::new(AtomicBool::new(false));
        let watch = (!tree.hard_cap())
            .then(|| AbortOnDrop(tasks.spawn(watch_memory(tree.pgid, options.memory_limit, over_memory.clone()))));
        tracing::info!(containment = tree.describe(options), "Chromium started");
        Ok(Self { cdp, tree, broken: Arc::default(), over_memory, _watch: watch, _profile: profile })
    }

    fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed) || self.cdp.closed().is_some()
    }

    /// The error the caller hears: a crash that the memory cap caused says so.
    fn explain(&self, e: CdpError, oom_before: u64, options: &Options) -> RenderError {
        if self.tree.oom_kills() > oom_before || self.over_memory.load(Ordering::Relaxed) {
            return RenderError::TooLarge(format!(
                "it needed more than the renderer's memory limit of {} MiB",
                options.memory_limit >> 20
            ));
        }
        match e {
            CdpError::TooLarge { size, max } => RenderError::TooLarge(format!(
                "Chromium's answer was {:.1} MB, over the limit of {} MiB for one DevTools message",
                size as f64 / 1e6,
                max >> 20
            )),
            CdpError::Crashed => RenderError::Crashed,
            e => RenderError::Protocol(e.to_string()),
        }
    }

    /// One page in a browser context of its own, disposed of whatever happens: awaited when
    /// the page ends, behind the caller when the page's future is dropped at its time limit.
    async fn render<T>(
        &self,
        tasks: &Tasks,
        html: &str,
        width: u32,
        screenshot: bool,
        viewport_height: u32,
        plan: impl FnOnce(&Value, f64, &[(String, String)]) -> (T, Vec<[f64; 4]>),
    ) -> Result<(Rendered, T), CdpError> {
        // Created by a task of its own: a page dropped while Chromium creates its context (the
        // time limit) does not leave the context behind, the task disposes of it.
        let (tx, rx) = tokio::sync::oneshot::channel();
        let cdp = self.cdp.clone();
        tasks.spawn(async move {
            let r = cdp.call(None, "Target.createBrowserContext", json!({"disposeOnDetach": true})).await;
            if let Err(Ok(created)) = tx.send(r) {
                if let Some(id) = created["browserContextId"].as_str() {
                    dispose(&cdp, id).await;
                }
            }
        });
        let context = rx.await.map_err(|_| CdpError::Closed("the browser connection is closed".into()))??;
        let context = Context {
            cdp: self.cdp.clone(),
            id: context["browserContextId"].as_str().unwrap_or_default().to_owned(),
            tasks: tasks.clone(),
            broken: self.broken.clone(),
            disposed: false,
        };
        let out = self.render_in(tasks, &context.id, html, width, screenshot, viewport_height, plan).await;
        context.dispose().await;
        out
    }

    #[allow(clippy::too_many_arguments)]
    async fn render_in<T>(
        &self,
        tasks: &Tasks,
        context: &str,
        html: &str,
        width: u32,
        screenshot: bool,
        viewport_height: u32,
        plan: impl FnOnce(&Value, f64, &[(String, String)]) -> (T, Vec<[f64; 4]>),
    ) -> Result<(Rendered, T), CdpError> {
        let cdp = &self.cdp;
        // Dropped (the session's channel with it) when this future ends or is dropped.
        let (session, mut events) = self.open_page(context, width, viewport_height).await?;
        let s = Some(session.as_str());
        let blocked = Arc::new(AtomicUsize::new(0));
        // The stages are spans (children of the caller's, a worker's job): load, layout, snapshot.
        load(cdp, &session, &mut events, html, &blocked).instrument(tracing::info_span!("load")).await?;
        // Requests after the load (lazy images, fonts first used late) are answered too, until
        // the page ends: the task is aborted when this future ends or is dropped.
        let _handler = {
            let (cdp, session, blocked) = (cdp.clone(), session.clone(), blocked.clone());
            AbortOnDrop(tasks.spawn(async move {
                while let Some((method, params)) = events.recv().await {
                    if method == "Fetch.requestPaused" {
                        answer(&cdp, &session, &params, &blocked);
                    }
                }
            }))
        };
        let metrics = cdp.call(s, "Page.getLayoutMetrics", json!({})).instrument(tracing::info_span!("layout")).await?;
        let height = metrics["cssContentSize"]["height"].as_f64().unwrap_or(0.0);
        let (snapshot, platform_fonts) = self.snapshot(s).instrument(tracing::info_span!("snapshot")).await?;
        let (planned, rects) = plan(&snapshot, height, &platform_fonts);
        let mut crops = Vec::new();
        for rect in rects {
            crops.push(self.png(s, rect).await?);
        }
        let screenshot = if screenshot { Some(self.png(s, [0.0, 0.0, f64::from(width), height]).await?) } else { None };
        Ok((
            Rendered {
                snapshot,
                width,
                height,
                blocked_requests: blocked.load(Ordering::Relaxed),
                platform_fonts,
                screenshot,
                crops,
            },
            planned,
        ))
    }

    /// The page's DOM snapshot, and the platform fonts its text was drawn with.
    async fn snapshot(&self, s: Option<&str>) -> Result<(Value, Vec<(String, String)>), CdpError> {
        let snapshot = self
            .cdp
            .call(
                s,
                "DOMSnapshot.captureSnapshot",
                json!({"computedStyles": STYLES, "includePaintOrder": true, "includeDOMRects": true}),
            )
            .await?;
        let (platform_fonts, percent) = match Arrays::of(&snapshot) {
            Some(arrays) => {
                let mut domains = None;
                let fonts = self.platform_fonts(s, &mut domains, &arrays).await?;
                (fonts, self.percent_sizes(s, &mut domains, &arrays).await?)
            }
            None => (Vec::new(), Vec::new()),
        };
        let mut snapshot = snapshot;
        // Kept beside what DOMSnapshot answered, as the converter reads it (`Snapshot::parse`).
        snapshot["code2des"] = json!({ "percentSizes": percent });
        Ok((snapshot, platform_fonts))
    }

    /// The flex items (their snapshot node indices) whose size along their container's axis
    /// the cascade gives as a percentage (`width: 100%` in a row, `height` in a column), which
    /// computed styles cannot tell from a fixed length: asked of Chromium's matched rules
    /// (`CSS.getMatchedStylesForNode`), one call per item. The converter makes such an item
    /// FILL its auto layout frame where Figma's share of the room is its size. A command
    /// Chromium refuses leaves the item out, as in `platform_fonts`.
    async fn percent_sizes(
        &self,
        s: Option<&str>,
        domains: &mut Option<bool>,
        arrays: &Arrays<'_>,
    ) -> Result<Vec<usize>, CdpError> {
        let mut items = flex_items(arrays);
        // One call an item: a page of thousands of flex items (a table built of rows of them)
        // asks of its first ones only, so its time stays a page's, not a call's per item.
        items.truncate(MAX_SIZE_QUERIES);
        let ids: Vec<i64> = items.iter().map(|(_, id, _)| *id).collect();
        let answers = self.ask_each(s, domains, &ids, "CSS.getMatchedStylesForNode").await?;
        let mut out = Vec::new();
        for ((n, _, property), matched) in items.iter().zip(answers) {
            if matched.and_then(|m| cascaded(&m, property)).is_some_and(|v| v.trim_end().ends_with('%')) {
                out.push(*n);
            }
        }
        Ok(out)
    }

    /// `method` asked of each node (`ids`: backend node ids) in turn, once the DOM and CSS
    /// domains are on (turned on once a page: `domains` remembers whether Chromium agreed) and
    /// the nodes pushed to node ids. Chromium's refusal of a command leaves that node's answer
    /// out (`None`), or every answer where it refuses the domains or the push; a broken
    /// connection, a crash or a time limit fails the page.
    async fn ask_each(
        &self,
        s: Option<&str>,
        domains: &mut Option<bool>,
        ids: &[i64],
        method: &str,
    ) -> Result<Vec<Option<Value>>, CdpError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let on = match *domains {
            Some(on) => on,
            None => *domains.insert(self.css_domain(s).await?),
        };
        if !on {
            return Ok(Vec::new());
        }
        let pushed = self.cdp.call(s, "DOM.pushNodesByBackendIdsToFrontend", json!({"backendNodeIds": ids})).await;
        let Some(pushed) = refused(pushed)? else { return Ok(Vec::new()) };
        let mut out = Vec::new();
        for node in pushed["nodeIds"].as_array().cloned().unwrap_or_default() {
            out.push(refused(self.cdp.call(s, method, json!({"nodeId": node})).await)?);
        }
        Ok(out)
    }

    /// The DOM and CSS domains on, the document's nodes requested (so that backend ids can be
    /// pushed to node ids): whether Chromium agreed.
    async fn css_domain(&self, s: Option<&str>) -> Result<bool, CdpError> {
        if refused(self.cdp.call(s, "DOM.enable", json!({})).await)?.is_none() {
            return Ok(false);
        }
        refused(self.cdp.call(s, "DOM.getDocument", json!({"depth": 0})).await)?;
        Ok(refused(self.cdp.call(s, "CSS.enable", json!({})).await)?.is_some())
    }

    /// A new page in `context`, scripts off, every request paused, its viewport `width` ×
    /// `viewport_height`: its session, and the session's events.
    async fn open_page(&self, context: &str, width: u32, viewport_height: u32) -> Result<(String, Events), CdpError> {
        let cdp = &self.cdp;
        let target =
            cdp.call(None, "Target.createTarget", json!({"url": "about:blank", "browserContextId": context})).await?;
        let attached =
            cdp.call(None, "Target.attachToTarget", json!({"targetId": target["targetId"], "flatten": true})).await?;
        let session = attached["sessionId"].as_str().unwrap_or_default().to_owned();
        let s = Some(session.as_str());
        let events = cdp.events(&session);
        // For `Inspector.targetCrashed`: a renderer killed (by the memory cap) fails the page
        // at once rather than at its time limit.
        cdp.call(s, "Inspector.enable", json!({})).await?;
        cdp.call(s, "Emulation.setScriptExecutionDisabled", json!({"value": true})).await?;
        cdp.call(s, "Fetch.enable", json!({"patterns": [{"urlPattern": "*"}]})).await?;
        cdp.call(
            s,
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": viewport_height, "deviceScaleFactor": 1, "mobile": false}),
        )
        .await?;
        cdp.call(s, "Page.enable", json!({})).await?;
        Ok((session, events))
    }

    /// A PNG of a rectangle of the page, beyond the viewport if need be.
    async fn png(&self, s: Option<&str>, [x, y, w, h]: [f64; 4]) -> Result<Vec<u8>, CdpError> {
        use base64::Engine as _;
        let shot = self
            .cdp
            .call(
                s,
                "Page.captureScreenshot",
                json!({"format": "png", "captureBeyondViewport": true,
                       "clip": {"x": x, "y": y, "width": w.max(1.0), "height": h.max(1.0), "scale": 1}}),
            )
            .await?;
        base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap_or_default())
            .map_err(|e| CdpError::Command(format!("screenshot: {e}")))
    }

    /// The font Chromium drew each distinct `font-family` list with, asked of one text node's
    /// parent per list: a handful of calls per page, not one per run. A command Chromium
    /// refuses leaves the list out; a broken connection, a crash or a time limit fails the page.
    async fn platform_fonts(
        &self,
        s: Option<&str>,
        domains: &mut Option<bool>,
        a: &Arrays<'_>,
    ) -> Result<Vec<(String, String)>, CdpError> {
        let fam = STYLES.iter().position(|s| *s == "font-family").unwrap_or(0);
        let mut seen = std::collections::HashSet::new();
        let mut wanted = Vec::new();
        for (li, n) in a.node_index.iter().enumerate() {
            let Some(n) = n.as_u64().map(|n| n as usize) else { continue };
            if a.types.get(n).and_then(Value::as_u64) != Some(3) {
                continue;
            }
            let Some(family) = a.style(li, fam) else { continue };
            if seen.insert(family.to_owned()) {
                let parent = a.parents.get(n).and_then(Value::as_i64).unwrap_or(-1);
                if let Some(id) = usize::try_from(parent).ok().and_then(|p| a.backend.get(p)).and_then(Value::as_i64) {
                    wanted.push((family.to_owned(), id));
                }
            }
        }
        let ids: Vec<i64> = wanted.iter().map(|(_, id)| *id).collect();
        let answers = self.ask_each(s, domains, &ids, "CSS.getPlatformFontsForNode").await?;
        let mut out = Vec::new();
        for ((family, _), fonts) in wanted.iter().zip(answers) {
            let Some(fonts) = fonts else { continue };
            // The family that drew the most glyphs.
            let best = fonts["fonts"]
                .as_array()
                .and_then(|f| f.iter().max_by_key(|f| f["glyphCount"].as_u64().unwrap_or(0)))
                .and_then(|f| f["familyName"].as_str());
            if let Some(b) = best {
                out.push((family.clone(), b.to_owned()));
            }
        }
        Ok(out)
    }
}

/// Chromium's refusal of one command is no reason to fail the page: `None`; a broken
/// connection, a crash or a time limit is.
fn refused<V>(r: Result<V, CdpError>) -> Result<Option<V>, CdpError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(CdpError::Command(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// How many flex items `percent_sizes` asks Chromium about, at most: a call took about 8 ms on
/// the project's 2-core machine (the landing sample's 22 items, 176 ms), so at most half a
/// second a page.
const MAX_SIZE_QUERIES: usize = 64;

/// The arrays of a DOM snapshot's first document that the renderer's questions to Chromium
/// read, borrowed from it (the fonts' and the percentage sizes' alike).
struct Arrays<'a> {
    strings: &'a [Value],
    /// Each layout object's computed styles, in `STYLES` order, as indices into `strings`.
    styles: &'a [Value],
    /// Each layout object's node.
    node_index: &'a [Value],
    parents: &'a [Value],
    types: &'a [Value],
    backend: &'a [Value],
}

impl<'a> Arrays<'a> {
    fn of(snapshot: &'a Value) -> Option<Self> {
        let doc = snapshot["documents"].get(0)?;
        let list = |v: &'a Value| v.as_array().map(Vec::as_slice).unwrap_or_default();
        let nodes = &doc["nodes"];
        Some(Arrays {
            strings: list(&snapshot["strings"]),
            styles: list(&doc["layout"]["styles"]),
            node_index: list(&doc["layout"]["nodeIndex"]),
            parents: list(&nodes["parentIndex"]),
            types: list(&nodes["nodeType"]),
            backend: list(&nodes["backendNodeId"]),
        })
    }

    /// Layout object `li`'s computed style in column `c` of `STYLES`.
    fn style(&self, li: usize, c: usize) -> Option<&'a str> {
        let i = self.styles.get(li)?.get(c)?.as_i64()?;
        self.strings.get(usize::try_from(i).ok()?)?.as_str()
    }
}

/// The element items of the snapshot's flex containers: each one's node index, backend node id
/// and the property of its size along the container's axis ("width" in a row, "height" in a
/// column).
fn flex_items(a: &Arrays<'_>) -> Vec<(usize, i64, &'static str)> {
    let column = |name: &str| STYLES.iter().position(|s| *s == name).unwrap_or(0);
    let (display, direction) = (column("display"), column("flex-direction"));
    // Each node's axis when it is a flex container: true for a row.
    let mut axis: std::collections::HashMap<usize, bool> = std::collections::HashMap::new();
    let mut laid_out = std::collections::HashSet::new();
    for (li, n) in a.node_index.iter().enumerate() {
        let Some(n) = n.as_u64().map(|n| n as usize) else { continue };
        laid_out.insert(n);
        let style = |c: usize| a.style(li, c).unwrap_or("");
        if matches!(style(display), "flex" | "inline-flex") {
            axis.entry(n).or_insert(style(direction).starts_with("row"));
        }
    }
    let mut out = Vec::new();
    for (n, parent) in a.parents.iter().enumerate() {
        let Some(row) = parent.as_u64().and_then(|p| axis.get(&(p as usize))) else { continue };
        if a.types.get(n).and_then(Value::as_u64) != Some(1) || !laid_out.contains(&n) {
            continue;
        }
        if let Some(id) = a.backend.get(n).and_then(Value::as_i64) {
            out.push((n, id, if *row { "width" } else { "height" }));
        }
    }
    out
}

/// The value the cascade gives `property` among a node's matched styles
/// (`CSS.getMatchedStylesForNode`): its `!important` declarations first, then the others; the
/// inline style first, then the matched rules from the last (Chromium lists them in ascending
/// precedence), then the presentational attributes (`width="100%"`).
fn cascaded(matched: &Value, property: &str) -> Option<String> {
    let mut styles: Vec<&Value> = vec![&matched["inlineStyle"]];
    let rules = matched["matchedCSSRules"].as_array().map(Vec::as_slice).unwrap_or_default();
    styles.extend(rules.iter().rev().map(|r| &r["rule"]["style"]));
    styles.push(&matched["attributesStyle"]);
    let declared = |important: bool| {
        styles.iter().find_map(|st| {
            st["cssProperties"].as_array()?.iter().rev().find_map(|p| {
                let live = p["name"] == property && p["disabled"] != true && p["parsedOk"] != false;
                (live && (p["important"] == true) == important)
                    .then(|| p["value"].as_str().map(str::to_owned))
                    .flatten()
            })
        })
    };
    declared(true).or_else(|| declared(false))
}

/// Loads `html` in the page of `session`, answering its paused requests until the load event:
/// data: goes on, everything else fails (counted in `blocked`).
async fn load(
    cdp: &Cdp,
    session: &str,
    events: &mut Events,
    html: &str,
    blocked: &AtomicUsize,
) -> Result<(), CdpError> {
    let s = Some(session);
    let tree = cdp.call(s, "Page.getFrameTree", json!({})).await?;
    let frame = tree["frameTree"]["frame"]["id"].clone();
    cdp.call(s, "Page.setDocumentContent", json!({"frameId": frame, "html": html})).await?;
    loop {
        let Some((method, params)) = events.recv().await else {
            return Err(CdpError::Closed("the page went away".into()));
        };
        match method.as_str() {
            "Fetch.requestPaused" => answer(cdp, session, &params, blocked),
            "Page.loadEventFired" => return Ok(()),
            "Inspector.targetCrashed" => return Err(CdpError::Crashed),
            _ => {}
        }
    }
}

/// Chromium's command line: headless, its DevTools on a port of its choosing, its profile in
/// `profile`, an empty page.
fn chromium_args(profile: &Path) -> Vec<String> {
    let mut args: Vec<String> = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-default-apps",
        "--mute-audio",
        "--hide-scrollbars",
        // Shared memory in /tmp: a container's /dev/shm is small (Docker's 64 MB) or
        // missing (Lambda), and a renderer that runs out of it crashes the page.
        "--disable-dev-shm-usage",
        // The pictures do not depend on the machine's hinting settings.
        "--font-render-hinting=none",
        // No host resolves: the Fetch interception is the first wall, this the second.
        "--host-resolver-rules=MAP * ~NOTFOUND",
        // Scripts never run in a capture, so V8's heap holds only Blink's bindings: a small
        // cap, in case a script ever did run, keeps it from growing to V8's default (GBs).
        "--js-flags=--max-old-space-size=128",
        "--remote-debugging-address=127.0.0.1",
        "--remote-debugging-port=0",
    ]
    .map(str::to_owned)
    .to_vec();
    args.push(format!("--user-data-dir={}", profile.display()));
    args.push("about:blank".into());
    args
}

/// A page's browser context. Disposing of it closes its page, whatever state it is in; if its
/// page's future is dropped (the time limit), the disposal goes on behind the caller, and a
/// browser that cannot dispose of it within 10 s is marked for a restart.
struct Context {
    cdp: Cdp,
    id: String,
    tasks: Tasks,
    broken: Arc<AtomicBool>,
    disposed: bool,
}

impl Context {
    async fn dispose(mut self) {
        self.disposed = true;
        if !dispose(&self.cdp, &self.id).await {
            self.broken.store(true, Ordering::Relaxed);
        }
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if self.disposed {
            return;
        }
        let (cdp, id, broken) = (self.cdp.clone(), std::mem::take(&mut self.id), self.broken.clone());
        if tokio::runtime::Handle::try_current().is_err() {
            // No runtime to close it from: the browser goes instead.
            broken.store(true, Ordering::Relaxed);
            return;
        }
        self.tasks.spawn(async move {
            if !dispose(&cdp, &id).await {
                broken.store(true, Ordering::Relaxed);
            }
        });
    }
}

async fn dispose(cdp: &Cdp, id: &str) -> bool {
    let params = json!({"browserContextId": id});
    let call = cdp.call(None, "Target.disposeBrowserContext", params);
    matches!(tokio::time::timeout(Duration::from_secs(10), call).await, Ok(Ok(_)))
}

/// A task aborted when this is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A paused request: `data:` continues, anything else fails (and is counted). Failed as
/// `Aborted`: a navigation (a meta refresh, a link target) that fails any other way commits an
/// error page in place of the capture; an aborted one leaves the capture where it is.
fn answer(cdp: &Cdp, session: &str, params: &Value, blocked: &AtomicUsize) {
    let id = params["requestId"].clone();
    let url = params["request"]["url"].as_str().unwrap_or_default();
    if url.starts_with("data:") {
        cdp.send(session, "Fetch.continueRequest", json!({"requestId": id}));
    } else {
        blocked.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(url, "capture request blocked");
        cdp.send(session, "Fetch.failRequest", json!({"requestId": id, "errorReason": "Aborted"}));
    }
}

fn find_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHROMIUM_PATH") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

/// The shell that starts Chromium: it joins the cgroups named before `--` (its children are
/// then born in them: every Chromium process, no escape), starts Chromium in its process group,
/// and waits for its standard input to close, which happens when the renderer drops it or when
/// this process ends, however it ends. Then it leaves the cgroups for their parents, kills
/// what they hold (`cgroup.kill` in v2, each process in v1), removes them, and kills its whole
/// process group, itself last. This is what a `pre_exec` `prctl(PR_SET_PDEATHSIG)` would do,
/// and the cleanup a process that exits without dropping its renderer cannot, without the
/// unsafe code the workspace forbids. (The cgroup paths hold no white space: `make_cgroups`.)
const WRAPPER: &str = r#"dirs=
while [ "$1" != -- ]; do echo $$ > "$1/cgroup.procs" || exit 97; dirs="$dirs $1"; shift; done
shift
"$@" </dev/null &
read -r line
for d in $dirs; do echo $$ > "${d%/*}/cgroup.procs"; done
for d in $dirs; do
  if [ -e "$d/cgroup.kill" ]; then echo 1 > "$d/cgroup.kill"; else kill -KILL $(cat "$d/cgroup.procs") 2>/dev/null; fi
done
for i in 1 2 3 4 5 6 7 8 9 10; do rmdir $dirs 2>/dev/null; [ -n "$dirs" ] && [ -e ${dirs##* } ] || break; sleep 0.1; done
kill -KILL 0"#;

/// A cgroup made for one browser.
struct Cgroup {
    dir: PathBuf,
    v2: bool,
    /// Whether its memory controller caps the browser.
    memory: bool,
}

/// A browser's processes: a process group led by the wrapper shell, and the cgroups made for
/// them. Killed on drop.
struct Tree {
    child: Child,
    pgid: i32,
    cgroups: Vec<Cgroup>,
    /// The wrapper's standard input: closing it makes the wrapper kill the group.
    stdin: std::sync::Mutex<Option<ChildStdin>>,
}

static TREES: AtomicU64 = AtomicU64::new(0);

impl Tree {
    fn spawn(
        binary: &Path,
        args: &[String],
        memory_limit: u64,
        cgroup: bool,
    ) -> Result<(Self, tokio::process::ChildStderr), RenderError> {
        let name = format!("{}{}-{}", cgroup_prefix(), std::process::id(), TREES.fetch_add(1, Ordering::Relaxed));
        let cgroups = if cgroup { make_cgroups(&name, memory_limit) } else { Vec::new() };
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c").arg(WRAPPER).arg("sh");
        cmd.args(cgroups.iter().map(|c| &c.dir));
        cmd.arg("--").arg(binary).args(args);
        // The wrapper leads a process group of its own: one signal reaches every process of the
        // browser (crashpad's handlers excepted, which leave it and exit with the browser).
        cmd.process_group(0)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                remove_cgroups(cgroups.iter().map(|c| c.dir.clone()).collect());
                return Err(RenderError::Start(format!("{}: {e}", binary.display())));
            }
        };
        let pgid = child.id().and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
        let stdin = child.stdin.take();
        let stderr = child.stderr.take();
        let tree = Self { child, pgid, cgroups, stdin: std::sync::Mutex::new(stdin) };
        let stderr = stderr.ok_or_else(|| RenderError::Start("no stderr".into()))?;
        Ok((tree, stderr))
    }

    fn hard_cap(&self) -> bool {
        self.cgroups.iter().any(|c| c.memory)
    }

    fn describe(&self, options: &Options) -> String {
        let mut parts: Vec<String> = self
            .cgroups
            .iter()
            .map(|c| {
                let v = if c.v2 { "v2" } else { "v1" };
                let cap = if c.memory {
                    format!(", memory capped at {} MiB", options.memory_limit >> 20)
                } else {
                    String::new()
                };
                format!("cgroup {v} {}{cap}", c.dir.display())
            })
            .collect();
        parts.push(format!("process group {}", self.pgid));
        if !self.hard_cap() {
            parts.push(format!("resident memory watched, {} MiB", options.memory_limit >> 20));
        }
        parts.join("; ")
    }

    /// The live processes of the browser: its process group's and its cgroups'.
    fn pids(&self) -> Vec<u32> {
        let mut pids = group_pids(self.pgid);
        for c in &self.cgroups {
            for pid in cgroup_pids(&c.dir) {
                if !pids.contains(&pid) && is_live(pid) {
                    pids.push(pid);
                }
            }
        }
        pids.sort_unstable();
        pids
    }

    /// A memory figure of the capping cgroup: its v2 file, or its v1 one.
    fn memory(&self, v2: &str, v1: &str) -> Option<u64> {
        let c = self.cgroups.iter().find(|c| c.memory)?;
        let text = std::fs::read_to_string(c.dir.join(if c.v2 { v2 } else { v1 })).ok()?;
        text.trim().parse().ok()
    }

    /// How many processes the kernel killed for the cgroup's memory cap.
    fn oom_kills(&self) -> u64 {
        let count = |text: String| {
            text.lines()
                .find_map(|l| l.strip_prefix("oom_kill "))
                .and_then(|n| n.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        self.cgroups
            .iter()
            .filter(|c| c.memory)
            .map(|c| {
                let file = if c.v2 { "memory.events" } else { "memory.oom_control" };
                std::fs::read_to_string(c.dir.join(file)).map(count).unwrap_or(0)
            })
            .sum()
    }

    /// Kills every process of the browser, now. Idempotent.
    fn kill(&self) {
        // The wrapper's own way, should the signals below miss it.
        self.stdin.lock().expect("stdin lock").take();
        for c in self.cgroups.iter().filter(|c| c.v2) {
            let _ = std::fs::write(c.dir.join("cgroup.kill"), "1");
        }
        if let Some(pgid) = rustix::process::Pid::from_raw(self.pgid) {
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
        // A v1 cgroup has no cgroup.kill: its processes one by one (none forks once killed).
        for c in self.cgroups.iter().filter(|c| !c.v2) {
            for pid in cgroup_pids(&c.dir) {
                if let Some(p) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) {
                    let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
                }
            }
        }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        self.kill();
        let _ = self.child.start_kill();
        remove_cgroups(self.cgroups.iter().map(|c| c.dir.clone()).collect());
    }
}

/// Removes the cgroups once their processes have exited (a killed process takes a moment),
/// from a thread: a drop does not wait for it.
fn remove_cgroups(dirs: Vec<PathBuf>) {
    if dirs.is_empty() {
        return;
    }
    std::thread::spawn(move || {
        for _ in 0..100 {
            if dirs.iter().all(|d| std::fs::remove_dir(d).is_ok() || !d.exists()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        tracing::warn!(?dirs, "a browser's cgroup could not be removed");
    });
}

/// Makes the cgroups for one browser, where this process may: a child of its own cgroup v2
/// (for `cgroup.kill`, and for `memory.max` where the memory controller is enabled there), and
/// when v2 has no memory controller, a child of its own cgroup v1 `memory` hierarchy (for
/// `memory.limit_in_bytes`; a hybrid host, this machine's). None where /sys/fs/cgroup is
/// read-only (Lambda, most containers): the process group and the memory watch do then.
fn make_cgroups(name: &str, limit: u64) -> Vec<Cgroup> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mut out = Vec::new();
    let dir_of = |fstype: &str, controller: Option<&str>| cgroup_dir(&mountinfo, &own, fstype, controller);
    if let Some(parent) = dir_of("cgroup2", None) {
        sweep(&parent);
        let dir = parent.join(name);
        if std::fs::create_dir(&dir).is_ok() {
            if !dir.join("memory.max").exists() {
                // Enabling the controller for our children fails where our cgroup holds
                // processes and is not the root: then v1, or the watch.
                let _ = std::fs::write(parent.join("cgroup.subtree_control"), "+memory");
            }
            let memory = std::fs::write(dir.join("memory.max"), limit.to_string()).is_ok();
            if memory {
                // No swap: the cap is on memory, not on memory and swap.
                let _ = std::fs::write(dir.join("memory.swap.max"), "0");
            }
            out.push(Cgroup { dir, v2: true, memory });
        }
    }
    if !out.iter().any(|c| c.memory) {
        if let Some(parent) = dir_of("cgroup", Some("memory")) {
            sweep(&parent);
            let dir = parent.join(name);
            if std::fs::create_dir(&dir).is_ok() {
                if std::fs::write(dir.join("memory.limit_in_bytes"), limit.to_string()).is_ok() {
                    let _ = std::fs::write(dir.join("memory.memsw.limit_in_bytes"), limit.to_string());
                    out.push(Cgroup { dir, v2: false, memory: true });
                } else {
                    let _ = std::fs::remove_dir(&dir);
                }
            }
        }
    }
    out
}

/// The directory of this process's cgroup in a hierarchy (of file system type `fstype`, with
/// `controller` for v1): its mount point in `mountinfo`, and its path in `own` (this process's
/// /proc/self/cgroup) relative to the mount's root.
fn cgroup_dir(mountinfo: &str, own: &str, fstype: &str, controller: Option<&str>) -> Option<PathBuf> {
    let (root, mount) = mountinfo.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        let f: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        let fits = r.first() == Some(&fstype)
            && controller.is_none_or(|c| r.get(2).is_some_and(|o| o.split(',').any(|o| o == c)));
        fits.then(|| (f.get(3).copied().unwrap_or("/"), f.get(4).copied().unwrap_or_default()))
    })?;
    let path = own.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        let fits = match controller {
            None => controllers.is_empty(),
            Some(c) => controllers.split(',').any(|x| x == c),
        };
        fits.then_some(path)
    })?;
    let rel = path.strip_prefix(root).unwrap_or(path).trim_start_matches('/');
    let dir = Path::new(mount).join(rel);
    // The wrapper shell splits its list of cgroups on white space.
    (!dir.to_string_lossy().contains(char::is_whitespace)).then_some(dir)
}

/// The names of the cgroups made here start with this, then the pid of the process that made
/// them. The pid namespace is in the prefix: a cgroup hierarchy may be shared by containers
/// whose pids this process cannot see, and whose cgroups are not its to sweep.
fn cgroup_prefix() -> String {
    let ns = std::fs::read_link("/proc/self/ns/pid").ok().map(|l| l.to_string_lossy().into_owned()).unwrap_or_default();
    let ns: String = ns.chars().filter(char::is_ascii_digit).collect();
    format!("code2des-chromium-{ns}-")
}

/// Removes the cgroups that a process of this pid namespace, now gone, made and could not
/// remove (it was killed, or exited without dropping its renderer): the wrapper shell killed
/// their processes, but a process cannot remove the cgroup it is in, and nothing ran after.
/// Only empty ones: removing a cgroup that still holds a process fails.
fn sweep(parent: &Path) {
    let prefix = cgroup_prefix();
    let Ok(dir) = std::fs::read_dir(parent) else { return };
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(owner) = name.to_str().and_then(|n| n.strip_prefix(prefix.as_str())) else { continue };
        let Some(pid) = owner.split('-').next().and_then(|p| p.parse::<u32>().ok()) else { continue };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// Where no cgroup caps the memory: every 100 ms, the memory of the browser's process group,
/// summed; over the limit, the largest renderer process is killed (its page crashes and fails
/// as too large). Proportional (PSS), not resident, sizes: Chromium's processes share most of
/// their pages (one binary, forked zygotes), and resident sizes summed count them ten times
/// over (an idle browser: 900 MB resident, about 250 MB proportional).
async fn watch_memory(pgid: i32, limit: u64, over: Arc<AtomicBool>) {
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let pids = group_pids(pgid);
        if pids.is_empty() {
            return;
        }
        let sizes: Vec<(u32, u64)> = pids.iter().map(|p| (*p, pss(*p))).collect();
        if sizes.iter().map(|(_, s)| s).sum::<u64>() <= limit {
            continue;
        }
        let renderer = sizes
            .iter()
            .filter(|(p, _)| {
                // Chromium rewrites its helpers' command lines into one string (its process
                // titles): the flag is looked for in it, not as an argument of its own.
                std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains("--type=renderer"))
            })
            .max_by_key(|(_, s)| *s);
        if let Some(p) = renderer.and_then(|(p, _)| i32::try_from(*p).ok()).and_then(rustix::process::Pid::from_raw) {
            tracing::warn!(
                pid = p.as_raw_nonzero().get(),
                limit,
                "the browser is over its memory limit: its largest page is killed"
            );
            over.store(true, Ordering::Relaxed);
            let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
        }
    }
}

/// `(state, process group)` of a process, from `/proc/PID/stat`.
fn stat(pid: u32) -> Option<(char, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold anything: the fields follow the last ')'.
    let (_, rest) = text.rsplit_once(')')?;
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    let pgrp = f.nth(1)?.parse().ok()?;
    Some((state, pgrp))
}

fn is_live(pid: u32) -> bool {
    stat(pid).is_some_and(|(s, _)| s != 'Z' && s != 'X')
}

/// The live processes of a process group.
fn group_pids(pgid: i32) -> Vec<u32> {
    if pgid <= 0 {
        return Vec::new();
    }
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|p| stat(*p).is_some_and(|(s, g)| g == pgid && s != 'Z' && s != 'X'))
        .collect()
}

fn cgroup_pids(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// A process's proportional set size in bytes (`Pss` of `smaps_rollup`; its resident size
/// where the kernel has no `smaps_rollup`, before 4.14).
fn pss(pid: u32) -> u64 {
    let field = |file: &str, name: &str| {
        let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).ok()?;
        let kb = text.lines().find_map(|l| l.strip_prefix(name))?.trim().trim_end_matches("kB").trim().parse::<u64>();
        kb.ok().map(|kb| kb * 1024)
    };
    field("smaps_rollup", "Pss:").or_else(|| field("status", "VmRSS:")).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A style of `CSS.getMatchedStylesForNode`'s answer: `(name, value, important)`.
    fn style(props: &[(&str, &str, bool)]) -> Value {
        let props: Vec<Value> = props.iter().map(|(n, v, i)| json!({"name": n, "value": v, "important": i})).collect();
        json!({ "cssProperties": props })
    }

    #[test]
    fn the_cascade_s_value_is_the_inline_style_s_then_the_last_rule_s_and_important_first() {
        let rule = |props: &[(&str, &str, bool)]| json!({"rule": {"style": style(props)}});
        let matched = json!({
            "inlineStyle": style(&[]),
            "matchedCSSRules": [rule(&[("width", "50%", false)]), rule(&[("width", "100%", false), ("width", "20px", false)])],
            "attributesStyle": style(&[("width", "30%", false)]),
        });
        // The last rule wins, and in it the last declaration.
        assert_eq!(cascaded(&matched, "width").as_deref(), Some("20px"));
        let mut inline = matched.clone();
        inline["inlineStyle"] = style(&[("width", "100%", false)]);
        assert_eq!(cascaded(&inline, "width").as_deref(), Some("100%"));
        let mut important = inline.clone();
        important["matchedCSSRules"][0] = rule(&[("width", "75%", true)]);
        assert_eq!(cascaded(&important, "width").as_deref(), Some("75%"));
        // Only the presentational attribute: `<td width="30%">`.
        let attribute = json!({"matchedCSSRules": [], "attributesStyle": style(&[("width", "30%", false)])});
        assert_eq!(cascaded(&attribute, "width").as_deref(), Some("30%"));
        assert_eq!(cascaded(&attribute, "height"), None);
        // A declaration turned off, or one Chromium could not parse, is none.
        let off = json!({"inlineStyle": {"cssProperties": [{"name": "width", "value": "10%", "disabled": true}]}});
        assert_eq!(cascaded(&off, "width"), None);
    }
}
