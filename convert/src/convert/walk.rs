//! The walk of the layout tree: which element becomes a frame, a flattened rectangle, replaced
//! content or text, and in which frame it is drawn (its DOM parent's, or the one CSS paints it
//! in: `stack`); below the depth limits, content drawn flat.

use super::controls::input_text;
use super::css::{blend_mode, full_ellipse, Line};
use super::images::replaced;
use super::layout::lay_out;
use super::paint::{
    apply_paint, box_paint, collapsed_border, inline_fragments, inline_lines, paints_something, BoxPaint,
};
use super::paragraph::paragraph;
use super::text::{symbol_marker, text};
use super::{key, round, Container, Ctx, Open, Snapshot, MAX_FRAME_DEPTH, MAX_NODES, MAX_WALK_DEPTH};
use crate::doc::{LayoutMode, LayoutPositioning, Maker, Node, NodeType, WarningCode};
use crate::{names, stack, warn};

/// DOM node `n` and its content, drawn in `into` or in the frame CSS paints them in;
/// `flex_item` when `n` is an in-flow item of a flex container's frame.
pub(super) fn visit(cx: &mut Ctx<'_, '_>, n: usize, into: &mut Container, flex_item: bool) {
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

/// The rectangle two rectangles (`[x, y, width, height]`) share; empty (0 wide or tall) where
/// they do not overlap.
pub(super) fn intersect(a: [f64; 4], b: [f64; 4]) -> [f64; 4] {
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
        kind: NodeType::FRAME,
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
                        kind: NodeType::RECTANGLE,
                        name: s.name(c),
                        x: round(b[0] - into.ox),
                        y: round(b[1] - into.oy),
                        width: round(b[2]),
                        height: round(b[3]),
                        maker: Maker { dom: Some(c), flex_item: false },
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
pub(super) fn element(cx: &mut Ctx<'_, '_>, n: usize, l: usize, into: &mut Container, flex_item: bool) {
    let s = cx.s;
    let b = s.l_bounds[l];
    if clipped_away(s, l, b) {
        return;
    }
    let name = s.name(n);
    let visible = s.style(l, "visibility") != "hidden";
    // Generated content (::before, ::after, ::marker) converts like any box; it is named so.
    if let Some(p) = s.pseudo.get(&n) {
        if !matches!(*p, "before" | "after" | "marker") {
            cx.warn(WarningCode::PseudoElement, format!("::{p} not converted"), n, &name);
            return;
        }
    }
    let mut node = Node {
        kind: NodeType::FRAME,
        name: name.clone(),
        x: round(b[0] - into.ox),
        y: round(b[1] - into.oy),
        width: round(b[2]),
        height: round(b[3]),
        maker: Maker { dom: Some(n), flex_item },
        ..Node::default()
    };
    let opacity: f64 = s.style(l, "opacity").parse().unwrap_or(1.0);
    if opacity < 1.0 {
        node.opacity = Some(round(opacity));
    }
    node.blend_mode = blend_mode(s.style(l, "mix-blend-mode"));
    // Its box is the unturned one, from the top-left Figma turns it about (convert/rotation).
    node.rotation = s.rotations.get(&l).copied();
    let paint = if visible {
        for (property, message) in warn::approximations(s, l, b) {
            cx.css(n, &name, property, message);
        }
        box_paint(cx, n, l, b, &name)
    } else {
        BoxPaint::none()
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

/// Whether a box clips all it holds: no width with `overflow-x` clipping, or no height with
/// `overflow-y` (a label hidden as rustdoc's toggle hides "Collapse": `width: 0; height: 0;
/// overflow: hidden`). CSS draws none of it, its border aside, which has no width either.
fn clipped_away(s: &Snapshot<'_>, l: usize, b: [f64; 4]) -> bool {
    (b[2] <= 0.0 && s.style(l, "overflow-x") != "visible") || (b[3] <= 0.0 && s.style(l, "overflow-y") != "visible")
}

/// The children of element `n`'s frame `open`, in paint order: its own, and those moved into
/// it from deeper down. `flex`: `n` lays out its children as items (flex or grid), each then a
/// frame of its own.
pub(super) fn fill(cx: &mut Ctx<'_, '_>, n: usize, l: usize, open: Open, flex: bool) -> Vec<Node> {
    let s = cx.s;
    let (id, b) = (open.id, open.rect);
    cx.next_id += 1;
    let mut inner = Container { ox: open.ox, oy: open.oy, depth: open.depth, nodes: Vec::new() };
    // Before the children: the text nodes it draws are then not drawn again.
    let para = paragraph(cx, n, l, &inner);
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
    kids.extend(para);
    kids.extend(cx.take_moved(id));
    kids.sort_by_key(|(p, _)| *p);
    kids.into_iter().map(|(_, k)| k).collect()
}

/// Any other element: a frame when it paints, clips, fades, lays out flex items or holds a
/// negative z-index; else flattened, its paint a rectangle and its content beside it.
pub(super) fn frame(cx: &mut Ctx<'_, '_>, n: usize, l: usize, mut node: Node, paint: BoxPaint, into: &mut Container) {
    let s = cx.s;
    let (b, k, flex_item) = (s.l_bounds[l], key(s, n, l), node.maker.flex_item);
    let display = s.style(l, "display");
    let clips = clips(s, n, l, display);
    // A wrapping container too: auto layout is made only where its items lie on one line
    // (`lay_out` checks every item is where Figma would put it).
    let flex = matches!(display, "flex" | "inline-flex");
    let grid = matches!(display, "grid" | "inline-grid");
    // A blend, like an opacity, applies to the element's content as one layer.
    let faded = node.opacity.is_some() || node.blend_mode.is_some();
    let stacks = stack::negative_z(s, n, l).is_some() || cx.negative_hosts.contains(&Some(n));
    let paints = paints_something(&paint);
    let member = cx.members.contains_key(&n);
    // A rotated element's content lies in its own, unturned coordinates.
    let needs_frame = clips || faded || flex || grid || flex_item || stacks || member || node.rotation.is_some();
    if !(paints || needs_frame) || into.depth >= MAX_FRAME_DEPTH {
        return flat(cx, n, l, node, (paint, needs_frame), into);
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
    if full_ellipse(s, l, b) {
        if !needs_frame && uniform_strokes(&paint) {
            // Its radii make a whole ellipse: an ELLIPSE, its content drawn after it.
            return ellipse(cx, n, l, node, paint, into);
        }
        ellipse_in_frame(cx, n, l, &node.name);
    }
    // Boxed: this function's frame is on the stack once per level of the walk.
    let double = (paint.line == Line::Double || !paint.more.is_empty()).then(|| Box::new(paint.clone()));
    apply_paint(&mut node, paint);
    collapsed_border(s, l, &mut node);
    // The double border's inner line and the sides of other colours, kept apart from the
    // children auto layout places.
    let inner_line = node.children.take();
    node.clips_content = Some(clips);
    cx.count += 1;
    let open =
        Open { owner: Some(n), id: cx.next_id, clips, faded, rect: b, ox: b[0], oy: b[1], depth: into.depth + 1 };
    let mut kids = fill(cx, n, l, open, flex || grid);
    lay_out(s, n, l, (flex, grid), &mut node, &mut kids);
    if let (Some(line), Some(paint)) = (inner_line, double) {
        double_line(cx, n, l, &mut node, *paint, line, &mut kids);
    }
    if !kids.is_empty() {
        node.children = Some(kids);
    }
    into.nodes.push((k, node));
}

/// Whether element `n` (laid out `l`, as `display`) clips its content. Overflow applies to
/// block, flex and grid containers only: an inline box (rustdoc's `.docblock-short p {
/// display: inline; overflow: hidden }`) clips nothing and needs no frame for it; its text is
/// its paragraph's, its painted runs shapes behind it.
fn clips(s: &Snapshot<'_>, n: usize, l: usize, display: &str) -> bool {
    let inline_box = display == "inline" && !s.is_tag(n, super::paragraph::REPLACED);
    !inline_box && (s.style(l, "overflow-x") != "visible" || s.style(l, "overflow-y") != "visible")
}

/// An element drawn without a frame of its own: it needs none, or is too deep for one (then
/// said, when it needs one). Its paint is a rectangle, its content beside it.
#[inline(never)]
fn flat(
    cx: &mut Ctx<'_, '_>,
    n: usize,
    l: usize,
    mut node: Node,
    (paint, needs_frame): (BoxPaint, bool),
    into: &mut Container,
) {
    let s = cx.s;
    if into.depth >= MAX_FRAME_DEPTH && needs_frame {
        let message =
            format!("nested over {MAX_FRAME_DEPTH} frames deep: drawn flat, without its clip, opacity or auto layout");
        cx.depth_limit(n, &node.name, message);
    }
    if paints_something(&paint) {
        node.kind = NodeType::RECTANGLE;
        apply_paint(&mut node, paint);
        collapsed_border(s, l, &mut node);
        cx.count += 1;
        into.nodes.push((key(s, n, l), node));
    }
    let para = paragraph(cx, n, l, into);
    for c in s.children[n].clone() {
        visit(cx, c, into, false);
    }
    into.nodes.extend(para);
}

/// The border is one weight all round (an ELLIPSE has no per-side weights) and one line.
fn uniform_strokes(p: &BoxPaint) -> bool {
    p.strokes.as_ref().is_none_or(|(_, w)| w.iter().all(|x| *x == w[0])) && p.line != Line::Double && p.more.is_empty()
}

/// Element `n` as an ELLIPSE (its radii make one): its fills, strokes and effects, no corners;
/// its content drawn after it, in the same container.
#[inline(never)]
fn ellipse(cx: &mut Ctx<'_, '_>, n: usize, l: usize, mut node: Node, mut paint: BoxPaint, into: &mut Container) {
    let s = cx.s;
    node.kind = NodeType::ELLIPSE;
    paint.radii = [0.0; 4];
    apply_paint(&mut node, paint);
    cx.count += 1;
    into.nodes.push((key(s, n, l), node));
    let para = paragraph(cx, n, l, into);
    for c in s.children[n].clone() {
        visit(cx, c, into, false);
    }
    into.nodes.extend(para);
}

/// Radii that make an ellipse, on a box that must be a frame: drawn circular, and said.
#[inline(never)]
fn ellipse_in_frame(cx: &mut Ctx<'_, '_>, n: usize, l: usize, name: &str) {
    let v = cx.s.style(l, "border-top-left-radius");
    let message = format!("border-radius: {} drawn circular: the box is a frame", warn::quote(v));
    cx.css(n, name, "border-radius", message);
}

/// A double border's inner line and the rectangles of a border's other colours (`line`) as
/// the frame's first children, ABSOLUTE where the frame has auto layout (which places only the
/// items); in a GRID frame, which would place them in cells, the border is drawn solid in its
/// first colour instead, and said.
#[inline(never)]
fn double_line(
    cx: &mut Ctx<'_, '_>,
    n: usize,
    l: usize,
    node: &mut Node,
    mut paint: BoxPaint,
    mut line: Vec<Node>,
    kids: &mut Vec<Node>,
) {
    if matches!(node.layout_mode, Some(LayoutMode::HORIZONTAL | LayoutMode::VERTICAL)) {
        // Out of the flow, where it is: auto layout places only the items.
        for k in &mut line {
            k.layout_positioning = Some(LayoutPositioning::ABSOLUTE);
        }
    }
    if node.layout_mode == Some(LayoutMode::GRID) {
        let (property, message) = match paint.line {
            Line::Double => ("border-style", "border-style: double drawn solid: a GRID frame would place its inner line in a cell"),
            _ => ("border-color", "border-color: sides of other colours drawn in the first side's: a GRID frame would place their rectangles in a cell"),
        };
        paint.line = Line::Solid;
        paint.more.clear();
        paint.fills = node.fills.take().unwrap_or_default();
        apply_paint(node, paint);
        node.children = None;
        collapsed_border(cx.s, l, node);
        cx.css(n, &node.name, property, message.into());
    } else {
        cx.count += line.len();
        kids.splice(0..0, line);
    }
}
