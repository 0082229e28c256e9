//! The wire of Code2Des, described once (SPEC section 4): the document's node tree ([`node`]),
//! the result artifact with its images and warnings ([`artifact`]), the manifest and the
//! webhook bodies with the status names ([`protocol`]), and the ids and keys they carry
//! ([`ids`], [`keys`]). Every type is Serialize, Deserialize and JsonSchema, and every bound is
//! a newtype or a constant defined once, read by both the check and the schema. The converter
//! builds the document with these types, the worker writes the artifact and the webhook with
//! them, and `shared` reads them. No I/O: serde, schemars and uuid only.
//!
//! They are read through [`read`], so an error keeps the JSON path of the member at fault, and
//! `schemas/*.schema.json` and openapi.yaml's generated components come from the same types
//! ([`schemas`], [`openapi_components`]).

use std::borrow::Cow;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// An enum of the wire, each JSON name written once: the variants, their names, and `ALL`.
macro_rules! wire_enum {
    ($(#[$m:meta])* $vis:vis enum $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal,)* }) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
        $(#[$m])*
        $vis enum $name {
            $($(#[$vm])* #[serde(rename = $s)] $v,)*
        }

        impl $name {
            /// Every JSON name, in declaration order.
            pub const ALL: &'static [&'static str] = &[$($s),*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$v => $s,)*
                }
            }

            /// The variant of a JSON name.
            pub fn from_name(name: &str) -> Option<Self> {
                match name {
                    $($s => Some(Self::$v),)*
                    _ => None,
                }
            }
        }
    };
}

pub mod artifact;
pub mod field_error;
pub mod ids;
pub mod keys;
pub mod node;
pub mod protocol;
mod schema;
pub mod shape;
pub mod trace;

pub use node::NODE_DEFINITIONS;
pub use schema::{openapi_components, schemas};

/// A step of a JSON path: a member's name or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// Why a JSON value is not the wire type it should be, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// From the root to the member at fault (for [`FaultKind::Missing`], the missing member).
    pub path: Vec<Seg>,
    pub kind: FaultKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultKind {
    /// A required member is absent, or null where null is not allowed.
    Missing,
    /// A member its object does not allow (`deny_unknown_fields`); the path is the object's.
    Unknown(String),
    /// What the member's type said is wrong with it.
    Invalid(String),
}

/// What a checked member's type says for null, so it reads as absent (see [`FaultKind::Missing`]).
pub const REQUIRED: &str = "is required";

/// Reads a wire type from a JSON value (`&Value`, `&Map`), keeping the path of the first
/// member at fault.
pub fn read<'de, T: Deserialize<'de>>(d: impl Deserializer<'de, Error = serde_json::Error>) -> Result<T, Fault> {
    serde_path_to_error::deserialize(d).map_err(fault)
}

/// Reads a wire type, a JSON object, straight from JSON text (no `Value` in between), as
/// [`read`] does.
pub fn read_slice<'de, T: Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, Fault> {
    // serde's derived structs also take an array of the members in order; the wire has none.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        let problem = match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
            Ok(_) => "not a JSON object".to_owned(),
            Err(e) => format!("not JSON: {e}"),
        };
        return Err(Fault { path: Vec::new(), kind: FaultKind::Invalid(problem) });
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(fault)?;
    de.end().map_err(|e| Fault { path: Vec::new(), kind: FaultKind::Invalid(format!("not JSON: {e}")) })?;
    Ok(value)
}

fn fault(e: serde_path_to_error::Error<serde_json::Error>) -> Fault {
    let inner = e.inner();
    if inner.is_syntax() || inner.is_eof() {
        return Fault { path: Vec::new(), kind: FaultKind::Invalid(format!("not JSON: {inner}")) };
    }
    let mut path: Vec<Seg> = e.path().iter().filter_map(seg).collect();
    // The message alone: text read from bytes ends in where it is, which the path says better.
    let full = inner.to_string();
    let position = format!(" at line {} column {}", inner.line(), inner.column());
    let message = full.strip_suffix(position.as_str()).unwrap_or(&full);
    // serde's own wording for these two (`de::Error::missing_field`, `unknown_field`).
    let quoted = |prefix: &str| message.strip_prefix(prefix).and_then(|r| r.split_once('`')).map(|(f, _)| f);
    let kind = if let Some(field) = quoted("missing field `") {
        path.push(Seg::Key(field.to_owned()));
        FaultKind::Missing
    } else if let Some(field) = quoted("unknown field `") {
        // The path ends at the member; the fault is its object's.
        if path.last() == Some(&Seg::Key(field.to_owned())) {
            path.pop();
        }
        FaultKind::Unknown(field.to_owned())
    } else if message == REQUIRED {
        FaultKind::Missing
    } else {
        FaultKind::Invalid(message.to_owned())
    };
    Fault { path, kind }
}

