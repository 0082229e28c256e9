//! Layer names as a designer would give them (issue 39, item 5): from what the page calls an
//! element, then its id or class, a bare tag only when nothing else names it; one short line,
//! never what a form control holds. Against real Chromium, one renderer for the file, as
//! convert/tests/chromium.rs.

mod common;

use common::{renderer, runtime};

use code2des_convert::{convert, Output};
use serde_json::Value;

fn run(html: &str) -> Output {
    runtime().block_on(convert(renderer(), html.as_bytes(), false)).expect("the page converts")
}

/// Every node below the root, depth first.
fn nodes(doc: &Value) -> Vec<&Value> {
    fn walk<'v>(n: &'v Value, out: &mut Vec<&'v Value>) {
        for c in n["children"].as_array().into_iter().flatten() {
            out.push(c);
            walk(c, out);
        }
    }
    let mut out = Vec::new();
    walk(doc, &mut out);
    out
}

fn names(out: &Output) -> Vec<String> {
    nodes(json(&out.document)).iter().map(|n| n["name"].as_str().unwrap_or_default().to_owned()).collect()
}

/// The one layer (not a text layer) named `name`.
fn layer<'v>(out: &'v Output, name: &str) -> &'v Value {
    let all = nodes(json(&out.document));
    let found: Vec<&&Value> = all.iter().filter(|n| n["name"] == name && n["type"] != "TEXT").collect();
    assert_eq!(found.len(), 1, "one layer named {name:?} in {:?}", names(out));
    found[0]
}

/// Boxes that paint, so each becomes a layer of its own.
const STYLE: &str = "<style>body{margin:0;font:16px/20px 'DejaVu Sans'} nav,section,article,div,a,figure,span,p,td,button,h2,ul,li,form{background:rgb(250,250,250)}</style>";

/// The document as the artifact carries it (kept for the test's life: tests borrow into it).
fn json(n: &code2des_convert::Node) -> &'static serde_json::Value {
    Box::leak(Box::new(serde_json::to_value(n).expect("a node tree is JSON")))
}

#[test]
fn what_the_page_calls_an_element_names_its_layer() {
    let out = run(&format!(
        r#"<!DOCTYPE html>{STYLE}<body>
        <nav aria-label="Main navigation" class="nav"><a href="/a">Product</a></nav>
        <img alt="Hills at sunrise" class="hero-img" src="data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='10' height='10'/%3E" width="10" height="10">
        <div id="tabs" aria-labelledby="tabs-title other-title"><span id="tabs-title">Plans</span><span id="other-title">and prices</span></div>
        <svg width="10" height="10" class="icon"><title>Search</title><rect width="10" height="10"/></svg>
        <figure class="shot"><div style="height:10px"></div><figcaption>The dashboard, at night</figcaption></figure>
        <button class="btn btn-primary">Start free</button>
        </body>"#
    ));
    let nav = layer(&out, "Main navigation");
    assert_eq!(nav["type"], "FRAME");
    assert_eq!(layer(&out, "Hills at sunrise")["type"], "SVG");
    layer(&out, "Plans and prices");
    assert_eq!(layer(&out, "Search")["type"], "SVG");
    layer(&out, "The dashboard, at night");
    layer(&out, "Start free");
    // A link is named by its words, as assistive technology names it.
    layer(&out, "Product");
}

#[test]
fn a_section_is_named_by_its_heading_and_a_heading_by_its_words() {
    let out = run(&format!(
        r#"<!DOCTYPE html>{STYLE}<body>
        <section class="pricing"><h2>Pricing</h2><p>Plans for every team.</p>
          <section><h3>Enterprise</h3></section>
        </section>
        <section id="faq"><p>No heading here.</p></section>
        <article class="card"><header><h3>Basic <em>plan</em></h3></header><p>Words</p></article>
        <a class="card-link" href="/x" style="display:block"><h3>Instant previews</h3><p>Every pull request gets its own URL.</p></a>
        </body>"#
    ));
    // The outer section's heading is its own, not the nested section's; the heading's own box
    // is named by its words too.
    let pricing: Vec<&Value> = nodes(json(&out.document)).into_iter().filter(|n| n["name"] == "Pricing").collect();
    assert_eq!(
        pricing.iter().map(|n| n["type"].as_str().unwrap_or_default()).collect::<Vec<_>>(),
        ["FRAME", "FRAME", "TEXT"]
    );
    layer(&out, "Enterprise");
    // Without a heading: its id.
    layer(&out, "faq");
    // The heading's text runs on across its inline children.
    layer(&out, "Basic plan");
    // A link around a whole card: the card's heading, not all its words.
    layer(&out, "Instant previews");
}

#[test]
fn then_the_id_then_the_class_then_the_words_of_a_box_of_text_then_what_it_is() {
    let out = run(&format!(
        r#"<!DOCTYPE html>{STYLE}<body>
        <div id="pricing-table" class="table"><p class="lead">x</p></div>
        <div class="md:flex card"><p>y</p></div>
        <div class="w-1/2"><p>z</p></div>
        <table><tr><td>42.0</td></tr></table>
        <ul><li>Plateaus: <b>wide</b> boxes</li></ul>
        </body>"#
    ));
    layer(&out, "pricing-table");
    layer(&out, "lead");
    // A utility class says how it looks, not what it is.
    layer(&out, "card");
    // Nothing names it: what it is, never its tag.
    assert_eq!(layer(&out, "Container")["type"], "FRAME");
    // A box that holds nothing but text: its words.
    layer(&out, "42.0");
    layer(&out, "Plateaus: wide boxes");
    // Generated content is its element's.
    layer(&out, "Plateaus: wide boxes ::marker");
}

