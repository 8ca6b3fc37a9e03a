//! Durable storage: sessions, their messages and their event logs, in SQLite or Postgres through
//! sqlx. One code path serves both databases; where their SQL differs, the two statements sit
//! side by side (`Sql`).
//!
//! Migrations (`migrations/sqlite`, `migrations/postgres`) are embedded in the binary and run at
//! start. Every event is written, together with the message it changed, before anything is sent
//! to a browser. Several servers may share one Postgres: a lease says which of them runs a
//! session's turns (`leases`), and notifications tell the others what changed (`notices`).

use std::path::Path;
use std::str::FromStr;

use sqlx::SqlitePool;
use sqlx::postgres::{PgConnectOptions, PgDatabaseError, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteError, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::types::Json;

use crate::error::AppError;
use crate::interaction::Interaction;
use crate::thread::{Block, Change, EventBody, Message, Role, SessionEvent, SessionSummary, Thread, TurnState};

/// Runs `$body` with `$pool` bound to the store's pool and `$dialect` to its database: one code
/// path, compiled once for each.
macro_rules! on_pool {
    ($store:expr, |$pool:ident, $dialect:ident| $body:expr) => {
        match &$store.pool {
            crate::store::Pool::Sqlite($pool) => {
                #[allow(unused_variables)]
                let $dialect = crate::store::Dialect::Sqlite;
                $body
            }
            crate::store::Pool::Postgres($pool) => {
                #[allow(unused_variables)]
                let $dialect = crate::store::Dialect::Postgres;
                $body
            }
        }
    };
}

/// Sends `$notice` from within the transaction `$tx` on Postgres (delivered at its commit); on
/// SQLite, with a single server, there is no one to tell.
macro_rules! notify_in {
    ($tx:expr, $dialect:expr, $notice:expr) => {
        if $dialect == Dialect::Postgres {
            sqlx::query(notices::NOTIFY).bind(serde_json::to_string($notice)?).execute($tx).await?;
        }
    };
}
mod leases;
mod notices;
mod push;
#[cfg(test)]
mod tests;

pub use notices::{Listener, Notice};
pub use push::{NoticeKind, NoticeOutcome, PushSubscriptionRow};

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
    #[error("{0} is not a database URL AskBridge knows: use sqlite://PATH or postgres://…")]
    UnknownUrl(String),
    #[error("migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("stored JSON is unreadable: {0}")]
    Corrupt(#[from] serde_json::Error),
    #[error("no session {0}")]
    SessionNotFound(String),
    /// Another writer stored an event of this session first: the log is as it was.
    #[error("event {seq} of session {session} was not written: the log is at {stored}")]
    SequenceConflict { session: String, seq: u64, stored: u64 },
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

/// What one event changed, written in a single transaction.
pub struct Append<'a> {
    pub session_id: &'a str,
    pub event: &'a SessionEvent,
    /// The messages the event changed, with their positions in the thread.
    pub messages: Vec<(usize, &'a Message)>,
    /// The turn state, when the event changed it.
    pub turn: Option<&'a TurnState>,
    /// The interactions the event opened or changed, by tool_use id.
    pub interactions: Vec<(&'a str, &'a Interaction)>,
}

impl<'a> Append<'a> {
    /// What `thread` (after applying `event`) needs stored. A streamed piece (a text or argument
    /// delta) is stored as its event alone: the message it grows is written whole at its next
    /// other change (and read back with its deltas replayed), so that a long reply costs what
    /// streamed, not its length for every word.
    pub fn of(session_id: &'a str, event: &'a SessionEvent, thread: &'a Thread, change: &'a Change) -> Self {
        let delta = event.body.is_delta();
        Self {
            session_id,
            event,
            messages: change
                .messages
                .iter()
                .filter(|_| !delta)
                .filter_map(|&i| Some((i, thread.messages.get(i)?)))
                .collect(),
            turn: change.turn.then_some(&thread.turn),
            interactions: change
                .interactions
                .iter()
                .filter_map(|id| Some((id.as_str(), thread.tool_call(id)?.interaction.as_ref()?)))
                .collect(),
        }
    }
}

#[derive(Clone)]
pub struct Store {
    pool: Pool,
    /// Fails every write while set: how tests inject a storage failure.
    failing: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

#[derive(Clone)]
enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    Sqlite,
    Postgres,
}

/// One statement in each database's SQL, for where they differ. Both take `$1`-style parameters
/// in the same order. Times are milliseconds in SQLite and `timestamptz` in Postgres, converted
/// in the statement: the API speaks milliseconds on both.
struct Sql {
    sqlite: &'static str,
    postgres: &'static str,
}

impl Sql {
    fn on(&self, dialect: Dialect) -> &'static str {
        match dialect {
            Dialect::Sqlite => self.sqlite,
            Dialect::Postgres => self.postgres,
        }
    }
}

impl Store {
    /// Opens the database at `url` and brings its schema up to date: `sqlite://PATH` (or
    /// `sqlite:PATH`; `sqlite::memory:` for a private one) as `open` does, or `postgres://…` /
    /// `postgresql://…`. A database that has tables but none of AskBridge's is refused as it is.
    pub async fn connect(url: &str) -> StoreResult<Self> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Self::connect_postgres(url).await;
        }
        match url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")) {
            Some(":memory:") => Self::open_in_memory().await,
            Some(path) if !path.is_empty() => Self::open(Path::new(path)).await,
            _ => Err(StoreError::UnknownUrl(without_password(url))),
        }
    }

    async fn connect_postgres(url: &str) -> StoreResult<Self> {
        let options = PgConnectOptions::from_str(url)?;
        let pool = PgPoolOptions::new().max_connections(8).connect_with(options).await?;
        // Tables, but none of ours: someone else's database, which the migrations would change.
        let tables: Vec<String> = sqlx::query_scalar(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public'
             ORDER BY table_name",
        )
        .fetch_all(&pool)
        .await?;
        if !tables.is_empty() && !tables.iter().any(|t| t == "_sqlx_migrations") {
            return Err(StoreError::Foreign { path: without_password(url), tables: tables.join(", ") });
        }
        // Several servers starting at once: sqlx takes an advisory lock around the migrations.
        sqlx::migrate!("./migrations/postgres").run(&pool).await?;
        Ok(Self { pool: Pool::Postgres(pool), failing: Default::default() })
    }

    /// Opens (creating if needed) the SQLite database file and brings its schema up to date. A
    /// file that is not a database, or is another program's, is refused and left as it is.
    pub async fn open(path: &Path) -> StoreResult<Self> {
        Self::open_with_page_limit(path, None).await
    }

    /// As `open`, with the database limited to `pages` pages (of 4 KiB): a full disk, for tests.
    #[doc(hidden)]
    pub async fn open_with_page_limit(path: &Path, pages: Option<u32>) -> StoreResult<Self> {
        let mut options = SqliteConnectOptions::from_str("sqlite://")?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(std::time::Duration::from_secs(10));
        if let Some(pages) = pages {
            options = options.pragma("max_page_count", pages.to_string());
        }
        let named = |error: StoreError| match error {
            StoreError::NotADatabase { .. } => StoreError::NotADatabase { path: path.display().to_string() },
            other => other,
        };
        let pool =
            SqlitePoolOptions::new().max_connections(8).connect_with(options).await.map_err(|e| named(e.into()))?;
        // Tables, but none of ours: someone else's database, which the migrations would change.
        let tables: Vec<String> =
            sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
                .fetch_all(&pool)
                .await
                .map_err(|e| named(e.into()))?;
        if !tables.is_empty() && !tables.iter().any(|t| t == "_sqlx_migrations") {
            return Err(StoreError::Foreign { path: path.display().to_string(), tables: tables.join(", ") });
        }
        Self::migrated_sqlite(pool).await
    }

    /// A private SQLite database that lives as long as the store: for tests.
    pub async fn open_in_memory() -> StoreResult<Self> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:")?.foreign_keys(true);
        // One connection: each in-memory connection would otherwise be its own database.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await?;
        Self::migrated_sqlite(pool).await
    }

    async fn migrated_sqlite(pool: SqlitePool) -> StoreResult<Self> {
        sqlx::migrate!("./migrations/sqlite").run(&pool).await?;
        Ok(Self { pool: Pool::Sqlite(pool), failing: Default::default() })
    }

    /// Whether other servers may share this database (Postgres): then leases and notifications
    /// matter. SQLite has one server, which holds every session.
    pub fn is_shared(&self) -> bool {
        matches!(self.pool, Pool::Postgres(_))
    }

    /// Makes every write fail (as a failing disk would) until called with `false`: for tests.
    #[doc(hidden)]
    pub fn fail_writes(&self, failing: bool) {
        self.failing.store(failing, std::sync::atomic::Ordering::SeqCst);
    }

    fn check_writable(&self) -> StoreResult<()> {
        if self.failing.load(std::sync::atomic::Ordering::SeqCst) { Err(StoreError::ReadOnly) } else { Ok(()) }
    }

    pub async fn create_session(&self, summary: &SessionSummary) -> StoreResult<()> {
        self.check_writable()?;
        on_pool!(self, |pool, dialect| {
            let mut tx = pool.begin().await?;
            sqlx::query(
                Sql {
                    sqlite: "INSERT INTO sessions (id, title, agent, created_at_ms, updated_at_ms, workdir)
                             VALUES ($1, $2, $3, $4, $5, $6)",
                    postgres: "INSERT INTO sessions (id, title, agent, created_at, updated_at, workdir)
                               VALUES ($1, $2, $3, to_timestamp($4 / 1000.0), to_timestamp($5 / 1000.0), $6)",
                }
                .on(dialect),
            )
            .bind(&summary.id)
            .bind(without_nul(&summary.title))
            .bind(&summary.agent)
            .bind(summary.created_at_ms)
            .bind(summary.updated_at_ms)
            .bind(&summary.workdir)
            .execute(&mut *tx)
            .await?;
            notify_in!(&mut *tx, dialect, &Notice::ListChanged);
            tx.commit().await?;
        });
        Ok(())
    }

    /// Every session, the most recently active first.
    pub async fn list_sessions(&self) -> StoreResult<Vec<SessionSummary>> {
        let rows: Vec<SummaryRow> = on_pool!(self, |pool, dialect| {
            sqlx::query_as(&format!("{} ORDER BY updated_at_ms DESC, created_at_ms DESC", SUMMARY.on(dialect)))
                .fetch_all(pool)
                .await?
        });
        Ok(rows.into_iter().map(SessionSummary::from).collect())
    }

    pub async fn session(&self, id: &str) -> StoreResult<SessionSummary> {
        let row: Option<SummaryRow> = on_pool!(self, |pool, dialect| {
            sqlx::query_as(&format!("{} WHERE id = $1", SUMMARY.on(dialect))).bind(id).fetch_optional(pool).await?
        });
        row.map(SessionSummary::from).ok_or_else(|| StoreError::SessionNotFound(id.to_string()))
    }

    /// Renames a session; from then on its title no longer follows its first message.
    pub async fn rename_session(&self, id: &str, title: &str) -> StoreResult<()> {
        on_pool!(self, |pool, dialect| {
            let mut tx = pool.begin().await?;
            let done = sqlx::query("UPDATE sessions SET title = $1, title_is_auto = FALSE WHERE id = $2")
                .bind(without_nul(title))
                .bind(id)
                .execute(&mut *tx)
                .await?;
            if done.rows_affected() == 0 {
                return Err(StoreError::SessionNotFound(id.to_string()));
            }
            notify_in!(&mut *tx, dialect, &Notice::ListChanged);
            tx.commit().await?;
        });
        Ok(())
    }

    /// Titles a session after its first message, unless the person has named it.
    pub async fn set_automatic_title(&self, id: &str, title: &str) -> StoreResult<()> {
        on_pool!(self, |pool, dialect| {
            let mut tx = pool.begin().await?;
            let done = sqlx::query(
                "UPDATE sessions SET title = $1, title_is_auto = FALSE WHERE id = $2 AND title_is_auto = TRUE",
            )
            .bind(without_nul(title))
            .bind(id)
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() > 0 {
                notify_in!(&mut *tx, dialect, &Notice::ListChanged);
            }
            tx.commit().await?;
        });
        Ok(())
    }

    /// Deletes a session with its messages and log.
    pub async fn delete_session(&self, id: &str) -> StoreResult<()> {
        on_pool!(self, |pool, dialect| {
            let mut tx = pool.begin().await?;
            let done = sqlx::query("DELETE FROM sessions WHERE id = $1").bind(id).execute(&mut *tx).await?;
            if done.rows_affected() == 0 {
                return Err(StoreError::SessionNotFound(id.to_string()));
            }
            notify_in!(&mut *tx, dialect, &Notice::Deleted { session: id.to_string() });
            notify_in!(&mut *tx, dialect, &Notice::ListChanged);
            tx.commit().await?;
        });
        Ok(())
    }

    /// The sequence number of the session's last stored event (0 before the first).
    pub async fn last_seq(&self, id: &str) -> StoreResult<u64> {
        let stored: Option<i64> = on_pool!(self, |pool, dialect| {
            sqlx::query_scalar("SELECT last_seq FROM sessions WHERE id = $1").bind(id).fetch_optional(pool).await?
        });
        stored.map(|seq| seq as u64).ok_or_else(|| StoreError::SessionNotFound(id.to_string()))
    }

    /// The thread as of the session's last stored event.
    pub async fn load_thread(&self, id: &str) -> StoreResult<Thread> {
        let (head, rows, deltas) = on_pool!(self, |pool, dialect| {
            // One read transaction, so the messages and `last_seq` describe the same moment
            // (Postgres reads each statement at its own moment unless asked for one snapshot).
            let mut tx = pool.begin().await?;
            if dialect == Dialect::Postgres {
                sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY").execute(&mut *tx).await?;
            }
            let head: HeadRow = sqlx::query_as("SELECT last_seq, turn FROM sessions WHERE id = $1")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?
                .ok_or_else(|| StoreError::SessionNotFound(id.to_string()))?;
            let rows: Vec<MessageRow> = sqlx::query_as(
                Sql {
                    sqlite: "SELECT id, role, blocks, streaming, created_at_ms, updated_seq FROM messages
                             WHERE session_id = $1 ORDER BY position",
                    postgres: "SELECT id, role, blocks, streaming,
                                 (extract(epoch FROM created_at) * 1000)::bigint AS created_at_ms, updated_seq
                               FROM messages WHERE session_id = $1 ORDER BY position",
                }
                .on(dialect),
            )
            .bind(id)
            .fetch_all(&mut *tx)
            .await?;
            // The deltas a streaming message got since its row was last written.
            let since = rows.iter().filter(|row| row.streaming).map(|row| row.updated_seq).min();
            let deltas: Vec<EventRow> = match since {
                Some(since) => {
                    sqlx::query_as(&format!(
                        "{} WHERE session_id = $1 AND seq > $2 AND kind IN ('text_delta', 'tool_input_delta')
                         ORDER BY seq",
                        EVENT.on(dialect)
                    ))
                    .bind(id)
                    .bind(since)
                    .fetch_all(&mut *tx)
                    .await?
                }
                None => Vec::new(),
            };
            tx.commit().await?;
            (head, rows, deltas)
        });

        let written_at: Vec<u64> = rows.iter().map(|row| row.updated_seq as u64).collect();
        let messages = rows
            .into_iter()
            .map(|row| Message {
                id: row.id,
                role: role_from_str(&row.role),
                blocks: row.blocks.0,
                streaming: row.streaming,
                created_at_ms: row.created_at_ms,
            })
            .collect();
        let mut thread = Thread { messages, turn: head.turn.0, seq: 0 };
        for row in deltas {
            let event = SessionEvent::from(row);
            // Only onto a message whose row was written before this delta.
            let target = thread.delta_target(&event.body);
            if target.is_some_and(|index| written_at[index] < event.seq) {
                thread.seq = event.seq - 1;
                thread.apply(&event);
            }
        }
        thread.seq = head.last_seq as u64;
        Ok(thread)
    }

    /// Stores one event and what it changed, atomically; it must follow the stored log's last
    /// event, or nothing is written. On Postgres, the other servers are told (`Notice::Appended`)
    /// when it commits.
    pub async fn append(&self, append: Append<'_>) -> StoreResult<()> {
        self.check_writable()?;
        let Append { session_id, event, messages, turn, interactions } = append;
        let seq = event.seq as i64;
        // Deltas do not move a session up the list; messages and turn changes do.
        let touches = !event.body.is_delta();
        on_pool!(self, |pool, dialect| {
            let mut tx = pool.begin().await?;
            // The session's row first, as a compare-and-set on its last sequence number: writing it
            // takes SQLite's write lock at once (a read first would have to upgrade its lock
            // later, which SQLite refuses under contention), and Postgres's row lock, under which
            // a second writer of the same number finds the row changed and updates nothing.
            let updated = if touches || turn.is_some() {
                sqlx::query(
                    Sql {
                        sqlite: "UPDATE sessions SET last_seq = $1, turn = COALESCE($2, turn),
                                   updated_at_ms = CASE WHEN $3 THEN $4 ELSE updated_at_ms END
                                 WHERE id = $5 AND last_seq = $6",
                        postgres: "UPDATE sessions SET last_seq = $1, turn = COALESCE($2, turn),
                                     updated_at = CASE WHEN $3 THEN to_timestamp($4 / 1000.0) ELSE updated_at END
                                   WHERE id = $5 AND last_seq = $6",
                    }
                    .on(dialect),
                )
                .bind(seq)
                .bind(turn.map(storable).transpose()?)
                .bind(touches)
                .bind(event.at_ms)
                .bind(session_id)
                .bind(seq - 1)
                .execute(&mut *tx)
                .await?
            } else {
                // A delta sets the sequence number only: naming `updated_at_ms` at all, even to
                // its own value, makes SQLite rewrite the recency index's page too, one page of
                // the three each streamed delta wrote.
                sqlx::query("UPDATE sessions SET last_seq = $1 WHERE id = $2 AND last_seq = $3")
                    .bind(seq)
                    .bind(session_id)
                    .bind(seq - 1)
                    .execute(&mut *tx)
                    .await?
            };
            if updated.rows_affected() == 0 {
                // Gone, or its log is elsewhere: nothing is written (the transaction is dropped).
                let stored: Option<i64> = sqlx::query_scalar("SELECT last_seq FROM sessions WHERE id = $1")
                    .bind(session_id)
                    .fetch_optional(&mut *tx)
                    .await?;
                return Err(match stored {
                    None => StoreError::SessionNotFound(session_id.to_string()),
                    Some(stored) => StoreError::SequenceConflict {
                        session: session_id.to_string(),
                        seq: event.seq,
                        stored: stored as u64,
                    },
                });
            }
            sqlx::query(
                Sql {
                    sqlite: "INSERT INTO events (session_id, seq, at_ms, kind, body) VALUES ($1, $2, $3, $4, $5)",
                    postgres: "INSERT INTO events (session_id, seq, at, kind, body)
                               VALUES ($1, $2, to_timestamp($3 / 1000.0), $4, $5)",
                }
                .on(dialect),
            )
            .bind(session_id)
            .bind(seq)
            .bind(event.at_ms)
            .bind(event.body.kind())
            .bind(storable(&event.body)?)
            .execute(&mut *tx)
            .await?;
            for (position, message) in &messages {
                sqlx::query(
                    Sql {
                        sqlite: "INSERT INTO messages
                                   (session_id, position, id, role, blocks, streaming, created_at_ms, updated_seq)
                                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                                 ON CONFLICT (session_id, position) DO UPDATE SET
                                   blocks = excluded.blocks, streaming = excluded.streaming,
                                   updated_seq = excluded.updated_seq",
                        postgres: "INSERT INTO messages
                                     (session_id, position, id, role, blocks, streaming, created_at, updated_seq)
                                   VALUES ($1, $2, $3, $4, $5, $6, to_timestamp($7 / 1000.0), $8)
                                   ON CONFLICT (session_id, position) DO UPDATE SET
                                     blocks = excluded.blocks, streaming = excluded.streaming,
                                     updated_seq = excluded.updated_seq",
                    }
                    .on(dialect),
                )
                .bind(session_id)
                .bind(*position as i64)
                .bind(&message.id)
                .bind(role_to_str(message.role))
                .bind(storable(&message.blocks)?)
                .bind(message.streaming)
                .bind(message.created_at_ms)
                .bind(seq)
                .execute(&mut *tx)
                .await?;
            }
            for (tool_use_id, interaction) in &interactions {
                sqlx::query(
                    "INSERT INTO interactions (session_id, tool_use_id, request, state, outcome, updated_seq)
                     VALUES ($1, $2, $3, $4, $5, $6)
                     ON CONFLICT (session_id, tool_use_id) DO UPDATE SET
                       state = excluded.state, outcome = excluded.outcome, updated_seq = excluded.updated_seq",
                )
                .bind(session_id)
                .bind(*tool_use_id)
                .bind(storable(&interaction.request)?)
                .bind(interaction.outcome.as_ref().map_or("pending", |outcome| outcome.name()))
                .bind(interaction.outcome.as_ref().map(storable).transpose()?)
                .bind(seq)
                .execute(&mut *tx)
                .await?;
            }
            // Sent at commit, in commit order, and not at all if the transaction fails.
            notify_in!(&mut *tx, dialect, &Notice::Appended { session: session_id.to_string(), seq: event.seq });
            tx.commit().await?;
        });
        Ok(())
    }

    /// Up to `limit` events after `after`, oldest first.
    pub async fn events_after(&self, session_id: &str, after: u64, limit: u32) -> StoreResult<Vec<SessionEvent>> {
        let rows: Vec<EventRow> = on_pool!(self, |pool, dialect| {
            sqlx::query_as(&format!("{} WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3", EVENT.on(dialect)))
                .bind(session_id)
                .bind(after as i64)
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await?
        });
        Ok(rows.into_iter().map(SessionEvent::from).collect())
    }

    /// Sessions whose last turn never ended and that no live server holds: the server running
    /// them stopped while their agent was working.
    pub async fn sessions_with_unfinished_turns(&self) -> StoreResult<Vec<String>> {
        Ok(on_pool!(self, |pool, dialect| {
            sqlx::query_scalar(
                Sql {
                    sqlite: "SELECT id FROM sessions WHERE json_extract(turn, '$.working') = 1
                             AND NOT EXISTS (SELECT 1 FROM session_leases l WHERE l.session_id = sessions.id
                               AND l.expires_at_ms > CAST(unixepoch('subsec') * 1000 AS INTEGER))
                             ORDER BY id",
                    postgres: "SELECT id FROM sessions WHERE (turn ->> 'working')::boolean
                               AND NOT EXISTS (SELECT 1 FROM session_leases l WHERE l.session_id = sessions.id
                                 AND l.expires_at > now())
                               ORDER BY id",
                }
                .on(dialect),
            )
            .fetch_all(pool)
            .await?
        }))
    }
}

