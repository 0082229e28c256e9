//! The worker protocol of SPEC section 4 (snake_case): the manifest trigger writes, and the
//! webhook body the worker sends back. The artifact lives in [`crate::domain::artifact`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::domain::fields::{optional_str, required_str};
use crate::domain::ids::{Code2desId, ProgressStage};
use crate::domain::job::Status;
use crate::domain::keys::{job_prefix, S3Pointer};
use crate::error::ApiError;

pub const PROTOCOL_VERSION: u32 = 1;
/// Cap on a stored error message (SPEC section 4).
pub const MAX_ERROR_MESSAGE: usize = 2000;
/// Stored for a failure reported without any message, so clients always see a reason.
pub const DEFAULT_FAILURE: &str = "conversion failed";

/// The manifest (SPEC section 4): written by trigger (and retry) at
/// `code2des/{code2des_id}/{attempt}/manifest.json` in the artifact bucket, one per attempt; in
/// AWS it reaches the worker as an S3 event through SQS. The worker echoes `code2des_id`,
/// `attempt` and `nonce` in its artifact and in every webhook, and writes under `result_prefix`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct Manifest {
    /// The protocol version, 1.
    #[schemars(range(min = 1, max = 1))]
    pub version: u32,
    /// The job (a UUID).
    pub code2des_id: String,
    /// The attempt this manifest is for, from 1; a retry writes the next one's.
    #[schemars(range(min = 1))]
    pub attempt: i32,
    /// The attempt's secret correlation value: echoed, never shown to users.
    pub nonce: String,
    pub organization_id: i32,
    pub project_id: i32,
    pub page_import_id: String,
    /// The page import's capture, when it has one (`s3://…`): one self-contained page, either
    /// a single HTML file with its styles inline or in `<style>` and its images and fonts as
    /// `data:` URIs (as SingleFile saves), or MHTML (as Chromium's `Page.captureSnapshot`
    /// saves); at most 50 MB. It is laid out at the width of its `<meta name="viewport"
    /// content="width=N">`, else 1440 px. Nothing else is fetched, and its scripts do not run.
    pub capture_url: Option<String>,
    pub figma_file_key: String,
    pub screen_id: String,
    /// Where the user wants the result placed in Figma, if they said.
    pub placement_target: Option<String>,
    /// Where to POST the signed webhook.
    pub callback_url: String,
    /// `s3://{bucket}/code2des/{code2des_id}/{attempt}/`: everything the worker writes goes under it.
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
    /// With `status: "processing"` (and only then): the worker's progress (SPEC section 7).
    pub progress: Option<ProgressReport>,
}

/// `"progress":{"percent":0–100,"stage":"1–64 chars"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgressReport {
    pub percent: i16,
    pub stage: ProgressStage,
}

