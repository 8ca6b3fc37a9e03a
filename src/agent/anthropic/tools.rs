//! The two question tools this agent declares to the model, and the check of what the model
//! sends against their schemas. Over the plain Messages API the model knows no tool it is not
//! given, so AskBridge declares `AskUserQuestion` (the schema Claude Code sends,
//! `fixtures/claude-cli/askuserquestion.schema.json`) and the flat `AskFollowupQuestion`.
//!
//! Input that fails the schema goes back to the model the way Claude Code answers it
//! (protocol §10): `<tool_use_error>InputValidationError: …</tool_use_error>`, with zod's issue
//! list where Claude Code shows one.

use serde_json::{Value, json};

use super::wire::ToolDefinition;
use crate::question::{Question, normalize_question_args};

pub const ASK_USER_QUESTION: &str = "AskUserQuestion";
pub const ASK_FOLLOWUP_QUESTION: &str = "AskFollowupQuestion";

const ASK_USER_QUESTION_DESCRIPTION: &str = "Asks the user one to four multiple-choice questions and waits for \
their answers. Use it when you need the user's preference or decision before going on: which approach, which \
library, which of several readings of the request. Each question has 2-4 distinct options with a short label \
and a description; the user can always answer in their own words instead (do not add an 'Other' option). Set \
multiSelect when several options can be chosen together.";

const ASK_FOLLOWUP_QUESTION_DESCRIPTION: &str = "Asks the user one question, optionally with suggested answers, \
and waits for the reply. Use it for a single clarifying question; prefer AskUserQuestion for several questions \
or options that need descriptions.";

/// The reply Claude Code gives a question with a single option (v_one_option), before the issue.
const ONE_OPTION_STEER: &str = "This call included a question with fewer than 2 options, so it was rejected and \
the person never saw it. A question with a single option has no decision in it. Do not retry this call and do \
not invent a filler second option. Instead, state the one path you were going to offer as the approach you are \
taking, then continue with the task. If this call also contained questions with 2 to 4 options (each with \
distinct labels), you may re-ask those questions alone in a new call. Ask a question only when the person has \
at least two genuinely distinct choices.";

/// The tools sent with every request.
pub fn definitions() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition {
            name: ASK_USER_QUESTION,
            description: ASK_USER_QUESTION_DESCRIPTION,
            input_schema: ask_user_question_schema(),
        },
        ToolDefinition {
            name: ASK_FOLLOWUP_QUESTION,
            description: ASK_FOLLOWUP_QUESTION_DESCRIPTION,
            input_schema: json!({
                "type": "object",
                "properties": {
                    "question": {"type": "string", "description": "The question to ask the user."},
                    "options": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Suggested answers, 2-4 of them, each a complete answer the user can pick. \
                                        The user can also answer in their own words."
                    }
                },
                "required": ["question"],
                "additionalProperties": false
            }),
        },
    ]
}

/// Claude Code's own schema for `AskUserQuestion`.
pub fn ask_user_question_schema() -> Value {
    let mut schema: Value =
        serde_json::from_str(include_str!("askuserquestion.schema.json")).expect("the AskUserQuestion schema is JSON");
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
    }
    schema
}

/// Whether the model may call this tool here.
pub fn is_declared(name: &str) -> bool {
    name == ASK_USER_QUESTION || name == ASK_FOLLOWUP_QUESTION
}

/// The questions in a call's input, or the `InputValidationError` text the model is sent (without
/// the `<tool_use_error>` tags) and the card shows.
pub fn check(name: &str, input: &Value) -> Result<Vec<Question>, String> {
    if name == ASK_USER_QUESTION {
        check_ask_user_question(input)?;
    } else if !input.get("question").is_some_and(Value::is_string) {
        return Err(format!(
            "InputValidationError: {name} failed due to the following issues:\nThe required parameter `question` is missing"
        ));
    }
    normalize_question_args(name, input).map_err(|error| format!("InputValidationError: {error}"))
}

/// The error block the model receives for `error` (as Claude Code wraps it).
pub fn tool_use_error(error: &str) -> String {
    format!("<tool_use_error>{error}</tool_use_error>")
}

