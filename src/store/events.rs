//! Each session's event log as stored: an event is written together with what it changed (its
//! messages, turn state and interactions) in one transaction, as a compare-and-set on the
//! session's last sequence number. How it is read back: `replay.rs`.

use sqlx::types::Json;

use super::journal::Journal;
use super::{Dialect, Sql, Store, StoreError, StoreResult, Transaction, storable, streamed, without_nul};
use crate::interaction::Interaction;
use crate::store::Notice;
use crate::thread::{Change, EventBody, Message, Role, SessionEvent, Thread, TurnState, Usage, title_from_message};

/// What one event changed, written in a single transaction.
pub struct Append<'a> {
    pub session_id: &'a str,
    pub event: &'a SessionEvent,
    /// The messages the event changed, with their positions in the thread.
    pub messages: Vec<(usize, &'a Message)>,
    /// The usage of the messages that have one, among those the event changed or whose usage
    /// alone it changed: a row of its own (`message_usage`), so that a turn's end does not write
    /// its reply again. SQLite rewrites a whole row, its overflow pages too, when the row's size
    /// changes: the usage on the message's row wrote every reply twice, 2 bytes to the disk per
    /// byte of text (BENCHMARKS.md, "What a turn costs, and what a byte costs").
    pub usage: Vec<(usize, &'a Usage)>,
    /// The turn state, when the event changed it.
    pub turn: Option<&'a TurnState>,
    /// The interactions the event opened or changed, by tool_use id.
    pub interactions: Vec<(&'a str, &'a Interaction)>,
    /// For an agent's write where servers share the store: the lease its server holds (the
    /// fencing token `take_lease` gave), checked in the same compare-and-set as the sequence
    /// number. Once another server took the lease, the write is refused (`LeaseLost`).
    pub fence: Option<&'a str>,
    /// Whether the person wrote it (a message, sent or typed ahead): the session moves to the
    /// top of the list (`active_at`) in the event's own transaction, not one of its own.
    pub moves_up: bool,
    /// The session's title from its first message, unless the person named it: in the
    /// message's transaction too. Each of these two was a transaction of its own, a few pages
    /// of the WAL for a row the message's transaction writes anyway.
    pub first_title: Option<String>,
    /// A `ToolCallReady` whose input is its streamed arguments, parsed (`input_is_streamed`):
    /// where a file keeps what streams, the event is stored without it (`STREAMED_READY`) and
    /// read back with it from the thread (`events_after`, `load_thread`). A tool call's arguments
    /// (the 100 KB of a file written) were stored three times: as they streamed, in this event
    /// and in the message's row.
    pub input_streamed: bool,
}

/// The kind under which a `ToolCallReady` is stored without its input, which is what streamed.
pub(super) const STREAMED_READY: &str = "tool_call_ready_streamed";

/// Whether `body`, about to be applied to `thread`, is a tool call's `ToolCallReady` whose input
/// is exactly the arguments streamed for it, parsed (`Append::input_streamed`).
pub fn input_is_streamed(thread: &Thread, body: &EventBody) -> bool {
    let EventBody::ToolCallReady { tool_use_id, input } = body else { return false };
    thread.tool_call(tool_use_id).is_some_and(|call| {
        !call.partial_input.is_empty()
            && serde_json::from_str::<serde_json::Value>(&call.partial_input).is_ok_and(|streamed| streamed == *input)
    })
}

impl<'a> Append<'a> {
    /// What `thread` (after applying `event`) needs stored. A streamed piece (a text or argument
    /// delta) is stored as its event alone: the message it grows is written whole at its next
    /// other change (and read back with its deltas replayed), so that a long reply costs what
    /// streamed, not its length for every word.
    pub fn of(session_id: &'a str, event: &'a SessionEvent, thread: &'a Thread, change: &'a Change) -> Self {
        let delta = event.body.is_delta();
        let messages: Vec<(usize, &Message)> =
            change.messages.iter().filter(|_| !delta).filter_map(|&i| Some((i, thread.messages.get(i)?))).collect();
        let mut usage: Vec<(usize, &Usage)> =
            change.usage.iter().filter_map(|&i| Some((i, thread.messages.get(i)?.usage.as_ref()?))).collect();
        for &(i, message) in &messages {
            if let Some(used) = message.usage.as_ref().filter(|_| !change.usage.contains(&i)) {
                usage.push((i, used));
            }
        }
        Self {
            session_id,
            event,
            messages,
            usage,
            turn: change.turn.then_some(&thread.turn),
            interactions: change
                .interactions
                .iter()
                .filter_map(|id| Some((id.as_str(), thread.tool_call(id)?.interaction.as_ref()?)))
                .collect(),
            fence: None,
            input_streamed: false,
            moves_up: matches!(event.body, EventBody::UserMessage { .. } | EventBody::MessageQueued { .. }),
            first_title: match &event.body {
                EventBody::UserMessage { text, .. }
                    if thread.messages.iter().filter(|message| message.role == Role::User).count() == 1 =>
                {
                    Some(title_from_message(text))
                }
                _ => None,
            },
        }
    }
}

/// What one event changed, as it was when applied: an event applied now and stored later, with
/// the next (`SessionRuntime::hold`), while the thread moves on.
#[derive(Debug, Clone)]
pub struct Held {
    pub event: SessionEvent,
    messages: Vec<(usize, Message)>,
    usage: Vec<(usize, Usage)>,
    turn: Option<TurnState>,
    interactions: Vec<(String, Interaction)>,
    moves_up: bool,
    first_title: Option<String>,
}

impl Held {
    /// What `thread` (after applying `event`) needs stored, taken now.
    pub fn of(session_id: &str, event: SessionEvent, thread: &Thread, change: &Change) -> Self {
        let append = Append::of(session_id, &event, thread, change);
        let messages = append.messages.iter().map(|&(i, message)| (i, message.clone())).collect();
        let usage = append.usage.iter().map(|&(i, usage)| (i, usage.clone())).collect();
        let turn = append.turn.cloned();
        let interactions = append.interactions.iter().map(|&(id, i)| (id.to_string(), i.clone())).collect();
        let (moves_up, first_title) = (append.moves_up, append.first_title);
        Self { event, messages, usage, turn, interactions, moves_up, first_title }
    }

    /// What `Store::append_all` writes of it.
    pub fn append<'a>(&'a self, session_id: &'a str) -> Append<'a> {
        Append {
            session_id,
            event: &self.event,
            messages: self.messages.iter().map(|(i, message)| (*i, message)).collect(),
            usage: self.usage.iter().map(|(i, usage)| (*i, usage)).collect(),
            turn: self.turn.as_ref(),
            interactions: self.interactions.iter().map(|(id, i)| (id.as_str(), i)).collect(),
            fence: None,
            moves_up: self.moves_up,
            first_title: self.first_title.clone(),
            input_streamed: false,
        }
    }
}

/// The steps of `Store::append`, each a statement in its one transaction.
impl Append<'_> {
    /// The session's row first, as a compare-and-set on its last sequence number (`before`):
    /// whether it was still that. Writing it takes SQLite's write lock at once (a read first
    /// would have to upgrade its lock later, which SQLite refuses under contention), and
    /// Postgres's row lock, under which a second writer of the same number finds the row changed
    /// and updates nothing.
    async fn compare_and_set(&self, transaction: &mut Transaction, before: u64) -> StoreResult<bool> {
        let Self { session_id, event, turn, fence, moves_up, ref first_title, .. } = *self;
        let seq = event.seq as i64;
        // Deltas do not move a session up the list; messages and turn changes do.
        let touches = !event.body.is_delta();
        let updated = in_transaction!(transaction, |connection, dialect| if touches || turn.is_some() {
            // The list's columns are named only when they change: naming one rewrites its
            // index's page even when the value stays.
            let mut set = Sql {
                sqlite: "UPDATE sessions SET last_seq = $1, turn = COALESCE($2, turn),
                           updated_at_ms = CASE WHEN $3 THEN $4 ELSE updated_at_ms END",
                postgres: "UPDATE sessions SET last_seq = $1, turn = COALESCE($2, turn),
                             updated_at = CASE WHEN $3 THEN to_timestamp($4 / 1000.0) ELSE updated_at END",
            }
            .on(dialect)
            .to_string();
            if moves_up {
                set += Sql { sqlite: ", active_at_ms = $4", postgres: ", active_at = to_timestamp($4 / 1000.0)" }
                    .on(dialect);
            }
            if first_title.is_some() {
                set += ", title = CASE WHEN title_is_auto THEN $7 ELSE title END, title_is_auto = FALSE";
            }
            let sql =
                set + " WHERE id = $5 AND last_seq = $6" + &self.fenced(if first_title.is_some() { 8 } else { 7 });
            let query = sqlx::query(&sql)
                .bind(seq)
                .bind(turn.map(storable).transpose()?)
                .bind(touches)
                .bind(event.at_ms)
                .bind(session_id)
                .bind(before as i64);
            let query = match first_title {
                Some(title) => query.bind(without_nul(title)),
                None => query,
            };
            match fence {
                Some(fence) => query.bind(fence),
                None => query,
            }
            .execute(connection)
            .await?
            .rows_affected()
        } else {
            // A delta sets the sequence number only: naming `updated_at_ms` at all, even to
            // its own value, makes SQLite rewrite the recency index's page too, one page of
            // the three each streamed delta wrote.
            let sql = "UPDATE sessions SET last_seq = $1 WHERE id = $2 AND last_seq = $3".to_string() + &self.fenced(4);
            let query = sqlx::query(&sql).bind(seq).bind(session_id).bind(before as i64);
            match fence {
                Some(fence) => query.bind(fence),
                None => query,
            }
            .execute(connection)
            .await?
            .rows_affected()
        });
        Ok(updated > 0)
    }

    /// The compare-and-set's condition that the writer still holds the session's lease (its
    /// fence as parameter `$parameter`), when it names one.
    fn fenced(&self, parameter: u8) -> String {
        match self.fence {
            Some(_) => format!(
                " AND EXISTS (SELECT 1 FROM session_leases
                              WHERE session_leases.session_id = sessions.id AND session_leases.fence = ${parameter})"
            ),
            None => String::new(),
        }
    }

    /// Why the compare-and-set changed nothing, read in its transaction: the writer's lease went
    /// to another server, the session is gone, or another writer appended first.
    async fn refusal(&self, transaction: &mut Transaction) -> StoreResult<StoreError> {
        let Self { session_id, event, fence, .. } = *self;
        in_transaction!(transaction, |connection, dialect| {
            if let Some(fence) = fence {
                let held: Option<String> = sqlx::query_scalar("SELECT fence FROM session_leases WHERE session_id = $1")
                    .bind(session_id)
                    .fetch_optional(&mut *connection)
                    .await?;
                if held.as_deref() != Some(fence) {
                    return Ok(StoreError::LeaseLost { session: session_id.to_string() });
                }
            }
            // Gone, or its log is elsewhere: nothing is written (the transaction is dropped).
            let stored: Option<i64> = sqlx::query_scalar("SELECT last_seq FROM sessions WHERE id = $1")
                .bind(session_id)
                .fetch_optional(connection)
                .await?;
            Ok(match stored {
                None => StoreError::SessionNotFound(session_id.to_string()),
                Some(stored) => StoreError::SequenceConflict {
                    session: session_id.to_string(),
                    seq: event.seq,
                    stored: stored as u64,
                },
            })
        })
    }

    async fn insert_event(&self, transaction: &mut Transaction) -> StoreResult<()> {
        let Self { session_id, event, input_streamed, .. } = *self;
        let (kind, body) = match &event.body {
            EventBody::ToolCallReady { tool_use_id, .. } if input_streamed => (
                STREAMED_READY,
                storable(&EventBody::ToolCallReady {
                    tool_use_id: tool_use_id.clone(),
                    input: serde_json::Value::Null,
                })?,
            ),
            body => (body.kind(), storable(body)?),
        };
        in_transaction!(transaction, |connection, dialect| {
            sqlx::query(
                Sql {
                    sqlite: "INSERT INTO events (session_id, seq, at_ms, kind, body) VALUES ($1, $2, $3, $4, $5)",
                    postgres: "INSERT INTO events (session_id, seq, at, kind, body)
                               VALUES ($1, $2, to_timestamp($3 / 1000.0), $4, $5)",
                }
                .on(dialect),
            )
            .bind(session_id)
            .bind(event.seq as i64)
            .bind(event.at_ms)
            .bind(kind)
            .bind(body)
            .execute(connection)
            .await?;
        });
        Ok(())
    }

    /// The messages the event changed, each written whole at its position (but the inputs a file
    /// keeps, `streamed.rs`).
    async fn write_messages(&self, transaction: &mut Transaction, journal: Option<&Journal>) -> StoreResult<()> {
        let seq = self.event.seq as i64;
        in_transaction!(transaction, |connection, dialect| for (position, message) in &self.messages {
            let left_out = journal
                .map(|journal| journal.inputs(self.session_id, |inputs| inputs.left_out_of(message)))
                .unwrap_or_default();
            let blocks = storable(&streamed::stored_blocks(&message.blocks, &left_out))?;
            let left_out = (!left_out.is_empty()).then_some(Json(left_out));
            let query = sqlx::query(
                Sql {
                    sqlite: "INSERT INTO messages
                               (session_id, position, id, role, blocks, streaming, created_at_ms, updated_seq,
                                streamed_inputs)
                             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                             ON CONFLICT (session_id, position) DO UPDATE SET
                               blocks = excluded.blocks, streaming = excluded.streaming,
                               updated_seq = excluded.updated_seq, streamed_inputs = excluded.streamed_inputs",
                    postgres: "INSERT INTO messages
                                 (session_id, position, id, role, blocks, streaming, created_at, updated_seq)
                               VALUES ($1, $2, $3, $4, $5, $6, to_timestamp($7 / 1000.0), $8)
                               ON CONFLICT (session_id, position) DO UPDATE SET
                                 blocks = excluded.blocks, streaming = excluded.streaming,
                                 updated_seq = excluded.updated_seq",
                }
                .on(dialect),
            )
            .bind(self.session_id)
            .bind(*position as i64)
            .bind(&message.id)
            .bind(role_to_str(message.role))
            .bind(blocks)
            .bind(message.streaming)
            .bind(message.created_at_ms)
            .bind(seq);
            // Postgres has no file beside it, and no such column: what streams is in its events.
            let query = match dialect {
                Dialect::Sqlite => query.bind(left_out),
                Dialect::Postgres => query,
            };
            query.execute(&mut *connection).await?;
        });
        Ok(())
    }

    /// The usage of the messages that have one (`Append::usage`), each its own small row.
    async fn write_usage(&self, transaction: &mut Transaction) -> StoreResult<()> {
        in_transaction!(transaction, |connection, dialect| for (position, usage) in &self.usage {
            sqlx::query(
                "INSERT INTO message_usage (session_id, position, usage) VALUES ($1, $2, $3)
                 ON CONFLICT (session_id, position) DO UPDATE SET usage = excluded.usage",
            )
            .bind(self.session_id)
            .bind(*position as i64)
            .bind(Json(*usage))
            .execute(&mut *connection)
            .await?;
        });
        Ok(())
    }

    /// The interactions the event opened or changed, by tool_use id.
    async fn write_interactions(&self, transaction: &mut Transaction) -> StoreResult<()> {
        let seq = self.event.seq as i64;
        in_transaction!(transaction, |connection, dialect| for (tool_use_id, interaction) in &self.interactions {
            sqlx::query(
                Sql {
                    sqlite: "INSERT INTO interactions
                               (session_id, tool_use_id, request, state, outcome, updated_seq, expires_at_ms)
                             VALUES ($1, $2, $3, $4, $5, $6, $7)
                             ON CONFLICT (session_id, tool_use_id) DO UPDATE SET
                               state = excluded.state, outcome = excluded.outcome,
                               updated_seq = excluded.updated_seq, expires_at_ms = excluded.expires_at_ms",
                    postgres: "INSERT INTO interactions
                                 (session_id, tool_use_id, request, state, outcome, updated_seq, expires_at)
                               VALUES ($1, $2, $3, $4, $5, $6, to_timestamp($7::bigint / 1000.0))
                               ON CONFLICT (session_id, tool_use_id) DO UPDATE SET
                                 state = excluded.state, outcome = excluded.outcome,
                                 updated_seq = excluded.updated_seq, expires_at = excluded.expires_at",
                }
                .on(dialect),
            )
            .bind(self.session_id)
            .bind(*tool_use_id)
            .bind(storable(&interaction.request)?)
            .bind(interaction.outcome.as_ref().map_or("pending", |outcome| outcome.name()))
            .bind(interaction.outcome.as_ref().map(storable).transpose()?)
            .bind(seq)
            .bind(interaction.expires_at_ms)
            .execute(&mut *connection)
            .await?;
        });
        Ok(())
    }
}