impl ProgressReport {
    fn parse(v: Option<&Value>) -> Result<Self, ApiError> {
        let Some(Value::Object(p)) = v else {
            return Err(ApiError::invalid("progress", "is required as an object when status is processing"));
        };
        if let Some(k) = p.keys().find(|k| !matches!(k.as_str(), "percent" | "stage")) {
            return Err(ApiError::invalid("progress", format!("unknown field {k:?}")));
        }
        let percent = match p.get("percent") {
            Some(Value::Number(n)) => match n.as_i64() {
                Some(v @ 0..=100) => v as i16,
                _ => return Err(ApiError::invalid("progress.percent", "must be an integer from 0 to 100")),
            },
            None | Some(Value::Null) => return Err(ApiError::invalid("progress.percent", "is required")),
            Some(_) => return Err(ApiError::invalid("progress.percent", "must be an integer from 0 to 100")),
        };
        let stage = match p.get("stage") {
            Some(Value::String(s)) => ProgressStage::parse("progress.stage", s)?,
            None | Some(Value::Null) => return Err(ApiError::invalid("progress.stage", "is required")),
            Some(_) => return Err(ApiError::invalid("progress.stage", "must be a string")),
        };
        Ok(Self { percent, stage })
    }
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

/// A terminal report's `result_url`: required when completed, and under
/// `s3://{bucket}/code2des/{id}/{attempt}/` of the report's own job.
fn result_url(
    body: &Map<String, Value>,
    bucket: &str,
    id: Code2desId,
    attempt: i32,
    status: Status,
) -> Result<Option<String>, ApiError> {
    match optional_str(body, "result_url")? {
        Some(raw) => {
            let ptr = S3Pointer::parse("result_url", raw)?;
            if !ptr.is_under(bucket, &job_prefix(id, attempt)) {
                return Err(ApiError::invalid(
                    "result_url",
                    "must be under s3://{bucket}/code2des/{code2des_id}/{attempt}/ of this job",
                ));
            }
            Ok(Some(ptr.to_string()))
        }
        None if status == Status::Completed => {
            Err(ApiError::invalid("result_url", "is required when status is completed"))
        }
        None => Ok(None),
    }
}

/// A terminal report's `error_message`: a failure's, cleaned (or the default); a completed
/// job has no failure detail, so anything sent is checked for type and ignored, not stored.
fn error_message(body: &Map<String, Value>, status: Status) -> Result<Option<String>, ApiError> {
    let sent = optional_str(body, "error_message")?;
    Ok(match status {
        Status::Completed => None,
        _ => Some(sent.and_then(clean_error_message).unwrap_or_else(|| DEFAULT_FAILURE.to_owned())),
    })
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
            "processing" => Status::Processing,
            _ => return Err(ApiError::invalid("status", "must be processing, completed or failed")),
        };
        if status == Status::Processing {
            if !matches!(body.get("result_url"), None | Some(Value::Null)) {
                return Err(ApiError::invalid("result_url", "must be absent when status is processing"));
            }
            let progress = ProgressReport::parse(body.get("progress"))?;
            return Ok(Self {
                code2des_id,
                attempt,
                nonce: nonce.to_owned(),
                status,
                result_url: None,
                warning_count: None,
                error_message: None,
                progress: Some(progress),
            });
        }
        let result_url = result_url(body, bucket, code2des_id, attempt, status)?;
        let warning_count = int_field(body, "warning_count", 0)?;
        let error_message = error_message(body, status)?;
        Ok(Self {
            code2des_id,
            attempt,
            nonce: nonce.to_owned(),
            status,
            result_url,
            warning_count,
            error_message,
            progress: None,
        })
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
    fn progress_reports_are_bounded() {
        let p = |progress: Value| {
            parse(json!({"code2des_id": ID, "attempt": 2, "nonce": "n", "status": "processing", "progress": progress}))
        };
        let ok = p(json!({"percent": 40, "stage": "rendering"})).unwrap();
        assert_eq!(ok.progress.as_ref().map(|r| (r.percent, r.stage.as_str())), Some((40, "rendering")));
        assert_eq!(ok.status, Status::Processing);
        assert!(p(json!({"percent": 0, "stage": "x"})).is_ok());
        assert!(p(json!({"percent": 100, "stage": "s".repeat(64)})).is_ok());
        for (bad, field) in [
            (json!({"percent": 101, "stage": "x"}), "progress.percent"),
            (json!({"percent": -1, "stage": "x"}), "progress.percent"),
            (json!({"percent": 1.5, "stage": "x"}), "progress.percent"),
            (json!({"stage": "x"}), "progress.percent"),
            (json!({"percent": 1, "stage": ""}), "progress.stage"),
            (json!({"percent": 1, "stage": "s".repeat(65)}), "progress.stage"),
            (json!({"percent": 1, "stage": "a\nb"}), "progress.stage"),
            (json!({"percent": 1}), "progress.stage"),
            (json!({"percent": 1, "stage": "x", "eta": 3}), "progress"),
            (json!(null), "progress"),
            (json!("50%"), "progress"),
        ] {
            let e = p(bad.clone()).unwrap_err().to_string();
            assert!(e.starts_with(field), "{bad}: {e}");
        }
        let with_url = json!({"code2des_id": ID, "attempt": 1, "nonce": "n", "status": "processing",
            "progress": {"percent": 1, "stage": "x"}, "result_url": format!("s3://bkt/code2des/{ID}/1/r.json")});
        assert!(parse(with_url).unwrap_err().to_string().starts_with("result_url"));
    }

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
