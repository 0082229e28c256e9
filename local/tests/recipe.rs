//! The route recipe (ARCHITECTURE.md, "Adding a route") is what the tests enforce: the count it
//! gives is the number of files it lists, and every route of `ROUTES` is known in each listed
//! place a test can read. The other places are the compiler's: exhaustive matches on `RouteId`
//! (the handlers, `api_security.rs`, `openapi.rs`'s statuses, `rules_file` below).

use std::path::PathBuf;

use shared::http::routes::{RouteId, ROUTES};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The module of `local/tests/api/` that holds a route's own rules.
fn rules_file(id: RouteId) -> &'static str {
    match id {
        RouteId::Trigger => "trigger",
        RouteId::List | RouteId::Get => "lifecycle",
        RouteId::Delete => "delete",
        RouteId::Cancel => "cancel",
        RouteId::Retry => "retry",
        RouteId::Result => "result_get",
        RouteId::Placement => "placement",
        RouteId::Webhook => "webhook",
    }
}

#[test]
fn every_route_is_known_in_every_place_of_the_recipe() {
    let readme = read("README.md");
    let client = read("clients/typescript/src/index.ts");
    let openapi = read("openapi.yaml");
    let driver = read("scripts/schemathesis-driver.py");
    let api_main = read("local/tests/api/main.rs");
    let pinned = &driver[driver.find("PINNED = {").expect("the driver's PINNED")..];
    let pinned = &pinned[..pinned.find('}').unwrap()];
    const BASE: &str = "/organizations/{organizationId}/projects/{projectId}/code2des";
    for r in ROUTES {
        let what = r.operation_id;
        assert!(openapi.contains(&format!("operationId: {what}")), "openapi.yaml has no {what}");
        assert!(root().join("events").join(r.event_file).is_file(), "events/{} for {what}", r.event_file);
        // README's API table writes the user routes' common prefix as {base}.
        let shown = format!("`{} {}", r.method, r.path.replacen(BASE, "{base}", 1));
        assert!(readme.contains(&shown), "README.md's API table has no {shown}` ({what})");
        // The client is the plugin's: it calls every user route (the webhook is the worker's).
        if r.user {
            assert!(
                client.contains(&format!("\"{}\"", r.path)),
                "clients/typescript/src/index.ts never calls {}",
                r.path
            );
        }
        // Schemathesis pins every route that acts on a job to a job in the state it acts on.
        if r.path.contains("{code2desId}") {
            assert!(pinned.contains(&format!("\"{what}\"")), "scripts/schemathesis-driver.py's PINNED has no {what}");
        }
        let rules = rules_file(r.id);
        assert!(root().join(format!("local/tests/api/{rules}.rs")).is_file(), "local/tests/api/{rules}.rs");
        assert!(api_main.contains(&format!("mod {rules};")), "local/tests/api/main.rs has no mod {rules}");
    }
}

#[test]
fn the_recipes_count_is_the_files_it_lists() {
    let doc = read("ARCHITECTURE.md");
    let section = &doc[doc.find("## Adding a route").expect("the recipe")..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    // Each numbered item begins with the files it touches, in backticks, before its colon.
    let mut files = Vec::new();
    for item in section.split("\n").filter(|l| l.chars().next().is_some_and(|c| c.is_ascii_digit())) {
        let head = &item[..item.find("`:").map_or(item.len(), |i| i + 1)];
        files.extend(head.split('`').skip(1).step_by(2).map(str::to_owned));
    }
    let words = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ];
    let first = section.lines().skip(1).find(|l| !l.trim().is_empty()).unwrap().to_lowercase();
    let said =
        words.iter().position(|w| first.starts_with(&format!("{w} files"))).expect("\"N files\" opens the recipe");
    assert_eq!(said, files.len(), "ARCHITECTURE.md says {said} files and lists {files:?}");
}
