//! Where a text's `<a href>` goes, as Figma can follow it:
//! - an absolute `http`, `https` or `mailto` URL is a URL hyperlink, as written;
//! - a fragment naming an element of the page (`#best-practices`, or the page's own address
//!   with a fragment) is a NODE hyperlink to the layer made of that element: clicked in Figma it
//!   selects that layer, as the browser scrolls to the element. The layer gets an `id` (its name
//!   in the document, "anchor-N") that the hyperlink's value names, and the plugin turns that
//!   into the Figma node's own id once the tree is built;
//! - a relative reference (`datatype-enum.html`, `../lib/ctypes.html#x`) is resolved against
//!   the page's address when the capture records one, and is then a URL hyperlink. Without an
//!   address it names nothing Figma could open: the run keeps its look and has no link;
//! - anything else (`javascript:`, `data:`, `file:`) is never a link.
//!
//! The page's address, first found of: its `<base href>` (what the browser itself resolves
//! against), the address the capture recorded (an MHTML archive's, the saving browser's
//! "saved from url" comment, SingleFile's header), its `<link rel="canonical">`, its
//! `<meta property="og:url">`. Only an `http` or `https` address counts.

use std::collections::HashMap;

use url::Url;

use super::Snapshot;
use crate::doc::{Hyperlink, HyperlinkType, Node, NodeType, MAX_COMPONENT_ID, MAX_HYPERLINK};

/// Where a NODE hyperlink points while the document is built: its fragment behind this
/// prefix, until [`anchor`] names the layer (a layer's `id` never starts with it).
const PENDING: char = '#';

/// The page's links as the walk resolves them.
pub(super) struct Links<'a> {
    /// The page's address: what relative references resolve against.
    base: Option<Url>,
    /// The page's own address without its fragment: a link to it plus a fragment stays in the
    /// page.
    page: Option<Url>,
    /// Elements by the fragment that names them: an `id`, else an `<a name>` (the first of
    /// each, as the browser finds it).
    targets: HashMap<&'a str, usize>,
}

fn web(u: Url) -> Option<Url> {
    matches!(u.scheme(), "http" | "https").then_some(u)
}

impl<'a> Links<'a> {
    /// The links of snapshot `s`, whose capture recorded `recorded` as its address, if any.
    pub(super) fn new(s: &Snapshot<'a>, recorded: Option<&str>) -> Self {
        let element = |i: &usize| s.node_type[*i] == 1;
        let first = |tag: &str, pick: &dyn Fn(usize) -> bool, attr: &str| {
            (0..s.node_type.len())
                .filter(element)
                .find(|i| s.is_tag(*i, &[tag]) && pick(*i))
                .and_then(|i| s.attr(i, attr))
        };
        let recorded = recorded.and_then(|r| Url::parse(r.trim()).ok()).and_then(web);
        let canonical = || {
            let rel = |i: usize| {
                s.attr(i, "rel")
                    .is_some_and(|r| r.split_ascii_whitespace().any(|w| w.eq_ignore_ascii_case("canonical")))
            };
            first("link", &rel, "href").and_then(|h| Url::parse(h.trim()).ok()).and_then(web)
        };
        let og = || {
            let prop = |i: usize| s.attr(i, "property").is_some_and(|p| p.eq_ignore_ascii_case("og:url"));
            first("meta", &prop, "content").and_then(|h| Url::parse(h.trim()).ok()).and_then(web)
        };
        let mut page = recorded.or_else(canonical).or_else(og);
        if let Some(p) = page.as_mut() {
            p.set_fragment(None);
        }
        // A relative <base href> resolves against the document's own address.
        let base_href = first("base", &|i| s.attr(i, "href").is_some(), "href").map(str::trim);
        let base = match base_href {
            Some(h) => Url::parse(h).ok().or_else(|| page.as_ref().and_then(|p| p.join(h).ok())).and_then(web),
            None => None,
        }
        .or_else(|| page.clone());
        let mut targets = HashMap::new();
        for i in (0..s.node_type.len()).filter(element) {
            if let Some(id) = s.attr(i, "id").filter(|v| !v.is_empty()) {
                targets.entry(id).or_insert(i);
            }
        }
        for i in (0..s.node_type.len()).filter(|i| element(i) && s.is_tag(*i, &["a"])) {
            if let Some(name) = s.attr(i, "name").filter(|v| !v.is_empty()) {
                targets.entry(name).or_insert(i);
            }
        }
        Links { base, page, targets }
    }

