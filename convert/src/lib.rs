//! Converts a captured web page into the Code2Des document (issue 30): the capture (HTML or
//! MHTML, self-contained) is rendered in headless Chromium with scripts off and no network but
//! `data:`, one `DOMSnapshot.captureSnapshot` is taken, and its layout, styles, text boxes and
//! paint order become Figma nodes: frames, TEXT, image fills, SVG, auto layout where exact.
//!
//! Start one [`Renderer`] per process and convert many captures with it: each gets its own
//! browser context and page, and a hard time limit.

pub mod capture;
mod cdp;
mod color;
pub mod convert;
pub mod doc;
mod names;
pub mod render;
mod stack;
pub mod viewports;
mod warn;

use std::time::{Duration, Instant};

pub use capture::{Capture, CaptureError};
pub use convert::MalformedSnapshot;
pub use doc::{ArtifactWarning, Image, Node, WarningCode, MAX_WARNINGS, WARNING_CODES};
pub use render::{Options, RenderError, Renderer};
pub use viewports::{convert_viewports, frame_name, VIEWPORT_GAP};

/// Why a capture could not be converted; the message is for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    #[error(transparent)]
    Capture(#[from] CaptureError),
    #[error(transparent)]
    Render(#[from] RenderError),
    #[error(transparent)]
    Snapshot(#[from] MalformedSnapshot),
    #[error("the page has no content to convert")]
    NoContent,
}

/// How long each step took.
#[derive(Debug, Clone, Default)]
pub struct Timings {
    pub load: Duration,
    /// Chromium: parse, layout, snapshot (and crops).
    pub render: Duration,
    pub convert: Duration,
}

/// A converted page.
#[derive(Debug, Clone)]
pub struct Output {
    /// The document root, ready for the artifact's `document`.
    pub document: Node,
    pub images: Vec<Image>,
    /// Each located at its node (`indices`) where one was made.
    pub warnings: Vec<ArtifactWarning>,
    pub title: String,
    pub width: u32,
    pub height: f64,
    /// Requests the page made that were refused (anything but `data:`).
    pub blocked_requests: usize,
    /// Chromium's own picture of the page, when asked for (the fidelity benchmark).
    pub screenshot: Option<Vec<u8>>,
    pub timings: Timings,
}

/// Converts one capture with a running renderer, laid out at the capture's own width (its
/// `<meta name="viewport" content="width=N">`, else 1440).
pub async fn convert(renderer: &Renderer, bytes: &[u8], screenshot: bool) -> Result<Output, ConvertError> {
    convert_at(renderer, bytes, None, screenshot).await
}

/// Converts one capture laid out at `width` (`None`: the capture's own width).
pub async fn convert_at(
    renderer: &Renderer,
    bytes: &[u8],
    width: Option<u32>,
    screenshot: bool,
) -> Result<Output, ConvertError> {
    let t0 = Instant::now();
    let mut capture = capture::load(bytes)?;
    if let Some(w) = width {
        capture.width = w;
    }
    let load = t0.elapsed();
    let t1 = Instant::now();
    let mut convert_time = Duration::ZERO;
    let (rendered, converted) = renderer
        .render(&capture.html, capture.width, screenshot, |snap, height, fonts| {
            let t = Instant::now();
            let out = tracing::info_span!("convert")
                .in_scope(|| convert::convert(snap, capture.width, height, fonts, capture.address.as_deref()));
            convert_time = t.elapsed();
            match out {
                Ok((c, crops)) => {
                    let rects = crops.iter().map(|c| c.rect).collect();
                    (Ok((c, crops)), rects)
                }
                Err(e) => (Err(e), Vec::new()),
            }
        })
        .await?;
    let render = t1.elapsed().saturating_sub(convert_time);
    let (mut converted, crops) = converted?;
    for (crop, png) in crops.iter().zip(rendered.crops) {
        if let Some(img) = converted.images.iter_mut().find(|i| i.name == crop.name) {
            img.bytes = png;
        }
    }
    Ok(Output {
        document: converted.document,
        images: converted.images,
        warnings: converted.warnings,
        title: converted.title,
        width: capture.width,
        height: rendered.height,
        blocked_requests: rendered.blocked_requests,
        screenshot: rendered.screenshot,
        timings: Timings { load, render, convert: convert_time },
    })
}
