//! Turning what agents really send into [`Question`]s.
//!
//! Accepted: `AskUserQuestion` (`{questions: [{question, header, options: [{label, description,
//! preview}], multiSelect}]}`), the flat `AskFollowupQuestion` (`{question, options}`, options as
//! strings or objects, or Cline's `follow_up` with `<suggest>` tags), arguments or options given
//! as a JSON string inside the JSON, missing `multiSelect`/`header`/descriptions, and arguments
//! still streaming (partial JSON, for a preview). It never panics; what cannot be understood is a
//! [`QuestionError`] that says what is wrong.

use serde_json::{Map, Value};

use super::partial_json::repair_partial_json;
use super::{Choice, MAX_LABEL_CHARS, MAX_OPTIONS, MAX_PREVIEW_CHARS, MAX_QUESTIONS, MAX_TEXT_CHARS, Question};

/// The tools whose calls are questions for the person.
pub fn is_question_tool(name: &str) -> bool {
    matches!(name, "AskUserQuestion" | "AskFollowupQuestion" | "ask_followup_question")
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuestionError {
    #[error("the arguments are not valid JSON ({0})")]
    NotJson(String),
    #[error("the arguments are {0}, not an object")]
    NotAnObject(&'static str),
    #[error("there is no `questions` list and no `question` text")]
    NoQuestion,
    #[error("`questions` is empty")]
    EmptyQuestions,
    #[error("there are {count} questions, and one card asks at most {MAX_QUESTIONS}: ask them a few at a time")]
    TooManyQuestions { count: usize },
    #[error("question {index}: {problem}")]
    BadQuestion { index: usize, problem: String },
}

/// Normalizes complete arguments. `tool` is the tool's name (both shapes are accepted under
/// either name: agents mix them up).
pub fn normalize_question_args(tool: &str, args: &Value) -> Result<Vec<Question>, QuestionError> {
    let _ = tool;
    let args = unwrap_json_string(args)?;
    let object = args.as_object().ok_or(QuestionError::NotAnObject(kind(&args)))?;
    let questions = match object.get("questions") {
        Some(list) => {
            let list = unwrap_json_string(list)?;
            let Value::Array(items) = list else {
                return Err(QuestionError::BadQuestion {
                    index: 1,
                    problem: format!("`questions` is {}, not a list", kind(&list)),
                });
            };
            if items.is_empty() {
                return Err(QuestionError::EmptyQuestions);
            }
            if items.len() > MAX_QUESTIONS {
                return Err(QuestionError::TooManyQuestions { count: items.len() });
            }
            items
                .iter()
                .enumerate()
                .map(|(index, item)| {
                    let item = unwrap_json_string(item).map_err(|e| bad(index, e.to_string()))?;
                    match &item {
                        Value::Object(question) => question_from(question, None).map_err(|p| bad(index, p)),
                        Value::String(text) => question_from(&Map::new(), Some(text)).map_err(|p| bad(index, p)),
                        other => Err(bad(index, format!("it is {}, not an object", kind(other)))),
                    }
                })
                .collect::<Result<Vec<_>, _>>()?
        }
        None if object.contains_key("question") => vec![question_from(object, None).map_err(|p| bad(0, p))?],
        None => return Err(QuestionError::NoQuestion),
    };
    for (index, question) in questions.iter().enumerate() {
        if questions[..index].iter().any(|q| q.question == question.question) {
            return Err(bad(index, format!("“{}” is asked twice", question.question)));
        }
    }
    Ok(questions)
}

/// What can be shown of arguments still streaming: the questions whose text has arrived, with the
/// options that have a label so far. Never fails.
///
/// Runs on the server: every agent turns the question arguments it streams into a card that fills
/// in, options included (`question_preview` on the sink, `EventBody::ToolInputPreview`); the
/// browser keeps to `question_texts_so_far`, which costs its bundle far less, for a call that has
/// no preview yet.
pub fn normalize_partial(tool: &str, partial: &str) -> Vec<Question> {
    let Ok(value) = serde_json::from_str::<Value>(&repair_partial_json(partial)) else { return Vec::new() };
    if let Ok(questions) = normalize_question_args(tool, &value) {
        return questions;
    }
    within_limits(lenient_partial(&value))
}

/// Each question of `value` (arguments still streaming) that has its text, the rest skipped.
fn lenient_partial(value: &Value) -> Vec<Question> {
    let items: &[Value] = match value.get("questions") {
        Some(Value::Array(items)) => items,
        _ => std::slice::from_ref(value),
    };
    items
        .iter()
        // A question past the limit is not shown.
        .take(MAX_QUESTIONS)
        .filter_map(|item| item.as_object())
        .filter_map(|question| {
            let text = question.get("question")?.as_str()?.trim();
            if text.is_empty() {
                return None;
            }
            let options = question
                .get("options")
                .and_then(|o| unwrap_json_string(o).ok())
                .and_then(|o| o.as_array().cloned())
                .unwrap_or_default()
                .iter()
                .filter_map(|o| choice_from(o).ok())
                .collect();
            Some(Question {
                header: string_field(question, &["header"]).unwrap_or_default(),
                question: text.to_string(),
                options,
                multi_select: multi_select(question),
            })
        })
        .collect()
}

/// `partial` without the string it is still writing, if it is writing one: a preview read from
/// it shows every text whole (a question, a label, a description), never half a word, and changes
/// only when one of them is complete. Quotes and backslashes are ASCII, so bytes will do.
pub fn without_open_string(partial: &str) -> &str {
    let (mut open, mut escaped) = (None, false);
    for (at, byte) in partial.bytes().enumerate() {
        match (open, byte) {
            (Some(_), _) if escaped => escaped = false,
            (Some(_), b'\\') => escaped = true,
            (Some(_), b'"') => open = None,
            (None, b'"') => open = Some(at),
            _ => {}
        }
    }
    open.map_or(partial, |at| &partial[..at])
}

/// The question texts of arguments still streaming, for the card to show while the agent writes:
/// every `"question": "…"` so far, the last one possibly cut off. A small scan rather than the
/// full normalizer, because it runs in the browser, where every byte of code counts.
pub fn question_texts_so_far(partial: &str) -> Vec<String> {
    let mut texts = Vec::new();
    let mut rest = partial;
    while let Some(at) = rest.find("\"question\"") {
        rest = &rest[at + "\"question\"".len()..];
        let Some(value) = rest.trim_start().strip_prefix(':').map(str::trim_start) else { continue };
        let Some(value) = value.strip_prefix('"') else { continue };
        let mut text = String::new();
        let mut chars = value.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => match chars.next() {
                    Some('n') => text.push('\n'),
                    Some('t') => text.push('\t'),
                    Some('u') => {
                        let hex: String = chars.by_ref().take(4).collect();
                        text.extend(u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32));
                    }
                    Some(other) => text.push(other),
                    None => break,
                },
                c => text.push(c),
            }
        }
        let text = text.trim();
        if !text.is_empty() {
            texts.push(text.to_string());
        }
    }
    texts
}

