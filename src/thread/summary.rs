//! A session as the session list shows it: its summary, where a terminal session runs, where the
//! list goes on after a page, and the one vocabulary for where a session stands.

use serde::{Deserialize, Serialize};

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
    /// Why a search found it: the words around the first match in its newest message that
    /// matches (search results only; `None` when the title matched, or in the list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched: Option<String>,
}

impl SessionSummary {
    /// Where the session stands; a terminal's as its `claude` last said (or ended), so that the
    /// header, the list and the cards say the same.
    pub fn status(&self) -> SessionStatus {
        match self.terminal.as_ref().map(|t| t.state) {
            Some(TerminalState::Ended) => SessionStatus::Ended,
            Some(TerminalState::Idle) if !self.waiting => SessionStatus::Ready,
            Some(_) => SessionStatus::of(true, self.waiting),
            None => SessionStatus::of(self.working, self.waiting),
        }
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
    /// When the state last changed (ms since the epoch): when it ended, for an ended one.
    #[serde(default)]
    pub state_at_ms: i64,
    /// The `claude` process, as its hook found it: how a server on the same machine tells that
    /// it exited without a word (`terminal::process`). The server's alone: never sent to a page
    /// (whose WASM would carry its decoder, docs/size.md).
    #[cfg(feature = "ssr")]
    #[serde(skip)]
    pub process: Option<ClaudeProcess>,
}

/// A process on one machine, told from any other: its pid, its start (clock ticks since boot,
/// `/proc/<pid>/stat` field 22) and the machine's boot id.
#[cfg(feature = "ssr")]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaudeProcess {
    pub pid: u32,
    pub start_ticks: u64,
    pub boot_id: String,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// A terminal's `claude` exited: nothing more comes.
    Ended,
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
            Self::Ended => "ended",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::Working => "Working",
            Self::WaitingForYou => "Waiting for you",
            Self::Paused => "Paused",
            Self::Ready => "Ready",
            Self::Ended => "Ended",
        }
    }

    /// What the label means, for screen readers and tooltips.
    pub fn explained(self) -> &'static str {
        match self {
            Self::Working => "Working: the agent is busy with your last message",
            Self::WaitingForYou => "Waiting for you: the agent asks you something and waits for your answer",
            Self::Paused => "Paused: the agent waits for your answer and is not running; your answer resumes it",
            Self::Ready => "Ready: the agent takes your next message",
            Self::Ended => "Ended: the terminal's claude has exited",
        }
    }
}
