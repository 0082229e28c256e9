//! Text: each line box of a text run as a TEXT node (font, size, line height, decoration,
//! case, alignment), fonts as Chromium drew them, and list markers drawn as shapes.

use super::css::text_shadows;
use super::paint::solid;
use super::{order, px, round, Container, Ctx, Snapshot, MAX_NODES};
use crate::doc::{
    DecorationLength, Effect, FontName, LetterSpacing, LetterSpacingUnit, LineHeight, LineHeightUnit, Maker, Node,
    NodeType, Rgba, StrokeAlign, TextAlign, TextAutoResize, TextCase, TextDecoration, TextDecorationStyle, WarningCode,
};
use crate::{names, warn};

/// A CSS weight and style as Figma names a font's style.
pub fn font_style(weight: &str, italic: bool) -> String {
    let w: u32 = weight.trim().parse().unwrap_or(match weight.trim() {
        "bold" => 700,
        _ => 400,
    });
    let name = match w {
        0..=149 => "Thin",
        150..=249 => "Extra Light",
        250..=349 => "Light",
        350..=449 => "Regular",
        450..=549 => "Medium",
        550..=649 => "Semi Bold",
        650..=749 => "Bold",
        750..=849 => "Extra Bold",
        _ => "Black",
    };
    match (name, italic) {
        ("Regular", true) => "Italic".into(),
        (n, true) => format!("{n} Italic"),
        (n, false) => n.into(),
    }
}

/// The first family of a CSS `font-family` list, unquoted.
fn first_family(list: &str) -> String {
    list.split(',').next().unwrap_or("").trim().trim_matches(['"', '\'']).to_owned()
}

const GENERIC_FAMILIES: &[&str] =
    &["serif", "sans-serif", "monospace", "cursive", "fantasy", "system-ui", "ui-sans-serif", "ui-monospace"];

impl Ctx<'_, '_> {
    /// The family Chromium drew the `font-family` list with. When its look-up failed (or was
    /// never made: the renderer asks for the lists of text nodes only), the list's first family
    /// is named, which may not be the one drawn: logged and warned, once per list.
    pub(super) fn font(&mut self, css_family: &str, dom: usize) -> String {
        let wanted = first_family(css_family);
        if let Some(used) = self.fonts.get(css_family) {
            return used.clone();
        }
        if self.warned_fonts.insert((css_family.to_owned(), String::new())) {
            tracing::warn!(
                font_family = css_family,
                "no platform font known for this font-family; naming its first family"
            );
            let message = format!(
                "the font drawn for font-family: {} is unknown (its look-up failed); named {wanted}, which may not be it",
                warn::quote(css_family)
            );
            let name = self.s.name(dom);
            self.warn(WarningCode::FontSubstituted, message, dom, &name);
        }
        wanted
    }
}

/// A list marker Chromium paints as a shape rather than a glyph (disc, circle, square), as
/// Blink's `ListMarker::RelativeSymbolMarkerRect` places it in the marker's fragment: a side
/// of the fragment's width less 2, 1 px in, and (3/2 of the ascent less two thirds of it) down,
/// the ascent being 3/2 (2 × side − 1) by the same formula. Answers whether it was one.
pub(super) fn symbol_marker(cx: &mut Ctx<'_, '_>, n: usize, li: usize, into: &mut Container) -> bool {
    let s = cx.s;
    let kind = s.style(li, "list-style-type");
    let symbol = match s.l_text[li].map(str::trim) {
        Some("•") => "disc",
        Some("◦") => "circle",
        Some("▪") => "square",
        _ => return false,
    };
    let Some((b, _, _)) = s.text_boxes.get(&li).and_then(|v| v.first()) else { return false };
    let side = b[2] - 2.0;
    if kind != symbol || side <= 0.0 || s.style(li, "visibility") == "hidden" {
        return false;
    }
    let Some(color) = cx.color(n, li, "color", &s.name(n)).filter(|c| c.a > 0.0) else { return true };
    // Blink draws the pixel-snapped rectangle.
    let (x, y, d) = ((b[0] + 1.0).round(), (b[1] + 0.75 * (2.0 * side - 1.0)).round(), side.round());
    let mut node = Node {
        kind: if symbol == "square" { NodeType::RECTANGLE } else { NodeType::ELLIPSE },
        name: s.name(n),
        x: round(x - into.ox),
        y: round(y - into.oy),
        width: d,
        height: d,
        maker: Maker { dom: Some(n), flex_item: false },
        ..Node::default()
    };
    if symbol == "circle" {
        // A 1 px line on the outline.
        node.fills = Some(Vec::new());
        node.strokes = Some(vec![solid(&color)]);
        node.stroke_weight = Some(1.0);
        node.stroke_align = Some(StrokeAlign::CENTER);
    } else {
        node.fills = Some(vec![solid(&color)]);
    }
    cx.count += 1;
    into.nodes.push((order(s.l_paint.get(li).copied().unwrap_or(0)), node));
    true
}

