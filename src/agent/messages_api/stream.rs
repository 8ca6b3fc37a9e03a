//! A streamed reply: the server-sent events of `POST /v1/messages` with `stream: true`, which
//! Claude Code passes on as `stream_event` lines (`--include-partial-messages`); and the API's
//! error object, in an `error` event or an error response.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::{ContentBlock, Message, Usage, by_type, type_of};

/// One event of a streamed reply.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(remote = "Self", tag = "type", rename_all = "snake_case")]
pub enum Event {
    MessageStart {
        message: Message,
    },
    /// A block opens: text empty, a tool call's `input` `{}`.
    ContentBlockStart {
        index: usize,
        content_block: ContentBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: MessageDelta,
        /// Cumulative: the counts so far ([`Usage::update`]).
        #[serde(default)]
        usage: Option<Usage>,
    },
    MessageStop,
    Ping,
    Error {
        error: ErrorBody,
    },
    /// An event type this version does not know, as sent.
    #[serde(skip)]
    Other(Value),
}

impl Event {
    /// The types the variants above read.
    const TYPES: &[&str] = &[
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
        "error",
    ];

    /// Reads one server-sent event's `data`: what is not JSON, or a known event without its
    /// fields, is an error that says so.
    pub fn parse(data: &str) -> Result<Self, String> {
        let value: Value = serde_json::from_str(data).map_err(|e| format!("an event is not JSON ({e})"))?;
        let kind = type_of(&value).unwrap_or_default().to_string();
        serde_json::from_value(value).map_err(|e| format!("a `{kind}` event is not as expected ({e})"))
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // `Self::deserialize` here is serde's derived reading (`remote = "Self"`), not this one.
        by_type(Value::deserialize(deserializer)?, Self::TYPES, Self::deserialize, Self::Other)
            .map_err(serde::de::Error::custom)
    }
}

/// A `content_block_delta`'s delta.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self", tag = "type")]
pub enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    /// Thinking, signatures, citations, or a type yet to come, as sent.
    #[serde(skip)]
    Other(Value),
}

impl Delta {
    /// The types the variants above read.
    const TYPES: &[&str] = &["text_delta", "input_json_delta"];

    /// The delta as JSON.
    pub fn into_value(self) -> Value {
        match self {
            Self::Other(delta) => delta,
            known => serde_json::to_value(known).unwrap_or_default(),
        }
    }
}

impl<'de> Deserialize<'de> for Delta {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // `Self::deserialize` here is serde's derived reading (`remote = "Self"`), not this one.
        by_type(Value::deserialize(deserializer)?, Self::TYPES, Self::deserialize, Self::Other)
            .map_err(serde::de::Error::custom)
    }
}

impl Serialize for Delta {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Other(delta) => delta.serialize(serializer),
            known => Self::serialize(known, serializer),
        }
    }
}

/// `message_delta`'s `delta`: why the reply stopped.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MessageDelta {
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
        let parsed: Vec<Event> = events.iter().map(|e| Event::parse(e).unwrap()).collect();
        let Event::MessageStart { message } = &parsed[0] else { panic!("{:?}", parsed[0]) };
        assert_eq!((message.id.as_str(), message.model.as_deref()), ("msg_1", Some("claude-sonnet-4-5")));
        assert_eq!(message.usage.as_ref().and_then(|u| u.cache_read_input_tokens), Some(10));
        assert_eq!(parsed[1], Event::Ping);
        assert_eq!(parsed[2], Event::ContentBlockStart { index: 0, content_block: ContentBlock::text("") });
        assert_eq!(parsed[3], Event::ContentBlockDelta { index: 0, delta: Delta::Text { text: "Hello".into() } });
        assert_eq!(parsed[4], Event::ContentBlockStop { index: 0 });
        assert_eq!(
            parsed[5],
            Event::ContentBlockStart {
                index: 1,
                content_block: ContentBlock::tool_use("toolu_1", "AskUserQuestion", json!({}))
            }
        );
        assert_eq!(
            parsed[6],
            Event::ContentBlockDelta { index: 1, delta: Delta::InputJson { partial_json: "{\"questions\":".into() } }
        );
        let Event::MessageDelta { delta, usage } = &parsed[7] else { panic!("{:?}", parsed[7]) };
        assert_eq!(delta.stop_reason.as_deref(), Some("tool_use"));
        assert_eq!(usage.as_ref().and_then(|u| u.output_tokens), Some(15));
        assert_eq!(parsed[8], Event::MessageStop);
        assert_eq!(
            parsed[9],
            Event::Error { error: ErrorBody { kind: "overloaded_error".into(), message: "Overloaded".into() } }
        );
        for line in events {
            let value: Value = serde_json::from_str(line).unwrap();
            assert!(Event::TYPES.contains(&type_of(&value).unwrap()), "{line}");
        }
    }

    #[test]
    fn unknown_events_blocks_and_deltas_are_kept_not_errors() {
        let event = Event::parse(r#"{"type":"message_annotation","note":1}"#).unwrap();
        assert_eq!(event, Event::Other(json!({"type":"message_annotation","note":1})));
        let start = Event::parse(
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
        )
        .unwrap();
        assert!(
            matches!(start, Event::ContentBlockStart { content_block: ContentBlock::Other(ref block), .. } if block["type"] == "thinking")
        );
        let thinking = json!({"type": "thinking_delta", "thinking": "Hmm"});
        let delta =
            Event::parse(&json!({"type": "content_block_delta", "index": 0, "delta": thinking}).to_string()).unwrap();
        assert_eq!(delta, Event::ContentBlockDelta { index: 0, delta: Delta::Other(thinking.clone()) });
        assert_eq!(Delta::Other(thinking.clone()).into_value(), thinking);
        assert_eq!(
            Delta::Text { text: "Hi".into() }.into_value(),
            json!({"type": "text_delta", "text": "Hi"}),
            "a known delta as the API sent it"
        );
    }

    #[test]
    fn a_known_event_in_a_shape_the_api_does_not_send_is_an_error() {
        assert!(Event::parse("not json").unwrap_err().starts_with("an event is not JSON"));
        let error = Event::parse(r#"{"type":"content_block_stop"}"#).unwrap_err();
        assert_eq!(error, "a `content_block_stop` event is not as expected (missing field `index`)");
        // The same rule for what a known event holds: a known block or delta without its fields.
        let start = Event::parse(r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use"}}"#);
        assert!(start.unwrap_err().contains("missing field `id`"));
        let delta = Event::parse(r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta"}}"#);
        assert!(delta.unwrap_err().contains("missing field `text`"));
    }
}
