//! A result's node tree (SPEC section 4, openapi.yaml's `Node`, generated from these types):
//! what the converter builds, the worker writes, the result route reads and checks, and the
//! plugin builds with the Figma plugin API.
//!
//! A node is one struct, [`Node`]: every member any node type has, each optional and left out
//! when unset (a plugin that predates a member never sees it). Which types read which members
//! is [`owners`]; the schema is told apart by `type` from it ([`NodeSchema`]), so openapi.yaml
//! and the TypeScript client keep one definition per node type.

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The most nodes one document holds (the result route refuses more).
pub const MAX_NODES: usize = 20_000;
/// The deepest a node may be nested, the root at depth 1.
pub const MAX_DEPTH: usize = 40;
/// The longest a component's `id` may be (in characters).
pub const MAX_COMPONENT_ID: usize = 64;

wire_enum! {
    /// The node types the reference plugin builds with the Figma plugin API.
    #[allow(clippy::upper_case_acronyms)]
    #[derive(Default)]
    pub enum NodeType {
        #[default]
        FRAME = "FRAME",
        GROUP = "GROUP",
        RECTANGLE = "RECTANGLE",
        ELLIPSE = "ELLIPSE",
        LINE = "LINE",
        VECTOR = "VECTOR",
        TEXT = "TEXT",
        SVG = "SVG",
        COMPONENT = "COMPONENT",
        INSTANCE = "INSTANCE",
    }
}

impl NodeType {
    /// The schema's definition of a node of this type (`FrameNode`), and what it is.
    fn definition(self) -> (&'static str, &'static str) {
        match self {
            Self::FRAME => ("FrameNode", "A frame (`figma.createFrame`); holds children."),
            Self::GROUP => (
                "GroupNode",
                "A group (`figma.group`): its position and size are its children's bounds. A group with no children cannot exist in Figma; the reference plugin builds an empty GROUP as an empty frame without fills.",
            ),
            Self::RECTANGLE => {
                ("RectangleNode", "A rectangle (`figma.createRectangle`); an image is a rectangle with an IMAGE fill.")
            }
            Self::ELLIPSE => ("EllipseNode", "An ellipse (`figma.createEllipse`) inscribed in its width and height."),
            Self::LINE => (
                "LineNode",
                "A line (`figma.createLine`) of length `width` from (`x`, `y`), turned by `rotation`; drawn with its strokes.",
            ),
            Self::VECTOR => ("VectorNode", "A vector (`figma.createVector`) drawn by SVG path data."),
            Self::TEXT => (
                "TextNode",
                "A text layer (`figma.createText`); the plugin loads the font first and falls back to Inter Regular when it is not available.",
            ),
            Self::COMPONENT => (
                "ComponentNode",
                "A component (`figma.createComponent`): a frame, with everything a FRAME has, that its instances copy. The converter makes one of a structure repeated three times or more among siblings (cards, rows, list items), in place of the first of them; `id` names it for its instances.",
            ),
            Self::INSTANCE => (
                "InstanceNode",
                "An instance of a component (`component.createInstance()`): `componentId` names a COMPONENT that comes before it in the document (depth first). Its children are the component's, in the same order and of the same types, as this instance shows them: what differs is an override (text and its runs, fills and images, names, the component of a nested INSTANCE, swapped (`swapComponent`), and the sizes and positions that follow from them). A reader that does not know components can draw it as a FRAME.",
            ),
            Self::SVG => (
                "SvgNode",
                "An SVG image the plugin turns into vectors (`figma.createNodeFromSvg`, which makes a frame of vector layers): `imageRef` names an `image/svg+xml` image of the result, and `width` and `height`, when given, are the size it is scaled to.",
            ),
        }
    }
}

/// The node types that read a member, for the members only some types have; every other member
/// is common to all ([`NodeSchema`] splits the schema by this, and a test holds every name here
/// to a member of [`Node`]).
pub fn owners(member: &str) -> Option<&'static [NodeType]> {
    use NodeType::*;
    Some(match member {
        "cornerRadius" | "topLeftRadius" | "topRightRadius" | "bottomRightRadius" | "bottomLeftRadius" => {
            &[FRAME, RECTANGLE, COMPONENT, INSTANCE]
        }
        "clipsContent"
        | "layoutMode"
        | "itemSpacing"
        | "paddingTop"
        | "paddingRight"
        | "paddingBottom"
        | "paddingLeft"
        | "primaryAxisAlignItems"
        | "counterAxisAlignItems"
        | "gridRowCount"
        | "gridColumnCount"
        | "gridRowGap"
        | "gridColumnGap"
        | "gridRowSizes"
        | "gridColumnSizes" => &[FRAME, COMPONENT, INSTANCE],
        "styles" | "components" => &[FRAME],
        "componentId" => &[INSTANCE],
        "vectorPaths" => &[VECTOR],
        "characters"
        | "fontSize"
        | "fontName"
        | "textAlignHorizontal"
        | "textAutoResize"
        | "paragraphIndent"
        | "lineHeight"
        | "letterSpacing"
        | "textDecoration"
        | "textDecorationStyle"
        | "textDecorationOffset"
        | "textDecorationThickness"
        | "textDecorationColor"
        | "textDecorationSkipInk"
        | "textCase"
        | "hyperlink"
        | "segments"
        | "textStyleId" => &[TEXT],
        "imageRef" => &[SVG],
        _ => return None,
    })
}

