//! A job as the service knows it: the `code2des` row with its current attempt, its status, the
//! correlation nonce, and the rules of this deployment (deadline, attempts).
//!
//! How a job is read from the database lives in `crate::db::columns`; how the user API shows it,
//! in `crate::http::view`.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::domain::ids::{Code2desId, OrganizationId, ProjectId};

/// `updated_by` of a job the deadline failed; the webhook tells a timeout from a worker's
/// own failure by it.
pub const DEADLINE_ACTOR: &str = "system:deadline";
/// `error_message` of a job the deadline failed (SPEC section 4).
pub const TIMED_OUT: &str = "timed out";
/// `error_message` of a job its user cancelled (SPEC section 7).
pub const CANCELLED: &str = "cancelled";
/// `updated_by` of webhook transitions.
pub const WORKER_ACTOR: &str = "system:worker";
/// `updated_by` of a trigger or retry whose manifest could not be written.
pub const TRIGGER_ACTOR: &str = "system:trigger";
/// `page_import.status` of a completed capture, the only one a job can be triggered from.
pub const PAGE_IMPORT_COMPLETED: &str = "1";

/// Processing deadline of an attempt when `JOB_DEADLINE_SECONDS` is not set (SPEC section 4).
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(15 * 60);
/// Attempts a job may have in all when `MAX_ATTEMPTS` is not set (SPEC section 7).
pub const DEFAULT_MAX_ATTEMPTS: i32 = 3;

/// How long an `Idempotency-Key` names the job its first trigger created (SPEC section 9): a
/// replay within it answers that job; afterwards the key is free for a new one, and the purge
/// removes it.
pub const IDEMPOTENCY_KEY_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// The job rules of this deployment (SPEC sections 4, 7 and 9).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// A processing attempt older than this is failed `timed out`.
    pub deadline: Duration,
    /// Attempts a job may have in all; `maxAttempts` in the job JSON.
    pub max_attempts: i32,
    /// How long the artifact bucket keeps an attempt's objects (`ArtifactRetentionDays`, its
    /// lifecycle rule); `None` where nothing expires them (the local stack).
    pub result_retention: Option<Duration>,
}

impl Default for Policy {
    fn default() -> Self {
        Self { deadline: DEFAULT_DEADLINE, max_attempts: DEFAULT_MAX_ATTEMPTS, result_retention: None }
    }
}

impl Policy {
    /// When `job`'s result stops being served, if it has one and results expire here.
    ///
    /// The bucket's lifecycle rule deletes an object on the first midnight (UTC) after its
    /// creation plus the retention; the worker writes an attempt's artifact after the attempt
    /// started. So until the attempt's start plus the retention the artifact is there for sure,
    /// and from then on the service answers 410 whether or not the bucket has reached it yet:
    /// a time a client can rely on both ways, never a 502 for an object the rule removed.
    pub fn result_expires_at(&self, job: &Job) -> Option<DateTime<Utc>> {
        let retention = chrono::Duration::from_std(self.result_retention?).ok()?;
        job.result_url.as_ref()?;
        job.attempt_started_at.checked_add_signed(retention)
    }

    /// The moment `job`'s result expired, if it has (see [`Self::result_expires_at`]).
    pub fn result_expired(&self, job: &Job, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.result_expires_at(job).filter(|at| *at <= now)
    }
}

/// The per-job correlation fence. Never in the user API, never in logs: `Debug` is redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct Nonce(String);

impl Nonce {
    /// 256 random bits, hex-encoded (64 characters, fits varchar(255)).
    pub fn generate() -> Self {
        let bytes: [u8; 32] = rand::random();
        Self(hex::encode(bytes))
    }

    pub fn from_db(s: String) -> Self {
        Self(s)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Constant-time comparison, so a caller cannot learn the nonce byte by byte.
    pub fn matches(&self, other: &str) -> bool {
        use subtle::ConstantTimeEq;
        self.0.len() == other.len() && bool::from(self.0.as_bytes().ct_eq(other.as_bytes()))
    }
}

impl fmt::Debug for Nonce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Nonce(<redacted>)")
    }
}

/// One `code2des` row with its current attempt, as the service reads it: ids typed from the
/// row on, so nothing downstream parses them again.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub id: Code2desId,
    pub organization_id: OrganizationId,
    pub project_id: ProjectId,
    pub page_import_id: String,
    pub figma_file_key: String,
    pub screen_id: String,
    pub placement_target: Option<String>,
    pub status: Status,
    pub attempt: i32,
    pub nonce: Nonce,
    pub result_url: Option<String>,
    pub warning_count: Option<i32>,
    pub error_message: Option<String>,
    pub materialized_at: Option<DateTime<Utc>>,
    pub materialized_node_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub created_by: String,
    pub updated_by: String,
    /// When the current attempt started: the deadline counts from here (SPEC section 7).
    pub attempt_started_at: DateTime<Utc>,
    /// The worker's last progress report in the current attempt.
    pub progress: Option<Progress>,
    /// Set when a user cancelled the current attempt.
    pub cancelled_at: Option<DateTime<Utc>>,
}

impl Job {
    /// Failed by its user's cancel (not by a worker that happened to say "cancelled").
    pub fn is_cancelled(&self) -> bool {
        self.status == Status::Failed && self.cancelled_at.is_some()
    }
}

/// A worker's progress report, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    pub percent: i16,
    pub stage: String,
    pub updated_at: DateTime<Utc>,
}

/// Job status: the wire's names ([`Status::api_name`]), stored as the `code2des_status` enum
/// labels '0', '1', '2' ([`StatusLabel`]).
pub use code2des_wire::protocol::Status;

/// A status as the table stores it.
pub trait StatusLabel: Sized {
    fn from_db(label: &str) -> Option<Self>;
    fn db_label(self) -> &'static str;
}

impl StatusLabel for Status {
    fn from_db(label: &str) -> Option<Self> {
        match label {
            "0" => Some(Self::Processing),
            "1" => Some(Self::Completed),
            "2" => Some(Self::Failed),
            _ => None,
        }
    }

    fn db_label(self) -> &'static str {
        match self {
            Self::Processing => "0",
            Self::Completed => "1",
            Self::Failed => "2",
        }
    }
}
