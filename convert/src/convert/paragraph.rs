//! Paragraphs: a block's inline content as one TEXT node, as a designer would have made it
//! (issue 39, item 1). Its width is the block's content width and its height follows the text
//! (`textAutoResize: HEIGHT`), so an edited word reflows the paragraph; each differently styled
//! run is a segment (UTF-16 indices, as Figma counts), and a link's run carries its hyperlink.
//!
//! The characters are the laid-out text, never the source: white space collapses as CSS says
//! (`normal`, `nowrap`, `pre-line` collapse runs of spaces; `pre`, `pre-wrap` and
//! `break-spaces` keep them; `pre-line` keeps newlines), and `<br>` is a newline. The lines are
//! Chromium's when Figma breaks them at the same width with the same fonts.
//!
//! Only where the result is exact: a block container (block, list item, table cell,
//! inline-block) whose content is text and plain inline elements. Anything else in it (a box of
//! its own, an image, a float, a positioned, faded, transformed or hidden inline, generated
//! text, an indent) leaves the block's text to be drawn line by line, as before.

use std::collections::HashMap;

use super::paint::{inline_lines, solid};
use super::text::{run_style, substitution, text_align, RunStyle};
use super::{order, round, Container, Ctx, Key, Snapshot, MAX_NODES};
use crate::doc::{
    FontName, Hyperlink, LetterSpacing, LetterSpacingUnit, LineHeight, LineHeightUnit, Maker, Node, NodeType,
    TextAlign, TextAutoResize, TextCase, TextDecoration, TextSegment,
};
use crate::{names, warn};

/// What a paragraph holds, in document order.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Item {
    /// A text node and its layout object.
    Text(usize, usize),
    /// A `<br>`.
    Break,
    /// A text node of collapsible white space alone that Chromium drew nothing of: collapsed
    /// into a space beside it, or the space a line broke at (`<span>del</span> <span>fn</span>`
    /// wrapped between the two): one space between the runs either side, as CSS counts it.
    Space,
    /// The start or end edge of an inline element: its margin, border and padding on that side
    /// (px), which move the text after it along the line.
    Edge(f64),
}

/// The block containers whose inline content can be one TEXT node.
const OWNERS: &[&str] = &["block", "list-item", "table-cell", "inline-block", "table-caption", "flow-root"];

/// Elements that are boxes of their own even when inline.
pub(super) const REPLACED: &[&str] = &[
    "img", "svg", "input", "textarea", "select", "button", "canvas", "video", "audio", "iframe", "object", "embed",
    "picture", "math",
];

/// The TEXT node of element `n`'s inline content, placed in `into`, when it can be one; its
/// text nodes are then drawn by it alone (`Ctx::in_paragraph`).
pub(super) fn paragraph(cx: &mut Ctx<'_, '_>, n: usize, l: usize, into: &Container) -> Option<(Key, Node)> {
    let s = cx.s;
    if !OWNERS.contains(&s.style(l, "display")) || s.style(l, "visibility") == "hidden" || cx.count >= MAX_NODES {
        return None;
    }
    if s.pseudo.contains_key(&n) {
        return None;
    }
    let items = inline_items(s, n)?;
    let texts: Vec<(usize, usize)> =
        items.iter().filter_map(|i| if let Item::Text(t, tl) = i { Some((*t, *tl)) } else { None }).collect();
    let mut runs = Vec::with_capacity(texts.len());
    for (t, tl) in &texts {
        let owner = usize::try_from(s.parent[*t]).unwrap_or(*t);
        runs.push(run_style(cx, *t, *tl, owner)?);
    }
    let Composed { characters, pieces, room, lead } = compose(s, &items);
    if characters.trim().is_empty() {
        return None;
    }
    let indent = first_line(s, l, lead, &characters)?;
    let area = content_box(s, l);
    let lines = extent(s, &texts, area)?;
    let links: Vec<Option<Hyperlink>> = texts.iter().map(|(t, _)| cx.links.around(s, *t, Some(n))).collect();
    let utf16: Vec<u16> = characters.encode_utf16().collect();
    let mut segments = with_room(segments(&runs, &links, &pieces, utf16.len()), &room, &utf16);
    if let Some((font, pitch)) = normal_pitch(s, &texts, &runs, lines) {
        let pitch = round(pitch);
        cx.normal_lines.learn(&font, pitch);
        for g in segments.iter_mut().filter(|g| g.line_height.unit == LineHeightUnit::AUTO && font_of(g) == font) {
            g.line_height = LineHeight { unit: LineHeightUnit::PIXELS, value: Some(pitch) };
        }
    }
    let mut node = text_node(s, n, l, (&characters, segments), area, lines, into);
    node.paragraph_indent = indent;
    // A shadow is the whole node's effect: drawn where every run has the same.
    if runs.iter().all(|r| r.shadow == runs[0].shadow) {
        node.effects = (!runs[0].effects.is_empty()).then(|| runs[0].effects.clone());
    } else if let Some(r) = runs.iter().find(|r| !r.effects.is_empty()) {
        let message = format!("text-shadow: {} not drawn: the paragraph's runs differ in it", warn::quote(&r.shadow));
        cx.css(n, &node.name, "text-shadow", message);
    }
    for (run, (t, _)) in runs.iter().zip(&texts) {
        substitution(cx, run, usize::try_from(s.parent[*t]).unwrap_or(*t), &node.name);
    }
    cx.count += 1;
    cx.in_paragraph.extend(texts.iter().map(|(t, _)| *t));
    let paint = texts.iter().filter_map(|(_, tl)| s.l_paint.get(*tl).copied()).max().unwrap_or(0);
    Some((order(paint), node))
}

