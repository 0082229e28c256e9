//! Form controls: what Chromium draws in a control's user-agent shadow tree, which the snapshot
//! does not hold: the value or placeholder, a themed select's arrow, themed checkboxes and radios.

use super::paint::solid;
use super::text::font_style;
use super::{order, px, round, Container, Ctx, Snapshot};
use crate::doc::{
    FontName, LineHeight, LineHeightUnit, Maker, Node, NodeType, Paint, Rgba, ScaleMode, TextAlign, TextAutoResize,
};
use crate::names;

/// A form control's value (or its placeholder, greyed), which lives in the control's user-agent
/// shadow tree that the snapshot does not hold: one line at the content box's left, centred.
pub(super) fn input_text(cx: &mut Ctx<'_, '_>, n: usize, l: usize, b: [f64; 4], into: &mut Container) {
    let s = cx.s;
    let kind = s.attr(n, "type").unwrap_or("text").to_ascii_lowercase();
    if matches!(kind.as_str(), "checkbox" | "radio" | "hidden" | "range" | "color" | "file" | "image") {
        return;
    }
    let Some((chars, placeholder)) = shown_text(s, n, &kind) else { return };
    let name = s.name(n);
    let mut color = cx.color(n, l, "color", &name).unwrap_or(Rgba { r: 0.0, g: 0.0, b: 0.0, a: 1.0 });
    if placeholder {
        // Chromium's placeholder colour: the text colour at a little under half strength.
        color.a *= 0.46;
    }
    let size = s.px(l, "font-size");
    let line = match px(s.style(l, "line-height")) {
        v if v > 0.0 => v,
        _ => (size * 1.2).round(),
    };
    let themed = s.style(l, "appearance") != "none";
    let select = s.tag(n) == "select";
    // A themed select lays its text out 4 px past the padding (Chromium's
    // LayoutThemeDefault::PopupInternalPaddingStart).
    let left = s.px(l, "border-left-width") + s.px(l, "padding-left") + if select && themed { 4.0 } else { 0.0 };
    if select && themed {
        select_arrow(cx, n, l, b, into);
    }
    let top =
        if s.tag(n) == "textarea" { s.px(l, "border-top-width") + s.px(l, "padding-top") } else { (b[3] - line) / 2.0 };
    let css_family = s.style(l, "font-family");
    let family = cx.font(css_family, n);
    let style = font_style(s.style(l, "font-weight"), s.style(l, "font-style") == "italic");
    // A value is the user's (typed, preset, a password's length), never a layer's name; a
    // placeholder and a select's option are the page's words.
    let name = if placeholder || select { names::short(&chars) } else { "Value".to_owned() };
    cx.count += 1;
    into.nodes.push((
        order(i64::MAX),
        Node {
            kind: NodeType::TEXT,
            name,
            x: round(left),
            y: round(top),
            width: round((b[2] - 2.0 * left).max(1.0)),
            height: round(line),
            fills: Some(vec![solid(&color)]),
            characters: Some(chars),
            font_size: Some(round(size)),
            font_name: Some(FontName { family, style }),
            text_align_horizontal: Some(TextAlign::LEFT),
            text_auto_resize: Some(TextAutoResize::WIDTH_AND_HEIGHT),
            line_height: Some(LineHeight { unit: LineHeightUnit::PIXELS, value: Some(round(line)) }),
            maker: Maker { dom: Some(n), flex_item: false },
            ..Node::default()
        },
    ));
}

/// What control `n` (of input type `kind`) shows, and whether it is its placeholder: its value
/// (a password's as bullets), else its placeholder; `None` when it shows neither.
fn shown_text(s: &Snapshot<'_>, n: usize, kind: &str) -> Option<(String, bool)> {
    // A select shows its selected option (the first when none is marked).
    let selected = (s.tag(n) == "select").then(|| {
        let options: Vec<usize> = s.children[n].iter().copied().filter(|c| s.tag(*c) == "option").collect();
        let pick = options.iter().copied().find(|o| s.attr(*o, "selected").is_some()).or(options.first().copied());
        pick.map(|o| s.children[o].iter().filter_map(|t| s.node_value[*t]).collect::<String>().trim().to_owned())
    });
    let value = match selected {
        Some(v) => v.filter(|v| !v.is_empty()),
        None => s.input_value.get(&n).map(|v| (*v).to_owned()).filter(|v| !v.is_empty()),
    };
    match value {
        Some(v) if kind == "password" => Some(("•".repeat(v.chars().count()), false)),
        Some(v) => Some((v, false)),
        None => s.attr(n, "placeholder").filter(|p| !p.is_empty()).map(|p| (p.to_owned(), true)),
    }
}

/// A themed select's arrow: the theme's drawing in the last 16 px inside the right border
/// (Chromium's PopupInternalPaddingEnd: the arrow box, 15 px, and 1), as its picture.
fn select_arrow(cx: &mut Ctx<'_, '_>, n: usize, l: usize, b: [f64; 4], into: &mut Container) {
    let s = cx.s;
    let (bt, br, bb) = (s.px(l, "border-top-width"), s.px(l, "border-right-width"), s.px(l, "border-bottom-width"));
    let rect = [b[0] + b[2] - br - 16.0, b[1] + bt, 16.0, b[3] - bt - bb];
    let inside = rect[0] > b[0] && rect[3] > 0.0;
    if !inside {
        return;
    }
    let r = cx.crop(rect);
    cx.count += 1;
    into.nodes.push((
        order(i64::MAX),
        Node {
            kind: NodeType::RECTANGLE,
            name: "arrow".into(),
            x: round(rect[0] - b[0]),
            y: round(bt),
            width: 16.0,
            height: round(rect[3]),
            fills: Some(vec![Paint::Image { image_ref: r, scale_mode: Some(ScaleMode::FILL), opacity: None }]),
            maker: Maker { dom: Some(n), flex_item: false },
            ..Node::default()
        },
    ));
}

/// A checkbox or radio button of the theme's look: Chromium draws these with its own theme, in
/// no CSS the snapshot holds.
pub(super) fn is_themed_toggle(s: &Snapshot<'_>, n: usize, l: usize) -> bool {
    matches!(s.attr(n, "type").map(str::to_ascii_lowercase).as_deref(), Some("checkbox" | "radio"))
        && s.style(l, "appearance") != "none"
}

/// A themed checkbox or radio button (`is_themed_toggle`): the control is its rendered picture.
pub(super) fn themed_toggle(cx: &mut Ctx<'_, '_>, l: usize, mut node: Node) -> Node {
    let b = cx.s.l_bounds[l];
    let r = cx.crop(b);
    node.kind = NodeType::RECTANGLE;
    node.fills = Some(vec![Paint::Image { image_ref: r, scale_mode: Some(ScaleMode::FILL), opacity: None }]);
    node
}
