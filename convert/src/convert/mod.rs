//! From a `DOMSnapshot.captureSnapshot` to the document: the layout tree walked in DOM order,
//! boxes that paint something (or clip, or fade, or lay out flex items) as frames, the rest
//! flattened into their nearest frame; a block's inline content as one TEXT node of styled
//! segments where that is exact, else text runs (one per line box) as TEXT nodes; images as
//! image fills or SVG nodes. Children are ordered by Chromium's paint order, negative z-index
//! first. An element CSS clips or stacks elsewhere than in its DOM parent's frame (an absolutely
//! positioned one outside an `overflow` inside its containing block, a negative z-index) is
//! moved to the frame where CSS paints it (`stack`). A flex container whose items Figma's auto
//! layout puts exactly where Chromium did becomes an auto layout frame; everything else keeps
//! absolute positions. What is drawn otherwise than CSS is warned of (`warn`).
//!
//! This module holds the entry ([`convert`]), the conversion's state and the page's root frame;
//! by concern:
//! - `snapshot`: reading Chromium's DOMSnapshot arrays ([`Snapshot`]);
//! - `walk`: the walk of the tree, which element becomes what and in which frame;
//! - `paint`: boxes and their paint (backgrounds, borders, corners, shadows), the canvas;
//! - `gradient`: CSS linear gradients as Figma's;
//! - `paragraph`: a block's inline content as one TEXT node, its runs as segments;
//! - `text`: text runs, fonts, list markers;
//! - `images`: images, inline SVG and the other replaced content;
//! - `controls`: form controls' values, placeholders and themed parts;
//! - `layout`: auto layout for flex containers, GRID for grid containers;
//! - `styles`: every colour and type the document draws, as its shared styles;
//! - `components`: repeated sibling structures as a component and its instances;
//! - `links`: where a link goes, a URL or a layer of the document;
//! - `warnings`: warnings, within the artifact's limits, and the nodes they name.

mod components;
mod controls;
mod css;
mod gradient;
mod images;
mod inline_row;
mod layout;
mod links;
mod paint;
mod paragraph;
mod rotation;
mod snapshot;
mod styles;
mod text;
mod walk;
mod warnings;

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::doc::{ArtifactWarning, Image, Node, NodeType, Warning};
use crate::stack;

pub(crate) use components::place_beside;
pub(crate) use css::{blend_mode, full_ellipse};
pub use gradient::parse_linear_gradient;
pub use images::decode_data_url;
pub use paint::{parse_color, parse_shadows};
pub(crate) use snapshot::px;
pub use snapshot::{MalformedSnapshot, Snapshot};
pub use text::font_style;

use paint::canvas;
use walk::visit;
use warnings::locate;

/// Frames nest at most this deep (the artifact allows 40 levels); deeper boxes are flattened.
const MAX_FRAME_DEPTH: usize = 36;

/// The walk recurses at most this many elements deep; below, the content is drawn flat by a
/// loop. Chromium's HTML parser nests at most 512 deep, which would take the walk's recursion
/// near a 2 MiB thread stack in a debug build.
pub const MAX_WALK_DEPTH: usize = 128;

/// The artifact allows 20 000 nodes; past this the rest of the page is left out (warned).
pub const MAX_NODES: usize = 19_000;

/// The conversion's result.
#[derive(Debug, Clone)]
pub struct Converted {
    pub document: Node,
    pub images: Vec<Image>,
    /// Each located at its node (`indices`) where one was made.
    pub warnings: Vec<ArtifactWarning>,
    pub title: String,
}

/// A page rectangle to crop as PNG, for the image named `name`.
#[derive(Debug, Clone)]
pub struct Crop {
    pub name: String,
    pub rect: [f64; 4],
}

/// Where a node sorts among its siblings: negative `z-index` first (by z-index), then
/// Chromium's paint order.
type Key = (i64, i64, i64);

