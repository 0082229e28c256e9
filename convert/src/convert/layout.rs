//! Auto layout: a flex container whose items Figma would place exactly where Chromium did, a
//! grid container whose items each fill their cells as Figma's GRID, a block's stacked blocks,
//! and (`inline_row`) a block's line of text and inline boxes.

use super::{px, round, Snapshot};
use crate::doc::{
    CounterAlign, GridTrack, GridTrackType, LayoutMode, LayoutPositioning, LayoutSizing, LayoutWrap, Node, NodeType,
    PrimaryAlign, TextAutoResize,
};
use crate::stack::self_and_ancestors;

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
    } else if !super::inline_row::inline_layout(s, n, l, frame, kids) {
        stack_layout(s, n, l, frame, kids);
    }
}

/// Makes a block container's frame vertical auto layout where its blocks stack as Figma's
/// would put them: every child in the normal flow (none floats; those positioned absolutely
/// or fixed are ABSOLUTE, where they are), one under the other with one gap between each
/// (their margins all alike, as a list's items or a card's lines), aligned alike across. A
/// child as wide as the content FILLs it, and the frame HUGs its height where nothing but its
/// padding, border and the last block's margin follows the last block. Otherwise nothing
/// changes: different margins between blocks are no auto layout of Figma's.
fn stack_layout(s: &Snapshot<'_>, n: usize, l: usize, frame: &mut Node, kids: &mut [Node]) {
    if kids.is_empty() || !matches!(s.style(l, "display"), "block" | "flow-root" | "list-item") {
        return;
    }
    let mut absolute = vec![false; kids.len()];
    for (i, k) in kids.iter().enumerate() {
        match block_flow(s, n, k) {
            // Figma's auto layout gives a hidden layer no room: it stays where it is.
            Some(true) => absolute[i] = k.visible == Some(false),
            Some(false) => absolute[i] = true,
            None => return,
        }
    }
    let mut order: Vec<usize> = (0..kids.len()).filter(|i| !absolute[*i]).collect();
    if order.is_empty() {
        return;
    }
    order.sort_by(|a, b| kids[*a].y.total_cmp(&kids[*b].y).then(kids[*a].x.total_cmp(&kids[*b].x)));
    let Some(gap) = even_gap(kids, &order, false) else { return };
    let flow: Vec<&Node> = order.iter().map(|i| &kids[*i]).collect();
    let (width, height) = (frame.width, frame.height);
    let Some((align, cs, ce)) = cross_alignment(s, l, false, &flow, width) else { return };
    let first = flow[0];
    let last = flow[flow.len() - 1];
    let (ps, pe) = (first.y, (height - (last.y + last.height)).max(0.0));
    let (_, pad_bottom) = css_padding(s, l, false);
    let after_last = last.maker.dom.and_then(|d| top_block(s, n, d)).map_or(0.0, |b| s.px(b, "margin-bottom"));
    let hug = (pe - pad_bottom).abs() <= TOLERANCE || (pe - pad_bottom - after_last).abs() <= TOLERANCE;
    let fills: Vec<bool> = flow
        .iter()
        .map(|k| {
            // A block's box or its text; an image keeps its size (FILL would stretch it).
            let block = k.kind == NodeType::FRAME
                || (k.kind == NodeType::TEXT && k.text_auto_resize == Some(TextAutoResize::HEIGHT));
            block
                && align == CounterAlign::MIN
                && (k.x - cs).abs() <= TOLERANCE
                && (k.width - (width - cs - ce)).abs() <= TOLERANCE
        })
        .collect();

    // A label (a link's, a button's words) in a box as wide as its content: the box HUGs
    // its text, which follows its words (WIDTH_AND_HEIGHT), as a designer builds a button.
    let label = flow.len() == 1 && single_line(flow[0]) && shrinks_to_fit(s, n, l, width);
    let padding = [cs, ce, ps, pe];
    set_auto_layout(
        frame,
        Auto { mode: LayoutMode::VERTICAL, gap, primary: PrimaryAlign::MIN, align, padding, hug: (label, hug) },
    );
    place_kids(kids, &order, &absolute, |i, k| {
        if label {
            k.text_auto_resize = Some(TextAutoResize::WIDTH_AND_HEIGHT);
        } else if fills[i] {
            k.layout_sizing_horizontal = Some(LayoutSizing::FILL);
        }
    });
}