/// Members a node type requires beyond `type`.
fn required_by(t: NodeType) -> &'static [&'static str] {
    match t {
        NodeType::SVG => &["imageRef"],
        NodeType::COMPONENT => &["id"],
        NodeType::INSTANCE => &["componentId"],
        _ => &[],
    }
}

/// One node of the tree. Geometry is in pixels: `x`, `y` from the top-left of the parent node,
/// `rotation` in degrees counter-clockwise. Only FRAME and GROUP hold children in Figma; the
/// reference plugin builds the children of any other node after it, in the same parent,
/// positioned from that node's top-left.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
// Its schema is never a definition of its own: [`NodeSchema`] splits it by type.
#[schemars(rename = "NodeMembers")]
pub struct Node {
    #[serde(rename = "type")]
    pub kind: NodeType,
    /// The layer name (default the type's, as Figma names new layers).
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub x: f64,
    #[serde(default)]
    pub y: f64,
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub width: f64,
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub height: f64,
    /// Degrees, counter-clockwise (as Figma's `rotation`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rotation: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1))]
    pub opacity: Option<f64>,
    /// How the node blends with what is below it (Figma's `blendMode`, CSS `mix-blend-mode`;
    /// default PASS_THROUGH on frames and groups, NORMAL on other nodes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blend_mode: Option<BlendMode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visible: Option<bool>,
    /// Ignored on GROUP (a Figma group has no fills of its own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fills: Option<Vec<Paint>>,
    /// The `id` of the document's PAINT style (`styles`, on the root) that `fills` is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fill_style_id: Option<String>,
    /// Ignored on GROUP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strokes: Option<Vec<Paint>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub stroke_weight: Option<f64>,
    /// Per-side weights (FRAME and RECTANGLE), each overriding `strokeWeight` on its side.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub stroke_top_weight: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub stroke_right_weight: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub stroke_bottom_weight: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub stroke_left_weight: Option<f64>,
    /// Where the strokes lie against the outline (default CENTER, as Figma's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stroke_align: Option<StrokeAlign>,
    /// Dashed strokes (Figma's `dashPattern`): alternating dash and gap lengths in pixels, from
    /// the outline's start; absent or empty, the strokes are solid (CSS `border-style: dashed`
    /// and `dotted`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(inner(range(min = 0)), length(max = 16))]
    pub dash_pattern: Option<Vec<f64>>,
    /// The ends of the strokes' dashes (Figma's `strokeCap`; default NONE): ROUND with a
    /// `dashPattern` of zero-length dashes draws round dots (CSS `dotted`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stroke_cap: Option<StrokeCap>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub corner_radius: Option<f64>,
    /// Per-corner radii, each overriding `cornerRadius` at its corner.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub top_left_radius: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub top_right_radius: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub bottom_right_radius: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub bottom_left_radius: Option<f64>,
    /// Whether children outside the frame are hidden (Figma's default for a new frame is true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clips_content: Option<bool>,
    /// Shadows, the last painted on top (Figma's `effects`). Ignored on GROUP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effects: Option<Vec<Effect>>,
    /// Auto layout (Figma's `layoutMode`): children placed in list order along the axis, the
    /// frame keeping its `width` and `height` (unless it HUGs); their `x` and `y` are then
    /// ignored, but for an ABSOLUTE child's (`layoutPositioning`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout_mode: Option<LayoutMode>,
    /// Auto layout: the gap between children.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item_spacing: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub padding_top: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub padding_right: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub padding_bottom: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub padding_left: Option<f64>,
    /// Auto layout: alignment along the axis (default MIN).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary_axis_align_items: Option<PrimaryAlign>,
    /// Auto layout: alignment across the axis (default MIN).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counter_axis_align_items: Option<CounterAlign>,
    /// Auto layout, HORIZONTAL only: WRAP breaks the children into rows (tracks) where the next
    /// one would pass the frame's width inside its padding (Figma's `layoutWrap`; CSS
    /// `flex-wrap: wrap`). Each row is as tall as its tallest child, the children aligned in it
    /// by `counterAxisAlignItems` and along it by `primaryAxisAlignItems`; the rows stack from
    /// the top padding, `counterAxisSpacing` apart. Default NO_WRAP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout_wrap: Option<LayoutWrap>,
    /// Auto layout with WRAP: the gap between rows (Figma's `counterAxisSpacing`; CSS
    /// `row-gap`). Absent: `itemSpacing`, as Figma's.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub counter_axis_spacing: Option<f64>,
    /// Grid (`layoutMode: GRID`, as Figma's): the number of rows and columns, the gaps between
    /// them, and each track's size; the children are placed by their `grid…AnchorIndex` and
    /// span, their `x` and `y` then ignored.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub grid_row_count: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub grid_column_count: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub grid_row_gap: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub grid_column_gap: Option<f64>,
    /// Top to bottom, `gridRowCount` of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid_row_sizes: Option<Vec<GridTrack>>,
    /// Left to right, `gridColumnCount` of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid_column_sizes: Option<Vec<GridTrack>>,
    /// A child of an auto layout frame (`layoutMode` HORIZONTAL or VERTICAL): ABSOLUTE keeps
    /// it at its `x` and `y`, out of the flow (Figma's `layoutPositioning`; CSS `position:
    /// absolute` inside a flex container, and what the frame draws of itself). Default AUTO.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout_positioning: Option<LayoutPositioning>,
    /// How the node's width and height follow the layout (Figma's `layoutSizingHorizontal`
    /// and `layoutSizingVertical`; default FIXED): HUG on an auto layout frame or a TEXT node,
    /// its content's size (CSS `height: auto`, `inline-flex`); FILL on a child of an auto layout
    /// frame, the room its parent leaves it (CSS `flex-grow`, `align-self: stretch`). `width`
    /// and `height` are the size either gives as the page was laid out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout_sizing_horizontal: Option<LayoutSizing>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout_sizing_vertical: Option<LayoutSizing>,
    /// A child of a GRID frame: its cell (0-based row and column) and how many tracks it spans.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid_row_anchor_index: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid_column_anchor_index: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub grid_row_span: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub grid_column_span: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub characters: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub font_size: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub font_name: Option<FontName>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_align_horizontal: Option<TextAlign>,
    /// How the box follows the text (Figma's `textAutoResize`; default NONE: `width` and
    /// `height` are kept, and lines wrap at the width).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_auto_resize: Option<TextAutoResize>,
    /// How far the first line of each paragraph of the text starts right of the box's left
    /// edge, in px (Figma's `paragraphIndent`; CSS `text-indent`, and the room an inline box's
    /// padding makes before a text that opens with it). Absent: 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub paragraph_indent: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_height: Option<LineHeight>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub letter_spacing: Option<LetterSpacing>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_decoration: Option<TextDecoration>,
    /// The decoration line's style, offset, thickness, colour and whether it skips the glyphs'
    /// descenders (Figma's `textDecorationStyle`, … `textDecorationSkipInk`; CSS
    /// `text-decoration-style`, `text-underline-offset`, `text-decoration-thickness`,
    /// `text-decoration-color`, `text-decoration-skip-ink`). Absent: Figma's defaults (SOLID,
    /// AUTO, AUTO, the text's colour, true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_decoration_style: Option<TextDecorationStyle>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_decoration_offset: Option<DecorationLength>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_decoration_thickness: Option<DecorationLength>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_decoration_color: Option<Rgba>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_decoration_skip_ink: Option<bool>,
    /// Drawn in this case whatever `characters` is (CSS `text-transform`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_case: Option<TextCase>,
    /// The whole text is a link (Figma's `hyperlink`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hyperlink: Option<Hyperlink>,
    /// Differently styled runs of `characters`, as Figma's `getStyledTextSegments` lists them:
    /// in order, covering the text from 0 to its length, each with its whole style. Absent
    /// when one style (the node's own members) covers the text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segments: Option<Vec<TextSegment>>,
    /// The `id` of the document's TEXT style (`styles`, on the root) that the node's type is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_style_id: Option<String>,
    /// On the root: every colour and type the document draws, as Figma's local styles, named
    /// by role, the most used first ("Text/Heading 1", "Color/Link"); nodes and segments refer
    /// to them by `id`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub styles: Option<Vec<Style>>,
    /// On the root: COMPONENTs that stand beside the screen, not in it, each placed from the
    /// root's top-left (to its right). The screen's instances swap them in where a repeated
    /// structure differs in what no override can change (each card's own icon): a nested
    /// INSTANCE of one of them in the component, and in each instance an INSTANCE of its own.
    /// Built before the screen, as a COMPONENT comes before its instances.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Vec<NodeSchema>>")]
    pub components: Option<Vec<Node>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_paths: Option<Vec<VectorPath>>,
    /// The node's name in the document, unique in it: a COMPONENT's, for its instances; any
    /// node's, for the NODE hyperlinks that go to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = MAX_COMPONENT_ID))]
    pub id: Option<String>,
    /// An INSTANCE's component: the `id` of a COMPONENT before it in the document.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = MAX_COMPONENT_ID))]
    pub component_id: Option<String>,
    /// A key of the result's images.
    // Absent is none, but null is no key: refused, as an image paint's null `imageRef` is.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    #[schemars(length(min = 1, max = crate::artifact::MAX_IMAGE_REF))]
    pub image_ref: Option<String>,
    /// In document order, the first at the back (as in Figma's layer list, read bottom up).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Vec<NodeSchema>>")]
    pub children: Option<Vec<Node>>,
    /// What the node's maker keeps beside it while it builds the tree; never written or read.
    #[serde(skip)]
    #[schemars(skip)]
    pub maker: Maker,
}

