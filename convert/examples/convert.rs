//! `cargo run -p code2des-convert --example convert -- page.html [out.json]`: converts one
//! capture and prints (or writes) the document, the warnings and the timings.

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: convert <capture.html|.mhtml> [out.json]");
        std::process::exit(2);
    };
    let bytes = std::fs::read(path).expect("the capture");
    let renderer = code2des_convert::Renderer::start(Default::default()).await.expect("chromium");
    // REPEAT=n converts it n times with the one renderer (the steady state of a worker).
    let repeat: usize = std::env::var("REPEAT").ok().and_then(|r| r.parse().ok()).unwrap_or(1);
    let mut out = code2des_convert::convert(&renderer, &bytes, false).await;
    for _ in 1..repeat {
        out = code2des_convert::convert(&renderer, &bytes, false).await;
    }
    renderer.close().await;
    match out {
        Ok(o) => {
            let json = serde_json::json!({"document": o.document, "warnings": o.warnings,
                "images": o.images.iter().map(|i| (i.name.clone(), i.mime, i.bytes.len())).collect::<Vec<_>>(),
                "timings_ms": [o.timings.load.as_millis(), o.timings.render.as_millis(), o.timings.convert.as_millis()],
                "blocked": o.blocked_requests});
            let text = serde_json::to_string_pretty(&json).expect("json");
            match args.get(2) {
                Some(p) => std::fs::write(p, text).expect("write"),
                None => println!("{text}"),
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