/// How a text run is drawn: alike on each of its line boxes.
pub(super) struct RunStyle {
    pub(super) color: Rgba,
    /// The family the CSS names first, and the one Chromium drew the run with.
    wanted: String,
    used: String,
    style: String,
    pub(super) font_size: f64,
    pub(super) line_height: LineHeight,
    pub(super) letter: f64,
    pub(super) decoration: Option<TextDecoration>,
    /// How the decoration is drawn, where it is not Figma's default.
    pub(super) deco: Deco,
    pub(super) case: Option<TextCase>,
    align: TextAlign,
    /// CSS `text-shadow` as computed, and as effects.
    pub(super) shadow: String,
    pub(super) effects: Vec<Effect>,
}

/// A text decoration's style, offset, thickness, colour and ink skipping (Figma's
/// `textDecorationStyle`, …), each `None` where it is Figma's default.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Deco {
    pub(super) style: Option<TextDecorationStyle>,
    pub(super) offset: Option<DecorationLength>,
    pub(super) thickness: Option<DecorationLength>,
    pub(super) color: Option<Rgba>,
    pub(super) skip_ink: Option<bool>,
}

impl RunStyle {
    /// The font as Figma names it: the family Chromium drew with, the CSS weight and style.
    pub(super) fn font_name(&self) -> FontName {
        FontName { family: self.used.clone(), style: self.style.clone() }
    }
}

/// CSS `text-align` as Figma's.
pub(super) fn text_align(css: &str) -> TextAlign {
    match css {
        "center" | "-webkit-center" => TextAlign::CENTER,
        "right" | "end" | "-webkit-right" => TextAlign::RIGHT,
        "justify" => TextAlign::JUSTIFIED,
        _ => TextAlign::LEFT,
    }
}

/// A text node's runs: one TEXT node per line box.
pub(super) fn text(cx: &mut Ctx<'_, '_>, n: usize, l: usize, into: &mut Container) {
    if cx.in_paragraph.contains(&n) {
        return;
    }
    let s = cx.s;
    let Some(boxes) = s.text_boxes.get(&l) else { return };
    let full: Vec<u16> = s.l_text[l].or(s.node_value[n]).unwrap_or("").encode_utf16().collect();
    // The text's style is its layout object's; a text node shares its parent's computed style.
    if s.style(l, "visibility") == "hidden" {
        return;
    }
    let owner = usize::try_from(s.parent[n]).unwrap_or(n);
    let Some(run) = run_style(cx, n, l, owner) else { return };
    // A text node has its parent's computed style: its z-index is the parent's, whose frame
    // holds it, so it sorts by paint order alone.
    let paint_order = order(s.l_paint.get(l).copied().unwrap_or(0));
    let hyperlink = cx.links.around(s, n, None);
    for (b, start, len) in boxes {
        let end = (start + len).min(full.len());
        let chars = String::from_utf16_lossy(&full[(*start).min(end)..end]);
        let chars = chars.trim_end_matches('\n').to_owned();
        if chars.trim().is_empty() {
            continue;
        }
        if cx.count >= MAX_NODES {
            cx.warn(
                WarningCode::NodeLimit,
                format!("over {MAX_NODES} nodes: the rest of the page is left out"),
                owner,
                "",
            );
            return;
        }
        // As Figma names a text layer: by its characters, on one line.
        let name = names::short(&chars);
        substitution(cx, &run, owner, &name);
        cx.count += 1;
        let node = Node { hyperlink: hyperlink.clone(), ..line_node(&run, *b, name, chars, n, (into.ox, into.oy)) };
        into.nodes.push((paint_order, node));
    }
}

