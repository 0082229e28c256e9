//! Flex containers as auto layout (issue 39, item 2): text lying loose in a flex container is an
//! anonymous flex item, and a wrapping container whose items lie on one line is auto layout too;
//! where Figma could not put every item where Chromium did, the frame keeps absolute positions.
//! Against real Chromium.

mod common;

use code2des_convert::doc::{CounterAlign, LayoutMode, NodeType};
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
    assert_eq!(frame(&out, "col").layout_mode, Some(LayoutMode::VERTICAL));
}

#[test]
fn what_auto_layout_cannot_reproduce_keeps_absolute_positions() {
    // Wrapped onto two lines, and items that overlap (a negative margin, as Sphinx's
    // `div.document` and its sidebar): Figma's auto layout would move something.
    let out = page(
        "<div id=wrapped class=f style=\"flex-wrap: wrap; width: 100px\">\
         <span style=\"width:60px;height:10px;display:block\"></span><span style=\"width:60px;height:10px;display:block\"></span></div>\
         <div id=overlap class=f><p style=\"margin:0;width:50px\">x</p><p style=\"margin:0 0 0 -30px\">y</p></div>",
    );
    for name in ["wrapped", "overlap"] {
        let f = frame(&out, name);
        assert_eq!(f.layout_mode, None, "{name}");
        let kids = f.children.as_deref().unwrap_or_default();
        assert!(kids.len() >= 2, "{name}: its items are still drawn where they are");
    }
}
