//! A computed CSS colour, in whatever syntax Chromium serializes it, to the sRGB Figma paints
//! with. Chromium keeps a colour in the space it was written in (CSS Color 4 and 5): `rgb()`,
//! `color(display-p3 …)` and the other predefined spaces, `lab()`, `lch()`, `oklab()`,
//! `oklch()`; relative colours and `color-mix()` are resolved into one of those. A colour
//! outside sRGB is clipped per channel, as Skia does when it draws to an sRGB surface (so the
//! document matches Chromium's own pictures).

use crate::doc::Rgba;

type Vec3 = [f64; 3];
type Mat3 = [Vec3; 3];

/// Reads a computed colour; `None` for a syntax it does not know.
pub fn parse(s: &str) -> Option<Rgba> {
    let s = s.trim().to_ascii_lowercase();
    match s.as_str() {
        "transparent" => return Some(Rgba { r: 0.0, g: 0.0, b: 0.0, a: 0.0 }),
        "black" => return Some(Rgba { r: 0.0, g: 0.0, b: 0.0, a: 1.0 }),
        "white" => return Some(Rgba { r: 1.0, g: 1.0, b: 1.0, a: 1.0 }),
        _ => {}
    }
    let (name, inner) = s.strip_suffix(')')?.split_once('(')?;
    let (args, alpha) = args(inner)?;
    let alpha = match alpha {
        Some(a) => number(&a, 1.0)?.clamp(0.0, 1.0),
        None => 1.0,
    };
    let rgb = match name.trim() {
        "rgb" | "rgba" => return legacy_rgb(&args, alpha),
        "hsl" | "hsla" => hsl(&args)?,
        "hwb" => hwb(&args)?,
        "color" => predefined(&args)?,
        "lab" => lab_to_srgb(lab_args(&args, 100.0, 125.0)?),
        "lch" => lab_to_srgb(polar(lab_args(&args, 100.0, 150.0)?)),
        "oklab" => encode(oklab_to_linear(lab_args(&args, 1.0, 0.4)?)),
        "oklch" => encode(oklab_to_linear(polar(lab_args(&args, 1.0, 0.4)?))),
        _ => return None,
    };
    Some(finish(rgb, alpha))
}

/// The arguments (as lower-case tokens) and the alpha after a `/`, or the fourth of a legacy
/// comma-separated list.
fn args(inner: &str) -> Option<(Vec<String>, Option<String>)> {
    let (main, alpha) = match inner.split_once('/') {
        Some((m, a)) => (m, Some(a.trim().to_owned())),
        None => (inner, None),
    };
    let mut toks: Vec<String> =
        main.split(|c: char| c == ',' || c.is_whitespace()).filter(|t| !t.is_empty()).map(str::to_owned).collect();
    let alpha = match alpha {
        Some(a) => Some(a),
        None if toks.len() == 4 && !toks[0].starts_with(|c: char| c.is_ascii_alphabetic()) => toks.pop(),
        None => None,
    };
    Some((toks, alpha))
}

/// A number, a percentage of `percent` (100% is `percent`), or `none` (0).
fn number(t: &str, percent: f64) -> Option<f64> {
    if t == "none" {
        return Some(0.0);
    }
    let v = match t.strip_suffix('%') {
        Some(p) => p.parse::<f64>().ok()? / 100.0 * percent,
        None => t.parse::<f64>().ok()?,
    };
    v.is_finite().then_some(v)
}

/// A hue in degrees.
fn hue(t: &str) -> Option<f64> {
    let units = [("deg", 1.0), ("grad", 0.9), ("rad", 180.0 / std::f64::consts::PI), ("turn", 360.0)];
    for (unit, k) in units {
        if let Some(v) = t.strip_suffix(unit) {
            return v.parse::<f64>().ok().filter(|v| v.is_finite()).map(|v| v * k);
        }
    }
    number(t, 1.0)
}

/// `rgb()` keeps the previous conversion exactly: 0–255 clamped, rounded.
fn legacy_rgb(args: &[String], alpha: f64) -> Option<Rgba> {
    let [r, g, b] = three(args, [255.0; 3])?;
    let c = |v: f64| round5((v / 255.0).clamp(0.0, 1.0));
    Some(Rgba { r: c(r), g: c(g), b: c(b), a: alpha })
}

