//! The conversation model shared by the server and the browser.
//!
//! A session's thread is a fold of its event log: the server applies each event before storing
//! the changed message, the browser applies the same events as they stream in. One reducer, so
//! the page after a reload and the page that watched it live cannot disagree.

pub mod attachment;
mod event;
mod message;
mod offer;
mod summary;
mod title;
mod usage;

pub use attachment::AttachmentRef;
pub use event::{EventBody, SessionEvent, TurnOutcome};
pub use message::{Block, Image, Message, Role, ToolCall, ToolStatus};
pub use offer::{AgentMode, AgentOffer, MAX_MODEL_CHARS, ModelChoice, SlashCommand, is_model_name};
#[cfg(feature = "ssr")]
pub use summary::ClaudeProcess;
pub use summary::{
    LIST_FIRST_PAGE, SessionCursor, SessionStatus, SessionSummary, TERMINAL_AGENT, TerminalState, TerminalSummary,
};
pub use title::title_from_message;
pub use usage::{Usage, thousands};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::PermissionMode;
use crate::interaction::{Interaction, InteractionOutcome, InteractionRequest};

/// What the session's agent is doing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnState {
    pub working: bool,
    /// The last turn's outcome, once it ended.
    pub last_outcome: Option<TurnOutcome>,
    pub last_usage: Option<Usage>,
    /// What the agent said about itself (version, model, mode), for the session header.
    #[serde(default)]
    pub agent_info: Option<String>,
    /// The agent's own id for this conversation, to resume it after a restart.
    #[serde(default)]
    pub agent_session: Option<String>,
    /// The session's permission mode (Claude Code's names), once set.
    #[serde(default)]
    pub permission_mode: Option<PermissionMode>,
    /// Where the agent's host listens, for an agent that outlives the server (`AgentStarted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_host: Option<String>,
    /// The agent's own mode that `permission_mode` is, for an agent that names its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_mode: Option<String>,
    /// The model the person picked for the session's next turns (`None`: the agent's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// What the session's turns have cost so far, summed from their usage, for the header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_cost_usd: Option<f64>,
    /// What every turn of the session has used so far, and how full the context was last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_usage: Option<Usage>,
    /// Whether the agent's process runs, for agents that have one (`None`: no process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_running: Option<bool>,
    /// The person's messages that no turn has taken yet (their ids): between a message and the
    /// start of its turn, and while a parked agent's answers are taken first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queued_messages: Vec<String>,
    /// The messages the person typed ahead, while the agent worked or waited for them: not in
    /// the thread yet, editable and removable, until the next turn takes them (in this order).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queue: Vec<QueuedMessage>,
    /// The turn that runs (or ran last) resumed a parked agent with the person's answers. One
    /// cut short (the server died) goes on at the next start, even when the agent had its
    /// answers already: an accepted answer is always acted on.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resumed: bool,
}

/// A message typed ahead (`TurnState::queue`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueuedMessage {
    pub id: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<AttachmentRef>,
    pub queued_at_ms: i64,
}

impl QueuedMessage {
    fn new(id: &str, text: &str, attachments: &[AttachmentRef], queued_at_ms: i64) -> Self {
        Self { id: id.to_string(), text: text.to_string(), attachments: attachments.to_vec(), queued_at_ms }
    }
}

/// A session's thread at a point of its event log.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Thread {
    pub messages: Vec<Message>,
    pub turn: TurnState,
    /// The sequence number of the last event applied; live events continue after it.
    pub seq: u64,
}

/// What the person does to the messages they typed ahead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum QueueChange {
    /// Says `text` instead.
    Edit { message_id: String, text: String },
    /// Is not sent.
    Remove { message_id: String },
    /// Sends the queue now: what waits after a turn the person stopped.
    SendNow,
}

/// The turn a session's agent owes the person (`Thread::next_turn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextTurn {
    /// The agent parked and the person settled what it asked: it resumes with the outcomes.
    Resume,
    /// The person's queued messages get their turn.
    Messages,
}

