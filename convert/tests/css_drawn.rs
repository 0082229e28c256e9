//! CSS that Figma can draw, drawn (issue 39, item 7): dashed, dotted and double borders,
//! text decoration as CSS sets it, text and filter shadows and blurs as effects, blend modes,
//! and boxes whose radii make an ellipse; what is drawn so is not warned. Against real
//! Chromium, one renderer for the file, as convert/tests/chromium.rs.

mod common;

use common::run;
use serde_json::{json, Value};

/// The document as JSON, and its warnings' messages.
fn convert(body: &str) -> (Value, Vec<String>) {
    let html = format!(r#"<!DOCTYPE html><html><body style="margin:0;font-family:sans-serif">{body}</body></html>"#);
    let out = run(&html);
    let doc = serde_json::to_value(&out.document).expect("a document is JSON");
    (doc, out.warnings.iter().map(|w| format!("{}: {}", w.node.as_deref().unwrap_or(""), w.message)).collect())
}

/// The first node of that name, depth first.
fn named<'v>(n: &'v Value, name: &str) -> &'v Value {
    fn find<'v>(n: &'v Value, name: &str) -> Option<&'v Value> {
        if n["name"] == name {
            return Some(n);
        }
        n["children"].as_array()?.iter().find_map(|c| find(c, name))
    }
    find(n, name).unwrap_or_else(|| panic!("no {name} in {n:#}"))
}

#[test]
fn dashed_dotted_and_double_borders_are_drawn_as_chromium_draws_them() {
    let (doc, warnings) = convert(
        r#"<div id="dashed" style="border:3px dashed rgb(255, 0, 0);width:100px;height:40px"></div>
        <div id="thin" style="border-bottom:1px dashed rgb(255, 0, 0);width:100px;height:40px"></div>
        <div id="dots" style="border:4px dotted rgb(0, 0, 255);width:100px;height:40px"></div>
        <div id="small-dots" style="border:2px dotted rgb(0, 0, 255);width:100px;height:40px"></div>
        <div id="double" style="border:9px double rgb(0, 128, 0);width:100px;height:40px"></div>
        <div id="thin-double" style="border:2px double rgb(0, 128, 0);width:100px;height:40px"></div>"#,
    );
    assert!(warnings.is_empty(), "{warnings:#?}");
    // Measured on Chromium's screenshot: 3px dashes are 6 on, 3 off; under 3px, 3w on, 2w off.
    assert_eq!(named(&doc, "dashed")["dashPattern"], json!([6.0, 3.0]));
    let thin = named(&doc, "thin");
    assert_eq!((&thin["dashPattern"], &thin["strokeBottomWeight"]), (&json!([3.0, 2.0]), &json!(1.0)));
    let dots = named(&doc, "dots");
    assert_eq!((&dots["dashPattern"], &dots["strokeCap"]), (&json!([0.0, 8.0]), &json!("ROUND")));
    let small = named(&doc, "small-dots");
    assert_eq!((&small["dashPattern"], small.get("strokeCap")), (&json!([2.0, 2.0]), None));
    // Double: the outer third is the node's stroke, the inner third a rectangle inset by two.
    let double = named(&doc, "double");
    assert_eq!(double["strokeWeight"], 3.0);
    let inner = &double["children"][0];
    assert_eq!(inner["name"], "Double border");
    assert_eq!([&inner["x"], &inner["y"], &inner["width"], &inner["height"]], [6.0, 6.0, 106.0, 46.0]);
    assert_eq!((&inner["strokeWeight"], &inner["strokeAlign"]), (&json!(3.0), &json!("INSIDE")));
    assert_eq!(inner["fills"], json!([]));
    // Under 3px Chromium draws a double border solid.
    let thin = named(&doc, "thin-double");
    assert_eq!((thin["strokeWeight"].as_f64(), thin.get("children")), (Some(2.0), None));
}

/// A stroke's colour as 0–255 channels, and its per-side weights (top, right, bottom, left).
fn sides(n: &Value) -> ([i64; 3], [f64; 4]) {
    let c = &n["strokes"][0]["color"];
    let ch = |k: &str| (c[k].as_f64().expect("a channel") * 255.0).round() as i64;
    let w = |k: &str| n[k].as_f64().unwrap_or_else(|| n["strokeWeight"].as_f64().expect("a weight"));
    (
        [ch("r"), ch("g"), ch("b")],
        [w("strokeTopWeight"), w("strokeRightWeight"), w("strokeBottomWeight"), w("strokeLeftWeight")],
    )
}

