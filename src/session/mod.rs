//! Sessions: the server functions the browser calls to list, create, rename, delete and load
//! sessions, send a message and stop a turn. The runtime behind them (`SessionManager`) is
//! server-only.

#[cfg(feature = "ssr")]
mod manager;

#[cfg(feature = "ssr")]
pub use manager::{SessionManager, SessionRuntime, TurnSink, new_id, now_ms};

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
fn manager() -> Result<std::sync::Arc<SessionManager>, AppError> {
    use_context::<std::sync::Arc<SessionManager>>()
        .ok_or_else(|| AppError::Internal { detail: "the session manager is not running".into() })
}

#[server(input = Json)]
pub async fn list_sessions() -> Result<Vec<SessionSummary>, AppError> {
    manager()?.list_sessions().await
}

#[server(input = Json)]
pub async fn create_session() -> Result<SessionSummary, AppError> {
    manager()?.create_session().await
}

#[server(input = Json)]
pub async fn rename_session(id: String, title: String) -> Result<(), AppError> {
    manager()?.rename_session(&id, &title).await
}

#[server(input = Json)]
pub async fn delete_session(id: String) -> Result<(), AppError> {
    manager()?.delete_session(&id).await
}

#[server(input = Json)]
pub async fn load_session(id: String) -> Result<SessionView, AppError> {
    let (summary, thread) = manager()?.snapshot(&id).await?;
    Ok(SessionView { summary, thread })
}

/// Stores the message and starts the agent's turn. Returns once the message is stored: the
/// reply arrives on the live stream.
#[server(input = Json)]
pub async fn send_message(session: String, text: String) -> Result<(), AppError> {
    manager()?.send_message(&session, text).await
}

#[server(input = Json)]
pub async fn interrupt_turn(session: String) -> Result<(), AppError> {
    manager()?.interrupt(&session).await
}
