//! Property-based fuzzing of every parser of outside input: request bodies (trigger's retry body
//! included), path and query parameters, the signature header, cursors, the webhook body (its
//! progress reports included), S3 pointers, node ids and the worker's artifact. Each property says what the parser must accept, that it never panics on
//! anything else, and that every rejection is a 4xx `ApiError` naming the field.
//!
//! `PROPTEST_CASES` overrides the number of cases per property (default below).
#![allow(clippy::disallowed_methods)] // tests may panic on a row that does not read: that is a failure

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use lambda_http::{Body, Request, RequestExt};
use proptest::prelude::*;
use proptest::sample::select;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use shared::domain::artifact::{self, Expect, Kind, Limits, Mime, NODE_TYPES};
use shared::domain::cursor::{self, Binding};
use shared::domain::fields::{json_object, members};
use shared::domain::ids::{
    Code2desId, FigmaFileKey, IdempotencyKey, NodeId, OrganizationId, PageImportId, PlacementTarget, ProjectId,
    ScreenId,
};
use shared::domain::job::{Nonce, Status};
use shared::domain::keys::{is_key_under, S3Pointer};
use shared::domain::protocol::WebhookBody;
use shared::domain::signature::{self, SignatureError};
use shared::http::request::{query_param, raw_body, MAX_BODY};
use shared::ApiError;

const DEFAULT_CASES: u32 = 1000;

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(DEFAULT_CASES);
    // No regression files in the source tree: a failure prints its minimal input instead.
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

/// A rejection as SPEC wants it: a client error whose message starts with the field. The
/// domain's parsers refuse in their own error, so it is judged as the HTTP edge answers it.
fn assert_client_error(err: &(impl Clone + Into<ApiError>), field: &str) {
    let err: ApiError = err.clone().into();
    assert!(err.status().is_client_error(), "{err:?} is not a 4xx");
    assert!(err.to_string().starts_with(field), "{err} should name {field}");
}

/// Strings that mix the characters parsers care about: digits, separators, controls, unicode.
fn nasty_string() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[0-9:;I/\\.\\-a-fA-F%+ ]{0,40}",
        prop::collection::vec(
            select(vec!['0', '9', ':', ';', 'I', '/', '.', '-', 'a', 'F', '\0', '\n', '\u{7f}', '\u{85}', 'é', '٣']),
            0..40
        )
        .prop_map(|v| v.into_iter().collect()),
    ]
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        nasty_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-zA-Z_]{0,12}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn text_ok(raw: &str) -> bool {
    let n = raw.chars().count();
    (1..=255).contains(&n) && !raw.chars().any(char::is_control)
}

// --- request bodies and text fields -----------------------------------------------------------

proptest! {
    #![proptest_config(config())]

    #[test]
    fn json_object_takes_exactly_objects(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        match json_object(&bytes) {
            Ok(_) => prop_assert!(matches!(serde_json::from_slice::<Value>(&bytes), Ok(Value::Object(_)))),
            Err(e) => assert_client_error(&e, "body"),
        }
    }

    #[test]
    fn json_object_on_json_trees(v in arb_json()) {
        let bytes = serde_json::to_vec(&v).unwrap();
        match json_object(&bytes) {
            // Keys only: serde_json's default float parsing may differ in the last digit.
            Ok(map) => prop_assert_eq!(map.keys().collect::<Vec<_>>(), v.as_object().unwrap().keys().collect::<Vec<_>>()),
            Err(e) => {
                prop_assert!(!v.is_object());
                assert_client_error(&e, "body");
            }
        }
    }

    #[test]
    fn body_members_are_read_or_named(v in arb_json()) {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Body {
            page_import_id: PageImportId,
            placement_target: Option<PlacementTarget>,
        }
        let map = match v { Value::Object(m) => m, other => Map::from_iter([("pageImportId".to_owned(), other)]) };
        let text = |b: Option<&str>| b.map(|s| Value::String(s.to_owned()));
        match members::<Body>(&map) {
            Ok(b) => {
                prop_assert_eq!(map.get("pageImportId").cloned(), text(Some(b.page_import_id.as_str())));
                let target = map.get("placementTarget").filter(|v| !v.is_null()).cloned();
                prop_assert_eq!(target, text(b.placement_target.as_ref().map(|t| t.as_str())));
            }
            Err(e) => {
                prop_assert!(ApiError::from(e.clone()).status().is_client_error());
                let named = ["pageImportId", "placementTarget"].iter().any(|f| e.to_string().starts_with(&format!("{f}:")));
                prop_assert!(named, "{e}");
            }
        }
    }

    #[test]
    fn text_fields_accept_1_to_255_chars_without_controls(raw in nasty_string()) {
        macro_rules! check {
            ($t:ty) => {
                match <$t>::parse(&raw) {
                    Ok(v) => {
                        prop_assert!(text_ok(&raw), "{} accepted {raw:?}", <$t>::FIELD);
                        prop_assert_eq!(v.as_str(), raw.as_str());
                    }
                    Err(e) => {
                        prop_assert!(!text_ok(&raw), "{} refused {raw:?}", <$t>::FIELD);
                        assert_client_error(&e, <$t>::FIELD);
                    }
                }
            };
        }
        check!(PageImportId);
        check!(FigmaFileKey);
        check!(ScreenId);
        check!(PlacementTarget);
        check!(IdempotencyKey);
    }

    #[test]
    fn long_text_is_refused(c in any::<char>().prop_filter("not control", |c| !c.is_control()), n in 256usize..600) {
        let raw: String = std::iter::repeat_n(c, n).collect();
        assert_client_error(&ScreenId::parse(&raw).unwrap_err(), "screenId");
    }

    #[test]
    fn oversized_bodies_are_413_before_parsing(extra in 1usize..4096) {
        let req: Request = http::Request::new(Body::from(vec![b'{'; MAX_BODY + extra]));
        let err = raw_body(&req).unwrap_err();
        prop_assert_eq!(err.status().as_u16(), 413);
        let ok: Request = http::Request::new(Body::from(vec![b' '; MAX_BODY]));
        prop_assert!(raw_body(&ok).is_ok());
    }
}

