//! CSS that Figma draws with members of its own (issue 39, item 7): dashed, dotted and double
//! borders (`dashPattern`, `strokeCap`, an inner line), `filter: drop-shadow()` and `blur()`
//! and `text-shadow` as effects, `mix-blend-mode` as `blendMode`, and boxes whose radii make a
//! whole ellipse. What is read here is drawn; what is not keeps its warning (crate::warn).

use super::paint::{parse_color, split_top, take_color, UNREAD};
use super::{px, round, Snapshot};
use crate::doc::{BlendMode, Effect, EffectType, Rgba, StrokeCap, Vector};
use crate::warn;

const SIDES: [&str; 4] = ["top", "right", "bottom", "left"];

/// How a box's border lines are drawn.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Line {
    Solid,
    /// Figma's `dashPattern` and `strokeCap`.
    Dashed(Vec<f64>, Option<StrokeCap>),
    /// Two lines of a third of the width each, a third apart: the node's stroke and an inner
    /// rectangle's.
    Double,
}

/// The line of the drawn sides of a border (style not none or hidden, width above 0), and the
/// warning when it is not what CSS draws. Figma has one stroke style per node: the sides must
/// share theirs.
pub(super) fn border_line(s: &Snapshot<'_>, l: usize) -> (Line, Option<String>) {
    let drawn: Vec<(&str, f64)> = SIDES
        .iter()
        .map(|side| (s.style(l, &format!("border-{side}-style")), s.px(l, &format!("border-{side}-width"))))
        .filter(|(style, w)| !matches!(*style, "none" | "hidden" | "") && *w > 0.0)
        .collect();
    let Some(&(first, _)) = drawn.first() else { return (Line::Solid, None) };
    let width = drawn.iter().map(|(_, w)| *w).fold(0.0, f64::max);
    let approximated = |style: &str| {
        matches!(style, "dashed" | "dotted" | "double" | "groove" | "ridge" | "inset" | "outset")
            // Chromium draws a double border under 3px as a solid one.
            && !(style == "double" && width < 3.0)
    };
    let odd = drawn.iter().map(|(st, _)| *st).find(|st| approximated(st));
    if drawn.iter().any(|(st, _)| *st != first) {
        return (Line::Solid, odd.map(|st| format!("border-style: {st} drawn solid: the sides' styles differ")));
    }
    match first {
        // Chromium's dashes (StrokeData): two widths long and one apart from 3px, else three
        // long and two apart (measured against its drawing: 6 on, 3 off at 3px).
        "dashed" if width >= 3.0 => (Line::Dashed(vec![round(2.0 * width), round(width)], None), None),
        "dashed" => (Line::Dashed(vec![round(3.0 * width), round(2.0 * width)], None), None),
        // Round dots of the width, a width apart (Chromium draws square ones under 3px).
        "dotted" if width >= 3.0 => (Line::Dashed(vec![0.0, round(2.0 * width)], Some(StrokeCap::ROUND)), None),
        "dotted" => (Line::Dashed(vec![round(width), round(width)], None), None),
        "double" if width >= 3.0 => (Line::Double, None),
        st if approximated(st) => (Line::Solid, Some(format!("border-style: {st} drawn solid"))),
        _ => (Line::Solid, None),
    }
}

/// CSS `mix-blend-mode` as Figma's `blendMode`; `None` for `normal` (and anything unknown).
pub(crate) fn blend_mode(css: &str) -> Option<BlendMode> {
    Some(match css.trim() {
        "multiply" => BlendMode::MULTIPLY,
        "screen" => BlendMode::SCREEN,
        "overlay" => BlendMode::OVERLAY,
        "darken" => BlendMode::DARKEN,
        "lighten" => BlendMode::LIGHTEN,
        "color-dodge" => BlendMode::COLOR_DODGE,
        "color-burn" => BlendMode::COLOR_BURN,
        "hard-light" => BlendMode::HARD_LIGHT,
        "soft-light" => BlendMode::SOFT_LIGHT,
        "difference" => BlendMode::DIFFERENCE,
        "exclusion" => BlendMode::EXCLUSION,
        "hue" => BlendMode::HUE,
        "saturation" => BlendMode::SATURATION,
        "color" => BlendMode::COLOR,
        "luminosity" => BlendMode::LUMINOSITY,
        // Sum and sum minus one, clamped: Figma's linear dodge and linear burn.
        "plus-lighter" => BlendMode::LINEAR_DODGE,
        "plus-darker" => BlendMode::LINEAR_BURN,
        _ => return None,
    })
}

/// One shadow of `text-shadow` or `drop-shadow()`: colour, x, y, blur (no spread), the colour
/// read or drawn grey (its text then in `unread`).
fn shadow(one: &str, unread: &mut Vec<String>) -> Effect {
    let (color, rest) = take_color(one);
    let lens: Vec<f64> = rest.split_whitespace().map(px).collect();
    let color = match color.map(|c| (c, parse_color(c))) {
        Some((_, Some(c))) => c,
        Some((text, None)) => {
            unread.push(text.to_owned());
            UNREAD
        }
        None => Rgba { r: 0.0, g: 0.0, b: 0.0, a: 1.0 },
    };
    Effect {
        kind: EffectType::DROP_SHADOW,
        color: Some(color),
        offset: Some(Vector { x: lens.first().copied().unwrap_or(0.0), y: lens.get(1).copied().unwrap_or(0.0) }),
        radius: lens.get(2).copied().unwrap_or(0.0).max(0.0),
        spread: None,
    }
}

