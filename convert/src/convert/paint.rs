//! Boxes and their paint: colours, backgrounds (colour, gradients, images), borders, corner
//! radii, shadows, as Figma fills, strokes and effects; an inline element broken across lines as
//! one rectangle per line.

use super::css::{border_line, filter_effects, shade, shaded, Line};
use super::gradient::{linear_gradient, stretch_paint};
use super::images::ImageSource;
use super::{px, round, Container, Ctx, Key, Snapshot};
use crate::doc::{Color, Effect, EffectType, Maker, Node, NodeType, Paint, Rgba, ScaleMode, StrokeAlign, Vector};
use crate::{names, warn};

/// Drawn where a colour could not be read: seen, and not mistaken for the page's black text.
pub(super) const UNREAD: Rgba = Rgba { r: 0.5, g: 0.5, b: 0.5, a: 1.0 };

/// A computed colour in any syntax Chromium serializes (see `color`), in sRGB.
pub fn parse_color(s: &str) -> Option<Rgba> {
    crate::color::parse(s)
}

pub(super) fn solid(c: &Rgba) -> Paint {
    Paint::Solid {
        color: Color { r: c.r, g: c.g, b: c.b },
        opacity: (c.a < 1.0).then_some(round(c.a * 1000.0) / 1000.0),
    }
}

/// Splits at commas outside parentheses.
pub(super) fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, ch) in s.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s[start..].trim());
    out
}

/// Splits at whitespace outside parentheses.
fn split_words(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, None);
    for (i, ch) in s.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            c if c.is_whitespace() && depth == 0 => {
                if let Some(st) = start.take() {
                    out.push(&s[st..i]);
                }
                continue;
            }
            _ => {}
        }
        start.get_or_insert(i);
    }
    out.extend(start.map(|st| &s[st..]));
    out
}

/// The colour of a shadow or a gradient stop (its one word that is not a length, a percentage
/// or `inset`), in whatever syntax, and the other words.
pub(super) fn take_color(s: &str) -> (Option<&str>, String) {
    let words = split_words(s);
    let length = |w: &str| {
        w == "inset"
            || w.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '-' | '+' | '.'))
            || w.starts_with("calc(")
    };
    match words.iter().position(|w| !length(w)) {
        Some(i) => {
            let rest: Vec<&str> = words.iter().enumerate().filter(|(k, _)| *k != i).map(|(_, w)| *w).collect();
            (Some(words[i]), rest.join(" "))
        }
        None => (None, s.trim().to_owned()),
    }
}

/// CSS `box-shadow` (computed) → effects.
pub fn parse_shadows(s: &str) -> Vec<Effect> {
    shadows(s).0
}

/// `box-shadow` → effects, and the colours that could not be read (drawn grey).
pub(super) fn shadows(s: &str) -> (Vec<Effect>, Vec<String>) {
    let mut unread = Vec::new();
    if s.trim() == "none" || s.trim().is_empty() {
        return (Vec::new(), unread);
    }
    let mut out = Vec::new();
    for one in split_top(s) {
        let (color, rest) = take_color(one);
        let inset = rest.contains("inset");
        let lens: Vec<f64> = rest.split_whitespace().filter(|w| *w != "inset").map(px).collect();
        // Chromium always writes the colour; without one, CSS's is currentColor.
        let color = match color.map(|c| (c, parse_color(c))) {
            Some((_, Some(c))) => c,
            Some((text, None)) => {
                unread.push(text.to_owned());
                UNREAD
            }
            None => Rgba { r: 0.0, g: 0.0, b: 0.0, a: 1.0 },
        };
        out.push(Effect {
            kind: if inset { EffectType::INNER_SHADOW } else { EffectType::DROP_SHADOW },
            color: Some(color),
            offset: Some(Vector { x: lens.first().copied().unwrap_or(0.0), y: lens.get(1).copied().unwrap_or(0.0) }),
            radius: lens.get(2).copied().unwrap_or(0.0),
            spread: Some(lens.get(3).copied().unwrap_or(0.0)),
        });
    }
    // CSS paints the first shadow on top; Figma paints effects in list order, the last on top.
    out.reverse();
    (out, unread)
}