wire_enum! {
    #[schemars(inline)]
    #[allow(clippy::upper_case_acronyms)]
    pub enum HyperlinkType {
        URL = "URL",
        NODE = "NODE",
    }
}

/// Figma's `HyperlinkTarget`: a URL (`http`, `https` or `mailto`), or a node of the document:
/// a NODE hyperlink's `value` is the `id` of a node of the same document (the plugin links to
/// the Figma node it built of it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Hyperlink {
    #[serde(rename = "type")]
    pub kind: HyperlinkType,
    #[schemars(length(min = 1, max = MAX_HYPERLINK))]
    pub value: String,
}

/// The longest hyperlink value, in characters.
pub const MAX_HYPERLINK: usize = 2048;

/// A run of a TEXT node's characters with one style (Figma's `StyledTextSegment`, set with the
/// `setRange*` calls). `start` and `end` count UTF-16 code units, as Figma and JavaScript do;
/// `end` is exclusive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TextSegment {
    pub start: u32,
    pub end: u32,
    pub font_name: FontName,
    #[schemars(range(min = 1))]
    pub font_size: f64,
    pub fills: Vec<Paint>,
    pub text_decoration: TextDecoration,
    /// As a TEXT node's members of the same names (absent: Figma's defaults).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_decoration_style: Option<TextDecorationStyle>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_decoration_offset: Option<DecorationLength>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_decoration_thickness: Option<DecorationLength>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_decoration_color: Option<Rgba>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_decoration_skip_ink: Option<bool>,
    pub text_case: TextCase,
    pub letter_spacing: LetterSpacing,
    pub line_height: LineHeight,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hyperlink: Option<Hyperlink>,
    /// The styles (the root's `styles`) these characters' fills and type are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fill_style_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_style_id: Option<String>,
}