fn three(args: &[String], percent: Vec3) -> Option<Vec3> {
    if args.len() != 3 {
        return None;
    }
    Some([number(&args[0], percent[0])?, number(&args[1], percent[1])?, number(&args[2], percent[2])?])
}

/// Lab-like arguments: lightness, then two numbers or (for the polar forms) chroma and hue.
fn lab_args(args: &[String], light: f64, axis: f64) -> Option<Vec3> {
    if args.len() != 3 {
        return None;
    }
    let third = match number(&args[2], axis) {
        Some(v) => v,
        None => hue(&args[2])?,
    };
    Some([number(&args[0], light)?, number(&args[1], axis)?, third])
}

/// Chroma and hue to the two axes.
fn polar([l, c, h]: Vec3) -> Vec3 {
    let h = h.to_radians();
    [l, c.max(0.0) * h.cos(), c.max(0.0) * h.sin()]
}

fn hsl(args: &[String]) -> Option<Vec3> {
    let h = hue(args.first()?)?;
    let [_, s, l] = three(&[String::from("0"), args.get(1)?.clone(), args.get(2)?.clone()], [1.0, 100.0, 100.0])?;
    let (s, l) = ((s / 100.0).clamp(0.0, 1.0), (l / 100.0).clamp(0.0, 1.0));
    let f = |n: f64| {
        let k = (n + h / 30.0).rem_euclid(12.0);
        let a = s * l.min(1.0 - l);
        l - a * (k - 3.0).min(9.0 - k).clamp(-1.0, 1.0)
    };
    Some([f(0.0), f(8.0), f(4.0)])
}

fn hwb(args: &[String]) -> Option<Vec3> {
    let h = hue(args.first()?)?;
    let (w, b) = (number(args.get(1)?, 100.0)? / 100.0, number(args.get(2)?, 100.0)? / 100.0);
    if w + b >= 1.0 {
        let grey = w / (w + b);
        return Some([grey; 3]);
    }
    let base = hsl(&[format!("{h}"), "100%".into(), "50%".into()])?;
    Some(base.map(|v| v * (1.0 - w - b) + w))
}

/// `color(<space> c1 c2 c3)`.
fn predefined(args: &[String]) -> Option<Vec3> {
    let (space, rest) = args.split_first()?;
    let c = three(rest, [1.0; 3])?;
    let linear = match space.as_str() {
        "srgb" => return Some(c),
        "srgb-linear" => c,
        "display-p3" => mul(&XYZ_TO_SRGB, mul(&P3_TO_XYZ, c.map(srgb_decode))),
        "a98-rgb" => mul(&XYZ_TO_SRGB, mul(&A98_TO_XYZ, c.map(|v| signed_pow(v, 563.0 / 256.0)))),
        "prophoto-rgb" => mul(&XYZ_TO_SRGB, mul(&D50_TO_D65, mul(&PROPHOTO_TO_XYZ50, c.map(prophoto_decode)))),
        "rec2020" => mul(&XYZ_TO_SRGB, mul(&REC2020_TO_XYZ, c.map(rec2020_decode))),
        "xyz" | "xyz-d65" => mul(&XYZ_TO_SRGB, c),
        "xyz-d50" => mul(&XYZ_TO_SRGB, mul(&D50_TO_D65, c)),
        _ => return None,
    };
    Some(encode(linear))
}

/// Clipped to sRGB's gamut and rounded as the rest of the document is.
fn finish(rgb: Vec3, alpha: f64) -> Rgba {
    let c = |v: f64| round5(if v.is_finite() { v.clamp(0.0, 1.0) } else { 0.0 });
    Rgba { r: c(rgb[0]), g: c(rgb[1]), b: c(rgb[2]), a: alpha }
}

/// A channel rounded to the 5 decimals the document writes.
pub(crate) fn round5(v: f64) -> f64 {
    (v * 100_000.0).round() / 100_000.0
}

fn mul(m: &Mat3, v: Vec3) -> Vec3 {
    m.map(|row| row[0] * v[0] + row[1] * v[1] + row[2] * v[2])
}

fn signed_pow(v: f64, e: f64) -> f64 {
    v.signum() * v.abs().powf(e)
}