    /// The hyperlink of an `href`, if Figma can follow it (see the module's comment). A
    /// fragment of the page is pending until [`anchor`] names its layer.
    pub(super) fn resolve(&self, href: &str) -> Option<Hyperlink> {
        let href = href.trim();
        if let Some(fragment) = href.strip_prefix('#') {
            return Some(pending(fragment));
        }
        let lower = href.to_ascii_lowercase();
        let url = if ["http://", "https://", "mailto:"].iter().any(|scheme| lower.starts_with(scheme)) {
            // As written: an absolute URL needs no resolving, and a designer sees what the
            // page says.
            return (href.chars().count() <= MAX_HYPERLINK)
                .then(|| Hyperlink { kind: HyperlinkType::URL, value: href.to_owned() });
        } else if lower.contains(':') && !lower.starts_with(['/', '.', '?']) && Url::parse(href).is_ok() {
            // Another scheme: javascript:, data:, file:, tel:…
            return None;
        } else {
            self.base.as_ref()?.join(href).ok().and_then(web)?
        };
        let mut without = url.clone();
        without.set_fragment(None);
        if let (Some(fragment), Some(page)) = (url.fragment(), self.page.as_ref()) {
            if &without == page {
                return Some(pending(fragment));
            }
        }
        let value = String::from(url);
        (value.chars().count() <= MAX_HYPERLINK).then_some(Hyperlink { kind: HyperlinkType::URL, value })
    }

    /// The link text node `t` is in: its nearest `<a href>`, up to element `stop` (a
    /// paragraph's own) when given, if Figma can follow it.
    pub(super) fn around(&self, s: &Snapshot<'_>, t: usize, stop: Option<usize>) -> Option<Hyperlink> {
        let mut up = usize::try_from(s.parent[t]).ok();
        while let Some(p) = up {
            if s.is_tag(p, &["a"]) {
                return self.resolve(s.attr(p, "href")?);
            }
            if Some(p) == stop {
                return None;
            }
            up = usize::try_from(s.parent[p]).ok();
        }
        None
    }

    /// The element fragment `f` names: as written, else percent-decoded (the HTML standard's
    /// order). `None` also for the top of the page (`#`, `#top`), which is the document itself.
    fn target(&self, f: &str) -> Option<usize> {
        self.targets.get(f).copied().or_else(|| {
            let decoded = percent_decode(f)?;
            self.targets.get(decoded.as_str()).copied()
        })
    }

    /// A fragment that names no element and yet the top of the page.
    fn top(&self, f: &str) -> bool {
        f.is_empty() || (f.eq_ignore_ascii_case("top") && self.target(f).is_none())
    }

    /// Where a pending link goes when no layer can be named: the page's address with the
    /// fragment, when there is one.
    fn fallback(&self, f: &str) -> Option<Hyperlink> {
        let mut url = self.page.clone()?;
        url.set_fragment(Some(f));
        let value = String::from(url);
        (value.chars().count() <= MAX_HYPERLINK).then_some(Hyperlink { kind: HyperlinkType::URL, value })
    }
}

fn pending(fragment: &str) -> Hyperlink {
    Hyperlink { kind: HyperlinkType::NODE, value: format!("{PENDING}{fragment}") }
}

/// `f` percent-decoded (as a `data:` URL is: an invalid escape stays as written), when that
/// changes it and is UTF-8.
fn percent_decode(f: &str) -> Option<String> {
    String::from_utf8(super::images::percent_decode(f)).ok().filter(|d| d != f)
}

/// Every hyperlink of the document (the nodes' and their runs'), mutably.
fn hyperlinks(n: &mut Node, f: &mut impl FnMut(&mut Option<Hyperlink>)) {
    f(&mut n.hyperlink);
    for g in n.segments.iter_mut().flatten() {
        f(&mut g.hyperlink);
    }
    for c in n.children.iter_mut().flatten() {
        hyperlinks(c, f);
    }
}

