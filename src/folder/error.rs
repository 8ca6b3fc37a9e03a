//! What can go wrong with a folder's checkpoints.

/// Files a folder may have to be checkpointed (those git would list): past them it is no
/// project folder (a home folder), and each turn's checkpoint would cost seconds.
pub const MOST_FILES: usize = 50_000;

#[derive(Debug, thiserror::Error)]
pub enum FolderError {
    #[error("git is not installed on the server, and checkpoints need it")]
    GitMissing,
    #[error("git {command} failed: {message}")]
    Git { command: String, message: String },
    #[error("git {command} took too long")]
    TooSlow { command: String },
    #[error("the folder has more than {MOST_FILES} files, too many to checkpoint at every turn")]
    TooManyFiles,
    #[error("cannot {what}: {message}")]
    Io { what: &'static str, message: String },
    #[error("turn {0} has no checkpoint")]
    NoSuchTurn(u32),
    #[error("“{path}” is not inside the session's folder (a path that leaves it, or a link that leads out)")]
    Outside { path: String },
    #[error("there is no “{path}” in the session's folder")]
    NotFound { path: String },
    #[error("“{path}” is not a file")]
    NotAFile { path: String },
    #[error("{0}")]
    Worktree(String),
    #[error("this session works in no worktree of its own")]
    NotAWorktree,
    #[error("the worktree has uncommitted changes ({}): commit them, or discard them too", .0.join(", "))]
    Uncommitted(Vec<String>),
}

impl FolderError {
    pub(super) fn io(what: &'static str) -> impl Fn(std::io::Error) -> Self {
        move |error| Self::Io { what, message: error.to_string() }
    }
}
