//! A result's node tree (SPEC section 4, openapi.yaml's `Node`: a test proves the two
//! identical). The result route reads only each node's `type`, `children` and `imageRef`s
//! ([`crate::domain::artifact`]); every other member is the worker's contract with the plugin,
//! passed through as written, so the types below describe it for the schema and are not read.

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde_json::Value;

wire_enum! {
    /// The node types the reference plugin builds with the Figma plugin API.
    #[allow(clippy::upper_case_acronyms)]
    pub enum NodeType {
        FRAME = "FRAME",
        GROUP = "GROUP",
        RECTANGLE = "RECTANGLE",
        ELLIPSE = "ELLIPSE",
        LINE = "LINE",
        VECTOR = "VECTOR",
        TEXT = "TEXT",
        SVG = "SVG",
    }
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