// --- path and query parameters -----------------------------------------------------------------

fn positive_i32_oracle(raw: &str) -> Option<i32> {
    if raw.is_empty() || raw.len() > 10 || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: i64 = raw.parse().ok()?;
    (1..=i64::from(i32::MAX)).contains(&v).then_some(v as i32)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn path_ids_are_positive_i32(raw in prop_oneof![nasty_string(), "[0-9]{1,12}", "0*[1-9][0-9]{0,9}"]) {
        let expected = positive_i32_oracle(&raw);
        match OrganizationId::parse(&raw) {
            Ok(v) => prop_assert_eq!(Some(v.get()), expected),
            Err(e) => {
                prop_assert_eq!(expected, None);
                assert_client_error(&e, "organizationId");
            }
        }
        match ProjectId::parse(&raw) {
            Ok(v) => prop_assert_eq!(Some(v.get()), expected),
            Err(e) => assert_client_error(&e, "projectId"),
        }
    }

    #[test]
    fn every_positive_i32_round_trips(n in 1..=i32::MAX) {
        prop_assert_eq!(OrganizationId::parse(&n.to_string()).unwrap().get(), n);
        prop_assert_eq!(ProjectId::parse(&n.to_string()).unwrap().get(), n);
    }

    #[test]
    fn job_ids_are_hyphenated_uuids(raw in prop_oneof![
        nasty_string(),
        "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
        "[0-9a-f\\-{}]{30,40}",
    ]) {
        match Code2desId::parse(&raw) {
            Ok(id) => {
                prop_assert_eq!(raw.len(), 36);
                prop_assert!(id.to_string().eq_ignore_ascii_case(&raw));
                prop_assert_eq!(id.to_db(), raw.to_ascii_lowercase());
            }
            Err(e) => assert_client_error(&e, "code2desId"),
        }
    }

    #[test]
    fn every_uuid_round_trips(bytes in any::<[u8; 16]>()) {
        let u = uuid::Uuid::from_bytes(bytes);
        let id = Code2desId::parse(&u.hyphenated().to_string()).unwrap();
        prop_assert_eq!(id.uuid(), u);
        prop_assert!(Code2desId::parse(&u.simple().to_string()).is_err());
        prop_assert!(Code2desId::parse(&u.braced().to_string()).is_err());
        prop_assert!(Code2desId::parse(&u.urn().to_string()).is_err());
    }

    #[test]
    fn status_filter_is_one_of_three(raw in prop_oneof![nasty_string(), select(vec!["processing", "completed", "failed", "Completed", "0", "1"]).prop_map(String::from)]) {
        match Status::parse_api("status", &raw) {
            Ok(s) => prop_assert_eq!(s.api_name(), raw.as_str()),
            Err(e) => {
                prop_assert!(!["processing", "completed", "failed"].contains(&raw.as_str()));
                assert_client_error(&e, "status");
            }
        }
    }

    #[test]
    fn query_params_are_single_and_non_empty(values in prop::collection::vec(nasty_string(), 0..4)) {
        let mut q = HashMap::new();
        if !values.is_empty() {
            q.insert("figmaFileKey".to_owned(), values.clone());
        }
        let req: Request = http::Request::new(Body::Empty).with_query_string_parameters(q);
        match query_param(&req, "figmaFileKey") {
            Ok(None) => prop_assert!(values.is_empty()),
            Ok(Some(v)) => {
                prop_assert_eq!(values.len(), 1);
                prop_assert_eq!(v, values[0].as_str());
                prop_assert!(!v.is_empty());
            }
            Err(e) => {
                prop_assert!(values.len() > 1 || values[0].is_empty());
                assert_client_error(&e, "figmaFileKey");
            }
        }
    }
}

