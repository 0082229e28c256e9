//! The worker protocol's JSON as types: what `schemas/*.schema.json` is generated from
//! ([`schemas`], `UPDATE_SCHEMAS=1 cargo test -p code2des-local --test schemas` writes them).
//!
//! These types describe shapes; they validate nothing. The backend reads the manifest through
//! [`crate::domain::protocol::Manifest`], a webhook body through
//! [`crate::domain::protocol::WebhookBody::parse`] and an artifact through
//! [`crate::domain::artifact::validate`], which check more than a schema can say (an
//! `imageRef` names an image of the artifact, keys lie under the job's prefix, limits). The
//! node tree here is also openapi.yaml's `Node`: a test proves the two identical.

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde_json::Value;

use crate::domain::protocol::Manifest;

/// The node types the reference plugin builds with the Figma plugin API.
#[derive(JsonSchema)]
#[allow(clippy::upper_case_acronyms, dead_code)]
pub enum NodeType {
    FRAME,
    GROUP,
    RECTANGLE,
    ELLIPSE,
    LINE,
    VECTOR,
    TEXT,
    SVG,
}

/// The members every node type may have.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct NodeCommon {
    r#type: NodeType,
    /// The layer name (default the type's, as Figma names new layers).
    name: Option<String>,
    x: Option<f64>,
    y: Option<f64>,
    #[schemars(range(min = 0))]
    width: Option<f64>,
    #[schemars(range(min = 0))]
    height: Option<f64>,
    /// Degrees, counter-clockwise (as Figma's `rotation`).
    rotation: Option<f64>,
    #[schemars(range(min = 0, max = 1))]
    opacity: Option<f64>,
    visible: Option<bool>,
    /// Ignored on GROUP (a Figma group has no fills of its own).
    fills: Option<Vec<Paint>>,
    /// Ignored on GROUP.
    strokes: Option<Vec<Paint>>,
    #[schemars(range(min = 0))]
    stroke_weight: Option<f64>,
    /// Where the strokes lie against the outline (default CENTER, as Figma's).
    stroke_align: Option<StrokeAlign>,
    /// Per-side weights (FRAME and RECTANGLE), each overriding `strokeWeight` on its side.
    #[schemars(range(min = 0))]
    stroke_top_weight: Option<f64>,
    #[schemars(range(min = 0))]
    stroke_right_weight: Option<f64>,
    #[schemars(range(min = 0))]
    stroke_bottom_weight: Option<f64>,
    #[schemars(range(min = 0))]
    stroke_left_weight: Option<f64>,
    /// Shadows, the last painted on top (Figma's `effects`). Ignored on GROUP.
    effects: Option<Vec<Effect>>,
    /// In document order, the first at the back (as in Figma's layer list, read bottom up).
    children: Option<Vec<Node>>,
}

#[derive(JsonSchema)]
#[schemars(inline)]
#[allow(clippy::upper_case_acronyms, dead_code)]
enum StrokeAlign {
    INSIDE,
    OUTSIDE,
    CENTER,
}

