//! Images and the other replaced content: `<img>` (an image fill, or an SVG node), inline
//! `<svg>`, embedded content (canvas, video, iframe) kept as its box; `data:` URLs decoded and
//! judged, what Figma cannot take cropped from Chromium's rendering.

use base64::Engine as _;

use super::controls::{is_themed_toggle, themed_toggle};
use super::paint::{apply_paint, paints_something, BoxPaint};
use super::{key, round, Container, Crop, Ctx, Snapshot};
use crate::doc::{Image, Maker, Node, NodeType, Paint, ScaleMode, WarningCode};

/// Figma's `createImage` limit per side, and the artifact's per image.
const MAX_IMAGE_SIDE: usize = 4096;
const MAX_IMAGE_BYTES: usize = 3 * 1024 * 1024;

/// A decoded `data:` URL: its MIME type and bytes.
pub fn decode_data_url(url: &str) -> Option<(String, Vec<u8>)> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    let mime = meta.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let bytes = if meta.ends_with(";base64") {
        let clean: String = data.chars().filter(|c| !c.is_whitespace()).collect();
        base64::engine::general_purpose::STANDARD.decode(clean).ok()?
    } else {
        percent_decode(data)
    };
    Some((mime, bytes))
}

pub(super) fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if let Some(v) = b
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// Where an image's bytes come from.
pub(super) enum ImageSource {
    /// Figma takes these bytes as they are.
    Ready(&'static str, Vec<u8>),
    /// Chromium's rendering of the box, cropped from the page.
    Crop,
}

impl Ctx<'_, '_> {
    pub(super) fn add_image(&mut self, key: &str, mime: &'static str, bytes: Vec<u8>) -> String {
        if let Some(name) = self.by_url.get(key) {
            return name.clone();
        }
        let name = format!("image-{}", self.images.len() + 1);
        self.images.push(Image { name: name.clone(), mime, bytes });
        self.by_url.insert(key.to_owned(), name.clone());
        name
    }

    pub(super) fn crop(&mut self, rect: [f64; 4]) -> String {
        let name = format!("image-{}", self.images.len() + 1);
        // Filled in once the page is cropped.
        self.images.push(Image { name: name.clone(), mime: "image/png", bytes: Vec::new() });
        self.crops.push(Crop { name: name.clone(), rect });
        name
    }

