//! Several viewports from one capture (issue 40 item 3): the capture is laid out by Chromium
//! once per width (one page each, so every frame is Chromium's own layout at its width, media
//! queries included), each converted as a page on its own, and the frames placed side by side
//! in one root. One viewport (or none: the capture's own width) is the document as it always
//! was, with no wrapper, so nothing changes for a job that asks for no more.

use std::collections::HashMap;

use crate::doc::{ArtifactWarning, HyperlinkType, Image, Node, NodeType, Paint, Style, MAX_WARNINGS};
use crate::{convert, convert_at, ConvertError, Output, Renderer, Timings};

/// The space between two frames of the root, in pixels.
pub const VIEWPORT_GAP: f64 = 80.0;
/// The widest "Mobile" frame: phones are narrower than 480 px in CSS pixels.
pub const MOBILE_MAX: u32 = 479;
/// The widest "Tablet" frame; wider is "Desktop" (1024 px is the common desktop breakpoint).
pub const TABLET_MAX: u32 = 1023;

/// A frame's name: its range, then its width ("Desktop · 1440", "Mobile · 390").
pub fn frame_name(width: u32) -> String {
    let range = if width <= MOBILE_MAX {
        "Mobile"
    } else if width <= TABLET_MAX {
        "Tablet"
    } else {
        "Desktop"
    };
    format!("{range} · {width}")
}

/// Converts the capture at each of `viewports` (in that order): one width is one page as
/// [`convert_at`] makes it; none is the capture's own width; two or more are [`combine`]d.
/// `screenshot` is taken only of a single page (a picture per frame has no place in the
/// combined output).
pub async fn convert_viewports(
    renderer: &Renderer,
    bytes: &[u8],
    viewports: &[u32],
    screenshot: bool,
) -> Result<Output, ConvertError> {
    match viewports {
        [] => convert(renderer, bytes, screenshot).await,
        [one] => convert_at(renderer, bytes, Some(*one), screenshot).await,
        many => {
            let mut frames = Vec::with_capacity(many.len());
            for width in many {
                frames.push((*width, convert_at(renderer, bytes, Some(*width), false).await?));
            }
            Ok(combine(frames))
        }
    }
}

/// The pages converted at each width as one document: a transparent root frame named by the
/// page's title, holding one frame per width left to right, [`VIEWPORT_GAP`] apart, each named
/// by [`frame_name`]. Images identical in two frames are one image; styles identical in two
/// frames are one style (one of the same name but another value is named after its frame);
/// each warning's `indices` gains its frame's index.
pub fn combine(frames: Vec<(u32, Output)>) -> Output {
    let title = frames.first().map(|(_, o)| o.title.clone()).unwrap_or_default();
    let mut merged = Merged::default();
    let (mut x, mut height, mut blocked) = (0.0_f64, 0.0_f64, 0);
    let mut timings = Timings::default();
    let mut children = Vec::with_capacity(frames.len());
    // The components beside each frame (its icons), beside the root now.
    let mut beside = Vec::new();
    for (i, (width, out)) in frames.into_iter().enumerate() {
        let name = frame_name(width);
        let mut doc = out.document;
        let images = merged.images(out.images);
        let styles = merged.styles(doc.styles.take().unwrap_or_default(), &name);
        let mut own = doc.components.take().unwrap_or_default();
        for n in std::iter::once(&mut doc).chain(own.iter_mut()) {
            adopt(n, i, &images, &styles);
        }
        beside.append(&mut own);
        merged.warnings(out.warnings, i as u32);
        (doc.name, doc.x, doc.y) = (name, x, 0.0);
        x += doc.width + VIEWPORT_GAP;
        height = height.max(doc.height);
        blocked += out.blocked_requests;
        (timings.load, timings.render, timings.convert) = (
            timings.load + out.timings.load,
            timings.render + out.timings.render,
            timings.convert + out.timings.convert,
        );
        children.push(doc);
    }
    let width = (x - VIEWPORT_GAP).max(0.0);
    crate::convert::place_beside(width, &mut beside);
    let document = Node {
        kind: NodeType::FRAME,
        name: title.clone(),
        width,
        height,
        // No fill and no clipping: the root only holds the frames, which keep their own.
        fills: Some(Vec::new()),
        clips_content: Some(false),
        styles: (!merged.styles.is_empty()).then_some(merged.styles),
        components: (!beside.is_empty()).then_some(beside),
        children: Some(children),
        ..Node::default()
    };
    Output {
        document,
        images: merged.images,
        warnings: merged.warnings,
        title,
        width: width as u32,
        height,
        blocked_requests: blocked,
        screenshot: None,
        timings,
    }
}