/// The paragraph's items: its text nodes and `<br>`s, through inline elements only; `None` when
/// anything else is in it.
fn inline_items(s: &Snapshot<'_>, n: usize) -> Option<Vec<Item>> {
    let mut items = Vec::new();
    let mut todo: Vec<usize> = s.children[n].iter().rev().copied().collect();
    // Where the first hidden inline was met (see `hidden_inline`).
    let mut hidden_at: Option<usize> = None;
    while let Some(c) = todo.pop() {
        if c >= EDGE_END {
            let el = c - EDGE_END;
            let end = s.layout_of[el].map_or(0.0, |cl| side(s, cl, "right"));
            if end != 0.0 {
                items.push(Item::Edge(end));
            }
            continue;
        }
        match (s.node_type[c], s.layout_of[c]) {
            (3, Some(tl)) if s.text_boxes.contains_key(&tl) => items.push(Item::Text(c, tl)),
            (3, _) if collapsed_space(s, c) => items.push(Item::Space),
            (3, _) => {}
            (1, _) if s.is_tag(c, &["script", "style", "template", "noscript"]) => {}
            (1, _) if s.pseudo.get(&c) == Some(&"marker") => {}
            (1, _) if s.pseudo.contains_key(&c) => return None,
            (1, Some(_)) if s.is_tag(c, &["br"]) => items.push(Item::Break),
            (1, Some(cl)) if hidden_inline(s, n, c, cl) => {
                hidden_at = hidden_at.or(Some(items.len()));
                items.extend(hidden_room(s, items.last(), c, cl));
            }
            (1, Some(cl)) => {
                if !plain_inline(s, c, cl) {
                    return None;
                }
                // Its children in order, between its two edges (`todo` is a stack).
                todo.push(EDGE_END + c);
                todo.extend(s.children[c].iter().rev());
                let start = side(s, cl, "left");
                if start != 0.0 {
                    items.push(Item::Edge(start));
                }
            }
            // display: contents or none: its children decide.
            (1, None) => todo.extend(s.children[c].iter().rev()),
            _ => {}
        }
    }
    // A hidden inline with text or a break after it moves them along the line by its width:
    // not exact.
    if hidden_at.is_some_and(|at| items[at..].iter().any(|i| !matches!(i, Item::Edge(_) | Item::Space))) {
        return None;
    }
    items.iter().any(|i| matches!(i, Item::Text(..))).then_some(items)
}

/// An inline element `c` of paragraph `n` that draws nothing (`visibility: hidden`, and so
/// does all inside it), at the end of a line that starts at the left: Sphinx's "¶" permalink
/// after every heading, shown on hover. It takes room after the text, which a text aligned
/// left does not see; `inline_items` checks that nothing follows it.
fn hidden_inline(s: &Snapshot<'_>, n: usize, c: usize, cl: usize) -> bool {
    let left = s.layout_of[n].is_some_and(|l| {
        matches!(s.style(l, "text-align"), "left" | "start" | "justify" | "-webkit-left")
            && s.style(l, "direction") != "rtl"
    });
    let mut inside = vec![c];
    let mut all_hidden = true;
    while let Some(e) = inside.pop() {
        if s.node_type[e] == 1 {
            // Visibility is inherited, and a descendant may set it back to visible.
            all_hidden &= s.layout_of[e].is_none_or(|el| s.style(el, "visibility") == "hidden");
            inside.extend(&s.children[e]);
        }
    }
    left && s.style(cl, "display") == "inline" && s.style(cl, "visibility") == "hidden" && all_hidden
}

