//! Where a text's links go (issue 39, item 1: links are hyperlink ranges): an in-page fragment
//! to the layer made of its element (a NODE hyperlink naming that layer's `id`), a relative
//! reference resolved against the address the capture recorded, an absolute one as written,
//! and never a `javascript:` one. Against real Chromium, one renderer for the file.

mod common;

use common::run;
use serde_json::Value;

/// Every node, the root first, depth first.
fn nodes(doc: &Value) -> Vec<&Value> {
    fn walk<'v>(n: &'v Value, out: &mut Vec<&'v Value>) {
        out.push(n);
        for c in n["children"].as_array().into_iter().flatten() {
            walk(c, out);
        }
    }
    let mut out = Vec::new();
    walk(doc, &mut out);
    out
}

/// Each linked run's text and its hyperlink, in document order.
fn links(doc: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for n in nodes(doc).into_iter().filter(|n| n["type"] == "TEXT") {
        let chars: Vec<u16> = n["characters"].as_str().unwrap_or_default().encode_utf16().collect();
        let text = |s: usize, e: usize| String::from_utf16_lossy(&chars[s..e]);
        match n["segments"].as_array() {
            Some(segs) => {
                for g in segs.iter().filter(|g| !g["hyperlink"].is_null()) {
                    let (s, e) = (g["start"].as_u64().unwrap() as usize, g["end"].as_u64().unwrap() as usize);
                    out.push((text(s, e).trim().to_owned(), g["hyperlink"].clone()));
                }
            }
            None if !n["hyperlink"].is_null() => {
                out.push((text(0, chars.len()).trim().to_owned(), n["hyperlink"].clone()))
            }
            None => {}
        }
    }
    out
}

/// The node whose `id` is `id`.
fn by_id<'v>(doc: &'v Value, id: &str) -> &'v Value {
    let found: Vec<&Value> = nodes(doc).into_iter().filter(|n| n["id"] == id).collect();
    assert_eq!(found.len(), 1, "one node of id {id}");
    found[0]
}

const PAGE: &str = r##"<body style="margin:0;font:16px/20px 'DejaVu Sans'">
<p>See <a href="#usage">Usage</a>, <a href="#Caf%C3%A9">the café</a>, <a href="guide.html#install">the guide</a>,
<a href="https://example.com/a?b=1">an absolute one</a>, <a href="javascript:alert(1)">a script</a>,
<a href="#nowhere">a lost one</a> and <a href="#top">the top</a>.</p>
<p><a href="#usage" style="float: right">Up</a>A floated link keeps this text line by line.</p>
<section id="usage"><h2>Usage</h2><p>How to use it.</p></section>
<h2><a name="Café"></a>Café</h2>
</body>"##;

#[test]
fn links_go_to_layers_of_the_page_or_to_urls_it_names() {
    let saved = format!("<!DOCTYPE html>\n<!-- saved from url=(0034)https://docs.example.org/a/b.html -->\n{PAGE}");
    let out = run(&saved);
    let doc = serde_json::to_value(&out.document).unwrap();
    let got = links(&doc);
    let find = |t: &str| got.iter().find(|(text, _)| text == t).map(|(_, h)| h.clone());
    // The section paints nothing, so it is no layer: its heading's is named.
    let usage = find("Usage").expect("a link to Usage");
    assert_eq!(usage["type"], "NODE", "{got:?}");
    let target = by_id(&doc, usage["value"].as_str().unwrap());
    assert_eq!(target["characters"], "Usage", "the heading's TEXT layer: {target}");
    // Text drawn line by line (beside a float) carries its link too, to the same layer.
    assert_eq!(find("Up"), Some(usage.clone()));
    // A percent-encoded fragment finds the <a name> of its decoded form; an empty anchor makes no
    // layer, so the nearest layer around it is named: the heading's.
    let cafe = find("the café").expect("a link to the café");
    assert_eq!(by_id(&doc, cafe["value"].as_str().unwrap())["characters"], "Café");
    assert_eq!(
        find("the guide"),
        Some(serde_json::json!({"type": "URL", "value": "https://docs.example.org/a/guide.html#install"}))
    );
    assert_eq!(find("an absolute one"), Some(serde_json::json!({"type": "URL", "value": "https://example.com/a?b=1"})));
    assert_eq!(find("a script"), None, "never a javascript: link");
    // A fragment naming no element goes to the page's address; #top is the page itself.
    assert_eq!(
        find("a lost one"),
        Some(serde_json::json!({"type": "URL", "value": "https://docs.example.org/a/b.html#nowhere"}))
    );
    let top = find("the top").expect("a link to the top");
    assert_eq!(top["type"], "NODE");
    assert_eq!(doc["id"], top["value"], "the root frame is the top of the page");
    // Each layer is named once, whatever links to it; ids are unique.
    let ids: Vec<&str> = nodes(&doc).iter().filter_map(|n| n["id"].as_str()).collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(ids.len(), unique.len(), "{ids:?}");
    assert_eq!(ids.len(), 3, "Usage, Café, the root: {ids:?}");
}

#[test]
fn without_an_address_relative_links_are_no_links_and_fragments_stay_in_the_page() {
    let out = run(&format!("<!DOCTYPE html>{PAGE}"));
    let doc = serde_json::to_value(&out.document).unwrap();
    let got = links(&doc);
    let find = |t: &str| got.iter().find(|(text, _)| text == t).map(|(_, h)| h.clone());
    assert_eq!(find("the guide"), None, "nothing to resolve it against: {got:?}");
    assert_eq!(find("a lost one"), None);
    assert_eq!(find("Usage").map(|h| h["type"].clone()), Some("NODE".into()));
    // A <base href> is what the browser resolves against, and so does the converter.
    let based = run(&format!("<!DOCTYPE html><base href=\"https://x.example/docs/\">{PAGE}"));
    let doc = serde_json::to_value(&based.document).unwrap();
    let got = links(&doc);
    let guide = got.iter().find(|(t, _)| t == "the guide").map(|(_, h)| h["value"].clone());
    assert_eq!(guide, Some("https://x.example/docs/guide.html#install".into()));
}