/// Warns, once per pair, that the run's first family was not the one drawn.
pub(super) fn substitution(cx: &mut Ctx<'_, '_>, run: &RunStyle, owner: usize, name: &str) {
    if run.used != run.wanted
        && !GENERIC_FAMILIES.contains(&run.wanted.as_str())
        && cx.warned_fonts.insert((run.wanted.clone(), run.used.clone()))
    {
        let message = format!("{} is not available; drawn with {}", run.wanted, run.used);
        cx.warn(WarningCode::FontSubstituted, message, owner, name);
    }
}

/// The style of the run of text node `n` (layout object `l`, element `owner`); `None` when it
/// is transparent.
pub(super) fn run_style(cx: &mut Ctx<'_, '_>, n: usize, l: usize, owner: usize) -> Option<RunStyle> {
    let s = cx.s;
    let color = cx.color(owner, l, "color", &s.name(owner)).unwrap_or(Rgba { r: 0.0, g: 0.0, b: 0.0, a: 1.0 });
    if color.a == 0.0 {
        return None;
    }
    let css_family = s.style(l, "font-family");
    let wanted = first_family(css_family);
    let used = cx.font(css_family, owner);
    let (decoration, by) = decoration(s, n);
    let deco = match by {
        Some((el, pl)) => decoration_details(cx, el, pl, &color),
        None => Deco::default(),
    };
    let shadow = s.style(l, "text-shadow").to_owned();
    let (effects, unread) = text_shadows(&shadow);
    cx.unread(owner, &s.name(owner), "text-shadow", &unread);
    Some(RunStyle {
        color,
        wanted,
        used,
        style: font_style(s.style(l, "font-weight"), matches!(s.style(l, "font-style"), "italic" | "oblique")),
        font_size: s.px(l, "font-size"),
        line_height: match s.style(l, "line-height") {
            "normal" | "" => LineHeight { unit: LineHeightUnit::AUTO, value: None },
            v => LineHeight { unit: LineHeightUnit::PIXELS, value: Some(round(px(v))) },
        },
        letter: px(s.style(l, "letter-spacing")),
        decoration,
        deco,
        shadow,
        effects,
        case: match s.style(l, "text-transform") {
            "uppercase" => Some(TextCase::UPPER),
            "lowercase" => Some(TextCase::LOWER),
            "capitalize" => Some(TextCase::TITLE),
            _ => None,
        },
        align: text_align(s.style(l, "text-align")),
    })
}

/// The decoration of text node `n`'s run, and the element (and its layout object) that draws
/// it. Decoration is not inherited: it is drawn by the nearest inline ancestor that has it.
fn decoration(s: &Snapshot<'_>, n: usize) -> (Option<TextDecoration>, Option<(usize, usize)>) {
    let mut up = usize::try_from(s.parent[n]).ok();
    while let Some(p) = up {
        let Some(pl) = s.layout_of[p] else { break };
        let line = s.style(pl, "text-decoration-line");
        let decoration = if line.contains("underline") {
            Some(TextDecoration::UNDERLINE)
        } else if line.contains("line-through") {
            Some(TextDecoration::STRIKETHROUGH)
        } else {
            None
        };
        if decoration.is_some() || line.contains("overline") {
            return (decoration, Some((p, pl)));
        }
        if !s.style(pl, "display").starts_with("inline") {
            break;
        }
        up = usize::try_from(s.parent[p]).ok();
    }
    (None, None)
}

