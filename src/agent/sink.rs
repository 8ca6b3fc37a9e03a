//! The backend's output port. A backend reports its turn through a [`TurnSink`]: each call is
//! stored and broadcast before it returns, and a question or approval waits for the person.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::AgentError;

/// How much of a question's streaming arguments a preview reads, in bytes: far more than the
/// questions one card asks (`question::MAX_QUESTIONS`) take to write.
const MAX_PREVIEW_INPUT_BYTES: usize = 64 * 1024;
use crate::approval::{Approval, PermissionMode};
use crate::ids::new_id;
use crate::interaction::{InteractionOutcome, InteractionRequest};
use crate::question::{Question, normalize_partial, normalize_question_args, without_open_string};
use crate::thread::EventBody;

/// A turn's sink, shared with the tasks a backend runs for it (questions wait in tasks of their own).
pub type Sink = Arc<dyn TurnSink>;

/// What a backend needs from the session it works for. The few required methods are the port;
/// the methods on `dyn TurnSink` below word the events a backend emits.
pub trait TurnSink: Send + Sync {
    fn session_id(&self) -> &str;

    /// Stores and broadcasts one event of the turn.
    fn emit(&self, body: EventBody) -> BoxFuture<'_, Result<(), AgentError>>;

    /// Puts `request` (about tool call `tool_use_id`) to the person and waits for the outcome: a
    /// decision, or an expiry with the server's timeouts. Stopping the turn (`cancel`) stops the
    /// wait. A backend that can let go of the request and resume later (`parkable`) may be told
    /// to park it instead: `AgentError::Parked`.
    fn wait_for_person<'a>(
        &'a self,
        tool_use_id: &'a str,
        request: InteractionRequest,
        parkable: bool,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<InteractionOutcome, AgentError>>;

    /// Opens `request` parked: no process waits for it; the turn ends here, and the answer resumes
    /// the agent. Its outcome instead, if it was decided already.
    fn park<'a>(
        &'a self,
        tool_use_id: &'a str,
        request: InteractionRequest,
    ) -> BoxFuture<'a, Result<Option<InteractionOutcome>, AgentError>>;

    /// Parks whatever of this session waits for the person (to make room for another agent).
    /// How many waits were told to park.
    fn park_waiting(&self) -> usize;

    /// The agent withdrew its request (it was interrupted, or gave up waiting): the card turns
    /// cancelled, and a late answer is refused.
    fn withdraw<'a>(&'a self, tool_use_id: &'a str, reason: &'a str) -> BoxFuture<'a, ()>;

    /// The arguments of tool call `tool_use_id` as the agent wrote them, once complete.
    fn tool_input<'a>(&'a self, tool_use_id: &'a str) -> BoxFuture<'a, Option<Value>>;

    /// The session's permission mode now (`None`: the agent's default).
    fn current_permission_mode(&self) -> BoxFuture<'_, Option<PermissionMode>>;

    /// The agent's own mode the session is in, for an agent that names its own.
    fn current_agent_mode(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async { None })
    }
}

