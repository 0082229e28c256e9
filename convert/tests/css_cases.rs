//! CSS the conversion must draw as Chromium does, or say it does not (issue 37): colours in
//! every syntax, clipping by the containing block, negative z-index, the warnings of what is
//! approximated, and the limits (warnings, depth, a malformed snapshot). Against real Chromium,
//! one renderer for the file, as convert/tests/chromium.rs.

use std::sync::OnceLock;

use code2des_convert::{convert, ArtifactWarning, Options, Output, Renderer, MAX_WARNINGS, WARNING_CODES};
use serde_json::Value;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    // 1 MiB stacks, half of tokio's default (the worker's): the deep page must convert in them.
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread().thread_stack_size(1 << 20).enable_all().build().expect("a runtime")
    })
}

fn renderer() -> &'static Renderer {
    static R: OnceLock<Renderer> = OnceLock::new();
    R.get_or_init(|| runtime().block_on(Renderer::start(Options::default())).expect("Chromium starts"))
}

fn run(html: &str) -> Output {
    runtime().block_on(convert(renderer(), html.as_bytes(), false)).expect("the page converts")
}

/// Chromium's snapshot of a page, its height and the fonts it drew with, for the tests that
/// call the conversion on a snapshot of their own making.
fn snapshot(html: &str) -> (Value, f64, Vec<(String, String)>) {
    let render = renderer()
        .render(html, 1440, false, |snap, height, fonts| ((snap.clone(), height, fonts.to_vec()), Vec::new()));
    runtime().block_on(render).expect("the page renders").1
}

/// Every node, depth first, with its absolute position and the names of its ancestors.
fn nodes(doc: &Value) -> Vec<Value> {
    fn walk(n: &Value, ox: f64, oy: f64, up: &[String], out: &mut Vec<Value>) {
        let (x, y) = (ox + n["x"].as_f64().unwrap_or(0.0), oy + n["y"].as_f64().unwrap_or(0.0));
        let mut flat = n.clone();
        flat["absX"] = x.into();
        flat["absY"] = y.into();
        flat["ancestors"] = up.into();
        flat.as_object_mut().map(|o| o.remove("children"));
        out.push(flat);
        let mut up = up.to_vec();
        up.push(n["name"].as_str().unwrap_or_default().to_owned());
        for c in n["children"].as_array().into_iter().flatten() {
            walk(c, x, y, &up, out);
        }
    }
    let mut out = Vec::new();
    walk(doc, 0.0, 0.0, &[], &mut out);
    out
}

fn named<'a>(all: &'a [Value], name: &str) -> &'a Value {
    all.iter().find(|n| n["name"] == name).unwrap_or_else(|| panic!("no {name} in {all:#?}"))
}

/// A node's first solid fill, as 0–255 channels.
fn fill255(n: &Value) -> [i64; 3] {
    let c =
        &n["fills"].as_array().and_then(|f| f.iter().find(|p| p["type"] == "SOLID")).expect("a solid fill")["color"];
    ["r", "g", "b"].map(|k| (c[k].as_f64().expect("a channel") * 255.0).round() as i64)
}

/// The names of a frame's children, in paint order (Figma's: the last on top).
fn children(doc: &Value, name: &str) -> Vec<String> {
    fn find<'a>(n: &'a Value, name: &str) -> Option<&'a Value> {
        if n["name"] == name {
            return Some(n);
        }
        n["children"].as_array()?.iter().find_map(|c| find(c, name))
    }
    let frame = find(doc, name).unwrap_or_else(|| panic!("no {name}"));
    frame["children"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn warned<'a>(out: &'a [ArtifactWarning], code: &str, text: &str) -> Vec<&'a ArtifactWarning> {
    out.iter().filter(|w| w.code.as_str() == code && w.message.contains(text)).collect()
}

/// The document as the artifact carries it (kept for the test's life: tests borrow into it).
fn json(n: &code2des_convert::Node) -> &'static serde_json::Value {
    Box::leak(Box::new(serde_json::to_value(n).expect("a node tree is JSON")))
}

