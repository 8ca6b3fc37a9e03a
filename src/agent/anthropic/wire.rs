//! The Messages API on the wire: the request AskBridge sends to `POST /v1/messages` and the
//! server-sent events of the streamed reply, as serde types that match the JSON exactly.
//!
//! Event and block types this version does not know are kept as their JSON
//! ([`StreamEvent::Unknown`], [`StartBlock::Other`], [`Delta::Other`]): the API grows new ones,
//! and a new one must never break a turn.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The body of `POST /v1/messages`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessagesRequest {
    pub model: String,
    pub max_tokens: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub system: Vec<SystemBlock>,
    pub messages: Vec<InputMessage>,
    pub tools: Vec<ToolDefinition>,
    pub stream: bool,
}

/// A prompt-caching breakpoint: everything up to and including the block that carries it is
/// cached for the next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CacheControl {
    Ephemeral,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SystemBlock {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

impl SystemBlock {
    pub fn cached(text: String) -> Self {
        Self { kind: "text", text, cache_control: Some(CacheControl::Ephemeral) }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDefinition {
    pub name: &'static str,
    pub description: &'static str,
    pub input_schema: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

/// One turn of the conversation sent back to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputMessage {
    pub role: Role,
    pub content: Vec<ContentBlock>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: String,
        content: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// An image the person attached (Claude Code's stream-json user message takes the same block).
    Image {
        source: ImageSource,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
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
        Self::ToolResult { tool_use_id: tool_use_id.into(), content: content.into(), is_error, cache_control: None }
    }

    pub fn set_cache_control(&mut self, value: Option<CacheControl>) {
        match self {
            Self::Text { cache_control, .. }
            | Self::ToolUse { cache_control, .. }
            | Self::ToolResult { cache_control, .. }
            | Self::Image { cache_control, .. } => *cache_control = value,
        }
    }
}

/// Token counts as the API reports them; every field may be missing from a given event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiUsage {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
}

impl ApiUsage {
    /// Takes the counts `later` reports (a `message_delta`'s usage is cumulative).
    pub fn update(&mut self, later: &ApiUsage) {
        let take = |mine: &mut Option<u64>, theirs: Option<u64>| {
            if theirs.is_some() {
                *mine = theirs;
            }
        };
        take(&mut self.input_tokens, later.input_tokens);
        take(&mut self.output_tokens, later.output_tokens);
        take(&mut self.cache_creation_input_tokens, later.cache_creation_input_tokens);
        take(&mut self.cache_read_input_tokens, later.cache_read_input_tokens);
    }
}

/// `message_start`'s message: the reply's id and model, its content still empty.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MessageStart {
    pub id: String,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub usage: ApiUsage,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MessageDeltaBody {
    #[serde(default)]
    pub stop_reason: Option<String>,
    #[serde(default)]
    pub stop_sequence: Option<String>,
}

/// The `error` object of an error response or an `error` event.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ErrorBody {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub message: String,
}

/// `{"type": "error", "error": {...}}`, the body of every error response.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ErrorResponse {
    pub error: ErrorBody,
}

/// One server-sent event of a streamed reply.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    MessageStart {
        message: MessageStart,
    },
    ContentBlockStart {
        index: usize,
        content_block: StartBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: MessageDeltaBody,
        usage: Option<ApiUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: ErrorBody,
    },
    /// An event type this version does not know: kept, not an error.
    Unknown {
        kind: String,
        data: Value,
    },
}

/// The known events, as serde reads them; [`StreamEvent::parse`] adds the unknown ones.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum KnownEvent {
    MessageStart {
        message: MessageStart,
    },
    ContentBlockStart {
        index: usize,
        content_block: Value,
    },
    ContentBlockDelta {
        index: usize,
        delta: Value,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: Option<ApiUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: ErrorBody,
    },
}

const KNOWN_EVENTS: &[&str] = &[
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "ping",
    "error",
];

impl StreamEvent {
    /// Reads one event's `data`. An unknown `type` is [`StreamEvent::Unknown`]; a known one that
    /// does not have its fields is an error (the stream is not what the API sends).
    pub fn parse(data: &str) -> Result<Self, String> {
        let value: Value = serde_json::from_str(data).map_err(|e| format!("an event is not JSON ({e})"))?;
        let kind = value.get("type").and_then(Value::as_str).unwrap_or_default().to_string();
        if !KNOWN_EVENTS.contains(&kind.as_str()) {
            return Ok(Self::Unknown { kind, data: value });
        }
        let known: KnownEvent =
            serde_json::from_value(value).map_err(|e| format!("a `{kind}` event is not as expected ({e})"))?;
        Ok(match known {
            KnownEvent::MessageStart { message } => Self::MessageStart { message },
            KnownEvent::ContentBlockStart { index, content_block } => {
                Self::ContentBlockStart { index, content_block: StartBlock::from_value(content_block) }
            }
            KnownEvent::ContentBlockDelta { index, delta } => {
                Self::ContentBlockDelta { index, delta: Delta::from_value(delta) }
            }
            KnownEvent::ContentBlockStop { index } => Self::ContentBlockStop { index },
            KnownEvent::MessageDelta { delta, usage } => Self::MessageDelta { delta, usage },
            KnownEvent::MessageStop => Self::MessageStop,
            KnownEvent::Ping => Self::Ping,
            KnownEvent::Error { error } => Self::Error { error },
        })
    }
}

