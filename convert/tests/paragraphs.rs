//! Paragraphs (issue 39, item 1): a block's inline content is one TEXT node as wide as the
//! block, its runs segments with UTF-16 indices, its links hyperlinks, its white space as CSS
//! lays it out; and where that would not be exact, the text is drawn line by line as before.
//! Against real Chromium.

mod common;

use common::{renderer, runtime};

use code2des_convert::doc::{HyperlinkType, LineHeightUnit, NodeType, Paint, TextAutoResize, TextDecoration};
use code2des_convert::{convert, Node, Output};

fn run(body: &str) -> Output {
    let html = format!(
        "<!DOCTYPE html><html><head><style>body {{ margin: 0; font: 16px/24px 'DejaVu Serif' }} \
         p {{ width: 300px; margin: 10px }}</style></head><body>{body}</body></html>"
    );
    runtime().block_on(convert(renderer(), html.as_bytes(), false)).expect("converts")
}

fn texts(out: &Output) -> Vec<&Node> {
    out.document.walk().map(|(n, _)| n).filter(|n| n.kind == NodeType::TEXT).collect()
}

#[test]
fn a_wrapped_paragraph_with_inline_styles_and_a_link_is_one_text_node() {
    let out = run("<p id=p>A flame\n   graph is <em>a picture</em> of <b>where time\u{1F525} goes</b>, \
         <a href=\"https://example.com/x\">read more</a> and <a href=\"javascript:alert(1)\">not this</a> \
         and some more words so that it wraps onto several lines here.</p>");
    let t = texts(&out);
    assert_eq!(t.len(), 1, "one TEXT node: {t:#?}");
    let p = t[0];
    let chars = p.characters.as_deref().unwrap();
    // The source's line break and spaces collapse to one space; no "\n" where Chromium drew none.
    assert!(
        chars.starts_with("A flame graph is a picture of where time\u{1F525} goes, read more and not this and"),
        "{chars}"
    );
    assert!(!chars.contains('\n') && !chars.contains("  "), "{chars:?}");
    assert_eq!((p.x, p.width), (10.0, 300.0), "the block's content box");
    assert_eq!(p.text_auto_resize, Some(TextAutoResize::HEIGHT));
    assert!(p.height >= 24.0 * 3.0, "several lines of 24 px: {}", p.height);
    let segs = p.segments.as_ref().expect("segments");
    // Contiguous from 0 to the length in UTF-16 (the emoji counts two).
    assert_eq!(segs[0].start, 0);
    assert_eq!(segs.last().unwrap().end as usize, chars.encode_utf16().count());
    assert!(segs.windows(2).all(|w| w[0].end == w[1].start));
    let at = |needle: &str| {
        let i = chars.encode_utf16().count() - chars[chars.find(needle).unwrap()..].encode_utf16().count();
        segs.iter().find(|g| g.start as usize <= i && i < g.end as usize).unwrap()
    };
    assert_eq!(at("picture").font_name.style, "Italic");
    assert_eq!(at("where").font_name.style, "Bold");
    assert_eq!(at("goes").font_name.style, "Bold", "after the emoji's two code units");
    assert_eq!(at("A flame").font_name.style, "Regular");
    let link = at("read more").hyperlink.as_ref().expect("a hyperlink");
    assert_eq!((link.kind, link.value.as_str()), (HyperlinkType::URL, "https://example.com/x"));
    assert!(at("not this").hyperlink.is_none(), "a javascript: URL is never a hyperlink");
    assert_eq!(at("read more").text_decoration, TextDecoration::UNDERLINE);
}

#[test]
fn breaks_and_preserved_white_space_are_kept_as_laid_out() {
    let out = run(
        "<p>one<br>two</p><p style=\"white-space: pre\">a  b\n  c</p><p style=\"white-space: pre-line\">x   y\nz</p>",
    );
    let chars: Vec<&str> = texts(&out).iter().map(|n| n.characters.as_deref().unwrap()).collect();
    assert_eq!(chars, ["one\ntwo", "a  b\n  c", "x y\nz"]);
}

#[test]
fn what_a_text_node_cannot_draw_exactly_stays_line_by_line() {
    // An inline-block inside: the paragraph's text stays line by line (the inline-block's own
    // content is a paragraph of its own).
    let out = run("<p>before <span style=\"display: inline-block; width: 40px\">box</span> after</p>");
    let line_by_line: Vec<&str> = texts(&out)
        .iter()
        .filter(|n| n.text_auto_resize == Some(TextAutoResize::WIDTH_AND_HEIGHT))
        .map(|n| n.characters.as_deref().unwrap().trim())
        .collect();
    assert_eq!(line_by_line, ["before", "after"]);
}