/// A frame's auto layout: its axis, the gap, the alignments, the paddings (left, right, top,
/// bottom) and whether it HUGs its content (horizontally, vertically).
pub(super) struct Auto {
    pub(super) mode: LayoutMode,
    pub(super) gap: f64,
    pub(super) primary: PrimaryAlign,
    pub(super) align: CounterAlign,
    pub(super) padding: [f64; 4],
    pub(super) hug: (bool, bool),
}

pub(super) fn set_auto_layout(frame: &mut Node, a: Auto) {
    frame.layout_mode = Some(a.mode);
    frame.item_spacing = Some(round(a.gap.max(0.0)));
    frame.primary_axis_align_items = Some(a.primary);
    frame.counter_axis_align_items = Some(a.align);
    let [pl, pr, pt, pb] = a.padding.map(round);
    (frame.padding_left, frame.padding_right, frame.padding_top, frame.padding_bottom) =
        (Some(pl), Some(pr), Some(pt), Some(pb));
    if a.hug.0 {
        frame.layout_sizing_horizontal = Some(LayoutSizing::HUG);
    }
    if a.hug.1 {
        frame.layout_sizing_vertical = Some(LayoutSizing::HUG);
    }
}

/// Auto layout places children in list order: the kids in the flow (`order`, each given its
/// sizing by `edit` with its place in the flow) go in the places of the flow's kids, in that
/// order; the others are ABSOLUTE and keep their places in the paint order.
fn place_kids(kids: &mut [Node], order: &[usize], absolute: &[bool], mut edit: impl FnMut(usize, &mut Node)) {
    let mut placed: Vec<Node> = order.iter().map(|i| kids[*i].clone()).collect();
    for (i, k) in placed.iter_mut().enumerate() {
        edit(i, k);
    }
    let mut placed = placed.into_iter();
    for (k, out) in kids.iter_mut().zip(absolute) {
        if *out {
            k.layout_positioning = Some(LayoutPositioning::ABSOLUTE);
        } else if let Some(p) = placed.next() {
            *k = p;
        }
    }
}

/// Whether `k` is a paragraph's TEXT node drawn on one line (at most one and a half lines
/// high), which the same words fill whatever the box's width.
fn single_line(k: &Node) -> bool {
    use crate::doc::LineHeightUnit;
    if k.kind != NodeType::TEXT
        || k.text_auto_resize != Some(TextAutoResize::HEIGHT)
        || k.characters.as_deref().is_none_or(|c| c.contains('\n'))
    {
        return false;
    }
    let size = k.font_size.unwrap_or(16.0);
    let line = match &k.line_height {
        Some(h) if h.unit == LineHeightUnit::PIXELS => h.value.unwrap_or(size * 1.2),
        Some(h) if h.unit == LineHeightUnit::PERCENT => size * h.value.unwrap_or(120.0) / 100.0,
        _ => size * 1.25,
    };
    k.height < line * 1.5
}

/// Where kid `k` of block container `n`'s frame lies: `Some(true)` in the normal flow,
/// `Some(false)` out of it (positioned absolutely or fixed, or drawn by `n` itself), `None`
/// floated or made elsewhere (no stack).
fn block_flow(s: &Snapshot<'_>, n: usize, k: &Node) -> Option<bool> {
    let d = k.maker.dom?;
    if d == n {
        // Its own inline content (a paragraph) flows; what else it draws does not.
        return Some(k.kind == NodeType::TEXT);
    }
    for a in self_and_ancestors(s, d) {
        if positioned(s, a) {
            return Some(false);
        }
        if s.node_type[a] == 1 && s.layout_of[a].is_some_and(|al| !matches!(s.style(al, "float"), "none" | "")) {
            return None;
        }
        if usize::try_from(s.parent[a]).is_ok_and(|p| p == n) {
            return Some(true);
        }
    }
    None
}

/// The layout object of the child of `n` that DOM node `d` is in (or is).
fn top_block(s: &Snapshot<'_>, n: usize, d: usize) -> Option<usize> {
    let top = self_and_ancestors(s, d).find(|a| usize::try_from(s.parent[*a]).is_ok_and(|p| p == n))?;
    s.layout_of[top].filter(|_| s.node_type[top] == 1)
}

