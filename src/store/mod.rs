//! Durable storage: sessions, their messages and their event logs, in SQLite through sqlx.
//!
//! Migrations are embedded in the binary and run at start. Every event is written, together with
//! the message it changed, before anything is sent to a browser.

use std::path::Path;
use std::str::FromStr;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Row, SqlitePool};

use crate::error::AppError;
use crate::interaction::Interaction;
use crate::thread::{Block, Change, Message, Role, SessionEvent, SessionSummary, Thread, TurnState};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database: {0}")]
    Database(sqlx::Error),
    #[error("the disk is full")]
    DiskFull,
    #[error("the database cannot be written (read-only file or file system)")]
    ReadOnly,
    #[error(
        "{path} is not a database, or it is damaged. AskBridge does not overwrite it: move it away (or \
         restore it from a backup) and start again, or choose another --data-dir"
    )]
    NotADatabase { path: String },
    #[error(
        "{path} is another program's database (it has the tables {tables} and none of AskBridge's). AskBridge \
         does not change it: choose another --data-dir"
    )]
    Foreign { path: String, tables: String },
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
        // SQLite's primary result codes (https://sqlite.org/rescode.html), extended codes folded.
        let code = error.as_database_error().and_then(|e| e.code()).and_then(|c| c.parse::<i32>().ok());
        match code.map(|code| code & 0xff) {
            Some(13) => Self::DiskFull,
            Some(8) => Self::ReadOnly,
            Some(26) => Self::NotADatabase { path: String::new() },
            _ => Self::Database(error),
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
    pool: SqlitePool,
    /// Fails every write while set: how tests inject a storage failure.
    failing: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Store {
    /// Opens (creating if needed) the database file and brings its schema up to date. A file
    /// that is not a database, or is another program's, is refused and left as it is.
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
        Self::migrated(pool).await
    }

    /// Makes every write fail (as a failing disk would) until called with `false`: for tests.
    #[doc(hidden)]
    pub fn fail_writes(&self, failing: bool) {
        self.failing.store(failing, std::sync::atomic::Ordering::SeqCst);
    }

    fn check_writable(&self) -> StoreResult<()> {
        if self.failing.load(std::sync::atomic::Ordering::SeqCst) { Err(StoreError::ReadOnly) } else { Ok(()) }
    }

    /// A private database that lives as long as the store: for tests.
    pub async fn open_in_memory() -> StoreResult<Self> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:")?.foreign_keys(true);
        // One connection: each in-memory connection would otherwise be its own database.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await?;
        Self::migrated(pool).await
    }

    async fn migrated(pool: SqlitePool) -> StoreResult<Self> {
        sqlx::migrate!("./migrations").run(&pool).await?;
        Ok(Self { pool, failing: Default::default() })
    }

    pub async fn create_session(&self, summary: &SessionSummary) -> StoreResult<()> {
        self.check_writable()?;
        sqlx::query(
            "INSERT INTO sessions (id, title, agent, created_at_ms, updated_at_ms, workdir) VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(&summary.id)
        .bind(&summary.title)
        .bind(&summary.agent)
        .bind(summary.created_at_ms)
        .bind(summary.updated_at_ms)
        .bind(&summary.workdir)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Every session, the most recently active first.
    pub async fn list_sessions(&self) -> StoreResult<Vec<SessionSummary>> {
        let rows = sqlx::query(&format!("{SUMMARY} ORDER BY updated_at_ms DESC, created_at_ms DESC"))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(summary_from_row).collect()
    }

    pub async fn session(&self, id: &str) -> StoreResult<SessionSummary> {
        let row = sqlx::query(&format!("{SUMMARY} WHERE id = ?"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::SessionNotFound(id.to_string()))?;
        summary_from_row(&row)
    }

    /// Renames a session; from then on its title no longer follows its first message.
    pub async fn rename_session(&self, id: &str, title: &str) -> StoreResult<()> {
        let done = sqlx::query("UPDATE sessions SET title = ?, title_is_auto = 0 WHERE id = ?")
            .bind(title)
            .bind(id)
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::SessionNotFound(id.to_string()));
        }
        Ok(())
    }

    /// Titles a session after its first message, unless the person has named it.
    pub async fn set_automatic_title(&self, id: &str, title: &str) -> StoreResult<()> {
        sqlx::query("UPDATE sessions SET title = ?, title_is_auto = 0 WHERE id = ? AND title_is_auto = 1")
            .bind(title)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Deletes a session with its messages and log.
    pub async fn delete_session(&self, id: &str) -> StoreResult<()> {
        let done = sqlx::query("DELETE FROM sessions WHERE id = ?").bind(id).execute(&self.pool).await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::SessionNotFound(id.to_string()));
        }
        Ok(())
    }

    /// The thread as of the session's last stored event.
    pub async fn load_thread(&self, id: &str) -> StoreResult<Thread> {
        // One read transaction, so the messages and `last_seq` describe the same moment.
        let mut tx = self.pool.begin().await?;
        let head = sqlx::query("SELECT last_seq, turn FROM sessions WHERE id = ?")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| StoreError::SessionNotFound(id.to_string()))?;
        let rows = sqlx::query(
            "SELECT id, role, blocks, streaming, created_at_ms, updated_seq FROM messages
             WHERE session_id = ? ORDER BY position",
        )
        .bind(id)
        .fetch_all(&mut *tx)
        .await?;
        // The deltas a streaming message got since its row was last written.
        let since =
            rows.iter().filter(|row| row.get::<bool, _>("streaming")).map(|row| row.get::<i64, _>("updated_seq")).min();
        let deltas = match since {
            Some(since) => {
                sqlx::query(
                    "SELECT seq, at_ms, body FROM events WHERE session_id = ? AND seq > ?
                     AND kind IN ('text_delta', 'tool_input_delta') ORDER BY seq",
                )
                .bind(id)
                .bind(since)
                .fetch_all(&mut *tx)
                .await?
            }
            None => Vec::new(),
        };
        tx.commit().await?;

        let mut written_at = Vec::with_capacity(rows.len());
        let messages = rows
            .iter()
            .map(|row| {
                written_at.push(row.get::<i64, _>("updated_seq") as u64);
                Ok(Message {
                    id: row.get("id"),
                    role: role_from_str(row.get("role")),
                    blocks: serde_json::from_str::<Vec<Block>>(row.get("blocks"))?,
                    streaming: row.get("streaming"),
                    created_at_ms: row.get("created_at_ms"),
                })
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let mut thread = Thread { messages, turn: serde_json::from_str(head.get("turn"))?, seq: 0 };
        for row in deltas {
            let event = SessionEvent {
                seq: row.get::<i64, _>("seq") as u64,
                at_ms: row.get("at_ms"),
                body: serde_json::from_str(row.get("body"))?,
            };
            // Only onto a message whose row was written before this delta.
            let target = thread.delta_target(&event.body);
            if target.is_some_and(|index| written_at[index] < event.seq) {
                thread.seq = event.seq - 1;
                thread.apply(&event);
            }
        }
        thread.seq = head.get::<i64, _>("last_seq") as u64;
        Ok(thread)
    }

    /// Stores one event and what it changed, atomically; it must follow the stored log's last
    /// event, or nothing is written.
    pub async fn append(&self, append: Append<'_>) -> StoreResult<()> {
        self.check_writable()?;
        let Append { session_id, event, messages, turn, interactions } = append;
        let seq = event.seq as i64;
        let mut tx = self.pool.begin().await?;
        // The session's row first: writing it takes the database's write lock at once (a read
        // first would have to upgrade its lock later, which SQLite refuses under contention).
        // Deltas do not move a session up the list; messages and turn changes do.
        let touches = !event.body.is_delta();
        let turn_json = turn.map(serde_json::to_string).transpose()?;
        let updated = sqlx::query(
            "UPDATE sessions SET last_seq = ?,
               turn = COALESCE(?, turn),
               updated_at_ms = CASE WHEN ? THEN ? ELSE updated_at_ms END
             WHERE id = ? AND last_seq = ?",
        )
        .bind(seq)
        .bind(turn_json)
        .bind(touches)
        .bind(event.at_ms)
        .bind(session_id)
        .bind(seq - 1)
        .execute(&mut *tx)
        .await?;
        if updated.rows_affected() == 0 {
            // Gone, or its log is elsewhere: nothing is written (the transaction is dropped).
            let stored: Option<i64> = sqlx::query_scalar("SELECT last_seq FROM sessions WHERE id = ?")
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
        sqlx::query("INSERT INTO events (session_id, seq, at_ms, kind, body) VALUES (?, ?, ?, ?, ?)")
            .bind(session_id)
            .bind(seq)
            .bind(event.at_ms)
            .bind(event.body.kind())
            .bind(serde_json::to_string(&event.body)?)
            .execute(&mut *tx)
            .await?;
        for (position, message) in messages {
            sqlx::query(
                "INSERT INTO messages (session_id, position, id, role, blocks, streaming, created_at_ms, updated_seq)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                 ON CONFLICT (session_id, position) DO UPDATE SET
                   blocks = excluded.blocks, streaming = excluded.streaming, updated_seq = excluded.updated_seq",
            )
            .bind(session_id)
            .bind(position as i64)
            .bind(&message.id)
            .bind(role_to_str(message.role))
            .bind(serde_json::to_string(&message.blocks)?)
            .bind(message.streaming)
            .bind(message.created_at_ms)
            .bind(seq)
            .execute(&mut *tx)
            .await?;
        }
        for (tool_use_id, interaction) in interactions {
            sqlx::query(
                "INSERT INTO interactions (session_id, tool_use_id, request, state, outcome, updated_seq)
                 VALUES (?, ?, ?, ?, ?, ?)
                 ON CONFLICT (session_id, tool_use_id) DO UPDATE SET
                   state = excluded.state, outcome = excluded.outcome, updated_seq = excluded.updated_seq",
            )
            .bind(session_id)
            .bind(tool_use_id)
            .bind(serde_json::to_string(&interaction.request)?)
            .bind(interaction.outcome.as_ref().map_or("pending", |outcome| outcome.name()))
            .bind(interaction.outcome.as_ref().map(serde_json::to_string).transpose()?)
            .bind(seq)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Up to `limit` events after `after`, oldest first.
    pub async fn events_after(&self, session_id: &str, after: u64, limit: u32) -> StoreResult<Vec<SessionEvent>> {
        let rows =
            sqlx::query("SELECT seq, at_ms, body FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?")
                .bind(session_id)
                .bind(after as i64)
                .bind(limit)
                .fetch_all(&self.pool)
                .await?;
        rows.iter()
            .map(|row| {
                Ok(SessionEvent {
                    seq: row.get::<i64, _>("seq") as u64,
                    at_ms: row.get("at_ms"),
                    body: serde_json::from_str(row.get("body"))?,
                })
            })
            .collect()
    }

    /// Sessions whose last turn never ended: the server stopped while their agent was working.
    pub async fn sessions_with_unfinished_turns(&self) -> StoreResult<Vec<String>> {
        let rows = sqlx::query("SELECT id FROM sessions WHERE json_extract(turn, '$.working') = 1")
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.iter().map(|row| row.get("id")).collect())
    }
}

fn summary_from_row(row: &sqlx::sqlite::SqliteRow) -> StoreResult<SessionSummary> {
    let turn: TurnState = serde_json::from_str(row.get("turn"))?;
    Ok(SessionSummary {
        id: row.get("id"),
        title: row.get("title"),
        agent: row.get("agent"),
        created_at_ms: row.get("created_at_ms"),
        updated_at_ms: row.get("updated_at_ms"),
        working: turn.working,
        waiting: row.get("waiting"),
        workdir: row.get("workdir"),
    })
}

/// A session as the list shows it, with whether an interaction waits for the person.
const SUMMARY: &str = "SELECT id, title, agent, created_at_ms, updated_at_ms, turn, workdir,
    EXISTS (SELECT 1 FROM interactions i WHERE i.session_id = sessions.id AND i.state = 'pending') AS waiting
    FROM sessions";

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thread::EventBody;
    use crate::thread::TurnOutcome;

    fn summary(id: &str, at: i64) -> SessionSummary {
        SessionSummary {
            id: id.into(),
            title: "New session".into(),
            agent: "scripted".into(),
            created_at_ms: at,
            updated_at_ms: at,
            working: false,
            waiting: false,
            workdir: None,
        }
    }

    /// Applies and stores events the way the session runtime does.
    async fn record(store: &Store, session: &str, thread: &mut Thread, bodies: Vec<EventBody>) {
        for body in bodies {
            let event = SessionEvent { seq: thread.seq + 1, at_ms: 10_000 + thread.seq as i64, body };
            let change = thread.apply(&event);
            store.append(Append::of(session, &event, thread, &change)).await.unwrap();
        }
    }

    fn a_turn() -> Vec<EventBody> {
        vec![
            EventBody::UserMessage { message_id: "u1".into(), text: "hi".into() },
            EventBody::TurnStarted,
            EventBody::AssistantMessageStarted { message_id: "a1".into() },
            EventBody::TextDelta { message_id: "a1".into(), text: "Hello ".into() },
            EventBody::TextDelta { message_id: "a1".into(), text: "there".into() },
            EventBody::ToolCallStarted { message_id: "a1".into(), tool_use_id: "t1".into(), name: "Bash".into() },
            EventBody::ToolCallReady { tool_use_id: "t1".into(), input: serde_json::json!({"command": "ls"}) },
            EventBody::ToolResult { tool_use_id: "t1".into(), output: "x".into(), is_error: false },
            EventBody::MessageFinished { message_id: "a1".into() },
            EventBody::TurnEnded { outcome: TurnOutcome::Completed, usage: None },
        ]
    }

    #[tokio::test]
    async fn migrations_run_on_a_new_file_and_again_on_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("askbridge.db");
        let store = Store::open(&path).await.unwrap();
        store.create_session(&summary("s1", 1)).await.unwrap();
        drop(store);
        let store = Store::open(&path).await.unwrap();
        assert_eq!(store.list_sessions().await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn stored_thread_equals_the_fold_of_its_events() {
        let store = Store::open_in_memory().await.unwrap();
        store.create_session(&summary("s1", 1)).await.unwrap();
        let mut live = Thread::default();
        record(&store, "s1", &mut live, a_turn()).await;

        let loaded = store.load_thread("s1").await.unwrap();
        assert_eq!(loaded, live);

        let mut replayed = Thread::default();
        for event in store.events_after("s1", 0, 1000).await.unwrap() {
            replayed.apply(&event);
        }
        assert_eq!(replayed, live);
    }

    #[tokio::test]
    async fn events_after_a_sequence_number_are_exactly_the_rest() {
        let store = Store::open_in_memory().await.unwrap();
        store.create_session(&summary("s1", 1)).await.unwrap();
        let mut thread = Thread::default();
        record(&store, "s1", &mut thread, a_turn()).await;
        let rest = store.events_after("s1", 4, 1000).await.unwrap();
        assert_eq!(rest.iter().map(|e| e.seq).collect::<Vec<_>>(), (5..=10).collect::<Vec<_>>());
        let page = store.events_after("s1", 4, 2).await.unwrap();
        assert_eq!(page.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![5, 6]);
        assert!(store.events_after("s1", 10, 1000).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_sequence_number_is_written_once() {
        let store = Store::open_in_memory().await.unwrap();
        store.create_session(&summary("s1", 1)).await.unwrap();
        let mut thread = Thread::default();
        record(&store, "s1", &mut thread, a_turn()).await;
        let stale = SessionEvent { seq: 3, at_ms: 0, body: EventBody::TurnStarted };
        let result = store
            .append(Append { session_id: "s1", event: &stale, messages: vec![], turn: None, interactions: vec![] })
            .await;
        assert!(matches!(result, Err(StoreError::SequenceConflict { seq: 3, stored: 10, .. })), "{result:?}");
        let gone = SessionEvent { seq: 1, at_ms: 0, body: EventBody::TurnStarted };
        let result = store
            .append(Append { session_id: "nope", event: &gone, messages: vec![], turn: None, interactions: vec![] })
            .await;
        assert!(matches!(result, Err(StoreError::SessionNotFound(_))), "{result:?}");
        assert_eq!(store.load_thread("s1").await.unwrap(), thread);
    }

    #[tokio::test]
    async fn sessions_list_most_recent_first_and_rename_stops_auto_titles() {
        let store = Store::open_in_memory().await.unwrap();
        store.create_session(&summary("old", 1)).await.unwrap();
        store.create_session(&summary("new", 2)).await.unwrap();
        let ids: Vec<_> = store.list_sessions().await.unwrap().into_iter().map(|s| s.id).collect();
        assert_eq!(ids, vec!["new", "old"]);

        store.rename_session("old", "Mine").await.unwrap();
        store.set_automatic_title("old", "from message").await.unwrap();
        assert_eq!(store.session("old").await.unwrap().title, "Mine");
        store.set_automatic_title("new", "from message").await.unwrap();
        assert_eq!(store.session("new").await.unwrap().title, "from message");
    }

    #[tokio::test]
    async fn deleting_a_session_removes_its_log_and_unknown_ids_are_not_found() {
        let store = Store::open_in_memory().await.unwrap();
        store.create_session(&summary("s1", 1)).await.unwrap();
        let mut thread = Thread::default();
        record(&store, "s1", &mut thread, a_turn()).await;
        store.delete_session("s1").await.unwrap();
        assert!(matches!(store.load_thread("s1").await, Err(StoreError::SessionNotFound(_))));
        assert!(store.events_after("s1", 0, 10).await.unwrap().is_empty());
        assert!(matches!(store.delete_session("s1").await, Err(StoreError::SessionNotFound(_))));
        assert!(matches!(store.rename_session("nope", "x").await, Err(StoreError::SessionNotFound(_))));
    }

    #[tokio::test]
    async fn unfinished_turns_are_found_after_a_restart() {
        let store = Store::open_in_memory().await.unwrap();
        store.create_session(&summary("s1", 1)).await.unwrap();
        store.create_session(&summary("s2", 1)).await.unwrap();
        let mut thread = Thread::default();
        let mut bodies = a_turn();
        bodies.truncate(4);
        record(&store, "s1", &mut thread, bodies).await;
        assert_eq!(store.sessions_with_unfinished_turns().await.unwrap(), vec!["s1"]);
    }

    #[tokio::test]
    async fn a_full_disk_is_said_plainly_and_loses_nothing_stored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        drop(Store::open(&path).await.unwrap());
        // The file may not grow: every new page is refused, as on a full disk.
        let pages: u32 = {
            let store = Store::open(&path).await.unwrap();
            store.create_session(&summary("s1", 1)).await.unwrap();
            sqlx::query_scalar("PRAGMA page_count").fetch_one(&store.pool).await.unwrap()
        };
        let store = Store::open_with_page_limit(&path, Some(pages + 2)).await.unwrap();
        let mut thread = Thread::default();
        let mut failed = None;
        for i in 0..200 {
            let body = EventBody::UserMessage { message_id: format!("u{i}"), text: "x".repeat(20_000) };
            let event = SessionEvent { seq: thread.seq + 1, at_ms: 0, body };
            let mut next = thread.clone();
            let change = next.apply(&event);
            match store.append(Append::of("s1", &event, &next, &change)).await {
                Ok(()) => thread = next,
                Err(error) => {
                    failed = Some(error);
                    break;
                }
            }
        }
        let error = failed.expect("the limit was reached");
        assert!(matches!(error, StoreError::DiskFull), "{error:?}");
        let message = AppError::from(error).to_string();
        assert!(
            message.contains("the disk is full") && message.contains("Nothing already stored was lost"),
            "{message}"
        );
        assert_eq!(store.load_thread("s1").await.unwrap(), thread, "everything stored before is intact");
    }

    #[tokio::test]
    async fn a_file_that_is_not_our_database_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("garbage.db");
        std::fs::write(&garbage, b"this is not a database, it is a shopping list: eggs, milk\n".repeat(200)).unwrap();
        let error = Store::open(&garbage).await.err().expect("refused");
        assert!(matches!(error, StoreError::NotADatabase { .. }), "{error:?}");
        assert!(error.to_string().contains("move it away"), "{error}");
        assert!(std::fs::read(&garbage).unwrap().starts_with(b"this is not a database"), "untouched");

        let foreign = dir.path().join("foreign.db");
        {
            let options =
                SqliteConnectOptions::from_str("sqlite://").unwrap().filename(&foreign).create_if_missing(true);
            let pool = SqlitePoolOptions::new().connect_with(options).await.unwrap();
            sqlx::query("CREATE TABLE invoices (id INTEGER PRIMARY KEY)").execute(&pool).await.unwrap();
            pool.close().await;
        }
        let error = Store::open(&foreign).await.err().expect("refused");
        assert!(matches!(&error, StoreError::Foreign { tables, .. } if tables == "invoices"), "{error:?}");
        let options = SqliteConnectOptions::from_str("sqlite://").unwrap().filename(&foreign);
        let pool = SqlitePoolOptions::new().connect_with(options).await.unwrap();
        let tables: Vec<String> =
            sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table'").fetch_all(&pool).await.unwrap();
        assert_eq!(tables, ["invoices"], "no tables of ours were added");
    }

    #[tokio::test]
    async fn a_streamed_delta_writes_its_event_only_and_a_reload_mid_stream_sees_every_word() {
        let store = Store::open_in_memory().await.unwrap();
        store.create_session(&summary("s1", 1)).await.unwrap();
        let mut live = Thread::default();
        let mut turn = a_turn();
        turn.truncate(5); // up to the second text delta: the reply still streams
        record(&store, "s1", &mut live, turn).await;
        let written: i64 = sqlx::query_scalar("SELECT updated_seq FROM messages WHERE id = 'a1'")
            .fetch_one(&store.pool)
            .await
            .unwrap();
        assert_eq!(written, 3, "the deltas did not rewrite the message");
        assert_eq!(store.load_thread("s1").await.unwrap(), live, "the deltas are replayed on load");
        // Then a tool call streams its arguments into the same message.
        record(
            &store,
            "s1",
            &mut live,
            vec![
                EventBody::ToolCallStarted { message_id: "a1".into(), tool_use_id: "t1".into(), name: "Bash".into() },
                EventBody::ToolInputDelta { tool_use_id: "t1".into(), partial_json: "{\"comm".into() },
                EventBody::ToolInputDelta { tool_use_id: "t1".into(), partial_json: "and\": \"ls\"".into() },
                EventBody::TextDelta { message_id: "a1".into(), text: "!".into() },
            ],
        )
        .await;
        assert_eq!(store.load_thread("s1").await.unwrap(), live);
    }
}
