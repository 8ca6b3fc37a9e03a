//! A session's log read back: the thread as of its last event (its stored rows, with what came
//! after each replayed onto it: streamed pieces, and where a file keeps those, a streaming
//! message's tool calls), and the events after a sequence number, the database's and the file's
//! merged. What is written, and how, is `events.rs`.

use std::collections::HashSet;

use sqlx::types::Json;

use super::events::STREAMED_READY;
use super::streamed::{self, LeftOut};
use super::{Dialect, Sql, Store, StoreError, StoreResult};
use crate::thread::{Block, EventBody, Message, Role, SessionEvent, Thread, ToolCall, TurnState, Usage};

impl Store {
    /// The sequence number of the session's last stored event (0 before the first).
    pub async fn last_seq(&self, id: &str) -> StoreResult<u64> {
        let stored: Option<i64> = on_pool!(self, |pool, dialect| {
            sqlx::query_scalar("SELECT last_seq FROM sessions WHERE id = $1").bind(id).fetch_optional(pool).await?
        });
        let stored = stored.map(|seq| seq as u64).ok_or_else(|| StoreError::SessionNotFound(id.to_string()))?;
        match &self.journal {
            Some(journal) => Ok(journal.run_end(id, stored).await?.unwrap_or(stored)),
            None => Ok(stored),
        }
    }

    /// The thread as of the session's last stored event.
    pub async fn load_thread(&self, id: &str) -> StoreResult<Thread> {
        let (head, mut rows, deltas, since) = self.read_stored(id).await?;

        let written_at: Vec<u64> = rows.iter().map(|row| row.updated_seq as u64).collect();
        let left_out: Vec<Option<LeftOut>> =
            rows.iter_mut().map(|row| row.streamed_inputs.take().map(|left_out| left_out.0)).collect();
        let mut messages: Vec<Message> = rows
            .into_iter()
            .map(|row| Message {
                id: row.id,
                role: role_from_str(&row.role),
                // Held exactly, as `Thread` grows them, not in the room a vector read one block
                // at a time grows to.
                blocks: {
                    let mut blocks = row.blocks.0;
                    blocks.shrink_to_fit();
                    blocks
                },
                streaming: row.streaming,
                created_at_ms: row.created_at_ms,
                usage: row.usage.map(|usage| usage.0),
            })
            .collect();
        let last_seq = head.last_seq as u64;
        let streamed = streamed_ready(&deltas);
        // Where pieces are journaled: those a crash (or a stream still going) left after the
        // database's last event, and the streaming messages' pieces, from the file.
        let (end, deltas) = match &self.journal {
            Some(journal) => {
                let end = journal.run_end(id, last_seq).await?.unwrap_or(last_seq);
                // One read of the file, for both: the rows' left-out inputs (`streamed.rs`) and
                // the streaming messages' pieces.
                let since = since.map(|since| since as u64);
                let pieces = match since.into_iter().chain(streamed::read_from(&left_out)).min() {
                    Some(from) => journal.read_after(id, from, usize::MAX).await?,
                    None => Vec::new(),
                };
                streamed::read_back(&mut messages, &left_out, &pieces);
                journal.inputs(id, |inputs| inputs.remember(&left_out));
                let replayed = |piece: &SessionEvent| since.is_some_and(|since| piece.seq > since) && piece.seq <= end;
                let mut events: Vec<SessionEvent> = pieces.into_iter().filter(replayed).collect();
                events.extend(deltas.into_iter().map(SessionEvent::from));
                events.sort_by_key(|event| event.seq);
                (end, events)
            }
            None => (last_seq, deltas.into_iter().map(SessionEvent::from).collect::<Vec<_>>()),
        };
        let mut thread = Thread { messages, turn: head.turn.0, seq: 0 };
        for mut event in deltas {
            // Only onto a message whose row was written before this event.
            let target = thread.replay_target(&event.body);
            if target.is_some_and(|index| written_at[index] < event.seq) {
                if streamed.contains(&event.seq) {
                    // Its input is the arguments just replayed.
                    let streamed =
                        thread_input(&thread, &event.body, |call| serde_json::from_str(&call.partial_input).ok());
                    with_input(&mut event.body, streamed);
                }
                thread.seq = event.seq - 1;
                thread.apply(&event);
            }
        }
        thread.seq = end;
        Ok(thread)
    }

