//! Compressed results (issue 31): bytes and CPU of the result route's content codings for two
//! bodies as the route answers them, side by side in one run: a converted document of a few
//! thousand nodes with no inlined image, and an image-heavy answer whose inlined images fill the
//! response budget. The baseline is the identity body the route sent before (its bytes, and the
//! CPU of serialising it); each coding adds its compression on top.

use std::time::{Duration, Instant};

use base64::Engine;
use code2des_result::encoding::{encode, Coding};
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

/// A converted page as the reference worker writes it: nested frames, text runs with their
/// styles, rectangles with fills and effects (`nodes` in all).
fn document(nodes: usize) -> Value {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let words = ["Design", "systems", "ship", "faster", "with", "tokens", "grid", "cards", "pricing", "sign", "up"];
    let mut sections = Vec::new();
    let mut made = 0;
    while made < nodes {
        let mut children = Vec::new();
        for i in 0..24 {
            let text: Vec<&str> =
                (0..rng.random_range(2..12)).map(|_| words[rng.random_range(0..words.len())]).collect();
            children.push(if i % 3 == 0 {
                json!({"type": "TEXT", "name": text[0], "x": rng.random_range(0..1200), "y": rng.random_range(0..3000),
                       "width": rng.random_range(40..900), "height": 24, "characters": text.join(" "),
                       "fontName": {"family": "Inter", "style": "Regular"}, "fontSize": 16, "lineHeight": {"unit": "PIXELS", "value": 24},
                       "letterSpacing": {"unit": "PIXELS", "value": 0}, "fills": [{"type": "SOLID", "color": {"r": 0.07, "g": 0.09, "b": 0.15}}]})
            } else {
                json!({"type": "RECTANGLE", "name": format!("box {i}"), "x": rng.random_range(0..1200), "y": rng.random_range(0..3000),
                       "width": rng.random_range(40..900), "height": rng.random_range(20..400), "cornerRadius": 8,
                       "fills": [{"type": "SOLID", "color": {"r": rng.random::<f32>(), "g": rng.random::<f32>(), "b": rng.random::<f32>()}}],
                       "effects": [{"type": "DROP_SHADOW", "radius": 12, "offset": {"x": 0, "y": 4}, "color": {"r": 0, "g": 0, "b": 0, "a": 0.12}}]})
            });
        }
        made += children.len() + 1;
        sections.push(json!({"type": "FRAME", "name": format!("section {}", sections.len()), "x": 0, "y": 0,
                             "width": 1440, "height": 600, "layoutMode": "VERTICAL", "itemSpacing": 16, "children": children}));
    }
    json!({"type": "FRAME", "name": "Landing page", "width": 1440, "height": 9000, "children": sections})
}

/// The route's body: `document` (or null) and `images` inlined as base64 of incompressible bytes
/// (PNG and JPEG data is already compressed).
fn body(document: Value, images: usize, image_bytes: usize) -> String {
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let mut inlined = serde_json::Map::new();
    for i in 0..images {
        let bytes: Vec<u8> = (0..image_bytes).map(|_| rng.random()).collect();
        let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
        inlined.insert(format!("img{i:03}"), json!({"mimeType": "image/png", "size": image_bytes, "data": data}));
    }
    json!({"code2desId": "01890a5d-ac96-774b-bcce-b302099a8057", "kind": "result", "version": 1, "warningCount": 3,
           "document": document, "images": inlined, "deferredImages": []})
    .to_string()
}

/// The least CPU time of `rounds` runs of `f` (the machine is noisy: the minimum is the cost).
fn least(rounds: usize, mut f: impl FnMut()) -> Duration {
    (0..rounds)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

pub fn run(quick: bool) {
    let rounds = if quick { 2 } else { 15 };
    let doc = document(if quick { 500 } else { 5000 });
    let cases = [
        ("document, 5 000 nodes, no image", doc.clone(), 0, 0),
        (
            "image-heavy: 40 images of 100 KiB",
            json!({"type": "FRAME", "name": "Gallery", "children": []}),
            40,
            100 * 1024,
        ),
    ];
    println!("## Compressed results (the result route's content codings)\n");
    println!("| body | coding | bytes sent | of identity | Lambda envelope | of identity | CPU ms (serialise + code) | of identity |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    for (name, document, images, size) in cases {
        let (images, size) = if quick { (images.min(4), size) } else { (images, size) };
        let text = body(document.clone(), images, size);
        // Identity: what the route sent before, serialised from its Value (the route serialises
        // its own struct: the same work).
        let value: Value = serde_json::from_str(&text).expect("the body is JSON");
        let ser = least(rounds, || drop(std::hint::black_box(serde_json::to_string(&value))));
        let identity_envelope = text.len() + text.bytes().filter(|b| *b == b'"' || *b == b'\\').count();
        let base = (text.len() as f64, identity_envelope as f64, ser.as_secs_f64() * 1e3);
        println!("| {name} | identity | {} | 1.00 | {} | 1.00 | {:.2} | 1.00 |", text.len(), identity_envelope, base.2);
        for coding in [Coding::Brotli, Coding::Gzip] {
            let packed = encode(coding, text.as_bytes()).expect("the coding encodes");
            let cpu = least(rounds, || drop(std::hint::black_box(encode(coding, text.as_bytes()))));
            let envelope = packed.len().div_ceil(3) * 4;
            let ms = base.2 + cpu.as_secs_f64() * 1e3;
            println!(
                "| {name} | {} | {} | {:.3} | {} | {:.3} | {:.2} | {:.1} |",
                coding.header().unwrap_or("identity"),
                packed.len(),
                packed.len() as f64 / base.0,
                envelope,
                envelope as f64 / base.1,
                ms,
                ms / base.2
            );
        }
    }
    println!();
}
