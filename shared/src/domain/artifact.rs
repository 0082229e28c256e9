//! The worker's result artifact (SPEC section 4): its serde types, then the checks no type can
//! make (it is this job's, its keys are under the job's prefix, its limits). Pure functions
//! over bytes; the result route does the S3 I/O, logs a refusal's reason and answers only
//! `artifact_invalid`.

use std::collections::{BTreeMap, HashMap, HashSet};

pub use code2des_wire::artifact::*;
use code2des_wire::node::{HyperlinkType, Node, NodeType, MAX_DEPTH, MAX_NODES};
use code2des_wire::shape::{self, ShapeFault};
use code2des_wire::{self as wire, member, Obj};
use serde_json::value::RawValue;

use crate::domain::job::Nonce;
use crate::domain::keys::is_key_under;
use crate::domain::protocol::PROTOCOL_VERSION;

/// Node types the plugin can build.
pub const NODE_TYPES: &[&str] = NodeType::ALL;

/// The codes of the artifact's `warnings` (docs/WORKER.md, "Warnings", says what each means).
pub const WARNING_CODES: &[&str] = WarningCode::ALL;

/// What one Lambda synchronous response carries, the envelope included (6 MiB).
pub const LAMBDA_RESPONSE_BYTES: usize = 6 * 1024 * 1024;

/// The room left for the body in the envelope: the status, headers and JSON framing of the
/// envelope take the rest (256 KiB, far more than they use).
pub const RESPONSE_BUDGET: usize = LAMBDA_RESPONSE_BYTES - 256 * 1024;

/// The largest compressed body the budget carries: a compressed body is binary, so the envelope
/// holds it base64-encoded, four characters for three bytes (6 029 312 → 4 521 984).
pub const COMPRESSED_BUDGET: usize = RESPONSE_BUDGET / 4 * 3;

/// The best ratio a converted document compresses to in the coding every compressing client
/// gets (gzip: Node's fetch asks for no br), as measured by `code2des-bench compression`
/// (docs/PERFORMANCE.md section 8: 194 003 bytes of 1 554 794).
const BEST_GZIP_RATIO: (u64, u64) = (194_003, 1_554_794);

/// The largest artifact the result route could ever answer: one whose document compresses as
/// well as any converted document does and still fits [`COMPRESSED_BUDGET`]
/// (4 521 984 × 1 554 794 / 194 003 = 36 240 437 bytes). A larger one cannot be served to any
/// client, so it is refused before it is read; the worker checks that the compressed answer of
/// the artifact it wrote really fits (`code2des_result::handler::check_answer`). Memory does
/// not bind first: one GET grows by about 110 MiB for 20 000 nodes plus 3.8 MiB per MB of
/// artifact (measured to 30 MB, docs/PERFORMANCE.md section 9), under 300 MiB at this size,
/// with the result function at 1 024 MB.
pub const MAX_ARTIFACT_BYTES: u64 = COMPRESSED_BUDGET as u64 * BEST_GZIP_RATIO.1 / BEST_GZIP_RATIO.0;

/// Bounds on what one artifact may ask of the backend and the plugin. Documented in README and
/// docs/WORKER.md section 3; how the sizes are derived: the constants above.
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
    /// Bytes of response body as it will sit in the Lambda envelope: JSON-escaped text, or the
    /// base64 of a compressed body.
    pub response_budget: usize,
    /// Parallel S3 reads per request.
    pub fetch_concurrency: usize,
    /// Entries of the artifact's `warnings`.
    pub max_warnings: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_artifact_bytes: MAX_ARTIFACT_BYTES,
            max_nodes: MAX_NODES,
            max_depth: MAX_DEPTH,
            max_images: 512,
            max_image_bytes: 3 * 1024 * 1024,
            max_image_side: 4096,
            response_budget: RESPONSE_BUDGET,
            // Memory is bounded by response_budget, not by this: every image's GET gives its size
            // in its headers, and the plan against the budget is made before any body is read.
            fetch_concurrency: 32,
            max_warnings: MAX_WARNINGS,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageEntry {
    pub key: String,
    pub mime: Mime,
    /// The artifact's `preview` image (kind `preview`): bounded by [`check_entry`].
    pub preview: bool,
}

/// An artifact that passed every check that needs no image bytes.
#[derive(Debug)]
pub struct Artifact {
    pub kind: Kind,
    pub warning_count: Option<i64>,
    /// The fidelity report as the worker wrote it (checked). Absent in artifacts that predate it.
    pub warnings: Option<Box<RawValue>>,
    /// The node tree as the worker wrote it (checked as [`Node`]s), passed through.
    pub document: Option<Box<RawValue>>,
    /// Images the document uses, in order of first use, each once.
    pub used: Vec<(String, ImageEntry)>,
    /// The image of kind `preview`, when the worker drew one.
    pub preview: Option<(String, ImageEntry)>,
}

