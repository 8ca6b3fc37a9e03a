//! Sessions as the list shows them: created, named (by their first message until a person
//! renames them), read and deleted. Every change tells the other servers that the list changed.

use sqlx::types::Json;

use super::{Sql, Store, StoreError, StoreResult, without_nul};
use crate::store::Notice;
use crate::thread::{SessionSummary, TerminalState, TerminalSummary, TurnState};

impl Store {
    pub async fn create_session(&self, summary: &SessionSummary) -> StoreResult<()> {
        self.check_writable()?;
        on_pool!(self, |pool, dialect| {
            let mut tx = pool.begin().await?;
            sqlx::query(
                Sql {
                    sqlite:
                        "INSERT INTO sessions (id, title, agent, created_at_ms, updated_at_ms, workdir, active_at_ms)
                             VALUES ($1, $2, $3, $4, $5, $6, $4)",
                    postgres: "INSERT INTO sessions (id, title, agent, created_at, updated_at, workdir, active_at)
                               VALUES ($1, $2, $3, to_timestamp($4 / 1000.0), to_timestamp($5 / 1000.0), $6,
                                       to_timestamp($4 / 1000.0))",
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

    /// Every session, the one the person was last active in first (what an agent does on its
    /// own moves nothing: a list that reordered itself moved under the pointer).
    pub async fn list_sessions(&self) -> StoreResult<Vec<SessionSummary>> {
        let rows: Vec<SummaryRow> = on_pool!(self, |pool, dialect| {
            sqlx::query_as(&format!("{} ORDER BY active_at_ms DESC, created_at_ms DESC, id DESC", SUMMARY.on(dialect)))
                .fetch_all(pool)
                .await?
        });
        Ok(rows.into_iter().map(SessionSummary::from).collect())
    }

    /// The agents' own ids for the sessions' conversations (`turn.agent_session`): the Claude Code
    /// sessions that AskBridge runs, or took over with Continue here; not a terminal's (its
    /// conversation is the terminal's, and can be continued here once it ends).
    pub async fn agent_sessions(&self) -> StoreResult<Vec<String>> {
        let ids: Vec<Option<String>> = on_pool!(self, |pool, dialect| {
            sqlx::query_scalar(
                Sql {
                    sqlite: "SELECT json_extract(turn, '$.agent_session') FROM sessions
                             WHERE json_extract(turn, '$.agent_session') IS NOT NULL
                               AND id NOT IN (SELECT session_id FROM terminal_sessions)",
                    postgres: "SELECT turn ->> 'agent_session' FROM sessions WHERE turn ->> 'agent_session' IS NOT NULL
                                 AND id NOT IN (SELECT session_id FROM terminal_sessions)",
                }
                .on(dialect),
            )
            .fetch_all(pool)
            .await?
        });
        Ok(ids.into_iter().flatten().collect())
    }

    /// The person did something in the session (answered, decided): it moves to the top of the
    /// list. A message they wrote moves it in the message's own transaction (`Append::moves_up`).
    pub async fn mark_active(&self, id: &str, at_ms: i64) -> StoreResult<()> {
        self.check_writable()?;
        on_pool!(self, |pool, dialect| {
            let mut tx = pool.begin().await?;
            sqlx::query(
                Sql {
                    sqlite: "UPDATE sessions SET active_at_ms = $2 WHERE id = $1",
                    postgres: "UPDATE sessions SET active_at = to_timestamp($2 / 1000.0) WHERE id = $1",
                }
                .on(dialect),
            )
            .bind(id)
            .bind(at_ms)
            .execute(&mut *tx)
            .await?;
            notify_in!(&mut *tx, dialect, &Notice::ListChanged);
            tx.commit().await?;
        });
        Ok(())
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
        if let Some(journal) = &self.journal
            && let Err(error) = journal.remove(id).await
        {
            tracing::warn!(session = id, %error, "a deleted session's streamed pieces could not be removed");
        }
        self.give_back_space().await;
        Ok(())
    }
}

/// A session as the list shows it, with whether an interaction waits for the person.
pub(super) const SUMMARY: Sql = Sql {
    sqlite: "SELECT id, title, agent, created_at_ms, updated_at_ms, active_at_ms, turn, workdir,
               EXISTS (SELECT 1 FROM interactions i WHERE i.session_id = sessions.id AND i.state = 'pending')
                 AS waiting,
               t.host, t.claude_session_id, t.folder, t.transcript_path, t.state AS terminal_state,
               t.state_at_ms AS terminal_state_at_ms, t.process AS terminal_process
             FROM sessions LEFT JOIN terminal_sessions t ON t.session_id = sessions.id",
    postgres: "SELECT id, title, agent,
                 (extract(epoch FROM created_at) * 1000)::bigint AS created_at_ms,
                 (extract(epoch FROM updated_at) * 1000)::bigint AS updated_at_ms,
                 (extract(epoch FROM active_at) * 1000)::bigint AS active_at_ms, turn, workdir,
                 EXISTS (SELECT 1 FROM interactions i WHERE i.session_id = sessions.id AND i.state = 'pending')
                   AS waiting,
                 t.host, t.claude_session_id, t.folder, t.transcript_path, t.state AS terminal_state,
                 (extract(epoch FROM t.state_at) * 1000)::bigint AS terminal_state_at_ms, t.process AS terminal_process
               FROM sessions LEFT JOIN terminal_sessions t ON t.session_id = sessions.id",
};

row! {
    pub(super) struct SummaryRow {
        id: String,
        title: String,
        agent: String,
        created_at_ms: i64,
        updated_at_ms: i64,
        active_at_ms: i64,
        turn: Json<TurnState>,
        workdir: Option<String>,
        waiting: bool,
        host: Option<String>,
        claude_session_id: Option<String>,
        folder: Option<String>,
        transcript_path: Option<String>,
        terminal_state: Option<String>,
        terminal_state_at_ms: Option<i64>,
        terminal_process: Option<String>,
    }
}

impl From<SummaryRow> for SessionSummary {
    fn from(row: SummaryRow) -> Self {
        let terminal = match (row.host, row.claude_session_id, row.folder) {
            (Some(host), Some(claude_session_id), Some(folder)) => Some(TerminalSummary {
                host,
                folder,
                claude_session_id,
                transcript_path: row.transcript_path,
                state: TerminalState::parse(row.terminal_state.as_deref().unwrap_or_default()),
                state_at_ms: row.terminal_state_at_ms.unwrap_or_default(),
                process: row.terminal_process.and_then(|process| serde_json::from_str(&process).ok()),
            }),
            _ => None,
        };
        // A terminal works and waits as its hooks last said, card or no card.
        let state = terminal.as_ref().map(|t| t.state);
        SessionSummary {
            id: row.id,
            title: row.title,
            agent: row.agent,
            created_at_ms: row.created_at_ms,
            updated_at_ms: row.updated_at_ms,
            working: row.turn.0.working
                || matches!(state, Some(TerminalState::Working | TerminalState::Waiting))
                || (state.is_some() && row.waiting),
            waiting: row.waiting || state == Some(TerminalState::Waiting),
            workdir: row.workdir,
            active_at_ms: row.active_at_ms,
            terminal,
            matched: None,
        }
    }
}