    /// What `load_thread` reads of the session, in one read transaction: its head, its message
    /// rows, the events to replay onto them, and from which sequence number those are.
    async fn read_stored(&self, id: &str) -> StoreResult<(HeadRow, Vec<MessageRow>, Vec<EventRow>, Option<i64>)> {
        Ok(on_pool!(self, |pool, dialect| {
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
                    sqlite: "SELECT m.id, m.role, m.blocks, m.streaming, m.created_at_ms, m.updated_seq, u.usage,
                               m.streamed_inputs
                             FROM messages AS m LEFT JOIN message_usage AS u USING (session_id, position)
                             WHERE m.session_id = $1 ORDER BY m.position",
                    postgres: "SELECT m.id, m.role, m.blocks, m.streaming,
                                 (extract(epoch FROM m.created_at) * 1000)::bigint AS created_at_ms, m.updated_seq, u.usage,
                                 NULL::jsonb AS streamed_inputs
                               FROM messages AS m LEFT JOIN message_usage AS u USING (session_id, position)
                               WHERE m.session_id = $1 ORDER BY m.position",
                }
                .on(dialect),
            )
            .bind(id)
            .fetch_all(&mut *tx)
            .await?;
            // The events a streaming message got since its row was last written: its streamed
            // pieces (from the file, where one keeps them), and where a file keeps them, its tool
            // calls' events too (`Store::append_all`).
            let since = rows.iter().filter(|row| row.streaming).map(|row| row.updated_seq).min();
            let kinds = match self.journal {
                Some(_) => {
                    "'tool_call_started', 'tool_input_preview', 'tool_call_ready', 'tool_call_ready_streamed', 'tool_result'"
                }
                None => "'text_delta', 'tool_input_delta'",
            };
            let deltas: Vec<EventRow> = match since {
                Some(since) => {
                    sqlx::query_as(&format!(
                        "{} WHERE session_id = $1 AND seq > $2 AND kind IN ({kinds}) ORDER BY seq",
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
            (head, rows, deltas, since)
        }))
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
        let streamed = streamed_ready(&rows);
        let stored = rows.into_iter().map(SessionEvent::from);
        let Some(journal) = &self.journal else { return Ok(stored.collect()) };
        // The database first, then the file: a piece journaled after the database was read is
        // found in the file, and an event written to the database after that read ends the
        // run below (the log has no gaps), to be read next time.
        let pieces = journal.read_after(session_id, after, limit as usize).await?;
        let mut events: Vec<SessionEvent> = stored.chain(pieces).collect();
        events.sort_by_key(|event| event.seq);
        let run = events.iter().zip(after + 1..).take_while(|(event, seq)| event.seq == *seq).count();
        events.truncate(run.min(limit as usize));
        if !streamed.is_empty() {
            // The inputs stored as what streamed, from the thread, which has them.
            let thread = self.load_thread(session_id).await?;
            for event in events.iter_mut().filter(|event| streamed.contains(&event.seq)) {
                let input = thread_input(&thread, &event.body, |call| call.input.clone());
                with_input(&mut event.body, input);
            }
        }
        Ok(events)
    }
}

/// The sequence numbers of the `ToolCallReady` events among `rows` stored without their input.
fn streamed_ready(rows: &[EventRow]) -> HashSet<u64> {
    rows.iter().filter(|row| row.kind == STREAMED_READY).map(|row| row.seq as u64).collect()
}

/// What `read` finds in `thread` for the tool call a `ToolCallReady` names.
fn thread_input(
    thread: &Thread,
    body: &EventBody,
    read: impl FnOnce(&ToolCall) -> Option<serde_json::Value>,
) -> Option<serde_json::Value> {
    let EventBody::ToolCallReady { tool_use_id, .. } = body else { return None };
    thread.tool_call(tool_use_id).and_then(read)
}

/// A `ToolCallReady` stored without its input, given it again. One whose call cannot be read
/// (never so, but for a damaged journal) keeps `null`, and says so in the log.
fn with_input(body: &mut EventBody, found: Option<serde_json::Value>) {
    if let EventBody::ToolCallReady { tool_use_id, input } = body {
        match found {
            Some(found) => *input = found,
            None => tracing::warn!(%tool_use_id, "a tool call's streamed arguments could not be read back"),
        }
    }
}

/// Events, to be followed by a WHERE clause.
const EVENT: Sql = Sql {
    sqlite: "SELECT seq, at_ms, kind, body FROM events",
    postgres: "SELECT seq, (extract(epoch FROM at) * 1000)::bigint AS at_ms, kind, body FROM events",
};

row! {
    struct HeadRow {
        last_seq: i64,
        turn: Json<TurnState>,
    }
}

row! {
    struct MessageRow {
        id: String,
        role: String,
        blocks: Json<Vec<Block>>,
        streaming: bool,
        created_at_ms: i64,
        updated_seq: i64,
        usage: Option<Json<Usage>>,
        /// The inputs the row leaves out, which the file beside the database has (`streamed.rs`).
        streamed_inputs: Option<Json<LeftOut>>,
    }
}

row! {
    struct EventRow {
        seq: i64,
        at_ms: i64,
        kind: String,
        body: Json<EventBody>,
    }
}

impl From<EventRow> for SessionEvent {
    fn from(row: EventRow) -> Self {
        SessionEvent { seq: row.seq as u64, at_ms: row.at_ms, body: row.body.0 }
    }
}

fn role_from_str(role: &str) -> Role {
    match role {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        _ => Role::Notice,
    }
}
