use base64::Engine;
use serde_json::{json, Value};

use crate::helpers::*;

fn b64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

async fn completed_job(app: &TestApp) -> (Tenant, String, String) {
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    let nonce = app.manifest(&id).await.nonce;
    (t, id, nonce)
}

#[tokio::test]
async fn result_hydrates_images_with_the_exact_uploaded_bytes() {
    let app = TestApp::new().await;
    let (t, id, nonce) = completed_job(&app).await;
    let hero = png(64, 48);
    let logo =
        b"<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"4\" height=\"4\"/>".to_vec();
    let gif = b"GIF89a\x02\x00\x02\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x00\x00\x00\x00\x00,\x00\x00\x00\x00\x02\x00\x02\x00\x00\x02\x02D\x01\x00;".to_vec();
    let jpeg = {
        // SOI, APP0, SOF0 (8x8), EOI: enough for the header check.
        let mut j = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, b'J', b'F', b'I', b'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0];
        j.extend_from_slice(&[
            0xFF, 0xC0, 0x00, 0x11, 0x08, 0x00, 0x08, 0x00, 0x08, 0x03, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1,
        ]);
        j.extend_from_slice(&[0xFF, 0xD9]);
        j
    };
    let p = format!("code2des/{id}/1/images/");
    let images = json!({
        "hero": {"key": format!("{p}hero.png"), "mime_type": "image/png"},
        "logo": {"key": format!("{p}logo.svg"), "mime_type": "image/svg+xml"},
        "anim": {"key": format!("{p}a.gif"), "mime_type": "image/gif"},
        "photo": {"key": format!("{p}p.jpg"), "mime_type": "image/jpeg"},
    });
    let art = artifact(&id, &nonce, images, &["hero", "logo", "anim", "photo"]);
    let files = [
        (format!("{p}hero.png"), hero.clone()),
        (format!("{p}logo.svg"), logo.clone()),
        (format!("{p}a.gif"), gif.clone()),
        (format!("{p}p.jpg"), jpeg.clone()),
    ];
    let refs: Vec<(&str, Vec<u8>)> = files.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    assert_eq!(app.complete_with(&id, art.clone(), &refs).await.status, 200);

    let a = app.result(&t, Some(&t.sub), &id).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.json["document"], art["document"]);
    assert_eq!(a.json["kind"], "result");
    assert_eq!(a.json["warningCount"], 2);
    assert_eq!(a.json["code2desId"], id.as_str());
    for (name, bytes, mime) in [
        ("hero", &hero, "image/png"),
        ("logo", &logo, "image/svg+xml"),
        ("anim", &gif, "image/gif"),
        ("photo", &jpeg, "image/jpeg"),
    ] {
        let img = &a.json["images"][name];
        assert_eq!(img["mimeType"], mime);
        assert_eq!(img["size"], bytes.len());
        assert_eq!(&b64(img["data"].as_str().unwrap()), bytes, "{name}");
    }
    assert_eq!(a.json["deferredImages"], json!([]));
    let text = a.json.to_string();
    assert!(
        !text.contains(&nonce) && !text.contains("s3://") && !text.contains("code2des/"),
        "no nonce, no S3 location"
    );
}

#[tokio::test]
async fn result_of_a_processing_job_is_409_not_ready() {
    let app = TestApp::new().await;
    let (t, id, _) = completed_job(&app).await;
    let a = app.result(&t, Some(&t.sub), &id).await;
    assert_eq!((a.status, a.code()), (409, "not_ready"));
}

#[tokio::test]
async fn result_of_a_failed_job_without_artifact_is_409_job_failed() {
    let app = TestApp::new().await;
    let (t, id, _) = completed_job(&app).await;
    app.fail(&id, "the capture was empty").await;
    let a = app.result(&t, Some(&t.sub), &id).await;
    assert_eq!((a.status, a.code(), a.message()), (409, "job_failed", "the capture was empty"));
}

#[tokio::test]
async fn result_of_a_failed_job_serves_its_failure_artifact() {
    let app = TestApp::new().await;
    let (t, id, nonce) = completed_job(&app).await;
    let key = format!("code2des/{id}/1/failure.json");
    let art = json!({"version": 1, "kind": "failure", "code2des_id": id, "attempt": 1, "nonce": nonce,
                     "warning_count": 4, "document": null, "images": {}});
    app.put(&key, serde_json::to_vec(&art).unwrap()).await;
    let a = app
        .webhook(&json!({"code2des_id": id, "attempt": 1, "nonce": nonce, "status": "failed",
                         "result_url": format!("s3://{BUCKET}/{key}"), "error_message": "fonts missing"}))
        .await;
    assert_eq!(a.status, 200);
    let r = app.result(&t, Some(&t.sub), &id).await;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!((r.json["kind"].as_str(), r.json["warningCount"].as_i64()), (Some("failure"), Some(4)));
    assert!(r.json["document"].is_null());
}