impl Ctx<'_, '_> {
    /// A colour property of layout object `l`; one that cannot be read is warned and drawn
    /// grey, so its box is still drawn. `None` when the snapshot has no value.
    pub(super) fn color(&mut self, n: usize, l: usize, property: &'static str, name: &str) -> Option<Rgba> {
        let v = self.s.style(l, property);
        if v.is_empty() {
            return None;
        }
        parse_color(v).or_else(|| {
            self.css(n, name, property, format!("{property}: {} could not be read: drawn grey", warn::quote(v)));
            Some(UNREAD)
        })
    }

    /// Warns of colours that could not be read in a value with several (shadows, gradients).
    pub(super) fn unread(&mut self, n: usize, name: &str, property: &'static str, colors: &[String]) {
        if let Some(c) = colors.first() {
            self.css(n, name, property, format!("{property}: colour {} could not be read: drawn grey", warn::quote(c)));
        }
    }
}

/// What an element's box paints: fills, strokes (and how their lines are drawn), radii,
/// effects.
#[derive(Clone)]
pub(super) struct BoxPaint {
    pub(super) fills: Vec<Paint>,
    pub(super) strokes: Option<(Paint, [f64; 4])>,
    /// The sides of the border in other colours than `strokes`' (per-side widths, 0 for the
    /// others'), one colour each: Figma has one stroke paint a node, so each is a rectangle
    /// of the box's size over it (`apply_paint`).
    pub(super) more: Vec<(Paint, [f64; 4])>,
    pub(super) line: Line,
    pub(super) radii: [f64; 4],
    pub(super) effects: Vec<Effect>,
}

impl BoxPaint {
    pub(super) fn none() -> Self {
        BoxPaint { fills: vec![], strokes: None, more: vec![], line: Line::Solid, radii: [0.0; 4], effects: vec![] }
    }
}

pub(super) fn box_paint(cx: &mut Ctx<'_, '_>, n: usize, l: usize, b: [f64; 4], name: &str) -> BoxPaint {
    // The canvas took this element's background.
    let fills = if cx.root_bg_from == Some(n) { Vec::new() } else { background_fills(cx, n, l, b, name) };
    let ((strokes, more), radii, mut effects) = box_edges(cx, n, l, b, name);
    let (line, approximated) = border_line(cx.s, l);
    if let Some(message) = approximated.filter(|_| strokes.is_some()) {
        cx.css(n, name, "border-style", message);
    }
    // The filter applies to the box and its shadows: drawn after them.
    match filter_effects(cx.s.style(l, "filter"), !fills.is_empty()) {
        Ok((filtered, unread)) => {
            cx.unread(n, name, "filter", &unread);
            effects.extend(filtered);
        }
        Err(message) => cx.css(n, name, "filter", message),
    }
    BoxPaint { fills, strokes, more, line, radii, effects }
}

/// An element's background colour and images, bottom first.
pub(super) fn background_fills(cx: &mut Ctx<'_, '_>, n: usize, l: usize, b: [f64; 4], name: &str) -> Vec<Paint> {
    let s = cx.s;
    let mut fills = Vec::new();
    if let Some(c) = cx.color(n, l, "background-color", name).filter(|c| c.a > 0.0) {
        fills.push(solid(&c));
    }
    let bgi = s.style(l, "background-image");
    if bgi != "none" && !bgi.is_empty() {
        for layer in split_top(bgi).into_iter().rev() {
            if layer.starts_with("linear-gradient(") {
                match linear_gradient(layer, b[2], b[3]) {
                    Some((p, unread)) => {
                        cx.unread(n, name, "background-image", &unread);
                        fills.push(p);
                    }
                    None => cx.css(n, name, "background-image", not_drawn(layer)),
                }
            } else if let Some(url) = layer.strip_prefix("url(").and_then(|u| u.strip_suffix(')')) {
                let url = url.trim_matches(['"', '\'']);
                let mode = match s.style(l, "background-size") {
                    "contain" => ScaleMode::FIT,
                    "cover" => ScaleMode::FILL,
                    _ => ScaleMode::FILL,
                };
                match cx.image_source(url, n, name) {
                    Some(ImageSource::Ready("image/svg+xml", _)) | Some(ImageSource::Crop) => {
                        let r = cx.crop(b);
                        fills.push(Paint::Image { image_ref: r, scale_mode: Some(ScaleMode::FILL), opacity: None });
                    }
                    Some(ImageSource::Ready(m, bytes)) => {
                        let r = cx.add_image(url, m, bytes);
                        fills.push(Paint::Image { image_ref: r, scale_mode: Some(mode), opacity: None });
                    }
                    None => {}
                }
            } else {
                cx.css(n, name, "background-image", not_drawn(layer));
            }
        }
    }
    fills
}

