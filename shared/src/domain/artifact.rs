//! Validation of the worker's result artifact (SPEC section 4). Pure functions over bytes:
//! the result handler does the S3 I/O. Every rejection carries a reason for the log; the
//! client only ever sees `artifact_invalid`.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::domain::job::Nonce;
use crate::domain::keys::is_key_under;
use crate::domain::protocol::PROTOCOL_VERSION;

/// Node types the plugin can build.
pub const NODE_TYPES: &[&str] = &["FRAME", "GROUP", "RECTANGLE", "ELLIPSE", "LINE", "VECTOR", "TEXT", "SVG"];

/// The codes of the artifact's `warnings` (the fidelity report of issue 30), a fixed list:
/// docs/WORKER.md, "Warnings", says what each means.
pub const WARNING_CODES: &[&str] = &[
    "font_substituted",
    "unsupported_css",
    "image_converted",
    "image_too_large",
    "image_unavailable",
    "pseudo_element",
    "canvas_skipped",
    "iframe_skipped",
    "video_skipped",
    "node_limit",
];

/// Bounds on what one artifact may ask of the backend and the plugin. Documented in README.
#[derive(Debug, Clone)]
pub struct Limits {
    /// The artifact JSON itself (its GET's Content-Length is checked before the body is read,
    /// and the body is bounded as it is read).
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
    /// Entries of the artifact's `warnings`.
    pub max_warnings: usize,
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
            // Memory is bounded by response_budget, not by this: every image's GET gives its size
            // in its headers, and the plan against the budget is made before any body is read.
            fetch_concurrency: 32,
            max_warnings: 1000,
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
    /// The fidelity report, as the worker wrote it (checked): `[{code, message, path, node}]`.
    /// Absent in artifacts that predate it.
    pub warnings: Option<Value>,
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

/// Why an artifact was refused: the first problem, as the result route logs it.
pub type Invalid = String;

/// One problem of an artifact: where (a JSON path from `$`, the artifact's root) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// The checks stop at the first problem (the result route: one is enough to refuse, and a
/// hostile artifact must not make it work harder) or go on to find them all (the validator
/// for worker authors). The same checks either way.
struct Report {
    all: bool,
    problems: Vec<Problem>,
}

/// Stop checking: the first problem was enough.
struct Stop;

impl Report {
    fn add(&mut self, path: impl Into<String>, message: impl Into<String>) -> Result<(), Stop> {
        self.problems.push(Problem { path: path.into(), message: message.into() });
        if self.all {
            Ok(())
        } else {
            Err(Stop)
        }
    }
}

/// `.name`, or `["name"]` when the name is not a plain identifier.
fn member(name: &str) -> String {
    let plain = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        format!(".{name}")
    } else {
        format!("[{}]", Value::String(name.to_owned()))
    }
}

/// Parses and checks the artifact JSON against the row and the limits; the first problem
/// refuses it (what the result route answers 502 `artifact_invalid` for).
pub fn validate(bytes: &[u8], expect: &Expect<'_>, limits: &Limits) -> Result<Artifact, Invalid> {
    let mut report = Report { all: false, problems: Vec::new() };
    let artifact = check(bytes, expect, limits, &mut report).ok().flatten();
    match (artifact, report.problems.first()) {
        (Some(a), None) => Ok(a),
        (_, Some(p)) => Err(p.to_string()),
        (None, None) => Err("invalid".into()),
    }
}

/// The same checks as [`validate`], every problem reported (`code2des-worker validate`).
pub fn validate_all(bytes: &[u8], expect: &Expect<'_>, limits: &Limits) -> Result<Artifact, Vec<Problem>> {
    let mut report = Report { all: true, problems: Vec::new() };
    let artifact = check(bytes, expect, limits, &mut report).ok().flatten();
    match artifact {
        Some(a) if report.problems.is_empty() => Ok(a),
        _ => Err(report.problems),
    }
}

