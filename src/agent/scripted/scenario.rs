//! The scenario format the scripted agent plays (TOML; documented in `docs/scenarios.md`).
//!
//! A scenario is a list of turns. Each turn answers the messages that contain one of its `when`
//! words (a turn without `when` answers everything else) with a list of steps: streamed text,
//! tool calls with their output, questions for the person, pauses. Errors name the line and the field, because people write
//! these files by hand.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use toml::Spanned;

/// The demo that runs when no `--scenario` is given.
pub const DEMO: &str = include_str!("demo.toml");

#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    /// Words per second for streamed text.
    pub pace: f64,
    /// Tool arguments stream in pieces of about this many bytes (16, as a model writes them,
    /// unless the scenario says otherwise: a test of a very long call need not stream it so).
    pub argument_chunk: usize,
    /// Messages to try, offered as buttons on the welcome page.
    pub examples: Vec<String>,
    pub turns: Vec<Turn>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// Lower-case words or phrases; empty for the fallback turn.
    pub when: Vec<String>,
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Markdown, streamed word by word. `{{message}}` stands for the person's message.
    Say { text: String },
    /// A tool call: its arguments stream, the person allows it if `permission` says so, it
    /// "runs" for `duration`, then its output arrives.
    Tool {
        name: String,
        input: Value,
        output: String,
        is_error: bool,
        duration: Duration,
        permission: Option<Permission>,
        /// The tool really writes: its `content` to its `file_path`, in the session's folder, as
        /// it runs (a Write whose effect the Changes view shows).
        writes: bool,
    },
    /// A question tool call (`AskUserQuestion`, `AskFollowupQuestion`): the agent waits for the
    /// person. `input` is the arguments exactly as an agent would send them, malformed or not.
    Ask { tool: String, input: Value },
    /// Nothing happens for a while (the agent "thinks").
    Pause { duration: Duration },
}

/// A tool step that asks the person's permission first (`approve = true`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Permission {
    /// Why it needs permission, as Claude Code's `decision_reason`.
    pub reason: Option<String>,
    /// The "always allow" choices, in Claude Code's form; empty for the agent's usual ones.
    pub suggestions: Vec<Value>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ScenarioError {
    #[error("{source_name}: {message}")]
    Syntax { source_name: String, message: String },
    #[error("{source_name}:{line}: {message}")]
    Invalid { source_name: String, line: usize, message: String },
    #[error("cannot read {path}: {message}")]
    Unreadable { path: String, message: String },
}

