//! Sessions AskBridge does not run (DESIGN §7): a `claude` in a terminal, whose hooks bring its
//! questions and permission prompts here (`terminal/`). Such a session has no turns of AskBridge's:
//! it is made at its terminal's first hook, its calls are shown as the terminal's Claude Code
//! makes them, and its cards go through the same bridge, the waiter being the hook's request.
//! What it does (working, waiting, idle) is the terminal's, kept beside the session.

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::manager::SessionManager;
use crate::bridge::NoOutcome;
use crate::error::AppError;
use crate::ids::{new_id, now_ms};
use crate::interaction::{InteractionOutcome, InteractionRequest};
use crate::store::TranscriptRead;
use crate::thread::{
    Block, ClaudeProcess, EventBody, Message, SessionSummary, TERMINAL_AGENT, TerminalState, TerminalSummary, Thread,
    ToolCall,
};

impl SessionManager {
    /// The session that stands for a terminal's Claude Code session, made at its first hook.
    pub async fn terminal_session(&self, terminal: &TerminalSummary, title: &str) -> Result<String, AppError> {
        if let Some(id) = self.store().terminal_session(&terminal.host, &terminal.claude_session_id).await? {
            if let Some(process) = &terminal.process {
                self.store().set_terminal_process(&id, process).await?;
            }
            return Ok(id);
        }
        let now = now_ms();
        let summary = SessionSummary {
            id: new_id(),
            title: title.to_string(),
            agent: TERMINAL_AGENT.to_string(),
            created_at_ms: now,
            updated_at_ms: now,
            working: false,
            waiting: false,
            workdir: Some(terminal.folder.clone()),
            active_at_ms: now,
            terminal: Some(terminal.clone()),
            matched: None,
        };
        let id = self.store().create_terminal_session(&summary, terminal).await?;
        if id == summary.id {
            info!(session = %id, host = %terminal.host, folder = %terminal.folder, "a terminal's Claude Code session joined");
            self.list_changed();
        }
        Ok(id)
    }

    /// What the terminal does now, as its hooks say.
    pub async fn set_terminal_state(
        &self,
        session: &str,
        state: TerminalState,
        transcript_path: Option<&str>,
    ) -> Result<(), AppError> {
        self.store().set_terminal_state(session, state, transcript_path, now_ms()).await?;
        self.list_changed();
        Ok(())
    }

    /// Shows the call the terminal's Claude Code asks about, with a line that says who asks, so
    /// that a card can hang on it; returns the id the card has. A call shown already is asked
    /// about again under its id; another call under that id (the hook took the wrong one) gets an
    /// id of its own.
    pub async fn show_terminal_call(
        &self,
        session: &str,
        tool_use_id: &str,
        tool: &str,
        input: Value,
        said: &str,
    ) -> Result<String, AppError> {
        let runtime = self.runtime(session).await?;
        let mut state = runtime.lock().await;
        let tool_use_id = match state.thread.tool_call(tool_use_id) {
            // Asked again about the same call.
            Some(call) if call.name == tool && call.input.as_ref() == Some(&input) => {
                return Ok(tool_use_id.to_string());
            }
            // Another call under a known one's id: never given that one's card, nor its decision.
            Some(_) => {
                warn!(
                    session,
                    tool_use_id, tool, "a terminal asked about another call under a known id; a card of its own"
                );
                format!("terminal-{}", new_id())
            }
            None => tool_use_id.to_string(),
        };
        let message_id = new_id();
        let (store, id) = (self.store(), tool_use_id.clone());
        for body in [
            EventBody::AssistantMessageStarted { message_id: message_id.clone() },
            EventBody::TextDelta { message_id: message_id.clone(), text: said.to_string() },
            EventBody::ToolCallStarted {
                message_id: message_id.clone(),
                tool_use_id: id.clone(),
                name: tool.to_string(),
            },
            EventBody::ToolCallReady { tool_use_id: id, input },
            EventBody::MessageFinished { message_id },
        ] {
            runtime.append_locked(store, &mut state, body).await?;
        }
        Ok(tool_use_id)
    }

    /// What the terminal's Claude Code gave the model for the call, once known, unless the call
    /// has a result already.
    pub async fn record_terminal_result(
        &self,
        session: &str,
        tool_use_id: &str,
        output: &str,
        is_error: bool,
    ) -> Result<(), AppError> {
        let runtime = self.runtime(session).await?;
        let mut state = runtime.lock().await;
        if state.thread.tool_call(tool_use_id).is_none_or(|call| call.result.is_some()) {
            return Ok(());
        }
        let body = EventBody::ToolResult { tool_use_id: tool_use_id.to_string(), output: output.to_string(), is_error };
        runtime.append_locked(self.store(), &mut state, body).await?;
        Ok(())
    }

    /// Takes the terminal session's lease while a hook waits here: where servers share the
    /// store, an answer given through another one is then handed to this one, as for an agent
    /// running here. False when another server holds it (its hook waits there).
    pub async fn hold_terminal_session(&self, session: &str) -> bool {
        match self.log.leases().take(session).await {
            Ok(taken) => taken,
            Err(error) => {
                warn!(%session, %error, "could not take the terminal session's lease");
                false
            }
        }
    }

    /// The terminal session made for a terminal's Claude Code session, if it has one.
    pub async fn find_terminal_session(&self, host: &str, claude_session_id: &str) -> Result<Option<String>, AppError> {
        Ok(self.store().terminal_session(host, claude_session_id).await?)
    }

    /// Waits for the person to decide on a terminal's request (its hook's): never parked, since
    /// the hook's request, not an agent of ours, is the waiter.
    pub async fn wait_for_terminal_answer(
        &self,
        session: &str,
        tool_use_id: &str,
        request: InteractionRequest,
    ) -> Result<InteractionOutcome, NoOutcome> {
        let never = CancellationToken::new();
        self.bridge().wait_for_person(session, tool_use_id, request, false, &never).await
    }

