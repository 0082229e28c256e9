//! Validation of the worker's result artifact (SPEC section 4). Pure functions over bytes:
//! the result handler does the S3 I/O. Every rejection carries a reason for the log; the
//! client only ever sees `artifact_invalid`.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::domain::job::Nonce;
use crate::domain::keys::is_key_under;
use crate::domain::protocol::PROTOCOL_VERSION;

/// Node types the plugin can build.
pub const NODE_TYPES: &[&str] = &["FRAME", "GROUP", "RECTANGLE", "ELLIPSE", "LINE", "VECTOR", "TEXT", "SVG"];

/// Bounds on what one artifact may ask of the backend and the plugin. Documented in README.
#[derive(Debug, Clone)]
pub struct Limits {
    /// The artifact JSON itself (checked with HeadObject before the download).
    pub max_artifact_bytes: u64,
    pub max_nodes: usize,
    pub max_depth: usize,
    pub max_images: usize,
    /// One image; its base64 must fit a response on its own.
    pub max_image_bytes: u64,
    /// Figma's `createImage` limit per side.
    pub max_image_side: usize,
    /// Bytes of response body (as it will sit JSON-escaped inside the Lambda envelope).
    pub response_budget: usize,
    /// Parallel S3 reads per request.
    pub fetch_concurrency: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_artifact_bytes: 2 * 1024 * 1024,
            max_nodes: 20_000,
            max_depth: 40,
            max_images: 512,
            max_image_bytes: 3 * 1024 * 1024,
            max_image_side: 4096,
            // Lambda's synchronous response limit is 6 MiB for the whole envelope.
            response_budget: 6 * 1024 * 1024 - 256 * 1024,
            // Memory is bounded by response_budget, not by this: every image is sized with
            // HeadObject and planned against the budget before any download starts.
            fetch_concurrency: 32,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Result,
    Failure,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Result => "result",
            Kind::Failure => "failure",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mime {
    Png,
    Jpeg,
    Gif,
    Svg,
}

impl Mime {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "image/png" => Some(Self::Png),
            "image/jpeg" => Some(Self::Jpeg),
            "image/gif" => Some(Self::Gif),
            "image/svg+xml" => Some(Self::Svg),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Gif => "image/gif",
            Self::Svg => "image/svg+xml",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageEntry {
    pub key: String,
    pub mime: Mime,
}

/// An artifact that passed every check that needs no image bytes.
#[derive(Debug)]
pub struct Artifact {
    pub kind: Kind,
    pub warning_count: Option<i64>,
    pub document: Option<Value>,
    /// Images the document uses, in order of first use, each once.
    pub used: Vec<(String, ImageEntry)>,
}

/// What the artifact must agree with: the job row.
pub struct Expect<'a> {
    pub code2des_id: &'a str,
    pub attempt: i32,
    pub nonce: &'a Nonce,
    pub prefix: &'a str,
    pub kind: Kind,
}

pub type Invalid = String;

fn field<'a>(obj: &'a Map<String, Value>, name: &str) -> Result<&'a Value, Invalid> {
    obj.get(name).ok_or_else(|| format!("missing {name}"))
}

