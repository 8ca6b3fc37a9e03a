//! The server functions: every action a person takes in the browser (list, create, rename,
//! delete and load sessions, send a message, stop a turn, answer or skip a question, decide a
//! permission request, switch the permission mode). This is the edge: on the server each function
//! calls into the session manager and the bridge; in the browser it is a typed `fetch`. Each has a
//! stable path, `/api/<name>`, taking and returning JSON, so that scripts and tests can drive
//! AskBridge without a browser.

#[cfg(feature = "ssr")]
pub mod attachments;
pub mod changes;
pub mod claude_sessions;
pub mod push;
pub mod worktree;

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use server_fn::codec::Json;

use crate::approval::{Decision, PermissionMode};
use crate::error::AppError;
use crate::question::QuestionAnswer;
use crate::thread::{AgentOffer, QueueChange, SessionCursor, SessionSummary, SlashCommand, Thread};

#[cfg(feature = "ssr")]
use crate::session::SessionManager;

/// A session with its thread, as one page load needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionView {
    pub summary: SessionSummary,
    pub thread: Thread,
}

#[cfg(feature = "ssr")]
fn manager() -> Result<std::sync::Arc<SessionManager>, AppError> {
    use_context::<std::sync::Arc<SessionManager>>()
        .ok_or_else(|| AppError::Internal { detail: "the session manager is not running".into() })
}

/// The session list, a page at a time, in the order of the person's activity: from its top, or
/// after `after` (a page's last session); or, with `query`, the sessions whose title or text
/// holds it (`limit`: at most 200; 50 when not given).
#[server(input = Json, endpoint = "list_sessions")]
pub async fn list_sessions(
    #[server(default)] after: Option<SessionCursor>,
    #[server(default)] query: Option<String>,
    #[server(default)] limit: Option<u32>,
) -> Result<Vec<SessionSummary>, AppError> {
    let manager = manager()?;
    let limit = limit.unwrap_or(SESSIONS_PAGE).clamp(1, 200);
    match query.as_deref().map(str::trim).filter(|q| !q.is_empty()) {
        Some(query) => manager.search_sessions(query, limit).await,
        None => manager.list_sessions_page(after.as_ref(), limit).await,
    }
}

/// Sessions a page of the list holds.
pub const SESSIONS_PAGE: u32 = 50;

/// Starts a session; `workdir` (a folder on the server) is where its agent works, and
/// `permission_mode` what it may do without asking (bypassPermissions only with
/// `confirm_bypass`: the person confirmed what it means).
/// `agent` is one of the agents the server offers (its default when not given), and `model` a
/// model of that agent's (its default when not given).
#[server(input = Json, endpoint = "create_session")]
pub async fn create_session(
    workdir: Option<String>,
    #[server(default)] permission_mode: Option<PermissionMode>,
    #[server(default)] confirm_bypass: bool,
    #[server(default)] agent: Option<String>,
    #[server(default)] model: Option<String>,
    #[server(default)] worktree: Option<crate::changes::NewWorktree>,
) -> Result<SessionSummary, AppError> {
    if let Some(mode) = permission_mode {
        check_confirmed(mode, confirm_bypass)?;
    }
    let new = crate::session::NewSession {
        workdir: workdir.as_deref(),
        mode: permission_mode,
        agent: agent.as_deref(),
        model: model.as_deref(),
        history: None,
        title: None,
        worktree,
    };
    manager()?.create_session_with(new).await
}

/// The agents a new session can talk to (the server's default first), with the models each
/// offers (listed by the agent itself: see `AgentBackend::models`).
#[server(input = Json, endpoint = "agent_offers")]
pub async fn agent_offers() -> Result<Vec<AgentOffer>, AppError> {
    Ok(manager()?.agent_offers().await)
}

/// Switches the model of the session's next turns (`None` or empty: the agent's default); a
/// running Claude Code switches at once.
#[server(input = Json, endpoint = "set_model")]
pub async fn set_model(session: String, #[server(default)] model: Option<String>) -> Result<(), AppError> {
    manager()?.set_model(&session, model.as_deref()).await
}

/// The `/` commands the session's agent takes in its folder, with their descriptions; without a
/// session, those of `agent` (the server's default if not given) in its own folder.
#[server(input = Json, endpoint = "slash_commands")]
pub async fn slash_commands(
    #[server(default)] session: Option<String>,
    #[server(default)] agent: Option<String>,
) -> Result<Vec<SlashCommand>, AppError> {
    let manager = manager()?;
    match session {
        Some(session) => manager.slash_commands(&session).await,
        None => manager.agent_commands(agent.as_deref()).await,
    }
}

