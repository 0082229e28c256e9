//! Flex containers and stacked blocks as auto layout (issue 39, item 2): text lying loose in a flex container is an
//! anonymous flex item, and a wrapping container whose items lie on one line is auto layout too;
//! where Figma could not put every item where Chromium did, the frame keeps absolute positions.
//! Against real Chromium.

mod common;

use code2des_convert::doc::{
    CounterAlign, LayoutMode, LayoutPositioning, LayoutSizing, LayoutWrap, NodeType, PrimaryAlign, TextAutoResize,
};
use code2des_convert::{Node, Output};

fn page(body: &str) -> Output {
    common::run(&format!(
        "<!DOCTYPE html><html><head><style>body {{ margin: 0; font: 16px/20px 'DejaVu Sans' }} \
         .f {{ display: flex; align-items: center; gap: 12px; padding: 8px; width: 400px; background: #eee }} \
         .dot {{ width: 10px; height: 10px; background: #0a0 }}</style></head><body>{body}</body></html>"
    ))
}

fn frame<'a>(out: &'a Output, name: &str) -> &'a Node {
    out.document.walk().map(|(n, _)| n).find(|n| n.name == name && n.kind == NodeType::FRAME).expect(name)
}

#[test]
fn text_loose_in_a_flex_row_is_an_item_of_its_auto_layout() {
    let out = page("<div id=brand class=f><span class=dot></span>Harbor</div>");
    let f = frame(&out, "brand");
    assert_eq!(f.layout_mode, Some(LayoutMode::HORIZONTAL));
    assert_eq!(f.counter_axis_align_items, Some(CounterAlign::CENTER));
    assert_eq!(f.item_spacing, Some(12.0));
    let kids: Vec<(NodeType, &str)> = f.children.iter().flatten().map(|k| (k.kind, k.name.as_str())).collect();
    assert_eq!(kids, [(NodeType::FRAME, "dot"), (NodeType::TEXT, "Harbor")]);
}

#[test]
fn a_wrapping_flex_container_on_one_line_is_auto_layout() {
    let out = page(
        "<div id=one class=f style=\"flex-wrap: wrap\"><p style=margin:0>a</p><p style=margin:0>b</p></div>\
         <div id=col class=f style=\"flex-wrap: wrap; flex-direction: column; align-items: flex-start\">\
         <p style=margin:0>c</p><p style=margin:0>d</p></div>",
    );
    assert_eq!(frame(&out, "one").layout_mode, Some(LayoutMode::HORIZONTAL));
    // It wraps in Figma too when narrowed; Figma wraps rows only.
    assert_eq!(frame(&out, "one").layout_wrap, Some(LayoutWrap::WRAP));
    assert_eq!(frame(&out, "col").layout_mode, Some(LayoutMode::VERTICAL));
    assert_eq!(frame(&out, "col").layout_wrap, None);
}

/// Blocks `w`×`h` px, each named by its size, as flex items.
fn blocks(sizes: &[(u32, u32)], style: &str) -> String {
    sizes
        .iter()
        .map(|(w, h)| {
            format!(
                "<span id=b{w}x{h} style=\"display:block;width:{w}px;height:{h}px;background:#08f;{style}\"></span>"
            )
        })
        .collect()
}

#[test]
fn a_row_that_wraps_is_figmas_wrapping_auto_layout() {
    // 200 px of room: 80 + 10 + 70 fit and 50 more would not; then 50, 90 and 30 (190 px).
    let items = blocks(&[(80, 20), (70, 30), (50, 20), (90, 24), (30, 10)], "");
    let out = page(&format!(
        "<div id=tags class=f style=\"flex-wrap: wrap; width: 200px; gap: 6px 10px\">{items}</div>\
         <div id=mid class=f style=\"flex-wrap: wrap; width: 200px; gap: 6px 10px; justify-content: center; \
         align-items: flex-end\">{items}</div>"
    ));
    let f = frame(&out, "tags");
    assert_eq!((f.layout_mode, f.layout_wrap), (Some(LayoutMode::HORIZONTAL), Some(LayoutWrap::WRAP)));
    assert_eq!((f.item_spacing, f.counter_axis_spacing), (Some(10.0), Some(6.0)));
    assert_eq!(
        (f.primary_axis_align_items, f.counter_axis_align_items),
        (Some(PrimaryAlign::MIN), Some(CounterAlign::CENTER))
    );
    assert_eq!([f.padding_left, f.padding_right, f.padding_top, f.padding_bottom], [Some(8.0); 4]);
    // Rows 30 and 24 px tall, 6 apart, in the padding; the frame's height is its content's.
    assert_eq!(f.height, 8.0 + 30.0 + 6.0 + 24.0 + 8.0);
    assert_eq!(f.layout_sizing_vertical, Some(LayoutSizing::HUG));
    let names: Vec<&str> = f.children.iter().flatten().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["b80x20", "b70x30", "b50x20", "b90x24", "b30x10"], "in document order, as Figma flows them");
    // Each row centred along, its items at the row's bottom.
    let m = frame(&out, "mid");
    assert_eq!((m.layout_wrap, m.primary_axis_align_items), (Some(LayoutWrap::WRAP), Some(PrimaryAlign::CENTER)));
    assert_eq!(m.counter_axis_align_items, Some(CounterAlign::MAX));
}

