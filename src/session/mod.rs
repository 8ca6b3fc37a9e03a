//! Sessions: the server functions the browser calls to list, create, rename, delete and load
//! sessions, send a message and stop a turn. The runtime behind them (`SessionManager`) is
//! server-only. Each function has a stable path, `/api/<name>`, taking and returning JSON, so
//! that scripts and tests can drive AskBridge without a browser.

#[cfg(feature = "ssr")]
mod manager;

#[cfg(feature = "ssr")]
pub use manager::{SessionManager, SessionRuntime, Timeouts, TurnSink, new_id, now_ms};

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use server_fn::codec::Json;

use crate::error::AppError;
use crate::thread::{SessionSummary, Thread};

/// A session with its thread, as one page load needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionView {
    pub summary: SessionSummary,
    pub thread: Thread,
}

#[cfg(feature = "ssr")]
pub(crate) fn manager() -> Result<std::sync::Arc<SessionManager>, AppError> {
    use_context::<std::sync::Arc<SessionManager>>()
        .ok_or_else(|| AppError::Internal { detail: "the session manager is not running".into() })
}

#[server(input = Json, endpoint = "list_sessions")]
pub async fn list_sessions() -> Result<Vec<SessionSummary>, AppError> {
    manager()?.list_sessions().await
}

/// Starts a session; `workdir` (a folder on the server) is where its agent works, and
/// `permission_mode` what it may do without asking (see `approval::PERMISSION_MODES`).
#[server(input = Json, endpoint = "create_session")]
pub async fn create_session(
    workdir: Option<String>,
    #[server(default)] permission_mode: Option<String>,
) -> Result<SessionSummary, AppError> {
    manager()?.create_session_with(workdir.as_deref(), permission_mode.as_deref()).await
}

#[server(input = Json, endpoint = "rename_session")]
pub async fn rename_session(id: String, title: String) -> Result<(), AppError> {
    manager()?.rename_session(&id, &title).await
}

#[server(input = Json, endpoint = "delete_session")]
pub async fn delete_session(id: String) -> Result<(), AppError> {
    manager()?.delete_session(&id).await
}

/// What the workspace page shows: the session list and the open session, or why it cannot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceData {
    /// The agent new sessions talk to, and the folder it works in by default (if it has one).
    pub agent: String,
    pub default_workdir: Option<String>,
    /// The permission mode a new session starts in unless the person picks another.
    #[serde(default)]
    pub default_mode: String,
    pub sessions: Vec<SessionSummary>,
    pub current: Option<SessionView>,
    /// Why `current` is missing although a session was asked for.
    pub problem: Option<AppError>,
}

/// The page's data, for the browser to switch sessions without a reload.
#[server(input = Json, endpoint = "load_workspace")]
pub async fn load_workspace(session: Option<String>) -> Result<WorkspaceData, AppError> {
    WorkspaceData::load(&*manager()?, session.as_deref()).await
}

#[cfg(feature = "ssr")]
impl WorkspaceData {
    pub async fn load(manager: &SessionManager, session: Option<&str>) -> Result<Self, AppError> {
        let sessions = manager.list_sessions().await?;
        let (current, problem) = match session {
            None => (None, None),
            Some(id) => match manager.snapshot(id).await {
                Ok((summary, thread)) => (Some(SessionView { summary, thread }), None),
                Err(error) => (None, Some(error)),
            },
        };
        Ok(Self {
            agent: manager.agent_name().to_string(),
            default_workdir: manager.default_workdir().map(|dir| dir.display().to_string()),
            default_mode: manager.default_permission_mode(),
            sessions,
            current,
            problem,
        })
    }
}

#[server(input = Json, endpoint = "load_session")]
pub async fn load_session(id: String) -> Result<SessionView, AppError> {
    let (summary, thread) = manager()?.snapshot(&id).await?;
    Ok(SessionView { summary, thread })
}

/// Stores the message and starts the agent's turn. Returns once the message is stored: the
/// reply arrives on the live stream.
#[server(input = Json, endpoint = "send_message")]
pub async fn send_message(session: String, text: String) -> Result<(), AppError> {
    manager()?.send_message(&session, text).await
}

#[server(input = Json, endpoint = "interrupt_turn")]
pub async fn interrupt_turn(session: String) -> Result<(), AppError> {
    manager()?.interrupt(&session).await
}
