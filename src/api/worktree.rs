//! A session's worktree from the page: the branches a new one may start from, its state, Commit,
//! Merge into its base, Discard (the server's `session/worktree.rs`).

use leptos::prelude::*;
use leptos::server_fn::codec::Json;

use crate::changes::{Branches, Merged, Worktree};
use crate::error::AppError;

/// The branches of `folder`, when it is a git repository (the new-session page's "in a new
/// worktree").
#[server(input = Json, endpoint = "folder_branches")]
pub async fn folder_branches(folder: String) -> Result<Option<Branches>, AppError> {
    super::manager()?.folder_branches(&folder).await
}

/// The session's worktree as it stands; None when it works in none of its own.
#[server(input = Json, endpoint = "worktree_status")]
pub async fn worktree_status(session: String) -> Result<Option<Worktree>, AppError> {
    super::manager()?.worktree_status(&session).await
}

/// Commits `paths` (some of the uncommitted files) on the session's branch.
#[server(input = Json, endpoint = "worktree_commit")]
pub async fn worktree_commit(session: String, message: String, paths: Vec<String>) -> Result<Worktree, AppError> {
    super::manager()?.worktree_commit(&session, &message, &paths).await
}

/// Merges the session's branch into its base; a conflict merges nothing and says where.
#[server(input = Json, endpoint = "worktree_merge")]
pub async fn worktree_merge(session: String) -> Result<Merged, AppError> {
    super::manager()?.worktree_merge(&session).await
}

/// Removes the session's worktree and branch; uncommitted work goes only with `even_uncommitted`.
#[server(input = Json, endpoint = "worktree_discard")]
pub async fn worktree_discard(session: String, #[server(default)] even_uncommitted: bool) -> Result<(), AppError> {
    super::manager()?.worktree_discard(&session, even_uncommitted).await
}
