//! The converted document (openapi.yaml's `Node` tree, as JSON) as one SVG, drawn the way the
//! reference plugin (plugin/src/build.ts) has Figma build it; a port of the fidelity
//! benchmark's writer (scripts/fidelity/svg.mjs), so that the two draw alike: frames hold
//! children in their own coordinates (auto layout and grid place them as Figma does), a
//! group's children are placed from the group's origin, a leaf's children follow it in its
//! parent, fills paint bottom to top, strokes lie INSIDE/CENTER/OUTSIDE the outline with
//! per-side weights, a frame's strokes and clipping sit above its children, shadows are knocked
//! out under their node, and TEXT puts its baseline where Figma does (the leading split evenly
//! above and below the font's ascender and descender). Where svg.mjs asks Chromium for a
//! paragraph's lines, this shapes and breaks them itself (wrap.rs). Dashed strokes follow the
//! outline (`dashPattern`, `strokeCap`), a LAYER_BLUR blurs the node's whole drawing (σ =
//! radius / 2), a TEXT node's shadows are its glyphs' and `blendMode` is CSS's mix-blend-mode.

use std::collections::HashMap;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use resvg::usvg::fontdb;
use serde_json::Value;

use super::wrap::Shapers;
use super::Image;

pub(super) fn f(v: f64) -> String {
    let r = if v.is_finite() { (v * 1000.0).round() / 1000.0 } else { 0.0 };
    // `-0` reads oddly and means 0.
    format!("{}", if r == 0.0 { 0.0 } else { r })
}

pub(super) fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

pub(super) fn num(n: &Value, k: &str) -> Option<f64> {
    n.get(k).and_then(Value::as_f64)
}

pub(super) fn num0(n: &Value, k: &str) -> f64 {
    num(n, k).unwrap_or(0.0)
}

pub(super) fn text<'a>(n: &'a Value, k: &str) -> Option<&'a str> {
    n.get(k).and_then(Value::as_str)
}

pub(super) fn list<'a>(n: &'a Value, k: &str) -> &'a [Value] {
    n.get(k).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

pub(super) fn visible(n: &Value) -> bool {
    n.get("visible").and_then(Value::as_bool) != Some(false)
}

pub(super) fn rgb(c: &Value) -> String {
    let ch = |k: &str| (num0(c, k).clamp(0.0, 1.0) * 255.0).round() as u8;
    format!("rgb({},{},{})", ch("r"), ch("g"), ch("b"))
}

pub(super) fn alpha(c: &Value) -> f64 {
    num(c, "a").unwrap_or(1.0)
}

type Radii = [(f64, f64); 4];

/// A rounded rectangle, each corner its own (rx, ry) radii, as path data.
fn round_rect(x: f64, y: f64, w: f64, h: f64, radii: Radii) -> String {
    if w <= 0.0 || h <= 0.0 || !w.is_finite() || !h.is_finite() {
        return String::new();
    }
    let cl = |(rx, ry): (f64, f64)| (rx.min(w / 2.0).max(0.0), ry.min(h / 2.0).max(0.0));
    let [tl, tr, br, bl] = radii.map(cl);
    let mut p = format!("M{} {}H{}", f(x + tl.0), f(y), f(x + w - tr.0));
    let arc = |r: (f64, f64), ex: f64, ey: f64| {
        if r.0 > 0.0 && r.1 > 0.0 {
            format!("A{} {} 0 0 1 {} {}", f(r.0), f(r.1), f(ex), f(ey))
        } else {
            String::new()
        }
    };
    p += &arc(tr, x + w, y + tr.1);
    p += &format!("V{}", f(y + h - br.1));
    p += &arc(br, x + w - br.0, y + h);
    p += &format!("H{}", f(x + bl.0));
    p += &arc(bl, x, y + h - bl.1);
    p += &format!("V{}", f(y + tl.1));
    p += &arc(tl, x + tl.0, y);
    p + "Z"
}

fn ellipse_path(x: f64, y: f64, w: f64, h: f64) -> String {
    if w <= 0.0 || h <= 0.0 || !w.is_finite() || !h.is_finite() {
        return String::new();
    }
    let (rx, ry) = (w / 2.0, h / 2.0);
    format!(
        "M{} {}A{} {} 0 1 0 {} {}A{} {} 0 1 0 {} {}Z",
        f(x),
        f(y + ry),
        f(rx),
        f(ry),
        f(x + w),
        f(y + ry),
        f(rx),
        f(ry),
        f(x),
        f(y + ry)
    )
}

/// The four corner radii of a node: `cornerRadius`, each overridden by its corner's own;
/// Figma's corners are circular, none rounder than half the shorter side (a 999 px radius on a
/// 64 × 35 box is a pill of radius 17.5, not an ellipse).
fn radii(n: &Value) -> [f64; 4] {
    let r = num0(n, "cornerRadius");
    let most = num0(n, "width").min(num0(n, "height")) / 2.0;
    ["topLeftRadius", "topRightRadius", "bottomRightRadius", "bottomLeftRadius"]
        .map(|k| num(n, k).unwrap_or(r).min(most))
}