fn not_drawn(layer: &str) -> String {
    format!("background-image: {} not drawn", warn::quote(layer))
}

/// An element's border (per-side widths: the first drawn side's colour, and the sides of each
/// other colour), corner radii and shadows.
#[allow(clippy::type_complexity)]
fn box_edges(
    cx: &mut Ctx<'_, '_>,
    n: usize,
    l: usize,
    b: [f64; 4],
    name: &str,
) -> ((Option<(Paint, [f64; 4])>, Vec<(Paint, [f64; 4])>), [f64; 4], Vec<Effect>) {
    let s = cx.s;
    let sides = ["top", "right", "bottom", "left"];
    // Each colour with the widths of its sides, in the order the sides are met.
    let mut colors: Vec<(Rgba, [f64; 4])> = Vec::new();
    let color_of = ["border-top-color", "border-right-color", "border-bottom-color", "border-left-color"];
    for (i, side) in sides.iter().enumerate() {
        let style = s.style(l, &format!("border-{side}-style"));
        let w = s.px(l, &format!("border-{side}-width"));
        if style == "none" || style == "hidden" || w <= 0.0 {
            continue;
        }
        let Some(mut c) = cx.color(n, l, color_of[i], name).filter(|c| c.a > 0.0) else { continue };
        if shaded(s, l, style) {
            c = shade(style, i, &c);
        }
        match colors.iter_mut().find(|(o, _)| *o == c) {
            Some((_, widths)) => widths[i] = w,
            None => {
                let mut widths = [0.0; 4];
                widths[i] = w;
                colors.push((c, widths));
            }
        }
    }
    let mut colors = colors.into_iter().map(|(c, w)| (solid(&c), w));
    let strokes = (colors.next(), colors.collect());
    let radius = |corner: &str| {
        let v = s.style(l, &format!("border-{corner}-radius"));
        let first = v.split_whitespace().next().unwrap_or("0");
        match first.strip_suffix('%') {
            Some(p) => p.parse::<f64>().unwrap_or(0.0) / 100.0 * b[2].min(b[3]),
            None => px(first),
        }
    };
    let max_r = b[2].min(b[3]) / 2.0;
    let radii = ["top-left", "top-right", "bottom-right", "bottom-left"].map(|c| round(radius(c).min(max_r)));
    let (effects, unread) = shadows(s.style(l, "box-shadow"));
    cx.unread(n, name, "box-shadow", &unread);
    (strokes, radii, effects)
}

