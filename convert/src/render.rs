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

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::cdp::Cdp;

/// Why rendering failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    #[error("the renderer could not start: {0}")]
    Start(String),
    #[error("the page did not load and lay out within {} s", .0.as_secs_f64())]
    Timeout(Duration),
    #[error("the renderer failed: {0}")]
    Protocol(String),
}

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
}

impl Default for Options {
    fn default() -> Self {
        Self { binary: None, page_timeout: Duration::from_secs(20), viewport_height: 900 }
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

/// The computed styles the snapshot asks for, in this order (`Styles` reads them by index).
pub const STYLES: &[&str] = &[
    "display",
    "visibility",
    "opacity",
    "overflow-x",
    "overflow-y",
    "position",
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
    "text-transform",
    "flex-direction",
    "flex-wrap",
    "justify-content",
    "align-items",
    "row-gap",
    "column-gap",
    "padding-top",
    "padding-right",
    "padding-bottom",
    "padding-left",
    "object-fit",
    "transform",
    "white-space",
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

pub struct Renderer {
    cdp: Cdp,
    child: Child,
    // Held for its Drop: the profile directory goes with the renderer.
    _profile: tempfile::TempDir,
    options: Options,
    /// The page time limit in ms: [`Options::page_timeout`] until [`Renderer::set_page_timeout`].
    page_timeout_ms: AtomicU64,
}

impl Renderer {
    /// Starts the browser (about a second) and connects to it.
    pub async fn start(options: Options) -> Result<Self, RenderError> {
        let binary = match &options.binary {
            Some(b) => b.clone(),
            None => find_binary().ok_or_else(|| {
                RenderError::Start("no Chromium found (set CHROMIUM_PATH, or install the chromium package)".into())
            })?,
        };
        let profile = tempfile::tempdir().map_err(|e| RenderError::Start(format!("profile directory: {e}")))?;
        let mut child = Command::new(&binary)
            .args([
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
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| RenderError::Start(format!("{}: {e}", binary.display())))?;
        let stderr = child.stderr.take().ok_or_else(|| RenderError::Start("no stderr".into()))?;
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
        // Keep draining stderr, or Chromium blocks once the pipe fills.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let cdp = Cdp::connect(&url).await.map_err(RenderError::Start)?;
        let page_timeout_ms = AtomicU64::new(options.page_timeout.as_millis() as u64);
        Ok(Self { cdp, child, _profile: profile, options, page_timeout_ms })
    }

    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Changes the time limit of the pages rendered from now on.
    pub fn set_page_timeout(&self, limit: Duration) {
        self.page_timeout_ms.store(limit.as_millis() as u64, Ordering::Relaxed);
    }

    /// Renders one HTML document at `width` and snapshots it, within the page time limit.
    /// `plan` sees the snapshot while the page is still open, and answers its own result and
    /// the page rectangles to crop as PNG (images whose format Figma does not take);
    /// `screenshot` takes the whole page too.
    pub async fn render<T>(
        &self,
        html: &str,
        width: u32,
        screenshot: bool,
        plan: impl FnOnce(&Value, f64, &[(String, String)]) -> (T, Vec<[f64; 4]>),
    ) -> Result<(Rendered, T), RenderError> {
        let limit = Duration::from_millis(self.page_timeout_ms.load(Ordering::Relaxed));
        let started = tokio::time::Instant::now();
        let context = tokio::time::timeout(
            limit,
            self.cdp.call(None, "Target.createBrowserContext", json!({"disposeOnDetach": true})),
        )
        .await
        .map_err(|_| RenderError::Timeout(limit))?
        .map_err(RenderError::Protocol)?;
        let context = context["browserContextId"].as_str().unwrap_or_default().to_owned();
        let out =
            tokio::time::timeout_at(started + limit, self.render_in(&context, html, width, screenshot, plan)).await;
        // Disposing of the context closes its page, whatever state it is in. After a timeout
        // the browser may be slow to answer (a renderer busy with a huge page): the caller
        // hears of the failure at the limit, and the close goes on behind it.
        let cdp = self.cdp.clone();
        let dispose = async move {
            let params = json!({"browserContextId": context});
            let _ =
                tokio::time::timeout(Duration::from_secs(10), cdp.call(None, "Target.disposeBrowserContext", params))
                    .await;
        };
        match out {
            Ok(r) => {
                dispose.await;
                r
            }
            Err(_) => {
                tokio::spawn(dispose);
                Err(RenderError::Timeout(limit))
            }
        }
    }

    async fn render_in<T>(
        &self,
        context: &str,
        html: &str,
        width: u32,
        screenshot: bool,
        plan: impl FnOnce(&Value, f64, &[(String, String)]) -> (T, Vec<[f64; 4]>),
    ) -> Result<(Rendered, T), RenderError> {
        let p = RenderError::Protocol;
        let target = self
            .cdp
            .call(None, "Target.createTarget", json!({"url": "about:blank", "browserContextId": context}))
            .await
            .map_err(p)?;
        let attached = self
            .cdp
            .call(None, "Target.attachToTarget", json!({"targetId": target["targetId"], "flatten": true}))
            .await
            .map_err(p)?;
        let session = attached["sessionId"].as_str().unwrap_or_default().to_owned();
        let s = Some(session.as_str());
        let mut events = self.cdp.events(&session);
        let blocked = Arc::new(AtomicUsize::new(0));
        let result = async {
            self.cdp.call(s, "Emulation.setScriptExecutionDisabled", json!({"value": true})).await.map_err(p)?;
            self.cdp.call(s, "Fetch.enable", json!({"patterns": [{"urlPattern": "*"}]})).await.map_err(p)?;
            self.cdp
                .call(
                    s,
                    "Emulation.setDeviceMetricsOverride",
                    json!({"width": width, "height": self.options.viewport_height, "deviceScaleFactor": 1, "mobile": false}),
                )
                .await
                .map_err(p)?;
            self.cdp.call(s, "Page.enable", json!({})).await.map_err(p)?;
            let tree = self.cdp.call(s, "Page.getFrameTree", json!({})).await.map_err(p)?;
            let frame = tree["frameTree"]["frame"]["id"].clone();
            self.cdp.call(s, "Page.setDocumentContent", json!({"frameId": frame, "html": html})).await.map_err(p)?;
            // Answer paused requests until the load event: data: goes on, everything else fails.
            loop {
                let Some((method, params)) = events.recv().await else {
                    return Err(RenderError::Protocol("the page went away".into()));
                };
                match method.as_str() {
                    "Fetch.requestPaused" => self.answer_request(&session, &params, &blocked),
                    "Page.loadEventFired" => break,
                    _ => {}
                }
            }
            // Requests after the load (lazy images, fonts first used late) are answered too.
            let cdp = self.cdp.clone();
            let (session2, blocked2) = (session.clone(), blocked.clone());
            let handler = tokio::spawn(async move {
                while let Some((method, params)) = events.recv().await {
                    if method == "Fetch.requestPaused" {
                        answer(&cdp, &session2, &params, &blocked2);
                    }
                }
            });
            let metrics = self.cdp.call(s, "Page.getLayoutMetrics", json!({})).await.map_err(p)?;
            let height = metrics["cssContentSize"]["height"].as_f64().unwrap_or(0.0);
            let snapshot = self
                .cdp
                .call(
                    s,
                    "DOMSnapshot.captureSnapshot",
                    json!({"computedStyles": STYLES, "includePaintOrder": true, "includeDOMRects": true}),
                )
                .await
                .map_err(p)?;
            let platform_fonts = self.platform_fonts(s, &snapshot).await;
            let (planned, rects) = plan(&snapshot, height, &platform_fonts);
            let mut crops = Vec::new();
            for rect in rects {
                crops.push(self.png(s, rect).await?);
            }
            let screenshot = if screenshot {
                Some(self.png(s, [0.0, 0.0, f64::from(width), height]).await?)
            } else {
                None
            };
            handler.abort();
            Ok((Rendered {
                snapshot,
                width,
                height,
                blocked_requests: blocked.load(Ordering::Relaxed),
                platform_fonts,
                screenshot,
                crops,
            }, planned))
        }
        .await;
        self.cdp.forget(&session);
        result
    }

    fn answer_request(&self, session: &str, params: &Value, blocked: &AtomicUsize) {
        answer(&self.cdp, session, params, blocked);
    }

    /// A PNG of a rectangle of the page, beyond the viewport if need be.
    async fn png(&self, s: Option<&str>, [x, y, w, h]: [f64; 4]) -> Result<Vec<u8>, RenderError> {
        use base64::Engine as _;
        let shot = self
            .cdp
            .call(
                s,
                "Page.captureScreenshot",
                json!({"format": "png", "captureBeyondViewport": true,
                       "clip": {"x": x, "y": y, "width": w.max(1.0), "height": h.max(1.0), "scale": 1}}),
            )
            .await
            .map_err(RenderError::Protocol)?;
        base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap_or_default())
            .map_err(|e| RenderError::Protocol(format!("screenshot: {e}")))
    }

    /// The font Chromium drew each distinct `font-family` list with, asked of one text node's
    /// parent per list: a handful of calls per page, not one per run.
    async fn platform_fonts(&self, s: Option<&str>, snapshot: &Value) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let Some(doc) = snapshot["documents"].get(0) else { return out };
        let strings = snapshot["strings"].as_array().cloned().unwrap_or_default();
        let text_of = |i: &Value| i.as_i64().and_then(|i| strings.get(i as usize)).and_then(Value::as_str);
        let layout = &doc["layout"];
        let styles = layout["styles"].as_array().cloned().unwrap_or_default();
        let node_index = layout["nodeIndex"].as_array().cloned().unwrap_or_default();
        let parents = doc["nodes"]["parentIndex"].as_array().cloned().unwrap_or_default();
        let types = doc["nodes"]["nodeType"].as_array().cloned().unwrap_or_default();
        let backend = doc["nodes"]["backendNodeId"].as_array().cloned().unwrap_or_default();
        let fam = STYLES.iter().position(|s| *s == "font-family").unwrap_or(0);
        let mut seen = std::collections::HashSet::new();
        let mut wanted = Vec::new();
        for (li, n) in node_index.iter().enumerate() {
            let Some(n) = n.as_u64().map(|n| n as usize) else { continue };
            if types.get(n).and_then(Value::as_u64) != Some(3) {
                continue;
            }
            let Some(family) = styles.get(li).and_then(|s| s.get(fam)).and_then(text_of) else { continue };
            if seen.insert(family.to_owned()) {
                let parent = parents.get(n).and_then(Value::as_i64).unwrap_or(-1);
                if let Some(id) = usize::try_from(parent).ok().and_then(|p| backend.get(p)).and_then(Value::as_i64) {
                    wanted.push((family.to_owned(), id));
                }
            }
        }
        if wanted.is_empty() || self.cdp.call(s, "DOM.enable", json!({})).await.is_err() {
            return out;
        }
        let _ = self.cdp.call(s, "DOM.getDocument", json!({"depth": 0})).await;
        if self.cdp.call(s, "CSS.enable", json!({})).await.is_err() {
            return out;
        }
        let ids: Vec<i64> = wanted.iter().map(|(_, id)| *id).collect();
        let Ok(pushed) = self.cdp.call(s, "DOM.pushNodesByBackendIdsToFrontend", json!({"backendNodeIds": ids})).await
        else {
            return out;
        };
        let node_ids = pushed["nodeIds"].as_array().cloned().unwrap_or_default();
        for ((family, _), node) in wanted.iter().zip(node_ids) {
            let Ok(fonts) = self.cdp.call(s, "CSS.getPlatformFontsForNode", json!({"nodeId": node})).await else {
                continue;
            };
            // The family that drew the most glyphs.
            let best = fonts["fonts"]
                .as_array()
                .and_then(|f| f.iter().max_by_key(|f| f["glyphCount"].as_u64().unwrap_or(0)))
                .and_then(|f| f["familyName"].as_str());
            if let Some(b) = best {
                out.push((family.clone(), b.to_owned()));
            }
        }
        out
    }

    /// Stops the browser.
    pub async fn close(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(2), self.cdp.call(None, "Browser.close", json!({}))).await;
        let _ = tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await;
        let _ = self.child.kill().await;
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
