//! Styles (issue 39, item 3): the colours and the type a document draws become its PAINT and
//! TEXT styles, listed on the root (`styles`) and named by role, as a designer names them
//! ("Text/Heading 1", "Text/Body", "Color/Link"); every node and segment drawn in one refers
//! to it (`fillStyleId`, `textStyleId`), so a colour changed once changes everywhere.
//!
//! Every one, not only those used three times or more, which the issue first set: a file
//! lints clean only when no layer's fill or type is loose (what Figma's Design Lint flags),
//! the peers make a local style of every colour and type they find, and on a short page the
//! rule of three left a third of the layers loose (the form: 11 of 27, its heading, its error
//! text, its page's gradient). How often a value is used still orders them: a role's plain
//! name ("Text/Body") goes to its commonest, the rarer are named by their value
//! ("Text/Body 12/18", "Color/Text #666666": `name`).

use std::collections::{BTreeMap, HashMap, HashSet};

use super::Snapshot;
use crate::doc::{
    FontName, LetterSpacing, LineHeight, Node, NodeType, Paint, Style, StyleType, TextCase, TextDecoration, TextSegment,
};

/// A style in the making: the roles it is used in (how often each), and what it is.
struct Candidate {
    roles: BTreeMap<String, usize>,
    style: Style,
    uses: usize,
}

impl Candidate {
    /// The role it is used in most (the first by name among equals).
    fn role(&self) -> String {
        let most = self.roles.values().max().copied().unwrap_or(0);
        self.roles.iter().find(|(_, n)| **n == most).map(|(r, _)| r.clone()).unwrap_or_default()
    }
}

/// The type of a text run, as a TEXT style holds it.
type TextKey = (FontName, f64, LineHeight, LetterSpacing, TextCase, TextDecoration);

/// Finds the shared colours and type of `root`'s tree and points the nodes at them.
pub(super) fn share(s: &Snapshot<'_>, root: &mut Node) {
    let mut found: BTreeMap<String, Candidate> = BTreeMap::new();
    visit(root, &mut |n| collect(s, n, &mut found));
    let ids = name(found);
    if ids.is_empty() {
        return;
    }
    visit(root, &mut |n| refer(n, &ids));
    let mut styles: Vec<Style> = ids.into_values().collect();
    // In the order they were named: the most used first.
    styles.sort_by_key(|st| st.id.trim_start_matches("S:").parse::<usize>().unwrap_or(usize::MAX));
    root.styles = Some(styles);
}

/// Every node, depth first.
pub(super) fn visit(n: &mut Node, f: &mut impl FnMut(&mut Node)) {
    f(n);
    for c in n.children.iter_mut().flatten() {
        visit(c, f);
    }
}

/// A list of fills as a paint style's key: solid colours and gradients, which a paint style
/// holds as they are (a gradient's transform is the node's unit square, so it fits any node);
/// not an image, which is the picture's own.
fn paint_key(fills: &[Paint]) -> Option<String> {
    let paints = !fills.is_empty() && fills.iter().all(|p| !matches!(p, Paint::Image { .. }));
    paints.then(|| serde_json::to_string(fills).ok()).flatten()
}

fn text_key(k: &TextKey) -> String {
    serde_json::to_string(k).unwrap_or_default()
}

/// Counts one use of a colour or a type, under its role.
fn count(found: &mut BTreeMap<String, Candidate>, key: String, role: String, style: impl FnOnce() -> Style) {
    let c = found.entry(key).or_insert_with(|| Candidate { roles: BTreeMap::new(), style: style(), uses: 0 });
    c.uses += 1;
    *c.roles.entry(role).or_insert(0) += 1;
}

fn paint_style(fills: &[Paint]) -> Style {
    Style { paints: Some(fills.to_vec()), ..blank(StyleType::PAINT) }
}

fn text_style(k: &TextKey) -> Style {
    Style {
        font_name: Some(k.0.clone()),
        font_size: Some(k.1),
        line_height: Some(k.2.clone()),
        letter_spacing: Some(k.3.clone()),
        text_case: Some(k.4),
        text_decoration: Some(k.5),
        ..blank(StyleType::TEXT)
    }
}

