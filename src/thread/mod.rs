//! The conversation model shared by the server and the browser.
//!
//! A session's thread is a fold of its event log: the server applies each event before storing
//! the changed message, the browser applies the same events as they stream in. One reducer, so
//! the page after a reload and the page that watched it live cannot disagree.

pub mod attachment;
mod event;
mod message;
mod offer;
mod usage;

pub use attachment::AttachmentRef;
pub use event::{EventBody, SessionEvent, TurnOutcome};
pub use message::{Block, Image, Message, Role, ToolCall, ToolStatus};
pub use offer::{AgentOffer, MAX_MODEL_CHARS, ModelChoice, SlashCommand, is_model_name};
pub use usage::{Usage, thousands};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::PermissionMode;
use crate::interaction::{Interaction, InteractionOutcome};

/// The sessions every tab's list follows, from its top: what the first load of `/` draws (the
/// list brings the older ones a page at a time as it is scrolled). 25 rather than 50: hydrating
/// 50 items cost the page 100–180 ms before the message box was usable (BENCHMARKS.md, daily).
pub const LIST_FIRST_PAGE: u32 = 25;

/// A session as the session list shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    pub id: String,
    pub title: String,
    pub agent: String,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    /// The agent is in the middle of a turn.
    pub working: bool,
    /// A question or approval waits for the person.
    #[serde(default)]
    pub waiting: bool,
    /// The folder the agent works in, when it is not the server's default.
    #[serde(default)]
    pub workdir: Option<String>,
    /// When the person last did something in it (created it, wrote, answered): the list's order,
    /// which the agent's own events (streaming, parking) do not change.
    #[serde(default)]
    pub active_at_ms: i64,
    /// Who runs a session AskBridge does not run: a `claude` in a terminal (DESIGN §7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal: Option<TerminalSummary>,
}

impl SessionSummary {
    pub fn status(&self) -> SessionStatus {
        SessionStatus::of(self.working, self.waiting)
    }

    /// Where the session list goes on after this session.
    pub fn cursor(&self) -> SessionCursor {
        SessionCursor { active_at_ms: self.active_at_ms, created_at_ms: self.created_at_ms, id: self.id.clone() }
    }

    /// A session whose agent runs in a terminal: it takes no messages here, only answers.
    pub fn is_terminal(&self) -> bool {
        self.agent == TERMINAL_AGENT
    }
}

/// The `agent` of a session that a `claude` in a terminal runs (`askbridge hook` brings it).
pub const TERMINAL_AGENT: &str = "terminal";

/// Where a terminal session runs, and what it does as its hooks last said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminalSummary {
    /// The machine's name, as the hook found it.
    pub host: String,
    /// The folder `claude` runs in.
    pub folder: String,
    /// Claude Code's own id for the conversation.
    pub claude_session_id: String,
    /// Its transcript on that host (`~/.claude/projects/…/<id>.jsonl`).
    #[serde(default)]
    pub transcript_path: Option<String>,
    pub state: TerminalState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TerminalState {
    /// Claude is working on the person's message.
    Working,
    /// The terminal waits for the person (a prompt or question is open there).
    Waiting,
    /// The turn ended; the terminal takes the next message.
    Idle,
    /// `claude` exited.
    Ended,
}

impl TerminalState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::Waiting => "waiting",
            Self::Idle => "idle",
            Self::Ended => "ended",
        }
    }

    /// The name as stored; an unknown one reads as idle.
    pub fn parse(name: &str) -> Self {
        match name {
            "working" => Self::Working,
            "waiting" => Self::Waiting,
            "ended" => Self::Ended,
            _ => Self::Idle,
        }
    }
}

/// A place in the session list (which runs by the person's activity, newest first): the last
/// session a page showed; the next page starts after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionCursor {
    pub active_at_ms: i64,
    pub created_at_ms: i64,
    pub id: String,
}

/// Where a session stands, in the one vocabulary the header, the session list and the cards
/// share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionStatus {
    /// The agent is in the middle of a turn.
    Working,
    /// The agent runs and waits for the person's answer or decision.
    WaitingForYou,
    /// Something waits for the person and no agent runs for it: it let go (parked), and the
    /// answer resumes it.
    Paused,
    /// Nothing runs and nothing waits: the session takes a message.
    Ready,
}

impl SessionStatus {
    pub fn of(working: bool, waiting: bool) -> Self {
        match (working, waiting) {
            (true, true) => Self::WaitingForYou,
            (false, true) => Self::Paused,
            (true, false) => Self::Working,
            (false, false) => Self::Ready,
        }
    }

    /// For styles (`data-status`).
    pub fn key(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::WaitingForYou => "waiting",
            Self::Paused => "paused",
            Self::Ready => "ready",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::Working => "Working",
            Self::WaitingForYou => "Waiting for you",
            Self::Paused => "Paused",
            Self::Ready => "Ready",
        }
    }

    /// What the label means, for screen readers and tooltips.
    pub fn explained(self) -> &'static str {
        match self {
            Self::Working => "Working: the agent is busy with your last message",
            Self::WaitingForYou => "Waiting for you: the agent asks you something and waits for your answer",
            Self::Paused => "Paused: the agent waits for your answer and is not running; your answer resumes it",
            Self::Ready => "Ready: the agent takes your next message",
        }
    }
}

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
    pub turn: bool,
    /// The tool_use ids of the interactions that opened or changed.
    pub interactions: Vec<String>,
}

