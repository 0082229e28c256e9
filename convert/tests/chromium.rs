//! The conversion against real Chromium (Debian's `chromium`, or `$CHROMIUM_PATH`): one
//! renderer for every test of this file, as a worker process has.

mod common;

use common::{renderer, runtime};

use std::time::{Duration, Instant};

use code2des_convert::{convert, CaptureError, ConvertError, Options, Output, RenderError, Renderer};
use serde_json::Value;

fn run(html: &str) -> Output {
    runtime().block_on(convert(renderer(), html.as_bytes(), false)).expect("the page converts")
}

/// Every node of the document, depth first, with its parent's absolute origin added.
fn nodes(doc: &Value) -> Vec<Value> {
    fn walk(n: &Value, ox: f64, oy: f64, out: &mut Vec<Value>) {
        let (x, y) = (ox + n["x"].as_f64().unwrap_or(0.0), oy + n["y"].as_f64().unwrap_or(0.0));
        let mut flat = n.clone();
        flat["absX"] = x.into();
        flat["absY"] = y.into();
        flat.as_object_mut().map(|o| o.remove("children"));
        out.push(flat);
        for c in n["children"].as_array().into_iter().flatten() {
            walk(c, x, y, out);
        }
    }
    let mut out = Vec::new();
    walk(doc, 0.0, 0.0, &mut out);
    out
}

fn text<'a>(all: &'a [Value], chars: &str) -> &'a Value {
    all.iter()
        .find(|n| n["type"] == "TEXT" && n["characters"].as_str().is_some_and(|c| c.trim() == chars))
        .unwrap_or_else(|| panic!("no text {chars:?} in {all:#?}"))
}

const PNG_4X4: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAD0lEQVR4nGNgaPiPQMRxAF7CF/FUdRSEAAAAAElFTkSuQmCC";

/// The document as the artifact carries it (kept for the test's life: tests borrow into it).
fn json(n: &code2des_convert::Node) -> &'static serde_json::Value {
    Box::leak(Box::new(serde_json::to_value(n).expect("a node tree is JSON")))
}

#[test]
fn a_coloured_box_with_radii_border_and_shadow() {
    let out = run(r#"<!DOCTYPE html><html><head><title>Box page</title><style>
        body { margin: 0; background: #f0f0f0 }
        #box { position: absolute; left: 40px; top: 30px; width: 200px; height: 100px;
               background: rgb(255, 0, 0); border: 2px solid rgb(0, 0, 255);
               border-radius: 12px 4px 0 0; box-shadow: 0 4px 6px rgba(0, 0, 0, 0.25); opacity: 0.5 }
        #grad { position: absolute; left: 0; top: 200px; width: 100px; height: 50px;
                background: linear-gradient(to right, rgb(255, 0, 0), rgb(0, 0, 255)) }
        </style></head><body><div id="box"></div><div id="grad"></div></body></html>"#);
    let doc = json(&out.document);
    assert_eq!(doc["type"], "FRAME");
    assert_eq!(doc["name"], "Box page");
    assert_eq!(doc["width"], 1440.0);
    // The canvas takes body's background.
    assert_eq!(doc["fills"][0]["color"]["r"].as_f64().map(|r| (r * 255.0).round()), Some(240.0));
    let all = nodes(doc);
    let b = all.iter().find(|n| n["name"] == "box").expect("the box");
    assert_eq!((b["absX"].as_f64(), b["absY"].as_f64()), (Some(40.0), Some(30.0)));
    assert_eq!((b["width"].as_f64(), b["height"].as_f64()), (Some(204.0), Some(104.0)));
    assert_eq!(b["fills"][0]["color"], serde_json::json!({"r": 1.0, "g": 0.0, "b": 0.0}));
    assert_eq!(b["strokes"][0]["color"]["b"], 1.0);
    assert_eq!(b["strokeWeight"], 2.0);
    assert_eq!(b["strokeAlign"], "INSIDE");
    assert_eq!((b["topLeftRadius"].as_f64(), b["topRightRadius"].as_f64()), (Some(12.0), Some(4.0)));
    assert_eq!(b["effects"][0]["type"], "DROP_SHADOW");
    assert_eq!(b["effects"][0]["offset"]["y"], 4.0);
    assert_eq!(b["effects"][0]["color"]["a"], 0.25);
    assert_eq!(b["opacity"], 0.5);
    let g = all.iter().find(|n| n["name"] == "grad").expect("the gradient");
    assert_eq!(g["fills"][0]["type"], "GRADIENT_LINEAR");
    assert_eq!(g["fills"][0]["gradientTransform"][0], serde_json::json!([1.0, 0.0, 0.0]));
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
}

