//! The errors people can meet, typed so that the browser can say what to do about them.
//!
//! Server functions return `AppError`; the server turns each variant into its HTTP status in one
//! place (`server::status_for_server_fn_errors`), and the UI shows `Display` as the message.

use serde::{Deserialize, Serialize};
use server_fn::codec::JsonEncoding;
use server_fn::error::{FromServerFnError, ServerFnErrorErr};

/// The longest message the composer accepts, in characters.
pub const MAX_MESSAGE_CHARS: usize = 64 * 1024;
/// The longest session title, in characters.
pub const MAX_TITLE_CHARS: usize = 200;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "error", rename_all = "snake_case")]
pub enum AppError {
    #[error("There is no session with id “{id}”. It may have been deleted.")]
    SessionNotFound { id: String },
    #[error("The message is empty.")]
    EmptyMessage,
    #[error("The message is too long: {chars} characters, the limit is {max}.")]
    MessageTooLong { chars: usize, max: usize },
    #[error("The title must be between 1 and {max} characters.")]
    InvalidTitle { max: usize },
    #[error("The agent is still working on the last message. Wait for it, or press Stop.")]
    AgentBusy,
    #[error("The request could not be understood: {detail}")]
    BadRequest { detail: String },
    #[error("Sign-in required: open the link with the access token, or enter the token.")]
    Unauthorized,
    #[error("The request came from another site and was refused.")]
    ForbiddenOrigin,
    #[error("The server could not store this: {detail}. Nothing already stored was lost.")]
    Storage { detail: String },
    #[error("Could not reach the server: {detail}")]
    Unreachable { detail: String },
    #[error("Something went wrong on the server: {detail}")]
    Internal { detail: String },
}

impl AppError {
    pub fn status(&self) -> u16 {
        match self {
            Self::SessionNotFound { .. } => 404,
            Self::EmptyMessage
            | Self::MessageTooLong { .. }
            | Self::InvalidTitle { .. }
            | Self::BadRequest { .. } => 400,
            Self::AgentBusy => 409,
            Self::Unauthorized => 401,
            Self::ForbiddenOrigin => 403,
            Self::Unreachable { .. } => 503,
            Self::Storage { .. } | Self::Internal { .. } => 500,
        }
    }
}

impl FromServerFnError for AppError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        match value {
            ServerFnErrorErr::Args(detail) => Self::BadRequest { detail },
            ServerFnErrorErr::MissingArg(arg) => {
                Self::BadRequest { detail: format!("missing argument `{arg}`") }
            }
            ServerFnErrorErr::Request(detail) | ServerFnErrorErr::Response(detail) => {
                Self::Unreachable { detail }
            }
            ServerFnErrorErr::UnsupportedRequestMethod(method) => {
                Self::BadRequest { detail: format!("unsupported method {method}") }
            }
            other => Self::Internal { detail: other.to_string() },
        }
    }
}

pub fn validate_message(text: &str) -> Result<(), AppError> {
    if text.trim().is_empty() {
        return Err(AppError::EmptyMessage);
    }
    let chars = text.chars().count();
    if chars > MAX_MESSAGE_CHARS {
        return Err(AppError::MessageTooLong { chars, max: MAX_MESSAGE_CHARS });
    }
    Ok(())
}

pub fn validate_title(title: &str) -> Result<String, AppError> {
    let title = title.trim();
    if title.is_empty() || title.chars().count() > MAX_TITLE_CHARS {
        return Err(AppError::InvalidTitle { max: MAX_TITLE_CHARS });
    }
    Ok(title.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversized_message_is_refused_with_its_length() {
        let text = "x".repeat(MAX_MESSAGE_CHARS + 1);
        assert_eq!(
            validate_message(&text),
            Err(AppError::MessageTooLong { chars: MAX_MESSAGE_CHARS + 1, max: MAX_MESSAGE_CHARS })
        );
    }

    #[test]
    fn blank_message_is_refused() {
        assert_eq!(validate_message("  \n "), Err(AppError::EmptyMessage));
    }

    #[test]
    fn errors_round_trip_through_json() {
        let error = AppError::SessionNotFound { id: "abc".into() };
        let json = serde_json::to_string(&error).unwrap();
        assert_eq!(serde_json::from_str::<AppError>(&json).unwrap(), error);
    }
}