/// Makes `frame` an auto layout frame when Figma would put every child exactly where it is:
/// all children are the boxes of in-flow flex items, evenly spaced on the main axis, aligned
/// alike on the cross axis, or lie out of the flow (`layoutPositioning: ABSOLUTE`, where they
/// are). The alignment is CSS's where Figma's matches it, and each item's size follows the
/// frame's as in CSS where Figma's sizing gives the same size: FILL for `flex-grow` and
/// `align-self: stretch`, HUG for a frame its content sizes. Otherwise nothing changes.
fn auto_layout(s: &Snapshot<'_>, n: usize, l: usize, frame: &mut Node, kids: &mut [Node]) {
    let Some(mut absolute) = items_and_loose_text(s, n, kids) else { return };
    // Figma's auto layout gives a hidden layer no room: it stays where it is.
    for (out, k) in absolute.iter_mut().zip(kids.iter()) {
        *out |= k.visible == Some(false);
    }
    let row = s.style(l, "flex-direction").starts_with("row");
    if wrap_layout(s, l, frame, kids, &absolute) {
        return;
    }
    let main = |k: &Node| main_axis(k, row);
    let mut order: Vec<usize> = (0..kids.len()).filter(|i| !absolute[*i]).collect();
    if order.is_empty() {
        return;
    }
    order.sort_by(|a, b| main(&kids[*a]).0.total_cmp(&main(&kids[*b]).0));
    overlaid(kids, &mut order, &mut absolute, row);
    let Some(gap) = even_gap(kids, &order, row) else { return };
    let flow: Vec<&Node> = order.iter().map(|i| &kids[*i]).collect();
    let (fw, fh) = (frame.width, frame.height);
    let (size_main, size_cross) = if row { (fw, fh) } else { (fh, fw) };
    let Some((align, cs, ce)) = cross_alignment(s, l, row, &flow, size_cross) else { return };
    let (primary, ps, pe) = primary_alignment(s, l, row, &flow, size_main);
    let fill_main = fill_main(s, row, &flow, size_main - ps - pe, gap);
    let (hug_main, hug_cross) = flex_hugs(s, l, row, &flow, (primary, ps, pe), (cs, ce, size_cross), &fill_main);
    // A frame that hugs its items across leaves them as they are (their stretch is then their
    // own size); else the stretched ones FILL it.
    let fill_cross: Vec<bool> = flow
        .iter()
        .map(|k| {
            let (start, size) = cross_axis(k, row);
            !hug_cross
                && stretched(s, l, k)
                && (start - cs).abs() <= TOLERANCE
                && (size - (size_cross - cs - ce)).abs() <= TOLERANCE
        })
        .collect();
    let (mode, padding) = match row {
        true => (LayoutMode::HORIZONTAL, [ps, pe, cs, ce]),
        false => (LayoutMode::VERTICAL, [cs, ce, ps, pe]),
    };
    let (hug_h, hug_v) = if row { (hug_main, hug_cross) } else { (hug_cross, hug_main) };
    let hug = (hug_h && shrinks_to_fit(s, n, l, frame.width), hug_v);
    set_auto_layout(frame, Auto { mode, gap, primary, align, padding, hug });
    place_kids(kids, &order, &absolute, |i, k| {
        let (fill_h, fill_v) = if row { (fill_main[i], fill_cross[i]) } else { (fill_cross[i], fill_main[i]) };
        if fill_h {
            k.layout_sizing_horizontal = Some(LayoutSizing::FILL);
        }
        if fill_v {
            k.layout_sizing_vertical = Some(LayoutSizing::FILL);
        }
    });
}