#[test]
fn a_hidden_inline_at_the_end_of_a_left_aligned_line_leaves_one_text_node() {
    // Sphinx's permalink after each heading, shown on hover only: it draws nothing and moves
    // nothing a left-aligned line shows, so the heading is one TEXT node without it.
    let link = "<a class=\"headerlink\" href=\"#t\" style=\"visibility: hidden; padding: 0 4px\">¶</a>";
    let out = run(&format!("<h2 id=t style=\"margin: 0\">Annotations Quirks{link}</h2>"));
    let t = texts(&out);
    assert_eq!(t.len(), 1, "{t:#?}");
    assert_eq!(t[0].characters.as_deref(), Some("Annotations Quirks"));
    assert_eq!(t[0].text_auto_resize, Some(TextAutoResize::HEIGHT));
    // Right after the last word, it is part of that word when Chromium breaks the line
    // ("Quirks¶" must fit): its room, the "¶" and the padding, follows the last character.
    let segs = t[0].segments.as_deref().expect("segments");
    let last = segs.last().expect("a segment");
    assert_eq!((last.start, last.end), (17, 18), "{segs:#?}");
    assert!(last.letter_spacing.value > 8.0 + 4.0, "the padding and the ¶: {segs:#?}");
    // Centred, its room shifts the visible text, and text after it is moved by it: line by
    // line, as before.
    for page in [
        format!("<h2 style=\"margin: 0; text-align: center\">Quirks{link}</h2>"),
        format!("<h2 style=\"margin: 0\">Quirks{link} and more</h2>"),
    ] {
        let out = run(&page);
        let t = texts(&out);
        assert!(t.iter().all(|n| n.text_auto_resize == Some(TextAutoResize::WIDTH_AND_HEIGHT)), "{page}: {t:#?}");
    }
}

#[test]
fn an_inline_with_overflow_hidden_clips_nothing_and_stays_in_its_paragraph() {
    // rustdoc's short descriptions: overflow does not apply to an inline box.
    let out = run("<div style=\"width: 300px\"><p style=\"display: inline; overflow: hidden; text-overflow: ellipsis; margin: 0\">\
         A <a href=\"https://example.com/\"><code>Cell</code></a>, but <b>Sync</b>.</p></div>");
    let t = texts(&out);
    assert_eq!(t.len(), 1, "{t:#?}");
    assert_eq!(t[0].characters.as_deref(), Some("A Cell, but Sync."));
    assert_eq!(t[0].text_auto_resize, Some(TextAutoResize::HEIGHT));
    // Nor does it need a frame for a clip it does not make: the text is the page's one layer.
    let layers: Vec<(NodeType, &str)> =
        out.document.children.iter().flatten().map(|n| (n.kind, n.name.as_str())).collect();
    assert_eq!(layers, [(NodeType::TEXT, "A Cell, but Sync.")]);
}

#[test]
fn a_space_a_line_broke_at_between_two_elements_is_kept() {
    // Sphinx's inline code: `<code><span class=pre>del</span> <span class=pre>fn.x</span></code>`,
    // each span nowrap. Where the line breaks at the space between them, Chromium draws nothing
    // of that text node; the space is still there, and Figma must break at it too.
    let nowrap = |w: &str| format!("<span style=\"white-space: nowrap\">{w}</span>");
    let out = run(&format!(
        "<p style=\"width: 230px; font: 16px 'DejaVu Sans'\">You can delete it with <code>{} {}</code> twice.</p>",
        nowrap("del"),
        nowrap("fn.__annotations__")
    ));
    let t = texts(&out);
    assert_eq!(t.len(), 1, "{t:#?}");
    assert_eq!(t[0].characters.as_deref(), Some("You can delete it with del fn.__annotations__ twice."));
}

#[test]
fn a_first_lines_indent_is_paragraph_indent_css_text_indent_and_the_room_of_the_code_it_opens_with() {
    let out = run("<p id=a style=\"text-indent: 24px\">An indented paragraph that wraps onto a second line, \
         or more, at this width.</p>\
         <p id=b><code style=\"padding: 0 5px; border-left: 2px solid #ccc\">RefCell</code> opens this one.</p>\
         <p id=c style=\"text-indent: 24px; text-align: center\">Centred and indented.</p>\
         <p id=d><code style=\"padding: 0 5px\">x</code> one<br>two</p>");
    let t = texts(&out);
    let of = |start: &str| t.iter().find(|n| n.characters.as_deref().is_some_and(|c| c.starts_with(start))).copied();
    let a = of("An indented").expect("one layer");
    assert_eq!(a.paragraph_indent, Some(24.0));
    assert!(a.characters.as_deref().unwrap().ends_with("width."), "the whole paragraph: {a:#?}");
    // The code's left border and padding: Chromium starts its text 7 px in.
    assert_eq!(of("RefCell").expect("one layer").paragraph_indent, Some(7.0));
    // Figma indents every paragraph of a text, and only from the left: a centred text keeps
    // its lines apart, as before; a text of two paragraphs drops the code's room.
    assert!(of("Centred and indented.").is_some_and(|n| n.paragraph_indent.is_none()));
    assert_eq!(of("x one").expect("one layer").paragraph_indent, None);
}