fn srgb_decode(v: f64) -> f64 {
    if v.abs() <= 0.04045 {
        v / 12.92
    } else {
        v.signum() * ((v.abs() + 0.055) / 1.055).powf(2.4)
    }
}

fn srgb_encode(v: f64) -> f64 {
    if v.abs() <= 0.0031308 {
        v * 12.92
    } else {
        v.signum() * (1.055 * v.abs().powf(1.0 / 2.4) - 0.055)
    }
}

fn encode(linear: Vec3) -> Vec3 {
    linear.map(srgb_encode)
}

fn prophoto_decode(v: f64) -> f64 {
    if v.abs() <= 16.0 / 512.0 {
        v / 16.0
    } else {
        signed_pow(v, 1.8)
    }
}

fn rec2020_decode(v: f64) -> f64 {
    const A: f64 = 1.099_296_826_809_44;
    const B: f64 = 0.018_053_968_510_807;
    if v.abs() < B * 4.5 {
        v / 4.5
    } else {
        v.signum() * ((v.abs() + A - 1.0) / A).powf(1.0 / 0.45)
    }
}

/// CIE Lab (D50) to gamma-encoded sRGB, unclipped (CSS Color 4, 17).
fn lab_to_srgb([l, a, b]: Vec3) -> Vec3 {
    const K: f64 = 24389.0 / 27.0;
    const E: f64 = 216.0 / 24389.0;
    let f1 = (l + 16.0) / 116.0;
    let (f0, f2) = (a / 500.0 + f1, f1 - b / 200.0);
    let x = if f0.powi(3) > E { f0.powi(3) } else { (116.0 * f0 - 16.0) / K };
    let y = if l > K * E { f1.powi(3) } else { l / K };
    let z = if f2.powi(3) > E { f2.powi(3) } else { (116.0 * f2 - 16.0) / K };
    let xyz50 = [x * D50[0], y * D50[1], z * D50[2]];
    encode(mul(&XYZ_TO_SRGB, mul(&D50_TO_D65, xyz50)))
}

/// OKLab to linear sRGB (Ottosson's matrices, as CSS Color 4 uses).
fn oklab_to_linear([l, a, b]: Vec3) -> Vec3 {
    let lms = [
        l + 0.396_337_777_4 * a + 0.215_803_757_3 * b,
        l - 0.105_561_345_8 * a - 0.063_854_172_8 * b,
        l - 0.089_484_177_5 * a - 1.291_485_548_0 * b,
    ]
    .map(|v| v * v * v);
    mul(
        &[
            [4.076_741_662_1, -3.307_711_591_3, 0.230_969_929_2],
            [-1.268_438_004_6, 2.609_757_401_1, -0.341_319_396_5],
            [-0.004_196_086_3, -0.703_418_614_7, 1.707_614_701_0],
        ],
        lms,
    )
}

const D50: Vec3 = [0.3457 / 0.3585, 1.0, (1.0 - 0.3457 - 0.3585) / 0.3585];

const XYZ_TO_SRGB: Mat3 = [
    [3.240_969_941_904_522_6, -1.537_383_177_570_094, -0.498_610_760_293_003_4],
    [-0.969_243_636_280_879_6, 1.875_967_501_507_720_2, 0.041_555_057_407_175_59],
    [0.055_630_079_696_993_66, -0.203_976_958_888_976_52, 1.056_971_514_242_878_6],
];

const P3_TO_XYZ: Mat3 = [
    [0.486_570_948_648_216_2, 0.265_667_693_169_093_06, 0.198_217_285_234_362_5],
    [0.228_974_564_069_748_8, 0.691_738_521_836_506_4, 0.079_286_914_093_745],
    [0.0, 0.045_113_381_858_902_64, 1.043_944_368_900_976],
];

const A98_TO_XYZ: Mat3 = [
    [0.576_669_042_910_130_5, 0.185_558_237_906_546_3, 0.188_228_646_234_994_7],
    [0.297_344_975_250_536_05, 0.627_363_566_255_466_1, 0.075_291_458_493_997_8],
    [0.027_031_361_386_412_34, 0.070_688_852_535_827_23, 0.991_337_536_837_638_8],
];

