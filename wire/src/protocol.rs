//! The worker protocol of SPEC section 4 (snake_case): the manifest trigger writes, and the
//! webhook body the worker sends back, as the serde types they are written and read with (the
//! artifact is in [`crate::artifact`]), and the status names. A field's type says what a client
//! reads when it is wrong.

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::field_error::FieldError;
use crate::ids::{Code2desId, ProgressStage};
use crate::keys::{job_prefix, S3Pointer, MAX_POINTER};
use crate::{checked, read, read_slice, Fault, FaultKind, Obj, REQUIRED};

pub const PROTOCOL_VERSION: u32 = 1;
/// Cap on a stored error message (SPEC section 4).
pub const MAX_ERROR_MESSAGE: usize = 2000;
/// Stored for a failure reported without any message, so clients always see a reason.
pub const DEFAULT_FAILURE: &str = "conversion failed";
/// The longest nonce, in characters: the manifest's, echoed in every report and artifact.
pub const MAX_NONCE: usize = 255;
/// A progress report's `percent`, from this to [`MAX_PERCENT`].
pub const MIN_PERCENT: i16 = 0;
pub const MAX_PERCENT: i16 = 100;
/// A trigger's `viewports`: at most this many widths (issue 40 item 3).
pub const MAX_VIEWPORTS: usize = 4;
/// The narrowest and widest viewport, in CSS pixels.
pub const MIN_VIEWPORT: u32 = 320;
pub const MAX_VIEWPORT: u32 = 2560;

/// Why a list of viewports is refused, for the field's 400 (`None`: it is a good one).
pub fn viewports_fault(widths: &[u32]) -> Option<String> {
    if widths.is_empty() {
        return Some(format!("no width; give 1 to {MAX_VIEWPORTS}"));
    }
    if widths.len() > MAX_VIEWPORTS {
        return Some(format!("{} widths, at most {MAX_VIEWPORTS}", widths.len()));
    }
    if let Some(w) = widths.iter().find(|w| !(MIN_VIEWPORT..=MAX_VIEWPORT).contains(*w)) {
        return Some(format!("{w} is outside {MIN_VIEWPORT}-{MAX_VIEWPORT} px"));
    }
    let repeated = widths.iter().enumerate().find(|(i, w)| widths[..*i].contains(w));
    repeated.map(|(_, w)| format!("{w} is given twice"))
}

wire_enum! {
    /// A job's status (SPEC section 3), as the API, the webhook and the list filter name it:
    /// `processing` until the worker's terminal report, then `completed` or `failed`.
    pub enum Status {
        Processing = "processing",
        Completed = "completed",
        Failed = "failed",
    }
}

impl Status {
    /// The name the API shows.
    pub fn api_name(self) -> &'static str {
        self.as_str()
    }

    /// A status named by a client (the list's `status` filter).
    pub fn parse_api(field: &'static str, raw: &str) -> Result<Self, FieldError> {
        Self::from_name(raw).ok_or_else(|| FieldError::new(field, format!("must be one of {}", Self::ALL.join(", "))))
    }
}

/// A trigger's `viewports` as a client sends it: a JSON array of 1 to [`MAX_VIEWPORTS`] whole
/// numbers of [`MIN_VIEWPORT`]–[`MAX_VIEWPORT`], no two equal, kept in the caller's order (the
/// order of the frames, left to right).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Viewports(Vec<u32>);

impl Viewports {
    pub fn widths(&self) -> &[u32] {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Viewports {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let Value::Array(items) = Value::deserialize(d)? else {
            return Err(D::Error::custom("must be an array of widths in pixels, such as [1440, 390]"));
        };
        let mut widths = Vec::with_capacity(items.len());
        for item in &items {
            match item.as_u64() {
                Some(n) if n > u64::from(MAX_VIEWPORT) => {
                    return Err(D::Error::custom(format!("{n} is outside {MIN_VIEWPORT}-{MAX_VIEWPORT} px")))
                }
                Some(n) => widths.push(n as u32),
                None => return Err(D::Error::custom(format!("{item} is not a whole number of pixels"))),
            }
        }
        match viewports_fault(&widths) {
            Some(fault) => Err(D::Error::custom(fault)),
            None => Ok(Self(widths)),
        }
    }
}

/// True when `nonce` is what a manifest may carry and a report echo: 1 to [`MAX_NONCE`]
/// characters, none a control character.
pub fn is_nonce(nonce: &str) -> bool {
    !nonce.is_empty() && nonce.chars().count() <= MAX_NONCE && !nonce.chars().any(char::is_control)
}

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
    /// The widths to lay the capture out at, in the caller's order: 1 to 4 widths of 320 to
    /// 2 560 px, no two equal. Absent: one layout at the capture's own width, as before. With
    /// two or more, the document's root holds one frame per width, side by side
    /// (docs/WORKER.md, "Viewports").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = MAX_VIEWPORTS), inner(range(min = MIN_VIEWPORT, max = MAX_VIEWPORT)))]
    pub viewports: Option<Vec<u32>>,
    /// Where to POST the signed webhook.
    pub callback_url: String,
    /// `s3://{bucket}/code2des/{code2des_id}/{attempt}/`: everything the worker writes goes under it.
    pub result_prefix: String,
    /// The job's trace, a W3C Trace Context `traceparent` (`00-{trace id}-{span id}-{flags}`):
    /// the worker's spans continue it, and its webhook requests send it back in the
    /// `traceparent` header. Optional: a worker that ignores it works the same, and one that
    /// is not a valid `traceparent` is ignored (a new trace starts), never refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

impl Manifest {
    pub fn key(id: &str, attempt: i32) -> String {
        format!("code2des/{id}/{attempt}/manifest.json")
    }

