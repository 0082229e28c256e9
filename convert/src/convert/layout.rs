//! Auto layout: a flex container whose items Figma would place exactly where Chromium did.

use super::{round, Snapshot};
use crate::doc::{CounterAlign, LayoutMode, Node, PrimaryAlign};

/// Makes `frame` an auto layout frame when Figma would put every child exactly where it is:
/// all children are the boxes of in-flow flex items, evenly spaced on the main axis, aligned
/// alike on the cross axis. Otherwise nothing changes.
pub(super) fn auto_layout(s: &Snapshot<'_>, n: usize, l: usize, frame: &mut Node, kids: &mut [Node]) {
    if kids.is_empty() || !kids.iter().all(|k| k.maker.flex_item) || !only_items(s, n, kids.len()) {
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

/// The `count` kids of flex container `n` are its items, one each.
fn only_items(s: &Snapshot<'_>, n: usize, count: usize) -> bool {
    // Every in-flow element child with a box made exactly one of the kids.
    let items = s.children[n]
        .iter()
        .filter(|c| {
            s.node_type[**c] == 1
                && s.layout_of[**c].is_some_and(|cl| !matches!(s.style(cl, "position"), "absolute" | "fixed"))
        })
        .count();
    if items != count {
        return false;
    }
    // Text directly in the container is an anonymous flex item: not reproducible.
    let loose_text = s.children[n].iter().any(|c| {
        s.node_type[*c] == 3 && s.node_value[*c].is_some_and(|v| !v.trim().is_empty()) && s.layout_of[*c].is_some()
    });
    !loose_text
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