impl Scenario {
    pub fn demo() -> Self {
        Self::parse(DEMO, "built-in demo").expect("the built-in demo scenario is valid")
    }

    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|error| ScenarioError::Unreadable {
            path: path.display().to_string(),
            message: error.to_string(),
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses and checks a scenario. `source_name` is used in error messages.
    pub fn parse(text: &str, source_name: &str) -> Result<Self, ScenarioError> {
        let raw: RawScenario = toml::from_str(text).map_err(|error| ScenarioError::Syntax {
            source_name: source_name.to_string(),
            message: error.to_string().trim_end().to_string(),
        })?;
        let invalid = |span: std::ops::Range<usize>, message: String| ScenarioError::Invalid {
            source_name: source_name.to_string(),
            line: line_of(text, span.start),
            message,
        };

        let pace = raw.pace.unwrap_or(20.0);
        if !(pace.is_finite() && pace > 0.0) {
            return Err(invalid(0..0, format!("`pace` must be a positive number of words per second, not {pace}")));
        }
        let argument_chunk = raw.argument_chunk.unwrap_or(16);
        if argument_chunk == 0 {
            return Err(invalid(0..0, "`argument_chunk` must be a positive number of bytes".to_string()));
        }
        if raw.turn.is_empty() {
            return Err(invalid(0..0, "a scenario needs at least one [[turn]]".to_string()));
        }
        let mut turns = Vec::with_capacity(raw.turn.len());
        for (turn_index, raw_turn) in raw.turn.into_iter().enumerate() {
            let span = raw_turn.span();
            let raw_turn = raw_turn.into_inner();
            let at = format!("turn {}", turn_index + 1);
            if raw_turn.step.is_empty() {
                return Err(invalid(span, format!("{at}: a turn needs at least one [[turn.step]]")));
            }
            let when: Vec<String> = raw_turn.when.iter().map(|word| word.trim().to_lowercase()).collect();
            if when.iter().any(String::is_empty) {
                return Err(invalid(span, format!("{at}: `when` holds an empty word")));
            }
            let mut steps = Vec::with_capacity(raw_turn.step.len());
            for (step_index, raw_step) in raw_turn.step.into_iter().enumerate() {
                let span = raw_step.span();
                let at = format!("{at}, step {}", step_index + 1);
                let step =
                    raw_step.into_inner().check().map_err(|message| invalid(span, format!("{at}: {message}")))?;
                steps.push(step);
            }
            turns.push(Turn { when, steps });
        }
        let examples: Vec<String> = raw.examples.iter().map(|e| e.trim().to_string()).collect();
        if examples.iter().any(String::is_empty) {
            return Err(invalid(0..0, "`examples` holds an empty message".to_string()));
        }
        Ok(Self { name: raw.name.unwrap_or_else(|| source_name.to_string()), pace, argument_chunk, examples, turns })
    }

    /// The turn that answers `message`: the first with a `when` word (or phrase) among the
    /// message's words, else the first turn without `when`.
    pub fn turn_for(&self, message: &str) -> Option<&Turn> {
        let message = words(message);
        self.turns
            .iter()
            .find(|turn| turn.when.iter().any(|phrase| message.contains(&words(phrase))))
            .or_else(|| self.turns.iter().find(|turn| turn.when.is_empty()))
    }
}

/// Lower-case words between single spaces, with a space at each end, so that a phrase matches
/// whole words only (`read` is not found in `already`).
fn words(text: &str) -> String {
    let mut out = String::from(" ");
    for word in text.split(|c: char| !c.is_alphanumeric()).filter(|word| !word.is_empty()) {
        out.push_str(&word.to_lowercase());
        out.push(' ');
    }
    out
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Option<String>,
    pace: Option<f64>,
    argument_chunk: Option<usize>,
    #[serde(default)]
    examples: Vec<String>,
    #[serde(default)]
    turn: Vec<Spanned<RawTurn>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTurn {
    #[serde(default)]
    when: Vec<String>,
    #[serde(default)]
    step: Vec<Spanned<RawStep>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    say: Option<String>,
    tool: Option<String>,
    ask: Option<String>,
    input: Option<toml::Value>,
    /// Arguments as raw text, for questions whose JSON is broken on purpose.
    input_json: Option<String>,
    output: Option<String>,
    error: Option<bool>,
    duration_ms: Option<u64>,
    pause_ms: Option<u64>,
    /// Ask the person before the tool runs.
    approve: Option<bool>,
    /// The tool writes its `content` to its `file_path` in the session's folder.
    writes: Option<bool>,
    reason: Option<String>,
    suggestions: Option<Vec<toml::Value>>,
}

impl RawStep {
    fn check(self) -> Result<Step, String> {
        self.check_fields_fit_its_kind()?;
        if let Some(tool) = self.ask {
            return ask_step(tool, self.input, self.input_json);
        }
        if let Some(text) = self.say {
            return Ok(Step::Say { text });
        }
        if let Some(ms) = self.pause_ms {
            return Ok(Step::Pause { duration: Duration::from_millis(ms) });
        }
        self.into_tool_step()
    }

    /// A step is of one kind (`say`, `tool`, `ask` or `pause_ms`), and has only fields that kind
    /// reads.
    fn check_fields_fit_its_kind(&self) -> Result<(), String> {
        let kinds = [self.say.is_some(), self.tool.is_some(), self.ask.is_some(), self.pause_ms.is_some()];
        if kinds.iter().filter(|present| **present).count() != 1 {
            return Err("a step needs exactly one of `say`, `tool`, `ask` or `pause_ms`".to_string());
        }
        let tool_only = [
            ("output", self.output.is_some()),
            ("error", self.error.is_some()),
            ("duration_ms", self.duration_ms.is_some()),
            ("approve", self.approve.is_some()),
            ("writes", self.writes.is_some()),
        ];
        if self.tool.is_none()
            && let Some((field, _)) = tool_only.iter().find(|(_, present)| *present)
        {
            return Err(format!("`{field}` belongs to a `tool` step"));
        }
        if self.tool.is_none() && self.ask.is_none() && self.input.is_some() {
            return Err("`input` belongs to a `tool` or `ask` step".to_string());
        }
        if self.approve != Some(true)
            && let Some(field) = [("reason", self.reason.is_some()), ("suggestions", self.suggestions.is_some())]
                .iter()
                .find_map(|(field, present)| present.then_some(field))
        {
            return Err(format!("`{field}` belongs to a tool step with `approve = true`"));
        }
        if self.ask.is_none() && self.input_json.is_some() {
            return Err("`input_json` belongs to an `ask` step".to_string());
        }
        Ok(())
    }

    fn into_tool_step(self) -> Result<Step, String> {
        let name = self.tool.unwrap_or_default();
        if name.trim().is_empty() {
            return Err("`tool` needs a tool name, such as \"Bash\"".to_string());
        }
        let input = match self.input {
            None => Value::Object(Default::default()),
            Some(value) => serde_json::to_value(value).map_err(|error| format!("`input`: {error}"))?,
        };
        if !input.is_object() {
            return Err("`input` must be a table of arguments, such as { command = \"ls\" }".to_string());
        }
        let permission = match self.approve {
            Some(true) => Some(permission(self.reason, self.suggestions)?),
            _ => None,
        };
        Ok(Step::Tool {
            name,
            input,
            output: self.output.unwrap_or_default(),
            is_error: self.error.unwrap_or(false),
            duration: Duration::from_millis(self.duration_ms.unwrap_or(400)),
            permission,
            writes: self.writes.unwrap_or(false),
        })
    }
}

fn ask_step(tool: String, input: Option<toml::Value>, input_json: Option<String>) -> Result<Step, String> {
    if !crate::question::is_question_tool(&tool) {
        return Err(format!("`ask` names a question tool (AskUserQuestion or AskFollowupQuestion), not “{tool}”"));
    }
    let input = match (input, input_json) {
        (Some(_), Some(_)) => return Err("an `ask` step takes `input` or `input_json`, not both".to_string()),
        (Some(value), None) => serde_json::to_value(value).map_err(|error| format!("`input`: {error}"))?,
        (None, Some(text)) => Value::String(text),
        (None, None) => return Err("an `ask` step needs the question in `input`".to_string()),
    };
    Ok(Step::Ask { tool, input })
}

/// What a tool step with `approve = true` asks the person.
fn permission(reason: Option<String>, suggestions: Option<Vec<toml::Value>>) -> Result<Permission, String> {
    let suggestions = suggestions
        .unwrap_or_default()
        .into_iter()
        .map(|s| serde_json::to_value(s).map_err(|error| format!("`suggestions`: {error}")))
        .collect::<Result<Vec<_>, _>>()?;
    if suggestions.iter().any(|s| s.get("type").and_then(Value::as_str).is_none()) {
        return Err("each of `suggestions` needs a `type`, such as \"addRules\"".to_string());
    }
    Ok(Permission { reason, suggestions })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_browser_tests_scenario_parses() {
        let scenario = Scenario::load(Path::new("end2end/fixtures/scenario.toml")).unwrap();
        assert!(scenario.turn_for("pair").is_some_and(|t| matches!(t.steps[0], Step::Ask { .. })));
    }

    #[test]
    fn the_demo_parses_and_has_a_fallback_turn() {
        let demo = Scenario::demo();
        assert!(demo.turns.iter().any(|turn| turn.when.is_empty()));
        assert!(demo.turn_for("anything at all").is_some());
        // What the greeting suggests leads where it says.
        let asks_first = |message: &str, tool: &str| {
            demo.turn_for(message)
                .unwrap()
                .steps
                .iter()
                .any(|step| matches!(step, Step::Tool { name, permission: Some(_), .. } if name == tool))
        };
        assert!(asks_first("run the tests", "Bash"));
        assert!(asks_first("fix the failing test", "Edit"));
        assert!(asks_first("make a plan", "ExitPlanMode"));
    }

    #[test]
    fn steps_of_every_kind_parse() {
        let scenario = Scenario::parse(
            r#"
name = "t"
pace = 100

[[turn]]
when = ["Files"]

[[turn.step]]
say = "Looking."

[[turn.step]]
tool = "Bash"
input = { command = "ls", description = "List" }
output = "a\nb"
duration_ms = 10

[[turn.step]]
pause_ms = 5
"#,
            "t.toml",
        )
        .unwrap();
        assert_eq!(scenario.pace, 100.0);
        let turn = &scenario.turns[0];
        assert_eq!(turn.when, vec!["files"]);
        assert_eq!(turn.steps[0], Step::Say { text: "Looking.".into() });
        assert_eq!(
            turn.steps[1],
            Step::Tool {
                name: "Bash".into(),
                input: json!({"command": "ls", "description": "List"}),
                output: "a\nb".into(),
                is_error: false,
                duration: Duration::from_millis(10),
                permission: None,
                writes: false,
            }
        );
        assert_eq!(turn.steps[2], Step::Pause { duration: Duration::from_millis(5) });
    }

    #[test]
    fn turns_match_words_case_insensitively_then_fall_back() {
        let scenario = Scenario::parse(
            "[[turn]]\nwhen = [\"bash\"]\n[[turn.step]]\nsay = \"b\"\n\n[[turn]]\n[[turn.step]]\nsay = \"f\"\n",
            "t",
        )
        .unwrap();
        assert_eq!(scenario.turn_for("run BASH please").unwrap().steps[0], Step::Say { text: "b".into() });
        assert_eq!(scenario.turn_for("hello").unwrap().steps[0], Step::Say { text: "f".into() });
        assert_eq!(scenario.turn_for("bashful").unwrap().steps[0], Step::Say { text: "f".into() });
    }

    #[test]
    fn a_step_with_two_kinds_names_the_line_where_the_step_starts() {
        let text = "[[turn]]\n[[turn.step]]\nsay = \"hi\"\n\n[[turn.step]]\nsay = \"x\"\ntool = \"Bash\"\n";
        let error = Scenario::parse(text, "bad.toml").unwrap_err();
        assert_eq!(
            error.to_string(),
            "bad.toml:5: turn 1, step 2: a step needs exactly one of `say`, `tool`, `ask` or `pause_ms`"
        );
    }

    #[test]
    fn ask_steps_take_the_arguments_as_given() {
        let scenario = Scenario::parse(
            r#"
[[turn]]
[[turn.step]]
ask = "AskUserQuestion"
input = { questions = [{ question = "Which?", header = "Pick", options = [{ label = "A", description = "a" }] }] }

[[turn.step]]
ask = "AskFollowupQuestion"
input_json = '{"question": "Broken'
"#,
            "t",
        )
        .unwrap();
        let steps = &scenario.turns[0].steps;
        assert_eq!(
            steps[0],
            Step::Ask {
                tool: "AskUserQuestion".into(),
                input: json!({"questions": [{"question": "Which?", "header": "Pick", "options": [{"label": "A", "description": "a"}]}]}),
            }
        );
        assert_eq!(
            steps[1],
            Step::Ask { tool: "AskFollowupQuestion".into(), input: Value::String("{\"question\": \"Broken".into()) }
        );
        let error = Scenario::parse("[[turn]]\n[[turn.step]]\nask = \"Bash\"\ninput = {}\n", "t").unwrap_err();
        assert!(error.to_string().contains("`ask` names a question tool"), "{error}");
        let error = Scenario::parse("[[turn]]\n[[turn.step]]\nask = \"AskUserQuestion\"\n", "t").unwrap_err();
        assert!(error.to_string().contains("needs the question in `input`"), "{error}");
    }

    #[test]
    fn tool_steps_can_ask_permission_with_their_own_suggestions() {
        let scenario = Scenario::parse(
            r#"
[[turn]]
[[turn.step]]
tool = "Bash"
input = { command = "make" }
approve = true
reason = "Runs make"
suggestions = [{ type = "addRules", rules = [{ toolName = "Bash", ruleContent = "make" }], behavior = "allow", destination = "session" }]
"#,
            "t",
        )
        .unwrap();
        let Step::Tool { permission: Some(permission), .. } = &scenario.turns[0].steps[0] else { panic!() };
        assert_eq!(permission.reason.as_deref(), Some("Runs make"));
        assert_eq!(permission.suggestions[0]["rules"][0]["ruleContent"], "make");

        let error = Scenario::parse("[[turn]]\n[[turn.step]]\nsay = \"x\"\napprove = true\n", "t").unwrap_err();
        assert!(error.to_string().contains("`approve` belongs to a `tool` step"), "{error}");
        let error = Scenario::parse("[[turn]]\n[[turn.step]]\ntool = \"X\"\nreason = \"r\"\n", "t").unwrap_err();
        assert!(error.to_string().contains("`reason` belongs to a tool step with `approve = true`"), "{error}");
        let error =
            Scenario::parse("[[turn]]\n[[turn.step]]\ntool = \"X\"\napprove = true\nsuggestions = [{ a = 1 }]\n", "t")
                .unwrap_err();
        assert!(error.to_string().contains("needs a `type`"), "{error}");
    }

    #[test]
    fn a_misspelt_field_is_named_with_its_line() {
        let text = "[[turn]]\n[[turn.step]]\nsya = \"hi\"\n";
        let message = Scenario::parse(text, "bad.toml").unwrap_err().to_string();
        assert!(message.contains("line 3"), "{message}");
        assert!(message.contains("unknown field `sya`"), "{message}");
    }

    #[test]
    fn a_tool_field_on_a_say_step_is_refused() {
        let text = "[[turn]]\n[[turn.step]]\nsay = \"hi\"\noutput = \"x\"\n";
        let message = Scenario::parse(text, "bad.toml").unwrap_err().to_string();
        assert_eq!(message, "bad.toml:2: turn 1, step 1: `output` belongs to a `tool` step");
    }

    #[test]
    fn wrong_types_and_empty_files_are_explained() {
        let message = Scenario::parse("pace = \"fast\"\n", "p.toml").unwrap_err().to_string();
        assert!(message.contains("line 1") && message.contains("pace"), "{message}");
        let message = Scenario::parse("", "e.toml").unwrap_err().to_string();
        assert!(message.contains("at least one [[turn]]"), "{message}");
        let message = Scenario::parse("[[turn]]\nwhen=[\"x\"]\n", "e.toml").unwrap_err().to_string();
        assert_eq!(message, "e.toml:1: turn 1: a turn needs at least one [[turn.step]]");
        let message =
            Scenario::parse("[[turn]]\n[[turn.step]]\ntool = \"X\"\ninput = 3\n", "e.toml").unwrap_err().to_string();
        assert!(message.contains("`input` must be a table"), "{message}");
    }

    #[test]
    fn a_missing_file_says_which() {
        let error = Scenario::load(Path::new("/nonexistent/s.toml")).unwrap_err();
        assert!(error.to_string().starts_with("cannot read /nonexistent/s.toml"));
    }

    use proptest::prelude::*;

    proptest! {
        // The demo and the browser tests' scenario are the corpus: cut short and with characters
        // changed, as a person editing one by hand might leave it. Always a scenario or an error
        // that names where; never a panic.
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        #[test]
        fn a_scenario_file_in_any_state_parses_or_says_what_is_wrong(
            which in any::<bool>(),
            cut in any::<prop::sample::Index>(),
            noise in proptest::collection::vec((any::<prop::sample::Index>(), any::<char>()), 0..4),
        ) {
            let source = if which { DEMO } else { include_str!("../../../end2end/fixtures/scenario.toml") };
            let mut text: Vec<char> = source.chars().collect();
            text.truncate(cut.index(text.len() + 1));
            for (at, c) in noise {
                if !text.is_empty() {
                    let at = at.index(text.len());
                    text[at] = c;
                }
            }
            let text: String = text.into_iter().collect();
            if let Err(error) = Scenario::parse(&text, "edited.toml") {
                prop_assert!(error.to_string().starts_with("edited.toml"), "{error}");
            }
        }

        #[test]
        fn any_text_parses_or_says_what_is_wrong(text in "(?s).{0,300}") {
            let _ = Scenario::parse(&text, "noise.toml");
        }
    }
}