fn blank(kind: StyleType) -> Style {
    Style {
        id: String::new(),
        name: String::new(),
        kind,
        paints: None,
        font_name: None,
        font_size: None,
        line_height: None,
        letter_spacing: None,
        text_case: None,
        text_decoration: None,
    }
}

/// The uses one node makes: its fill, and a TEXT node's type (of each segment, when it has
/// them).
fn collect(s: &Snapshot<'_>, n: &mut Node, found: &mut BTreeMap<String, Candidate>) {
    if n.kind == NodeType::TEXT {
        let role = text_role(s, n);
        for (fills, key, link) in runs(n) {
            let run_role = if link { "Link".to_owned() } else { run_role(&role, &key) };
            if let Some(k) = paint_key(&fills) {
                let color = if link { "Link" } else { "Text" };
                count(found, format!("P{k}"), color.to_owned(), || paint_style(&fills));
            }
            count(found, format!("T{}", text_key(&key)), run_role, || text_style(&key));
        }
    } else if let Some(k) = n.fills.as_deref().and_then(paint_key) {
        let fills = n.fills.clone().unwrap_or_default();
        count(found, format!("P{k}"), "Background".to_owned(), || paint_style(&fills));
    }
}

/// A segment of one character is the room an inline element's edge makes (its letter
/// spacing is the layout's, not the type's): it takes no style, which would set the spacing.
fn styled(g: &TextSegment) -> bool {
    g.end > g.start + 1
}

/// A TEXT node's runs: (fills, type, is a link) of the node, or of each of its segments.
fn runs(n: &Node) -> Vec<(Vec<Paint>, TextKey, bool)> {
    if let Some(segs) = &n.segments {
        let styled = segs.iter().filter(|g| styled(g));
        return styled.map(|g| (g.fills.clone(), segment_key(g), g.hyperlink.is_some())).collect();
    }
    let key = node_key(n);
    vec![(n.fills.clone().unwrap_or_default(), key, n.hyperlink.is_some())]
}

fn segment_key(g: &TextSegment) -> TextKey {
    (g.font_name.clone(), g.font_size, g.line_height.clone(), g.letter_spacing.clone(), g.text_case, g.text_decoration)
}

fn node_key(n: &Node) -> TextKey {
    (
        n.font_name.clone().unwrap_or(FontName { family: "Inter".into(), style: "Regular".into() }),
        n.font_size.unwrap_or(12.0),
        n.line_height.clone().unwrap_or(LineHeight { unit: crate::doc::LineHeightUnit::AUTO, value: None }),
        n.letter_spacing.clone().unwrap_or(LetterSpacing { unit: crate::doc::LetterSpacingUnit::PIXELS, value: 0.0 }),
        n.text_case.unwrap_or(TextCase::ORIGINAL),
        n.text_decoration.unwrap_or(TextDecoration::NONE),
    )
}

/// What a TEXT node's element is to a designer: a heading, a label, code, a caption, body.
fn text_role(s: &Snapshot<'_>, n: &Node) -> String {
    let mut el = n.maker.dom;
    // A text run's node is its text node: its element is its parent.
    if let Some(d) = el.filter(|d| s.node_type[*d] == 3) {
        el = usize::try_from(s.parent[d]).ok();
    }
    let Some(el) = el else { return "Body".into() };
    let tag = s.tag(el);
    match tag.as_str() {
        "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => format!("Heading {}", &tag[1..]),
        "a" => "Link".into(),
        "code" | "pre" | "kbd" | "samp" | "tt" => "Code".into(),
        "button" | "label" | "legend" | "th" | "dt" => "Label".into(),
        "figcaption" | "caption" | "small" => "Caption".into(),
        "blockquote" | "q" => "Quote".into(),
        _ => "Body".into(),
    }
}

/// A run's role: monospace is code, whatever its element; body text in another weight or
/// slope is named by it ("Body Bold", "Body Italic"); else its paragraph's.
fn run_role(role: &str, key: &TextKey) -> String {
    if key.0.family.to_ascii_lowercase().contains("mono") {
        "Code".into()
    } else if role == "Body" && key.0.style != "Regular" {
        format!("Body {}", key.0.style)
    } else {
        role.to_owned()
    }
}

