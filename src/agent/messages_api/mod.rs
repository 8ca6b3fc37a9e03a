//! The Anthropic Messages API on the wire, as serde types that match its JSON: the content blocks
//! of its messages (`content.rs`), the token counts it reports (`usage.rs`), and the events of a
//! streamed reply (`stream.rs`); and a person's message, attached files included, as those blocks
//! (`files.rs`). Both Claude agents speak it: the Messages API agent
//! (`agent::anthropic`) over HTTP, and Claude Code, whose stream-json embeds the API's messages
//! and, with `--include-partial-messages`, its raw events (`agent::claude::protocol`). What only
//! one of them needs stays with it: the HTTP request in `anthropic/wire.rs`, the CLI's envelopes
//! in `claude/protocol/`.
//!
//! One rule for everything the API tags by `type` (events, content blocks, deltas), the same for
//! both agents: a type this version knows is read whole, and one that lacks its fields is an
//! error (the stream is not what the API sends); a type it does not know is kept as sent, in the
//! enum's `Other` arm. The API grows new types (thinking, server tools, citations), and a new one
//! must never break a turn. [`by_type`] applies the rule; each enum lists the types it knows.

mod content;
mod files;
mod stream;
mod usage;

use serde_json::Value;

pub use content::{CacheControl, ContentBlock, ImageSource, Message};
pub use files::message_content;
pub use stream::{Delta, ErrorBody, ErrorResponse, Event, MessageDelta};
pub use usage::{CacheCreation, ServerToolUse, Usage};

/// An object's `type`, if it has one.
fn type_of(value: &Value) -> Option<&str> {
    value.get("type").and_then(Value::as_str)
}

/// The rule above, for one object: read whole by `read` (the enum's derived reading, which knows
/// only the types in `known`) when its type is known, else kept as sent by `kept`.
///
/// The enums derive their reading with `#[serde(remote = "Self")]`: serde then writes it as the
/// inherent `Self::deserialize` (strict, known types only), and their `Deserialize` impl, which
/// every caller and every enclosing type uses, goes through here.
fn by_type<T>(
    value: Value,
    known: &[&str],
    read: impl FnOnce(Value) -> Result<T, serde_json::Error>,
    kept: impl FnOnce(Value) -> T,
) -> Result<T, serde_json::Error> {
    match type_of(&value) {
        Some(kind) if known.contains(&kind) => read(value),
        _ => Ok(kept(value)),
    }
}