/// The layer to name for element `e`: the one made of it, else the first made of something
/// inside it (a `<section id>` that paints nothing, by its heading), else the nearest made of
/// an element around it. Layers inside a component or an instance are named by that
/// component or instance: the plugin builds an instance's layers from its component's.
fn layers(root: &Node, s: &Snapshot<'_>, wanted: &HashMap<usize, ()>) -> HashMap<usize, Vec<usize>> {
    let mut own: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut inner: HashMap<usize, Vec<usize>> = HashMap::new();
    // Pre-order, with each node's path and, inside a component or an instance, that one's.
    type Path = Vec<usize>;
    let mut stack: Vec<(&Node, Path, Option<Path>)> = vec![(root, Vec::new(), None)];
    while let Some((n, path, boxed)) = stack.pop() {
        let name_by = boxed.clone().unwrap_or_else(|| path.clone());
        if let Some(d) = n.maker.dom {
            own.entry(d).or_insert_with(|| name_by.clone());
            let mut up = usize::try_from(s.parent[d]).ok();
            let mut steps = 0;
            while let Some(a) = up.filter(|_| steps < 256) {
                if wanted.contains_key(&a) {
                    inner.entry(a).or_insert_with(|| name_by.clone());
                }
                up = usize::try_from(s.parent[a]).ok();
                steps += 1;
            }
        }
        let boxed = boxed.or_else(|| matches!(n.kind, NodeType::COMPONENT | NodeType::INSTANCE).then(|| path.clone()));
        for (i, c) in n.children.as_deref().unwrap_or_default().iter().enumerate().rev() {
            let mut p = path.clone();
            p.push(i);
            stack.push((c, p, boxed.clone()));
        }
    }
    let mut out = HashMap::new();
    for &e in wanted.keys() {
        let mut found = own.get(&e).or_else(|| inner.get(&e)).cloned();
        let mut up = usize::try_from(s.parent[e]).ok();
        while found.is_none() {
            let Some(a) = up else { break };
            found = own.get(&a).cloned();
            up = usize::try_from(s.parent[a]).ok();
        }
        out.insert(e, found.unwrap_or_default());
    }
    out
}

fn at<'n>(root: &'n mut Node, path: &[usize]) -> &'n mut Node {
    path.iter().fold(root, |n, i| &mut n.children.as_mut().expect("a path the walk made")[*i])
}

/// Names the layers that pending links point to and points the links at them; a fragment
/// that names no element goes to the page's address, else is no link.
pub(super) fn anchor(root: &mut Node, s: &Snapshot<'_>, links: &Links<'_>) {
    let mut fragments: Vec<String> = Vec::new();
    hyperlinks(root, &mut |h| {
        if let Some(f) =
            h.as_ref().filter(|h| h.kind == HyperlinkType::NODE).and_then(|h| h.value.strip_prefix(PENDING))
        {
            fragments.push(f.to_owned());
        }
    });
    if fragments.is_empty() {
        return;
    }
    let wanted: HashMap<usize, ()> = fragments.iter().filter_map(|f| links.target(f)).map(|e| (e, ())).collect();
    let paths = layers(root, s, &wanted);
    let mut next = 1;
    let mut ids: HashMap<Vec<usize>, String> = HashMap::new();
    let mut by_fragment: HashMap<String, Option<Hyperlink>> = HashMap::new();
    for f in fragments {
        if by_fragment.contains_key(&f) {
            continue;
        }
        let path = match links.target(&f) {
            Some(e) => paths.get(&e).cloned(),
            None if links.top(&f) => Some(Vec::new()),
            None => None,
        };
        let link = match path {
            Some(path) => {
                let id = ids.entry(path.clone()).or_insert_with(|| {
                    let node = at(root, &path);
                    node.id.clone().unwrap_or_else(|| {
                        let id = format!("anchor-{next}");
                        next += 1;
                        debug_assert!(id.len() <= MAX_COMPONENT_ID);
                        node.id = Some(id.clone());
                        id
                    })
                });
                Some(Hyperlink { kind: HyperlinkType::NODE, value: id.clone() })
            }
            None => links.fallback(&f),
        };
        by_fragment.insert(f, link);
    }
    hyperlinks(root, &mut |h| {
        let pending = h.as_ref().filter(|h| h.kind == HyperlinkType::NODE).and_then(|h| h.value.strip_prefix(PENDING));
        if let Some(f) = pending {
            *h = by_fragment.get(f).cloned().flatten();
        }
    });
}
