//! Components (issue 39, item 4): sibling structures repeated three times or more (cards, nav
//! items, table rows, list items) become one COMPONENT, in place of the first, and INSTANCEs of
//! it, each showing its own text and images as overrides.
//!
//! Two passes. Before the walk, [`repeated`] finds the groups in the DOM: three or more
//! consecutive sibling elements of one tag and classes whose visible block children have, all
//! the way down, the same tags and classes (the fidelity benchmark's definition). The walk makes
//! each member a frame of its own, painted or not. After it, [`make`] turns the members'
//! frames into a component and its instances where Figma would draw each instance as the page
//! did: the same layers, of the same look, in the same places, differing only in what an
//! instance can override (text and its runs, image fills, names) and in the sizes and positions
//! that follow from that (a text's height, an auto layout's flow, the instance's own size).
//!
//! An instance cannot hold layers its component lacks, so list items whose text holds inline
//! code would be no component either: each draws its code's backgrounds, so many and so placed
//! as its text has them. Those shapes leave the member for its parent, right behind it, where
//! they show as they did (the member paints nothing over them); the members are then alike but
//! for their text, and instances of one list item.
//!
//! An instance cannot change a vector's drawing, so members differing in an SVG (each card's
//! own icon) would be no component. Figma's way is a component for each icon, swapped in per
//! instance (`swapComponent`): each distinct icon becomes a COMPONENT of the root's
//! `components`, beside the screen, and the icon in every member an INSTANCE of its own.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use super::{round, Snapshot};
use crate::doc::{LayoutMode, LayoutPositioning, LayoutSizing, LayoutWrap, Node, NodeType, Paint, TextAutoResize};

/// Fewer alike siblings than this are not worth a component.
const MIN_MEMBERS: usize = 3;
/// The room between the screen and the components beside it, and between two of them, in px.
const BESIDE_GAP: f64 = 80.0;
/// How far apart two sizes or positions may be and still be the same, in px: Chromium snaps a
/// list marker or a line to whole pixels of the page, so one layer of members at fractional
/// offsets lies up to a pixel apart from member to member (Sphinx's bullets, 8.27 to 9.05 px
/// down their items); an instance draws it where its component has it, within that pixel.
const TOLERANCE: f64 = 1.0;

/// Elements whose content is never a structure of its own (skipped with what they hold).
const SKIPPED: &[&str] = &["script", "style", "head", "template", "noscript", "svg", "select", "textarea", "option"];

/// Each member of a repeated group in the DOM, with its group's number.
pub(super) fn repeated(s: &Snapshot<'_>) -> HashMap<usize, usize> {
    let n = s.node_type.len();
    let element = |i: usize| s.node_type[i] == 1 && !s.pseudo.contains_key(&i);
    let shown = |i: usize| {
        element(i)
            && !s.is_tag(i, SKIPPED)
            && s.layout_of[i].is_some_and(|l| s.style(l, "display") != "none" && s.style(l, "visibility") == "visible")
    };
    let block = |i: usize| shown(i) && s.layout_of[i].is_some_and(|l| s.style(l, "display") != "inline");
    // Each element's structure as a hash, from the leaves up (a child's index is above its
    // parent's): its tag, its classes sorted, and its visible block children's structures.
    let mut sig = vec![0u64; n];
    let mut structured = vec![false; n];
    for i in (0..n).rev().filter(|i| element(*i)) {
        let mut h = DefaultHasher::new();
        s.tag(i).hash(&mut h);
        let mut classes: Vec<&str> = s.attr(i, "class").unwrap_or_default().split_whitespace().collect();
        classes.sort_unstable();
        classes.hash(&mut h);
        for &c in s.children[i].iter().filter(|c| block(**c)) {
            sig[c].hash(&mut h);
            structured[i] = true;
        }
        sig[i] = h.finish();
    }
    let mut member = HashMap::new();
    let mut group = 0;
    for p in (0..n).filter(|p| shown(*p)) {
        let kids: Vec<usize> = s.children[p]
            .iter()
            .copied()
            .filter(|c| shown(*c) && s.layout_of[*c].is_some_and(|l| s.l_bounds[l][2] > 0.0))
            .collect();
        for run in kids.chunk_by(|a, b| sig[*a] == sig[*b]).filter(|r| r.len() >= MIN_MEMBERS && structured[r[0]]) {
            group += 1;
            member.extend(run.iter().map(|m| (*m, group)));
        }
    }
    member
}