/// One zod issue, printed as Claude Code prints it (`JSON.stringify(issues, null, 2)`).
struct Issue {
    code: &'static str,
    /// `("minimum"|"maximum", n)` for a size issue.
    limit: Option<(&'static str, usize)>,
    path: Vec<Value>,
    message: String,
}

impl Issue {
    fn print(&self) -> String {
        let mut lines = vec!["  {".to_string()];
        if self.limit.is_some() {
            lines.push("    \"origin\": \"array\",".into());
        }
        lines.push(format!("    \"code\": \"{}\",", self.code));
        if let Some((key, n)) = self.limit {
            lines.push(format!("    \"{key}\": {n},"));
            lines.push("    \"inclusive\": true,".into());
        }
        if self.path.is_empty() {
            lines.push("    \"path\": [],".into());
        } else {
            lines.push("    \"path\": [".into());
            let parts: Vec<String> = self.path.iter().map(|p| format!("      {p}")).collect();
            lines.push(parts.join(",\n"));
            lines.push("    ],".into());
        }
        lines.push(format!("    \"message\": {}", Value::String(self.message.clone())));
        lines.push("  }".into());
        lines.join("\n")
    }
}

fn size_issue(path: Vec<Value>, count: usize, min: usize, max: usize) -> Option<Issue> {
    if count < min {
        Some(Issue {
            code: "too_small",
            limit: Some(("minimum", min)),
            path,
            message: format!("Too small: expected array to have >={min} items"),
        })
    } else if count > max {
        Some(Issue {
            code: "too_big",
            limit: Some(("maximum", max)),
            path,
            message: format!("Too big: expected array to have <={max} items"),
        })
    } else {
        None
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `AskUserQuestion`'s schema and refinements, as Claude Code checks them before it shows a card.
fn check_ask_user_question(input: &Value) -> Result<(), String> {
    const TOOL: &str = ASK_USER_QUESTION;
    // Missing or mistyped parameters, and unexpected ones: Claude Code's plain-text form.
    let mut problems = Vec::new();
    let Some(object) = input.as_object() else {
        return Err(format!("InputValidationError: {TOOL} expects an object, not {}", json_type(input)));
    };
    for key in object.keys() {
        if !["questions", "answers", "annotations", "metadata"].contains(&key.as_str()) {
            problems.push(format!("An unexpected parameter `{key}` was provided"));
        }
    }
    let questions = match object.get("questions") {
        None => {
            problems.push("The required parameter `questions` is missing".to_string());
            &Vec::new()
        }
        Some(Value::Array(questions)) => questions,
        Some(other) => {
            problems.push(format!(
                "The parameter `questions` type is expected as `array` but provided as `{}`",
                json_type(other)
            ));
            &Vec::new()
        }
    };
    for (q, question) in questions.iter().enumerate() {
        question_problems(q, question, &mut problems);
    }
    if !problems.is_empty() {
        return Err(format!(
            "InputValidationError: {TOOL} failed due to the following issues:\n{}",
            problems.join("\n")
        ));
    }

    sizes_and_uniqueness(questions)
}

/// What is wrong with the shape of question `q`: its parameters and its options', missing,
/// mistyped or unexpected, in Claude Code's words.
fn question_problems(q: usize, question: &Value, problems: &mut Vec<String>) {
    let Some(question) = question.as_object() else {
        problems.push(format!(
            "The parameter `questions[{q}]` type is expected as `object` but provided as `{}`",
            json_type(question)
        ));
        return;
    };
    for key in question.keys() {
        if !["question", "header", "options", "multiSelect"].contains(&key.as_str()) {
            problems.push(format!("An unexpected parameter `questions[{q}].{key}` was provided"));
        }
    }
    for (key, kind) in [("question", "string"), ("header", "string"), ("options", "array")] {
        match question.get(key) {
            None => problems.push(format!("The required parameter `questions[{q}].{key}` is missing")),
            Some(value) if json_type(value) != kind => problems.push(format!(
                "The parameter `questions[{q}].{key}` type is expected as `{kind}` but provided as `{}`",
                json_type(value)
            )),
            Some(_) => {}
        }
    }
    if let Some(value) = question.get("multiSelect").filter(|v| !v.is_boolean()) {
        problems.push(format!(
            "The parameter `questions[{q}].multiSelect` type is expected as `boolean` but provided as `{}`",
            json_type(value)
        ));
    }
    let options = question.get("options").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    for (o, option) in options.iter().enumerate() {
        let Some(option) = option.as_object() else {
            problems.push(format!(
                "The parameter `questions[{q}].options[{o}]` type is expected as `object` but provided as `{}`",
                json_type(option)
            ));
            continue;
        };
        for key in option.keys() {
            if !["label", "description", "preview"].contains(&key.as_str()) {
                problems.push(format!("An unexpected parameter `questions[{q}].options[{o}].{key}` was provided"));
            }
        }
        for key in ["label", "description"] {
            match option.get(key) {
                None => {
                    problems.push(format!("The required parameter `questions[{q}].options[{o}].{key}` is missing"))
                }
                Some(value) if !value.is_string() => problems.push(format!(
                    "The parameter `questions[{q}].options[{o}].{key}` type is expected as `string` but provided as `{}`",
                    json_type(value)
                )),
                Some(_) => {}
            }
        }
    }
}

/// The sizes (1–4 questions of 2–4 options) and the uniqueness of texts and labels, as zod's
/// issue list; with one option only, Claude Code's steer first.
fn sizes_and_uniqueness(questions: &[Value]) -> Result<(), String> {
    // Sizes and uniqueness: zod's issue list.
    let mut issues = Vec::new();
    issues.extend(size_issue(vec![json!("questions")], questions.len(), 1, 4));
    let mut one_option = false;
    for (q, question) in questions.iter().enumerate() {
        let count = question["options"].as_array().map_or(0, Vec::len);
        let issue = size_issue(vec![json!("questions"), json!(q), json!("options")], count, 2, 4);
        one_option |= issue.as_ref().is_some_and(|i| i.code == "too_small");
        issues.extend(issue);
    }
    if issues.is_empty() {
        let texts: Vec<&str> = questions.iter().filter_map(|q| q["question"].as_str()).collect();
        let unique_texts = texts.iter().enumerate().all(|(i, t)| !texts[..i].contains(t));
        let unique_labels = questions.iter().all(|q| {
            let labels: Vec<&str> =
                q["options"].as_array().into_iter().flatten().filter_map(|o| o["label"].as_str()).collect();
            labels.iter().enumerate().all(|(i, l)| !labels[..i].contains(l))
        });
        if !unique_texts || !unique_labels {
            issues.push(Issue {
                code: "custom",
                limit: None,
                path: Vec::new(),
                message: "Question texts must be unique, option labels must be unique within each question".into(),
            });
        }
    }
    if issues.is_empty() {
        return Ok(());
    }
    let list = format!("[\n{}\n]", issues.iter().map(Issue::print).collect::<Vec<_>>().join(",\n"));
    if one_option {
        Err(format!("InputValidationError: {ONE_OPTION_STEER}\n\n{list}"))
    } else {
        Err(format!("InputValidationError: {list}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tool_result Claude Code sent in a trace of `tests/fixtures/claude-cli/`, and the input
    /// the model had sent.
    fn from_trace(name: &str) -> (Value, String) {
        let path = format!("{}/tests/fixtures/claude-cli/{name}.jsonl", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(path).unwrap();
        let mut input = None;
        let mut result = None;
        for line in text.lines() {
            let Ok(value) = serde_json::from_str::<Value>(line) else { continue };
            let value = value.get("msg").cloned().unwrap_or(value);
            for block in value.pointer("/message/content").and_then(Value::as_array).into_iter().flatten() {
                match block["type"].as_str() {
                    Some("tool_use") if block["name"] == ASK_USER_QUESTION => input = Some(block["input"].clone()),
                    Some("tool_result") => result = block["content"].as_str().map(str::to_string),
                    _ => {}
                }
            }
        }
        (input.expect("a tool_use in the trace"), result.expect("a tool_result in the trace"))
    }

    #[test]
    fn invalid_questions_are_refused_in_claude_codes_words() {
        for trace in ["v_one_option", "v_five_options", "v_five_questions", "v_dup_labels", "v_no_description"] {
            let (input, expected) = from_trace(trace);
            let error = check(ASK_USER_QUESTION, &input).expect_err(trace);
            assert_eq!(tool_use_error(&error), expected, "{trace}");
        }
    }

    #[test]
    fn valid_questions_pass_including_a_missing_multiselect_and_a_long_header() {
        for trace in ["v_no_multiselect", "v_long_header", "a_allow"] {
            let (input, _) = from_trace(trace);
            let questions = check(ASK_USER_QUESTION, &input).unwrap_or_else(|e| panic!("{trace}: {e}"));
            assert!(!questions.is_empty());
        }
    }

    #[test]
    fn the_flat_form_needs_its_question() {
        let questions = check(ASK_FOLLOWUP_QUESTION, &json!({"question": "Go on?", "options": ["Yes", "No"]})).unwrap();
        assert_eq!(questions[0].options.len(), 2);
        let error = check(ASK_FOLLOWUP_QUESTION, &json!({"options": ["Yes"]})).unwrap_err();
        assert!(error.contains("`question` is missing"), "{error}");
    }

    #[test]
    fn both_tools_are_declared_with_their_schemas() {
        let tools = definitions();
        assert_eq!(tools.iter().map(|t| t.name).collect::<Vec<_>>(), [ASK_USER_QUESTION, ASK_FOLLOWUP_QUESTION]);
        assert_eq!(tools[0].input_schema["properties"]["questions"]["maxItems"], 4);
        assert!(tools[0].input_schema.get("$schema").is_none());
        assert_eq!(tools[1].input_schema["required"], json!(["question"]));
    }
}