/// A session as the list shows it, with whether an interaction waits for the person.
const SUMMARY: Sql = Sql {
    sqlite: "SELECT id, title, agent, created_at_ms, updated_at_ms, turn, workdir,
               EXISTS (SELECT 1 FROM interactions i WHERE i.session_id = sessions.id AND i.state = 'pending')
                 AS waiting
             FROM sessions",
    postgres: "SELECT id, title, agent,
                 (extract(epoch FROM created_at) * 1000)::bigint AS created_at_ms,
                 (extract(epoch FROM updated_at) * 1000)::bigint AS updated_at_ms, turn, workdir,
                 EXISTS (SELECT 1 FROM interactions i WHERE i.session_id = sessions.id AND i.state = 'pending')
                   AS waiting
               FROM sessions",
};

/// Events, to be followed by a WHERE clause.
const EVENT: Sql = Sql {
    sqlite: "SELECT seq, at_ms, body FROM events",
    postgres: "SELECT seq, (extract(epoch FROM at) * 1000)::bigint AS at_ms, body FROM events",
};

#[derive(sqlx::FromRow)]
struct SummaryRow {
    id: String,
    title: String,
    agent: String,
    created_at_ms: i64,
    updated_at_ms: i64,
    turn: Json<TurnState>,
    workdir: Option<String>,
    waiting: bool,
}

