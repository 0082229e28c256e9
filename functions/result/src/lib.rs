pub mod encoding;
pub mod handler;