/// The `type` member of one node type, and what only that type has.
macro_rules! own_members {
    ($own:ident, $tag:ident, $value:ident { $($(#[$meta:meta])* $field:ident: $ty:ty,)* }) => {
        #[derive(JsonSchema)]
        #[schemars(inline)]
        #[allow(clippy::upper_case_acronyms, dead_code)]
        enum $tag {
            $value,
        }

        #[derive(JsonSchema)]
        #[schemars(inline)]
        #[serde(rename_all = "camelCase")]
        #[allow(dead_code)]
        struct $own {
            r#type: $tag,
            $($(#[$meta])* $field: $ty,)*
        }
    };
}

/// A node type: `allOf` the common members and its own, as openapi.yaml spells it.
macro_rules! node_type {
    ($(#[doc = $doc:literal])* $name:ident, $own:ident) => {
        $(#[doc = $doc])*
        pub struct $name;

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(generator: &mut SchemaGenerator) -> Schema {
                let description = [$($doc),*].map(str::trim).join("\n");
                json_schema!({
                    "description": description,
                    "allOf": [generator.subschema_for::<NodeCommon>(), generator.subschema_for::<$own>()],
                })
            }
        }
    };
}

#[derive(JsonSchema)]
#[schemars(inline)]
#[allow(clippy::upper_case_acronyms, dead_code)]
enum LayoutMode {
    NONE,
    HORIZONTAL,
    VERTICAL,
}

#[derive(JsonSchema)]
#[schemars(inline)]
#[allow(clippy::upper_case_acronyms, non_camel_case_types, dead_code)]
enum PrimaryAlign {
    MIN,
    CENTER,
    MAX,
    SPACE_BETWEEN,
}

#[derive(JsonSchema)]
#[schemars(inline)]
#[allow(clippy::upper_case_acronyms, dead_code)]
enum CounterAlign {
    MIN,
    CENTER,
    MAX,
}

own_members!(FrameOwn, FrameTag, FRAME {
    #[schemars(range(min = 0))]
    corner_radius: Option<f64>,
    /// Per-corner radii, each overriding `cornerRadius` at its corner.
    #[schemars(range(min = 0))]
    top_left_radius: Option<f64>,
    #[schemars(range(min = 0))]
    top_right_radius: Option<f64>,
    #[schemars(range(min = 0))]
    bottom_right_radius: Option<f64>,
    #[schemars(range(min = 0))]
    bottom_left_radius: Option<f64>,
    /// Whether children outside the frame are hidden (Figma's default for a new frame is true).
    clips_content: Option<bool>,
    /// Auto layout (Figma's `layoutMode`): children placed in list order along the axis, the
    /// frame keeping its `width` and `height`; their `x` and `y` are then ignored.
    layout_mode: Option<LayoutMode>,
    /// Auto layout: the gap between children.
    item_spacing: Option<f64>,
    #[schemars(range(min = 0))]
    padding_top: Option<f64>,
    #[schemars(range(min = 0))]
    padding_right: Option<f64>,
    #[schemars(range(min = 0))]
    padding_bottom: Option<f64>,
    #[schemars(range(min = 0))]
    padding_left: Option<f64>,
    /// Auto layout: alignment along the axis (default MIN).
    primary_axis_align_items: Option<PrimaryAlign>,
    /// Auto layout: alignment across the axis (default MIN).
    counter_axis_align_items: Option<CounterAlign>,
});
node_type!(
    /// A frame (`figma.createFrame`); holds children.
    FrameNode, FrameOwn
);

own_members!(GroupOwn, GroupTag, GROUP {});
node_type!(
    /// A group (`figma.group`): its position and size are its children's bounds. A group with
    /// no children cannot exist in Figma; the reference plugin builds an empty GROUP as an
    /// empty frame without fills.
    GroupNode, GroupOwn
);

own_members!(RectangleOwn, RectangleTag, RECTANGLE {
    #[schemars(range(min = 0))]
    corner_radius: Option<f64>,
    /// Per-corner radii, each overriding `cornerRadius` at its corner.
    #[schemars(range(min = 0))]
    top_left_radius: Option<f64>,
    #[schemars(range(min = 0))]
    top_right_radius: Option<f64>,
    #[schemars(range(min = 0))]
    bottom_right_radius: Option<f64>,
    #[schemars(range(min = 0))]
    bottom_left_radius: Option<f64>,
});
node_type!(
    /// A rectangle (`figma.createRectangle`); an image is a rectangle with an IMAGE fill.
    RectangleNode, RectangleOwn
);

own_members!(EllipseOwn, EllipseTag, ELLIPSE {});
node_type!(
    /// An ellipse (`figma.createEllipse`) inscribed in its width and height.
    EllipseNode, EllipseOwn
);

own_members!(LineOwn, LineTag, LINE {});
node_type!(
    /// A line (`figma.createLine`) of length `width` from (`x`, `y`), turned by `rotation`; drawn with its strokes.
    LineNode, LineOwn
);

own_members!(VectorOwn, VectorTag, VECTOR {
    vector_paths: Option<Vec<VectorPath>>,
});
node_type!(
    /// A vector (`figma.createVector`) drawn by SVG path data.
    VectorNode, VectorOwn
);

// Inline enums carry no doc comment: it would become the member's description.
#[derive(JsonSchema)]
#[schemars(inline)]
#[allow(clippy::upper_case_acronyms, dead_code)]
enum TextAlign {
    LEFT,
    CENTER,
    RIGHT,
    JUSTIFIED,
}

#[derive(JsonSchema)]
#[schemars(inline)]
#[allow(clippy::upper_case_acronyms, dead_code)]
enum TextDecoration {
    NONE,
    UNDERLINE,
    STRIKETHROUGH,
}

#[derive(JsonSchema)]
#[schemars(inline)]
#[allow(clippy::upper_case_acronyms, dead_code)]
enum TextCase {
    ORIGINAL,
    UPPER,
    LOWER,
    TITLE,
}

#[derive(JsonSchema)]
#[schemars(inline)]
#[allow(clippy::upper_case_acronyms, non_camel_case_types, dead_code)]
enum TextAutoResize {
    NONE,
    WIDTH_AND_HEIGHT,
    HEIGHT,
}

own_members!(TextOwn, TextTag, TEXT {
    characters: Option<String>,
    #[schemars(range(min = 1))]
    font_size: Option<f64>,
    font_name: Option<FontName>,
    text_align_horizontal: Option<TextAlign>,
    /// How the box follows the text (Figma's `textAutoResize`; default NONE: `width` and
    /// `height` are kept, and lines wrap at the width).
    text_auto_resize: Option<TextAutoResize>,
    line_height: Option<LineHeight>,
    letter_spacing: Option<LetterSpacing>,
    text_decoration: Option<TextDecoration>,
    /// Drawn in this case whatever `characters` is (CSS `text-transform`).
    text_case: Option<TextCase>,
});
node_type!(
    /// A text layer (`figma.createText`); the plugin loads the font first and falls back to Inter Regular when it is not available.
    TextNode, TextOwn
);

own_members!(
    SvgOwn,
    SvgTag,
    SVG {
        #[schemars(length(min = 1, max = 255))]
        image_ref: String,
    }
);
node_type!(
    /// An SVG image the plugin turns into vectors (`figma.createNodeFromSvg`, which makes a frame
    /// of vector layers): `imageRef` names an `image/svg+xml` image of the result, and `width`
    /// and `height`, when given, are the size it is scaled to.
    SvgNode, SvgOwn
);

/// `oneOf` the given types, told apart by `type` (an OpenAPI `discriminator`, which a JSON
/// Schema validator reads as an annotation).
fn one_of_by_type(description: Option<&str>, variants: Vec<(&str, Schema)>) -> Schema {
    let mapping: BTreeMap<&str, Value> =
        variants.iter().map(|(tag, s)| (*tag, s.get("$ref").cloned().unwrap_or(Value::Null))).collect();
    let one_of: Vec<Schema> = variants.into_iter().map(|(_, s)| s).collect();
    let mut schema = json_schema!({
        "oneOf": one_of,
        "discriminator": {"propertyName": "type", "mapping": mapping},
    });
    if let Some(d) = description {
        schema.insert("description".into(), d.into());
    }
    schema
}

/// One node of a result's Figma node tree (SPEC section 4), told apart by `type`.
pub struct Node;

const NODE_DESCRIPTION: &str =
    "One node of a result's Figma node tree (SPEC section 4), told apart by `type`: one of the
eight node types the reference plugin builds with the Figma plugin API. The result route
checks every node's `type`, every `imageRef` (each is in the artifact's images), the
node count (at most 20 000) and the depth (at most 40); the other members are the
worker's contract with the plugin, passed through as the worker wrote them, and a
plugin ignores members it does not know.

Geometry is in pixels: `x`, `y` from the top-left of the parent node (of the canvas
position the plugin chooses for the root), `rotation` in degrees counter-clockwise.
Only FRAME and GROUP hold children in Figma; the reference plugin builds the children of
any other node after it, in the same parent, positioned from that node's top-left.";

impl JsonSchema for Node {
    fn schema_name() -> Cow<'static, str> {
        "Node".into()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        one_of_by_type(
            Some(NODE_DESCRIPTION),
            vec![
                ("FRAME", g.subschema_for::<FrameNode>()),
                ("GROUP", g.subschema_for::<GroupNode>()),
                ("RECTANGLE", g.subschema_for::<RectangleNode>()),
                ("ELLIPSE", g.subschema_for::<EllipseNode>()),
                ("LINE", g.subschema_for::<LineNode>()),
                ("VECTOR", g.subschema_for::<VectorNode>()),
                ("TEXT", g.subschema_for::<TextNode>()),
                ("SVG", g.subschema_for::<SvgNode>()),
            ],
        )
    }
}

/// A fill or stroke.
pub struct Paint;

impl JsonSchema for Paint {
    fn schema_name() -> Cow<'static, str> {
        "Paint".into()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        one_of_by_type(
            Some("A fill or stroke."),
            vec![
                ("SOLID", g.subschema_for::<SolidPaint>()),
                ("IMAGE", g.subschema_for::<ImagePaint>()),
                ("GRADIENT_LINEAR", g.subschema_for::<GradientPaint>()),
            ],
        )
    }
}

#[derive(JsonSchema)]
#[schemars(inline)]
#[allow(clippy::upper_case_acronyms, dead_code)]
enum SolidTag {
    SOLID,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct SolidPaint {
    r#type: SolidTag,
    color: Color,
    #[schemars(range(min = 0, max = 1))]
    opacity: Option<f64>,
}

#[derive(JsonSchema)]
#[schemars(inline)]
#[allow(clippy::upper_case_acronyms, dead_code)]
enum ImageTag {
    IMAGE,
}

#[derive(JsonSchema)]
#[schemars(inline)]
#[allow(clippy::upper_case_acronyms, dead_code)]
enum ScaleMode {
    FILL,
    FIT,
    CROP,
    TILE,
}

/// An image fill; `imageRef` is a key of the result's images (png, jpeg or gif).
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct ImagePaint {
    r#type: ImageTag,
    #[schemars(length(min = 1, max = 255))]
    image_ref: String,
    /// Default FILL.
    scale_mode: Option<ScaleMode>,
    #[schemars(range(min = 0, max = 1))]
    opacity: Option<f64>,
}

#[derive(JsonSchema)]
#[schemars(inline)]
#[allow(clippy::upper_case_acronyms, non_camel_case_types, dead_code)]
enum GradientTag {
    GRADIENT_LINEAR,
}

/// A linear gradient, as Figma's `GradientPaint`: `gradientTransform` maps the node's unit
/// square to the gradient's space, where the colour runs along x from 0 to 1.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct GradientPaint {
    r#type: GradientTag,
    /// Two rows of an affine transform, `[[a, b, c], [d, e, f]]`.
    gradient_transform: [[f64; 3]; 2],
    #[schemars(length(min = 1))]
    gradient_stops: Vec<ColorStop>,
    #[schemars(range(min = 0, max = 1))]
    opacity: Option<f64>,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct ColorStop {
    #[schemars(range(min = 0, max = 1))]
    position: f64,
    color: Rgba,
}

/// RGBA channels from 0 to 1, as Figma's `RGBA`.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct Rgba {
    #[schemars(range(min = 0, max = 1))]
    r: f64,
    #[schemars(range(min = 0, max = 1))]
    g: f64,
    #[schemars(range(min = 0, max = 1))]
    b: f64,
    #[schemars(range(min = 0, max = 1))]
    a: f64,
}

#[derive(JsonSchema)]
#[schemars(inline)]
#[allow(clippy::upper_case_acronyms, non_camel_case_types, dead_code)]
enum EffectType {
    DROP_SHADOW,
    INNER_SHADOW,
}

/// A shadow, as Figma's `DropShadowEffect` and `InnerShadowEffect` (CSS `box-shadow`).
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct Effect {
    r#type: EffectType,
    color: Rgba,
    offset: Vector,
    /// The blur radius, as CSS's.
    #[schemars(range(min = 0))]
    radius: f64,
    spread: Option<f64>,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct Vector {
    x: f64,
    y: f64,
}

#[derive(JsonSchema)]
#[schemars(inline)]
#[allow(clippy::upper_case_acronyms, dead_code)]
enum LineHeightUnit {
    PIXELS,
    PERCENT,
    AUTO,
}

/// Figma's `LineHeight`: `{"unit": "PIXELS", "value": 24}`, or `{"unit": "AUTO"}` (the font's).
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct LineHeight {
    unit: LineHeightUnit,
    value: Option<f64>,
}

#[derive(JsonSchema)]
#[schemars(inline)]
#[allow(clippy::upper_case_acronyms, dead_code)]
enum LetterSpacingUnit {
    PIXELS,
    PERCENT,
}

/// Figma's `LetterSpacing`: `{"unit": "PIXELS", "value": 1.5}`.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct LetterSpacing {
    unit: LetterSpacingUnit,
    value: f64,
}

/// RGB channels from 0 to 1, as Figma's `RGB`.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct Color {
    #[schemars(range(min = 0, max = 1))]
    r: f64,
    #[schemars(range(min = 0, max = 1))]
    g: f64,
    #[schemars(range(min = 0, max = 1))]
    b: f64,
}

#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct FontName {
    #[schemars(example = &"Inter")]
    family: String,
    #[schemars(example = &"Regular")]
    style: String,
}

#[derive(JsonSchema)]
#[schemars(inline)]
#[allow(clippy::upper_case_acronyms, dead_code)]
enum WindingRule {
    NONZERO,
    EVENODD,
    NONE,
}

#[derive(JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct VectorPath {
    /// Default NONZERO.
    winding_rule: Option<WindingRule>,
    /// SVG path data, as Figma's `VectorPath.data` (`M 0 0 L 10 10 Z`).
    data: String,
}

