//! Reading Chromium's `DOMSnapshot.captureSnapshot`: its shape checked once, then its arrays
//! (nodes, layout objects, text boxes, the string table) indexed as [`Snapshot`], with the
//! look-ups the conversion makes (styles, attributes, tags, names, DOM paths, the title).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::render::STYLES;
use crate::{names, warn};

fn style_index(name: &str) -> usize {
    STYLES.iter().position(|s| *s == name).expect("a style the snapshot asks for")
}

/// Why a snapshot could not be read: Chromium's answer is not the shape it documents.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the renderer's snapshot is malformed: {0}")]
pub struct MalformedSnapshot(pub String);

/// The snapshot's main document, indexed.
pub struct Snapshot<'a> {
    strings: Vec<&'a str>,
    pub(crate) parent: Vec<i64>,
    pub(crate) node_type: Vec<i64>,
    pub(super) node_name: Vec<&'a str>,
    pub(crate) node_value: Vec<Option<&'a str>>,
    pub(super) attrs: Vec<Vec<(&'a str, &'a str)>>,
    pub(crate) children: Vec<Vec<usize>>,
    pub(crate) layout_of: Vec<Option<usize>>,
    /// Every layout object of a node: a pseudo element's generated text has its own.
    pub(super) layouts_of: Vec<Vec<usize>>,
    pub(super) current_src: HashMap<usize, &'a str>,
    pub(super) input_value: HashMap<usize, &'a str>,
    pub(crate) pseudo: HashMap<usize, &'a str>,
    l_styles: Vec<Vec<i64>>,
    pub(crate) l_bounds: Vec<[f64; 4]>,
    pub(crate) l_text: Vec<Option<&'a str>>,
    pub(super) l_paint: Vec<i64>,
    pub(super) text_boxes: HashMap<usize, Vec<([f64; 4], usize, usize)>>,
    names: names::Index,
    /// The rotated elements' layout objects, each with its Figma rotation (convert/rotation).
    pub(crate) rotations: HashMap<usize, f64>,
    /// The flex items whose size along their container's axis the cascade gives as a
    /// percentage, which the renderer asked of Chromium beside the snapshot
    /// (`code2des.percentSizes`: `render::Browser::percent_sizes`); none in a bare snapshot.
    pub(crate) percent_sized: HashSet<usize>,
}

fn ints(v: &Value) -> Vec<i64> {
    v.as_array().map(|a| a.iter().map(|x| x.as_i64().unwrap_or(-1)).collect()).unwrap_or_default()
}

fn rect(v: &Value) -> [f64; 4] {
    let f = |i: usize| v.get(i).and_then(Value::as_f64).unwrap_or(0.0);
    [f(0), f(1), f(2), f(3)]
}

/// An array member of `v`, which must be there.
fn array<'v>(v: &'v Value, what: &str) -> Result<&'v Vec<Value>, MalformedSnapshot> {
    v.as_array().ok_or_else(|| MalformedSnapshot(format!("no {what} array")))
}

/// `what` has `n` entries, one per node or layout object.
fn same_len(what: &str, len: usize, n: usize) -> Result<(), MalformedSnapshot> {
    if len == n {
        return Ok(());
    }
    Err(MalformedSnapshot(format!("{what} has {len} entries for {n}")))
}

/// The parts of a snapshot the walk indexes without looking: one node type and name per node,
/// parents before their children (so the tree has no cycle), one style row of every asked
/// style per layout object, layout and text boxes that name existing nodes.
fn check_shape(snap: &Value) -> Result<(), MalformedSnapshot> {
    let strings = array(&snap["strings"], "strings")?.len();
    let doc = snap["documents"].get(0).ok_or_else(|| MalformedSnapshot("no document".into()))?;
    let nodes = &doc["nodes"];
    array(&nodes["parentIndex"], "nodes.parentIndex")?;
    let parent = ints(&nodes["parentIndex"]);
    let n = parent.len();
    for what in ["nodeType", "nodeName", "nodeValue"] {
        same_len(&format!("nodes.{what}"), array(&nodes[what], &format!("nodes.{what}"))?.len(), n)?;
    }
    if let Some(i) = parent.iter().enumerate().position(|(i, p)| *p < -1 || *p >= i as i64) {
        return Err(MalformedSnapshot(format!("node {i}'s parent is not an earlier node")));
    }
    if ints(&nodes["nodeName"]).iter().any(|s| usize::try_from(*s).map_or(true, |s| s >= strings)) {
        return Err(MalformedSnapshot("a node name is not a string of the table".into()));
    }
    let layout = &doc["layout"];
    let l = array(&layout["nodeIndex"], "layout.nodeIndex")?.len();
    same_len("layout.bounds", array(&layout["bounds"], "layout.bounds")?.len(), l)?;
    same_len("layout.text", array(&layout["text"], "layout.text")?.len(), l)?;
    let styles = array(&layout["styles"], "layout.styles")?;
    same_len("layout.styles", styles.len(), l)?;
    // The document's own layout object has no style: an empty row.
    if styles.iter().any(|row| row.as_array().is_none_or(|r| !r.is_empty() && r.len() != STYLES.len())) {
        return Err(MalformedSnapshot(format!("a layout object has not the {} styles asked for", STYLES.len())));
    }
    if ints(&layout["nodeIndex"]).iter().any(|i| usize::try_from(*i).map_or(true, |i| i >= n)) {
        return Err(MalformedSnapshot("a layout object names no node".into()));
    }
    let tb = &doc["textBoxes"];
    if !tb.is_null() {
        let boxes = array(&tb["layoutIndex"], "textBoxes.layoutIndex")?.len();
        same_len("textBoxes.bounds", array(&tb["bounds"], "textBoxes.bounds")?.len(), boxes)?;
    }
    Ok(())
}

