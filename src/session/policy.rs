//! What sessions may do on this server, beyond what their agent allows: the folders their agents
//! may work in (`--workdir-root`) and the permission modes a person may choose. Checked when a
//! session is made, and again at every start of its agent.

use std::path::{Path, PathBuf};

use crate::agent::AgentEnv;
use crate::approval::PermissionMode;
use crate::error::AppError;

#[derive(Debug, Clone, Default)]
pub struct SessionPolicy {
    /// Session folders must be inside this one (`--workdir-root`), canonical: symlinks and `..`
    /// are resolved before the comparison.
    pub workdir_root: Option<PathBuf>,
    /// Why no session may switch to bypassPermissions here, if none may.
    pub bypass_refused: Option<String>,
    /// The data folder whose `checkpoints/` keeps a checkpoint of a session's folder at each turn's
    /// start (the Changes view); None keeps none (`--no-checkpoints`).
    pub checkpoints: Option<PathBuf>,
    /// What a session's terminal (and a worktree's set-up command) inherits of the server's
    /// environment: what an agent does.
    pub shell_env: AgentEnv,
    /// Where sessions' worktrees are made (`data/worktrees`, absolute); None: no worktrees.
    pub worktrees: Option<PathBuf>,
}

impl SessionPolicy {
    /// The folder `dir` (as a person typed it) as the agent will work in it: an existing folder,
    /// canonical, inside the root.
    pub fn check_workdir(&self, dir: &str) -> Result<PathBuf, AppError> {
        let refuse = |why: String| Err(AppError::BadRequest { detail: why });
        let path = Path::new(dir);
        if !path.is_absolute() {
            return refuse(format!("“{dir}” is not a full path: give the folder's full path, from /"));
        }
        let canonical = match path.canonicalize() {
            Ok(canonical) => canonical,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return refuse(format!("there is no folder “{dir}” on the server"));
            }
            Err(error) => return refuse(format!("the folder “{dir}” cannot be used: {error}")),
        };
        if !canonical.is_dir() {
            return refuse(format!("“{dir}” is a file, not a folder"));
        }
        // A session's worktree lives in the data folder, wherever the root is.
        let in_worktrees = self.worktrees.as_ref().is_some_and(|under| canonical.starts_with(under));
        if let Some(root) = &self.workdir_root
            && !canonical.starts_with(root)
            && !in_worktrees
        {
            return refuse(format!(
                "“{dir}” is outside {}, the folder sessions may work in on this server (--workdir-root)",
                root.display()
            ));
        }
        Ok(canonical)
    }

    /// A person may put a session in the modes the UI offers, not Claude Code's others; and in
    /// bypassPermissions only where this server allows it.
    pub(super) fn check_mode(&self, mode: PermissionMode) -> Result<(), AppError> {
        if !mode.is_choosable() {
            return Err(AppError::BadRequest {
                detail: format!("a session cannot be switched to the {mode} mode here"),
            });
        }
        match &self.bypass_refused {
            Some(why) if mode == PermissionMode::BypassPermissions => Err(AppError::BadRequest { detail: why.clone() }),
            _ => Ok(()),
        }
    }
}