/// Objects to upload: (key, bytes).
type Files = Vec<(String, Vec<u8>)>;

/// Uploads `artifact` (and images) for a fresh job, completes it, and asserts result → 502
/// while the job row stays exactly as it was.
async fn assert_invalid_artifact(
    app: &TestApp,
    t: &Tenant,
    id: &str,
    artifact: Value,
    images: &[(&str, Vec<u8>)],
    why: &str,
) {
    assert_eq!(app.complete_with(id, artifact, images).await.status, 200, "{why}");
    let before = app.get(t, Some(&t.sub), id).await.json;
    let a = app.result(t, Some(&t.sub), id).await;
    assert_eq!((a.status, a.code()), (502, "artifact_invalid"), "{why}: {a:?}");
    assert_eq!(a.message(), "the result artifact failed validation", "no detail leaks: {why}");
    assert_eq!(app.get(t, Some(&t.sub), id).await.json, before, "nothing changed: {why}");
}

#[tokio::test]
async fn tampered_artifacts_are_502_and_change_nothing() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let mut cases: Vec<(String, Value, Files)> = Vec::new();
    let mk = |id: &str, nonce: &str| {
        let key = format!("code2des/{id}/1/images/hero.png");
        (artifact(id, nonce, json!({"hero": {"key": key, "mime_type": "image/png"}}), &["hero"]), key)
    };
    // Each case gets its own job.
    for why in [
        "wrong nonce",
        "wrong id",
        "wrong attempt",
        "key outside prefix",
        "webp labelled png",
        "5000 px png",
        "missing image",
        "100k nodes",
        "unknown node type",
        "unknown version",
        "not json",
        "deep nesting",
        "missing object",
        "jpeg labelled png",
        "html labelled svg",
        "too large",
    ] {
        let id = app.new_job(&t).await;
        let nonce = app.manifest(&id).await.nonce;
        let (mut art, key) = mk(&id, &nonce);
        let mut imgs = vec![(key.clone(), png(8, 8))];
        match why {
            "wrong nonce" => art["nonce"] = json!("0".repeat(64)),
            "wrong id" => art["code2des_id"] = json!(uuid::Uuid::now_v7().to_string()),
            "wrong attempt" => art["attempt"] = json!(2),
            "key outside prefix" => {
                let other = format!("code2des/{}/1/images/hero.png", uuid::Uuid::now_v7());
                art["images"]["hero"]["key"] = json!(other);
                imgs = vec![(other, png(8, 8))];
            }
            "webp labelled png" => {
                imgs[0].1 =
                    b"RIFF\x24\x00\x00\x00WEBPVP8 \x18\x00\x00\x00\x30\x01\x00\x9d\x01\x2a\x08\x00\x08\x00".to_vec()
            }
            "5000 px png" => imgs[0].1 = png(5000, 1),
            "missing image" => art["images"] = json!({}),
            "100k nodes" => art["document"]["children"] = json!(vec![json!({"type": "TEXT"}); 100_000]),
            "unknown node type" => art["document"]["children"][0]["type"] = json!("COMPONENT"),
            "unknown version" => art["version"] = json!(2),
            "not json" => art = json!("not an artifact"),
            "deep nesting" => {
                let mut d = json!({"type": "FRAME"});
                for _ in 0..60 {
                    d = json!({"type": "GROUP", "children": [d]});
                }
                art["document"] = d;
            }
            "missing object" => imgs.clear(),
            "jpeg labelled png" => imgs[0].1 = vec![0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, b'J', b'F', b'I', b'F', 0],
            "html labelled svg" => {
                art["images"]["hero"]["mime_type"] = json!("image/svg+xml");
                imgs[0].1 = b"<html><body>hi</body></html>".to_vec();
            }
            "too large" => {
                // One byte over the limit the worker checks against too (not a round number).
                let limit = shared::domain::artifact::Limits::default().max_artifact_bytes as usize;
                art["padding"] = json!("x".repeat(limit + 1));
            }
            _ => unreachable!(),
        }
        cases.push((id, art, imgs));
    }
    for (i, (id, art, imgs)) in cases.into_iter().enumerate() {
        let refs: Vec<(&str, Vec<u8>)> = imgs.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        assert_invalid_artifact(&app, &t, &id, art, &refs, &format!("case {i}")).await;
    }
}

#[tokio::test]
async fn a_missing_artifact_is_502() {
    let app = TestApp::new().await;
    let (t, id, nonce) = completed_job(&app).await;
    let a = app
        .webhook(&json!({"code2des_id": id, "attempt": 1, "nonce": nonce, "status": "completed",
                         "result_url": format!("s3://{BUCKET}/code2des/{id}/1/never-written.json")}))
        .await;
    assert_eq!(a.status, 200);
    assert_eq!(app.result(&t, Some(&t.sub), &id).await.code(), "artifact_invalid");
}