/// How element `el` (layout object `pl`) draws its decoration, as Figma's members; what Figma
/// cannot draw is warned once per element: an overline, a dashed or double line.
fn decoration_details(cx: &mut Ctx<'_, '_>, el: usize, pl: usize, text_color: &Rgba) -> Deco {
    let s = cx.s;
    let name = s.name(el);
    let line = s.style(pl, "text-decoration-line");
    if line.contains("overline") {
        let message =
            format!("text-decoration-line: {} drawn without its overline (Figma has none)", warn::quote(line));
        cx.css(el, &name, "text-decoration-line", message);
    }
    let style = match s.style(pl, "text-decoration-style") {
        "wavy" => Some(TextDecorationStyle::WAVY),
        "dotted" => Some(TextDecorationStyle::DOTTED),
        v @ ("dashed" | "double") => {
            let drawn = if v == "dashed" { "dotted" } else { "solid" };
            let message = format!("text-decoration-style: {v} drawn {drawn} (Figma has no {v} line)");
            cx.css(el, &name, "text-decoration-style", message);
            (v == "dashed").then_some(TextDecorationStyle::DOTTED)
        }
        _ => None,
    };
    let length = |v: &str| {
        v.trim().ends_with("px").then(|| DecorationLength { unit: LineHeightUnit::PIXELS, value: Some(round(px(v))) })
    };
    let color = cx.color(el, pl, "text-decoration-color", &name).filter(|c| c != text_color);
    Deco {
        style,
        offset: length(s.style(pl, "text-underline-offset")),
        thickness: length(s.style(pl, "text-decoration-thickness")),
        color,
        skip_ink: (s.style(pl, "text-decoration-skip-ink") == "none").then_some(false),
    }
}

/// The TEXT node of the line box `b` (page coordinates) of text node `n`, in a container whose
/// origin is `origin`.
fn line_node(run: &RunStyle, b: [f64; 4], name: String, chars: String, n: usize, origin: (f64, f64)) -> Node {
    // Chromium's box is the glyphs' (ascent to descent); Figma's text box is the line box,
    // the half-leading above and below them (negative when the line is the shorter: Figma
    // then still centres the glyphs on it, so the box must be centred too).
    let (y, h) = match run.line_height.value {
        Some(lh) if lh > 0.0 => (b[1] - (lh - b[3]) / 2.0, lh),
        _ => (b[1], b[3]),
    };
    Node {
        kind: NodeType::TEXT,
        name,
        x: round(b[0] - origin.0),
        y: round(y - origin.1),
        width: round(b[2]),
        height: round(h),
        fills: Some(vec![solid(&run.color)]),
        characters: Some(chars),
        font_size: Some(round(run.font_size)),
        font_name: Some(run.font_name()),
        text_align_horizontal: Some(run.align),
        // One line box per node: its width follows the glyphs, so no line wraps in Figma.
        text_auto_resize: Some(TextAutoResize::WIDTH_AND_HEIGHT),
        line_height: Some(run.line_height.clone()),
        letter_spacing: (run.letter != 0.0)
            .then_some(LetterSpacing { unit: LetterSpacingUnit::PIXELS, value: round(run.letter) }),
        text_decoration: run.decoration,
        text_decoration_style: run.decoration.and(run.deco.style),
        text_decoration_offset: run.decoration.and(run.deco.offset.clone()),
        text_decoration_thickness: run.decoration.and(run.deco.thickness.clone()),
        text_decoration_color: run.decoration.and(run.deco.color.clone()),
        text_decoration_skip_ink: run.decoration.and(run.deco.skip_ink),
        effects: (!run.effects.is_empty()).then(|| run.effects.clone()),
        text_case: run.case,
        maker: Maker { dom: Some(n), flex_item: false },
        ..Node::default()
    }
}