#[test]
fn text_with_mixed_inline_styles() {
    let out = run(r#"<!DOCTYPE html><html><head><style>
        body { margin: 0; font: 16px/24px "DejaVu Sans", sans-serif; color: rgb(17, 17, 17) }
        h1 { font-size: 32px; letter-spacing: 1px; text-transform: uppercase; margin: 0 }
        </style></head><body><h1>Title</h1>
        <p>Plain <b>bold</b> and <em>leaning</em> and <a href="https://example.com/" style="color: rgb(0, 0, 255)">linked</a> words.</p>
        <p style="font-family: 'No Such Font', 'DejaVu Serif', serif">Serif fallback</p></body></html>"#);
    let all = nodes(json(&out.document));
    // The paragraph is one TEXT node; its runs are segments (issue 39).
    let para = text(&all, "Plain bold and leaning and linked words.");
    assert_eq!(para["fontName"]["family"], "DejaVu Sans");
    assert_eq!(para["fontName"]["style"], "Regular");
    assert_eq!(para["fontSize"], 16.0);
    assert_eq!(para["lineHeight"], serde_json::json!({"unit": "PIXELS", "value": 24.0}));
    let chars = para["characters"].as_str().unwrap();
    let seg = |word: &str| {
        let i = chars.find(word).unwrap() as u64;
        para["segments"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["start"].as_u64() <= Some(i) && Some(i) < g["end"].as_u64())
            .unwrap()
            .clone()
    };
    assert_eq!(seg("bold")["fontName"]["style"], "Bold");
    assert_eq!(seg("leaning")["fontName"]["style"], "Italic");
    let link = seg("linked");
    assert_eq!(link["textDecoration"], "UNDERLINE");
    assert_eq!(link["fills"][0]["color"]["b"], 1.0);
    assert_eq!(link["hyperlink"], serde_json::json!({"type": "URL", "value": "https://example.com/"}));
    let title = text(&all, "TITLE");
    assert_eq!(title["textCase"], "UPPER");
    assert_eq!(title["letterSpacing"], serde_json::json!({"unit": "PIXELS", "value": 1.0}));
    // The first family is missing: the one drawn is named, and warned about.
    let serif = text(&all, "Serif fallback");
    assert_eq!(serif["fontName"]["family"], "DejaVu Serif");
    let w = out.warnings.iter().find(|w| w.code.as_str() == "font_substituted").expect("a font warning");
    assert!(w.message.contains("No Such Font"), "{w:?}");
    assert_eq!(w.node.as_deref(), Some("Serif fallback"));
    assert!(w.path.as_deref().is_some_and(|p| p.ends_with("p:nth-child(3)")), "{w:?}");
}

#[test]
fn images_png_as_is_bmp_converted_svg_as_svg() {
    // A 2×2 24-bit BMP: Chromium draws it, Figma does not take it.
    let mut bmp = b"BM".to_vec();
    bmp.extend_from_slice(&(54u32 + 16).to_le_bytes());
    bmp.extend_from_slice(&[0, 0, 0, 0, 54, 0, 0, 0, 40, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 1, 0, 24, 0]);
    bmp.extend_from_slice(&[0; 4]);
    bmp.extend_from_slice(&16u32.to_le_bytes());
    bmp.extend_from_slice(&[0; 16]);
    bmp.extend_from_slice(&[0, 0, 255, 0, 0, 255, 0, 0, 0, 0, 255, 0, 0, 255, 0, 0]);
    use base64::Engine as _;
    let bmp = base64::engine::general_purpose::STANDARD.encode(bmp);
    let html = format!(
        r#"<!DOCTYPE html><body style="margin:0">
        <img id="png" src="data:image/png;base64,{PNG_4X4}" style="width:40px;height:40px;display:block">
        <img id="bmp" src="data:image/bmp;base64,{bmp}" style="width:20px;height:20px;display:block">
        <img id="svg" src="data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='10' height='10'%3E%3Crect width='10' height='10' fill='red'/%3E%3C/svg%3E" style="display:block">
        <svg id="inline" width="30" height="30" viewBox="0 0 30 30"><circle cx="15" cy="15" r="10" fill="green"/></svg>
        </body>"#
    );
    let out = run(&html);
    let all = nodes(json(&out.document));
    let png = all.iter().find(|n| n["name"] == "png").expect("the png");
    assert_eq!(png["type"], "RECTANGLE");
    let r = png["fills"][0]["imageRef"].as_str().expect("an image fill");
    let img = out.images.iter().find(|i| i.name == r).expect("its image");
    assert_eq!(img.mime, "image/png");
    assert_eq!(base64::engine::general_purpose::STANDARD.encode(&img.bytes), PNG_4X4);
    let bmp = all.iter().find(|n| n["name"] == "bmp").expect("the bmp");
    let r = bmp["fills"][0]["imageRef"].as_str().expect("an image fill");
    let img = out.images.iter().find(|i| i.name == r).expect("its image");
    assert!(img.bytes.starts_with(b"\x89PNG"), "converted to PNG");
    let w = out
        .warnings
        .iter()
        .find(|w| w.code.as_str() == "image_converted" && w.message.contains("image/bmp"))
        .expect("warned");
    // The warning's indices lead from the root to the node it names (the plugin selects it so).
    let indices = w.indices.as_ref().expect("the warning locates its node");
    let at = indices.iter().fold(json(&out.document), |n, i| &n["children"][*i as usize]);
    assert_eq!(at["name"].as_str(), w.node.as_deref(), "{indices:?}");
    assert_eq!(at["name"], "bmp");
    let svg = all.iter().find(|n| n["name"] == "svg").expect("the svg");
    assert_eq!(svg["type"], "SVG");
    let inline = all.iter().find(|n| n["name"] == "inline").expect("the inline svg");
    assert_eq!(inline["type"], "SVG");
    let img = out.images.iter().find(|i| Some(i.name.as_str()) == inline["imageRef"].as_str()).expect("markup");
    let markup = String::from_utf8_lossy(&img.bytes);
    assert!(markup.contains("<circle") && markup.contains("xmlns="), "{markup}");
}

#[test]
fn a_flex_row_becomes_auto_layout() {
    let out = run(r#"<!DOCTYPE html><body style="margin:0">
        <div id="row" style="display:flex; gap:12px; padding:16px 20px; align-items:center; width:400px; background:#eee">
          <div style="width:50px; height:30px; background:red"></div>
          <div style="width:60px; height:50px; background:green"></div>
          <div style="width:70px; height:20px; background:blue"></div>
        </div>
        <div id="col" style="display:flex; flex-direction:column; gap:4px; width:100px">
          <div style="height:10px; background:red"></div><div style="height:10px; background:red"></div>
        </div>
        <div id="wrap" style="display:flex; justify-content:space-between; width:300px">
          <div style="width:10px; height:10px; background:red"></div>
          <div style="width:10px; height:20px; background:red"></div>
          <div style="width:40px; height:10px; background:red; align-self:flex-end"></div>
        </div></body>"#);
    let all = nodes(json(&out.document));
    let row = all.iter().find(|n| n["name"] == "row").expect("the row");
    assert_eq!(row["layoutMode"], "HORIZONTAL");
    assert_eq!(row["itemSpacing"], 12.0);
    assert_eq!((row["paddingLeft"].as_f64(), row["paddingTop"].as_f64()), (Some(20.0), Some(16.0)));
    assert_eq!(row["counterAxisAlignItems"], "CENTER");
    let col = all.iter().find(|n| n["name"] == "col").expect("the column");
    assert_eq!(col["layoutMode"], "VERTICAL");
    assert_eq!(col["itemSpacing"], 4.0);
    // Uneven cross-axis alignment: absolute positions kept.
    let wrap = all.iter().find(|n| n["name"] == "wrap").expect("the third");
    assert!(wrap.get("layoutMode").is_none(), "{wrap}");
}

#[test]
fn scripts_do_not_run() {
    let out = run(r#"<!DOCTYPE html><body><p id="p">kept</p>
        <img src="data:," onerror="document.getElementById('p').textContent = 'changed by onerror'">
        <script>document.getElementById('p').textContent = 'changed by script';
        document.body.insertAdjacentHTML('beforeend', '<p>added by script</p>');</script></body>"#);
    let all = nodes(json(&out.document));
    text(&all, "kept");
    assert!(!all.iter().any(|n| n["characters"].as_str().is_some_and(|c| c.contains("by"))), "{all:#?}");
}

#[test]
fn no_request_leaves_the_renderer() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a listener");
    listener.set_nonblocking(true).expect("non-blocking");
    let port = listener.local_addr().expect("its address").port();
    let base = format!("http://127.0.0.1:{port}");
    let html = format!(
        r#"<!DOCTYPE html><html><head>
        <link rel="stylesheet" href="{base}/style.css">
        <style>@font-face {{ font-family: Remote; src: url({base}/font.woff2) }}
        body {{ font-family: Remote, sans-serif; background-image: url({base}/bg.png) }}</style>
        <meta http-equiv="refresh" content="0; url={base}/elsewhere"></head>
        <body><p>text</p><img src="{base}/x.png" width="10" height="10">
        <iframe src="{base}/frame.html"></iframe><video src="{base}/v.mp4"></video>
        <img src="http://localhost:{port}/y.png"><img src="file:///etc/passwd"></body></html>"#
    );
    let out = run(&html);
    // Give a straggler time to connect, then look.
    std::thread::sleep(Duration::from_millis(300));
    match listener.accept() {
        Ok((_, from)) => panic!("the renderer connected to the listener from {from}"),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock),
    }
    assert!(out.blocked_requests >= 3, "blocked {}", out.blocked_requests);
    assert!(out.warnings.iter().any(|w| w.code.as_str() == "image_unavailable"));
    assert!(out.warnings.iter().any(|w| w.code.as_str() == "iframe_skipped"));
    let all = nodes(json(&out.document));
    text(&all, "text");
}

#[test]
fn bad_captures_fail_with_their_error_quickly() {
    let rt = runtime();
    let r = renderer();
    let cases: Vec<(Vec<u8>, ConvertError)> = vec![
        (Vec::new(), ConvertError::Capture(CaptureError::Empty)),
        (b"{\"not\": \"html\"}".to_vec(), ConvertError::Capture(CaptureError::NotHtml)),
        (b"GIF89a\x01\0\x01\0".to_vec(), ConvertError::Capture(CaptureError::NotHtml)),
        (
            vec![b'a'; code2des_convert::capture::MAX_CAPTURE_BYTES + 1],
            ConvertError::Capture(CaptureError::TooLarge(code2des_convert::capture::MAX_CAPTURE_BYTES + 1)),
        ),
    ];
    for (bytes, want) in cases {
        let t = Instant::now();
        let got = rt.block_on(convert(r, &bytes, false)).map(|_| ()).unwrap_err();
        assert_eq!(got, want);
        assert!(t.elapsed() < Duration::from_secs(1));
    }
}

#[test]
fn a_page_over_its_time_limit_fails_within_it_and_the_renderer_goes_on() {
    let rt = runtime();
    let r = rt.block_on(Renderer::start(Options::default())).expect("Chromium starts");
    r.set_page_timeout(Duration::from_millis(1500));
    // Enough parsing and layout that no machine does it in 1.5 s.
    let mut html = String::from("<!DOCTYPE html><body>");
    for i in 0..150_000 {
        html.push_str(&format!("<span style=\"display:inline-block;padding:{}px\">{i}</span>", i % 7));
    }
    let t = Instant::now();
    let got = rt.block_on(convert(&r, html.as_bytes(), false)).map(|_| ()).unwrap_err();
    assert_eq!(got, ConvertError::Render(RenderError::Timeout(Duration::from_millis(1500))));
    assert_eq!(got.to_string(), "the page did not load and lay out within 1.5 s");
    // The limit, plus the capture's parsing and its encoding as one command: 11 MB, seconds in
    // a debug build on a busy machine, milliseconds in a release one.
    assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());
    // The same renderer converts the next page.
    r.set_page_timeout(Duration::from_secs(20));
    let ok = rt.block_on(convert(&r, b"<!DOCTYPE html><p>next", false)).expect("the next page");
    assert!(json(&ok.document)["children"].as_array().is_some_and(|c| !c.is_empty()));
    rt.block_on(r.close());
}