wire_enum! {
    #[schemars(inline)]
    #[allow(clippy::upper_case_acronyms)]
    pub enum StyleType {
        PAINT = "PAINT",
        TEXT = "TEXT",
    }
}

/// A shared style of the document: a PAINT style (`paints`) or a TEXT style (the type members),
/// as Figma's local styles; `id` is the document's own, for `fillStyleId` and `textStyleId`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Style {
    #[schemars(length(min = 1, max = 64))]
    pub id: String,
    /// Slash-separated, as Figma groups styles: "Text/Body", "Color/Link".
    #[schemars(length(min = 1, max = 255))]
    pub name: String,
    #[serde(rename = "type")]
    pub kind: StyleType,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paints: Option<Vec<Paint>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub font_name: Option<FontName>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub font_size: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_height: Option<LineHeight>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub letter_spacing: Option<LetterSpacing>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_case: Option<TextCase>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_decoration: Option<TextDecoration>,
}

/// A member that may be absent but not null.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    String::deserialize(d).map(Some)
}

/// The converter's notes on a node it made (see [`Node::maker`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Maker {
    /// The DOM node it was made from (for warnings and auto layout).
    pub dom: Option<usize>,
    /// It is the box of a flex or grid item of its parent's element.
    pub flex_item: bool,
}

wire_enum! {
    #[schemars(inline)]
    #[allow(clippy::upper_case_acronyms)]
    pub enum GridTrackType {
        FIXED = "FIXED",
        FLEX = "FLEX",
        HUG = "HUG",
    }
}

/// Figma's `GridTrackSize`: a FIXED track of `value` px, a FLEX track taking `value` shares of
/// the free room (CSS `fr`), or a HUG track as large as its content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GridTrack {
    #[serde(rename = "type")]
    pub kind: GridTrackType,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub value: Option<f64>,
}

impl Node {
    /// This node and every node under it, depth first in document order, each with its depth
    /// (the root's is 1): a node's `components` (the root's, beside the screen) before its
    /// children, as the plugin builds them. Without recursion: a tree read from the wire may be
    /// as deep as the JSON parser allows.
    pub fn walk(&self) -> impl Iterator<Item = (&Node, usize)> {
        let mut stack = vec![(self, 1)];
        std::iter::from_fn(move || {
            let (n, depth) = stack.pop()?;
            stack.extend(n.children.as_deref().unwrap_or_default().iter().rev().map(|c| (c, depth + 1)));
            stack.extend(n.components.as_deref().unwrap_or_default().iter().rev().map(|c| (c, depth + 1)));
            Some((n, depth))
        })
    }