/// The room a hidden inline element `c` takes after the item before it, when that is a word:
/// right after a word, it is part of that word for the line breaking, so its room is the room
/// after the word's last character (Sphinx's heading breaks before "Older" because "Older¶"
/// does not fit).
fn hidden_room(s: &Snapshot<'_>, before: Option<&Item>, c: usize, cl: usize) -> Option<Item> {
    let word = matches!(before, Some(Item::Text(t, _))
        if s.node_value[*t].is_some_and(|v| v.ends_with(|ch: char| !ch.is_whitespace())));
    word.then(|| Item::Edge(hidden_width(s, c, cl)))
}

/// The width a hidden inline element takes: its text's on each line, its margins, borders and
/// padding.
fn hidden_width(s: &Snapshot<'_>, c: usize, cl: usize) -> f64 {
    let text: f64 = inline_lines(s, c).iter().map(|line| line[2]).sum();
    text + side(s, cl, "left") + side(s, cl, "right")
}

/// The room an inline element `cl` (its layout) takes beside its content on one `edge` ("left",
/// "right"): its margin, border and padding there.
fn side(s: &Snapshot<'_>, cl: usize, edge: &str) -> f64 {
    s.px(cl, &format!("margin-{edge}"))
        + s.px(cl, &format!("border-{edge}-width"))
        + s.px(cl, &format!("padding-{edge}"))
}

/// Marks, in the walk's stack, the end edge of the element `value - EDGE_END`.
const EDGE_END: usize = usize::MAX / 2;

/// An inline element whose text a TEXT node draws exactly as CSS does. Its `overflow` is not
/// looked at: it applies to block, flex and grid containers only, never to an inline box
/// (rustdoc's `.docblock-short p { display: inline; overflow: hidden }` clips nothing).
fn plain_inline(s: &Snapshot<'_>, c: usize, cl: usize) -> bool {
    let opacity: f64 = s.style(cl, "opacity").parse().unwrap_or(1.0);
    s.style(cl, "display") == "inline"
        && !s.is_tag(c, REPLACED)
        && s.style(cl, "position") == "static"
        && s.style(cl, "visibility") != "hidden"
        && s.style(cl, "transform") == "none"
        && matches!(s.style(cl, "filter"), "none" | "")
        && matches!(s.style(cl, "mix-blend-mode"), "normal" | "")
        && opacity >= 1.0
        && !matches!(s.style(cl, "vertical-align"), "super" | "sub" | "top" | "bottom" | "text-top" | "text-bottom")
}

/// Where a text node's characters are in the paragraph's: (text node index among the items'
/// texts, start, end), UTF-16.
type Piece = (usize, usize, usize);

/// How far the first line of block `l`'s text starts in (Figma's `paragraphIndent`): its CSS
/// `text-indent`, and `lead`, the room of the inline edges it opens with. Figma indents the
/// first line of every paragraph of a text, CSS only the block's first: a text of several
/// (`characters` holding a newline), or not laid out from the left, cannot have it. `None`
/// where the text cannot be one layer: a `text-indent` Figma cannot draw (negative, a
/// percentage, `hanging`, or on such a text); there the room of the edges is dropped.
fn first_line(s: &Snapshot<'_>, l: usize, lead: f64, characters: &str) -> Option<Option<f64>> {
    let css = s.style(l, "text-indent");
    let indent = if css == "0px" { 0.0 } else { css.strip_suffix("px")?.parse::<f64>().ok().filter(|v| *v > 0.0)? };
    let from_left = s.style(l, "direction") != "rtl" && text_align(s.style(l, "text-align")) == TextAlign::LEFT;
    if from_left && !characters.contains('\n') {
        Some((indent + lead > 0.0).then(|| round(indent + lead)))
    } else {
        (indent == 0.0).then_some(None)
    }
}

/// What `compose` answers.
struct Composed {
    /// The paragraph's characters as CSS lays them out.
    characters: String,
    /// Where each text node's are.
    pieces: Vec<Piece>,
    /// The room inline elements' edges make after characters (UTF-16 index of the character,
    /// px).
    room: Vec<(usize, f64)>,
    /// The room of the edges before the first character (px).
    lead: f64,
}

