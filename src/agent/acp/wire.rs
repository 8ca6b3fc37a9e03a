//! The Agent Client Protocol on the wire, as the agents of `protocol/acp.md` speak it: JSON-RPC 2.0,
//! one message per line. Typed where AskBridge acts on a message (the session's updates, the two
//! requests that reach the person, the answers to ours), with an `Other` arm that keeps what a
//! newer agent adds; a known message that is malformed is an error, never a guess.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The stable protocol version (`initialize {protocolVersion: 1}`).
pub const PROTOCOL_VERSION: u32 = 1;

/// A request id: agents number their own from 0 (0 is a real id); ids may be strings too.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    Number(i64),
    Text(String),
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::Text(text) => f.write_str(text),
        }
    }
}

/// One line from the agent.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// The answer to one of our requests.
    Response {
        id: Id,
        result: Result<Value, RpcError>,
    },
    /// The agent asks something of us.
    Request {
        id: Id,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{message} ({code})")]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// JSON-RPC's "method not found", for requests we do not serve (`_` extensions among them).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC's "invalid params", for a known request we cannot read.
pub const INVALID_PARAMS: i64 = -32602;

/// Why a line from the agent is not a message.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LineError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("not a JSON-RPC message: {0}")]
    NotRpc(&'static str),
}

impl Incoming {
    pub fn parse(line: &str) -> Result<Self, LineError> {
        #[derive(Deserialize)]
        struct Raw {
            #[serde(default)]
            id: Option<Id>,
            #[serde(default)]
            method: Option<String>,
            #[serde(default)]
            params: Option<Value>,
            #[serde(default)]
            result: Option<Value>,
            #[serde(default)]
            error: Option<RpcError>,
        }
        let raw: Raw = serde_json::from_str(line).map_err(|e| LineError::NotJson(e.to_string()))?;
        let params = raw.params.unwrap_or(Value::Null);
        match (raw.id, raw.method) {
            (Some(id), Some(method)) => Ok(Self::Request { id, method, params }),
            (None, Some(method)) => Ok(Self::Notification { method, params }),
            (Some(id), None) => match (raw.result, raw.error) {
                (_, Some(error)) => Ok(Self::Response { id, result: Err(error) }),
                (Some(result), None) => Ok(Self::Response { id, result: Ok(result) }),
                (None, None) => Err(LineError::NotRpc("a response without a result or an error")),
            },
            (None, None) => Err(LineError::NotRpc("neither a method nor an id")),
        }
    }
}

/// A request of ours, as a line.
pub fn request(id: i64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

pub fn notification(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

/// Our answer to the agent's request `id`.
pub fn response(id: &Id, result: Result<Value, RpcError>) -> String {
    match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string(),
    }
}

/// What we tell the agent we can do: form questions only. Without `fs`/`terminal` the agent uses
/// its own tools on the machine (acp.md §1), and without `elicitation.form` Claude's adapter would
/// not offer AskUserQuestion to the model at all (§2).
pub fn initialize_params() -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "clientCapabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "askbridge", "title": "AskBridge", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// The agent's answer to `initialize`: what we act on.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Initialized {
    #[serde(default)]
    pub agent_capabilities: AgentCapabilities,
    #[serde(default)]
    pub auth_methods: Vec<AuthMethod>,
    #[serde(default)]
    pub agent_info: Option<AgentInfo>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    #[serde(default)]
    pub load_session: bool,
    #[serde(default)]
    pub session_capabilities: Value,
}

impl AgentCapabilities {
    /// `session/resume` (no replay) is offered.
    pub fn resumes(&self) -> bool {
        self.session_capabilities.get("resume").is_some_and(|v| !v.is_null())
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct AuthMethod {
    pub id: String,
    #[serde(default)]
    pub name: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct AgentInfo {
    pub name: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub version: Option<String>,
}

/// The answer to `session/new` (and `session/load`, whose `sessionId` is ours already).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStarted {
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub modes: Option<Modes>,
    #[serde(default)]
    pub config_options: Vec<ConfigOption>,
}

impl SessionStarted {
    /// The config option that chooses the model (category `model`, a select), if the agent has one.
    pub fn model_option(&self) -> Option<&ConfigOption> {
        self.config_options.iter().find(|option| {
            option.category.as_deref() == Some("model")
                && option.kind.as_deref() == Some("select")
                && option.id != "provider"
        })
    }
}

/// One of a session's config options (`session/set_config_option` sets it).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigOption {
    pub id: String,
    #[serde(default)]
    pub category: Option<String>,
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub current_value: Option<Value>,
    /// A select's choices: `{value, name, description}` (kept as sent: an agent may group them).
    #[serde(default)]
    pub options: Value,
}

impl ConfigOption {
    /// A select's choices, as `(value, name, description)`.
    pub fn choices(&self) -> Vec<(String, String, String)> {
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
        self.options
            .as_array()
            .into_iter()
            .flatten()
            .filter(|choice| choice.get("value").is_some_and(Value::is_string))
            .map(|choice| {
                let value = text(choice, "value");
                let name = Some(text(choice, "name")).filter(|n| !n.is_empty()).unwrap_or_else(|| value.clone());
                (value, name, text(choice, "description"))
            })
            .collect()
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Modes {
    pub current_mode_id: String,
    #[serde(default)]
    pub available_modes: Vec<Mode>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Mode {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
}

/// The answer to `session/prompt`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptDone {
    pub stop_reason: String,
    #[serde(default)]
    pub usage: Option<PromptUsage>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptUsage {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub cached_read_tokens: Option<u64>,
    #[serde(default)]
    pub cached_write_tokens: Option<u64>,
}

/// `session/update`'s params.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionNotification {
    pub session_id: String,
    pub update: Update,
}

/// One update of a session, by its `sessionUpdate` tag.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "sessionUpdate", rename_all = "snake_case")]
pub enum Update {
    AgentMessageChunk {
        content: ContentBlock,
    },
    AgentThoughtChunk {
        content: ContentBlock,
    },
    /// The person's own words, as the agent replays a loaded session.
    UserMessageChunk {
        content: ContentBlock,
    },
    ToolCall(ToolCall),
    ToolCallUpdate(ToolCall),
    Plan {
        entries: Vec<PlanEntry>,
    },
    #[serde(rename_all = "camelCase")]
    UsageUpdate {
        #[serde(default)]
        used: Option<u64>,
        #[serde(default)]
        size: Option<u64>,
        #[serde(default)]
        cost: Option<Cost>,
    },
    #[serde(rename_all = "camelCase")]
    CurrentModeUpdate {
        current_mode_id: String,
    },
    #[serde(rename_all = "camelCase")]
    AvailableCommandsUpdate {
        available_commands: Vec<Command>,
    },
    /// The session's config options, as they stand now (Codex's after `/plan`).
    #[serde(rename_all = "camelCase")]
    ConfigOptionUpdate {
        #[serde(default)]
        config_options: Vec<ConfigOption>,
    },
    /// What a newer agent sends that we do not show (`session_info_update`, …).
    #[serde(other)]
    Other,
}

/// A content block: text is what we show; the rest is named by its type.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: String,
    },
    #[serde(other)]
    Other,
}

/// A tool call, or an update to one (every field but the id may be left out of an update).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub tool_call_id: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub raw_input: Option<Value>,
    #[serde(default)]
    pub raw_output: Option<Value>,
    #[serde(default)]
    pub content: Option<Vec<ToolCallContent>>,
    #[serde(default)]
    pub locations: Option<Vec<Location>>,
    /// Claude's adapter names the tool (`name`, and `_meta.claudeCode.toolName`).
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default, rename = "_meta")]
    pub meta: Option<Value>,
}