/// The node's outline offset outwards by (top, right, bottom, left) (negative: inwards).
fn outline(n: &Value, [t, r, b, l]: [f64; 4]) -> String {
    let (w, h) = (num0(n, "width"), num0(n, "height"));
    if text(n, "type") == Some("ELLIPSE") {
        return ellipse_path(-l, -t, w + l + r, h + t + b);
    }
    let [tl, tr, br, bl] = radii(n);
    let corner = |c: f64, dx: f64, dy: f64| if c > 0.0 { ((c + dx).max(0.0), (c + dy).max(0.0)) } else { (0.0, 0.0) };
    round_rect(-l, -t, w + l + r, h + t + b, [corner(tl, l, t), corner(tr, r, t), corner(br, r, b), corner(bl, l, b)])
}

fn invert(m: [[f64; 3]; 2]) -> Option<[[f64; 3]; 2]> {
    let [[a, b, c], [d, e, g]] = m;
    let det = a * e - b * d;
    if det.abs() < 1e-12 || !det.is_finite() {
        return None;
    }
    Some([[e / det, -b / det, (b * g - c * e) / det], [-d / det, a / det, (c * d - a * g) / det]])
}

fn transform_of(p: &Value) -> [[f64; 3]; 2] {
    let row = |i: usize| {
        let r = p.get("gradientTransform").and_then(|t| t.get(i));
        let v = |j: usize| r.and_then(|r| r.get(j)).and_then(Value::as_f64);
        match i {
            0 => [v(0).unwrap_or(1.0), v(1).unwrap_or(0.0), v(2).unwrap_or(0.0)],
            _ => [v(0).unwrap_or(0.0), v(1).unwrap_or(1.0), v(2).unwrap_or(0.0)],
        }
    };
    [row(0), row(1)]
}

/// A child placed by its frame: its node and where it goes.
pub(super) struct Placed<'a> {
    node: &'a Value,
    pub(super) x: f64,
    pub(super) y: f64,
}

/// A GRID frame's tracks in px, as Figma sizes them: FIXED as given; HUG as the largest child
/// spanning that track alone; FLEX sharing what the others and the gaps leave, by their values.
fn grid_tracks(
    specs: &[Value],
    gap: f64,
    room: f64,
    kids: &[&Value],
    anchor: &str,
    span: &str,
    size: &str,
) -> Vec<f64> {
    let px: Vec<Option<f64>> = specs
        .iter()
        .enumerate()
        .map(|(i, t)| match text(t, "type") {
            Some("FIXED") => Some(num0(t, "value")),
            Some("HUG") => Some(
                kids.iter()
                    .filter(|k| num0(k, anchor) as usize == i && num(k, span).unwrap_or(1.0) == 1.0)
                    .map(|k| num0(k, size))
                    .fold(0.0, f64::max),
            ),
            _ => None,
        })
        .collect();
    let share = |t: &Value| num(t, "value").unwrap_or(1.0);
    let shares: f64 = specs.iter().zip(&px).filter(|(_, p)| p.is_none()).map(|(t, _)| share(t)).sum();
    let fixed: f64 = px.iter().flatten().sum();
    let free = room - fixed - gap * (specs.len().max(1) - 1) as f64;
    let shares = if shares == 0.0 { 1.0 } else { shares };
    px.iter().zip(specs).map(|(p, t)| p.unwrap_or_else(|| free.max(0.0) * share(t) / shares)).collect()
}

/// Grid: each child at the start of its anchor cell, from the padding, the gaps between tracks.
fn grid_layout<'a>(n: &Value, kids: &'a [Value]) -> Vec<Placed<'a>> {
    let flow: Vec<&Value> = kids.iter().filter(|k| visible(k)).collect();
    let (pl, pt) = (num0(n, "paddingLeft"), num0(n, "paddingTop"));
    let (cg, rg) = (num0(n, "gridColumnGap"), num0(n, "gridRowGap"));
    let cols_room = num0(n, "width") - pl - num0(n, "paddingRight");
    let rows_room = num0(n, "height") - pt - num0(n, "paddingBottom");
    let cols = grid_tracks(
        list(n, "gridColumnSizes"),
        cg,
        cols_room,
        &flow,
        "gridColumnAnchorIndex",
        "gridColumnSpan",
        "width",
    );
    let rows =
        grid_tracks(list(n, "gridRowSizes"), rg, rows_room, &flow, "gridRowAnchorIndex", "gridRowSpan", "height");
    let start =
        |from: f64, tracks: &[f64], gap: f64, i: usize| from + tracks.iter().take(i).map(|v| v + gap).sum::<f64>();
    flow.into_iter()
        .map(|k| Placed {
            node: k,
            x: start(pl, &cols, cg, num0(k, "gridColumnAnchorIndex") as usize),
            y: start(pt, &rows, rg, num0(k, "gridRowAnchorIndex") as usize),
        })
        .collect()
}

