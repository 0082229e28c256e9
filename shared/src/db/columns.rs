//! A job's columns, and the one decoder that reads a [`Job`] from them: a statement's rows (the
//! columns found by name once per statement, [`Layout`]) or the one record `code2des_read_job`
//! answers (by position, [`from_read_row`]).

use chrono::{DateTime, Utc};
use tokio_postgres::types::FromSql;
use tokio_postgres::Row;

pub use crate::db::record::BoxError;
use crate::db::record::Record;
use crate::domain::ids::{Code2desId, OrganizationId, ProjectId};
use crate::domain::job::StatusLabel;
use crate::domain::job::{Job, Nonce, Progress, Status};

/// Where a job's columns come from: a statement's row, its columns found by name once per
/// statement ([`Layout`]), or the one record `code2des_read_job` answers, by position
/// ([`from_read_row`]). One decoder reads both.
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

/// The job in a row of any job statement (its columns found by name: for many rows of one
/// statement, [`from_laid_row`] finds them once).
pub fn from_row(row: &Row) -> Result<Job, BoxError> {
    from_laid_row(row, &Layout::of(row))
}

/// The job in `row`, whose statement's columns `layout` found.
pub fn from_laid_row(row: &Row, layout: &Layout) -> Result<Job, BoxError> {
    decode(Laid { row, layout })
}

/// The job in the one column `SELECT code2des_read_job(...)` answers: None when that record is
/// NULL (no job the caller may see).
pub fn from_read_row(row: &Row) -> Result<Option<Job>, BoxError> {
    row.try_get::<_, Option<Record>>(0)?.map(|r| decode(ReadRecord::new(r)?)).transpose()
}

/// A job from any source of its columns (a row, or the read's record). Ids are typed here, and
/// a value the service does not know (an id that is not one of ours, a status label the enum
/// of migration V1 does not have) is an error: a bug or a foreign row, reported, never read as
/// something else.
pub fn decode<'a>(row: impl Columns<'a>) -> Result<Job, BoxError> {
    let id: &str = row.get(Col::id)?;
    let status: &str = row.get(Col::status)?;
    let organization_id: i32 = row.get(Col::organization_id)?;
    let project_id: i32 = row.get(Col::project_id)?;
    Ok(Job {
        id: Code2desId::from_db(id).ok_or_else(|| format!("column id: {id:?} is not a job id"))?,
        organization_id: OrganizationId::new(organization_id)
            .ok_or_else(|| format!("column organization_id: {organization_id} is not an id"))?,
        project_id: ProjectId::new(project_id)
            .ok_or_else(|| format!("column project_id: {project_id} is not an id"))?,
        page_import_id: row.get(Col::page_import_id)?,
        figma_file_key: row.get(Col::figma_file_key)?,
        screen_id: row.get(Col::screen_id)?,
        placement_target: row.get(Col::placement_target)?,
        status: Status::from_db(status).ok_or_else(|| format!("column status: unknown label {status:?}"))?,
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