    /// Every `imageRef` the node uses, with its path from the node (`fills[0].imageRef`), in
    /// the order of its members: fills, its own, strokes, the segments' fills.
    pub fn image_refs(&self) -> impl Iterator<Item = (String, &str)> {
        let fills = paint_refs(String::new(), "fills", self.fills.as_deref().unwrap_or_default());
        let own = self.image_ref.iter().map(|r| ("imageRef".to_owned(), r.as_str()));
        let segments = self
            .segments
            .iter()
            .flatten()
            .enumerate()
            .flat_map(|(i, seg)| paint_refs(format!("segments[{i}]."), "fills", &seg.fills));
        let strokes = paint_refs(String::new(), "strokes", self.strokes.as_deref().unwrap_or_default());
        fills.chain(own).chain(strokes).chain(segments)
    }
}

/// The `imageRef` of every IMAGE paint of a list, with its path (`{at}{member}[i].imageRef`).
fn paint_refs<'a>(at: String, member: &'static str, list: &'a [Paint]) -> impl Iterator<Item = (String, &'a str)> {
    list.iter().enumerate().filter_map(move |(i, p)| match p {
        Paint::Image { image_ref, .. } => Some((format!("{at}{member}[{i}].imageRef"), image_ref.as_str())),
        _ => None,
    })
}
wire_enum! {
    #[schemars(inline)]
    #[allow(clippy::upper_case_acronyms)]
    pub enum StrokeAlign {
        INSIDE = "INSIDE",
        OUTSIDE = "OUTSIDE",
        CENTER = "CENTER",
    }
}

wire_enum! {
    #[schemars(inline)]
    #[allow(clippy::upper_case_acronyms)]
    pub enum LayoutMode {
        NONE = "NONE",
        HORIZONTAL = "HORIZONTAL",
        VERTICAL = "VERTICAL",
        GRID = "GRID",
    }
}

wire_enum! {
    #[schemars(inline)]
    #[allow(clippy::upper_case_acronyms, non_camel_case_types)]
    pub enum LayoutWrap {
        NO_WRAP = "NO_WRAP",
        WRAP = "WRAP",
    }
}

wire_enum! {
    #[schemars(inline)]
    #[allow(clippy::upper_case_acronyms)]
    pub enum LayoutPositioning {
        AUTO = "AUTO",
        ABSOLUTE = "ABSOLUTE",
    }
}

wire_enum! {
    #[schemars(inline)]
    #[allow(clippy::upper_case_acronyms)]
    pub enum LayoutSizing {
        FIXED = "FIXED",
        HUG = "HUG",
        FILL = "FILL",
    }
}

wire_enum! {
    #[schemars(inline)]
    #[allow(clippy::upper_case_acronyms, non_camel_case_types)]
    pub enum PrimaryAlign {
        MIN = "MIN",
        CENTER = "CENTER",
        MAX = "MAX",
        SPACE_BETWEEN = "SPACE_BETWEEN",
    }
}

wire_enum! {
    #[schemars(inline)]
    #[allow(clippy::upper_case_acronyms)]
    pub enum CounterAlign {
        MIN = "MIN",
        CENTER = "CENTER",
        MAX = "MAX",
    }
}

// Inline enums carry no doc comment: it would become the member's description.
wire_enum! {
    #[schemars(inline)]
    #[allow(clippy::upper_case_acronyms)]
    pub enum TextAlign {
        LEFT = "LEFT",
        CENTER = "CENTER",
        RIGHT = "RIGHT",
        JUSTIFIED = "JUSTIFIED",
    }
}

wire_enum! {
    #[schemars(inline)]
    #[allow(clippy::upper_case_acronyms)]
    pub enum TextDecoration {
        NONE = "NONE",
        UNDERLINE = "UNDERLINE",
        STRIKETHROUGH = "STRIKETHROUGH",
    }
}

wire_enum! {
    #[schemars(inline)]
    #[allow(clippy::upper_case_acronyms)]
    pub enum TextDecorationStyle {
        SOLID = "SOLID",
        WAVY = "WAVY",
        DOTTED = "DOTTED",
    }
}

/// Figma's `TextDecorationOffset` and `TextDecorationThickness`: `{"unit": "PIXELS", "value":
/// 2}`, or `{"unit": "AUTO"}` (the font's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DecorationLength {
    pub unit: LineHeightUnit,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
}