/// What an event changed, so that the caller stores (or re-renders) only that.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Change {
    /// Positions of the messages that changed; a message's position never changes.
    pub messages: Vec<usize>,
    /// Positions of the messages whose usage changed (a turn's end puts it under the turn's last
    /// reply): stored apart from the message, so that a reply is not written again for it.
    pub usage: Vec<usize>,
    pub turn: bool,
    /// The tool_use ids of the interactions that opened or changed.
    pub interactions: Vec<String>,
}

impl Change {
    /// Every message the event changed in any way, its usage alone included: what a page draws
    /// again.
    pub fn shown_messages(&self) -> impl Iterator<Item = usize> + '_ {
        self.messages.iter().chain(self.usage.iter().filter(|i| !self.messages.contains(i))).copied()
    }

    pub fn is_empty(&self) -> bool {
        self.messages.is_empty() && self.usage.is_empty() && !self.turn && self.interactions.is_empty()
    }

    fn message(index: usize) -> Self {
        Self { messages: vec![index], ..Self::default() }
    }

    fn turn() -> Self {
        Self { turn: true, ..Self::default() }
    }

    fn interaction(mut self, tool_use_id: &str) -> Self {
        if !self.messages.is_empty() {
            self.interactions.push(tool_use_id.to_string());
        }
        self
    }
}

impl Thread {
    /// Applies one event. Events at or below `self.seq` were applied already and change nothing,
    /// so replaying an overlapping range is harmless.
    pub fn apply(&mut self, event: &SessionEvent) -> Change {
        if event.seq <= self.seq {
            return Change::default();
        }
        self.seq = event.seq;
        self.apply_body(&event.body, event.at_ms)
    }

    fn apply_body(&mut self, body: &EventBody, at_ms: i64) -> Change {
        match body {
            EventBody::UserMessage { message_id, text, attachments } => {
                self.receive_message(message_id, text, attachments, at_ms)
            }
            EventBody::MessageQueued { message_id, text, attachments } => self.with_turn(|turn| {
                let queued = QueuedMessage::new(message_id, text, attachments, at_ms);
                turn.queue.push(queued)
            }),
            EventBody::QueuedMessageEdited { message_id, text } => self.with_turn(|turn| {
                if let Some(queued) = turn.queue.iter_mut().find(|queued| queued.id == *message_id) {
                    queued.text = text.clone();
                }
            }),
            EventBody::QueuedMessageRemoved { message_id } => {
                self.with_turn(|turn| turn.queue.retain(|queued| queued.id != *message_id))
            }
            EventBody::Notice { message_id, text } => self.push(Message::notice(message_id, text, at_ms)),
            EventBody::HistoryImported { agent_session, messages } => self.import_history(agent_session, messages),
            EventBody::AgentStarted { info, agent_session, host } => self.with_turn(|turn| {
                turn.agent_info = Some(info.clone());
                turn.agent_host = host.clone();
                if agent_session.is_some() {
                    turn.agent_session = agent_session.clone();
                }
            }),
            EventBody::AgentRunning { running } => self.with_turn(|turn| turn.agent_running = Some(*running)),
            EventBody::PermissionModeChanged { mode, agent_mode } => self.with_turn(|turn| {
                turn.permission_mode = Some(*mode);
                turn.agent_mode = agent_mode.clone();
            }),
            EventBody::ModelChanged { model } => self.with_turn(|turn| turn.model = model.clone()),
            EventBody::TurnStarted => self.start_turn(),
            EventBody::ResumeStarted => self.with_turn(|turn| {
                turn.working = true;
                turn.last_outcome = None;
                turn.resumed = true;
            }),
            EventBody::AssistantMessageStarted { message_id } => self.push(Message::reply(message_id, at_ms)),
            EventBody::TextDelta { message_id, text } => self.append_text(message_id, text),
            EventBody::ToolCallStarted { message_id, tool_use_id, name } => {
                self.start_tool_call(message_id, tool_use_id, name)
            }
            EventBody::ToolInputDelta { tool_use_id, partial_json } => {
                self.with_tool_call(tool_use_id, |call| call.partial_input.push_str(partial_json))
            }
            EventBody::ToolInputPreview { tool_use_id, from, questions } => self.with_tool_call(tool_use_id, |call| {
                call.preview.truncate(*from);
                call.preview.extend(questions.iter().cloned());
            }),
            // A question's preview stays until its card opens: the card keeps showing the options
            // it has, and opening it (with the same questions, read from the same arguments) then
            // changes only its state.
            EventBody::ToolCallReady { tool_use_id, input } => self.with_tool_call(tool_use_id, |call| {
                call.input = Some(input.clone());
                call.partial_input.clear();
                call.status = ToolStatus::Running;
            }),
            EventBody::ToolResult { tool_use_id, output, is_error } => self.with_tool_call(tool_use_id, |call| {
                call.result = Some(output.clone());
                call.status = if *is_error { ToolStatus::Failed } else { ToolStatus::Done };
            }),
            EventBody::InteractionOpened { tool_use_id, request, expires_at_ms } => {
                self.open_interaction(tool_use_id, request, *expires_at_ms)
            }
            EventBody::InteractionParked { tool_use_id } => self.park_interaction(tool_use_id),
            EventBody::InteractionResolved { tool_use_id, outcome } => self.resolve_interaction(tool_use_id, outcome),
            EventBody::MessageFinished { message_id } => {
                self.with_message(message_id, |message| message.streaming = false)
            }
            EventBody::TurnEnded { outcome, usage } => self.end_turn(outcome, usage.as_ref()),
        }
    }

