//! What an agent offers a session: its models, its own permission modes and its slash commands. The server learns them
//! from the agent (Claude Code's `initialize` response, the Messages API's `GET /v1/models`, the
//! demo's script); the new-session page, the session header and the message box offer them.

use serde::{Deserialize, Serialize};

use crate::approval::PermissionMode;

/// An agent a new session can talk to, with what it offers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentOffer {
    /// The name stored with each session (`claude`, `anthropic`, `scripted`).
    pub name: String,
    /// What people call it ("Claude Code").
    pub label: String,
    /// The folder it works in when a session picks none, for agents that work in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_workdir: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<ModelChoice>,
    /// The agent's own permission modes, for an agent that names its own (an ACP agent: Codex's
    /// "Read-only", Cline's "Plan" and "Act"); empty: AskBridge's four.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modes: Vec<AgentMode>,
}

/// One of an agent's own permission modes, as it names it, and the AskBridge mode it stands for
/// (what the server's policy and the bypass confirmation judge it by).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentMode {
    /// The agent's id for it (`read-only`, `yolo`).
    pub id: String,
    pub label: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub acts_as: PermissionMode,
}

/// A model to pick: the value the agent takes (`sonnet`, or a full id), and what to show.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelChoice {
    pub value: String,
    pub label: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// A `/` command the agent takes, as the message box lists it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlashCommand {
    /// Without the slash: `compact`.
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// What may follow it (`<instructions>`), if anything.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub argument_hint: String,
}

/// Longest model name taken: Claude Code's ids are under 40 characters.
pub const MAX_MODEL_CHARS: usize = 100;

/// Whether `model` can name a model: letters, digits and `.-_:[]@/`, not starting with `-` (it
/// becomes the value of `claude --model`, never a flag of its own).
pub fn is_model_name(model: &str) -> bool {
    !model.is_empty()
        && model.len() <= MAX_MODEL_CHARS
        && !model.starts_with('-')
        && model.bytes().all(|b| b.is_ascii_alphanumeric() || b".-_:[]@/".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::is_model_name;

    #[test]
    fn model_names_are_aliases_or_ids_and_never_flags() {
        for good in ["sonnet", "opus", "claude-opus-5-5", "claude-sonnet-4-5-20250929", "opus[1m]", "default"] {
            assert!(is_model_name(good), "{good}");
        }
        for bad in ["", "-p", "--dangerously-skip-permissions", "son net", "a;b", "x\n", &"m".repeat(101)] {
            assert!(!is_model_name(bad), "{bad:?}");
        }
    }
}
