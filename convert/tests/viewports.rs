//! Several viewports from one capture (issue 40 item 3), against real Chromium: each frame is
//! Chromium's layout of the capture at its width (its media queries included), the same
//! document a conversion at that width alone makes, placed side by side in one root.

use std::sync::OnceLock;

use code2des_convert::doc::Paint;
use code2des_convert::{convert_at, convert_viewports, Node, Options, Output, Renderer, VIEWPORT_GAP};

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime"))
}

fn renderer() -> &'static Renderer {
    static R: OnceLock<Renderer> = OnceLock::new();
    R.get_or_init(|| runtime().block_on(Renderer::start(Options::default())).expect("Chromium starts"))
}

fn at(bytes: &[u8], viewports: &[u32]) -> Output {
    runtime().block_on(convert_viewports(renderer(), bytes, viewports, false)).expect("the page converts")
}

fn alone(bytes: &[u8], width: u32) -> Output {
    runtime().block_on(convert_at(renderer(), bytes, Some(width), false)).expect("the page converts")
}

/// One node as placed: `(type, name, x, y, width, height, characters)`.
type Placed = (String, String, f64, f64, f64, f64, Option<String>);

/// Every node under `n` (itself included) with its position from `n`'s top-left, depth first.
fn geometry(n: &Node) -> Vec<Placed> {
    fn walk(n: &Node, ox: f64, oy: f64, out: &mut Vec<Placed>) {
        out.push((n.kind.as_str().into(), n.name.clone(), ox, oy, n.width, n.height, n.characters.clone()));
        for c in n.children.iter().flatten() {
            walk(c, ox + c.x, oy + c.y, out);
        }
    }
    let mut out = Vec::new();
    walk(n, 0.0, 0.0, &mut out);
    out
}

fn frames(out: &Output) -> &[Node] {
    out.document.children.as_deref().expect("the root's frames")
}

/// `[x, y, width, height]` from `frame`'s top-left of the one node filled with solid `rgb`.
fn box_of(frame: &Node, rgb: (f64, f64, f64)) -> [f64; 4] {
    fn walk(n: &Node, ox: f64, oy: f64, rgb: (f64, f64, f64), out: &mut Vec<[f64; 4]>) {
        let filled = n.fills.iter().flatten().any(|p| {
            matches!(p, Paint::Solid { color, .. }
                if (color.r - rgb.0).abs() < 0.01 && (color.g - rgb.1).abs() < 0.01 && (color.b - rgb.2).abs() < 0.01)
        });
        if filled {
            out.push([ox, oy, n.width, n.height]);
        }
        for c in n.children.iter().flatten() {
            walk(c, ox + c.x, oy + c.y, rgb, out);
        }
    }
    let mut out = Vec::new();
    for c in frame.children.iter().flatten() {
        walk(c, c.x, c.y, rgb, &mut out);
    }
    assert_eq!(out.len(), 1, "one box filled {rgb:?}: {out:?}");
    out[0]
}

const RED: (f64, f64, f64) = (0.8, 0.0, 0.0);
const BLUE: (f64, f64, f64) = (0.0, 0.0, 0.8);

