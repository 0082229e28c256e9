//! TEXT nodes as SVG `<text>`: each line `lineHeight` tall (AUTO: the font's ascender +
//! descender + line gap), its baseline the half-leading plus the ascender below the line's top.
//! WIDTH_AND_HEIGHT boxes follow their text from their top-left, a line per "\n"; fixed-width
//! boxes (HEIGHT, NONE) break their text at their width (wrap.rs) and align each line within
//! it. Each styled segment is a tspan of its own font, size, fill, spacing and decoration.

use serde_json::Value;

use super::fonts;
use super::svg::{alpha, esc, f, list, num, rgb, text, visible, Writer};
use super::wrap::{self, Run};

/// The style a character is drawn with: the node's members, overridden by its segment's.
#[derive(Debug, Clone, PartialEq)]
pub struct TextStyle {
    pub family: String,
    pub style: String,
    pub size: f64,
    color: String,
    alpha: f64,
    pub spacing: f64,
    decoration: Option<String>,
    text_case: Option<String>,
}

fn text_style(n: &Value, seg: Option<&Value>) -> TextStyle {
    let pick = |k: &str| seg.and_then(|s| s.get(k)).or_else(|| n.get(k));
    let size = pick("fontSize").and_then(Value::as_f64).filter(|s| *s > 0.0).unwrap_or(12.0);
    let fill = pick("fills")
        .and_then(Value::as_array)
        .and_then(|l| l.iter().find(|p| text(p, "type") == Some("SOLID") && visible(p)));
    let color = fill.and_then(|p| p.get("color"));
    let font = pick("fontName");
    let ls = pick("letterSpacing");
    let ls_value = ls.and_then(|l| num(l, "value")).unwrap_or(0.0);
    TextStyle {
        family: font.and_then(|f| text(f, "family")).unwrap_or(fonts::FALLBACK_FAMILY).to_owned(),
        style: font.and_then(|f| text(f, "style")).unwrap_or("Regular").to_owned(),
        size,
        color: color.map_or_else(|| "rgb(0,0,0)".to_owned(), rgb),
        alpha: fill.map_or(1.0, |p| num(p, "opacity").unwrap_or(1.0) * color.map_or(1.0, alpha)),
        spacing: match ls.and_then(|l| text(l, "unit")) {
            Some("PERCENT") => ls_value / 100.0 * size,
            _ => ls_value,
        },
        decoration: pick("textDecoration").and_then(Value::as_str).map(str::to_owned),
        text_case: pick("textCase").and_then(Value::as_str).map(str::to_owned),
    }
}

/// The node's segments with their ranges in chars (the wire counts UTF-16 code units).
fn segments<'n>(n: &'n Value, chars: &[char]) -> Vec<(usize, usize, &'n Value)> {
    let mut at_unit = Vec::with_capacity(chars.len() + 1);
    for (i, c) in chars.iter().enumerate() {
        for _ in 0..c.len_utf16() {
            at_unit.push(i);
        }
    }
    at_unit.push(chars.len());
    let to_char = |u: Option<f64>| at_unit.get(u.unwrap_or(0.0).max(0.0) as usize).copied().unwrap_or(chars.len());
    list(n, "segments").iter().map(|s| (to_char(num(s, "start")), to_char(num(s, "end")), s)).collect()
}

/// chars[start..end] as runs of one style each: (start, end, style).
fn styled_runs(n: &Value, segs: &[(usize, usize, &Value)], start: usize, end: usize) -> Vec<(usize, usize, TextStyle)> {
    let mut out = Vec::new();
    let mut i = start;
    while i < end {
        let seg = segs.iter().find(|g| g.0 <= i && i < g.1);
        let stop = seg.map_or(end, |g| g.1.min(end));
        let to = segs.iter().find(|g| g.0 > i && g.0 < stop).map_or(stop, |g| g.0);
        out.push((i, to, text_style(n, seg.map(|g| g.2))));
        i = to;
    }
    out
}

/// Characters in a case, as Figma draws `textCase` (TITLE: each word's first letter).
fn in_case(s: &[char], case: Option<&str>, word_start: bool) -> String {
    match case {
        Some("UPPER") => s.iter().collect::<String>().to_uppercase(),
        Some("LOWER") => s.iter().collect::<String>().to_lowercase(),
        Some("TITLE") => {
            let mut out = String::new();
            let mut start = word_start;
            for c in s {
                if start && !c.is_whitespace() {
                    out.extend(c.to_uppercase());
                } else {
                    out.push(*c);
                }
                start = c.is_whitespace();
            }
            out
        }
        _ => s.iter().collect(),
    }
}

fn attrs_of(st: &TextStyle, family: &str) -> String {
    let (weight, italic) = fonts::parse_style(&st.style);
    let deco = match st.decoration.as_deref() {
        Some("UNDERLINE") => " text-decoration=\"underline\"",
        Some("STRIKETHROUGH") => " text-decoration=\"line-through\"",
        _ => "",
    };
    let mut a = format!("font-family=\"{}\" font-size=\"{}\" font-weight=\"{weight}\"", esc(family), f(st.size));
    if italic {
        a += " font-style=\"italic\"";
    }
    if st.spacing != 0.0 {
        a += &format!(" letter-spacing=\"{}\"", f(st.spacing));
    }
    a += deco;
    a += &format!(" fill=\"{}\"", st.color);
    if st.alpha < 1.0 {
        a += &format!(" fill-opacity=\"{}\"", f(st.alpha));
    }
    a
}

