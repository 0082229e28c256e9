//! SPEC section 7, result caching, and issue 13's S3 budget: a completed result carries an
//! opaque ETag and immutable caching, `If-None-Match` with it is 304 without any S3 request, and
//! a result GET costs at most 1 + images S3 requests (no HEAD).

use std::sync::Arc;

use code2des_testkit::s3::S3Requests;
use serde_json::{json, Value};
use shared::aws::bucket::ArtifactBucket;

use crate::helpers::*;

const IMMUTABLE: &str = "private, max-age=86400, immutable";

/// The result function's S3 client, with every request it sends counted (each retry too).
fn count_s3(app: &mut TestApp) -> Arc<S3Requests> {
    let (client, requests) = code2des_testkit::s3::counted(&app.s3);
    app.result.bucket = ArtifactBucket::new(client, BUCKET);
    requests
}

/// A completed job whose result uses `n` distinct PNGs.
async fn completed_with_images(app: &TestApp, t: &Tenant, n: usize) -> String {
    let id = app.new_job(t).await;
    let nonce = app.manifest(&id).await.nonce;
    let (images, refs) = code2des_testkit::worker::images(&id, n);
    let used: Vec<&str> = refs.iter().map(|(r, _)| r.as_str()).collect();
    let art = artifact(&id, &nonce, images, &used);
    let files: Vec<(&str, Vec<u8>)> =
        refs.iter().enumerate().map(|(i, (_, key))| (key.as_str(), png(4 + i as u32, 4))).collect();
    assert_eq!(app.complete_with(&id, art, &files).await.status, 200);
    id
}

fn header<'a>(a: &'a Answer, name: &str) -> Option<&'a str> {
    a.headers.get(name).map(|v| v.to_str().unwrap())
}

#[tokio::test]
async fn a_completed_result_has_an_opaque_immutable_etag() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    let nonce = app.manifest(&id).await.nonce;
    assert_eq!(app.complete(&id).await.status, 200);
    let a = app.result(&t, Some(&t.sub), &id).await;
    assert_eq!(a.status, 200, "{a:?}");
    let etag = header(&a, "etag").expect("an ETag").to_owned();
    assert!(etag.len() > 2 && etag.starts_with('"') && etag.ends_with('"'), "a strong, quoted ETag: {etag}");
    let simple = id.replace('-', "");
    for leak in
        [nonce.as_str(), &nonce[..16], id.as_str(), &simple[..12], BUCKET, "code2des", "s3:", "result.json", "hero"]
    {
        assert!(!etag.contains(leak), "the ETag reveals {leak:?}: {etag}");
    }
    assert_eq!(header(&a, "cache-control"), Some(IMMUTABLE));
    // Stable: the same result has the same tag on every GET.
    assert_eq!(header(&app.result(&t, Some(&t.sub), &id).await, "etag"), Some(etag.as_str()));
    // A `?images=` answer is another representation: its own tag, the same caching.
    let part = app.result_images(&t, &id, "hero").await;
    assert_eq!(part.status, 200);
    let part_tag = header(&part, "etag").expect("an ETag on ?images=");
    assert_ne!(part_tag, etag);
    assert_eq!(header(&part, "cache-control"), Some(IMMUTABLE));
    // Another job's result has another tag.
    let other = app.new_job(&t).await;
    assert_eq!(app.complete(&other).await.status, 200);
    assert_ne!(header(&app.result(&t, Some(&t.sub), &other).await, "etag"), Some(etag.as_str()));
}

