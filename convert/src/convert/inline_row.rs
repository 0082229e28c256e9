//! A block's line of pieces as Figma's wrapping auto layout (issue 39, item 2): a name and the
//! badge after it (rustdoc's item and its `Experimental` label), a label and its icon, links
//! drawn as inline blocks. A block whose inline content is text drawn line by line and atomic
//! inlines (inline-block, inline-flex, an image) lays them out as a row that breaks where the
//! next piece does not fit, each line one pitch under the last; Figma's wrapping auto layout
//! (HORIZONTAL, WRAP) does the same when every row is as tall as the line. So each atomic
//! inline goes in a frame as tall as the line, whose padding holds its margins and its place
//! across the line: CSS keeps a box's margin at the start of a line too, which a wrapping row's
//! gap would not. Edited text then pushes the badge along, onto the next line where it no
//! longer fits, as the page would.
//!
//! Only where exact: the rows' breaks, starts and gaps are checked as a wrapping flex row's
//! (`layout::rows_as_figma`), each text on its line's top, each atomic inline within its line.
//! And only for pieces: a text that wraps within itself is a paragraph's, left as it was.

use super::layout::{chromium_rows, css_padding, set_auto_layout, wrap_rows, Auto, TOLERANCE};
use super::paragraph::REPLACED;
use super::{round, Snapshot};
use crate::doc::{CounterAlign, LayoutMode, Node, NodeType, PrimaryAlign, TextAutoResize};
use crate::stack::self_and_ancestors;

/// What a kid of the block's frame is in the block's inline content.
#[derive(Clone, Copy, PartialEq)]
enum Piece {
    /// A line's run of a text node: a TEXT node drawn on one line.
    Text,
    /// An atomic inline's box, with its left and right margins.
    Atomic(f64, f64),
}

/// Makes block `n`'s frame (laid out `l`) a wrapping row of its inline content's pieces where
/// Figma puts each where Chromium did; answers whether it did.
pub(super) fn inline_layout(s: &Snapshot<'_>, n: usize, l: usize, frame: &mut Node, kids: &mut [Node]) -> bool {
    let Some((primary, pieces)) = pieces_of(s, n, l, kids) else { return false };
    // Document order, a text node's lines top to bottom: the order of the pieces on the lines.
    let mut order: Vec<usize> = (0..kids.len()).collect();
    order.sort_by(|a, b| {
        let key = |i: usize| (kids[i].maker.dom.unwrap_or(usize::MAX), kids[i].y);
        key(*a).0.cmp(&key(*b).0).then(key(*a).1.total_cmp(&key(*b).1))
    });
    let margin_boxes: Vec<Node> = order.iter().map(|i| margin_box(&kids[*i], pieces[*i])).collect();
    let all: Vec<usize> = (0..margin_boxes.len()).collect();
    let lines: Vec<usize> = chromium_rows(&margin_boxes, &all).iter().map(Vec::len).collect();
    let (pt_css, pb_css) = css_padding(s, l, false);
    let Some(pitch) = pitch(kids, &pieces, (frame.height - pt_css - pb_css, lines.len())) else { return false };
    // The first line's top: its text's (a table cell's content lies where the row's baseline
    // puts it), else the content box's.
    let first_text = order[..lines[0]].iter().find(|i| pieces[**i] == Piece::Text);
    let pt = first_text.map_or(pt_css, |i| kids[*i].y);
    let Some(placed) = on_lines(kids, &pieces, (&order, &lines), (pt, pitch)) else { return false };
    // The same lines, of the pieces as placed (an atomic inline's frame spans its margin box).
    let mut rest = placed.as_slice();
    let rows: Vec<Vec<&Node>> = lines
        .iter()
        .map(|count| {
            let (line, after) = rest.split_at(*count);
            rest = after;
            line.iter().collect()
        })
        .collect();
    let laid_out = wrap_rows(s, l, frame, &rows, (primary, CounterAlign::MIN), (pt, 0.0));
    if laid_out {
        for (slot, p) in kids.iter_mut().zip(placed) {
            *slot = p;
        }
    }
    laid_out
}

/// How the block's lines align (`text-align`), and what each kid is in its inline content,
/// where they can be a wrapping row: text runs each on one line, and atomic inlines.
fn pieces_of(s: &Snapshot<'_>, n: usize, l: usize, kids: &[Node]) -> Option<(PrimaryAlign, Vec<Piece>)> {
    let forward = s.style(l, "direction") != "rtl";
    let primary = match s.style(l, "text-align") {
        "start" | "left" | "-webkit-left" if forward => PrimaryAlign::MIN,
        "center" | "-webkit-center" => PrimaryAlign::CENTER,
        "right" | "end" | "-webkit-right" if forward => PrimaryAlign::MAX,
        _ => return None,
    };
    // A line that may not break (`nowrap`, `pre`) is no wrapping row.
    let wraps = matches!(s.style(l, "white-space"), "normal" | "");
    let block = matches!(s.style(l, "display"), "block" | "flow-root" | "list-item" | "table-cell");
    if !wraps || kids.is_empty() || !block {
        return None;
    }
    let pieces = kids.iter().map(|k| piece(s, n, k)).collect::<Option<Vec<Piece>>>()?;
    // A text broken over lines is a paragraph's, which one TEXT node would hold: as lines in a
    // row its words would not reflow from one line to the next.
    let mut texts: Vec<usize> =
        kids.iter().zip(&pieces).filter(|(_, p)| **p == Piece::Text).filter_map(|(k, _)| k.maker.dom).collect();
    let count = texts.len();
    texts.sort_unstable();
    texts.dedup();
    (texts.len() == count && pieces.iter().any(|p| matches!(p, Piece::Atomic(..)))).then_some((primary, pieces))
}

