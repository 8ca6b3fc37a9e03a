//! One turn with an ACP agent: `session/prompt`, and until its answer, the agent's updates into
//! the thread and its requests to the person. Each request waits in a task of its own, so that the
//! updates go on streaming while a card is open. Stop answers every pending request `cancelled`
//! and sends `session/cancel` (acp.md §1).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::connection::{Connection, Inbound};
use super::form::Form;
use super::permission;
use super::wire::{
    self, ContentBlock, Elicitation, ElicitationAction, Id, PermissionRequest, PromptDone, RpcError,
    SessionNotification, SessionStarted, ToolCall, Update,
};
use crate::agent::{AgentError, Sink};
use crate::interaction::InteractionOutcome;
use crate::thread::{Block, Message, SlashCommand, Usage};

/// Where the answer to a turn's prompt comes.
pub type Answer = tokio::sync::oneshot::Receiver<Result<Value, RpcError>>;

/// The tool name a form elicitation's card is filed under: the question card of AskUserQuestion.
const FORM_TOOL: &str = "AskUserQuestion";

/// What a turn keeps of the session between its updates.
pub struct Turn<'a> {
    pub connection: &'a Arc<Connection>,
    pub acp_session: &'a str,
    pub sink: &'a Sink,
    pub cancel: &'a CancellationToken,
    /// How long the agent has to end its turn after `session/cancel`.
    pub grace: Duration,
    /// The session's cost so far as the agent counts it (its `usage_update`s are running totals).
    pub cost_before: f64,
    message: Option<String>,
    started: HashSet<String>,
    ready: HashSet<String>,
    ended: HashSet<String>,
    usage: Usage,
    /// The running total of the latest `usage_update` that had one.
    pub cost_now: Option<f64>,
    /// The agent's `/` commands, when it said them this turn.
    pub commands: Option<Vec<SlashCommand>>,
    /// The cards waiting for the person, by tool call.
    open: Arc<std::sync::Mutex<HashSet<String>>>,
    /// What the cards' waits stop on: the turn's token, and the turn's end (a child of it, so
    /// that ending the waits is not taken for the person's Stop).
    waits_end: CancellationToken,
    /// The agent runs under a host: a card may park (the agent waits on through the server's
    /// restart, and the answer resumes this turn).
    hosted: bool,
    /// A card parked: the turn lets go of the agent.
    parked: Arc<tokio::sync::Notify>,
    /// What the person said with a denial, for the agent: ACP's answer to a permission request
    /// carries no words, so they follow as a prompt of the same turn.
    said: Arc<std::sync::Mutex<Vec<String>>>,
    /// What the person decided on the parked cards of requests the agent asked before this turn
    /// (they come again when a server attaches to its host): by tool call.
    settled: HashMap<String, InteractionOutcome>,
}

impl<'a> Turn<'a> {
    pub fn new(
        connection: &'a Arc<Connection>,
        acp_session: &'a str,
        sink: &'a Sink,
        cancel: &'a CancellationToken,
        grace: Duration,
        cost_before: f64,
        earlier: &[Message],
    ) -> Self {
        let mut started = HashSet::new();
        let mut ended = HashSet::new();
        let mut settled = HashMap::new();
        for call in earlier.iter().flat_map(|m| &m.blocks).filter_map(|block| match block {
            Block::ToolCall(call) => Some(call),
            _ => None,
        }) {
            started.insert(call.id.clone());
            if call.result.is_some() {
                ended.insert(call.id.clone());
            }
            if let Some(outcome) = call.interaction.as_ref().filter(|i| i.parked).and_then(|i| i.outcome.clone()) {
                settled.insert(call.id.clone(), outcome);
            }
        }
        Self {
            connection,
            acp_session,
            sink,
            cancel,
            waits_end: cancel.child_token(),
            grace,
            cost_before,
            message: None,
            ready: started.clone(),
            started,
            ended,
            usage: Usage::default(),
            cost_now: None,
            commands: None,
            open: Arc::default(),
            hosted: connection.hosted(),
            parked: Arc::default(),
            said: Arc::default(),
            settled,
        }
    }

    /// Sends `prompt` and plays the turn to its end. A card still open when the turn ends (the
    /// agent exited, or went on without it) is withdrawn, saying why: its answer could not reach
    /// the agent.
    pub async fn run(&mut self, prompt: Vec<Value>) -> Result<Option<Usage>, AgentError> {
        let answer = self.connection.send("session/prompt", json!({"sessionId": self.acp_session, "prompt": prompt}));
        self.play_out(answer).await
    }

