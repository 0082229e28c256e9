//! What the worker reports, end to end against the loopback S3 server and a webhook receiver on
//! loopback: `completed` only for a result the result route serves (its own checks, run on the
//! bytes written), `failed` with the reason otherwise, and never a canned page for a job with
//! no capture unless the worker was started with `--sample`.

use std::sync::{Arc, Mutex};

use code2des_testkit::s3::LoopbackS3;
use code2des_worker::Worker;
use serde_json::{json, Value};
use shared::domain::artifact::{self, Expect, Kind, Limits};
use shared::domain::job::Nonce;
use shared::domain::protocol::Manifest;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BUCKET: &str = "code2des-artifacts";
const ID: &str = "01890a5d-ac96-774b-bcce-b302099a8057";
const NONCE: &str = "n0nce-of-attempt-1";

/// Every webhook body the receiver got, in order; it answers each 200.
type Received = Arc<Mutex<Vec<Value>>>;

/// A webhook endpoint on loopback: reads one HTTP/1.1 request per connection (headers, then
/// `content-length` bytes) and answers `200 {}`.
async fn receiver() -> (String, Received) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/code2des/webhook", listener.local_addr().unwrap());
    let got: Received = Arc::default();
    let store = got.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else { return };
            let store = store.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                let body_at = loop {
                    let n = sock.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..body_at]).to_ascii_lowercase();
                let len: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                while buf.len() < body_at + len {
                    let n = sock.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                if let Ok(v) = serde_json::from_slice(&buf[body_at..body_at + len]) {
                    store.lock().unwrap().push(v);
                }
                let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}";
                let _ = sock.write_all(answer.as_bytes()).await;
            });
        }
    });
    (url, got)
}

fn manifest(callback_url: &str, capture_url: Option<&str>) -> Manifest {
    let m = json!({"version": 1, "code2des_id": ID, "attempt": 1, "nonce": NONCE,
        "organization_id": 1, "project_id": 1, "page_import_id": "pi-7", "capture_url": capture_url,
        "figma_file_key": "F", "screen_id": "docs", "placement_target": null,
        "callback_url": callback_url, "result_prefix": format!("s3://{BUCKET}/code2des/{ID}/1/")});
    Manifest::from_slice(m.to_string().as_bytes()).unwrap()
}

struct Setup {
    s3: LoopbackS3,
    worker: Worker,
    m: Manifest,
    got: Received,
}

async fn setup(capture_url: Option<&str>) -> Setup {
    let s3 = LoopbackS3::start(BUCKET).await;
    let (url, got) = receiver().await;
    let worker = Worker::new(s3.client.clone(), BUCKET, "test-webhook-secret");
    Setup { s3, worker, m: manifest(&url, capture_url), got }
}

impl Setup {
    /// The terminal report: the last body the webhook got.
    fn last(&self) -> Value {
        self.got.lock().unwrap().last().cloned().expect("a webhook was sent")
    }

    async fn object(&self, key: &str) -> Vec<u8> {
        let out = self.s3.client.get_object().bucket(BUCKET).key(key).send().await.unwrap();
        out.body.collect().await.unwrap().into_bytes().to_vec()
    }

    async fn put(&self, key: &str, bytes: &[u8]) {
        let body = aws_sdk_s3::primitives::ByteStream::from(bytes.to_vec());
        self.s3.client.put_object().bucket(BUCKET).key(key).body(body).send().await.unwrap();
    }

    /// The artifact the worker wrote, as the result route reads it: its size, then shared's
    /// `validate` against the job, under the route's default limits.
    async fn served(&self) -> Result<artifact::Artifact, String> {
        let bytes = self.object(&format!("code2des/{ID}/1/result.json")).await;
        artifact::check_size(bytes.len() as u64, &Limits::default())?;
        let nonce = Nonce::from_db(NONCE.into());
        let prefix = format!("code2des/{ID}/1/");
        let expect = Expect { code2des_id: ID, attempt: 1, nonce: &nonce, prefix: &prefix, kind: Kind::Result };
        artifact::validate(&bytes, &expect, &Limits::default())
    }
}

