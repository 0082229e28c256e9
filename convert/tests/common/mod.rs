//! What the converter's tests against real Chromium share: one runtime and one renderer for a
//! (Each test file uses what it needs of it.)
#![allow(dead_code)]
//! test file, and the conversion of a page.

use std::sync::OnceLock;

use code2des_convert::{convert, Options, Output, Renderer};

pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime"))
}

pub fn renderer() -> &'static Renderer {
    static R: OnceLock<Renderer> = OnceLock::new();
    R.get_or_init(|| runtime().block_on(Renderer::start(Options::default())).expect("Chromium starts"))
}

/// `html` converted, as the worker converts a capture.
pub fn run(html: &str) -> Output {
    runtime().block_on(convert(renderer(), html.as_bytes(), false)).expect("the page converts")
}
