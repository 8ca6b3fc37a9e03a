//! A session in a worktree of its own (`folder::worktree`): made with the session, from the
//! new-session page; then its status, a commit, a merge into its base, or its removal. None of
//! them while the agent works in it.

use std::path::{Path, PathBuf};

use super::SessionManager;
use crate::changes::{Branches, Merged, NewWorktree, Worktree};
use crate::error::AppError;
use crate::folder::{FolderError, worktree};
use tracing::{info, warn};

impl SessionManager {
    /// The branches of `folder` (as a person typed it), when it is a git repository: what a new
    /// worktree may start from.
    pub async fn folder_branches(&self, folder: &str) -> Result<Option<Branches>, AppError> {
        let folder = self.turns.policy.check_workdir(folder)?;
        Ok(worktree::branches(&folder).await)
    }

    /// A new worktree of `repository`'s for a new session (`create_session_with`).
    pub(super) async fn make_worktree(
        &self,
        repository: Option<&Path>,
        new: &NewWorktree,
    ) -> Result<PathBuf, AppError> {
        let under = self.turns.policy.worktrees.as_deref().ok_or_else(|| bad("this server makes no worktrees"))?;
        let repository = repository.ok_or_else(|| bad("a worktree needs the folder of a git repository"))?;
        if worktree::branches(repository).await.is_none() {
            return Err(bad(&format!("{} is not a git repository", repository.display())));
        }
        let env = self.turns.policy.shell_env.inherited(std::env::vars_os());
        let folder = worktree::make(repository, under, new, &env).await.map_err(refused)?;
        // Canonical, as every session's folder is.
        folder.canonicalize().map_err(|error| bad(&format!("the new worktree cannot be used: {error}")))
    }

    /// The session's worktree as it stands; None when it works in none of its own.
    pub async fn worktree_status(&self, session: &str) -> Result<Option<Worktree>, AppError> {
        let Ok(folder) = self.session_folder(session).await else { return Ok(None) };
        if !folder.is_dir() {
            return Ok(None);
        }
        worktree::status(&folder).await.map_err(refused)
    }

    /// Commits `paths` of the session's worktree with `message`.
    pub async fn worktree_commit(&self, session: &str, message: &str, paths: &[String]) -> Result<Worktree, AppError> {
        self.while_idle(session, async |folder: PathBuf| {
            worktree::commit(&folder, message, paths).await.map_err(refused)?;
            worktree::status(&folder).await.map_err(refused)?.ok_or_else(|| refused(FolderError::NotAWorktree))
        })
        .await
    }

    /// Merges the session's branch into its base.
    pub async fn worktree_merge(&self, session: &str) -> Result<Merged, AppError> {
        let under = self.turns.policy.worktrees.as_deref().ok_or_else(|| bad("this server makes no worktrees"))?;
        self.while_idle(session, async |folder: PathBuf| worktree::merge(&folder, under).await.map_err(refused)).await
    }

    /// Removes the session's worktree and its branch (uncommitted work only if `even_uncommitted`).
    pub async fn worktree_discard(&self, session: &str, even_uncommitted: bool) -> Result<(), AppError> {
        self.while_idle(session, async |folder: PathBuf| {
            worktree::discard(&folder, even_uncommitted).await.map_err(refused)?;
            // Its terminal worked in a folder that is gone.
            self.shells.end(session);
            Ok(())
        })
        .await
    }

    /// A deleted session's worktree goes with it when nothing in it would be lost (no uncommitted
    /// change, every commit in its base); otherwise it stays where git lists it, for the person.
    pub(super) async fn tidy_deleted_worktree(&self, session: &str, folder: &Path) {
        let ours = self.turns.policy.worktrees.as_deref().is_some_and(|under| folder.starts_with(under));
        if !ours {
            return;
        }
        match worktree::remove_if_merged(folder).await {
            Ok(true) => info!(session, folder = %folder.display(), "the deleted session's worktree was removed"),
            Ok(false) => info!(session, folder = %folder.display(), "the deleted session's worktree holds work: kept"),
            Err(error) => warn!(session, %error, "the deleted session's worktree could not be looked at"),
        }
    }

    /// `work` on the session's folder, under the session's lock (no turn starts meanwhile);
    /// refused while its agent works.
    async fn while_idle<T>(
        &self,
        session: &str,
        work: impl AsyncFnOnce(PathBuf) -> Result<T, AppError>,
    ) -> Result<T, AppError> {
        let folder = self.session_folder(session).await?;
        let runtime = self.runtime(session).await?;
        let state = runtime.lock().await;
        if state.turn.is_some() || state.thread.turn.working {
            return Err(AppError::AgentBusy);
        }
        let done = work(folder).await;
        drop(state);
        done
    }
}

fn bad(detail: &str) -> AppError {
    AppError::BadRequest { detail: detail.to_string() }
}

fn refused(error: FolderError) -> AppError {
    bad(&error.to_string())
}
