//! From a `DOMSnapshot.captureSnapshot` to the document: the layout tree walked in DOM order,
//! boxes that paint something (or clip, or fade, or lay out flex items) as frames, the rest
//! flattened into their nearest frame; text runs (one per line box) as TEXT nodes; images as
//! image fills or SVG nodes. Children are ordered by Chromium's paint order, negative z-index
//! first. An element CSS clips or stacks elsewhere than in its DOM parent's frame (an absolutely
//! positioned one outside an `overflow` inside its containing block, a negative z-index) is
//! moved to the frame where CSS paints it (`stack`). A flex container whose items Figma's auto
//! layout puts exactly where Chromium did becomes an auto layout frame; everything else keeps
//! absolute positions. What is drawn otherwise than CSS is warned of (`warn`).

use std::collections::{HashMap, HashSet};

use base64::Engine as _;
use serde_json::Value;

use crate::doc::{Dimension, Effect, FontName, Image, Node, Paint, Rgb, Rgba, Stop, Vector, Warning, MAX_WARNINGS};
use crate::render::STYLES;
use crate::{names, stack, warn};

/// Frames nest at most this deep (the artifact allows 40 levels); deeper boxes are flattened.
const MAX_FRAME_DEPTH: usize = 36;
/// The walk recurses at most this many elements deep; below, the content is drawn flat by a
/// loop. Chromium's HTML parser nests at most 512 deep, which would take the walk's recursion
/// near a 2 MiB thread stack in a debug build.
pub const MAX_WALK_DEPTH: usize = 128;
/// Drawn where a colour could not be read: seen, and not mistaken for the page's black text.
const UNREAD: Rgba = Rgba { r: 0.5, g: 0.5, b: 0.5, a: 1.0 };
/// The artifact allows 20 000 nodes; past this the rest of the page is left out (warned).
pub const MAX_NODES: usize = 19_000;
/// Figma's `createImage` limit per side, and the artifact's per image.
const MAX_IMAGE_SIDE: usize = 4096;
const MAX_IMAGE_BYTES: usize = 3 * 1024 * 1024;

/// The conversion's result.
#[derive(Debug, Clone)]
pub struct Converted {
    pub document: Node,
    pub images: Vec<Image>,
    pub warnings: Vec<Warning>,
    pub title: String,
}

/// A page rectangle to crop as PNG, for the image named `name`.
#[derive(Debug, Clone)]
pub struct Crop {
    pub name: String,
    pub rect: [f64; 4],
}

fn style_index(name: &str) -> usize {
    STYLES.iter().position(|s| *s == name).expect("a style the snapshot asks for")
}

/// Why a snapshot could not be read: Chromium's answer is not the shape it documents.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the renderer's snapshot is malformed: {0}")]
pub struct MalformedSnapshot(pub String);

/// The snapshot's main document, indexed.
pub struct Snapshot<'a> {
    strings: Vec<&'a str>,
    pub(crate) parent: Vec<i64>,
    pub(crate) node_type: Vec<i64>,
    node_name: Vec<&'a str>,
    pub(crate) node_value: Vec<Option<&'a str>>,
    attrs: Vec<Vec<(&'a str, &'a str)>>,
    pub(crate) children: Vec<Vec<usize>>,
    pub(crate) layout_of: Vec<Option<usize>>,
    /// Every layout object of a node: a pseudo element's generated text has its own.
    layouts_of: Vec<Vec<usize>>,
    current_src: HashMap<usize, &'a str>,
    input_value: HashMap<usize, &'a str>,
    pub(crate) pseudo: HashMap<usize, &'a str>,
    l_styles: Vec<Vec<i64>>,
    l_bounds: Vec<[f64; 4]>,
    pub(crate) l_text: Vec<Option<&'a str>>,
    l_paint: Vec<i64>,
    text_boxes: HashMap<usize, Vec<([f64; 4], usize, usize)>>,
    names: names::Index,
}

fn ints(v: &Value) -> Vec<i64> {
    v.as_array().map(|a| a.iter().map(|x| x.as_i64().unwrap_or(-1)).collect()).unwrap_or_default()
}

fn rect(v: &Value) -> [f64; 4] {
    let f = |i: usize| v.get(i).and_then(Value::as_f64).unwrap_or(0.0);
    [f(0), f(1), f(2), f(3)]
}

/// An array member of `v`, which must be there.
fn array<'v>(v: &'v Value, what: &str) -> Result<&'v Vec<Value>, MalformedSnapshot> {
    v.as_array().ok_or_else(|| MalformedSnapshot(format!("no {what} array")))
}

/// `what` has `n` entries, one per node or layout object.
fn same_len(what: &str, len: usize, n: usize) -> Result<(), MalformedSnapshot> {
    if len == n {
        return Ok(());
    }
    Err(MalformedSnapshot(format!("{what} has {len} entries for {n}")))
}

/// The parts of a snapshot the walk indexes without looking: one node type and name per node,
/// parents before their children (so the tree has no cycle), one style row of every asked
/// style per layout object, layout and text boxes that name existing nodes.
fn check_shape(snap: &Value) -> Result<(), MalformedSnapshot> {
    let strings = array(&snap["strings"], "strings")?.len();
    let doc = snap["documents"].get(0).ok_or_else(|| MalformedSnapshot("no document".into()))?;
    let nodes = &doc["nodes"];
    array(&nodes["parentIndex"], "nodes.parentIndex")?;
    let parent = ints(&nodes["parentIndex"]);
    let n = parent.len();
    for what in ["nodeType", "nodeName", "nodeValue"] {
        same_len(&format!("nodes.{what}"), array(&nodes[what], &format!("nodes.{what}"))?.len(), n)?;
    }
    if let Some(i) = parent.iter().enumerate().position(|(i, p)| *p < -1 || *p >= i as i64) {
        return Err(MalformedSnapshot(format!("node {i}'s parent is not an earlier node")));
    }
    if ints(&nodes["nodeName"]).iter().any(|s| usize::try_from(*s).map_or(true, |s| s >= strings)) {
        return Err(MalformedSnapshot("a node name is not a string of the table".into()));
    }
    let layout = &doc["layout"];
    let l = array(&layout["nodeIndex"], "layout.nodeIndex")?.len();
    same_len("layout.bounds", array(&layout["bounds"], "layout.bounds")?.len(), l)?;
    same_len("layout.text", array(&layout["text"], "layout.text")?.len(), l)?;
    let styles = array(&layout["styles"], "layout.styles")?;
    same_len("layout.styles", styles.len(), l)?;
    // The document's own layout object has no style: an empty row.
    if styles.iter().any(|row| row.as_array().is_none_or(|r| !r.is_empty() && r.len() != STYLES.len())) {
        return Err(MalformedSnapshot(format!("a layout object has not the {} styles asked for", STYLES.len())));
    }
    if ints(&layout["nodeIndex"]).iter().any(|i| usize::try_from(*i).map_or(true, |i| i >= n)) {
        return Err(MalformedSnapshot("a layout object names no node".into()));
    }
    let tb = &doc["textBoxes"];
    if !tb.is_null() {
        let boxes = array(&tb["layoutIndex"], "textBoxes.layoutIndex")?.len();
        same_len("textBoxes.bounds", array(&tb["bounds"], "textBoxes.bounds")?.len(), boxes)?;
    }
    Ok(())
}

