//! The `code2des` row and its user-API view.

use std::fmt;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use tokio_postgres::types::FromSql;
use tokio_postgres::Row;

pub use crate::record::BoxError;
use crate::record::Record;

use crate::types::Status;

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

/// One `code2des` row as the service reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub id: String,
    pub organization_id: i32,
    pub project_id: i32,
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

/// A worker's progress report, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    pub percent: i16,
    pub stage: String,
    pub updated_at: DateTime<Utc>,
}

/// Where a job's columns come from: a statement's row, its columns found by name once per
/// statement ([`Layout`]), or the one record `code2des_read_job` answers, by position
/// ([`Job::from_read_row`]). One decoder reads both.
pub trait Columns<'a> {
    /// A column every job statement returns.
    fn get<T: FromSql<'a>>(&self, col: Col) -> Result<T, BoxError>;
    /// A column that only some statements return (a new job has no progress yet, so INSERT
    /// ... RETURNING has none): None when absent or NULL; a column that IS there but does
    /// not read is still an error.
    fn optional<T: FromSql<'a>>(&self, col: Col) -> Result<Option<T>, BoxError>;
}

/// The job's columns: [`READ_COLUMNS`] (their names, in this order) and [`Col`] (a column by
/// its position there), from one list so the two cannot drift apart.
macro_rules! job_fields {
    ($($name:ident),* $(,)?) => {
        /// The fields of `code2des_read_job`'s record (migration V5), in its order, which are
        /// also the names a job's columns have in every other statement. A test
        /// (local/tests/api/sweep.rs) holds the function's SELECT to these names and reads every
        /// kind of job through both the record and the list's rows, and compares them.
        pub const READ_COLUMNS: [&str; 24] = [$(stringify!($name)),*];

        /// A job column, by its position in [`READ_COLUMNS`]: the decoder asks for columns by
        /// position, so no name is compared while a row is read.
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Col {
            $($name),*
        }
    };
}

job_fields!(
    id,
    organization_id,
    project_id,
    page_import_id,
    figma_file_key,
    screen_id,
    placement_target,
    status,
    attempt,
    nonce,
    result_url,
    warning_count,
    error_message,
    materialized_at,
    materialized_node_id,
    created_at,
    updated_at,
    created_by,
    updated_by,
    progress_percent,
    progress_stage,
    progress_updated_at,
    attempt_started_at,
    cancelled_at,
);

impl Col {
    pub fn name(self) -> &'static str {
        READ_COLUMNS[self as usize]
    }
}

/// Where each job column is in one statement's rows (by name, the first column of that name,
/// as `Row::get(name)` finds it), found once for all its rows: a list of 20 jobs compared 24
/// names against 24 columns for every field of every row (docs/PERFORMANCE.md section 5).
#[derive(Debug, Clone)]
pub struct Layout([Option<usize>; READ_COLUMNS.len()]);

impl Layout {
    /// The layout of `row`'s statement (any of its rows: they share their columns).
    pub fn of(row: &Row) -> Self {
        let mut at = [None; READ_COLUMNS.len()];
        for (i, column) in row.columns().iter().enumerate() {
            if let Some(k) = READ_COLUMNS.iter().position(|name| *name == column.name()) {
                at[k].get_or_insert(i);
            }
        }
        Self(at)
    }

    /// Whether `row` holds a job: anything but a NULL id (the list's scope row has one). A row
    /// whose id is missing or does not read counts as a job, so the decoder reports it rather
    /// than the page silently leaving it out.
    pub fn has_job(&self, row: &Row) -> bool {
        match self.0[Col::id as usize] {
            Some(i) => !matches!(row.try_get::<_, Option<&str>>(i), Ok(None)),
            None => true,
        }
    }
}

/// One row, read through its statement's [`Layout`].
struct Laid<'a> {
    row: &'a Row,
    layout: &'a Layout,
}

impl<'a> Columns<'a> for Laid<'a> {
    fn get<T: FromSql<'a>>(&self, col: Col) -> Result<T, BoxError> {
        let i = self.layout.0[col as usize].ok_or_else(|| format!("no column {}", col.name()))?;
        self.row.try_get(i).map_err(|e| format!("column {}: {e}", col.name()).into())
    }

    fn optional<T: FromSql<'a>>(&self, col: Col) -> Result<Option<T>, BoxError> {
        match self.layout.0[col as usize] {
            Some(i) => self.row.try_get(i).map_err(|e| format!("column {}: {e}", col.name()).into()),
            None => Ok(None),
        }
    }
}

/// `code2des_read_job`'s record, its fields in [`READ_COLUMNS`]' order.
struct ReadRecord<'a>(Record<'a>);

impl<'a> ReadRecord<'a> {
    /// The record, if it has as many fields as [`READ_COLUMNS`] names (checked once, here).
    fn new(record: Record<'a>) -> Result<Self, BoxError> {
        if record.len() != READ_COLUMNS.len() {
            return Err(format!("the read record has {} fields, not {}", record.len(), READ_COLUMNS.len()).into());
        }
        Ok(Self(record))
    }
}

impl<'a> Columns<'a> for ReadRecord<'a> {
    fn get<T: FromSql<'a>>(&self, col: Col) -> Result<T, BoxError> {
        self.0.get(col as usize).map_err(|e| format!("field {}: {e}", col.name()).into())
    }

    fn optional<T: FromSql<'a>>(&self, col: Col) -> Result<Option<T>, BoxError> {
        self.get(col)
    }
}

