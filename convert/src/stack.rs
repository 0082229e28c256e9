//! Which box clips and which stacks an element, as CSS decides it, for a document whose frames
//! follow the DOM: an absolutely positioned element is clipped by the `overflow` of its
//! containing block and that block's ancestors only (CSS 2, 11.1.1), and a negative `z-index`
//! paints inside its stacking context, below its in-flow content (CSS 2, Appendix E). The walk
//! moves such elements into the frame where CSS paints them.

use std::collections::HashSet;

use crate::convert::Snapshot;

/// Forms a containing block for fixed (and absolute) descendants whatever its `position`:
/// CSS Transforms 1 and 2, Filter Effects 1 and 2, CSS Containment 2, CSS Will Change 1.
fn contains_fixed(s: &Snapshot<'_>, l: usize) -> bool {
    let set = |p: &str| !matches!(s.style(l, p), "none" | "");
    let contain = s.style(l, "contain");
    let will = s.style(l, "will-change");
    set("transform")
        || set("perspective")
        || set("filter")
        || set("backdrop-filter")
        || ["paint", "layout", "strict", "content"].iter().any(|k| contain.contains(k))
        || ["transform", "perspective", "filter"].iter().any(|k| will.contains(k))
}

fn parent(s: &Snapshot<'_>, n: usize) -> Option<usize> {
    usize::try_from(*s.parent.get(n)?).ok()
}

/// The DOM ancestors of `n` that have a box, nearest first, up to (without) `html`.
fn boxed_ancestors<'s>(s: &'s Snapshot<'_>, n: usize) -> impl Iterator<Item = (usize, usize)> + 's {
    std::iter::successors(parent(s, n), move |p| parent(s, *p))
        .take_while(move |p| s.node_type[*p] == 1 && s.tag(*p) != "html")
        .filter_map(move |p| Some((p, s.layout_of[p]?)))
}

/// The element whose box is the containing block of an absolutely or fixed positioned element;
/// `None` for the initial containing block (the page).
pub fn containing_block(s: &Snapshot<'_>, n: usize, l: usize) -> Option<usize> {
    let fixed = s.style(l, "position") == "fixed";
    boxed_ancestors(s, n)
        .find(|(_, pl)| contains_fixed(s, *pl) || (!fixed && s.style(*pl, "position") != "static"))
        .map(|(p, _)| p)
}

/// `d` and its DOM ancestors, nearest first, up to the document.
pub fn self_and_ancestors<'s>(s: &'s Snapshot<'_>, d: usize) -> impl Iterator<Item = usize> + 's {
    std::iter::successors(Some(d), move |p| parent(s, *p))
}

/// `a` is a DOM ancestor of `d`.
pub fn is_ancestor(s: &Snapshot<'_>, a: usize, d: usize) -> bool {
    std::iter::successors(parent(s, d), |p| parent(s, *p)).any(|p| p == a)
}

/// The integer `z-index` of an element it applies to: a positioned box, or a flex or grid item.
fn z_index(s: &Snapshot<'_>, n: usize, l: usize) -> Option<i64> {
    let z: i64 = s.style(l, "z-index").parse().ok()?;
    let item = parent(s, n)
        .and_then(|p| s.layout_of[p])
        .is_some_and(|pl| matches!(s.style(pl, "display"), "flex" | "inline-flex" | "grid" | "inline-grid"));
    (s.style(l, "position") != "static" || item).then_some(z)
}

/// The element's negative `z-index`, when it has one.
pub fn negative_z(s: &Snapshot<'_>, n: usize, l: usize) -> Option<i64> {
    z_index(s, n, l).filter(|z| *z < 0)
}

/// Forms a stacking context (CSS 2 Appendix E, and the properties that since do too).
fn stacks(s: &Snapshot<'_>, n: usize, l: usize) -> bool {
    let set = |p: &str| !matches!(s.style(l, p), "none" | "");
    z_index(s, n, l).is_some()
        || matches!(s.style(l, "position"), "fixed" | "sticky")
        || s.style(l, "opacity").parse::<f64>().is_ok_and(|o| o < 1.0)
        || contains_fixed(s, l)
        || set("clip-path")
        || set("mask-image")
        || !matches!(s.style(l, "mix-blend-mode"), "normal" | "")
        || s.style(l, "isolation") == "isolate"
}

/// The element that is the stacking context of `n`; `None` for the root's.
pub fn stacking_context(s: &Snapshot<'_>, n: usize) -> Option<usize> {
    boxed_ancestors(s, n).find(|(p, pl)| stacks(s, *p, *pl)).map(|(p, _)| p)
}

/// The stacking contexts (`None` the root's) that hold an element of negative `z-index`: they
/// must be frames of their own, for it to paint between their background and their content.
pub fn negative_hosts(s: &Snapshot<'_>) -> HashSet<Option<usize>> {
    (0..s.layout_of.len())
        .filter(|n| s.node_type[*n] == 1)
        .filter_map(|n| Some((n, s.layout_of[n]?)))
        .filter(|(n, l)| negative_z(s, *n, *l).is_some())
        .map(|(n, _)| stacking_context(s, n))
        .collect()
}