/// Makes components of the repeated groups' frames under `root` (`groups`: each member
/// element's group), and the icons they swap beside it (`root.components`); answers how many
/// components it made in the tree.
pub(super) fn make(s: &Snapshot<'_>, root: &mut Node, groups: &HashMap<usize, usize>) -> usize {
    let mut made = 0;
    let mut icons = Icons::default();
    visit(&mut Making { s, groups, made: &mut made, icons: &mut icons }, root);
    if !icons.made.is_empty() {
        place_beside(root.width, &mut icons.made);
        root.components = Some(icons.made);
    }
    made
}

/// Stands `components` in a column to the right of a screen `width` wide, from its top.
pub(crate) fn place_beside(width: f64, components: &mut [Node]) {
    let mut y = 0.0;
    for c in components {
        (c.x, c.y) = (width + BESIDE_GAP, y);
        y += c.height + BESIDE_GAP / 2.0;
    }
}

/// The icons made components so far: each distinct SVG (its image) once.
#[derive(Default)]
struct Icons {
    by_image: HashMap<String, String>,
    made: Vec<Node>,
}

impl Icons {
    /// The id of the component drawing `svg`'s image, made the first time.
    fn of(&mut self, svg: &Node) -> String {
        let image = svg.image_ref.clone().unwrap_or_default();
        if let Some(id) = self.by_image.get(&image) {
            return id.clone();
        }
        let id = format!("icon-{}", self.made.len() + 1);
        self.made.push(Node {
            kind: NodeType::COMPONENT,
            id: Some(id.clone()),
            name: format!("{} {}", svg.name, self.made.len() + 1),
            width: svg.width,
            height: svg.height,
            fills: Some(Vec::new()),
            clips_content: Some(false),
            children: Some(vec![drawing(svg)]),
            ..Node::default()
        });
        self.by_image.insert(image, id.clone());
        id
    }
}

/// An SVG node's drawing alone, at the top-left of what holds it.
fn drawing(svg: &Node) -> Node {
    Node {
        kind: NodeType::SVG,
        name: svg.name.clone(),
        width: svg.width,
        height: svg.height,
        image_ref: svg.image_ref.clone(),
        ..Node::default()
    }
}

/// Where the members at `at` (the component first) draw different SVGs, each becomes an
/// INSTANCE of its icon's component, in the SVG's place: the component's nested instance,
/// swapped in each of its instances.
fn swap_icons(members: &mut [&mut Node], icons: &mut Icons) {
    let differ = members.iter().any(|m| m.image_ref != members[0].image_ref);
    if members[0].kind == NodeType::SVG && differ {
        for m in members.iter_mut() {
            let inner = drawing(m);
            let component_id = Some(icons.of(m));
            **m = Node {
                kind: NodeType::INSTANCE,
                image_ref: None,
                component_id,
                children: Some(vec![inner]),
                ..m.clone()
            };
        }
        return;
    }
    let (count, many) = (members[0].children.as_ref().map_or(0, Vec::len), members.len());
    let mut kids: Vec<std::slice::IterMut<'_, Node>> =
        members.iter_mut().map(|m| m.children.as_deref_mut().unwrap_or_default().iter_mut()).collect();
    for _ in 0..count {
        let mut at: Vec<&mut Node> = kids.iter_mut().filter_map(Iterator::next).collect();
        if at.len() == many {
            swap_icons(&mut at, icons);
        }
    }
}

/// What the walk making components carries.
struct Making<'a, 's> {
    s: &'a Snapshot<'s>,
    groups: &'a HashMap<usize, usize>,
    made: &'a mut usize,
    icons: &'a mut Icons,
}

