use serde_json::{json, Value};

use super::*;

fn page(doc: Value) -> Page {
    read::page(doc, HashMap::new(), Vec::new()).expect("a page")
}

fn ink(rgb: &[u8]) -> usize {
    rgb.chunks_exact(3).filter(|p| p.iter().any(|c| *c < 200)).count()
}

/// Paragraphs of the samples as the converter made them from Chromium's layout (a TEXT node of
/// fixed width, `textAutoResize` HEIGHT, its height a whole number of its pixel line height):
/// the preview breaks each into as many lines as Chromium did.
#[test]
fn paragraphs_break_into_as_many_lines_as_chromium_broke_them() {
    let nodes: Vec<Value> = serde_json::from_str(include_str!("testdata/paragraphs.json")).unwrap();
    assert!(nodes.len() >= 20, "the fixture holds the samples' paragraphs");
    let mut misses = Vec::new();
    let mut multi = 0;
    for n in &nodes {
        let want = (n["height"].as_f64().unwrap() / n["lineHeight"]["value"].as_f64().unwrap()).round() as usize;
        multi += usize::from(want > 1);
        let got = text_lines(n);
        if got.len() != want {
            misses.push(format!("{}: {:?} in {} lines, not {want}: {got:?}", n["page"], n["characters"], got.len()));
        }
    }
    assert!(multi >= 15, "most of them wrap");
    assert!(misses.is_empty(), "{}", misses.join("\n"));
}

#[test]
fn a_paragraph_breaks_after_spaces_and_a_word_wider_than_the_box_inside_it() {
    let para = |chars: &str, width: f64| {
        text_lines(&json!({"type": "TEXT", "characters": chars, "textAutoResize": "HEIGHT", "width": width,
            "fontName": {"family": "Inter", "style": "Regular"}, "fontSize": 16}))
    };
    // Inter at 16 px: "aaaa " is about 40 px.
    assert_eq!(para("aaaa aaaa aaaa", 90.0), ["aaaa aaaa ", "aaaa"]);
    assert_eq!(para("aaaa\n\naaaa", 500.0), ["aaaa", "", "aaaa"]);
    let long = para("aaaaaaaaaaaaaaaaaaaa", 60.0);
    assert!(long.len() > 2 && long.concat() == "aaaaaaaaaaaaaaaaaaaa", "{long:?}");
    // A box that follows its text breaks only at "\n".
    let hug = text_lines(
        &json!({"type": "TEXT", "characters": "aaaa aaaa aaaa", "textAutoResize": "WIDTH_AND_HEIGHT", "width": 10}),
    );
    assert_eq!(hug, ["aaaa aaaa aaaa"]);
}

#[test]
fn a_paragraphs_first_line_starts_its_indent_in_and_has_that_much_less_room() {
    let para = |indent: Option<f64>| {
        let mut n = json!({"type": "TEXT", "characters": "aaaa aaaa aaaa", "textAutoResize": "HEIGHT",
            "width": 90.0, "fontName": {"family": "Inter", "style": "Regular"}, "fontSize": 16,
            "fills": [{"type": "SOLID", "color": {"r": 0, "g": 0, "b": 0}}]});
        if let Some(i) = indent {
            n["paragraphIndent"] = json!(i);
        }
        n
    };
    // Inter at 16 px: "aaaa " is about 40 px; 30 px in, the first line holds one word.
    assert_eq!(text_lines(&para(None)), ["aaaa aaaa ", "aaaa"]);
    assert_eq!(text_lines(&para(Some(30.0))), ["aaaa ", "aaaa aaaa"]);
    // Drawn 30 px in, the first line only.
    let doc = json!({"type": "FRAME", "width": 200, "height": 100, "children": [para(Some(30.0))]});
    let (svg, _) = svg(&page(doc));
    let xs: Vec<&str> = svg.split("<text ").skip(1).filter_map(|t| t.split("x=\"").nth(1)?.split('"').next()).collect();
    assert_eq!(xs, ["30", "0"], "{svg}");
}

