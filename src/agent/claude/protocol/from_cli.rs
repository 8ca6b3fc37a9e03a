//! What the host reads from the CLI's stdout. Reading is tolerant: unknown fields are ignored,
//! and a message of a type this build does not know, or one whose known type has an unexpected
//! shape, becomes [`FromCli::Unknown`] and is logged, never an error. A new CLI release must not
//! break a session. The Messages API objects the lines embed (assistant messages, their content
//! blocks and usage, raw stream events) are `agent::messages_api`'s, read by its rule: a block,
//! delta or event of a type it does not know is kept as sent.

use serde::Deserialize;
use serde_json::Value;

use super::to_cli::ControlResponse;
use crate::agent::messages_api::{self, ContentBlock, Event, Message};

/// What Claude Code tells the model about a hook call whose host went away while the CLI lived on
/// (§12, l_hook_eof). AskBridge's CLIs die with the server instead (`process::die_with_the_server`).
pub const TOLD_ON_HOOK_EOF: &str = "The user doesn't want to take this action right now. STOP what you are doing and \
                                wait for the user to tell you how to proceed.";
/// What it tells the model, with the next message after `--resume`, about a call that was
/// waiting when the CLI was killed (no result in its transcript): the CLI dies with the server,
/// so this is what the model learns of a question the server's crash cut short.
pub const TOLD_WHEN_KILLED: &str = "[Tool call interrupted: the session ended before this call's result was recorded, \
                                so its outcome is unknown. Check whether it took effect before relying on it or \
                                running it again.]";

/// One line of the CLI's stdout, by its `type`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromCli {
    System(SystemMessage),
    Assistant(AssistantMessage),
    User(UserEcho),
    Result(ResultMessage),
    StreamEvent(StreamEvent),
    ControlRequest {
        request_id: String,
        request: CliRequest,
    },
    /// The CLI's answer to a request of ours.
    ControlResponse {
        response: ControlResponse,
    },
    ControlCancelRequest {
        request_id: String,
    },
    /// Progress reports the host needs not act on: `tool_progress` (a hook's heartbeat every 30
    /// s while it waits, §8) and `command_lifecycle` (a resumed session's start and end, §12);
    /// what they say, without their `type`.
    #[serde(rename = "tool_progress", alias = "command_lifecycle")]
    Progress(Value),
    /// `/clear` (or a `/clear` alias) started a new conversation: the next `init` carries its
    /// id. Captured on 2.1.332: `{"type":"conversation_reset","new_conversation_id":…,
    /// "trigger":"clear",…}`.
    ConversationReset {
        trigger: Option<String>,
    },
    /// A message this build does not understand (its type, or its shape), kept whole for the log.
    #[serde(untagged)]
    Unknown(Value),
}

impl FromCli {
    /// Reads one stdout line. Only a line that is not JSON at all is an error.
    pub fn parse(line: &str) -> Result<Self, serde_json::Error> {
        let value: Value = serde_json::from_str(line)?;
        Ok(Self::from_value(value))
    }

    pub fn from_value(value: Value) -> Self {
        // Never fails: what is not understood falls to `Unknown`.
        Self::deserialize(&value).unwrap_or(Self::Unknown(value))
    }
}

/// `system` lines, by `subtype` (§5, §13). A subtype this build does not know, or a known one in
/// a shape it does not expect, is kept as sent: a new CLI release must not break a session.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum SystemMessage {
    /// At the start of each turn: what runs, where, in which mode.
    Init(Init),
    /// The permission mode changed; or, after compacting, how it went.
    Status(Status),
    /// After `/compact`, or when the CLI compacts by itself.
    CompactBoundary {
        compact_metadata: Option<CompactMetadata>,
    },
    /// Only with `CLAUDE_CODE_SDK_READS_SESSION_STATE=1`: `running`, `requires_action`, `idle`.
    SessionStateChanged {
        state: Option<String>,
    },
    /// A background task (a subagent, §13) started, and what it was asked to do.
    TaskStarted {
        task_id: Option<String>,
        description: Option<String>,
    },
    /// A background task ended: `status` is `completed`, `failed` or `stopped`.
    TaskNotification {
        task_id: Option<String>,
        status: Option<String>,
    },
    /// Reports on background tasks the host needs not act on.
    TaskProgress,
    TaskUpdated,
    BackgroundTasksChanged,
    /// A subtype this build does not know, kept whole for the log.
    #[serde(untagged)]
    Other(Value),
}

