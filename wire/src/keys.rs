//! Object keys in the artifact bucket: `s3://bucket/key` pointers, checked relative paths, and
//! the per-attempt prefix every object of a job lives under (SPEC section 4).

use std::fmt;

use crate::field_error::FieldError;
use crate::ids::Code2desId;

/// The longest `s3://bucket/key` pointer accepted (a webhook's `result_url`, read by
/// [`S3Pointer::parse`] and stated by its schema).
pub const MAX_POINTER: usize = 1000;

/// The longest object key (S3's own limit, in bytes).
pub const MAX_KEY_BYTES: usize = 1024;

/// An object in the artifact bucket, as `s3://bucket/key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Pointer {
    pub bucket: String,
    pub key: String,
}

impl S3Pointer {
    /// Parses `s3://bucket/key`. The key must be a plain relative path: no empty, `.` or `..`
    /// segments and no control characters, so a prefix check on it means what it says.
    pub fn parse(field: &'static str, raw: &str) -> Result<Self, FieldError> {
        // Characters, as the schema's maxLength counts them.
        if raw.chars().count() > MAX_POINTER {
            return Err(FieldError::new(field, format!("must be at most {MAX_POINTER} characters")));
        }
        let rest = raw.strip_prefix("s3://").ok_or_else(|| FieldError::new(field, "must be an s3://bucket/key URL"))?;
        let (bucket, key) =
            rest.split_once('/').ok_or_else(|| FieldError::new(field, "must be an s3://bucket/key URL"))?;
        if bucket.is_empty()
            || !bucket.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        {
            return Err(FieldError::new(field, "names an invalid bucket"));
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
pub fn check_key(field: &'static str, key: &str) -> Result<(), FieldError> {
    if key.is_empty() || key.len() > MAX_KEY_BYTES {
        return Err(FieldError::new(field, format!("must name an object key of 1 to {MAX_KEY_BYTES} bytes")));
    }
    if key.chars().any(|c| c.is_control() || c == '\\') {
        return Err(FieldError::new(field, "must not contain control characters or backslashes"));
    }
    if key.split('/').any(|seg| seg.is_empty() || seg == "." || seg == "..") {
        return Err(FieldError::new(field, "must not contain empty, '.' or '..' path segments"));
    }
    Ok(())
}

/// True when `key` is a checked key strictly below `prefix` (which ends in '/').
pub fn is_key_under(key: &str, prefix: &str) -> bool {
    check_key("key", key).is_ok() && key.len() > prefix.len() && key.starts_with(prefix)
}

/// The prefix every object of every attempt of a job lives under.
pub fn job_root(id: Code2desId) -> String {
    format!("code2des/{id}/")
}

/// The per-attempt prefix every object of a job lives under.
pub fn job_prefix(id: Code2desId, attempt: i32) -> String {
    format!("code2des/{id}/{attempt}/")
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