/// A style's face as drawn: the family (the document's, or Inter), fontdb's face, its metrics.
#[derive(Debug, Clone)]
pub struct Face {
    family: String,
    id: Option<resvg::usvg::fontdb::ID>,
    metrics: fonts::Metrics,
}

/// Each line of a text that follows its "\n" only, as char ranges.
fn hard_lines(chars: &[char]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in chars.iter().enumerate() {
        if *c == '\n' {
            out.push((start, i));
            start = i + 1;
        }
    }
    out.push((start, chars.len()));
    out
}

/// A TEXT node's `paragraphIndent` (0 when absent).
fn indent(n: &Value) -> f64 {
    num(n, "paragraphIndent").unwrap_or(0.0).max(0.0)
}

impl Writer<'_> {
    /// The family drawn, the face and the vertical metrics of a style, as resvg will draw it
    /// (looked up once per family and style: a lookup scans the font database).
    fn face_of(&mut self, st: &TextStyle) -> Face {
        let key = (st.family.clone(), st.style.clone());
        if let Some(face) = self.faces.get(&key) {
            return face.clone();
        }
        let (weight, italic) = fonts::parse_style(&st.style);
        let family = fonts::family(self.db, &st.family).to_owned();
        let id = fonts::face(self.db, &family, weight, italic);
        let face = Face { family, id, metrics: fonts::metrics(self.db, id) };
        self.faces.insert(key, face.clone());
        face
    }

    /// The lines of a TEXT node: broken at its width when it is a fixed-width box.
    fn lines(&mut self, n: &Value, chars: &[char], segs: &[(usize, usize, &Value)]) -> Vec<(usize, usize)> {
        let wraps = text(n, "textAutoResize").is_some_and(|r| r != "WIDTH_AND_HEIGHT");
        let Some(width) = num(n, "width").filter(|w| wraps && *w > 0.0) else { return hard_lines(chars) };
        let runs: Vec<Run> = styled_runs(n, segs, 0, chars.len())
            .into_iter()
            .map(|(_, end, st)| Run { end, face: self.face_of(&st).id, size: st.size, spacing: st.spacing })
            .collect();
        wrap::break_lines(self.db, &mut self.shapers, chars, &runs, (width, indent(n)))
    }

    /// The lines a TEXT node is drawn in, as text.
    pub(super) fn line_texts(&mut self, n: &Value) -> Vec<String> {
        let chars: Vec<char> = text(n, "characters").unwrap_or("").chars().collect();
        let segs = segments(n, &chars);
        self.lines(n, &chars, &segs).into_iter().map(|(s, e)| chars[s..e].iter().collect()).collect()
    }

    pub(super) fn text(&mut self, n: &Value) -> String {
        let main = text_style(n, None);
        let m = self.face_of(&main).metrics;
        let content = (m.ascender + m.descender) * main.size;
        let lh = n.get("lineHeight");
        let line = match (lh.and_then(|l| text(l, "unit")), lh.and_then(|l| num(l, "value"))) {
            (Some("PIXELS"), Some(v)) => v,
            (Some("PERCENT"), Some(v)) => v / 100.0 * main.size,
            _ => (m.ascender + m.descender + m.line_gap) * main.size,
        };
        let baseline0 = (line - content) / 2.0 + m.ascender * main.size;
        let has_solid = list(n, "fills").iter().any(|p| text(p, "type") == Some("SOLID") && visible(p));
        if !has_solid {
            self.warn("TEXT without a solid fill drawn black".into());
        }
        let chars: Vec<char> = text(n, "characters").unwrap_or("").chars().collect();
        let segs = segments(n, &chars);
        let fixed = text(n, "textAutoResize") != Some("WIDTH_AND_HEIGHT");
        let align = if fixed { text(n, "textAlignHorizontal").unwrap_or("LEFT") } else { "LEFT" };
        let width = num(n, "width").unwrap_or(0.0);
        let (anchor, ax) = match align {
            "CENTER" => (" text-anchor=\"middle\"", width / 2.0),
            "RIGHT" => (" text-anchor=\"end\"", width),
            _ => ("", 0.0),
        };
        let mut out = String::new();
        for (i, (start, mut end)) in self.lines(n, &chars, &segs).into_iter().enumerate() {
            // The first line of each paragraph starts `paragraphIndent` in (from the left).
            let first = start == 0 || chars[start - 1] == '\n';
            let x = if first && anchor.is_empty() { ax + indent(n) } else { ax };
            // Spaces at a line's end hang past it, as Figma and CSS leave them.
            while end > start && chars[end - 1] == ' ' {
                end -= 1;
            }
            if end <= start {
                continue;
            }
            let mut spans = String::new();
            for (s, e, st) in styled_runs(n, &segs, start, end) {
                let word_start = s == 0 || chars[s - 1].is_whitespace();
                let family = self.face_of(&st).family;
                let t = in_case(&chars[s..e], st.text_case.as_deref(), word_start);
                spans += &format!("<tspan {}>{}</tspan>", attrs_of(&st, &family), esc(&t));
            }
            out += &format!(
                "<text xml:space=\"preserve\" x=\"{}\" y=\"{}\"{anchor}>{spans}</text>",
                f(x),
                f(baseline0 + i as f64 * line)
            );
        }
        out
    }
}