impl<'a> Snapshot<'a> {
    pub fn parse(snap: &'a Value) -> Result<Self, MalformedSnapshot> {
        check_shape(snap)?;
        let strings: Vec<&str> =
            snap["strings"].as_array().into_iter().flatten().map(|s| s.as_str().unwrap_or("")).collect();
        let doc = &snap["documents"][0];
        let nodes = &doc["nodes"];
        let s = |i: i64| usize::try_from(i).ok().and_then(|i| strings.get(i).copied());
        let parent = ints(&nodes["parentIndex"]);
        let n = parent.len();
        let node_type = ints(&nodes["nodeType"]);
        let node_name = ints(&nodes["nodeName"]).into_iter().map(|i| s(i).unwrap_or("")).collect();
        let node_value = ints(&nodes["nodeValue"]).into_iter().map(s).collect();
        let attrs = nodes["attributes"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|pairs| {
                        ints(pairs).chunks(2).map(|kv| (s(kv[0]).unwrap_or(""), s(kv[1]).unwrap_or(""))).collect()
                    })
                    .collect()
            })
            .unwrap_or_default();
        let rare = |v: &Value| -> HashMap<usize, &'a str> {
            let idx = ints(&v["index"]);
            let val = ints(&v["value"]);
            idx.iter().zip(val).filter_map(|(i, v)| Some((usize::try_from(*i).ok()?, s(v)?))).collect()
        };
        let mut children = vec![Vec::new(); n];
        for (i, p) in parent.iter().enumerate() {
            if let Ok(p) = usize::try_from(*p) {
                children[p].push(i);
            }
        }
        let layout = &doc["layout"];
        let l_nodes = ints(&layout["nodeIndex"]);
        let mut layout_of = vec![None; n];
        let mut layouts_of = vec![Vec::new(); n];
        for (li, ni) in l_nodes.iter().enumerate() {
            if let Some(ni) = usize::try_from(*ni).ok().filter(|ni| *ni < n) {
                layout_of[ni].get_or_insert(li);
                layouts_of[ni].push(li);
            }
        }
        let l_styles = layout["styles"].as_array().map(|a| a.iter().map(ints).collect()).unwrap_or_default();
        let l_bounds = layout["bounds"].as_array().map(|a| a.iter().map(rect).collect()).unwrap_or_default();
        let l_text = ints(&layout["text"]).into_iter().map(s).collect();
        let l_paint = ints(&layout["paintOrders"]);
        let tb = &doc["textBoxes"];
        let mut text_boxes: HashMap<usize, Vec<([f64; 4], usize, usize)>> = HashMap::new();
        let bounds: Vec<[f64; 4]> = tb["bounds"].as_array().map(|a| a.iter().map(rect).collect()).unwrap_or_default();
        let (starts, lens) = (ints(&tb["start"]), ints(&tb["length"]));
        for (i, li) in ints(&tb["layoutIndex"]).into_iter().enumerate() {
            let (Ok(li), Some(b)) = (usize::try_from(li), bounds.get(i)) else { continue };
            let start = starts.get(i).copied().unwrap_or(0).max(0) as usize;
            let len = lens.get(i).copied().unwrap_or(0).max(0) as usize;
            text_boxes.entry(li).or_default().push((*b, start, len));
        }
        let mut parsed = Self {
            current_src: rare(&nodes["currentSourceURL"]),
            input_value: rare(&nodes["inputValue"]),
            pseudo: rare(&nodes["pseudoType"]),
            strings,
            parent,
            node_type,
            node_name,
            node_value,
            attrs,
            children,
            layout_of,
            layouts_of,
            l_styles,
            l_bounds,
            l_text,
            l_paint,
            text_boxes,
            names: names::Index::default(),
        };
        parsed.names = names::Index::new(&parsed);
        Ok(parsed)
    }

    pub(crate) fn style(&self, layout: usize, name: &str) -> &'a str {
        let i = style_index(name);
        self.l_styles
            .get(layout)
            .and_then(|s| s.get(i))
            .and_then(|i| usize::try_from(*i).ok())
            .and_then(|i| self.strings.get(i).copied())
            .unwrap_or("")
    }

    fn px(&self, layout: usize, name: &str) -> f64 {
        px(self.style(layout, name))
    }

    pub(crate) fn attr(&self, node: usize, name: &str) -> Option<&'a str> {
        self.attrs.get(node)?.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| *v)
    }

    pub(crate) fn tag(&self, node: usize) -> String {
        self.node_name[node].to_ascii_lowercase()
    }

    /// The node's tag is one of `tags` (lower case), without making a string.
    pub(crate) fn is_tag(&self, node: usize, tags: &[&str]) -> bool {
        tags.iter().any(|t| self.node_name[node].eq_ignore_ascii_case(t))
    }

    /// The layer name of element `node` (`names`).
    pub(crate) fn name(&self, node: usize) -> String {
        self.names.name(self, node)
    }

    /// `tag#id`, or `tag.first-class`, or `tag`: the element in a DOM path.
    fn label(&self, node: usize) -> String {
        let tag = match self.pseudo.get(&node) {
            Some(p) => format!("::{p}"),
            None => self.tag(node),
        };
        if let Some(id) = self.attr(node, "id").filter(|s| !s.is_empty()) {
            return format!("{tag}#{id}");
        }
        match self.attr(node, "class").and_then(|c| c.split_whitespace().next()) {
            Some(c) => format!("{tag}.{c}"),
            None => tag,
        }
    }

    /// `body > main > div.card:nth-child(2)`, from below `html`.
    pub fn path(&self, mut node: usize) -> String {
        let mut parts = Vec::new();
        while self.node_type.get(node) == Some(&3) || self.pseudo.contains_key(&node) {
            match usize::try_from(self.parent[node]) {
                Ok(p) => node = p,
                Err(_) => break,
            }
        }
        loop {
            if self.node_type[node] != 1 || self.tag(node) == "html" {
                break;
            }
            let mut part = self.label(node);
            if part.starts_with("body") {
                parts.push(part);
                break;
            }
            if let Ok(p) = usize::try_from(self.parent[node]) {
                let siblings: Vec<usize> =
                    self.children[p].iter().copied().filter(|c| self.node_type[*c] == 1).collect();
                if siblings.len() > 1 {
                    if let Some(i) = siblings.iter().position(|c| *c == node) {
                        part.push_str(&format!(":nth-child({})", i + 1));
                    }
                }
                parts.push(part);
                node = p;
            } else {
                parts.push(part);
                break;
            }
        }
        parts.reverse();
        // The artifact takes paths of up to 2 000 characters; the element is at the end.
        warn::keep_end(parts.join(" > "), 1000)
    }

    fn title(&self) -> Option<String> {
        let t = (0..self.node_name.len()).find(|i| self.node_name[*i].eq_ignore_ascii_case("title"))?;
        let text: String = self.children[t].iter().filter_map(|c| self.node_value[*c]).collect();
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        (!text.is_empty()).then_some(text)
    }
}

/// `12.5px` → 12.5; anything else → 0.
pub(crate) fn px(s: &str) -> f64 {
    s.trim().strip_suffix("px").and_then(|n| n.trim().parse().ok()).unwrap_or(0.0)
}

fn round(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// A computed colour in any syntax Chromium serializes (see `color`), in sRGB.
pub fn parse_color(s: &str) -> Option<Rgba> {
    crate::color::parse(s)
}

fn solid(c: &Rgba) -> Paint {
    Paint::Solid { color: Rgb { r: c.r, g: c.g, b: c.b }, opacity: (c.a < 1.0).then_some(round(c.a * 1000.0) / 1000.0) }
}

/// Splits at commas outside parentheses.
fn split_top(s: &str) -> Vec<&str> {
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
fn take_color(s: &str) -> (Option<&str>, String) {
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
fn shadows(s: &str) -> (Vec<Effect>, Vec<String>) {
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
            kind: if inset { "INNER_SHADOW" } else { "DROP_SHADOW" },
            color,
            offset: Vector { x: lens.first().copied().unwrap_or(0.0), y: lens.get(1).copied().unwrap_or(0.0) },
            radius: lens.get(2).copied().unwrap_or(0.0),
            spread: lens.get(3).copied().unwrap_or(0.0),
        });
    }
    // CSS paints the first shadow on top; Figma paints effects in list order, the last on top.
    out.reverse();
    (out, unread)
}

/// CSS `linear-gradient(…)` (computed) for a box of `w`×`h` → a Figma linear gradient.
pub fn parse_linear_gradient(s: &str, w: f64, h: f64) -> Option<Paint> {
    linear_gradient(s, w, h).map(|(p, _)| p)
}

