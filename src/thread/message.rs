//! A thread's messages and what they hold: text, tool calls with the person's part, images.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::interaction::Interaction;
use crate::question::Question;

use super::attachment::AttachmentRef;
use super::usage::Usage;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
    /// Something the product itself says in the thread: an agent error, an interrupted turn.
    Notice,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub id: String,
    pub role: Role,
    pub blocks: Vec<Block>,
    /// Still receiving deltas.
    pub streaming: bool,
    pub created_at_ms: i64,
    /// On the last message of a turn: what the turn used (tokens, cost, how full the context).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

impl Message {
    /// What the person wrote, with the files they attached (images shown as such).
    pub fn from_person(id: &str, text: &str, attachments: &[AttachmentRef], at_ms: i64) -> Self {
        let files = attachments.iter().map(|file| match file.kind() {
            Some(super::attachment::Kind::Image(_)) => Block::Image(Image::attached(file)),
            _ => Block::File(file.clone()),
        });
        Self {
            id: id.to_string(),
            role: Role::User,
            blocks: std::iter::once(Block::Text { text: text.to_string() }).chain(files).collect(),
            streaming: false,
            created_at_ms: at_ms,
            usage: None,
        }
    }

    /// What AskBridge itself says in the thread (an agent error, an interrupted turn).
    pub(super) fn notice(id: &str, text: &str, at_ms: i64) -> Self {
        Self {
            id: id.to_string(),
            role: Role::Notice,
            blocks: vec![Block::Text { text: text.to_string() }],
            streaming: false,
            created_at_ms: at_ms,
            usage: None,
        }
    }

    /// The agent's reply as it starts: empty, streaming.
    pub(super) fn reply(id: &str, at_ms: i64) -> Self {
        Self {
            id: id.to_string(),
            role: Role::Assistant,
            blocks: Vec::new(),
            streaming: true,
            created_at_ms: at_ms,
            usage: None,
        }
    }

    /// The plain text of the message, tool calls left out.
    pub fn text(&self) -> String {
        self.blocks
            .iter()
            .filter_map(|block| match block {
                Block::Text { text } => Some(text.as_str()),
                Block::ToolCall(_) | Block::Image(_) | Block::File(_) => None,
            })
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// The files attached to the message (images and text files), in order.
    pub fn attachments(&self) -> Vec<AttachmentRef> {
        self.blocks
            .iter()
            .filter_map(|block| match block {
                Block::Image(image) => image.attachment(),
                Block::File(file) => Some(file.clone()),
                Block::Text { .. } | Block::ToolCall(_) => None,
            })
            .collect()
    }
}

// Most blocks of a thread are tool calls: boxing the large variant would allocate once per block
// in both faces, and change every match in the reducer and the views, to make text blocks smaller.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Block {
    Text {
        text: String,
    },
    ToolCall(ToolCall),
    /// A picture in a person's message (a pasted screenshot), kept as the agent received it.
    Image(Image),
    /// A text file the person attached, stored apart: its name, type and size, by its hash.
    File(AttachmentRef),
}

/// An image as the Messages API carries it: base64 bytes with their media type, or (rarely) a URL;
/// or, for one the person attached here, the stored file's hash (the thread does not carry its
/// bytes: every snapshot and live event would).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Image {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`; empty when the source did not say.
    #[serde(default)]
    pub media_type: String,
    /// The bytes, base64-encoded (the API's `source.data`); empty for a `url` image.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub data: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The stored file (`/api/attachments/<hash>`), for an image attached here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// Its file name, when it had one: the `<img>`'s alt text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Image {
    /// An image attached here, by its stored file.
    pub fn attached(file: &AttachmentRef) -> Self {
        Self {
            media_type: file.media_type.clone(),
            hash: Some(file.hash.clone()),
            name: file.name.clone(),
            ..Self::default()
        }
    }

    /// What an `<img src>` takes: the stored file's address, a `data:` URL of the bytes, or the
    /// image's own URL.
    pub fn src(&self) -> String {
        match (&self.hash, &self.url) {
            (Some(hash), _) if self.data.is_empty() => super::attachment::attachment_url(hash),
            (_, Some(url)) if self.data.is_empty() => url.clone(),
            _ => format!("data:{};base64,{}", self.media_type, self.data),
        }
    }

    /// The stored file this image is, if it was attached here.
    pub fn attachment(&self) -> Option<AttachmentRef> {
        let hash = self.hash.clone()?;
        Some(AttachmentRef { hash, media_type: self.media_type.clone(), name: self.name.clone(), size: 0 })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The agent's `tool_use` id.
    pub id: String,
    pub name: String,
    /// The arguments once they are complete.
    pub input: Option<Value>,
    /// The arguments as streamed so far (partial JSON) while `input` is still `None`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub partial_input: String,
    /// For a question tool, from its first streamed arguments until its card opens: the questions
    /// readable so far (all of them once the arguments are complete).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preview: Vec<Question>,
    pub status: ToolStatus,
    pub result: Option<String>,
    /// The person's part, for tools that ask them something.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interaction: Option<Interaction>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// The agent is still writing the arguments.
    Streaming,
    Running,
    Done,
    Failed,
    /// The turn ended (interrupted, agent gone) before the tool finished.
    Cancelled,
}

impl ToolStatus {
    pub fn is_finished(self) -> bool {
        matches!(self, Self::Done | Self::Failed | Self::Cancelled)
    }
}