    /// The person's message joins the thread, waiting for the turn that takes it.
    fn receive_message(&mut self, message_id: &str, text: &str, attachments: &[AttachmentRef], at_ms: i64) -> Change {
        self.turn.queued_messages.push(message_id.to_string());
        let change = self.push(Message::from_person(message_id, text, attachments, at_ms));
        Change { turn: true, ..change }
    }

    /// A conversation the agent had before this session joins the thread, as it was.
    fn import_history(&mut self, agent_session: &str, messages: &[Message]) -> Change {
        self.turn.agent_session = Some(agent_session.to_string());
        let first = self.messages.len();
        self.messages.extend(messages.iter().cloned());
        Change { messages: (first..self.messages.len()).collect(), ..Change::turn() }
    }

    fn start_turn(&mut self) -> Change {
        self.turn.working = true;
        self.turn.last_outcome = None;
        self.turn.resumed = false;
        self.turn.queued_messages.clear();
        // What was typed ahead joins the thread where its turn starts.
        let first = self.messages.len();
        for queued in std::mem::take(&mut self.turn.queue) {
            let QueuedMessage { id, text, attachments, queued_at_ms } = queued;
            self.messages.push(Message::from_person(&id, &text, &attachments, queued_at_ms));
        }
        Change { messages: (first..self.messages.len()).collect(), ..Change::turn() }
    }

    fn append_text(&mut self, message_id: &str, text: &str) -> Change {
        self.with_message(message_id, |message| match message.blocks.last_mut() {
            Some(Block::Text { text: last }) => last.push_str(text),
            _ => push_block(&mut message.blocks, Block::Text { text: text.to_string() }),
        })
    }

    fn start_tool_call(&mut self, message_id: &str, tool_use_id: &str, name: &str) -> Change {
        self.with_message(message_id, |message| {
            let call = ToolCall {
                id: tool_use_id.to_string(),
                name: name.to_string(),
                input: None,
                partial_input: String::new(),
                preview: Vec::new(),
                status: ToolStatus::Streaming,
                result: None,
                interaction: None,
            };
            push_block(&mut message.blocks, Block::ToolCall(call))
        })
    }

