//! The document the conversion produces: the wire's node tree (`code2des-wire`, one
//! definition for the converter, the worker, the backend and the plugin's types), the images
//! it uses, and its warnings.

pub use code2des_wire::artifact::{ArtifactWarning, WarningCode, MAX_WARNINGS, MAX_WARNING_MESSAGE, MAX_WARNING_NODE};
pub use code2des_wire::node::*;

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
pub const WARNING_CODES: &[&str] = WarningCode::ALL;

/// A warning while the tree is being made: the wire's, and the element it was found on (to find
/// its node's `indices` once the tree is built).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub wire: ArtifactWarning,
    pub dom: usize,
}