pub(super) fn apply_paint(node: &mut Node, p: BoxPaint) {
    node.fills = Some(p.fills);
    for (paint, w) in p.more {
        let mut sides = Node {
            kind: NodeType::RECTANGLE,
            name: "Border".into(),
            width: node.width,
            height: node.height,
            fills: Some(Vec::new()),
            maker: Maker { dom: node.maker.dom, flex_item: false },
            ..Node::default()
        };
        let line = BoxPaint { strokes: Some((paint, w)), line: p.line.clone(), radii: p.radii, ..BoxPaint::none() };
        apply_paint(&mut sides, line);
        node.children.get_or_insert_with(Vec::new).push(sides);
    }
    if let Some((paint, mut w)) = p.strokes {
        match p.line {
            Line::Solid => {}
            Line::Dashed(pattern, cap) => {
                node.dash_pattern = Some(pattern);
                node.stroke_cap = cap;
            }
            Line::Double => w = double_inner(node, &paint, w, p.radii),
        }
        node.strokes = Some(vec![paint]);
        node.stroke_align = Some(StrokeAlign::INSIDE);
        if w.iter().all(|x| *x == w[0]) {
            node.stroke_weight = Some(w[0]);
        } else {
            node.stroke_weight = Some(w.iter().copied().fold(0.0, f64::max));
            node.stroke_top_weight = Some(w[0]);
            node.stroke_right_weight = Some(w[1]);
            node.stroke_bottom_weight = Some(w[2]);
            node.stroke_left_weight = Some(w[3]);
        }
    }
    let r = p.radii;
    if r.iter().all(|x| *x == r[0]) {
        if r[0] > 0.0 {
            node.corner_radius = Some(r[0]);
        }
    } else {
        node.top_left_radius = Some(r[0]);
        node.top_right_radius = Some(r[1]);
        node.bottom_right_radius = Some(r[2]);
        node.bottom_left_radius = Some(r[3]);
    }
    if !p.effects.is_empty() {
        node.effects = Some(p.effects);
    }
}

/// A double border's inner line: a rectangle inset by two thirds of each side's width, its
/// stroke a third of it, added to `node`'s children; answers the node's own stroke widths,
/// the outer third.
fn double_inner(node: &mut Node, paint: &Paint, w: [f64; 4], radii: [f64; 4]) -> [f64; 4] {
    let third = w.map(|x| round(x / 3.0));
    let mut inner = Node {
        kind: NodeType::RECTANGLE,
        name: "Double border".into(),
        x: round(2.0 * third[3]),
        y: round(2.0 * third[0]),
        width: round((node.width - 2.0 * (third[1] + third[3])).max(0.0)),
        height: round((node.height - 2.0 * (third[0] + third[2])).max(0.0)),
        fills: Some(Vec::new()),
        maker: Maker { dom: node.maker.dom, flex_item: false },
        ..Node::default()
    };
    let mut inner_paint = BoxPaint::none();
    inner_paint.strokes = Some((paint.clone(), third));
    inner_paint.radii = radii.map(|r| round((r - 2.0 * third[0].max(third[3])).max(0.0)));
    apply_paint(&mut inner, inner_paint);
    node.children.get_or_insert_with(Vec::new).push(inner);
    third
}

/// A cell of a table whose borders collapse: Chromium's cell box runs to the middle of each
/// shared border, so the border is centred on the box's edge, not inside it; the sides of its
/// other colours too (the rectangles of its own size `apply_paint` added).
pub(super) fn collapsed_border(s: &Snapshot<'_>, l: usize, node: &mut Node) {
    if node.strokes.is_some() && s.style(l, "display") == "table-cell" && s.style(l, "border-collapse") == "collapse" {
        node.stroke_align = Some(StrokeAlign::CENTER);
        let (dom, size) = (node.maker.dom, (node.width, node.height));
        let own = |k: &Node| k.maker.dom == dom && (k.x, k.y, k.width, k.height) == (0.0, 0.0, size.0, size.1);
        for k in node.children.iter_mut().flatten().filter(|k| own(k) && k.strokes.is_some()) {
            k.stroke_align = Some(StrokeAlign::CENTER);
        }
    }
}

pub(super) fn paints_something(p: &BoxPaint) -> bool {
    !p.fills.is_empty() || p.strokes.is_some() || !p.effects.is_empty()
}