/// The sort key of a node made from layout object `l` of element `n`.
fn key(s: &Snapshot<'_>, n: usize, l: usize) -> Key {
    let paint = s.l_paint.get(l).copied().unwrap_or(0);
    match stack::negative_z(s, n, l) {
        Some(z) => (-1, z, paint),
        None => (0, 0, paint),
    }
}

/// Chromium's paint order alone, for what has no z-index of its own.
fn order(paint: i64) -> Key {
    (0, 0, paint)
}

/// A container being filled: its page origin and depth, and the nodes made in it so far, each
/// with its sort key.
struct Container {
    ox: f64,
    oy: f64,
    depth: usize,
    nodes: Vec<(Key, Node)>,
}

/// A frame the walk is filling, as an element deeper down sees it.
struct Open {
    /// Its element; `None` for the page.
    owner: Option<usize>,
    /// Nodes moved into it from deeper down wait under this id until it is closed.
    id: usize,
    clips: bool,
    faded: bool,
    /// Its box in page coordinates, and its container's origin and depth.
    rect: [f64; 4],
    ox: f64,
    oy: f64,
    depth: usize,
}

struct Ctx<'s, 'a> {
    s: &'s Snapshot<'a>,
    fonts: HashMap<String, String>,
    images: Vec<Image>,
    by_url: HashMap<String, String>,
    crops: Vec<Crop>,
    warnings: Vec<Warning>,
    warned_fonts: HashSet<(String, String)>,
    /// (element, property) already warned of.
    warned: HashSet<(usize, &'static str)>,
    count: usize,
    root_bg_from: Option<usize>,
    /// The frames being filled, outermost (the page) first.
    open: Vec<Open>,
    next_id: usize,
    /// Nodes made for a frame further out, by its [`Open::id`].
    moved: HashMap<usize, Vec<(Key, Node)>>,
    /// Stacking contexts holding a negative z-index (`None` the root's).
    negative_hosts: HashSet<Option<usize>>,
    /// How many elements deep the walk's recursion is.
    walk_depth: usize,
    /// Text nodes a paragraph's TEXT node draws: not drawn again line by line.
    in_paragraph: HashSet<usize>,
    /// The members of repeated sibling groups, each with its group: each is made a frame, for
    /// `components` to make a component and its instances of.
    members: HashMap<usize, usize>,
    /// Where the page's links go (`links`).
    links: links::Links<'a>,
    /// The height of Chromium's lines at `line-height: normal`, by font and size, as measured
    /// on the paragraphs of several lines (`paragraph::even_out`).
    normal_lines: paragraph::NormalLines,
}

impl<'s, 'a> Ctx<'s, 'a> {
    /// The state of converting snapshot `s`, whose fonts Chromium drew as `platform_fonts`
    /// says (a `font-family` list, the family used).
    fn new(s: &'s Snapshot<'a>, platform_fonts: &[(String, String)], address: Option<&str>) -> Self {
        Ctx {
            s,
            fonts: platform_fonts.iter().cloned().collect(),
            images: Vec::new(),
            by_url: HashMap::new(),
            crops: Vec::new(),
            warnings: Vec::new(),
            warned_fonts: Default::default(),
            warned: Default::default(),
            count: 1,
            root_bg_from: None,
            open: Vec::new(),
            next_id: 1,
            moved: HashMap::new(),
            negative_hosts: stack::negative_hosts(s),
            walk_depth: 0,
            in_paragraph: HashSet::new(),
            normal_lines: paragraph::NormalLines::default(),
            members: components::repeated(s),
            links: links::Links::new(s, address),
        }
    }