fn check(bytes: &[u8], expect: &Expect<'_>, limits: &Limits, r: &mut Report) -> Result<Option<Artifact>, Stop> {
    // serde_json refuses nesting deeper than 128, so a hostile document cannot blow the stack.
    let root: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => {
            r.add("$", format!("not JSON: {e}"))?;
            return Ok(None);
        }
    };
    let Some(obj) = root.as_object() else {
        r.add("$", "not a JSON object")?;
        return Ok(None);
    };
    let kind = check_header(obj, expect, r)?;
    let warning_count = check_warning_count(obj.get("warning_count"), r)?;
    let warnings = check_warnings(obj.get("warnings"), warning_count, limits, r)?;

    let (images, names) = parse_images(obj.get("images"), expect.prefix, limits, r)?;
    // A failure artifact may leave the document out; which kind applies when `kind` itself is
    // wrong: the job's.
    let document = match obj.get("document") {
        None | Some(Value::Null) if kind.unwrap_or(expect.kind) == Kind::Failure => None,
        None | Some(Value::Null) => {
            r.add("$.document", "a result artifact needs a document")?;
            None
        }
        Some(doc) => Some(doc.clone()),
    };
    let used = match &document {
        Some(doc) => used_images(doc, &images, &names, limits, r)?,
        None => Vec::new(),
    };
    Ok(kind.map(|kind| Artifact { kind, warning_count, warnings, document, used }))
}

/// The members that tie the artifact to its job: version, kind, code2des_id, attempt, nonce.
/// Answers the kind when it is one.
fn check_header(
    obj: &serde_json::Map<String, Value>,
    expect: &Expect<'_>,
    r: &mut Report,
) -> Result<Option<Kind>, Stop> {
    let missing = |name: &str| format!("missing {name}");
    match obj.get("version") {
        None => r.add("$.version", missing("version"))?,
        Some(v) if v.as_u64() != Some(u64::from(PROTOCOL_VERSION)) => r.add("$.version", "unknown version")?,
        Some(_) => {}
    }
    let kind = match obj.get("kind").map(Value::as_str) {
        None => {
            r.add("$.kind", missing("kind"))?;
            None
        }
        Some(Some("result")) => Some(Kind::Result),
        Some(Some("failure")) => Some(Kind::Failure),
        Some(_) => {
            r.add("$.kind", "kind must be result or failure")?;
            None
        }
    };
    if let Some(k) = kind.filter(|k| *k != expect.kind) {
        r.add("$.kind", format!("kind {} does not match the job status", k.as_str()))?;
    }
    match obj.get("code2des_id") {
        None => r.add("$.code2des_id", missing("code2des_id"))?,
        Some(v) if v.as_str() != Some(expect.code2des_id) => {
            r.add("$.code2des_id", "code2des_id does not match the job")?
        }
        Some(_) => {}
    }
    match obj.get("attempt") {
        None => r.add("$.attempt", missing("attempt"))?,
        Some(v) if v.as_i64() != Some(i64::from(expect.attempt)) => {
            r.add("$.attempt", "attempt does not match the job")?
        }
        Some(_) => {}
    }
    match obj.get("nonce") {
        None => r.add("$.nonce", missing("nonce"))?,
        Some(v) if !v.as_str().is_some_and(|n| expect.nonce.matches(n)) => {
            r.add("$.nonce", "nonce does not match the job")?
        }
        Some(_) => {}
    }
    Ok(kind)
}

/// `warning_count`: absent, null, or a non-negative integer.
fn check_warning_count(v: Option<&Value>, r: &mut Report) -> Result<Option<i64>, Stop> {
    Ok(match v {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_i64().filter(|n| *n >= 0) {
            Some(n) => Some(n),
            None => {
                r.add("$.warning_count", "warning_count must be a non-negative integer")?;
                None
            }
        },
    })
}

/// The images the document uses, in order of first use, each once; an `imageRef` that is not
/// in `images` is a problem (one that is there but invalid was reported already).
fn used_images(
    doc: &Value,
    images: &HashMap<String, ImageEntry>,
    names: &HashSet<String>,
    limits: &Limits,
    r: &mut Report,
) -> Result<Vec<(String, ImageEntry)>, Stop> {
    let mut used = Vec::new();
    for (name, path) in walk_document(doc, limits, r)? {
        match images.get(&name) {
            Some(entry) => used.push((name, entry.clone())),
            None if names.contains(&name) => {}
            None => r.add(path, format!("imageRef {name:?} is not in images"))?,
        }
    }
    Ok(used)
}

/// The `warnings` member: absent (or null), or at most `max_warnings` objects, each a `code`
/// of [`WARNING_CODES`], a `message` (1 to 1 000 characters), and where: `path` (the DOM path,
/// at most 2 000), `node` (the document node's name, at most 1 000) and `indices` (the node's
/// child indices from the root, at most `max_depth`), all optional. When both the list and
/// `warning_count` are there, `warning_count` is their number.
fn check_warnings(
    v: Option<&Value>,
    warning_count: Option<i64>,
    limits: &Limits,
    r: &mut Report,
) -> Result<Option<Value>, Stop> {
    let list = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(a)) => a,
        Some(_) => {
            r.add("$.warnings", "warnings must be an array")?;
            return Ok(None);
        }
    };
    if list.len() > limits.max_warnings {
        r.add("$.warnings", format!("more than {} warnings", limits.max_warnings))?;
        return Ok(None);
    }
    if warning_count.is_some_and(|n| n != list.len() as i64) {
        r.add("$.warning_count", "warning_count is not the number of warnings")?;
    }
    let mut ok = true;
    for (i, w) in list.iter().enumerate() {
        ok &= check_warning(w, &format!("$.warnings[{i}]"), limits, r)?;
    }
    Ok(ok.then(|| Value::Array(list.clone())))
}

