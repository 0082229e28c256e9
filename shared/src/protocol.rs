//! The worker protocol of SPEC section 4 (snake_case): the manifest trigger writes, and the
//! webhook body the worker sends back. The artifact lives in [`crate::artifact`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::http::{optional_str, required_str};
use crate::types::{job_prefix, Code2desId, S3Pointer, Status};

pub const PROTOCOL_VERSION: u32 = 1;
/// Cap on a stored error message (SPEC section 4).
pub const MAX_ERROR_MESSAGE: usize = 2000;
/// Stored for a failure reported without any message, so clients always see a reason.
pub const DEFAULT_FAILURE: &str = "conversion failed";

/// `code2des/{id}/{attempt}/manifest.json`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Manifest {
    pub version: u32,
    pub code2des_id: String,
    pub attempt: i32,
    pub nonce: String,
    pub organization_id: i32,
    pub project_id: i32,
    pub page_import_id: String,
    pub capture_url: Option<String>,
    pub figma_file_key: String,
    pub screen_id: String,
    pub placement_target: Option<String>,
    pub callback_url: String,
    pub result_prefix: String,
}

impl Manifest {
    pub fn key(id: &str, attempt: i32) -> String {
        format!("code2des/{id}/{attempt}/manifest.json")
    }
}

/// A validated webhook body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookBody {
    pub code2des_id: Code2desId,
    pub attempt: i32,
    pub nonce: String,
    pub status: Status,
    pub result_url: Option<String>,
    pub warning_count: Option<i32>,
    /// Already stripped of control characters and capped.
    pub error_message: Option<String>,
}

fn int_field(body: &Map<String, Value>, field: &'static str, min: i64) -> Result<Option<i32>, ApiError> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(v) if v >= min && v <= i64::from(i32::MAX) => Ok(Some(v as i32)),
            _ => Err(ApiError::invalid(field, format!("must be an integer from {min} to {}", i32::MAX))),
        },
        Some(_) => Err(ApiError::invalid(field, "must be an integer")),
    }
}

/// Control characters removed, then cut to [`MAX_ERROR_MESSAGE`] characters.
pub fn clean_error_message(raw: &str) -> Option<String> {
    let cleaned: String = raw.chars().filter(|c| !c.is_control()).take(MAX_ERROR_MESSAGE).collect();
    let trimmed = cleaned.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

impl WebhookBody {
    /// Parses and checks everything that can be checked without the database, including that
    /// a result_url lies under `s3://{bucket}/code2des/{id}/{attempt}/` of the body's own job.
    pub fn parse(body: &Map<String, Value>, bucket: &str) -> Result<Self, ApiError> {
        let code2des_id = Code2desId::parse_field("code2des_id", required_str(body, "code2des_id")?)?;
        let attempt = int_field(body, "attempt", 1)?.ok_or_else(|| ApiError::invalid("attempt", "is required"))?;
        let nonce = required_str(body, "nonce")?;
        if nonce.is_empty() || nonce.len() > 255 || nonce.chars().any(char::is_control) {
            return Err(ApiError::invalid("nonce", "must be 1 to 255 characters"));
        }
        let status = match required_str(body, "status")? {
            "completed" => Status::Completed,
            "failed" => Status::Failed,
            _ => return Err(ApiError::invalid("status", "must be completed or failed")),
        };
        let result_url = match optional_str(body, "result_url")? {
            Some(raw) => {
                let ptr = S3Pointer::parse("result_url", raw)?;
                if !ptr.is_under(bucket, &job_prefix(code2des_id, attempt)) {
                    return Err(ApiError::invalid(
                        "result_url",
                        "must be under s3://{bucket}/code2des/{code2des_id}/{attempt}/ of this job",
                    ));
                }
                Some(ptr.to_string())
            }
            None if status == Status::Completed => {
                return Err(ApiError::invalid("result_url", "is required when status is completed"))
            }
            None => None,
        };
        let warning_count = int_field(body, "warning_count", 0)?;
        let error_message = match status {
            // A completed job has no failure detail; anything sent is ignored, not stored.
            Status::Completed => {
                optional_str(body, "error_message")?;
                None
            }
            _ => Some(
                optional_str(body, "error_message")?
                    .and_then(clean_error_message)
                    .unwrap_or_else(|| DEFAULT_FAILURE.to_owned()),
            ),
        };
        Ok(Self { code2des_id, attempt, nonce: nonce.to_owned(), status, result_url, warning_count, error_message })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<WebhookBody, ApiError> {
        WebhookBody::parse(v.as_object().unwrap(), "bkt")
    }

    const ID: &str = "01890a5d-ac96-774b-bcce-b302099a8057";

    #[test]
    fn completed_needs_result_url_under_own_prefix() {
        let ok = json!({"code2des_id": ID, "attempt": 1, "nonce": "n", "status": "completed",
                        "result_url": format!("s3://bkt/code2des/{ID}/1/result.json")});
        assert!(parse(ok).is_ok());
        for url in [
            format!("s3://other/code2des/{ID}/1/result.json"),
            format!("s3://bkt/code2des/{ID}/2/result.json"),
            format!("s3://bkt/code2des/{ID}/1/../2/result.json"),
            "s3://bkt/code2des/01890a5d-ac96-774b-bcce-b302099a8058/1/r.json".to_owned(),
            format!("s3://bkt/code2des/{ID}/1/"),
        ] {
            let bad = json!({"code2des_id": ID, "attempt": 1, "nonce": "n", "status": "completed", "result_url": url});
            let err = parse(bad).unwrap_err();
            assert!(err.to_string().starts_with("result_url"), "{url}: {err}");
        }
        let missing = json!({"code2des_id": ID, "attempt": 1, "nonce": "n", "status": "completed"});
        assert!(parse(missing).unwrap_err().to_string().starts_with("result_url"));
    }

    #[test]
    fn error_message_is_cleaned_and_capped() {
        let long = format!("a\u{0}b\nc{}", "x".repeat(5000));
        let v = json!({"code2des_id": ID, "attempt": 1, "nonce": "n", "status": "failed", "error_message": long});
        let b = parse(v).unwrap();
        let m = b.error_message.unwrap();
        assert!(m.starts_with("abcx"));
        assert_eq!(m.chars().count(), MAX_ERROR_MESSAGE);
    }

    #[test]
    fn fields_are_named_in_errors() {
        for (v, field) in [
            (json!({"attempt": 1, "nonce": "n", "status": "failed"}), "code2des_id"),
            (json!({"code2des_id": ID, "attempt": 0, "nonce": "n", "status": "failed"}), "attempt"),
            (json!({"code2des_id": ID, "attempt": "1", "nonce": "n", "status": "failed"}), "attempt"),
            (json!({"code2des_id": ID, "attempt": 1, "nonce": "", "status": "failed"}), "nonce"),
            (json!({"code2des_id": ID, "attempt": 1, "nonce": "n", "status": "done"}), "status"),
            (
                json!({"code2des_id": ID, "attempt": 1, "nonce": "n", "status": "failed", "warning_count": -1}),
                "warning_count",
            ),
        ] {
            let err = parse(v).unwrap_err();
            assert!(err.to_string().starts_with(field), "{field}: {err}");
        }
    }
}
