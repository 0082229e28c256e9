//! Loading a capture: one self-contained HTML file (as SingleFile makes) or an MHTML archive
//! (as Chromium's `Page.captureSnapshot` makes), turned into one HTML document whose
//! subresources are all `data:` URIs, and the width to lay it out at.

use base64::Engine as _;

/// Over this, a capture is refused before it is parsed (issue 30: 50 MB).
pub const MAX_CAPTURE_BYTES: usize = 50 * 1024 * 1024;

/// The layout width when the capture names none in `<meta name="viewport" content="width=N">`.
pub const DEFAULT_WIDTH: u32 = 1440;

/// Why a capture cannot be converted. The messages are for the user (a failure artifact's
/// `error_message`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaptureError {
    #[error("the capture is empty")]
    Empty,
    #[error("the capture is {0} bytes, over the limit of 50 MB")]
    TooLarge(usize),
    #[error("the capture is not an HTML page or an MHTML archive")]
    NotHtml,
    #[error("the MHTML capture has no text/html part")]
    NoHtmlPart,
}

/// A capture ready to render.
#[derive(Debug, Clone)]
pub struct Capture {
    pub html: String,
    pub width: u32,
    /// The page's address, when the capture records one: an MHTML archive's
    /// (`Snapshot-Content-Location`, else its HTML part's `Content-Location`), or the saving
    /// tool's note at the top of an HTML file (a browser's `<!-- saved from url=(N)… -->`,
    /// SingleFile's `url:` line). Only `http` and `https` addresses; links resolve against it.
    pub address: Option<String>,
}