const BREAKPOINT_PAGE: &str = r#"<!DOCTYPE html><html><head><title>Breakpoints</title><style>
    body { margin: 0; font: 16px/20px sans-serif }
    .row { display: flex }
    .col { width: 50%; height: 100px; background: #c00 }
    .col + .col { background: #00c }
    @media (max-width: 600px) { .row { display: block } .col { width: 100% } }
    </style></head><body><div class="row"><div class="col">Alpha</div><div class="col">Beta</div></div></body></html>"#;

#[test]
fn each_frame_is_laid_out_at_its_width_media_queries_included() {
    let out = at(BREAKPOINT_PAGE.as_bytes(), &[1440, 390]);
    let [desktop, mobile] = frames(&out) else { panic!("two frames: {:#?}", out.document) };
    assert_eq!((desktop.name.as_str(), desktop.x, desktop.width), ("Desktop · 1440", 0.0, 1440.0));
    assert_eq!((mobile.name.as_str(), mobile.x, mobile.width), ("Mobile · 390", 1440.0 + VIEWPORT_GAP, 390.0));
    assert_eq!(out.document.name, "Breakpoints");
    assert_eq!(out.document.width, 1440.0 + VIEWPORT_GAP + 390.0);
    // Side by side at 1440 px; one above the other under the 600 px breakpoint: the boxes where
    // CSS puts them at each width.
    assert_eq!(box_of(desktop, RED), [0.0, 0.0, 720.0, 100.0]);
    assert_eq!(box_of(desktop, BLUE), [720.0, 0.0, 720.0, 100.0]);
    assert_eq!(box_of(mobile, RED), [0.0, 0.0, 390.0, 100.0]);
    assert_eq!(box_of(mobile, BLUE), [0.0, 100.0, 390.0, 100.0]);
    assert_eq!(desktop.height, 900.0, "the page is as tall as the 900 px viewport");
    assert_eq!(mobile.height, 900.0);
}

#[test]
fn a_samples_frames_are_the_conversions_at_each_width() {
    let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../samples/landing.html")).expect("the sample");
    let out = at(&bytes, &[1440, 390]);
    let [desktop, mobile] = frames(&out) else { panic!("two frames") };
    for (frame, width) in [(desktop, 1440), (mobile, 390)] {
        let single = alone(&bytes, width);
        assert_eq!(frame.width, f64::from(width));
        let (mut mine, theirs) = (geometry(frame), geometry(&single.document));
        // The frame's own name is its viewport's; everything under it is the single page's.
        mine[0].1.clone_from(&theirs[0].1);
        assert_eq!(mine.len(), theirs.len(), "{width}: the same nodes");
        assert_eq!(mine, theirs, "{width}: every node where the conversion at that width alone puts it");
    }
    // The desktop frame came first: its styles and images keep their ids and names.
    let first = alone(&bytes, 1440);
    let mut desktop_alone = first.document.clone();
    desktop_alone.styles = None;
    desktop_alone.name = "Desktop · 1440".into();
    // Its components (the cards' icons) stand beside the combined root, not beside the frame.
    let icons = desktop_alone.components.take().map_or(0, |c| c.len());
    assert_eq!(&desktop_alone, desktop);
    // (At 390 px the cards are of different widths: no component, no icons.)
    let mobile_icons = alone(&bytes, 390).document.components.map_or(0, |c| c.len());
    let beside = out.document.components.as_deref().unwrap_or_default();
    assert!(
        icons > 0 && beside.len() == icons + mobile_icons,
        "{icons} + {mobile_icons} icons, beside: {}",
        beside.len()
    );
    assert!(beside.iter().all(|c| c.x > out.document.width), "to the right of both frames");
    let shared_styles = out.document.styles.as_ref().map_or(0, Vec::len);
    assert!(shared_styles >= first.document.styles.as_ref().map_or(0, Vec::len));
    // Every image a frame refers to is in the one list, once.
    let names: std::collections::BTreeSet<&str> = out.images.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names.len(), out.images.len(), "no image twice");
    for n in out.document.walk().map(|(n, _)| n) {
        for (_, r) in n.image_refs() {
            assert!(names.contains(r), "{r} is among the images");
        }
    }
}

#[test]
fn one_viewport_is_the_page_as_before_with_no_wrapper() {
    let bytes = BREAKPOINT_PAGE.as_bytes();
    let one = at(bytes, &[390]);
    assert_eq!(one.document, alone(bytes, 390).document);
    assert_eq!((one.document.name.as_str(), one.width), ("Breakpoints", 390));
    let none = at(bytes, &[]);
    assert_eq!(none.document, alone(bytes, 1440).document, "none: the capture's own width, 1440");
    assert_eq!(box_of(&one.document, BLUE), [0.0, 100.0, 390.0, 100.0]);
}
