//! Components (issue 39, item 4): three or more sibling elements of one structure become a
//! COMPONENT, in place of the first, and INSTANCEs of it, where each instance would show as the
//! page does with only what Figma lets an instance override (text, images, names, and the sizes
//! and places that follow). Against real Chromium.

mod common;

use code2des_convert::doc::{NodeType, Paint};
use code2des_convert::{Node, Output};

fn page(body: &str) -> Output {
    common::run(&format!(
        "<!DOCTYPE html><html><head><style>body {{ margin: 0; font: 16px/20px 'DejaVu Sans' }} \
         .card {{ width: 200px; margin: 10px; padding: 12px; background: #f4f4f8; border-radius: 8px }} \
         .card h3 {{ margin: 0 0 8px; font-size: 18px }} .card p {{ margin: 0 }}</style></head>\
         <body>{body}</body></html>"
    ))
}

fn all(out: &Output) -> Vec<&Node> {
    out.document.walk().map(|(n, _)| n).collect()
}

fn of_kind(out: &Output, kind: NodeType) -> Vec<&Node> {
    all(out).into_iter().filter(|n| n.kind == kind).collect()
}

const CARD: &str = "<div class=card><h3>{t}</h3><p>{p}</p></div>";

fn card(title: &str, words: &str) -> String {
    CARD.replace("{t}", title).replace("{p}", words)
}

#[test]
fn three_cards_alike_are_a_component_and_two_instances_with_their_own_text() {
    let out = page(
        &[
            card("Fast setup", "Minutes."),
            card("Rollback", "Every deploy is kept, and you go back to any of them in seconds."),
            card("Logs", "Side by side."),
        ]
        .concat(),
    );
    let components = of_kind(&out, NodeType::COMPONENT);
    assert_eq!(components.len(), 1, "one component");
    let c = components[0];
    assert_eq!(c.name, "card");
    let id = c.id.clone().expect("a component has an id");
    let instances = of_kind(&out, NodeType::INSTANCE);
    assert_eq!(instances.len(), 2);
    for i in &instances {
        assert_eq!(i.component_id.as_deref(), Some(id.as_str()));
        // The same layers, showing its own words.
        let kinds = |n: &Node| n.children.iter().flatten().map(|k| k.kind).collect::<Vec<_>>();
        assert_eq!(kinds(i), kinds(c));
    }
    let texts: Vec<&str> = instances.iter().filter_map(|i| i.children.as_ref()?[1].characters.as_deref()).collect();
    assert_eq!(texts, ["Every deploy is kept, and you go back to any of them in seconds.", "Side by side."]);
    // The wrapped paragraph makes its card taller: the instance's own size.
    assert!(instances[0].height > c.height + 10.0, "{} vs {}", instances[0].height, c.height);
}

#[test]
fn a_member_that_looks_otherwise_is_left_a_frame_and_two_alike_are_no_component() {
    let other = "<div class=card style=\"background:#fee\"><h3>Odd</h3><p>Red.</p></div>";
    let out = page(&[card("One", "a"), other.to_owned(), card("Two", "b")].concat());
    assert!(of_kind(&out, NodeType::COMPONENT).is_empty(), "only two alike");
    assert!(of_kind(&out, NodeType::INSTANCE).is_empty());
    let four = page(&[card("One", "a"), other.to_owned(), card("Two", "b"), card("Three", "c")].concat());
    assert_eq!(of_kind(&four, NodeType::COMPONENT).len(), 1);
    assert_eq!(of_kind(&four, NodeType::INSTANCE).len(), 2);
    let shows = |n: &Node, words: &str| n.children.iter().flatten().any(|k| k.characters.as_deref() == Some(words));
    let odd = all(&four).into_iter().find(|n| shows(n, "Odd")).expect("the odd card");
    assert_eq!(odd.kind, NodeType::FRAME);
}