/// Makes a row that wraps (`flex-wrap: wrap`) Figma's wrapping auto layout (`layoutWrap: WRAP`)
/// where Figma would break it into the same rows and put every item where Chromium did; answers
/// whether it did. Figma starts a row where the next item would pass the frame's width inside
/// its padding, the items of a row `itemSpacing` apart; each row is as tall as its tallest item,
/// the items aligned in it by `counterAxisAlignItems`; the rows stack `counterAxisSpacing`
/// apart. So the items must be in document order (no `order`), of one gap along every row, the
/// row-gap between rows; CSS must have broken each row where that sum passes the content box,
/// and aligned each row (`justify-content`: start, center, end, or `space-between` with two
/// items a row at least) and each item in it (`align-items`) as Figma's alignments do. No item
/// may grow or take a percentage size: CSS breaks rows at the items' sizes before they grow,
/// Figma at their sizes.
fn wrap_layout(s: &Snapshot<'_>, l: usize, frame: &mut Node, kids: &mut [Node], absolute: &[bool]) -> bool {
    let forward = s.style(l, "flex-direction") == "row" && s.style(l, "direction") != "rtl";
    if s.style(l, "flex-wrap") != "wrap" || !forward {
        return false;
    }
    let mut order: Vec<usize> = (0..kids.len()).filter(|i| !absolute[*i]).collect();
    if order.is_empty() || order.iter().any(|i| grows(s, &kids[*i])) {
        return false;
    }
    // Document order, which is the list order Figma flows (the snapshot numbers nodes so).
    order.sort_by_key(|i| kids[*i].maker.dom.unwrap_or(usize::MAX));
    let rows = chromium_rows(kids, &order);
    let primary = match s.style(l, "justify-content") {
        "normal" | "flex-start" | "start" | "left" => PrimaryAlign::MIN,
        "center" => PrimaryAlign::CENTER,
        "flex-end" | "end" | "right" => PrimaryAlign::MAX,
        "space-between" => PrimaryAlign::SPACE_BETWEEN,
        _ => return false,
    };
    let align = match s.style(l, "align-items") {
        "normal" | "stretch" | "flex-start" | "start" | "self-start" => CounterAlign::MIN,
        "center" => CounterAlign::CENTER,
        "flex-end" | "end" | "self-end" => CounterAlign::MAX,
        _ => return false,
    };
    let pt = css_padding(s, l, false).0;
    let row_gap = round(s.px(l, "row-gap").max(0.0));
    if !wrap_rows(s, l, frame, &rows, (primary, align), (pt, row_gap)) {
        return false;
    }
    place_kids(kids, &order, absolute, |_, _| {});
    true
}

/// Makes `frame` wrapping auto layout (HORIZONTAL, WRAP) when Figma's arithmetic on the sizes
/// the document gives it puts `rows` (Chromium's, in flow order) where they are: the items one
/// gap apart along every row, aligned along and across by `primary` and `align`, the first row
/// from `pt` and the rows `row_gap` apart; CSS's padding and border left and right. Answers
/// whether it did; the frame HUGs its height where CSS's bottom padding is all that follows.
pub(super) fn wrap_rows(
    s: &Snapshot<'_>,
    l: usize,
    frame: &mut Node,
    rows: &[Vec<&Node>],
    (primary, align): (PrimaryAlign, CounterAlign),
    (pt, row_gap): (f64, f64),
) -> bool {
    let Some(gap) = gap_along(s, l, primary, rows).map(|g| round(g.max(0.0))) else { return false };
    let (pl, pr) = css_padding(s, l, true);
    let (pl, pr) = (round(pl), round(pr));
    let pb_css = css_padding(s, l, false).1;
    let along = (primary, pl, frame.width - pl - pr, gap);
    let Some(bottom) = rows_as_figma(rows, along, (align, round(pt), row_gap)) else { return false };
    let pb = frame.height - bottom;
    if pb < -TOLERANCE {
        return false;
    }
    let hug = (pb - pb_css).abs() <= TOLERANCE;
    let padding = [pl, pr, pt, pb.max(0.0)];
    set_auto_layout(frame, Auto { mode: LayoutMode::HORIZONTAL, gap, primary, align, padding, hug: (false, hug) });
    frame.layout_wrap = Some(LayoutWrap::WRAP);
    frame.counter_axis_spacing = Some(row_gap);
    true
}

/// The rows of a wrapping flex container as Chromium broke them, its items taken in `order`: a
/// row starts where an item starts before the last one ends.
pub(super) fn chromium_rows<'a>(kids: &'a [Node], order: &[usize]) -> Vec<Vec<&'a Node>> {
    let mut rows: Vec<Vec<&Node>> = Vec::new();
    for k in order.iter().map(|i| &kids[*i]) {
        match rows.last_mut() {
            Some(r) if k.x >= r[r.len() - 1].x + r[r.len() - 1].width - TOLERANCE => r.push(k),
            _ => rows.push(vec![k]),
        }
    }
    rows
}