/// The kids in flow `order`, so many on each of the `lines`, the first line's top `pt` and
/// each `pitch` under the last: each atomic inline in its line's frame (`wrapper`).
fn on_lines(
    kids: &[Node],
    pieces: &[Piece],
    (order, lines): (&[usize], &[usize]),
    (pt, pitch): (f64, f64),
) -> Option<Vec<Node>> {
    let mut placed = Vec::with_capacity(kids.len());
    let mut next = order.iter();
    for (row, count) in lines.iter().enumerate() {
        let top = pt + pitch * row as f64;
        for i in next.by_ref().take(*count) {
            placed.push(match pieces[*i] {
                Piece::Text => kids[*i].clone(),
                Piece::Atomic(left, right) => wrapper(&kids[*i], (left, right), top, pitch)?,
            });
        }
    }
    Some(placed)
}

/// What kid `k` of block `n`'s frame is: a line of a text node, or the box of an atomic inline,
/// each inside `n` through plain inline elements only; `None` for anything else (a block, a
/// float, a positioned box, an inline's background drawn behind its text, text in a box).
fn piece(s: &Snapshot<'_>, n: usize, k: &Node) -> Option<Piece> {
    let d = k.maker.dom.filter(|d| *d != n)?;
    let inline_path = self_and_ancestors(s, d).skip(1).take_while(|a| *a != n).all(|a| {
        s.node_type[a] == 1
            && s.layout_of[a]
                .is_some_and(|al| s.style(al, "display") == "inline" && s.style(al, "position") == "static")
    });
    let in_n = self_and_ancestors(s, d).any(|a| a == n);
    if !inline_path || !in_n || k.visible == Some(false) {
        return None;
    }
    let one_line = |k: &Node| !k.characters.as_deref().unwrap_or_default().contains('\n');
    match (s.node_type[d], s.layout_of[d]) {
        (3, _) if k.kind == NodeType::TEXT && k.text_auto_resize == Some(TextAutoResize::WIDTH_AND_HEIGHT) => {
            one_line(k).then_some(Piece::Text)
        }
        (1, Some(dl)) => {
            let display = s.style(dl, "display");
            let atomic = matches!(display, "inline-block" | "inline-flex" | "inline-grid" | "inline-table")
                || (display == "inline" && s.is_tag(d, REPLACED));
            let static_ = s.style(dl, "position") == "static" && matches!(s.style(dl, "float"), "none" | "");
            let (left, right) = (s.px(dl, "margin-left"), s.px(dl, "margin-right"));
            (atomic && static_ && left >= 0.0 && right >= 0.0).then_some(Piece::Atomic(left, right))
        }
        _ => None,
    }
}

/// The lines' pitch: the one height of the text pieces, which CSS drew each as its line box;
/// without text, the block's content height when it is one line (`None` for more: nothing
/// says where the next line starts).
fn pitch(kids: &[Node], pieces: &[Piece], (content, lines): (f64, usize)) -> Option<f64> {
    let mut texts = kids.iter().zip(pieces).filter(|(_, p)| **p == Piece::Text).map(|(k, _)| k.height);
    match texts.next() {
        Some(h) => texts.all(|t| (t - h).abs() <= TOLERANCE).then_some(h),
        None => (lines == 1).then_some(content),
    }
    .filter(|h| *h > 0.0)
}

/// A piece's room on its line (an atomic inline's margin box; only its x and width count).
fn margin_box(k: &Node, p: Piece) -> Node {
    let (left, right) = match p {
        Piece::Atomic(left, right) => (left, right),
        Piece::Text => (0.0, 0.0),
    };
    Node { x: k.x - left, y: k.y, width: left + k.width + right, height: k.height, ..Node::default() }
}

/// Atomic inline `k` in a frame as tall as its line (from `top`, `pitch` high) and as wide as
/// its margin box, its margins and its place across the line the frame's padding; `k` itself
/// where it fills its line and has no margin. `None` where it does not lie within its line.
fn wrapper(k: &Node, (left, right): (f64, f64), top: f64, pitch: f64) -> Option<Node> {
    let (above, below) = (k.y - top, top + pitch - (k.y + k.height));
    if above < -TOLERANCE || below < -TOLERANCE {
        return None;
    }
    let (above, below) = (round(above.max(0.0)), round(below.max(0.0)));
    if [left, right, above, below].iter().all(|v| *v == 0.0) {
        return Some(k.clone());
    }
    let mut inner = k.clone();
    (inner.x, inner.y) = (round(left), above);
    let mut w = Node {
        kind: NodeType::FRAME,
        name: k.name.clone(),
        x: round(k.x - left),
        y: round(top),
        width: round(left + k.width + right),
        height: round(pitch),
        fills: Some(Vec::new()),
        clips_content: Some(false),
        children: Some(vec![inner]),
        ..Node::default()
    };
    let (primary, align) = (PrimaryAlign::MIN, CounterAlign::MIN);
    let padding = [left, right, above, below];
    set_auto_layout(
        &mut w,
        Auto { mode: LayoutMode::HORIZONTAL, gap: 0.0, primary, align, padding, hug: (true, true) },
    );
    Some(w)
}