#[test]
fn an_mhtml_capture_converts() {
    let mhtml = format!(
        "From: <Saved by Blink>\r\nSubject: MHTML page\r\nMIME-Version: 1.0\r\n\
Content-Type: multipart/related;\r\n\ttype=\"text/html\";\r\n\tboundary=\"----MultipartBoundary--x\"\r\n\r\n\
------MultipartBoundary--x\r\nContent-Type: text/html\r\nContent-ID: <frame-1@mhtml.blink>\r\n\
Content-Transfer-Encoding: quoted-printable\r\nContent-Location: https://site.test/\r\n\r\n\
<!DOCTYPE html><html><head><title>Archived</title></head><body style=3D\"margin:0\">\
<img src=3D\"https://site.test/a.png\" style=3D\"width:8px;height:8px;display:block\"><p class=3D\"x\">Archived text</p></body></html>\r\n\
------MultipartBoundary--x\r\nContent-Type: image/png\r\nContent-Transfer-Encoding: base64\r\n\
Content-Location: https://site.test/a.png\r\n\r\n{PNG_4X4}\r\n\
------MultipartBoundary--x\r\nContent-Type: text/css\r\nContent-Transfer-Encoding: quoted-printable\r\n\
Content-Location: cid:css-1@mhtml.blink\r\n\r\n.x {{ color: rgb(255, 0, 0) }}\r\n\
------MultipartBoundary--x--\r\n"
    );
    let out = run(&mhtml);
    assert_eq!(json(&out.document)["name"], "Archived");
    let all = nodes(json(&out.document));
    assert_eq!(text(&all, "Archived text")["fills"][0]["color"]["r"], 1.0);
    assert_eq!(out.images.len(), 1);
    assert_eq!(out.blocked_requests, 0);
}