#[test]
fn inset_and_outset_borders_and_sides_of_other_colours_are_drawn_each_in_its_colour() {
    // Figma has one stroke paint a node: the first side's colour is the box's stroke, each
    // other colour a rectangle of the box's size over it, stroked on its own sides.
    let (doc, warnings) = convert(
        r#"<table id="outset" border="1" style="border-collapse:separate"><tr><td id="cell">x</td></tr></table>
        <div id="grey" style="border:3px outset rgb(128, 128, 128);width:100px;height:40px"></div>
        <div id="sides" style="border:2px solid rgb(255, 0, 0);border-bottom-color:rgb(0, 0, 255);width:100px;height:40px"></div>
        <p style="width:120px"><span style="border-left:3px solid rgb(255, 0, 0);border-right:3px solid rgb(0, 0, 255);background:rgb(238, 238, 238)">one two three four five six seven</span></p>"#,
    );
    assert!(warnings.is_empty(), "{warnings:#?}");
    // <table border=1>: the table outset, its cells inset, in black's two shades as Chromium
    // draws them (#a8a8a8 and #545454, measured).
    let table = named(&doc, "outset");
    assert_eq!(sides(table), ([168; 3], [1.0, 0.0, 0.0, 1.0]));
    let bottom_right = &table["children"][0];
    assert_eq!(bottom_right["name"], "Border");
    assert_eq!(sides(bottom_right), ([84; 3], [0.0, 1.0, 1.0, 0.0]));
    assert_eq!((&bottom_right["width"], &bottom_right["height"]), (&table["width"], &table["height"]));
    let cell = named(&doc, "cell");
    assert_eq!(sides(cell).0, [84; 3]);
    assert_eq!(sides(&cell["children"][0]).0, [168; 3]);
    // Grey outset: light top and left (Blink's Light(): 212), dark bottom and right (Dark(): 44).
    let grey = named(&doc, "grey");
    assert_eq!(sides(grey), ([212; 3], [3.0, 0.0, 0.0, 3.0]));
    assert_eq!(sides(&grey["children"][0]), ([44; 3], [0.0, 3.0, 3.0, 0.0]));
    // A bottom of another colour than the rest: no longer drawn in the first side's.
    let red = named(&doc, "sides");
    assert_eq!(sides(red), ([255, 0, 0], [2.0, 2.0, 0.0, 2.0]));
    assert_eq!(sides(&red["children"][0]), ([0, 0, 255], [0.0, 0.0, 2.0, 0.0]));
    // An inline box broken across lines: its left side on its first line only, its right side
    // on its last only, each fragment's stroke the colour of the side it has.
    let fragments: Vec<&Value> = doc["children"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|n| n["fills"][0]["color"]["r"] == json!(0.93333))
        .collect();
    assert!(fragments.len() >= 3, "{fragments:#?}");
    let (first, last) = (fragments[0], fragments[fragments.len() - 1]);
    assert_eq!(sides(first), ([255, 0, 0], [0.0, 0.0, 0.0, 3.0]));
    assert_eq!(sides(last), ([0, 0, 255], [0.0, 3.0, 0.0, 0.0]));
    assert!(fragments.iter().all(|f| f.get("children").is_none()), "{fragments:#?}");
}

#[test]
fn radii_making_an_ellipse_are_an_ellipse_and_a_square_keeps_its_corner_radius() {
    let (doc, warnings) = convert(
        r#"<div id="pill" style="border-radius:50%;background:rgb(255, 160, 0);width:160px;height:60px">
        <span>In it</span></div>
        <div id="round" style="border-radius:50%;background:rgb(255, 160, 0);width:60px;height:60px"></div>
        <div id="clipped" style="border-radius:50%;overflow:hidden;background:rgb(255, 160, 0);width:160px;height:60px"></div>
        <div id="stadium" style="border-radius:999px;background:rgb(255, 160, 0);width:160px;height:60px"><span>Tag</span></div>"#,
    );
    let pill = named(&doc, "pill");
    assert_eq!((&pill["type"], &pill["width"], &pill["height"]), (&json!("ELLIPSE"), &json!(160.0), &json!(60.0)));
    assert!(pill.get("cornerRadius").is_none());
    // Its content follows it, drawn over it.
    assert_eq!(named(&doc, "In it")["type"], "TEXT");
    assert_eq!(named(&doc, "round")["cornerRadius"], 30.0);
    // A frame that clips stays one, its corners circular, and says so.
    assert_eq!(named(&doc, "clipped")["type"], "FRAME");
    assert_eq!(warnings, ["clipped: border-radius: 50% drawn circular: the box is a frame"]);
    // A radius past the box is scaled by CSS to half its shorter side: a pill, which is Figma's
    // corner radius (no rounder than that), not an ellipse, and nothing to say.
    let stadium = named(&doc, "stadium");
    assert_eq!((&stadium["type"], &stadium["cornerRadius"]), (&json!("FRAME"), &json!(30.0)));
}