/// What the frames share, as gathered so far.
#[derive(Default)]
struct Merged {
    images: Vec<Image>,
    styles: Vec<Style>,
    warnings: Vec<ArtifactWarning>,
}

impl Merged {
    /// Adds a frame's images; answers each one's name in the merged list (an image with the
    /// same type and bytes as one already there is that one).
    fn images(&mut self, images: Vec<Image>) -> HashMap<String, String> {
        let mut names = HashMap::new();
        for img in images {
            let same = self.images.iter().find(|m| m.mime == img.mime && m.bytes == img.bytes);
            let name = match same {
                Some(m) => m.name.clone(),
                None => {
                    let name = format!("image-{}", self.images.len() + 1);
                    self.images.push(Image { name: name.clone(), ..img.clone() });
                    name
                }
            };
            names.insert(img.name, name);
        }
        names
    }

    /// Adds a frame's styles; answers each one's id in the merged list.
    fn styles(&mut self, styles: Vec<Style>, frame: &str) -> HashMap<String, String> {
        let mut ids = HashMap::new();
        for style in styles {
            let same = self.styles.iter().find(|m| Style { id: m.id.clone(), ..style.clone() } == **m);
            let id = match same {
                Some(m) => m.id.clone(),
                None => {
                    let id = format!("S:{}", self.styles.len() + 1);
                    let taken = self.styles.iter().any(|m| m.name == style.name);
                    let name = if taken { format!("{} ({frame})", style.name) } else { style.name.clone() };
                    self.styles.push(Style { id: id.clone(), name, ..style.clone() });
                    id
                }
            };
            ids.insert(style.id, id);
        }
        ids
    }

    /// Adds a frame's warnings, located from the root through the frame (its `index`), up to
    /// the artifact's limit.
    fn warnings(&mut self, warnings: Vec<ArtifactWarning>, index: u32) {
        for mut w in warnings {
            if self.warnings.len() >= MAX_WARNINGS {
                return;
            }
            if let Some(indices) = w.indices.as_mut() {
                indices.insert(0, index);
            }
            self.warnings.push(w);
        }
    }
}

/// Calls `f` on `node` and every node under it.
fn each_node(node: &mut Node, f: &mut impl FnMut(&mut Node)) {
    f(node);
    for child in node.children.iter_mut().flatten() {
        each_node(child, f);
    }
}

/// The tree `n` of frame `i`, its image and style references as the merged lists name them.
/// Each frame was converted alone and names its layers alike ("component-1", "anchor-1"):
/// past the first, its names take the frame's number, so the document's ids stay unique and
/// each frame's components and links stay its own.
fn adopt(n: &mut Node, i: usize, images: &HashMap<String, String>, styles: &HashMap<String, String>) {
    each_node(n, &mut |n| rename(n, images, styles));
    if i > 0 {
        let tag = format!("v{}-", i + 1);
        each_node(n, &mut |n| scope_ids(n, &tag));
    }
}