// --- node ids ----------------------------------------------------------------------------------

/// The documented grammar, written independently of the parser:
/// `D:D` or `ID:D(;D:D)+` where D is 1 to 10 ASCII digits; at most 255 characters overall.
fn node_id_oracle(raw: &str) -> bool {
    fn pair(s: &str) -> bool {
        let mut it = s.splitn(2, ':');
        let (a, b) = (it.next().unwrap_or(""), it.next());
        let digits = |x: &str| (1..=10).contains(&x.len()) && x.chars().all(|c| c.is_ascii_digit());
        matches!(b, Some(b) if digits(a) && digits(b))
    }
    if raw.is_empty() || raw.len() > 255 {
        return false;
    }
    match raw.strip_prefix('I') {
        Some(rest) => {
            let parts: Vec<&str> = rest.split(';').collect();
            parts.len() >= 2 && parts.iter().all(|p| pair(p))
        }
        None => pair(raw),
    }
}

fn grammar_node_id() -> impl Strategy<Value = String> {
    let pair = ("[0-9]{1,10}", "[0-9]{1,10}").prop_map(|(a, b)| format!("{a}:{b}"));
    prop_oneof![
        pair.clone(),
        (pair.clone(), prop::collection::vec(pair, 1..6))
            .prop_map(|(first, rest)| format!("I{first};{}", rest.join(";"))),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn node_ids_of_the_grammar_round_trip(raw in grammar_node_id()) {
        let id = NodeId::parse(&raw).unwrap();
        prop_assert_eq!(id.as_str(), raw.as_str());
    }

    #[test]
    fn node_ids_accept_exactly_the_grammar(raw in prop_oneof![
        nasty_string(),
        "I?[0-9]{0,11}(:[0-9]{0,11})?(;[0-9]{0,11}(:[0-9]{0,11})?){0,3};?",
        grammar_node_id().prop_map(|s| format!("{s} ")),
    ]) {
        match NodeId::parse(&raw) {
            Ok(id) => {
                prop_assert!(node_id_oracle(&raw), "accepted {raw:?}");
                prop_assert_eq!(id.as_str(), raw.as_str());
            }
            Err(e) => {
                prop_assert!(!node_id_oracle(&raw), "refused {raw:?}");
                assert_client_error(&e, "nodeId");
            }
        }
    }
}

// --- S3 pointers -------------------------------------------------------------------------------

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-zA-Z0-9_\\-]{1,8}(\\.json)?",
        1 => select(vec!["..", ".", "", "...", "..a", "%2e%2e", "a\\b", "a\u{0}b", "é"]).prop_map(String::from),
    ]
}

fn s3_url() -> impl Strategy<Value = String> {
    let bucket = prop_oneof![
        4 => Just("bkt".to_owned()),
        1 => "[a-zA-Z0-9.\\-_]{0,6}",
    ];
    let scheme = prop_oneof![8 => Just("s3://"), 1 => Just("S3://"), 1 => Just("s3:/"), 1 => Just("http://")];
    (scheme, bucket, prop::collection::vec(segment(), 0..6))
        .prop_map(|(s, b, segs)| format!("{s}{b}/{}", segs.join("/")))
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn s3_pointers_never_accept_traversal(raw in prop_oneof![s3_url(), nasty_string().prop_map(|s| format!("s3://bkt/{s}"))]) {
        match S3Pointer::parse("result_url", &raw) {
            Ok(p) => {
                prop_assert_eq!(p.to_string(), raw.clone());
                prop_assert!(!p.bucket.is_empty());
                for seg in p.key.split('/') {
                    prop_assert!(!seg.is_empty() && seg != "." && seg != "..", "{raw:?}");
                }
                prop_assert!(!p.key.chars().any(|c| c.is_control() || c == '\\'));
            }
            Err(e) => assert_client_error(&e, "result_url"),
        }
    }

    #[test]
    fn is_under_holds_only_for_keys_below_the_prefix(
        segs in prop::collection::vec(segment(), 0..5),
        prefix in select(vec!["code2des/x/1/", "code2des/x/", "code2des/x/1/images/"]),
        bucket in select(vec!["bkt", "other"]),
    ) {
        let raw = format!("s3://bkt/{}", segs.join("/"));
        if let Ok(p) = S3Pointer::parse("result_url", &raw) {
            let under = p.is_under(bucket, prefix);
            let expected = bucket == "bkt" && p.key.starts_with(prefix) && p.key.len() > prefix.len();
            prop_assert_eq!(under, expected, "{} under {}", raw, prefix);
            prop_assert_eq!(is_key_under(&p.key, prefix), p.key.starts_with(prefix) && p.key.len() > prefix.len());
        }
        // A key built as prefix + segments is under it exactly when every segment is plain.
        let key = format!("{prefix}{}", segs.join("/"));
        let plain = !segs.is_empty() && segs.iter().all(|s| !s.is_empty() && s != "." && s != ".." && !s.chars().any(|c| c.is_control() || c == '\\'));
        prop_assert_eq!(is_key_under(&key, prefix), plain, "{:?}", key);
    }
}