wire_enum! {
    #[schemars(inline)]
    #[allow(clippy::upper_case_acronyms)]
    pub enum StrokeCap {
        NONE = "NONE",
        ROUND = "ROUND",
        SQUARE = "SQUARE",
    }
}

wire_enum! {
    #[schemars(inline)]
    #[allow(clippy::upper_case_acronyms, non_camel_case_types)]
    pub enum BlendMode {
        PASS_THROUGH = "PASS_THROUGH",
        NORMAL = "NORMAL",
        DARKEN = "DARKEN",
        MULTIPLY = "MULTIPLY",
        LINEAR_BURN = "LINEAR_BURN",
        COLOR_BURN = "COLOR_BURN",
        LIGHTEN = "LIGHTEN",
        SCREEN = "SCREEN",
        LINEAR_DODGE = "LINEAR_DODGE",
        COLOR_DODGE = "COLOR_DODGE",
        OVERLAY = "OVERLAY",
        SOFT_LIGHT = "SOFT_LIGHT",
        HARD_LIGHT = "HARD_LIGHT",
        DIFFERENCE = "DIFFERENCE",
        EXCLUSION = "EXCLUSION",
        HUE = "HUE",
        SATURATION = "SATURATION",
        COLOR = "COLOR",
        LUMINOSITY = "LUMINOSITY",
    }
}

wire_enum! {
    #[schemars(inline)]
    #[allow(clippy::upper_case_acronyms)]
    pub enum TextCase {
        ORIGINAL = "ORIGINAL",
        UPPER = "UPPER",
        LOWER = "LOWER",
        TITLE = "TITLE",
    }
}

wire_enum! {
    #[schemars(inline)]
    #[allow(clippy::upper_case_acronyms, non_camel_case_types)]
    pub enum TextAutoResize {
        NONE = "NONE",
        WIDTH_AND_HEIGHT = "WIDTH_AND_HEIGHT",
        HEIGHT = "HEIGHT",
    }
}

wire_enum! {
    #[schemars(inline)]
    #[allow(clippy::upper_case_acronyms)]
    pub enum ScaleMode {
        FILL = "FILL",
        FIT = "FIT",
        CROP = "CROP",
        TILE = "TILE",
    }
}

/// A fill or stroke, told apart by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type")]
pub enum Paint {
    /// A solid colour.
    #[serde(rename = "SOLID")]
    Solid {
        color: Color,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[schemars(range(min = 0, max = 1))]
        opacity: Option<f64>,
    },
    /// An image fill; `imageRef` is a key of the result's images (png, jpeg or gif).
    #[serde(rename = "IMAGE", rename_all = "camelCase")]
    Image {
        #[schemars(length(min = 1, max = crate::artifact::MAX_IMAGE_REF))]
        image_ref: String,
        /// Default FILL.
        #[serde(skip_serializing_if = "Option::is_none")]
        scale_mode: Option<ScaleMode>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[schemars(range(min = 0, max = 1))]
        opacity: Option<f64>,
    },
    /// A linear gradient, as Figma's `GradientPaint`: `gradientTransform` maps the node's unit
    /// square to the gradient's space, where the colour runs along x from 0 to 1.
    #[serde(rename = "GRADIENT_LINEAR", rename_all = "camelCase")]
    GradientLinear {
        /// Two rows of an affine transform, `[[a, b, c], [d, e, f]]`.
        gradient_transform: [[f64; 3]; 2],
        #[schemars(length(min = 1))]
        gradient_stops: Vec<ColorStop>,
        #[serde(skip_serializing_if = "Option::is_none")]
        #[schemars(range(min = 0, max = 1))]
        opacity: Option<f64>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ColorStop {
    #[schemars(range(min = 0, max = 1))]
    pub position: f64,
    pub color: Rgba,
}

/// RGBA channels from 0 to 1, as Figma's `RGBA`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Rgba {
    #[schemars(range(min = 0, max = 1))]
    pub r: f64,
    #[schemars(range(min = 0, max = 1))]
    pub g: f64,
    #[schemars(range(min = 0, max = 1))]
    pub b: f64,
    #[schemars(range(min = 0, max = 1))]
    pub a: f64,
}

/// RGB channels from 0 to 1, as Figma's `RGB`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Color {
    #[schemars(range(min = 0, max = 1))]
    pub r: f64,
    #[schemars(range(min = 0, max = 1))]
    pub g: f64,
    #[schemars(range(min = 0, max = 1))]
    pub b: f64,
}

wire_enum! {
    #[schemars(inline)]
    #[allow(clippy::upper_case_acronyms, non_camel_case_types)]
    pub enum EffectType {
        DROP_SHADOW = "DROP_SHADOW",
        INNER_SHADOW = "INNER_SHADOW",
        LAYER_BLUR = "LAYER_BLUR",
    }
}