#[test]
fn blend_modes_filters_and_text_shadows_are_effects_figma_draws() {
    let (doc, warnings) = convert(
        r#"<div id="mult" style="mix-blend-mode:multiply"><p>blended</p></div>
        <div id="plus" style="mix-blend-mode:plus-lighter;background:rgb(0, 0, 255);height:10px"></div>
        <div id="blurred" style="filter:blur(3px);background:rgb(120, 0, 160);height:20px"></div>
        <div id="dropped" style="filter:drop-shadow(rgb(0, 0, 0) 4px 5px 2px);background:rgb(250, 250, 120);height:20px"></div>
        <div id="bare" style="filter:drop-shadow(rgb(0, 0, 0) 4px 5px 2px)"><p>no background</p></div>
        <p style="text-shadow:rgb(255, 0, 0) 3px 3px 2px, rgb(0, 0, 255) 1px 1px 0px">shadowed</p>"#,
    );
    assert_eq!(named(&doc, "mult")["blendMode"], "MULTIPLY");
    assert_eq!(named(&doc, "plus")["blendMode"], "LINEAR_DODGE");
    // Figma's blur radius is twice the Gaussian's deviation, which CSS's blur() gives.
    assert_eq!(named(&doc, "blurred")["effects"], json!([{"type": "LAYER_BLUR", "radius": 6.0}]));
    let shadow = json!([{"type": "DROP_SHADOW", "color": {"r": 0.0, "g": 0.0, "b": 0.0, "a": 1.0},
        "offset": {"x": 4.0, "y": 5.0}, "radius": 2.0}]);
    assert_eq!(named(&doc, "dropped")["effects"], shadow);
    assert!(named(&doc, "no background").get("effects").is_none());
    // CSS paints the first shadow on top, Figma the last.
    let text = &named(&doc, "shadowed")["effects"];
    assert_eq!((text[0]["color"]["b"].as_f64(), text[1]["color"]["r"].as_f64()), (Some(1.0), Some(1.0)));
    assert_eq!(text[1]["offset"], json!({"x": 3.0, "y": 3.0}));
    assert_eq!(
        warnings,
        ["bare: filter: drop-shadow(rgb(0, 0, 0) 4px 5px 2px) not drawn: drop-shadow() is drawn on a box with a background only"]
    );
}

#[test]
fn text_decoration_carries_its_style_colour_thickness_offset_and_ink_skipping() {
    let (doc, warnings) = convert(
        r#"<p style="font-size:20px">Plain <span style="text-decoration:underline wavy rgb(255, 0, 0) 2px;text-underline-offset:4px;text-decoration-skip-ink:none">wavy red</span> and <span style="text-decoration:line-through dotted">dotted</span></p>
        <p style="text-decoration:underline dotted rgb(0, 0, 255)">all dotted</p>"#,
    );
    assert!(warnings.is_empty(), "{warnings:#?}");
    let para = named(&doc, "Plain wavy red and dotted");
    let segs = para["segments"].as_array().expect("segments");
    let wavy = segs.iter().find(|g| g["textDecorationStyle"] == "WAVY").expect("a wavy run");
    assert_eq!(wavy["textDecoration"], "UNDERLINE");
    assert_eq!(wavy["textDecorationColor"], json!({"r": 1.0, "g": 0.0, "b": 0.0, "a": 1.0}));
    assert_eq!(wavy["textDecorationThickness"], json!({"unit": "PIXELS", "value": 2.0}));
    assert_eq!(wavy["textDecorationOffset"], json!({"unit": "PIXELS", "value": 4.0}));
    assert_eq!(wavy["textDecorationSkipInk"], false);
    let dotted = segs.iter().find(|g| g["textDecoration"] == "STRIKETHROUGH").expect("a struck run");
    // Its colour is the text's: Figma's default, left out.
    assert_eq!((&dotted["textDecorationStyle"], dotted.get("textDecorationColor")), (&json!("DOTTED"), None));
    let plain = segs.iter().find(|g| g["textDecoration"] == "NONE").expect("a plain run");
    assert!(plain.get("textDecorationStyle").is_none());
    let all = named(&doc, "all dotted");
    assert_eq!((&all["textDecorationStyle"], &all["textDecorationColor"]["b"]), (&json!("DOTTED"), &json!(1.0)));
}