// --- signature header --------------------------------------------------------------------------

fn header_like() -> impl Strategy<Value = String> {
    let part = prop_oneof![
        "t=[0-9]{0,14}",
        "v1=[0-9a-f]{0,70}",
        "v1=[0-9a-f]{64}",
        "[a-z0-9]{0,3}=?[ -~]{0,8}",
        nasty_string(),
    ];
    prop::collection::vec(part, 0..12).prop_map(|p| p.join(","))
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn signature_headers_never_panic(header in prop_oneof![header_like(), nasty_string()], body in prop::collection::vec(any::<u8>(), 0..64), now in 0i64..4_000_000_000) {
        // Real clocks: `now` is the verifier's own time. A random header is never a valid MAC.
        prop_assert!(signature::verify(b"secret", Some(&header), &body, now).is_err());
    }

    #[test]
    fn a_correct_signature_always_verifies(
        secret in prop::collection::vec(any::<u8>(), 0..80),
        body in prop::collection::vec(any::<u8>(), 0..512),
        t in 0i64..4_000_000_000,
        skew in -300i64..=300,
        flip in any::<prop::sample::Index>(),
    ) {
        let h = signature::header_value(&secret, t, &body);
        prop_assert_eq!(signature::verify(&secret, Some(&h), &body, t + skew), Ok(()));
        prop_assert_eq!(signature::verify(&secret, Some(&h), &body, t + 301), Err(SignatureError::Expired));
        prop_assert_eq!(signature::verify(&secret, Some(&h), &body, t - 301), Err(SignatureError::Expired));
        let mut tampered = body.clone();
        if tampered.is_empty() { tampered.push(0) } else { let i = flip.index(tampered.len()); tampered[i] ^= 1; }
        prop_assert_eq!(signature::verify(&secret, Some(&h), &tampered, t), Err(SignatureError::Mismatch));
        let mut other = secret.clone();
        other.push(1);
        prop_assert_eq!(signature::verify(&other, Some(&h), &body, t), Err(SignatureError::Mismatch));
    }
}

// --- cursors -----------------------------------------------------------------------------------

fn arb_binding() -> impl Strategy<Value = (i32, i32, Option<String>, Option<&'static str>)> {
    (
        1..=i32::MAX,
        1..=i32::MAX,
        prop::option::of("[ -~]{1,12}"),
        prop::option::of(select(vec!["processing", "completed", "failed"])),
    )
}

