//! What the document draws otherwise than CSS does, said as warnings: each names the CSS
//! property and its computed value, once per element and property, so a designer knows which
//! layer to check and why.

use crate::convert::Snapshot;

/// Longest value quoted in a message: a computed `filter` or `transform` can be long, and a
/// message is at most 1 000 characters.
const MAX_VALUE: usize = 120;

/// `value`, cut to [`MAX_VALUE`] characters.
pub fn quote(value: &str) -> String {
    let mut out: String = value.chars().take(MAX_VALUE).collect();
    if out.len() < value.len() {
        out.push('…');
    }
    out
}

/// `text`, cut to `max` characters, keeping its end (the end of a DOM path is the element).
pub fn keep_end(text: String, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text;
    }
    let tail: String = text.chars().skip(count - (max - 2)).collect();
    format!("… {tail}")
}

/// Properties the document does not draw at all, and what is drawn instead.
const NOT_DRAWN: &[(&str, &str, &str)] = &[
    ("transform", "none", "drawn untransformed, as its bounding box"),
    ("backdrop-filter", "none", "not drawn"),
    ("clip-path", "none", "not drawn: the whole box is"),
    ("mask-image", "none", "not drawn: the whole box is"),
];

/// The approximations of an element's own box (not its text): `(property, message)`. Its
/// border styles and filter are said where they are drawn (convert/paint), a text shadow where
/// a paragraph's runs differ in it (convert/paragraph).
pub fn approximations(s: &Snapshot<'_>, l: usize, b: [f64; 4]) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for (prop, initial, what) in NOT_DRAWN {
        let v = s.style(l, prop);
        // A rotation is the node's (convert/rotation).
        if *prop == "transform" && s.rotations.contains_key(&l) {
            continue;
        }
        if !v.is_empty() && v != *initial {
            out.push((*prop, format!("{prop}: {} {what}", quote(v))));
        }
    }
    let blend = s.style(l, "background-blend-mode");
    if blend.split(',').any(|m| !matches!(m.trim(), "normal" | "")) {
        out.push(("background-blend-mode", format!("background-blend-mode: {} drawn as normal", quote(blend))));
    }
    let blend = s.style(l, "mix-blend-mode");
    if !matches!(blend, "normal" | "") && crate::convert::blend_mode(blend).is_none() {
        out.push(("mix-blend-mode", format!("mix-blend-mode: {} drawn as normal", quote(blend))));
    }
    out.extend(radii(s, l, b));
    out
}

/// Corners Figma cannot draw: elliptical ones (two radii), and percentages of a box that is not
/// square (elliptical too); each is drawn circular, with its horizontal radius. Radii making a
/// whole ellipse are an ELLIPSE (convert/walk says where they cannot be).
fn radii(s: &Snapshot<'_>, l: usize, b: [f64; 4]) -> Option<(&'static str, String)> {
    if crate::convert::full_ellipse(s, l, b) {
        return None;
    }
    ["top-left", "top-right", "bottom-right", "bottom-left"].into_iter().find_map(|corner| {
        let v = s.style(l, &format!("border-{corner}-radius"));
        let parts: Vec<&str> = v.split_whitespace().collect();
        let elliptical = match parts.as_slice() {
            [h, w] => h != w,
            [one] => {
                one.ends_with('%')
                    && one.trim_end_matches('%').parse::<f64>().is_ok_and(|p| p > 0.0)
                    && (b[2] - b[3]).abs() > 0.5
            }
            _ => false,
        };
        elliptical.then(|| ("border-radius", format!("border-{corner}-radius: {} drawn circular", quote(v))))
    })
}
