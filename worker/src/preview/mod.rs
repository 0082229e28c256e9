//! The preview (issue 40 item 2): a result's document drawn in Rust as the plugin would build
//! it, with resvg and tiny-skia, fonts through fontdb. `code2des-worker preview RESULT.json
//! --out page.png` draws one; the worker puts a small one (small.rs) in every artifact it
//! completes, as the image of kind `preview`.
//!
//! read.rs reads a result, svg.rs and text.rs write its document as SVG (a port of the
//! fidelity benchmark's writer, scripts/fidelity/svg.mjs), wrap.rs breaks paragraphs where
//! Chromium broke them, fonts.rs finds the fonts, small.rs makes the small picture.

pub mod fonts;
pub mod read;
pub mod small;
mod svg;
mod text;
pub mod wrap;

use std::collections::HashMap;

use resvg::{tiny_skia, usvg};
use serde_json::Value;

/// One image of the result: its type and bytes.
#[derive(Debug, Clone)]
pub struct Image {
    pub mime: String,
    pub bytes: Vec<u8>,
}

/// A result read to draw: the document, its images by `imageRef`, the page's size (the
/// document root's), and what could not be read.
#[derive(Debug)]
pub struct Page {
    pub document: Value,
    pub images: HashMap<String, Image>,
    pub width: f64,
    pub height: f64,
    pub warnings: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum PreviewError {
    /// The input is not a result that can be drawn.
    #[error("{0}")]
    Input(String),
    /// The drawing failed (too large a page, an SVG resvg refused).
    #[error("{0}")]
    Render(String),
}

/// The most pixels a full-size picture has (a 1440 px wide page 44 000 px tall): 256 MB of
/// buffer, where a larger one should be drawn `--small`.
pub const MAX_PIXELS: u64 = 64 * 1024 * 1024;

/// The document as SVG text, and what it could not draw as Figma would.
pub fn svg(page: &Page) -> (String, Vec<String>) {
    let db = fonts::system();
    let (text, mut warnings) = svg::Writer::new(&page.images, &db).write(&page.document, page.width, page.height);
    warnings.splice(0..0, page.warnings.iter().cloned());
    (text, warnings)
}

/// The lines a TEXT node is drawn in: broken at its width when it is a fixed-width box (as
/// the page's paragraph was broken), else at its "\n".
pub fn text_lines(node: &Value) -> Vec<String> {
    let db = fonts::system();
    let images = HashMap::new();
    svg::Writer::new(&images, &db).line_texts(node)
}

/// The SVG parsed by usvg with the system's fonts (Inter where a family is missing). Nothing is
/// read from disk: an `<image>` is drawn only from a `data:` URL.
pub fn tree(svg: &str) -> Result<usvg::Tree, PreviewError> {
    let mut opt = usvg::Options { font_family: fonts::FALLBACK_FAMILY.to_owned(), ..usvg::Options::default() };
    opt.fontdb = fonts::system();
    opt.image_href_resolver.resolve_string = Box::new(|_, _| None);
    usvg::Tree::from_str(svg, &opt).map_err(|e| PreviewError::Render(format!("the SVG: {e}")))
}

/// The tree drawn at `scale` into a `w`×`h` picture over white, as RGB bytes.
pub fn draw(tree: &usvg::Tree, w: u32, h: u32, scale: f32) -> Result<Vec<u8>, PreviewError> {
    if u64::from(w) * u64::from(h) > MAX_PIXELS {
        return Err(PreviewError::Render(format!(
            "a {w}×{h} px picture is over the {MAX_PIXELS} pixels drawn at full size: draw it --small"
        )));
    }
    let mut pixmap = tiny_skia::Pixmap::new(w, h)
        .ok_or_else(|| PreviewError::Render(format!("cannot make a {w}×{h} px picture")))?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(tree, tiny_skia::Transform::from_scale(scale, scale), &mut pixmap.as_mut());
    Ok(small::over_white(&pixmap))
}

/// The page at full size as PNG bytes.
pub fn full(tree: &usvg::Tree) -> Result<Vec<u8>, PreviewError> {
    let size = tree.size().to_int_size();
    let rgb = draw(tree, size.width(), size.height(), 1.0)?;
    small::encode_rgb(&rgb, size.width(), size.height())
}

/// The small preview of a page (what the worker puts in the artifact).
pub fn small_of(page: &Page) -> Result<Vec<u8>, PreviewError> {
    let (text, _) = svg(page);
    small::small(&tree(&text)?)
}

#[cfg(test)]
mod tests;