/// Reads a capture's bytes: HTML or MHTML, at most [`MAX_CAPTURE_BYTES`].
pub fn load(bytes: &[u8]) -> Result<Capture, CaptureError> {
    if bytes.len() > MAX_CAPTURE_BYTES {
        return Err(CaptureError::TooLarge(bytes.len()));
    }
    let text = String::from_utf8_lossy(bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if text.trim().is_empty() {
        return Err(CaptureError::Empty);
    }
    let (html, archived) = if looks_like_mhtml(text) { mhtml_to_html(text)? } else { (text.to_owned(), None) };
    if !looks_like_html(&html) {
        return Err(CaptureError::NotHtml);
    }
    let width = viewport_width(&html).unwrap_or(DEFAULT_WIDTH);
    let address = archived.or_else(|| saved_from(&html)).filter(|a| web_address(a));
    Ok(Capture { html, width, address })
}

/// An HTML document starts (after white space and comments) with a doctype or a tag that
/// HTML documents start with. Anything else (JSON, an image, plain text) is refused rather than
/// rendered as a page of text.
fn looks_like_html(text: &str) -> bool {
    let head: String = text.chars().take(4096).collect::<String>().to_ascii_lowercase();
    let mut rest = head.trim_start();
    while let Some(after) = rest.strip_prefix("<!--") {
        rest = after.split_once("-->").map_or("", |(_, r)| r).trim_start();
    }
    if let Some(after) = rest.strip_prefix("<?xml") {
        rest = after.split_once("?>").map_or("", |(_, r)| r).trim_start();
    }
    ["<!doctype html", "<html", "<head", "<body", "<meta", "<title", "<style", "<link", "<div", "<main"]
        .iter()
        .any(|p| rest.starts_with(p))
}

/// An absolute `http` or `https` address of reasonable length, without white space.
fn web_address(a: &str) -> bool {
    let lower = a.to_ascii_lowercase();
    (lower.starts_with("http://") || lower.starts_with("https://"))
        && a.len() <= 2048
        && !a.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// The address a saving tool noted in the comments at the top of an HTML file: a browser's
/// `<!-- saved from url=(0041)https://… -->`, or SingleFile's header comment with its
/// ` url: https://…` line.
fn saved_from(html: &str) -> Option<String> {
    let head: String = html.chars().take(8192).collect();
    let mut rest = head.as_str();
    while let Some(at) = rest.find("<!--") {
        let after = &rest[at + 4..];
        let (comment, tail) = after.split_once("-->").unwrap_or((after, ""));
        rest = tail;
        if let Some(v) = comment.trim().strip_prefix("saved from url=(") {
            let (_, url) = v.split_once(')')?;
            return Some(url.trim().to_owned());
        }
        if comment.contains("SingleFile") {
            let line = comment.lines().find_map(|l| l.trim().strip_prefix("url:"))?;
            return Some(line.trim().to_owned());
        }
    }
    None
}

fn looks_like_mhtml(text: &str) -> bool {
    let head: String = text.chars().take(8192).collect::<String>().to_ascii_lowercase();
    head.contains("content-type: multipart/related") && head.contains("boundary=")
}

/// `N` of the first `<meta name="viewport" content="…width=N…">`, 1 to 10 000.
pub fn viewport_width(html: &str) -> Option<u32> {
    let lower = html.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find("<meta") {
        let start = from + at;
        let end = lower[start..].find('>').map_or(lower.len(), |e| start + e);
        let tag = &lower[start..end];
        from = end;
        if !(tag.contains("name=\"viewport\"") || tag.contains("name='viewport'") || tag.contains("name=viewport")) {
            continue;
        }
        let w = tag.split("width=").nth(1)?;
        let digits: String = w.chars().take_while(char::is_ascii_digit).collect();
        return digits.parse().ok().filter(|n| (1..=10_000).contains(n));
    }
    None
}

/// One part of a MIME multipart archive.
struct Part {
    content_type: String,
    location: Option<String>,
    content_id: Option<String>,
    body: Vec<u8>,
}

/// The archive's HTML part with every reference to another part (by `Content-Location` or
/// `cid:`) replaced by that part as a `data:` URI, so the renderer needs no network; and the
/// address the archive was made of.
fn mhtml_to_html(text: &str) -> Result<(String, Option<String>), CaptureError> {
    let (headers, body) = split_headers(text);
    let boundary = header_param(&headers, "content-type", "boundary").ok_or(CaptureError::NotHtml)?;
    let delimiter = format!("--{boundary}");
    let mut parts = Vec::new();
    for chunk in body.split(delimiter.as_str()).skip(1) {
        if chunk.starts_with("--") {
            break;
        }
        parts.push(part(chunk));
    }
    let main = parts.iter().position(|p| p.content_type == "text/html").ok_or(CaptureError::NoHtmlPart)?;
    let address = header(&headers, "snapshot-content-location").or_else(|| parts[main].location.clone());
    let mut html = String::from_utf8_lossy(&parts[main].body).into_owned();
    // Stylesheets first: their url(…) references are rewritten inside them before they are
    // inlined as data: URIs themselves.
    let mut resources = resources(&parts, main);
    for (i, p) in parts.iter().enumerate() {
        if i == main || p.content_type != "text/css" {
            continue;
        }
        let mut css = String::from_utf8_lossy(&p.body).into_owned();
        for (from, to) in &resources {
            css = css.replace(from.as_str(), to);
        }
        // Chromium's snapshot links its stylesheets; inline them as <style> so no link is needed.
        let block = format!("<style>{css}</style>");
        html = match html.find("</head>") {
            Some(at) => format!("{}{block}{}", &html[..at], &html[at..]),
            None => format!("{block}{html}"),
        };
    }
    // The longest location first, so one that is a prefix of another does not clobber it.
    resources.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
    for (from, to) in &resources {
        html = html.replace(from.as_str(), to);
    }
    Ok((html, address))
}

/// One part of the archive (its headers and body, between two delimiters), decoded.
fn part(chunk: &str) -> Part {
    let (h, b) = split_headers(chunk.trim_start_matches(['\r', '\n']));
    let encoding = header(&h, "content-transfer-encoding").unwrap_or_default().to_ascii_lowercase();
    let b = b.strip_suffix("\r\n").or_else(|| b.strip_suffix('\n')).unwrap_or(b);
    let bytes = match encoding.as_str() {
        "base64" => base64::engine::general_purpose::STANDARD
            .decode(b.chars().filter(|c| !c.is_whitespace()).collect::<String>())
            .unwrap_or_default(),
        "quoted-printable" => quoted_printable(b),
        _ => b.as_bytes().to_vec(),
    };
    Part {
        content_type: header(&h, "content-type")
            .unwrap_or_default()
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase(),
        location: header(&h, "content-location"),
        content_id: header(&h, "content-id").map(|c| c.trim_matches(['<', '>']).to_owned()),
        body: bytes,
    }
}

/// Each part but the HTML one (`main`) and the stylesheets, as a `data:` URI, by the references
/// that name it (its location, and `cid:` with its id).
fn resources(parts: &[Part], main: usize) -> Vec<(String, String)> {
    let mut resources: Vec<(String, String)> = Vec::new();
    let data_uri = |p: &Part| {
        format!("data:{};base64,{}", p.content_type, base64::engine::general_purpose::STANDARD.encode(&p.body))
    };
    for (i, p) in parts.iter().enumerate() {
        if i == main || p.content_type == "text/css" {
            continue;
        }
        let uri = data_uri(p);
        if let Some(l) = &p.location {
            resources.push((l.clone(), uri.clone()));
        }
        if let Some(c) = &p.content_id {
            resources.push((format!("cid:{c}"), uri));
        }
    }
    resources
}

fn split_headers(text: &str) -> (Vec<(String, String)>, &str) {
    let (head, body) = match (text.find("\r\n\r\n"), text.find("\n\n")) {
        (Some(a), Some(b)) if b < a => (&text[..b], &text[b + 2..]),
        (Some(a), _) => (&text[..a], &text[a + 4..]),
        (None, Some(b)) => (&text[..b], &text[b + 2..]),
        (None, None) => (text, ""),
    };
    let mut headers: Vec<(String, String)> = Vec::new();
    for line in head.lines() {
        if line.starts_with([' ', '\t']) {
            // A folded header continues the previous one.
            if let Some(last) = headers.last_mut() {
                last.1.push(' ');
                last.1.push_str(line.trim());
            }
        } else if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    (headers, body)
}

fn header(headers: &[(String, String)], name: &str) -> Option<String> {
    headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
}

fn header_param(headers: &[(String, String)], name: &str, param: &str) -> Option<String> {
    let value = header(headers, name)?;
    value.split(';').skip(1).find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k.trim().eq_ignore_ascii_case(param)).then(|| v.trim().trim_matches('"').to_owned())
    })
}