/// One warning of the list: whether it is valid (its problems are added to `r`).
fn check_warning(w: &Value, at: &str, limits: &Limits, r: &mut Report) -> Result<bool, Stop> {
    let Some(o) = w.as_object() else {
        r.add(at, "a warning is not an object")?;
        return Ok(false);
    };
    let mut ok = true;
    match o.get("code").and_then(Value::as_str) {
        Some(c) if WARNING_CODES.contains(&c) => {}
        Some(c) => {
            r.add(format!("{at}.code"), format!("unknown warning code {c:?}"))?;
            ok = false;
        }
        None => {
            r.add(format!("{at}.code"), "a warning has no code")?;
            ok = false;
        }
    }
    let text = |name: &str, min: usize, max: usize, required: bool| -> Option<String> {
        match o.get(name) {
            None | Some(Value::Null) if !required => None,
            Some(Value::String(t)) if (min..=max).contains(&t.chars().count()) => None,
            _ => Some(format!("{name} must be a string of {min} to {max} characters")),
        }
    };
    for (name, min, max, required) in [("message", 1, 1000, true), ("path", 0, 2000, false), ("node", 0, 1000, false)] {
        if let Some(problem) = text(name, min, max, required) {
            r.add(format!("{at}.{name}"), problem)?;
            ok = false;
        }
    }
    let indices_ok = match o.get("indices") {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.len() <= limits.max_depth && a.iter().all(|i| i.as_u64().is_some()),
        Some(_) => false,
    };
    if !indices_ok {
        let problem = format!("indices must be an array of at most {} non-negative integers", limits.max_depth);
        r.add(format!("{at}.indices"), problem)?;
        ok = false;
    }
    Ok(ok)
}

/// The valid image entries, and the names of all (valid or not).
fn parse_images(
    v: Option<&Value>,
    prefix: &str,
    limits: &Limits,
    r: &mut Report,
) -> Result<(HashMap<String, ImageEntry>, HashSet<String>), Stop> {
    let map = match v {
        None | Some(Value::Null) => return Ok(Default::default()),
        Some(Value::Object(m)) => m,
        Some(_) => {
            r.add("$.images", "images must be an object")?;
            return Ok(Default::default());
        }
    };
    if map.len() > limits.max_images {
        r.add("$.images", format!("more than {} images", limits.max_images))?;
        return Ok(Default::default());
    }
    let mut out = HashMap::with_capacity(map.len());
    for (name, entry) in map {
        let at = format!("$.images{}", member(name));
        if name.is_empty() || name.len() > 255 || name.chars().any(char::is_control) {
            r.add(&at, "an image ref is empty, too long or has control characters")?;
            continue;
        }
        let Some(e) = entry.as_object() else {
            r.add(&at, "an image entry is not an object")?;
            continue;
        };
        let key = match e.get("key").and_then(Value::as_str) {
            Some(key) if is_key_under(key, prefix) => Some(key),
            Some(_) => {
                r.add(format!("{at}.key"), format!("image {name:?} key is outside the job prefix"))?;
                None
            }
            None => {
                r.add(format!("{at}.key"), "an image entry has no key")?;
                None
            }
        };
        let mime = e.get("mime_type").and_then(Value::as_str).and_then(Mime::parse);
        if mime.is_none() {
            r.add(format!("{at}.mime_type"), format!("image {name:?} has an unsupported mime_type"))?;
        }
        if let (Some(key), Some(mime)) = (key, mime) {
            out.insert(name.clone(), ImageEntry { key: key.to_owned(), mime });
        }
    }
    Ok((out, map.keys().cloned().collect()))
}

/// A step of a node's path from `$.document`.
#[derive(Clone, Copy)]
enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