    /// The nodes moved into the frame `id` from deeper down.
    fn take_moved(&mut self, id: usize) -> Vec<(Key, Node)> {
        self.moved.remove(&id).unwrap_or_default()
    }
}

/// To the hundredth, as the document's positions and sizes are written.
pub(super) fn round(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// Converts a snapshot. `crops` lists the page rectangles whose PNGs the caller must put into
/// the images of the same names. `address` is the page's address as its capture recorded it
/// (relative links resolve against it: `links`).
pub fn convert(
    snap: &Value,
    width: u32,
    height: f64,
    platform_fonts: &[(String, String)],
    address: Option<&str>,
) -> Result<(Converted, Vec<Crop>), MalformedSnapshot> {
    let s = Snapshot::parse(snap)?;
    let mut cx = Ctx::new(&s, platform_fonts, address);
    let title = s.title().unwrap_or_else(|| "Page".into());
    let html = (0..s.node_name.len()).find(|i| s.node_type[*i] == 1 && s.tag(*i) == "html");
    let page = [0.0, 0.0, f64::from(width), round(height.max(1.0))];
    let (root_fills, tiles) = canvas(&mut cx, html, page);
    cx.count += tiles.len();
    let nodes = tiles.into_iter().map(|t| ((i64::MIN, 0, 0), t)).collect();
    let mut root = Container { ox: 0.0, oy: 0.0, depth: 1, nodes };
    cx.open.push(Open { owner: None, id: 0, clips: true, faded: false, rect: page, ox: 0.0, oy: 0.0, depth: 1 });
    if let Some(h) = html {
        visit(&mut cx, h, &mut root, false);
    }
    let mut children: Vec<(Key, Node)> = root.nodes;
    children.extend(cx.take_moved(0));
    children.sort_by_key(|(p, _)| *p);
    let mut document = Node {
        kind: NodeType::FRAME,
        name: title.clone(),
        width: page[2],
        height: page[3],
        fills: Some(root_fills),
        clips_content: Some(true),
        children: Some(children.into_iter().map(|(_, n)| n).collect()),
        ..Node::default()
    };
    // Before the styles: a type's line height is part of its style.
    paragraph::even_out(&mut document, &cx.normal_lines);
    styles::share(&s, &mut document);
    // After the styles: a member's look includes the styles it is on.
    components::make(&s, &mut document, &cx.members);
    // Last: a link names the layer it goes to, which may be a component or an instance.
    links::anchor(&mut document, &s, &cx.links);
    locate(&document, &mut cx.warnings);
    let crops = std::mem::take(&mut cx.crops);
    let warnings = cx.warnings.into_iter().map(|w| w.wire).collect();
    Ok((Converted { document, images: cx.images, warnings, title }, crops))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{EffectType, Paint, Rgba};

    #[test]
    fn colours_shadows_gradients() {
        assert_eq!(parse_color("rgba(255, 0, 0, 0.5)"), Some(Rgba { r: 1.0, g: 0.0, b: 0.0, a: 0.5 }));
        assert_eq!(parse_color("rgb(0 0 255)").map(|c| c.b), Some(1.0));
        let e = parse_shadows("rgba(0, 0, 0, 0.1) 0px 4px 6px -1px, rgb(255, 0, 0) 1px 2px 3px 0px inset");
        assert_eq!(e.len(), 2);
        assert_eq!(e[1].kind, EffectType::DROP_SHADOW);
        assert_eq!((e[1].offset.as_ref().unwrap().y, e[1].radius, e[1].spread), (4.0, 6.0, Some(-1.0)));
        assert_eq!(e[0].kind, EffectType::INNER_SHADOW);
        let Some(Paint::GradientLinear { gradient_transform: t, gradient_stops, .. }) =
            parse_linear_gradient("linear-gradient(90deg, rgb(255, 0, 0), rgb(0, 0, 255) 100%)", 200.0, 100.0)
        else {
            panic!("a gradient")
        };
        // Left to right: t = u.
        assert_eq!(t[0], [1.0, 0.0, 0.0]);
        assert_eq!(gradient_stops.len(), 2);
        let Some(Paint::GradientLinear { gradient_transform: t, .. }) =
            parse_linear_gradient("linear-gradient(rgb(255, 0, 0), rgb(0, 0, 255))", 200.0, 100.0)
        else {
            panic!("a gradient")
        };
        // Top to bottom: t = v.
        assert_eq!(t[0], [0.0, 1.0, 0.0]);
        assert_eq!(font_style("700", false), "Bold");
        assert_eq!(font_style("400", true), "Italic");
        assert_eq!(font_style("600", true), "Semi Bold Italic");
    }
}