fn visit(cx: &mut Making<'_, '_>, node: &mut Node) {
    let flow = node.layout_mode;
    let Some(kids) = node.children.as_mut() else { return };
    // The group of each child that is a member's frame, in order.
    let mut by_group: Vec<(usize, Vec<usize>)> = Vec::new();
    for (i, k) in kids.iter().enumerate() {
        let Some(g) = k.maker.dom.and_then(|d| cx.groups.get(&d)).filter(|_| k.kind == NodeType::FRAME) else {
            continue;
        };
        match by_group.iter_mut().find(|(id, _)| id == g) {
            Some((_, list)) => list.push(i),
            None => by_group.push((*g, vec![i])),
        }
    }
    // The inline boxes' shapes lifted out of members, to stand right behind each.
    let mut behind: Vec<(usize, Vec<Node>)> = Vec::new();
    for (_, mut members) in by_group {
        // Each member with its inline boxes' shapes lifted out, made once for the group.
        let mut lifted: Option<Lifted> = None;
        while members.len() >= MIN_MEMBERS {
            let (alike, rest) = split(&members.iter().map(|m| &kids[*m]).collect::<Vec<_>>(), &members);
            let alike = if alike.len() >= MIN_MEMBERS {
                alike
            } else {
                let lifted = lifted.get_or_insert_with(|| lift_all(cx.s, kids, &members, flow));
                lift_alike(kids, &members, lifted, &mut behind)
            };
            if alike.len() >= MIN_MEMBERS {
                componentize(cx, kids, &alike);
                members.retain(|m| !alike.contains(m));
            } else {
                members = rest;
            }
        }
    }
    // Each member's lifted shapes go right before it, last member first so the indices hold.
    behind.sort_by_key(|(m, _)| std::cmp::Reverse(*m));
    for (m, shapes) in behind {
        kids.splice(m..m, shapes);
    }
    // Figma makes no component inside a component or an instance.
    for k in kids.iter_mut().filter(|k| k.kind == NodeType::FRAME || k.kind == NodeType::GROUP) {
        visit(cx, k);
    }
}

/// The members (`at`, their indices; `nodes`, them) that show as instances of the first would,
/// and the rest.
fn split(nodes: &[&Node], at: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let same = |i: usize| i == 0 || alike(nodes[0], nodes[i], Place::Root);
    let (a, r): (Vec<usize>, Vec<usize>) = (0..at.len()).partition(|i| same(*i));
    (a.into_iter().map(|i| at[i]).collect(), r.into_iter().map(|i| at[i]).collect())
}

/// Members (by index in their parent) as they are with their inline boxes' shapes lifted out,
/// and those shapes; only the members that have shapes to lift.
type Lifted = HashMap<usize, (Node, Vec<Node>)>;

/// Each of `members` that has shapes to lift, copied and lifted.
fn lift_all(s: &Snapshot<'_>, kids: &[Node], members: &[usize], flow: Option<LayoutMode>) -> Lifted {
    let mut out = HashMap::new();
    for m in members.iter().filter(|m| kids[**m].children.iter().flatten().any(|k| inline_paint(s, k))) {
        let mut n = kids[*m].clone();
        let shapes = lift(s, &mut n, flow);
        if !shapes.is_empty() {
            out.insert(*m, (n, shapes));
        }
    }
    out
}

/// The members alike once their inline boxes' shapes are lifted out (`lifted`), lifted (their
/// shapes in `behind`); none when fewer than a component's worth would be.
fn lift_alike(
    kids: &mut [Node],
    members: &[usize],
    lifted: &mut Lifted,
    behind: &mut Vec<(usize, Vec<Node>)>,
) -> Vec<usize> {
    if !members.iter().any(|m| lifted.contains_key(m)) {
        return Vec::new();
    }
    let nodes: Vec<&Node> = members.iter().map(|m| lifted.get(m).map_or(&kids[*m], |(n, _)| n)).collect();
    let (alike, _) = split(&nodes, members);
    if alike.len() < MIN_MEMBERS {
        return Vec::new();
    }
    for m in &alike {
        if let Some((n, shapes)) = lifted.remove(m) {
            kids[*m] = n;
            behind.push((*m, shapes));
        }
    }
    alike
}