/// The worst a page can be for the small preview: tall, and every few pixels another colour
/// (no palette holds them all): it is still at most 64 KB and 480 px wide.
#[test]
fn a_small_preview_of_a_tall_busy_page_is_within_64_kb_and_480_px() {
    let mut kids = Vec::new();
    for i in 0..4000u32 {
        let c = |k: u32| f64::from((i * k) % 255) / 255.0;
        kids.push(json!({"type": "RECTANGLE", "x": (i % 40) * 36, "y": (i / 40) * 120, "width": 30, "height": 110,
            "fills": [{"type": "SOLID", "color": {"r": c(37), "g": c(91), "b": c(53)}}]}));
    }
    kids.push(json!({"type": "TEXT", "x": 10, "y": 10, "characters": "A heading", "fontSize": 48,
        "textAutoResize": "WIDTH_AND_HEIGHT", "fills": [{"type": "SOLID", "color": {"r": 0, "g": 0, "b": 0}}]}));
    let doc = json!({"type": "FRAME", "width": 1440, "height": 12000, "children": kids,
        "fills": [{"type": "SOLID", "color": {"r": 1, "g": 1, "b": 1}}]});
    let png = small_of(&page(doc)).unwrap();
    assert!(png.len() <= small::MAX_BYTES, "{} bytes", png.len());
    let size = imagesize::blob_size(&png).unwrap();
    assert!(size.width <= 480 && size.height <= 4096, "{size:?}");
    assert!(size.width >= 100, "made smaller only as far as it had to: {size:?}");
}

#[test]
fn a_frame_draws_its_fill_stroke_radius_and_clip() {
    let doc = json!({"type": "FRAME", "width": 200, "height": 100, "cornerRadius": 8, "children": [
        {"type": "RECTANGLE", "x": 150, "y": 50, "width": 100, "height": 100,
         "fills": [{"type": "SOLID", "color": {"r": 1, "g": 0, "b": 0}}]}],
        "fills": [{"type": "SOLID", "color": {"r": 0, "g": 0, "b": 1}, "opacity": 0.5}],
        "strokes": [{"type": "SOLID", "color": {"r": 0, "g": 0, "b": 0}}], "strokeWeight": 2, "strokeAlign": "INSIDE"});
    let (text, warnings) = svg(&page(doc));
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(text.contains("fill=\"rgb(0,0,255)\" fill-opacity=\"0.5\""), "{text}");
    assert!(text.contains("A8 8 0 0 1"), "rounded corners: {text}");
    assert!(text.contains("clip-path=\"url(#c"), "a frame clips its children: {text}");
    assert!(text.contains("fill-rule=\"evenodd\""), "the stroke is the area between two outlines");
    // The child's part outside the frame is clipped: the picture's right-bottom corner is white.
    let rgb = draw(&tree(&text).unwrap(), 260, 160, 1.0).unwrap();
    let at = |x: usize, y: usize| &rgb[(y * 260 + x) * 3..(y * 260 + x) * 3 + 3];
    assert_eq!(at(240, 140), [255, 255, 255]);
    assert_eq!(at(170, 70), [255, 0, 0]);
}