    /// Plays on the turn a server before began (its prompt still unanswered), now that this one
    /// attached to the agent's host: the requests it made again are answered from what the
    /// person decided since.
    pub async fn resume(&mut self, answer: Answer) -> Result<Option<Usage>, AgentError> {
        self.play_out(answer).await
    }

    async fn play_out(&mut self, answer: Answer) -> Result<Option<Usage>, AgentError> {
        let mut waits = JoinSet::new();
        let mut played = self.play(answer, &mut waits).await;
        // The words given with a denial, as the agent would have read them with it.
        loop {
            let said: Vec<String> = std::mem::take(&mut *self.said.lock().expect("said lock"));
            if said.is_empty() || played.is_err() {
                break;
            }
            let text = json!({"type": "text", "text": said.join("\n\n")});
            let answer =
                self.connection.send("session/prompt", json!({"sessionId": self.acp_session, "prompt": [text]}));
            played = self.play(answer, &mut waits).await;
        }
        if let Err(AgentError::Parked) = played {
            // The parked cards wait on: the agent, in its host, for their answer.
            waits.abort_all();
            self.finish_message().await?;
            return played;
        }
        // Every card the agent asked for is shown before it is withdrawn: a request read just
        // before the agent exited has its card too, though its wait had not yet shown it.
        let open: Vec<String> = self.open.lock().expect("open cards lock").drain().collect();
        self.waits_end.cancel();
        while waits.join_next().await.is_some() {}
        let why = match &played {
            Err(AgentError::Interrupted) => "the turn was stopped",
            Ok(_) => "the agent ended its turn without the answer",
            Err(_) => "the agent stopped before it was answered",
        };
        for card in open {
            self.sink.withdraw(&card, why).await;
        }
        self.finish_message().await?;
        played
    }