    /// Takes back a terminal's request that was settled elsewhere (answered in the terminal, its
    /// hook gone): its card closes with `why`.
    pub async fn withdraw_terminal_request(&self, session: &str, tool_use_id: &str, why: &str) {
        self.bridge().cancel(session, tool_use_id, why).await;
    }

    /// No hook of the terminal session waits here any more.
    pub async fn let_go_of_terminal_session(&self, session: &str) {
        self.log.leases().give_back(session).await;
    }

    /// Closes the cards of terminal sessions that no hook waits for any more: at start, the
    /// hooks of a server that stopped let go of them (and their terminals asked by themselves).
    /// How many were closed.
    pub async fn close_orphaned_terminal_cards(&self, reason: &str) -> Result<usize, AppError> {
        let mut closed = 0;
        for summary in self.store().list_sessions().await? {
            if summary.terminal.is_none() || !summary.waiting {
                continue;
            }
            let runtime = self.runtime(&summary.id).await?;
            let mut state = runtime.lock().await;
            for tool_use_id in pending_in(&state.thread) {
                let outcome = InteractionOutcome::Cancelled { reason: reason.to_string() };
                runtime
                    .append_locked(self.store(), &mut state, EventBody::InteractionResolved { tool_use_id, outcome })
                    .await?;
                closed += 1;
            }
        }
        if closed > 0 {
            self.list_changed();
        }
        Ok(closed)
    }

    /// The `claude` process a terminal session runs in, as its latest hook found it.
    pub async fn terminal_process(&self, session: &str) -> Option<ClaudeProcess> {
        self.store().session(session).await.ok()?.terminal?.process
    }

    /// Ends the terminal sessions whose `claude` has exited without a word, as `alive` sees it
    /// (`None`: it cannot tell, the process being another machine's): "ended", and the cards
    /// still waiting close with `why`. How many ended.
    pub async fn end_exited_terminals(
        &self,
        alive: impl Fn(&ClaudeProcess) -> Option<bool>,
        why: &str,
    ) -> Result<usize, AppError> {
        let mut ended = 0;
        for (session, process) in self.store().terminal_processes().await? {
            if alive(&process) != Some(false) {
                continue;
            }
            info!(%session, pid = process.pid, "a terminal's claude exited without a word: its session ends");
            self.set_terminal_state(&session, TerminalState::Ended, None).await?;
            for tool_use_id in self.pending_calls(&session).await? {
                self.withdraw_terminal_request(&session, &tool_use_id, why).await;
            }
            ended += 1;
        }
        Ok(ended)
    }

    /// The terminal sessions whose `claude` runs, as `alive` sees it (this machine's), with what
    /// is known of their terminal.
    pub async fn running_terminals(
        &self,
        alive: impl Fn(&ClaudeProcess) -> Option<bool>,
    ) -> Result<Vec<(String, TerminalSummary)>, AppError> {
        let mut running = Vec::new();
        for (session, process) in self.store().terminal_processes().await? {
            if alive(&process) == Some(true)
                && let Some(terminal) = self.store().session(&session).await?.terminal
            {
                running.push((session, terminal));
            }
        }
        Ok(running)
    }

    /// Where a terminal session's transcript is and how far it has been read, once a hook named it.
    pub async fn terminal_transcript(&self, session: &str) -> Result<Option<TranscriptRead>, AppError> {
        Ok(self.store().terminal_transcript(session).await?)
    }

    /// The prompts and words read from a terminal session's transcript, from `read.offset` to
    /// `next`, join its thread (as a conversation the agent had: finished). Nothing is added when
    /// another read took those lines first.
    pub async fn add_terminal_conversation(
        &self,
        session: &str,
        read: &TranscriptRead,
        next: u64,
        messages: Vec<Message>,
    ) -> Result<(), AppError> {
        let runtime = self.runtime(session).await?;
        let mut state = runtime.lock().await;
        if !self.store().advance_terminal_transcript(session, read.offset, next).await? || messages.is_empty() {
            return Ok(());
        }
        let body = EventBody::HistoryImported { agent_session: read.claude_session_id.clone(), messages };
        runtime.append_locked(self.store(), &mut state, body).await?;
        Ok(())
    }

    /// The calls of `session` whose card waits for the person.
    async fn pending_calls(&self, session: &str) -> Result<Vec<String>, AppError> {
        let runtime = self.runtime(session).await?;
        let state = runtime.lock().await;
        Ok(pending_in(&state.thread))
    }

    /// A terminal session takes no messages here: its Claude Code reads them in the terminal.
    pub async fn refuse_messages_to_terminal(&self, session: &str) -> Result<(), AppError> {
        let summary = self.store().session(session).await?;
        match summary.terminal {
            Some(terminal) => Err(AppError::BadRequest {
                detail: format!(
                    "this session is Claude Code in a terminal on {}, in {}: type your message there. Here you \
                     answer its questions and permission requests.",
                    terminal.host, terminal.folder
                ),
            }),
            None => Ok(()),
        }
    }

    /// Says that the session list changed (for the tabs that show it).
    pub fn list_changed(&self) {
        self.log.list_changed();
    }
}

/// The calls of a thread whose card waits for the person.
fn pending_in(thread: &Thread) -> Vec<String> {
    thread
        .messages
        .iter()
        .flat_map(|message| message.blocks.iter())
        .filter_map(|block| match block {
            Block::ToolCall(ToolCall { id, interaction: Some(interaction), .. }) if interaction.is_pending() => {
                Some(id.clone())
            }
            _ => None,
        })
        .collect()
}
