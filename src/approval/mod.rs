//! Approvals: the agent asks permission to run a tool (or, with `ExitPlanMode`, to leave plan
//! mode), and the person allows it once, always (by one of the rules the agent suggests), or
//! denies it with a message. The request and every "always allow" choice are worded here, on the
//! server, so that the browser only shows text.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[cfg(feature = "ssr")]
mod shows;

/// The longest message a person may send to the agent with a denial, in characters.
pub const MAX_DENIAL_CHARS: usize = 4000;

/// What the agent is told when nobody decided within `--approval-timeout`.
pub const EXPIRED_MESSAGE: &str = "The user did not answer this permission request in time, so it was not allowed.";

/// What the agent may do without asking: Claude Code's permission modes, by its names on the wire.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum PermissionMode {
    /// Asks before edits and commands.
    #[default]
    Default,
    /// File edits go ahead; commands still ask.
    AcceptEdits,
    /// Reads and plans, then asks to have its plan approved.
    Plan,
    /// Nothing asks (questions still do).
    BypassPermissions,
    /// Claude Code's: denies whatever is not allowed by a rule, without asking.
    DontAsk,
    /// Claude Code's: its own classifier decides.
    Auto,
}

impl PermissionMode {
    /// Every mode, in the order people meet them.
    pub const ALL: [Self; 6] =
        [Self::Default, Self::AcceptEdits, Self::Plan, Self::BypassPermissions, Self::DontAsk, Self::Auto];
    /// The modes a person can put a session in.
    pub const CHOOSABLE: [Self; 4] = [Self::Default, Self::AcceptEdits, Self::Plan, Self::BypassPermissions];

    /// The name on the wire and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::AcceptEdits => "acceptEdits",
            Self::Plan => "plan",
            Self::BypassPermissions => "bypassPermissions",
            Self::DontAsk => "dontAsk",
            Self::Auto => "auto",
        }
    }

    /// The mode's name for people, and what it means.
    pub fn label(self) -> (&'static str, &'static str) {
        match self {
            Self::Default => ("Ask before acting", "The agent asks before it runs a command or changes a file"),
            Self::AcceptEdits => ("Accept edits", "File edits go ahead; commands still ask"),
            Self::Plan => ("Plan first", "The agent only reads and plans, and asks you to approve its plan"),
            Self::BypassPermissions => ("Bypass permissions", "Nothing asks for permission (questions still do)"),
            Self::DontAsk => ("Don't ask", "What no rule allows is denied without asking"),
            Self::Auto => ("Automatic", "Claude Code decides what needs asking"),
        }
    }

    pub fn is_choosable(self) -> bool {
        Self::CHOOSABLE.contains(&self)
    }
}

impl std::fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

// By name, so that a wrong one is refused with the list of right ones.
impl Serialize for PermissionMode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for PermissionMode {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<str>::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

impl std::str::FromStr for PermissionMode {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        Self::ALL.into_iter().find(|mode| mode.as_str() == name).ok_or_else(|| {
            let names: Vec<_> = Self::ALL.iter().map(|mode| mode.as_str()).collect();
            format!("the permission mode must be one of {}, not “{name}”", names.join(", "))
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    pub tool: String,
    pub input: Value,
    /// What the agent says the call does.
    pub description: Option<String>,
    /// Why it needs permission ("Path is outside allowed working directories").
    pub reason: Option<String>,
    pub blocked_path: Option<String>,
    /// The ways to allow it from now on, worded for a person.
    pub suggestions: Vec<Suggestion>,
    /// What the call will do, in the form a person judges it by.
    pub shows: Shows,
    /// Who asked, when not the agent itself: a subagent, by what it was asked to do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_by: Option<String>,
}

/// What a tool call will do, prepared on the server so that the browser only lays it out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shows {
    /// A shell command (`Bash`).
    Command { command: String },
    /// A file and the change to it (`Edit`, `MultiEdit`, `Write`, `NotebookEdit`); `more` lines
    /// of the change are left out of `diff`.
    File { path: String, diff: Vec<DiffLine>, more: usize },
    /// A web address (`WebFetch`), and what the agent wants from it.
    Url { url: String, prompt: Option<String> },
    /// The plan of `ExitPlanMode`, as markdown.
    Plan { markdown: String },
    /// Anything else: the arguments as indented JSON.
    Json { pretty: String },
}

/// One line of a change: `-` removed, `+` added, ` ` unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffLine {
    pub sign: char,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suggestion {
    /// "Always allow Bash(npm test) in this project on this machine"
    pub label: String,
    /// The agent's own form, handed back as is when chosen.
    pub value: Value,
}

impl Approval {
    /// A request to run `tool` with `input`, with what it will do worded for a person.
    #[cfg(feature = "ssr")]
    pub fn new(tool: &str, input: Value) -> Self {
        Self {
            shows: Shows::of(tool, &input),
            tool: tool.to_string(),
            // What the agent says the call is for (Bash's `description`), until it says otherwise.
            description: input.get("description").and_then(Value::as_str).map(str::to_string),
            input,
            reason: None,
            blocked_path: None,
            suggestions: Vec::new(),
            asked_by: None,
        }
    }