    /// The trace to continue: [`Manifest::traceparent`] when it is a valid one.
    pub fn trace(&self) -> Option<crate::trace::Traceparent> {
        self.traceparent.as_deref().and_then(crate::trace::Traceparent::parse)
    }

    /// A manifest as a worker reads it: its shape, and the one version there is.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, String> {
        let m: Self = read_slice(bytes).map_err(|f| f.to_string())?;
        if m.version != PROTOCOL_VERSION {
            return Err(format!("$.version: unknown manifest version {}", m.version));
        }
        if let Some(fault) = m.viewports.as_deref().and_then(viewports_fault) {
            return Err(format!("$.viewports: {fault}"));
        }
        Ok(m)
    }
}

/// The body of `POST /code2des/webhook` (SPEC sections 4 and 7), signed with Standard Webhooks
/// (docs/WORKER.md). `status` tells the three reports apart.
// The variants are `Status`'s, in its order (a test holds them equal).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum WebhookReport {
    /// Progress, any number of times while the attempt is processing.
    Processing(ProcessingReport),
    /// The job is done: its artifact is at `result_url`.
    Completed(CompletedReport),
    /// The job failed; a failure artifact is optional.
    Failed(FailedReport),
}

/// Read on its own first: which report the rest of the body is.
#[derive(Deserialize)]
struct Tag {
    status: ReportStatus,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ProcessingReport {
    pub code2des_id: JobId,
    pub attempt: Attempt,
    pub nonce: EchoedNonce,
    pub progress: Obj<ProgressReport>,
    /// A progress report has none: only a terminal report points at an artifact.
    #[serde(default, skip_serializing)]
    #[schemars(skip)]
    pub result_url: Option<Absent>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CompletedReport {
    pub code2des_id: JobId,
    pub attempt: Attempt,
    pub nonce: EchoedNonce,
    /// `s3://{bucket}/code2des/{code2des_id}/{attempt}/…` of this job, no `..`.
    pub result_url: ResultUrl,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning_count: Option<WarningCount>,
    /// A completed job has no failure detail: checked for type, not stored.
    #[serde(skip_serializing)]
    #[schemars(skip)]
    pub error_message: Option<ErrorMessage>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct FailedReport {
    pub code2des_id: JobId,
    pub attempt: Attempt,
    pub nonce: EchoedNonce,
    /// A failure artifact, when there is one: as a completed report's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_url: Option<ResultUrl>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning_count: Option<WarningCount>,
    /// Stored with control characters stripped, cut to 2 000 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<ErrorMessage>,
}

/// `{"percent": 0-100, "stage": "1-64 characters"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProgressReport {
    pub percent: Percent,
    /// What the worker is doing, for people (`rendering`).
    pub stage: Stage,
}

impl WebhookReport {
    /// Reads a body: its `status` first, then the members that report has.
    pub fn read(body: &Map<String, Value>) -> Result<Self, FieldError> {
        let Tag { status } = read(body).map_err(refusal)?;
        Ok(match status.0 {
            Status::Processing => Self::Processing(read(body).map_err(refusal)?),
            Status::Completed => Self::Completed(read(body).map_err(refusal)?),
            Status::Failed => Self::Failed(read(body).map_err(refusal)?),
        })
    }
}

/// Why a body is not a report: the member's name and its type's words, except where a member
/// is required only by the report it is in.
fn refusal(f: Fault) -> FieldError {
    let field = f.field();
    let message = match (&f.kind, field.as_str()) {
        (FaultKind::Missing | FaultKind::Invalid(_), "progress") => {
            "is required as an object when status is processing".into()
        }
        (FaultKind::Missing, "result_url") => "is required when status is completed".into(),
        _ => Cow::Owned(f.message().into_owned()),
    };
    FieldError::new(field, message)
}

/// The JSON Schema of a member type whose `Deserialize` is written out below.
macro_rules! member_schema {
    ($ty:ident, $($schema:tt)+) => {
        impl JsonSchema for $ty {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> Cow<'static, str> {
                stringify!($ty).into()
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!($($schema)+)
            }
        }
    };
}

/// A member's `Serialize`: the JSON value its `Deserialize` reads back.
macro_rules! member_serialize {
    ($ty:ident, |$x:ident, $s:ident| $write:expr) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, $s: S) -> Result<S::Ok, S::Error> {
                let $x = &self.0;
                $write
            }
        }
    };
}

