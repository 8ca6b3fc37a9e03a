//! The events of a session's log: what is stored, replayed and streamed to every tab.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::PermissionMode;
use crate::interaction::{InteractionOutcome, InteractionRequest};
use crate::question::Question;

use super::message::Message;
use super::usage::Usage;

/// One entry of a session's append-only log. `seq` starts at 1 and has no gaps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionEvent {
    pub seq: u64,
    pub at_ms: i64,
    pub body: EventBody,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventBody {
    UserMessage {
        message_id: String,
        text: String,
        /// Files attached to it (issue 21), stored apart.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<super::attachment::AttachmentRef>,
    },
    Notice {
        message_id: String,
        text: String,
    },
    /// The person typed a message ahead, while the agent worked or waited for them: it waits
    /// in the session's queue until the next turn takes it (`TurnState::queue`).
    MessageQueued {
        message_id: String,
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<super::attachment::AttachmentRef>,
    },
    /// The person changed a message that waits in the queue.
    QueuedMessageEdited {
        message_id: String,
        text: String,
    },
    /// The person took a message back out of the queue.
    QueuedMessageRemoved {
        message_id: String,
    },
    /// The agent's turn for the person's messages (those queued since the last one).
    TurnStarted,
    /// A conversation the agent had before this session (a Claude Code session continued here):
    /// its messages as they were, finished, and the agent's own id for it, which the next turn
    /// resumes.
    HistoryImported {
        agent_session: String,
        messages: Vec<Message>,
    },
    /// The agent's turn starts again after it parked, to take the person's answers: a turn like
    /// any other, after which the messages the person sent meanwhile get theirs.
    ResumeStarted,
    /// The person or the agent changed the permission mode; `agent_mode` is the agent's own
    /// mode it is, for an agent that names its own (`AgentMode`).
    PermissionModeChanged {
        mode: PermissionMode,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_mode: Option<String>,
    },
    /// The person picked the model of the session's next turns (`None`: the agent's default).
    ModelChanged {
        model: Option<String>,
    },
    /// The agent's process started or stopped (it is paused or idle, and resumes when needed).
    AgentRunning {
        running: bool,
    },
    /// The agent process is up: what it is, and its id for the conversation (for resuming); and
    /// where its host listens, for an agent that outlives the server (an ACP agent's host): any
    /// server of this machine attaches there.
    AgentStarted {
        info: String,
        agent_session: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        host: Option<String>,
    },
    AssistantMessageStarted {
        message_id: String,
    },
    TextDelta {
        message_id: String,
        text: String,
    },
    ToolCallStarted {
        message_id: String,
        tool_use_id: String,
        name: String,
    },
    ToolInputDelta {
        tool_use_id: String,
        partial_json: String,
    },
    /// The questions readable so far in a question tool's streaming arguments, options included,
    /// worked out on the server (`question::normalize_partial`) so that the card fills in as the
    /// agent writes without the browser parsing partial JSON.
    ///
    /// Stored as what changed: the preview keeps its first `from` questions and `questions`
    /// follow them (a question grows at the end; those before it are whole). An event written
    /// before this had no `from`: it replaced the whole preview, as `from: 0` does.
    ToolInputPreview {
        tool_use_id: String,
        #[serde(default)]
        from: usize,
        questions: Vec<Question>,
    },
    ToolCallReady {
        tool_use_id: String,
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        output: String,
        is_error: bool,
    },
    /// The agent asks the person something through this tool call.
    InteractionOpened {
        tool_use_id: String,
        request: InteractionRequest,
        /// When it expires unless settled first (ms since the epoch), if a timeout applies.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        expires_at_ms: Option<i64>,
    },
    InteractionResolved {
        tool_use_id: String,
        outcome: InteractionOutcome,
    },
    /// The agent let go of a pending interaction: no process waits for it any more, the person's
    /// answer will resume the agent.
    InteractionParked {
        tool_use_id: String,
    },
    MessageFinished {
        message_id: String,
    },
    TurnEnded {
        outcome: TurnOutcome,
        usage: Option<Usage>,
    },
}