/// The one gap between the items along every row (a row of one item says nothing of it);
/// spread rows (`space-between`) are spaced by what is left of their room, each evenly, and
/// broken at the column-gap as CSS breaks them.
fn gap_along(s: &Snapshot<'_>, l: usize, primary: PrimaryAlign, rows: &[Vec<&Node>]) -> Option<f64> {
    let gaps: Vec<Vec<f64>> =
        rows.iter().map(|r| r.windows(2).map(|w| w[1].x - (w[0].x + w[0].width)).collect()).collect();
    let even = |g: &[f64], to: f64| g.iter().all(|v| (v - to).abs() <= TOLERANCE);
    let gap = match primary {
        PrimaryAlign::SPACE_BETWEEN => {
            gaps.iter().all(|g| g.first().is_none_or(|f| even(g, *f))).then(|| s.px(l, "column-gap"))?
        }
        _ => {
            let gap = gaps.iter().flatten().next().copied().unwrap_or_else(|| s.px(l, "column-gap"));
            gaps.iter().all(|g| even(g, gap)).then_some(gap)?
        }
    };
    (gap >= -TOLERANCE).then_some(gap)
}

/// Whether Figma's wrapping puts `rows` where Chromium did, and where the last ends: it breaks
/// a row where the next item would pass `room` (the width inside the padding, from `pl`), the
/// items `gap` apart and the row aligned along by `primary`; each row as tall as its tallest
/// item, aligned in it by `align`, the rows `row_gap` apart from `top`.
fn rows_as_figma(
    rows: &[Vec<&Node>],
    (primary, pl, room, gap): (PrimaryAlign, f64, f64, f64),
    (align, mut top, row_gap): (CounterAlign, f64, f64),
) -> Option<f64> {
    const EPSILON: f64 = 0.01;
    let close = |a: f64, b: f64| (a - b).abs() <= TOLERANCE;
    let span = |r: &[&Node]| r.iter().map(|k| k.width).sum::<f64>() + gap * (r.len() - 1) as f64;
    let breaks_alike = rows.windows(2).all(|w| span(&w[0]) + gap + w[1][0].width > room + EPSILON);
    if !breaks_alike || rows.iter().any(|r| span(r) > room + EPSILON) {
        return None;
    }
    for r in rows {
        let (free, last) = (room - span(r), r[r.len() - 1]);
        let along = match primary {
            PrimaryAlign::CENTER => close(r[0].x, pl + free / 2.0),
            PrimaryAlign::MAX => close(r[0].x, pl + free),
            // Spread from edge to edge. Where Figma puts an item alone in a spread row is not
            // documented (CSS: at the start), so such a row is not taken.
            PrimaryAlign::SPACE_BETWEEN => r.len() > 1 && close(r[0].x, pl) && close(last.x + last.width, pl + room),
            _ => close(r[0].x, pl),
        };
        let tall = r.iter().map(|k| k.height).fold(0.0, f64::max);
        let across = r.iter().all(|k| match align {
            CounterAlign::CENTER => close(k.y, top + (tall - k.height) / 2.0),
            CounterAlign::MAX => close(k.y, top + tall - k.height),
            _ => close(k.y, top),
        });
        if !along || !across {
            return None;
        }
        top += tall + row_gap;
    }
    Some(top - row_gap)
}

/// Takes out of `order` (main axis order) each item drawn over the one before it, which a
/// negative margin pulls back (Sphinx's sidebar, `margin-left: -100%`, over the body it
/// follows): auto layout has no place for it, so it stays where it is, ABSOLUTE, and the items
/// around it are placed as the checks after this verify.
fn overlaid(kids: &[Node], order: &mut Vec<usize>, absolute: &mut [bool], row: bool) {
    // The last item kept in the flow; an item wrapped onto the next line starts before its end
    // too, but beside it across (it is no auto layout, as `even_gap` finds). An empty item
    // (Sphinx's `div.clearer`) is over it wherever it starts within it.
    let mut last: Option<usize> = None;
    order.retain(|i| {
        let over = last.is_some_and(|p| {
            let ((a, al), (b, bl)) = (main_axis(&kids[p], row), main_axis(&kids[*i], row));
            let ((c, cl), (d, dl)) = (cross_axis(&kids[p], row), cross_axis(&kids[*i], row));
            let empty = bl <= 0.0 || dl <= 0.0;
            b < a + al - TOLERANCE && (empty || (d < c + cl - TOLERANCE && c < d + dl - TOLERANCE))
        });
        absolute[*i] |= over;
        if !over {
            last = Some(*i);
        }
        !over
    });
}