impl ToolCall {
    /// The tool's own name where the agent gives it (Claude's adapter: "Bash", "AskUserQuestion").
    pub fn tool_name(&self) -> Option<&str> {
        let meta = self.meta.as_ref().and_then(|m| m.pointer("/claudeCode/toolName")).and_then(Value::as_str);
        meta.or(self.name.as_deref()).filter(|name| !name.is_empty())
    }

    /// The status says the call ended: `completed` or `failed`.
    pub fn ended(&self) -> Option<bool> {
        match self.status.as_deref() {
            Some("completed") => Some(false),
            Some("failed") => Some(true),
            _ => None,
        }
    }

    /// The call's input, when the agent gave a non-empty one.
    pub fn input(&self) -> Option<&Value> {
        self.raw_input.as_ref().filter(|input| input.as_object().is_none_or(|o| !o.is_empty()))
    }

    /// What the call produced, as text: its text content and the changes it made to files (each a
    /// unified diff), else its raw output; then the places it touched that no diff names.
    pub fn output_text(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut changed: Vec<&str> = Vec::new();
        for item in self.content.iter().flatten() {
            match item {
                ToolCallContent::Content { content: ContentBlock::Text { text } } => parts.push(text.clone()),
                ToolCallContent::Diff { path, old_text, new_text } => {
                    changed.push(path);
                    parts.push(unified_diff(path, old_text.as_deref(), new_text));
                }
                _ => {}
            }
        }
        if parts.is_empty() {
            match &self.raw_output {
                Some(Value::String(text)) => parts.push(text.clone()),
                Some(Value::Null) | None => {}
                Some(other) => parts.push(other.to_string()),
            }
        }
        let places: Vec<String> = self
            .locations
            .iter()
            .flatten()
            .filter(|place| !changed.contains(&place.path.as_str()))
            .map(|place| match place.line {
                Some(line) => format!("{}:{line}", place.path),
                None => place.path.clone(),
            })
            .collect();
        if !places.is_empty() {
            parts.push(places.join("\n"));
        }
        parts.join("\n")
    }