/// A long documentation page as the converter writes one: sections down a page of `height`
/// px, each a heading, ten paragraphs and a code block, `nodes` nodes in all. Its prose is
/// drawn from 4 096 made-up words (xorshift, seeded), so it compresses about as English does:
/// a few words in a fixed order would compress a hundredfold and prove nothing about the fit.
fn documentation_page(nodes: usize, height: f64) -> Value {
    let mut state = 37_u64;
    let mut next = move |below: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % below
    };
    let vocabulary: Vec<String> =
        (0..4096).map(|_| (0..2 + next(8)).map(|_| (b'a' + next(26) as u8) as char).collect()).collect();
    let mut text =
        |n: usize| -> String { (0..n).map(|_| vocabulary[next(4096) as usize].as_str()).collect::<Vec<_>>().join(" ") };
    let run = |name: String, chars: String, x: f64, y: f64, size: f64, family: &str| {
        json!({"type": "TEXT", "name": name, "x": x, "y": y, "width": 860.0, "height": size * 1.5,
               "fills": [{"type": "SOLID", "color": {"r": 0.133, "g": 0.157, "b": 0.192}}],
               "characters": chars, "fontSize": size, "fontName": {"family": family, "style": "Regular"},
               "textAlignHorizontal": "LEFT", "textAutoResize": "HEIGHT",
               "lineHeight": {"unit": "PIXELS", "value": size * 1.5}, "letterSpacing": {"unit": "PIXELS", "value": 0.0}})
    };
    let per_section = 20;
    let sections = nodes.div_ceil(per_section + 1);
    let step = height / sections as f64;
    let mut made = 1;
    let mut children = Vec::new();
    for s in 0..sections {
        let y = s as f64 * step;
        let mut kids = vec![run(format!("h2 {s}"), text(6), 0.0, 0.0, 28.0, "Inter")];
        for p in 0..10 {
            kids.push(run(format!("p {s}.{p}"), text(28), 0.0, 48.0 + p as f64 * 72.0, 16.0, "Inter"));
        }
        kids.push(json!({"type": "RECTANGLE", "name": "pre", "x": 0.0, "y": 780.0, "width": 860.0, "height": 200.0,
            "cornerRadius": 6.0, "fills": [{"type": "SOLID", "color": {"r": 0.965, "g": 0.973, "b": 0.98}}]}));
        for l in 0..(per_section - 12) {
            kids.push(run(
                format!("code {s}.{l}"),
                format!("let x{l} = worker.{}();", text(1)),
                16.0,
                792.0 + l as f64 * 22.0,
                13.0,
                "JetBrains Mono",
            ));
        }
        kids.truncate(nodes.saturating_sub(made + 1));
        made += 1 + kids.len();
        children.push(json!({"type": "FRAME", "name": format!("section {s}"), "x": 290.0, "y": y, "width": 860.0,
            "height": step.min(1000.0), "fills": [], "children": kids}));
        if made >= nodes {
            break;
        }
    }
    json!({"type": "FRAME", "name": "docs", "x": 0.0, "y": 0.0, "width": 1440.0, "height": height,
           "fills": [{"type": "SOLID", "color": {"r": 1.0, "g": 1.0, "b": 1.0}}], "children": children})
}

fn count_nodes(v: &Value) -> usize {
    1 + v["children"].as_array().map_or(0, |c| c.iter().map(count_nodes).sum())
}

fn node(doc: Value) -> code2des_wire::node::Node {
    serde_json::from_value(doc).expect("a node tree")
}

fn images_of(images: Value) -> std::collections::BTreeMap<String, code2des_wire::artifact::ArtifactImage> {
    serde_json::from_value(images).expect("images")
}

fn warnings_of(list: Vec<Value>) -> Vec<code2des_wire::artifact::ArtifactWarning> {
    list.into_iter().map(|w| serde_json::from_value(w).expect("a warning")).collect()
}

#[tokio::test]
async fn a_50_000_px_documentation_page_of_20_000_nodes_completes_and_is_served() {
    let s = setup(None).await;
    let doc = documentation_page(20_000, 50_000.0);
    assert_eq!(count_nodes(&doc), 20_000);
    let warnings: Vec<Value> = (0..500)
        .map(|i| {
            json!({"code": "font_substituted", "message": "JetBrains Mono is not available: DejaVu Sans Mono drawn",
                        "path": format!("main > section:nth-child({i}) > pre > code"), "node": format!("code {i}.0")})
        })
        .collect();
    let r = s
        .worker
        .finish(&s.m, Kind::Result, Some(&node(doc)), images_of(json!({})), 500, Some(&warnings_of(warnings)), None)
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(s.last()["status"], "completed", "{}", s.last());
    let art = s.served().await.expect("the result route accepts what the worker reported completed");
    let size = s.object(&format!("code2des/{ID}/1/result.json")).await.len();
    assert!(size > 2 * 1024 * 1024, "a page this long is over the old 2 MiB ({size} bytes)");
    assert!(code2des_result::handler::check_answer(
        shared::domain::ids::Code2desId::parse(ID).unwrap(),
        &art,
        &Limits::default()
    )
    .is_ok());
}