#[test]
fn what_auto_layout_cannot_reproduce_keeps_absolute_positions() {
    // Wrapped onto two lines, each row's items grown to fill it: CSS breaks the rows at their
    // sizes before growing, Figma would at their sizes after.
    let grown = blocks(&[(60, 10), (60, 10)], "flex-grow:1");
    // An item moved before the others (`order`): Figma flows the layers in their list order.
    let moved = blocks(&[(60, 10), (70, 10)], "") + &blocks(&[(50, 10)], "order:-1");
    // Items on a baseline, which Figma's wrapping rows have no alignment for.
    let baseline = blocks(&[(60, 10), (60, 20)], "");
    let out = page(&format!(
        "<div id=grown class=f style=\"flex-wrap: wrap; width: 100px\">{grown}</div>\
         <div id=moved class=f style=\"flex-wrap: wrap; width: 150px\">{moved}</div>\
         <div id=baseline class=f style=\"flex-wrap: wrap; width: 100px; align-items: baseline\">{baseline}</div>"
    ));
    for name in ["grown", "moved", "baseline"] {
        let f = frame(&out, name);
        assert_eq!((f.layout_mode, f.layout_wrap), (None, None), "{name}");
        assert!(
            f.children.as_deref().unwrap_or_default().len() >= 2,
            "{name}: its items are still drawn where they are"
        );
    }
}

#[test]
fn an_item_drawn_over_the_one_before_is_absolute_and_the_rest_auto_layout() {
    // Sphinx's `div.document`: the body as wide as the row, the sidebar pulled over it by
    // `margin-left: -100%`, an empty `div.clearer` after them.
    let out = page(
        "<div id=doc class=f style=\"gap: 0; align-items: flex-start\">\
         <div id=body style=\"width:100%;height:40px;background:#ddd;flex-shrink:0\"></div>\
         <div id=side style=\"margin-left:-100%;width:80px;height:20px;background:#0a0;flex-shrink:0\"></div>\
         <div class=clearer></div></div>",
    );
    let doc = frame(&out, "doc");
    assert_eq!(doc.layout_mode, Some(LayoutMode::HORIZONTAL));
    let (body, side) = (kid(doc, "body"), kid(doc, "side"));
    assert_eq!(body.layout_positioning, None);
    assert_eq!(side.layout_positioning, Some(LayoutPositioning::ABSOLUTE));
    assert_eq!((side.x, side.y, body.x), (8.0, 8.0, 8.0), "each where Chromium put it");
    assert_eq!((doc.padding_left, doc.padding_top), (Some(8.0), Some(8.0)));
    let clearer = kid(doc, "clearer");
    assert_eq!(clearer.layout_positioning, Some(LayoutPositioning::ABSOLUTE), "empty, within the body");
}

fn kid<'a>(f: &'a Node, name: &str) -> &'a Node {
    f.children.iter().flatten().find(|k| k.name == name).unwrap_or_else(|| panic!("{name} in {}", f.name))
}

