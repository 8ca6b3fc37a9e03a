//! The agents AskBridge drives, behind one trait.
//!
//! A backend turns a person's message into a turn: streamed text, tool calls with their arguments
//! and results, reported through its output port, a [`TurnSink`]. Backends never talk to the
//! browser or the store: the session implements the sink (it stores and broadcasts each event,
//! and puts questions and approvals to the person through the bridge), and tests use a
//! [`RecordingSink`].

pub mod acp;
pub mod anthropic;
pub mod claude;
mod environment;
mod error;
pub mod messages_api;
mod process_tree;
pub mod recording;
mod registry;
pub mod scripted;
mod sink;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::approval::PermissionMode;
use std::collections::HashMap;
use std::sync::Arc;

use crate::thread::{AgentMode, AttachmentRef, Message, ModelChoice, SlashCommand, Usage};

pub use environment::{AgentEnv, AgentEnvError, SESSION_MARKER};
pub use error::AgentError;
pub use process_tree::hang_up_session;
pub use recording::RecordingSink;
pub use registry::Agents;
pub use sink::{Sink, TurnSink};

/// The words that take a resumed agent on when it has nothing new to answer (a resume cut short
/// after it had the person's answers): what Claude Code itself adds after a parked call's answer
/// (protocol §12).
pub const CONTINUE: &str = "Continue from where you left off.";

/// What a backend gets to run one turn.
pub struct TurnRequest {
    pub session_id: String,
    /// The session's agent (its `name`): which backend of [`Agents`] runs the turn.
    pub agent: String,
    /// The model the session picked; `None`: the agent's default (`--model`, or its own).
    pub model: Option<String>,
    /// The person's message; empty when the turn resumes.
    pub text: String,
    /// The turn starts because the person settled what a parked turn left waiting (the outcomes
    /// are in `history`), not with a message.
    pub resume: bool,
    /// The thread before this message, for backends that resend the conversation.
    pub history: Vec<Message>,
    /// The agent's own id for this conversation, from an earlier turn (to resume it).
    pub agent_session: Option<String>,
    /// The folder chosen for this session, if not the agent's default.
    pub workdir: Option<std::path::PathBuf>,
    /// The session's permission mode, if set.
    pub permission_mode: Option<PermissionMode>,
    /// The agent's own mode the session chose, for an agent that names its own ([`AgentMode`]).
    pub agent_mode: Option<String>,
    /// Where the session's agent's host listens, if it was started under one (an ACP agent's):
    /// it may have outlived the server that started it, on this machine.
    pub agent_host: Option<std::path::PathBuf>,
    /// Cancelled when the person presses Stop; the backend should wind down promptly.
    pub cancel: CancellationToken,
    /// Files attached to this turn's messages, and the bytes of those the backend needs.
    pub attachments: TurnAttachments,
}

/// The files of a turn (issue 21): those attached to the messages it answers (`new`, in order),
/// and the bytes of every file the backend is to send, by hash: the new ones, and for a backend
/// that resends the conversation ([`AgentBackend::resends_history`]) those in `history` too.
#[derive(Debug, Clone, Default)]
pub struct TurnAttachments {
    pub new: Vec<AttachmentRef>,
    pub bytes: HashMap<String, Arc<[u8]>>,
}

pub trait AgentBackend: Send + Sync + 'static {
    /// The name people pick with `--agent`, also stored with each session.
    fn name(&self) -> &'static str;

    /// What people call it, on the new-session page.
    fn label(&self) -> &'static str {
        self.name()
    }

    /// The names of the agents behind this one: several for [`Agents`], else this one's.
    fn names(&self) -> Vec<&'static str> {
        vec![self.name()]
    }

    /// The agent called `name`, when this one stands for several ([`Agents`]); `None`: this one.
    fn backend(&self, name: &str) -> Option<&dyn AgentBackend> {
        let _ = name;
        None
    }

    /// The models a session can pick, as the agent lists them (cached by the agent).
    fn models(&self) -> BoxFuture<'_, Vec<ModelChoice>> {
        Box::pin(async { Vec::new() })
    }

    /// The `/` commands the agent takes in `workdir` (its default folder when `None`).
    fn commands<'a>(&'a self, workdir: Option<&'a std::path::Path>) -> BoxFuture<'a, Vec<SlashCommand>> {
        let _ = workdir;
        Box::pin(async { Vec::new() })
    }

    /// The person picked the session's model (`None`: the default): a running agent switches
    /// now, or says why it cannot; one that does not run takes it at its next turn.
    fn set_model<'a>(&'a self, session: &'a str, model: Option<&'a str>) -> BoxFuture<'a, Result<(), String>> {
        let _ = (session, model);
        Box::pin(async { Ok(()) })
    }

    fn run_turn(&self, request: TurnRequest, sink: Sink) -> BoxFuture<'_, Result<Option<Usage>, AgentError>>;

    /// How long the agent may take to wind down after Stop before its turn is ended for it.
    fn interrupt_grace(&self) -> std::time::Duration {
        std::time::Duration::from_secs(5)
    }

    /// What the agent was told about `request` when the server died while it waited (and the
    /// request was not parked), if the agent answers such a request by itself.
    fn told_when_lost(&self, request: &crate::interaction::InteractionRequest) -> Option<String> {
        let _ = request;
        None
    }

    /// Whether `session`'s agent outlived the server that ran it, and still waits for the answers
    /// to what it asked (an ACP agent under its host, listening at `host`, on this machine):
    /// those are parked, not lost, and their answers resume it.
    fn outlived_the_server(&self, session: &str, host: Option<&std::path::Path>) -> bool {
        let _ = (session, host);
        false
    }

    /// Whether the backend sends the whole conversation with each turn (then a turn carries the
    /// bytes of the files in earlier messages too), rather than only the new message.
    fn resends_history(&self) -> bool {
        false
    }

    /// The folder the agent works in by default, for agents that work in one.
    fn default_workdir(&self) -> Option<std::path::PathBuf> {
        None
    }

    /// The permission mode of a session that does not choose one.
    fn default_permission_mode(&self) -> PermissionMode {
        PermissionMode::Default
    }

    /// Messages a newcomer can try, for the welcome page's buttons (the offline demo knows which
    /// messages it answers; a real agent answers anything).
    fn example_prompts(&self) -> Vec<String> {
        Vec::new()
    }

    /// The person switched the session's permission mode (`session` is empty to only check that
    /// `mode` is allowed).
    fn set_permission_mode<'a>(&'a self, session: &'a str, mode: PermissionMode) -> BoxFuture<'a, Result<(), String>> {
        let _ = (session, mode);
        Box::pin(async { Ok(()) })
    }

    /// The agent's own permission modes, for an agent that names its own (an ACP agent): the
    /// Permissions choice offers these instead of AskBridge's.
    fn modes(&self) -> BoxFuture<'_, Vec<AgentMode>> {
        Box::pin(async { Vec::new() })
    }

    /// The person put the session in the agent's own mode `id` (one of `modes`): a running agent
    /// switches now, or says why it cannot.
    fn set_agent_mode<'a>(&'a self, session: &'a str, id: &'a str) -> BoxFuture<'a, Result<(), String>> {
        let _ = (session, id);
        Box::pin(async { Err(format!("{} names no modes of its own", self.label())) })
    }

    /// The session was deleted: let go of whatever runs for it.
    fn end_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, ()> {
        let _ = session;
        Box::pin(async {})
    }

    /// The server is stopping: nothing may be left running.
    fn shut_down(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}