// --- the artifact --------------------------------------------------------------------------------

/// `result` for a completed job, `failure` for a failed one.
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum ArtifactKind {
    Result,
    Failure,
}

#[derive(JsonSchema)]
#[schemars(inline)]
#[allow(dead_code)]
enum ImageMime {
    #[serde(rename = "image/png")]
    Png,
    #[serde(rename = "image/jpeg")]
    Jpeg,
    #[serde(rename = "image/gif")]
    Gif,
    #[serde(rename = "image/svg+xml")]
    Svg,
}

/// One image of the result: where the worker put it, and what it is.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct ArtifactImage {
    /// The object key, under the job's prefix `code2des/{code2des_id}/{attempt}/` (no `..`).
    #[schemars(length(min = 1, max = 1024))]
    key: String,
    /// Raster images at most 4096 px per side; png, jpeg and gif become image fills, svg an SVG node.
    mime_type: ImageMime,
}

/// The result artifact (SPEC section 4): written by the worker under the manifest's
/// `result_prefix`; its key is the webhook's `result_url`. The result route also checks what a
/// schema cannot say: `code2des_id`, `attempt` and `nonce` equal the job's, every `imageRef` of
/// the document is a key of `images`, every image key is under the job's prefix and its bytes
/// are the declared type, at most 20 000 nodes nested at most 40 deep, 512 images, 2 MiB of
/// artifact, 3 MiB per image. `code2des-worker validate` runs those checks on a local file.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct ResultArtifact {
    /// The protocol version, 1.
    #[schemars(range(min = 1, max = 1))]
    version: u32,
    kind: ArtifactKind,
    /// The manifest's.
    code2des_id: String,
    /// The manifest's.
    #[schemars(range(min = 1))]
    attempt: i32,
    /// The manifest's.
    #[schemars(length(min = 1, max = 255))]
    nonce: String,
    #[schemars(range(min = 0))]
    warning_count: Option<i64>,
    /// The Figma node tree; required for `result`, absent or null for `failure`.
    document: Option<Node>,
    /// The images the document uses, by `imageRef`.
    images: Option<BTreeMap<String, ArtifactImage>>,
    /// The fidelity report: what the conversion could not reproduce exactly, and where. When
    /// present, `warning_count` is its length.
    #[schemars(length(max = 1000))]
    warnings: Option<Vec<ArtifactWarning>>,
}