    fn open_interaction(
        &mut self,
        tool_use_id: &str,
        request: &InteractionRequest,
        expires_at_ms: Option<i64>,
    ) -> Change {
        self.with_tool_call(tool_use_id, |call| {
            call.interaction = Some(Interaction::expiring(request.clone(), expires_at_ms));
            call.preview.clear();
        })
        .interaction(tool_use_id)
    }

    fn park_interaction(&mut self, tool_use_id: &str) -> Change {
        self.with_tool_call(tool_use_id, |call| {
            if let Some(interaction) = call.interaction.as_mut().filter(|i| i.is_pending()) {
                interaction.parked = true;
            }
        })
        .interaction(tool_use_id)
    }

    fn resolve_interaction(&mut self, tool_use_id: &str, outcome: &InteractionOutcome) -> Change {
        self.with_tool_call(tool_use_id, |call| {
            if let Some(interaction) = &mut call.interaction {
                interaction.outcome = Some(outcome.clone());
            }
        })
        .interaction(tool_use_id)
    }

    fn end_turn(&mut self, outcome: &TurnOutcome, usage: Option<&Usage>) -> Change {
        self.turn.working = false;
        self.turn.last_outcome = Some(outcome.clone());
        self.turn.last_usage = usage.cloned();
        let mut change = Change::turn();
        if let Some(usage) = usage {
            self.add_usage(usage, &mut change);
        }
        self.cancel_what_outlived_its_turn(outcome, &mut change);
        change
    }

    /// Adds a turn's usage to the session's totals, and shows it under the turn's last reply.
    fn add_usage(&mut self, usage: &Usage, change: &mut Change) {
        if let Some(cost) = usage.cost_usd {
            self.turn.total_cost_usd = Some(self.turn.total_cost_usd.unwrap_or(0.0) + cost);
        }
        let total = self.turn.total_usage.take().unwrap_or_default();
        self.turn.total_usage = Some(total.plus(usage));
        // Shown under the turn's last reply.
        if let Some(index) = self.messages.iter().rposition(|m| m.role == Role::Assistant) {
            self.messages[index].usage = Some(usage.clone());
            change.usage.push(index);
        }
    }

    /// Nothing streams, runs or waits for the person past the end of its turn, but for a parked
    /// interaction: it outlives its turn, and its answer starts the next.
    fn cancel_what_outlived_its_turn(&mut self, outcome: &TurnOutcome, change: &mut Change) {
        for (index, message) in self.messages.iter_mut().enumerate() {
            let mut changed = std::mem::replace(&mut message.streaming, false);
            for block in &mut message.blocks {
                let Block::ToolCall(call) = block else { continue };
                let parked = call.interaction.as_ref().is_some_and(|i| i.is_pending() && i.parked);
                if !call.status.is_finished() && !parked {
                    call.status = ToolStatus::Cancelled;
                    changed = true;
                }
                if let Some(interaction) = &mut call.interaction
                    && interaction.is_pending()
                    && !parked
                {
                    interaction.outcome = Some(InteractionOutcome::Cancelled { reason: outcome.cancel_reason() });
                    change.interactions.push(call.id.clone());
                    changed = true;
                }
            }
            if changed && !change.messages.contains(&index) {
                change.messages.push(index);
            }
        }
    }

    fn with_turn(&mut self, change: impl FnOnce(&mut TurnState)) -> Change {
        change(&mut self.turn);
        Change::turn()
    }

    fn push(&mut self, message: Message) -> Change {
        self.messages.push(message);
        Change::message(self.messages.len() - 1)
    }

    fn with_message(&mut self, id: &str, change: impl FnOnce(&mut Message)) -> Change {
        // The message being changed is nearly always the last one.
        match self.messages.iter().rposition(|message| message.id == id) {
            Some(index) => {
                change(&mut self.messages[index]);
                Change::message(index)
            }
            None => Change::default(),
        }
    }