/// A node's x, y, width and height are these, within Chromium's rounding of turned boxes.
fn near(n: &Value, want: [f64; 4]) {
    let got = ["x", "y", "width", "height"].map(|k| n[k].as_f64().unwrap_or(f64::NAN));
    assert!(got.iter().zip(want).all(|(g, w)| (g - w).abs() < 0.05), "{got:?}, not {want:?}");
}

#[test]
fn a_rotation_is_the_nodes_about_its_top_left_its_content_in_its_own_unturned_space() {
    let (doc, warnings) = convert(
        r#"<div id="corner" style="transform:rotate(30deg);transform-origin:0 0;width:100px;height:40px;margin-left:50px;background:rgb(255, 0, 0)"></div>
        <div id="quarter" style="transform:rotate(90deg);width:100px;height:30px;background:rgb(0, 0, 255)"></div>
        <div id="badge" style="transform:rotate(-12deg);width:160px;height:60px;margin:40px;background:rgb(0, 150, 120);font-size:20px;line-height:30px">NEW badge</div>
        <div id="diagonal" style="transform:rotate(45deg);width:100px;height:30px;margin:40px">askew</div>"#,
    );
    // Turned about its top-left: the top-left stays where CSS laid it out.
    let corner = named(&doc, "corner");
    near(corner, [50.0, 0.0, 100.0, 40.0]);
    assert_eq!(corner["rotation"], -30.0);
    // Turned about its centre (50, 55): the top-left Figma turns about is at (65, 5).
    let quarter = named(&doc, "quarter");
    near(quarter, [65.0, 5.0, 100.0, 30.0]);
    assert_eq!(quarter["rotation"], -90.0);
    // Its text in the frame's own space, as if unturned.
    let badge = named(&doc, "badge");
    assert_eq!((&badge["type"], &badge["rotation"], &badge["width"]), (&json!("FRAME"), &json!(12.0), &json!(160.0)));
    let text = &badge["children"][0];
    assert_eq!(text["characters"], "NEW badge");
    assert!(text["x"].as_f64().unwrap().abs() < 0.5 && text["y"].as_f64().unwrap().abs() < 0.5, "{text:#}");
    // Text at 45°: its bounding box tells too little of its size; drawn unturned, and said.
    assert!(named(&doc, "askew").get("rotation").is_none());
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert!(warnings[0].starts_with("diagonal: transform: matrix(0.707107"), "{warnings:#?}");
}

/// The page docs/FIDELITY.md measures ("Item 7"): all of it drawn, nothing warned.
#[test]
fn the_item_7_page_is_drawn_without_a_warning() {
    let out = run(include_str!("fixtures/effects.html"));
    assert!(out.warnings.is_empty(), "{:#?}", out.warnings);
    let doc = serde_json::to_value(&out.document).expect("a document is JSON");
    let has = |n: &Value, k: &str| n.get(k).is_some();
    assert!(has(named(&doc, "dashed"), "dashPattern") && has(named(&doc, "dotted"), "strokeCap"));
    assert_eq!(named(&doc, "double")["children"][0]["name"], "Double border");
    assert_eq!(named(&doc, "pill")["type"], "ELLIPSE");
    assert!(has(named(&doc, "mult"), "blendMode") && has(named(&doc, "blurred"), "effects"));
    assert!(has(named(&doc, "dropped"), "effects") && has(named(&doc, "Shadowed heading text"), "effects"));
    assert!(["turned", "corner", "quarter"].iter().all(|n| has(named(&doc, n), "rotation")));
}