/// What the fidelity benchmark found Figma would draw otherwise than Chromium (docs/FIDELITY.md).
#[test]
fn paints_as_chromium_draws_them() {
    let out = run(r#"<!DOCTYPE html><html><head><style>
        body { margin: 0; font: 18px/30px "DejaVu Serif", serif; min-height: 300px;
               background: linear-gradient(rgb(255, 0, 0) 0px, rgb(0, 0, 255) 100px) }
        p { width: 300px; margin: 0 }
        mark { background: rgb(255, 255, 0); padding: 0 2px }
        h1 { font: 56px/40px "DejaVu Sans", sans-serif; margin: 0 }
        table { border-collapse: collapse } td { border: 1px solid rgb(0, 0, 0); padding: 4px }
        #rounded { display: block; width: 60px; height: 20px; border-radius: 8px }
        </style></head><body>
        <p>Some words before the <mark id="m">marked words that wrap onto the next line</mark> and after.</p>
        <ul><li>one</li><li>two</li></ul>
        <h1>Tight</h1>
        <table><tr><td>a</td><td>b</td></tr></table>
        <img id="rounded" src="data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='60' height='20'%3E%3Crect width='60' height='20' fill='red'/%3E%3C/svg%3E">
        <input id="box" type="checkbox" checked>
        </body></html>"#);
    let doc = json(&out.document);
    let all = nodes(doc);
    // The canvas takes body's gradient, sized for the root element; body paints none of it.
    let fills = doc["fills"].as_array().expect("root fills");
    assert!(fills.iter().any(|f| f["type"] == "GRADIENT_LINEAR"), "{fills:?}");
    // (The root, first, is named "Page" too: the page has no title.)
    assert!(all[1..]
        .iter()
        .filter(|n| n["name"] == "Page")
        .all(|b| b["fills"].as_array().is_none_or(|f| f.is_empty())));
    // The page (the 900 px viewport) is taller than the root element: the gradient repeats.
    let tile = all.iter().find(|n| n["name"] == "Page background").expect("a repeat of the gradient");
    assert_eq!(tile["fills"][0]["type"], "GRADIENT_LINEAR");
    assert!(tile["absY"].as_f64().is_some_and(|y| y > 0.0));
    // An inline box broken across lines paints one rectangle per line, not its bounding box.
    let marks: Vec<&Value> = all.iter().filter(|n| n["name"] == "m").collect();
    assert!(marks.len() >= 2 && marks.iter().all(|m| m["type"] == "RECTANGLE"), "{marks:?}");
    assert!(marks.iter().all(|m| m["height"].as_f64().is_some_and(|h| h < 30.0)), "{marks:?}");
    // Disc markers are the circles Chromium draws, not a bullet glyph.
    let discs = all.iter().filter(|n| n["type"] == "ELLIPSE").count();
    assert_eq!(discs, 2);
    assert!(all.iter().all(|n| n["characters"].as_str().is_none_or(|c| c.trim() != "•")));
    // A line shorter than the glyphs: the text box is the line box, centred on them.
    assert_eq!(text(&all, "Tight")["height"], 40.0);
    // Collapsed table borders are shared: centred on the cell's edge.
    // A cell holding only text is named by it.
    let cell = all.iter().find(|n| n["name"] == "a" && n["type"] == "FRAME").expect("a cell");
    assert_eq!(cell["strokeAlign"], "CENTER");
    // An SVG image with rounded corners: a clipping frame holds it.
    let rounded = all.iter().find(|n| n["name"] == "rounded").expect("the image");
    assert_eq!((rounded["type"].as_str(), rounded["cornerRadius"].as_f64()), (Some("FRAME"), Some(8.0)));
    assert_eq!(rounded["clipsContent"], true);
    assert!(all.iter().any(|n| n["type"] == "SVG" && n["absX"] == rounded["absX"]));
    // A themed checkbox is its picture.
    let check = all.iter().find(|n| n["name"] == "box").expect("the checkbox");
    assert_eq!(check["fills"][0]["type"], "IMAGE");
}