/// The fixed list of warning codes (docs/WORKER.md, "Warnings").
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum WarningCode {
    FontSubstituted,
    UnsupportedCss,
    ImageConverted,
    ImageTooLarge,
    ImageUnavailable,
    PseudoElement,
    CanvasSkipped,
    IframeSkipped,
    VideoSkipped,
    NodeLimit,
}

/// One deterministic conversion warning.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct ArtifactWarning {
    code: WarningCode,
    /// For the user.
    #[schemars(length(min = 1, max = 1000))]
    message: String,
    /// The element's DOM path in the capture (`body > main > div.card:nth-child(2)`).
    #[schemars(length(max = 2000))]
    path: Option<String>,
    /// The `name` of the document node it concerns.
    #[schemars(length(max = 1000))]
    node: Option<String>,
    /// Where that node is: its child indices from the document root (`[]` is the root, `[2, 0]`
    /// the first child of the root's third), so a plugin can select it.
    #[schemars(length(max = 40))]
    indices: Option<Vec<u32>>,
}

// --- the webhook ---------------------------------------------------------------------------------

/// `{"percent": 0-100, "stage": "1-64 characters"}`.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct ProgressReport {
    #[schemars(range(min = 0, max = 100))]
    percent: u8,
    /// What the worker is doing, for people (`rendering`).
    #[schemars(length(min = 1, max = 64))]
    stage: String,
}

