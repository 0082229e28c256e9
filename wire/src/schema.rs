//! `schemas/*.schema.json` and openapi.yaml's node-tree components, generated from the wire
//! types (`UPDATE_SCHEMAS=1 cargo test -p code2des-local --test schemas` writes them; without
//! it, the test fails when the committed ones drift).

use schemars::JsonSchema;
use serde_json::Value;

use crate::artifact::ResultArtifact;
use crate::node::NODE_DEFINITIONS;
use crate::protocol::{Manifest, WebhookReport};

// --- generation ----------------------------------------------------------------------------------

/// The members of the node tree (openapi.yaml's `Node` and what it refers to) are absent when
/// unused, never null: the plugin reads them so; and none has a default the wire must carry. Option members are generated as "T or null";
/// here they become T. Numbers lose schemars' `format: double`, which neither JSON Schema nor
/// OpenAPI needs for a JSON number.
fn absent_not_null(v: &mut Value) {
    match v {
        Value::Object(m) => {
            // A member read with its default when absent is still optional on the wire (the
            // TypeScript client would make a member with a `default` required).
            m.remove("default");
            if let Some(Value::Array(values)) = m.get("enum") {
                let kept: Vec<Value> = values.iter().filter(|x| !x.is_null()).cloned().collect();
                m.insert("enum".into(), Value::Array(kept));
            }
            if let Some(Value::Array(types)) = m.get("type") {
                let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                m.insert("type".into(), if kept.len() == 1 { kept[0].clone() } else { Value::Array(kept) });
            }
            if let Some(Value::Array(any)) = m.get("anyOf") {
                let kept: Vec<Value> = any.iter().filter(|s| s.get("type") != Some(&"null".into())).cloned().collect();
                if kept.len() == 1 {
                    m.remove("anyOf");
                    if let Value::Object(inner) = &kept[0] {
                        for (k, x) in inner {
                            m.insert(k.clone(), x.clone());
                        }
                    }
                }
            }
            for x in m.values_mut() {
                absent_not_null(x);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(absent_not_null),
        _ => {}
    }
}

fn strip_double_format(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if m.get("format").and_then(Value::as_str).is_some_and(|f| f == "double" || f == "float") {
                m.remove("format");
            }
            m.values_mut().for_each(strip_double_format);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_double_format),
        _ => {}
    }
}

fn root<T: JsonSchema>(id: &str) -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut v = generator.into_root_schema_for::<T>().to_value();
    strip_double_format(&mut v);
    if let Some(Value::Object(defs)) = v.get_mut("$defs") {
        for name in NODE_DEFINITIONS {
            if let Some(d) = defs.get_mut(*name) {
                absent_not_null(d);
            }
        }
    }
    if let Value::Object(m) = &mut v {
        m.insert("$id".into(), format!("https://code2des.invalid/schemas/{id}").into());
    }
    v
}

/// Every schema of `schemas/`, by file name: the manifest, the result artifact, the webhook body.
pub fn schemas() -> Vec<(&'static str, Value)> {
    vec![
        ("manifest.schema.json", root::<Manifest>("manifest.schema.json")),
        ("artifact.schema.json", root::<ResultArtifact>("artifact.schema.json")),
        ("webhook.schema.json", root::<WebhookReport>("webhook.schema.json")),
    ]
}

/// openapi.yaml's components of the node tree ([`NODE_DEFINITIONS`]), in that order: the
/// artifact schema's definitions of the same names, their references made openapi's.
pub fn openapi_components() -> Vec<(&'static str, Value)> {
    let artifact = root::<ResultArtifact>("artifact.schema.json");
    NODE_DEFINITIONS
        .iter()
        .map(|name| {
            let text = serde_json::to_string(&artifact["$defs"][*name]).expect("a schema is JSON");
            let text = text.replace("\"#/$defs/", "\"#/components/schemas/");
            (*name, serde_json::from_str(&text).expect("a schema is JSON"))
        })
        .collect()
}