fn binding<'a>(b: &'a (i32, i32, Option<String>, Option<&'static str>)) -> Binding<'a> {
    Binding { organization_id: b.0, project_id: b.1, figma_file_key: b.2.as_deref(), status: b.3 }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_cursors_are_refused(raw in prop_oneof![nasty_string(), "[A-Za-z0-9_\\-]{50,60}"], key in any::<[u8; 32]>(), b in arb_binding()) {
        let err = cursor::decode(&key, &raw, &binding(&b)).unwrap_err();
        assert_client_error(&err, "cursor");
    }

    #[test]
    fn cursors_decode_only_with_their_key_and_binding(
        key in any::<[u8; 32]>(),
        micros in -8_000_000_000_000_000i64..8_000_000_000_000_000,
        id in any::<[u8; 16]>(),
        b in arb_binding(),
        other in arb_binding(),
        other_key in any::<[u8; 32]>(),
        pos in any::<prop::sample::Index>(),
        replacement in "[A-Za-z0-9_\\-]",
    ) {
        let at = DateTime::<Utc>::from_timestamp_micros(micros).unwrap();
        let id = Code2desId::from_uuid(uuid::Uuid::from_bytes(id));
        let c = cursor::encode(&key, at, id, &binding(&b));
        prop_assert_eq!(cursor::decode(&key, &c, &binding(&b)).unwrap(), (at, id));
        if other != b {
            assert_client_error(&cursor::decode(&key, &c, &binding(&other)).unwrap_err(), "cursor");
        }
        if other_key != key {
            assert_client_error(&cursor::decode(&other_key, &c, &binding(&b)).unwrap_err(), "cursor");
        }
        let mut chars: Vec<char> = c.chars().collect();
        let i = pos.index(chars.len());
        let r = replacement.chars().next().unwrap();
        if chars[i] != r {
            chars[i] = r;
            let tampered: String = chars.into_iter().collect();
            assert_client_error(&cursor::decode(&key, &tampered, &binding(&b)).unwrap_err(), "cursor");
        }
    }
}

// --- webhook body ------------------------------------------------------------------------------

const ID: &str = "01890a5d-ac96-774b-bcce-b302099a8057";

fn good_webhook() -> Map<String, Value> {
    json!({"code2des_id": ID, "attempt": 1, "nonce": "n0nce", "status": "completed",
           "result_url": format!("s3://bkt/code2des/{ID}/1/result.json"), "warning_count": 3, "error_message": null})
    .as_object()
    .unwrap()
    .clone()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn webhook_bodies_never_panic(v in arb_json()) {
        if let Value::Object(map) = v {
            if let Err(e) = WebhookBody::parse(&map, "bkt") {
                prop_assert!(ApiError::from(e.clone()).status().is_client_error());
            }
        }
    }

    #[test]
    fn webhook_fields_are_checked(
        field in select(vec!["code2des_id", "attempt", "nonce", "status", "result_url", "warning_count", "error_message"]),
        value in prop_oneof![arb_json(), s3_url().prop_map(Value::String), (0i64..3).prop_map(Value::from)],
    ) {
        let mut map = good_webhook();
        map.insert(field.to_owned(), value.clone());
        match WebhookBody::parse(&map, "bkt") {
            Ok(b) => {
                // Whatever passed is what the fence and the store may rely on.
                prop_assert!(b.attempt >= 1);
                prop_assert!(!b.nonce.is_empty() && b.nonce.len() <= 255);
                prop_assert!(b.warning_count.is_none_or(|n| n >= 0));
                if let Some(url) = &b.result_url {
                    let p = S3Pointer::parse("result_url", url).unwrap();
                    let prefix = format!("code2des/{}/{}/", b.code2des_id, b.attempt);
                    prop_assert!(p.is_under("bkt", &prefix));
                } else {
                    prop_assert_eq!(b.status, Status::Failed);
                }
                if let Some(m) = &b.error_message {
                    prop_assert!(!m.chars().any(char::is_control) && m.chars().count() <= 2000);
                }
            }
            Err(e) => {
                prop_assert!(ApiError::from(e.clone()).status().is_client_error());
                // The error names a field of the body (the one changed, or one it depends on).
                let named = ["code2des_id", "attempt", "nonce", "status", "result_url", "warning_count", "error_message"]
                    .iter()
                    .any(|f| e.to_string().starts_with(f));
                prop_assert!(named, "{e}");
            }
        }
    }

    #[test]
    fn error_messages_are_cleaned(msg in any::<String>()) {
        let mut map = good_webhook();
        map.insert("status".into(), json!("failed"));
        map.insert("error_message".into(), json!(msg));
        let b = WebhookBody::parse(&map, "bkt").unwrap();
        let m = b.error_message.unwrap();
        prop_assert!(!m.is_empty() && m.chars().count() <= 2000 && !m.chars().any(char::is_control));
    }
}

// --- the worker's artifact ---------------------------------------------------------------------

const NONCE: &str = "5f4dcc3b5aa765d61d8327deb882cf99";
const PREFIX: &str = "code2des/id1/1/";

fn expect(n: &Nonce) -> Expect<'_> {
    Expect { code2des_id: "id1", attempt: 1, nonce: n, prefix: PREFIX, kind: Kind::Result }
}

fn small_limits() -> Limits {
    Limits { max_nodes: 12, max_depth: 3, max_images: 3, ..Limits::default() }
}

fn images() -> Value {
    json!({"a": {"key": "code2des/id1/1/images/a", "mime_type": "image/png"},
           "b": {"key": "code2des/id1/1/images/b", "mime_type": "image/svg+xml"}})
}

fn envelope(doc: Value, images: Value) -> Value {
    json!({"version": 1, "kind": "result", "code2des_id": "id1", "attempt": 1, "nonce": NONCE,
           "warning_count": 0, "document": doc, "images": images})
}

