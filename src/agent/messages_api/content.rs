//! Content blocks, in both directions: what the Messages API agent sends (text, tool calls, tool
//! results, images, with prompt-caching breakpoints), what a reply and Claude Code's lines carry,
//! and the message that holds them.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::{Usage, by_type, type_of};

/// A prompt-caching breakpoint: everything up to and including the block that carries it is
/// cached for the next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CacheControl {
    Ephemeral,
}

/// One block of a message's `content`. The types AskBridge uses, and every other (thinking,
/// server tools and their results, documents, …) kept as sent in `Other`: see the module's rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self", tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolUse {
        id: String,
        name: String,
        /// `{}` at a `content_block_start`: the arguments stream as `input_json_delta`s.
        #[serde(default)]
        input: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: String,
        /// A string, or an array of content blocks ([`ContentBlock::result_text`] reads both).
        #[serde(default)]
        content: Value,
        /// Left out when the result is not an error.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        is_error: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// An image the person attached (Claude Code's stream-json user message takes the same block).
    Image {
        source: ImageSource,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// A block of a type AskBridge does not use, or does not know yet, as sent.
    #[serde(skip)]
    Other(Value),
}

impl ContentBlock {
    /// The types the variants above read.
    const TYPES: &[&str] = &["text", "tool_use", "tool_result", "image"];
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // `Self::deserialize` here is serde's derived reading (`remote = "Self"`), not this one.
        by_type(Value::deserialize(deserializer)?, Self::TYPES, Self::deserialize, Self::Other)
            .map_err(serde::de::Error::custom)
    }
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Other(block) => block.serialize(serializer),
            known => Self::serialize(known, serializer),
        }
    }
}

/// Where an image block's bytes are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ImageSource {
    /// The bytes, base64-encoded, with their media type.
    Base64 {
        media_type: String,
        data: String,
    },
    Url {
        url: String,
    },
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into(), cache_control: None }
    }

    pub fn tool_use(id: &str, name: &str, input: Value) -> Self {
        Self::ToolUse { id: id.into(), name: name.into(), input, cache_control: None }
    }

    pub fn image(source: ImageSource) -> Self {
        Self::Image { source, cache_control: None }
    }

    pub fn tool_result(tool_use_id: &str, content: impl Into<String>, is_error: bool) -> Self {
        Self::ToolResult {
            tool_use_id: tool_use_id.into(),
            content: Value::String(content.into()),
            is_error: is_error.then_some(true),
            cache_control: None,
        }
    }

    /// Its `type`: `unknown` for a block kept as sent that had none.
    pub fn kind(&self) -> &str {
        match self {
            Self::Text { .. } => "text",
            Self::ToolUse { .. } => "tool_use",
            Self::ToolResult { .. } => "tool_result",
            Self::Image { .. } => "image",
            Self::Other(block) => type_of(block).unwrap_or("unknown"),
        }
    }

    /// The block as JSON.
    pub fn into_value(self) -> Value {
        match self {
            Self::Other(block) => block,
            known => serde_json::to_value(known).unwrap_or_default(),
        }
    }

    /// Sets the block's prompt-caching breakpoint (a block kept as sent has none to set).
    pub fn set_cache_control(&mut self, value: Option<CacheControl>) {
        match self {
            Self::Text { cache_control, .. }
            | Self::ToolUse { cache_control, .. }
            | Self::ToolResult { cache_control, .. }
            | Self::Image { cache_control, .. } => *cache_control = value,
            Self::Other(_) => {}
        }
    }

    /// A tool result's content as text (it may be a string or an array of text blocks).
    pub fn result_text(content: &Value) -> String {
        match content {
            Value::String(text) => text.clone(),
            Value::Array(blocks) => {
                blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
            }
            Value::Null => String::new(),
            other => other.to_string(),
        }
    }
}

/// A message of the model's: `message_start`'s (its content still empty), or a whole one as
/// Claude Code's `assistant` lines carry it (one content block a line, several lines sharing `id`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Message {
    pub id: String,
    pub model: Option<String>,
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// This request's tokens (each `assistant` line of a reply repeats them).
    #[serde(default)]
    pub usage: Option<Usage>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_serialize_as_the_api_reads_them() {
        let mut result = ContentBlock::tool_result("toolu_1", "Your questions have been answered", false);
        result.set_cache_control(Some(CacheControl::Ephemeral));
        let blocks = vec![
            result,
            ContentBlock::tool_result("toolu_2", "declined", true),
            ContentBlock::text("hi"),
            ContentBlock::tool_use("toolu_3", "Bash", json!({"command": "ls"})),
            ContentBlock::image(ImageSource::Base64 { media_type: "image/png".into(), data: "iVBO".into() }),
        ];
        assert_eq!(
            serde_json::to_value(&blocks).unwrap(),
            json!([
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Your questions have been answered",
                 "cache_control": {"type": "ephemeral"}},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "declined", "is_error": true},
                {"type": "text", "text": "hi"},
                {"type": "tool_use", "id": "toolu_3", "name": "Bash", "input": {"command": "ls"}},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
            ])
        );
        for block in blocks {
            assert!(ContentBlock::TYPES.contains(&block.kind()), "{block:?}");
            let again: ContentBlock = serde_json::from_value(serde_json::to_value(&block).unwrap()).unwrap();
            assert_eq!(again, block);
        }
    }

    #[test]
    fn a_block_of_an_unknown_type_is_kept_as_sent_and_a_known_one_without_its_fields_is_an_error() {
        let thinking = json!({"type": "thinking", "thinking": "Hmm.", "signature": "c2ln"});
        let block: ContentBlock = serde_json::from_value(thinking.clone()).unwrap();
        assert_eq!(block, ContentBlock::Other(thinking.clone()));
        assert_eq!(block.kind(), "thinking");
        assert_eq!(serde_json::to_value(&block).unwrap(), thinking, "sent again as it came");
        assert_eq!(block.into_value(), thinking);
        let untyped: ContentBlock = serde_json::from_value(json!({"text": "no type"})).unwrap();
        assert_eq!(untyped.kind(), "unknown");
        let error = serde_json::from_value::<ContentBlock>(json!({"type": "tool_use", "name": "Bash"})).unwrap_err();
        assert!(error.to_string().contains("missing field `id`"), "{error}");
    }

    #[test]
    fn a_messages_unknown_blocks_leave_its_known_ones_readable() {
        let message: Message = serde_json::from_value(json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-opus-5-5",
            "content": [{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
                        {"type": "text", "text": "Found it."}],
            "usage": {"input_tokens": 3, "output_tokens": 4}
        }))
        .unwrap();
        assert_eq!(message.content[0].kind(), "server_tool_use");
        assert_eq!(message.content[1], ContentBlock::text("Found it."));
        assert_eq!(message.usage.map(|u| u.context_tokens()), Some(7));
    }

    #[test]
    fn a_tool_results_content_reads_as_text_whether_a_string_or_blocks() {
        assert_eq!(ContentBlock::result_text(&json!("done")), "done");
        assert_eq!(
            ContentBlock::result_text(&json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])),
            "a\nb"
        );
        assert_eq!(ContentBlock::result_text(&Value::Null), "");
    }
}