/// A node's own names (`id`, `componentId`, NODE hyperlinks), prefixed with `tag`.
fn scope_ids(n: &mut Node, tag: &str) {
    for id in [&mut n.id, &mut n.component_id].into_iter().flatten() {
        *id = format!("{tag}{id}");
    }
    let runs = n.segments.iter_mut().flatten().map(|g| &mut g.hyperlink);
    for h in std::iter::once(&mut n.hyperlink).chain(runs).flatten() {
        if h.kind == HyperlinkType::NODE {
            h.value = format!("{tag}{}", h.value);
        }
    }
}

/// A node's image and style references, as the merged lists name them.
fn rename(n: &mut Node, images: &HashMap<String, String>, styles: &HashMap<String, String>) {
    let image = |r: &mut String| {
        if let Some(new) = images.get(r.as_str()) {
            r.clone_from(new);
        }
    };
    let style = |r: &mut Option<String>| {
        if let Some(new) = r.as_deref().and_then(|id| styles.get(id)) {
            *r = Some(new.clone());
        }
    };
    n.image_ref.as_mut().map(image);
    let paints = n.fills.iter_mut().chain(n.strokes.iter_mut()).flatten();
    let segment_paints = n.segments.iter_mut().flatten().flat_map(|s| s.fills.iter_mut());
    for p in paints.chain(segment_paints) {
        if let Paint::Image { image_ref, .. } = p {
            image(image_ref);
        }
    }
    style(&mut n.fill_style_id);
    style(&mut n.text_style_id);
    for seg in n.segments.iter_mut().flatten() {
        style(&mut seg.fill_style_id);
        style(&mut seg.text_style_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_frames_names_are_its_own() {
        use crate::doc::Hyperlink;
        let link = |v: &str| Some(Hyperlink { kind: HyperlinkType::NODE, value: v.into() });
        let mut n = Node {
            id: Some("anchor-1".into()),
            component_id: Some("component-1".into()),
            hyperlink: link("anchor-1"),
            ..Node::default()
        };
        scope_ids(&mut n, "v2-");
        assert_eq!((n.id.as_deref(), n.component_id.as_deref()), (Some("v2-anchor-1"), Some("v2-component-1")));
        assert_eq!(n.hyperlink, link("v2-anchor-1"));
        let mut url = Node {
            hyperlink: Some(Hyperlink { kind: HyperlinkType::URL, value: "https://e.test/".into() }),
            ..Node::default()
        };
        scope_ids(&mut url, "v2-");
        assert_eq!(url.hyperlink.unwrap().value, "https://e.test/", "a URL is not a name");
    }

    #[test]
    fn frames_are_named_by_range_then_width() {
        assert_eq!(frame_name(320), "Mobile · 320");
        assert_eq!(frame_name(479), "Mobile · 479");
        assert_eq!(frame_name(480), "Tablet · 480");
        assert_eq!(frame_name(1023), "Tablet · 1023");
        assert_eq!(frame_name(1024), "Desktop · 1024");
        assert_eq!(frame_name(2560), "Desktop · 2560");
    }

    fn page(width: f64, image: &[u8], style_size: f64) -> Output {
        let style = Style {
            id: "S:1".into(),
            name: "Text/Body".into(),
            kind: crate::doc::StyleType::TEXT,
            paints: None,
            font_name: None,
            font_size: Some(style_size),
            line_height: None,
            letter_spacing: None,
            text_case: None,
            text_decoration: None,
        };
        let leaf = Node {
            kind: NodeType::RECTANGLE,
            fills: Some(vec![Paint::Image { image_ref: "image-1".into(), scale_mode: None, opacity: None }]),
            text_style_id: Some("S:1".into()),
            ..Node::default()
        };
        let document = Node {
            kind: NodeType::FRAME,
            name: "Page".into(),
            width,
            height: width / 2.0,
            styles: Some(vec![style]),
            children: Some(vec![leaf]),
            ..Node::default()
        };
        let warning = ArtifactWarning {
            code: crate::doc::WarningCode::from_name(crate::doc::WarningCode::ALL[0]).expect("a code"),
            message: "m".into(),
            path: None,
            node: None,
            indices: Some(vec![0]),
        };
        Output {
            document,
            images: vec![Image { name: "image-1".into(), mime: "image/png", bytes: image.to_vec() }],
            warnings: vec![warning],
            title: "Page".into(),
            width: width as u32,
            height: width / 2.0,
            blocked_requests: 1,
            screenshot: None,
            timings: Timings::default(),
        }
    }

    #[test]
    fn each_frames_components_stand_beside_the_root_under_their_frames_names() {
        let with_icon = |width: f64, image: &[u8]| {
            let mut out = page(width, image, 16.0);
            let drawing = Node { kind: NodeType::SVG, image_ref: Some("image-1".into()), ..Node::default() };
            let icon = Node {
                kind: NodeType::COMPONENT,
                id: Some("icon-1".into()),
                height: 22.0,
                children: Some(vec![drawing]),
                ..Node::default()
            };
            out.document.components = Some(vec![icon]);
            out
        };
        let out = combine(vec![(1440, with_icon(1440.0, b"a")), (390, with_icon(390.0, b"b"))]);
        let beside = out.document.components.as_deref().expect("components beside the root");
        let frames = out.document.children.as_deref().expect("frames");
        assert!(frames.iter().all(|f| f.components.is_none()), "no frame keeps its own");
        // Past the last frame, one under the other; the second frame's renamed as its ids are,
        // its drawing pointing at its own image.
        let right = out.document.width + 80.0;
        let placed: Vec<(Option<&str>, f64, f64)> = beside.iter().map(|c| (c.id.as_deref(), c.x, c.y)).collect();
        assert_eq!(placed, [(Some("icon-1"), right, 0.0), (Some("v2-icon-1"), right, 62.0)]);
        let refs: Vec<Option<&str>> =
            beside.iter().map(|c| c.children.as_deref().unwrap_or_default()[0].image_ref.as_deref()).collect();
        assert_eq!(refs, [Some("image-1"), Some("image-2")]);
    }

    #[test]
    fn frames_sit_side_by_side_sharing_equal_images_and_styles() {
        let out = combine(vec![(1440, page(1440.0, b"a", 16.0)), (390, page(390.0, b"a", 16.0))]);
        let frames = out.document.children.as_ref().expect("frames");
        assert_eq!(
            frames.iter().map(|f| (f.name.as_str(), f.x)).collect::<Vec<_>>(),
            [("Desktop · 1440", 0.0), ("Mobile · 390", 1440.0 + VIEWPORT_GAP)]
        );
        assert_eq!(out.document.width, 1440.0 + VIEWPORT_GAP + 390.0);
        assert_eq!(out.document.height, 720.0);
        assert_eq!(out.images.len(), 1);
        assert_eq!(out.document.styles.as_ref().map(Vec::len), Some(1));
        assert_eq!(
            out.warnings.iter().map(|w| w.indices.clone().unwrap()).collect::<Vec<_>>(),
            [vec![0, 0], vec![1, 0]]
        );
        assert_eq!(out.blocked_requests, 2);
    }

    #[test]
    fn different_images_and_styles_stay_apart_and_are_referred_to_by_their_new_names() {
        let out = combine(vec![(1440, page(1440.0, b"a", 16.0)), (390, page(390.0, b"b", 14.0))]);
        assert_eq!(out.images.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(), ["image-1", "image-2"]);
        let styles = out.document.styles.as_ref().expect("styles");
        assert_eq!(
            styles.iter().map(|s| (s.id.as_str(), s.name.as_str())).collect::<Vec<_>>(),
            [("S:1", "Text/Body"), ("S:2", "Text/Body (Mobile · 390)")]
        );
        let mobile = &out.document.children.as_ref().unwrap()[1].children.as_ref().unwrap()[0];
        assert_eq!(mobile.text_style_id.as_deref(), Some("S:2"));
        assert!(matches!(&mobile.fills.as_ref().unwrap()[0], Paint::Image { image_ref, .. } if image_ref == "image-2"));
    }
}