    /// The tool call `tool_use_id`, wherever it is in the thread.
    pub fn tool_call(&self, tool_use_id: &str) -> Option<&ToolCall> {
        self.messages.iter().rev().flat_map(|m| m.blocks.iter()).find_map(|block| match block {
            Block::ToolCall(call) if call.id == tool_use_id => Some(call),
            _ => None,
        })
    }

    /// The position of the message an event that is replayed onto stored rows changes (a streamed
    /// piece, a tool call's event: `Store::load_thread`), if it is in the thread.
    pub fn replay_target(&self, body: &EventBody) -> Option<usize> {
        let with_call = |tool_use_id: &str| {
            self.messages
                .iter()
                .rposition(|m| m.blocks.iter().any(|b| matches!(b, Block::ToolCall(call) if call.id == *tool_use_id)))
        };
        match body {
            EventBody::TextDelta { message_id, .. } | EventBody::ToolCallStarted { message_id, .. } => {
                self.messages.iter().rposition(|m| m.id == *message_id)
            }
            EventBody::ToolInputDelta { tool_use_id, .. }
            | EventBody::ToolInputPreview { tool_use_id, .. }
            | EventBody::ToolCallReady { tool_use_id, .. }
            | EventBody::ToolResult { tool_use_id, .. } => with_call(tool_use_id),
            _ => None,
        }
    }

    /// Whether a question or approval waits for the person.
    pub fn is_waiting(&self) -> bool {
        self.messages
            .iter()
            .flat_map(|m| m.blocks.iter())
            .any(|block| matches!(block, Block::ToolCall(ToolCall { interaction: Some(i), .. }) if i.is_pending()))
    }

    /// Whether the agent parked and everything it left is settled, with the outcome not yet
    /// delivered (no tool result): then it is time to resume it.
    pub fn is_ready_to_resume(&self) -> bool {
        let mut parked_and_settled = false;
        for block in self.messages.iter().flat_map(|m| m.blocks.iter()) {
            let Block::ToolCall(call) = block else { continue };
            match &call.interaction {
                Some(interaction) if interaction.is_pending() => return false,
                Some(interaction) if interaction.parked && call.result.is_none() => parked_and_settled = true,
                _ => {}
            }
        }
        parked_and_settled && !self.turn.working
    }

    /// A resume the server's end cut short, after the agent had the person's answers (their
    /// results are in the thread): it goes on from where it was.
    fn resume_cut_short(&self) -> bool {
        self.turn.resumed && matches!(self.turn.last_outcome, Some(TurnOutcome::Abandoned)) && !self.is_waiting()
    }