/// Node trees that are mostly buildable, with occasional hostile parts.
fn arb_node() -> impl Strategy<Value = Value> {
    let ty = prop_oneof![
        9 => select(NODE_TYPES.to_vec()).prop_map(Value::from),
        1 => prop_oneof![Just(json!("WIDGET")), Just(json!("frame")), Just(json!(7)), Just(Value::Null)],
    ];
    let image_ref =
        prop_oneof![Just(json!("a")), Just(json!("b")), Just(json!("zz")), Just(json!(7)), Just(Value::Null),];
    let fills = prop::option::of(prop::collection::vec(
        image_ref.clone().prop_map(|r| json!({"type": "IMAGE", "imageRef": r})),
        0..3,
    ));
    // Shadows with and without their colour and offset, and blurs (which have neither).
    let effect = prop_oneof![
        Just(
            json!({"type": "DROP_SHADOW", "color": {"r": 0, "g": 0, "b": 0, "a": 1}, "offset": {"x": 1, "y": 1}, "radius": 2})
        ),
        Just(json!({"type": "INNER_SHADOW", "offset": {"x": 1, "y": 1}, "radius": 2})),
        Just(json!({"type": "DROP_SHADOW", "color": {"r": 0, "g": 0, "b": 0, "a": 1}, "radius": 2})),
        Just(json!({"type": "LAYER_BLUR", "radius": 4})),
    ];
    let effects = prop::option::weighted(0.2, prop::collection::vec(effect, 0..3));
    let leaf = (ty.clone(), fills.clone(), prop::option::of(image_ref.clone()), prop::bool::weighted(0.03), effects)
        .prop_map(|(ty, fills, own_ref, not_object, effects)| {
            if not_object {
                return json!(["not", "a", "node"]);
            }
            let mut m = Map::new();
            m.insert("type".into(), ty);
            m.insert("name".into(), json!("n"));
            if let Some(f) = fills {
                m.insert("fills".into(), Value::Array(f));
            }
            if let Some(e) = effects {
                m.insert("effects".into(), Value::Array(e));
            }
            if let Some(r) = own_ref {
                m.insert("imageRef".into(), r);
            }
            Value::Object(m)
        });
    leaf.prop_recursive(5, 24, 4, move |inner| {
        (ty.clone(), fills.clone(), prop::collection::vec(inner, 0..4), prop::bool::weighted(0.05)).prop_map(
            |(ty, fills, children, bad_children)| {
                let mut m = Map::new();
                m.insert("type".into(), ty);
                if let Some(f) = fills {
                    m.insert("fills".into(), Value::Array(f));
                }
                m.insert("children".into(), if bad_children { json!({"x": children}) } else { Value::Array(children) });
                Value::Object(m)
            },
        )
    })
}

/// The artifact rules for a document, written independently of `artifact::walk_document`.
fn document_ok(doc: &Value, known: &BTreeSet<&str>, limits: &Limits) -> bool {
    fn refs_ok(v: &Value, known: &BTreeSet<&str>) -> bool {
        match v {
            Value::Object(m) => m.iter().all(|(k, inner)| {
                if k == "imageRef" {
                    inner.as_str().is_some_and(|r| known.contains(r))
                } else {
                    refs_ok(inner, known)
                }
            }),
            Value::Array(a) => a.iter().all(|x| refs_ok(x, known)),
            _ => true,
        }
    }
    fn node(v: &Value, depth: usize, count: &mut usize, known: &BTreeSet<&str>, limits: &Limits) -> bool {
        *count += 1;
        let Some(obj) = v.as_object() else { return false };
        if depth > limits.max_depth {
            return false;
        }
        let Some(ty) = obj.get("type").and_then(Value::as_str).filter(|t| NODE_TYPES.contains(t)) else {
            return false;
        };
        // A component needs its `id` and an instance its `componentId` (naming a component
        // before it, of its structure: shared's unit tests hold those rules). The generator
        // writes neither, so every COMPONENT and INSTANCE it makes is refused.
        if matches!(ty, "COMPONENT" | "INSTANCE") {
            return false;
        }
        // A shadow needs its colour and offset; a blur has neither.
        let shadow_ok = |e: &Value| {
            !matches!(e["type"].as_str(), Some("DROP_SHADOW" | "INNER_SHADOW"))
                || (e.get("color").is_some() && e.get("offset").is_some())
        };
        if !obj.get("effects").and_then(Value::as_array).into_iter().flatten().all(shadow_ok) {
            return false;
        }
        let own = obj.iter().filter(|(k, _)| k.as_str() != "children");
        if !own.into_iter().all(|(k, v)| {
            if k == "imageRef" {
                v.as_str().is_some_and(|r| known.contains(r))
            } else {
                refs_ok(v, known)
            }
        }) {
            return false;
        }
        match obj.get("children") {
            None | Some(Value::Null) => true,
            Some(Value::Array(c)) => c.iter().all(|x| node(x, depth + 1, count, known, limits)),
            Some(_) => false,
        }
    }
    let mut count = 0;
    node(doc, 1, &mut count, known, limits) && count <= limits.max_nodes
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn artifact_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let n = Nonce::from_db(NONCE.into());
        prop_assert!(artifact::validate(&bytes, &expect(&n), &Limits::default()).is_err());
        for mime in [Mime::Png, Mime::Jpeg, Mime::Gif, Mime::Svg] {
            let _ = artifact::check_image(&bytes, mime, &Limits::default());
        }
    }

    #[test]
    fn arbitrary_json_is_not_an_artifact(v in arb_json()) {
        let n = Nonce::from_db(NONCE.into());
        prop_assert!(artifact::validate(&serde_json::to_vec(&v).unwrap(), &expect(&n), &Limits::default()).is_err());
    }

    #[test]
    fn documents_are_accepted_exactly_by_the_rules(doc in arb_node()) {
        let n = Nonce::from_db(NONCE.into());
        let limits = small_limits();
        let bytes = serde_json::to_vec(&envelope(doc.clone(), images())).unwrap();
        let known: BTreeSet<&str> = ["a", "b"].into();
        let got = artifact::validate(&bytes, &expect(&n), &limits);
        prop_assert_eq!(got.is_ok(), document_ok(&doc, &known, &limits), "{:?} for {}", got.err(), doc);
    }

    #[test]
    fn envelope_fields_must_match_the_job(
        field in select(vec!["version", "kind", "code2des_id", "attempt", "nonce", "warning_count", "images", "document"]),
        value in prop_oneof![arb_json(), Just(json!(1)), Just(json!("result")), Just(json!("id1")), Just(json!(NONCE))],
    ) {
        let n = Nonce::from_db(NONCE.into());
        let mut art = envelope(json!({"type": "FRAME", "children": [{"type": "TEXT"}]}), images());
        let original = art[field].clone();
        art[field] = value.clone();
        let got = artifact::validate(&serde_json::to_vec(&art).unwrap(), &expect(&n), &Limits::default());
        let still_valid = value == original
            || (field == "warning_count" && (value.is_null() || value.as_i64().is_some_and(|v| v >= 0)))
            || (field == "images" && (value.is_null() || value.as_object().is_some_and(|m| m.is_empty())))
            || (field == "document" && document_ok(&value, &["a", "b"].into(), &Limits::default()));
        if !still_valid {
            prop_assert!(got.is_err(), "{field} = {value} accepted");
        }
    }

    #[test]
    fn image_keys_stay_under_the_job_prefix(segs in prop::collection::vec(segment(), 0..4), base in select(vec![PREFIX, "code2des/id1/2/", "code2des/id2/1/", ""])) {
        let key = format!("{base}{}", segs.join("/"));
        let n = Nonce::from_db(NONCE.into());
        let art = envelope(json!({"type": "FRAME"}), json!({"a": {"key": key, "mime_type": "image/png"}}));
        let got = artifact::validate(&serde_json::to_vec(&art).unwrap(), &expect(&n), &Limits::default());
        prop_assert_eq!(got.is_ok(), is_key_under(&key, PREFIX), "{:?}", key);
        if got.is_ok() {
            prop_assert!(key.starts_with(PREFIX) && !key.split('/').any(|s| s == ".."));
        }
    }
}

