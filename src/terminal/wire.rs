//! What `askbridge hook` and the server say to each other (`POST /api/terminal/hook`,
//! `POST /api/terminal/withdraw`, with the access token). The hook sends the request Claude Code
//! gave it, the fields below and nothing else: never its environment, which holds the CLI's API
//! key (docs/claude-terminal.md §7).

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const HOOK_PATH: &str = "/api/terminal/hook";
pub const WITHDRAW_PATH: &str = "/api/terminal/withdraw";

/// The hook's stdin as Claude Code writes it, read for the fields AskBridge uses: the rest is
/// left behind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookInput {
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_path: Option<String>,
    pub cwd: String,
    pub hook_event_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_input: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permission_suggestions: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notification_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
}

/// What the hook hands the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookRequest {
    pub input: HookInput,
    /// This machine's name, so that a card says which machine it decides for.
    pub host: String,
    /// The call's id as the transcript has it (a PermissionRequest's stdin has none); when the
    /// hook could not find it, one of its own (`terminal-…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// The `claude` that runs the hook, when it could be found (`terminal::process`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<crate::thread::ClaudeProcess>,
}

/// The server's answer: what the hook prints on stdout, or nothing ("no decision": the terminal
/// asks as it always does). For a PermissionRequest it comes once the person decided; spaces may
/// come before it while they have not, which JSON readers skip.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookReply {
    pub stdout: Option<Value>,
}

/// The hook's request went away before the person decided here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Withdrawal {
    pub host: String,
    pub claude_session_id: String,
    pub tool_use_id: String,
    pub why: Withdrawn,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Withdrawn {
    /// The person answered in the terminal: the call has its result in the transcript.
    AnsweredInTerminal {
        #[serde(default)]
        result: Option<String>,
        #[serde(default)]
        is_error: bool,
    },
    /// Claude Code ended the hook (SIGTERM): Esc in the terminal, or `claude` stopping.
    TakenBack,
    /// Claude Code's limit for the hook was about to pass: the terminal asks by itself.
    TimeLimit,
}

impl Withdrawn {
    /// What the card says about it.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::AnsweredInTerminal { .. } => "answered in the terminal",
            Self::TakenBack => "taken back in the terminal (Esc), or Claude Code stopped",
            Self::TimeLimit => "the hook's time limit passed; the terminal asks by itself",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permission_request_of_the_real_cli_is_read_and_its_extra_fields_left_behind() {
        let stdin = include_str!("../../tests/fixtures/claude-cli/terminal/perm_prompt.PermissionRequest.json");
        let input: HookInput = serde_json::from_str(stdin).unwrap();
        assert_eq!(input.hook_event_name, "PermissionRequest");
        assert_eq!(input.tool_name.as_deref(), Some("Bash"));
        assert_eq!(input.tool_input.as_ref().unwrap()["command"], "touch x");
        assert_eq!(input.permission_suggestions.len(), 2);
        let sent = serde_json::to_value(&input).unwrap();
        assert!(sent.get("prompt_id").is_none() && sent.get("effort").is_none(), "{sent}");
        let notification: HookInput = serde_json::from_str(include_str!(
            "../../tests/fixtures/claude-cli/terminal/perm_prompt.Notification.json"
        ))
        .unwrap();
        assert_eq!(notification.notification_type.as_deref(), Some("permission_prompt"));
        let question: HookInput = serde_json::from_str(include_str!(
            "../../tests/fixtures/claude-cli/terminal/ask_plain.PermissionRequest.json"
        ))
        .unwrap();
        assert_eq!(question.tool_name.as_deref(), Some("AskUserQuestion"));
    }
}
