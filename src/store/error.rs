//! What can go wrong with the store, in words a person can act on (a full disk, a read-only
//! file, someone else's database), and how each becomes an `AppError`.

use sqlx::postgres::PgDatabaseError;
use sqlx::sqlite::SqliteError;

use crate::error::AppError;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database: {0}")]
    Database(sqlx::Error),
    #[error("the disk is full")]
    DiskFull,
    #[error("the database cannot be written (a read-only file, file system or database)")]
    ReadOnly,
    #[error(
        "{path} is not a database, or it is damaged. AskBridge does not overwrite it: move it away (or \
         restore it from a backup) and start again, or choose another --data-dir"
    )]
    NotADatabase { path: String },
    #[error(
        "{path} is another program's database (it has the tables {tables} and none of AskBridge's). AskBridge \
         does not change it: choose another --data-dir or database"
    )]
    Foreign { path: String, tables: String },
    /// The SQLite file is open in another process, which holds its lock (`unix-excl`, see
    /// `Store::open`) and did not let go within the busy timeout.
    #[error(
        "{path} is in use by another process (another AskBridge server with the same --data-dir?). One server \
         at a time uses a SQLite file: stop the other one, or choose another --data-dir; servers that share \
         their sessions use Postgres (--database-url)"
    )]
    InUse { path: String },
    #[error("{0} is not a database URL AskBridge knows: use sqlite://PATH or postgres://…")]
    UnknownUrl(String),
    #[error("migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// Writing or reading the file of streamed pieces beside the database (`journal`).
    #[error("the file of streamed pieces: {0}")]
    Journal(std::io::Error),
    #[error("stored JSON is unreadable: {0}")]
    Corrupt(#[from] serde_json::Error),
    #[error("no session {0}")]
    SessionNotFound(String),
    /// Another writer stored an event of this session first: the log is as it was.
    #[error("event {seq} of session {session} was not written: the log is at {stored}")]
    SequenceConflict { session: String, seq: u64, stored: u64 },
    /// An agent's write carried a lease (its fencing token) that another server has taken since:
    /// nothing was written, and the agent must stop.
    #[error("session {session}'s lease is held by another server now: this server's agent write was refused")]
    LeaseLost { session: String },
}

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> Self {
        let Some(database) = error.as_database_error() else { return Self::Database(error) };
        if let Some(postgres) = database.try_downcast_ref::<PgDatabaseError>() {
            // SQLSTATE (https://www.postgresql.org/docs/current/errcodes-appendix.html).
            match postgres.code() {
                "53100" => return Self::DiskFull,
                "25006" => return Self::ReadOnly,
                _ => {}
            }
        } else if database.try_downcast_ref::<SqliteError>().is_some() {
            // SQLite's primary result codes (https://sqlite.org/rescode.html), extended codes folded.
            match database.code().and_then(|c| c.parse::<i32>().ok()).map(|code| code & 0xff) {
                Some(13) => return Self::DiskFull,
                Some(8) => return Self::ReadOnly,
                Some(26) => return Self::NotADatabase { path: String::new() },
                _ => {}
            }
        }
        Self::Database(error)
    }
}

/// The journal's files (`journal.rs`): a full disk and a read-only one said as the database's are.
impl From<std::io::Error> for StoreError {
    fn from(error: std::io::Error) -> Self {
        match error.raw_os_error() {
            Some(libc::ENOSPC) | Some(libc::EDQUOT) => Self::DiskFull,
            Some(libc::EROFS) | Some(libc::EACCES) | Some(libc::EPERM) => Self::ReadOnly,
            _ => Self::Journal(error),
        }
    }
}

impl From<StoreError> for AppError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::SessionNotFound(id) => AppError::SessionNotFound { id },
            other => {
                tracing::error!(error = %other, "store failed");
                AppError::Storage { detail: other.to_string() }
            }
        }
    }
}

pub type StoreResult<T> = Result<T, StoreError>;