#[test]
fn an_inline_elements_padding_is_room_beside_its_text() {
    let out = run("<p>run <code style=\"padding: 0 6px; background: #eee\">x</code> on</p>");
    let t = texts(&out);
    assert_eq!(t.len(), 1, "{t:#?}");
    let segs = t[0].segments.as_ref().expect("segments");
    // The space before the code, then the code's last character, carry its left and right room.
    let wide: Vec<f64> = segs.iter().map(|g| g.letter_spacing.value).filter(|v| *v != 0.0).collect();
    assert_eq!(wide, [6.0, 6.0], "{segs:#?}");
    // The code's background is a shape behind the text.
    let grey = |n: &Node| {
        n.fills
            .iter()
            .flatten()
            .any(|f| matches!(f, Paint::Solid { color, .. } if (color.r - 238.0 / 255.0).abs() < 0.01))
    };
    assert!(out.document.walk().any(|(n, _)| n.kind != NodeType::TEXT && grey(n)));
}

#[test]
fn every_colour_and_type_is_a_shared_style_named_by_role_the_commonest_first_the_others_by_value() {
    let out = run("<div style=\"background: linear-gradient(#fff, #ccc); padding: 8px\">\
         <h1 style=\"font: bold 30px/36px 'DejaVu Sans'; color: rgb(200, 0, 0)\">Title</h1>\
         <p>One para.</p><p>Two para.</p><p>Three <a href=\"https://example.com/\" style=\"color: rgb(0, 0, 200)\">link</a>.</p>\
         <p><a href=\"https://example.com/a\" style=\"color: rgb(0, 0, 200)\">alpha</a> and \
         <a href=\"https://example.com/b\" style=\"color: rgb(0, 0, 200)\">beta</a></p></div>");
    let styles = out.document.styles.as_ref().expect("styles on the root");
    let names: Vec<&str> = styles.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"Text/Body"), "{names:?}");
    assert!(names.contains(&"Color/Link"), "{names:?}");
    // Used once, and a style still: the heading's type, and its colour, a second text colour,
    // named by its value as every rarer style of a role is.
    assert!(names.contains(&"Text/Heading 1"), "{names:?}");
    assert!(names.contains(&"Color/Text #c80000"), "{names:?}");
    let id = |name: &str| styles.iter().find(|s| s.name == name).map(|s| s.id.clone());
    let body = texts(&out).into_iter().find(|n| n.characters.as_deref() == Some("One para.")).unwrap();
    assert_eq!(body.text_style_id, id("Text/Body"));
    // The commonest text colour has the role's plain name.
    assert_eq!(body.fill_style_id, id("Color/Text"));
    let title = texts(&out).into_iter().find(|n| n.characters.as_deref() == Some("Title")).unwrap();
    assert_eq!(title.text_style_id, id("Text/Heading 1"));
    assert_eq!(title.fill_style_id, id("Color/Text #c80000"));
    // A gradient is a paint style as it is.
    let gradient = |n: &Node| n.fills.iter().flatten().any(|f| matches!(f, Paint::GradientLinear { .. }));
    let (boxed, _) = out.document.walk().find(|(n, _)| gradient(n)).expect("the gradient's frame");
    let used = styles.iter().find(|s| Some(&s.id) == boxed.fill_style_id.as_ref()).expect("a style");
    assert_eq!(used.paints, boxed.fills);
    // Every id a node or segment names is a style of the root, and nothing drawn is loose.
    let known: Vec<String> = styles.iter().map(|s| s.id.clone()).collect();
    for (n, _) in out.document.walk() {
        let segs = n.segments.iter().flatten().flat_map(|g| [&g.fill_style_id, &g.text_style_id]);
        for used in [&n.fill_style_id, &n.text_style_id].into_iter().chain(segs).flatten() {
            assert!(known.contains(used), "{used} is not a style");
        }
        let painted = n.fills.iter().flatten().any(|f| !matches!(f, Paint::Image { .. }));
        assert!(!painted || n.fill_style_id.is_some(), "{:?} has a loose fill", n.name);
        assert!(n.kind != NodeType::TEXT || n.text_style_id.is_some(), "{:?} has a loose type", n.name);
    }
}