/// `system`/`init`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Init {
    pub session_id: Option<String>,
    pub model: Option<String>,
    #[serde(default)]
    pub tools: Vec<String>,
    pub cwd: Option<String>,
    pub claude_code_version: Option<String>,
    #[serde(rename = "permissionMode")]
    pub permission_mode: Option<String>,
}

/// `system`/`status`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Status {
    #[serde(rename = "permissionMode")]
    pub permission_mode: Option<String>,
    /// After compacting: `success` or `failed`, with `compact_error`.
    pub compact_result: Option<String>,
    pub compact_error: Option<String>,
}

/// `compact_boundary`'s figures: `trigger` (`manual`, `auto`), `pre_tokens`, `post_tokens`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CompactMetadata {
    pub trigger: Option<String>,
    pub pre_tokens: Option<u64>,
    pub post_tokens: Option<u64>,
}

/// One content block of an assistant message (several lines may share `message.id`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AssistantMessage {
    pub message: Message,
    pub parent_tool_use_id: Option<String>,
    pub session_id: Option<String>,
}

/// The CLI's echo of a user turn: tool results after tools ran, or its own notes such as
/// "[Request interrupted by user for tool use]".
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct UserEcho {
    pub message: EchoContent,
    pub parent_tool_use_id: Option<String>,
    pub tool_use_result: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct EchoContent {
    #[serde(default)]
    pub content: Value,
}

impl UserEcho {
    /// What a local command (`/context`, `/usage`, `/compact`, …) printed, which the CLI echoes
    /// as `<local-command-stdout>…</local-command-stdout>`.
    pub fn local_command_output(&self) -> Option<&str> {
        let text = self.message.content.as_str()?;
        let start = text.find("<local-command-stdout>")? + "<local-command-stdout>".len();
        let end = text[start..].find("</local-command-stdout>")? + start;
        Some(text[start..end].trim())
    }

    /// The tool_result blocks of the echo.
    pub fn tool_results(&self) -> Vec<ContentBlock> {
        match &self.message.content {
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|b| serde_json::from_value::<ContentBlock>(b.clone()).ok())
                .filter(|b| matches!(b, ContentBlock::ToolResult { .. }))
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// The end of a turn.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ResultMessage {
    pub subtype: String,
    #[serde(default)]
    pub is_error: bool,
    pub result: Option<String>,
    pub session_id: Option<String>,
    pub total_cost_usd: Option<f64>,
    pub duration_ms: Option<u64>,
    pub usage: Option<messages_api::Usage>,
    #[serde(default, rename = "modelUsage")]
    pub model_usage: std::collections::HashMap<String, ModelUsage>,
    pub terminal_reason: Option<String>,
    pub stop_reason: Option<String>,
    /// The call a `defer` parked (§12).
    pub deferred_tool_use: Option<Value>,
}

impl ResultMessage {
    /// The turn ended because a hook deferred a call.
    pub fn deferred(&self) -> bool {
        self.deferred_tool_use.is_some() || self.stop_reason.as_deref() == Some("tool_deferred")
    }
}

/// A model's share of a turn (`result.modelUsage`), for its context window.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelUsage {
    #[serde(default)]
    pub context_window: Option<u64>,
}

/// A raw Messages API streaming event (`--include-partial-messages`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct StreamEvent {
    pub event: Event,
    pub parent_tool_use_id: Option<String>,
}

