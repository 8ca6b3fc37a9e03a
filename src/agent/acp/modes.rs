//! An ACP agent's own permission modes, offered on the Permissions choice by the agent's own
//! names (acp.md §1): the session's `modes`, set with `session/set_mode` (Claude's adapter,
//! Gemini, Codex, Cline), or, for an agent without them, its config option of category `mode`,
//! set with `session/set_config_option` (OpenCode's "build" and "plan"). Each stands for one of
//! AskBridge's modes by its id, which is what the server's policy and the bypass confirmation
//! judge it by, and what a session that chose one of AskBridge's modes gets.

use serde_json::{Value, json};

use super::wire::SessionStarted;
use crate::approval::PermissionMode;
use crate::thread::AgentMode;

/// The agents' ids for each of AskBridge's modes, most common first: Claude's adapter (Claude
/// Code's names), Gemini (`autoEdit`, `yolo`), Codex (`read-only`, `workspace-write`, `agent`,
/// `agent-full-access`), Cline (`act`), OpenCode (`build`).
const LIKE: &[(PermissionMode, &[&str])] = &[
    (PermissionMode::Default, &["default", "ask", "act", "read-only", "build"]),
    (PermissionMode::AcceptEdits, &["acceptEdits", "autoEdit", "auto_edit", "workspace-write"]),
    (PermissionMode::Plan, &["plan"]),
    (PermissionMode::BypassPermissions, &["bypassPermissions", "yolo", "agent-full-access", "full-access"]),
    (PermissionMode::DontAsk, &["dontAsk"]),
    (PermissionMode::Auto, &["auto", "agent"]),
];

/// The AskBridge mode the agent's mode `id` stands for; one nobody knows asks, as the default
/// does (what it really does is the agent's to say: its description is on the choice).
pub fn acts_as(id: &str) -> PermissionMode {
    LIKE.iter().find(|(_, ids)| ids.contains(&id)).map_or(PermissionMode::Default, |(mode, _)| *mode)
}

/// The modes a session of the agent has, and how one is set.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentModes {
    pub current: String,
    pub list: Vec<AgentMode>,
    /// The config option that sets them, for an agent that has no `modes`.
    option: Option<String>,
}

impl AgentModes {
    /// What a session's start (`session/new`, `session/load`) says of its modes.
    pub fn of(started: &SessionStarted) -> Option<Self> {
        if let Some(modes) = started.modes.as_ref().filter(|m| !m.available_modes.is_empty()) {
            let list = modes
                .available_modes
                .iter()
                .map(|mode| AgentMode {
                    id: mode.id.clone(),
                    label: Some(mode.name.clone()).filter(|n| !n.trim().is_empty()).unwrap_or_else(|| mode.id.clone()),
                    description: mode.description.clone().unwrap_or_default(),
                    acts_as: acts_as(&mode.id),
                })
                .collect();
            return Some(Self { current: modes.current_mode_id.clone(), list, option: None });
        }
        let option = started
            .config_options
            .iter()
            .find(|option| option.category.as_deref() == Some("mode") && option.kind.as_deref() == Some("select"))?;
        let list: Vec<AgentMode> = option
            .choices()
            .into_iter()
            .map(|(id, name, description)| AgentMode { acts_as: acts_as(&id), id, label: name, description })
            .collect();
        let current = option.current_value.as_ref().and_then(Value::as_str).unwrap_or_default().to_string();
        (!list.is_empty()).then(|| Self { current, list, option: Some(option.id.clone()) })
    }

    /// The agent's mode like AskBridge's `mode`, if it has one.
    pub fn like(&self, mode: PermissionMode) -> Option<&str> {
        let (_, ids) = LIKE.iter().find(|(like, _)| *like == mode)?;
        ids.iter().find_map(|id| self.list.iter().find(|m| m.id == *id)).map(|m| m.id.as_str())
    }

    pub fn has(&self, id: &str) -> bool {
        self.list.iter().any(|mode| mode.id == id)
    }

