//! THE route table (`shared::http::routes::ROUTES`) is the one place a route is declared; this test
//! holds every other place that names routes to it: template.yaml's HttpApi events and CORS,
//! and the events/ files. (openapi.yaml is held to it by tests/openapi.rs.)

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_norway::Value;
use shared::http::routes::{cors, Route, ROUTES};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn template() -> Value {
    let text = std::fs::read_to_string(root().join("template.yaml")).expect("template.yaml at the repo root");
    serde_norway::from_str(&text).expect("template.yaml is YAML")
}

fn strings(v: &Value) -> Vec<String> {
    v.as_sequence().into_iter().flatten().filter_map(Value::as_str).map(str::to_lowercase).collect()
}

/// `(method, path, function logical id)` of every HttpApi event in the template.
fn template_routes(t: &Value) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for (name, res) in t["Resources"].as_mapping().expect("Resources") {
        let Some(events) = res["Properties"]["Events"].as_mapping() else { continue };
        for (_, ev) in events {
            if ev["Type"].as_str() != Some("HttpApi") {
                continue;
            }
            let p = &ev["Properties"];
            out.insert((
                p["Method"].as_str().expect("Method").to_uppercase(),
                p["Path"].as_str().expect("Path").to_owned(),
                name.as_str().unwrap().to_owned(),
            ));
        }
    }
    out
}

#[test]
fn template_routes_are_exactly_the_route_table() {
    let t = template();
    let table: BTreeSet<(String, String, String)> =
        ROUTES.iter().map(|r| (r.method.to_owned(), r.path.to_owned(), r.function.logical_id().to_owned())).collect();
    assert_eq!(template_routes(&t), table);
    // Each function is the binary the table names.
    for r in ROUTES {
        let f = &t["Resources"][r.function.logical_id()];
        assert_eq!(f["Metadata"]["BuildProperties"]["Binary"].as_str(), Some(r.function.binary()), "{}", r.key());
    }
}

#[test]
fn template_cors_is_the_route_tables() {
    let t = template();
    let apis: Vec<&Value> = t["Resources"]
        .as_mapping()
        .unwrap()
        .values()
        .filter(|r| r["Type"].as_str() == Some("AWS::Serverless::HttpApi"))
        .filter(|r| !r["Properties"]["CorsConfiguration"].is_null())
        .collect();
    assert_eq!(apis.len(), 1, "one HttpApi answers CORS");
    let c = &apis[0]["Properties"]["CorsConfiguration"];
    let set = |v: Vec<String>| v.into_iter().collect::<BTreeSet<_>>();
    let own = |v: &[&str]| v.iter().map(|s| s.to_lowercase()).collect::<BTreeSet<_>>();
    assert_eq!(set(strings(&c["AllowOrigins"])), own(&[cors::ALLOW_ORIGIN]));
    assert_eq!(set(strings(&c["AllowMethods"])), own(&cors::allow_methods()));
    assert_eq!(set(strings(&c["AllowHeaders"])), own(cors::ALLOW_HEADERS));
    assert_eq!(set(strings(&c["ExposeHeaders"])), own(cors::EXPOSE_HEADERS));
    assert_eq!(c["MaxAge"].as_u64(), Some(u64::from(cors::MAX_AGE_SECS)));
}

#[test]
fn every_route_has_its_event_file_and_no_file_is_orphaned() {
    let dir = root().join("events");
    let mut named = BTreeSet::new();
    for r in ROUTES {
        let path = dir.join(r.event_file);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|_| panic!("{} for {}", path.display(), r.key()));
        let ev: serde_json::Value = serde_json::from_str(&text).expect("event JSON");
        assert_eq!(ev["routeKey"], r.key(), "{}", r.event_file);
        assert_eq!(ev["requestContext"]["routeKey"], r.key(), "{}", r.event_file);
        assert_eq!(ev["requestContext"]["http"]["method"], r.method, "{}", r.event_file);
        assert_eq!(Route::by_key(&r.key()), Some(r));
        let has_jwt = !ev["requestContext"]["authorizer"]["jwt"]["claims"]["sub"].is_null();
        assert_eq!(has_jwt, r.user, "{}: user routes carry JWT claims, the webhook none", r.event_file);
        named.insert(r.event_file.to_owned());
    }
    // Not an API event: the worker queue's SQS message, which the container-image worker gets
    // (worker/src/lambda.rs reads it in its tests, scripts/worker-lambda.py serves it).
    named.insert("worker-sqs.json".to_owned());
    let present: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json"))
        .collect();
    assert_eq!(present, named, "events/ holds exactly one file per route, and the worker's SQS event");
}