/// Auto layout: children in list order along the axis, from the padding, `itemSpacing` apart.
fn auto_layout<'a>(n: &Value, kids: &'a [Value]) -> Vec<Placed<'a>> {
    let row = text(n, "layoutMode") == Some("HORIZONTAL");
    let pad = |a: &str, b: &str| (num0(n, a), num0(n, b));
    let ((ps, pe), (cs, ce)) = if row {
        (pad("paddingLeft", "paddingRight"), pad("paddingTop", "paddingBottom"))
    } else {
        (pad("paddingTop", "paddingBottom"), pad("paddingLeft", "paddingRight"))
    };
    let (main_k, side_k) = if row { ("width", "height") } else { ("height", "width") };
    let (size, cross) = (num0(n, main_k), num0(n, side_k));
    // An ABSOLUTE child stays where it is, out of the flow, in its place in the paint order.
    let absolute = |k: &Value| text(k, "layoutPositioning") == Some("ABSOLUTE");
    let flow: Vec<&Value> = kids.iter().filter(|k| visible(k) && !absolute(k)).collect();
    if row && text(n, "layoutWrap") == Some("WRAP") {
        let rows = wrap_rows(n, &flow, size - ps - pe, (cs, cross - ce));
        let placed = |k: &Value| rows.iter().find(|(r, _, _)| std::ptr::eq(*r, k)).map(|(_, x, y)| (ps + x, *y));
        return kids
            .iter()
            .filter(|k| visible(k))
            .map(|k| {
                let (x, y) = placed(k).unwrap_or_else(|| (num0(k, "x"), num0(k, "y")));
                Placed { node: k, x, y }
            })
            .collect();
    }
    let total: f64 = flow.iter().map(|k| num0(k, main_k)).sum();
    let mut gap = num0(n, "itemSpacing");
    let free = size - ps - pe - total - gap * (flow.len().max(1) - 1) as f64;
    let mut at = ps;
    match text(n, "primaryAxisAlignItems") {
        Some("CENTER") => at += free / 2.0,
        Some("MAX") => at += free,
        Some("SPACE_BETWEEN") if flow.len() > 1 => gap = (size - ps - pe - total) / (flow.len() - 1) as f64,
        _ => {}
    }
    let mut out = Vec::with_capacity(kids.len());
    for k in kids.iter().filter(|k| visible(k)) {
        if absolute(k) {
            out.push(Placed { node: k, x: num0(k, "x"), y: num0(k, "y") });
            continue;
        }
        let c = match text(n, "counterAxisAlignItems") {
            Some("CENTER") => cs + (cross - cs - ce - num0(k, side_k)) / 2.0,
            Some("MAX") => cross - ce - num0(k, side_k),
            _ => cs,
        };
        let (x, y) = if row { (at, c) } else { (c, at) };
        out.push(Placed { node: k, x, y });
        at += num0(k, main_k) + gap;
    }
    out
}

/// Wrapping auto layout (`layoutWrap: WRAP`, rows only), as Figma documents it: a row takes
/// children while they fit `room` (the width inside the padding), `itemSpacing` apart, and is
/// aligned along by `primaryAxisAlignItems`; each row is as tall as its tallest child, which
/// `counterAxisAlignItems` aligns in it; the rows stack `counterAxisSpacing` apart (absent:
/// `itemSpacing`) between `top` and `bottom`, the block of them aligned as the children are.
/// Each child with its x from the padding and its y.
fn wrap_rows<'a>(n: &Value, flow: &[&'a Value], room: f64, (top, bottom): (f64, f64)) -> Vec<(&'a Value, f64, f64)> {
    let gap = num0(n, "itemSpacing");
    let row_gap = n.get("counterAxisSpacing").and_then(Value::as_f64).unwrap_or(gap);
    let mut rows: Vec<Vec<&Value>> = Vec::new();
    for k in flow {
        match rows.last_mut() {
            // The same hundredth as the converter's check: a row filled exactly takes the child.
            Some(r) if r.iter().map(|k| num0(k, "width") + gap).sum::<f64>() + num0(k, "width") <= room + 0.01 => {
                r.push(k)
            }
            _ => rows.push(vec![k]),
        }
    }
    let tall: Vec<f64> = rows.iter().map(|r| r.iter().map(|k| num0(k, "height")).fold(0.0, f64::max)).collect();
    let block = tall.iter().sum::<f64>() + row_gap * (rows.len().max(1) - 1) as f64;
    let align = text(n, "counterAxisAlignItems");
    let within = |room: f64, size: f64| match align {
        Some("CENTER") => (room - size) / 2.0,
        Some("MAX") => room - size,
        _ => 0.0,
    };
    let mut y = top + within(bottom - top, block);
    let mut out = Vec::with_capacity(flow.len());
    for (r, tall) in rows.iter().zip(&tall) {
        let total: f64 = r.iter().map(|k| num0(k, "width")).sum();
        let (mut x, mut step) = (0.0, gap);
        let left = room - total - gap * (r.len() - 1) as f64;
        match text(n, "primaryAxisAlignItems") {
            Some("CENTER") => x = left / 2.0,
            Some("MAX") => x = left,
            Some("SPACE_BETWEEN") if r.len() > 1 => step = (room - total) / (r.len() - 1) as f64,
            _ => {}
        }
        for k in r {
            out.push((*k, x, y + within(*tall, num0(k, "height"))));
            x += num0(k, "width") + step;
        }
        y += tall + row_gap;
    }
    out
}