/// A member's `Deserialize` through [`checked`]: the value in, the type or the message out.
macro_rules! member_deserialize {
    ($ty:ident, |$v:ident| $check:expr) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                checked(d, |$v| $check)
            }
        }
    };
}

/// An integer of the body in `min..=max` (i32 at most), or the message that says so.
fn integer(
    v: &Value,
    min: i64,
    max: i64,
    not_a_number: impl Into<Cow<'static, str>>,
) -> Result<i64, Cow<'static, str>> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| format!("must be an integer from {min} to {max}").into()),
        Value::Null => Err(REQUIRED.into()),
        _ => Err(not_a_number.into()),
    }
}

/// A string of the body, or the message that says it is not one.
fn string(v: Value) -> Result<String, Cow<'static, str>> {
    match v {
        Value::String(s) => Ok(s),
        Value::Null => Err(REQUIRED.into()),
        _ => Err("must be a string".into()),
    }
}

#[derive(Debug)]
struct ReportStatus(Status);
member_deserialize!(ReportStatus, |v| Status::from_name(&string(v)?).map(Self).ok_or_else(|| {
    let (last, rest) = Status::ALL.split_last().expect("statuses");
    format!("must be {} or {last}", rest.join(", ")).into()
}));

/// The job the report is for (a UUID).
#[derive(Debug, Clone, Copy)]
pub struct JobId(pub Code2desId);
member_deserialize!(JobId, |v| Code2desId::parse_field("code2des_id", &string(v)?).map(Self).map_err(|e| e.message));
member_schema!(JobId, {"type": "string"});
member_serialize!(JobId, |id, s| id.serialize(s));

#[derive(Debug, Clone, Copy)]
pub struct Attempt(pub i32);
member_deserialize!(Attempt, |v| integer(&v, 1, i32::MAX.into(), "must be an integer").map(|n| Self(n as i32)));
member_schema!(Attempt, {"type": "integer", "format": "int32", "minimum": 1});
member_serialize!(Attempt, |n, s| n.serialize(s));

/// The attempt's nonce, as the manifest gave it.
#[derive(Debug, Clone)]
pub struct EchoedNonce(pub String);
member_deserialize!(EchoedNonce, |v| {
    let s = string(v)?;
    if is_nonce(&s) {
        Ok(Self(s))
    } else {
        Err(format!("must be 1 to {MAX_NONCE} characters").into())
    }
});
member_schema!(EchoedNonce, {"type": "string", "minLength": 1, "maxLength": MAX_NONCE});
member_serialize!(EchoedNonce, |n, s| n.serialize(s));

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Percent(pub i16);
member_deserialize!(Percent, |v| {
    let not_a_number = format!("must be an integer from {MIN_PERCENT} to {MAX_PERCENT}");
    integer(&v, MIN_PERCENT.into(), MAX_PERCENT.into(), not_a_number).map(|n| Self(n as i16))
});
member_schema!(Percent, {"type": "integer", "minimum": MIN_PERCENT, "maximum": MAX_PERCENT});
member_serialize!(Percent, |n, s| n.serialize(s));

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stage(pub ProgressStage);
member_deserialize!(Stage, |v| ProgressStage::parse("progress.stage", &string(v)?).map(Self).map_err(|e| e.message));
member_schema!(Stage, {"type": "string", "minLength": 1, "maxLength": ProgressStage::MAX});
member_serialize!(Stage, |stage, s| s.serialize_str(stage.as_str()));

/// `s3://{bucket}/code2des/{code2des_id}/{attempt}/…` of this job, no `..`.
#[derive(Debug, Clone)]
pub struct ResultUrl(pub S3Pointer);
member_deserialize!(ResultUrl, |v| S3Pointer::parse("result_url", &string(v)?).map(Self).map_err(|e| e.message));
member_schema!(ResultUrl, {"type": "string", "maxLength": MAX_POINTER});
member_serialize!(ResultUrl, |url, s| s.collect_str(url));