#[server(input = Json, endpoint = "rename_session")]
pub async fn rename_session(id: String, title: String) -> Result<(), AppError> {
    manager()?.rename_session(&id, &title).await
}

#[server(input = Json, endpoint = "delete_session")]
pub async fn delete_session(id: String) -> Result<(), AppError> {
    manager()?.delete_session(&id).await
}

/// What the workspace page shows besides the open session: the session list, what a new session
/// gets, and why the session asked for cannot be shown. The open session travels apart
/// (`SessionView`): the browser reads it in the session pane's chunk, so that the first load of `/`
/// carries no code to decode a thread (docs/size.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceData {
    /// The agent new sessions talk to, and the folder it works in by default (if it has one).
    pub agent: String,
    pub default_workdir: Option<String>,
    /// The permission mode a new session starts in unless the person picks another.
    #[serde(default)]
    pub default_mode: PermissionMode,
    pub sessions: Vec<SessionSummary>,
    /// Why the session asked for is not shown.
    pub problem: Option<AppError>,
    /// Messages to try, offered on the welcome page (the offline demo's).
    #[serde(default)]
    pub examples: Vec<String>,
    /// Claude Code keeps sessions on this machine: the list offers them.
    #[serde(default)]
    pub claude_sessions: bool,
    /// What people call the agent new sessions talk to ("Claude Code").
    #[serde(default)]
    pub agent_label: String,
}

/// A page's data: the workspace, and the session asked for when it could be loaded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceView {
    #[serde(flatten)]
    pub workspace: WorkspaceData,
    pub current: Option<SessionView>,
}

/// The page's data, for scripts: what a page load of `/` or `/s/<session>` is drawn from.
#[server(input = Json, endpoint = "load_workspace")]
pub async fn load_workspace(session: Option<String>) -> Result<WorkspaceView, AppError> {
    WorkspaceView::load(&*manager()?, session.as_deref()).await
}

#[cfg(feature = "ssr")]
impl WorkspaceView {
    pub async fn load(manager: &SessionManager, session: Option<&str>) -> Result<Self, AppError> {
        // What every tab's list follows: its first page, and what works or waits beyond it.
        let sessions = manager.list_for_tabs().await?;
        let (current, problem) = match session {
            None => (None, None),
            Some(id) => match manager.snapshot(id).await {
                Ok((summary, thread)) => (Some(SessionView { summary, thread }), None),
                Err(error) => (None, Some(error)),
            },
        };
        let workspace = WorkspaceData {
            agent: manager.agent_name().to_string(),
            default_workdir: manager.default_workdir().map(|dir| dir.display().to_string()),
            default_mode: manager.default_permission_mode(),
            sessions,
            problem,
            examples: manager.example_prompts(),
            claude_sessions: crate::agent::claude::transcripts::ProjectsDir::from_env()
                .is_some_and(|projects| projects.holds_any_folder()),
            agent_label: manager.agent_label().to_string(),
        };
        Ok(Self { workspace, current })
    }
}

#[server(input = Json, endpoint = "load_session")]
pub async fn load_session(id: String) -> Result<SessionView, AppError> {
    let (summary, thread) = manager()?.snapshot(&id).await?;
    Ok(SessionView { summary, thread })
}

/// Stores the message and starts the agent's turn (or, while the agent works or waits for the
/// person, queues it for its next turn). Returns once the message is stored: the reply arrives
/// on the live stream. `attachments`: the hashes of files uploaded before
/// (`POST /api/attachments`), sent with it.
#[server(input = Json, endpoint = "send_message")]
pub async fn send_message(
    session: String,
    text: String,
    #[server(default)] attachments: Vec<String>,
) -> Result<(), AppError> {
    let manager = manager()?;
    // A terminal's Claude Code takes its messages in the terminal; here it is answered only.
    manager.refuse_messages_to_terminal(&session).await?;
    manager.send_message_with(&session, text, &attachments).await
}

/// Changes a message the person typed ahead (it waits in the session's queue until the agent's
/// next turn): edits or removes it, or sends the queue now (after a turn the person stopped).
/// A message a turn took already is refused (`already_sent`, 409).
#[server(input = Json, endpoint = "change_queue")]
pub async fn change_queue(session: String, change: QueueChange) -> Result<(), AppError> {
    manager()?.change_queue(&session, change).await
}

