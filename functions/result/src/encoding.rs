//! The result's content coding (issue 31): `br` or `gzip` when the request's `Accept-Encoding`
//! allows it, as browsers' and Node's fetch send it. A converted document is large, repetitive
//! JSON and shrinks several times over; inlined images are base64 of already compressed bytes
//! and shrink only to about three quarters (docs/PERFORMANCE.md, "Compressed results").
//!
//! A compressed body is binary, so the Lambda envelope carries it base64-encoded: a third more
//! than its bytes. What leaves AWS is the compressed bytes themselves.

use std::io::Write;

/// A body smaller than this goes out as it is: the coding's own framing would eat the gain.
pub const MIN_BYTES: usize = 1024;
/// Brotli's quality: 5 compresses a multi-megabyte document in tens of milliseconds on a Lambda
/// core at a ratio close to 11's for JSON (measured: docs/PERFORMANCE.md).
const BROTLI_QUALITY: u32 = 5;
const BROTLI_WINDOW: u32 = 22;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    Brotli,
    Gzip,
    Identity,
}

impl Coding {
    /// The `Content-Encoding` value; none for identity.
    pub fn header(self) -> Option<&'static str> {
        match self {
            Coding::Brotli => Some("br"),
            Coding::Gzip => Some("gzip"),
            Coding::Identity => None,
        }
    }

    /// The suffix that makes each coding's ETag its own (a coding is another representation).
    pub fn etag_suffix(self) -> &'static str {
        match self {
            Coding::Brotli => "-br",
            Coding::Gzip => "-gz",
            Coding::Identity => "",
        }
    }
}

/// The coding to answer with: brotli, else gzip, when `Accept-Encoding` (all its values) gives
/// it a weight above zero, by name or by `*`; identity otherwise (RFC 9110 section 12.5.3).
pub fn negotiate<'a>(accept_encoding: impl IntoIterator<Item = &'a str>) -> Coding {
    let (mut br, mut gzip, mut star) = (None, None, None);
    for item in accept_encoding.into_iter().flat_map(|v| v.split(',')) {
        let mut parts = item.split(';');
        let name = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q=").or_else(|| p.trim().strip_prefix("Q=")))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        let slot = match name.as_str() {
            "br" => &mut br,
            "gzip" | "x-gzip" => &mut gzip,
            "*" => &mut star,
            _ => continue,
        };
        *slot = Some(q);
    }
    let wanted = |q: Option<f32>| q.or(star).is_some_and(|q| q > 0.0);
    if wanted(br) {
        Coding::Brotli
    } else if wanted(gzip) {
        Coding::Gzip
    } else {
        Coding::Identity
    }
}

/// `body` in `coding`. Writing into a Vec cannot fail; an encoder error would be a bug of the
/// crate, and the identity body is then answered instead (`None`).
pub fn encode(coding: Coding, body: &[u8]) -> Option<Vec<u8>> {
    match coding {
        Coding::Identity => None,
        Coding::Brotli => {
            let mut out = Vec::with_capacity(body.len() / 4);
            let params = brotli::enc::BrotliEncoderParams {
                quality: BROTLI_QUALITY as i32,
                lgwin: BROTLI_WINDOW as i32,
                ..Default::default()
            };
            let done = brotli::BrotliCompress(&mut &body[..], &mut out, &params);
            said(coding, done.map(|_| out))
        }
        Coding::Gzip => {
            let mut enc =
                flate2::write::GzEncoder::new(Vec::with_capacity(body.len() / 4), flate2::Compression::default());
            said(coding, enc.write_all(body).and_then(|()| enc.finish()))
        }
    }
}

/// A coding that failed (writing to memory cannot, short of a bug in the crate) is logged: the
/// identity answer that follows is correct, but nobody should wonder why a client asking for
/// `br` got none.
fn said(coding: Coding, done: std::io::Result<Vec<u8>>) -> Option<Vec<u8>> {
    done.inspect_err(
        |e| tracing::error!(coding = ?coding, error = %e, "compressing the result failed; answering identity"),
    )
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn accept_encoding_is_negotiated_by_weight() {
        assert_eq!(negotiate(["gzip, deflate, br, zstd"]), Coding::Brotli, "a browser's fetch");
        assert_eq!(negotiate(["gzip, deflate"]), Coding::Gzip);
        assert_eq!(negotiate(["br;q=0, gzip"]), Coding::Gzip);
        assert_eq!(negotiate(["br;q=0", "gzip;q=0.5"]), Coding::Gzip, "several header lines");
        assert_eq!(negotiate(["*"]), Coding::Brotli);
        assert_eq!(negotiate(["*;q=0, gzip"]), Coding::Gzip);
        assert_eq!(negotiate(["identity"]), Coding::Identity);
        assert_eq!(negotiate(["br;q=0, gzip;q=0"]), Coding::Identity);
        assert_eq!(negotiate(["*;q=0"]), Coding::Identity);
        assert_eq!(negotiate(std::iter::empty()), Coding::Identity);
        assert_eq!(negotiate(["BR;Q=0.1"]), Coding::Brotli);
        assert_eq!(negotiate(["br;q=garbage"]), Coding::Brotli, "an unreadable weight is the default 1");
    }

    #[test]
    fn both_codings_round_trip() {
        let body = serde_json::json!({"document": {"children": vec![serde_json::json!({"type": "TEXT", "characters": "hello"}); 500]}})
            .to_string()
            .into_bytes();
        let br = encode(Coding::Brotli, &body).unwrap();
        let mut back = Vec::new();
        brotli::BrotliDecompress(&mut &br[..], &mut back).unwrap();
        assert_eq!(back, body);
        assert!(br.len() * 10 < body.len(), "{} of {}", br.len(), body.len());
        let gz = encode(Coding::Gzip, &body).unwrap();
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&gz[..]).read_to_end(&mut back).unwrap();
        assert_eq!(back, body);
        assert_eq!(encode(Coding::Identity, &body), None);
    }
}