#[test]
fn auto_layout_and_grid_children_are_placed_as_figma_places_them() {
    let kid = |w: u32| json!({"type": "RECTANGLE", "width": w, "height": 10});
    let doc = json!({"type": "FRAME", "width": 300, "height": 50, "layoutMode": "HORIZONTAL", "itemSpacing": 10,
        "paddingLeft": 5, "clipsContent": false, "children": [kid(20), kid(30)]});
    let (text, _) = svg(&page(doc));
    assert!(text.contains("translate(5 0)") && text.contains("translate(35 0)"), "{text}");
    let grid = json!({"type": "FRAME", "width": 300, "height": 100, "layoutMode": "GRID", "gridColumnGap": 10,
        "gridColumnSizes": [{"type": "FIXED", "value": 100}, {"type": "FLEX", "value": 1}],
        "gridRowSizes": [{"type": "FLEX", "value": 1}], "clipsContent": false,
        "children": [kid(20), {"type": "RECTANGLE", "width": 20, "height": 10, "gridColumnAnchorIndex": 1}]});
    let (text, _) = svg(&page(grid));
    assert!(text.contains("translate(0 0)") && text.contains("translate(110 0)"), "{text}");
    // Wrapping rows, 204 px of room: 80 + 10 + 70, then 50 + 10 + 90 + 10 + 30; rows 30 and
    // 24 px tall, 6 apart, each child centred in its row.
    let sized = |w: u32, h: u32| json!({"type": "RECTANGLE", "width": w, "height": h});
    let wrap = json!({"type": "FRAME", "width": 220, "height": 76, "layoutMode": "HORIZONTAL", "layoutWrap": "WRAP",
        "paddingLeft": 8, "paddingRight": 8, "paddingTop": 8, "paddingBottom": 8, "itemSpacing": 10,
        "counterAxisSpacing": 6, "counterAxisAlignItems": "CENTER", "clipsContent": false,
        "children": [sized(80, 20), sized(70, 30), sized(50, 20), sized(90, 24), sized(30, 10)]});
    let (text, _) = svg(&page(wrap));
    for at in ["translate(8 13)", "translate(98 8)", "translate(8 46)", "translate(68 44)", "translate(168 51)"] {
        assert!(text.contains(at), "{at} in {text}");
    }
}

#[test]
fn a_missing_image_is_a_warning_and_an_image_fill_is_drawn() {
    let png = small::encode_rgb(&[0, 128, 0].repeat(4 * 4), 4, 4).unwrap();
    let doc = json!({"type": "FRAME", "width": 40, "height": 40, "children": [
        {"type": "RECTANGLE", "width": 40, "height": 20, "fills": [{"type": "IMAGE", "imageRef": "a"}]},
        {"type": "RECTANGLE", "y": 20, "width": 40, "height": 20, "fills": [{"type": "IMAGE", "imageRef": "gone"}]}]});
    let images = HashMap::from([("a".to_owned(), Image { mime: "image/png".into(), bytes: png })]);
    let p = read::page(doc, images, Vec::new()).unwrap();
    let (text, warnings) = svg(&p);
    assert_eq!(warnings, ["image gone missing"]);
    let rgb = draw(&tree(&text).unwrap(), 40, 40, 1.0).unwrap();
    assert_eq!(&rgb[(10 * 40 + 20) * 3..][..3], [0, 128, 0]);
    assert_eq!(&rgb[(30 * 40 + 20) * 3..][..3], [255, 255, 255]);
}

/// resvg-js 2.6.2 dropped a whole `<text>` when a tspan ending in a ligature was followed by a
/// tspan of another family (svg.mjs inserts a zero-width non-joiner); resvg 0.49 draws it,
/// so the preview writes the text as it is.
#[test]
fn a_ligature_before_a_change_of_family_keeps_the_text() {
    let doc = json!({"type": "FRAME", "width": 300, "height": 40, "children": [
        {"type": "TEXT", "characters": "office file", "fontSize": 20, "textAutoResize": "WIDTH_AND_HEIGHT",
         "fontName": {"family": "Inter", "style": "Regular"},
         "segments": [
            {"start": 0, "end": 3, "fontName": {"family": "Inter", "style": "Regular"}, "fontSize": 20, "fills": []},
            {"start": 3, "end": 11, "fontName": {"family": "DejaVu Sans", "style": "Regular"}, "fontSize": 20, "fills": []}]}]});
    let (text, _) = svg(&page(doc));
    assert!(text.contains(">off</tspan>"), "{text}");
    let rgb = draw(&tree(&text).unwrap(), 300, 40, 1.0).unwrap();
    assert!(ink(&rgb) > 100, "the text is drawn");
}