impl EventBody {
    /// A streamed piece of a message (text or tool arguments), stored as its event alone.
    pub fn is_delta(&self) -> bool {
        matches!(self, Self::TextDelta { .. } | Self::ToolInputDelta { .. })
    }

    /// An event of a tool call, from its start to its result: where a file keeps what streams, a
    /// message still streaming is not written for it (`Store::append_all`), and it is replayed
    /// onto the message's row on load.
    pub fn grows_a_tool_call(&self) -> bool {
        matches!(
            self,
            Self::ToolCallStarted { .. }
                | Self::ToolInputPreview { .. }
                | Self::ToolCallReady { .. }
                | Self::ToolResult { .. }
        )
    }

    /// Written by the agent's turn (its output, its requests, its start and end), rather than by
    /// the person or the product: where servers share the store, only the server that holds the
    /// session's lease may write these.
    pub fn is_agents(&self) -> bool {
        match self {
            Self::TurnStarted
            | Self::ResumeStarted
            | Self::AgentStarted { .. }
            | Self::AgentRunning { .. }
            | Self::AssistantMessageStarted { .. }
            | Self::TextDelta { .. }
            | Self::ToolCallStarted { .. }
            | Self::ToolInputDelta { .. }
            | Self::ToolInputPreview { .. }
            | Self::ToolCallReady { .. }
            | Self::ToolResult { .. }
            | Self::InteractionOpened { .. }
            | Self::InteractionParked { .. }
            | Self::MessageFinished { .. }
            | Self::TurnEnded { .. } => true,
            Self::UserMessage { .. }
            | Self::MessageQueued { .. }
            | Self::QueuedMessageEdited { .. }
            | Self::QueuedMessageRemoved { .. }
            | Self::Notice { .. }
            | Self::HistoryImported { .. }
            | Self::PermissionModeChanged { .. }
            | Self::ModelChanged { .. }
            | Self::InteractionResolved { .. } => false,
        }
    }

    /// The name stored in the log's `kind` column, for reading the log by hand.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::UserMessage { .. } => "user_message",
            Self::Notice { .. } => "notice",
            Self::MessageQueued { .. } => "message_queued",
            Self::QueuedMessageEdited { .. } => "queued_message_edited",
            Self::QueuedMessageRemoved { .. } => "queued_message_removed",
            Self::TurnStarted => "turn_started",
            Self::HistoryImported { .. } => "history_imported",
            Self::ResumeStarted => "resume_started",
            Self::AgentStarted { .. } => "agent_started",
            Self::AgentRunning { .. } => "agent_running",
            Self::PermissionModeChanged { .. } => "permission_mode_changed",
            Self::ModelChanged { .. } => "model_changed",
            Self::AssistantMessageStarted { .. } => "assistant_message_started",
            Self::TextDelta { .. } => "text_delta",
            Self::ToolCallStarted { .. } => "tool_call_started",
            Self::ToolInputDelta { .. } => "tool_input_delta",
            Self::ToolInputPreview { .. } => "tool_input_preview",
            Self::ToolCallReady { .. } => "tool_call_ready",
            Self::ToolResult { .. } => "tool_result",
            Self::InteractionOpened { .. } => "interaction_opened",
            Self::InteractionResolved { .. } => "interaction_resolved",
            Self::InteractionParked { .. } => "interaction_parked",
            Self::MessageFinished { .. } => "message_finished",
            Self::TurnEnded { .. } => "turn_ended",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnOutcome {
    Completed,
    /// The person pressed Stop.
    Interrupted,
    /// The agent failed; `error` says how, for a person.
    Failed {
        error: String,
    },
    /// The server stopped while the turn was running.
    Abandoned,
    /// The agent paused at a question or approval; the person's answer resumes it.
    Parked,
}

impl TurnOutcome {
    /// Why a question still open at the end of this turn will not be answered.
    pub fn cancel_reason(&self) -> String {
        match self {
            Self::Completed => "the agent finished without waiting for it",
            Self::Interrupted => "the turn was stopped",
            Self::Failed { .. } => "the agent failed",
            Self::Abandoned => "the server stopped",
            Self::Parked => "the agent paused",
        }
        .to_string()
    }
}