/// String `i` of the snapshot's table, if there is one.
fn string<'a>(strings: &[&'a str], i: i64) -> Option<&'a str> {
    usize::try_from(i).ok().and_then(|i| strings.get(i).copied())
}

/// Each node's attributes, as (name, value) pairs.
fn attributes<'a>(v: &Value, strings: &[&'a str]) -> Vec<Vec<(&'a str, &'a str)>> {
    let s = |i: i64| string(strings, i).unwrap_or("");
    v.as_array()
        .map(|a| a.iter().map(|pairs| ints(pairs).chunks(2).map(|kv| (s(kv[0]), s(kv[1]))).collect()).collect())
        .unwrap_or_default()
}

/// A rare string property (`{index, value}`), by node.
fn rare_strings<'a>(v: &Value, strings: &[&'a str]) -> HashMap<usize, &'a str> {
    let idx = ints(&v["index"]);
    let val = ints(&v["value"]);
    idx.iter().zip(val).filter_map(|(i, v)| Some((usize::try_from(*i).ok()?, string(strings, v)?))).collect()
}

/// Each node's children, in document order.
fn children(parent: &[i64]) -> Vec<Vec<usize>> {
    let mut children = vec![Vec::new(); parent.len()];
    for (i, p) in parent.iter().enumerate() {
        if let Ok(p) = usize::try_from(*p) {
            children[p].push(i);
        }
    }
    children
}

/// Each of the `n` nodes' first layout object, and all of them.
fn layout_objects(l_nodes: &[i64], n: usize) -> (Vec<Option<usize>>, Vec<Vec<usize>>) {
    let mut layout_of = vec![None; n];
    let mut layouts_of = vec![Vec::new(); n];
    for (li, ni) in l_nodes.iter().enumerate() {
        if let Some(ni) = usize::try_from(*ni).ok().filter(|ni| *ni < n) {
            layout_of[ni].get_or_insert(li);
            layouts_of[ni].push(li);
        }
    }
    (layout_of, layouts_of)
}

/// The text boxes of each layout object: its page box, and its start and length in the
/// object's text (UTF-16).
fn text_boxes(tb: &Value) -> HashMap<usize, Vec<([f64; 4], usize, usize)>> {
    let mut text_boxes: HashMap<usize, Vec<([f64; 4], usize, usize)>> = HashMap::new();
    let bounds: Vec<[f64; 4]> = tb["bounds"].as_array().map(|a| a.iter().map(rect).collect()).unwrap_or_default();
    let (starts, lens) = (ints(&tb["start"]), ints(&tb["length"]));
    for (i, li) in ints(&tb["layoutIndex"]).into_iter().enumerate() {
        let (Ok(li), Some(b)) = (usize::try_from(li), bounds.get(i)) else { continue };
        let start = starts.get(i).copied().unwrap_or(0).max(0) as usize;
        let len = lens.get(i).copied().unwrap_or(0).max(0) as usize;
        text_boxes.entry(li).or_default().push((*b, start, len));
    }
    text_boxes
}