/// The paragraph's characters, where each text node's are, and the room inline elements'
/// edges make.
fn compose(s: &Snapshot<'_>, items: &[Item]) -> Composed {
    let mut out: Vec<u16> = Vec::new();
    let mut pieces: Vec<Piece> = Vec::new();
    let mut room: Vec<(usize, f64)> = Vec::new();
    let mut lead = 0.0;
    // A collapsible space to draw before the next text, and the text node it came from: it is
    // drawn in that node's style, as CSS draws it.
    let mut pending: Option<usize> = None;
    let mut text_index: usize = 0;
    for item in items {
        let (t, tl) = match item {
            Item::Break => {
                out.push(u16::from(b'\n'));
                pending = None;
                continue;
            }
            // In the style of the text before it, which grows over it.
            Item::Space => {
                pending = pending.or(Some(text_index.saturating_sub(1)));
                continue;
            }
            // After the character before it (a space still to come is drawn after the edge in
            // CSS too, so the edge goes on the last character already there).
            Item::Edge(px) => {
                match out.len().checked_sub(1) {
                    Some(last) => room.push((last, *px)),
                    None => lead += *px,
                }
                continue;
            }
            Item::Text(t, tl) => (*t, *tl),
        };
        // A text node has its parent's computed style.
        let mode = WhiteSpace::of(s.style(tl, "white-space"));
        let mut start = out.len();
        let full: Vec<u16> = s.l_text[tl].or(s.node_value[t]).unwrap_or("").encode_utf16().collect();
        for part in mode.parts(&full, s.text_boxes.get(&tl).map(Vec::as_slice).unwrap_or_default()) {
            match part {
                Part::Space => pending = pending.or(Some(text_index)),
                Part::Text(chars) => {
                    if let Some(from) = pending.take() {
                        space_before(&mut out, &mut pieces, (from, text_index), &mut start);
                    }
                    out.extend(chars);
                }
            }
        }
        pieces.push((text_index, start, out.len()));
        text_index += 1;
    }
    // White space at the end of the paragraph is not drawn: a preformatted block's last
    // newline ends its last line, it opens none (Figma would draw one more, empty).
    while out.last().is_some_and(|c| is_space(*c)) {
        out.pop();
    }
    let len = out.len();
    let pieces = pieces.into_iter().map(|(i, st, end)| (i, st.min(len), end.min(len))).collect();
    room.retain(|(i, _)| *i < len);
    Composed { characters: String::from_utf16_lossy(&out), pieces, room, lead }
}

/// The collapsed space before a text, unless one is there already; drawn in the style of the
/// text node it came from (`from`, of `(from, now)`): the earlier one's piece grows over it.
fn space_before(out: &mut Vec<u16>, pieces: &mut [Piece], (from, now): (usize, usize), start: &mut usize) {
    if out.last().is_none_or(|c| is_space(*c)) {
        return;
    }
    out.push(u16::from(b' '));
    match pieces.last_mut() {
        Some(prev) if from < now && prev.2 + 1 == out.len() && *start + 1 == out.len() => {
            prev.2 = out.len();
            *start = out.len();
        }
        _ => {}
    }
}

/// Whether text node `c` is collapsible white space alone (its parent's `white-space` collapses
/// it: `normal`, `nowrap`).
fn collapsed_space(s: &Snapshot<'_>, c: usize) -> bool {
    let value = s.node_value[c].unwrap_or("");
    let parent = usize::try_from(s.parent[c]).ok().and_then(|p| s.layout_of[p]);
    let collapses = parent.is_some_and(|pl| WhiteSpace::of(s.style(pl, "white-space")) == WhiteSpace::Collapse);
    collapses && !value.is_empty() && value.encode_utf16().all(is_white)
}

/// CSS's collapsible white space: space, tab, line feed, form feed, carriage return (not
/// the no-break space, which is text).
fn is_white(c: u16) -> bool {
    matches!(c, 0x20 | 0x09 | 0x0A | 0x0C | 0x0D)
}

fn is_space(c: u16) -> bool {
    c == u16::from(b' ') || c == u16::from(b'\n')
}

/// CSS `white-space`, as far as the characters go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WhiteSpace {
    /// `normal`, `nowrap`: runs of white space are one space.
    Collapse,
    /// `pre-line`: spaces collapse, newlines stay.
    PreLine,
    /// `pre`, `pre-wrap`, `break-spaces`: as written.
    Preserve,
}

/// A part of a text node's characters: drawn text, or collapsible white space.
enum Part {
    Text(Vec<u16>),
    Space,
}