impl dyn TurnSink + '_ {
    /// Starts an assistant message and returns its id.
    pub async fn start_message(&self) -> Result<String, AgentError> {
        let message_id = new_id();
        self.emit(EventBody::AssistantMessageStarted { message_id: message_id.clone() }).await?;
        Ok(message_id)
    }

    pub async fn text(&self, message_id: &str, text: &str) -> Result<(), AgentError> {
        self.emit(EventBody::TextDelta { message_id: message_id.to_string(), text: text.to_string() }).await
    }

    pub async fn tool_call_started(&self, message_id: &str, tool_use_id: &str, name: &str) -> Result<(), AgentError> {
        self.emit(EventBody::ToolCallStarted {
            message_id: message_id.to_string(),
            tool_use_id: tool_use_id.to_string(),
            name: name.to_string(),
        })
        .await
    }

    pub async fn tool_input_delta(&self, tool_use_id: &str, partial_json: &str) -> Result<(), AgentError> {
        self.emit(EventBody::ToolInputDelta {
            tool_use_id: tool_use_id.to_string(),
            partial_json: partial_json.to_string(),
        })
        .await
    }

    /// For a question tool whose arguments so far are `json` (partial JSON): shows its questions
    /// and options as far as they are written, when they changed since `shown`. Read here, on the
    /// server, so that the browser needs no partial-JSON parser; and once the arguments are
    /// complete, the card already holds what it shows when it opens, so that opening it changes
    /// only its state.
    ///
    /// Texts show whole, once written (`without_open_string`): a card redrawn for every few
    /// characters kept the page busy (5 to 10 ms a time on the bench's machine) just when the
    /// question was about to open, and a button never shows half a word.
    pub async fn question_preview(
        &self,
        tool_use_id: &str,
        tool: &str,
        json: &str,
        shown: &mut Vec<Question>,
    ) -> Result<(), AgentError> {
        // Past this, the arguments are read no more until they are complete: each delta would
        // read them all again (their size squared, for a call of thousands of questions).
        if json.len() > MAX_PREVIEW_INPUT_BYTES {
            return Ok(());
        }
        let now = normalize_partial(tool, without_open_string(json));
        if now.is_empty() || now == *shown {
            return Ok(());
        }
        // Only what changed is stored: the questions before the first that differs stay.
        let from = shown.iter().zip(&now).take_while(|(before, after)| before == after).count();
        let questions = now[from..].to_vec();
        self.emit(EventBody::ToolInputPreview { tool_use_id: tool_use_id.to_string(), from, questions }).await?;
        *shown = now;
        Ok(())
    }

    pub async fn tool_call_ready(&self, tool_use_id: &str, input: Value) -> Result<(), AgentError> {
        self.emit(EventBody::ToolCallReady { tool_use_id: tool_use_id.to_string(), input }).await
    }

    pub async fn tool_result(&self, tool_use_id: &str, output: &str, is_error: bool) -> Result<(), AgentError> {
        self.emit(EventBody::ToolResult { tool_use_id: tool_use_id.to_string(), output: output.to_string(), is_error })
            .await
    }

    pub async fn finish_message(&self, message_id: &str) -> Result<(), AgentError> {
        self.emit(EventBody::MessageFinished { message_id: message_id.to_string() }).await
    }

    /// The agent's process is up; `agent_session` is its id for the conversation.
    pub async fn agent_started(&self, info: &str, agent_session: Option<String>) -> Result<(), AgentError> {
        self.emit(EventBody::AgentStarted { info: info.to_string(), agent_session, host: None }).await
    }

    /// The same, for an agent under a host that outlives the server, listening at `host`.
    pub async fn agent_started_in(&self, info: &str, agent_session: String, host: String) -> Result<(), AgentError> {
        let started =
            EventBody::AgentStarted { info: info.to_string(), agent_session: Some(agent_session), host: Some(host) };
        self.emit(started).await
    }

    /// Something the product says in the thread, outside the agent's own messages.
    pub async fn notice(&self, text: &str) -> Result<(), AgentError> {
        self.emit(EventBody::Notice { message_id: new_id(), text: text.to_string() }).await
    }

    /// The agent reports its permission mode (it changed it, or the person did).
    pub async fn permission_mode(&self, mode: PermissionMode) -> Result<(), AgentError> {
        if self.current_permission_mode().await == Some(mode) {
            return Ok(());
        }
        self.emit(EventBody::PermissionModeChanged { mode, agent_mode: None }).await
    }

    /// The agent reports it is in its own mode `id`, which stands for AskBridge's `mode`.
    pub async fn agent_mode(&self, mode: PermissionMode, id: &str) -> Result<(), AgentError> {
        if self.current_agent_mode().await.as_deref() == Some(id) && self.current_permission_mode().await == Some(mode)
        {
            return Ok(());
        }
        self.emit(EventBody::PermissionModeChanged { mode, agent_mode: Some(id.to_string()) }).await
    }

    /// Puts the question in tool call `tool_use_id` to the person and waits for the outcome: an
    /// answer, a decline, an expiry, or `Failed` at once when the arguments cannot be understood.
    pub async fn ask(
        &self,
        tool_use_id: &str,
        tool_name: &str,
        input: &Value,
        parkable: bool,
        cancel: &CancellationToken,
    ) -> Result<InteractionOutcome, AgentError> {
        match self.readable_question(tool_use_id, tool_name, input).await? {
            Ok(request) => self.wait_for_person(tool_use_id, request, parkable, cancel).await,
            Err(failed) => Ok(failed),
        }
    }

    /// Puts the question to the person parked: the turn ends here, and the answer resumes the
    /// agent. `Some` outcome when it needs no waiting: its arguments could not be read, or it was
    /// decided already.
    pub async fn park_question(
        &self,
        tool_use_id: &str,
        tool_name: &str,
        input: &Value,
    ) -> Result<Option<InteractionOutcome>, AgentError> {
        match self.readable_question(tool_use_id, tool_name, input).await? {
            Ok(request) => self.park(tool_use_id, request).await,
            Err(failed) => Ok(Some(failed)),
        }
    }

    /// The question as a request for the person; or, when its arguments cannot be understood, the
    /// card that says so, already `Failed`.
    async fn readable_question(
        &self,
        tool_use_id: &str,
        tool_name: &str,
        input: &Value,
    ) -> Result<Result<InteractionRequest, InteractionOutcome>, AgentError> {
        let error = match normalize_question_args(tool_name, input) {
            Ok(questions) => return Ok(Ok(InteractionRequest::Question { questions })),
            Err(error) => error.to_string(),
        };
        Ok(Err(self.unreadable(tool_use_id, error).await?))
    }

    /// The card of a question that cannot be asked, saying `error`, already `Failed`.
    pub async fn unreadable(&self, tool_use_id: &str, error: String) -> Result<InteractionOutcome, AgentError> {
        warn!(session = self.session_id(), tool_use_id, %error, "the agent's question could not be read");
        let tool_use_id = tool_use_id.to_string();
        let request = InteractionRequest::Unreadable { error: error.clone() };
        self.emit(EventBody::InteractionOpened { tool_use_id: tool_use_id.clone(), request, expires_at_ms: None })
            .await?;
        let outcome = InteractionOutcome::Failed { error };
        self.emit(EventBody::InteractionResolved { tool_use_id, outcome: outcome.clone() }).await?;
        Ok(outcome)
    }

    /// Asks the person's permission for tool call `tool_use_id` and waits for the decision.
    pub async fn ask_approval(
        &self,
        tool_use_id: &str,
        approval: Approval,
        parkable: bool,
        cancel: &CancellationToken,
    ) -> Result<InteractionOutcome, AgentError> {
        self.wait_for_person(tool_use_id, InteractionRequest::Approval(approval), parkable, cancel).await
    }
}