/// A frame's children where Figma puts them: by auto layout, by grid, or as they are.
pub(super) fn laid_out<'a>(n: &Value, kids: &'a [Value]) -> Vec<Placed<'a>> {
    match text(n, "layoutMode") {
        Some("HORIZONTAL" | "VERTICAL") => auto_layout(n, kids),
        Some("GRID") => grid_layout(n, kids),
        _ => kids.iter().map(|k| Placed { node: k, x: num0(k, "x"), y: num0(k, "y") }).collect(),
    }
}

/// The SVG writer of one document.
pub struct Writer<'a> {
    images: &'a HashMap<String, Image>,
    pub(super) db: &'a fontdb::Database,
    pub(super) shapers: Shapers,
    pub(super) faces: HashMap<(String, String), super::text::Face>,
    defs: Vec<String>,
    ids: usize,
    uris: HashMap<String, String>,
    /// What could not be drawn as Figma would (each once).
    pub warnings: Vec<String>,
}

impl<'a> Writer<'a> {
    pub fn new(images: &'a HashMap<String, Image>, db: &'a fontdb::Database) -> Self {
        Self {
            images,
            db,
            shapers: Shapers::default(),
            faces: HashMap::new(),
            defs: Vec::new(),
            ids: 0,
            uris: HashMap::new(),
            warnings: Vec::new(),
        }
    }

    pub(super) fn warn(&mut self, w: String) {
        if !self.warnings.contains(&w) {
            self.warnings.push(w);
        }
    }

    fn id(&mut self, prefix: &str) -> String {
        self.ids += 1;
        format!("{prefix}{}", self.ids)
    }

    fn data_uri(&mut self, r: &str) -> Option<String> {
        if let Some(u) = self.uris.get(r) {
            return Some(u.clone());
        }
        let Some(img) = self.images.get(r) else {
            self.warn(format!("image {r} missing"));
            return None;
        };
        let uri = format!("data:{};base64,{}", img.mime, STANDARD.encode(&img.bytes));
        self.uris.insert(r.to_owned(), uri.clone());
        Some(uri)
    }