/// The files of a session's folder (or, on the new-session page, of the folder and agent chosen
/// there) that best match `query`, for the message box's `@` list: at most 50, best first, as
/// paths relative to the folder. Where the folder is a git repository, git's own list.
#[server(input = Json, endpoint = "folder_files")]
pub async fn folder_files(
    #[server(default)] session: Option<String>,
    #[server(default)] workdir: Option<String>,
    #[server(default)] agent: Option<String>,
    #[server(default)] query: String,
) -> Result<Vec<String>, AppError> {
    manager()?.folder_files(session.as_deref(), workdir.as_deref(), agent.as_deref(), &query).await
}

#[server(input = Json, endpoint = "interrupt_turn")]
pub async fn interrupt_turn(session: String) -> Result<(), AppError> {
    manager()?.interrupt(&session).await
}

/// Answers the pending question `tool_use_id` of `session`. The first answer wins; sending the
/// same answer again is accepted; a different one is refused as already answered.
///
/// With `as_message`, the question is one lost in a crash, and the answers go to the agent as a
/// message (`send_answer_as_message`). The card sends it so, rather than calling that function:
/// one server function fewer in the page, 0.3 KB of the first load.
#[server(input = Json, endpoint = "submit_answers")]
pub async fn submit_answers(
    session: String,
    tool_use_id: String,
    answers: Vec<QuestionAnswer>,
    #[server(default)] as_message: bool,
) -> Result<(), AppError> {
    if as_message {
        return manager()?.send_lost_answer(&session, &tool_use_id, answers).await;
    }
    manager()?.answer_question(&session, &tool_use_id, answers).await
}

/// Sends an answer that never reached the agent (the server stopped while it waited, and the
/// agent was told something else) as a message to the agent.
#[server(input = Json, endpoint = "send_answer_as_message")]
pub async fn send_answer_as_message(
    session: String,
    tool_use_id: String,
    answers: Vec<QuestionAnswer>,
) -> Result<(), AppError> {
    manager()?.send_lost_answer(&session, &tool_use_id, answers).await
}

/// Skips the question: the agent is told that the person declined to answer.
#[server(input = Json, endpoint = "decline_question")]
pub async fn decline_question(session: String, tool_use_id: String, reason: Option<String>) -> Result<(), AppError> {
    manager()?.decline_question(&session, &tool_use_id, reason).await
}

/// Decides a pending approval. The first decision wins; the same again is accepted.
#[server(input = Json, endpoint = "decide_approval")]
pub async fn decide_approval(session: String, tool_use_id: String, decision: Decision) -> Result<(), AppError> {
    manager()?.decide_approval(&session, &tool_use_id, decision).await
}

/// Switches a session's permission mode (bypassPermissions only with `confirm_bypass`: the
/// person confirmed what it means).
#[server(input = Json, endpoint = "set_permission_mode")]
pub async fn set_permission_mode(
    session: String,
    mode: PermissionMode,
    #[server(default)] confirm_bypass: bool,
) -> Result<(), AppError> {
    check_confirmed(mode, confirm_bypass)?;
    manager()?.set_permission_mode(&session, mode).await
}

/// Puts a session in one of its agent's own permission modes (`AgentOffer::modes`: Codex's
/// "Read-only", Cline's "Plan"), by the agent's id for it; one that stands for bypassPermissions
/// only with `confirm_bypass`.
#[server(input = Json, endpoint = "set_agent_mode")]
pub async fn set_agent_mode(
    session: String,
    mode: String,
    #[server(default)] confirm_bypass: bool,
) -> Result<(), AppError> {
    manager()?.set_agent_mode(&session, &mode, confirm_bypass).await
}

/// bypassPermissions lets the agent run anything without a card: the request itself must say
/// that the person confirmed it, so that no page or script gets there by a plain mode switch.
#[cfg(feature = "ssr")]
fn check_confirmed(mode: PermissionMode, confirmed: bool) -> Result<(), AppError> {
    if mode == PermissionMode::BypassPermissions && !confirmed {
        return Err(AppError::BadRequest {
            detail: "switching to bypassPermissions needs the person's confirmation (confirm_bypass: true)".into(),
        });
    }
    Ok(())
}
