//! The worker's side, as the tests and the benchmarks play it: real PNGs, result artifacts that
//! use them, the reports it sends to the webhook, signed with the test secret.

use serde_json::{json, Map, Value};

use crate::{BUCKET, SECRET};

/// Seconds since the epoch: a signature's timestamp.
pub fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

/// The `Code2Des-Signature` header of `raw`, signed now with [`SECRET`].
pub fn sign(raw: &[u8]) -> String {
    shared::domain::signature::header_value(SECRET.as_bytes(), now(), raw)
}

/// A real PNG of `w`×`h`, a gradient (small: it compresses well).
pub fn png(w: u32, h: u32) -> Vec<u8> {
    code2des_local::seed::png(w, h, false)
}

/// A real PNG of `w`×`h`; `noise` makes it incompressible (about 3·w·h bytes).
pub fn png_with(w: u32, h: u32, noise: bool) -> Vec<u8> {
    code2des_local::seed::png(w, h, noise)
}

/// A result artifact of attempt 1 whose document uses the image refs `used` of `images`.
pub fn artifact(id: &str, nonce: &str, images: Value, used: &[&str]) -> Value {
    let children: Vec<Value> = used
        .iter()
        .map(|r| json!({"type": "RECTANGLE", "name": r, "fills": [{"type": "IMAGE", "imageRef": r, "scaleMode": "FILL"}]}))
        .collect();
    json!({
        "version": 1, "kind": "result", "code2des_id": id, "attempt": 1, "nonce": nonce, "warning_count": 2,
        "document": {"type": "FRAME", "name": "Screen", "children": children}, "images": images,
    })
}

/// `n` PNG images `img0`, `img1`, … under the prefix of `id`'s attempt 1: the artifact's
/// `images` map, and each image's `(ref, key)`.
pub fn images(id: &str, n: usize) -> (Value, Vec<(String, String)>) {
    let mut map = Map::new();
    let mut refs = Vec::new();
    for i in 0..n {
        let r = format!("img{i}");
        let key = format!("code2des/{id}/1/images/{r}.png");
        map.insert(r.clone(), json!({"key": key, "mime_type": "image/png"}));
        refs.push((r, key));
    }
    (Value::Object(map), refs)
}

/// The worker's "completed" report for the artifact at `key` in [`BUCKET`].
pub fn completed_report(id: &str, attempt: i32, nonce: &str, key: &str, warning_count: Value) -> Value {
    json!({
        "code2des_id": id, "attempt": attempt, "nonce": nonce, "status": "completed",
        "result_url": format!("s3://{BUCKET}/{key}"), "warning_count": warning_count,
    })
}

/// The worker's progress report.
pub fn progress_body(id: &str, attempt: i32, nonce: &str, percent: i64, stage: &str) -> Value {
    json!({"code2des_id": id, "attempt": attempt, "nonce": nonce, "status": "processing",
           "progress": {"percent": percent, "stage": stage}})
}