    /// The whole document, `width`×`height` px.
    pub fn write(mut self, doc: &Value, width: f64, height: f64) -> (String, Vec<String>) {
        let mut body = Vec::new();
        self.node(doc, num0(doc, "x"), num0(doc, "y"), &mut body);
        let svg = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" \
             width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">\n<defs>{}</defs>\n{}\n</svg>\n",
            self.defs.join("\n"),
            body.join("\n"),
            w = f(width),
            h = f(height),
        );
        (svg, self.warnings)
    }

    /// One node placed at (x, y) in its parent: itself, then a leaf's children after it.
    fn node(&mut self, n: &Value, x: f64, y: f64, out: &mut Vec<String>) {
        if !visible(n) {
            return;
        }
        let rot = num0(n, "rotation");
        let t = format!(
            "translate({} {}){}",
            f(x),
            f(y),
            if rot != 0.0 { format!(" rotate({})", f(-rot)) } else { String::new() }
        );
        let mut op = match num(n, "opacity") {
            Some(o) if o < 1.0 => format!(" opacity=\"{}\"", f(o)),
            _ => String::new(),
        };
        op.push_str(&self.layer_effects(n));
        let kind = text(n, "type").unwrap_or("");
        if kind == "GROUP" {
            let mut inner = Vec::new();
            for c in list(n, "children") {
                self.node(c, num0(c, "x"), num0(c, "y"), &mut inner);
            }
            out.push(format!("<g transform=\"{t}\"{op}>{}</g>", inner.concat()));
            return;
        }
        let content = match kind {
            // A component and its instances are frames as Figma draws them.
            "FRAME" | "COMPONENT" | "INSTANCE" => self.frame(n),
            "RECTANGLE" | "ELLIPSE" => self.shape(n, ""),
            "LINE" => self.line(n),
            "VECTOR" => self.vector(n),
            "TEXT" => self.text(n),
            "SVG" => self.svg(n),
            other => {
                self.warn(format!("node type {other} not drawn"));
                String::new()
            }
        };
        out.push(format!("<g transform=\"{t}\"{op}>{content}</g>"));
        if !matches!(kind, "FRAME" | "COMPONENT" | "INSTANCE") {
            for c in list(n, "children") {
                self.node(c, x + num0(c, "x"), y + num0(c, "y"), out);
            }
        }
    }

    fn frame(&mut self, n: &Value) -> String {
        let mut inner = Vec::new();
        for p in laid_out(n, list(n, "children")) {
            self.node(p.node, p.x, p.y, &mut inner);
        }
        let mut inner = inner.concat();
        // Figma's default for a new frame is to clip.
        if n.get("clipsContent").and_then(Value::as_bool) != Some(false) && !inner.is_empty() {
            let clip = self.id("c");
            self.defs.push(format!("<clipPath id=\"{clip}\"><path d=\"{}\"/></clipPath>", outline(n, [0.0; 4])));
            inner = format!("<g clip-path=\"url(#{clip})\">{inner}</g>");
        }
        self.shape(n, &inner)
    }

    /// A shape node (frame, rectangle, ellipse): shadows, fills, inner shadows, `inner`, strokes.
    fn shape(&mut self, n: &Value, inner: &str) -> String {
        let d = outline(n, [0.0; 4]);
        let mut parts = Vec::new();
        let effects = list(n, "effects");
        for e in effects.iter().filter(|e| text(e, "type") == Some("DROP_SHADOW") && visible(e)) {
            parts.push(self.drop_shadow(n, e, &d));
        }
        for p in list(n, "fills") {
            parts.push(self.paint(n, p, &format!("d=\"{d}\"")));
        }
        for e in effects.iter().filter(|e| text(e, "type") == Some("INNER_SHADOW") && visible(e)) {
            parts.push(self.inner_shadow(n, e, &d));
        }
        parts.push(inner.to_owned());
        for p in list(n, "strokes") {
            parts.push(self.stroke(n, p));
        }
        parts.concat()
    }

    /// A path (`attrs`, its d) painted with one paint.
    fn paint(&mut self, n: &Value, p: &Value, attrs: &str) -> String {
        if !visible(p) {
            return String::new();
        }
        let (w, h) = (num0(n, "width"), num0(n, "height"));
        let a = num(p, "opacity").unwrap_or(1.0);
        let fill_opacity = |a: f64| if a < 1.0 { format!(" fill-opacity=\"{}\"", f(a)) } else { String::new() };
        match text(p, "type") {
            Some("SOLID") => {
                let c = p.get("color").unwrap_or(&Value::Null);
                format!("<path {attrs} fill=\"{}\"{}/>", rgb(c), fill_opacity(a * alpha(c)))
            }
            Some("GRADIENT_LINEAR") => {
                let Some(inv) = invert(transform_of(p)).filter(|_| w > 0.0 && h > 0.0) else { return String::new() };
                let id = self.id("g");
                // Figma's transform maps the node's unit square to gradient space, where the
                // colour runs along x from 0 to 1: the SVG gradient is that x axis, in
                // bounding-box units, carried back into the unit square by the inverse.
                let m = format!(
                    "matrix({} {} {} {} {} {})",
                    f(inv[0][0]),
                    f(inv[1][0]),
                    f(inv[0][1]),
                    f(inv[1][1]),
                    f(inv[0][2]),
                    f(inv[1][2])
                );
                let stops: String = list(p, "gradientStops")
                    .iter()
                    .map(|s| {
                        let c = s.get("color").unwrap_or(&Value::Null);
                        format!(
                            "<stop offset=\"{}\" stop-color=\"{}\" stop-opacity=\"{}\"/>",
                            f(num0(s, "position")),
                            rgb(c),
                            f(alpha(c))
                        )
                    })
                    .collect();
                self.defs.push(format!(
                    "<linearGradient id=\"{id}\" gradientUnits=\"objectBoundingBox\" x1=\"0\" y1=\"0\" x2=\"1\" y2=\"0\" gradientTransform=\"{m}\">{stops}</linearGradient>"
                ));
                format!("<path {attrs} fill=\"url(#{id})\"{}/>", fill_opacity(a))
            }
            Some("IMAGE") => {
                let Some(uri) = text(p, "imageRef").and_then(|r| self.data_uri(r)) else { return String::new() };
                if w <= 0.0 || h <= 0.0 {
                    return String::new();
                }
                let clip = self.id("c");
                self.defs.push(format!("<clipPath id=\"{clip}\"><path {attrs}/></clipPath>"));
                let ratio = match text(p, "scaleMode").unwrap_or("FILL") {
                    "FIT" => "xMidYMid meet",
                    "CROP" => "none",
                    _ => "xMidYMid slice",
                };
                let op = if a < 1.0 { format!(" opacity=\"{}\"", f(a)) } else { String::new() };
                format!(
                    "<g clip-path=\"url(#{clip})\"{op}><image x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" preserveAspectRatio=\"{ratio}\" xlink:href=\"{uri}\"/></g>",
                    f(w),
                    f(h)
                )
            }
            other => {
                self.warn(format!("paint type {} not drawn", other.unwrap_or("(none)")));
                String::new()
            }
        }
    }

    /// A group's attributes for the node's blend mode, its layer blur and (TEXT) its shadows.
    fn layer_effects(&mut self, n: &Value) -> String {
        let mut out = String::new();
        if let Some(blend) = text(n, "blendMode").and_then(css_blend) {
            out.push_str(&format!(" style=\"mix-blend-mode:{blend}\""));
        }
        let effects = list(n, "effects");
        let blur =
            effects.iter().find(|e| text(e, "type") == Some("LAYER_BLUR") && visible(e) && num0(e, "radius") > 0.0);
        let shadows: Vec<&Value> = if text(n, "type") == Some("TEXT") {
            effects.iter().filter(|e| text(e, "type") == Some("DROP_SHADOW") && visible(e)).collect()
        } else {
            Vec::new()
        };
        if blur.is_none() && shadows.is_empty() {
            return out;
        }
        let id = self.id("f");
        let (w, h) = (num0(n, "width"), num0(n, "height"));
        let offset = |e: &Value, k: &str| e.get("offset").map_or(0.0, |o| num0(o, k));
        let reach = effects
            .iter()
            .map(|e| 1.5 * num0(e, "radius") + offset(e, "x").abs() + offset(e, "y").abs())
            .fold(0.0, f64::max)
            + w
            + h
            + 4.0;
        let mut prims = String::new();
        // Each shadow: the glyphs' alpha, offset, blurred, in its colour; the last on top.
        for (i, e) in shadows.iter().enumerate() {
            let c = e.get("color").unwrap_or(&Value::Null);
            prims.push_str(&format!(
                "<feGaussianBlur in=\"SourceAlpha\" stdDeviation=\"{}\"/><feOffset dx=\"{}\" dy=\"{}\" result=\"o{i}\"/><feFlood flood-color=\"{}\" flood-opacity=\"{}\"/><feComposite in2=\"o{i}\" operator=\"in\" result=\"s{i}\"/>",
                f(num0(e, "radius") / 2.0),
                f(offset(e, "x")),
                f(offset(e, "y")),
                rgb(c),
                f(alpha(c))
            ));
        }
        if !shadows.is_empty() {
            let nodes: String = (0..shadows.len()).map(|i| format!("<feMergeNode in=\"s{i}\"/>")).collect();
            prims.push_str(&format!("<feMerge result=\"m\">{nodes}<feMergeNode in=\"SourceGraphic\"/></feMerge>"));
        }
        if let Some(b) = blur {
            let input = if shadows.is_empty() { "" } else { " in=\"m\"" };
            prims.push_str(&format!("<feGaussianBlur{input} stdDeviation=\"{}\"/>", f(num0(b, "radius") / 2.0)));
        }
        self.defs.push(format!(
            "<filter id=\"{id}\" filterUnits=\"userSpaceOnUse\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\">{prims}</filter>",
            f(-reach),
            f(-reach),
            f(w + 2.0 * reach),
            f(h + 2.0 * reach)
        ));
        out.push_str(&format!(" filter=\"url(#{id})\""));
        out
    }

    /// Dashed strokes: the line along the middle of the stroke's area, dashed from the
    /// outline's start; per-side weights each their own side's line.
    fn dashed(&mut self, n: &Value, p: &Value, sides: [f64; 4], (out_k, in_k): (f64, f64)) -> String {
        if text(p, "type") != Some("SOLID") || !visible(p) {
            return String::new();
        }
        let c = p.get("color").unwrap_or(&Value::Null);
        let a = num(p, "opacity").unwrap_or(1.0) * alpha(c);
        let cap = match text(n, "strokeCap") {
            Some("ROUND") => "round",
            Some("SQUARE") => "square",
            _ => "butt",
        };
        let dash: Vec<String> = list(n, "dashPattern").iter().map(|d| f(d.as_f64().unwrap_or(0.0))).collect();
        let opacity = if a < 1.0 { format!(" stroke-opacity=\"{}\"", f(a)) } else { String::new() };
        let paint = format!(
            "fill=\"none\" stroke=\"{}\"{opacity} stroke-dasharray=\"{}\" stroke-linecap=\"{cap}\"",
            rgb(c),
            dash.join(" ")
        );
        // Where the middle of each side's stroke lies from the outline (outwards positive).
        let mid = sides.map(|s| s * (out_k - in_k) / 2.0);
        if sides.iter().all(|s| *s == sides[0]) {
            return format!("<path d=\"{}\" {paint} stroke-width=\"{}\"/>", outline(n, mid), f(sides[0]));
        }
        let (w, h) = (num0(n, "width"), num0(n, "height"));
        let [t, r, b, l] = mid;
        let lines = [[-l, -t, w + r, -t], [w + r, -t, w + r, h + b], [w + r, h + b, -l, h + b], [-l, h + b, -l, -t]];
        lines
            .iter()
            .zip(sides)
            .filter(|(_, s)| *s > 0.0)
            .map(|([x1, y1, x2, y2], s)| {
                format!("<path d=\"M{} {}L{} {}\" {paint} stroke-width=\"{}\"/>", f(*x1), f(*y1), f(*x2), f(*y2), f(s))
            })
            .collect()
    }

    /// A stroke as the area between two outlines, so per-side weights and alignment are exact.
    fn stroke(&mut self, n: &Value, p: &Value) -> String {
        let wt = num(n, "strokeWeight").unwrap_or(1.0);
        let sides = if matches!(text(n, "type"), Some("FRAME" | "COMPONENT" | "INSTANCE" | "RECTANGLE")) {
            ["strokeTopWeight", "strokeRightWeight", "strokeBottomWeight", "strokeLeftWeight"]
                .map(|k| num(n, k).unwrap_or(wt))
        } else {
            [wt; 4]
        };
        if sides.iter().all(|s| *s <= 0.0) {
            return String::new();
        }
        let (out_k, in_k) = match text(n, "strokeAlign").unwrap_or("CENTER") {
            "INSIDE" => (0.0, 1.0),
            "OUTSIDE" => (1.0, 0.0),
            _ => (0.5, 0.5),
        };
        if !list(n, "dashPattern").is_empty() {
            return self.dashed(n, p, sides, (out_k, in_k));
        }
        let outer = outline(n, sides.map(|s| s * out_k));
        let inner = outline(n, sides.map(|s| -s * in_k));
        self.paint(n, p, &format!("d=\"{outer}{inner}\" fill-rule=\"evenodd\""))
    }

    fn blur(&mut self, radius: f64, b: [f64; 4]) -> String {
        let id = self.id("f");
        let sigma = radius / 2.0;
        let m = sigma * 3.0 + 1.0;
        self.defs.push(format!(
            "<filter id=\"{id}\" filterUnits=\"userSpaceOnUse\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><feGaussianBlur stdDeviation=\"{}\"/></filter>",
            f(b[0] - m),
            f(b[1] - m),
            f(b[2] + 2.0 * m),
            f(b[3] + 2.0 * m),
            f(sigma)
        ));
        id
    }

    /// CSS and Figma alike: the shape grown by the spread, offset, blurred (σ = radius / 2), and
    /// not drawn under the node.
    fn drop_shadow(&mut self, n: &Value, e: &Value, d: &str) -> String {
        let (s, r) = (num0(e, "spread"), num0(e, "radius"));
        let o = e.get("offset").unwrap_or(&Value::Null);
        let (ox, oy) = (num0(o, "x"), num0(o, "y"));
        let (w, h) = (num0(n, "width"), num0(n, "height"));
        let shadow = outline(n, [s; 4]);
        let filter = if r > 0.0 {
            format!(" filter=\"url(#{})\"", self.blur(r, [ox - s, oy - s, w + 2.0 * s, h + 2.0 * s]))
        } else {
            String::new()
        };
        let big = 4.0 * (r + s.abs()) + ox.abs() + oy.abs() + 10.0;
        let knock = self.id("m");
        self.defs.push(format!(
            "<clipPath id=\"{knock}\"><path clip-rule=\"evenodd\" d=\"M{} {}H{}V{}H{}Z{d}\"/></clipPath>",
            f(-big),
            f(-big),
            f(w + big),
            f(h + big),
            f(-big)
        ));
        let c = e.get("color").unwrap_or(&Value::Null);
        format!(
            "<g clip-path=\"url(#{knock})\"><g{filter}><path transform=\"translate({} {})\" d=\"{shadow}\" fill=\"{}\" fill-opacity=\"{}\"/></g></g>",
            f(ox),
            f(oy),
            rgb(c),
            f(alpha(c))
        )
    }

    /// Inside the shape: everything but the shape shrunk by the spread and offset, blurred.
    fn inner_shadow(&mut self, n: &Value, e: &Value, d: &str) -> String {
        let (s, r) = (num0(e, "spread"), num0(e, "radius"));
        let o = e.get("offset").unwrap_or(&Value::Null);
        let (ox, oy) = (num0(o, "x"), num0(o, "y"));
        let (w, h) = (num0(n, "width"), num0(n, "height"));
        let big = 4.0 * (r + s.abs()) + ox.abs() + oy.abs() + 10.0;
        let hole = outline(n, [-s; 4]);
        let clip = self.id("c");
        self.defs.push(format!("<clipPath id=\"{clip}\"><path d=\"{d}\"/></clipPath>"));
        let filter = if r > 0.0 {
            format!(" filter=\"url(#{})\"", self.blur(r, [-big, -big, w + 2.0 * big, h + 2.0 * big]))
        } else {
            String::new()
        };
        let c = e.get("color").unwrap_or(&Value::Null);
        format!(
            "<g clip-path=\"url(#{clip})\"><g{filter}><path fill-rule=\"evenodd\" transform=\"translate({} {})\" d=\"M{} {}H{}V{}H{}Z{hole}\" fill=\"{}\" fill-opacity=\"{}\"/></g></g>",
            f(ox),
            f(oy),
            f(-big),
            f(-big),
            f(w + big),
            f(h + big),
            f(-big),
            rgb(c),
            f(alpha(c))
        )
    }

    fn line(&mut self, n: &Value) -> String {
        let w = num(n, "strokeWeight").unwrap_or(1.0);
        let mut thin = n.clone();
        thin["height"] = w.into();
        let d = round_rect(0.0, -w / 2.0, num0(n, "width"), w, [(0.0, 0.0); 4]);
        list(n, "strokes").iter().map(|p| self.paint(&thin, p, &format!("d=\"{d}\""))).collect()
    }

    fn vector(&mut self, n: &Value) -> String {
        let mut parts = Vec::new();
        for vp in list(n, "vectorPaths") {
            let data = esc(text(vp, "data").unwrap_or(""));
            let rule = if text(vp, "windingRule") == Some("EVENODD") { "evenodd" } else { "nonzero" };
            for p in list(n, "fills") {
                parts.push(self.paint(n, p, &format!("d=\"{data}\" fill-rule=\"{rule}\"")));
            }
            for p in list(n, "strokes").iter().filter(|p| text(p, "type") == Some("SOLID") && visible(p)) {
                let c = p.get("color").unwrap_or(&Value::Null);
                parts.push(format!(
                    "<path d=\"{data}\" fill=\"none\" stroke=\"{}\" stroke-opacity=\"{}\" stroke-width=\"{}\"/>",
                    rgb(c),
                    f(num(p, "opacity").unwrap_or(1.0) * alpha(c)),
                    f(num(n, "strokeWeight").unwrap_or(1.0))
                ));
            }
        }
        parts.concat()
    }

    /// `figma.createNodeFromSvg` makes a frame at the SVG's own size (its width and height, else
    /// its viewBox), which the plugin scales by the smaller of the two ratios to the node's
    /// size, from the node's top-left.
    fn svg(&mut self, n: &Value) -> String {
        let Some(r) = text(n, "imageRef") else { return String::new() };
        let Some(img) = self.images.get(r) else {
            self.warn(format!("SVG {r} missing"));
            return String::new();
        };
        let (sw, sh) = svg_size(&String::from_utf8_lossy(&img.bytes))
            .unwrap_or((num(n, "width").unwrap_or(100.0), num(n, "height").unwrap_or(100.0)));
        let k = (num(n, "width").unwrap_or(sw) / sw).min(num(n, "height").unwrap_or(sh) / sh);
        let Some(uri) = self.data_uri(r) else { return String::new() };
        format!(
            "<image x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" preserveAspectRatio=\"none\" xlink:href=\"{uri}\"/>",
            f(sw * k),
            f(sh * k)
        )
    }
}