impl WhiteSpace {
    fn of(css: &str) -> Self {
        match css {
            "pre" | "pre-wrap" | "break-spaces" => Self::Preserve,
            "pre-line" => Self::PreLine,
            _ => Self::Collapse,
        }
    }

    /// The text node's characters (`full`), read through its line boxes: what lies between
    /// them is white space the layout collapsed or broke a line at.
    fn parts(self, full: &[u16], boxes: &[([f64; 4], usize, usize)]) -> Vec<Part> {
        let mut sorted: Vec<(usize, usize)> = boxes.iter().map(|(_, st, len)| (*st, *len)).collect();
        sorted.sort_unstable();
        let (first, last) = match (sorted.first(), sorted.last()) {
            (Some(f), Some(l)) => (f.0.min(full.len()), (l.0 + l.1).min(full.len())),
            _ => return Vec::new(),
        };
        if self == Self::Preserve {
            return vec![Part::Text(full[first..last].to_vec())];
        }
        let mut parts = Vec::new();
        let mut at = 0;
        for (st, len) in sorted {
            let (st, end) = (st.min(full.len()).max(at), (st + len).min(full.len()));
            self.gap(&full[at..st], &mut parts);
            // White space at a box's ends is a space between runs, not the run's own.
            let inner = &full[st..end.max(st)];
            let lead = inner.iter().take_while(|c| is_white(**c)).count();
            let trail = inner[lead..].iter().rev().take_while(|c| is_white(**c)).count();
            self.gap(&inner[..lead], &mut parts);
            if inner.len() > lead + trail {
                parts.push(Part::Text(self.collapse(&inner[lead..inner.len() - trail])));
            }
            self.gap(&inner[inner.len() - trail..], &mut parts);
            at = end.max(at);
        }
        self.gap(&full[at..], &mut parts);
        parts
    }

    /// Characters outside the line boxes: a space where there was white space, and under
    /// `pre-line` the newlines it held.
    fn gap(self, gap: &[u16], parts: &mut Vec<Part>) {
        let newlines = gap.iter().filter(|c| **c == u16::from(b'\n')).count();
        if self == Self::PreLine && newlines > 0 {
            parts.push(Part::Text(vec![u16::from(b'\n'); newlines]));
        } else if gap.iter().any(|c| is_white(*c)) {
            parts.push(Part::Space);
        }
    }

    /// A line box's characters with its runs of white space made one space (newlines kept
    /// under `pre-line`).
    fn collapse(self, chars: &[u16]) -> Vec<u16> {
        let mut out: Vec<u16> = Vec::with_capacity(chars.len());
        for c in chars {
            // Under `pre-line` a newline is kept; any other white space is one space.
            let kept = !is_white(*c) || (self == Self::PreLine && *c == 0x0A);
            if kept {
                out.push(*c);
            } else if out.last().is_some_and(|p| !is_space(*p)) {
                out.push(0x20);
            }
        }
        out
    }
}

/// The block's content box, page coordinates: its border box less borders and padding.
fn content_box(s: &Snapshot<'_>, l: usize) -> [f64; 4] {
    let b = s.l_bounds[l];
    let left = s.px(l, "border-left-width") + s.px(l, "padding-left");
    let right = s.px(l, "border-right-width") + s.px(l, "padding-right");
    let top = s.px(l, "border-top-width") + s.px(l, "padding-top");
    [b[0] + left, b[1] + top, (b[2] - left - right).max(0.0), b[3]]
}

/// The paragraph's glyph boxes: the top of the first, the bottom of the last, and the height of
/// one; `None` when one lies outside the content box (a float, a negative margin: the lines are
/// not the block's).
fn extent(s: &Snapshot<'_>, texts: &[(usize, usize)], area: [f64; 4]) -> Option<(f64, f64, f64)> {
    let (mut top, mut bottom, mut glyphs) = (f64::MAX, f64::MIN, 0.0);
    for (_, tl) in texts {
        for (b, _, len) in s.text_boxes.get(tl).into_iter().flatten() {
            if *len == 0 || b[3] <= 0.0 {
                continue;
            }
            if b[0] < area[0] - 1.0 || b[0] + b[2] > area[0] + area[2] + 1.0 {
                return None;
            }
            if b[1] < top {
                glyphs = b[3];
            }
            top = top.min(b[1]);
            bottom = bottom.max(b[1] + b[3]);
        }
    }
    (top < bottom).then_some((top, bottom, glyphs))
}

