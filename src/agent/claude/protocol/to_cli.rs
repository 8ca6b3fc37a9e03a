//! What the host writes to the CLI's stdin: user messages, its own control requests, and its
//! replies to the CLI's — the person's answers and decisions in the exact form the CLI reads.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::question::QuestionAnswer;

/// A line the host writes to the CLI's stdin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToCli {
    User { message: UserContent, parent_tool_use_id: Option<String>, session_id: String },
    ControlRequest { request_id: String, request: HostRequest },
    ControlResponse { response: ControlResponse },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserContent {
    pub role: String,
    /// A string, or an array of content blocks.
    pub content: Value,
}

impl ToCli {
    pub fn user_text(text: &str) -> Self {
        Self::User {
            message: UserContent { role: "user".into(), content: Value::String(text.into()) },
            parent_tool_use_id: None,
            session_id: String::new(),
        }
    }

    /// A user message of content blocks: the text and the files attached to it, as the Messages
    /// API writes them (`agent::messages_api::message_content`).
    pub fn user_content(content: Value) -> Self {
        Self::User {
            message: UserContent { role: "user".into(), content },
            parent_tool_use_id: None,
            session_id: String::new(),
        }
    }

    pub fn success(request_id: &str, response: impl Serialize) -> Self {
        let response = serde_json::to_value(response).expect("replies serialize");
        Self::ControlResponse { response: ControlResponse::Success { request_id: request_id.into(), response } }
    }

    pub fn error(request_id: &str, error: &str) -> Self {
        Self::ControlResponse {
            response: ControlResponse::Error { request_id: request_id.into(), error: error.into() },
        }
    }

    /// One NDJSON line, newline included.
    pub fn to_line(&self) -> String {
        let mut line = serde_json::to_string(self).expect("protocol messages serialize");
        line.push('\n');
        line
    }
}

/// Requests the host makes of the CLI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum HostRequest {
    Initialize {
        hooks: Option<Value>,
    },
    Interrupt,
    SetPermissionMode {
        mode: crate::approval::PermissionMode,
    },
    /// Answered `{"model": "claude-haiku-5-5"}` for `haiku`; the next request uses it (captured
    /// on 2.1.332 with the mock API).
    SetModel {
        model: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum ControlResponse {
    Success {
        request_id: String,
        #[serde(default)]
        response: Value,
    },
    Error {
        request_id: String,
        error: String,
    },
}

impl ControlResponse {
    pub fn request_id(&self) -> &str {
        match self {
            Self::Success { request_id, .. } | Self::Error { request_id, .. } => request_id,
        }
    }
}

/// The PreToolUse hook registration for the question tools (answer path 2).
pub fn question_hooks(callback_id: &str) -> Value {
    json!({"PreToolUse": [{"matcher": "AskUserQuestion", "hookCallbackIds": [callback_id]}]})
}

/// The question's arguments with the person's answers added, as `updatedInput`: `answers` maps
/// each question's text to its answer (several labels joined with ", ", free text verbatim),
/// `annotations` carries notes.
pub fn input_with_answers(input: &Value, answers: &[QuestionAnswer]) -> Value {
    let mut updated = input.as_object().cloned().unwrap_or_default();
    let mut by_question = Map::new();
    let mut annotations = Map::new();
    for answer in answers {
        by_question.insert(answer.question.clone(), Value::String(answer.summary()));
        if let Some(notes) = &answer.notes {
            annotations.insert(answer.question.clone(), json!({"notes": notes}));
        }
    }
    updated.insert("answers".into(), Value::Object(by_question));
    if !annotations.is_empty() {
        updated.insert("annotations".into(), Value::Object(annotations));
    }
    Value::Object(updated)
}

/// What the host answers a request of the CLI's with, in the form the request's path reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Reply {
    /// A `can_use_tool` answer.
    CanUseTool(PermissionReply),
    /// A hook's answer.
    Hook(HookOutput),
}

/// A `can_use_tool` answer (a terminal's PermissionRequest hook takes the same as its `decision`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "behavior", rename_all = "snake_case")]
pub enum PermissionReply {
    /// Run the tool with `updatedInput` (for a question: with the person's answers added); with
    /// `updatedPermissions`, the rule the person chose to keep ("always allow").
    Allow {
        #[serde(rename = "updatedInput")]
        updated_input: Value,
        #[serde(rename = "updatedPermissions", skip_serializing_if = "Option::is_none")]
        updated_permissions: Option<Vec<Value>>,
    },
    /// Do not run it; the model reads `message`.
    Deny { message: String },
}

/// A hook's answer: `{}` (no decision) or a decision for the hook's event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HookOutput {
    #[serde(rename = "hookSpecificOutput", skip_serializing_if = "Option::is_none")]
    pub hook_specific_output: Option<HookDecision>,
}

/// A hook's decision, by the event it answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "hookEventName")]
pub enum HookDecision {
    PreToolUse(PreToolUse),
    /// A terminal's PermissionRequest hook answers with what a `can_use_tool` answer would be
    /// (docs/claude-terminal.md §1, §2).
    PermissionRequest {
        decision: PermissionReply,
    },
}

/// A PreToolUse hook's decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "permissionDecision", rename_all = "snake_case")]
pub enum PreToolUse {
    /// Allowed with `updatedInput` carrying the answers, the question is answered at once and the
    /// model reads exactly what the can_use_tool answer gives it (§8).
    Allow {
        #[serde(rename = "updatedInput")]
        updated_input: Value,
    },
    Deny {
        #[serde(rename = "permissionDecisionReason")]
        reason: String,
    },
    /// Parks the call (§12): the CLI ends its turn with `stop_reason: tool_deferred`, and a later
    /// `--resume` asks again.
    Defer,
}