#[tokio::test]
async fn result_outside_scope_is_404() {
    let app = TestApp::new().await;
    let (t, id, _) = completed_job(&app).await;
    app.complete(&id).await;
    let other = app.tenant().await;
    assert_eq!(app.result(&t, Some(&other.sub), &id).await.status, 404);
    assert_eq!(app.result(&other, Some(&other.sub), &id).await.status, 404);
    assert_eq!(app.result(&t, None, &id).await.status, 401);
    assert_eq!(app.result(&t, Some(&t.sub), &id).await.status, 200);
}

#[tokio::test]
async fn images_past_the_response_budget_are_deferred_never_truncated() {
    let app = TestApp::new().await;
    let (t, id, nonce) = completed_job(&app).await;
    // Eight incompressible ~1.2 MB images: about 13 MB of base64, twice the Lambda limit.
    let p = format!("code2des/{id}/1/images/");
    let mut images = serde_json::Map::new();
    let mut files = Vec::new();
    let names: Vec<String> = (0..8).map(|i| format!("img{i}")).collect();
    for n in &names {
        let bytes = png_with(640, 640, true);
        images.insert(n.clone(), json!({"key": format!("{p}{n}.png"), "mime_type": "image/png"}));
        files.push((format!("{p}{n}.png"), bytes));
    }
    let used: Vec<&str> = names.iter().map(String::as_str).collect();
    let art = artifact(&id, &nonce, Value::Object(images), &used);
    let refs: Vec<(&str, Vec<u8>)> = files.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    app.complete_with(&id, art, &refs).await;

    let ev = user_event("result.json", &t, Some(&t.sub), Some(&id), None);
    let resp = code2des_result::handler::handle(&app.result, to_request(&ev)).await;
    let body_len = resp.body().as_ref().len();
    let a = Answer::from(resp);
    assert_eq!(a.status, 200);
    assert!(body_len < 6 * 1024 * 1024, "body {body_len} fits the Lambda limit");
    let inlined: Vec<String> = a.json["images"].as_object().unwrap().keys().cloned().collect();
    let deferred: Vec<String> =
        a.json["deferredImages"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect();
    assert!(!inlined.is_empty() && !deferred.is_empty(), "{inlined:?} / {deferred:?}");
    assert_eq!(inlined.len() + deferred.len(), 8);
    // Inlined in document order, deferred are the rest.
    assert_eq!(deferred, names[inlined.len()..].to_vec());
    // The deferred ones come with ?images=, byte for byte, without the document.
    let more = app.result_images(&t, &id, &deferred[..2].join(",")).await;
    assert_eq!(more.status, 200, "{more:?}");
    assert!(more.json.get("document").is_none());
    for n in &deferred[..2] {
        let idx: usize = n[3..].parse().unwrap();
        assert_eq!(b64(more.json["images"][n]["data"].as_str().unwrap()), files[idx].1);
    }
    app.result_images(&t, &id, "nope").await.assert_invalid("images");
    app.result_images(&t, &id, "img0,,img1").await.assert_invalid("images");
}

/// An S3 403 is the function's role refused (an IAM or KMS misconfiguration): a logged 500,
/// counted as `ConfigurationError` (alarmed), never 502 `artifact_invalid` as if the artifact
/// were missing. The loopback S3 answers a request signed with the wrong key 403, as S3 does.
#[tokio::test]
async fn an_s3_403_is_a_500_configuration_error_not_an_invalid_artifact() {
    let mut app = TestApp::new().await;
    let (t, id, nonce) = completed_job(&app).await;
    let art = artifact(&id, &nonce, json!({}), &[]);
    assert_eq!(app.complete_with(&id, art, &[]).await.status, 200);
    assert_eq!(app.result(&t, Some(&t.sub), &id).await.status, 200);

    let endpoint = app.store.endpoint().unwrap();
    let refused = code2des_local::s3server::client(&endpoint, code2des_local::s3server::ACCESS_KEY, "not-the-key");
    app.result.bucket = shared::aws::bucket::ArtifactBucket::new(refused, BUCKET);
    let capture = shared::obs::metrics::capture();
    let a = app.result(&t, Some(&t.sub), &id).await;
    assert_eq!((a.status, a.code()), (500, "internal_error"), "{a:?}");
    assert!(a.headers.get("retry-after").is_none(), "retrying cannot help");
    assert!(capture.total("ConfigurationError", None) >= 1.0);
}

/// The fidelity report (issue 30): the artifact's warnings come back with the result, each
/// with its code, message, DOM path and node name; an artifact that lists none answers [].
#[tokio::test]
async fn the_result_carries_the_artifacts_warnings() {
    let app = TestApp::new().await;
    let (t, id, nonce) = completed_job(&app).await;
    let mut art = artifact(&id, &nonce, json!({}), &[]);
    let warnings = json!([
        {"code": "font_substituted", "message": "Brand Sans is not installed; Inter used", "path": "body > h1", "node": "Title"},
        {"code": "canvas_skipped", "message": "a canvas has no content in a capture", "path": "body > canvas", "node": null},
    ]);
    art["warnings"] = warnings.clone();
    art["warning_count"] = json!(2);
    assert_eq!(app.complete_with(&id, art, &[]).await.status, 200);
    let a = app.result(&t, Some(&t.sub), &id).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.json["warnings"], warnings);
    assert_eq!(a.json["warningCount"], 2);

    let (t2, other, n2) = completed_job(&app).await;
    assert_eq!(app.complete_with(&other, artifact(&other, &n2, json!({}), &[]), &[]).await.status, 200);
    assert_eq!(app.result(&t2, Some(&t2.sub), &other).await.json["warnings"], json!([]));
}