/// Whether a flex container's frame HUGs its items along and across: where CSS sized it by its
/// content (the room after the content is CSS's padding and border and the last item's
/// margin, nothing more: `height: auto`, an `inline-flex`) and Figma's sum gives the same size;
/// never along with an item that fills it.
fn flex_hugs(
    s: &Snapshot<'_>,
    l: usize,
    row: bool,
    flow: &[&Node],
    (primary, ps, pe): (PrimaryAlign, f64, f64),
    (cs, ce, size_cross): (f64, f64, f64),
    fill_main: &[bool],
) -> (bool, bool) {
    let (pad_ms, pad_me) = css_padding(s, l, row);
    let (pad_cs, pad_ce) = css_padding(s, l, !row);
    let last = flow[flow.len() - 1];
    let hug_main = primary == PrimaryAlign::MIN
        && fill_main.iter().all(|f| !f)
        && (ps - pad_ms - margin_start(s, flow[0], row)).abs() <= TOLERANCE
        && (pe - pad_me - margin_end(s, last, row)).abs() <= TOLERANCE;
    let outer = flow.iter().map(|k| margin_start(s, k, !row) + own_cross(s, l, k, row) + margin_end(s, k, !row));
    let widest = flow.iter().map(|k| cross_axis(k, row).1).fold(0.0, f64::max);
    let hug_cross = (pad_cs + outer.fold(0.0, f64::max) + pad_ce - size_cross).abs() <= TOLERANCE
        && (cs + widest + ce - size_cross).abs() <= TOLERANCE;
    (hug_main, hug_cross)
}

/// Whether element `n`'s width is its content's in CSS: an `inline-flex`, a float, a box
/// positioned absolutely or fixed, an item of a flex row; and, as a width of 100 % looks the
/// same as content that happens to fill it, narrower than its parent's content box. A block's
/// width is its container's, whatever its content.
fn shrinks_to_fit(s: &Snapshot<'_>, n: usize, l: usize, width: f64) -> bool {
    let parent = usize::try_from(s.parent[n]).ok().and_then(|p| s.layout_of[p].map(|pl| (p, pl)));
    let in_row = parent.is_some_and(|(_, pl)| {
        matches!(s.style(pl, "display"), "flex" | "inline-flex") && s.style(pl, "flex-direction").starts_with("row")
    });
    let fits = s.style(l, "display") == "inline-flex"
        || !matches!(s.style(l, "float"), "none" | "")
        || matches!(s.style(l, "position"), "absolute" | "fixed")
        || in_row;
    let room = parent.map(|(_, pl)| {
        let (a, b) = css_padding(s, pl, true);
        s.l_bounds[pl][2] - a - b
    });
    fits && room.is_none_or(|r| width < r - TOLERANCE)
}

/// The main axis alignment CSS asks for (`justify-content`) with the frame's padding and
/// border, where Figma's puts every item where it is; else MIN, from where the first item
/// starts to where the last ends. A reversed direction reads the other way: MIN.
fn primary_alignment(s: &Snapshot<'_>, l: usize, row: bool, flow: &[&Node], size: f64) -> (PrimaryAlign, f64, f64) {
    let (ps, pe) = css_padding(s, l, row);
    let start = main_axis(flow[0], row).0;
    let last = main_axis(flow[flow.len() - 1], row);
    let (before, after) = (start - ps, size - pe - (last.0 + last.1));
    let forward =
        matches!(s.style(l, "flex-direction"), "row" | "column") && (!row || s.style(l, "direction") != "rtl");
    let near = |a: f64, b: f64| (a - b).abs() <= TOLERANCE;
    match s.style(l, "justify-content") {
        "center" if forward && before > TOLERANCE && near(before, after) => (PrimaryAlign::CENTER, ps, pe),
        "flex-end" | "end" if forward && before > TOLERANCE && near(after, 0.0) => (PrimaryAlign::MAX, ps, pe),
        "space-between" if forward && flow.len() > 1 && near(before, 0.0) && near(after, 0.0) => {
            (PrimaryAlign::SPACE_BETWEEN, ps, pe)
        }
        _ => (PrimaryAlign::MIN, start, (size - (last.0 + last.1)).max(0.0)),
    }
}