// --- SPEC section 7: the retry body and progress reports ----------------------------------------

use code2des_trigger::handler::parse_retry_body;

/// What a retry body means, from the rule alone: empty (or whitespace) or an object whose only
/// member is `attempt`, absent, null or an integer from 1 to 2^31 - 1. Else the field at fault.
fn retry_oracle(bytes: &[u8]) -> Result<Option<i32>, &'static str> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(bytes) else {
        return Err("body");
    };
    // Members are read in key order: the first at fault, unknown or a bad attempt, is named.
    for (k, v) in &m {
        let good = v.is_null() || v.as_i64().is_some_and(|n| (1..=i64::from(i32::MAX)).contains(&n));
        match k.as_str() {
            "attempt" if !good => return Err("attempt"),
            "attempt" => {}
            _ => return Err("body"),
        }
    }
    match m.get("attempt") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_i64() {
            Some(n) if (1..=i64::from(i32::MAX)).contains(&n) => Ok(Some(n as i32)),
            _ => Err("attempt"),
        },
    }
}

fn check_retry(bytes: &[u8]) -> Result<(), TestCaseError> {
    match (parse_retry_body(bytes), retry_oracle(bytes)) {
        (Ok(got), Ok(want)) => prop_assert_eq!(got, want),
        (Err(e), Err(field)) => assert_client_error(&e, field),
        (got, want) => {
            prop_assert!(false, "{:?}: parsed {got:?}, the rule says {want:?}", String::from_utf8_lossy(bytes))
        }
    }
    Ok(())
}

fn attempt_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        arb_json(),
        any::<i64>().prop_map(Value::from),
        (-3i64..5).prop_map(Value::from),
        Just(json!(i32::MAX)),
        Just(json!(i64::from(i32::MAX) + 1)),
        Just(json!(u64::MAX)),
        Just(json!(1.0)),
        Just(json!(2.5)),
        Just(json!("1")),
    ]
}