impl From<SummaryRow> for SessionSummary {
    fn from(row: SummaryRow) -> Self {
        SessionSummary {
            id: row.id,
            title: row.title,
            agent: row.agent,
            created_at_ms: row.created_at_ms,
            updated_at_ms: row.updated_at_ms,
            working: row.turn.0.working,
            waiting: row.waiting,
            workdir: row.workdir,
        }
    }
}

#[derive(sqlx::FromRow)]
struct HeadRow {
    last_seq: i64,
    turn: Json<TurnState>,
}

#[derive(sqlx::FromRow)]
struct MessageRow {
    id: String,
    role: String,
    blocks: Json<Vec<Block>>,
    streaming: bool,
    created_at_ms: i64,
    updated_seq: i64,
}

#[derive(sqlx::FromRow)]
struct EventRow {
    seq: i64,
    at_ms: i64,
    body: Json<EventBody>,
}

impl From<EventRow> for SessionEvent {
    fn from(row: EventRow) -> Self {
        SessionEvent { seq: row.seq as u64, at_ms: row.at_ms, body: row.body.0 }
    }
}

/// A URL fit for messages: its password, if any, left out.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((user_info, host)) => {
            let user = user_info.split_once(':').map_or(user_info, |(user, _password)| user);
            format!("{scheme}://{user}@{host}{path}")
        }
        None => url.to_string(),
    }
}