    async fn play(&mut self, mut answer: Answer, waits: &mut JoinSet<()>) -> Result<Option<Usage>, AgentError> {
        let mut inbox = self.connection.inbox.lock().await;
        let mut stopping: Option<tokio::time::Instant> = None;
        let exited = |why: &str, said: String| {
            AgentError::Failed(format!("the agent stopped in the middle of the turn ({why}){said}"))
        };
        let result = loop {
            let deadline = stopping.unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86_400 * 365));
            tokio::select! {
                biased;
                _ = self.cancel.cancelled(), if stopping.is_none() => {
                    // The waits see the same token and answer `cancelled` themselves.
                    self.connection.notify("session/cancel", json!({"sessionId": self.acp_session}));
                    stopping = Some(tokio::time::Instant::now() + self.grace);
                }
                // What the agent sent is read before its answer or its end, which the reader
                // learned of after it: a request written just before the agent exited still
                // becomes its card (it answered the prompt, or died, while the line waited here).
                inbound = inbox.recv() => match inbound {
                    Some(Inbound::Notification { method, params }) => self.notified(&method, params).await?,
                    Some(Inbound::Request { id, method, params }) => self.asked(id, &method, params, waits).await?,
                    Some(Inbound::Closed(why)) => return Err(exited(&why, self.connection.last_words())),
                    None => return Err(exited("its connection is gone", String::new())),
                },
                done = &mut answer => break done,
                _ = self.parked.notified() => return Err(AgentError::Parked),
                _ = tokio::time::sleep_until(deadline), if stopping.is_some() => {
                    self.connection.kill();
                    return Err(AgentError::Interrupted);
                }
            }
        };
        // What the agent sent before its answer is read before the turn ends: the reader queues
        // it first, but the answer is handed over at once.
        while let Ok(inbound) = inbox.try_recv() {
            match inbound {
                Inbound::Notification { method, params } => self.notified(&method, params).await?,
                Inbound::Request { id, .. } => self.connection.respond(
                    &id,
                    Err(RpcError { code: wire::INVALID_PARAMS, message: "the turn has ended".into(), data: None }),
                ),
                Inbound::Closed(_) => {}
            }
        }
        drop(inbox);
        let done = match result {
            Ok(Ok(done)) => done,
            Ok(Err(error)) => return Err(AgentError::Failed(format!("the agent refused the prompt: {error}"))),
            Err(_) => return Err(exited("it exited", self.connection.last_words())),
        };
        let done: PromptDone = serde_json::from_value(done)
            .map_err(|e| AgentError::Failed(format!("the agent's answer to the prompt could not be read: {e}")))?;
        debug!(stop = done.stop_reason, "ACP turn ended");
        if stopping.is_some() || self.cancel.is_cancelled() {
            return Err(AgentError::Interrupted);
        }
        if done.stop_reason == "cancelled" && self.said.lock().expect("said lock").is_empty() {
            // Nobody pressed Stop: the agent ended its turn itself, as Codex does at a refusal
            // ("No, and tell Codex what to do differently"). The words of a denial, if any, follow.
            self.sink.notice("The agent stopped there, and waits for what to do instead.").await?;
        }
        if let Some(used) = done.usage {
            self.usage.input_tokens = used.input_tokens;
            self.usage.output_tokens = used.output_tokens;
            self.usage.cache_read_tokens = used.cached_read_tokens;
            self.usage.cache_write_tokens = used.cached_write_tokens;
        }
        if let Some(total) = self.cost_now {
            // A running total: this turn's share is what it added (a total that fell is a new count).
            let spent = if total >= self.cost_before { total - self.cost_before } else { total };
            self.usage.cost_usd = Some(spent);
        }
        if done.stop_reason == "refusal" {
            self.sink.notice("The agent refused to go on with this request.").await?;
        } else if done.stop_reason == "max_tokens" || done.stop_reason == "max_turn_requests" {
            self.sink.notice(&format!("The agent stopped: {}.", done.stop_reason.replace('_', " "))).await?;
        }
        Ok(Some(self.usage.clone()))
    }

    async fn notified(&mut self, method: &str, params: Value) -> Result<(), AgentError> {
        if method != "session/update" {
            // `_` extensions and what a newer agent says: nothing for the thread.
            debug!(method, "ACP notification not shown");
            return Ok(());
        }
        let update = match serde_json::from_value::<SessionNotification>(params) {
            Ok(notification) if notification.session_id == self.acp_session => notification.update,
            Ok(_) => return Ok(()),
            Err(error) => {
                warn!(%error, "an ACP session/update could not be read");
                return Ok(());
            }
        };
        self.update(update).await
    }

    async fn update(&mut self, update: Update) -> Result<(), AgentError> {
        match update {
            Update::AgentMessageChunk { content: ContentBlock::Text { text } } => {
                let message = self.message_id().await?;
                self.sink.text(&message, &text).await?;
            }
            Update::ToolCall(call) | Update::ToolCallUpdate(call) => self.tool_call(call).await?,
            Update::Plan { entries } => {
                let lines: Vec<String> = entries
                    .iter()
                    .map(|entry| {
                        let mark = match entry.status.as_str() {
                            "completed" => "☑",
                            "in_progress" => "▶",
                            _ => "☐",
                        };
                        format!("{mark} {}", entry.content)
                    })
                    .collect();
                if !lines.is_empty() {
                    self.sink.notice(&format!("Plan:\n{}", lines.join("\n"))).await?;
                }
            }
            Update::UsageUpdate { used, size, cost } => {
                self.usage.context_tokens = used.or(self.usage.context_tokens);
                self.usage.context_window = size.or(self.usage.context_window);
                if let Some(cost) = cost.filter(|c| c.currency.is_empty() || c.currency == "USD") {
                    self.cost_now = Some(cost.amount);
                }
            }
            Update::AvailableCommandsUpdate { available_commands } => {
                self.commands = Some(slash_commands(available_commands));
            }
            // The agent changed its own mode (Claude's adapter leaving plan mode), or its mode
            // option (OpenCode's, Codex's after `/plan`).
            Update::CurrentModeUpdate { current_mode_id } => {
                self.sink.agent_mode(super::modes::acts_as(&current_mode_id), &current_mode_id).await?;
            }
            Update::ConfigOptionUpdate { config_options } => {
                let started = SessionStarted { config_options, ..SessionStarted::default() };
                if let Some(mode) = super::modes::AgentModes::of(&started).filter(|m| m.has(&m.current)) {
                    self.sink.agent_mode(super::modes::acts_as(&mode.current), &mode.current).await?;
                }
            }
            Update::AgentThoughtChunk { .. }
            | Update::UserMessageChunk { .. }
            | Update::AgentMessageChunk { .. }
            | Update::Other => {}
        }
        Ok(())
    }

    /// The assistant message the agent is writing, started when it starts writing.
    async fn message_id(&mut self) -> Result<String, AgentError> {
        if let Some(id) = &self.message {
            return Ok(id.clone());
        }
        let id = self.sink.start_message().await?;
        self.message = Some(id.clone());
        Ok(id)
    }

    async fn finish_message(&mut self) -> Result<(), AgentError> {
        if let Some(id) = self.message.take() {
            self.sink.finish_message(&id).await?;
        }
        Ok(())
    }

    async fn tool_call(&mut self, call: ToolCall) -> Result<(), AgentError> {
        let id = call.tool_call_id.clone();
        if self.started.insert(id.clone()) {
            let message = self.message_id().await?;
            let name =
                call.tool_name().or(call.title.as_deref()).or(call.kind.as_deref()).unwrap_or("tool").to_string();
            self.sink.tool_call_started(&message, &id, &name).await?;
        }
        if matches!(call.status.as_deref(), Some("in_progress" | "completed" | "failed")) {
            self.ready(&call).await?;
        }
        if let Some(failed) = call.ended()
            && self.ended.insert(id.clone())
        {
            self.sink.tool_result(&id, &call.output_text(), failed).await?;
        }
        Ok(())
    }

    /// The call's input is settled: shown whole on its card (once).
    async fn ready(&mut self, call: &ToolCall) -> Result<(), AgentError> {
        if self.started.contains(&call.tool_call_id) && self.ready.insert(call.tool_call_id.clone()) {
            let input = call.input().cloned().unwrap_or_else(|| json!({}));
            self.sink.tool_call_ready(&call.tool_call_id, input).await?;
        }
        Ok(())
    }

    async fn asked(&mut self, id: Id, method: &str, params: Value, waits: &mut JoinSet<()>) -> Result<(), AgentError> {
        match method {
            "session/request_permission" => {
                let request: PermissionRequest = match serde_json::from_value(params) {
                    Ok(request) => request,
                    Err(error) => {
                        self.refuse(&id, &format!("unreadable permission request: {error}"));
                        return Ok(());
                    }
                };
                let call = request.tool_call.clone();
                let (approval, options) = permission::approval(&request);
                if let Some(outcome) = self.settled.remove(&call.tool_call_id) {
                    if let InteractionOutcome::Denied { message: Some(message) } = &outcome {
                        let what = approval_in_words(&approval);
                        self.said.lock().expect("said lock").push(format!("I did not allow {what}: {message}"));
                    }
                    self.connection.respond(&id, Ok(wire::permission_outcome(options.chosen(&outcome))));
                    return Ok(());
                }
                self.tool_call(ToolCall { status: None, ..call.clone() }).await?;
                self.ready(&call).await?;
                let (sink, connection, cancel) = (self.sink.clone(), self.connection.clone(), self.waits_end.clone());
                let (open, parked, hosted) = (self.open.clone(), self.parked.clone(), self.hosted);
                let said = self.said.clone();
                let what = approval_in_words(&approval);
                open.lock().expect("open cards lock").insert(call.tool_call_id.clone());
                waits.spawn(async move {
                    let outcome = sink.ask_approval(&call.tool_call_id, approval, hosted, &cancel).await;
                    if let Ok(InteractionOutcome::Denied { message: Some(message) }) = &outcome {
                        said.lock().expect("said lock").push(format!("I did not allow {what}: {message}"));
                    }
                    open.lock().expect("open cards lock").remove(&call.tool_call_id);
                    let outcome = match outcome {
                        Err(AgentError::Parked) => return parked.notify_one(),
                        outcome => outcome.unwrap_or_else(|error| cancelled(&error)),
                    };
                    connection.respond(&id, Ok(wire::permission_outcome(options.chosen(&outcome))));
                });
            }
            "elicitation/create" => {
                let elicitation: Elicitation = match serde_json::from_value(params) {
                    Ok(elicitation) => elicitation,
                    Err(error) => {
                        self.refuse(&id, &format!("unreadable elicitation: {error}"));
                        return Ok(());
                    }
                };
                self.elicit(id, elicitation, waits).await?;
            }
            _ => {
                debug!(method, "ACP request we do not serve");
                self.connection.respond(
                    &id,
                    Err(RpcError {
                        code: wire::METHOD_NOT_FOUND,
                        message: format!("{method} is not served"),
                        data: None,
                    }),
                );
            }
        }
        Ok(())
    }

    async fn elicit(&mut self, id: Id, elicitation: Elicitation, waits: &mut JoinSet<()>) -> Result<(), AgentError> {
        if elicitation.mode.as_deref().is_some_and(|mode| mode != "form") {
            self.connection.respond(&id, Ok(ElicitationAction::Decline.to_result()));
            return Ok(());
        }
        // The card hangs on the agent's tool call; a form of its own gets a call of its own,
        // named by the request (the same when it comes again through the host).
        let call_id = match elicitation.tool_call_id.clone() {
            Some(call) => call,
            None => format!("elicitation-{}-{id}", self.acp_session),
        };
        // A call of the form's own ends with it (it has no other end).
        let own_call = elicitation.tool_call_id.is_none();
        let form = Form::read(&elicitation.message, &elicitation.requested_schema);
        if let Some(outcome) = self.settled.remove(&call_id) {
            let action = action(outcome, &form);
            if own_call {
                self.sink.tool_result(&call_id, &action.in_words(), false).await?;
            }
            self.connection.respond(&id, Ok(action.to_result()));
            return Ok(());
        }
        if self.started.insert(call_id.clone()) {
            let message = self.message_id().await?;
            self.sink.tool_call_started(&message, &call_id, FORM_TOOL).await?;
        }
        // Unreadable: the card says why, and the agent is told the person declined.
        let args = match &form {
            Ok(form) => form.questions.clone(),
            Err(_) => json!({"message": elicitation.message, "requestedSchema": elicitation.requested_schema}),
        };
        if self.ready.insert(call_id.clone()) {
            self.sink.tool_call_ready(&call_id, args.clone()).await?;
        }
        let (sink, connection, cancel) = (self.sink.clone(), self.connection.clone(), self.waits_end.clone());
        let (open, parked, hosted) = (self.open.clone(), self.parked.clone(), self.hosted);
        open.lock().expect("open cards lock").insert(call_id.clone());
        waits.spawn(async move {
            let outcome = match &form {
                Ok(_) => sink.ask(&call_id, FORM_TOOL, &args, hosted, &cancel).await,
                Err(error) => sink.unreadable(&call_id, format!("this form cannot be shown: {error}")).await,
            };
            open.lock().expect("open cards lock").remove(&call_id);
            let outcome = match outcome {
                Err(AgentError::Parked) => return parked.notify_one(),
                outcome => outcome.unwrap_or_else(|error| cancelled(&error)),
            };
            let action = action(outcome, &form);
            if own_call {
                let _ = sink.tool_result(&call_id, &action.in_words(), false).await;
            }
            connection.respond(&id, Ok(action.to_result()));
        });
        Ok(())
    }

    /// Answers a request we cannot read with an error, and goes on.
    fn refuse(&self, id: &Id, why: &str) {
        warn!(why, "ACP request refused");
        self.connection.respond(id, Err(RpcError { code: wire::INVALID_PARAMS, message: why.to_string(), data: None }));
    }
}