/// Which items fill the main axis (FILL): those that grow with the container in CSS (a
/// `flex-grow`, or a percentage size along the axis, `width: 100%`, as the renderer found in
/// the cascade), where Figma, sharing the room left (`room`, inside the padding) equally among
/// them, gives each its size as laid out.
fn fill_main(s: &Snapshot<'_>, row: bool, flow: &[&Node], room: f64, gap: f64) -> Vec<bool> {
    let grows: Vec<bool> = flow.iter().map(|k| grows(s, k)).collect();
    let count = grows.iter().filter(|g| **g).count();
    if count == 0 {
        return grows;
    }
    let others: f64 = flow.iter().zip(&grows).filter(|(_, g)| !**g).map(|(k, _)| main_axis(k, row).1).sum();
    let share = (room - others - gap * (flow.len() - 1) as f64) / count as f64;
    let exact =
        flow.iter().zip(&grows).filter(|(_, g)| **g).all(|(k, _)| (main_axis(k, row).1 - share).abs() <= TOLERANCE);
    if exact {
        grows
    } else {
        vec![false; flow.len()]
    }
}

/// Whether flex item `k` grows with its container in CSS: a `flex-grow`, or a percentage size
/// along the axis (`width: 100%`, as the renderer found in the cascade).
fn grows(s: &Snapshot<'_>, k: &Node) -> bool {
    let percent = k.maker.flex_item && k.maker.dom.is_some_and(|d| s.percent_sized.contains(&d));
    percent || item_layout(s, k).is_some_and(|kl| s.style(kl, "flex-grow").parse::<f64>().unwrap_or(0.0) > 0.0)
}

/// Whether item `k` is stretched across the axis (`align-self: stretch`, or `auto` in a
/// container whose `align-items` is `normal` or `stretch`), as Figma's FILL is.
fn stretched(s: &Snapshot<'_>, l: usize, k: &Node) -> bool {
    let Some(kl) = item_layout(s, k) else { return false };
    match s.style(kl, "align-self") {
        "auto" | "normal" | "" => matches!(s.style(l, "align-items"), "normal" | "stretch"),
        own => own == "stretch",
    }
}

/// An item's size across the axis as its content makes it: a stretched box's is what its
/// children and padding take (none: 0), not the container's it was stretched to; an image's
/// or a text's is its own.
fn own_cross(s: &Snapshot<'_>, l: usize, k: &Node, row: bool) -> f64 {
    let size = cross_axis(k, row).1;
    let hugs = if row { k.layout_sizing_vertical } else { k.layout_sizing_horizontal } == Some(LayoutSizing::HUG);
    let boxed = k.kind == NodeType::FRAME && !hugs && stretched(s, l, k);
    let Some(kl) = item_layout(s, k).filter(|_| boxed) else { return size };
    let (start, end) = css_padding(s, kl, !row);
    let content =
        k.children.iter().flatten().map(|c| cross_axis(c, row).0 + cross_axis(c, row).1 - start).fold(0.0, f64::max);
    // A flex item holds its content's margins (it is a formatting context): the bottom margin
    // of its last block, collapsed through the wrappers that end with it (Sphinx's body ends
    // 16 px below its last section), is its content too, where the nodes do not show it.
    let margins = if row { held_margin(s, k, kl) - start } else { 0.0 };
    (start + content.max(margins) + end).min(size)
}

/// How far below the top of item `k` (laid out `kl`) the boxes of its element's in-flow
/// descendants and their bottom margins reach.
fn held_margin(s: &Snapshot<'_>, k: &Node, kl: usize) -> f64 {
    let Some(d) = k.maker.dom else { return 0.0 };
    let top = s.l_bounds[kl][1];
    let mut reach = f64::NEG_INFINITY;
    let mut todo: Vec<usize> = s.children[d].clone();
    while let Some(c) = todo.pop() {
        let Some(cl) = s.layout_of[c].filter(|_| s.node_type[c] == 1) else { continue };
        if matches!(s.style(cl, "position"), "absolute" | "fixed") {
            continue;
        }
        let b = s.l_bounds[cl];
        reach = reach.max(b[1] + b[3] + s.px(cl, "margin-bottom").max(0.0));
        todo.extend(s.children[c].iter().copied());
    }
    if reach.is_finite() {
        reach - top
    } else {
        0.0
    }
}