/// Parses and checks the artifact JSON against the row and the limits.
pub fn validate(bytes: &[u8], expect: &Expect<'_>, limits: &Limits) -> Result<Artifact, Invalid> {
    // serde_json refuses nesting deeper than 128, so a hostile document cannot blow the stack.
    let root: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let obj = root.as_object().ok_or("not a JSON object")?;
    if field(obj, "version")?.as_u64() != Some(u64::from(PROTOCOL_VERSION)) {
        return Err("unknown version".into());
    }
    let kind = match field(obj, "kind")?.as_str() {
        Some("result") => Kind::Result,
        Some("failure") => Kind::Failure,
        _ => return Err("kind must be result or failure".into()),
    };
    if kind != expect.kind {
        return Err(format!("kind {} does not match the job status", kind.as_str()));
    }
    if field(obj, "code2des_id")?.as_str() != Some(expect.code2des_id) {
        return Err("code2des_id does not match the job".into());
    }
    if field(obj, "attempt")?.as_i64() != Some(i64::from(expect.attempt)) {
        return Err("attempt does not match the job".into());
    }
    match field(obj, "nonce")?.as_str() {
        Some(n) if expect.nonce.matches(n) => {}
        _ => return Err("nonce does not match the job".into()),
    }
    let warning_count = match obj.get("warning_count") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_i64().filter(|n| *n >= 0).ok_or("warning_count must be a non-negative integer")?),
    };

    let images = parse_images(obj.get("images"), expect.prefix, limits)?;
    let document = match obj.get("document") {
        None | Some(Value::Null) if kind == Kind::Failure => None,
        None | Some(Value::Null) => return Err("a result artifact needs a document".into()),
        Some(doc) => Some(doc.clone()),
    };
    let mut used = Vec::new();
    if let Some(doc) = &document {
        let refs = walk_document(doc, limits)?;
        for r in refs {
            let entry = images.get(&r).ok_or_else(|| format!("imageRef {r:?} is not in images"))?;
            used.push((r, entry.clone()));
        }
    }
    Ok(Artifact { kind, warning_count, document, used })
}

fn parse_images(v: Option<&Value>, prefix: &str, limits: &Limits) -> Result<HashMap<String, ImageEntry>, Invalid> {
    let map = match v {
        None | Some(Value::Null) => return Ok(HashMap::new()),
        Some(Value::Object(m)) => m,
        Some(_) => return Err("images must be an object".into()),
    };
    if map.len() > limits.max_images {
        return Err(format!("more than {} images", limits.max_images));
    }
    let mut out = HashMap::with_capacity(map.len());
    for (r, entry) in map {
        if r.is_empty() || r.len() > 255 || r.chars().any(char::is_control) {
            return Err("an image ref is empty, too long or has control characters".into());
        }
        let e = entry.as_object().ok_or("an image entry is not an object")?;
        let key = e.get("key").and_then(Value::as_str).ok_or("an image entry has no key")?;
        if !is_key_under(key, prefix) {
            return Err(format!("image {r:?} key is outside the job prefix"));
        }
        let mime = e
            .get("mime_type")
            .and_then(Value::as_str)
            .and_then(Mime::parse)
            .ok_or_else(|| format!("image {r:?} has an unsupported mime_type"))?;
        out.insert(r.clone(), ImageEntry { key: key.to_owned(), mime });
    }
    Ok(out)
}

/// Walks the node tree without recursion: checks types, counts nodes, bounds depth, and
/// collects every `imageRef` (in fills, strokes or anywhere else on a node).
fn walk_document(doc: &Value, limits: &Limits) -> Result<Vec<String>, Invalid> {
    let mut refs = Vec::new();
    let mut seen = HashSet::new();
    let mut stack: Vec<(&Value, usize)> = vec![(doc, 1)];
    let mut count = 0usize;
    while let Some((node, depth)) = stack.pop() {
        count += 1;
        if count > limits.max_nodes {
            return Err(format!("more than {} nodes", limits.max_nodes));
        }
        if depth > limits.max_depth {
            return Err(format!("nodes nested deeper than {}", limits.max_depth));
        }
        let obj = node.as_object().ok_or("a node is not an object")?;
        let ty = obj.get("type").and_then(Value::as_str).ok_or("a node has no type")?;
        if !NODE_TYPES.contains(&ty) {
            return Err(format!("node type {ty:?} cannot be built by the plugin"));
        }
        for (k, v) in obj {
            match k.as_str() {
                "children" => {}
                // An SVG or image node may carry its imageRef on the node itself.
                "imageRef" => add_ref(v, &mut refs, &mut seen)?,
                _ => collect_refs(v, &mut refs, &mut seen)?,
            }
        }
        match obj.get("children") {
            None | Some(Value::Null) => {}
            Some(Value::Array(children)) => {
                // Reverse so the walk (and thus image order) follows document order.
                for c in children.iter().rev() {
                    stack.push((c, depth + 1));
                }
            }
            Some(_) => return Err("children must be an array".into()),
        }
    }
    Ok(refs)
}

