//! `schemas/*.schema.json` and openapi.yaml's node-tree components are generated from the
//! Rust types of `code2des-wire`: this test fails when the committed files drift from them,
//! and `UPDATE_SCHEMAS=1 cargo test -p code2des-local --test schemas` (the generator) rewrites
//! them.
//!
//! openapi.yaml holds the node tree itself (rather than a `$ref` into schemas/) because the
//! TypeScript client is generated from it alone and Schemathesis and the plugin's tools read it
//! as one file: its components between the generated markers are the artifact schema's
//! definitions of the same names, with `#/components/schemas/` for `#/$defs/`.

use std::path::PathBuf;

use code2des_wire::{openapi_components, schemas, NODE_DEFINITIONS};

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

const BEGIN: &str =
    "    # --- generated from code2des-wire's types: UPDATE_SCHEMAS=1 cargo test -p code2des-local --test schemas ---\n";
const END: &str = "    # --- end of the generated components ---\n";

/// openapi.yaml's node-tree components as the generator writes them, between the markers.
fn generated_components() -> String {
    let mut out = String::from(BEGIN);
    for (name, schema) in openapi_components() {
        let mut one = serde_json::Map::new();
        one.insert(name.to_owned(), schema);
        let yaml = serde_norway::to_string(&one).unwrap();
        for line in yaml.lines() {
            out.push_str(&if line.is_empty() { "\n".to_owned() } else { format!("    {line}\n") });
        }
    }
    out.push_str(END);
    out
}

#[test]
fn openapi_node_components_are_the_generated_ones() {
    let path = root().join("openapi.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let (start, end) = match (text.find(BEGIN), text.find(END)) {
        (Some(s), Some(e)) if s < e => (s, e + END.len()),
        _ => panic!("openapi.yaml has no generated block (its markers are {BEGIN:?} and {END:?})"),
    };
    let generated = generated_components();
    if std::env::var_os("UPDATE_SCHEMAS").is_some() {
        std::fs::write(&path, format!("{}{generated}{}", &text[..start], &text[end..])).unwrap();
        return;
    }
    assert!(
        text[start..end] == generated,
        "openapi.yaml's node-tree components differ from code2des-wire's types: UPDATE_SCHEMAS=1 cargo test -p code2des-local --test schemas"
    );
    // The block is the whole of the node tree: every $ref in it names one of its definitions.
    let spec: serde_json::Value = serde_norway::from_str(&text).unwrap();
    for name in NODE_DEFINITIONS {
        assert!(!spec["components"]["schemas"][name].is_null(), "{name} is in openapi.yaml");
    }
    for r in generated.split("$ref: '#/components/schemas/").skip(1) {
        let name = &r[..r.find('\'').unwrap()];
        assert!(NODE_DEFINITIONS.contains(&name), "{name} is referred to but not generated");
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
    assert_eq!(codes, code2des_wire::artifact::WarningCode::ALL);
}