/// A font at a size, as Chromium's line height at `normal` depends on them alone.
type FontKey = (String, String, u64);

fn font_key(font: &FontName, size: f64) -> FontKey {
    (font.family.clone(), font.style.clone(), round(size).to_bits())
}

fn font_of(g: &TextSegment) -> FontKey {
    font_key(&g.font_name, g.font_size)
}

/// The height of Chromium's lines at `line-height: normal`, by font and size: the first
/// paragraph of several lines in that font measures it.
#[derive(Default)]
pub(super) struct NormalLines(HashMap<FontKey, f64>);

impl NormalLines {
    fn learn(&mut self, font: &FontKey, pitch: f64) {
        self.0.entry(font.clone()).or_insert(pitch);
    }

    /// The line height of `font`: as measured, else as measured in another style of its family
    /// at its size (a family's styles share their vertical metrics, as Liberation's and
    /// DejaVu's do).
    fn of(&self, font: &FontKey) -> Option<f64> {
        let (family, _, size) = font;
        let kin = || self.0.iter().filter(|((f, _, z), _)| f == family && z == size).map(|(_, l)| *l).reduce(f64::min);
        self.0.get(font).copied().or_else(kin)
    }
}

/// The font of a paragraph's lines and the height of those lines, where Chromium laid them out
/// at `line-height: normal` one height apart; `None` where no one height puts every line
/// where Chromium did.
///
/// Figma's AUTO line height is not Chromium's `normal`: Figma takes the font's ascender,
/// descender and line gap as they are, Chromium rounds each to a whole pixel. Liberation Sans
/// at 16 px is 18.4 px a line in Figma and 18 in Chromium: each line of a paragraph drawn 0.4 px
/// lower than the one before, and the first 0.7 px low (PostgreSQL's pages). At the height
/// Chromium used, each line is where Chromium put it, the glyphs centred on it as the TEXT
/// node's box (`text_node`) is on Chromium's glyph boxes.
///
/// The lines are the glyph boxes grouped by where they lie; the font is the first run's, and
/// each line's top is the top of its boxes in that font. A paragraph of one line measures
/// nothing.
fn normal_pitch(
    s: &Snapshot<'_>,
    texts: &[(usize, usize)],
    runs: &[RunStyle],
    (_, _, glyphs): (f64, f64, f64),
) -> Option<(FontKey, f64)> {
    let first = runs.first()?;
    if first.line_height.unit != LineHeightUnit::AUTO {
        return None;
    }
    let font = font_key(&first.font_name(), first.font_size);
    let mut boxes: Vec<([f64; 4], bool)> = Vec::new();
    for ((_, tl), run) in texts.iter().zip(runs) {
        let main = font_key(&run.font_name(), run.font_size) == font;
        let shown = s.text_boxes.get(tl).into_iter().flatten().filter(|(b, _, len)| *len > 0 && b[3] > 0.0);
        boxes.extend(shown.map(|(b, _, _)| (*b, main)));
    }
    boxes.sort_by(|a, b| a.0[1].total_cmp(&b.0[1]));
    // Each line: its extent, and the top of its boxes in the paragraph's font.
    let mut lines: Vec<(f64, f64, Option<f64>)> = Vec::new();
    for (b, main) in boxes {
        let mid = b[1] + b[3] / 2.0;
        let at = main.then_some(b[1]);
        match lines.last_mut() {
            Some((top, bottom, own)) if mid > *top && mid < *bottom => {
                *bottom = bottom.max(b[1] + b[3]);
                *own = own.or(at);
            }
            _ => lines.push((b[1], b[1] + b[3], at)),
        }
    }
    let tops: Vec<f64> = lines.iter().map(|(_, _, at)| *at).collect::<Option<_>>()?;
    let [first, second, ..] = tops[..] else { return None };
    let pitch = second - first;
    let even = tops.windows(2).all(|w| ((w[1] - w[0]) - pitch).abs() <= 0.5);
    (even && pitch >= glyphs - 0.5).then_some((font, pitch))
}

