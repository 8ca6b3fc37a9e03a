//! The session's terminal (`shell::Shells`): a shell in the session's folder, or in a folder
//! inside it, for the token holder's tabs. It ends with the session (`let_go`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::SessionManager;
use crate::error::AppError;
use crate::folder::{FolderError, inside};
use crate::shell::{Shell, ShellError, Size};

impl SessionManager {
    /// Where the session's terminal starts: its folder, or `start`, a folder inside it (relative
    /// to it); refused when `start` leaves it.
    pub async fn shell_folder(&self, session: &str, start: Option<&str>) -> Result<PathBuf, AppError> {
        let folder = self.session_folder(session).await?;
        let refused = |error: FolderError| AppError::BadRequest { detail: error.to_string() };
        let folder = match start.filter(|start| !start.is_empty()) {
            Some(start) => {
                let inner = inside(&folder, start).map_err(refused)?;
                if !inner.is_dir() {
                    return Err(AppError::BadRequest { detail: format!("{start} is not a folder") });
                }
                inner
            }
            None => folder,
        };
        Ok(folder)
    }

    /// The session's terminal: the shell it runs, or a new one started in `folder` (from
    /// [`Self::shell_folder`]).
    pub fn session_shell(&self, session: &str, folder: &Path, size: Size) -> Result<Arc<Shell>, AppError> {
        self.shells.open(session, folder, size).map_err(|error| match error {
            ShellError::Start(_) | ShellError::Ended => AppError::Internal { detail: error.to_string() },
        })
    }
}