impl Store {
    /// Stores one event and what it changed, atomically; it must follow the stored log's last
    /// event, or nothing is written. On Postgres, the other servers are told (`Notice::Appended`)
    /// when it commits.
    pub async fn append(&self, append: Append<'_>) -> StoreResult<()> {
        if self.journal.is_some() && append.event.body.is_delta() {
            return self.append_pieces(append.session_id, vec![append.event.clone()]).await;
        }
        self.append_all(vec![append]).await
    }

    /// Stores events of one session that follow each other, and what each changed, in one
    /// transaction: all of them or none. The first must follow the stored log's last event. Each
    /// transaction writes whole pages to SQLite's log and flushes it, whatever its events' size:
    /// a reply's end written with its turn's end saves one of a turn's five (BENCHMARKS.md, "Pages
    /// of 1 KiB"). No streamed pieces among them: those go to `append_pieces`.
    pub async fn append_all(&self, appends: Vec<Append<'_>>) -> StoreResult<()> {
        let Some(first) = appends.first() else { return Ok(()) };
        let (session_id, first_seq) = (first.session_id, first.event.seq);
        for append in &appends {
            debug_assert!(append.session_id == session_id && !(self.journal.is_some() && append.event.body.is_delta()));
            self.check_appendable(&append.event.body)?;
        }
        if let Some(journal) = &self.journal {
            journal.settle(session_id).await?;
        }
        // The database's last event: the one before, or before the pieces journaled since; then
        // each event's own predecessor, so that they follow each other without a gap.
        let mut before =
            self.journal.as_ref().map_or(first_seq - 1, |journal| journal.expected_before(session_id, first_seq));
        let mut appends = appends;
        for append in &mut appends {
            // One server alone needs no fence: its leases are its own.
            append.fence = append.fence.filter(|_| self.is_shared());
            append.input_streamed &= self.journal.is_some();
            if let (Some(journal), EventBody::ToolCallReady { tool_use_id, .. }) = (&self.journal, &append.event.body) {
                // Its row may then leave the input out (`streamed.rs`).
                journal.inputs(session_id, |inputs| inputs.ready(tool_use_id, append.input_streamed));
            }
            if self.journal.is_some() && append.event.body.grows_a_tool_call() {
                // A tool call of a message still streaming: stored as its event alone, like the
                // message's streamed pieces, and replayed onto the message's row on load
                // (`load_thread`); the row is written whole at the message's next other change
                // (its end, a question), once. Each write of the row was the whole message
                // again: a reply with a tool call of 100 KB was written three times over.
                append.messages.retain(|(_, message)| !message.streaming);
            }
        }
        written_once(&mut appends);
        let mut transaction = Transaction::begin(&self.pool).await?;
        let mut listed = false;
        for (i, append) in appends.into_iter().enumerate() {
            if i > 0 {
                before = append.event.seq - 1;
            }
            if !append.compare_and_set(&mut transaction, before).await? {
                return Err(append.refusal(&mut transaction).await?);
            }
            append.insert_event(&mut transaction).await?;
            append.write_messages(&mut transaction, self.journal.as_deref()).await?;
            append.write_usage(&mut transaction).await?;
            append.write_interactions(&mut transaction).await?;
            // Sent at commit, in commit order, and not at all if the transaction fails.
            let appended = Notice::Appended { session: session_id.to_string(), seq: append.event.seq };
            in_transaction!(&mut transaction, |connection, dialect| {
                notify_in!(&mut *connection, dialect, &appended);
            });
            listed |= append.moves_up || append.first_title.is_some();
        }
        if listed {
            in_transaction!(&mut transaction, |connection, dialect| {
                notify_in!(&mut *connection, dialect, &Notice::ListChanged);
            });
        }
        transaction.commit().await?;
        self.commits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Some(journal) = &self.journal {
            journal.written(session_id);
        }
        Ok(())
    }