const PROPHOTO_TO_XYZ50: Mat3 = [
    [0.797_766_644_900_642_3, 0.135_181_297_400_533_08, 0.031_347_734_128_392_2],
    [0.288_074_828_819_401_3, 0.711_835_234_241_873, 0.000_089_936_938_725_64],
    [0.0, 0.0, 0.825_104_602_510_460_2],
];

const REC2020_TO_XYZ: Mat3 = [
    [0.636_958_048_301_291_4, 0.144_616_903_586_208_32, 0.168_880_975_164_172_1],
    [0.262_700_212_011_267_1, 0.677_998_071_518_870_8, 0.059_301_716_469_861_96],
    [0.0, 0.028_072_693_049_087_428, 1.060_985_057_710_791],
];

/// Bradford chromatic adaptation, D50 to D65.
const D50_TO_D65: Mat3 = [
    [0.955_473_421_488_075, -0.023_098_454_948_764_71, 0.063_259_243_200_570_72],
    [-0.028_369_709_333_863_7, 1.009_995_398_081_304_1, 0.021_041_441_191_917_323],
    [0.012_314_014_864_481_998, -0.020_507_649_298_898_964, 1.330_365_926_242_124],
];

#[cfg(test)]
mod tests {
    use super::*;

    fn rgb255(s: &str) -> [i64; 4] {
        let c = parse(s).unwrap_or_else(|| panic!("{s} reads"));
        let k = |v: f64, by: f64| (v * by).round() as i64;
        [k(c.r, 255.0), k(c.g, 255.0), k(c.b, 255.0), k(c.a, 100.0)]
    }

    #[test]
    fn every_space_chromium_serializes_lands_in_srgb() {
        // Reference values: the CSS Color 4 sample code, and the same colours written as rgb().
        assert_eq!(rgb255("rgb(255, 0, 0)"), [255, 0, 0, 100]);
        assert_eq!(rgb255("rgba(0, 0, 255, 0.5)"), [0, 0, 255, 50]);
        assert_eq!(rgb255("color(srgb 0.1 0.9 0.1 / 0.5)"), [26, 230, 26, 50]);
        assert_eq!(rgb255("color(srgb-linear 0.5 0.5 0.5)"), [188, 188, 188, 100]);
        // Display P3's red is outside sRGB: clipped to sRGB red.
        assert_eq!(rgb255("color(display-p3 1 0 0)"), [255, 0, 0, 100]);
        assert_eq!(rgb255("color(display-p3 0.5 0.5 0.5)"), [128, 128, 128, 100]);
        assert_eq!(rgb255("color(rec2020 0.5 0.5 0.5)"), [139, 139, 139, 100]);
        assert_eq!(rgb255("color(a98-rgb 1 1 1)"), [255, 255, 255, 100]);
        assert_eq!(rgb255("color(prophoto-rgb 1 1 1)"), [255, 255, 255, 100]);
        assert_eq!(rgb255("color(xyz-d65 0.9505 1 1.089)"), [255, 255, 255, 100]);
        assert_eq!(rgb255("color(xyz-d50 0.9642 1 0.8251)"), [255, 255, 255, 100]);
        // lab(54.29 80.8198 69.8997) is how Chromium writes `lab(from red l a b)`.
        assert_eq!(rgb255("lab(54.29 80.8198 69.8997)"), [255, 0, 0, 100]);
        assert_eq!(rgb255("lch(54.29 106.85 40.86)"), [255, 0, 0, 100]);
        assert_eq!(rgb255("oklab(0.62796 0.22486 0.12585)"), [255, 0, 0, 100]);
        assert_eq!(rgb255("oklch(0.62796 0.25768 29.2339 / 0.5)"), [255, 0, 0, 50]);
        assert_eq!(rgb255("lab(none 0 0)"), [0, 0, 0, 100]);
        assert_eq!(rgb255("hsl(120 50% 50%)"), [64, 191, 64, 100]);
        assert_eq!(rgb255("hwb(120 10% 10%)"), [26, 230, 26, 100]);
        assert_eq!(rgb255("transparent"), [0, 0, 0, 0]);
        assert_eq!(parse("color(nonsense 1 2 3)"), None);
        assert_eq!(parse("foo(1 2 3)"), None);
        assert_eq!(parse("rgb(1 2)"), None);
    }
}
