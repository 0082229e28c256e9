//! Warnings: added within the artifact's limits, once per element and property where they
//! would repeat, and located at the nodes they name once the document is made.

use std::collections::HashMap;

use super::Ctx;
use crate::doc::{Node, Warning, MAX_WARNINGS};
use crate::warn;

impl Ctx<'_, '_> {
    /// Adds a warning, within the artifact's limits: [`MAX_WARNINGS`] of them, messages and
    /// node names of at most 1 000 characters (paths are cut by [`Snapshot::path`]).
    pub(super) fn warn(&mut self, code: &'static str, message: impl Into<String>, dom: usize, node: &str) {
        if self.warnings.len() >= MAX_WARNINGS {
            return;
        }
        let path = self.s.path(dom);
        let message = warn::keep_end(message.into(), 1000);
        let node = node.chars().take(1000).collect();
        self.warnings.push(Warning { code, message, path, node, indices: None, dom });
    }

    /// An `unsupported_css` warning about `property`, once per element and property.
    pub(super) fn css(&mut self, n: usize, name: &str, property: &'static str, message: String) {
        if self.warned.insert((n, property)) {
            self.warn("unsupported_css", message, n, name);
        }
    }

    /// A `depth_limit` warning, once per parent element: its children are alike too deep.
    pub(super) fn depth_limit(&mut self, n: usize, name: &str, message: String) {
        let parent = usize::try_from(self.s.parent[n]).unwrap_or(n);
        if self.warned.insert((parent, "depth_limit")) {
            self.warn("depth_limit", message, n, name);
        }
    }
}

/// Gives each warning that names a node the child indices of the first node (in document order)
/// made from its element under that name, or from its element at all.
pub(super) fn locate(root: &Node, warnings: &mut [Warning]) {
    fn walk<'n>(n: &'n Node, at: &mut Vec<usize>, found: &mut HashMap<usize, Vec<(&'n str, Vec<usize>)>>) {
        if let Some(dom) = n.dom {
            found.entry(dom).or_default().push((n.name.as_str(), at.clone()));
        }
        for (i, c) in n.children.iter().flatten().enumerate() {
            at.push(i);
            walk(c, at, found);
            at.pop();
        }
    }
    let mut found = HashMap::new();
    walk(root, &mut Vec::new(), &mut found);
    for w in warnings.iter_mut().filter(|w| !w.node.is_empty()) {
        let made = found.get(&w.dom);
        w.indices = made
            .and_then(|m| m.iter().find(|(name, _)| *name == w.node).or(m.first()))
            .map(|(_, at)| at.clone())
            .or_else(|| (w.node == root.name).then(Vec::new));
    }
}