#[derive(Debug, Clone, Copy)]
pub struct WarningCount(pub i32);
member_deserialize!(WarningCount, |v| integer(&v, 0, i32::MAX.into(), "must be an integer").map(|n| Self(n as i32)));
member_schema!(WarningCount, {"type": "integer", "format": "int32", "minimum": 0});
member_serialize!(WarningCount, |n, s| n.serialize(s));

#[derive(Debug, Clone)]
pub struct ErrorMessage(pub String);
member_deserialize!(ErrorMessage, |v| string(v).map(Self));
member_schema!(ErrorMessage, {"type": "string"});
member_serialize!(ErrorMessage, |m, s| m.serialize(s));

/// A member a report must not have (`null` is absent).
#[derive(Debug)]
pub struct Absent;
member_deserialize!(Absent, |_v| Err::<Self, _>("must be absent when status is processing".into()));

/// A validated webhook body: what the webhook route fences and stores.
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
    pub progress: Option<Progress>,
}

/// A progress report's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    pub percent: i16,
    pub stage: ProgressStage,
}

/// Control characters removed, then cut to [`MAX_ERROR_MESSAGE`] characters.
pub fn clean_error_message(raw: &str) -> Option<String> {
    let cleaned: String = raw.chars().filter(|c| !c.is_control()).take(MAX_ERROR_MESSAGE).collect();
    let trimmed = cleaned.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

/// A terminal report's `result_url`, which must lie under the prefix of the report's own job.
fn own_result_url(
    url: Option<ResultUrl>,
    bucket: &str,
    id: Code2desId,
    attempt: i32,
) -> Result<Option<String>, FieldError> {
    match url {
        Some(ResultUrl(ptr)) if !ptr.is_under(bucket, &job_prefix(id, attempt)) => Err(FieldError::new(
            "result_url",
            "must be under s3://{bucket}/code2des/{code2des_id}/{attempt}/ of this job",
        )),
        url => Ok(url.map(|ResultUrl(ptr)| ptr.to_string())),
    }
}

impl WebhookBody {
    /// Reads and checks everything that can be checked without the database, including that a
    /// `result_url` lies under `s3://{bucket}/code2des/{id}/{attempt}/` of the body's own job.
    pub fn parse(body: &Map<String, Value>, bucket: &str) -> Result<Self, FieldError> {
        Self::new(WebhookReport::read(body)?, bucket)
    }

    /// The report, checked against the artifact bucket.
    pub fn new(report: WebhookReport, bucket: &str) -> Result<Self, FieldError> {
        let (code2des_id, attempt, nonce, status) = match &report {
            WebhookReport::Processing(r) => (r.code2des_id, r.attempt, &r.nonce, Status::Processing),
            WebhookReport::Completed(r) => (r.code2des_id, r.attempt, &r.nonce, Status::Completed),
            WebhookReport::Failed(r) => (r.code2des_id, r.attempt, &r.nonce, Status::Failed),
        };
        let (code2des_id, attempt, nonce) = (code2des_id.0, attempt.0, nonce.0.clone());
        let mut body = Self {
            code2des_id,
            attempt,
            nonce,
            status,
            result_url: None,
            warning_count: None,
            error_message: None,
            progress: None,
        };
        match report {
            WebhookReport::Processing(r) => {
                let Obj(ProgressReport { percent, stage }) = r.progress;
                body.progress = Some(Progress { percent: percent.0, stage: stage.0 });
            }
            WebhookReport::Completed(r) => {
                body.result_url = own_result_url(Some(r.result_url), bucket, code2des_id, attempt)?;
                body.warning_count = r.warning_count.map(|w| w.0);
            }
            WebhookReport::Failed(r) => {
                body.result_url = own_result_url(r.result_url, bucket, code2des_id, attempt)?;
                body.warning_count = r.warning_count.map(|w| w.0);
                // A failure always carries a reason, so clients see one.
                let message = r.error_message.and_then(|m| clean_error_message(&m.0));
                body.error_message = Some(message.unwrap_or_else(|| DEFAULT_FAILURE.to_owned()));
            }
        }
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reports_are_the_statuses() {
        let schema = schemars::schema_for!(WebhookReport).to_value();
        let tags: Vec<&str> = schema["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["$ref"].as_str().unwrap())
            .map(|r| r.trim_start_matches("#/$defs/"))
            .collect();
        assert_eq!(tags, ["ProcessingReport", "CompletedReport", "FailedReport"]);
        let status = |report: &str| report.strip_suffix("Report").unwrap().to_lowercase();
        assert_eq!(tags.iter().map(|t| status(t)).collect::<Vec<_>>(), Status::ALL);
        for name in Status::ALL {
            assert_eq!(Status::from_name(name).map(Status::api_name), Some(*name));
        }
    }
    use serde_json::json;

    fn parse(v: Value) -> Result<WebhookBody, FieldError> {
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
