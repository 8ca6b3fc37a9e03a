//! What can go wrong reading a transcript, and what the API makes of it.

use crate::error::AppError;

/// What can go wrong reading a transcript, for the API to turn into a status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TranscriptError {
    #[error("“{id}” is not a Claude Code session id.")]
    InvalidId { id: String },
    #[error("There is no Claude Code session “{id}” on this machine.")]
    NotFound { id: String },
    #[error("The transcript of session “{id}” lies outside Claude Code's projects folder: it is not read.")]
    Outside { id: String },
    #[error("The transcript of session “{id}” could not be read: {detail}.")]
    Unreadable { id: String, detail: String },
    #[error("There is no such place in the transcript of session “{id}”.")]
    BadCursor { id: String },
    #[error("Session “{id}” ran in {folder}, which no longer exists.")]
    FolderGone { id: String, folder: String },
}

impl TranscriptError {
    pub(super) fn from_io(id: &str, error: std::io::Error) -> Self {
        let id = id.to_string();
        match error.kind() {
            std::io::ErrorKind::NotFound => Self::NotFound { id },
            // O_NOFOLLOW met a symlink where the checked path had none: it was swapped meanwhile.
            _ if error.raw_os_error() == Some(libc::ELOOP) => Self::Outside { id },
            _ => Self::Unreadable { id, detail: error.to_string() },
        }
    }
}

impl From<TranscriptError> for AppError {
    fn from(error: TranscriptError) -> Self {
        match error {
            TranscriptError::NotFound { id } => AppError::SessionNotFound { id },
            TranscriptError::Unreadable { .. } => AppError::Internal { detail: error.to_string() },
            TranscriptError::InvalidId { .. }
            | TranscriptError::Outside { .. }
            | TranscriptError::BadCursor { .. }
            | TranscriptError::FolderGone { .. } => AppError::BadRequest { detail: error.to_string() },
        }
    }
}