/// A linear gradient, and the stop colours that could not be read (drawn grey).
fn linear_gradient(s: &str, w: f64, h: f64) -> Option<(Paint, Vec<String>)> {
    let inner = s.trim().strip_prefix("linear-gradient(")?.strip_suffix(')')?;
    let mut args = split_top(inner);
    let mut angle = 180.0f64;
    if let Some(first) = args.first() {
        let f = first.trim();
        let named = |side: &str| -> Option<f64> {
            Some(match side {
                "to top" => 0.0,
                "to right" => 90.0,
                "to bottom" => 180.0,
                "to left" => 270.0,
                "to top right" | "to right top" => (w / h).atan().to_degrees(),
                "to bottom right" | "to right bottom" => 180.0 - (w / h).atan().to_degrees(),
                "to bottom left" | "to left bottom" => 180.0 + (w / h).atan().to_degrees(),
                "to top left" | "to left top" => 360.0 - (w / h).atan().to_degrees(),
                _ => return None,
            })
        };
        let parsed = if let Some(d) = f.strip_suffix("deg") {
            d.parse().ok()
        } else if let Some(t) = f.strip_suffix("turn") {
            t.parse::<f64>().ok().map(|t| t * 360.0)
        } else if let Some(r) = f.strip_suffix("rad") {
            r.parse::<f64>().ok().map(f64::to_degrees)
        } else {
            named(f)
        };
        if let Some(a) = parsed {
            angle = a;
            args.remove(0);
        }
    }
    let rad = angle.to_radians();
    let (sin, cos) = (rad.sin(), rad.cos());
    // The gradient line's length for this box and angle (CSS Images 3, 3.1.1).
    let len = (w * sin).abs() + (h * cos).abs();
    if len <= 0.0 || args.is_empty() {
        return None;
    }
    let mut stops: Vec<(Rgba, Option<f64>)> = Vec::new();
    let mut unread = Vec::new();
    for a in &args {
        // A stop without a colour is an interpolation hint: left out, the colours run evenly.
        let (Some(text), rest) = take_color(a) else { continue };
        let color = parse_color(text).unwrap_or_else(|| {
            unread.push(text.to_owned());
            UNREAD
        });
        let pos = rest.split_whitespace().next().and_then(|p| {
            p.strip_suffix('%')
                .and_then(|v| v.parse::<f64>().ok())
                .map(|v| v / 100.0)
                .or_else(|| p.strip_suffix("px").and_then(|v| v.parse::<f64>().ok()).map(|v| v / len))
        });
        stops.push((color, pos));
    }
    // Missing positions: the first 0, the last 1, the others spread evenly between known ones.
    let n = stops.len();
    if n == 0 {
        return None;
    }
    if stops[0].1.is_none() {
        stops[0].1 = Some(0.0);
    }
    if stops[n - 1].1.is_none() {
        stops[n - 1].1 = Some(1.0);
    }
    let mut i = 0;
    while i < n {
        if stops[i].1.is_some() {
            i += 1;
            continue;
        }
        let prev = i - 1;
        let next = (i..n).find(|j| stops[*j].1.is_some()).unwrap_or(n - 1);
        let (a, b) = (stops[prev].1.unwrap_or(0.0), stops[next].1.unwrap_or(1.0));
        for (k, stop) in stops.iter_mut().enumerate().take(next).skip(i) {
            stop.1 = Some(a + (b - a) * (k - prev) as f64 / (next - prev) as f64);
        }
        i = next;
    }
    // t(u, v) for the unit square: the projection on the gradient line, 0 at its start.
    let a0 = w * sin / len;
    let b0 = -h * cos / len;
    let c0 = 0.5 - (a0 + b0) / 2.0;
    // A second row perpendicular to the first, so the transform is invertible.
    let (a1, b1) = (-b0, a0);
    let c1 = 0.5 - (a1 + b1) / 2.0;
    let r = |v: f64| (v * 10_000.0).round() / 10_000.0;
    let paint = Paint::GradientLinear {
        gradient_transform: [[r(a0), r(b0), r(c0)], [r(a1), r(b1), r(c1)]],
        gradient_stops: stops
            .into_iter()
            .map(|(color, p)| Stop { position: r(p.unwrap_or(0.0).clamp(0.0, 1.0)), color })
            .collect(),
    };
    Some((paint, unread))
}

/// A CSS weight and style as Figma names a font's style.
pub fn font_style(weight: &str, italic: bool) -> String {
    let w: u32 = weight.trim().parse().unwrap_or(match weight.trim() {
        "bold" => 700,
        _ => 400,
    });
    let name = match w {
        0..=149 => "Thin",
        150..=249 => "Extra Light",
        250..=349 => "Light",
        350..=449 => "Regular",
        450..=549 => "Medium",
        550..=649 => "Semi Bold",
        650..=749 => "Bold",
        750..=849 => "Extra Bold",
        _ => "Black",
    };
    match (name, italic) {
        ("Regular", true) => "Italic".into(),
        (n, true) => format!("{n} Italic"),
        (n, false) => n.into(),
    }
}

/// The first family of a CSS `font-family` list, unquoted.
fn first_family(list: &str) -> String {
    list.split(',').next().unwrap_or("").trim().trim_matches(['"', '\'']).to_owned()
}

const GENERIC_FAMILIES: &[&str] =
    &["serif", "sans-serif", "monospace", "cursive", "fantasy", "system-ui", "ui-sans-serif", "ui-monospace"];

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