/// The line fragments of an inline element, top to bottom, in page pixels: per line, the span of
/// the glyph boxes of its text (its own text's when the line has some, else its descendants').
pub(super) fn inline_lines(s: &Snapshot<'_>, n: usize) -> Vec<[f64; 4]> {
    // (box, is the element's own text)
    let mut boxes: Vec<([f64; 4], bool)> = Vec::new();
    let mut stack: Vec<(usize, bool)> = s.children[n].iter().map(|c| (*c, true)).collect();
    while let Some((c, own)) = stack.pop() {
        if s.node_type[c] == 3 {
            if let Some(li) = s.layout_of[c] {
                for (b, _, len) in s.text_boxes.get(&li).into_iter().flatten() {
                    if *len > 0 && b[3] > 0.0 {
                        boxes.push((*b, own));
                    }
                }
            }
        } else if s.node_type[c] == 1 && s.layout_of[c].is_some_and(|cl| s.style(cl, "display") == "inline") {
            stack.extend(s.children[c].iter().map(|g| (*g, false)));
        }
    }
    boxes.sort_by(|a, b| (a.0[1] + a.0[3] / 2.0).total_cmp(&(b.0[1] + b.0[3] / 2.0)));
    let mut lines: Vec<Vec<([f64; 4], bool)>> = Vec::new();
    for bx in boxes {
        let mid = bx.0[1] + bx.0[3] / 2.0;
        match lines.last_mut() {
            Some(line) if line.iter().any(|(o, _)| mid > o[1] && mid < o[1] + o[3]) => line.push(bx),
            _ => lines.push(vec![bx]),
        }
    }
    lines
        .into_iter()
        .map(|line| {
            let own = line.iter().any(|(_, o)| *o);
            let it = || line.iter().filter(|(_, o)| *o || !own).map(|(b, _)| b);
            // Across, the fragment holds all its content, its descendants' text too (a
            // highlighted `<pre><code>` line starts with a keyword's span); down, a descendant
            // of another size would stretch it, so its own text decides where it has some.
            let x0 = line.iter().map(|(b, _)| b[0]).fold(f64::MAX, f64::min);
            let x1 = line.iter().map(|(b, _)| b[0] + b[2]).fold(f64::MIN, f64::max);
            let y0 = it().map(|b| b[1]).fold(f64::MAX, f64::min);
            let y1 = it().map(|b| b[1] + b[3]).fold(f64::MIN, f64::max);
            [x0, y0, x1 - x0, y1 - y0]
        })
        .collect()
}

/// One rectangle per line fragment of an inline element: padding and border above and below
/// on each, the start side's on the first only, the end side's on the last only (left to right).
#[allow(clippy::too_many_arguments)]
pub(super) fn inline_fragments(
    cx: &mut Ctx<'_, '_>,
    n: usize,
    l: usize,
    node: &Node,
    paint: BoxPaint,
    lines: &[[f64; 4]],
    paint_order: Key,
    into: &mut Container,
) {
    let s = cx.s;
    let edge = |side: &str| s.px(l, &format!("padding-{side}")) + s.px(l, &format!("border-{side}-width"));
    let (top, right, bottom, left) = (edge("top"), edge("right"), edge("bottom"), edge("left"));
    let last = lines.len() - 1;
    for (i, line) in lines.iter().enumerate() {
        let (first, end) = (i == 0, i == last);
        let x0 = line[0] - if first { left } else { 0.0 };
        let x1 = line[0] + line[2] + if end { right } else { 0.0 };
        let (y0, y1) = (line[1] - top, line[1] + line[3] + bottom);
        let mut p = paint.clone();
        for (_, w) in p.strokes.iter_mut().chain(p.more.iter_mut()) {
            w[1] = if end { w[1] } else { 0.0 };
            w[3] = if first { w[3] } else { 0.0 };
        }
        // A colour left with no side on this fragment draws nothing on it; where that is the
        // node's own, the next colour's sides are.
        p.more.retain(|(_, w)| w.iter().any(|x| *x > 0.0));
        if p.strokes.as_ref().is_some_and(|(_, w)| w.iter().all(|x| *x <= 0.0)) && !p.more.is_empty() {
            p.strokes = Some(p.more.remove(0));
        }
        // radii: top-left, top-right, bottom-right, bottom-left
        if !first {
            p.radii[0] = 0.0;
            p.radii[3] = 0.0;
        }
        if !end {
            p.radii[1] = 0.0;
            p.radii[2] = 0.0;
        }
        let mut frag = Node {
            kind: NodeType::RECTANGLE,
            name: node.name.clone(),
            x: round(x0 - into.ox),
            y: round(y0 - into.oy),
            width: round(x1 - x0),
            height: round(y1 - y0),
            maker: Maker { dom: Some(n), flex_item: false },
            ..Node::default()
        };
        apply_paint(&mut frag, p);
        cx.count += 1;
        into.nodes.push((paint_order, frag));
    }
}