/// Every text at `line-height: normal` (AUTO) in a font whose lines a paragraph measured
/// (`NormalLines`) takes that height, so that one type is one style and its lines are
/// Chromium's. A TEXT node of one line (as tall as its glyphs) keeps its glyphs where they are:
/// its box grows by the leading, half above and half below; in a font nothing measured, its
/// line is as tall as its glyphs. Either puts its baseline where Chromium's is, which AUTO does
/// not (Figma's glyphs centred on a line of any height sit the same). A node of several lines
/// that no one height lays out as Chromium did keeps AUTO.
pub(super) fn even_out(root: &mut Node, known: &NormalLines) {
    let pitch = |font: &FontKey| known.of(font);
    let auto = |lh: &Option<LineHeight>| lh.as_ref().is_some_and(|l| l.unit == LineHeightUnit::AUTO);
    super::styles::visit(root, &mut |n| {
        if n.kind == NodeType::TEXT && auto(&n.line_height) {
            let font = n.font_name.as_ref().zip(n.font_size).map(|(f, size)| font_key(f, size));
            let glyphs = (n.height > 0.0).then_some(n.height);
            let line = font.as_ref().and_then(pitch).or(glyphs).filter(|l| n.height < 1.5 * l);
            if let Some(l) = line {
                (n.y, n.height) = (round(n.y - (l - n.height) / 2.0), l);
                n.line_height = Some(LineHeight { unit: LineHeightUnit::PIXELS, value: Some(l) });
            }
        }
        // A node of several lines at AUTO: its runs stay as it is. Else a run of a font nothing
        // measured takes its line's height, as the node did: at AUTO, Figma would make the
        // line as tall as that font's metrics, not Chromium's.
        let line = n.line_height.as_ref().filter(|l| l.unit == LineHeightUnit::PIXELS).and_then(|l| l.value);
        let single = !auto(&n.line_height);
        for g in n.segments.iter_mut().flatten().filter(|g| g.line_height.unit == LineHeightUnit::AUTO) {
            if let Some(l) = pitch(&font_of(g)).or(line).filter(|_| single) {
                g.line_height = LineHeight { unit: LineHeightUnit::PIXELS, value: Some(l) };
            }
        }
    });
}

/// The styled runs over all `len` characters: one per text node, adjacent ones of one style
/// merged; what lies between two (a space, a `<br>`'s newline) is the later one's.
fn segments(runs: &[RunStyle], links: &[Option<Hyperlink>], pieces: &[Piece], len: usize) -> Vec<TextSegment> {
    let mut out: Vec<TextSegment> = Vec::new();
    for (i, start, end) in pieces {
        let seg = segment(&runs[*i], links[*i].clone(), *start, *end);
        match out.last_mut() {
            Some(prev) if same_style(prev, &seg) || start == end => prev.end = *end as u32,
            Some(prev) => {
                prev.end = *start as u32;
                out.push(seg);
            }
            None => out.push(TextSegment { start: 0, ..seg }),
        }
    }
    if let Some(last) = out.last_mut() {
        last.end = len as u32;
    }
    out.retain(|g| g.end > g.start);
    out
}

/// The room an inline element's padding, border and margin make beside its text, as Figma can
/// draw it: more letter spacing after the character before the edge, a segment of its own.
fn with_room(mut segments: Vec<TextSegment>, room: &[(usize, f64)], chars: &[u16]) -> Vec<TextSegment> {
    for (i, px) in room {
        // The whole character: both halves of a surrogate pair.
        let start = if (0xDC00..0xE000).contains(&chars[*i]) && *i > 0 { i - 1 } else { *i } as u32;
        let end = *i as u32 + 1;
        let Some(at) = segments.iter().position(|g| g.start <= start && end <= g.end) else { continue };
        let g = segments.remove(at);
        let mut wider = TextSegment { start, end, ..g.clone() };
        wider.letter_spacing.value = round(wider.letter_spacing.value + px);
        let parts = [TextSegment { end: start, ..g.clone() }, wider, TextSegment { start: end, ..g }];
        for (k, part) in parts.into_iter().filter(|p| p.end > p.start).enumerate() {
            segments.insert(at + k, part);
        }
    }
    segments
}

fn segment(run: &RunStyle, hyperlink: Option<Hyperlink>, start: usize, end: usize) -> TextSegment {
    TextSegment {
        start: start as u32,
        end: end as u32,
        font_name: run.font_name(),
        font_size: round(run.font_size),
        fills: vec![solid(&run.color)],
        text_decoration: run.decoration.unwrap_or(TextDecoration::NONE),
        text_decoration_style: run.decoration.and(run.deco.style),
        text_decoration_offset: run.decoration.and(run.deco.offset.clone()),
        text_decoration_thickness: run.decoration.and(run.deco.thickness.clone()),
        text_decoration_color: run.decoration.and(run.deco.color.clone()),
        text_decoration_skip_ink: run.decoration.and(run.deco.skip_ink),
        text_case: run.case.unwrap_or(TextCase::ORIGINAL),
        letter_spacing: LetterSpacing { unit: LetterSpacingUnit::PIXELS, value: round(run.letter) },
        line_height: run.line_height.clone(),
        hyperlink,
        fill_style_id: None,
        text_style_id: None,
    }
}