/// The request of `approval`, as the person's words to the agent name it.
fn approval_in_words(approval: &crate::approval::Approval) -> String {
    match &approval.shows {
        crate::approval::Shows::Command { command } => format!("the command `{command}`"),
        _ => match &approval.description {
            Some(description) => format!("{} ({description})", approval.tool),
            None => approval.tool.clone(),
        },
    }
}

/// What the agent is told of its form: what the person chose, or why not.
fn action(outcome: InteractionOutcome, form: &Result<Form, String>) -> ElicitationAction {
    match (outcome, form) {
        (InteractionOutcome::Answered { answers }, Ok(form)) => ElicitationAction::Accept(form.content(&answers)),
        (InteractionOutcome::Cancelled { .. } | InteractionOutcome::Lost { .. }, _) => ElicitationAction::Cancel,
        // Skipped, not answered in time, or a form the card could not ask.
        _ => ElicitationAction::Decline,
    }
}

fn cancelled(error: &AgentError) -> InteractionOutcome {
    InteractionOutcome::Cancelled { reason: error.to_string() }
}

fn slash_commands(commands: Vec<wire::Command>) -> Vec<SlashCommand> {
    commands
        .into_iter()
        .map(|command| SlashCommand {
            name: command.name,
            description: command.description,
            argument_hint: String::new(),
        })
        .collect()
}

/// Answers every request the agent has sent and nobody read, `cancelled` (a turn that ended
/// under them).
pub async fn refuse_all(connection: &Connection) {
    let mut inbox = connection.inbox.lock().await;
    while let Ok(inbound) = inbox.try_recv() {
        let Inbound::Request { id, method, .. } = inbound else { continue };
        let answer = match method.as_str() {
            "session/request_permission" => Ok(wire::permission_outcome(None)),
            "elicitation/create" => Ok(ElicitationAction::Cancel.to_result()),
            _ => Err(RpcError { code: wire::INVALID_PARAMS, message: "the turn has ended".into(), data: None }),
        };
        connection.respond(&id, answer);
    }
}

/// The `/` commands in a `session/update`'s params, if it says them.
pub fn commands_in(params: Value) -> Option<Vec<SlashCommand>> {
    match serde_json::from_value::<SessionNotification>(params).ok()?.update {
        Update::AvailableCommandsUpdate { available_commands } => Some(slash_commands(available_commands)),
        _ => None,
    }
}