fn quoted_printable(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'=' {
            // A soft line break.
            if bytes.get(i + 1) == Some(&b'\r') && bytes.get(i + 2) == Some(&b'\n') {
                i += 3;
                continue;
            }
            if bytes.get(i + 1) == Some(&b'\n') {
                i += 2;
                continue;
            }
            let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_and_its_width() {
        let c = load(b"<!DOCTYPE html><meta name=\"viewport\" content=\"width=800\"><p>x").unwrap();
        assert_eq!(c.width, 800);
        assert_eq!(load(b"<html><body>x</body></html>").unwrap().width, DEFAULT_WIDTH);
        let c = load(b"<meta name=viewport content=\"width=device-width\"><p>x").unwrap();
        assert_eq!(c.width, DEFAULT_WIDTH);
    }

    #[test]
    fn bad_captures() {
        assert_eq!(load(b"").unwrap_err(), CaptureError::Empty);
        assert_eq!(load(b"  \n ").unwrap_err(), CaptureError::Empty);
        assert_eq!(load(b"{\"a\": 1}").unwrap_err(), CaptureError::NotHtml);
        assert_eq!(load(b"\x89PNG\r\n\x1a\n").unwrap_err(), CaptureError::NotHtml);
        let big = vec![b' '; MAX_CAPTURE_BYTES + 1];
        assert_eq!(load(&big).unwrap_err(), CaptureError::TooLarge(MAX_CAPTURE_BYTES + 1));
    }

    #[test]
    fn mhtml_parts_become_data_uris() {
        let m = "From: <Saved by Blink>\r\nSubject: t\r\nMIME-Version: 1.0\r\nContent-Type: multipart/related;\r\n\ttype=\"text/html\";\r\n\tboundary=\"----B\"\r\n\r\n\
------B\r\nContent-Type: text/html\r\nContent-Transfer-Encoding: quoted-printable\r\nContent-Location: https://e.test/\r\n\r\n\
<html><head><title>T</title></head><body><img src=3D\"https://e.test/a.png\"></body></html>\r\n\
------B\r\nContent-Type: image/png\r\nContent-Transfer-Encoding: base64\r\nContent-Location: https://e.test/a.png\r\n\r\niVBORw0=\r\n\
------B\r\nContent-Type: text/css\r\nContent-Transfer-Encoding: quoted-printable\r\nContent-Location: cid:css-1@mhtml.blink\r\n\r\nbody{background:url(https://e.test/a.png)}\r\n\
------B--\r\n";
        let c = load(m.as_bytes()).unwrap();
        assert!(c.html.contains("<img src=\"data:image/png;base64,iVBORw0=\">"), "{}", c.html);
        assert!(c.html.contains("<style>body{background:url(data:image/png;base64,iVBORw0=)}</style></head>"));
    }
}