/// The artifact's image of kind `preview` (issue 40 item 2): served first, named by `preview`;
/// one over 64 KB, wider than 480 px, not a PNG, or a second one is refused as
/// `artifact_invalid`.
#[tokio::test]
async fn a_preview_is_served_and_an_oversized_one_is_refused() {
    let app = TestApp::new().await;
    let (t, id, nonce) = completed_job(&app).await;
    let p = format!("code2des/{id}/1/");
    // Stored deflate: about 3 bytes a pixel, 29 KB.
    let small = png(120, 80);
    let images = json!({
        "hero": {"key": format!("{p}images/hero.png"), "mime_type": "image/png"},
        "preview": {"key": format!("{p}preview.png"), "mime_type": "image/png", "kind": "preview"},
    });
    let art = artifact(&id, &nonce, images, &["hero"]);
    let files = [(format!("{p}images/hero.png"), png(8, 8)), (format!("{p}preview.png"), small.clone())];
    let refs: Vec<(&str, Vec<u8>)> = files.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    assert_eq!(app.complete_with(&id, art, &refs).await.status, 200);
    let a = app.result(&t, Some(&t.sub), &id).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.json["preview"], "preview");
    assert_eq!(b64(a.json["images"]["preview"]["data"].as_str().unwrap()), small);
    assert_eq!(a.json["images"]["preview"]["mimeType"], "image/png");

    // Without one, there is no `preview` member.
    let (t2, id2, nonce2) = completed_job(&app).await;
    let p2 = format!("code2des/{id2}/1/");
    let art =
        artifact(&id2, &nonce2, json!({"hero": {"key": format!("{p2}hero.png"), "mime_type": "image/png"}}), &["hero"]);
    assert_eq!(app.complete_with(&id2, art, &[(&format!("{p2}hero.png"), png(8, 8))]).await.status, 200);
    let a = app.result(&t2, Some(&t2.sub), &id2).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert!(a.json.get("preview").is_none(), "{}", a.json);

    let cases: [(&str, Value, Vec<u8>); 4] = [
        ("wider than 480 px", json!({"mime_type": "image/png", "kind": "preview"}), png(481, 10)),
        (
            "over 64 KB",
            json!({"mime_type": "image/png", "kind": "preview"}),
            code2des_testkit::worker::png_with(200, 200, true),
        ),
        ("not a PNG", json!({"mime_type": "image/gif", "kind": "preview"}), png(10, 10)),
        ("an unknown kind", json!({"mime_type": "image/png", "kind": "thumbnail"}), png(10, 10)),
    ];
    for (why, entry, bytes) in cases {
        let (t, id, nonce) = completed_job(&app).await;
        let key = format!("code2des/{id}/1/preview.png");
        let mut entry = entry;
        entry["key"] = key.clone().into();
        let art = artifact(&id, &nonce, json!({"preview": entry}), &[]);
        assert_invalid_artifact(&app, &t, &id, art, &[(&key, bytes)], why).await;
    }
    let (t, id, nonce) = completed_job(&app).await;
    let q = format!("code2des/{id}/1/");
    let two = json!({"a": {"key": format!("{q}a.png"), "mime_type": "image/png", "kind": "preview"},
                     "b": {"key": format!("{q}b.png"), "mime_type": "image/png", "kind": "preview"}});
    let files = [(format!("{q}a.png"), png(10, 10)), (format!("{q}b.png"), png(10, 10))];
    let refs: Vec<(&str, Vec<u8>)> = files.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    assert_invalid_artifact(&app, &t, &id, artifact(&id, &nonce, two, &[]), &refs, "two previews").await;
}
