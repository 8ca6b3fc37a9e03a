//! The errors people can meet, typed so that the browser can say what to do about them.
//!
//! Server functions return `AppError`; the server turns each variant into its HTTP status in one
//! place (`server::status_for_server_fn_errors`), and the UI shows `Display` as the message.

use serde::{Deserialize, Serialize};
use server_fn::codec::JsonEncoding;
use server_fn::error::{FromServerFnError, ServerFnErrorErr};

/// The longest message the composer accepts, in characters.
pub const MAX_MESSAGE_CHARS: usize = 64 * 1024;
/// Larger request bodies are refused before they are read (the longest message fits easily).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// The longest session title, in characters.
pub const MAX_TITLE_CHARS: usize = 200;

/// On the wire an error is one flat object: `{"error": "session_not_found", "message": "…",
/// "id": "…"}`. The kind is for programs, the message for people; and one flat shape keeps the
/// browser's decoder small.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(into = "WireError", from = "WireError")]
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
    #[error("This message was sent to the agent already: it can no longer be changed.")]
    AlreadySent { id: String },
    #[error("There is no question “{tool_use_id}” in this session.")]
    InteractionNotFound { tool_use_id: String },
    #[error("“{question}”: {detail}.")]
    InvalidAnswer { question: String, detail: String },
    #[error("This question was already answered, with a different answer.")]
    AlreadyAnswered,
    #[error("The agent is no longer waiting for this answer: {detail}.")]
    NotWaiting { detail: String },
    #[error("The request could not be understood: {detail}")]
    BadRequest { detail: String },
    #[error("The request is too large: the limit is {max_kib} KiB.")]
    TooLarge { max_kib: usize },
    #[error("This file cannot be attached: {detail}.")]
    AttachmentRefused { detail: String },
    #[error("There is no attached file “{hash}” on the server. Attach it again.")]
    AttachmentNotFound { hash: String },
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

#[derive(Serialize, Deserialize)]
struct WireError {
    error: String,
    message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    chars: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max: Option<usize>,
}

/// The longest id a refusal repeats back, in characters: an id is a few dozen, and one of 600,000
/// made an answer too large to send (an empty 500).
const MAX_ECHOED_ID: usize = 200;
/// The longest detail an error carries, in characters.
const MAX_DETAIL: usize = 2000;

