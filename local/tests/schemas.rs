//! `schemas/*.schema.json` are generated from the Rust types of `shared::domain::wire`: this
//! test fails when the committed files drift from them, and rewrites them with
//! `UPDATE_SCHEMAS=1 cargo test -p code2des-local --test schemas`.
//!
//! openapi.yaml's `Node` and the artifact schema's are one definition: every component of the
//! node tree (`Node` and what it refers to) equals the artifact schema's definition of the same
//! name, with `#/components/schemas/` for `#/$defs/`. openapi.yaml keeps its own copy (rather
//! than a `$ref` into schemas/) because the TypeScript client is generated from it alone and
//! Schemathesis and the plugin's tools read it as one file; this test is what keeps the copy
//! exact.

use std::path::PathBuf;

use serde_json::Value;
use shared::domain::wire::{schemas, NODE_DEFINITIONS};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn the_committed_schemas_are_the_generated_ones() {
    let update = std::env::var_os("UPDATE_SCHEMAS").is_some();
    let dir = root().join("schemas");
    let mut stale = Vec::new();
    for (name, generated) in schemas() {
        let path = dir.join(name);
        let text = serde_json::to_string_pretty(&generated).unwrap() + "\n";
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(committed) if committed == text => {}
            _ => stale.push(name),
        }
    }
    assert!(
        stale.is_empty(),
        "schemas/{stale:?} differ from the Rust types: UPDATE_SCHEMAS=1 cargo test -p code2des-local --test schemas"
    );
}

/// What both sides may spell differently without meaning anything else: whitespace in prose,
/// `1` and `1.0`, and where definitions live.
fn normal(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| {
                    let x = match (k.as_str(), x) {
                        ("description", Value::String(s)) => {
                            Value::String(s.split_whitespace().collect::<Vec<_>>().join(" "))
                        }
                        _ => normal(x),
                    };
                    (k.clone(), x)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(normal).collect()),
        Value::Number(n) => serde_json::json!(n.as_f64().unwrap()),
        Value::String(s) => Value::String(s.replace("#/$defs/", "#/components/schemas/")),
        other => other.clone(),
    }
}

#[test]
fn openapi_node_is_the_artifact_schemas_node() {
    let text = std::fs::read_to_string(root().join("openapi.yaml")).unwrap();
    let spec: Value = serde_norway::from_str(&text).unwrap();
    let (_, artifact) = schemas().into_iter().find(|(n, _)| *n == "artifact.schema.json").unwrap();
    for name in NODE_DEFINITIONS {
        let ours = &artifact["$defs"][name];
        let theirs = &spec["components"]["schemas"][name];
        assert!(!ours.is_null() && !theirs.is_null(), "{name} on both sides");
        assert_eq!(
            normal(theirs),
            normal(ours),
            "openapi.yaml components.schemas.{name} differs from schemas/artifact.schema.json $defs.{name}:\n{}",
            serde_json::to_string_pretty(ours).unwrap()
        );
    }
    // The closure is complete: every $ref of the node tree names one of the definitions.
    let listed =
        serde_json::to_string(&NODE_DEFINITIONS.iter().map(|n| &artifact["$defs"][n]).collect::<Vec<_>>()).unwrap();
    for r in listed.split("\"$ref\":\"#/$defs/").skip(1) {
        let name = &r[..r.find('"').unwrap()];
        assert!(NODE_DEFINITIONS.contains(&name), "{name} is referred to but not compared");
    }
}

#[test]
fn the_artifact_schemas_warning_codes_are_the_accepted_ones() {
    let (_, artifact) = schemas().into_iter().find(|(n, _)| *n == "artifact.schema.json").unwrap();
    let codes: Vec<&str> = artifact["$defs"]["WarningCode"]["enum"]
        .as_array()
        .expect("WarningCode enum")
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(codes, shared::domain::artifact::WARNING_CODES);
}
