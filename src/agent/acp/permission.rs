//! `session/request_permission` on the approval card, and the person's decision as the option the
//! agent offered. Options are chosen by their `kind` and sent back by the `optionId` the agent
//! gave: ids differ from agent to agent ("allow-once", "proceed_once", "allow_once"; acp.md §3).

use serde_json::{Value, json};

use super::wire::{OptionKind, PermissionOption, PermissionRequest, ToolCall};
use crate::approval::{Approval, Shows, Suggestion};
use crate::interaction::InteractionOutcome;

/// The agent's options for one request, by what the card offers.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    allow_once: Option<String>,
    /// "Always allow" choices, in the card's suggestion order.
    always: Vec<String>,
    reject: Option<String>,
}

/// The card for `request`, and how its decision maps back to the agent's options.
pub fn approval(request: &PermissionRequest) -> (Approval, Options) {
    let call = &request.tool_call;
    let find = |kind: OptionKind| request.options.iter().find(|o| o.kind == kind).map(|o| o.option_id.clone());
    let always: Vec<&PermissionOption> = request.options.iter().filter(|o| o.kind == OptionKind::AllowAlways).collect();
    let options = Options {
        allow_once: find(OptionKind::AllowOnce),
        always: always.iter().map(|o| o.option_id.clone()).collect(),
        reject: find(OptionKind::RejectOnce).or_else(|| find(OptionKind::RejectAlways)),
    };
    let tool = call.tool_name().or(call.title.as_deref()).unwrap_or("a tool").to_string();
    let input = call.input().cloned().unwrap_or_else(|| json!({}));
    let mut approval = Approval {
        shows: shows(call, &tool, &input),
        description: call.title.clone().filter(|title| *title != tool),
        tool,
        input,
        reason: None,
        blocked_path: None,
        suggestions: always
            .iter()
            .map(|o| Suggestion { label: o.name.clone(), value: json!({"optionId": o.option_id}) })
            .collect(),
        asked_by: None,
    };
    // An agent that offers only "always" still allows once through it.
    if options.allow_once.is_none() && approval.suggestions.len() == 1 {
        approval.suggestions[0].label = format!("{} (the agent offers no “once”)", approval.suggestions[0].label);
    }
    (approval, options)
}

/// What the card shows: the diff the agent sent, the command it runs, else the input.
fn shows(call: &ToolCall, tool: &str, input: &Value) -> Shows {
    if let Some((path, old, new)) = call.diff() {
        return Shows::file_change(path, old, new);
    }
    let command = match input.get("command").or_else(|| input.get("commands")) {
        Some(Value::String(command)) => Some(command.clone()),
        Some(Value::Array(parts)) => Some(parts.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("\n")),
        _ => None,
    };
    match (call.kind.as_deref(), command) {
        (_, Some(command)) => Shows::Command { command },
        (Some("execute"), None) => Shows::Command { command: call.title.clone().unwrap_or_default() },
        _ => Shows::of(tool, input),
    }
}

impl Options {
    /// The option to send back for `outcome`; `None` is `cancelled` (the turn was stopped, or the
    /// agent offered nothing that says what the person decided).
    pub fn chosen(&self, outcome: &InteractionOutcome) -> Option<&str> {
        match outcome {
            InteractionOutcome::Allowed { always: Some(index) } => self.always.get(*index).map(String::as_str),
            InteractionOutcome::Allowed { always: None } => {
                self.allow_once.as_deref().or_else(|| self.always.first().map(String::as_str))
            }
            // Not allowed in time, or not allowed: the agent's "no".
            InteractionOutcome::Denied { .. }
            | InteractionOutcome::Expired
            | InteractionOutcome::Declined { .. }
            | InteractionOutcome::Failed { .. } => self.reject.as_deref(),
            InteractionOutcome::Cancelled { .. }
            | InteractionOutcome::Lost { .. }
            | InteractionOutcome::Answered { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(line_holding: &str, trace: &str) -> PermissionRequest {
        let line =
            trace.lines().find(|l| l.contains("session/request_permission") && l.contains(line_holding)).unwrap();
        let record: Value = serde_json::from_str(line).unwrap();
        serde_json::from_value(record["msg"]["params"].clone()).unwrap()
    }

    #[test]
    fn claudes_bash_request_shows_the_command_and_sends_back_its_own_ids() {
        let request = request("toolu_mock_0009", include_str!("../../../tests/fixtures/acp/bash_restart.jsonl"));
        let (approval, options) = approval(&request);
        assert_eq!(approval.tool, "Bash");
        assert_eq!(approval.shows, Shows::Command { command: "touch made_by_agent.txt".into() });
        assert!(approval.suggestions.is_empty(), "Claude's adapter offers no “always”");
        assert_eq!(options.chosen(&InteractionOutcome::Allowed { always: None }), Some("allow-once"));
        assert_eq!(options.chosen(&InteractionOutcome::Denied { message: None }), Some("reject"));
        assert_eq!(options.chosen(&InteractionOutcome::Expired), Some("reject"));
        assert_eq!(options.chosen(&InteractionOutcome::Cancelled { reason: "stopped".into() }), None);
    }

    #[test]
    fn geminis_always_is_a_suggestion_named_as_the_agent_names_it() {
        let request = request("proceed_once", include_str!("../../../tests/fixtures/acp/gemini_bash.jsonl"));
        let (approval, options) = approval(&request);
        assert_eq!(approval.shows, Shows::Command { command: "touch made_by_gemini.txt".into() });
        assert_eq!(approval.suggestions.len(), 1);
        assert_eq!(approval.suggestions[0].label, "Allow for this session");
        assert_eq!(options.chosen(&InteractionOutcome::Allowed { always: Some(0) }), Some("proceed_always"));
        assert_eq!(options.chosen(&InteractionOutcome::Allowed { always: None }), Some("proceed_once"));
        assert_eq!(options.chosen(&InteractionOutcome::Denied { message: None }), Some("cancel"));
    }

    #[test]
    fn an_edit_shows_the_diff_the_agent_sent() {
        let request: PermissionRequest = serde_json::from_value(json!({
            "sessionId": "s",
            "toolCall": {"toolCallId": "t", "title": "Edit a.txt", "kind": "edit",
                         "content": [{"type": "diff", "path": "/w/a.txt", "oldText": "a\n", "newText": "b\n"}]},
            "options": [{"optionId": "y", "name": "Yes", "kind": "allow_once"}]
        }))
        .unwrap();
        let (approval, options) = approval(&request);
        let Shows::File { path, diff, .. } = approval.shows else { panic!("{:?}", approval.shows) };
        assert_eq!(path, "/w/a.txt");
        assert_eq!(diff.iter().map(|l| l.sign).collect::<String>(), "-+");
        assert_eq!(options.chosen(&InteractionOutcome::Denied { message: None }), None, "no “no” offered: cancelled");
    }
}