#[tokio::test]
async fn if_none_match_with_the_etag_is_304_without_any_s3_request() {
    let mut app = TestApp::new().await;
    let t = app.tenant().await;
    let id = completed_with_images(&app, &t, 2).await;
    let s3 = count_s3(&mut app);
    let full = app.result(&t, Some(&t.sub), &id).await;
    assert_eq!(full.status, 200);
    assert_eq!(s3.take(), [3, 0, 0, 0, 0, 0], "the full GET reads the artifact and its two images");
    let etag = header(&full, "etag").unwrap().to_owned();

    for inm in [etag.clone(), format!("W/{etag}"), format!("\"other\", {etag}"), "*".to_owned()] {
        let a = app.result_if_none_match(&t, &id, &inm).await;
        assert_eq!(a.status, 304, "If-None-Match: {inm}: {a:?}");
        assert!(a.json.is_null(), "304 has no body: {a:?}");
        assert_eq!(header(&a, "etag"), Some(etag.as_str()));
        assert_eq!(header(&a, "cache-control"), Some(IMMUTABLE));
        assert_eq!(s3.take(), [0, 0, 0, 0, 0, 0], "If-None-Match: {inm}: a 304 read S3");
    }
    // The proof without the counter: with S3 gone, a 304 still answers; a full GET cannot.
    app.stop_s3().await;
    let ev = {
        let mut ev = user_event("result.json", &t, Some(&t.sub), Some(&id), None);
        ev["headers"]["if-none-match"] = json!(etag);
        ev
    };
    let resp = code2des_result::handler::handle(&app.result, to_request(&ev)).await;
    assert_eq!(resp.status(), 304);
    assert!(resp.body().as_ref().is_empty(), "304 has an empty body");
    assert_eq!(app.result(&t, Some(&t.sub), &id).await.status, 503);
}

#[tokio::test]
async fn a_stale_or_foreign_etag_gets_the_full_result() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    assert_eq!(app.complete(&id).await.status, 200);
    let other = app.new_job(&t).await;
    assert_eq!(app.complete(&other).await.status, 200);
    let etag = header(&app.result(&t, Some(&t.sub), &id).await, "etag").unwrap().to_owned();
    let other_tag = header(&app.result(&t, Some(&t.sub), &other).await, "etag").unwrap().to_owned();
    let part_tag = header(&app.result_images(&t, &id, "hero").await, "etag").unwrap().to_owned();
    let unquoted = etag.trim_matches('"').to_owned();
    for inm in [other_tag, part_tag, "\"r1-00000000000000000000000000000000\"".to_owned(), unquoted, String::new()] {
        let a = app.result_if_none_match(&t, &id, &inm).await;
        assert_eq!(a.status, 200, "If-None-Match: {inm:?}: {a:?}");
        assert_eq!(a.json["kind"], "result");
        assert_eq!(header(&a, "etag"), Some(etag.as_str()));
    }
}

#[tokio::test]
async fn a_failure_artifact_is_not_cached_as_immutable() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    let nonce = app.manifest(&id).await.nonce;
    let key = format!("code2des/{id}/1/failure.json");
    let art = json!({"version": 1, "kind": "failure", "code2des_id": id, "attempt": 1, "nonce": nonce,
                     "warning_count": 0, "document": null, "images": {}});
    app.put(&key, serde_json::to_vec(&art).unwrap()).await;
    let report = json!({"code2des_id": id, "attempt": 1, "nonce": nonce, "status": "failed",
                        "result_url": format!("s3://{BUCKET}/{key}"), "error_message": "fonts missing"});
    assert_eq!(app.webhook(&report).await.status, 200);
    let a = app.result(&t, Some(&t.sub), &id).await;
    assert_eq!((a.status, a.json["kind"].as_str()), (200, Some("failure")), "{a:?}");
    assert!(header(&a, "etag").is_none(), "a failed job can be retried: its artifact is not forever");
    assert!(!header(&a, "cache-control").unwrap_or("").contains("immutable"), "{a:?}");
    let star = app.result_if_none_match(&t, &id, "*").await;
    assert_eq!(star.status, 200, "no 304 without an ETag: {star:?}");
}

#[tokio::test]
async fn only_a_completed_job_that_is_there_answers_304() {
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let stranger = app.tenant().await;
    let id = app.new_job(&t).await;
    assert_eq!(app.complete(&id).await.status, 200);
    let etag = header(&app.result(&t, Some(&t.sub), &id).await, "etag").unwrap().to_owned();
    let processing = app.new_job(&t).await;
    let a = app.result_if_none_match(&t, &processing, "*").await;
    assert_eq!((a.status, a.code()), (409, "not_ready"), "{a:?}");
    // Someone else holding the tag learns nothing.
    let mut ev = user_event("result.json", &t, Some(&stranger.sub), Some(&id), None);
    ev["headers"]["if-none-match"] = json!(etag);
    let foreign = Answer::from(code2des_result::handler::handle(&app.result, to_request(&ev)).await);
    assert_eq!(foreign.status, 404, "{foreign:?}");
    // A deleted job is gone, cached or not.
    assert_eq!(app.delete(&t, Some(&t.sub), &id).await.status, 204);
    assert_eq!(app.result_if_none_match(&t, &id, &etag).await.status, 404);
}