#[test]
fn a_label_clipped_to_nothing_is_not_drawn() {
    // rustdoc's toggle: `summary::after { content: "Collapse"; position: absolute; width: 0;
    // height: 0; overflow: hidden }` shows nothing; drawn, it was a text 0 px wide, a letter a line.
    let out =
        run("<style>summary::after { content: 'Collapse'; position: absolute; width: 0; height: 0; overflow: hidden }\
         .gone { display: inline-block; width: 0; overflow: hidden }</style>\
         <details open><summary>Shown</summary><p>Body <span class=gone>Hidden words</span></p></details>");
    let all: Vec<&str> = texts(&out).iter().filter_map(|t| t.characters.as_deref()).collect();
    assert!(all.iter().any(|c| c.contains("Shown")) && all.iter().any(|c| c.contains("Body")), "{all:?}");
    assert!(!all.iter().any(|c| c.contains("Collapse") || c.contains("Hidden")), "{all:?}");
}

#[test]
fn a_highlighted_code_lines_background_starts_where_its_line_does() {
    // rustdoc's `<pre><code>`: each line of the code's background starts at the line's start,
    // also where the line opens with a span of the highlighting (a keyword), not the code's own
    // text.
    let out = run("<pre style=\"margin: 0; font: 16px/20px 'DejaVu Sans Mono'\"><code style=\"background: #eee\">\
         <span style=\"color: #00f\">let</span> x = 1;\n<span style=\"color: #00f\">fn</span> f() {}</code></pre>");
    let grey = |n: &Node| {
        n.kind == NodeType::RECTANGLE
            && n.fills
                .iter()
                .flatten()
                .any(|f| matches!(f, Paint::Solid { color, .. } if (color.r - 238.0 / 255.0).abs() < 0.01))
    };
    let lines: Vec<&Node> = out.document.walk().map(|(n, _)| n).filter(|n| grey(n)).collect();
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(lines.iter().all(|n| n.x.abs() < 0.5), "{lines:#?}");
}

#[test]
fn line_height_normal_is_chromiums_line_height_not_figmas_auto() {
    // Figma's AUTO is the font's exact metrics (Liberation Sans at 16 px: 18.4 px a line),
    // Chromium's `normal` rounds them (18): each line of a wrapped paragraph drifts 0.4 px.
    let out = run("<div style=\"font: 16px 'Liberation Sans'\">\
         <p id=a style=\"width: 200px; line-height: normal; background: #eee\">A paragraph long enough to \
         wrap onto three lines at this width, or more.</p>\
         <p style=\"width: 400px; line-height: normal\">One line.</p>\
         <h2 style=\"font: bold 16px 'Liberation Sans'; line-height: normal\">A heading</h2></div>");
    let t = texts(&out);
    let px = |n: &Node| match &n.line_height {
        Some(l) if l.unit == LineHeightUnit::PIXELS => l.value,
        other => panic!("{:?}: {other:?}", n.characters),
    };
    let (wrapped, one, heading) = (t[0], t[1], t[2]);
    // The paragraph's box (its background) is its lines, Chromium's height each.
    let frame = out
        .document
        .walk()
        .map(|(n, _)| n)
        .find(|n| n.kind == NodeType::FRAME && n.name.starts_with('a'))
        .expect("the box");
    let lines = (frame.height / px(wrapped).unwrap()).round();
    assert!(
        lines >= 3.0 && (frame.height - lines * px(wrapped).unwrap()).abs() < 0.01,
        "{} / {:?}",
        frame.height,
        px(wrapped)
    );
    assert_eq!(px(wrapped), Some(18.0), "Liberation Sans 16 px, as Chromium lays it out here");
    // One type is one line height: the line of one line, and the heading of the family's bold
    // face at that size, take the height measured; their boxes are a line tall.
    assert_eq!((px(one), one.height), (Some(18.0), 18.0));
    assert_eq!((px(heading), heading.height), (Some(18.0), 18.0));
}

#[test]
fn a_lines_runs_in_a_font_nothing_measured_take_the_lines_height_not_auto() {
    // A heading of one line in a size no paragraph measured is as tall as its glyphs; its runs
    // (here the text and a link after it) must say so too, or Figma lays the line out at
    // AUTO, the font's own metrics, and the text's type and its runs' disagree.
    let out = run("<h1 style=\"font: 32px 'Liberation Sans'; line-height: normal; width: 600px\">A heading \
         <a href=\"#x\" style=\"color: rgb(0, 0, 200)\">here</a></h1>");
    let heading = texts(&out).into_iter().find(|n| n.segments.is_some()).expect("a heading with runs");
    let line = heading.line_height.clone().expect("a line height");
    assert_eq!(line.unit, LineHeightUnit::PIXELS, "{line:?}");
    for g in heading.segments.iter().flatten() {
        assert_eq!(g.line_height, line, "{g:?}");
    }
}