fn add_ref(v: &Value, refs: &mut Vec<String>, seen: &mut HashSet<String>) -> Result<(), Invalid> {
    let r = v.as_str().ok_or("imageRef must be a string")?;
    if seen.insert(r.to_owned()) {
        refs.push(r.to_owned());
    }
    Ok(())
}

fn collect_refs(v: &Value, refs: &mut Vec<String>, seen: &mut HashSet<String>) -> Result<(), Invalid> {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(m) => {
                for (k, inner) in m {
                    if k == "imageRef" {
                        add_ref(inner, refs, seen)?;
                    } else {
                        stack.push(inner);
                    }
                }
            }
            Value::Array(a) => stack.extend(a.iter().rev()),
            _ => {}
        }
    }
    Ok(())
}

/// Checks image bytes: magic number matches the declared type, and raster sides are within
/// Figma's limit, read from the header (no decode).
pub fn check_image(bytes: &[u8], mime: Mime, limits: &Limits) -> Result<(), Invalid> {
    if mime == Mime::Svg {
        return check_svg(bytes);
    }
    let found = imagesize::image_type(bytes).map_err(|_| "unrecognised image bytes".to_owned())?;
    let matches = matches!(
        (mime, found),
        (Mime::Png, imagesize::ImageType::Png)
            | (Mime::Jpeg, imagesize::ImageType::Jpeg)
            | (Mime::Gif, imagesize::ImageType::Gif)
    );
    if !matches {
        return Err(format!("bytes are {found:?}, declared {}", mime.as_str()));
    }
    let size = imagesize::blob_size(bytes).map_err(|_| "unreadable image header".to_owned())?;
    if size.width == 0 || size.height == 0 {
        return Err("image has a zero side".into());
    }
    if size.width > limits.max_image_side || size.height > limits.max_image_side {
        return Err(format!("image is {}x{}, over {} px per side", size.width, size.height, limits.max_image_side));
    }
    Ok(())
}