fn percent_decode(s: &str) -> Vec<u8> {
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
enum ImageSource {
    /// Figma takes these bytes as they are.
    Ready(&'static str, Vec<u8>),
    /// Chromium's rendering of the box, cropped from the page.
    Crop,
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
}

impl Ctx<'_, '_> {
    /// Adds a warning, within the artifact's limits: [`MAX_WARNINGS`] of them, messages and
    /// node names of at most 1 000 characters (paths are cut by [`Snapshot::path`]).
    fn warn(&mut self, code: &'static str, message: impl Into<String>, dom: usize, node: &str) {
        if self.warnings.len() >= MAX_WARNINGS {
            return;
        }
        let path = self.s.path(dom);
        let message = warn::keep_end(message.into(), 1000);
        let node = node.chars().take(1000).collect();
        self.warnings.push(Warning { code, message, path, node, indices: None, dom });
    }

    /// An `unsupported_css` warning about `property`, once per element and property.
    fn css(&mut self, n: usize, name: &str, property: &'static str, message: String) {
        if self.warned.insert((n, property)) {
            self.warn("unsupported_css", message, n, name);
        }
    }

    /// A `depth_limit` warning, once per parent element: its children are alike too deep.
    fn depth_limit(&mut self, n: usize, name: &str, message: String) {
        let parent = usize::try_from(self.s.parent[n]).unwrap_or(n);
        if self.warned.insert((parent, "depth_limit")) {
            self.warn("depth_limit", message, n, name);
        }
    }

    /// A colour property of layout object `l`; one that cannot be read is warned and drawn
    /// grey, so its box is still drawn. `None` when the snapshot has no value.
    fn color(&mut self, n: usize, l: usize, property: &'static str, name: &str) -> Option<Rgba> {
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
    fn unread(&mut self, n: usize, name: &str, property: &'static str, colors: &[String]) {
        if let Some(c) = colors.first() {
            self.css(n, name, property, format!("{property}: colour {} could not be read: drawn grey", warn::quote(c)));
        }
    }

    /// The nodes moved into the frame `id` from deeper down.
    fn take_moved(&mut self, id: usize) -> Vec<(Key, Node)> {
        self.moved.remove(&id).unwrap_or_default()
    }

    /// The family Chromium drew the `font-family` list with. When its look-up failed (or was
    /// never made: the renderer asks for the lists of text nodes only), the list's first family
    /// is named, which may not be the one drawn: logged and warned, once per list.
    fn font(&mut self, css_family: &str, dom: usize) -> String {
        let wanted = first_family(css_family);
        if let Some(used) = self.fonts.get(css_family) {
            return used.clone();
        }
        if self.warned_fonts.insert((css_family.to_owned(), String::new())) {
            tracing::warn!(
                font_family = css_family,
                "no platform font known for this font-family; naming its first family"
            );
            let message = format!(
                "the font drawn for font-family: {} is unknown (its look-up failed); named {wanted}, which may not be it",
                warn::quote(css_family)
            );
            let name = self.s.name(dom);
            self.warn("font_substituted", message, dom, &name);
        }
        wanted
    }

    fn add_image(&mut self, key: &str, mime: &'static str, bytes: Vec<u8>) -> String {
        if let Some(name) = self.by_url.get(key) {
            return name.clone();
        }
        let name = format!("image-{}", self.images.len() + 1);
        self.images.push(Image { name: name.clone(), mime, bytes });
        self.by_url.insert(key.to_owned(), name.clone());
        name
    }

    fn crop(&mut self, rect: [f64; 4]) -> String {
        let name = format!("image-{}", self.images.len() + 1);
        // Filled in once the page is cropped.
        self.images.push(Image { name: name.clone(), mime: "image/png", bytes: Vec::new() });
        self.crops.push(Crop { name: name.clone(), rect });
        name
    }

    /// Judges a data: image: Figma-ready, or to crop from the page (with the warning why).
    fn image_source(&mut self, url: &str, dom: usize, name: &str) -> Option<ImageSource> {
        let Some((mime, bytes)) = decode_data_url(url) else {
            self.warn(
                "image_unavailable",
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
                        "image_converted",
                        format!("{mime} bytes were unreadable; used the rendered pixels"),
                        dom,
                        name,
                    );
                    Some(ImageSource::Crop)
                } else if too_big {
                    self.warn(
                        "image_too_large",
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
                self.warn("image_converted", format!("{mime} converted to PNG"), dom, name);
                Some(ImageSource::Crop)
            }
        }
    }
}

/// Converts a snapshot. `crops` lists the page rectangles whose PNGs the caller must put into
/// the images of the same names.
pub fn convert(
    snap: &Value,
    width: u32,
    height: f64,
    platform_fonts: &[(String, String)],
) -> Result<(Converted, Vec<Crop>), MalformedSnapshot> {
    let s = Snapshot::parse(snap)?;
    let mut cx = Ctx {
        s: &s,
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
        negative_hosts: stack::negative_hosts(&s),
        walk_depth: 0,
    };
    let title = s.title().unwrap_or_else(|| "Page".into());
    // The canvas background: the root element's, else body's (CSS 2, 14.2), colour and images
    // alike; the element itself then paints none. Its images are sized for the root element's
    // box (CSS Backgrounds 3, 2.11.2), which may be shorter than the page.
    let html = (0..s.node_name.len()).find(|i| s.node_type[*i] == 1 && s.tag(*i) == "html");
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
    let page = [0.0, 0.0, f64::from(width), round(height.max(1.0))];
    let mut root_fills = Vec::new();
    let mut tiles = Vec::new();
    if let (Some(n), Some(h)) = (cx.root_bg_from, html) {
        let root_box = s.layout_of[h].map_or(page, |l| s.l_bounds[l]);
        let l = s.layout_of[n].unwrap_or(0);
        let name = s.name(n);
        let fills = background_fills(&mut cx, n, l, root_box, &name);
        // A gradient repeats below a root element shorter than the page (a short page in a
        // taller viewport): each repeat is a rectangle behind everything.
        let gradients: Vec<Paint> =
            fills.iter().filter(|p| matches!(p, Paint::GradientLinear { .. })).cloned().collect();
        let repeat = s.style(l, "background-repeat");
        let repeats_y = match repeat.split_whitespace().collect::<Vec<_>>().as_slice() {
            [one] => matches!(*one, "repeat" | "repeat-y" | "space" | "round"),
            [_, y] => matches!(*y, "repeat" | "space" | "round"),
            _ => false,
        };
        if !gradients.is_empty() && repeats_y && root_box[3] >= 1.0 {
            let mut top = root_box[1] + root_box[3];
            while top < page[3] - 0.5 && tiles.len() < 100 {
                tiles.push(Node {
                    kind: "RECTANGLE",
                    name: names::suffixed(&name, "background"),
                    x: round(root_box[0]),
                    y: round(top),
                    width: round(root_box[2]),
                    height: round(root_box[3]),
                    fills: Some(gradients.clone()),
                    dom: Some(n),
                    ..Node::default()
                });
                top += root_box[3];
            }
        }
        root_fills = fills.into_iter().map(|p| stretch_paint(p, root_box, page)).collect();
    }
    // Browsers show white where the canvas background is not opaque.
    let opaque = matches!(root_fills.first(), Some(Paint::Solid { opacity: None, .. }));
    if !opaque {
        root_fills.insert(0, Paint::Solid { color: Rgb { r: 1.0, g: 1.0, b: 1.0 }, opacity: None });
    }
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
    let document = Node {
        kind: "FRAME",
        name: title.clone(),
        width: page[2],
        height: page[3],
        fills: Some(root_fills),
        clips_content: Some(true),
        children: Some(children.into_iter().map(|(_, n)| n).collect()),
        ..Node::default()
    };
    locate(&document, &mut cx.warnings);
    let crops = std::mem::take(&mut cx.crops);
    Ok((Converted { document, images: cx.images, warnings: cx.warnings, title }, crops))
}

/// Gives each warning that names a node the child indices of the first node (in document order)
/// made from its element under that name, or from its element at all.
fn locate(root: &Node, warnings: &mut [Warning]) {
    fn walk<'n>(n: &'n Node, at: &mut Vec<usize>, found: &mut HashMap<usize, Vec<(&'n str, Vec<usize>)>>) {
        if let Some(dom) = n.dom {
            found.entry(dom).or_default().push((n.name.as_str(), at.clone()));
        }
        for (i, c) in n.children.iter().flatten().enumerate() {
            at.push(i);
            walk(c, at, found);
            at.pop();
        }
    }
    let mut found = HashMap::new();
    walk(root, &mut Vec::new(), &mut found);
    for w in warnings.iter_mut().filter(|w| !w.node.is_empty()) {
        let made = found.get(&w.dom);
        w.indices = made
            .and_then(|m| m.iter().find(|(name, _)| *name == w.node).or(m.first()))
            .map(|(_, at)| at.clone())
            .or_else(|| (w.node == root.name).then(Vec::new));
    }
}

/// What an element's box paints: fills, strokes, radii, effects.
struct BoxPaint {
    fills: Vec<Paint>,
    strokes: Option<(Paint, [f64; 4])>,
    radii: [f64; 4],
    effects: Vec<Effect>,
}

/// A paint made for the box `from` (page coordinates), for a node whose box is `to`: a gradient
/// keeps its page position and size (the transform works in the node's unit square).
fn stretch_paint(p: Paint, from: [f64; 4], to: [f64; 4]) -> Paint {
    match p {
        Paint::GradientLinear { gradient_transform: t, gradient_stops } if from[2] > 0.0 && from[3] > 0.0 => {
            // Unit square of `to` → of `from`: u = (x0' + u' w') / w - x0 / w, likewise v.
            let (su, sv) = (to[2] / from[2], to[3] / from[3]);
            let (du, dv) = ((to[0] - from[0]) / from[2], (to[1] - from[1]) / from[3]);
            let r = |v: f64| (v * 10_000.0).round() / 10_000.0;
            let row = |[a, b, c]: [f64; 3]| [r(a * su), r(b * sv), r(a * du + b * dv + c)];
            Paint::GradientLinear { gradient_transform: [row(t[0]), row(t[1])], gradient_stops }
        }
        p => p,
    }
}

fn box_paint(cx: &mut Ctx<'_, '_>, n: usize, l: usize, b: [f64; 4], name: &str) -> BoxPaint {
    // The canvas took this element's background.
    let fills = if cx.root_bg_from == Some(n) { Vec::new() } else { background_fills(cx, n, l, b, name) };
    let (strokes, radii, effects) = box_edges(cx, n, l, b, name);
    BoxPaint { fills, strokes, radii, effects }
}

/// An element's background colour and images, bottom first.
fn background_fills(cx: &mut Ctx<'_, '_>, n: usize, l: usize, b: [f64; 4], name: &str) -> Vec<Paint> {
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
                    "contain" => "FIT",
                    "cover" => "FILL",
                    _ => "FILL",
                };
                match cx.image_source(url, n, name) {
                    Some(ImageSource::Ready("image/svg+xml", _)) | Some(ImageSource::Crop) => {
                        let r = cx.crop(b);
                        fills.push(Paint::Image { image_ref: r, scale_mode: "FILL" });
                    }
                    Some(ImageSource::Ready(m, bytes)) => {
                        let r = cx.add_image(url, m, bytes);
                        fills.push(Paint::Image { image_ref: r, scale_mode: mode });
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

/// An element's border (one colour, per-side widths), corner radii and shadows.
#[allow(clippy::type_complexity)]
fn box_edges(
    cx: &mut Ctx<'_, '_>,
    n: usize,
    l: usize,
    b: [f64; 4],
    name: &str,
) -> (Option<(Paint, [f64; 4])>, [f64; 4], Vec<Effect>) {
    let s = cx.s;
    let sides = ["top", "right", "bottom", "left"];
    let mut widths = [0.0; 4];
    let mut colors: Vec<Option<Rgba>> = Vec::new();
    let color_of = ["border-top-color", "border-right-color", "border-bottom-color", "border-left-color"];
    for (i, side) in sides.iter().enumerate() {
        let style = s.style(l, &format!("border-{side}-style"));
        let w = s.px(l, &format!("border-{side}-width"));
        if style == "none" || style == "hidden" || w <= 0.0 {
            continue;
        }
        let c = cx.color(n, l, color_of[i], name).filter(|c| c.a > 0.0);
        if c.is_some() {
            widths[i] = w;
            colors.push(c);
        }
    }
    let strokes = colors.first().cloned().flatten().map(|c| {
        if colors.iter().any(|o| o.as_ref() != Some(&c)) {
            let message = "border-color: sides of different colours drawn in the first side's".into();
            cx.css(n, name, "border-color", message);
        }
        (solid(&c), widths)
    });
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

fn apply_paint(node: &mut Node, p: BoxPaint) {
    node.fills = Some(p.fills);
    if let Some((paint, w)) = p.strokes {
        node.strokes = Some(vec![paint]);
        node.stroke_align = Some("INSIDE");
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
        kind: "FRAME",
        name: svg.name.clone(),
        x: svg.x,
        y: svg.y,
        width: svg.width,
        height: svg.height,
        clips_content: Some(true),
        dom: svg.dom,
        flex_item: svg.flex_item,
        ..Node::default()
    };
    apply_paint(&mut frame, paint);
    let inner = Node {
        x: round(left),
        y: round(top),
        width: round((svg.width - left - right).max(0.0)),
        height: round((svg.height - top - bottom).max(0.0)),
        flex_item: false,
        ..svg
    };
    cx.count += 1;
    frame.children = Some(vec![inner]);
    frame
}

/// A cell of a table whose borders collapse: Chromium's cell box runs to the middle of each
/// shared border, so the border is centred on the box's edge, not inside it.
fn collapsed_border(s: &Snapshot<'_>, l: usize, node: &mut Node) {
    if node.strokes.is_some() && s.style(l, "display") == "table-cell" && s.style(l, "border-collapse") == "collapse" {
        node.stroke_align = Some("CENTER");
    }
}

fn paints_something(p: &BoxPaint) -> bool {
    !p.fills.is_empty() || p.strokes.is_some() || !p.effects.is_empty()
}

fn visit(cx: &mut Ctx<'_, '_>, n: usize, into: &mut Container, flex_item: bool) {
    if cx.count >= MAX_NODES {
        return;
    }
    let s = cx.s;
    match s.node_type[n] {
        3 => {
            if let Some(l) = s.layout_of[n] {
                text(cx, n, l, into);
            }
            return;
        }
        1 if matches!(s.tag(n).as_str(), "head" | "script" | "style" | "template" | "noscript") => return,
        _ => {}
    }
    if cx.walk_depth >= MAX_WALK_DEPTH {
        flatten(cx, n, into);
        return;
    }
    cx.walk_depth += 1;
    match s.layout_of[n].filter(|_| s.node_type[n] == 1) {
        // display: contents, or a node without a box whose children may still have one.
        None => {
            for c in s.children[n].clone() {
                visit(cx, c, into, false);
            }
        }
        Some(l) => match placement(cx, n, l) {
            Some((target, clip)) => move_out(cx, n, l, target, clip),
            None => element(cx, n, l, into, flex_item),
        },
    }
    cx.walk_depth -= 1;
}

/// The frame (an index into `cx.open`) an element must be drawn in when it is not its DOM
/// parent's, and the clip of the frames it leaves that do clip it in CSS: an absolutely or
/// fixed positioned element leaves the clipping frames inside its containing block; an
/// element of negative `z-index` goes to its stacking context's frame, to paint below that
/// frame's in-flow content.
fn placement(cx: &mut Ctx<'_, '_>, n: usize, l: usize) -> Option<(usize, Option<[f64; 4]>)> {
    let s = cx.s;
    let out_of_flow = matches!(s.style(l, "position"), "absolute" | "fixed");
    let cb = if out_of_flow { stack::containing_block(s, n, l) } else { None };
    // The frame clips this element in CSS: it is its containing block or one of its ancestors.
    let clips_it = |o: &Open| {
        o.clips && (!out_of_flow || o.owner.zip(cb).is_some_and(|(ow, cb)| ow == cb || stack::is_ancestor(s, ow, cb)))
    };
    let target = if stack::negative_z(s, n, l).is_some() {
        let sc = stack::stacking_context(s, n);
        cx.open.iter().rposition(|o| o.owner == sc)?
    } else if out_of_flow {
        cx.open.iter().position(|o| o.owner.is_some() && o.clips && !clips_it(o))? - 1
    } else {
        return None;
    };
    let left = cx.open.get(target + 1..).filter(|l| !l.is_empty())?;
    if let Some(f) = left.iter().find(|o| o.faded && !clips_it(o)) {
        // Its opacity applies to this element, the clip does not: Figma cannot do both.
        // The frames are named as the designer sees them in the layer list.
        let label = |o: &Open| o.owner.map(|o| s.name(o)).unwrap_or_default();
        let message = format!(
            "position: {}: drawn clipped by \"{}\" (CSS does not clip it there), to keep the opacity of \"{}\"",
            warn::quote(s.style(l, "position")),
            label(&left[0]),
            label(f)
        );
        cx.css(n, &s.name(n), "position", message);
        return None;
    }
    let clip = left.iter().filter(|o| clips_it(o)).map(|o| o.rect).reduce(intersect);
    Some((target, clip))
}

fn intersect(a: [f64; 4], b: [f64; 4]) -> [f64; 4] {
    let (x0, y0) = (a[0].max(b[0]), a[1].max(b[1]));
    let (x1, y1) = ((a[0] + a[2]).min(b[0] + b[2]), (a[1] + a[3]).min(b[1] + b[3]));
    [x0, y0, (x1 - x0).max(0.0), (y1 - y0).max(0.0)]
}

/// Draws element `n` into the open frame `target` rather than its DOM parent's, inside a
/// clipping frame of `clip` (page coordinates) when the frames it left clipped it.
fn move_out(cx: &mut Ctx<'_, '_>, n: usize, l: usize, target: usize, clip: Option<[f64; 4]>) {
    let (id, tox, toy, depth) = {
        let t = &cx.open[target];
        (t.id, t.ox, t.oy, t.depth)
    };
    let clip = clip.filter(|_| depth + 1 < MAX_FRAME_DEPTH);
    let (ox, oy, inner_depth) = match clip {
        Some(r) => (r[0], r[1], depth + 1),
        None => (tox, toy, depth),
    };
    let left = cx.open.split_off(target + 1);
    let mut here = Container { ox, oy, depth: inner_depth, nodes: Vec::new() };
    element(cx, n, l, &mut here, false);
    cx.open.extend(left);
    let Some(r) = clip else {
        cx.moved.entry(id).or_default().extend(here.nodes);
        return;
    };
    if here.nodes.is_empty() {
        return;
    }
    here.nodes.sort_by_key(|(k, _)| *k);
    let first = here.nodes[0].0;
    let wrapper = Node {
        kind: "FRAME",
        name: names::suffixed(&cx.s.name(n), "clip"),
        x: round(r[0] - tox),
        y: round(r[1] - toy),
        width: round(r[2]),
        height: round(r[3]),
        fills: Some(Vec::new()),
        clips_content: Some(true),
        children: Some(here.nodes.into_iter().map(|(_, k)| k).collect()),
        ..Node::default()
    };
    cx.count += 1;
    cx.moved.entry(id).or_default().push((first, wrapper));
}

/// The content of `n`, below the walk's depth limit: every box and text drawn in `into` at its
/// place on the page, by a loop rather than recursion (no clipping, opacity or auto layout).
fn flatten(cx: &mut Ctx<'_, '_>, n: usize, into: &mut Container) {
    let s = cx.s;
    let name = s.name(n);
    let message = format!("nested over {MAX_WALK_DEPTH} elements deep: the content below is drawn flat");
    cx.depth_limit(n, &name, message);
    let mut todo = vec![n];
    while let Some(c) = todo.pop() {
        if cx.count >= MAX_NODES {
            return;
        }
        let tag = s.tag(c);
        let leaf = s.pseudo.contains_key(&c)
            || matches!(
                tag.as_str(),
                "img" | "svg" | "input" | "textarea" | "select" | "canvas" | "video" | "iframe" | "object" | "embed"
            );
        match (s.node_type[c], s.layout_of[c]) {
            (3, Some(l)) => text(cx, c, l, into),
            (1, _) if matches!(tag.as_str(), "script" | "style" | "template" | "noscript") => {}
            (1, Some(l)) if leaf => element(cx, c, l, into, false),
            (1, Some(l)) => {
                let b = s.l_bounds[l];
                let paint = box_paint(cx, c, l, b, &s.name(c));
                if paints_something(&paint) && s.style(l, "visibility") != "hidden" {
                    let mut node = Node {
                        kind: "RECTANGLE",
                        name: s.name(c),
                        x: round(b[0] - into.ox),
                        y: round(b[1] - into.oy),
                        width: round(b[2]),
                        height: round(b[3]),
                        dom: Some(c),
                        ..Node::default()
                    };
                    apply_paint(&mut node, paint);
                    cx.count += 1;
                    into.nodes.push((key(s, c, l), node));
                }
                todo.extend(s.children[c].iter().rev());
            }
            _ => todo.extend(s.children[c].iter().rev()),
        }
    }
}

/// An element with a box, drawn in `into`.
fn element(cx: &mut Ctx<'_, '_>, n: usize, l: usize, into: &mut Container, flex_item: bool) {
    let s = cx.s;
    let b = s.l_bounds[l];
    let name = s.name(n);
    let visible = s.style(l, "visibility") != "hidden";
    // Generated content (::before, ::after, ::marker) converts like any box; it is named so.
    if let Some(p) = s.pseudo.get(&n) {
        if !matches!(*p, "before" | "after" | "marker") {
            cx.warn("pseudo_element", format!("::{p} not converted"), n, &name);
            return;
        }
    }
    let mut node = Node {
        kind: "FRAME",
        name: name.clone(),
        x: round(b[0] - into.ox),
        y: round(b[1] - into.oy),
        width: round(b[2]),
        height: round(b[3]),
        dom: Some(n),
        flex_item,
        ..Node::default()
    };
    let opacity: f64 = s.style(l, "opacity").parse().unwrap_or(1.0);
    if opacity < 1.0 {
        node.opacity = Some(round(opacity));
    }
    let paint = if visible {
        for (property, message) in warn::approximations(s, n, l, b) {
            cx.css(n, &name, property, message);
        }
        box_paint(cx, n, l, b, &name)
    } else {
        BoxPaint { fills: vec![], strokes: None, radii: [0.0; 4], effects: vec![] }
    };
    let Some(paint) = replaced(cx, n, l, node.clone(), paint, into) else { return };
    if s.pseudo.contains_key(&n) {
        // Generated content: its text is layout objects of the pseudo element itself.
        let generated: Vec<usize> =
            s.layouts_of[n].iter().copied().filter(|li| s.text_boxes.contains_key(li)).collect();
        if !paints_something(&paint) && opacity >= 1.0 && stack::negative_z(s, n, l).is_none() {
            for li in generated {
                if !symbol_marker(cx, n, li, into) {
                    text(cx, n, li, into);
                }
            }
            return;
        }
    }
    frame(cx, n, l, node, paint, into);
}

/// Replaced content (images, SVG, themed controls, embedded content), drawn in `into`; answers
/// the paint back for any other element.
fn replaced(
    cx: &mut Ctx<'_, '_>,
    n: usize,
    l: usize,
    mut node: Node,
    paint: BoxPaint,
    into: &mut Container,
) -> Option<BoxPaint> {
    let s = cx.s;
    let (tag, b, name) = (s.tag(n), s.l_bounds[l], node.name.clone());
    let visible = s.style(l, "visibility") != "hidden";
    let k = key(s, n, l);
    match tag.as_str() {
        "img" => {
            if visible {
                node = image(cx, n, l, node, paint);
                cx.count += 1;
                into.nodes.push((k, node));
            }
        }
        "svg" => {
            if visible {
                let markup = svg_markup(s, n, b);
                let r = cx.add_image(&markup, "image/svg+xml", markup.clone().into_bytes());
                node.kind = "SVG";
                node.image_ref = Some(r);
                node = boxed_svg(cx, l, node, paint);
                cx.count += 1;
                into.nodes.push((k, node));
            }
        }
        "input"
            if matches!(s.attr(n, "type").map(str::to_ascii_lowercase).as_deref(), Some("checkbox" | "radio"))
                && s.style(l, "appearance") != "none" =>
        {
            // Chromium draws these with its own theme, in no CSS the snapshot holds: the
            // control is its rendered picture.
            if visible {
                let r = cx.crop(b);
                node.kind = "RECTANGLE";
                node.fills = Some(vec![Paint::Image { image_ref: r, scale_mode: "FILL" }]);
                cx.count += 1;
                into.nodes.push((k, node));
            }
        }
        "canvas" | "video" | "iframe" | "object" | "embed" => {
            let code = match tag.as_str() {
                "canvas" => "canvas_skipped",
                "video" => "video_skipped",
                _ => "iframe_skipped",
            };
            cx.warn(code, format!("<{tag}> content is not converted; its box is kept"), n, &name);
            node.kind = "RECTANGLE";
            apply_paint(&mut node, paint);
            cx.count += 1;
            into.nodes.push((k, node));
        }
        _ => return Some(paint),
    }
    None
}

/// An `<img>`: an image fill of its box (with the box's paint below it), or an SVG node.
fn image(cx: &mut Ctx<'_, '_>, n: usize, l: usize, mut node: Node, paint: BoxPaint) -> Node {
    let s = cx.s;
    let url = s.current_src.get(&n).copied().or_else(|| s.attr(n, "src")).unwrap_or("");
    let mut content = None;
    match cx.image_source(url, n, &node.name) {
        Some(ImageSource::Ready("image/svg+xml", bytes)) => {
            let r = cx.add_image(url, "image/svg+xml", bytes);
            node.kind = "SVG";
            node.image_ref = Some(r);
            return boxed_svg(cx, l, node, paint);
        }
        Some(ImageSource::Ready(m, bytes)) => {
            let r = cx.add_image(url, m, bytes);
            let mode = match s.style(l, "object-fit") {
                "contain" | "scale-down" => "FIT",
                _ => "FILL",
            };
            content = Some(Paint::Image { image_ref: r, scale_mode: mode });
        }
        Some(ImageSource::Crop) => {
            let r = cx.crop(s.l_bounds[l]);
            content = Some(Paint::Image { image_ref: r, scale_mode: "FILL" });
        }
        None => {}
    }
    node.kind = "RECTANGLE";
    apply_paint(&mut node, paint);
    if let Some(c) = content {
        node.fills.get_or_insert_with(Vec::new).push(c);
    }
    node
}

/// The children of element `n`'s frame `open`, in paint order: its own, and those moved into
/// it from deeper down.
fn fill(cx: &mut Ctx<'_, '_>, n: usize, l: usize, open: Open, flex: bool) -> Vec<Node> {
    let s = cx.s;
    let (id, b) = (open.id, open.rect);
    cx.next_id += 1;
    let mut inner = Container { ox: open.ox, oy: open.oy, depth: open.depth, nodes: Vec::new() };
    cx.open.push(open);
    for c in s.children[n].clone() {
        let item = flex
            && s.node_type[c] == 1
            && !s.pseudo.contains_key(&c)
            && s.layout_of[c].is_some_and(|cl| !matches!(s.style(cl, "position"), "absolute" | "fixed"));
        visit(cx, c, &mut inner, item);
    }
    cx.open.pop();
    if matches!(s.tag(n).as_str(), "input" | "textarea" | "select") {
        input_text(cx, n, l, b, &mut inner);
    }
    let mut kids = inner.nodes;
    kids.extend(cx.take_moved(id));
    kids.sort_by_key(|(p, _)| *p);
    kids.into_iter().map(|(_, k)| k).collect()
}

/// Any other element: a frame when it paints, clips, fades, lays out flex items or holds a
/// negative z-index; else flattened, its paint a rectangle and its content beside it.
fn frame(cx: &mut Ctx<'_, '_>, n: usize, l: usize, mut node: Node, paint: BoxPaint, into: &mut Container) {
    let s = cx.s;
    let (b, k, flex_item) = (s.l_bounds[l], key(s, n, l), node.flex_item);
    let display = s.style(l, "display");
    let clips = s.style(l, "overflow-x") != "visible" || s.style(l, "overflow-y") != "visible";
    let flex = matches!(display, "flex" | "inline-flex") && s.style(l, "flex-wrap") == "nowrap";
    let faded = node.opacity.is_some();
    let stacks = stack::negative_z(s, n, l).is_some() || cx.negative_hosts.contains(&Some(n));
    let paints = paints_something(&paint);
    let needs_frame = clips || faded || flex || flex_item || stacks;
    if into.depth >= MAX_FRAME_DEPTH && needs_frame {
        let message =
            format!("nested over {MAX_FRAME_DEPTH} frames deep: drawn flat, without its clip, opacity or auto layout");
        cx.depth_limit(n, &node.name, message);
    }
    if !(paints || needs_frame) || into.depth >= MAX_FRAME_DEPTH {
        if paints {
            // Too deep for a frame: its paint as a rectangle, its content beside it.
            node.kind = "RECTANGLE";
            apply_paint(&mut node, paint);
            collapsed_border(s, l, &mut node);
            cx.count += 1;
            into.nodes.push((k, node));
        }
        for c in s.children[n].clone() {
            visit(cx, c, into, false);
        }
        return;
    }
    if display == "inline" && paints && !clips && !faded && !flex_item && !stacks {
        let lines = inline_lines(s, n);
        if lines.len() > 1 {
            // Broken across lines: CSS paints each line's fragment (box-decoration-break:
            // slice), not the bounding box, which would cover the lines' other text.
            inline_fragments(cx, n, l, &node, paint, &lines, k, into);
            for c in s.children[n].clone() {
                visit(cx, c, into, false);
            }
            return;
        }
    }
    apply_paint(&mut node, paint);
    collapsed_border(s, l, &mut node);
    node.clips_content = Some(clips);
    cx.count += 1;
    let open =
        Open { owner: Some(n), id: cx.next_id, clips, faded, rect: b, ox: b[0], oy: b[1], depth: into.depth + 1 };
    let mut kids = fill(cx, n, l, open, flex);
    if flex {
        auto_layout(s, n, l, &mut node, &mut kids);
    }
    if !kids.is_empty() {
        node.children = Some(kids);
    }
    into.nodes.push((k, node));
}

/// Makes `frame` an auto layout frame when Figma would put every child exactly where it is:
/// all children are the boxes of in-flow flex items, evenly spaced on the main axis, aligned
/// alike on the cross axis. Otherwise nothing changes.
fn auto_layout(s: &Snapshot<'_>, n: usize, l: usize, frame: &mut Node, kids: &mut [Node]) {
    if kids.is_empty() || !kids.iter().all(|k| k.flex_item) {
        return;
    }
    // Every in-flow element child with a box made exactly one of the kids.
    let items = s.children[n]
        .iter()
        .filter(|c| {
            s.node_type[**c] == 1
                && s.layout_of[**c].is_some_and(|cl| !matches!(s.style(cl, "position"), "absolute" | "fixed"))
        })
        .count();
    if items != kids.len() {
        return;
    }
    // Text directly in the container is an anonymous flex item: not reproducible.
    let loose_text = s.children[n].iter().any(|c| {
        s.node_type[*c] == 3 && s.node_value[*c].is_some_and(|v| !v.trim().is_empty()) && s.layout_of[*c].is_some()
    });
    if loose_text {
        return;
    }
    let row = s.style(l, "flex-direction").starts_with("row");
    let main = |k: &Node| if row { (k.x, k.width) } else { (k.y, k.height) };
    let cross = |k: &Node| if row { (k.y, k.height) } else { (k.x, k.width) };
    let mut order: Vec<usize> = (0..kids.len()).collect();
    order.sort_by(|a, b| main(&kids[*a]).0.total_cmp(&main(&kids[*b]).0));
    let first = &kids[order[0]];
    let tol = 0.5;
    let mut gap = 0.0;
    for w in order.windows(2) {
        let (a, b) = (main(&kids[w[0]]), main(&kids[w[1]]));
        let g = b.0 - (a.0 + a.1);
        if w[0] == order[0] {
            gap = g;
        } else if (g - gap).abs() > tol {
            return;
        }
    }
    if gap < -tol {
        return;
    }
    let (fw, fh) = (frame.width, frame.height);
    let (size_main, size_cross) = if row { (fw, fh) } else { (fh, fw) };
    let last = main(&kids[*order.last().unwrap_or(&0)]);
    let pad_start = main(first).0;
    let pad_end = (size_main - (last.0 + last.1)).max(0.0);
    // Cross axis: the CSS padding and border, then whichever alignment puts every item where it is.
    let (ps, pe) = if row {
        (
            s.px(l, "padding-top") + s.px(l, "border-top-width"),
            s.px(l, "padding-bottom") + s.px(l, "border-bottom-width"),
        )
    } else {
        (
            s.px(l, "padding-left") + s.px(l, "border-left-width"),
            s.px(l, "padding-right") + s.px(l, "border-right-width"),
        )
    };
    let all = |f: &dyn Fn(&Node) -> bool| kids.iter().all(f);
    let (align, cs, ce) = if all(&|k| (cross(k).0 - cross(first).0).abs() <= tol) {
        ("MIN", cross(first).0, 0.0)
    } else if all(&|k| (cross(k).0 + cross(k).1 / 2.0 - (ps + (size_cross - ps - pe) / 2.0)).abs() <= tol) {
        ("CENTER", ps, pe)
    } else if all(&|k| ((cross(k).0 + cross(k).1) - (cross(first).0 + cross(first).1)).abs() <= tol) {
        ("MAX", 0.0, size_cross - (cross(first).0 + cross(first).1))
    } else {
        return;
    };
    frame.layout_mode = Some(if row { "HORIZONTAL" } else { "VERTICAL" });
    frame.item_spacing = Some(round(gap.max(0.0)));
    frame.primary_axis_align_items = Some("MIN");
    frame.counter_axis_align_items = Some(align);
    let (pl, pr, pt, pb) = if row { (pad_start, pad_end, cs, ce) } else { (cs, ce, pad_start, pad_end) };
    frame.padding_left = Some(round(pl));
    frame.padding_right = Some(round(pr));
    frame.padding_top = Some(round(pt));
    frame.padding_bottom = Some(round(pb));
    // Auto layout places children in list order: the main axis order.
    let sorted: Vec<Node> = order.iter().map(|i| kids[*i].clone()).collect();
    kids.clone_from_slice(&sorted);
}

/// The line fragments of an inline element, top to bottom, in page pixels: per line, the span of
/// the glyph boxes of its text (its own text's when the line has some, else its descendants').
fn inline_lines(s: &Snapshot<'_>, n: usize) -> Vec<[f64; 4]> {
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
            let x0 = it().map(|b| b[0]).fold(f64::MAX, f64::min);
            let x1 = it().map(|b| b[0] + b[2]).fold(f64::MIN, f64::max);
            let y0 = it().map(|b| b[1]).fold(f64::MAX, f64::min);
            let y1 = it().map(|b| b[1] + b[3]).fold(f64::MIN, f64::max);
            [x0, y0, x1 - x0, y1 - y0]
        })
        .collect()
}

/// One rectangle per line fragment of an inline element: padding and border above and below
/// on each, the start side's on the first only, the end side's on the last only (left to right).
#[allow(clippy::too_many_arguments)]
fn inline_fragments(
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
        let mut p = BoxPaint {
            fills: paint.fills.clone(),
            strokes: paint.strokes.clone(),
            radii: paint.radii,
            effects: paint.effects.clone(),
        };
        if let Some((_, w)) = p.strokes.as_mut() {
            w[1] = if end { w[1] } else { 0.0 };
            w[3] = if first { w[3] } else { 0.0 };
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
            kind: "RECTANGLE",
            name: node.name.clone(),
            x: round(x0 - into.ox),
            y: round(y0 - into.oy),
            width: round(x1 - x0),
            height: round(y1 - y0),
            dom: Some(n),
            ..Node::default()
        };
        apply_paint(&mut frag, p);
        cx.count += 1;
        into.nodes.push((paint_order, frag));
    }
}

/// A list marker Chromium paints as a shape rather than a glyph (disc, circle, square), as
/// Blink's `ListMarker::RelativeSymbolMarkerRect` places it in the marker's fragment: a side
/// of the fragment's width less 2, 1 px in, and (3/2 of the ascent less two thirds of it) down,
/// the ascent being 3/2 (2 × side − 1) by the same formula. Answers whether it was one.
fn symbol_marker(cx: &mut Ctx<'_, '_>, n: usize, li: usize, into: &mut Container) -> bool {
    let s = cx.s;
    let kind = s.style(li, "list-style-type");
    let symbol = match s.l_text[li].map(str::trim) {
        Some("•") => "disc",
        Some("◦") => "circle",
        Some("▪") => "square",
        _ => return false,
    };
    let Some((b, _, _)) = s.text_boxes.get(&li).and_then(|v| v.first()) else { return false };
    let side = b[2] - 2.0;
    if kind != symbol || side <= 0.0 || s.style(li, "visibility") == "hidden" {
        return false;
    }
    let Some(color) = cx.color(n, li, "color", &s.name(n)).filter(|c| c.a > 0.0) else { return true };
    // Blink draws the pixel-snapped rectangle.
    let (x, y, d) = ((b[0] + 1.0).round(), (b[1] + 0.75 * (2.0 * side - 1.0)).round(), side.round());
    let mut node = Node {
        kind: if symbol == "square" { "RECTANGLE" } else { "ELLIPSE" },
        name: s.name(n),
        x: round(x - into.ox),
        y: round(y - into.oy),
        width: d,
        height: d,
        dom: Some(n),
        ..Node::default()
    };
    if symbol == "circle" {
        // A 1 px line on the outline.
        node.fills = Some(Vec::new());
        node.strokes = Some(vec![solid(&color)]);
        node.stroke_weight = Some(1.0);
        node.stroke_align = Some("CENTER");
    } else {
        node.fills = Some(vec![solid(&color)]);
    }
    cx.count += 1;
    into.nodes.push((order(s.l_paint.get(li).copied().unwrap_or(0)), node));
    true
}

fn text(cx: &mut Ctx<'_, '_>, n: usize, l: usize, into: &mut Container) {
    let s = cx.s;
    let Some(boxes) = s.text_boxes.get(&l) else { return };
    let full: Vec<u16> = s.l_text[l].or(s.node_value[n]).unwrap_or("").encode_utf16().collect();
    // The text's style is its layout object's; a text node shares its parent's computed style.
    if s.style(l, "visibility") == "hidden" {
        return;
    }
    let owner = usize::try_from(s.parent[n]).unwrap_or(n);
    let color = cx.color(owner, l, "color", &s.name(owner)).unwrap_or(Rgba { r: 0.0, g: 0.0, b: 0.0, a: 1.0 });
    if color.a == 0.0 {
        return;
    }
    let css_family = s.style(l, "font-family");
    let wanted = first_family(css_family);
    let used = cx.font(css_family, owner);
    let style = font_style(s.style(l, "font-weight"), matches!(s.style(l, "font-style"), "italic" | "oblique"));
    let font_size = s.px(l, "font-size");
    let line_height = match s.style(l, "line-height") {
        "normal" | "" => Dimension { unit: "AUTO", value: None },
        v => Dimension { unit: "PIXELS", value: Some(round(px(v))) },
    };
    let letter = px(s.style(l, "letter-spacing"));
    // Decoration is not inherited: it is drawn by the nearest inline ancestor that has it.
    let mut decoration = None;
    let mut up = usize::try_from(s.parent[n]).ok();
    while let Some(p) = up {
        let Some(pl) = s.layout_of[p] else { break };
        match s.style(pl, "text-decoration-line") {
            v if v.contains("underline") => decoration = Some("UNDERLINE"),
            v if v.contains("line-through") => decoration = Some("STRIKETHROUGH"),
            _ => {}
        }
        if decoration.is_some() || !s.style(pl, "display").starts_with("inline") {
            break;
        }
        up = usize::try_from(s.parent[p]).ok();
    }
    let case = match s.style(l, "text-transform") {
        "uppercase" => Some("UPPER"),
        "lowercase" => Some("LOWER"),
        "capitalize" => Some("TITLE"),
        _ => None,
    };
    let align = match s.style(l, "text-align") {
        "center" | "-webkit-center" => "CENTER",
        "right" | "end" | "-webkit-right" => "RIGHT",
        "justify" => "JUSTIFIED",
        _ => "LEFT",
    };
    // A text node has its parent's computed style: its z-index is the parent's, whose frame
    // holds it, so it sorts by paint order alone.
    let paint_order = order(s.l_paint.get(l).copied().unwrap_or(0));
    for (b, start, len) in boxes {
        let end = (start + len).min(full.len());
        let chars = String::from_utf16_lossy(&full[(*start).min(end)..end]);
        let chars = chars.trim_end_matches('\n').to_owned();
        if chars.trim().is_empty() {
            continue;
        }
        if cx.count >= MAX_NODES {
            cx.warn("node_limit", format!("over {MAX_NODES} nodes: the rest of the page is left out"), owner, "");
            return;
        }
        // As Figma names a text layer: by its characters, on one line.
        let name = names::short(&chars);
        // Chromium's box is the glyphs' (ascent to descent); Figma's text box is the line box,
        // the half-leading above and below them (negative when the line is the shorter: Figma
        // then still centres the glyphs on it, so the box must be centred too).
        let (y, h) = match line_height.value {
            Some(lh) if lh > 0.0 => (b[1] - (lh - b[3]) / 2.0, lh),
            _ => (b[1], b[3]),
        };
        if used != wanted
            && !GENERIC_FAMILIES.contains(&wanted.as_str())
            && cx.warned_fonts.insert((wanted.clone(), used.clone()))
        {
            cx.warn("font_substituted", format!("{wanted} is not available; drawn with {used}"), owner, &name);
        }
        cx.count += 1;
        into.nodes.push((
            paint_order,
            Node {
                kind: "TEXT",
                name,
                x: round(b[0] - into.ox),
                y: round(y - into.oy),
                width: round(b[2]),
                height: round(h),
                fills: Some(vec![solid(&color)]),
                characters: Some(chars),
                font_size: Some(round(font_size)),
                font_name: Some(FontName { family: used.clone(), style: style.clone() }),
                text_align_horizontal: Some(align),
                // One line box per node: its width follows the glyphs, so no line wraps in Figma.
                text_auto_resize: Some("WIDTH_AND_HEIGHT"),
                line_height: Some(line_height.clone()),
                letter_spacing: (letter != 0.0).then_some(Dimension { unit: "PIXELS", value: Some(round(letter)) }),
                text_decoration: decoration,
                text_case: case,
                dom: Some(n),
                ..Node::default()
            },
        ));
    }
}

/// A form control's value (or its placeholder, greyed), which lives in the control's user-agent
/// shadow tree that the snapshot does not hold: one line at the content box's left, centred.
fn input_text(cx: &mut Ctx<'_, '_>, n: usize, l: usize, b: [f64; 4], into: &mut Container) {
    let s = cx.s;
    let kind = s.attr(n, "type").unwrap_or("text").to_ascii_lowercase();
    if matches!(kind.as_str(), "checkbox" | "radio" | "hidden" | "range" | "color" | "file" | "image") {
        return;
    }
    // A select shows its selected option (the first when none is marked).
    let selected = (s.tag(n) == "select").then(|| {
        let options: Vec<usize> = s.children[n].iter().copied().filter(|c| s.tag(*c) == "option").collect();
        let pick = options.iter().copied().find(|o| s.attr(*o, "selected").is_some()).or(options.first().copied());
        pick.map(|o| s.children[o].iter().filter_map(|t| s.node_value[*t]).collect::<String>().trim().to_owned())
    });
    let value = match selected {
        Some(v) => v.filter(|v| !v.is_empty()),
        None => s.input_value.get(&n).map(|v| (*v).to_owned()).filter(|v| !v.is_empty()),
    };
    let (chars, placeholder) = match value {
        Some(v) if kind == "password" => ("•".repeat(v.chars().count()), false),
        Some(v) => (v, false),
        None => match s.attr(n, "placeholder").filter(|p| !p.is_empty()) {
            Some(p) => (p.to_owned(), true),
            None => return,
        },
    };
    let name = s.name(n);
    let mut color = cx.color(n, l, "color", &name).unwrap_or(Rgba { r: 0.0, g: 0.0, b: 0.0, a: 1.0 });
    if placeholder {
        // Chromium's placeholder colour: the text colour at a little under half strength.
        color.a *= 0.46;
    }
    let size = s.px(l, "font-size");
    let line = match px(s.style(l, "line-height")) {
        v if v > 0.0 => v,
        _ => (size * 1.2).round(),
    };
    let themed = s.style(l, "appearance") != "none";
    let select = s.tag(n) == "select";
    // A themed select lays its text out 4 px past the padding (Chromium's
    // LayoutThemeDefault::PopupInternalPaddingStart).
    let left = s.px(l, "border-left-width") + s.px(l, "padding-left") + if select && themed { 4.0 } else { 0.0 };
    if select && themed {
        // Its arrow is the theme's drawing in the last 16 px inside the right border
        // (PopupInternalPaddingEnd: the arrow box, 15 px, and 1): its picture.
        let (bt, br, bb) = (s.px(l, "border-top-width"), s.px(l, "border-right-width"), s.px(l, "border-bottom-width"));
        let rect = [b[0] + b[2] - br - 16.0, b[1] + bt, 16.0, b[3] - bt - bb];
        if rect[0] > b[0] && rect[3] > 0.0 {
            let r = cx.crop(rect);
            cx.count += 1;
            into.nodes.push((
                order(i64::MAX),
                Node {
                    kind: "RECTANGLE",
                    name: "arrow".into(),
                    x: round(rect[0] - b[0]),
                    y: round(bt),
                    width: 16.0,
                    height: round(rect[3]),
                    fills: Some(vec![Paint::Image { image_ref: r, scale_mode: "FILL" }]),
                    dom: Some(n),
                    ..Node::default()
                },
            ));
        }
    }
    let top =
        if s.tag(n) == "textarea" { s.px(l, "border-top-width") + s.px(l, "padding-top") } else { (b[3] - line) / 2.0 };
    let css_family = s.style(l, "font-family");
    let family = cx.font(css_family, n);
    let style = font_style(s.style(l, "font-weight"), s.style(l, "font-style") == "italic");
    // A value is the user's (typed, preset, a password's length), never a layer's name; a
    // placeholder and a select's option are the page's words.
    let name = if placeholder || select { names::short(&chars) } else { "Value".to_owned() };
    cx.count += 1;
    into.nodes.push((
        order(i64::MAX),
        Node {
            kind: "TEXT",
            name,
            x: round(left),
            y: round(top),
            width: round((b[2] - 2.0 * left).max(1.0)),
            height: round(line),
            fills: Some(vec![solid(&color)]),
            characters: Some(chars),
            font_size: Some(round(size)),
            font_name: Some(FontName { family, style }),
            text_align_horizontal: Some("LEFT"),
            text_auto_resize: Some("WIDTH_AND_HEIGHT"),
            line_height: Some(Dimension { unit: "PIXELS", value: Some(round(line)) }),
            dom: Some(n),
            ..Node::default()
        },
    ));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_shadows_gradients() {
        assert_eq!(parse_color("rgba(255, 0, 0, 0.5)"), Some(Rgba { r: 1.0, g: 0.0, b: 0.0, a: 0.5 }));
        assert_eq!(parse_color("rgb(0 0 255)").map(|c| c.b), Some(1.0));
        let e = parse_shadows("rgba(0, 0, 0, 0.1) 0px 4px 6px -1px, rgb(255, 0, 0) 1px 2px 3px 0px inset");
        assert_eq!(e.len(), 2);
        assert_eq!(e[1].kind, "DROP_SHADOW");
        assert_eq!((e[1].offset.y, e[1].radius, e[1].spread), (4.0, 6.0, -1.0));
        assert_eq!(e[0].kind, "INNER_SHADOW");
        let Some(Paint::GradientLinear { gradient_transform: t, gradient_stops }) =
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