/// A shadow, as Figma's `DropShadowEffect` and `InnerShadowEffect` (CSS `box-shadow`,
/// `text-shadow`, `filter: drop-shadow()`), or a blur of the whole layer, its children included,
/// as Figma's `BlurEffect` (LAYER_BLUR: CSS `filter: blur()`). A shadow has a `color` and an
/// `offset` (the result route refuses one without); a blur has neither.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Effect {
    #[serde(rename = "type")]
    pub kind: EffectType,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub color: Option<Rgba>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<Vector>,
    /// The blur radius, as CSS's for a shadow (its standard deviation is half of it); a
    /// blur's is Figma's, twice CSS's `blur()` standard deviation.
    #[schemars(range(min = 0))]
    pub radius: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spread: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Vector {
    pub x: f64,
    pub y: f64,
}

wire_enum! {
    #[schemars(inline)]
    #[allow(clippy::upper_case_acronyms)]
    pub enum LineHeightUnit {
        PIXELS = "PIXELS",
        PERCENT = "PERCENT",
        AUTO = "AUTO",
    }
}

/// Figma's `LineHeight`: `{"unit": "PIXELS", "value": 24}`, or `{"unit": "AUTO"}` (the font's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LineHeight {
    pub unit: LineHeightUnit,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
}

wire_enum! {
    #[schemars(inline)]
    #[allow(clippy::upper_case_acronyms)]
    pub enum LetterSpacingUnit {
        PIXELS = "PIXELS",
        PERCENT = "PERCENT",
    }
}

/// Figma's `LetterSpacing`: `{"unit": "PIXELS", "value": 1.5}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LetterSpacing {
    pub unit: LetterSpacingUnit,
    pub value: f64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FontName {
    #[schemars(example = &"Inter")]
    pub family: String,
    #[schemars(example = &"Regular")]
    pub style: String,
}

wire_enum! {
    #[schemars(inline)]
    #[allow(clippy::upper_case_acronyms)]
    pub enum WindingRule {
        NONZERO = "NONZERO",
        EVENODD = "EVENODD",
        NONE = "NONE",
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VectorPath {
    /// Default NONZERO.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub winding_rule: Option<WindingRule>,
    /// SVG path data, as Figma's `VectorPath.data` (`M 0 0 L 10 10 Z`).
    pub data: String,
}

// --- the schema, told apart by type ------------------------------------------------------------

/// The schema of one node (openapi.yaml's `Node`): `oneOf` the node types by `type`, each
/// `allOf` the members all types have (`NodeCommon`) and its own, split from [`Node`]'s members
/// by [`owners`].
pub struct NodeSchema;

const NODE_DESCRIPTION: &str =
    "One node of a result's Figma node tree (SPEC section 4), told apart by `type`: one of the
ten node types the reference plugin builds with the Figma plugin API. The result route
checks every node against this schema's types, every `imageRef` (each is in the artifact's
images), every `id` (unique in the document; every component has one, and no component is
inside a component or an instance), every instance's `componentId` (a COMPONENT before it
whose layers have the instance's types and counts, in order; the root's `components`, all
COMPONENTs, come before its children), every NODE hyperlink's value
(the `id` of a node of the document), every auto layout member as Figma takes it (FILL and
ABSOLUTE on the children of a HORIZONTAL or VERTICAL frame only, never FILL on an ABSOLUTE
child, HUG on such a frame or a TEXT node only), the node count (at most 20 000) and the depth (at most 40), and passes the tree
through as the worker wrote it; a plugin ignores members it does not know.

Geometry is in pixels: `x`, `y` from the top-left of the parent node (of the canvas
position the plugin chooses for the root), `rotation` in degrees counter-clockwise.
Only FRAME and GROUP hold children in Figma; the reference plugin builds the children of
any other node after it, in the same parent, positioned from that node's top-left.";

/// `oneOf` the given types, told apart by `type` (an OpenAPI `discriminator`, which a JSON
/// Schema validator reads as an annotation).
fn one_of_by_type(description: &str, variants: Vec<(&str, Value)>) -> Schema {
    let mapping: BTreeMap<&str, Value> =
        variants.iter().map(|(tag, s)| (*tag, s.get("$ref").cloned().unwrap_or(Value::Null))).collect();
    let one_of: Vec<Value> = variants.into_iter().map(|(_, s)| s).collect();
    json_schema!({
        "description": description,
        "oneOf": one_of,
        "discriminator": {"propertyName": "type", "mapping": mapping},
    })
}

