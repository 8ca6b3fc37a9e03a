//! The Changes view's server functions: what the agent changed in the session's folder, news of
//! each write, and a turn undone.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;

use crate::changes::{Changes, FileText, Scope};
use crate::error::AppError;

/// The session's changes: of one turn, or since its first turn began.
#[server(input = Json, endpoint = "session_changes")]
pub async fn session_changes(session: String, scope: Scope) -> Result<Changes, AppError> {
    super::manager()?.session_changes(&session, &scope).await
}

/// Answers once the session's folder changed after version `seen` (or after about 25 s with the
/// same version): the view asks for the changes again when the version moved.
#[server(input = Json, endpoint = "wait_for_changes")]
pub async fn wait_for_changes(session: String, seen: u64) -> Result<u64, AppError> {
    super::manager()?.wait_for_changes(&session, seen).await
}

/// The files of the session's folder that git would list (at most 5,000), sorted.
#[server(input = Json, endpoint = "folder_tree")]
pub async fn folder_tree(session: String) -> Result<Vec<String>, AppError> {
    super::manager()?.folder_tree(&session).await
}

/// A file of the session's folder, line by line; refused when `path` leaves the folder.
#[server(input = Json, endpoint = "folder_file")]
pub async fn folder_file(session: String, path: String) -> Result<FileText, AppError> {
    super::manager()?.folder_file(&session, &path).await
}

/// The files that undoing turn `turn` would put back, for the person to confirm.
#[server(input = Json, endpoint = "undo_preview")]
pub async fn undo_preview(session: String, turn: u32) -> Result<Vec<String>, AppError> {
    super::manager()?.undo_preview(&session, turn).await
}

/// Puts the session's folder back as it was when turn `turn` began; the files it touched.
#[server(input = Json, endpoint = "undo_turn")]
pub async fn undo_turn(session: String, turn: u32) -> Result<Vec<String>, AppError> {
    super::manager()?.undo_turn(&session, turn).await
}