/// The block a `content_block_start` opens.
#[derive(Debug, Clone, PartialEq)]
pub enum StartBlock {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    /// A block type AskBridge does not use (thinking, a server tool, …), as sent.
    Other {
        kind: String,
        block: Value,
    },
}

impl StartBlock {
    fn from_value(block: Value) -> Self {
        let text = |key: &str| block.get(key).and_then(Value::as_str).map(str::to_string);
        match block.get("type").and_then(Value::as_str) {
            Some("text") => Self::Text { text: text("text").unwrap_or_default() },
            Some("tool_use") => match (text("id"), text("name")) {
                (Some(id), Some(name)) => Self::ToolUse { id, name },
                _ => Self::Other { kind: "tool_use".into(), block },
            },
            other => Self::Other { kind: other.unwrap_or("unknown").to_string(), block },
        }
    }
}

/// A `content_block_delta`'s delta.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta {
    Text {
        text: String,
    },
    InputJson {
        partial_json: String,
    },
    /// Thinking, signatures, citations, or a type yet to come: kept as sent.
    Other {
        kind: String,
        delta: Value,
    },
}

impl Delta {
    fn from_value(delta: Value) -> Self {
        let text = |key: &str| delta.get(key).and_then(Value::as_str).map(str::to_string);
        match (delta.get("type").and_then(Value::as_str), text("text"), text("partial_json")) {
            (Some("text_delta"), Some(text), _) => Self::Text { text },
            (Some("input_json_delta"), _, Some(partial_json)) => Self::InputJson { partial_json },
            (kind, _, _) => Self::Other { kind: kind.unwrap_or("unknown").to_string(), delta },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_event_of_a_streamed_reply_is_read() {
        let events = [
            r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":10,"output_tokens":1}}}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"AskUserQuestion","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"questions\":"}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":15}}"#,
            r#"{"type":"message_stop"}"#,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ];
        let parsed: Vec<StreamEvent> = events.iter().map(|e| StreamEvent::parse(e).unwrap()).collect();
        let StreamEvent::MessageStart { message } = &parsed[0] else { panic!("{:?}", parsed[0]) };
        assert_eq!((message.id.as_str(), message.model.as_str()), ("msg_1", "claude-sonnet-4-5"));
        assert_eq!(message.usage.cache_read_input_tokens, Some(10));
        assert_eq!(parsed[1], StreamEvent::Ping);
        assert_eq!(
            parsed[2],
            StreamEvent::ContentBlockStart { index: 0, content_block: StartBlock::Text { text: "".into() } }
        );
        assert_eq!(parsed[3], StreamEvent::ContentBlockDelta { index: 0, delta: Delta::Text { text: "Hello".into() } });
        assert_eq!(parsed[4], StreamEvent::ContentBlockStop { index: 0 });
        assert_eq!(
            parsed[5],
            StreamEvent::ContentBlockStart {
                index: 1,
                content_block: StartBlock::ToolUse { id: "toolu_1".into(), name: "AskUserQuestion".into() }
            }
        );
        assert_eq!(
            parsed[6],
            StreamEvent::ContentBlockDelta {
                index: 1,
                delta: Delta::InputJson { partial_json: "{\"questions\":".into() }
            }
        );
        let StreamEvent::MessageDelta { delta, usage } = &parsed[7] else { panic!("{:?}", parsed[7]) };
        assert_eq!(delta.stop_reason.as_deref(), Some("tool_use"));
        assert_eq!(usage.as_ref().and_then(|u| u.output_tokens), Some(15));
        assert_eq!(parsed[8], StreamEvent::MessageStop);
        assert_eq!(
            parsed[9],
            StreamEvent::Error { error: ErrorBody { kind: "overloaded_error".into(), message: "Overloaded".into() } }
        );
    }

    #[test]
    fn unknown_events_blocks_and_deltas_are_kept_not_errors() {
        let event = StreamEvent::parse(r#"{"type":"message_annotation","note":1}"#).unwrap();
        assert_eq!(
            event,
            StreamEvent::Unknown {
                kind: "message_annotation".into(),
                data: json!({"type":"message_annotation","note":1})
            }
        );
        let start = StreamEvent::parse(
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
        )
        .unwrap();
        assert!(
            matches!(start, StreamEvent::ContentBlockStart { content_block: StartBlock::Other { ref kind, .. }, .. } if kind == "thinking")
        );
        let delta = StreamEvent::parse(
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Hmm"}}"#,
        )
        .unwrap();
        assert!(
            matches!(delta, StreamEvent::ContentBlockDelta { delta: Delta::Other { ref kind, .. }, .. } if kind == "thinking_delta")
        );
        assert!(StreamEvent::parse("not json").is_err());
        assert!(StreamEvent::parse(r#"{"type":"content_block_stop"}"#).is_err(), "a known event without its index");
    }

    #[test]
    fn request_blocks_serialize_as_the_api_reads_them() {
        let mut result = ContentBlock::tool_result("toolu_1", "Your questions have been answered", false);
        result.set_cache_control(Some(CacheControl::Ephemeral));
        let message = InputMessage {
            role: Role::User,
            content: vec![result, ContentBlock::tool_result("toolu_2", "declined", true), ContentBlock::text("hi")],
        };
        assert_eq!(
            serde_json::to_value(&message).unwrap(),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Your questions have been answered",
                 "cache_control": {"type": "ephemeral"}},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "declined", "is_error": true},
                {"type": "text", "text": "hi"},
            ]})
        );
        assert_eq!(
            serde_json::to_value(SystemBlock::cached("Be brief.".into())).unwrap(),
            json!({"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}})
        );
    }
}
