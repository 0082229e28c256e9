//! Newtypes for everything that crosses the boundary. Each is built only by `parse`, so the
//! inside of the service never sees an unchecked string. A rejection names the field, which
//! becomes the 400 message.

use std::fmt;

use uuid::Uuid;

use crate::error::ApiError;

/// Longest accepted user string (every text column is varchar(255)).
pub const MAX_TEXT: usize = 255;

fn check_text(field: &'static str, raw: &str, max: usize) -> Result<(), ApiError> {
    let len = raw.chars().count();
    if len == 0 {
        return Err(ApiError::invalid(field, "must not be empty"));
    }
    if len > max {
        return Err(ApiError::invalid(field, format!("must be at most {max} characters")));
    }
    if raw.chars().any(char::is_control) {
        return Err(ApiError::invalid(field, "must not contain control characters"));
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

            pub fn parse(raw: &str) -> Result<Self, ApiError> {
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

    pub fn parse(field: &'static str, raw: &str) -> Result<Self, ApiError> {
        check_text(field, raw, Self::MAX)?;
        Ok(Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A positive 32-bit id from the path (`organization.id`, `project.id` are `serial`).
fn parse_positive_i32(field: &'static str, raw: &str) -> Result<i32, ApiError> {
    // Digits only: no sign, no whitespace, no leading '+', so one id has one spelling.
    if raw.is_empty() || raw.len() > 10 || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ApiError::invalid(field, "must be a positive 32-bit integer"));
    }
    match raw.parse::<i32>() {
        Ok(v) if v > 0 => Ok(v),
        _ => Err(ApiError::invalid(field, "must be a positive 32-bit integer")),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OrganizationId(i32);

impl OrganizationId {
    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        parse_positive_i32("organizationId", raw).map(Self)
    }
    pub fn get(self) -> i32 {
        self.0
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProjectId(i32);

impl ProjectId {
    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        parse_positive_i32("projectId", raw).map(Self)
    }
    pub fn get(self) -> i32 {
        self.0
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

    pub fn parse_field(field: &'static str, raw: &str) -> Result<Self, ApiError> {
        // Only the hyphenated 36-character form: braces, URNs and simple forms are refused.
        // Hex case is not significant (RFC 9562); the id is stored and answered lowercase.
        if raw.len() != 36 {
            return Err(ApiError::invalid(field, "must be a UUID"));
        }
        Uuid::try_parse(raw).map(Self).map_err(|_| ApiError::invalid(field, "must be a UUID"))
    }

    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        Self::parse_field("code2desId", raw)
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

/// A Figma node id: `12:34`, or `I12:34;56:78` for a sublayer of an instance.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NodeId(String);

impl NodeId {
    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        check_text("nodeId", raw, MAX_TEXT)?;
        if !is_node_id(raw) {
            return Err(ApiError::invalid("nodeId", "must be a Figma node id such as 12:34 or I12:34;56:78"));
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

/// Job status, stored as the `code2des_status` enum labels '0', '1', '2'.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Processing,
    Completed,
    Failed,
}

impl Status {
    pub fn from_db(label: &str) -> Option<Self> {
        match label {
            "0" => Some(Self::Processing),
            "1" => Some(Self::Completed),
            "2" => Some(Self::Failed),
            _ => None,
        }
    }

    pub fn db_label(self) -> &'static str {
        match self {
            Self::Processing => "0",
            Self::Completed => "1",
            Self::Failed => "2",
        }
    }

    pub fn api_name(self) -> &'static str {
        match self {
            Self::Processing => "processing",
            Self::Completed => "completed",
            Self::Failed => "failed",
        }
    }

    pub fn parse_api(field: &'static str, raw: &str) -> Result<Self, ApiError> {
        match raw {
            "processing" => Ok(Self::Processing),
            "completed" => Ok(Self::Completed),
            "failed" => Ok(Self::Failed),
            _ => Err(ApiError::invalid(field, "must be one of processing, completed, failed")),
        }
    }
}

/// An object in the artifact bucket, as `s3://bucket/key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Pointer {
    pub bucket: String,
    pub key: String,
}

impl S3Pointer {
    /// Parses `s3://bucket/key`. The key must be a plain relative path: no empty, `.` or `..`
    /// segments and no control characters, so a prefix check on it means what it says.
    pub fn parse(field: &'static str, raw: &str) -> Result<Self, ApiError> {
        if raw.len() > 1000 {
            return Err(ApiError::invalid(field, "must be at most 1000 characters"));
        }
        let rest =
            raw.strip_prefix("s3://").ok_or_else(|| ApiError::invalid(field, "must be an s3://bucket/key URL"))?;
        let (bucket, key) =
            rest.split_once('/').ok_or_else(|| ApiError::invalid(field, "must be an s3://bucket/key URL"))?;
        if bucket.is_empty()
            || !bucket.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        {
            return Err(ApiError::invalid(field, "names an invalid bucket"));
        }
        check_key(field, key)?;
        Ok(Self { bucket: bucket.to_owned(), key: key.to_owned() })
    }

    pub fn is_under(&self, bucket: &str, prefix: &str) -> bool {
        self.bucket == bucket && is_key_under(&self.key, prefix)
    }
}

impl fmt::Display for S3Pointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s3://{}/{}", self.bucket, self.key)
    }
}

/// Checks an object key as a relative path (see [`S3Pointer::parse`]).
pub fn check_key(field: &'static str, key: &str) -> Result<(), ApiError> {
    if key.is_empty() || key.len() > 1024 {
        return Err(ApiError::invalid(field, "must name an object key of 1 to 1024 bytes"));
    }
    if key.chars().any(|c| c.is_control() || c == '\\') {
        return Err(ApiError::invalid(field, "must not contain control characters or backslashes"));
    }
    if key.split('/').any(|seg| seg.is_empty() || seg == "." || seg == "..") {
        return Err(ApiError::invalid(field, "must not contain empty, '.' or '..' path segments"));
    }
    Ok(())
}

/// True when `key` is a checked key strictly below `prefix` (which ends in '/').
pub fn is_key_under(key: &str, prefix: &str) -> bool {
    check_key("key", key).is_ok() && key.len() > prefix.len() && key.starts_with(prefix)
}

/// The per-attempt prefix every object of a job lives under.
pub fn job_prefix(id: Code2desId, attempt: i32) -> String {
    format!("code2des/{id}/{attempt}/")
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
    fn s3_pointers_refuse_traversal() {
        let p = S3Pointer::parse("result_url", "s3://b/code2des/x/1/result.json").unwrap();
        assert!(p.is_under("b", "code2des/x/1/"));
        assert!(!p.is_under("c", "code2des/x/1/"));
        for bad in [
            "s3://b/code2des/x/1/../2/r.json",
            "s3://b/code2des/x/1//r.json",
            "s3://b/code2des/x/1/./r.json",
            "http://b/k",
            "s3://b",
            "s3:///k",
            "s3://B/k",
        ] {
            assert!(S3Pointer::parse("result_url", bad).is_err(), "{bad}");
        }
        assert!(!is_key_under("code2des/x/1/", "code2des/x/1/"));
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