/// The body of `POST /code2des/webhook` (SPEC sections 4 and 7), signed with Standard Webhooks
/// (docs/WORKER.md). `status` tells the three reports apart.
#[derive(JsonSchema)]
#[serde(tag = "status", rename_all = "lowercase")]
#[allow(dead_code)]
pub enum WebhookReport {
    /// Progress, any number of times while the attempt is processing.
    Processing {
        code2des_id: String,
        #[schemars(range(min = 1))]
        attempt: i32,
        #[schemars(length(min = 1, max = 255))]
        nonce: String,
        progress: ProgressReport,
    },
    /// The job is done: its artifact is at `result_url`.
    Completed {
        code2des_id: String,
        #[schemars(range(min = 1))]
        attempt: i32,
        #[schemars(length(min = 1, max = 255))]
        nonce: String,
        /// `s3://{bucket}/code2des/{code2des_id}/{attempt}/…` of this job, no `..`.
        #[schemars(length(max = 1000))]
        result_url: String,
        #[schemars(range(min = 0))]
        warning_count: Option<i32>,
    },
    /// The job failed; a failure artifact is optional.
    Failed {
        code2des_id: String,
        #[schemars(range(min = 1))]
        attempt: i32,
        #[schemars(length(min = 1, max = 255))]
        nonce: String,
        #[schemars(length(max = 1000))]
        result_url: Option<String>,
        #[schemars(range(min = 0))]
        warning_count: Option<i32>,
        /// Stored with control characters stripped, cut to 2 000 characters.
        error_message: Option<String>,
    },
}