#[test]
fn items_fill_and_hug_as_css_sizes_them() {
    // A toolbar: a search box that grows between two buttons, every item stretched to the
    // row's height; the row's height is its items' (height: auto), its width its parent's.
    let out = page(
        "<div id=bar class=f style=\"align-items: stretch; width: 500px\">\
         <div id=home style=\"background:#ccc;padding:4px 10px\">Home</div>\
         <div id=search style=\"flex-grow:1;background:#fff\"></div>\
         <div id=help style=\"background:#ccc;padding:4px 10px\">Help</div></div>\
         <div id=chip class=f style=\"display:inline-flex;width:auto;padding:4px 6px\"><span class=dot></span>Tag</div>",
    );
    let bar = frame(&out, "bar");
    assert_eq!(bar.layout_mode, Some(LayoutMode::HORIZONTAL));
    // Its height hugs the items (and they keep their own, which is the row's); its width is fixed.
    assert_eq!((bar.layout_sizing_horizontal, bar.layout_sizing_vertical), (None, Some(LayoutSizing::HUG)));
    assert_eq!(kid(bar, "search").layout_sizing_horizontal, Some(LayoutSizing::FILL));
    // A button's words: the box hugs them both ways, and the text follows its words.
    let home = kid(bar, "home");
    assert_eq!(
        (home.layout_sizing_horizontal, home.layout_sizing_vertical),
        (Some(LayoutSizing::HUG), Some(LayoutSizing::HUG))
    );
    assert_eq!(home.layout_mode, Some(LayoutMode::VERTICAL));
    assert_eq!(kid(home, "Home").text_auto_resize, Some(TextAutoResize::WIDTH_AND_HEIGHT));
    // An inline-flex chip is as wide and as tall as its content.
    let chip = frame(&out, "chip");
    assert_eq!(
        (chip.layout_sizing_horizontal, chip.layout_sizing_vertical),
        (Some(LayoutSizing::HUG), Some(LayoutSizing::HUG))
    );

    // A fixed height: items stretched to it FILL it, and the row does not hug.
    let out = page(
        "<div id=tall class=f style=\"align-items: stretch; height: 60px\">\
         <div id=a style=\"background:#ccc;width:50px\"></div><div id=b style=\"background:#ccc;width:50px;align-self:flex-start;height:20px\"></div></div>",
    );
    let tall = frame(&out, "tall");
    assert_eq!(tall.layout_sizing_vertical, None);
    assert_eq!(kid(tall, "a").layout_sizing_vertical, Some(LayoutSizing::FILL));
    assert_eq!(kid(tall, "b").layout_sizing_vertical, None);
}

#[test]
fn justify_content_is_figma_s_alignment_where_it_puts_items_alike() {
    let out = page(
        "<div id=centred class=f style=\"justify-content:center\"><span class=dot></span><span class=dot></span></div>\
         <div id=ends class=f style=\"justify-content:flex-end\"><span class=dot></span><span class=dot></span></div>\
         <div id=apart class=f style=\"justify-content:space-between\"><span class=dot></span><span class=dot></span><span class=dot></span></div>\
         <div id=reversed class=f style=\"justify-content:center;flex-direction:row-reverse\"><span class=dot></span><span class=dot></span></div>",
    );
    let align = |name: &str| {
        let f = frame(&out, name);
        (f.primary_axis_align_items, f.padding_left, f.padding_right)
    };
    assert_eq!(align("centred"), (Some(PrimaryAlign::CENTER), Some(8.0), Some(8.0)));
    assert_eq!(align("ends"), (Some(PrimaryAlign::MAX), Some(8.0), Some(8.0)));
    assert_eq!(align("apart"), (Some(PrimaryAlign::SPACE_BETWEEN), Some(8.0), Some(8.0)));
    // Reversed, the items are in the other order: placed from where the first one starts.
    assert_eq!(frame(&out, "reversed").primary_axis_align_items, Some(PrimaryAlign::MIN));
}

#[test]
fn a_positioned_child_is_absolute_and_the_items_still_auto_layout() {
    let out = page(
        "<div id=card class=f style=\"position:relative\"><span class=dot></span>Inbox\
         <span id=badge style=\"position:absolute;right:-4px;top:-4px;width:8px;height:8px;background:#d00\"></span></div>",
    );
    let card = frame(&out, "card");
    assert_eq!(card.layout_mode, Some(LayoutMode::HORIZONTAL));
    let kids: Vec<(&str, Option<LayoutPositioning>)> =
        card.children.iter().flatten().map(|k| (k.name.as_str(), k.layout_positioning)).collect();
    assert_eq!(kids, [("dot", None), ("Inbox", None), ("badge", Some(LayoutPositioning::ABSOLUTE))]);
    let badge = kid(card, "badge");
    // Where Chromium put it: 4 px past the card's right edge (400 + 2 × 8 padding wide).
    assert_eq!((badge.x, badge.y), (416.0 + 4.0 - 8.0, -4.0));
}

