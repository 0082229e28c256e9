//! A block's line of pieces (a name and the badge after it) as Figma's wrapping auto layout,
//! each inline box in a frame that holds its margin and its place in the line, so the badge
//! wraps onto the next line in Figma where it did in Chromium, margin and all. Against real
//! Chromium.

mod common;

use code2des_convert::doc::{LayoutMode, LayoutWrap, NodeType};
use code2des_convert::{Node, Output};

/// Three items of a narrow list: a name, then a badge (an inline-block with a margin, as
/// rustdoc's `Experimental`). The third's name is long: its badge wraps under it.
fn items(names: [&str; 3]) -> Output {
    let item = |name: &str| {
        format!("<div class=item><a href=\"https://example.com/{name}\">{name}</a><span class=badge>New</span></div>")
    };
    common::run(&format!(
        "<!DOCTYPE html><html><head><style>body {{ margin: 0; font: 16px/24px 'DejaVu Sans' }} \
         .item {{ width: 170px; padding-right: 10px }} \
         .badge {{ display: inline-block; margin-left: 6px; padding: 1px 4px; font-size: 12px; \
         line-height: 16px; background: #fd8; border-radius: 3px; vertical-align: text-bottom }}</style></head>\
         <body>{}</body></html>",
        names.map(item).concat()
    ))
}

fn named<'a>(out: &'a Output, name: &str) -> Vec<&'a Node> {
    out.document.walk().map(|(n, _)| n).filter(|n| n.name == name).collect()
}

fn kids(n: &Node) -> &[Node] {
    n.children.as_deref().unwrap_or_default()
}

#[test]
fn a_name_and_its_badge_are_a_wrapping_row_whose_badge_keeps_its_margin_on_the_next_line() {
    let out = items(["Cell", "OnceCell", "SyncUnsafeCellular"]);
    let rows: Vec<&Node> = out
        .document
        .walk()
        .map(|(n, _)| n)
        .filter(|n| n.layout_wrap == Some(LayoutWrap::WRAP) && n.layout_mode == Some(LayoutMode::HORIZONTAL))
        .collect();
    assert_eq!(rows.len(), 3, "each item is a wrapping row");
    for row in &rows {
        assert_eq!((row.item_spacing, row.counter_axis_spacing), (Some(0.0), Some(0.0)));
        assert_eq!(row.padding_right, Some(10.0), "CSS's padding: the line breaks inside it");
        let [name, holder] = kids(row) else { panic!("a name and the badge's frame: {row:#?}") };
        assert_eq!(name.kind, NodeType::TEXT);
        assert!(name.hyperlink.is_some(), "the name is still its link");
        // The badge's frame holds its margin: the badge 6 px in, on the first line or the next.
        assert_eq!((holder.kind, holder.layout_mode), (NodeType::FRAME, Some(LayoutMode::HORIZONTAL)));
        assert_eq!(holder.padding_left, Some(6.0));
        let [badge] = kids(holder) else { panic!("the badge: {holder:#?}") };
        assert_eq!((badge.name.as_str(), badge.x), ("badge", 6.0));
        // As tall as the line: every row of the wrapping frame is one line high.
        assert_eq!(holder.height, name.height);
    }
    let holders: Vec<&Node> = rows.iter().map(|r| &kids(r)[1]).collect();
    // The first two stand beside their names; the third's wrapped to the start of the next line.
    assert!(holders[0].x > 0.0 && holders[1].x > 0.0 && holders[0].y == holders[1].y);
    assert_eq!(holders[2].x, 0.0, "{:#?}", rows[2]);
    let name = &kids(rows[2])[0];
    assert_eq!(holders[2].y, name.y + name.height, "on the second line: {:#?}", rows[2]);
    assert!(rows[2].height > rows[0].height + 20.0, "two lines high");
    // Alike but for the words and where they wrap: one component, two instances.
    let components: Vec<&Node> = named(&out, "item").into_iter().filter(|n| n.kind == NodeType::COMPONENT).collect();
    let instances = named(&out, "item").into_iter().filter(|n| n.kind == NodeType::INSTANCE).count();
    assert_eq!((components.len(), instances), (1, 2));
}

#[test]
fn a_text_that_wraps_within_itself_beside_a_badge_is_left_as_it_was() {
    // A paragraph's words over two lines: as lines in a row, they would not reflow.
    let out = items(["Cell", "OnceCell", "A name of several words that wraps"]);
    let rows = out.document.walk().filter(|(n, _)| n.layout_wrap == Some(LayoutWrap::WRAP)).count();
    assert_eq!(rows, 2, "the first two items only");
    let third = named(&out, "item").into_iter().find(|n| n.height > 30.0).expect("the third item, two lines high");
    assert_eq!(third.layout_mode, None, "{third:#?}");
}