    /// Whether streamed pieces go to a file beside the database (`append_pieces`), a batch at a
    /// time, rather than each into the database as an event.
    pub fn journals(&self) -> bool {
        self.journal.is_some()
    }

    /// Stores streamed pieces (text and argument deltas, numbered on from the session's last
    /// event), in order, in the journal: only where there is one (`journals`); elsewhere each is
    /// an event, appended as any other.
    pub async fn append_pieces(&self, session_id: &str, pieces: Vec<SessionEvent>) -> StoreResult<()> {
        let Some(journal) = &self.journal else {
            return Err(StoreError::Journal(std::io::Error::other("this store keeps no journal")));
        };
        self.check_writable()?;
        if let Some(first) = pieces.first() {
            // A session deleted meanwhile keeps no file; a read, which writes nothing.
            let stored = self.last_seq(session_id).await?;
            if stored + 1 != first.seq {
                return Err(StoreError::SequenceConflict { session: session_id.to_string(), seq: first.seq, stored });
            }
        }
        journal.append(session_id, pieces).await
    }

    /// The open interactions whose deadline passed by `now_ms`, up to `limit` of them, the
    /// earliest first, as (session, tool_use_id); and the next deadline after `now_ms`, if any.
    /// What every server's expiry timer is armed from.
    pub async fn interaction_deadlines(
        &self,
        now_ms: i64,
        limit: u32,
    ) -> StoreResult<(Vec<(String, String)>, Option<i64>)> {
        on_pool!(self, |pool, dialect| {
            let due: Vec<(String, String)> = sqlx::query_as(
                Sql {
                    sqlite: "SELECT session_id, tool_use_id FROM interactions
                             WHERE state = 'pending' AND expires_at_ms <= $1 ORDER BY expires_at_ms LIMIT $2",
                    postgres: "SELECT session_id, tool_use_id FROM interactions
                               WHERE state = 'pending' AND expires_at <= to_timestamp($1::bigint / 1000.0)
                               ORDER BY expires_at LIMIT $2",
                }
                .on(dialect),
            )
            .bind(now_ms)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?;
            let next: Option<i64> = sqlx::query_scalar(
                Sql {
                    sqlite: "SELECT MIN(expires_at_ms) FROM interactions WHERE state = 'pending' AND expires_at_ms > $1",
                    postgres: "SELECT (extract(epoch FROM MIN(expires_at)) * 1000)::bigint FROM interactions
                               WHERE state = 'pending' AND expires_at > to_timestamp($1::bigint / 1000.0)",
                }
                .on(dialect),
            )
            .bind(now_ms)
            .fetch_one(pool)
            .await?;
            Ok((due, next))
        })
    }
}

/// Each row that several of the events changed, written once, as the last of them left it: a
/// reply's end and its tool's result in one transaction wrote the whole message twice (and its
/// search entry), 263 pages of the log for a reply with 100 KB of tool input.
pub(super) fn written_once(appends: &mut [Append<'_>]) {
    for i in 0..appends.len() {
        let (this, later) = appends[i..].split_first_mut().expect("in range");
        let later = &*later;
        this.messages.retain(|(at, _)| !later.iter().any(|next| next.messages.iter().any(|(to, _)| to == at)));
        this.usage.retain(|(at, _)| !later.iter().any(|next| next.usage.iter().any(|(to, _)| to == at)));
        this.interactions
            .retain(|(id, _)| !later.iter().any(|next| next.interactions.iter().any(|(other, _)| other == id)));
    }
}

fn role_to_str(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Notice => "notice",
    }
}