/// The first of `alike` (indices into `kids`) becomes a component, the others its instances.
fn componentize(cx: &mut Making<'_, '_>, kids: &mut [Node], alike: &[usize]) {
    *cx.made += 1;
    let id = format!("component-{}", cx.made);
    kids[alike[0]].kind = NodeType::COMPONENT;
    kids[alike[0]].id = Some(id.clone());
    for m in &alike[1..] {
        kids[*m].kind = NodeType::INSTANCE;
        kids[*m].component_id = Some(id.clone());
    }
    let mut group: Vec<&mut Node> =
        kids.iter_mut().enumerate().filter(|(i, _)| alike.contains(i)).map(|(_, k)| k).collect();
    swap_icons(&mut group, cx.icons);
}

/// Takes out of `member` the shapes its inline boxes paint behind its text (code, mark), placed
/// in its parent's space (absolute in `flow`, the parent's auto layout); none where behind the
/// member they would not show as they did: it paints, fades, turns or casts a shadow, or a
/// layer of its own drawn under a shape covers part of it.
fn lift(s: &Snapshot<'_>, member: &mut Node, flow: Option<LayoutMode>) -> Vec<Node> {
    let see_through = member.fills.as_ref().is_none_or(Vec::is_empty)
        && member.opacity.is_none()
        && member.blend_mode.is_none()
        && member.effects.as_ref().is_none_or(Vec::is_empty)
        && member.rotation.is_none();
    let (x, y, w, h) = (member.x, member.y, member.width, member.height);
    // Within its box where it clips: behind it, nothing would clip the shape.
    let clips = member.clips_content == Some(true);
    let inside = |k: &Node| k.x >= 0.0 && k.y >= 0.0 && k.x + k.width <= w && k.y + k.height <= h;
    let Some(kids) = member.children.as_mut().filter(|_| see_through) else { return Vec::new() };
    let shape = |k: &Node| inline_paint(s, k) && (!clips || inside(k));
    let overlap = |a: &Node, b: &Node| {
        let [_, _, w, h] = super::walk::intersect([a.x, a.y, a.width, a.height], [b.x, b.y, b.width, b.height]);
        w > 0.0 && h > 0.0
    };
    let covered =
        kids.iter().enumerate().any(|(i, k)| shape(k) && kids[..i].iter().any(|u| !shape(u) && overlap(u, k)));
    if covered {
        return Vec::new();
    }
    let (shapes, keep): (Vec<Node>, Vec<Node>) = kids.drain(..).partition(|k| shape(k));
    *kids = keep;
    shapes
        .into_iter()
        .map(|mut k| {
            (k.x, k.y) = (round(x + k.x), round(y + k.y));
            if flow.is_some() {
                k.layout_positioning = Some(LayoutPositioning::ABSOLUTE);
            }
            k
        })
        .collect()
}

/// Whether a layer is what an inline box (code, mark) paints behind its paragraph's text: a
/// shape of an element laid out inline, holding no text of its own.
fn inline_paint(s: &Snapshot<'_>, k: &Node) -> bool {
    fn texts(k: &Node) -> bool {
        k.kind == NodeType::TEXT || k.children.iter().flatten().any(texts)
    }
    let inline = k.maker.dom.and_then(|d| s.layout_of[d].map(|l| (d, l))).is_some_and(|(d, l)| {
        s.node_type[d] == 1 && s.style(l, "display") == "inline" && !s.is_tag(d, super::paragraph::REPLACED)
    });
    inline && !texts(k) && k.component_id.is_none()
}

/// Where a node sits in a member: its root, or a child of a frame laid out so.
#[derive(Clone, Copy)]
enum Place {
    Root,
    /// In a parent of this auto layout, which wraps its rows or not.
    In(Option<LayoutMode>, bool),
}