/// What a progress object should parse to: `(percent, stage)`, or the field at fault. Members
/// are read in key order (a body's object is sorted), so the first at fault in that order is
/// the one named: an unknown member names `progress`; then a missing `percent`, then `stage`.
fn progress_oracle(v: &Value) -> Result<(i16, String), &'static str> {
    let Value::Object(p) = v else { return Err("progress") };
    let percent_ok = |v: &Value| v.as_i64().filter(|n| (0..=100).contains(n));
    let stage_ok = |v: &Value| match v {
        Value::String(s) if (1..=64).contains(&s.chars().count()) && !s.chars().any(char::is_control) => {
            Some(s.clone())
        }
        _ => None,
    };
    for (k, v) in p {
        match k.as_str() {
            // Integers only: a float such as 50.0 has no i64 value.
            "percent" if percent_ok(v).is_none() => return Err("progress.percent"),
            "stage" if stage_ok(v).is_none() => return Err("progress.stage"),
            "percent" | "stage" => {}
            _ => return Err("progress"),
        }
    }
    let percent = p.get("percent").and_then(percent_ok).ok_or("progress.percent")?;
    let stage = p.get("stage").and_then(stage_ok).ok_or("progress.stage")?;
    Ok((percent as i16, stage))
}

fn processing_body(progress: Option<Value>) -> Map<String, Value> {
    let mut m =
        json!({"code2des_id": ID, "attempt": 2, "nonce": "n0nce", "status": "processing"}).as_object().unwrap().clone();
    if let Some(p) = progress {
        m.insert("progress".into(), p);
    }
    m
}

fn check_progress(progress: Option<Value>) -> Result<(), TestCaseError> {
    let want = match &progress {
        None => Err("progress"),
        Some(v) => progress_oracle(v),
    };
    match (WebhookBody::parse(&processing_body(progress.clone()), "bkt"), want) {
        (Ok(b), Ok((percent, stage))) => {
            prop_assert_eq!(b.status, Status::Processing);
            let p = b.progress.expect("a processing report carries its progress");
            prop_assert_eq!((p.percent, p.stage.as_str()), (percent, stage.as_str()));
            prop_assert!(b.result_url.is_none() && b.warning_count.is_none() && b.error_message.is_none());
        }
        (Err(e), Err(field)) => {
            assert_client_error(&e, field);
            // "progress" must not be satisfied by "progress.percent" and the like: exact field.
            prop_assert!(e.to_string()[field.len()..].starts_with(':'), "{e} should name exactly {field}");
        }
        (got, want) => prop_assert!(false, "{progress:?}: parsed {got:?}, the rule says {want:?}"),
    }
    Ok(())
}

fn stage_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        arb_json(),
        nasty_string().prop_map(Value::String),
        "[a-z ]{60,70}".prop_map(Value::String),
        (1usize..=64).prop_map(|n| Value::String("é".repeat(n))),
        (63usize..=66).prop_map(|n| Value::String("s".repeat(n))),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn retry_bodies_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..128)) {
        check_retry(&bytes)?;
    }

    #[test]
    fn retry_bodies_on_json_trees(v in arb_json()) {
        check_retry(&serde_json::to_vec(&v).unwrap())?;
    }

    #[test]
    fn retry_bodies_name_the_attempt(
        attempt in prop::option::of(attempt_value()),
        extra in prop::option::of(("[a-z]{1,8}", arb_json())),
        spaces in "[ \t\r\n]{0,3}",
    ) {
        let mut m = Map::new();
        if let Some(a) = attempt {
            m.insert("attempt".into(), a);
        }
        if let Some((k, v)) = extra {
            m.insert(k, v);
        }
        check_retry(format!("{spaces}{}{spaces}", Value::Object(m)).as_bytes())?;
    }

    #[test]
    fn progress_reports_are_checked(
        percent in prop::option::of(prop_oneof![arb_json(), (-5i64..110).prop_map(Value::from), Just(json!(50.0))]),
        stage in prop::option::of(stage_value()),
        extra in prop::option::of(("[a-z]{1,8}", arb_json())),
    ) {
        let mut p = Map::new();
        if let Some(v) = percent {
            p.insert("percent".into(), v);
        }
        if let Some(v) = stage {
            p.insert("stage".into(), v);
        }
        if let Some((k, v)) = extra {
            p.insert(k, v);
        }
        check_progress(Some(Value::Object(p)))?;
    }

    #[test]
    fn progress_members_of_any_shape_never_panic(v in prop::option::of(arb_json())) {
        check_progress(v)?;
    }

    #[test]
    fn processing_reports_carry_no_result(url in prop_oneof![s3_url().prop_map(Value::String), arb_json()]) {
        let mut body = processing_body(Some(json!({"percent": 5, "stage": "x"})));
        body.insert("result_url".into(), url.clone());
        match WebhookBody::parse(&body, "bkt") {
            Ok(_) => prop_assert!(url.is_null()),
            Err(e) => {
                prop_assert!(!url.is_null());
                assert_client_error(&e, "result_url");
            }
        }
    }
}