    /// Judges a data: image: Figma-ready, or to crop from the page (with the warning why).
    pub(super) fn image_source(&mut self, url: &str, dom: usize, name: &str) -> Option<ImageSource> {
        let Some((mime, bytes)) = decode_data_url(url) else {
            self.warn(
                WarningCode::ImageUnavailable,
                "the image is not embedded in the capture (only data: URIs load)",
                dom,
                name,
            );
            return None;
        };
        let ready = match mime.as_str() {
            "image/png" => Some("image/png"),
            "image/jpeg" | "image/jpg" => Some("image/jpeg"),
            "image/gif" => Some("image/gif"),
            "image/svg+xml" => Some("image/svg+xml"),
            _ => None,
        };
        match ready {
            Some("image/svg+xml") => Some(ImageSource::Ready("image/svg+xml", bytes)),
            Some(m) => {
                let size = imagesize::blob_size(&bytes).ok();
                let too_big = bytes.len() > MAX_IMAGE_BYTES
                    || size.is_some_and(|s| s.width > MAX_IMAGE_SIDE || s.height > MAX_IMAGE_SIDE);
                if size.is_none() {
                    self.warn(
                        WarningCode::ImageConverted,
                        format!("{mime} bytes were unreadable; used the rendered pixels"),
                        dom,
                        name,
                    );
                    Some(ImageSource::Crop)
                } else if too_big {
                    self.warn(
                        WarningCode::ImageTooLarge,
                        "the image is over 4096 px a side or 3 MB; used the rendered pixels at its displayed size",
                        dom,
                        name,
                    );
                    Some(ImageSource::Crop)
                } else {
                    Some(ImageSource::Ready(m, bytes))
                }
            }
            None => {
                self.warn(WarningCode::ImageConverted, format!("{mime} converted to PNG"), dom, name);
                Some(ImageSource::Crop)
            }
        }
    }
}

/// Replaced content (images, SVG, themed controls, embedded content), drawn in `into`; answers
/// the paint back for any other element.
pub(super) fn replaced(
    cx: &mut Ctx<'_, '_>,
    n: usize,
    l: usize,
    node: Node,
    paint: BoxPaint,
    into: &mut Container,
) -> Option<BoxPaint> {
    let s = cx.s;
    let tag = s.tag(n);
    let visible = s.style(l, "visibility") != "hidden";
    let made = match tag.as_str() {
        "img" => visible.then(|| image(cx, n, l, node, paint)),
        "svg" => visible.then(|| inline_svg(cx, n, l, node, paint)),
        "input" if is_themed_toggle(s, n, l) => visible.then(|| themed_toggle(cx, l, node)),
        "canvas" | "video" | "iframe" | "object" | "embed" => Some(embedded(cx, n, &tag, node, paint)),
        _ => return Some(paint),
    };
    if let Some(node) = made {
        cx.count += 1;
        into.nodes.push((key(s, n, l), node));
    }
    None
}

/// An inline `<svg>`: an SVG node of its markup.
fn inline_svg(cx: &mut Ctx<'_, '_>, n: usize, l: usize, mut node: Node, paint: BoxPaint) -> Node {
    let s = cx.s;
    let markup = svg_markup(s, n, s.l_bounds[l]);
    let r = cx.add_image(&markup, "image/svg+xml", markup.clone().into_bytes());
    node.kind = NodeType::SVG;
    node.image_ref = Some(r);
    boxed_svg(cx, l, node, paint)
}

/// Embedded content (`tag`: canvas, video, iframe, object, embed): its box is kept, with its
/// paint; its content is warned of.
fn embedded(cx: &mut Ctx<'_, '_>, n: usize, tag: &str, mut node: Node, paint: BoxPaint) -> Node {
    let code = match tag {
        "canvas" => WarningCode::CanvasSkipped,
        "video" => WarningCode::VideoSkipped,
        _ => WarningCode::IframeSkipped,
    };
    cx.warn(code, format!("<{tag}> content is not converted; its box is kept"), n, &node.name);
    node.kind = NodeType::RECTANGLE;
    apply_paint(&mut node, paint);
    node
}

/// An `<img>`: an image fill of its box (with the box's paint below it), or an SVG node.
pub(super) fn image(cx: &mut Ctx<'_, '_>, n: usize, l: usize, mut node: Node, paint: BoxPaint) -> Node {
    let s = cx.s;
    let url = s.current_src.get(&n).copied().or_else(|| s.attr(n, "src")).unwrap_or("");
    let mut content = None;
    match cx.image_source(url, n, &node.name) {
        Some(ImageSource::Ready("image/svg+xml", bytes)) => {
            let r = cx.add_image(url, "image/svg+xml", bytes);
            node.kind = NodeType::SVG;
            node.image_ref = Some(r);
            return boxed_svg(cx, l, node, paint);
        }
        Some(ImageSource::Ready(m, bytes)) => {
            let r = cx.add_image(url, m, bytes);
            let mode = match s.style(l, "object-fit") {
                "contain" | "scale-down" => ScaleMode::FIT,
                _ => ScaleMode::FILL,
            };
            content = Some(Paint::Image { image_ref: r, scale_mode: Some(mode), opacity: None });
        }
        Some(ImageSource::Crop) => {
            let r = cx.crop(s.l_bounds[l]);
            content = Some(Paint::Image { image_ref: r, scale_mode: Some(ScaleMode::FILL), opacity: None });
        }
        None => {}
    }
    node.kind = NodeType::RECTANGLE;
    apply_paint(&mut node, paint);
    if let Some(c) = content {
        node.fills.get_or_insert_with(Vec::new).push(c);
    }
    node
}

/// An SVG node whose element paints a box (corners, border, shadow, background) or clips: a
/// frame with that paint, clipping, holding the SVG in its content box (Figma's SVG node has
/// no corners of its own).
fn boxed_svg(cx: &mut Ctx<'_, '_>, l: usize, svg: Node, paint: BoxPaint) -> Node {
    let s = cx.s;
    if !paints_something(&paint) && paint.radii.iter().all(|r| *r == 0.0) {
        return svg;
    }
    let inset = |side: &str| s.px(l, &format!("border-{side}-width")) + s.px(l, &format!("padding-{side}"));
    let (top, right, bottom, left) = (inset("top"), inset("right"), inset("bottom"), inset("left"));
    let mut frame = Node {
        kind: NodeType::FRAME,
        name: svg.name.clone(),
        x: svg.x,
        y: svg.y,
        width: svg.width,
        height: svg.height,
        clips_content: Some(true),
        maker: svg.maker,
        ..Node::default()
    };
    apply_paint(&mut frame, paint);
    let inner = Node {
        x: round(left),
        y: round(top),
        width: round((svg.width - left - right).max(0.0)),
        height: round((svg.height - top - bottom).max(0.0)),
        maker: Maker { flex_item: false, ..svg.maker },
        ..svg
    };
    cx.count += 1;
    frame.children = Some(vec![inner]);
    frame
}

/// An inline `<svg>` element as standalone markup, from the snapshot's nodes.
fn svg_markup(s: &Snapshot<'_>, n: usize, b: [f64; 4]) -> String {
    fn esc(v: &str) -> String {
        v.replace('&', "&amp;").replace('<', "&lt;").replace('"', "&quot;")
    }
    fn write(s: &Snapshot<'_>, n: usize, out: &mut String, root: bool, b: [f64; 4]) {
        match s.node_type[n] {
            3 => out.push_str(&esc(s.node_value[n].unwrap_or(""))),
            1 => {
                let tag = s.node_name[n];
                out.push('<');
                out.push_str(tag);
                let mut has_ns = false;
                let mut has_size = (false, false);
                for (k, v) in s.attrs.get(n).into_iter().flatten() {
                    has_ns |= *k == "xmlns";
                    has_size.0 |= *k == "width";
                    has_size.1 |= *k == "height";
                    out.push_str(&format!(" {k}=\"{}\"", esc(v)));
                }
                if root {
                    if !has_ns {
                        out.push_str(" xmlns=\"http://www.w3.org/2000/svg\"");
                    }
                    if !has_size.0 {
                        out.push_str(&format!(" width=\"{}\"", b[2]));
                    }
                    if !has_size.1 {
                        out.push_str(&format!(" height=\"{}\"", b[3]));
                    }
                }
                out.push('>');
                for c in &s.children[n] {
                    write(s, *c, out, false, b);
                }
                out.push_str(&format!("</{tag}>"));
            }
            _ => {}
        }
    }
    let mut out = String::new();
    write(s, n, &mut out, true, b);
    out
}