/// The canvas background: the root element's, else body's (CSS 2, 14.2), colour and images
/// alike; the element itself then paints none (`Ctx::root_bg_from`). Its images are sized for
/// the root element's box (CSS Backgrounds 3, 2.11.2), which may be shorter than the page.
/// Answers the page frame's fills, and the rectangles to draw behind everything.
pub(super) fn canvas(cx: &mut Ctx<'_, '_>, html: Option<usize>, page: [f64; 4]) -> (Vec<Paint>, Vec<Node>) {
    let s = cx.s;
    let body = html.and_then(|h| s.children[h].iter().copied().find(|c| s.tag(*c) == "body"));
    let paints_background = |n: usize| {
        s.layout_of[n].is_some_and(|l| {
            // A colour that cannot be read is drawn (grey), so it paints.
            let bg = s.style(l, "background-color");
            (!bg.is_empty() && parse_color(bg).is_none_or(|c| c.a > 0.0))
                || !matches!(s.style(l, "background-image"), "none" | "")
        })
    };
    cx.root_bg_from = html.filter(|h| paints_background(*h)).or(body.filter(|b| paints_background(*b)));
    let mut root_fills = Vec::new();
    let mut tiles = Vec::new();
    if let (Some(n), Some(h)) = (cx.root_bg_from, html) {
        let root_box = s.layout_of[h].map_or(page, |l| s.l_bounds[l]);
        let l = s.layout_of[n].unwrap_or(0);
        let name = s.name(n);
        let fills = background_fills(cx, n, l, root_box, &name);
        tiles = gradient_repeats(s, n, l, &fills, root_box, page);
        root_fills = fills.into_iter().map(|p| stretch_paint(p, root_box, page)).collect();
    }
    // Browsers show white where the canvas background is not opaque.
    let opaque = matches!(root_fills.first(), Some(Paint::Solid { opacity: None, .. }));
    if !opaque {
        root_fills.insert(0, Paint::Solid { color: Color { r: 1.0, g: 1.0, b: 1.0 }, opacity: None });
    }
    (root_fills, tiles)
}

/// A gradient of the canvas (`fills`, made for the root element's box `root_box`) repeats below
/// a root element shorter than the page (a short page in a taller viewport): each repeat is a
/// rectangle behind everything.
fn gradient_repeats(
    s: &Snapshot<'_>,
    n: usize,
    l: usize,
    fills: &[Paint],
    root_box: [f64; 4],
    page: [f64; 4],
) -> Vec<Node> {
    let gradients: Vec<Paint> = fills.iter().filter(|p| matches!(p, Paint::GradientLinear { .. })).cloned().collect();
    let repeat = s.style(l, "background-repeat");
    let repeats_y = match repeat.split_whitespace().collect::<Vec<_>>().as_slice() {
        [one] => matches!(*one, "repeat" | "repeat-y" | "space" | "round"),
        [_, y] => matches!(*y, "repeat" | "space" | "round"),
        _ => false,
    };
    let mut tiles = Vec::new();
    if gradients.is_empty() || !repeats_y || root_box[3] < 1.0 {
        return tiles;
    }
    let name = names::suffixed(&s.name(n), "background");
    let mut top = root_box[1] + root_box[3];
    while top < page[3] - 0.5 && tiles.len() < 100 {
        tiles.push(Node {
            kind: NodeType::RECTANGLE,
            name: name.clone(),
            x: round(root_box[0]),
            y: round(top),
            width: round(root_box[2]),
            height: round(root_box[3]),
            fills: Some(gradients.clone()),
            maker: Maker { dom: Some(n), flex_item: false },
            ..Node::default()
        });
        top += root_box[3];
    }
    tiles
}
