//! The worker's result artifact (SPEC section 4), as the worker writes it and the result route
//! reads it: the header that ties it to its job, the node tree, the images it uses and the
//! fidelity report. The checks no type can make (it is this job's, its keys are under the
//! job's prefix, its limits) are `shared`'s `domain::artifact`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::node::{Node, NodeSchema};
use crate::Obj;

/// The most warnings one artifact lists (the schema's `maxItems`, `shared`'s
/// `Limits::max_warnings`, and what the converter stops at).
pub const MAX_WARNINGS: usize = 1000;

/// A warning's `message`, in characters.
pub const MAX_WARNING_MESSAGE: usize = 1000;
/// A warning's `path`, in characters.
pub const MAX_WARNING_PATH: usize = 2000;
/// A warning's `node`, in characters.
pub const MAX_WARNING_NODE: usize = 1000;
/// An image's name (`imageRef`), in bytes.
pub const MAX_IMAGE_REF: usize = 255;

wire_enum! {
    /// `result` for a completed job, `failure` for a failed one.
    #[schemars(rename = "ArtifactKind")]
    pub enum Kind {
        Result = "result",
        Failure = "failure",
    }
}

wire_enum! {
    #[schemars(inline)]
    pub enum Mime {
        Png = "image/png",
        Jpeg = "image/jpeg",
        Gif = "image/gif",
        Svg = "image/svg+xml",
    }
}

impl Mime {
    /// The file extension the worker gives an image of this type.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Png => "png",
            Self::Jpeg => "jpg",
            Self::Gif => "gif",
            Self::Svg => "svg",
        }
    }
}

wire_enum! {
    /// The fixed list of warning codes (docs/WORKER.md, "Warnings", says what triggers each).
    /// Codes are only ever added: an artifact written before a code was still validates.
    pub enum WarningCode {
        FontSubstituted = "font_substituted",
        UnsupportedCss = "unsupported_css",
        ImageConverted = "image_converted",
        ImageTooLarge = "image_too_large",
        ImageUnavailable = "image_unavailable",
        PseudoElement = "pseudo_element",
        CanvasSkipped = "canvas_skipped",
        IframeSkipped = "iframe_skipped",
        VideoSkipped = "video_skipped",
        NodeLimit = "node_limit",
        DepthLimit = "depth_limit",
    }
}

/// The result artifact (SPEC section 4): written by the worker under the manifest's
/// `result_prefix`; its key is the webhook's `result_url`. The result route also checks what a
/// schema cannot say: `code2des_id`, `attempt` and `nonce` equal the job's, every `imageRef` of
/// the document is a key of `images`, every image key is under the job's prefix and its bytes
/// are the declared type, at most 20 000 nodes nested at most 40 deep, 512 images, 36 240 437
/// bytes of artifact, 3 MiB per image. `code2des-worker validate` runs those checks on a local file.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ResultArtifact {
    /// The protocol version, 1.
    #[schemars(range(min = 1, max = 1))]
    pub version: u32,
    pub kind: Kind,
    /// The manifest's.
    pub code2des_id: String,
    /// The manifest's.
    #[schemars(range(min = 1))]
    pub attempt: i32,
    /// The manifest's.
    #[schemars(length(min = 1, max = crate::protocol::MAX_NONCE))]
    pub nonce: String,
    #[schemars(range(min = 0))]
    pub warning_count: Option<i64>,
    /// The Figma node tree; required for `result`, absent or null for `failure`.
    pub document: Option<Document>,
    /// The images the document uses, by `imageRef`.
    pub images: Option<BTreeMap<String, Obj<ArtifactImage>>>,
    /// The fidelity report: what the conversion could not reproduce exactly, and where. When
    /// present, `warning_count` is its length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Warnings>,
}

/// The fidelity report as JSON text: the worker writes it from [`ArtifactWarning`]s, the result
/// route reads it as them (so a fault names `$.warnings[i]`) and passes the text through.
#[derive(Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Warnings(pub Box<RawValue>);

impl Warnings {
    pub fn of(list: &[ArtifactWarning]) -> Self {
        Self(serde_json::value::to_raw_value(list).expect("warnings are plain data"))
    }
}

impl JsonSchema for Warnings {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Warnings".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let item = generator.subschema_for::<ArtifactWarning>();
        schemars::json_schema!({"type": "array", "items": item, "maxItems": MAX_WARNINGS})
    }
}

/// The node tree as JSON text: the worker writes it from a [`Node`], the result route reads it
/// as one to check it, and passes the text through as the worker wrote it (a plugin ignores
/// members it does not know, so a newer worker's members reach it).
#[derive(Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Document(pub Box<RawValue>);

impl Document {
    pub fn of(root: &Node) -> Self {
        Self(serde_json::value::to_raw_value(root).expect("a node tree is plain data"))
    }

    /// Whether the member was written as `null` (a failure artifact's).
    pub fn is_null(&self) -> bool {
        self.0.get() == "null"
    }
}

impl JsonSchema for Document {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Document".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<NodeSchema>()
    }
}

wire_enum! {
    /// What an image is for when it is not one the document uses: `preview`, the page drawn
    /// small (a PNG at most 64 KB and 480 px wide; at most one per artifact), which a plugin
    /// shows before it places the result.
    #[schemars(rename = "ArtifactImageKind")]
    pub enum ImageKind {
        Preview = "preview",
    }
}

/// The most bytes of the `preview` image.
pub const MAX_PREVIEW_BYTES: usize = 64 * 1024;
/// The widest `preview` image, in px.
pub const MAX_PREVIEW_WIDTH: usize = 480;

/// One image of the result: where the worker put it, and what it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ArtifactImage {
    /// The object key, under the job's prefix `code2des/{code2des_id}/{attempt}/` (no `..`).
    #[schemars(length(min = 1, max = crate::keys::MAX_KEY_BYTES))]
    pub key: String,
    /// Raster images at most 4096 px per side; png, jpeg and gif become image fills, svg an SVG node.
    pub mime_type: Mime,
    /// Absent for the document's images; `preview` for the page's small picture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ImageKind>,
}

/// One deterministic conversion warning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ArtifactWarning {
    pub code: WarningCode,
    /// For the user.
    #[schemars(length(min = 1, max = MAX_WARNING_MESSAGE))]
    pub message: String,
    /// The element's DOM path in the capture (`body > main > div.card:nth-child(2)`).
    #[schemars(length(max = MAX_WARNING_PATH))]
    pub path: Option<String>,
    /// The `name` of the document node it concerns.
    #[schemars(length(max = MAX_WARNING_NODE))]
    pub node: Option<String>,
    /// Where that node is: its child indices from the document root (`[]` is the root, `[2, 0]`
    /// the first child of the root's third), so a plugin can select it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = crate::node::MAX_DEPTH))]
    pub indices: Option<Vec<u32>>,
}
