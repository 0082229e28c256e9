//! Newtypes for everything that crosses the boundary. Each is built only by `parse`, so the
//! inside of the service never sees an unchecked string. A rejection names the field, which
//! becomes the 400 message.

use std::fmt;

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use uuid::Uuid;

use crate::field_error::FieldError;
use crate::{checked, REQUIRED};

/// A body member read by `parse`: the messages a 400 gives for it (`is required`, `must be a
/// string`, or `parse`'s own).
macro_rules! deserialize_by_parse {
    ($name:ident) => {
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                checked(d, |v| match v {
                    Value::String(s) => Self::parse(&s).map_err(|e| e.message),
                    Value::Null => Err(REQUIRED.into()),
                    _ => Err("must be a string".into()),
                })
            }
        }
    };
}

/// Longest accepted user string (every text column is varchar(255)).
pub const MAX_TEXT: usize = 255;

fn check_text(field: &'static str, raw: &str, max: usize) -> Result<(), FieldError> {
    let len = raw.chars().count();
    if len == 0 {
        return Err(FieldError::new(field, "must not be empty"));
    }
    if len > max {
        return Err(FieldError::new(field, format!("must be at most {max} characters")));
    }
    if raw.chars().any(char::is_control) {
        return Err(FieldError::new(field, "must not contain control characters"));
    }
    Ok(())
}