impl HookOutput {
    /// No decision: the hook lets the CLI go on as it would.
    pub fn none() -> Self {
        Self { hook_specific_output: None }
    }

    fn decide(decision: HookDecision) -> Self {
        Self { hook_specific_output: Some(decision) }
    }
}

impl From<PermissionReply> for Reply {
    fn from(reply: PermissionReply) -> Self {
        Self::CanUseTool(reply)
    }
}

impl From<HookOutput> for Reply {
    fn from(reply: HookOutput) -> Self {
        Self::Hook(reply)
    }
}

/// `can_use_tool` answers.
pub fn allow(updated_input: Value) -> PermissionReply {
    PermissionReply::Allow { updated_input, updated_permissions: None }
}

pub fn deny(message: &str) -> PermissionReply {
    PermissionReply::Deny { message: message.to_string() }
}

/// PreToolUse hook answers (§8).
pub fn hook_allow(updated_input: Value) -> HookOutput {
    HookOutput::decide(HookDecision::PreToolUse(PreToolUse::Allow { updated_input }))
}

/// Parks the call (§12).
pub fn hook_defer() -> HookOutput {
    HookOutput::decide(HookDecision::PreToolUse(PreToolUse::Defer))
}

pub fn hook_deny(reason: &str) -> HookOutput {
    HookOutput::decide(HookDecision::PreToolUse(PreToolUse::Deny { reason: reason.to_string() }))
}

/// A terminal's PermissionRequest hook answers with what a `can_use_tool` answer would be
/// (`allow` with `updatedInput`, or `deny` with the message the model reads), as its `decision`
/// (docs/claude-terminal.md §1, §2).
pub fn permission_request_reply(decision: PermissionReply) -> HookOutput {
    HookOutput::decide(HookDecision::PermissionRequest { decision })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::claude::protocol::HookCallback;
    use crate::agent::claude::protocol::traces::{first_exchange, trace_lines};

    #[test]
    fn every_line_to_the_cli_has_the_shape_our_types_write() {
        for (file, direction, mut msg) in trace_lines() {
            if direction != "to_cli" {
                continue;
            }
            // An initialize without hooks is written with `"hooks": null` by some hosts and
            // without the key by others (l_defer_resume); the CLI reads both the same.
            if msg["request"]["subtype"] == "initialize" && msg["request"].get("hooks").is_none() {
                msg["request"]["hooks"] = Value::Null;
            }
            let ours: ToCli = serde_json::from_value(msg.clone()).unwrap_or_else(|e| panic!("{file}: {e}: {msg}"));
            let written: Value = serde_json::from_str(&ours.to_line()).unwrap();
            assert_eq!(written, msg, "{file}");
        }
    }

    /// A reply as the CLI reads it.
    fn wire(reply: impl Into<Reply>) -> Value {
        serde_json::to_value(reply.into()).unwrap()
    }

    #[test]
    fn answers_are_written_exactly_as_the_traces_show() {
        let (request, response) = first_exchange("a_allow.jsonl", "can_use_tool");
        let answers = [
            QuestionAnswer::new("Which auth method should we use?", &["JWT"], None, None),
            QuestionAnswer::new("Which features?", &["Dark mode", "i18n"], None, None),
        ];
        assert_eq!(wire(allow(input_with_answers(&request["input"], &answers))), response);

        let (request, response) = first_exchange("c_other.jsonl", "can_use_tool");
        let answers = [
            QuestionAnswer::new("Which auth method should we use?", &[], Some("OAuth via Google, please"), None),
            QuestionAnswer::new("Which features?", &["Dark mode"], Some("Offline support"), None),
        ];
        assert_eq!(wire(allow(input_with_answers(&request["input"], &answers))), response);

        let (request, response) = first_exchange("a_allow_response.jsonl", "can_use_tool");
        let answers = [QuestionAnswer::new(
            "Which auth method should we use?",
            &["JWT"],
            None,
            Some("short-lived tokens please"),
        )];
        assert_eq!(wire(allow(input_with_answers(&request["input"], &answers))), response);

        let (_, response) = first_exchange("b_deny.jsonl", "can_use_tool");
        assert_eq!(wire(deny("The user dismissed the questions without answering.")), response);
    }

    #[test]
    fn hook_answers_are_written_exactly_as_the_traces_show() {
        let (request, response) = first_exchange("f_hook_updated_input.jsonl", "hook_callback");
        let callback: HookCallback = serde_json::from_value(request).unwrap();
        assert_eq!(callback.tool_name(), Some("AskUserQuestion"));
        let answers = [
            QuestionAnswer::new("Which auth method should we use?", &["JWT"], None, None),
            QuestionAnswer::new("Which features?", &["Dark mode", "i18n"], None, None),
        ];
        let updated = input_with_answers(&callback.tool_input(), &answers);
        assert_eq!(wire(hook_allow(updated)), response);

        let (_, response) = first_exchange("f_hook_deny.jsonl", "hook_callback");
        let reason =
            "The user has already answered: Which auth method should we use? = JWT; Which features? = Dark mode, i18n";
        assert_eq!(wire(hook_deny(reason)), response);
    }
}