pub(crate) fn seg(s: &serde_path_to_error::Segment) -> Option<Seg> {
    match s {
        serde_path_to_error::Segment::Seq { index } => Some(Seg::Index(*index)),
        serde_path_to_error::Segment::Map { key } => Some(Seg::Key(key.clone())),
        _ => None,
    }
}

impl Fault {
    /// What is wrong, in the words a client reads after the member's name.
    pub fn message(&self) -> Cow<'_, str> {
        match &self.kind {
            FaultKind::Missing => REQUIRED.into(),
            FaultKind::Unknown(k) => format!("unknown field {k:?}").into(),
            FaultKind::Invalid(m) => m.as_str().into(),
        }
    }

    /// The path as a 400 names a body member: `progress.percent`.
    pub fn field(&self) -> String {
        let names: Vec<String> = self
            .path
            .iter()
            .map(|s| match s {
                Seg::Key(k) => k.clone(),
                Seg::Index(i) => i.to_string(),
            })
            .collect();
        if names.is_empty() {
            "body".to_owned()
        } else {
            names.join(".")
        }
    }

    /// The path from the root `$`: `$.images["my logo"].key`.
    pub fn json_path(&self) -> String {
        json_path("$", &self.path)
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.json_path(), self.message())
    }
}

/// `base` followed by each step: `.name` (or `["name"]` when the name is not a plain
/// identifier) and `[index]`.
pub fn json_path(base: &str, path: &[Seg]) -> String {
    let mut out = base.to_owned();
    for s in path {
        match s {
            Seg::Key(k) => out.push_str(&member(k)),
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// `.name`, or `["name"]` when the name is not a plain identifier.
pub fn member(name: &str) -> String {
    let plain = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        format!(".{name}")
    } else {
        format!("[{}]", Value::String(name.to_owned()))
    }
}

/// A JSON object read as `T`. serde's derived structs also take an array of their members in
/// order; the wire has no such form, so a member holding a struct holds an `Obj` of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Obj<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Only<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Only<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                // The same map access, so the path of a member at fault is still tracked.
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Only(std::marker::PhantomData)).map(Obj)
    }
}

impl<T: serde::Serialize> serde::Serialize for Obj<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<T: schemars::JsonSchema> schemars::JsonSchema for Obj<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }

    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        T::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

/// For a hand-written `Deserialize`: the member's JSON value, checked by `check`, whose error
/// is the message a client reads (the types' own wording, not serde's).
pub fn checked<'de, D, T>(d: D, check: impl FnOnce(Value) -> Result<T, Cow<'static, str>>) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    let v = Value::deserialize(d)?;
    check(v).map_err(D::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        #[allow(dead_code)]
        n: u8,
    }

    #[derive(Debug, Deserialize)]
    struct Outer {
        #[allow(dead_code)]
        items: Vec<Obj<Inner>>,
    }

    fn fault(v: Value) -> Fault {
        read::<Outer>(&v).unwrap_err()
    }

    #[test]
    fn a_fault_keeps_the_path_of_its_member() {
        let f = fault(json!({"items": [{"n": 1}, {"n": "x"}]}));
        assert_eq!(f.path, [Seg::Key("items".into()), Seg::Index(1), Seg::Key("n".into())]);
        assert_eq!(f.field(), "items.1.n");
        assert!(f.to_string().starts_with("$.items[1].n: invalid type: string"), "{f}");
        // A missing member is named, under its object.
        let f = fault(json!({"items": [{}]}));
        assert_eq!((f.json_path(), f.kind), ("$.items[0].n".to_owned(), FaultKind::Missing));
        // An unknown member is its object's fault.
        let f = fault(json!({"items": [{"n": 1, "my key": 2}]}));
        assert_eq!((f.json_path(), &f.kind), ("$.items[0]".to_owned(), &FaultKind::Unknown("my key".into())));
        assert_eq!(f.message(), r#"unknown field "my key""#);
    }

    #[test]
    fn a_struct_is_an_object_never_an_array() {
        // serde's derive alone would read `[1]` as `{"n": 1}`.
        let f = fault(json!({"items": [[1]]}));
        assert_eq!(f.json_path(), "$.items[0]");
        assert!(f.message().ends_with("expected an object"), "{f}");
        let top = read_slice::<Outer>(b" [[{\"n\": 1}]]").unwrap_err();
        assert_eq!(top.to_string(), "$: not a JSON object");
        assert!(read_slice::<Outer>(b"{\"items\": [").unwrap_err().to_string().starts_with("$: not JSON: EOF"));
        assert!(read_slice::<Outer>(b"{\"items\": []} x")
            .unwrap_err()
            .to_string()
            .starts_with("$: not JSON: trailing"));
    }

    #[test]
    fn member_names_are_plain_or_quoted() {
        assert_eq!(
            json_path("$", &[Seg::Key("a_1".into()), Seg::Key("my logo".into()), Seg::Key("1a".into())]),
            r#"$.a_1["my logo"]["1a"]"#
        );
    }
}
