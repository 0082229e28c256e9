//! Converts captures with one renderer, as the worker does:
//!   convert page.html [out.json]                 the document, warnings and timings as JSON
//!   convert --out DIR [--screenshot] a.html ...  per capture, DIR/<stem>/document.json (document,
//!                                                warnings, title, size, timings), its images
//!                                                under images/, and with --screenshot
//!                                                Chromium's own picture as chromium.png
//!   --viewports 1440,390                         lays each capture out at each width, the frames
//!                                                side by side in one root, as a job that names
//!                                                `viewports` gets it (docs/WORKER.md, "Viewports")
//! REPEAT=n converts each capture n times on the one renderer (the steady state of a worker).

use std::path::{Path, PathBuf};

#[tokio::main]
async fn main() {
    let mut out_dir: Option<PathBuf> = None;
    let mut screenshot = false;
    let mut viewports: Vec<u32> = Vec::new();
    let mut inputs: Vec<PathBuf> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--out" => out_dir = args.next().map(PathBuf::from),
            "--screenshot" => screenshot = true,
            "--viewports" => {
                let list = args.next().unwrap_or_default();
                viewports = list.split(',').map(|w| w.trim().parse().expect("--viewports 1440,390")).collect();
            }
            _ => inputs.push(PathBuf::from(a)),
        }
    }
    if inputs.is_empty() {
        eprintln!("usage: convert <capture.html|.mhtml> [out.json] | convert --out DIR [--screenshot] <capture>...");
        std::process::exit(2);
    }
    let repeat: usize = std::env::var("REPEAT").ok().and_then(|r| r.parse().ok()).unwrap_or(1);
    let renderer = code2des_convert::Renderer::start(Default::default()).await.expect("chromium");
    // Without --out: one capture, and an optional second argument is where the JSON goes.
    let single_json = if out_dir.is_none() && inputs.len() == 2 { inputs.pop() } else { None };
    let mut failed = false;
    for path in &inputs {
        let bytes = std::fs::read(path).expect("the capture");
        let mut out = code2des_convert::convert_viewports(&renderer, &bytes, &viewports, screenshot).await;
        for _ in 1..repeat {
            out = code2des_convert::convert_viewports(&renderer, &bytes, &viewports, screenshot).await;
        }
        match out {
            Ok(o) => match &out_dir {
                Some(dir) => write_dir(&dir.join(stem(path)), &o),
                None => {
                    let text = serde_json::to_string_pretty(&summary(&o, true)).expect("json");
                    match &single_json {
                        Some(p) => std::fs::write(p, text).expect("write"),
                        None => println!("{text}"),
                    }
                }
            },
            Err(e) => {
                eprintln!("{}: error: {e}", path.display());
                failed = true;
            }
        }
    }
    renderer.close().await;
    if failed {
        std::process::exit(1);
    }
}

fn stem(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "capture".into())
}

fn summary(o: &code2des_convert::Output, image_list: bool) -> serde_json::Value {
    let mut v = serde_json::json!({"document": o.document, "warnings": o.warnings, "title": o.title,
        "width": o.width, "height": o.height,
        "timings_ms": {"load": o.timings.load.as_millis(), "render": o.timings.render.as_millis(),
            "convert": o.timings.convert.as_millis()},
        "blocked": o.blocked_requests});
    if image_list {
        v["images"] = o.images.iter().map(|i| serde_json::json!([i.name, i.mime, i.bytes.len()])).collect();
    } else {
        v["images"] = o
            .images
            .iter()
            .map(|i| (i.name.clone(), format!("images/{}.{}", i.name, i.extension()).into()))
            .collect::<serde_json::Map<_, _>>()
            .into();
    }
    v
}

fn write_dir(dir: &Path, o: &code2des_convert::Output) {
    std::fs::create_dir_all(dir.join("images")).expect("out dir");
    for i in &o.images {
        std::fs::write(dir.join("images").join(format!("{}.{}", i.name, i.extension())), &i.bytes).expect("image");
    }
    if let Some(png) = &o.screenshot {
        std::fs::write(dir.join("chromium.png"), png).expect("screenshot");
    }
    let text = serde_json::to_string_pretty(&summary(o, false)).expect("json");
    std::fs::write(dir.join("document.json"), text).expect("document");
    eprintln!("{}: {} images, {} warnings", dir.display(), o.images.len(), o.warnings.len());
}