fn check_svg(bytes: &[u8]) -> Result<(), Invalid> {
    let text = std::str::from_utf8(bytes).map_err(|_| "svg is not UTF-8".to_owned())?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text).trim_start();
    if !text.starts_with('<') {
        return Err("svg does not start with markup".into());
    }
    // The root element must be <svg>; an XML declaration, comments or a doctype may precede it.
    let head: String = text.chars().take(4096).collect();
    if !head.contains("<svg") {
        return Err("no <svg> root element".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nonce() -> Nonce {
        Nonce::from_db("n0nce".into())
    }

    fn expect(n: &Nonce) -> Expect<'_> {
        Expect { code2des_id: "id1", attempt: 1, nonce: n, prefix: "code2des/id1/1/", kind: Kind::Result }
    }

    fn art(doc: Value, images: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({"version": 1, "kind": "result", "code2des_id": "id1", "attempt": 1,
            "nonce": "n0nce", "warning_count": 0, "document": doc, "images": images}))
        .unwrap()
    }

    #[test]
    fn a_good_artifact_lists_used_images_in_document_order() {
        let doc = json!({"type": "FRAME", "name": "s", "children": [
            {"type": "RECTANGLE", "fills": [{"type": "IMAGE", "imageRef": "b"}]},
            {"type": "RECTANGLE", "fills": [{"type": "IMAGE", "imageRef": "a"}], "strokes": [{"imageRef": "b"}]},
            {"type": "SVG", "imageRef": "logo"}]});
        let images = json!({"a": {"key": "code2des/id1/1/images/a", "mime_type": "image/png"},
                            "b": {"key": "code2des/id1/1/images/b", "mime_type": "image/jpeg"},
                            "logo": {"key": "code2des/id1/1/images/l", "mime_type": "image/svg+xml"}});
        let n = nonce();
        let a = validate(&art(doc, images), &expect(&n), &Limits::default()).unwrap();
        let refs: Vec<_> = a.used.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(refs, ["b", "a", "logo"]);
    }

    #[test]
    fn hostile_artifacts_are_refused() {
        let n = nonce();
        let l = Limits::default();
        let img = json!({"a": {"key": "code2des/id1/1/images/a", "mime_type": "image/png"}});
        let cases = [
            art(json!({"type": "WIDGET"}), json!({})),
            art(
                json!({"type": "FRAME", "children": [{"type": "RECTANGLE", "fills": [{"imageRef": "zz"}]}]}),
                img.clone(),
            ),
            art(json!({"type": "FRAME"}), json!({"a": {"key": "code2des/id1/2/images/a", "mime_type": "image/png"}})),
            art(json!({"type": "FRAME"}), json!({"a": {"key": "code2des/id1/1/../2/a", "mime_type": "image/png"}})),
            art(json!({"type": "FRAME"}), json!({"a": {"key": "code2des/id1/1/a", "mime_type": "image/webp"}})),
            art(json!({"type": "FRAME", "children": {}}), json!({})),
            b"not json".to_vec(),
        ];
        for c in cases {
            assert!(validate(&c, &expect(&n), &l).is_err(), "{}", String::from_utf8_lossy(&c));
        }
        let wrong_nonce =
            String::from_utf8(art(json!({"type": "FRAME"}), json!({}))).unwrap().replace("n0nce", "other");
        assert!(validate(wrong_nonce.as_bytes(), &expect(&n), &l).is_err());
    }

    #[test]
    fn node_count_and_depth_are_bounded() {
        let n = nonce();
        let l = Limits::default();
        let wide = json!({"type": "FRAME", "children": vec![json!({"type": "TEXT"}); l.max_nodes]});
        assert!(validate(&art(wide, json!({})), &expect(&n), &l).unwrap_err().contains("nodes"));
        let mut deep = json!({"type": "FRAME"});
        for _ in 0..l.max_depth {
            deep = json!({"type": "GROUP", "children": [deep]});
        }
        assert!(validate(&art(deep, json!({})), &expect(&n), &l).unwrap_err().contains("deeper"));
    }

    #[test]
    fn image_magic_and_sides_are_checked() {
        let l = Limits::default();
        let png = |w: u32, h: u32| {
            let mut v = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
            v.extend_from_slice(&w.to_be_bytes());
            v.extend_from_slice(&h.to_be_bytes());
            v.extend_from_slice(&[8, 2, 0, 0, 0, 0, 0, 0, 0]);
            v
        };
        assert!(check_image(&png(8, 8), Mime::Png, &l).is_ok());
        assert!(check_image(&png(4096, 10), Mime::Png, &l).is_ok());
        assert!(check_image(&png(5000, 10), Mime::Png, &l).is_err());
        assert!(check_image(&png(8, 8), Mime::Jpeg, &l).is_err());
        let webp = b"RIFF\x24\0\0\0WEBPVP8 \x18\0\0\0\x30\x01\0\x9d\x01\x2a\x08\0\x08\0";
        assert!(check_image(webp, Mime::Png, &l).is_err());
        assert!(check_image(b"GIF89a\x08\0\x08\0\0\0\0", Mime::Gif, &l).is_ok());
        assert!(check_image(b"<?xml version=\"1.0\"?><svg xmlns='http://www.w3.org/2000/svg'/>", Mime::Svg, &l).is_ok());
        assert!(check_image(b"<html></html>", Mime::Svg, &l).is_err());
    }
}
