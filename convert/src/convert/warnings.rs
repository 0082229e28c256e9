//! Warnings: added within the artifact's limits, once per element and property where they
//! would repeat, and located at the nodes they name once the document is made.

use std::collections::HashMap;

use super::Ctx;
use crate::doc::{ArtifactWarning, Node, Warning, WarningCode, MAX_WARNINGS, MAX_WARNING_MESSAGE, MAX_WARNING_NODE};
use crate::warn;

impl Ctx<'_, '_> {
    /// Adds a warning, within the artifact's limits: [`MAX_WARNINGS`] of them, messages and
    /// node names of at most 1 000 characters (paths are cut by [`Snapshot::path`]).
    pub(super) fn warn(&mut self, code: WarningCode, message: impl Into<String>, dom: usize, node: &str) {
        if self.warnings.len() >= MAX_WARNINGS {
            return;
        }
        let path = Some(self.s.path(dom));
        let message = warn::keep_end(message.into(), MAX_WARNING_MESSAGE);
        let node = Some(node.chars().take(MAX_WARNING_NODE).collect());
        let wire = ArtifactWarning { code, message, path, node, indices: None };
        self.warnings.push(Warning { wire, dom });
    }

    /// An `unsupported_css` warning about `property`, once per element and property.
    pub(super) fn css(&mut self, n: usize, name: &str, property: &'static str, message: String) {
        if self.warned.insert((n, property)) {
            self.warn(WarningCode::UnsupportedCss, message, n, name);
        }
    }

    /// A `depth_limit` warning, once per parent element: its children are alike too deep.
    pub(super) fn depth_limit(&mut self, n: usize, name: &str, message: String) {
        let parent = usize::try_from(self.s.parent[n]).unwrap_or(n);
        if self.warned.insert((parent, "depth_limit")) {
            self.warn(WarningCode::DepthLimit, message, n, name);
        }
    }
}

/// Gives each warning that names a node the child indices of the first node (in document order)
/// made from its element under that name, or from its element at all.
pub(super) fn locate(root: &Node, warnings: &mut [Warning]) {
    fn walk<'n>(n: &'n Node, at: &mut Vec<u32>, found: &mut HashMap<usize, Vec<(&'n str, Vec<u32>)>>) {
        if let Some(dom) = n.maker.dom {
            found.entry(dom).or_default().push((n.name.as_str(), at.clone()));
        }
        for (i, c) in n.children.iter().flatten().enumerate() {
            at.push(u32::try_from(i).unwrap_or(u32::MAX));
            walk(c, at, found);
            at.pop();
        }
    }
    let mut found = HashMap::new();
    walk(root, &mut Vec::new(), &mut found);
    for w in warnings.iter_mut() {
        let Some(node) = w.wire.node.as_deref().filter(|n| !n.is_empty()) else { continue };
        let made = found.get(&w.dom);
        w.wire.indices = made
            .and_then(|m| m.iter().find(|(name, _)| *name == node).or(m.first()))
            .map(|(_, at)| at.clone())
            .or_else(|| (node == root.name).then(Vec::new));
    }
}