/// CSS `text-shadow` (computed) as DROP_SHADOW effects, the last painted on top (CSS paints the
/// first on top), and the colours that could not be read.
pub(super) fn text_shadows(css: &str) -> (Vec<Effect>, Vec<String>) {
    let mut unread = Vec::new();
    if matches!(css.trim(), "none" | "") {
        return (Vec::new(), unread);
    }
    let mut out: Vec<Effect> = split_top(css).into_iter().map(|one| shadow(one, &mut unread)).collect();
    out.reverse();
    (out, unread)
}

/// CSS `filter` (computed) as effects, where Figma draws it: `drop-shadow()`s as DROP_SHADOWs
/// (on a box with a background, whose shape is what casts them), or one `blur()` alone as a
/// LAYER_BLUR of twice its standard deviation (Figma's blur radius is twice the Gaussian's
/// deviation, as a shadow's). `Err` is the warning of a filter that is not drawn.
pub(super) fn filter_effects(css: &str, has_fill: bool) -> Result<(Vec<Effect>, Vec<String>), String> {
    let css = css.trim();
    if matches!(css, "none" | "") {
        return Ok((Vec::new(), Vec::new()));
    }
    let not_drawn = |why: &str| format!("filter: {} not drawn{why}", warn::quote(css));
    let functions = split_functions(css);
    let mut unread = Vec::new();
    match functions.as_slice() {
        [("blur", arg)] => {
            let sigma = px(arg);
            Ok((
                vec![Effect {
                    kind: EffectType::LAYER_BLUR,
                    color: None,
                    offset: None,
                    radius: round(2.0 * sigma),
                    spread: None,
                }],
                unread,
            ))
        }
        all if all.iter().all(|(f, _)| *f == "drop-shadow") => {
            if !has_fill {
                return Err(not_drawn(": drop-shadow() is drawn on a box with a background only"));
            }
            let mut out: Vec<Effect> = all.iter().map(|(_, arg)| shadow(arg, &mut unread)).collect();
            // Each shadow is drawn under the ones before it, as Figma paints its list.
            out.reverse();
            Ok((out, unread))
        }
        _ => Err(not_drawn(": only drop-shadow() and blur() alone are drawn")),
    }
}

/// `blur(2px) drop-shadow(…)` → `[("blur", "2px"), ("drop-shadow", "…")]`.
fn split_functions(css: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = css.trim();
    while let Some(open) = rest.find('(') {
        let name = rest[..open].trim();
        let mut depth = 0;
        let Some(close) = rest[open..].char_indices().find_map(|(i, c)| {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(open + i);
                    }
                }
                _ => {}
            }
            None
        }) else {
            break;
        };
        out.push((name, rest[open + 1..close].trim()));
        rest = rest[close + 1..].trim_start();
    }
    if !rest.trim().is_empty() {
        out.push(("", rest));
    }
    out
}

/// The box's radii make a whole ellipse: every corner's horizontal radius at least half the
/// width and vertical at least half the height (CSS scales overlapping radii down to exactly
/// that), the box not square (a square's is a circle Figma's corner radius draws).
pub(crate) fn full_ellipse(s: &Snapshot<'_>, l: usize, b: [f64; 4]) -> bool {
    if b[2] <= 0.0 || b[3] <= 0.0 || (b[2] - b[3]).abs() <= 0.5 {
        return false;
    }
    ["top-left", "top-right", "bottom-right", "bottom-left"].into_iter().all(|corner| {
        let v = s.style(l, &format!("border-{corner}-radius"));
        let parts: Vec<&str> = v.split_whitespace().collect();
        let (h, w) = match parts.as_slice() {
            [one] => (*one, *one),
            [h, w] => (*h, *w),
            _ => return false,
        };
        let len = |v: &str, side: f64| match v.strip_suffix('%') {
            Some(p) => p.parse::<f64>().unwrap_or(0.0) / 100.0 * side,
            None => px(v),
        };
        len(h, b[2]) >= b[2] / 2.0 - 0.01 && len(w, b[3]) >= b[3] / 2.0 - 0.01
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_and_shadows_read_as_figma_effects() {
        let (e, _) = filter_effects("blur(3px)", false).unwrap();
        assert_eq!((e[0].kind, e[0].radius, e[0].color.is_none()), (EffectType::LAYER_BLUR, 6.0, true));
        let (e, _) =
            filter_effects("drop-shadow(rgb(255, 0, 0) 2px 3px 4px) drop-shadow(rgb(0, 0, 0) 1px 1px 0px)", true)
                .unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[1].offset, Some(Vector { x: 2.0, y: 3.0 }));
        assert_eq!(e[1].radius, 4.0);
        assert!(filter_effects("drop-shadow(rgb(0, 0, 0) 1px 1px 0px)", false).is_err());
        assert!(filter_effects("blur(2px) grayscale(1)", true).is_err());
        assert!(filter_effects("sepia(1)", true).is_err());
        let (t, _) = text_shadows("rgb(0, 0, 255) 1px 2px 3px, rgb(255, 0, 0) 0px 0px 1px");
        assert_eq!(t[1].color, Some(Rgba { r: 0.0, g: 0.0, b: 1.0, a: 1.0 }));
        assert_eq!(blend_mode("multiply"), Some(BlendMode::MULTIPLY));
        assert_eq!(blend_mode("normal"), None);
    }
}