fn bad(index: usize, problem: String) -> QuestionError {
    QuestionError::BadQuestion { index: index + 1, problem }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Agents sometimes send a JSON document as a string inside the JSON, once or twice over.
fn unwrap_json_string(value: &Value) -> Result<Value, QuestionError> {
    let mut value = value.clone();
    for _ in 0..3 {
        let Value::String(text) = &value else { return Ok(value) };
        let trimmed = text.trim();
        if !(trimmed.starts_with('{') || trimmed.starts_with('[') || trimmed.starts_with('"')) {
            return Ok(value);
        }
        value = serde_json::from_str(trimmed).map_err(|e| QuestionError::NotJson(e.to_string()))?;
    }
    Ok(value)
}

fn string_field(object: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|key| match object.get(*key)? {
        Value::String(text) => Some(text.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

fn multi_select(object: &Map<String, Value>) -> bool {
    ["multiSelect", "multi_select", "multiple", "allowMultiple"].iter().any(|key| match object.get(*key) {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s.eq_ignore_ascii_case("true"),
        _ => false,
    })
}

fn question_from(object: &Map<String, Value>, text: Option<&str>) -> Result<Question, String> {
    let question = match text {
        Some(text) => text.trim().to_string(),
        None => string_field(object, &["question", "text", "prompt"])
            .ok_or_else(|| "it has no `question` text".to_string())?,
    };
    if question.is_empty() {
        return Err("its `question` text is empty".into());
    }
    too_long("its text", &question, MAX_TEXT_CHARS)?;
    let raw_options = ["options", "choices", "suggestions", "follow_up", "followUp"]
        .iter()
        .find_map(|key| object.get(*key))
        .cloned()
        .unwrap_or(Value::Array(Vec::new()));
    let raw_options = match &raw_options {
        // Cline: "<suggest>Yes</suggest><suggest>No</suggest>"
        Value::String(text) if text.contains("<suggest") => {
            Value::Array(suggestions(text).into_iter().map(Value::String).collect())
        }
        other => unwrap_json_string(other).map_err(|e| format!("its options: {e}"))?,
    };
    let Value::Array(items) = raw_options else {
        return Err(format!("its options are {}, not a list", kind(&raw_options)));
    };
    if items.len() > MAX_OPTIONS {
        return Err(format!("it has {} options, and a card shows at most {MAX_OPTIONS}", items.len()));
    }
    let mut options: Vec<Choice> = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let choice = choice_from(item).map_err(|p| format!("option {}: {p}", index + 1))?;
        let within = || {
            too_long("its label", &choice.label, MAX_LABEL_CHARS)?;
            too_long("its description", choice.description.as_deref().unwrap_or_default(), MAX_TEXT_CHARS)?;
            too_long("its preview", choice.preview.as_deref().unwrap_or_default(), MAX_PREVIEW_CHARS)
        };
        within().map_err(|p| format!("option {}: {p}", index + 1))?;
        if options.iter().any(|o| o.label == choice.label) {
            return Err(format!("two options are labelled “{}”", choice.label));
        }
        options.push(choice);
    }
    let header = string_field(object, &["header", "title"]).unwrap_or_default();
    too_long("its header", &header, MAX_LABEL_CHARS)?;
    Ok(Question { header, question, options, multi_select: multi_select(object) })
}

/// The limit a text is over, said as `what` is longer than it.
fn too_long(what: &str, text: &str, max: usize) -> Result<(), String> {
    // Bytes bound characters from above: most texts need no count.
    if text.len() > max && text.chars().count() > max {
        return Err(format!("{what} is longer than {max} characters"));
    }
    Ok(())
}

/// A text cut to `max` characters, for a preview, which shows what fits rather than refuse.
fn cut(text: &mut String, max: usize) {
    if text.len() > max
        && let Some((at, _)) = text.char_indices().nth(max)
    {
        text.truncate(at);
        text.push('…');
    }
}

/// What a preview shows of `questions`: the first the card would ask, each within the limits
/// (the card that opens says what went over).
fn within_limits(mut questions: Vec<Question>) -> Vec<Question> {
    questions.truncate(MAX_QUESTIONS);
    for question in &mut questions {
        cut(&mut question.question, MAX_TEXT_CHARS);
        cut(&mut question.header, MAX_LABEL_CHARS);
        question.options.truncate(MAX_OPTIONS);
        for choice in &mut question.options {
            cut(&mut choice.label, MAX_LABEL_CHARS);
            if let Some(description) = &mut choice.description {
                cut(description, MAX_TEXT_CHARS);
            }
            if let Some(preview) = &mut choice.preview {
                cut(preview, MAX_PREVIEW_CHARS);
            }
        }
    }
    questions
}

fn choice_from(item: &Value) -> Result<Choice, String> {
    let (label, description, preview) = match item {
        Value::String(label) => (label.trim().to_string(), None, None),
        Value::Number(n) => (n.to_string(), None, None),
        Value::Object(object) => (
            string_field(object, &["label", "text", "value", "title", "answer"])
                .ok_or_else(|| "it has no `label`".to_string())?,
            string_field(object, &["description", "detail"]).filter(|d| !d.is_empty()),
            string_field(object, &["preview"]).filter(|p| !p.is_empty()),
        ),
        other => return Err(format!("it is {}, not a label or an object", kind(other))),
    };
    if label.is_empty() {
        return Err("its label is empty".into());
    }
    Ok(Choice { label, description, preview })
}

fn suggestions(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("<suggest") {
        let Some(open_end) = rest[start..].find('>') else { break };
        let body = &rest[start + open_end + 1..];
        let Some(end) = body.find("</suggest>") else { break };
        let suggestion = body[..end].trim();
        if !suggestion.is_empty() {
            found.push(suggestion.to_string());
        }
        rest = &body[end..];
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::question::partial_json::tests::arbitrary_json;
    use proptest::prelude::*;
    use serde_json::json;

    fn one(label: &str, description: Option<&str>) -> Choice {
        Choice { label: label.into(), description: description.map(str::to_string), preview: None }
    }

    #[test]
    fn ask_user_question_as_the_cli_sends_it() {
        let args = json!({"questions": [
            {"question": "Which auth?", "header": "Auth", "multiSelect": false,
             "options": [{"label": "JWT", "description": "Stateless tokens"}, {"label": "Sessions", "description": "Server-side", "preview": "```\nsession\n```"}]},
            {"question": "Which features?", "header": "Features", "multiSelect": true,
             "options": [{"label": "Dark mode", "description": "Theme"}, {"label": "i18n", "description": "Languages"}]}
        ]});
        let questions = normalize_question_args("AskUserQuestion", &args).unwrap();
        assert_eq!(questions.len(), 2);
        assert_eq!(questions[0].header, "Auth");
        assert_eq!(questions[0].options[0], one("JWT", Some("Stateless tokens")));
        assert_eq!(questions[0].options[1].preview.as_deref(), Some("```\nsession\n```"));
        assert!(!questions[0].multi_select);
        assert!(questions[1].multi_select);
    }

    #[test]
    fn missing_multiselect_header_and_descriptions_are_fine() {
        let args = json!({"questions": [{"question": "Pick", "options": [{"label": "A"}, {"label": "B"}]}]});
        let q = &normalize_question_args("AskUserQuestion", &args).unwrap()[0];
        assert_eq!((q.header.as_str(), q.multi_select), ("", false));
        assert_eq!(q.options, vec![one("A", None), one("B", None)]);
    }

    #[test]
    fn the_flat_followup_form_with_string_or_object_options() {
        let flat = json!({"question": "Continue?", "options": ["Yes", "No"]});
        let q = &normalize_question_args("AskFollowupQuestion", &flat).unwrap()[0];
        assert_eq!(q.question, "Continue?");
        assert_eq!(q.options, vec![one("Yes", None), one("No", None)]);

        let objects =
            json!({"question": "Continue?", "options": [{"label": "Yes", "description": "Go on"}, {"text": "No"}]});
        let q = &normalize_question_args("AskFollowupQuestion", &objects).unwrap()[0];
        assert_eq!(q.options, vec![one("Yes", Some("Go on")), one("No", None)]);

        let free_text = json!({"question": "What is the project called?"});
        assert!(normalize_question_args("AskFollowupQuestion", &free_text).unwrap()[0].options.is_empty());
    }

    #[test]
    fn json_inside_json_is_unwrapped() {
        let options_as_string = json!({"question": "Continue?", "options": "[\"Yes\", \"No\"]"});
        let q = &normalize_question_args("AskFollowupQuestion", &options_as_string).unwrap()[0];
        assert_eq!(q.options.len(), 2);

        let whole = Value::String(json!({"questions": [{"question": "Q", "options": ["a", "b"]}]}).to_string());
        assert_eq!(normalize_question_args("AskUserQuestion", &whole).unwrap()[0].question, "Q");

        let twice = Value::String(Value::String(json!({"question": "Q"}).to_string()).to_string());
        assert_eq!(normalize_question_args("AskUserQuestion", &twice).unwrap()[0].question, "Q");

        let questions_as_string = json!({"questions": json!([{"question": "Q"}]).to_string()});
        assert_eq!(normalize_question_args("AskUserQuestion", &questions_as_string).unwrap()[0].question, "Q");
    }

    #[test]
    fn cline_suggest_tags_become_options() {
        let args = json!({"question": "Which?", "follow_up": "<suggest>Use SQLite</suggest>\n<suggest mode=\"code\">Use Postgres</suggest>"});
        let q = &normalize_question_args("ask_followup_question", &args).unwrap()[0];
        assert_eq!(q.options, vec![one("Use SQLite", None), one("Use Postgres", None)]);
    }

    #[test]
    fn malformed_arguments_say_what_is_wrong() {
        let error = |args: Value| normalize_question_args("AskUserQuestion", &args).unwrap_err().to_string();
        assert_eq!(error(json!([1, 2])), "the arguments are a list, not an object");
        assert_eq!(error(json!({"foo": 1})), "there is no `questions` list and no `question` text");
        assert_eq!(error(json!({"questions": []})), "`questions` is empty");
        assert_eq!(error(json!({"questions": 3})), "question 1: `questions` is a number, not a list");
        assert_eq!(error(json!({"questions": [{"header": "x"}]})), "question 1: it has no `question` text");
        assert_eq!(error(json!({"questions": [{"question": "  "}]})), "question 1: its `question` text is empty");
        assert_eq!(
            error(json!({"questions": [{"question": "Q", "options": [{"description": "no label"}]}]})),
            "question 1: option 1: it has no `label`"
        );
        assert_eq!(
            error(json!({"questions": [{"question": "Q", "options": ["a", "a"]}]})),
            "question 1: two options are labelled “a”"
        );
        assert_eq!(
            error(json!({"questions": [{"question": "Q"}, {"question": "Q"}]})),
            "question 2: “Q” is asked twice"
        );
        assert_eq!(
            error(json!({"questions": [{"question": "Q", "options": {"a": 1}}]})),
            "question 1: its options are an object, not a list"
        );
        assert!(error(Value::String("{not json".into())).starts_with("the arguments are not valid JSON"));
        assert_eq!(error(json!({"questions": [null]})), "question 1: it is null, not an object");
    }

    #[test]
    fn streaming_arguments_show_what_has_arrived() {
        // In the order a model writes it (serde_json would sort the keys).
        let full = r#"{"questions": [
            {"question": "Which auth?", "header": "Auth", "options": [{"label": "JWT", "description": "Tokens"}, {"label": "Sessions"}]},
            {"question": "Which features?", "options": [{"label": "Dark mode"}]}
        ]}"#;
        let cut = &full[..full.find("Sessions").unwrap() + 4];
        let preview = normalize_partial("AskUserQuestion", cut);
        assert_eq!(preview.len(), 1);
        assert_eq!(preview[0].question, "Which auth?");
        assert_eq!(preview[0].options[0], one("JWT", Some("Tokens")));
        assert_eq!(preview[0].options[1].label, "Sess");
        assert!(normalize_partial("AskUserQuestion", "").is_empty());
        assert!(normalize_partial("AskUserQuestion", "{\"questions\": [{\"quest").is_empty());
        assert_eq!(normalize_partial("AskUserQuestion", full).len(), 2);
    }

    #[test]
    fn a_preview_shows_whole_texts_only() {
        let full = r#"{"questions": [{"question": "Which \"auth\"?", "header": "Auth",
            "options": [{"label": "JWT", "description": "Tokens"}, {"label": "Sessions"}]}]}"#;
        let texts = ["Which \"auth\"?", "Auth", "JWT", "Tokens", "Sessions"];
        let mut shown = 0;
        for cut in 0..=full.len() {
            let Some(prefix) = full.get(..cut) else { continue };
            let preview = normalize_partial("AskUserQuestion", without_open_string(prefix));
            for question in &preview {
                assert!(texts.contains(&question.question.as_str()), "{prefix}");
                for option in &question.options {
                    assert!(texts.contains(&option.label.as_str()), "{prefix}");
                    assert!(option.description.as_deref().is_none_or(|d| texts.contains(&d)), "{prefix}");
                }
            }
            shown = shown.max(preview.first().map_or(0, |q| q.options.len()));
        }
        assert_eq!(shown, 2);
        assert_eq!(without_open_string(r#"{"a": "b\"c"#), r#"{"a": "#);
        assert_eq!(without_open_string(r#"{"a": "b\\"#), r#"{"a": "#);
        assert_eq!(without_open_string(r#"{"a": "b"}"#), r#"{"a": "b"}"#);
    }

    /// The card keeps its preview until it opens; opening it redraws nothing only if the complete
    /// arguments read as a preview give the very questions the card opens with.
    #[test]
    fn complete_arguments_preview_as_the_questions_the_card_opens_with() {
        let written = [
            (
                "AskUserQuestion",
                r#"{"questions": [{"question": "Which auth?", "header": "Auth", "multiSelect": true,
                "options": [{"label": "JWT", "description": "Tokens", "preview": "```\njwt\n```"}, {"label": "Sessions"}]},
                {"question": "Which features?", "options": [{"label": "Dark mode"}]}]}"#,
            ),
            (
                "AskUserQuestion",
                r#"{"questions": "[{\"question\": \"Nested?\", \"options\": [{\"label\": \"Yes\"}]}]"}"#,
            ),
            ("AskFollowupQuestion", r#"{"question": "Go on?", "options": ["Yes", "No"]}"#),
            ("AskFollowupQuestion", r#"{"question": "Go on?", "follow_up": [{"text": "Yes"}, {"text": "No"}]}"#),
        ];
        for (tool, json) in written {
            let value: Value = serde_json::from_str(json).unwrap();
            let opened = normalize_question_args(tool, &value).unwrap();
            assert_eq!(normalize_partial(tool, json), opened, "{json}");
        }
    }

    #[test]
    fn question_texts_show_while_the_arguments_stream() {
        let full = r#"{"questions": [{"question": "Which \"auth\"?\nPick", "options": [{"label": "A"}]}, {"question": "Second?"}]}"#;
        assert_eq!(question_texts_so_far(full), vec!["Which \"auth\"?\nPick", "Second?"]);
        assert_eq!(question_texts_so_far(&full[..full.find("au").unwrap() + 2]), vec!["Which \"au"]);
        assert!(question_texts_so_far(r#"{"questions": [{"quest"#).is_empty());
        assert_eq!(question_texts_so_far(r#"{"question": "caf\u00e9"}"#), vec!["café"]);
        for cut in 0..full.len() {
            let _ = question_texts_so_far(&full[..cut]);
        }
    }

    proptest! {
        #[test]
        fn the_normalizer_never_panics_on_any_json(value in arbitrary_json()) {
            let _ = normalize_question_args("AskUserQuestion", &value);
            let _ = normalize_partial("AskUserQuestion", &value.to_string());
        }

        #[test]
        fn the_normalizer_never_panics_on_question_shaped_noise(
            questions in proptest::collection::vec(
                (proptest::option::of("(?s).{0,8}"), proptest::option::of("(?s).{0,5}"),
                 proptest::collection::vec(prop_oneof![
                     "(?s).{0,6}".prop_map(Value::String),
                     Just(json!({"label": ""})), Just(json!({"description": "d"})), Just(json!(3)),
                     "(?s).{0,6}".prop_map(|l| json!({"label": l, "description": "d"})),
                 ], 0..5),
                 any::<bool>()),
                0..4),
            as_string in any::<bool>(),
        ) {
            let list: Vec<Value> = questions.into_iter().map(|(q, h, o, m)| json!({"question": q, "header": h, "options": o, "multiSelect": m})).collect();
            let args = json!({"questions": list});
            let args = if as_string { Value::String(args.to_string()) } else { args };
            match normalize_question_args("AskUserQuestion", &args) {
                Ok(questions) => {
                    for q in &questions {
                        prop_assert!(!q.question.is_empty());
                        prop_assert!(q.options.iter().all(|o| !o.label.is_empty()));
                    }
                }
                Err(error) => prop_assert!(!error.to_string().is_empty()),
            }
            let text = args.to_string();
            for cut in (0..text.len()).filter(|i| text.is_char_boundary(*i)).step_by(7) {
                let _ = normalize_partial("AskUserQuestion", &text[..cut]);
            }
        }
    }

    #[test]
    fn a_call_over_a_cards_limits_says_which_limit() {
        let with_options = |count: usize| {
            let options: Vec<String> = (1..=count).map(|n| format!("Option {n}")).collect();
            serde_json::json!({"question": "Which?", "options": options})
        };
        assert!(normalize_question_args("AskFollowupQuestion", &with_options(MAX_OPTIONS)).is_ok());
        let error = normalize_question_args("AskFollowupQuestion", &with_options(MAX_OPTIONS + 1)).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("question 1: it has {} options, and a card shows at most {MAX_OPTIONS}", MAX_OPTIONS + 1)
        );

        let long = "x".repeat(MAX_TEXT_CHARS + 1);
        let error = normalize_question_args("AskFollowupQuestion", &serde_json::json!({"question": long})).unwrap_err();
        assert_eq!(error.to_string(), format!("question 1: its text is longer than {MAX_TEXT_CHARS} characters"));
        let label = "y".repeat(MAX_LABEL_CHARS + 1);
        let error =
            normalize_question_args("AskFollowupQuestion", &serde_json::json!({"question": "Q?", "options": [label]}))
                .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("question 1: option 1: its label is longer than {MAX_LABEL_CHARS} characters")
        );

        let many: Vec<_> = (0..=MAX_QUESTIONS).map(|n| serde_json::json!({"question": format!("Q{n}?")})).collect();
        let error = normalize_question_args("AskUserQuestion", &serde_json::json!({"questions": many})).unwrap_err();
        assert_eq!(error, QuestionError::TooManyQuestions { count: MAX_QUESTIONS + 1 });
    }

    #[test]
    fn a_preview_shows_what_fits_in_one_card() {
        let options: Vec<String> = (0..MAX_OPTIONS + 5).map(|n| format!("O{n}")).collect();
        let questions: Vec<_> = (0..MAX_QUESTIONS + 5)
            .map(|n| serde_json::json!({"question": format!("{n} {}", "w".repeat(MAX_TEXT_CHARS)), "options": options}))
            .collect();
        let json = serde_json::json!({"questions": questions}).to_string();
        let preview = normalize_partial("AskUserQuestion", &json[..json.len() - 10]);
        assert_eq!(preview.len(), MAX_QUESTIONS);
        assert!(preview.iter().all(|q| q.options.len() == MAX_OPTIONS));
        assert!(preview.iter().all(|q| q.question.chars().count() == MAX_TEXT_CHARS + 1 && q.question.ends_with('…')));
    }
}