#[tokio::test]
async fn an_artifact_over_the_routes_size_limit_fails_the_job_with_both_sizes() {
    // The report of issue 37 at the limit the route had then: a document under 2 MiB whose
    // artifact, its warnings included, is over it; the route would have answered 502 forever.
    let mut s = setup(None).await;
    let old = Limits { max_artifact_bytes: 2_097_152, ..Limits::default() };
    s.worker = s.worker.clone().with_limits(old);
    let doc = json!({"type": "FRAME", "name": "docs", "children": [
        {"type": "TEXT", "name": "p", "characters": "x".repeat(2_000_000)}]});
    let warnings: Vec<Value> =
        (0..500).map(|i| json!({"code": "unsupported_css", "message": format!("a transform {i:>180}")})).collect();
    s.worker
        .finish(&s.m, Kind::Result, Some(&node(doc)), images_of(json!({})), 500, Some(&warnings_of(warnings)), None)
        .await
        .unwrap();
    let last = s.last();
    assert_eq!(last["status"], "failed", "{last}");
    let msg = last["error_message"].as_str().unwrap();
    assert!(
        msg.starts_with("the result artifact is 2 1")
            && msg.ends_with(" bytes, over the 2 097 152 the result route serves"),
        "{msg}"
    );
    let written: Value = serde_json::from_slice(&s.object(&format!("code2des/{ID}/1/result.json")).await).unwrap();
    assert_eq!(written["kind"], "failure", "the failure artifact replaced the result");
}

#[tokio::test]
async fn a_result_whose_answer_fits_no_compressed_response_fails_the_job() {
    // Under the route's own limits: a document of text that does not compress (random letters)
    // passes every check of shape and size, but its answer is over what a Lambda response
    // carries even compressed.
    let s = setup(None).await;
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let noise: String = (0..6_500_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (b'!' + (state % 90) as u8) as char
        })
        .filter(|c| *c != '"' && *c != '\\')
        .collect();
    let doc =
        json!({"type": "FRAME", "name": "noise", "children": [{"type": "TEXT", "name": "p", "characters": noise}]});
    s.worker.finish(&s.m, Kind::Result, Some(&node(doc)), images_of(json!({})), 0, None, None).await.unwrap();
    let last = s.last();
    assert_eq!(last["status"], "failed", "{last}");
    let msg = last["error_message"].as_str().unwrap();
    assert!(msg.starts_with("the result cannot be served: the result's answer is"), "{msg}");
    assert!(msg.contains("over the 4521984 bytes a compressed Lambda response carries"), "{msg}");
}

#[tokio::test]
async fn an_image_the_route_would_refuse_fails_the_job() {
    let s = setup(None).await;
    let key = format!("code2des/{ID}/1/images/hero.png");
    // SVG bytes declared PNG: the route's check_image refuses them.
    s.put(&key, code2des_worker::LOGO_SVG).await;
    let doc = json!({"type": "FRAME", "name": "s", "children": [
        {"type": "RECTANGLE", "name": "hero", "fills": [{"type": "IMAGE", "imageRef": "hero"}]}]});
    let images = json!({"hero": {"key": key, "mime_type": "image/png"},
                        "gone": {"key": format!("code2des/{ID}/1/images/gone.png"), "mime_type": "image/png"}});
    s.worker
        .finish(&s.m, Kind::Result, Some(&node(doc.clone())), images_of(images.clone()), 0, None, None)
        .await
        .unwrap();
    let last = s.last();
    assert_eq!(last["status"], "failed", "{last}");
    let msg = last["error_message"].as_str().unwrap();
    assert!(msg.starts_with("image \"hero\" of the result would be refused by the result route"), "{msg}");

    // An image the document uses that is not in the bucket.
    let doc = json!({"type": "FRAME", "name": "s", "children": [
        {"type": "RECTANGLE", "name": "gone", "fills": [{"type": "IMAGE", "imageRef": "gone"}]}]});
    s.worker.finish(&s.m, Kind::Result, Some(&node(doc)), images_of(images), 0, None, None).await.unwrap();
    let msg = s.last()["error_message"].as_str().unwrap().to_owned();
    assert!(msg.starts_with("image \"gone\" of the result: code2des/") && msg.ends_with("does not exist"), "{msg}");
}