#[test]
fn what_cannot_be_drawn_is_a_clear_refusal() {
    let refused = |v: Value| match read::from_value(v, std::path::Path::new("/nonexistent")) {
        Err(PreviewError::Input(m)) => m,
        other => panic!("{other:?}"),
    };
    assert!(refused(json!({"kind": "failure", "document": null})).contains("not a node"));
    assert!(refused(json!({"type": "FRAME"})).contains("width and height"));
    assert!(refused(json!({"hello": 1})).contains("neither a result"));
    let mut deep = json!({"type": "FRAME", "width": 1, "height": 1});
    for _ in 0..60 {
        deep = json!({"type": "FRAME", "width": 1, "height": 1, "children": [deep]});
    }
    assert!(refused(deep).contains("deeper than"));
    // A page too large to draw at full size says so instead of allocating it.
    let huge = tree(&svg(&page(json!({"type": "FRAME", "width": 20000, "height": 20000}))).0).unwrap();
    assert!(matches!(full(&huge), Err(PreviewError::Render(m)) if m.contains("--small")));
    // It is drawn small all the same.
    assert!(small::small(&huge).is_ok());
}

#[test]
fn an_svg_nodes_own_size_is_its_width_and_height_else_its_view_box() {
    assert_eq!(svg::svg_size("<svg width=\"24px\" height='12'>"), Some((24.0, 12.0)));
    assert_eq!(svg::svg_size("<?xml?><svg viewBox=\"0 0 48 16\">"), Some((48.0, 16.0)));
    assert_eq!(svg::svg_size("<svg width=\"100%\">"), None);
}

#[test]
fn images_are_found_by_key_with_or_without_the_jobs_prefix_and_never_outside() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("images")).unwrap();
    let png = small::encode_rgb(&[0; 3], 1, 1).unwrap();
    std::fs::write(dir.path().join("images/a.png"), &png).unwrap();
    let result = json!({"document": {"type": "FRAME", "width": 1, "height": 1}, "images": {
        "a": {"key": "code2des/0190/1/images/a.png", "mime_type": "image/png"},
        "b": {"key": "../images/a.png", "mime_type": "image/png"},
        "c": {"mimeType": "image/png", "size": 3, "data": "AAAA"}}});
    let p = read::from_value(result, dir.path()).unwrap();
    assert_eq!(p.images["a"].bytes, png);
    assert!(!p.images.contains_key("b"), "a key with .. is never read");
    assert_eq!(p.images["c"].bytes, [0, 0, 0]);
    assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
}

/// Issue 39 item 4: a component and its instances are frames, each drawing its own layers (an
/// instance's text is its own), with no warning.
#[test]
fn a_component_and_its_instances_are_drawn_as_frames() {
    let card = |kind: &str, link: (&str, &str), x: f64| {
        let mut c = json!({"type": kind, "x": x, "width": 40, "height": 40,
            "fills": [{"type": "SOLID", "color": {"r": 0.0, "g": 0.0, "b": 1.0}}],
            "children": [{"type": "RECTANGLE", "x": 10, "y": 10, "width": 20, "height": 20,
                          "fills": [{"type": "SOLID", "color": {"r": 1.0, "g": 0.0, "b": 0.0}}]}]});
        c[link.0] = json!(link.1);
        c
    };
    let doc = json!({"type": "FRAME", "width": 100, "height": 40, "children": [
        card("COMPONENT", ("id", "c1"), 0.0), card("INSTANCE", ("componentId", "c1"), 60.0)]});
    let (text, warnings) = svg(&page(doc));
    assert_eq!(warnings, Vec::<String>::new());
    let rgb = draw(&tree(&text).unwrap(), 100, 40, 1.0).unwrap();
    let at = |x: usize, y: usize| &rgb[(y * 100 + x) * 3..][..3];
    assert_eq!((at(2, 2), at(20, 20)), (&[0, 0, 255][..], &[255, 0, 0][..]));
    assert_eq!((at(62, 2), at(80, 20)), (&[0, 0, 255][..], &[255, 0, 0][..]));
}