// --- generation ----------------------------------------------------------------------------------

/// The members of the node tree (openapi.yaml's `Node` and what it refers to) are absent when
/// unused, never null: the plugin reads them so. Option members are generated as "T or null";
/// here they become T. Numbers lose schemars' `format: double`, which neither JSON Schema nor
/// OpenAPI needs for a JSON number.
fn absent_not_null(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::Array(values)) = m.get("enum") {
                let kept: Vec<Value> = values.iter().filter(|x| !x.is_null()).cloned().collect();
                m.insert("enum".into(), Value::Array(kept));
            }
            if let Some(Value::Array(types)) = m.get("type") {
                let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                m.insert("type".into(), if kept.len() == 1 { kept[0].clone() } else { Value::Array(kept) });
            }
            if let Some(Value::Array(any)) = m.get("anyOf") {
                let kept: Vec<Value> = any.iter().filter(|s| s.get("type") != Some(&"null".into())).cloned().collect();
                if kept.len() == 1 {
                    m.remove("anyOf");
                    if let Value::Object(inner) = &kept[0] {
                        for (k, x) in inner {
                            m.insert(k.clone(), x.clone());
                        }
                    }
                }
            }
            for x in m.values_mut() {
                absent_not_null(x);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(absent_not_null),
        _ => {}
    }
}

fn strip_double_format(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if m.get("format").and_then(Value::as_str).is_some_and(|f| f == "double" || f == "float") {
                m.remove("format");
            }
            m.values_mut().for_each(strip_double_format);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_double_format),
        _ => {}
    }
}

/// The names of the node tree's definitions (openapi.yaml's components of the same names).
pub const NODE_DEFINITIONS: &[&str] = &[
    "Node",
    "NodeType",
    "NodeCommon",
    "FrameNode",
    "GroupNode",
    "RectangleNode",
    "EllipseNode",
    "LineNode",
    "VectorNode",
    "TextNode",
    "SvgNode",
    "Paint",
    "SolidPaint",
    "ImagePaint",
    "GradientPaint",
    "ColorStop",
    "Rgba",
    "Effect",
    "Vector",
    "LineHeight",
    "LetterSpacing",
    "Color",
    "FontName",
    "VectorPath",
];

fn root<T: JsonSchema>(id: &str) -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut v = generator.into_root_schema_for::<T>().to_value();
    strip_double_format(&mut v);
    if let Some(Value::Object(defs)) = v.get_mut("$defs") {
        for name in NODE_DEFINITIONS {
            if let Some(d) = defs.get_mut(*name) {
                absent_not_null(d);
            }
        }
    }
    if let Value::Object(m) = &mut v {
        m.insert("$id".into(), format!("https://code2des.invalid/schemas/{id}").into());
    }
    v
}

/// Every schema of `schemas/`, by file name: the manifest, the result artifact, the webhook body.
pub fn schemas() -> Vec<(&'static str, Value)> {
    vec![
        ("manifest.schema.json", root::<Manifest>("manifest.schema.json")),
        ("artifact.schema.json", root::<ResultArtifact>("artifact.schema.json")),
        ("webhook.schema.json", root::<WebhookReport>("webhook.schema.json")),
    ]
}