    /// Adds the agent's suggestions for allowing it from now on, each worded.
    #[cfg(feature = "ssr")]
    pub fn with_suggestions(mut self, suggestions: &[Value]) -> Self {
        self.suggestions = suggestions
            .iter()
            .map(|value| Suggestion { label: word_suggestion(value), value: value.clone() })
            .collect();
        // A plan is approved with edits accepted from then on, as the terminal offers ("Yes, and
        // auto-accept edits"): Claude Code takes it as the allow's `updatedPermissions`.
        let accept_edits = serde_json::json!({"type": "setMode", "mode": "acceptEdits", "destination": "session"});
        if self.is_plan() && !suggestions.iter().any(|s| s.get("mode") == accept_edits.get("mode")) {
            self.suggestions.push(Suggestion { label: word_suggestion(&accept_edits), value: accept_edits });
        }
        for suggestion in self.suggestions.iter_mut().filter(|_| self.tool == "ExitPlanMode") {
            if suggestion.value.get("mode").and_then(Value::as_str) == Some("acceptEdits") {
                suggestion.label = "Approve, and accept every edit".to_string();
            }
        }
        self
    }

    /// Whether this asks to leave plan mode with a plan (rather than to run a tool).
    pub fn is_plan(&self) -> bool {
        self.tool == "ExitPlanMode"
    }
}

/// What the person decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Allowed; `always` is the index of the chosen suggestion, for "always allow".
    Allow { always: Option<usize> },
    /// Denied; the message goes to the agent.
    Deny { message: Option<String> },
}

/// Words a permission suggestion of Claude Code for a person (protocol §6: `addRules`,
/// `addDirectories`, `setMode`, each with a `destination`).
pub fn word_suggestion(suggestion: &Value) -> String {
    let text = |key: &str| suggestion.get(key).and_then(Value::as_str).unwrap_or_default();
    let place = match text("destination") {
        "session" => "for this session",
        "localSettings" => "in this project, on this machine (.claude/settings.local.json)",
        "projectSettings" => "in this project, for everyone (.claude/settings.json)",
        "userSettings" => "in all your projects (~/.claude/settings.json)",
        "cliArg" => "for this run",
        "" => "",
        other => other,
    };
    let list = |key: &str, field: Option<&str>| -> String {
        suggestion
            .get(key)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|item| match field {
                        Some(_) => {
                            let tool = item.get("toolName").and_then(Value::as_str)?;
                            Some(match item.get("ruleContent").and_then(Value::as_str) {
                                Some(content) => format!("{tool}({content})"),
                                None => tool.to_string(),
                            })
                        }
                        None => item.as_str().map(str::to_string),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    let what = match text("type") {
        "addRules" | "replaceRules" => {
            let verb = match text("behavior") {
                "deny" => "Always deny",
                "ask" => "Always ask for",
                _ => "Always allow",
            };
            format!("{verb} {}", list("rules", Some("toolName")))
        }
        "addDirectories" => format!("Allow working in {}", list("directories", None)),
        "setMode" => match text("mode") {
            "acceptEdits" => "Accept every edit without asking".to_string(),
            "bypassPermissions" => "Stop asking for permission".to_string(),
            "plan" => "Switch to plan mode".to_string(),
            mode => format!("Switch to {mode} mode"),
        },
        other => format!("Apply “{other}”"),
    };
    if place.is_empty() { what } else { format!("{what} {place}") }
}

/// How many characters of a rule's content (a command, a path) a button shows; the card shows it
/// whole above.
const RULE_ON_BUTTON: usize = 32;

/// A suggestion's label as a button shows it: a long rule shortened inside its parentheses
/// ("Always allow Bash(npm run build -- --wat…) for this session").
pub fn short_label(label: &str) -> String {
    let Some(open) = label.find('(') else { return label.to_string() };
    // The parenthesis that closes the rule (a command may hold its own), not the place's.
    let mut depth = 0;
    let close = label[open..].char_indices().find_map(|(at, c)| {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        (depth == 0).then_some(open + at)
    });
    let Some(close) = close else { return label.to_string() };
    let inside = &label[open + 1..close];
    if inside.chars().count() <= RULE_ON_BUTTON {
        return label.to_string();
    }
    let cut: String = inside.chars().take(RULE_ON_BUTTON - 1).collect();
    format!("{}({}…){}", &label[..open], cut.trim_end(), &label[close + 1..])
}

/// The suggestions worth a choice of their own: one of each label (Claude Code can offer the same
/// mode twice, for two destinations that read the same), with their indices into `suggestions`.
pub fn distinct_suggestions(suggestions: &[Suggestion]) -> Vec<(usize, &Suggestion)> {
    let mut seen = std::collections::HashSet::new();
    suggestions.iter().enumerate().filter(|(_, s)| seen.insert(s.label.as_str())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_long_rule_is_shortened_on_its_button_and_a_short_one_kept() {
        let long = "Always allow Bash(npm run build -- --watch --mode production --verbose) for this session";
        assert_eq!(short_label(long), "Always allow Bash(npm run build -- --watch --mode…) for this session");
        let short = "Always allow Bash(touch deployed.txt) for this session";
        assert_eq!(short_label(short), short);
        assert_eq!(short_label("Accept every edit without asking"), "Accept every edit without asking");
        assert_eq!(short_label("odd ) label ("), "odd ) label (");
        let placed = "Always allow Bash(echo $(date) and then some more words) in this project, on this machine (.claude/settings.local.json)";
        assert_eq!(
            short_label(placed),
            "Always allow Bash(echo $(date) and then some more…) in this project, on this machine (.claude/settings.local.json)"
        );
    }

    #[test]
    fn a_plan_is_offered_with_edits_accepted_once_as_the_terminal_offers() {
        let plan = Approval::new("ExitPlanMode", json!({"plan": "# P"})).with_suggestions(&[]);
        let labels: Vec<&str> = plan.suggestions.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["Approve, and accept every edit"]);
        assert_eq!(plan.suggestions[0].value["mode"], "acceptEdits");
        let offered = json!({"type": "setMode", "mode": "acceptEdits", "destination": "session"});
        let again = Approval::new("ExitPlanMode", json!({"plan": "# P"})).with_suggestions(&[offered]);
        assert_eq!(again.suggestions.len(), 1, "the agent's own offer is not doubled");
        let edit = Approval::new("Edit", json!({})).with_suggestions(&[]);
        assert!(edit.suggestions.is_empty());
    }

    #[test]
    fn the_same_suggestion_twice_is_offered_once() {
        let suggestion = |label: &str, at: &str| Suggestion { label: label.into(), value: json!({ "at": at }) };
        let all = [
            suggestion("Accept every edit", "a"),
            suggestion("Always allow X", "b"),
            suggestion("Accept every edit", "c"),
        ];
        let distinct: Vec<usize> = distinct_suggestions(&all).into_iter().map(|(i, _)| i).collect();
        assert_eq!(distinct, vec![0, 1]);
    }

    #[test]
    fn suggestions_from_the_traces_are_worded_for_people() {
        assert_eq!(
            word_suggestion(
                &json!({"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "touch hi.txt"}], "behavior": "allow", "destination": "localSettings"})
            ),
            "Always allow Bash(touch hi.txt) in this project, on this machine (.claude/settings.local.json)"
        );
        assert_eq!(
            word_suggestion(
                &json!({"type": "addDirectories", "directories": ["/home/user/project"], "destination": "session"})
            ),
            "Allow working in /home/user/project for this session"
        );
        assert_eq!(
            word_suggestion(&json!({"type": "setMode", "mode": "acceptEdits", "destination": "session"})),
            "Accept every edit without asking for this session"
        );
        assert_eq!(word_suggestion(&json!({"type": "newKind"})), "Apply “newKind”");
    }

    #[test]
    fn permission_modes_keep_claude_codes_names() {
        for mode in PermissionMode::ALL {
            assert_eq!(mode.as_str().parse::<PermissionMode>(), Ok(mode));
            assert_eq!(serde_json::to_value(mode).unwrap(), json!(mode.as_str()));
        }
        assert!("yolo".parse::<PermissionMode>().unwrap_err().contains("acceptEdits"));
        assert!(!PermissionMode::Auto.is_choosable());
    }
}