/// Issue 39 item 7: dashes, dots, a blend mode, a layer blur and a text's shadow are drawn.
#[test]
fn dashes_blends_blurs_and_text_shadows_are_drawn() {
    let red = json!([{"type": "SOLID", "color": {"r": 1, "g": 0, "b": 0}}]);
    let doc = json!({"type": "FRAME", "width": 100, "height": 100, "fills": [{"type": "SOLID", "color": {"r": 1, "g": 1, "b": 1}}],
        "children": [
        {"type": "RECTANGLE", "width": 90, "height": 20, "strokes": red, "strokeWeight": 4, "strokeAlign": "INSIDE",
         "dashPattern": [8, 4]},
        {"type": "RECTANGLE", "y": 30, "width": 90, "height": 20, "strokes": red, "strokeWeight": 4, "dashPattern": [0, 8],
         "strokeCap": "ROUND", "blendMode": "MULTIPLY"},
        {"type": "RECTANGLE", "y": 60, "width": 20, "height": 20, "fills": red, "effects": [{"type": "LAYER_BLUR", "radius": 8}]},
        {"type": "TEXT", "x": 40, "y": 60, "characters": "Hi", "fontSize": 20, "textAutoResize": "WIDTH_AND_HEIGHT",
         "fills": [{"type": "SOLID", "color": {"r": 0, "g": 0, "b": 0}}],
         "fontName": {"family": "Inter", "style": "Regular"},
         "effects": [{"type": "DROP_SHADOW", "color": {"r": 0, "g": 0, "b": 1, "a": 1}, "offset": {"x": 3, "y": 3}, "radius": 0}]}]});
    let (text, warnings) = svg(&page(doc));
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(text.contains(r#"stroke-dasharray="8 4" stroke-linecap="butt""#), "{text}");
    assert!(text.contains(r#"stroke-dasharray="0 8" stroke-linecap="round""#), "{text}");
    assert!(text.contains("mix-blend-mode:multiply"), "{text}");
    assert!(text.contains(r#"<feGaussianBlur stdDeviation="4"/>"#), "{text}");
    let rgb = draw(&tree(&text).unwrap(), 100, 100, 1.0).unwrap();
    let at = |x: usize, y: usize| &rgb[(y * 100 + x) * 3..][..3];
    // The top edge's line: a dash at 4, a gap at 10 (the dash of 8 from the corner, then 4 off).
    assert_eq!(at(4, 2), [255, 0, 0]);
    assert_eq!(at(10, 2), [255, 255, 255]);
    // The blur spreads the red square past its edge, fading.
    let past = at(22, 70);
    assert!(past[0] > 240 && past[1] < 250 && past[1] > 30, "{past:?}");
    // The shadow: blue ink beside the text's.
    assert!(rgb.chunks_exact(3).any(|p| p[2] > 200 && p[0] < 80 && p[1] < 80), "a blue shadow");
}

/// An ABSOLUTE child of an auto layout frame is drawn where it is and takes no room; the items
/// after it follow one another as Figma places them.
#[test]
fn an_absolute_child_of_auto_layout_stays_where_it_is() {
    let rect = |x: f64, y: f64, more: Value| {
        let mut r = json!({"type": "RECTANGLE", "x": x, "y": y, "width": 10, "height": 10});
        r.as_object_mut().unwrap().extend(more.as_object().unwrap().clone());
        r
    };
    let frame = json!({"type": "FRAME", "width": 100, "height": 20, "layoutMode": "HORIZONTAL", "itemSpacing": 5,
        "paddingLeft": 2, "paddingTop": 3});
    let kids = vec![
        rect(0.0, 0.0, json!({})),
        rect(80.0, -4.0, json!({"layoutPositioning": "ABSOLUTE"})),
        rect(0.0, 0.0, json!({})),
    ];
    let placed: Vec<(f64, f64)> = svg::laid_out(&frame, &kids).iter().map(|p| (p.x, p.y)).collect();
    assert_eq!(placed, [(2.0, 3.0), (80.0, -4.0), (17.0, 3.0)]);
}
