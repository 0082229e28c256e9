//! The PostgreSQL adapter's one error type. Its causes are logged where they happen (with the
//! driver's whole chain); the HTTP edge turns it into an answer (`crate::http::faults`). A row
//! that is not there is no error here: statements answer `Option` or an outcome enum, and the
//! route decides whether that is a 404, a 410 or a 409.

use crate::budget::OutOfTime;

/// Why a database call did not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DbError {
    /// No connection, or the server is shutting down, out of resources or refusing our login.
    #[error("the database is unavailable")]
    Unavailable,
    /// The statement lost a race with another transaction (a serialization failure, a deadlock,
    /// a lock not available): the same request may pass a moment later.
    #[error("the statement lost a race with another transaction")]
    Conflict,
    /// The call ran out of time: its own cap, or the request's budget.
    #[error("the database did not answer in time ({0})")]
    TimedOut(OutOfTime),
    /// Our bug: a statement the database refuses, a row that does not read as its reader
    /// expects. Retrying cannot help.
    #[error("a database call failed on our side ({0})")]
    Bug(&'static str),
}

impl DbError {
    /// The driver's error as the adapter's, logged with its cause chain. Errors without a
    /// SQLSTATE are the client's own (I/O, a closed connection, TLS): unavailable.
    pub fn from_driver(context: &'static str, e: &tokio_postgres::Error) -> Self {
        let chain = crate::error::chain(e);
        let Some(db) = e.as_db_error() else {
            tracing::error!(dependency = "the database", context, error = %chain, "database unreachable");
            return DbError::Unavailable;
        };
        let code = db.code().code();
        // 40001 serialization failure, 40P01 deadlock, 55P03 lock not available.
        if ["40001", "40P01", "55P03"].contains(&code) {
            tracing::warn!(dependency = "the database", context, error = %chain, "lost a race with another transaction");
            return DbError::Conflict;
        }
        // 08 connection exception, 53 insufficient resources, 57P0x shutdown / cannot connect
        // now, 58 system error, 28 invalid authorization (a rotated password), 57014 statement
        // cancelled (statement_timeout, or our own cancel of a statement out of time).
        if ["08", "53", "57P", "58", "28", "57014"].iter().any(|p| code.starts_with(p)) {
            tracing::error!(dependency = "the database", context, error = %chain, "database fault");
            return DbError::Unavailable;
        }
        tracing::error!(context, error = %chain, "internal error: the database refused a statement");
        DbError::Bug(context)
    }

    /// A bug with no driver error of its own (a value the code does not expect), logged.
    pub fn bug(context: &'static str, detail: impl std::fmt::Display) -> Self {
        tracing::error!(context, detail = %detail, "internal error");
        DbError::Bug(context)
    }

    /// A call out of time, logged.
    pub fn out_of_time(why: OutOfTime) -> Self {
        tracing::error!(dependency = "the database", reason = %why, "database call ran out of time");
        DbError::TimedOut(why)
    }

    /// Whether this is a fault of the database (worth a retry later) rather than our bug.
    pub fn is_fault(&self) -> bool {
        !matches!(self, DbError::Bug(_))
    }
}