#[tokio::test]
async fn a_result_get_costs_one_s3_request_per_object_and_no_head() {
    let mut app = TestApp::new().await;
    let t = app.tenant().await;
    let jobs = [
        (0, completed_with_images(&app, &t, 0).await),
        (1, completed_with_images(&app, &t, 1).await),
        (3, completed_with_images(&app, &t, 3).await),
        (8, completed_with_images(&app, &t, 8).await),
    ];
    let s3 = count_s3(&mut app);
    for (n, id) in &jobs {
        let a = app.result(&t, Some(&t.sub), id).await;
        assert_eq!(a.status, 200, "{a:?}");
        assert_eq!(a.json["images"].as_object().unwrap().len(), *n);
        assert_eq!(s3.take(), [1 + *n as u64, 0, 0, 0, 0, 0], "{n} images: [GET, HEAD, PUT, LIST, DELETE, other]");
    }
    // `?images=` reads the artifact (to validate the refs) and exactly the images named.
    let a = app.result_images(&t, &jobs[3].1, "img2,img5").await;
    assert_eq!(a.status, 200);
    assert_eq!(s3.take(), [3, 0, 0, 0, 0, 0]);
    // Reads before S3: a processing job costs no S3 request either.
    let processing = app.new_job(&t).await;
    assert_eq!(app.result(&t, Some(&t.sub), &processing).await.status, 409);
    assert_eq!(s3.take(), [0, 0, 0, 0, 0, 0]);
}

/// Compressed results (issue 31): a request that accepts `br` or `gzip` gets the same JSON
/// compressed, with `Content-Encoding`, `Vary: accept-encoding` and an ETag of its own that a
/// 304 honours; one that accepts neither gets the text as before.
#[tokio::test]
async fn a_result_is_compressed_as_the_request_accepts_and_its_etag_still_answers_304() {
    use std::io::Read;
    let app = TestApp::new().await;
    let t = app.tenant().await;
    let id = app.new_job(&t).await;
    let nonce = app.manifest(&id).await.nonce;
    // A document worth compressing: 300 text nodes (a small body goes out as it is).
    let mut art = artifact(&id, &nonce, json!({}), &[]);
    art["document"]["children"] = (0..300)
        .map(|i| json!({"type": "TEXT", "name": format!("t{i}"), "characters": format!("Line {i} of the article")}))
        .collect();
    assert_eq!(app.complete_with(&id, art, &[]).await.status, 200);
    let plain = app.result(&t, Some(&t.sub), &id).await;
    assert_eq!(plain.status, 200);
    assert!(plain.headers.get("content-encoding").is_none());
    let send = |accept: &str, inm: Option<&str>| {
        let mut ev = user_event("result.json", &t, Some(&t.sub), Some(&id), None);
        ev["headers"]["accept-encoding"] = json!(accept);
        if let Some(tag) = inm {
            ev["headers"]["if-none-match"] = json!(tag);
        }
        let app = &app;
        async move { code2des_result::handler::handle(&app.result, to_request(&ev)).await }
    };
    let mut tags = vec![header(&plain, "etag").unwrap().to_owned()];
    for (accept, coding) in [("gzip, deflate, br, zstd", "br"), ("gzip, deflate", "gzip")] {
        let resp = send(accept, None).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-encoding"], coding);
        assert_eq!(resp.headers()["vary"], "accept-encoding");
        assert_eq!(resp.headers()["content-type"], "application/json");
        let packed: &[u8] = resp.body().as_ref();
        let mut text = Vec::new();
        match coding {
            "br" => brotli::BrotliDecompress(&mut &packed[..], &mut text).unwrap(),
            _ => flate2::read::GzDecoder::new(packed).read_to_end(&mut text).map(|_| ()).unwrap(),
        }
        assert_eq!(serde_json::from_slice::<Value>(&text).unwrap(), plain.json, "{coding}");
        let tag = resp.headers()["etag"].to_str().unwrap().to_owned();
        assert!(!tags.contains(&tag), "each coding is a representation of its own: {tag}");
        let again = send(accept, Some(&tag)).await;
        assert_eq!(again.status(), 304, "{coding}");
        tags.push(tag);
    }
    let identity = send("identity", None).await;
    assert!(identity.headers().get("content-encoding").is_none());
    assert_eq!(identity.headers()["etag"].to_str().unwrap(), tags[0]);
}