/// `text` cut to `max` characters, marked as cut.
fn echoed(text: String, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

impl AppError {
    /// The error with what came from outside (ids, names, details) cut to a length fit to send.
    fn bounded(self) -> Self {
        let id = |id: String| echoed(id, MAX_ECHOED_ID);
        let detail = |detail: String| echoed(detail, MAX_DETAIL);
        match self {
            AppError::SessionNotFound { id: session } => AppError::SessionNotFound { id: id(session) },
            AppError::AlreadySent { id: message } => AppError::AlreadySent { id: id(message) },
            AppError::InteractionNotFound { tool_use_id } => {
                AppError::InteractionNotFound { tool_use_id: id(tool_use_id) }
            }
            AppError::InvalidAnswer { question, detail: said } => {
                AppError::InvalidAnswer { question: echoed(question, MAX_DETAIL), detail: detail(said) }
            }
            AppError::AttachmentNotFound { hash } => AppError::AttachmentNotFound { hash: id(hash) },
            AppError::NotWaiting { detail: said } => AppError::NotWaiting { detail: detail(said) },
            AppError::BadRequest { detail: said } => AppError::BadRequest { detail: detail(said) },
            AppError::AttachmentRefused { detail: said } => AppError::AttachmentRefused { detail: detail(said) },
            AppError::Storage { detail: said } => AppError::Storage { detail: detail(said) },
            AppError::Unreachable { detail: said } => AppError::Unreachable { detail: detail(said) },
            AppError::Internal { detail: said } => AppError::Internal { detail: detail(said) },
            other => other,
        }
    }
}

impl From<AppError> for WireError {
    fn from(error: AppError) -> Self {
        let error = error.bounded();
        let message = error.to_string();
        let (kind, id, detail, chars, max) = match error {
            AppError::SessionNotFound { id } => ("session_not_found", Some(id), None, None, None),
            AppError::EmptyMessage => ("empty_message", None, None, None, None),
            AppError::MessageTooLong { chars, max } => ("message_too_long", None, None, Some(chars), Some(max)),
            AppError::InvalidTitle { max } => ("invalid_title", None, None, None, Some(max)),
            AppError::AgentBusy => ("agent_busy", None, None, None, None),
            AppError::AlreadySent { id } => ("already_sent", Some(id), None, None, None),
            AppError::InteractionNotFound { tool_use_id } => {
                ("interaction_not_found", Some(tool_use_id), None, None, None)
            }
            AppError::InvalidAnswer { question, detail } => {
                ("invalid_answer", Some(question), Some(detail), None, None)
            }
            AppError::AlreadyAnswered => ("already_answered", None, None, None, None),
            AppError::NotWaiting { detail } => ("not_waiting", None, Some(detail), None, None),
            AppError::BadRequest { detail } => ("bad_request", None, Some(detail), None, None),
            AppError::TooLarge { max_kib } => ("too_large", None, None, None, Some(max_kib)),
            AppError::AttachmentRefused { detail } => ("attachment_refused", None, Some(detail), None, None),
            AppError::AttachmentNotFound { hash } => ("attachment_not_found", Some(hash), None, None, None),
            AppError::Unauthorized => ("unauthorized", None, None, None, None),
            AppError::ForbiddenOrigin => ("forbidden_origin", None, None, None, None),
            AppError::Storage { detail } => ("storage", None, Some(detail), None, None),
            AppError::Unreachable { detail } => ("unreachable", None, Some(detail), None, None),
            AppError::Internal { detail } => ("internal", None, Some(detail), None, None),
        };
        Self { error: kind.to_string(), message, id, detail, chars, max }
    }
}

impl From<WireError> for AppError {
    fn from(wire: WireError) -> Self {
        let detail = || wire.detail.clone().unwrap_or_default();
        let max = wire.max.unwrap_or_default();
        match wire.error.as_str() {
            "session_not_found" => Self::SessionNotFound { id: wire.id.clone().unwrap_or_default() },
            "empty_message" => Self::EmptyMessage,
            "message_too_long" => Self::MessageTooLong { chars: wire.chars.unwrap_or_default(), max },
            "invalid_title" => Self::InvalidTitle { max },
            "agent_busy" => Self::AgentBusy,
            "already_sent" => Self::AlreadySent { id: wire.id.clone().unwrap_or_default() },
            "interaction_not_found" => Self::InteractionNotFound { tool_use_id: wire.id.clone().unwrap_or_default() },
            "invalid_answer" => Self::InvalidAnswer { question: wire.id.clone().unwrap_or_default(), detail: detail() },
            "already_answered" => Self::AlreadyAnswered,
            "not_waiting" => Self::NotWaiting { detail: detail() },
            "bad_request" => Self::BadRequest { detail: detail() },
            "too_large" => Self::TooLarge { max_kib: max },
            "attachment_refused" => Self::AttachmentRefused { detail: detail() },
            "attachment_not_found" => Self::AttachmentNotFound { hash: wire.id.clone().unwrap_or_default() },
            "unauthorized" => Self::Unauthorized,
            "forbidden_origin" => Self::ForbiddenOrigin,
            "storage" => Self::Storage { detail: detail() },
            "unreachable" => Self::Unreachable { detail: detail() },
            // A kind this build does not know (a newer server): keep its message.
            "internal" => Self::Internal { detail: detail() },
            _ => Self::Internal { detail: wire.message },
        }
    }
}

impl AppError {
    pub fn status(&self) -> u16 {
        match self {
            Self::SessionNotFound { .. } | Self::InteractionNotFound { .. } | Self::AttachmentNotFound { .. } => 404,
            Self::AttachmentRefused { .. } => 415,
            Self::InvalidAnswer { .. } => 400,
            Self::AlreadyAnswered | Self::NotWaiting { .. } => 409,
            Self::EmptyMessage | Self::MessageTooLong { .. } | Self::InvalidTitle { .. } | Self::BadRequest { .. } => {
                400
            }
            Self::TooLarge { .. } => 413,
            Self::AgentBusy | Self::AlreadySent { .. } => 409,
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
            // On the server this is the request body that could not be read; in the browser,
            // the server's reply.
            ServerFnErrorErr::Deserialization(detail) if cfg!(feature = "ssr") => {
                if detail.contains("length limit exceeded") {
                    Self::TooLarge { max_kib: MAX_BODY_BYTES / 1024 }
                } else {
                    Self::BadRequest { detail }
                }
            }
            ServerFnErrorErr::MissingArg(arg) => Self::BadRequest { detail: format!("missing argument `{arg}`") },
            ServerFnErrorErr::Request(detail) | ServerFnErrorErr::Response(detail) => Self::Unreachable { detail },
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
    fn every_error_round_trips_through_its_flat_json() {
        let errors = [
            AppError::SessionNotFound { id: "abc".into() },
            AppError::EmptyMessage,
            AppError::MessageTooLong { chars: 9, max: 8 },
            AppError::InvalidTitle { max: 200 },
            AppError::AgentBusy,
            AppError::AlreadySent { id: "m1".into() },
            AppError::InteractionNotFound { tool_use_id: "t1".into() },
            AppError::InvalidAnswer { question: "Q?".into(), detail: "no".into() },
            AppError::AlreadyAnswered,
            AppError::NotWaiting { detail: "it was cancelled".into() },
            AppError::BadRequest { detail: "x".into() },
            AppError::TooLarge { max_kib: 1024 },
            AppError::AttachmentRefused { detail: "its content is not image/png".into() },
            AppError::AttachmentNotFound { hash: "ab".repeat(32) },
            AppError::Unauthorized,
            AppError::ForbiddenOrigin,
            AppError::Storage { detail: "disk".into() },
            AppError::Unreachable { detail: "net".into() },
            AppError::Internal { detail: "bug".into() },
        ];
        for error in errors {
            let json = serde_json::to_string(&error).unwrap();
            assert_eq!(serde_json::from_str::<AppError>(&json).unwrap(), error, "{json}");
        }
        let json = serde_json::to_value(AppError::SessionNotFound { id: "abc".into() }).unwrap();
        assert_eq!(json["error"], "session_not_found");
        assert_eq!(json["id"], "abc");
        assert!(json["message"].as_str().unwrap().contains("abc"));
    }

    #[test]
    fn an_unknown_kind_keeps_its_message() {
        let error: AppError = serde_json::from_str(r#"{"error":"new_kind","message":"Try later."}"#).unwrap();
        assert_eq!(error, AppError::Internal { detail: "Try later.".into() });
    }
}