impl Artifact {
    /// Every image a response may carry: the preview first (small, and what a plugin shows
    /// first), then the document's in order of first use.
    pub fn images(&self) -> impl Iterator<Item = &(String, ImageEntry)> {
        self.preview
            .iter()
            .chain(self.used.iter().filter(|(name, _)| self.preview.as_ref().is_none_or(|p| p.0 != *name)))
    }
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

/// The same checks as [`validate`], every problem reported (`code2des-worker validate`): all
/// of those a value has, once its types are right (the first type error ends the reading).
pub fn validate_all(bytes: &[u8], expect: &Expect<'_>, limits: &Limits) -> Result<Artifact, Vec<Problem>> {
    let mut report = Report { all: true, problems: Vec::new() };
    let artifact = check(bytes, expect, limits, &mut report).ok().flatten();
    match artifact {
        Some(a) if report.problems.is_empty() => Ok(a),
        _ => Err(report.problems),
    }
}

/// The artifact's own size against the limit, as the route refuses it before reading it (its
/// GET's size header): the message names both numbers.
pub fn check_size(len: u64, limits: &Limits) -> Result<(), Invalid> {
    if len > limits.max_artifact_bytes {
        return Err(format!("artifact is {len} bytes, over the limit of {}", limits.max_artifact_bytes));
    }
    Ok(())
}

fn check(bytes: &[u8], expect: &Expect<'_>, limits: &Limits, r: &mut Report) -> Result<Option<Artifact>, Stop> {
    // serde_json refuses nesting deeper than 128, so a hostile document cannot blow the stack.
    let raw: ResultArtifact = match wire::read_slice(bytes) {
        Ok(raw) => raw,
        Err(fault) => {
            r.add(fault.json_path(), fault.message())?;
            return Ok(None);
        }
    };
    check_header(&raw, expect, r)?;
    check_warnings(&raw, limits, r)?;
    let (images, names) = check_images(raw.images.unwrap_or_default(), expect.prefix, limits, r)?;
    // A failure artifact may leave the document out.
    let document = match raw.document {
        Some(doc) if !doc.is_null() => Some(doc.0),
        _ if raw.kind == Kind::Failure => None,
        _ => {
            r.add("$.document", "a result artifact needs a document")?;
            None
        }
    };
    let used = match &document {
        Some(doc) => used_images(doc, &images, &names, limits, r)?,
        None => Vec::new(),
    };
    let preview = images.iter().find(|(_, e)| e.preview).map(|(name, e)| (name.clone(), e.clone()));
    let (kind, warning_count, warnings) = (raw.kind, raw.warning_count, raw.warnings.map(|w| w.0));
    Ok(Some(Artifact { kind, warning_count, warnings, document, used, preview }))
}

/// What ties the artifact to its job: version, kind, code2des_id, attempt, nonce.
fn check_header(a: &ResultArtifact, expect: &Expect<'_>, r: &mut Report) -> Result<(), Stop> {
    if a.version != PROTOCOL_VERSION {
        r.add("$.version", "unknown version")?;
    }
    if a.kind != expect.kind {
        r.add("$.kind", format!("kind {} does not match the job status", a.kind.as_str()))?;
    }
    if a.code2des_id != expect.code2des_id {
        r.add("$.code2des_id", "code2des_id does not match the job")?;
    }
    if a.attempt != expect.attempt {
        r.add("$.attempt", "attempt does not match the job")?;
    }
    if !expect.nonce.matches(&a.nonce) {
        r.add("$.nonce", "nonce does not match the job")?;
    }
    Ok(())
}

/// `warning_count` and the `warnings` list: within the limits, and agreeing when both are there.
fn check_warnings(a: &ResultArtifact, limits: &Limits, r: &mut Report) -> Result<(), Stop> {
    if a.warning_count.is_some_and(|n| n < 0) {
        r.add("$.warning_count", "warning_count must be a non-negative integer")?;
    }
    let Some(Warnings(raw)) = &a.warnings else { return Ok(()) };
    let list: Vec<Obj<ArtifactWarning>> = match wire::read(&mut serde_json::Deserializer::from_str(raw.get())) {
        Ok(list) => list,
        Err(fault) => return r.add(wire::json_path("$.warnings", &fault.path), fault.message()),
    };
    if list.len() > limits.max_warnings {
        return r.add("$.warnings", format!("more than {} warnings", limits.max_warnings));
    }
    if a.warning_count.is_some_and(|n| n >= 0 && n != list.len() as i64) {
        r.add("$.warning_count", "warning_count is not the number of warnings")?;
    }
    for (i, Obj(w)) in list.iter().enumerate() {
        check_warning(w, &format!("$.warnings[{i}]"), limits, r)?;
    }
    Ok(())
}

/// One warning's lengths (the wire's bounds): `message` 1 to 1 000 characters, `path` at most
/// 2 000, `node` at most 1 000, `indices` at most `max_depth`.
fn check_warning(w: &ArtifactWarning, at: &str, limits: &Limits, r: &mut Report) -> Result<(), Stop> {
    let texts = [
        ("message", Some(&w.message), 1, MAX_WARNING_MESSAGE),
        ("path", w.path.as_ref(), 0, MAX_WARNING_PATH),
        ("node", w.node.as_ref(), 0, MAX_WARNING_NODE),
    ];
    for (name, text, min, max) in texts {
        if text.is_some_and(|t| !(min..=max).contains(&t.chars().count())) {
            r.add(format!("{at}.{name}"), format!("{name} must be a string of {min} to {max} characters"))?;
        }
    }
    if w.indices.as_ref().is_some_and(|i| i.len() > limits.max_depth) {
        let problem = format!("indices must be an array of at most {} non-negative integers", limits.max_depth);
        r.add(format!("{at}.indices"), problem)?;
    }
    Ok(())
}

/// The image entries whose names and keys are good, and the names of all.
fn check_images(
    map: BTreeMap<String, Obj<ArtifactImage>>,
    prefix: &str,
    limits: &Limits,
    r: &mut Report,
) -> Result<(HashMap<String, ImageEntry>, HashSet<String>), Stop> {
    if map.len() > limits.max_images {
        r.add("$.images", format!("more than {} images", limits.max_images))?;
        return Ok(Default::default());
    }
    let names = map.keys().cloned().collect();
    let mut good = HashMap::with_capacity(map.len());
    let mut previews = 0;
    for (name, Obj(image)) in map {
        let at = format!("$.images{}", member(&name));
        let preview = image.kind == Some(ImageKind::Preview);
        previews += usize::from(preview);
        if name.is_empty() || name.len() > MAX_IMAGE_REF || name.chars().any(char::is_control) {
            r.add(&at, "an image ref is empty, too long or has control characters")?;
        } else if !is_key_under(&image.key, prefix) {
            r.add(format!("{at}.key"), format!("image {name:?} key is outside the job prefix"))?;
        } else if preview && previews > 1 {
            r.add(format!("{at}.kind"), "more than one image of kind preview")?;
        } else if preview && image.mime_type != Mime::Png {
            r.add(format!("{at}.mime_type"), "the preview must be image/png")?;
        } else {
            good.insert(name, ImageEntry { key: image.key, mime: image.mime_type, preview });
        }
    }
    Ok((good, names))
}

/// The images the document uses, in order of first use, each once; an `imageRef` that is not
/// in `images` is a problem (one that is there but invalid was reported already).
fn used_images(
    doc: &RawValue,
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

/// Reads the node tree as [`Node`]s, once its shape is within the limits (`shape::check`: so
/// a hostile document costs a scan, never a tree of a million nodes), and collects every
/// `imageRef` with the path of its first use.
fn walk_document(doc: &RawValue, limits: &Limits, r: &mut Report) -> Result<Vec<(String, String)>, Stop> {
    match shape::check(doc.get(), limits.max_nodes, limits.max_depth) {
        Ok(()) => {}
        Err(ShapeFault::TooMany) => {
            return r.add("$.document", format!("more than {} nodes", limits.max_nodes)).map(|()| Vec::new())
        }
        Err(ShapeFault::TooDeep(path)) => {
            let problem = format!("nodes nested deeper than {}", limits.max_depth);
            return r.add(wire::json_path("$.document", &path), problem).map(|()| Vec::new());
        }
    }
    let root: Node = match wire::read(&mut serde_json::Deserializer::from_str(doc.get())) {
        Ok(root) => root,
        Err(fault) => return r.add(wire::json_path("$.document", &fault.path), fault.message()).map(|()| Vec::new()),
    };
    let mut refs = Vec::new();
    let mut seen = HashSet::new();
    let mut components = Components::default();
    // Every node's `id`, and each NODE hyperlink with where it is: a link may name a layer
    // further on (a table of contents), so they are checked once the walk is done.
    let mut ids: HashSet<&str> = HashSet::new();
    let mut node_links: Vec<(&str, usize)> = Vec::new();
    // Each node's (parent's link, where it is among its parent's nodes): its path is rendered
    // only for a problem.
    let mut links: Vec<(usize, Step)> = Vec::new();
    // With each node: whether it is inside a COMPONENT or an INSTANCE, and whether its parent
    // has auto layout.
    let mut stack: Vec<(&Node, usize, Step, bool, bool)> = vec![(&root, usize::MAX, Step::Child(0), false, false)];
    while let Some((n, parent, step, inside, in_flow)) = stack.pop() {
        links.push((parent, step));
        let me = links.len() - 1;
        if matches!(step, Step::Beside(_)) && n.kind != NodeType::COMPONENT {
            r.add(render(&links, me), "the root's components are COMPONENTs only")?;
        }
        if parent != usize::MAX && n.components.is_some() {
            r.add(render(&links, me), "components beside the screen are the root's only")?;
        }
        for (at, name) in n.image_refs() {
            if seen.insert(name.to_owned()) {
                refs.push((name.to_owned(), format!("{}.{at}", render(&links, me))));
            }
        }
        match n.id.as_deref() {
            Some(id) if !ids.insert(id) => r.add(render(&links, me), format!("id {id:?} is used twice"))?,
            _ => {
                if let Some(problem) = components.check(n, inside) {
                    r.add(render(&links, me), problem)?;
                }
            }
        }
        let runs = n.segments.iter().flatten().map(|g| &g.hyperlink);
        for h in std::iter::once(&n.hyperlink).chain(runs).flatten() {
            if h.kind == HyperlinkType::NODE {
                node_links.push((h.value.as_str(), me));
            }
        }
        for (i, e) in n.effects.iter().flatten().enumerate() {
            if let Some(problem) = effect_problem(e) {
                r.add(format!("{}.effects[{i}]", render(&links, me)), problem)?;
            }
        }
        if let Some(problem) = layout_problem(n, in_flow) {
            r.add(render(&links, me), problem)?;
        }
        let inside = inside || matches!(n.kind, NodeType::COMPONENT | NodeType::INSTANCE);
        let auto = auto_layout(n);
        // Reversed, so the walk (and thus image order) follows document order; the root's
        // components before its children, as the plugin builds them (a component before its
        // instances). They are beside the screen: in no component and no auto layout.
        let kids = n.children.as_deref().unwrap_or_default().iter().enumerate().rev();
        stack.extend(kids.map(|(i, c)| (c, me, Step::Child(i), inside, auto)));
        let beside = n.components.as_deref().unwrap_or_default().iter().enumerate().rev();
        stack.extend(beside.map(|(i, c)| (c, me, Step::Beside(i), inside, false)));
    }
    for (value, at) in node_links {
        if !ids.contains(value) {
            r.add(render(&links, at), format!("a NODE hyperlink names {value:?}, which is no node's id"))?;
        }
    }
    Ok(refs)
}

/// Whether node `n` lays its children out in a row or a column (Figma's auto layout).
fn auto_layout(n: &Node) -> bool {
    use wire::node::LayoutMode;
    matches!(n.layout_mode, Some(LayoutMode::HORIZONTAL | LayoutMode::VERTICAL))
}

/// What Figma would refuse of node `n`'s place in a layout, if anything: FILL and ABSOLUTE
/// are for the children of an auto layout frame (`in_flow`), HUG for an auto layout frame or
/// a TEXT node, WRAP for a HORIZONTAL one (and its `counterAxisSpacing` with it).
fn layout_problem(n: &Node, in_flow: bool) -> Option<String> {
    use wire::node::{LayoutMode, LayoutPositioning, LayoutSizing, LayoutWrap};
    let wraps = n.layout_wrap == Some(LayoutWrap::WRAP);
    if wraps && n.layout_mode != Some(LayoutMode::HORIZONTAL) {
        return Some("layoutWrap WRAP on a node whose layoutMode is not HORIZONTAL".into());
    }
    match n.counter_axis_spacing {
        Some(_) if !wraps => return Some("counterAxisSpacing on a node whose layoutWrap is not WRAP".into()),
        // Figma takes a positive spacing only.
        Some(v) if v < 0.0 => return Some("counterAxisSpacing must not be negative".into()),
        _ => {}
    }
    let sizing =
        [("layoutSizingHorizontal", n.layout_sizing_horizontal), ("layoutSizingVertical", n.layout_sizing_vertical)];
    if !in_flow && n.layout_positioning == Some(LayoutPositioning::ABSOLUTE) {
        return Some("layoutPositioning ABSOLUTE on a node whose parent has no auto layout".into());
    }
    for (member, value) in sizing {
        match value {
            Some(LayoutSizing::FILL) if !in_flow => {
                return Some(format!("{member} FILL on a node whose parent has no auto layout"))
            }
            Some(LayoutSizing::FILL) if n.layout_positioning == Some(LayoutPositioning::ABSOLUTE) => {
                return Some(format!("{member} FILL on an ABSOLUTE node, which is out of the flow"))
            }
            Some(LayoutSizing::HUG) if n.kind != NodeType::TEXT && !auto_layout(n) => {
                return Some(format!("{member} HUG on a node that is neither TEXT nor an auto layout frame"))
            }
            _ => {}
        }
    }
    None
}

/// What is wrong with an effect, if anything: a shadow needs its colour and offset (Figma's
/// shadows have both), a blur has neither.
fn effect_problem(e: &wire::node::Effect) -> Option<String> {
    use wire::node::EffectType;
    match e.kind {
        EffectType::DROP_SHADOW | EffectType::INNER_SHADOW if e.color.is_none() || e.offset.is_none() => {
            Some(format!("a {} without its color and offset", e.kind.as_str()))
        }
        _ => None,
    }
}

/// The components met so far in a depth-first walk, by `id`, each with its structure: the
/// type and child count of every node of its subtree, in order. An instance's children are
/// the component's (the plugin applies each one's overrides to the layer of the same place),
/// so an instance must have the same structure.
#[derive(Default)]
struct Components(HashMap<String, Vec<(NodeType, usize)>>);

fn structure(n: &Node) -> Vec<(NodeType, usize)> {
    n.walk().map(|(d, _)| (d.kind, d.children.as_deref().map_or(0, <[Node]>::len))).collect()
}

impl Components {
    /// What is wrong with node `n` as a component or an instance, if anything.
    fn check(&mut self, n: &Node, inside: bool) -> Option<String> {
        match n.kind {
            // Figma makes no component inside a component or an instance.
            NodeType::COMPONENT if inside => Some("a COMPONENT inside a COMPONENT or an INSTANCE".into()),
            NodeType::COMPONENT => match n.id.as_deref() {
                None | Some("") => Some("a COMPONENT without an id".into()),
                // Ids are unique in the document (checked before).
                Some(id) => self.0.insert(id.to_owned(), structure(n)).and(None),
            },
            NodeType::INSTANCE => match n.component_id.as_deref().map(|id| (id, self.0.get(id))) {
                None => Some("an INSTANCE without a componentId".into()),
                Some((id, None)) => Some(format!("componentId {id:?} names no COMPONENT before it")),
                Some((id, Some(shape))) => {
                    // The roots' types differ (COMPONENT, INSTANCE): their child counts and all
                    // below them must not.
                    let mine = structure(n);
                    (mine[0].1 != shape[0].1 || mine[1..] != shape[1..])
                        .then(|| format!("its children are not component {id:?}'s (types and counts, in order)"))
                }
            },
            _ => None,
        }
    }
}

/// Where a node is among its parent's: one of its `children`, or of the root's `components`.
#[derive(Clone, Copy)]
enum Step {
    Child(usize),
    Beside(usize),
}

/// The path of the node at `at` from `$.document`, through its parents' links.
fn render(links: &[(usize, Step)], mut at: usize) -> String {
    let mut steps = Vec::new();
    while links[at].0 != usize::MAX {
        steps.push(links[at].1);
        at = links[at].0;
    }
    let mut out = String::from("$.document");
    for step in steps.iter().rev() {
        match step {
            Step::Child(i) => out.push_str(&format!(".children[{i}]")),
            Step::Beside(i) => out.push_str(&format!(".components[{i}]")),
        }
    }
    out
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

/// Checks an image's bytes as [`check_image`] does, and the preview's own bounds: at most
/// [`MAX_PREVIEW_BYTES`] bytes and [`MAX_PREVIEW_WIDTH`] px wide.
pub fn check_entry(bytes: &[u8], entry: &ImageEntry, limits: &Limits) -> Result<(), Invalid> {
    check_image(bytes, entry.mime, limits)?;
    if !entry.preview {
        return Ok(());
    }
    if bytes.len() > MAX_PREVIEW_BYTES {
        return Err(format!("the preview is {} bytes, over {MAX_PREVIEW_BYTES}", bytes.len()));
    }
    let size = imagesize::blob_size(bytes).map_err(|_| "unreadable image header".to_owned())?;
    if size.width > MAX_PREVIEW_WIDTH {
        return Err(format!("the preview is {} px wide, over {MAX_PREVIEW_WIDTH}", size.width));
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
    use serde_json::{json, Value};

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
            {"type": "RECTANGLE", "fills": [{"type": "IMAGE", "imageRef": "a"}], "strokes": [{"type": "IMAGE", "imageRef": "b"}]},
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
    fn a_preview_is_one_png_within_64_kb_and_480_px() {
        let n = nonce();
        let doc = json!({"type": "FRAME", "name": "s"});
        let p = |mime: &str| json!({"key": "code2des/id1/1/preview.png", "mime_type": mime, "kind": "preview"});
        let a = validate(&art(doc.clone(), json!({"pv": p("image/png")})), &expect(&n), &Limits::default()).unwrap();
        let (name, entry) = a.preview.clone().expect("the preview");
        assert_eq!((name.as_str(), entry.preview), ("pv", true));
        assert!(a.used.is_empty(), "no node uses it");
        assert_eq!(a.images().count(), 1);
        let gif = validate(&art(doc.clone(), json!({"pv": p("image/gif")})), &expect(&n), &Limits::default());
        assert!(gif.unwrap_err().contains("image/png"));
        let two =
            validate(&art(doc, json!({"a": p("image/png"), "b": p("image/png")})), &expect(&n), &Limits::default());
        assert!(two.unwrap_err().contains("more than one"));
        // Its bytes: a PNG header of its size is read (IHDR).
        let png = |w: u32, extra: usize| {
            let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
            b.extend_from_slice(&w.to_be_bytes());
            b.extend_from_slice(&10u32.to_be_bytes());
            b.extend_from_slice(&[8, 2, 0, 0, 0]);
            b.resize(b.len() + extra, 0);
            b
        };
        let l = Limits::default();
        assert_eq!(check_entry(&png(480, 100), &entry, &l), Ok(()));
        assert!(check_entry(&png(481, 100), &entry, &l).unwrap_err().contains("481 px wide"));
        assert!(check_entry(&png(100, MAX_PREVIEW_BYTES), &entry, &l).unwrap_err().contains("bytes"));
        let plain = ImageEntry { preview: false, ..entry };
        assert_eq!(check_entry(&png(2000, MAX_PREVIEW_BYTES), &plain, &l), Ok(()), "only the preview is bounded so");
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
    fn a_shadow_needs_its_colour_and_offset_and_a_blur_has_neither() {
        let n = nonce();
        let l = Limits::default();
        let shadow = json!({"type": "DROP_SHADOW", "color": {"r": 0, "g": 0, "b": 0, "a": 1}, "offset": {"x": 1, "y": 2}, "radius": 3});
        let blur = json!({"type": "LAYER_BLUR", "radius": 6});
        let ok = art(json!({"type": "FRAME", "effects": [shadow, blur]}), json!({}));
        assert!(validate(&ok, &expect(&n), &l).is_ok());
        let bare = json!({"type": "INNER_SHADOW", "radius": 3});
        let doc = json!({"type": "FRAME", "children": [{"type": "TEXT", "effects": [blur, bare]}]});
        let problems = validate_all(&art(doc, json!({})), &expect(&n), &l).unwrap_err();
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["$.document.children[0].effects[1]"], "{problems:?}");
    }

    #[test]
    fn an_instance_names_a_component_before_it_of_the_same_structure() {
        let n = nonce();
        let l = Limits::default();
        let card = |kind: &str, link: Value, text: &str| {
            let mut c = json!({"type": kind, "width": 100, "height": 40, "children": [
                {"type": "TEXT", "characters": text}, {"type": "RECTANGLE"}]});
            c.as_object_mut().unwrap().extend(link.as_object().unwrap().clone());
            c
        };
        let doc = |kids: Vec<Value>| art(json!({"type": "FRAME", "children": kids}), json!({}));
        let component = card("COMPONENT", json!({"id": "c1"}), "One");
        let good = doc(vec![
            component.clone(),
            card("INSTANCE", json!({"componentId": "c1"}), "Two, longer"),
            card("INSTANCE", json!({"componentId": "c1"}), "Three"),
        ]);
        assert!(validate(&good, &expect(&n), &l).is_ok());
        let reason = |d: Vec<u8>| validate(&d, &expect(&n), &l).unwrap_err();
        let before = doc(vec![card("INSTANCE", json!({"componentId": "c1"}), "x"), component.clone()]);
        assert!(reason(before).contains("names no COMPONENT before it"));
        let twice = doc(vec![component.clone(), component.clone()]);
        assert!(reason(twice).contains("used twice"));
        assert!(reason(doc(vec![card("COMPONENT", json!({}), "x")])).contains("without an id"));
        assert!(reason(doc(vec![card("INSTANCE", json!({}), "x")])).contains("without a componentId"));
        let mut other = card("INSTANCE", json!({"componentId": "c1"}), "x");
        other["children"][1]["type"] = json!("ELLIPSE");
        assert!(reason(doc(vec![component.clone(), other])).contains("are not component"));
        let mut fewer = card("INSTANCE", json!({"componentId": "c1"}), "x");
        fewer["children"].as_array_mut().unwrap().pop();
        assert!(reason(doc(vec![component.clone(), fewer])).contains("are not component"));
        let framed = card("FRAME", json!({"id": "c1"}), "x");
        assert!(reason(doc(vec![component.clone(), framed])).contains("\"c1\" is used twice"));
        let mut nested = component.clone();
        nested["children"].as_array_mut().unwrap().push(card("COMPONENT", json!({"id": "c2"}), "x"));
        assert!(reason(doc(vec![nested])).contains("inside a COMPONENT"));
    }

    #[test]
    fn components_beside_the_screen_come_before_it_and_are_swapped_in() {
        let n = nonce();
        let l = Limits::default();
        let icon = |id: &str| json!({"type": "COMPONENT", "id": id, "width": 22, "height": 22, "children": [{"type": "RECTANGLE"}]});
        let uses = |id: &str| json!({"type": "INSTANCE", "componentId": id, "children": [{"type": "RECTANGLE"}]});
        let card = |kind: &str, link: Value, icon: &str| {
            let mut c = json!({"type": kind, "children": [uses(icon), {"type": "TEXT", "characters": "x"}]});
            c.as_object_mut().unwrap().extend(link.as_object().unwrap().clone());
            c
        };
        let screen = |beside: Value| {
            let cards =
                [card("COMPONENT", json!({"id": "c"}), "i1"), card("INSTANCE", json!({"componentId": "c"}), "i2")];
            art(json!({"type": "FRAME", "components": beside, "children": cards}), json!({}))
        };
        assert!(validate(&screen(json!([icon("i1"), icon("i2")])), &expect(&n), &l).is_ok());
        let problems = |d: Vec<u8>| validate_all(&d, &expect(&n), &l).unwrap_err();
        let missing = problems(screen(json!([icon("i1")])));
        assert_eq!(missing[0].path, "$.document.children[1].children[0]", "{missing:?}");
        assert!(missing[0].message.contains("names no COMPONENT before it"), "{missing:?}");
        let framed = problems(screen(json!([icon("i1"), {"type": "FRAME", "id": "i2"}])));
        assert_eq!(framed[0].path, "$.document.components[1]", "{framed:?}");
        assert!(framed[0].message.contains("COMPONENTs only"), "{framed:?}");
        let deeper =
            art(json!({"type": "FRAME", "children": [{"type": "FRAME", "components": [icon("i1")]}]}), json!({}));
        let deeper = problems(deeper);
        assert!(deeper[0].message.contains("the root's only"), "{deeper:?}");
    }

    #[test]
    fn a_node_hyperlink_names_a_node_of_the_document() {
        let n = nonce();
        let l = Limits::default();
        let link = |value: &str| json!({"type": "NODE", "value": value});
        let doc = |target_id: &str, own: Value, runs: Value| {
            art(
                json!({"type": "FRAME", "children": [
                    {"type": "TEXT", "characters": "Contents", "hyperlink": own},
                    {"type": "TEXT", "characters": "See Usage", "segments": runs},
                    {"type": "TEXT", "id": target_id, "characters": "Usage"}]}),
                json!({}),
            )
        };
        let run = |start: u32, end: u32, h: Value| {
            let mut g = json!({"start": start, "end": end, "fontName": {"family": "Inter", "style": "Regular"},
                "fontSize": 16, "fills": [], "textDecoration": "NONE", "textCase": "ORIGINAL",
                "letterSpacing": {"unit": "PIXELS", "value": 0}, "lineHeight": {"unit": "AUTO"}});
            if !h.is_null() {
                g["hyperlink"] = h;
            }
            g
        };
        let runs = |h: Value| json!([run(0, 4, Value::Null), run(4, 9, h)]);
        // Forwards, from a node and from a run: a table of contents names what follows it.
        assert!(validate(&doc("anchor-1", link("anchor-1"), runs(link("anchor-1"))), &expect(&n), &l).is_ok());
        let reason = |d: Vec<u8>| validate(&d, &expect(&n), &l).unwrap_err();
        assert!(reason(doc("anchor-1", link("anchor-2"), runs(Value::Null)))
            .contains("\"anchor-2\", which is no node's id"));
        let got = reason(doc("anchor-1", link("anchor-1"), runs(link("12:34"))));
        assert!(got.contains("\"12:34\", which is no node's id") && got.contains("children[1]"), "{got}");
        // A URL hyperlink names no node.
        let url = json!({"type": "URL", "value": "https://example.com/"});
        assert!(validate(&doc("anchor-1", url.clone(), runs(url)), &expect(&n), &l).is_ok());
    }

    #[test]
    fn fill_hug_and_absolute_only_where_figma_takes_them() {
        let n = nonce();
        let l = Limits::default();
        let doc = |frame: Value, child: Value| {
            let mut f = json!({"type": "FRAME", "width": 200, "height": 40, "children": [child]});
            f.as_object_mut().unwrap().extend(frame.as_object().unwrap().clone());
            art(json!({"type": "FRAME", "children": [f]}), json!({}))
        };
        let row = json!({"layoutMode": "HORIZONTAL", "layoutSizingVertical": "HUG"});
        let text = |more: Value| {
            let mut t = json!({"type": "TEXT", "characters": "Buy", "width": 30, "height": 20});
            t.as_object_mut().unwrap().extend(more.as_object().unwrap().clone());
            t
        };
        let ok = |d: Vec<u8>| validate(&d, &expect(&n), &l).is_ok();
        let reason = |d: Vec<u8>| validate(&d, &expect(&n), &l).unwrap_err();
        // In a row: a child filling it, a text hugging its words, one kept where it is.
        assert!(ok(doc(row.clone(), text(json!({"layoutSizingHorizontal": "FILL", "layoutSizingVertical": "HUG"})))));
        assert!(ok(doc(row.clone(), text(json!({"layoutPositioning": "ABSOLUTE"})))));
        // Without auto layout, Figma refuses FILL and ABSOLUTE; HUG needs auto layout or text.
        let plain = json!({});
        let got = reason(doc(plain.clone(), text(json!({"layoutSizingHorizontal": "FILL"}))));
        assert!(got.contains("layoutSizingHorizontal FILL on a node whose parent has no auto layout"), "{got}");
        assert!(reason(doc(plain.clone(), text(json!({"layoutPositioning": "ABSOLUTE"})))).contains("ABSOLUTE"));
        let hugging_frame = json!({"layoutSizingVertical": "HUG"});
        assert!(reason(doc(hugging_frame, text(json!({})))).contains("neither TEXT nor an auto layout frame"));
        let absolute_fill = text(json!({"layoutPositioning": "ABSOLUTE", "layoutSizingVertical": "FILL"}));
        assert!(reason(doc(row, absolute_fill)).contains("out of the flow"));
        // An unknown value is the wire's to refuse.
        assert!(reason(doc(plain, text(json!({"layoutSizingVertical": "STRETCH"})))).contains("layoutSizingVertical"));
        // Rows wrap, columns do not (Figma throws); the gap between rows goes with the wrap.
        let wrap = json!({"layoutMode": "HORIZONTAL", "layoutWrap": "WRAP", "counterAxisSpacing": 8});
        assert!(ok(doc(wrap, text(json!({})))));
        let column = json!({"layoutMode": "VERTICAL", "layoutWrap": "WRAP"});
        assert!(reason(doc(column, text(json!({}))))
            .contains("layoutWrap WRAP on a node whose layoutMode is not HORIZONTAL"));
        let loose = json!({"layoutMode": "HORIZONTAL", "counterAxisSpacing": 8});
        assert!(
            reason(doc(loose, text(json!({})))).contains("counterAxisSpacing on a node whose layoutWrap is not WRAP")
        );
        let negative = json!({"layoutMode": "HORIZONTAL", "layoutWrap": "WRAP", "counterAxisSpacing": -1});
        assert!(reason(doc(negative, text(json!({})))).contains("counterAxisSpacing"));
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
        let read: Value = serde_json::from_str(a.warnings.unwrap().get()).unwrap();
        assert_eq!(read, good);
        // Version 1 artifacts without the list are as valid as ever.
        assert!(validate(&art(json!({"type": "FRAME"}), json!({})), &expect(&n), &l).unwrap().warnings.is_none());
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
        let images = json!({"a": {"key": "code2des/id1/2/images/a", "mime_type": "image/png"},
                            "": {"key": "code2des/id1/1/images/b", "mime_type": "image/png"}});
        let mut bad: Value = serde_json::from_slice(&art(doc, images)).unwrap();
        bad["version"] = json!(2);
        bad["nonce"] = json!("other");
        bad["warning_count"] = json!(-1);
        let bytes = serde_json::to_vec(&bad).unwrap();
        let all = validate_all(&bytes, &expect(&n), &Limits::default()).unwrap_err();
        let got: Vec<String> = all.iter().map(ToString::to_string).collect();
        // The document is read as typed nodes: its first type error ends its reading.
        let want = [
            "$.version: unknown version",
            "$.nonce: nonce does not match the job",
            "$.warning_count: warning_count must be a non-negative integer",
            r#"$.images[""]: an image ref is empty, too long or has control characters"#,
            r#"$.images.a.key: image "a" key is outside the job prefix"#,
            "$.document.children[0].type: unknown variant `WIDGET`, expected one of `FRAME`, `GROUP`, \
             `RECTANGLE`, `ELLIPSE`, `LINE`, `VECTOR`, `TEXT`, `SVG`, `COMPONENT`, `INSTANCE`",
        ];
        assert_eq!(got, want);
        // Each of the others, in a document otherwise right.
        let frame = |child: Value| json!({"type": "FRAME", "children": [{"type": "TEXT"}, child]});
        for (child, problem) in [
            (
                json!({"type": "RECTANGLE", "strokes": [{"type": "IMAGE", "imageRef": 7}]}),
                "$.document.children[1].strokes[0]: invalid type: integer `7`, expected a string",
            ),
            (
                json!({"type": "TEXT", "children": {}}),
                "$.document.children[1].children: invalid type: map, expected a sequence",
            ),
            (json!("text"), "$.document.children[1]: invalid type: string \"text\", expected struct Node"),
            (
                json!({"type": "SVG", "imageRef": null}),
                "$.document.children[1].imageRef: invalid type: null, expected a string",
            ),
            (
                json!({"type": "RECTANGLE", "fills": [{"type": "IMAGE", "imageRef": "zz"}]}),
                r#"$.document.children[1].fills[0].imageRef: imageRef "zz" is not in images"#,
            ),
        ] {
            let one = art(frame(child), json!({}));
            let got = validate_all(&one, &expect(&n), &Limits::default()).unwrap_err();
            assert_eq!(got.iter().map(ToString::to_string).collect::<Vec<_>>(), [problem]);
        }
        // The result route's check stops at the first, and says the same.
        assert_eq!(validate(&bytes, &expect(&n), &Limits::default()).unwrap_err(), want[0]);
        // A good artifact has no problem either way.
        let good = art(json!({"type": "FRAME"}), json!({}));
        assert!(validate_all(&good, &expect(&n), &Limits::default()).is_ok());
    }

    #[test]
    fn a_type_error_is_the_one_problem_with_its_json_path() {
        let n = nonce();
        let l = Limits::default();
        let one = |v: Value| {
            let all = validate_all(&serde_json::to_vec(&v).unwrap(), &expect(&n), &l).unwrap_err();
            assert_eq!(all.len(), 1, "{all:?}");
            all[0].to_string()
        };
        let base: Value = serde_json::from_slice(&art(json!({"type": "FRAME"}), json!({}))).unwrap();
        let with = |member: &str, v: Value| {
            let mut a = base.clone();
            a[member] = v;
            a
        };
        let image = json!({"my logo": {"key": "code2des/id1/1/a", "mime_type": "image/webp"}});
        let got = one(with("images", image));
        assert!(got.starts_with(r#"$.images["my logo"].mime_type: unknown variant `image/webp`"#), "{got}");
        let got = one(with("images", json!({"a": {"mime_type": "image/png"}})));
        assert_eq!(got, "$.images.a.key: is required");
        let got = one(with("warnings", json!([{"code": "canvas_skipped", "message": "x", "indices": [-1]}])));
        assert!(got.starts_with("$.warnings[0].indices[0]: invalid value: integer `-1`"), "{got}");
        let mut no_kind = base.clone();
        no_kind.as_object_mut().unwrap().remove("kind");
        assert_eq!(one(no_kind), "$.kind: is required");
        assert_eq!(one(json!([1, "result"])), "$: not a JSON object");
        let not_json = validate_all(b"{\"version\": 1,", &expect(&n), &l).unwrap_err();
        assert!(not_json[0].to_string().starts_with("$: not JSON: EOF"), "{not_json:?}");
    }
}