/// Requests the CLI makes of the host, by `subtype`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum CliRequest {
    CanUseTool(CanUseTool),
    HookCallback(HookCallback),
    /// A request this build does not know (or a known one in a shape it does not expect).
    #[serde(untagged)]
    Other(Value),
}

/// The CLI asks whether a tool may run; for `AskUserQuestion` it waits for the answers.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CanUseTool {
    pub tool_name: String,
    #[serde(default)]
    pub input: Value,
    pub tool_use_id: Option<String>,
    pub description: Option<String>,
    #[serde(default)]
    pub permission_suggestions: Vec<Value>,
    pub blocked_path: Option<String>,
    pub decision_reason: Option<String>,
    #[serde(default)]
    pub requires_user_interaction: bool,
    /// Set when a subagent asks (§13).
    pub agent_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct HookCallback {
    pub callback_id: String,
    #[serde(default)]
    pub input: Value,
    pub tool_use_id: Option<String>,
}

impl HookCallback {
    pub fn tool_name(&self) -> Option<&str> {
        self.input.get("tool_name").and_then(Value::as_str)
    }

    pub fn tool_input(&self) -> Value {
        self.input.get("tool_input").cloned().unwrap_or(Value::Null)
    }
}

/// What the initialize response tells about the CLI (read loosely: some fields are large).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CliInfo {
    pub version: Option<String>,
    pub model: Option<String>,
    pub permission_mode: Option<String>,
}