/// The styles named by role: a role's commonest takes its plain name ("Text/Body"), each
/// rarer one the name with what sets it apart, its value ("Color/Text #666666", "Text/Body
/// 12/18", then its style, its family, its decoration, case and spacing as far as needed:
/// "Text/Code 15.44/18.53 Bold"). A name made of the value stays the value's from page to
/// page, where a number ("Text/Body 2") went to whichever style came second; so the plugin,
/// which reuses a style of the same name and value, finds it again. A number is the last
/// resort (two gradients of one role).
fn name(found: BTreeMap<String, Candidate>) -> HashMap<String, Style> {
    let mut kept: Vec<(String, Candidate)> = found.into_iter().collect();
    // Most used first, so a role's first name goes to its commonest.
    kept.sort_by(|a, b| b.1.uses.cmp(&a.1.uses).then_with(|| a.0.cmp(&b.0)));
    let mut taken: HashSet<String> = HashSet::new();
    let mut out = HashMap::new();
    for (i, (key, c)) in kept.into_iter().enumerate() {
        let group = if c.style.kind == StyleType::PAINT { "Color" } else { "Text" };
        let base = format!("{group}/{}", c.role());
        let mut names = std::iter::once(base.clone())
            .chain(details(&c.style).into_iter().map(|d| format!("{base} {d}")))
            .chain((2..).map(|k| format!("{base} {k}")));
        let name = names.find(|n| !taken.contains(n)).unwrap_or(base);
        taken.insert(name.clone());
        out.insert(key, Style { id: format!("S:{}", i + 1), name, ..c.style });
    }
    out
}

/// What tells a style apart from others of its role, each more than the one before: a colour's
/// hex (and opacity); a type's size and line height, then its style, family, and its
/// decoration, case and letter spacing.
fn details(st: &Style) -> Vec<String> {
    if st.kind == StyleType::PAINT {
        return match st.paints.as_deref() {
            Some([Paint::Solid { color, opacity }]) => {
                let hex = |v: f64| format!("{:02x}", (v.clamp(0.0, 1.0) * 255.0).round() as u8);
                let alpha = opacity.map(|o| format!(" {}%", num(o * 100.0))).unwrap_or_default();
                vec![format!("#{}{}{}{alpha}", hex(color.r), hex(color.g), hex(color.b))]
            }
            _ => Vec::new(),
        };
    }
    let line = st.line_height.as_ref().map_or("Auto".into(), |lh| match (lh.unit, lh.value) {
        (crate::doc::LineHeightUnit::PIXELS, Some(v)) => num(v),
        (crate::doc::LineHeightUnit::PERCENT, Some(v)) => format!("{}%", num(v)),
        _ => "Auto".into(),
    });
    let mut d = format!("{}/{line}", num(st.font_size.unwrap_or(12.0)));
    let mut out = vec![d.clone()];
    let font = st.font_name.clone().unwrap_or(FontName { family: "Inter".into(), style: "Regular".into() });
    for more in [font.style, font.family] {
        d = format!("{d} {more}");
        out.push(d.clone());
    }
    let mut rest = Vec::new();
    if let Some(deco) = st.text_decoration.filter(|t| *t != TextDecoration::NONE) {
        rest.push(format!("{deco:?}").to_lowercase());
    }
    if let Some(case) = st.text_case.filter(|t| *t != TextCase::ORIGINAL) {
        rest.push(format!("{case:?}").to_lowercase());
    }
    if let Some(ls) = st.letter_spacing.as_ref().filter(|ls| ls.value != 0.0) {
        let unit = if ls.unit == crate::doc::LetterSpacingUnit::PERCENT { "%" } else { "px" };
        rest.push(format!("spaced {}{unit}", num(ls.value)));
    }
    if !rest.is_empty() {
        out.push(format!("{d} {}", rest.join(" ")));
    }
    out
}