/// The column list every job query returns, in the names [`Job::from_row`] reads.
/// `status` comes back as its label text so no enum OID lookup is needed.
#[macro_export]
macro_rules! job_columns {
    ($c:literal) => {
        concat!(
            $c,
            ".id, ",
            $c,
            ".organization_id, ",
            $c,
            ".project_id, ",
            $c,
            ".page_import_id, ",
            $c,
            ".figma_file_key, ",
            $c,
            ".screen_id, ",
            $c,
            ".placement_target, ",
            $c,
            ".status::text AS status, ",
            $c,
            ".attempt, ",
            $c,
            ".nonce, ",
            $c,
            ".result_url, ",
            $c,
            ".warning_count, ",
            $c,
            ".error_message, ",
            $c,
            ".materialized_at, ",
            $c,
            ".materialized_node_id, ",
            $c,
            ".created_at, ",
            $c,
            ".updated_at, ",
            $c,
            ".created_by, ",
            $c,
            ".updated_by"
        )
    };
}

impl Job {
    /// The job in a row of any job statement (its columns found by name: for many rows of one
    /// statement, [`Job::from_laid_row`] finds them once).
    pub fn from_row(row: &Row) -> Result<Self, BoxError> {
        Self::from_laid_row(row, &Layout::of(row))
    }

    /// The job in `row`, whose statement's columns `layout` found.
    pub fn from_laid_row(row: &Row, layout: &Layout) -> Result<Self, BoxError> {
        Self::decode(Laid { row, layout })
    }

    /// The job in the one column `SELECT code2des_read_job(...)` answers: None when that
    /// record is NULL (no job the caller may see).
    pub fn from_read_row(row: &Row) -> Result<Option<Self>, BoxError> {
        row.try_get::<_, Option<Record>>(0)?.map(|r| Self::decode(ReadRecord::new(r)?)).transpose()
    }

    /// A job from any source of its columns (a row, or the read's record).
    pub fn decode<'a>(row: impl Columns<'a>) -> Result<Self, BoxError> {
        let status: &str = row.get(Col::status)?;
        Ok(Self {
            id: row.get(Col::id)?,
            organization_id: row.get(Col::organization_id)?,
            project_id: row.get(Col::project_id)?,
            page_import_id: row.get(Col::page_import_id)?,
            figma_file_key: row.get(Col::figma_file_key)?,
            screen_id: row.get(Col::screen_id)?,
            placement_target: row.get(Col::placement_target)?,
            // The enum has exactly these three labels (migration V1); anything else would be
            // a schema the service does not know, reported as failed rather than a panic.
            status: Status::from_db(status).unwrap_or(Status::Failed),
            attempt: row.get(Col::attempt)?,
            nonce: Nonce::from_db(row.get(Col::nonce)?),
            result_url: row.get(Col::result_url)?,
            warning_count: row.get(Col::warning_count)?,
            error_message: row.get(Col::error_message)?,
            materialized_at: row.get(Col::materialized_at)?,
            materialized_node_id: row.get(Col::materialized_node_id)?,
            created_at: row.get(Col::created_at)?,
            updated_at: row.get(Col::updated_at)?,
            created_by: row.get(Col::created_by)?,
            updated_by: row.get(Col::updated_by)?,
            attempt_started_at: row.optional(Col::attempt_started_at)?.unwrap_or(row.get(Col::created_at)?),
            progress: match (
                row.optional::<i16>(Col::progress_percent)?,
                row.optional::<String>(Col::progress_stage)?,
                row.optional::<DateTime<Utc>>(Col::progress_updated_at)?,
            ) {
                (Some(percent), Some(stage), Some(updated_at)) => Some(Progress { percent, stage, updated_at }),
                _ => None,
            },
            cancelled_at: row.optional(Col::cancelled_at)?,
        })
    }

    /// Failed by its user's cancel (not by a worker that happened to say "cancelled").
    pub fn is_cancelled(&self) -> bool {
        self.status == Status::Failed && self.cancelled_at.is_some()
    }

    /// The job as the user API shows it; `max_attempts` is the deployment's `MAX_ATTEMPTS`.
    pub fn view(&self, max_attempts: i32) -> JobView<'_> {
        JobView {
            code2des_id: &self.id,
            organization_id: self.organization_id,
            project_id: self.project_id,
            page_import_id: &self.page_import_id,
            figma_file_key: &self.figma_file_key,
            screen_id: &self.screen_id,
            placement_target: self.placement_target.as_deref(),
            status: self.status.api_name(),
            attempt: self.attempt,
            max_attempts,
            warning_count: self.warning_count,
            error_message: self.error_message.as_deref(),
            has_result: self.result_url.is_some(),
            materialized_at: self.materialized_at.map(timestamp),
            materialized_node_id: self.materialized_node_id.as_deref(),
            created_at: timestamp(self.created_at),
            updated_at: timestamp(self.updated_at),
            created_by: &self.created_by,
            updated_by: &self.updated_by,
            progress: self.progress.as_ref().map(|p| ProgressView {
                percent: p.percent,
                stage: &p.stage,
                updated_at: timestamp(p.updated_at),
            }),
        }
    }
}

/// RFC 3339 in UTC with microseconds, PostgreSQL's own precision.
pub fn timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// The job as the user API shows it (SPEC section 3): no nonce, no S3 location.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobView<'a> {
    pub code2des_id: &'a str,
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
    pub materialized_at: Option<String>,
    pub materialized_node_id: Option<&'a str>,
    pub created_at: String,
    pub updated_at: String,
    pub created_by: &'a str,
    pub updated_by: &'a str,
    pub progress: Option<ProgressView<'a>>,
}

/// `progress` in the job JSON: `{"percent","stage","updatedAt"}`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressView<'a> {
    pub percent: i16,
    pub stage: &'a str,
    pub updated_at: String,
}