fn same_style(a: &TextSegment, b: &TextSegment) -> bool {
    TextSegment { start: 0, end: 0, ..a.clone() } == TextSegment { start: 0, end: 0, ..b.clone() }
}

/// The TEXT node: the block's content width, from its first line box's top to its last's
/// bottom, its own members the style of most of its characters, `segments` when there are
/// several.
fn text_node(
    s: &Snapshot<'_>,
    n: usize,
    l: usize,
    (characters, segments): (&str, Vec<TextSegment>),
    area: [f64; 4],
    (top, bottom, glyphs): (f64, f64, f64),
    into: &Container,
) -> Node {
    let main = segments.iter().max_by_key(|g| g.end - g.start).cloned().unwrap_or_else(|| segments[0].clone());
    // Chromium's boxes are the glyphs' (ascent to descent); Figma's text box is the line boxes,
    // half the leading above the first glyphs and below the last.
    let leading = match main.line_height.value {
        Some(lh) if lh > 0.0 => lh - glyphs,
        _ => 0.0,
    };
    let (y, height) = (top - leading / 2.0, bottom - top + leading);
    let several = segments.len() > 1;
    Node {
        kind: NodeType::TEXT,
        name: names::short(characters),
        x: round(area[0] - into.ox),
        y: round(y - into.oy),
        width: round(area[2]),
        height: round(height),
        fills: Some(main.fills.clone()),
        characters: Some(characters.to_owned()),
        font_size: Some(main.font_size),
        font_name: Some(main.font_name.clone()),
        text_align_horizontal: Some(text_align(s.style(l, "text-align"))),
        text_auto_resize: Some(TextAutoResize::HEIGHT),
        line_height: Some(main.line_height.clone()),
        letter_spacing: (main.letter_spacing.value != 0.0).then(|| main.letter_spacing.clone()),
        text_decoration: (main.text_decoration != TextDecoration::NONE).then_some(main.text_decoration),
        text_decoration_style: main.text_decoration_style,
        text_decoration_offset: main.text_decoration_offset.clone(),
        text_decoration_thickness: main.text_decoration_thickness.clone(),
        text_decoration_color: main.text_decoration_color.clone(),
        text_decoration_skip_ink: main.text_decoration_skip_ink,
        text_case: (main.text_case != TextCase::ORIGINAL).then_some(main.text_case),
        hyperlink: if several { None } else { main.hyperlink.clone() },
        segments: several.then_some(segments),
        maker: Maker { dom: Some(n), flex_item: false },
        ..Node::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(mode: WhiteSpace, text: &str, boxes: &[(usize, usize)]) -> String {
        let full: Vec<u16> = text.encode_utf16().collect();
        let boxes: Vec<([f64; 4], usize, usize)> = boxes.iter().map(|(s, l)| ([0.0; 4], *s, *l)).collect();
        mode.parts(&full, &boxes)
            .into_iter()
            .map(|p| match p {
                Part::Text(t) => String::from_utf16_lossy(&t),
                Part::Space => "␣".into(),
            })
            .collect::<Vec<_>>()
            .join("|")
    }

    #[test]
    fn white_space_is_read_through_the_line_boxes() {
        // A source line break between two words Chromium drew on one line, and a break at a
        // space between two lines: both are one space.
        assert_eq!(
            parts(WhiteSpace::Collapse, "\n  Hello\n  big world ", &[(3, 11), (15, 5)]),
            "␣|Hello big|␣|world|␣"
        );
        // A box that begins at the space after an inline element keeps it as a space.
        assert_eq!(parts(WhiteSpace::Collapse, " is the", &[(0, 7)]), "␣|is the");
        assert_eq!(parts(WhiteSpace::Collapse, "a\u{a0}b", &[(0, 3)]), "a\u{a0}b");
        assert_eq!(parts(WhiteSpace::PreLine, "a\nb", &[(0, 1), (2, 1)]), "a|\n|b");
        assert_eq!(parts(WhiteSpace::Preserve, "  a\n  b", &[(0, 3), (4, 3)]), "  a\n  b");
        assert_eq!(parts(WhiteSpace::Collapse, "x", &[]), "");
    }
}