macro_rules! text_newtype {
    ($(#[$doc:meta])* $name:ident, $field:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub struct $name(String);

        impl $name {
            /// The API field this value comes from, used in 400 messages.
            pub const FIELD: &'static str = $field;

            pub fn parse(raw: &str) -> Result<Self, FieldError> {
                check_text($field, raw, MAX_TEXT)?;
                Ok(Self(raw.to_owned()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        deserialize_by_parse!($name);
    };
}

text_newtype!(
    /// A Page Import id (varchar(255) in `page_import`).
    PageImportId,
    "pageImportId"
);
text_newtype!(
    /// The Figma file the plugin discovers jobs by.
    FigmaFileKey,
    "figmaFileKey"
);
text_newtype!(
    /// User-visible generated screen identity.
    ScreenId,
    "screenId"
);
text_newtype!(
    /// Optional initial Figma placement context.
    PlacementTarget,
    "placementTarget"
);
text_newtype!(
    /// Client-chosen key that makes a retried trigger return the first call's job.
    IdempotencyKey,
    "Idempotency-Key"
);

/// The stage label of a worker's progress report (SPEC section 7: 1–64 characters).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProgressStage(String);

impl ProgressStage {
    pub const MAX: usize = 64;

    pub fn parse(field: &'static str, raw: &str) -> Result<Self, FieldError> {
        check_text(field, raw, Self::MAX)?;
        Ok(Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A positive 32-bit id from the path (`organization.id`, `project.id` are `serial`).
fn parse_positive_i32(field: &'static str, raw: &str) -> Result<i32, FieldError> {
    // Digits only: no sign, no whitespace, no leading '+', so one id has one spelling.
    if raw.is_empty() || raw.len() > 10 || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(FieldError::new(field, "must be a positive 32-bit integer"));
    }
    match raw.parse::<i32>() {
        Ok(v) if v > 0 => Ok(v),
        _ => Err(FieldError::new(field, "must be a positive 32-bit integer")),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OrganizationId(i32);

impl OrganizationId {
    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        parse_positive_i32("organizationId", raw).map(Self)
    }

    /// A value read from the database (a `serial`): `None` unless positive.
    pub fn new(value: i32) -> Option<Self> {
        (value > 0).then_some(Self(value))
    }

    pub fn get(self) -> i32 {
        self.0
    }
}

impl fmt::Display for OrganizationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProjectId(i32);

impl ProjectId {
    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        parse_positive_i32("projectId", raw).map(Self)
    }

    /// A value read from the database (a `serial`): `None` unless positive.
    pub fn new(value: i32) -> Option<Self> {
        (value > 0).then_some(Self(value))
    }

    pub fn get(self) -> i32 {
        self.0
    }
}

impl fmt::Display for ProjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A job id: a UUID, stored and compared in its lowercase hyphenated form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Code2desId(Uuid);

impl Code2desId {
    /// A fresh, time-ordered id (UUIDv7), so ids sort by creation like `created_at`.
    pub fn new_v7() -> Self {
        Self(Uuid::now_v7())
    }

    pub fn parse_field(field: &'static str, raw: &str) -> Result<Self, FieldError> {
        // Only the hyphenated 36-character form: braces, URNs and simple forms are refused.
        // Hex case is not significant (RFC 9562); the id is stored and answered lowercase.
        if raw.len() != 36 {
            return Err(FieldError::new(field, "must be a UUID"));
        }
        Uuid::try_parse(raw).map(Self).map_err(|_| FieldError::new(field, "must be a UUID"))
    }

    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        Self::parse_field("code2desId", raw)
    }

    /// A UUID this service issued (carried in a cursor it authenticated).
    pub fn from_uuid(id: Uuid) -> Self {
        Self(id)
    }

    /// A value read from the database: the hyphenated form only, as [`Self::parse`] takes it.
    pub fn from_db(raw: &str) -> Option<Self> {
        Self::parse(raw).ok()
    }

    pub fn uuid(self) -> Uuid {
        self.0
    }

    pub fn to_db(self) -> String {
        self.0.hyphenated().to_string()
    }
}

impl fmt::Display for Code2desId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

/// As its hyphenated lowercase text, the form the user API and the worker protocol carry.
impl serde::Serialize for Code2desId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A Figma node id: `12:34`, or `I12:34;56:78` for a sublayer of an instance.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NodeId(String);

deserialize_by_parse!(NodeId);

impl NodeId {
    pub fn parse(raw: &str) -> Result<Self, FieldError> {
        check_text("nodeId", raw, MAX_TEXT)?;
        if !is_node_id(raw) {
            return Err(FieldError::new("nodeId", "must be a Figma node id such as 12:34 or I12:34;56:78"));
        }
        Ok(Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn is_pair(part: &str) -> bool {
    match part.split_once(':') {
        Some((a, b)) => {
            !a.is_empty()
                && !b.is_empty()
                && a.len() <= 10
                && b.len() <= 10
                && a.bytes().all(|c| c.is_ascii_digit())
                && b.bytes().all(|c| c.is_ascii_digit())
        }
        None => false,
    }
}

fn is_node_id(raw: &str) -> bool {
    match raw.strip_prefix('I') {
        // An instance sublayer: the instance's id, then one id per nesting level.
        Some(rest) => {
            let mut parts = rest.split(';');
            let first = parts.next().is_some_and(is_pair);
            let mut more = 0;
            for p in parts {
                if !is_pair(p) {
                    return false;
                }
                more += 1;
            }
            first && more >= 1
        }
        None => is_pair(raw),
    }
}

/// The caller: the Cognito `sub` (or a backend actor), stored in `created_by` (varchar(50)).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Subject(String);

impl Subject {
    pub const MAX: usize = 50;

    /// `None` when the claim cannot be a subject at all; the caller answers 401.
    pub fn parse(raw: &str) -> Option<Self> {
        check_text("sub", raw, Self::MAX).ok().map(|_| Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The ids bind as the columns they are stored in (`shared`'s fenced SQL): job ids as their
/// lowercase hyphenated text (varchar), organization and project ids as int4, the caller as
/// varchar. Encoding only: postgres-types does no I/O.
#[cfg(feature = "sql")]
mod sql {
    use bytes::BytesMut;
    use postgres_types::{to_sql_checked, IsNull, ToSql, Type};

    use super::{Code2desId, OrganizationId, ProjectId, Subject};

    type BoxError = Box<dyn std::error::Error + Sync + Send>;

    impl ToSql for Code2desId {
        fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
            let mut buf = [0u8; uuid::fmt::Hyphenated::LENGTH];
            let text: &str = self.uuid().hyphenated().encode_lower(&mut buf);
            text.to_sql(ty, out)
        }

        fn accepts(ty: &Type) -> bool {
            <&str as ToSql>::accepts(ty)
        }

        to_sql_checked!();
    }

    impl ToSql for OrganizationId {
        fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
            self.get().to_sql(ty, out)
        }

        fn accepts(ty: &Type) -> bool {
            <i32 as ToSql>::accepts(ty)
        }

        to_sql_checked!();
    }

    impl ToSql for ProjectId {
        fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
            self.get().to_sql(ty, out)
        }

        fn accepts(ty: &Type) -> bool {
            <i32 as ToSql>::accepts(ty)
        }

        to_sql_checked!();
    }

    impl ToSql for Subject {
        fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
            self.as_str().to_sql(ty, out)
        }

        fn accepts(ty: &Type) -> bool {
            <&str as ToSql>::accepts(ty)
        }

        to_sql_checked!();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_ids_follow_figma_forms() {
        for ok in ["1:2", "12:34", "I12:34;56:78", "I1:2;3:4;5:6"] {
            assert!(NodeId::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["", "12", "12:", ":3", "a:b", "I12:34", "I12:34;", "12:34;56:78", " 1:2", "1:2\n", "-1:2"] {
            assert!(NodeId::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn path_ids_are_positive_i32_digits() {
        assert_eq!(OrganizationId::parse("1").unwrap().get(), 1);
        assert_eq!(OrganizationId::parse("2147483647").unwrap().get(), i32::MAX);
        for bad in ["0", "-1", "+1", "2147483648", "1.0", " 1", "", "01a", "99999999999"] {
            assert!(OrganizationId::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn text_fields_reject_empty_long_and_control() {
        assert!(ScreenId::parse("s").is_ok());
        assert!(ScreenId::parse(&"é".repeat(255)).is_ok());
        assert!(ScreenId::parse(&"x".repeat(256)).is_err());
        assert!(ScreenId::parse("").is_err());
        assert!(ScreenId::parse("a\u{0}b").is_err());
        assert!(ScreenId::parse("a\u{7f}").is_err());
        let err = ScreenId::parse("").unwrap_err();
        assert!(err.to_string().contains("screenId"));
    }

    #[test]
    fn uuids_are_hyphenated_and_case_insensitive() {
        let id = Code2desId::new_v7();
        assert_eq!(Code2desId::parse(&id.to_string()).unwrap(), id);
        assert!(Code2desId::parse(&id.uuid().simple().to_string()).is_err());
        assert!(Code2desId::parse("not-a-uuid").is_err());
        assert_eq!(Code2desId::parse(&id.to_string().to_uppercase()).unwrap().to_db(), id.to_db());
    }
}
