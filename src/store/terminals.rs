//! Terminal sessions: the `claude` processes started in a terminal whose hooks reach AskBridge.
//! Each is a session (the list, the log, the cards) plus a row that says where it runs; one per
//! Claude Code session on a host, which the unique index keeps so across servers too.

use super::{Sql, Store, StoreResult, without_nul};
use crate::store::Notice;
use crate::thread::{ClaudeProcess, SessionSummary, TerminalState, TerminalSummary};

/// How far a terminal session's transcript has been read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptRead {
    pub path: String,
    pub claude_session_id: String,
    /// The byte after the last line read.
    pub offset: u64,
}

impl Store {
    /// The AskBridge session that stands for Claude Code session `claude_session_id` on `host`.
    pub async fn terminal_session(&self, host: &str, claude_session_id: &str) -> StoreResult<Option<String>> {
        let id: Option<String> = on_pool!(self, |pool, dialect| {
            sqlx::query_scalar("SELECT session_id FROM terminal_sessions WHERE host = $1 AND claude_session_id = $2")
                .bind(host)
                .bind(claude_session_id)
                .fetch_optional(pool)
                .await?
        });
        Ok(id)
    }

    /// Stores a new terminal session: its session row and where it runs, together. When another
    /// request (or server) stored the same Claude Code session first, that one's id.
    pub async fn create_terminal_session(
        &self,
        summary: &SessionSummary,
        terminal: &TerminalSummary,
    ) -> StoreResult<String> {
        self.check_writable()?;
        let created: Result<(), sqlx::Error> = on_pool!(self, |pool, dialect| {
            async {
                let mut tx = pool.begin().await?;
                sqlx::query(
                    Sql {
                        sqlite: "INSERT INTO sessions (id, title, title_is_auto, agent, created_at_ms, updated_at_ms,
                                                       workdir, active_at_ms)
                                 VALUES ($1, $2, FALSE, $3, $4, $4, $5, $4)",
                        postgres: "INSERT INTO sessions (id, title, title_is_auto, agent, created_at, updated_at,
                                                         workdir, active_at)
                                   VALUES ($1, $2, FALSE, $3, to_timestamp($4 / 1000.0), to_timestamp($4 / 1000.0),
                                           $5, to_timestamp($4 / 1000.0))",
                    }
                    .on(dialect),
                )
                .bind(&summary.id)
                .bind(without_nul(&summary.title).as_ref())
                .bind(&summary.agent)
                .bind(summary.created_at_ms)
                .bind(&summary.workdir)
                .execute(&mut *tx)
                .await?;
                sqlx::query(
                    Sql {
                        sqlite: "INSERT INTO terminal_sessions (session_id, host, claude_session_id, folder,
                                                                transcript_path, state, state_at_ms, process)
                                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                        postgres: "INSERT INTO terminal_sessions (session_id, host, claude_session_id, folder,
                                                                  transcript_path, state, state_at, process)
                                   VALUES ($1, $2, $3, $4, $5, $6, to_timestamp($7 / 1000.0), $8)",
                    }
                    .on(dialect),
                )
                .bind(&summary.id)
                .bind(without_nul(&terminal.host).as_ref())
                .bind(without_nul(&terminal.claude_session_id).as_ref())
                .bind(without_nul(&terminal.folder).as_ref())
                .bind(terminal.transcript_path.as_deref().map(without_nul).as_deref())
                .bind(terminal.state.as_str())
                .bind(summary.created_at_ms)
                .bind(terminal.process.as_ref().and_then(|p| serde_json::to_string(p).ok()))
                .execute(&mut *tx)
                .await?;
                if dialect == super::Dialect::Postgres {
                    sqlx::query(super::notices::NOTIFY)
                        .bind(serde_json::to_string(&Notice::ListChanged).unwrap_or_default())
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await
            }
            .await
        });
        match created {
            Ok(()) => Ok(summary.id.clone()),
            Err(sqlx::Error::Database(error)) if error.is_unique_violation() => {
                match self.terminal_session(&terminal.host, &terminal.claude_session_id).await? {
                    Some(id) => Ok(id),
                    None => Err(sqlx::Error::Database(error).into()),
                }
            }
            Err(error) => Err(error.into()),
        }
    }

    /// What the terminal does now, as its hooks say; and its transcript, once known.
    pub async fn set_terminal_state(
        &self,
        session_id: &str,
        state: TerminalState,
        transcript_path: Option<&str>,
        at_ms: i64,
    ) -> StoreResult<()> {
        self.check_writable()?;
        on_pool!(self, |pool, dialect| {
            let mut tx = pool.begin().await?;
            sqlx::query(
                Sql {
                    sqlite: "UPDATE terminal_sessions SET state = $2, transcript_path = COALESCE($3, transcript_path),
                                    state_at_ms = $4 WHERE session_id = $1",
                    postgres: "UPDATE terminal_sessions SET state = $2,
                                      transcript_path = COALESCE($3, transcript_path),
                                      state_at = to_timestamp($4 / 1000.0) WHERE session_id = $1",
                }
                .on(dialect),
            )
            .bind(session_id)
            .bind(state.as_str())
            .bind(transcript_path.map(without_nul).as_deref())
            .bind(at_ms)
            .execute(&mut *tx)
            .await?;
            notify_in!(&mut *tx, dialect, &Notice::ListChanged);
            tx.commit().await?;
        });
        Ok(())
    }

    /// The `claude` the terminal session runs in, as its latest hook found it.
    pub async fn set_terminal_process(&self, session_id: &str, process: &ClaudeProcess) -> StoreResult<()> {
        self.check_writable()?;
        let process = serde_json::to_string(process).unwrap_or_default();
        on_pool!(self, |pool, _dialect| {
            // Written only when it changed: a hook comes with every prompt and tool.
            sqlx::query(
                "UPDATE terminal_sessions SET process = $2
                 WHERE session_id = $1 AND (process IS NULL OR process <> $2)",
            )
            .bind(session_id)
            .bind(&process)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// The terminal sessions not ended whose `claude` process is known: whose death a server on
    /// that machine can see.
    pub async fn terminal_processes(&self) -> StoreResult<Vec<(String, ClaudeProcess)>> {
        let rows: Vec<(String, String)> = on_pool!(self, |pool, _dialect| {
            sqlx::query_as(
                "SELECT session_id, process FROM terminal_sessions WHERE state <> 'ended' AND process IS NOT NULL",
            )
            .fetch_all(pool)
            .await?
        });
        Ok(rows.into_iter().filter_map(|(id, process)| Some((id, serde_json::from_str(&process).ok()?))).collect())
    }

    /// Where a terminal session's transcript is, its Claude Code session id, and how far it has
    /// been read; `None` while no hook has named the transcript.
    pub async fn terminal_transcript(&self, session_id: &str) -> StoreResult<Option<TranscriptRead>> {
        let row: Option<(Option<String>, String, i64)> = on_pool!(self, |pool, _dialect| {
            sqlx::query_as(
                "SELECT transcript_path, claude_session_id, transcript_offset FROM terminal_sessions
                 WHERE session_id = $1",
            )
            .bind(session_id)
            .fetch_optional(pool)
            .await?
        });
        Ok(row.and_then(|(path, claude_session_id, offset)| {
            Some(TranscriptRead { path: path?, claude_session_id, offset: u64::try_from(offset).unwrap_or(0) })
        }))
    }

    /// Moves how far a terminal session's transcript has been read from `from` to `to`: false
    /// when another read moved it first (its lines are that one's to add).
    pub async fn advance_terminal_transcript(&self, session_id: &str, from: u64, to: u64) -> StoreResult<bool> {
        self.check_writable()?;
        let (from, to) = (i64::try_from(from).unwrap_or(i64::MAX), i64::try_from(to).unwrap_or(i64::MAX));
        let moved = on_pool!(self, |pool, _dialect| {
            sqlx::query(
                "UPDATE terminal_sessions SET transcript_offset = $3 WHERE session_id = $1 AND transcript_offset = $2",
            )
            .bind(session_id)
            .bind(from)
            .bind(to)
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(moved == 1)
    }
}
