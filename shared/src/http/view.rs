//! The job as the user API shows it (SPEC sections 3 and 7): camelCase, no nonce, no S3
//! location.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

use crate::domain::ids::Code2desId;
use crate::domain::job::{Job, Policy, Status};

/// The stage a completed job's progress reads.
pub const COMPLETED_STAGE: &str = "completed";

/// The job as the user API shows it, under this deployment's rules (`maxAttempts`,
/// `resultExpiresAt`).
pub fn job_view<'a>(job: &'a Job, policy: &Policy) -> JobView<'a> {
    JobView {
        code2des_id: job.id,
        organization_id: job.organization_id.get(),
        project_id: job.project_id.get(),
        page_import_id: &job.page_import_id,
        figma_file_key: &job.figma_file_key,
        screen_id: &job.screen_id,
        placement_target: job.placement_target.as_deref(),
        status: job.status.api_name(),
        attempt: job.attempt,
        max_attempts: policy.max_attempts,
        warning_count: job.warning_count,
        error_message: job.error_message.as_deref(),
        has_result: job.result_url.is_some(),
        result_expires_at: policy.result_expires_at(job).map(timestamp),
        materialized_at: job.materialized_at.map(timestamp),
        materialized_node_id: job.materialized_node_id.as_deref(),
        created_at: timestamp(job.created_at),
        updated_at: timestamp(job.updated_at),
        created_by: &job.created_by,
        updated_by: &job.updated_by,
        progress: progress_view(job),
    }
}

/// The job's progress as the API shows it, derived here, on the read (reads never write):
/// while processing, the worker's last report; once completed, 100 `completed` whatever the
/// worker last said (at the time of its last report, or of the job's last change if it sent
/// none); once failed (by the worker, a cancel or the deadline), the last report as it was, or
/// null if there was none. A terminal job's progress says `final: true`.
pub fn progress_view(job: &Job) -> Option<ProgressView<'_>> {
    let (percent, stage, at) = match (job.status, &job.progress) {
        (Status::Completed, p) => (100, COMPLETED_STAGE, p.as_ref().map_or(job.updated_at, |p| p.updated_at)),
        (Status::Processing | Status::Failed, Some(p)) => (p.percent, p.stage.as_str(), p.updated_at),
        (Status::Processing | Status::Failed, None) => return None,
    };
    Some(ProgressView { percent, stage, updated_at: timestamp(at), is_final: job.status != Status::Processing })
}

/// RFC 3339 in UTC with microseconds, PostgreSQL's own precision.
pub fn timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// The job as the user API shows it (SPEC section 3): no nonce, no S3 location.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobView<'a> {
    pub code2des_id: Code2desId,
    pub organization_id: i32,
    pub project_id: i32,
    pub page_import_id: &'a str,
    pub figma_file_key: &'a str,
    pub screen_id: &'a str,
    pub placement_target: Option<&'a str>,
    pub status: &'static str,
    pub attempt: i32,
    pub max_attempts: i32,
    pub warning_count: Option<i32>,
    pub error_message: Option<&'a str>,
    pub has_result: bool,
    /// When the result stops being served (410 `result_expired`); null without a result, or
    /// where results do not expire.
    pub result_expires_at: Option<String>,
    pub materialized_at: Option<String>,
    pub materialized_node_id: Option<&'a str>,
    pub created_at: String,
    pub updated_at: String,
    pub created_by: &'a str,
    pub updated_by: &'a str,
    pub progress: Option<ProgressView<'a>>,
}

/// `progress` in the job JSON: `{"percent","stage","updatedAt","final"}`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressView<'a> {
    pub percent: i16,
    pub stage: &'a str,
    pub updated_at: String,
    /// The job is terminal: no report will change this one.
    #[serde(rename = "final")]
    pub is_final: bool,
}
