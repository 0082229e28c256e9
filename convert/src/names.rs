//! Layer names, as a designer would give them (issue 39, item 5): what the page itself calls
//! an element (its `aria-label`, `aria-labelledby`, `alt`, an SVG's `<title>`, a form control's
//! `<label>`), the text that titles it (a heading's or a link's own text, a section's first
//! heading, a figure's caption, a fieldset's legend), then its `id`, its first class, the text of
//! a box that holds nothing but text, and its tag only when none of these exist. A name is one
//! line of at most [`MAX_NAME`] characters, and never comes from what a form control holds
//! (a value typed or preset, a password, an option list): those are the user's, not the page's.

use std::cell::OnceCell;
use std::collections::HashMap;

use crate::convert::Snapshot;

/// Figma's layer list shows about this many characters of a name at its default width.
pub const MAX_NAME: usize = 40;

/// Elements whose content is the user's or a list of choices: no name is read from inside them.
const CONTROLS: &[&str] = &["input", "textarea", "select", "option", "optgroup", "datalist"];
/// Elements whose text is never drawn as such.
const SILENT: &[&str] = &["script", "style", "template", "noscript", "head", "title"];
/// Elements that take the name of their first heading (HTML's sectioning content, and the
/// ARIA roles of the same meaning).
const SECTIONS: &[&str] = &["section", "article", "aside", "nav", "dialog", "hgroup"];
const SECTION_ROLES: &[&str] =
    &["region", "article", "complementary", "navigation", "dialog", "alertdialog", "tabpanel", "group"];
/// Elements named by their own text, as assistive technology names them (ARIA's "name from
/// content").
const NAMED_BY_CONTENT: &[&str] = &["a", "button", "summary", "label", "legend", "caption", "figcaption", "th", "dt"];
const CONTENT_ROLES: &[&str] = &["button", "link", "tab", "menuitem", "treeitem", "cell", "columnheader", "rowheader"];

/// `text` as a layer name: one line (white space collapsed, control and bidi characters
/// dropped), at most [`MAX_NAME`] characters, a cut one ending in an ellipsis. Empty when the
/// text has nothing to show.
pub fn short(text: &str) -> String {
    let visible = text.chars().filter(|c| !c.is_control() || c.is_whitespace()).filter(|c| !is_bidi(*c));
    let line = visible.collect::<String>().split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= MAX_NAME {
        return line;
    }
    let cut: String = line.chars().take(MAX_NAME - 1).collect();
    format!("{}…", cut.trim_end())
}

/// `base` with `suffix` after a space, the base cut so that the whole stays [`MAX_NAME`] long
/// (the suffix says what the layer is; the base whose it is).
pub fn suffixed(base: &str, suffix: &str) -> String {
    let room = MAX_NAME.saturating_sub(suffix.chars().count() + 1).max(1);
    let base = short(base);
    let base = if base.chars().count() <= room {
        base
    } else {
        let cut: String = base.chars().take(room - 1).collect();
        format!("{}…", cut.trim_end())
    };
    short(&format!("{base} {suffix}"))
}