impl JsonSchema for NodeSchema {
    fn schema_name() -> Cow<'static, str> {
        "Node".into()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let all = <Node as JsonSchema>::json_schema(g).to_value();
        let members = all.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
        let common: Map<String, Value> = members.iter().filter(|(k, _)| owners(k).is_none()).map(pair).collect();
        let defs = g.definitions_mut();
        let common = json_schema!({"type": "object", "properties": common, "required": ["type"]});
        defs.insert("NodeCommon".into(), common.to_value());
        let mut variants = Vec::new();
        for name in NodeType::ALL {
            let t = NodeType::from_name(name).expect("a node type");
            let (definition, description) = t.definition();
            let mut own = Map::new();
            own.insert("type".into(), serde_json::json!({"type": "string", "enum": [name]}));
            // A common member a type requires is listed again with it (a COMPONENT's `id`), so
            // that generated types hold it as required, not as NodeCommon's optional one.
            let mine = |k: &str| owners(k).is_some_and(|o| o.contains(&t)) || required_by(t).contains(&k);
            own.extend(members.iter().filter(|(k, _)| mine(k)).map(pair));
            let mut required = vec!["type"];
            required.extend(required_by(t));
            let own = serde_json::json!({"type": "object", "properties": own, "required": required});
            let refer = serde_json::json!({"$ref": "#/$defs/NodeCommon"});
            defs.insert(definition.into(), serde_json::json!({"description": description, "allOf": [refer, own]}));
            variants.push((*name, serde_json::json!({"$ref": format!("#/$defs/{definition}")})));
        }
        one_of_by_type(NODE_DESCRIPTION, variants)
    }
}

fn pair((k, v): (&String, &Value)) -> (String, Value) {
    (k.clone(), v.clone())
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
    "ComponentNode",
    "InstanceNode",
    "Paint",
    "ColorStop",
    "Rgba",
    "Effect",
    "Vector",
    "LineHeight",
    "LetterSpacing",
    "DecorationLength",
    "Color",
    "FontName",
    "VectorPath",
    "Hyperlink",
    "TextSegment",
    "GridTrack",
    "Style",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_owned_member_is_a_member_of_node() {
        let all = schemars::schema_for!(Node).to_value();
        let members = all["properties"].as_object().unwrap();
        let owned = [
            "cornerRadius",
            "topLeftRadius",
            "topRightRadius",
            "bottomRightRadius",
            "bottomLeftRadius",
            "clipsContent",
            "layoutMode",
            "itemSpacing",
            "paddingTop",
            "paddingRight",
            "paddingBottom",
            "paddingLeft",
            "primaryAxisAlignItems",
            "counterAxisAlignItems",
            "gridRowCount",
            "gridColumnCount",
            "gridRowGap",
            "gridColumnGap",
            "gridRowSizes",
            "gridColumnSizes",
            "styles",
            "components",
            "vectorPaths",
            "characters",
            "fontSize",
            "fontName",
            "textAlignHorizontal",
            "textAutoResize",
            "paragraphIndent",
            "lineHeight",
            "letterSpacing",
            "textDecoration",
            "textDecorationStyle",
            "textDecorationOffset",
            "textDecorationThickness",
            "textDecorationColor",
            "textDecorationSkipInk",
            "textCase",
            "hyperlink",
            "segments",
            "textStyleId",
            "imageRef",
            "componentId",
        ];
        let listed: Vec<&str> = members.keys().map(String::as_str).filter(|k| owners(k).is_some()).collect();
        let mut expected = owned.to_vec();
        expected.sort();
        let mut listed = listed;
        listed.sort();
        assert_eq!(listed, expected, "owners() names members Node does not have, or misses some");
        for t in NodeType::ALL {
            let t = NodeType::from_name(t).unwrap();
            for r in required_by(t) {
                // A member no type owns is every type's.
                assert!(owners(r).is_none_or(|o| o.contains(&t)), "{r} is required of a type that does not own it");
            }
        }
    }

    #[test]
    fn a_node_reads_back_as_written_and_unknown_members_are_ignored() {
        let n = Node {
            kind: NodeType::TEXT,
            name: "Title".into(),
            width: 10.0,
            characters: Some("hi".into()),
            fills: Some(vec![Paint::Solid { color: Color { r: 1.0, g: 0.0, b: 0.0 }, opacity: None }]),
            children: Some(vec![Node { kind: NodeType::SVG, image_ref: Some("logo".into()), ..Node::default() }]),
            ..Node::default()
        };
        let text = serde_json::to_string(&n).unwrap();
        assert!(text.starts_with(r#"{"type":"TEXT","name":"Title","x":0.0,"y":0.0,"width":10.0"#), "{text}");
        assert_eq!(serde_json::from_str::<Node>(&text).unwrap(), n);
        let newer: Node = serde_json::from_str(r#"{"type":"FRAME","laterMember":[1],"x":2}"#).unwrap();
        assert_eq!((newer.kind, newer.x), (NodeType::FRAME, 2.0));
        let walked: Vec<(NodeType, usize)> = n.walk().map(|(n, d)| (n.kind, d)).collect();
        assert_eq!(walked, [(NodeType::TEXT, 1), (NodeType::SVG, 2)]);
    }
}
