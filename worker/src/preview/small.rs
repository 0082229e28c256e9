//! The small preview an artifact carries (image kind `preview`): the page drawn at most
//! [`MAX_WIDTH`] px wide (and at most `MAX_HEIGHT` tall, Figma's side limit), as a PNG of at
//! most [`MAX_BYTES`]. Drawn at the small size (not scaled down from a full-size picture, which
//! would cost a page-sized buffer), then encoded as the fewest bytes that fit: true colour;
//! else a palette of the 255 colours the picture uses most (a web page is mostly flat colour,
//! so this barely shows); else 64; else the same, a quarter narrower, until it fits.

use resvg::tiny_skia;
use resvg::usvg;

use super::PreviewError;

/// The preview's widest (issue 40 item 2), in px.
pub const MAX_WIDTH: u32 = 480;
/// Its tallest: Figma's `createImage` limit per side.
pub const MAX_HEIGHT: u32 = 4096;
/// Its largest PNG, in bytes.
pub const MAX_BYTES: usize = 64 * 1024;

/// The small preview of a drawn page, as PNG bytes.
pub fn small(tree: &usvg::Tree) -> Result<Vec<u8>, PreviewError> {
    let size = tree.size();
    let (w, h) = (f64::from(size.width()), f64::from(size.height()));
    let mut scale = (f64::from(MAX_WIDTH) / w).min(f64::from(MAX_HEIGHT) / h).min(1.0);
    loop {
        let (pw, ph) = ((w * scale).round().max(1.0) as u32, (h * scale).round().max(1.0) as u32);
        let rgb = super::draw(tree, pw, ph, scale as f32)?;
        for colours in [None, Some(255), Some(64)] {
            let png = match colours {
                None => encode_rgb(&rgb, pw, ph)?,
                Some(n) => encode_indexed(&rgb, pw, ph, n)?,
            };
            if png.len() <= MAX_BYTES {
                return Ok(png);
            }
        }
        if pw <= 16 {
            return Err(PreviewError::Render("no preview of the page fits 64 KB".into()));
        }
        scale *= 0.75;
    }
}

fn encoder(out: &mut Vec<u8>, w: u32, h: u32, color: png::ColorType) -> png::Encoder<'_, &mut Vec<u8>> {
    let mut e = png::Encoder::new(out, w, h);
    e.set_color(color);
    e.set_depth(png::BitDepth::Eight);
    e.set_compression(png::Compression::High);
    e
}

/// RGB bytes (3 a pixel) as a true-colour PNG.
pub fn encode_rgb(rgb: &[u8], w: u32, h: u32) -> Result<Vec<u8>, PreviewError> {
    let mut out = Vec::new();
    let mut writer = encoder(&mut out, w, h, png::ColorType::Rgb).write_header().map_err(png_err)?;
    writer.write_image_data(rgb).map_err(png_err)?;
    writer.finish().map_err(png_err)?;
    Ok(out)
}

fn png_err(e: png::EncodingError) -> PreviewError {
    PreviewError::Render(format!("PNG encoding: {e}"))
}

/// A colour's bucket: 5 bits a channel.
fn bucket(p: &[u8]) -> usize {
    (usize::from(p[0] >> 3) << 10) | (usize::from(p[1] >> 3) << 5) | usize::from(p[2] >> 3)
}

/// RGB bytes as a PNG of at most `n` colours: the `n` most used buckets, each its pixels' mean
/// colour; every pixel the nearest of them.
pub fn encode_indexed(rgb: &[u8], w: u32, h: u32, n: usize) -> Result<Vec<u8>, PreviewError> {
    let mut count = vec![0u64; 1 << 15];
    let mut sum = vec![[0u64; 3]; 1 << 15];
    for p in rgb.chunks_exact(3) {
        let b = bucket(p);
        count[b] += 1;
        for c in 0..3 {
            sum[b][c] += u64::from(p[c]);
        }
    }
    let mut used: Vec<usize> = (0..count.len()).filter(|b| count[*b] > 0).collect();
    used.sort_by_key(|b| std::cmp::Reverse(count[*b]));
    used.truncate(n.clamp(1, 256));
    let palette: Vec<[u8; 3]> = used.iter().map(|b| sum[*b].map(|s| (s / count[*b]) as u8)).collect();
    let mut nearest = vec![u16::MAX; 1 << 15];
    let mut index = Vec::with_capacity(rgb.len() / 3);
    for p in rgb.chunks_exact(3) {
        let b = bucket(p);
        if nearest[b] == u16::MAX {
            let d = |q: &[u8; 3]| (0..3).map(|c| (i32::from(q[c]) - i32::from(p[c])).pow(2)).sum::<i32>();
            nearest[b] = (0..palette.len()).min_by_key(|i| d(&palette[*i])).unwrap_or(0) as u16;
        }
        index.push(nearest[b] as u8);
    }
    let mut out = Vec::new();
    let mut e = encoder(&mut out, w, h, png::ColorType::Indexed);
    e.set_palette(palette.concat());
    let mut writer = e.write_header().map_err(png_err)?;
    writer.write_image_data(&index).map_err(png_err)?;
    writer.finish().map_err(png_err)?;
    Ok(out)
}

/// A pixmap's premultiplied RGBA over white, as RGB.
pub fn over_white(p: &tiny_skia::Pixmap) -> Vec<u8> {
    let mut out = Vec::with_capacity(p.data().len() / 4 * 3);
    for px in p.data().chunks_exact(4) {
        let a = u16::from(px[3]);
        for c in &px[..3] {
            out.push((u16::from(*c) + (255 - a)).min(255) as u8);
        }
    }
    out
}
