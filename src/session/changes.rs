//! The session's folder as the Changes view sees it: its checkpoints (one as each turn begins,
//! `Turns::start`), the diff of a turn or of the session, news of each write, and a turn undone.
//! The work is `folder::Folders`'s; here, which folder a session works in and what may be done
//! to it when.

use std::path::PathBuf;
use std::time::Duration;

use super::SessionManager;
use crate::changes::{Changes, FileText, Scope};
use crate::error::AppError;
use crate::folder::{FolderError, read_text};

/// Files the Files view lists at most.
const MOST_LISTED: usize = 5_000;

/// The longest `wait_for_changes` holds its request before answering with the same version.
const LONGEST_WAIT: Duration = Duration::from_secs(25);

impl SessionManager {
    /// The session's changes: of turn `number`, or since its first turn began.
    pub async fn session_changes(&self, session: &str, scope: &Scope) -> Result<Changes, AppError> {
        let Some(folders) = &self.turns.folders else {
            return Ok(Changes {
                unavailable: Some("this server keeps no checkpoints (--no-checkpoints)".into()),
                ..Changes::default()
            });
        };
        let folder = match self.session_folder(session).await {
            Ok(folder) => folder,
            Err(AppError::BadRequest { detail }) => {
                return Ok(Changes { unavailable: Some(detail), ..Changes::default() });
            }
            Err(other) => return Err(other),
        };
        match folders.changes(&folder, session, scope).await {
            Ok(changes) => Ok(changes),
            Err(FolderError::NoSuchTurn(number)) => {
                Err(AppError::BadRequest { detail: format!("turn {number} has no checkpoint") })
            }
            Err(error) => Ok(Changes { unavailable: Some(error.to_string()), ..Changes::default() }),
        }
    }

    /// The version of the session folder's news once it moved past `seen`, or after
    /// [`LONGEST_WAIT`].
    pub async fn wait_for_changes(&self, session: &str, seen: u64) -> Result<u64, AppError> {
        let (Some(folders), Ok(folder)) = (&self.turns.folders, self.session_folder(session).await) else {
            // Nothing to follow: the caller asks again after the wait, as if nothing changed.
            tokio::time::sleep(LONGEST_WAIT).await;
            return Ok(seen);
        };
        Ok(folders.wait(&folder, seen, LONGEST_WAIT).await)
    }

    /// The files undoing turn `number` would put back.
    pub async fn undo_preview(&self, session: &str, number: u32) -> Result<Vec<String>, AppError> {
        let (folders, folder) = self.checkpointed(session).await?;
        folders.undo_preview(&folder, session, number).await.map_err(refused)
    }

    /// Puts the session's folder back as it was when turn `number` began; never while the
    /// agent works in it.
    pub async fn undo_turn(&self, session: &str, number: u32) -> Result<Vec<String>, AppError> {
        let (folders, folder) = self.checkpointed(session).await?;
        let runtime = self.runtime(session).await?;
        let state = runtime.lock().await;
        if state.turn.is_some() || state.thread.turn.working {
            return Err(AppError::AgentBusy);
        }
        // Under the session's lock: no turn starts while the folder is being put back.
        let touched = folders.undo(&folder, session, number).await.map_err(refused)?;
        drop(state);
        Ok(touched)
    }

    /// The files of the session's folder that git would list, sorted, at most `MOST_LISTED`.
    pub async fn folder_tree(&self, session: &str) -> Result<Vec<String>, AppError> {
        let folder = self.session_folder(session).await?;
        let mut files: Vec<String> = self.files.of(&folder).await.iter().take(MOST_LISTED).cloned().collect();
        files.sort();
        Ok(files)
    }

    /// The file at `path` in the session's folder, to show; refused when the path leaves it.
    pub async fn folder_file(&self, session: &str, path: &str) -> Result<FileText, AppError> {
        let folder = self.session_folder(session).await?;
        let path = path.to_string();
        tokio::task::spawn_blocking(move || read_text(&folder, &path))
            .await
            .map_err(|error| AppError::Internal { detail: error.to_string() })?
            .map_err(refused)
    }

    async fn checkpointed(&self, session: &str) -> Result<(std::sync::Arc<crate::folder::Folders>, PathBuf), AppError> {
        let folders = self.turns.folders.clone().ok_or_else(|| AppError::BadRequest {
            detail: "this server keeps no checkpoints (--no-checkpoints)".into(),
        })?;
        Ok((folders, self.session_folder(session).await?))
    }

    /// The folder the session's agent works in: its own, or its agent's default.
    pub(super) async fn session_folder(&self, session: &str) -> Result<PathBuf, AppError> {
        let placed = self.turns.placement(session).await?;
        self.turns
            .folder_of(&placed)
            .ok_or_else(|| AppError::BadRequest { detail: "this session works in no folder".into() })
    }
}

fn refused(error: FolderError) -> AppError {
    AppError::BadRequest { detail: error.to_string() }
}
