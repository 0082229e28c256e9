//! The document the conversion produces: openapi.yaml's `Node` (version 1 members, and the
//! additive ones of issue 30), the images it uses, and its warnings. Serialized as the worker's
//! artifact wants it; `None` members are left out, so a plugin that predates a member never
//! sees it.

use serde::Serialize;

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub name: String,
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opacity: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fills: Option<Vec<Paint>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strokes: Option<Vec<Paint>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stroke_weight: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stroke_top_weight: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stroke_right_weight: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stroke_bottom_weight: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stroke_left_weight: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stroke_align: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corner_radius: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_left_radius: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_right_radius: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bottom_right_radius: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bottom_left_radius: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clips_content: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effects: Option<Vec<Effect>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout_mode: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item_spacing: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub padding_top: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub padding_right: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub padding_bottom: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub padding_left: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary_axis_align_items: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counter_axis_align_items: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub characters: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub font_size: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub font_name: Option<FontName>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_align_horizontal: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_auto_resize: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_height: Option<Dimension>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub letter_spacing: Option<Dimension>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_decoration: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_case: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_ref: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub children: Option<Vec<Node>>,
    /// The DOM node this was made from (for warnings and auto layout), not serialized.
    #[serde(skip)]
    pub dom: Option<usize>,
    /// This node is the box of a flex item of its parent's element.
    #[serde(skip)]
    pub flex_item: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rgb {
    pub r: f64,
    pub g: f64,
    pub b: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rgba {
    pub r: f64,
    pub g: f64,
    pub b: f64,
    pub a: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type")]
pub enum Paint {
    #[serde(rename = "SOLID")]
    Solid {
        color: Rgb,
        #[serde(skip_serializing_if = "Option::is_none")]
        opacity: Option<f64>,
    },
    #[serde(rename = "IMAGE", rename_all = "camelCase")]
    Image { image_ref: String, scale_mode: &'static str },
    /// Figma's `GradientPaint`: `gradientTransform` maps the node's unit square to the gradient's
    /// space, where the colour runs along x from 0 to 1.
    #[serde(rename = "GRADIENT_LINEAR", rename_all = "camelCase")]
    GradientLinear { gradient_transform: [[f64; 3]; 2], gradient_stops: Vec<Stop> },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stop {
    pub position: f64,
    pub color: Rgba,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Effect {
    /// DROP_SHADOW or INNER_SHADOW.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub color: Rgba,
    pub offset: Vector,
    /// The blur radius, as CSS's.
    pub radius: f64,
    pub spread: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Vector {
    pub x: f64,
    pub y: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FontName {
    pub family: String,
    pub style: String,
}

/// Figma's `LineHeight` and `LetterSpacing`: `{"unit": "PIXELS", "value": 24}`, or
/// `{"unit": "AUTO"}` for a line height of `normal`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dimension {
    pub unit: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
}

/// One image the document uses: a Figma-ready PNG, JPEG or GIF, or an SVG.
#[derive(Debug, Clone)]
pub struct Image {
    /// The `imageRef`.
    pub name: String,
    pub mime: &'static str,
    pub bytes: Vec<u8>,
}

impl Image {
    pub fn extension(&self) -> &'static str {
        match self.mime {
            "image/jpeg" => "jpg",
            "image/gif" => "gif",
            "image/svg+xml" => "svg",
            _ => "png",
        }
    }
}

/// The warning codes, a fixed list (docs/WORKER.md, "Warnings").
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
    "depth_limit",
];

/// The most warnings one conversion reports: the artifact's limit (`shared`'s
/// `Limits::max_warnings` and the schema's `maxItems`), past which the result route refuses it.
pub const MAX_WARNINGS: usize = 1000;

/// A deterministic conversion warning: what could not be reproduced exactly, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    /// One of [`WARNING_CODES`].
    pub code: &'static str,
    pub message: String,
    /// The DOM path of the element (`body > main > div.card:nth-child(2)`).
    pub path: String,
    /// The `name` of the document node it concerns (empty when no node was made).
    pub node: String,
    /// Where that node is: the child indices from the document root (`[]` is the root), so a
    /// plugin can select it. Absent when no node was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub indices: Option<Vec<usize>>,
    /// The element it was found on, to find `indices` once the tree is built.
    #[serde(skip)]
    pub dom: usize,
}