/// Whether `b` shows as an instance of `a` would: the same layers, of the same look, in the
/// same places, but for what an instance overrides and what follows from it.
fn alike(a: &Node, b: &Node, place: Place) -> bool {
    // Rounded to hundredths, a pixel apart may differ by one in the last bit.
    let close = |x: f64, y: f64| (x - y).abs() <= TOLERANCE + 1e-9;
    let text = a.kind == NodeType::TEXT;
    let fits = |r: &[TextAutoResize]| text && a.text_auto_resize.is_some_and(|t| r.contains(&t));
    // An auto layout frame that HUGs follows its content (a wrapping row of tags, one row or
    // two as the instance's words make it).
    let hugs = |sizing: Option<LayoutSizing>| sizing == Some(LayoutSizing::HUG);
    let placed = match place {
        // The instance is placed and sized as the member is.
        Place::Root => true,
        Place::In(flow, wraps) => {
            // Auto layout moves a child along its axis as the text before it grows, and a
            // wrapping row down too, onto another row.
            let x_free = flow == Some(LayoutMode::HORIZONTAL);
            let y_free = flow == Some(LayoutMode::VERTICAL) || wraps;
            (x_free || close(a.x, b.x))
                && (y_free || close(a.y, b.y))
                && (fits(&[TextAutoResize::WIDTH_AND_HEIGHT])
                    || hugs(a.layout_sizing_horizontal)
                    || close(a.width, b.width))
                && (fits(&[TextAutoResize::HEIGHT, TextAutoResize::WIDTH_AND_HEIGHT])
                    || hugs(a.layout_sizing_vertical)
                    || close(a.height, b.height))
        }
    };
    // A member's own cell in its parent's grid is the instance's place, not its look.
    let cell = |n: &Node| (n.grid_row_anchor_index, n.grid_column_anchor_index, n.grid_row_span, n.grid_column_span);
    let same_cell = matches!(place, Place::Root) || cell(a) == cell(b);
    let (ka, kb) = (a.children.as_deref().unwrap_or_default(), b.children.as_deref().unwrap_or_default());
    // A padding places the frame's children as a position would, so within a pixel too: the
    // frame holding an inline box in its line (`inline_row`) puts it as far down as Chromium's
    // whole-pixel baseline did on that line.
    let pad = |n: &Node| [n.padding_left, n.padding_right, n.padding_top, n.padding_bottom];
    let padded_alike = pad(a).iter().zip(pad(b)).all(|(p, q)| match (p, q) {
        (Some(p), Some(q)) => close(*p, q),
        (p, q) => *p == q,
    });
    placed
        && same_cell
        && padded_alike
        && look(a) == look(b)
        && ka.len() == kb.len()
        && ka
            .iter()
            .zip(kb)
            .all(|(x, y)| alike(x, y, Place::In(a.layout_mode, a.layout_wrap == Some(LayoutWrap::WRAP))))
}

/// A node without what an instance may show otherwise than its component: its name, place and
/// size and grid cell, its padding (compared within a pixel), text and runs, the images of its
/// fills, the drawing of an SVG (an icon swapped in), and its children (compared one by one).
/// A text's type and fill are overrides too, which Figma's text override carries with the
/// characters: a text of several runs takes its longest run's (code in one item, prose in the
/// next, one run in a third).
fn look(n: &Node) -> Node {
    let mut out = bare(n);
    if n.kind == NodeType::TEXT {
        (out.font_name, out.font_size, out.line_height, out.letter_spacing) = (None, None, None, None);
        (out.text_case, out.text_decoration, out.text_style_id) = (None, None, None);
        (out.fills, out.fill_style_id, out.paragraph_indent) = (None, None, None);
    }
    out
}

fn bare(n: &Node) -> Node {
    let blank = |paints: &Option<Vec<Paint>>| {
        let mut paints = paints.clone();
        for p in paints.iter_mut().flatten() {
            if let Paint::Image { image_ref, .. } = p {
                image_ref.clear();
            }
        }
        paints
    };
    Node {
        name: String::new(),
        x: 0.0,
        y: 0.0,
        width: 0.0,
        height: 0.0,
        characters: None,
        segments: None,
        hyperlink: None,
        fills: blank(&n.fills),
        image_ref: None,
        grid_row_anchor_index: None,
        grid_column_anchor_index: None,
        grid_row_span: None,
        grid_column_span: None,
        padding_left: None,
        padding_right: None,
        padding_top: None,
        padding_bottom: None,
        children: None,
        maker: Default::default(),
        ..n.clone()
    }
}