impl CliInfo {
    pub fn from_initialize(response: &Value) -> Self {
        let text = |key: &str| response.get(key).and_then(Value::as_str).map(str::to_string);
        let model = response
            .get("models")
            .and_then(Value::as_array)
            .and_then(|models| models.first())
            .and_then(|m| m.get("resolvedModel"))
            .and_then(Value::as_str)
            .map(str::to_string);
        Self { version: text("claude_code_version"), model, permission_mode: text("current_permission_mode") }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::claude::protocol::hook_defer;
    use crate::agent::claude::protocol::traces::{first_exchange, initialize_response, trace_lines};

    #[test]
    fn every_line_from_the_cli_in_every_trace_parses_into_a_known_message() {
        let mut seen = 0;
        for (file, direction, msg) in trace_lines() {
            if direction != "from_cli" {
                continue;
            }
            seen += 1;
            let parsed = FromCli::from_value(msg.clone());
            assert!(!matches!(parsed, FromCli::Unknown(_)), "{file}: not understood: {msg}");
            if let FromCli::ControlRequest { request, .. } = &parsed {
                assert!(!matches!(request, CliRequest::Other(_)), "{file}: unknown request: {msg}");
            }
            assert!(!matches!(parsed, FromCli::System(SystemMessage::Other(_))), "{file}: unknown subtype: {msg}");
        }
        assert!(seen > 250, "{seen}");
    }

    #[test]
    fn the_api_objects_in_every_trace_are_read_by_the_messages_api_model() {
        let (mut blocks, mut events, mut results) = (0, 0, 0);
        for (file, direction, msg) in trace_lines() {
            if direction != "from_cli" {
                continue;
            }
            match FromCli::from_value(msg.clone()) {
                FromCli::Assistant(assistant) => {
                    assert!(assistant.message.usage.is_some(), "{file}: {msg}");
                    for block in &assistant.message.content {
                        blocks += 1;
                        assert!(!matches!(block, ContentBlock::Other(_)), "{file}: a block not understood: {msg}");
                    }
                }
                FromCli::StreamEvent(stream) => {
                    events += 1;
                    let unknown = match &stream.event {
                        Event::Other(_) => true,
                        Event::ContentBlockStart { content_block, .. } => {
                            matches!(content_block, ContentBlock::Other(_))
                        }
                        Event::ContentBlockDelta { delta, .. } => matches!(delta, messages_api::Delta::Other(_)),
                        _ => false,
                    };
                    assert!(!unknown, "{file}: not understood: {msg}");
                }
                FromCli::Result(result) => {
                    results += 1;
                    let usage = result.usage.expect("a result reports its usage");
                    assert!(usage.server_tool_use.is_some() && usage.cache_creation.is_some(), "{file}: {msg}");
                }
                _ => {}
            }
        }
        assert!(blocks > 90 && events > 20 && results > 50, "{blocks} {events} {results}");
    }

    #[test]
    fn an_unknown_message_type_or_shape_is_kept_not_refused() {
        let unknown = FromCli::parse(r#"{"type":"telepathy","x":1}"#).unwrap();
        assert_eq!(unknown, FromCli::Unknown(json!({"type": "telepathy", "x": 1})));
        let odd = FromCli::parse(r#"{"type":"result","subtype":7}"#).unwrap();
        assert!(matches!(odd, FromCli::Unknown(_)));
        let new_field = FromCli::parse(r#"{"type":"control_cancel_request","request_id":"r","future":true}"#).unwrap();
        assert_eq!(new_field, FromCli::ControlCancelRequest { request_id: "r".into() });
        assert!(FromCli::parse("not json").is_err());
        // A new `system` subtype, or a known one in a new shape, is kept as sent.
        let subtype = FromCli::parse(r#"{"type":"system","subtype":"dreaming","x":1}"#).unwrap();
        assert_eq!(subtype, FromCli::System(SystemMessage::Other(json!({"subtype": "dreaming", "x": 1}))));
        let init = FromCli::parse(r#"{"type":"system","subtype":"init","tools":7}"#).unwrap();
        assert!(matches!(init, FromCli::System(SystemMessage::Other(_))), "{init:?}");
        // Inside a line, a Messages API block or event of a type this build does not know is kept
        // as sent, and the line is understood.
        let line = r#"{"type":"assistant","message":{"id":"m","content":[{"type":"thinking","thinking":"Hmm"}]}}"#;
        let FromCli::Assistant(assistant) = FromCli::parse(line).unwrap() else { panic!("{line}") };
        assert_eq!(
            assistant.message.content,
            vec![ContentBlock::Other(json!({"type": "thinking", "thinking": "Hmm"}))]
        );
        let line = r#"{"type":"stream_event","event":{"type":"message_annotation"}}"#;
        let FromCli::StreamEvent(stream) = FromCli::parse(line).unwrap() else { panic!("{line}") };
        assert_eq!(stream.event, Event::Other(json!({"type": "message_annotation"})));
        let request = FromCli::parse(r#"{"type":"control_request","request_id":"r","request":{"subtype":"x"}}"#);
        assert_eq!(
            request.unwrap(),
            FromCli::ControlRequest { request_id: "r".into(), request: CliRequest::Other(json!({"subtype": "x"})) }
        );
    }

    /// The messages of one trace from the CLI, parsed.
    fn from_cli(file: &str) -> Vec<FromCli> {
        trace_lines()
            .into_iter()
            .filter(|(f, d, _)| f == file && d == "from_cli")
            .map(|(_, _, m)| FromCli::from_value(m))
            .collect()
    }

    #[test]
    fn a_deferred_call_ends_the_turn_and_is_asked_again_on_resume() {
        let (_, response) = first_exchange("l_defer.jsonl", "hook_callback");
        assert_eq!(serde_json::to_value(hook_defer()).unwrap(), response);
        let result = from_cli("l_defer.jsonl").into_iter().find_map(|m| match m {
            FromCli::Result(result) => Some(result),
            _ => None,
        });
        assert!(result.is_some_and(|r| r.deferred()), "the result says the call was deferred");
        // The resumed process asks for the same call again, before any turn of ours.
        let asked = from_cli("l_defer_resume.jsonl").into_iter().find_map(|m| match m {
            FromCli::ControlRequest { request: CliRequest::CanUseTool(ask), .. } => ask.tool_use_id,
            _ => None,
        });
        assert_eq!(asked.as_deref(), Some("toolu_mock_0002"));
        let lifecycle =
            from_cli("l_defer_resume.jsonl").into_iter().filter(|m| matches!(m, FromCli::Progress(_))).count();
        assert_eq!(lifecycle, 2, "command_lifecycle is understood, not unknown");
        // A message to a process that deferred fills the call with an error (why we never send one).
        let filled = from_cli("l_defer_then_message.jsonl")
            .into_iter()
            .any(|m| matches!(m, FromCli::Result(r) if !r.deferred()));
        assert!(filled);
    }

    #[test]
    fn a_host_that_goes_away_during_a_hook_gets_its_call_declined_by_the_cli() {
        let told = from_cli("l_hook_eof.jsonl").into_iter().find_map(|m| match m {
            FromCli::User(echo) => echo.tool_results().into_iter().find_map(|b| match b {
                ContentBlock::ToolResult { content, .. } => Some(ContentBlock::result_text(&content)),
                _ => None,
            }),
            _ => None,
        });
        assert_eq!(told.as_deref(), Some(TOLD_ON_HOOK_EOF));
        let heartbeats =
            from_cli("f_hook_long_wait.jsonl").into_iter().filter(|m| matches!(m, FromCli::Progress(_))).count();
        assert!(heartbeats >= 2, "a long hook wait's heartbeats are understood");
    }

    #[test]
    fn a_subagents_request_names_its_agent_and_its_task_is_followed() {
        let messages = from_cli("m_subagent_bash.jsonl");
        let ask = messages.iter().find_map(|m| match m {
            FromCli::ControlRequest { request: CliRequest::CanUseTool(ask), .. } => Some(ask.clone()),
            _ => None,
        });
        let ask = ask.expect("the subagent asks");
        assert_eq!((ask.tool_name.as_str(), ask.agent_id.as_deref()), ("Bash", Some("af879b53ea1fd8c50")));
        let started = messages.iter().find_map(|m| match m {
            FromCli::System(SystemMessage::TaskStarted { task_id, description }) => {
                Some((task_id.clone(), description.clone()))
            }
            _ => None,
        });
        assert_eq!(started, Some((Some("af879b53ea1fd8c50".into()), Some("Run the command".into()))));
        let results = messages.iter().filter(|m| matches!(m, FromCli::Result(_))).count();
        assert_eq!(results, 2, "the CLI starts a turn of its own when the subagent is done");
    }

    #[test]
    fn the_initialize_response_tells_version_model_and_mode() {
        let info = CliInfo::from_initialize(&initialize_response("a_allow.jsonl"));
        assert_eq!(info.version.as_deref(), Some("2.1.332"));
        assert_eq!(info.model.as_deref(), Some("claude-opus-5-5"));
        assert_eq!(info.permission_mode.as_deref(), Some("default"));
    }

    use proptest::prelude::*;

    proptest! {
        // The traces are the corpus: every line, cut short and with bytes changed, as a CLI
        // that misbehaves (or a newer one) might write it. Nothing panics; what is not JSON is
        // an error, and what is JSON is a message (known, or kept as unknown).
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        #[test]
        fn no_line_from_the_cli_makes_the_parser_panic(
            pick in any::<prop::sample::Index>(),
            cut in any::<prop::sample::Index>(),
            noise in proptest::collection::vec((any::<prop::sample::Index>(), any::<char>()), 0..4),
        ) {
            static LINES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
            let lines = LINES.get_or_init(|| trace_lines().into_iter().map(|(_, _, msg)| msg.to_string()).collect());
            let mut line: Vec<char> = lines[pick.index(lines.len())].chars().collect();
            line.truncate(cut.index(line.len() + 1));
            for (at, c) in noise {
                if !line.is_empty() {
                    let at = at.index(line.len());
                    line[at] = c;
                }
            }
            let line: String = line.into_iter().collect();
            if let Ok(message) = FromCli::parse(&line) {
                // Whatever it became, it can be logged.
                let _ = format!("{message:?}");
            }
        }

        #[test]
        fn no_text_at_all_makes_the_parser_panic(line in "(?s).{0,300}") {
            let _ = FromCli::parse(&line);
        }
    }
}
