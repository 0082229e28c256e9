//! CSS that Figma draws with members of its own (issue 39, item 7): dashed, dotted and double
//! borders (`dashPattern`, `strokeCap`, an inner line), `filter: drop-shadow()` and `blur()`
//! and `text-shadow` as effects, `mix-blend-mode` as `blendMode`, and boxes whose radii make a
//! whole ellipse. What is read here is drawn; what is not keeps its warning (crate::warn).

use super::paint::{parse_color, split_top, take_color, UNREAD};
use super::{px, round, Snapshot};
use crate::color::round5;
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
    let odd = drawn.iter().map(|(st, _)| *st).find(|st| approximated(st) && !shaded(s, l, st));
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
        // Solid lines, each side in its shade (`shade`).
        st if shaded(s, l, st) => (Line::Solid, None),
        st if approximated(st) => (Line::Solid, Some(format!("border-style: {st} drawn solid"))),
        _ => (Line::Solid, None),
    }
}

/// Whether a border of `style` is drawn solid with each side in its shade (`shade`): `inset`
/// and `outset`, but on a table or a cell whose borders collapse, where CSS draws them as
/// `ridge` and `groove` (two shades a side, which stay approximated).
pub(super) fn shaded(s: &Snapshot<'_>, l: usize, style: &str) -> bool {
    let collapsed = s.style(l, "border-collapse") == "collapse"
        && matches!(s.style(l, "display"), "table" | "inline-table" | "table-cell");
    matches!(style, "inset" | "outset") && !collapsed
}

