//! CSS `linear-gradient(…)` as a Figma linear gradient: the angle, the stops and their
//! positions, the transform in the node's unit square.

use super::paint::{split_top, take_color, UNREAD};
use super::parse_color;
use crate::doc::{ColorStop, Paint, Rgba};

/// CSS `linear-gradient(…)` (computed) for a box of `w`×`h` → a Figma linear gradient.
pub fn parse_linear_gradient(s: &str, w: f64, h: f64) -> Option<Paint> {
    linear_gradient(s, w, h).map(|(p, _)| p)
}

/// A linear gradient, and the stop colours that could not be read (drawn grey).
pub(super) fn linear_gradient(s: &str, w: f64, h: f64) -> Option<(Paint, Vec<String>)> {
    let inner = s.trim().strip_prefix("linear-gradient(")?.strip_suffix(')')?;
    let mut args = split_top(inner);
    let mut angle = 180.0f64;
    if let Some(a) = args.first().and_then(|first| direction(first.trim(), w, h)) {
        angle = a;
        args.remove(0);
    }
    let rad = angle.to_radians();
    let (sin, cos) = (rad.sin(), rad.cos());
    // The gradient line's length for this box and angle (CSS Images 3, 3.1.1).
    let len = (w * sin).abs() + (h * cos).abs();
    if len <= 0.0 || args.is_empty() {
        return None;
    }
    let (mut stops, unread) = color_stops(&args, len);
    if stops.is_empty() {
        return None;
    }
    spread_positions(&mut stops);
    let paint = Paint::GradientLinear {
        gradient_transform: transform(w, h, sin, cos, len),
        gradient_stops: stops
            .into_iter()
            .map(|(color, p)| ColorStop { position: round4(p.unwrap_or(0.0).clamp(0.0, 1.0)), color })
            .collect(),
        opacity: None,
    };
    Some((paint, unread))
}

/// The gradient's direction in degrees, when its first argument is one (an angle, or a side or
/// corner to go to in a box of `w`×`h`).
fn direction(f: &str, w: f64, h: f64) -> Option<f64> {
    if let Some(d) = f.strip_suffix("deg") {
        d.parse().ok()
    } else if let Some(t) = f.strip_suffix("turn") {
        t.parse::<f64>().ok().map(|t| t * 360.0)
    } else if let Some(r) = f.strip_suffix("rad") {
        r.parse::<f64>().ok().map(f64::to_degrees)
    } else {
        Some(match f {
            "to top" => 0.0,
            "to right" => 90.0,
            "to bottom" => 180.0,
            "to left" => 270.0,
            "to top right" | "to right top" => (w / h).atan().to_degrees(),
            "to bottom right" | "to right bottom" => 180.0 - (w / h).atan().to_degrees(),
            "to bottom left" | "to left bottom" => 180.0 + (w / h).atan().to_degrees(),
            "to top left" | "to left top" => 360.0 - (w / h).atan().to_degrees(),
            _ => return None,
        })
    }
}

/// The colour stops (their positions on a gradient line `len` px long, where given), and the
/// colours that could not be read.
fn color_stops(args: &[&str], len: f64) -> (Vec<(Rgba, Option<f64>)>, Vec<String>) {
    let mut stops: Vec<(Rgba, Option<f64>)> = Vec::new();
    let mut unread = Vec::new();
    for a in args {
        // A stop without a colour is an interpolation hint: left out, the colours run evenly.
        let (Some(text), rest) = take_color(a) else { continue };
        let color = parse_color(text).unwrap_or_else(|| {
            unread.push(text.to_owned());
            UNREAD
        });
        let pos = rest.split_whitespace().next().and_then(|p| {
            p.strip_suffix('%')
                .and_then(|v| v.parse::<f64>().ok())
                .map(|v| v / 100.0)
                .or_else(|| p.strip_suffix("px").and_then(|v| v.parse::<f64>().ok()).map(|v| v / len))
        });
        stops.push((color, pos));
    }
    (stops, unread)
}

/// Missing positions: the first 0, the last 1, the others spread evenly between known ones.
fn spread_positions(stops: &mut [(Rgba, Option<f64>)]) {
    let n = stops.len();
    if stops[0].1.is_none() {
        stops[0].1 = Some(0.0);
    }
    if stops[n - 1].1.is_none() {
        stops[n - 1].1 = Some(1.0);
    }
    let mut i = 0;
    while i < n {
        if stops[i].1.is_some() {
            i += 1;
            continue;
        }
        let prev = i - 1;
        let next = (i..n).find(|j| stops[*j].1.is_some()).unwrap_or(n - 1);
        let (a, b) = (stops[prev].1.unwrap_or(0.0), stops[next].1.unwrap_or(1.0));
        for (k, stop) in stops.iter_mut().enumerate().take(next).skip(i) {
            stop.1 = Some(a + (b - a) * (k - prev) as f64 / (next - prev) as f64);
        }
        i = next;
    }
}

/// The gradient transform for a box of `w`×`h`, the line at the angle of sine `sin` and
/// cosine `cos`, `len` px long.
fn transform(w: f64, h: f64, sin: f64, cos: f64, len: f64) -> [[f64; 3]; 2] {
    // t(u, v) for the unit square: the projection on the gradient line, 0 at its start.
    let a0 = w * sin / len;
    let b0 = -h * cos / len;
    let c0 = 0.5 - (a0 + b0) / 2.0;
    // A second row perpendicular to the first, so the transform is invertible.
    let (a1, b1) = (-b0, a0);
    let c1 = 0.5 - (a1 + b1) / 2.0;
    [[round4(a0), round4(b0), round4(c0)], [round4(a1), round4(b1), round4(c1)]]
}

/// To 4 decimals, as gradient transforms and stops are written.
fn round4(v: f64) -> f64 {
    (v * 10_000.0).round() / 10_000.0
}

/// A paint made for the box `from` (page coordinates), for a node whose box is `to`: a gradient
/// keeps its page position and size (the transform works in the node's unit square).
pub(super) fn stretch_paint(p: Paint, from: [f64; 4], to: [f64; 4]) -> Paint {
    match p {
        Paint::GradientLinear { gradient_transform: t, gradient_stops, opacity } if from[2] > 0.0 && from[3] > 0.0 => {
            // Unit square of `to` → of `from`: u = (x0' + u' w') / w - x0 / w, likewise v.
            let (su, sv) = (to[2] / from[2], to[3] / from[3]);
            let (du, dv) = ((to[0] - from[0]) / from[2], (to[1] - from[1]) / from[3]);
            let row = |[a, b, c]: [f64; 3]| [round4(a * su), round4(b * sv), round4(a * du + b * dv + c)];
            Paint::GradientLinear { gradient_transform: [row(t[0]), row(t[1])], gradient_stops, opacity }
        }
        p => p,
    }
}
