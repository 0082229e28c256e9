//! Reading a result to draw: the worker's artifact (`{…, document, images}`, its images as
//! object keys found under `--images DIR` or beside the JSON), the result route's answer (its
//! images inlined as base64, as `code2des-local import` saves it), the converter's output
//! (`convert --out`: images as paths beside the JSON), or a bare document (its images looked
//! up by name under `--images DIR`). An image that cannot be found is drawn as nothing, with a
//! warning: the preview of a result whose images were deferred is still worth having.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::Value;

use super::{Image, Page, PreviewError};

/// The largest JSON read: over the largest artifact the result route serves (36 240 437 bytes).
pub const MAX_JSON_BYTES: u64 = 64 * 1024 * 1024;
/// The largest image file read (the route's limit is 3 MiB).
pub const MAX_IMAGE_BYTES: u64 = 16 * 1024 * 1024;

/// Reads the result at `path`; its images from `images` when given, else beside it.
pub fn read(path: &Path, images: Option<&Path>) -> Result<Page, PreviewError> {
    let bytes = read_bounded(path, MAX_JSON_BYTES)?;
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| PreviewError::Input(format!("{}: not JSON: {e}", path.display())))?;
    let beside = path.parent().map_or_else(|| PathBuf::from("."), Path::to_owned);
    let dir = images.map_or(beside, Path::to_owned);
    from_value(value, &dir)
}

/// The page of a parsed result, its image files under `dir`.
pub fn from_value(mut value: Value, dir: &Path) -> Result<Page, PreviewError> {
    let (document, listed) = match value.get_mut("document").map(Value::take) {
        Some(doc) => (doc, value.get("images").cloned()),
        None if value.get("type").is_some() => (value, None),
        None => {
            return Err(PreviewError::Input("neither a result (no `document`) nor a bare document (no `type`)".into()))
        }
    };
    let mut warnings = Vec::new();
    let images = match listed {
        Some(Value::Object(map)) => map.into_iter().filter_map(|(r, v)| load(&r, &v, dir, &mut warnings)).collect(),
        _ => by_name(&document, dir),
    };
    page(document, images, warnings)
}

/// A document and its images as a page to draw: a node tree within the wire's limits (a
/// hostile one costs a scan, never a deep recursion), with a size.
pub fn page(document: Value, images: HashMap<String, Image>, warnings: Vec<String>) -> Result<Page, PreviewError> {
    if !document.is_object() {
        return Err(PreviewError::Input("`document` is not a node (a failure artifact has none to draw)".into()));
    }
    let text = document.to_string();
    code2des_wire::shape::check(&text, code2des_wire::node::MAX_NODES, code2des_wire::node::MAX_DEPTH).map_err(
        |e| {
            PreviewError::Input(match e {
                code2des_wire::shape::ShapeFault::TooMany => {
                    format!("the document has more than {} nodes", code2des_wire::node::MAX_NODES)
                }
                code2des_wire::shape::ShapeFault::TooDeep(_) => {
                    format!("the document nests nodes deeper than {}", code2des_wire::node::MAX_DEPTH)
                }
            })
        },
    )?;
    let side = |k: &str| document.get(k).and_then(Value::as_f64).filter(|v| v.is_finite() && *v > 0.0);
    let (width, height) = match (side("width"), side("height")) {
        (Some(w), Some(h)) => (w, h),
        _ => return Err(PreviewError::Input("the document's root has no positive width and height".into())),
    };
    Ok(Page { document, images, width, height, warnings })
}

fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>, PreviewError> {
    let meta = std::fs::metadata(path).map_err(|e| PreviewError::Input(format!("{}: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(PreviewError::Input(format!("{}: not a file", path.display())));
    }
    if meta.len() > max {
        return Err(PreviewError::Input(format!("{}: {} bytes, over the {max} read", path.display(), meta.len())));
    }
    std::fs::read(path).map_err(|e| PreviewError::Input(format!("{}: {e}", path.display())))
}

/// One entry of `images`: inlined (`data`), an object key (`key`), or a path (a string).
fn load(name: &str, v: &Value, dir: &Path, warnings: &mut Vec<String>) -> Option<(String, Image)> {
    let declared = v.get("mimeType").or_else(|| v.get("mime_type")).and_then(Value::as_str);
    let bytes = if let Some(data) = v.get("data").and_then(Value::as_str) {
        STANDARD.decode(data).map_err(|_| format!("image {name:?}: its data is not base64")).ok()
    } else {
        let key = v.get("key").and_then(Value::as_str).or_else(|| v.as_str());
        match key.and_then(|k| find(dir, k)) {
            Some(p) => read_bounded(&p, MAX_IMAGE_BYTES).map_err(|e| e.to_string()).ok(),
            None => None,
        }
    };
    let Some(bytes) = bytes else {
        warnings.push(format!("image {name:?} not found under {}", dir.display()));
        return None;
    };
    let mime = declared.map(str::to_owned).or_else(|| sniff(&bytes).map(str::to_owned))?;
    Some((name.to_owned(), Image { mime, bytes }))
}

/// `key` under `dir`: whole, or without its leading folders one by one (an artifact's keys
/// carry the job's prefix `code2des/{id}/{attempt}/`, a folder of images may not).
fn find(dir: &Path, key: &str) -> Option<PathBuf> {
    if key.split('/').any(|part| part == "..") {
        return None;
    }
    let mut rest = key.trim_start_matches('/');
    loop {
        let p = dir.join(rest);
        if p.is_file() {
            return Some(p);
        }
        rest = rest.split_once('/')?.1;
    }
}

/// A bare document's images: each `imageRef` as a file of that name (any extension) in `dir`
/// or `dir/images`.
fn by_name(doc: &Value, dir: &Path) -> HashMap<String, Image> {
    let mut refs = Vec::new();
    collect_refs(doc, &mut refs);
    let mut out = HashMap::new();
    for r in refs {
        if out.contains_key(&r) || r.contains('/') || r.contains("..") {
            continue;
        }
        let hit = [dir.to_owned(), dir.join("images")].into_iter().find_map(|d| {
            ["", ".png", ".jpg", ".gif", ".svg"].iter().map(|ext| d.join(format!("{r}{ext}"))).find(|p| p.is_file())
        });
        if let Some(bytes) = hit.and_then(|p| read_bounded(&p, MAX_IMAGE_BYTES).ok()) {
            if let Some(mime) = sniff(&bytes) {
                out.insert(r, Image { mime: mime.to_owned(), bytes });
            }
        }
    }
    out
}

fn collect_refs(n: &Value, out: &mut Vec<String>) {
    match n {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("imageRef", Value::String(s)) => out.push(s.clone()),
                    _ => collect_refs(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// An image's type from its first bytes.
fn sniff(b: &[u8]) -> Option<&'static str> {
    if b.starts_with(b"\x89PNG") {
        Some("image/png")
    } else if b.starts_with(&[0xff, 0xd8]) {
        Some("image/jpeg")
    } else if b.starts_with(b"GIF8") {
        Some("image/gif")
    } else if String::from_utf8_lossy(&b[..b.len().min(4096)]).contains("<svg") {
        Some("image/svg+xml")
    } else {
        None
    }
}
