//! Auto layout: a flex container whose items Figma would place exactly where Chromium did, and a
//! grid container whose items each fill their cells as Figma's GRID.

use super::{px, round, Snapshot};
use crate::doc::{CounterAlign, GridTrack, GridTrackType, LayoutMode, Node, NodeType, PrimaryAlign, TextAutoResize};

/// Auto layout for a flex container's frame, GRID for a grid container's, where exact.
pub(super) fn lay_out(
    s: &Snapshot<'_>,
    n: usize,
    l: usize,
    (flex, grid): (bool, bool),
    frame: &mut Node,
    kids: &mut [Node],
) {
    if flex {
        auto_layout(s, n, l, frame, kids);
    } else if grid {
        grid_layout(s, n, l, frame, kids);
    }
}

/// Makes `frame` an auto layout frame when Figma would put every child exactly where it is:
/// all children are the boxes of in-flow flex items, evenly spaced on the main axis, aligned
/// alike on the cross axis. Otherwise nothing changes.
fn auto_layout(s: &Snapshot<'_>, n: usize, l: usize, frame: &mut Node, kids: &mut [Node]) {
    if kids.is_empty() || !items_and_loose_text(s, n, kids) {
        return;
    }
    let row = s.style(l, "flex-direction").starts_with("row");
    let main = |k: &Node| main_axis(k, row);
    let mut order: Vec<usize> = (0..kids.len()).collect();
    order.sort_by(|a, b| main(&kids[*a]).0.total_cmp(&main(&kids[*b]).0));
    let first = &kids[order[0]];
    let Some(gap) = even_gap(kids, &order, row) else { return };
    let (fw, fh) = (frame.width, frame.height);
    let (size_main, size_cross) = if row { (fw, fh) } else { (fh, fw) };
    let last = main(&kids[*order.last().unwrap_or(&0)]);
    let pad_start = main(first).0;
    let pad_end = (size_main - (last.0 + last.1)).max(0.0);
    let Some((align, cs, ce)) = cross_alignment(s, l, row, kids, first, size_cross) else { return };
    frame.layout_mode = Some(if row { LayoutMode::HORIZONTAL } else { LayoutMode::VERTICAL });
    frame.item_spacing = Some(round(gap.max(0.0)));
    frame.primary_axis_align_items = Some(PrimaryAlign::MIN);
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

/// How far from exact a child may be, in px.
const TOLERANCE: f64 = 0.5;

/// A child's start and size on the main axis (a row's: x and width).
fn main_axis(k: &Node, row: bool) -> (f64, f64) {
    if row {
        (k.x, k.width)
    } else {
        (k.y, k.height)
    }
}

/// A child's start and size on the cross axis (a row's: y and height).
fn cross_axis(k: &Node, row: bool) -> (f64, f64) {
    if row {
        (k.y, k.height)
    } else {
        (k.x, k.width)
    }
}

/// The kids of flex container `n` are its items, one each: its element items' boxes, and for
/// each run of text directly inside it (an anonymous flex item, `<span class=dot></span>Harbor`)
/// one single-line TEXT node, which is that item's box.
fn items_and_loose_text(s: &Snapshot<'_>, n: usize, kids: &[Node]) -> bool {
    let runs = loose_text_runs(s, n);
    let elements = kids.iter().filter(|k| k.maker.flex_item).count();
    let mut texts = vec![0; runs.len()];
    for k in kids.iter().filter(|k| !k.maker.flex_item) {
        let single_line = k.kind == NodeType::TEXT
            && k.text_auto_resize == Some(TextAutoResize::WIDTH_AND_HEIGHT)
            && !k.characters.as_deref().unwrap_or_default().contains('\n');
        let run = k.maker.dom.and_then(|d| runs.iter().position(|r| r.contains(&d)));
        match run {
            Some(r) if single_line => texts[r] += 1,
            _ => return false,
        }
    }
    texts.iter().all(|t| *t == 1) && element_items(s, n) == elements
}

/// The runs of visible text directly inside element `n`, each broken by an element child.
fn loose_text_runs(s: &Snapshot<'_>, n: usize) -> Vec<Vec<usize>> {
    let mut runs: Vec<Vec<usize>> = vec![vec![]];
    for &c in &s.children[n] {
        if s.node_type[c] == 1 && s.layout_of[c].is_some() {
            runs.push(vec![]);
        } else if s.node_type[c] == 3
            && s.node_value[c].is_some_and(|v| !v.trim().is_empty())
            && s.layout_of[c].is_some()
        {
            runs.last_mut().expect("one run at least").push(c);
        }
    }
    runs.retain(|r| !r.is_empty());
    runs
}

/// How many in-flow element children with a box flex container `n` has.
fn element_items(s: &Snapshot<'_>, n: usize) -> usize {
    s.children[n]
        .iter()
        .filter(|c| {
            s.node_type[**c] == 1
                && s.layout_of[**c].is_some_and(|cl| !matches!(s.style(cl, "position"), "absolute" | "fixed"))
        })
        .count()
}

/// The `count` kids of grid container `n` are its items, one each, and no text lies loose in
/// it (an anonymous grid item, which Figma's grid could not place as Chromium did).
fn only_items(s: &Snapshot<'_>, n: usize, count: usize) -> bool {
    element_items(s, n) == count && loose_text_runs(s, n).is_empty()
}

/// The one gap between the kids taken in main axis `order`, when they are evenly spaced and do
/// not overlap.
fn even_gap(kids: &[Node], order: &[usize], row: bool) -> Option<f64> {
    let mut gap = 0.0;
    for w in order.windows(2) {
        let (a, b) = (main_axis(&kids[w[0]], row), main_axis(&kids[w[1]], row));
        let g = b.0 - (a.0 + a.1);
        if w[0] == order[0] {
            gap = g;
        } else if (g - gap).abs() > TOLERANCE {
            return None;
        }
    }
    if gap < -TOLERANCE {
        return None;
    }
    Some(gap)
}

/// The cross axis alignment that puts every kid where it is, and the padding before and after
/// it on that axis; `None` when there is none. `first` is the first kid on the main axis.
fn cross_alignment(
    s: &Snapshot<'_>,
    l: usize,
    row: bool,
    kids: &[Node],
    first: &Node,
    size_cross: f64,
) -> Option<(CounterAlign, f64, f64)> {
    let cross = |k: &Node| cross_axis(k, row);
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
    if all(&|k| (cross(k).0 - cross(first).0).abs() <= TOLERANCE) {
        Some((CounterAlign::MIN, cross(first).0, 0.0))
    } else if all(&|k| (cross(k).0 + cross(k).1 / 2.0 - (ps + (size_cross - ps - pe) / 2.0)).abs() <= TOLERANCE) {
        Some((CounterAlign::CENTER, ps, pe))
    } else if all(&|k| ((cross(k).0 + cross(k).1) - (cross(first).0 + cross(first).1)).abs() <= TOLERANCE) {
        Some((CounterAlign::MAX, 0.0, size_cross - (cross(first).0 + cross(first).1)))
    } else {
        None
    }
}

/// Makes `frame` a GRID frame when Figma's grid puts every child exactly where Chromium did:
/// every child the box of an in-flow grid item, each filling the cells of the tracks it starts
/// and ends on, no two in one cell. The tracks are Chromium's (px); columns all alike that fill
/// the content box are FLEX, as `repeat(n, 1fr)` is. Otherwise nothing changes.
fn grid_layout(s: &Snapshot<'_>, n: usize, l: usize, frame: &mut Node, kids: &mut [Node]) {
    if kids.is_empty() || !kids.iter().all(|k| k.maker.flex_item) || !only_items(s, n, kids.len()) {
        return;
    }
    let (cols, rows) = (tracks(s.style(l, "grid-template-columns")), tracks(s.style(l, "grid-template-rows")));
    let (Some(cols), Some(rows)) = (cols, rows) else { return };
    let (col_gap, row_gap) = (gap(s.style(l, "column-gap")), gap(s.style(l, "row-gap")));
    let left = s.px(l, "padding-left") + s.px(l, "border-left-width");
    let top = s.px(l, "padding-top") + s.px(l, "border-top-width");
    let (xs, ys) = (starts(left, &cols, col_gap), starts(top, &rows, row_gap));
    let mut cells = Vec::with_capacity(kids.len());
    for k in kids.iter() {
        let (Some(c), Some(r)) = (cell(k.x, k.width, &xs, &cols), cell(k.y, k.height, &ys, &rows)) else { return };
        cells.push((r, c));
    }
    if overlapping(&cells) {
        return;
    }
    let right = frame.width - (xs[cols.len() - 1] + cols[cols.len() - 1]);
    let bottom = frame.height - (ys[rows.len() - 1] + rows[rows.len() - 1]);
    if right < -TOLERANCE || bottom < -TOLERANCE {
        return;
    }
    frame.layout_mode = Some(LayoutMode::GRID);
    frame.grid_column_count = Some(cols.len() as u32);
    frame.grid_row_count = Some(rows.len() as u32);
    frame.grid_column_gap = Some(round(col_gap));
    frame.grid_row_gap = Some(round(row_gap));
    let content = frame.width - left - right.max(0.0) - col_gap * (cols.len() - 1) as f64;
    frame.grid_column_sizes = Some(track_sizes(&cols, Some(content)));
    frame.grid_row_sizes = Some(track_sizes(&rows, None));
    frame.padding_left = Some(round(left));
    frame.padding_top = Some(round(top));
    frame.padding_right = Some(round(right.max(0.0)));
    frame.padding_bottom = Some(round(bottom.max(0.0)));
    for (k, ((r, rs), (c, cs))) in kids.iter_mut().zip(&cells) {
        (k.grid_row_anchor_index, k.grid_row_span) = (Some(*r as u32), Some(*rs as u32));
        (k.grid_column_anchor_index, k.grid_column_span) = (Some(*c as u32), Some(*cs as u32));
    }
}

/// A computed `grid-template-*`: its tracks in px, when every one is (the container laid out as
/// a grid, no `subgrid` or `masonry`).
fn tracks(css: &str) -> Option<Vec<f64>> {
    let list: Vec<f64> = css
        .split_whitespace()
        .map(|t| t.strip_suffix("px").and_then(|v| v.parse::<f64>().ok()).filter(|v| *v >= 0.0))
        .collect::<Option<_>>()?;
    (!list.is_empty()).then_some(list)
}

/// A computed `row-gap` or `column-gap` (`normal` is 0 in a grid).
fn gap(css: &str) -> f64 {
    px(css).max(0.0)
}

/// Where each track starts, from the content box's edge.
fn starts(from: f64, sizes: &[f64], gap: f64) -> Vec<f64> {
    let mut at = from;
    sizes
        .iter()
        .map(|size| {
            let here = at;
            at += size + gap;
            here
        })
        .collect()
}

/// The track a box starts on and how many it spans, when its edges are the tracks' edges.
fn cell(start: f64, size: f64, starts: &[f64], sizes: &[f64]) -> Option<(usize, usize)> {
    let first = starts.iter().position(|s| (s - start).abs() <= TOLERANCE)?;
    let end = start + size;
    let last = (first..sizes.len()).find(|i| (starts[*i] + sizes[*i] - end).abs() <= TOLERANCE)?;
    Some((first, last - first + 1))
}

/// A child's (first row, rows spanned) and (first column, columns spanned).
type Cell = ((usize, usize), (usize, usize));

/// Two children's cells overlap: Figma refuses a second child in an occupied cell.
fn overlapping(cells: &[Cell]) -> bool {
    let mut taken = std::collections::HashSet::new();
    for ((r, rs), (c, cs)) in cells {
        for row in *r..r + rs {
            for col in *c..c + cs {
                if !taken.insert((row, col)) {
                    return true;
                }
            }
        }
    }
    false
}

/// The tracks as Figma's sizes: FLEX when all alike and, with the gaps, the whole `content`
/// (CSS `repeat(n, 1fr)`); else FIXED, as laid out.
fn track_sizes(sizes: &[f64], content: Option<f64>) -> Vec<GridTrack> {
    let alike = sizes.iter().all(|s| (s - sizes[0]).abs() <= TOLERANCE);
    let fills = content.is_some_and(|c| (sizes.iter().sum::<f64>() - c).abs() <= TOLERANCE * sizes.len() as f64);
    sizes
        .iter()
        .map(|s| match alike && fills {
            true => GridTrack { kind: GridTrackType::FLEX, value: Some(1.0) },
            false => GridTrack { kind: GridTrackType::FIXED, value: Some(round(*s)) },
        })
        .collect()
}