/// A number as a designer writes it: no trailing zeros (16, 22.4, 15.44).
fn num(v: f64) -> String {
    let s = format!("{:.2}", (v * 100.0).round() / 100.0);
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Points a node and its segments at their styles.
fn refer(n: &mut Node, ids: &HashMap<String, Style>) {
    let id = |key: String| ids.get(&key).map(|st| st.id.clone());
    if n.kind == NodeType::TEXT {
        if let Some(segs) = n.segments.as_mut() {
            for g in segs.iter_mut().filter(|g| styled(g)) {
                g.fill_style_id = paint_key(&g.fills).and_then(|k| id(format!("P{k}")));
                g.text_style_id = id(format!("T{}", text_key(&segment_key(g))));
            }
        }
        n.text_style_id = id(format!("T{}", text_key(&node_key(n))));
    }
    n.fill_style_id = n.fills.as_deref().and_then(paint_key).and_then(|k| id(format!("P{k}")));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{Color, LetterSpacingUnit, LineHeightUnit};

    fn candidate(role: &str, uses: usize, style: Style) -> Candidate {
        Candidate { roles: BTreeMap::from([(role.to_owned(), uses)]), style, uses }
    }

    fn type_of(family: &str, style: &str, size: f64, line: f64, deco: TextDecoration) -> Style {
        text_style(&(
            FontName { family: family.into(), style: style.into() },
            size,
            LineHeight { unit: LineHeightUnit::PIXELS, value: Some(line) },
            LetterSpacing { unit: LetterSpacingUnit::PIXELS, value: 0.0 },
            TextCase::ORIGINAL,
            deco,
        ))
    }

    #[test]
    fn a_role_s_rarer_styles_are_named_by_as_much_of_their_value_as_tells_them_apart() {
        let grey = Paint::Solid { color: Color { r: 0.4, g: 0.4, b: 0.4 }, opacity: None };
        let faint = Paint::Solid { color: Color { r: 0.0, g: 0.0, b: 0.0 }, opacity: Some(0.46) };
        let black = Paint::Solid { color: Color { r: 0.0, g: 0.0, b: 0.0 }, opacity: None };
        let found = BTreeMap::from([
            ("P1".to_owned(), candidate("Text", 9, paint_style(&[black]))),
            ("P2".to_owned(), candidate("Text", 3, paint_style(&[grey]))),
            ("P3".to_owned(), candidate("Text", 2, paint_style(&[faint]))),
            (
                "T1".to_owned(),
                candidate("Code", 9, type_of("DejaVu Sans Mono", "Regular", 15.44, 21.62, TextDecoration::NONE)),
            ),
            (
                "T2".to_owned(),
                candidate("Code", 5, type_of("DejaVu Sans Mono", "Regular", 15.44, 18.53, TextDecoration::NONE)),
            ),
            (
                "T3".to_owned(),
                candidate("Code", 4, type_of("DejaVu Sans Mono", "Bold", 15.44, 18.53, TextDecoration::NONE)),
            ),
            (
                "T4".to_owned(),
                candidate("Code", 3, type_of("Liberation Mono", "Bold", 15.44, 18.53, TextDecoration::NONE)),
            ),
            (
                "T5".to_owned(),
                candidate("Code", 2, type_of("Liberation Mono", "Bold", 15.44, 18.53, TextDecoration::UNDERLINE)),
            ),
        ]);
        let named = name(found);
        let of = |k: &str| named[k].name.as_str();
        assert_eq!([of("P1"), of("P2"), of("P3")], ["Color/Text", "Color/Text #666666", "Color/Text #000000 46%"]);
        assert_eq!(of("T1"), "Text/Code");
        assert_eq!(of("T2"), "Text/Code 15.44/18.53");
        assert_eq!(of("T3"), "Text/Code 15.44/18.53 Bold");
        assert_eq!(of("T4"), "Text/Code 15.44/18.53 Bold Liberation Mono");
        assert_eq!(of("T5"), "Text/Code 15.44/18.53 Bold Liberation Mono underline");
        // The commonest first: ids follow use.
        assert_eq!((named["P1"].id.as_str(), named["T5"].id.as_str()), ("S:1", "S:8"));
    }
}