#[test]
fn blocks_with_one_gap_stack_as_vertical_auto_layout() {
    // A card: a heading and two paragraphs, margins alike; a menu whose items have different
    // gaps, and a box with a float, stay placed as they are.
    let out = page(
        "<div id=card style=\"position:relative;width:300px;padding:16px;background:#eef\">\
         <h3 style=\"margin:0 0 8px;font-size:16px\">Plan</h3><p style=\"margin:0 0 8px\">Monthly, with a trial.</p>\
         <p style=\"margin:0 0 8px\">Cancel any time.</p>\
         <span id=flag style=\"position:absolute;top:0;right:0;width:6px;height:6px;background:#d00\"></span></div>\
         <div id=uneven style=\"width:300px;background:#efe\"><p style=\"margin:0 0 4px\">a</p><p style=\"margin:0 0 12px\">b</p><p style=margin:0>c</p></div>\
         <div id=floats style=\"width:300px;background:#fee\"><p style=\"margin:0;float:left\">a</p><p style=margin:0>b</p></div>",
    );
    let card = frame(&out, "card");
    assert_eq!(card.layout_mode, Some(LayoutMode::VERTICAL));
    assert_eq!(card.item_spacing, Some(8.0));
    assert_eq!((card.padding_left, card.padding_right), (Some(16.0), Some(16.0)));
    // The padding, to where the heading's text box starts (its line box, within a pixel).
    assert!(card.padding_top.is_some_and(|p| (p - 16.0).abs() <= 1.0), "{:?}", card.padding_top);
    // The last margin and the padding follow the last paragraph: the card's height is its content's.
    assert_eq!(card.layout_sizing_vertical, Some(LayoutSizing::HUG));
    let texts: Vec<_> = card.children.iter().flatten().filter(|k| k.kind == NodeType::TEXT).collect();
    assert_eq!(texts.len(), 3);
    assert!(texts.iter().all(|t| t.layout_sizing_horizontal == Some(LayoutSizing::FILL)), "{texts:?}");
    assert_eq!(kid(card, "flag").layout_positioning, Some(LayoutPositioning::ABSOLUTE));
    for name in ["uneven", "floats"] {
        assert_eq!(frame(&out, name).layout_mode, None, "{name}");
    }
}

#[test]
fn a_percentage_width_fills_and_a_collapsed_margin_is_its_items_height() {
    // Sphinx's body: `width: 100%` in a flex row grows with it (FILL), and the row is as tall as
    // the body, whose last paragraph's bottom margin collapses through its wrapper into it (the
    // row HUGs its height). A fixed width of the same size stays FIXED.
    let out = page(
        "<div id=doc class=f style=\"gap: 0; align-items: stretch; padding: 0\">\
         <div id=body style=\"width:100%;background:#ddd\"><div><p style=\"margin:0 0 16px\">text</p></div></div></div>\
         <div id=fixed class=f style=\"gap: 0; padding: 0\"><div id=wide style=\"width:400px;height:10px;background:#ddd\"></div></div>\
         <style>#spec { width: 100% } .later { width: 400px }</style>\
         <div id=specific class=f style=\"gap: 0; padding: 0\"><div id=spec class=later style=\"height:10px;background:#ddd\"></div></div>",
    );
    let doc = frame(&out, "doc");
    assert_eq!(doc.layout_mode, Some(LayoutMode::HORIZONTAL));
    assert_eq!(kid(doc, "body").layout_sizing_horizontal, Some(LayoutSizing::FILL));
    assert_eq!(doc.layout_sizing_vertical, Some(LayoutSizing::HUG), "{doc:#?}");
    let fixed = frame(&out, "fixed");
    assert_ne!(kid(fixed, "wide").layout_sizing_horizontal, Some(LayoutSizing::FILL));
    // The cascade's winner, not the last rule written: the id's 100 % over the later class's px.
    let specific = frame(&out, "specific");
    assert_eq!(kid(specific, "spec").layout_sizing_horizontal, Some(LayoutSizing::FILL));
}
