//! The request AskBridge sends to `POST /v1/messages`, as serde types that match the JSON
//! exactly. Its content blocks, and everything the reply streams back, are the Messages API's
//! shared model (`agent::messages_api`), which Claude Code's stream-json reads too.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::messages_api::{CacheControl, ContentBlock};

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        // Byte for byte: the order of the fields is the order the API has always been sent.
        assert_eq!(
            serde_json::to_string(&message).unwrap(),
            r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"Your questions have been answered","cache_control":{"type":"ephemeral"}},{"type":"tool_result","tool_use_id":"toolu_2","content":"declined","is_error":true},{"type":"text","text":"hi"}]}"#
        );
        assert_eq!(
            serde_json::to_value(SystemBlock::cached("Be brief.".into())).unwrap(),
            json!({"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}})
        );
    }
}