#[test]
fn colours_in_every_syntax_chromium_computes_are_drawn() {
    let boxes = [
        ("p3", "color(display-p3 0 1 0)", [0, 255, 0]),
        ("p3grey", "color(display-p3 0.5 0.5 0.5)", [128, 128, 128]),
        ("lab", "lab(54.29 80.8198 69.8997)", [255, 0, 0]),
        ("lch", "lch(54.29 106.85 40.86)", [255, 0, 0]),
        ("oklab", "oklab(0.62796 0.22486 0.12585)", [255, 0, 0]),
        ("oklch", "oklch(0.45201 0.31321 264.052)", [0, 0, 255]),
        ("relative", "rgb(from currentColor r g b / 50%)", [0, 128, 0]),
        ("mix", "color-mix(in srgb, red 50%, blue)", [128, 0, 128]),
        ("hsl", "hsl(120 100% 25%)", [0, 128, 0]),
        ("hwb", "hwb(240 0% 0%)", [0, 0, 255]),
        ("rec2020", "color(rec2020 1 1 1)", [255, 255, 255]),
        ("xyz", "color(xyz-d65 0.4124 0.2126 0.0193)", [255, 0, 0]),
    ];
    let divs: String = boxes
        .iter()
        .map(|(id, css, _)| format!(r#"<div id="{id}" style="width:40px;height:10px;background-color:{css}"></div>"#))
        .collect();
    let out = run(&format!(
        r#"<!DOCTYPE html><body style="margin:0;color:rgb(0, 128, 0)">{divs}
        <div id="shadow" style="width:40px;height:10px;box-shadow:0 2px 4px lab(0 0 0 / 0.5)"></div>
        <div id="border" style="width:40px;height:10px;border:2px solid oklch(0.45201 0.31321 264.052)"></div>
        <div id="grad" style="width:40px;height:10px;background:linear-gradient(color(display-p3 1 0 0), lab(0 0 0))"></div>
        <p id="text" style="color:color(display-p3 0 0 1)">blue words</p></body>"#
    ));
    let all = nodes(json(&out.document));
    for (id, css, want) in boxes {
        // Each box's only paint is its colour: it is drawn, in that colour.
        assert_eq!(fill255(named(&all, id)), want, "{css}");
    }
    let shadow = named(&all, "shadow");
    assert_eq!(shadow["effects"][0]["color"], serde_json::json!({"r": 0.0, "g": 0.0, "b": 0.0, "a": 0.5}));
    let border = named(&all, "border");
    assert_eq!(border["strokes"][0]["color"]["b"].as_f64().map(|b| (b * 255.0).round()), Some(255.0));
    let grad = named(&all, "grad");
    assert_eq!(grad["fills"][0]["gradientStops"][0]["color"]["r"], 1.0);
    let text = all.iter().find(|n| n["characters"] == "blue words").expect("the text");
    assert_eq!(fill255(text), [0, 0, 255]);
    assert!(out.warnings.iter().all(|w| !w.message.contains("could not be read")), "{:?}", out.warnings);
}

#[test]
fn a_colour_that_cannot_be_read_is_warned_and_its_box_still_drawn() {
    let (mut snap, height, fonts) = snapshot(
        r#"<!DOCTYPE html><body style="margin:0"><div id="only" style="width:50px;height:20px;background:rgb(1, 2, 3)"></div>
        <div id="edge" style="width:50px;height:20px;border:1px solid rgb(4, 5, 6)"></div></body>"#,
    );
    // A syntax a later Chromium might write: the conversion cannot know it.
    for s in snap["strings"].as_array_mut().expect("strings") {
        if s == "rgb(1, 2, 3)" {
            *s = "future-color(1 2 3)".into();
        } else if s == "rgb(4, 5, 6)" {
            *s = "future-color(4 5 6)".into();
        }
    }
    let (out, _) = code2des_convert::convert::convert(&snap, 1440, height, &fonts, None).expect("converts");
    let doc = serde_json::to_value(json(&out.document)).expect("json");
    let all = nodes(&doc);
    assert_eq!(fill255(named(&all, "only")), [128, 128, 128], "drawn grey, not dropped");
    assert_eq!(named(&all, "edge")["strokes"][0]["color"]["r"], 0.5);
    let w = warned(&out.warnings, "unsupported_css", "background-color: future-color(1 2 3)");
    assert_eq!(w.len(), 1, "{:?}", out.warnings);
    assert_eq!(w[0].node.as_deref(), Some("only"));
    assert_eq!(warned(&out.warnings, "unsupported_css", "border-top-color: future-color(4 5 6)").len(), 1);
}

#[test]
fn an_overflow_clips_only_what_it_contains() {
    let out = run(r#"<!DOCTYPE html><body style="margin:0">
        <div id="cb" style="position:relative;width:400px;height:400px">
          <div id="clipper" style="overflow:hidden;width:100px;height:100px;background:rgb(200, 200, 200)">
            <div id="inflow" style="width:300px;height:20px;background:rgb(0, 0, 255)"></div>
            <div id="abs" style="position:absolute;left:150px;top:150px;width:50px;height:50px;background:rgb(255, 0, 0)"></div>
            <div id="fixed" style="position:fixed;left:300px;top:10px;width:50px;height:50px;background:rgb(0, 255, 0)"></div>
            <div id="faded" style="opacity:0.5">
              <div id="kept-faded" style="position:absolute;left:200px;top:0;width:10px;height:10px;background:rgb(255, 0, 0)"></div>
            </div>
          </div>
          <div id="own" style="position:relative;overflow:hidden;width:100px;height:100px;background:rgb(9, 9, 9)">
            <div id="kept" style="position:absolute;left:80px;top:80px;width:50px;height:50px;background:rgb(255, 0, 0)"></div>
          </div>
        </div></body>"#);
    let all = nodes(json(&out.document));
    let clipper = named(&all, "clipper");
    assert_eq!(clipper["clipsContent"], true);
    // In flow: clipped by its parent.
    assert!(named(&all, "inflow")["ancestors"].as_array().expect("up").contains(&"clipper".into()));
    // Positioned against an ancestor of the clipper (and the viewport): not inside it, and
    // where Chromium put them.
    for (id, x, y) in [("abs", 150.0, 150.0), ("fixed", 300.0, 10.0)] {
        let n = named(&all, id);
        assert!(!n["ancestors"].as_array().expect("up").contains(&"clipper".into()), "{id} is clipped: {n}");
        assert_eq!((n["absX"].as_f64(), n["absY"].as_f64()), (Some(x), Some(y)), "{id}");
    }
    // Faded by an ancestor that does not clip it, inside one that should not: Figma cannot fade
    // it without the clip; it keeps both, and says so.
    assert!(named(&all, "kept-faded")["ancestors"].as_array().expect("up").contains(&"faded".into()));
    let w = warned(&out.warnings, "unsupported_css", "to keep the opacity of \"faded\"");
    assert_eq!(w.len(), 1, "{:?}", out.warnings);
    assert!(w[0].message.contains("drawn clipped by \"clipper\""), "{w:?}");
    // Its containing block clips it: kept inside.
    assert!(named(&all, "kept")["ancestors"].as_array().expect("up").contains(&"own".into()));
}

#[test]
fn negative_z_index_paints_above_its_stacking_context_and_below_its_content() {
    let out = run(r#"<!DOCTYPE html><body style="margin:0">
        <div id="sc" style="position:relative;z-index:0;width:400px;height:300px;background:rgb(240, 240, 240)">
          <div id="card" style="width:200px;height:100px;background:rgb(0, 0, 255)">
            <div id="nested" style="position:absolute;z-index:-2;left:20px;top:20px;width:300px;height:40px;background:rgb(0, 255, 0)"></div>
          </div>
          <div id="under" style="position:absolute;z-index:-1;left:50px;top:50px;width:200px;height:100px;background:rgb(255, 0, 0)"></div>
          <div id="over" style="position:absolute;z-index:1;left:60px;top:60px;width:20px;height:20px;background:rgb(0, 0, 0)"></div>
        </div>
        <div id="page-under" style="position:absolute;z-index:-1;left:0;top:0;width:50px;height:50px;background:rgb(255, 255, 0)"></div>
        <div id="sc2" style="position:relative;z-index:0;width:400px;height:100px">
          <div id="box" style="overflow:hidden;width:100px;height:50px;background:rgb(0, 0, 255)">
            <div id="clipped-under" style="position:relative;z-index:-1;width:300px;height:100px;background:rgb(255, 0, 0)"></div>
          </div>
        </div>
        </body>"#);
    // Inside the stacking context's frame (its background below all), the negative ones first,
    // the most negative lowest, even the one whose DOM parent is the card; then the card, then
    // z-index 1.
    let order = children(json(&out.document), "sc");
    assert_eq!(order, ["nested", "under", "card", "over"]);
    // The root's: below body's in-flow boxes, above the canvas.
    let top = children(json(&out.document), &out.title);
    let at = |name: &str| top.iter().position(|n| n == name).unwrap_or_else(|| panic!("{name} in {top:?}"));
    assert!(at("page-under") < at("sc"), "{top:?}");
    // Below the box that clips it: moved out of it, in a frame that clips it as the box did.
    assert_eq!(children(json(&out.document), "sc2"), ["clipped-under clip", "box"]);
    let all = nodes(json(&out.document));
    let clip = named(&all, "clipped-under clip");
    assert_eq!(
        (clip["clipsContent"].as_bool(), clip["width"].as_f64(), clip["height"].as_f64()),
        (Some(true), Some(100.0), Some(50.0))
    );
    assert_eq!(named(&all, "clipped-under")["width"], 300.0);
}

#[test]
fn what_is_not_drawn_exactly_is_said_once_per_element_and_property() {
    let out = run(r#"<!DOCTYPE html><body style="margin:0">
        <div id="grooved" style="border:4px groove rgb(0, 0, 0);height:10px"></div>
        <div id="mixed" style="border:2px dashed rgb(0, 0, 0);border-left-style:solid;height:10px"></div>
        <div id="ellipse" style="border-radius:20px / 10px;background:rgb(0, 0, 255);height:40px"></div>
        <div id="filtered" style="filter:blur(2px) grayscale(1);height:10px"></div>
        <div id="clipped" style="clip-path:circle(40%);background:rgb(0, 0, 255);height:10px"></div>
        <div id="bgblend" style="background-image:linear-gradient(red, blue);background-color:red;background-blend-mode:screen;height:10px"></div>
        <div id="turned" style="transform:scale(1.5);height:10px;background:red"></div>
        <p id="shadowed">one <span style="text-shadow:1px 1px 2px rgb(0, 0, 0)">two</span> three</p>
        <p><span id="over" style="text-decoration:overline">over</span> <span id="dashes" style="text-decoration:underline dashed">dashes</span></p>
        </body>"#);
    let cases = [
        ("grooved", "border-style: groove drawn solid"),
        ("mixed", "border-style: dashed drawn solid: the sides' styles differ"),
        ("ellipse", "border-top-left-radius: 20px 10px"),
        ("filtered", "filter: blur(2px) grayscale(1) not drawn"),
        ("clipped", "clip-path: circle(40%)"),
        ("bgblend", "background-blend-mode: screen"),
        ("turned", "transform: matrix("),
        ("one two three", "text-shadow: rgb(0, 0, 0) 1px 1px 2px not drawn: the paragraph's runs differ"),
        ("over", "text-decoration-line: overline drawn without its overline"),
        ("dashes", "text-decoration-style: dashed drawn dotted"),
    ];
    for (node, message) in cases {
        let w = warned(&out.warnings, "unsupported_css", message);
        // Once: four dashed sides, three runs inheriting the shadow, are one warning.
        assert_eq!(w.len(), 1, "{message}: {:#?}", out.warnings);
        assert_eq!(w[0].node.as_deref(), Some(node), "{w:?}");
    }
}

#[test]
fn warnings_stop_at_the_artifacts_limit() {
    let divs = r#"<div style="filter:sepia(1);height:1px"></div>"#.repeat(MAX_WARNINGS + 100);
    let out = run(&format!("<!DOCTYPE html><body>{divs}</body>"));
    assert_eq!(out.warnings.len(), MAX_WARNINGS);
}

#[test]
fn a_malformed_snapshot_is_an_error_not_an_empty_page() {
    let (snap, height, fonts) = snapshot("<!DOCTYPE html><p>words</p>");
    let convert = |s: &Value| {
        code2des_convert::convert::convert(s, 1440, height, &fonts, None).map(|_| ()).map_err(|e| e.to_string())
    };
    assert_eq!(convert(&snap), Ok(()));
    let mut short = snap.clone();
    short["documents"][0]["nodes"]["nodeType"].as_array_mut().expect("types").pop();
    let e = convert(&short).expect_err("malformed");
    assert!(e.contains("snapshot is malformed") && e.contains("nodes.nodeType"), "{e}");
    let mut cycle = snap.clone();
    cycle["documents"][0]["nodes"]["parentIndex"][0] = 3.into();
    assert!(convert(&cycle).expect_err("a cycle").contains("parent"));
    assert!(convert(&serde_json::json!({})).expect_err("nothing").contains("strings"));
    let e = code2des_convert::ConvertError::from(code2des_convert::MalformedSnapshot("x".into()));
    assert_ne!(e.to_string(), code2des_convert::ConvertError::NoContent.to_string());
}

#[test]
fn a_failed_font_look_up_is_warned() {
    let html = r#"<!DOCTYPE html><p style="font-family:'DejaVu Serif', serif">words</p>"#;
    let (snap, height, fonts) = snapshot(html);
    assert!(!fonts.is_empty(), "Chromium named the fonts");
    // The look-up answered nothing (an error, a font Chromium would not name).
    let (out, _) = code2des_convert::convert::convert(&snap, 1440, height, &[], None).expect("converts");
    let w = warned(&out.warnings, "font_substituted", "look-up failed");
    assert_eq!(w.len(), 1, "{:?}", out.warnings);
    assert!(w[0].message.contains("DejaVu Serif"), "{w:?}");
    // With the look-up's answer: nothing to say.
    let (out, _) = code2des_convert::convert::convert(&snap, 1440, height, &fonts, None).expect("converts");
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
}

#[test]
fn a_page_nested_5000_deep_converts_within_the_artifacts_depth() {
    let open = r#"<div style="overflow:hidden;padding-left:1px">"#.repeat(5000);
    let close = "</div>".repeat(5000);
    // An inline SVG as deep: its markup is written out whole.
    let svg = format!(
        "<svg width=\"10\" height=\"10\">{}<rect width=\"5\" height=\"5\"/>{}</svg>",
        "<g>".repeat(5000),
        "</g>".repeat(5000)
    );
    let out = run(&format!("<!DOCTYPE html><body>{svg}{open}<span style=\"background:red\">deep</span>{close}</body>"));
    fn depth(n: &Value) -> usize {
        1 + n["children"].as_array().into_iter().flatten().map(depth).max().unwrap_or(0)
    }
    assert!(depth(json(&out.document)) <= 40, "{}", depth(json(&out.document)));
    let all = nodes(json(&out.document));
    assert!(all.iter().any(|n| n["characters"] == "deep"), "the deepest text is drawn");
    assert!(all.iter().any(|n| n["name"] == "deep" && n["type"] == "RECTANGLE"), "and its box");
    assert!(all.iter().any(|n| n["type"] == "SVG"), "the svg");
    assert!(out.warnings.iter().any(|w| w.code.as_str() == "depth_limit"), "{:?}", out.warnings);
    // Every warning within the artifact's bounds (shared::domain::artifact::ArtifactWarning).
    for w in &out.warnings {
        assert!(
            w.path.as_deref().unwrap_or_default().chars().count() <= 2000 && w.message.chars().count() <= 1000,
            "{w:?}"
        );
        assert!(w.indices.as_ref().is_none_or(|i| i.len() <= 40), "{w:?}");
    }
}

#[test]
fn the_warning_table_lists_every_code() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/WORKER.md")).expect("docs/WORKER.md");
    let table: Vec<&str> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
        .filter(|c| c.chars().all(|ch| ch.is_ascii_lowercase() || ch == '_'))
        .collect();
    for code in WARNING_CODES {
        assert!(table.contains(code), "docs/WORKER.md's warning table lacks {code}");
    }
}