/// An SVG's own size: its root's width and height in px, else its viewBox's.
pub(super) fn svg_size(text: &str) -> Option<(f64, f64)> {
    let start = text.find("<svg")?;
    let root = &text[start..start + text[start..].find('>')?];
    let attr = |name: &str| -> Option<&str> {
        let mut at = 0;
        while let Some(i) = root[at..].find(name) {
            let i = at + i;
            at = i + name.len();
            if !root[..i].ends_with(char::is_whitespace) {
                continue;
            }
            let rest = root[at..].trim_start().strip_prefix('=')?.trim_start();
            let q = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
            return rest[1..].split(q).next();
        }
        None
    };
    let px = |v: Option<&str>| {
        let v = v?.trim();
        v.strip_suffix("px").unwrap_or(v).trim().parse::<f64>().ok().filter(|v| *v > 0.0 && v.is_finite())
    };
    let vb: Vec<f64> = attr("viewBox")
        .unwrap_or("")
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .filter_map(|s| s.parse().ok())
        .collect();
    let from_vb = |i: usize| (vb.len() == 4).then(|| vb[i]).filter(|v| *v > 0.0 && v.is_finite());
    Some((px(attr("width")).or(from_vb(2))?, px(attr("height")).or(from_vb(3))?))
}

/// Figma's blend modes as CSS's mix-blend-mode (PASS_THROUGH and NORMAL draw as normal).
fn css_blend(mode: &str) -> Option<&'static str> {
    Some(match mode {
        "MULTIPLY" => "multiply",
        "SCREEN" => "screen",
        "OVERLAY" => "overlay",
        "DARKEN" => "darken",
        "LIGHTEN" => "lighten",
        "COLOR_DODGE" => "color-dodge",
        "COLOR_BURN" => "color-burn",
        "HARD_LIGHT" => "hard-light",
        "SOFT_LIGHT" => "soft-light",
        "DIFFERENCE" => "difference",
        "EXCLUSION" => "exclusion",
        "HUE" => "hue",
        "SATURATION" => "saturation",
        "COLOR" => "color",
        "LUMINOSITY" => "luminosity",
        "LINEAR_DODGE" => "plus-lighter",
        "LINEAR_BURN" => "plus-darker",
        _ => return None,
    })
}