#[tokio::test]
async fn a_job_without_a_capture_fails_and_only_sample_mode_answers_the_sample() {
    // The worker as every mode builds it (local demo worker, `poll`, `complete`, `lambda`):
    // with a conversion. No capture: nothing to convert, and Chromium is never started.
    let s = setup(None).await;
    let worker = s.worker.clone().with_conversion(Default::default());
    worker.complete(&s.m).await.unwrap();
    let last = s.last();
    assert_eq!(last["status"], "failed", "{last}");
    assert_eq!(last["error_message"], "page import pi-7 has no capture: there is no page to convert");

    // A worker started without a renderer converts nothing either.
    let with_capture = manifest(&s.m.callback_url, Some("s3://code2des-artifacts/captures/pi-7.html"));
    s.worker.complete(&with_capture).await.unwrap();
    assert_eq!(s.last()["status"], "failed", "{}", s.last());

    // `--sample`: the canned frame, completed, and served.
    s.worker.clone().with_sample().complete(&s.m).await.unwrap();
    assert_eq!(s.last()["status"], "completed", "{}", s.last());
    let art = s.served().await.expect("the sample result is served");
    assert_eq!(art.used.len(), 2);
}

/// Issue 40 item 3: a manifest naming two viewports gets one document whose root holds a frame
/// per width, in the manifest's order, converted by Chromium at each, and the result route
/// serves it (its node, image and warning checks run on the bytes written).
#[tokio::test]
async fn a_manifest_with_two_viewports_completes_with_a_frame_per_width() {
    let mut s = setup(None).await;
    let page = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../samples/landing.html")).expect("the sample");
    s.put("captures/pi-7.html", &page).await;
    s.m.capture_url = Some(format!("s3://{BUCKET}/captures/pi-7.html"));
    s.m.viewports = Some(vec![390, 1440]);
    let worker = s.worker.clone().with_conversion(Default::default());
    worker.complete(&s.m).await.unwrap();
    assert_eq!(s.last()["status"], "completed", "{}", s.last());
    let art = s.served().await.expect("the result is served");
    let document: Value = serde_json::from_str(art.document.expect("a document").get()).unwrap();
    let frames = document["children"].as_array().expect("the root's frames");
    let placed: Vec<(&str, f64, f64)> = frames
        .iter()
        .map(|f| (f["name"].as_str().unwrap(), f["x"].as_f64().unwrap(), f["width"].as_f64().unwrap()))
        .collect();
    assert_eq!(placed, [("Mobile · 390", 0.0, 390.0), ("Desktop · 1440", 470.0, 1440.0)]);
    assert_eq!(document["width"], 390.0 + 80.0 + 1440.0);

    // A manifest whose viewports no trigger would write is refused as it is read.
    let mut bad = serde_json::to_value(&s.m).unwrap();
    bad["viewports"] = json!([390, 390]);
    let err = Manifest::from_slice(bad.to_string().as_bytes()).unwrap_err();
    assert_eq!(err, "$.viewports: 390 is given twice");
}

/// Issue 40 item 2: a completed job's artifact carries the page's small preview, an image of
/// kind `preview` (a PNG at most 64 KB and 480 px wide), which the result route serves.
#[tokio::test]
async fn a_completed_artifact_carries_a_small_preview() {
    let s = setup(None).await;
    s.worker.clone().with_sample().complete(&s.m).await.unwrap();
    assert_eq!(s.last()["status"], "completed", "{}", s.last());
    let art = s.served().await.expect("served");
    let (name, entry) = art.preview.clone().expect("a preview");
    assert_eq!(name, "preview");
    assert!(entry.key.ends_with("/preview.png"), "{}", entry.key);
    assert!(art.used.iter().all(|(n, _)| *n != name), "the document does not use it");
    let png = s.object(&entry.key).await;
    assert!(png.len() <= 64 * 1024, "{} bytes", png.len());
    let size = imagesize::blob_size(&png).unwrap();
    assert!(size.width <= 480 && size.width >= 100, "{size:?}");
    // It is the page, not a blank picture.
    let mut decoder = png::Decoder::new(std::io::Cursor::new(&png));
    decoder.set_transformations(png::Transformations::EXPAND);
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = info.color_type.samples();
    let ink = buf[..info.buffer_size()].chunks_exact(px).filter(|p| p.iter().take(3).any(|c| *c < 230)).count();
    assert!(ink > 100, "{ink} pixels of ink");
}