    /// The mode the session asks for: its own choice among the agent's, else the agent's like of
    /// AskBridge's `mode`.
    pub fn chosen(&self, agent_mode: Option<&str>, mode: PermissionMode) -> Option<String> {
        agent_mode.filter(|id| self.has(id)).or_else(|| self.like(mode)).map(str::to_string)
    }

    /// The call that puts `acp_session` in mode `id`.
    pub fn switch(&self, acp_session: &str, id: &str) -> (&'static str, Value) {
        match &self.option {
            None => ("session/set_mode", json!({"sessionId": acp_session, "modeId": id})),
            Some(option) => {
                ("session/set_config_option", json!({"sessionId": acp_session, "configId": option, "value": id}))
            }
        }
    }

    /// The names of the modes, for a refusal.
    pub fn names(&self) -> String {
        self.list.iter().map(|mode| mode.label.as_str()).collect::<Vec<_>>().join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started(value: Value) -> SessionStarted {
        serde_json::from_value(value).unwrap()
    }

    fn modes(ids: &[&str]) -> AgentModes {
        let available: Vec<Value> = ids.iter().map(|id| json!({"id": id, "name": id.to_uppercase()})).collect();
        AgentModes::of(&started(json!({"modes": {"currentModeId": ids[0], "availableModes": available}}))).unwrap()
    }

    #[test]
    fn askbridges_modes_are_the_agents_own_by_name() {
        let claude = modes(&["auto", "default", "acceptEdits", "plan"]);
        assert_eq!(claude.like(PermissionMode::Default), Some("default"));
        let gemini = modes(&["default", "autoEdit", "yolo", "plan"]);
        assert_eq!(gemini.like(PermissionMode::AcceptEdits), Some("autoEdit"));
        assert_eq!(gemini.like(PermissionMode::BypassPermissions), Some("yolo"));
        let cline = modes(&["plan", "act"]);
        assert_eq!(cline.like(PermissionMode::Default), Some("act"));
        assert_eq!(cline.like(PermissionMode::AcceptEdits), None);
        let codex = modes(&["read-only", "workspace-write", "agent", "agent-full-access"]);
        assert_eq!(codex.like(PermissionMode::Default), Some("read-only"));
        assert_eq!(codex.list[3].acts_as, PermissionMode::BypassPermissions, "full access is a bypass");
        assert_eq!(codex.chosen(Some("agent"), PermissionMode::Default).as_deref(), Some("agent"));
        assert_eq!(codex.chosen(Some("yolo"), PermissionMode::Default).as_deref(), Some("read-only"), "not Codex's");
        assert_eq!(acts_as("something-new"), PermissionMode::Default);
    }

    #[test]
    fn codexs_modes_are_read_with_their_names_and_set_with_set_mode() {
        let trace = include_str!("../../../tests/fixtures/acp/codex_modes.json");
        let codex = AgentModes::of(&started(serde_json::from_str(trace).unwrap())).unwrap();
        let labels: Vec<&str> = codex.list.iter().map(|m| m.label.as_str()).collect();
        assert_eq!(labels, ["Read-only", "Workspace access", "Auto review", "Full access"]);
        assert_eq!(codex.current, "agent");
        assert!(codex.list[0].description.starts_with("Requires approval"));
        assert_eq!(codex.switch("s", "read-only").0, "session/set_mode");
    }

    #[test]
    fn opencodes_modes_are_its_config_option_and_set_through_it() {
        let line = include_str!("../../../tests/fixtures/acp/opencode_init.jsonl").lines().last().unwrap();
        let result = serde_json::from_str::<Value>(line).unwrap()["msg"]["result"].clone();
        let opencode = AgentModes::of(&started(result)).unwrap();
        assert_eq!(opencode.list.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), ["build", "plan"]);
        assert_eq!((opencode.current.as_str(), opencode.like(PermissionMode::Plan)), ("build", Some("plan")));
        let (method, params) = opencode.switch("ses_1", "plan");
        assert_eq!(method, "session/set_config_option");
        assert_eq!(params, json!({"sessionId": "ses_1", "configId": "mode", "value": "plan"}));
    }
}