#[test]
fn a_name_is_one_short_line() {
    let long = "Ship faster with a cloud that stays out of your way, every day";
    let out = run(&format!(
        r#"<!DOCTYPE html>{STYLE}<body>
        <section><h2>Ship faster   with a cloud
        that stays out of your way, every day</h2></section>
        <p aria-label="  Two
        lines  ">x</p>
        <pre style="background:rgb(250,250,250)">first line
second line</pre>
        </body>"#
    ));
    let cut = "Ship faster with a cloud that stays out…";
    assert_eq!(cut.chars().count(), 40);
    assert!(long.starts_with(cut.trim_end_matches('…')));
    // The section and its heading.
    assert_eq!(nodes(json(&out.document)).iter().filter(|n| n["name"] == cut && n["type"] != "TEXT").count(), 2);
    layer(&out, "Two lines");
    layer(&out, "first line second line");
    for name in names(&out) {
        assert!(name.chars().count() <= 40 && !name.contains(['\n', '\t']) && name.trim() == name, "{name:?}");
    }
    // Text layers are named by their characters, as Figma names them.
    for t in nodes(json(&out.document)).iter().filter(|n| n["type"] == "TEXT") {
        let chars: String =
            t["characters"].as_str().unwrap_or_default().split_whitespace().collect::<Vec<_>>().join(" ");
        let name = t["name"].as_str().unwrap_or_default();
        assert!(chars.starts_with(name.trim_end_matches('…')), "{name:?} of {chars:?}");
    }
}

#[test]
fn no_name_holds_what_a_form_control_holds() {
    let out = run(&format!(
        r#"<!DOCTYPE html>{STYLE}<body><form class="signup">
        <label for="email">Work email</label><input id="email" type="email" value="dana@fernhill.example">
        <label>Password <input type="password" value="hunter2-secret"></label>
        <input type="text" name="card-number" value="4111111111111111">
        <textarea class="notes">private notes</textarea>
        <label>Team size <select><option>Solo</option><option selected>Twenty</option></select></label>
        <input type="text" placeholder="Search the docs" aria-label="Search">
        </form></body>"#
    ));
    let all = names(&out);
    for secret in ["dana@", "hunter2", "4111", "private", "Solo"] {
        assert!(all.iter().all(|n| !n.contains(secret)), "{secret} in {all:?}");
    }
    // Controls are named by their labels, else their name or class.
    layer(&out, "Work email");
    layer(&out, "Password");
    layer(&out, "card-number");
    layer(&out, "notes");
    layer(&out, "Team size");
    layer(&out, "Search");
    // Their values are drawn, in layers that say what they are.
    let values: Vec<&Value> =
        nodes(json(&out.document)).into_iter().filter(|n| n["type"] == "TEXT" && n["name"] == "Value").collect();
    // (A textarea's value is not drawn yet.)
    assert_eq!(values.len(), 3, "{all:?}");
    assert!(values.iter().any(|v| v["characters"] == "dana@fernhill.example"));
    // A placeholder and a select's option are the page's words.
    assert!(all.iter().any(|n| n == "Search the docs"), "{all:?}");
    assert!(all.iter().any(|n| n == "Twenty"), "{all:?}");
}

#[test]
fn warnings_name_the_layer_they_concern() {
    let out = run(&format!(
        r#"<!DOCTYPE html>{STYLE}<body>
        <nav aria-label="Main navigation" style="filter:sepia(1)"><a href="/">Home</a></nav>
        <div class="card" style="transform:scale(1.05)"><p>x</p></div>
        </body>"#
    ));
    for (node, property) in [("Main navigation", "filter"), ("card", "transform")] {
        let w = out
            .warnings
            .iter()
            .find(|w| w.code.as_str() == "unsupported_css" && w.message.starts_with(property))
            .unwrap_or_else(|| panic!("{property}: {:?}", out.warnings));
        assert_eq!(w.node.as_deref(), Some(node), "{w:?}");
        let at =
            w.indices.as_ref().expect("located").iter().fold(json(&out.document), |n, i| &n["children"][*i as usize]);
        assert_eq!(at["name"], node);
        // The path stays the element's in the capture, for whoever reads the HTML.
        let path = w.path.as_deref().unwrap_or_default();
        assert!(path.ends_with("nav:nth-child(1)") || path.ends_with("div.card:nth-child(2)"), "{w:?}");
    }
}

#[test]
fn a_layer_nothing_names_is_named_by_what_it_is_never_by_its_tag() {
    let out = run(&format!(
        r#"<!DOCTYPE html>{STYLE}<style>header,footer,main,hr,input,.nav{{background:rgb(250,250,250)}} hr{{height:2px;border:0}}</style><body>
        <header><p>x</p><p>y</p></header>
        <nav class="nav"><p>a</p><p>b</p></nav>
        <main><div class="body"><p>c</p><p>d</p></div>
          <div><h3>Fast setup</h3><p>Minutes, not days.</p></div>
          <hr><input type="checkbox"><input type="email">
        </main>
        <footer><p>e</p><p>f</p></footer>
        </body>"#
    ));
    layer(&out, "Page header");
    // A class that is a tag's name reads as the tag: what the element is instead.
    layer(&out, "Navigation");
    layer(&out, "Main content");
    layer(&out, "Container");
    // A box titled by its heading is named by it.
    layer(&out, "Fast setup");
    layer(&out, "Divider");
    layer(&out, "Checkbox");
    layer(&out, "Email field");
    layer(&out, "Page footer");
    let tags = ["header", "nav", "main", "div", "body", "hr", "input", "footer"];
    let bare: Vec<String> = names(&out).into_iter().filter(|n| tags.contains(&n.as_str())).collect();
    assert!(bare.is_empty(), "bare tags: {bare:?}");
}