    /// The first diff in the call's content.
    pub fn diff(&self) -> Option<(&str, Option<&str>, &str)> {
        self.content.iter().flatten().find_map(|item| match item {
            ToolCallContent::Diff { path, old_text, new_text } => {
                Some((path.as_str(), old_text.as_deref(), new_text.as_str()))
            }
            _ => None,
        })
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolCallContent {
    Content {
        content: ContentBlock,
    },
    #[serde(rename_all = "camelCase")]
    Diff {
        path: String,
        #[serde(default)]
        old_text: Option<String>,
        new_text: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Location {
    pub path: String,
    #[serde(default)]
    pub line: Option<u64>,
}

/// A file's change as a unified diff (`old` absent: the file is new).
fn unified_diff(path: &str, old: Option<&str>, new: &str) -> String {
    let diff = similar::TextDiff::from_lines(old.unwrap_or_default(), new);
    let from = if old.is_some() { format!("a{path}") } else { "/dev/null".to_string() };
    diff.unified_diff().context_radius(3).header(&from, &format!("b{path}")).to_string()
}

#[derive(Debug, Clone, Deserialize)]
pub struct PlanEntry {
    pub content: String,
    #[serde(default)]
    pub status: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Cost {
    pub amount: f64,
    #[serde(default)]
    pub currency: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Command {
    pub name: String,
    #[serde(default)]
    pub description: String,
}

/// `session/request_permission`'s params.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequest {
    pub session_id: String,
    pub tool_call: ToolCall,
    pub options: Vec<PermissionOption>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    pub option_id: String,
    pub name: String,
    pub kind: OptionKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OptionKind {
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
    #[serde(other)]
    Other,
}

/// The answer to a permission request: an offered option, or `cancelled` (the turn was).
pub fn permission_outcome(option_id: Option<&str>) -> Value {
    match option_id {
        Some(id) => json!({"outcome": {"outcome": "selected", "optionId": id}}),
        None => json!({"outcome": {"outcome": "cancelled"}}),
    }
}

/// `elicitation/create`'s params (form mode; URL mode is declined).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Elicitation {
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub tool_call_id: Option<String>,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub requested_schema: Value,
}

/// The answer to an elicitation.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationAction {
    Accept(serde_json::Map<String, Value>),
    /// The person skipped it.
    Decline,
    /// The turn was stopped.
    Cancel,
}

impl ElicitationAction {
    pub fn to_result(&self) -> Value {
        match self {
            Self::Accept(content) => json!({"action": "accept", "content": content}),
            Self::Decline => json!({"action": "decline"}),
            Self::Cancel => json!({"action": "cancel"}),
        }
    }

    /// What the form's card shows as its result.
    pub fn in_words(&self) -> String {
        match self {
            Self::Accept(content) => format!("Answered: {}", Value::Object(content.clone())),
            Self::Decline => "Declined".to_string(),
            Self::Cancel => "Cancelled".to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_calls_changes_to_files_are_its_output_as_a_diff_and_its_places_are_named() {
        let call: ToolCall = serde_json::from_value(json!({
            "toolCallId": "t1", "status": "completed",
            "content": [
                {"type": "content", "content": {"type": "text", "text": "Edited."}},
                {"type": "diff", "path": "/p/a.txt", "oldText": "one\ntwo\n", "newText": "one\nthree\n"},
                {"type": "diff", "path": "/p/new.txt", "newText": "hello\n"}
            ],
            "locations": [{"path": "/p/a.txt", "line": 2}, {"path": "/p/b.rs", "line": 7}, {"path": "/p/c"}]
        }))
        .unwrap();
        let output = call.output_text();
        assert!(output.starts_with("Edited.\n"), "{output}");
        assert!(output.contains("--- a/p/a.txt\n+++ b/p/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+three\n"), "{output}");
        assert!(output.contains("--- /dev/null\n+++ b/p/new.txt\n@@ -0,0 +1 @@\n+hello\n"), "{output}");
        assert!(output.ends_with("/p/b.rs:7\n/p/c"), "the places no diff names: {output}");
    }

    /// Every line the real agents sent in the captured traces reads as a message, and each
    /// `session/update` as an update (`fixtures/acp`).
    #[test]
    fn every_line_of_the_captured_traces_is_read() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/acp");
        let mut updates = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "jsonl") || path.to_string_lossy().ends_with(".api.jsonl") {
                continue;
            }
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                let record: Value = serde_json::from_str(line).unwrap();
                if record["dir"] != "from_agent" || !record["msg"].is_object() {
                    continue;
                }
                let message = Incoming::parse(&record["msg"].to_string())
                    .unwrap_or_else(|e| panic!("{}: {e}: {line}", path.display()));
                if let Incoming::Notification { method, params } = message
                    && method == "session/update"
                {
                    serde_json::from_value::<SessionNotification>(params)
                        .unwrap_or_else(|e| panic!("{}: {e}: {line}", path.display()));
                    updates += 1;
                }
            }
        }
        assert!(updates > 20, "the traces hold updates: {updates}");
    }

    #[test]
    fn id_zero_is_a_request_and_a_bare_result_is_a_response() {
        let asked = Incoming::parse(r#"{"jsonrpc":"2.0","id":0,"method":"elicitation/create","params":{}}"#);
        assert!(matches!(asked, Ok(Incoming::Request { id: Id::Number(0), .. })), "{asked:?}");
        let answered = Incoming::parse(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#);
        assert!(matches!(answered, Ok(Incoming::Response { id: Id::Text(_), result: Ok(_) })));
        let failed =
            Incoming::parse(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"Authentication required"}}"#);
        assert!(matches!(failed, Ok(Incoming::Response { result: Err(RpcError { code: -32000, .. }), .. })));
        assert!(matches!(Incoming::parse("garbage"), Err(LineError::NotJson(_))));
        assert!(matches!(Incoming::parse("{}"), Err(LineError::NotRpc(_))));
        assert!(matches!(Incoming::parse(r#"{"id":1}"#), Err(LineError::NotRpc(_))));
    }

    #[test]
    fn an_update_we_do_not_show_is_kept_apart_and_a_malformed_known_one_is_an_error() {
        let unknown: Update = serde_json::from_value(json!({"sessionUpdate": "session_info_update", "x": 1})).unwrap();
        assert!(matches!(unknown, Update::Other));
        let malformed = serde_json::from_value::<Update>(json!({"sessionUpdate": "tool_call"}));
        assert!(malformed.is_err(), "a tool call without its id");
    }
}