impl<'a> Snapshot<'a> {
    pub fn parse(snap: &'a Value) -> Result<Self, MalformedSnapshot> {
        check_shape(snap)?;
        let strings: Vec<&str> =
            snap["strings"].as_array().into_iter().flatten().map(|s| s.as_str().unwrap_or("")).collect();
        let doc = &snap["documents"][0];
        let nodes = &doc["nodes"];
        let s = |i: i64| string(&strings, i);
        let parent = ints(&nodes["parentIndex"]);
        let n = parent.len();
        let node_type = ints(&nodes["nodeType"]);
        let node_name = ints(&nodes["nodeName"]).into_iter().map(|i| s(i).unwrap_or("")).collect();
        let node_value = ints(&nodes["nodeValue"]).into_iter().map(s).collect();
        let attrs = attributes(&nodes["attributes"], &strings);
        let rare = |v: &Value| rare_strings(v, &strings);
        let children = children(&parent);
        let layout = &doc["layout"];
        let (layout_of, layouts_of) = layout_objects(&ints(&layout["nodeIndex"]), n);
        let l_styles = layout["styles"].as_array().map(|a| a.iter().map(ints).collect()).unwrap_or_default();
        let l_bounds = layout["bounds"].as_array().map(|a| a.iter().map(rect).collect()).unwrap_or_default();
        let l_text = ints(&layout["text"]).into_iter().map(s).collect();
        let l_paint = ints(&layout["paintOrders"]);
        let mut parsed = Self {
            current_src: rare(&nodes["currentSourceURL"]),
            input_value: rare(&nodes["inputValue"]),
            pseudo: rare(&nodes["pseudoType"]),
            strings,
            parent,
            node_type,
            node_name,
            node_value,
            attrs,
            children,
            layout_of,
            layouts_of,
            l_styles,
            l_bounds,
            l_text,
            l_paint,
            text_boxes: text_boxes(&doc["textBoxes"]),
            names: names::Index::default(),
            rotations: HashMap::new(),
            percent_sized: snap["code2des"]["percentSizes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_u64)
                .map(|i| i as usize)
                .filter(|i| *i < n)
                .collect(),
        };
        parsed.names = names::Index::new(&parsed);
        parsed.unrotate(layout);
        Ok(parsed)
    }

    pub(crate) fn style(&self, layout: usize, name: &str) -> &'a str {
        let i = style_index(name);
        self.l_styles
            .get(layout)
            .and_then(|s| s.get(i))
            .and_then(|i| usize::try_from(*i).ok())
            .and_then(|i| self.strings.get(i).copied())
            .unwrap_or("")
    }

    pub(super) fn px(&self, layout: usize, name: &str) -> f64 {
        px(self.style(layout, name))
    }

    pub(crate) fn attr(&self, node: usize, name: &str) -> Option<&'a str> {
        self.attrs.get(node)?.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| *v)
    }

    pub(crate) fn tag(&self, node: usize) -> String {
        self.node_name[node].to_ascii_lowercase()
    }

    /// The node's tag is one of `tags` (lower case), without making a string.
    pub(crate) fn is_tag(&self, node: usize, tags: &[&str]) -> bool {
        tags.iter().any(|t| self.node_name[node].eq_ignore_ascii_case(t))
    }

    /// The layer name of element `node` (`names`).
    pub(crate) fn name(&self, node: usize) -> String {
        self.names.name(self, node)
    }

    /// `tag#id`, or `tag.first-class`, or `tag`: the element in a DOM path.
    fn label(&self, node: usize) -> String {
        let tag = match self.pseudo.get(&node) {
            Some(p) => format!("::{p}"),
            None => self.tag(node),
        };
        if let Some(id) = self.attr(node, "id").filter(|s| !s.is_empty()) {
            return format!("{tag}#{id}");
        }
        match self.attr(node, "class").and_then(|c| c.split_whitespace().next()) {
            Some(c) => format!("{tag}.{c}"),
            None => tag,
        }
    }

    /// `body > main > div.card:nth-child(2)`, from below `html`.
    pub fn path(&self, mut node: usize) -> String {
        let mut parts = Vec::new();
        while self.node_type.get(node) == Some(&3) || self.pseudo.contains_key(&node) {
            match usize::try_from(self.parent[node]) {
                Ok(p) => node = p,
                Err(_) => break,
            }
        }
        loop {
            if self.node_type[node] != 1 || self.tag(node) == "html" {
                break;
            }
            let mut part = self.label(node);
            if part.starts_with("body") {
                parts.push(part);
                break;
            }
            if let Ok(p) = usize::try_from(self.parent[node]) {
                let siblings: Vec<usize> =
                    self.children[p].iter().copied().filter(|c| self.node_type[*c] == 1).collect();
                if siblings.len() > 1 {
                    if let Some(i) = siblings.iter().position(|c| *c == node) {
                        part.push_str(&format!(":nth-child({})", i + 1));
                    }
                }
                parts.push(part);
                node = p;
            } else {
                parts.push(part);
                break;
            }
        }
        parts.reverse();
        // The artifact takes paths of up to 2 000 characters; the element is at the end.
        warn::keep_end(parts.join(" > "), 1000)
    }

    pub(super) fn title(&self) -> Option<String> {
        let t = (0..self.node_name.len()).find(|i| self.node_name[*i].eq_ignore_ascii_case("title"))?;
        let text: String = self.children[t].iter().filter_map(|c| self.node_value[*c]).collect();
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        (!text.is_empty()).then_some(text)
    }
}

/// `12.5px` → 12.5; anything else → 0.
pub(crate) fn px(s: &str) -> f64 {
    s.trim().strip_suffix("px").and_then(|n| n.trim().parse().ok()).unwrap_or(0.0)
}