/// JSON as the store keeps it, the same on both databases. Postgres refuses the NUL character
/// (U+0000) in `jsonb` and `text`, and an agent's output may hold one (a binary file read by a
/// tool): it is kept as U+FFFD, the replacement character, as an editor shows it. The check is a
/// search of the serialized text, which is written once either way.
fn storable<T: serde::Serialize>(value: &T) -> StoreResult<Json<Box<serde_json::value::RawValue>>> {
    let mut text = serde_json::to_string(value)?;
    if text.contains("\\u0000") {
        let mut cleaned: serde_json::Value = serde_json::from_str(&text)?;
        replace_nul(&mut cleaned);
        text = serde_json::to_string(&cleaned)?;
    }
    Ok(Json(serde_json::value::RawValue::from_string(text)?))
}

fn replace_nul(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(text) if text.contains('\0') => *text = text.replace('\0', "\u{fffd}"),
        Value::Array(items) => items.iter_mut().for_each(replace_nul),
        Value::Object(fields) => {
            // Keys too: tool arguments are the model's JSON.
            let taken = std::mem::take(fields);
            for (key, mut item) in taken {
                replace_nul(&mut item);
                fields.insert(without_nul(&key).into_owned(), item);
            }
        }
        _ => {}
    }
}

/// Text for a `text` column, without NUL characters (see `storable`).
fn without_nul(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\0') { text.replace('\0', "\u{fffd}").into() } else { text.into() }
}

fn role_to_str(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Notice => "notice",
    }
}

fn role_from_str(role: &str) -> Role {
    match role {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        _ => Role::Notice,
    }
}