/// Embedding and isolate controls: invisible, and they reorder what follows them.
fn is_bidi(c: char) -> bool {
    matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// What naming needs of the whole tree, made in one pass from the leaves up (a node's index is
/// above its parent's), so that naming any element reads no more than its own attributes.
#[derive(Default)]
pub struct Index {
    /// Each node's drawn text, white space collapsed, cut just past [`MAX_NAME`].
    text: Vec<String>,
    /// The node's drawn content is text and inline boxes only (a paragraph, a cell, a button).
    inline_only: Vec<bool>,
    /// The first heading inside each element, not inside a nested section.
    first_heading: Vec<Option<usize>>,
    /// The element of each `id`, the first when several share it.
    by_id: HashMap<String, usize>,
    /// The `<label>` of each form control.
    label_of: HashMap<usize, usize>,
    /// Each element's name once made: the walk asks for it at every paint, colour and warning.
    made: Vec<OnceCell<String>>,
}

fn is_heading(s: &Snapshot<'_>, n: usize) -> bool {
    s.node_type[n] == 1
        && (s.is_tag(n, &["h1", "h2", "h3", "h4", "h5", "h6"])
            || s.attr(n, "role").is_some_and(|r| r.trim().eq_ignore_ascii_case("heading")))
}

fn role(s: &Snapshot<'_>, n: usize) -> String {
    s.attr(n, "role").and_then(|r| r.split_whitespace().next()).unwrap_or("").to_ascii_lowercase()
}

fn is_section(s: &Snapshot<'_>, n: usize) -> bool {
    s.node_type[n] == 1 && (s.is_tag(n, SECTIONS) || SECTION_ROLES.contains(&role(s, n).as_str()))
}

/// Appends `piece` to `out`, keeping single spaces and stopping just past [`MAX_NAME`].
fn push_text(out: &mut String, piece: &str) {
    for c in piece.chars() {
        if out.chars().count() > MAX_NAME + 1 {
            return;
        }
        if c.is_whitespace() {
            // Kept at the start too: the text before may end in a word.
            if !out.ends_with(' ') {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
    }
}

impl Index {
    pub fn new(s: &Snapshot<'_>) -> Self {
        let n = s.node_type.len();
        let mut index = Self {
            text: vec![String::new(); n],
            inline_only: vec![true; n],
            first_heading: vec![None; n],
            by_id: HashMap::new(),
            label_of: HashMap::new(),
            made: vec![OnceCell::new(); n],
        };
        index.read_words(s);
        index.by_id = ids(s);
        index.label_of = labels(s, &index.by_id);
        index
    }

    /// Each node's text, whether it holds inline content only, and its first heading: from the
    /// last node up, so that each element reads its children's.
    fn read_words(&mut self, s: &Snapshot<'_>) {
        let n = s.node_type.len();
        // Asked of every child: once per node.
        let heading: Vec<bool> = (0..n).map(|i| is_heading(s, i) && s.layout_of[i].is_some()).collect();
        let section: Vec<bool> = (0..n).map(|i| is_section(s, i)).collect();
        for i in (0..n).rev() {
            match s.node_type[i] {
                3 => {
                    if let Some(l) = s.layout_of[i] {
                        push_text(&mut self.text[i], s.l_text[l].or(s.node_value[i]).unwrap_or(""));
                    }
                }
                1 if !s.pseudo.contains_key(&i) => {
                    if s.is_tag(i, CONTROLS) || s.is_tag(i, SILENT) {
                        continue;
                    }
                    self.read_element(s, i, &heading, &section);
                }
                _ => {}
            }
        }
    }

    /// Element `i`'s text, inline content and first heading, from its children's.
    fn read_element(&mut self, s: &Snapshot<'_>, i: usize, heading: &[bool], section: &[bool]) {
        let mut own = String::new();
        for &c in &s.children[i] {
            if s.pseudo.contains_key(&c) || !matches!(s.node_type[c], 1 | 3) {
                continue;
            }
            // A block child starts a line of its own: its words do not run on.
            let block =
                s.node_type[c] == 1 && s.layout_of[c].is_some_and(|l| !s.style(l, "display").starts_with("inline"));
            if block {
                self.inline_only[i] = false;
                push_text(&mut own, " ");
            }
            self.inline_only[i] &= self.inline_only[c];
            push_text(&mut own, &self.text[c]);
            if block {
                push_text(&mut own, " ");
            }
            if self.first_heading[i].is_none() && s.node_type[c] == 1 {
                if heading[c] {
                    self.first_heading[i] = Some(c);
                } else if !section[c] {
                    self.first_heading[i] = self.first_heading[c];
                }
            }
        }
        self.text[i] = own;
    }

    /// The layer name of element `n` (see the module's documentation).
    pub fn name(&self, s: &Snapshot<'_>, n: usize) -> String {
        match self.made.get(n) {
            Some(cell) => cell.get_or_init(|| self.make(s, n)).clone(),
            None => self.make(s, n),
        }
    }

    fn make(&self, s: &Snapshot<'_>, n: usize) -> String {
        if let Some(p) = s.pseudo.get(&n) {
            // Generated content is its element's: named after it.
            let owner = usize::try_from(s.parent[n]).map(|o| self.name(s, o)).unwrap_or_default();
            return suffixed(&owner, &format!("::{p}"));
        }
        let tag = s.tag(n);
        let control = CONTROLS.contains(&tag.as_str());
        let attr = |k: &str| s.attr(n, k).map(short).filter(|v| !v.is_empty());
        let labelledby = || {
            let ids = s.attr(n, "aria-labelledby")?;
            let parts: Vec<String> =
                ids.split_whitespace().filter_map(|id| self.text_of(*self.by_id.get(id)?)).collect();
            Some(short(&parts.join(" "))).filter(|t| !t.is_empty())
        };
        let alt = || matches!(tag.as_str(), "img" | "area" | "input").then(|| attr("alt")).flatten();
        // An SVG's <title> is not drawn, so its text has no layout: read from the DOM.
        let svg_title = || {
            let t = child(s, n, "title")?;
            let words: String = s.children[t].iter().filter_map(|c| s.node_value[*c]).collect();
            Some(short(&words)).filter(|w| !w.is_empty())
        };
        // Utility classes (`md:flex`, `w-[200px]`, `w-1/2`) say how it looks, not what it is.
        // A class that is a tag's name (Sphinx's `div.body`, `nav.nav`) reads as the tag.
        let class = || {
            s.attr(n, "class")?
                .split_whitespace()
                .find(|c| !c.contains([':', '[', '/', '(']) && !is_tag_name(c))
                .map(short)
                .filter(|c| !c.is_empty())
        };
        let content = || {
            let replaced = matches!(tag.as_str(), "img" | "svg" | "canvas" | "video" | "iframe" | "object" | "embed");
            (!control && !replaced && self.inline_only[n]).then(|| self.text_of(n)).flatten()
        };
        // A box titled by a heading at its top (a card, a panel: the heading a child or a
        // grandchild) is named by it; a wrapper further up is not named by the page's title.
        let heading = || {
            let h = self.first_heading[n].filter(|_| !control && !matches!(tag.as_str(), "html" | "body" | "main"))?;
            let up = |e: usize| usize::try_from(s.parent[e]).ok();
            let near = up(h) == Some(n) || up(h).and_then(up) == Some(n);
            near.then(|| self.text_of(h)).flatten()
        };
        attr("aria-label")
            .or_else(labelledby)
            .or_else(alt)
            .or_else(|| (tag == "svg").then(svg_title).flatten())
            .or_else(|| self.titled(s, n, &tag, control))
            .or_else(|| attr("id"))
            .or_else(|| {
                matches!(tag.as_str(), "input" | "select" | "textarea" | "button").then(|| attr("name")).flatten()
            })
            .or_else(class)
            .or_else(content)
            .or_else(heading)
            .or_else(|| what_it_is(s, n, &tag).map(str::to_owned))
            .unwrap_or(tag)
    }

    /// The text that titles element `n` (of tag `tag`, a form control or not): a control's
    /// label, a heading's own text, a link's or a section's heading, a caption.
    fn titled(&self, s: &Snapshot<'_>, n: usize, tag: &str, control: bool) -> Option<String> {
        if control {
            return self.label_of.get(&n).and_then(|l| self.text_of(*l));
        }
        if is_heading(s, n) {
            return self.text_of(n);
        }
        let r = role(s, n);
        if NAMED_BY_CONTENT.contains(&tag) || CONTENT_ROLES.contains(&r.as_str()) {
            // A link or button around a whole card is named by the card's heading.
            return self.first_heading[n].and_then(|h| self.text_of(h)).or_else(|| self.text_of(n));
        }
        if is_section(s, n) {
            return self.first_heading[n].and_then(|h| self.text_of(h));
        }
        let caption = match tag {
            "fieldset" => child(s, n, "legend"),
            "figure" => child(s, n, "figcaption"),
            "table" => child(s, n, "caption"),
            "details" => child(s, n, "summary"),
            _ => None,
        };
        caption.and_then(|c| self.text_of(c))
    }

    /// Element `e`'s text as a name, if it has any.
    fn text_of(&self, e: usize) -> Option<String> {
        Some(short(&self.text[e])).filter(|t| !t.is_empty())
    }
}

/// What element `n` is, as a designer names a layer nothing else names: by its ARIA role or its
/// tag's purpose ("Navigation", "Page footer", "Divider", "Checkbox"), never the tag itself.
fn what_it_is(s: &Snapshot<'_>, n: usize, tag: &str) -> Option<&'static str> {
    let by_role = match role(s, n).as_str() {
        "banner" => Some("Page header"),
        "contentinfo" => Some("Page footer"),
        "navigation" => Some("Navigation"),
        "main" => Some("Main content"),
        "complementary" => Some("Sidebar"),
        "search" => Some("Search"),
        "img" => Some("Image"),
        "list" => Some("List"),
        "listitem" => Some("List item"),
        "table" | "grid" => Some("Data table"),
        "row" => Some("Table row"),
        "cell" | "gridcell" => Some("Table cell"),
        "button" => Some("Icon button"),
        "dialog" | "alertdialog" => Some("Dialog box"),
        _ => None,
    };
    by_role.or_else(|| by_tag(s, n, tag))
}

fn by_tag(s: &Snapshot<'_>, n: usize, tag: &str) -> Option<&'static str> {
    Some(match tag {
        "html" | "body" => "Page",
        "header" => "Page header",
        "footer" => "Page footer",
        "nav" => "Navigation",
        "main" => "Main content",
        "aside" => "Sidebar",
        "section" => "Content section",
        "article" => "Article content",
        "form" => "Form fields",
        "fieldset" => "Field group",
        "div" => "Container",
        "span" => "Inline box",
        "p" => "Paragraph",
        "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => "Heading",
        "ul" | "menu" => "Bulleted list",
        "ol" => "Numbered list",
        "li" => "List item",
        "dl" => "Definition list",
        "dt" => "Term",
        "dd" => "Definition",
        "table" => "Data table",
        "thead" => "Table header",
        "tbody" => "Table body",
        "tfoot" => "Table footer",
        "tr" => "Table row",
        "td" => "Table cell",
        "th" => "Header cell",
        "img" | "picture" => "Image",
        // An SVG the size of a glyph is an icon; a larger one an illustration.
        "svg" => match s.layout_of[n].map(|l| s.l_bounds[l]) {
            Some(b) if b[2] <= 48.0 && b[3] <= 48.0 => "Icon",
            _ => "Illustration",
        },
        "hr" => "Divider",
        "input" => input_kind(s, n),
        "textarea" => "Text area",
        "select" => "Dropdown",
        "button" => "Icon button",
        "label" => "Field label",
        "pre" => "Code block",
        "code" | "kbd" | "samp" => "Inline code",
        "blockquote" | "q" => "Quote",
        "figure" => "Illustration",
        "figcaption" | "caption" => "Caption text",
        "video" => "Video player",
        "canvas" => "Drawing",
        "iframe" | "object" | "embed" => "Embedded content",
        "a" => "Link area",
        "details" => "Disclosure",
        "summary" => "Disclosure title",
        "dialog" => "Dialog box",
        _ => return None,
    })
}

/// A form `<input>` by what it asks for.
fn input_kind(s: &Snapshot<'_>, n: usize) -> &'static str {
    match s.attr(n, "type").unwrap_or("text").trim().to_ascii_lowercase().as_str() {
        "checkbox" => "Checkbox",
        "radio" => "Radio button",
        "submit" | "button" | "reset" | "image" => "Form button",
        "range" => "Slider",
        "search" => "Search field",
        "email" => "Email field",
        "password" => "Password field",
        "number" => "Number field",
        "date" | "datetime-local" | "month" | "week" | "time" => "Date field",
        "color" => "Colour picker",
        "file" => "File picker",
        _ => "Text field",
    }
}

/// HTML's element names (the WHATWG index, and obsolete ones still met): a name that is one
/// reads as a tag.
const TAG_NAMES: &[&str] = &[
    "a",
    "abbr",
    "address",
    "area",
    "article",
    "aside",
    "audio",
    "b",
    "base",
    "bdi",
    "bdo",
    "blockquote",
    "body",
    "br",
    "button",
    "canvas",
    "caption",
    "cite",
    "code",
    "col",
    "colgroup",
    "data",
    "datalist",
    "dd",
    "del",
    "details",
    "dfn",
    "dialog",
    "div",
    "dl",
    "dt",
    "em",
    "embed",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "header",
    "hgroup",
    "hr",
    "html",
    "i",
    "iframe",
    "img",
    "input",
    "ins",
    "kbd",
    "label",
    "legend",
    "li",
    "link",
    "main",
    "map",
    "mark",
    "menu",
    "meta",
    "meter",
    "nav",
    "noscript",
    "object",
    "ol",
    "optgroup",
    "option",
    "output",
    "p",
    "param",
    "picture",
    "pre",
    "progress",
    "q",
    "rp",
    "rt",
    "ruby",
    "s",
    "samp",
    "script",
    "search",
    "section",
    "select",
    "slot",
    "small",
    "source",
    "span",
    "strong",
    "style",
    "sub",
    "summary",
    "sup",
    "table",
    "tbody",
    "td",
    "template",
    "textarea",
    "tfoot",
    "th",
    "thead",
    "time",
    "title",
    "tr",
    "track",
    "u",
    "ul",
    "var",
    "video",
    "wbr",
    "svg",
    "math",
    "center",
    "font",
    "big",
    "tt",
    "strike",
    "acronym",
    "nobr",
    "marquee",
];

fn is_tag_name(name: &str) -> bool {
    TAG_NAMES.iter().any(|t| t.eq_ignore_ascii_case(name))
}

/// Element `n`'s first child element of tag `tag`.
fn child(s: &Snapshot<'_>, n: usize, tag: &str) -> Option<usize> {
    s.children[n].iter().copied().find(|c| s.node_type[*c] == 1 && s.tag(*c) == tag)
}

/// The element of each `id`, the first when several share it.
fn ids(s: &Snapshot<'_>) -> HashMap<String, usize> {
    let mut by_id = HashMap::new();
    for i in 0..s.node_type.len() {
        if let Some(id) = s.attr(i, "id").filter(|id| !id.is_empty()) {
            by_id.entry(id.to_owned()).or_insert(i);
        }
    }
    by_id
}

/// The `<label>` of each form control: the one that names it by `for`, or holds it.
fn labels(s: &Snapshot<'_>, by_id: &HashMap<String, usize>) -> HashMap<usize, usize> {
    let mut label_of = HashMap::new();
    for i in (0..s.node_type.len()).filter(|i| s.node_type[*i] == 1 && s.is_tag(*i, &["label"])) {
        let control = match s.attr(i, "for").filter(|f| !f.is_empty()) {
            Some(f) => by_id.get(f).copied(),
            None => first_control(s, i),
        };
        if let Some(c) = control {
            label_of.entry(c).or_insert(i);
        }
    }
    label_of
}

/// The first form control inside a `<label>` without `for`, which it labels.
fn first_control(s: &Snapshot<'_>, label: usize) -> Option<usize> {
    let mut todo: Vec<usize> = s.children[label].iter().rev().copied().collect();
    // A label is a few nodes; a page that hides a control deep in one is not searched whole.
    for _ in 0..500 {
        let c = todo.pop()?;
        if s.node_type[c] != 1 {
            continue;
        }
        if matches!(s.tag(c).as_str(), "input" | "select" | "textarea") {
            return Some(c);
        }
        todo.extend(s.children[c].iter().rev());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_are_one_line_and_cut_with_an_ellipsis() {
        assert_eq!(short("  Main\n\tnavigation \u{202E}"), "Main navigation");
        assert_eq!(short("a\u{0}b"), "ab");
        let long = "Ship faster with a cloud that stays out of your way";
        let name = short(long);
        assert_eq!(name, "Ship faster with a cloud that stays out…");
        assert_eq!(name.chars().count(), MAX_NAME);
        assert_eq!(short(&"x".repeat(40)), "x".repeat(40));
        assert_eq!(short(" \n "), "");
        let s = suffixed(long, "::before");
        assert!(s.ends_with("… ::before") && s.chars().count() <= MAX_NAME, "{s}");
        assert_eq!(suffixed("card", "clip"), "card clip");
    }
}