/// The colour Chromium draws side `side` (0 top, 1 right, 2 bottom, 3 left) of an `inset` or
/// `outset` border of colour `c` in, as measured against Chromium 156: the top and left of an
/// inset border are the dark shade, the bottom and right the light one (outset the other way
/// round). The dark shade is Blink's `Color::Dark()` (the largest channel less 0.33, the others
/// in proportion) and the light one the colour itself where it is light (luminance from
/// 0.835: `#ececec` up) or `Color::Light()` (the largest channel plus 0.33, black `#545454`);
/// a colour as dark as `#202020` or darker takes `Light()` and `Light()` twice instead (black:
/// `#545454` and `#a8a8a8`, PostgreSQL's tables). Channels are truncated to 8 bits, as Blink's.
pub(super) fn shade(style: &str, side: usize, c: &Rgba) -> Rgba {
    let eight = |v: f64| (v.clamp(0.0, 1.0) * 255.0).round() / 255.0;
    let ch = [eight(c.r), eight(c.g), eight(c.b)];
    let scaled = |ch: [f64; 3], m: f64| ch.map(|x| (m * x * 255.999_97).floor() / 255.0);
    let max = |ch: [f64; 3]| ch[0].max(ch[1]).max(ch[2]);
    let light = |ch: [f64; 3]| match max(ch) {
        0.0 => [84.0 / 255.0; 3],
        v => scaled(ch, (v + 0.33).min(1.0) / v),
    };
    let dark = |ch: [f64; 3]| match max(ch) {
        0.0 => ch,
        v => scaled(ch, ((v - 0.33) / v).max(0.0)),
    };
    let linear = |v: f64| if v <= 0.040_45 { v / 12.92 } else { ((v + 0.055) / 1.055).powf(2.4) };
    let luminance = 0.2126 * linear(ch[0]) + 0.7152 * linear(ch[1]) + 0.0722 * linear(ch[2]);
    // Between #202020's luminance (0.01444) and #212121's (0.01520).
    let (darker, lighter) = if luminance < 0.0148 {
        (light(ch), light(light(ch)))
    } else {
        (dark(ch), if luminance >= 0.835 { ch } else { light(ch) })
    };
    let [r, g, b] = if (side == 0 || side == 3) == (style == "inset") { darker } else { lighter };
    Rgba { r: round5(r), g: round5(g), b: round5(b), a: c.a }
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

/// The box's radii make a whole ellipse: once CSS has scaled them (one factor for all, where
/// two radii on a side would overlap: CSS Backgrounds 3, "Overlapping Curves"), every corner's
/// horizontal radius is half the width and its vertical half the height. `50%` does; `999px`
/// does not (scaled to half the shorter side, it is a pill). Not on a square box: a circle is
/// what Figma's corner radius draws.
pub(crate) fn full_ellipse(s: &Snapshot<'_>, l: usize, b: [f64; 4]) -> bool {
    if b[2] <= 0.0 || b[3] <= 0.0 || (b[2] - b[3]).abs() <= 0.5 {
        return false;
    }
    let len = |v: &str, side: f64| match v.strip_suffix('%') {
        Some(p) => p.parse::<f64>().unwrap_or(0.0) / 100.0 * side,
        None => px(v),
    };
    // Each corner's horizontal and vertical radius as given: top-left, top-right, bottom-right,
    // bottom-left.
    let mut r = [(0.0, 0.0); 4];
    for (i, corner) in ["top-left", "top-right", "bottom-right", "bottom-left"].into_iter().enumerate() {
        let v = s.style(l, &format!("border-{corner}-radius"));
        r[i] = match v.split_whitespace().collect::<Vec<_>>().as_slice() {
            [one] => (len(one, b[2]), len(one, b[3])),
            [h, w] => (len(h, b[2]), len(w, b[3])),
            _ => return false,
        };
    }
    let sides = [(r[0].0 + r[1].0, b[2]), (r[1].1 + r[2].1, b[3]), (r[3].0 + r[2].0, b[2]), (r[0].1 + r[3].1, b[3])];
    let f = sides.iter().filter(|(sum, _)| *sum > 0.0).map(|(sum, side)| side / sum).fold(1.0, f64::min);
    r.iter().all(|(h, v)| h * f >= b[2] / 2.0 - 0.01 && v * f >= b[3] / 2.0 - 0.01)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each colour's two shades as Chromium 156 drew a 3px `inset` border of it (its top, then
    /// its bottom), read from its screenshot.
    #[test]
    fn inset_and_outset_shades_are_chromium_s() {
        let drawn: [(u32, [u8; 3], [u8; 3]); 14] = [
            (0x000000, [84, 84, 84], [168, 168, 168]),
            (0x202020, [116, 116, 116], [200, 200, 200]),
            (0x212121, [0, 0, 0], [117, 117, 117]),
            (0x404040, [0, 0, 0], [148, 148, 148]),
            (0x808080, [44, 44, 44], [212, 212, 212]),
            (0xcccccc, [120, 120, 120], [255, 255, 255]),
            (0xebebeb, [151, 151, 151], [255, 255, 255]),
            (0xececec, [152, 152, 152], [236, 236, 236]),
            (0xffffff, [171, 171, 171], [255, 255, 255]),
            (0x0000ff, [0, 0, 171], [0, 0, 255]),
            (0x1a1a80, [8, 8, 44], [43, 43, 212]),
            (0xff0000, [171, 0, 0], [255, 0, 0]),
            (0x336699, [23, 46, 69], [79, 158, 238]),
            (0x008000, [0, 44, 0], [0, 212, 0]),
        ];
        let bytes = |c: Rgba| [c.r, c.g, c.b].map(|v| (v * 255.0).round() as u8);
        for (hex, top, bottom) in drawn {
            let [r, g, b] = [hex >> 16, (hex >> 8) & 255, hex & 255].map(|v| f64::from(v) / 255.0);
            let c = Rgba { r, g, b, a: 1.0 };
            assert_eq!((bytes(shade("inset", 0, &c)), bytes(shade("inset", 2, &c))), (top, bottom), "#{hex:06x}");
            // Outset the other way round; left as top, right as bottom.
            assert_eq!((bytes(shade("outset", 3, &c)), bytes(shade("outset", 1, &c))), (bottom, top), "#{hex:06x}");
        }
        assert_eq!(shade("inset", 0, &Rgba { r: 0.0, g: 0.0, b: 0.0, a: 0.5 }).a, 0.5, "alpha kept");
    }

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