impl Change {
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty() && !self.turn && self.interactions.is_empty()
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
                self.turn.queued_messages.push(message_id.clone());
                let change = self.push(Message::from_person(message_id, text, attachments, at_ms));
                Change { turn: true, ..change }
            }
            EventBody::MessageQueued { message_id, text, attachments } => {
                self.turn.queue.push(QueuedMessage {
                    id: message_id.clone(),
                    text: text.clone(),
                    attachments: attachments.clone(),
                    queued_at_ms: at_ms,
                });
                Change::turn()
            }
            EventBody::QueuedMessageEdited { message_id, text } => {
                if let Some(queued) = self.turn.queue.iter_mut().find(|queued| queued.id == *message_id) {
                    queued.text = text.clone();
                }
                Change::turn()
            }
            EventBody::QueuedMessageRemoved { message_id } => {
                self.turn.queue.retain(|queued| queued.id != *message_id);
                Change::turn()
            }
            EventBody::Notice { message_id, text } => self.push(Message {
                id: message_id.clone(),
                role: Role::Notice,
                blocks: vec![Block::Text { text: text.clone() }],
                streaming: false,
                created_at_ms: at_ms,
                usage: None,
            }),
            EventBody::HistoryImported { agent_session, messages } => {
                self.turn.agent_session = Some(agent_session.clone());
                let first = self.messages.len();
                self.messages.extend(messages.iter().cloned());
                Change { messages: (first..self.messages.len()).collect(), turn: true, interactions: Vec::new() }
            }
            EventBody::AgentStarted { info, agent_session } => {
                self.turn.agent_info = Some(info.clone());
                if agent_session.is_some() {
                    self.turn.agent_session = agent_session.clone();
                }
                Change::turn()
            }
            EventBody::AgentRunning { running } => {
                self.turn.agent_running = Some(*running);
                Change::turn()
            }
            EventBody::PermissionModeChanged { mode } => {
                self.turn.permission_mode = Some(*mode);
                Change::turn()
            }
            EventBody::ModelChanged { model } => {
                self.turn.model = model.clone();
                Change::turn()
            }
            EventBody::TurnStarted => {
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
            EventBody::ResumeStarted => {
                self.turn.working = true;
                self.turn.last_outcome = None;
                self.turn.resumed = true;
                Change::turn()
            }
            EventBody::AssistantMessageStarted { message_id } => self.push(Message {
                id: message_id.clone(),
                role: Role::Assistant,
                blocks: Vec::new(),
                streaming: true,
                created_at_ms: at_ms,
                usage: None,
            }),
            EventBody::TextDelta { message_id, text } => {
                self.with_message(message_id, |message| match message.blocks.last_mut() {
                    Some(Block::Text { text: last }) => last.push_str(text),
                    _ => message.blocks.push(Block::Text { text: text.clone() }),
                })
            }
            EventBody::ToolCallStarted { message_id, tool_use_id, name } => self.with_message(message_id, |message| {
                message.blocks.push(Block::ToolCall(ToolCall {
                    id: tool_use_id.clone(),
                    name: name.clone(),
                    input: None,
                    partial_input: String::new(),
                    preview: Vec::new(),
                    status: ToolStatus::Streaming,
                    result: None,
                    interaction: None,
                }))
            }),
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
            EventBody::InteractionOpened { tool_use_id, request, expires_at_ms } => self
                .with_tool_call(tool_use_id, |call| {
                    call.interaction = Some(Interaction::expiring(request.clone(), *expires_at_ms));
                    call.preview.clear();
                })
                .interaction(tool_use_id),
            EventBody::InteractionParked { tool_use_id } => self
                .with_tool_call(tool_use_id, |call| {
                    if let Some(interaction) = call.interaction.as_mut().filter(|i| i.is_pending()) {
                        interaction.parked = true;
                    }
                })
                .interaction(tool_use_id),
            EventBody::InteractionResolved { tool_use_id, outcome } => self
                .with_tool_call(tool_use_id, |call| {
                    if let Some(interaction) = &mut call.interaction {
                        interaction.outcome = Some(outcome.clone());
                    }
                })
                .interaction(tool_use_id),
            EventBody::MessageFinished { message_id } => {
                self.with_message(message_id, |message| message.streaming = false)
            }
            EventBody::TurnEnded { outcome, usage } => {
                self.turn.working = false;
                self.turn.last_outcome = Some(outcome.clone());
                self.turn.last_usage = usage.clone();
                if let Some(cost) = usage.as_ref().and_then(|u| u.cost_usd) {
                    self.turn.total_cost_usd = Some(self.turn.total_cost_usd.unwrap_or(0.0) + cost);
                }
                let mut change = Change::turn();
                if let Some(usage) = usage {
                    let total = self.turn.total_usage.take().unwrap_or_default();
                    self.turn.total_usage = Some(total.plus(usage));
                    // Shown under the turn's last reply.
                    if let Some(index) = self.messages.iter().rposition(|m| m.role == Role::Assistant) {
                        self.messages[index].usage = Some(usage.clone());
                        change.messages.push(index);
                    }
                }
                // Nothing streams, runs or waits for the person past the end of its turn, but
                // for a parked interaction: it outlives its turn, and its answer starts the next.
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
                            interaction.outcome =
                                Some(InteractionOutcome::Cancelled { reason: outcome.cancel_reason() });
                            change.interactions.push(call.id.clone());
                            changed = true;
                        }
                    }
                    if changed && !change.messages.contains(&index) {
                        change.messages.push(index);
                    }
                }
                change
            }
        }
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

    /// The position of the message a delta event grows, if it is in the thread.
    pub fn delta_target(&self, body: &EventBody) -> Option<usize> {
        match body {
            EventBody::TextDelta { message_id, .. } => self.messages.iter().rposition(|m| m.id == *message_id),
            EventBody::ToolInputDelta { tool_use_id, .. } => self
                .messages
                .iter()
                .rposition(|m| m.blocks.iter().any(|b| matches!(b, Block::ToolCall(call) if call.id == *tool_use_id))),
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

#[cfg(test)]
mod tests;