    /// The person's messages no turn has taken yet, in order: those in the thread (sent when the
    /// agent could take them, their turn not started yet) and those typed ahead.
    fn waiting_messages(&self) -> impl Iterator<Item = (String, Vec<AttachmentRef>)> + '_ {
        let queued = &self.turn.queued_messages;
        let sent = self
            .messages
            .iter()
            .filter(|message| message.role == Role::User && queued.contains(&message.id))
            .map(|message| (message.text(), message.attachments()));
        let typed_ahead = self.turn.queue.iter().map(|queued| (queued.text.clone(), queued.attachments.clone()));
        sent.chain(typed_ahead)
    }

    /// What the person's queued messages say, for the turn that takes them (`None`: none queued).
    pub fn queued_text(&self) -> Option<String> {
        let texts: Vec<String> = self.waiting_messages().map(|(text, _)| text).collect();
        (!texts.is_empty()).then(|| texts.join("\n\n"))
    }

    /// The files attached to the queued messages, in order: the next turn's.
    pub fn queued_attachments(&self) -> Vec<AttachmentRef> {
        self.waiting_messages().flat_map(|(_, files)| files).collect()
    }

    /// Whether a message of the person's waits for a turn (sent, or typed ahead).
    pub fn has_queued(&self) -> bool {
        !self.turn.queued_messages.is_empty() || !self.turn.queue.is_empty()
    }

    /// Whether a message sent now waits in the queue rather than starting a turn: the agent
    /// works, waits for the person, has their answers to take first, or earlier messages wait.
    pub fn queues_messages(&self) -> bool {
        self.turn.working || self.is_waiting() || self.is_ready_to_resume() || !self.turn.queue.is_empty()
    }

    /// What the session's agent should do next, when no turn runs: take the person's answers
    /// first (a parked agent whose interactions are all settled), then their queued messages
    /// (unless something waits for the person: the answer goes first). The messages typed ahead
    /// of a turn the person stopped wait for their word (`next_turn_on_request`): Stop stops what
    /// they had lined up too.
    pub fn next_turn(&self) -> Option<NextTurn> {
        let held = matches!(self.turn.last_outcome, Some(TurnOutcome::Interrupted));
        self.next_turn_if(!self.turn.queued_messages.is_empty() || (!self.turn.queue.is_empty() && !held))
    }

    /// `next_turn`, when the person asks for it (a message sent, or "Send now"): what they typed
    /// ahead goes too.
    pub fn next_turn_on_request(&self) -> Option<NextTurn> {
        self.next_turn_if(self.has_queued())
    }

    fn next_turn_if(&self, messages_wait: bool) -> Option<NextTurn> {
        if self.turn.working {
            None
        } else if self.is_ready_to_resume() || self.resume_cut_short() {
            Some(NextTurn::Resume)
        } else if messages_wait && !self.is_waiting() {
            Some(NextTurn::Messages)
        } else {
            None
        }
    }

    fn with_tool_call(&mut self, tool_use_id: &str, change: impl FnOnce(&mut ToolCall)) -> Change {
        for (index, message) in self.messages.iter_mut().enumerate().rev() {
            for block in &mut message.blocks {
                if let Block::ToolCall(call) = block
                    && call.id == tool_use_id
                {
                    change(call);
                    return Change::message(index);
                }
            }
        }
        Change::default()
    }
}

/// The text shown on a tool card's header: the argument a person would look for first.
pub fn summarize_tool_input(name: &str, input: &Value) -> String {
    const PREFERRED: &[&str] = &["command", "file_path", "path", "url", "pattern", "query", "description", "prompt"];
    let preferred = match name {
        "Bash" => Some("command"),
        "Read" | "Write" | "Edit" | "NotebookEdit" => Some("file_path"),
        "WebFetch" => Some("url"),
        "WebSearch" => Some("query"),
        "Grep" | "Glob" => Some("pattern"),
        _ => None,
    };
    let Some(object) = input.as_object() else {
        return one_line(&input.to_string());
    };
    let value = preferred
        .and_then(|key| object.get(key))
        .or_else(|| PREFERRED.iter().find_map(|key| object.get(*key)))
        .or_else(|| object.values().find(|value| value.is_string()));
    match value {
        Some(Value::String(text)) => one_line(text),
        Some(other) => one_line(&other.to_string()),
        None if object.is_empty() => String::new(),
        None => one_line(&Value::Object(object.clone()).to_string()),
    }
}

fn one_line(text: &str) -> String {
    const MAX: usize = 120;
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > MAX {
        let cut: String = line.chars().take(MAX - 1).collect();
        format!("{cut}…")
    } else {
        line
    }
}

/// Adds a block to a message's. A message has a few blocks, and each is large (a tool call is
/// 440 bytes): a vector's first growth makes room for four, 1.3 KiB more than one needs, which a
/// session waiting on its question holds as long as it waits. The first four are held exactly.
fn push_block(blocks: &mut Vec<Block>, block: Block) {
    if blocks.len() == blocks.capacity() && blocks.len() < 4 {
        blocks.reserve_exact(1);
    }
    blocks.push(block);
}

#[cfg(test)]
mod tests;