fn render(path: &[Seg<'_>]) -> String {
    let mut out = String::from("$.document");
    for seg in path {
        match seg {
            Seg::Key(k) => out.push_str(&member(k)),
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// Walks the node tree without recursion: checks types, counts nodes, bounds depth, and
/// collects every `imageRef` (in fills, strokes or anywhere else on a node) with the path of its
/// first use. Paths are kept as each node's parent link and rendered only for a problem.
fn walk_document<'a>(doc: &'a Value, limits: &Limits, r: &mut Report) -> Result<Vec<(String, String)>, Stop> {
    let mut refs = Vec::new();
    let mut seen = HashSet::new();
    // Each node's (parent, index among its parent's children); the root's parent is itself.
    let mut links: Vec<(usize, usize)> = vec![(0, 0)];
    let path_of = |links: &[(usize, usize)], mut at: usize| {
        let mut segs = Vec::new();
        while at != 0 {
            let (parent, i) = links[at];
            segs.push(Seg::Index(i));
            segs.push(Seg::Key("children"));
            at = parent;
        }
        segs.reverse();
        segs
    };
    let mut stack: Vec<(&'a Value, usize, usize)> = vec![(doc, 1, 0)];
    let mut count = 0usize;
    let mut too_deep = false;
    while let Some((node, depth, link)) = stack.pop() {
        count += 1;
        if count > limits.max_nodes {
            // Once is enough, and nothing past the limit is looked at.
            r.add("$.document", format!("more than {} nodes", limits.max_nodes))?;
            break;
        }
        let here = || render(&path_of(&links, link));
        if depth > limits.max_depth {
            if !too_deep {
                too_deep = true;
                r.add(here(), format!("nodes nested deeper than {}", limits.max_depth))?;
            }
            continue;
        }
        let Some(obj) = node.as_object() else {
            r.add(here(), "a node is not an object")?;
            continue;
        };
        check_node(obj, &path_of(&links, link), &mut refs, &mut seen, r)?;
        match obj.get("children") {
            None | Some(Value::Null) => {}
            Some(Value::Array(children)) => {
                // Reverse so the walk (and thus image order) follows document order.
                for (i, c) in children.iter().enumerate().rev() {
                    links.push((link, i));
                    stack.push((c, depth + 1, links.len() - 1));
                }
            }
            Some(_) => r.add(format!("{}.children", here()), "children must be an array")?,
        }
    }
    Ok(refs)
}

/// One node's own members: its type, and every `imageRef` on it (on the node itself, or in its
/// fills, strokes or anything else), each with the path of its first use.
fn check_node<'a>(
    obj: &'a serde_json::Map<String, Value>,
    at: &[Seg<'a>],
    refs: &mut Vec<(String, String)>,
    seen: &mut HashSet<String>,
    r: &mut Report,
) -> Result<(), Stop> {
    let here = || render(at);
    match obj.get("type").and_then(Value::as_str) {
        None => r.add(format!("{}.type", here()), "a node has no type")?,
        Some(ty) if !NODE_TYPES.contains(&ty) => {
            r.add(format!("{}.type", here()), format!("node type {ty:?} cannot be built by the plugin"))?
        }
        Some(_) => {}
    }
    for (k, v) in obj {
        match k.as_str() {
            "children" => {}
            // An SVG or image node may carry its imageRef on the node itself.
            "imageRef" => add_ref(v, refs, seen, || format!("{}.imageRef", here()), r)?,
            _ => {
                let mut base = at.to_vec();
                base.push(Seg::Key(k));
                collect_refs(v, base, refs, seen, r)?
            }
        }
    }
    Ok(())
}

fn add_ref(
    v: &Value,
    refs: &mut Vec<(String, String)>,
    seen: &mut HashSet<String>,
    path: impl FnOnce() -> String,
    r: &mut Report,
) -> Result<(), Stop> {
    let Some(name) = v.as_str() else {
        return r.add(path(), "imageRef must be a string");
    };
    if seen.insert(name.to_owned()) {
        refs.push((name.to_owned(), path()));
    }
    Ok(())
}

/// Every `imageRef` inside one member of a node, at any depth.
fn collect_refs<'a>(
    v: &'a Value,
    base: Vec<Seg<'a>>,
    refs: &mut Vec<(String, String)>,
    seen: &mut HashSet<String>,
    r: &mut Report,
) -> Result<(), Stop> {
    // Depth-first with the path held once: each entry says how long the path is above it.
    let mut path = base;
    let start = path.len();
    let mut stack: Vec<(&'a Value, usize, Option<Seg<'a>>)> = vec![(v, start, None)];
    while let Some((v, len, seg)) = stack.pop() {
        path.truncate(len);
        if let Some(seg) = seg {
            path.push(seg);
        }
        match v {
            Value::Object(m) => {
                let len = path.len();
                // Members in key order, nested ones popped last first: the order of first use
                // (and so of inlining) stays what it always was.
                for (k, inner) in m {
                    if k == "imageRef" {
                        let p = &path;
                        add_ref(inner, refs, seen, || format!("{}.imageRef", render(p)), r)?;
                    } else {
                        stack.push((inner, len, Some(Seg::Key(k))));
                    }
                }
            }
            Value::Array(a) => {
                let len = path.len();
                stack.extend(a.iter().enumerate().rev().map(|(i, x)| (x, len, Some(Seg::Index(i)))));
            }
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
    fn warnings_are_checked_and_counted() {
        let n = nonce();
        let l = Limits::default();
        let with = |warnings: Value, count: i64| {
            let mut a: Value = serde_json::from_slice(&art(json!({"type": "FRAME"}), json!({}))).unwrap();
            a["warnings"] = warnings;
            a["warning_count"] = json!(count);
            serde_json::to_vec(&a).unwrap()
        };
        let good = json!([{"code": "font_substituted", "message": "Helvetica is not available; drawn with Inter",
                           "path": "body > h1", "node": "Welcome", "indices": [0, 2]},
                          {"code": "canvas_skipped", "message": "x", "indices": []}]);
        let a = validate(&with(good.clone(), 2), &expect(&n), &l).unwrap();
        assert_eq!(a.warnings, Some(good.clone()));
        // Version 1 artifacts without the list are as valid as ever.
        assert_eq!(validate(&art(json!({"type": "FRAME"}), json!({})), &expect(&n), &l).unwrap().warnings, None);
        assert!(validate(&with(good, 3), &expect(&n), &l).unwrap_err().contains("number of warnings"));
        let bad = [
            json!({}),
            json!([{"code": "made_up", "message": "x"}]),
            json!([{"code": "canvas_skipped"}]),
            json!([{"code": "canvas_skipped", "message": ""}]),
            json!([{"code": "canvas_skipped", "message": "x", "path": 3}]),
            json!([{"code": "canvas_skipped", "message": "x", "indices": [-1]}]),
            json!([{"code": "canvas_skipped", "message": "x", "indices": "0/2"}]),
            json!([{"code": "canvas_skipped", "message": "x", "indices": vec![0; l.max_depth + 1]}]),
            json!(["x"]),
        ];
        for b in bad {
            let count = b.as_array().map_or(0, |a| a.len() as i64);
            assert!(validate(&with(b.clone(), count), &expect(&n), &l).is_err(), "{b}");
        }
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

    #[test]
    fn every_problem_is_reported_with_its_json_path() {
        let n = nonce();
        let doc = json!({"type": "FRAME", "children": [
            {"type": "WIDGET"},
            {"type": "RECTANGLE", "fills": [{"type": "IMAGE", "imageRef": "zz"}], "strokes": [{"imageRef": 7}]},
            {"type": "TEXT", "children": {}},
            "text"]});
        let images = json!({"a": {"key": "code2des/id1/2/images/a", "mime_type": "image/webp"},
                            "my logo": {"mime_type": "image/png"}});
        let mut bad: Value = serde_json::from_slice(&art(doc, images)).unwrap();
        bad["version"] = json!(2);
        bad["nonce"] = json!("other");
        bad["warning_count"] = json!(-1);
        let bytes = serde_json::to_vec(&bad).unwrap();
        let all = validate_all(&bytes, &expect(&n), &Limits::default()).unwrap_err();
        let got: Vec<String> = all.iter().map(ToString::to_string).collect();
        let want = [
            "$.version: unknown version",
            "$.nonce: nonce does not match the job",
            "$.warning_count: warning_count must be a non-negative integer",
            r#"$.images.a.key: image "a" key is outside the job prefix"#,
            r#"$.images.a.mime_type: image "a" has an unsupported mime_type"#,
            r#"$.images["my logo"].key: an image entry has no key"#,
            r#"$.document.children[0].type: node type "WIDGET" cannot be built by the plugin"#,
            "$.document.children[1].strokes[0].imageRef: imageRef must be a string",
            "$.document.children[2].children: children must be an array",
            "$.document.children[3]: a node is not an object",
            r#"$.document.children[1].fills[0].imageRef: imageRef "zz" is not in images"#,
        ];
        assert_eq!(got, want);
        // The result route's check stops at the first, and says the same.
        assert_eq!(validate(&bytes, &expect(&n), &Limits::default()).unwrap_err(), want[0]);
        // A good artifact has no problem either way.
        let good = art(json!({"type": "FRAME"}), json!({}));
        assert!(validate_all(&good, &expect(&n), &Limits::default()).is_ok());
    }
}