#[test]
fn table_rows_alike_are_instances_of_one_row_and_no_component_nests_in_another() {
    let rows: String = (1..=4).map(|i| format!("<tr><td>Item {i}</td><td>{}</td></tr>", i * 10)).collect();
    let out = page(&format!("<table>{rows}</table>"));
    assert_eq!(of_kind(&out, NodeType::COMPONENT).len(), 1);
    assert_eq!(of_kind(&out, NodeType::INSTANCE).len(), 3);
    // Cards of three alike lists each: the cards are the component, their lists are not.
    let list = |t: &str| {
        format!("<div class=card><h3>{t}</h3><ul><li><p>a</p></li><li><p>b</p></li><li><p>c</p></li></ul></div>")
    };
    let out = page(&[list("A"), list("B"), list("C")].concat());
    assert_eq!(of_kind(&out, NodeType::COMPONENT).len(), 1);
    let component = of_kind(&out, NodeType::COMPONENT)[0];
    assert!(component.walk().skip(1).all(|(n, _)| n.kind != NodeType::COMPONENT && n.kind != NodeType::INSTANCE));
}

#[test]
fn cards_each_with_its_own_icon_swap_icon_components_beside_the_screen() {
    let icon = |shape: &str| {
        format!("<svg class=icon width=22 height=22 viewBox=\"0 0 22 22\"><{shape} fill=\"#3050e0\"/></svg>")
    };
    let with_icon = |shape: &str, title: &str| {
        format!("<div class=card><div class=badge>{}</div><h3>{title}</h3><p>Words.</p></div>", icon(shape))
    };
    let out = page(
        &[
            with_icon("rect width=\"22\" height=\"22\"", "One"),
            with_icon("circle cx=\"11\" cy=\"11\" r=\"11\"", "Two"),
            with_icon("rect width=\"22\" height=\"22\"", "Three"),
        ]
        .concat(),
    );
    // Two distinct icons (the third card draws the first's again): two components beside the
    // screen, each drawing its SVG, to the right of the page.
    let beside = out.document.components.as_deref().expect("components beside the screen");
    assert_eq!(beside.len(), 2, "{beside:#?}");
    for c in beside {
        assert_eq!(c.kind, NodeType::COMPONENT);
        assert!(c.x >= out.document.width, "{} is beside a screen {} wide", c.x, out.document.width);
        let kids = c.children.as_deref().unwrap_or_default();
        assert!(kids.len() == 1 && kids[0].kind == NodeType::SVG, "{kids:#?}");
    }
    let ids: Vec<&str> = beside.iter().filter_map(|c| c.id.as_deref()).collect();
    // The card is a component, the others its instances; in each, the icon is an instance of its
    // own icon component.
    let cards: Vec<&Node> = all(&out)
        .into_iter()
        .filter(|n| n.name == "card" && matches!(n.kind, NodeType::COMPONENT | NodeType::INSTANCE))
        .collect();
    assert_eq!(
        cards.iter().map(|c| c.kind).collect::<Vec<_>>(),
        [NodeType::COMPONENT, NodeType::INSTANCE, NodeType::INSTANCE]
    );
    let icon_of = |card: &Node| {
        let n = card
            .walk()
            .map(|(n, _)| n)
            .find(|n| n.kind == NodeType::INSTANCE && n.component_id.as_deref().is_some_and(|c| ids.contains(&c)));
        n.and_then(|n| n.component_id.clone()).expect("an icon instance")
    };
    let used: Vec<String> = cards.iter().map(|c| icon_of(c)).collect();
    assert_eq!(used, [ids[0], ids[1], ids[0]]);
}

/// Every node with its place on the page.
fn placed(n: &Node, (ox, oy): (f64, f64), out: &mut Vec<(f64, f64, Node)>) {
    let (x, y) = (ox + n.x, oy + n.y);
    out.push((x, y, n.clone()));
    for c in n.children.iter().flatten() {
        placed(c, (x, y), out);
    }
}