/// The layout object of the element a flex item's node was made of (none for loose text).
fn item_layout(s: &Snapshot<'_>, k: &Node) -> Option<usize> {
    let d = k.maker.dom.filter(|_| k.maker.flex_item)?;
    s.layout_of[d]
}

/// Padding and border before and after the content on an axis (a row's: left and right).
pub(super) fn css_padding(s: &Snapshot<'_>, l: usize, row: bool) -> (f64, f64) {
    let side = |edge: &str| s.px(l, &format!("padding-{edge}")) + s.px(l, &format!("border-{edge}-width"));
    if row {
        (side("left"), side("right"))
    } else {
        (side("top"), side("bottom"))
    }
}

/// An item's margin at the start or the end of an axis (a row's: left, right).
fn margin_start(s: &Snapshot<'_>, k: &Node, row: bool) -> f64 {
    item_layout(s, k).map_or(0.0, |kl| s.px(kl, if row { "margin-left" } else { "margin-top" }))
}
fn margin_end(s: &Snapshot<'_>, k: &Node, row: bool) -> f64 {
    item_layout(s, k).map_or(0.0, |kl| s.px(kl, if row { "margin-right" } else { "margin-bottom" }))
}

/// How far from exact a child may be, in px.
pub(super) const TOLERANCE: f64 = 0.5;

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
/// one single-line TEXT node, which is that item's box; the other kids lie out of the flow.
/// Which kids are out of the flow, when so.
fn items_and_loose_text(s: &Snapshot<'_>, n: usize, kids: &[Node]) -> Option<Vec<bool>> {
    let runs = loose_text_runs(s, n);
    let elements = kids.iter().filter(|k| k.maker.flex_item).count();
    let mut texts = vec![0; runs.len()];
    let mut absolute = vec![false; kids.len()];
    for (i, k) in kids.iter().enumerate().filter(|(_, k)| !k.maker.flex_item) {
        let single_line = k.kind == NodeType::TEXT
            && k.text_auto_resize == Some(TextAutoResize::WIDTH_AND_HEIGHT)
            && !k.characters.as_deref().unwrap_or_default().contains('\n');
        let run = k.maker.dom.and_then(|d| runs.iter().position(|r| r.contains(&d)));
        match run {
            Some(r) if single_line => texts[r] += 1,
            _ if out_of_flow(s, n, k) => absolute[i] = true,
            _ => return None,
        }
    }
    (texts.iter().all(|t| *t == 1) && element_items(s, n) == elements).then_some(absolute)
}

/// Whether kid `k` of element `n`'s frame lies out of its flow: drawn by `n` itself, or made of
/// an element positioned absolutely or fixed inside it (or of that element's content).
fn out_of_flow(s: &Snapshot<'_>, n: usize, k: &Node) -> bool {
    let Some(d) = k.maker.dom else { return false };
    d == n || self_and_ancestors(s, d).take_while(|a| *a != n).any(|a| positioned(s, a))
}

/// Whether DOM node `d` is an element positioned absolutely or fixed.
fn positioned(s: &Snapshot<'_>, d: usize) -> bool {
    s.node_type[d] == 1 && s.layout_of[d].is_some_and(|dl| matches!(s.style(dl, "position"), "absolute" | "fixed"))
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
/// it on that axis; `None` when there is none. `kids` in main axis order.
fn cross_alignment(
    s: &Snapshot<'_>,
    l: usize,
    row: bool,
    kids: &[&Node],
    size_cross: f64,
) -> Option<(CounterAlign, f64, f64)> {
    let first = kids[0];
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
    let all = |f: &dyn Fn(&Node) -> bool| kids.iter().all(|k| f(k));
    if all(&|k| (cross(k).0 - cross(first).0).abs() <= TOLERANCE) {
        // The room after the furthest item, for an item that FILLs across to it.
        let end = kids.iter().map(|k| cross(k).0 + cross(k).1).fold(0.0, f64::max);
        Some((CounterAlign::MIN, cross(first).0, (size_cross - end).max(0.0)))
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
