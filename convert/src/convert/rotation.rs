//! Rotated elements (issue 39, item 7): a computed `transform` that is a pure rotation
//! (`matrix(cos, sin, -sin, cos, e, f)`) becomes the node's Figma `rotation`. Chromium's boxes
//! of the element and everything in it are the bounding boxes of the turned boxes; before the
//! walk, each is put back where it lies in the element's own, unturned coordinates (from the
//! element's top-left as Chromium turned it, which is where Figma turns a node about), and
//! takes its unturned size: an element's is its offset size (`includeDOMRects`), a text
//! box's follows from its bounding box and the angle. The element's frame is then placed at
//! that top-left and turned, its content inside it as CSS lays it out.

use std::collections::HashMap;

use serde_json::Value;

use super::Snapshot;

/// An angle whose text boxes cannot be unturned: near 45°, a bounding box tells little of the
/// box's own width and height (|cos 2θ| below this).
const MIN_COS_2: f64 = 0.3;

/// CSS `matrix(a, b, c, d, e, f)` as a rotation: (cos, sin), or `None` for anything else
/// (scale, skew, 3D, none, the identity).
pub(super) fn pure_rotation(css: &str) -> Option<(f64, f64)> {
    let inner = css.trim().strip_prefix("matrix(")?.strip_suffix(')')?;
    let m: Vec<f64> = inner.split(',').map(|v| v.trim().parse::<f64>()).collect::<Result<_, _>>().ok()?;
    let [a, b, c, d, _, _] = m.as_slice() else { return None };
    let close = |x: f64, y: f64| (x - y).abs() < 1e-4;
    (close(*a, *d) && close(*b, -c) && close(a * a + b * b, 1.0) && !close(*b, 0.0)).then_some((*a, *b))
}

/// Figma's rotation of a CSS one: degrees counter-clockwise (CSS turns clockwise, y down).
fn figma_degrees((cos, sin): (f64, f64)) -> f64 {
    let deg = -sin.atan2(cos).to_degrees();
    (deg * 1000.0).round() / 1000.0
}

impl Snapshot<'_> {
    /// Finds the rotated elements and unturns the boxes of each and of its content
    /// (`rotations`: each one's layout object and Figma rotation). An element with a transform
    /// of another kind inside it, or text at an angle near 45°, stays as it is (and warned).
    pub(super) fn unrotate(&mut self, layout: &Value) {
        let offsets: Vec<Option<[f64; 2]>> = layout["offsetRects"]
            .as_array()
            .map(|a| a.iter().map(|r| Some([r.get(2)?.as_f64()?, r.get(3)?.as_f64()?])).collect())
            .unwrap_or_default();
        let mut rotations = HashMap::new();
        for n in 0..self.node_type.len() {
            let Some(l) = self.layout_of[n].filter(|_| self.node_type[n] == 1) else { continue };
            let Some(rot) = pure_rotation(self.style(l, "transform")) else { continue };
            let Some([w, h]) = offsets.get(l).copied().flatten() else { continue };
            if self.inside_rotated(n, &rotations) {
                continue;
            }
            // Text layout objects share their element's style: only elements' transforms count.
            let transformed = |d: usize| {
                d != n
                    && self.node_type[d] == 1
                    && self.layout_of[d].is_some_and(|dl| !matches!(self.style(dl, "transform"), "none" | ""))
            };
            if self.subtree(n).into_iter().any(transformed) {
                continue;
            }
            let subtree: Vec<usize> =
                self.subtree(n).into_iter().flat_map(|d| self.layouts_of[d].iter().copied()).collect();
            let has_text = subtree.iter().any(|sl| self.text_boxes.contains_key(sl));
            if has_text && (rot.0 * rot.0 - rot.1 * rot.1).abs() < MIN_COS_2 {
                continue;
            }
            self.unturn(l, &subtree, rot, [w, h], &offsets);
            rotations.insert(l, figma_degrees(rot));
        }
        self.rotations = rotations;
    }

    /// Unturns the boxes of the layout objects `subtree` of the element whose layout object is
    /// `l`, of unturned size `[w, h]`, turned by `(c, s)`.
    fn unturn(
        &mut self,
        l: usize,
        subtree: &[usize],
        (c, s): (f64, f64),
        [w, h]: [f64; 2],
        offsets: &[Option<[f64; 2]>],
    ) {
        // The element's top-left as Chromium turned it: its centre less the turned half size.
        let b = self.l_bounds[l];
        let centre = [b[0] + b[2] / 2.0, b[1] + b[3] / 2.0];
        let tl = [centre[0] - (c * w / 2.0 - s * h / 2.0), centre[1] - (s * w / 2.0 + c * h / 2.0)];
        // A page point back in the element's unturned space, from `tl`.
        let back = |p: [f64; 2]| {
            let (dx, dy) = (p[0] - tl[0], p[1] - tl[1]);
            [tl[0] + c * dx + s * dy, tl[1] - s * dx + c * dy]
        };
        let unturn = |bx: [f64; 4], size: [f64; 2]| {
            let mid = back([bx[0] + bx[2] / 2.0, bx[1] + bx[3] / 2.0]);
            [mid[0] - size[0] / 2.0, mid[1] - size[1] / 2.0, size[0], size[1]]
        };
        // A text box's own size from its bounding box: W = w|c| + h|s|, H = w|s| + h|c|.
        let (ac, as_) = (c.abs(), s.abs());
        let det = ac * ac - as_ * as_;
        let text_size =
            |bx: [f64; 4]| [((bx[2] * ac - bx[3] * as_) / det).max(0.0), ((bx[3] * ac - bx[2] * as_) / det).max(0.0)];
        for &sl in subtree {
            let size = match offsets.get(sl).copied().flatten() {
                Some(size) if self.l_text.get(sl).is_none_or(|t| t.is_none()) => size,
                _ => text_size(self.l_bounds[sl]),
            };
            self.l_bounds[sl] = unturn(self.l_bounds[sl], size);
            if let Some(boxes) = self.text_boxes.get_mut(&sl) {
                for (bx, _, _) in boxes.iter_mut() {
                    *bx = unturn(*bx, text_size(*bx));
                }
            }
        }
    }

    /// Element `n` lies inside an element already unturned.
    fn inside_rotated(&self, n: usize, rotations: &HashMap<usize, f64>) -> bool {
        let mut up = usize::try_from(self.parent[n]).ok();
        while let Some(p) = up {
            if self.layout_of[p].is_some_and(|pl| rotations.contains_key(&pl)) {
                return true;
            }
            up = usize::try_from(self.parent[p]).ok();
        }
        false
    }

    /// Node `n` and its descendants.
    fn subtree(&self, n: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut todo = vec![n];
        while let Some(d) = todo.pop() {
            out.push(d);
            todo.extend(self.children[d].iter().copied());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pure_rotation_is_read_and_anything_else_is_not() {
        let r = pure_rotation("matrix(0.866025, 0.5, -0.5, 0.866025, 0, 0)").unwrap();
        assert_eq!(figma_degrees(r), -30.0);
        assert_eq!(pure_rotation("matrix(0, 1, -1, 0, 10, 5)").map(figma_degrees), Some(-90.0));
        assert_eq!(pure_rotation("matrix(1.5, 0, 0, 1.5, 0, 0)"), None);
        assert_eq!(pure_rotation("matrix(1, 0, 0, 1, 10, 0)"), None);
        assert_eq!(pure_rotation("matrix(1, 0.5, 0, 1, 0, 0)"), None);
        assert_eq!(pure_rotation("none"), None);
    }
}