#[test]
fn list_items_with_code_in_other_places_are_one_component_their_codes_backgrounds_behind_them() {
    let list = |li_style: &str, under: &str| {
        let li = |t: &str| format!("<li style=\"{li_style}\">{under}<p style=\"margin: 0\">{t}</p></li>");
        format!(
            "<style>code {{ background: rgb(230, 230, 230); border-radius: 3px; font-family: 'DejaVu Sans Mono' }}</style>\
             <ul style=\"margin: 0; padding: 0 0 0 30px; width: 400px\">{}{}{}{}</ul>",
            li("Use <code>o.__dict__</code> as the globals."),
            li("If <code>o</code> is a class, use <code>vars(o)</code> as the locals."),
            li("Plain words, no code at all."),
            li("And <code>eval()</code> last."),
        )
    };
    let grey = |n: &Node| {
        n.kind != NodeType::TEXT
            && n.fills
                .iter()
                .flatten()
                .any(|f| matches!(f, Paint::Solid { color, .. } if (color.r - 230.0 / 255.0).abs() < 0.01))
    };
    let out = page(&list("", ""));
    let components = of_kind(&out, NodeType::COMPONENT);
    assert_eq!(components.len(), 1, "{:#?}", out.document.children);
    let id = components[0].id.clone();
    let instances = of_kind(&out, NodeType::INSTANCE);
    assert_eq!(instances.len(), 3);
    assert!(instances.iter().all(|i| i.component_id == id));
    // No member holds a background of its code: an instance holds only its component's layers.
    for m in components.iter().chain(&instances) {
        assert!(m.walk().all(|(n, _)| !grey(n)), "{m:#?}");
    }
    // They stand right behind their items, where the page drew them: as a list whose items
    // paint (so that behind them they would not show) keeps them, each in its item.
    let painted = page(&list("background: rgb(255, 255, 254)", ""));
    assert!(of_kind(&painted, NodeType::COMPONENT).is_empty(), "the items differ in their code's backgrounds");
    let boxes = |out: &Output| {
        let mut all = Vec::new();
        placed(&out.document, (0.0, 0.0), &mut all);
        all.into_iter().filter(|(_, _, n)| grey(n)).map(|(x, y, n)| [x, y, n.width, n.height]).collect::<Vec<_>>()
    };
    // Nor do they leave items where a layer of the item's own is drawn under them: behind the
    // item, it would cover them.
    let under = "<span style=\"position: absolute; z-index: -1; inset: 0; background: rgb(250, 250, 200)\"></span>";
    let covered = page(&list("position: relative; z-index: 0", under));
    assert!(of_kind(&covered, NodeType::COMPONENT).is_empty(), "{:#?}", covered.document.children);
    assert_eq!(boxes(&covered).len(), 4);
    let (lifted, kept) = (boxes(&out), boxes(&painted));
    assert_eq!(lifted.len(), 4, "{lifted:?}");
    for (a, b) in lifted.iter().zip(&kept) {
        assert!(a.iter().zip(b).all(|(p, q)| (p - q).abs() < 0.01), "{a:?} against {b:?}");
    }
    let kids = out.document.children.as_deref().unwrap_or_default();
    for (i, _) in kids.iter().enumerate().filter(|(_, k)| grey(k)) {
        let next = kids[i + 1..].iter().find(|n| !grey(n)).expect("its item after it");
        assert!(matches!(next.kind, NodeType::COMPONENT | NodeType::INSTANCE), "{next:#?}");
    }
}

#[test]
fn cards_whose_tags_wrap_otherwise_are_instances_of_one_card() {
    let tags = |t: [&str; 3]| {
        format!(
            "<div class=card><h3>Tags</h3><div class=tags style=\"display:flex;flex-wrap:wrap;gap:4px\">\
             <span style=\"padding:2px 6px;background:#dde\">{}</span><span style=\"padding:2px 6px;background:#dde\">{}</span>\
             <span style=\"padding:2px 6px;background:#dde\">{}</span></div></div>",
            t[0], t[1], t[2]
        )
    };
    let out = page(
        &[tags(["a", "b", "c"]), tags(["a longer tag", "another long tag", "x"]), tags(["mid", "mid", "mid"])].concat(),
    );
    let rows: Vec<&Node> = all(&out).into_iter().filter(|n| n.name == "tags").collect();
    assert_eq!(rows.len(), 3);
    assert!(
        rows.iter().all(|r| r.layout_wrap == Some(code2des_convert::doc::LayoutWrap::WRAP)),
        "each row wraps in Figma"
    );
    assert!(rows[1].height > rows[0].height + 10.0, "the second card's tags take more rows");
    // Figma wraps each instance's tags as its words make them: one component, two instances.
    assert_eq!(of_kind(&out, NodeType::COMPONENT).len(), 1);
    assert_eq!(of_kind(&out, NodeType::INSTANCE).len(), 2);
}
