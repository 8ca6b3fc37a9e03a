//! A form elicitation (`elicitation/create`, mode `form`) as the question card, and the person's
//! answers as the form's content.
//!
//! Claude's adapter sends AskUserQuestion as a form (acp.md §2): a field `question_<n>` per
//! question (single-select: a string with `oneOf`; multi-select: an array whose items are `anyOf`),
//! each followed by `question_<n>_custom`, the "Other" box, which is also where a note to a pick
//! goes. That form becomes exactly the card of Claude Code's own AskUserQuestion. Codex's adapter
//! sends its `request_user_input` the same way with its own Other (`fixtures/acp/codex_plan_ask`):
//! a choice "None of the above" and a note field (`<id>_note`, marked `role: user_note` in its
//! `_meta`), which become the card's Other and note. Any other flat form gets the same card built
//! from its schema: an enum is a single choice, an array of enums
//! a multiple one, a boolean a Yes/No choice, a string or a number an answer in words (the card's
//! Other). A schema we cannot show (nested objects, a URL form) is refused with the reason, and
//! the agent is told the person declined (never an answer nobody gave).

use serde_json::{Map, Value, json};

use crate::question::QuestionAnswer;

const YES: &str = "Yes";
const NO: &str = "No";

/// How one question of the card is written back into the form.
#[derive(Debug, Clone, PartialEq)]
enum Field {
    /// A choice: the labels shown, each with the value it sends (`const`).
    Choice {
        key: String,
        values: Vec<(String, Value)>,
        multiple: bool,
        /// The field the card's Other and note go in.
        custom: Option<String>,
        /// The choice that says "my answer is in the note" (Codex's), sent with an Other.
        other: Option<Value>,
    },
    Boolean {
        key: String,
    },
    /// Words, or a number typed as words.
    Text {
        key: String,
        number: Number,
    },
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Number {
    No,
    Integer,
    Decimal,
}

/// A form, read: the question tool's arguments for the card, and how to write the answers back.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// AskUserQuestion's arguments: `{questions: [...]}`.
    pub questions: Value,
    fields: Vec<Field>,
}

/// The form's fields in the order the agent meant, as far as it can be told: serde_json's map
/// sorts its keys (the schema's own order is gone; keeping it would take `preserve_order` for the
/// whole crate, the page's WASM too), so the `required` list's order comes first, then the rest by
/// name with their numbers by value (`question_2` before `question_10`).
fn in_order<'a>(properties: &'a Map<String, Value>, required: Option<&Value>) -> Vec<(&'a String, &'a Value)> {
    let required: Vec<&str> =
        required.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let mut fields: Vec<(&String, &Value)> = properties.iter().collect();
    fields.sort_by_cached_key(|(key, _)| {
        let asked = required.iter().position(|r| r == key).unwrap_or(usize::MAX);
        let stem = key.trim_end_matches(|c: char| c.is_ascii_digit());
        let number: u64 = key[stem.len()..].parse().unwrap_or(0);
        (asked, stem.to_string(), number, key.to_string())
    });
    fields
}

impl Form {
    /// Reads `schema` (the form's `requestedSchema`) with its `message`; `Err` says why it cannot be
    /// shown.
    pub fn read(message: &str, schema: &Value) -> Result<Self, String> {
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .filter(|p| !p.is_empty())
            .ok_or("the form has no fields")?;
        let single =
            properties.iter().filter(|(key, property)| box_of(properties, key, property).is_none()).count() == 1;
        let mut questions = Vec::new();
        let mut fields = Vec::new();
        for (key, property) in in_order(properties, schema.get("required")) {
            // Claude's "Other" box, or Codex's note, belongs to its question.
            if box_of(properties, key, property).is_some() {
                continue;
            }
            let custom = properties
                .iter()
                .find(|(other, box_property)| box_of(properties, other, box_property) == Some(key.as_str()))
                .map(|(other, _)| other.clone());
            // Codex's field is titled by its question and described by its header; the message of
            // its form says only that Codex needs input.
            let codex = property.pointer("/_meta/codex").is_some();
            let (question, header) = if codex { ("title", "description") } else { ("description", "title") };
            let text = [property.get(question), property.get(header)]
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .find(|text| !text.trim().is_empty())
                .map(str::to_string);
            let text = match (single && !codex, text) {
                (true, _) if !message.trim().is_empty() => message.to_string(),
                (_, Some(text)) => text,
                (_, None) => key.clone(),
            };
            let header = property.get(header).and_then(Value::as_str).filter(|t| *t != text).unwrap_or("");
            let (field, options, multiple) = field_of(key, property, custom)?;
            questions.push(json!({"question": text, "header": header, "options": options, "multiSelect": multiple}));
            fields.push(field);
        }
        Ok(Self { questions: json!({"questions": questions}), fields })
    }

    /// The form's content for `answers` (one per question, in order, as the card gives them).
    pub fn content(&self, answers: &[QuestionAnswer]) -> Map<String, Value> {
        let mut content = Map::new();
        for (field, answer) in self.fields.iter().zip(answers) {
            let words = [answer.other.as_deref(), answer.notes.as_deref()]
                .into_iter()
                .flatten()
                .map(str::trim)
                .filter(|text| !text.is_empty())
                .collect::<Vec<_>>()
                .join("\n");
            match field {
                Field::Choice { key, values, multiple, custom, other } => {
                    let picked: Vec<Value> = answer
                        .labels
                        .iter()
                        .filter_map(|label| values.iter().find(|(shown, _)| shown == label).map(|(_, v)| v.clone()))
                        .collect();
                    match (multiple, picked.first()) {
                        (true, _) if !picked.is_empty() => {
                            content.insert(key.clone(), Value::Array(picked.clone()));
                        }
                        (false, Some(value)) => {
                            content.insert(key.clone(), value.clone());
                        }
                        _ => {}
                    }
                    if !words.is_empty() {
                        // Claude's box; a form without one takes the words as the answer itself.
                        let into = custom.clone().unwrap_or_else(|| key.clone());
                        if custom.is_some() || picked.is_empty() {
                            content.insert(into, Value::String(words));
                        }
                        // Codex's: the words are the answer once "None of the above" is chosen.
                        if let Some(other) = other.as_ref().filter(|_| picked.is_empty() && answer.other.is_some()) {
                            let other = if *multiple { Value::Array(vec![other.clone()]) } else { other.clone() };
                            content.insert(key.clone(), other);
                        }
                    }
                }
                Field::Boolean { key } => {
                    if let Some(label) = answer.labels.first() {
                        content.insert(key.clone(), Value::Bool(label == YES));
                    }
                }
                Field::Text { key, number } => {
                    if !words.is_empty() {
                        content.insert(key.clone(), text_value(&words, *number));
                    }
                }
            }
        }
        content
    }
}

/// Codex's choice that says the answer is in the note (`USER_INPUT_OTHER_OPTION` of its adapter).
const CODEX_OTHER: &str = "None of the above";

/// The question whose Other box (or note) the field `key` is, if it is one: Claude's
/// `<question>_custom`, or a field whose `_meta.codex` says it is the `user_note` of a question.
fn box_of<'a>(properties: &Map<String, Value>, key: &'a str, property: &'a Value) -> Option<&'a str> {
    if let Some(question) = key.strip_suffix("_custom")
        && properties.contains_key(question)
    {
        return Some(question);
    }
    let codex = property.pointer("/_meta/codex")?;
    let question = codex.get("questionId").and_then(Value::as_str)?;
    (codex.get("role").and_then(Value::as_str) == Some("user_note") && properties.contains_key(question))
        .then_some(question)
}

/// A number field's words as the number when they are one, else as they were written (the agent
/// checks its own schema, and is told what the person wrote rather than a guess).
fn text_value(words: &str, number: Number) -> Value {
    let parsed = match number {
        Number::No => None,
        Number::Integer => words.trim().parse::<i64>().ok().map(Value::from),
        Number::Decimal => words.trim().parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(Value::Number),
    };
    parsed.unwrap_or_else(|| Value::String(words.to_string()))
}

/// One field: how it is answered, and the card's options for it.
fn field_of(key: &str, property: &Value, custom: Option<String>) -> Result<(Field, Vec<Value>, bool), String> {
    let kind = property.get("type").and_then(Value::as_str).unwrap_or("string");
    let choices = |schema: &Value| -> Option<Vec<(String, Value, Value)>> {
        if let Some(list) = schema.get("oneOf").or_else(|| schema.get("anyOf")).and_then(Value::as_array) {
            return Some(
                list.iter()
                    .filter_map(|option| {
                        let value = option.get("const")?.clone();
                        let label = option
                            .get("title")
                            .and_then(Value::as_str)
                            .map(str::to_string)
                            .unwrap_or_else(|| label_of(&value));
                        let preview = option.pointer("/_meta/_claude~1askUserQuestionOption/preview").cloned();
                        let described = json!({
                            "label": label,
                            "description": option.get("description").cloned().unwrap_or(Value::Null),
                            "preview": preview.unwrap_or(Value::Null),
                        });
                        Some((label, value, described))
                    })
                    .collect(),
            );
        }
        let values = schema.get("enum").and_then(Value::as_array)?;
        let names = schema.get("enumNames").and_then(Value::as_array);
        Some(
            values
                .iter()
                .enumerate()
                .map(|(i, value)| {
                    let label = names
                        .and_then(|n| n.get(i))
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or_else(|| label_of(value));
                    (label.clone(), value.clone(), json!({"label": label}))
                })
                .collect(),
        )
    };
    let choice = |list: Vec<(String, Value, Value)>, multiple: bool| {
        // Codex's Other is a choice of its own beside the note: the card's Other stands for it.
        let is_other = |value: &Value| custom.is_some() && value.as_str() == Some(CODEX_OTHER);
        let other = list.iter().map(|(_, value, _)| value).find(|value| is_other(value)).cloned();
        let list: Vec<_> = list.into_iter().filter(|(_, value, _)| !is_other(value)).collect();
        let options = list.iter().map(|(_, _, shown)| shown.clone()).collect();
        let values = list.into_iter().map(|(label, value, _)| (label, value)).collect();
        (Field::Choice { key: key.to_string(), values, multiple, custom: custom.clone(), other }, options, multiple)
    };
    match kind {
        "string" => Ok(match choices(property) {
            Some(list) if !list.is_empty() => choice(list, false),
            _ => (Field::Text { key: key.to_string(), number: Number::No }, Vec::new(), false),
        }),
        "array" => match property.get("items").and_then(choices) {
            Some(list) if !list.is_empty() => Ok(choice(list, true)),
            _ => Err(format!("the field “{key}” is a list without choices, which the card cannot ask")),
        },
        "boolean" => {
            Ok((Field::Boolean { key: key.to_string() }, vec![json!({"label": YES}), json!({"label": NO})], false))
        }
        "integer" => Ok((Field::Text { key: key.to_string(), number: Number::Integer }, Vec::new(), false)),
        "number" => Ok((Field::Text { key: key.to_string(), number: Number::Decimal }, Vec::new(), false)),
        other => Err(format!("the field “{key}” is of type {other}, which the card cannot ask")),
    }
}

fn label_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::question::normalize_question_args;

    /// The form Claude's adapter sent for two questions (fixtures/acp/ask_elicit.jsonl).
    fn claude_form() -> (String, Value) {
        let trace = include_str!("../../../tests/fixtures/acp/ask_elicit.jsonl");
        let line = trace.lines().find(|line| line.contains("elicitation/create")).unwrap();
        let params = serde_json::from_str::<Value>(line).unwrap()["msg"]["params"].clone();
        (params["message"].as_str().unwrap().to_string(), params["requestedSchema"].clone())
    }

    #[test]
    fn claudes_ask_user_question_form_is_the_card_of_its_own_tool_and_answers_as_the_adapter_reads() {
        let (message, schema) = claude_form();
        let form = Form::read(&message, &schema).unwrap();
        let questions = normalize_question_args("AskUserQuestion", &form.questions).unwrap();
        assert_eq!(questions.len(), 2);
        assert_eq!(questions[0].question, "Which auth method should we use?");
        assert_eq!(questions[0].header, "Auth");
        assert_eq!(questions[0].options.iter().map(|o| o.label.as_str()).collect::<Vec<_>>(), ["JWT", "Sessions"]);
        assert_eq!(questions[0].options[0].description.as_deref(), Some("Stateless tokens"));
        assert!(!questions[0].multi_select && questions[1].multi_select);

        let answers = [
            QuestionAnswer::new("Which auth method should we use?", &["JWT"], None, Some("rotate keys")),
            QuestionAnswer::new("Which features?", &["Dark mode"], Some("RTL"), None),
        ];
        assert_eq!(
            Value::Object(form.content(&answers)),
            json!({"question_0": "JWT", "question_0_custom": "rotate keys",
                   "question_1": ["Dark mode"], "question_1_custom": "RTL"})
        );
        let other_only = [QuestionAnswer::new("Which auth method should we use?", &[], Some("OAuth"), None)];
        assert_eq!(Value::Object(form.content(&other_only)), json!({"question_0_custom": "OAuth"}));
    }

    /// The form Codex's adapter sent for its `request_user_input` (fixtures/acp/codex_plan_ask).
    fn codex_form() -> (String, Value) {
        let trace = include_str!("../../../tests/fixtures/acp/codex_plan_ask.jsonl");
        let line = trace.lines().find(|line| line.contains("elicitation/create")).unwrap();
        let params = serde_json::from_str::<Value>(line).unwrap()["msg"]["params"].clone();
        (params["message"].as_str().unwrap().to_string(), params["requestedSchema"].clone())
    }

    #[test]
    fn codexs_question_is_one_card_question_with_its_note_as_other_and_answers_as_its_adapter_reads() {
        let (message, schema) = codex_form();
        let form = Form::read(&message, &schema).unwrap();
        let questions = normalize_question_args("AskUserQuestion", &form.questions).unwrap();
        assert_eq!(questions.len(), 1, "the note is the question's Other, not a question: {questions:?}");
        assert_eq!(questions[0].question, "Which auth method should we use?");
        assert_eq!(questions[0].header, "Auth");
        let labels: Vec<&str> = questions[0].options.iter().map(|o| o.label.as_str()).collect();
        assert_eq!(labels, ["JWT (Recommended)", "Sessions"], "its “None of the above” is the card's Other");
        assert!(!questions[0].multi_select);

        let picked = [QuestionAnswer::new(&questions[0].question, &["Sessions"], None, None)];
        assert_eq!(Value::Object(form.content(&picked)), json!({"auth": "Sessions"}));
        let noted = [QuestionAnswer::new(&questions[0].question, &["Sessions"], None, Some("with Redis"))];
        assert_eq!(Value::Object(form.content(&noted)), json!({"auth": "Sessions", "auth_note": "with Redis"}));
        let other = [QuestionAnswer::new(&questions[0].question, &[], Some("OAuth please"), None)];
        assert_eq!(
            Value::Object(form.content(&other)),
            json!({"auth": "None of the above", "auth_note": "OAuth please"}),
            "as the trace's answer, which the model read as the person's words"
        );
    }

    #[test]
    fn a_single_question_is_worded_by_the_message() {
        let schema = json!({"type": "object", "properties": {
            "question_0": {"type": "string", "title": "Db", "oneOf": [
                {"const": "pg", "title": "Postgres", "_meta": {"_claude/askUserQuestionOption": {"preview": "```sql\n```"}}},
                {"const": "lite", "title": "SQLite"}]},
            "question_0_custom": {"type": "string", "title": "Other"}}});
        let form = Form::read("Which database?", &schema).unwrap();
        let questions = normalize_question_args("AskUserQuestion", &form.questions).unwrap();
        assert_eq!(questions[0].question, "Which database?");
        assert_eq!(questions[0].options[0].preview.as_deref(), Some("```sql\n```"));
        let answer = [QuestionAnswer::new("Which database?", &["Postgres"], None, None)];
        assert_eq!(
            Value::Object(form.content(&answer)),
            json!({"question_0": "pg"}),
            "the const goes back, not the title"
        );
    }

    #[test]
    fn any_flat_form_becomes_a_card_of_choices_and_words() {
        let schema = json!({"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "title": "Project name"},
            "license": {"type": "string", "enum": ["MIT", "Apache-2.0"]},
            "targets": {"type": "array", "items": {"enum": ["linux", "mac"]}},
            "tests": {"type": "boolean", "title": "Add tests?"},
            "port": {"type": "integer", "description": "Port"}}});
        let form = Form::read("Set up the project", &schema).unwrap();
        let questions = normalize_question_args("AskUserQuestion", &form.questions).unwrap();
        assert_eq!(questions.len(), 5);
        let answers: Vec<_> = questions
            .iter()
            .map(|q| match q.question.as_str() {
                "Project name" => QuestionAnswer::new(&q.question, &[], Some("bridge"), None),
                "license" => QuestionAnswer::new(&q.question, &["MIT"], None, None),
                "targets" => QuestionAnswer::new(&q.question, &["linux", "mac"], None, None),
                "Add tests?" => QuestionAnswer::new(&q.question, &["No"], None, None),
                "Port" => QuestionAnswer::new(&q.question, &[], Some(" 8080 "), None),
                other => panic!("{other}"),
            })
            .collect();
        assert_eq!(
            Value::Object(form.content(&answers)),
            json!({"name": "bridge", "license": "MIT", "targets": ["linux", "mac"], "tests": false, "port": 8080})
        );
    }

    #[test]
    fn a_form_the_card_cannot_ask_says_why() {
        let nested = json!({"type": "object", "properties": {"address": {"type": "object"}}});
        assert!(Form::read("", &nested).unwrap_err().contains("address"));
        assert!(Form::read("", &json!({"type": "object"})).is_err());
        let free_list = json!({"properties": {"tags": {"type": "array", "items": {"type": "string"}}}});
        assert!(Form::read("", &free_list).unwrap_err().contains("tags"));
    }

    #[test]
    fn fields_come_in_the_required_lists_order_then_by_name_with_numbers_by_value() {
        let mut properties = Map::new();
        for key in ["zeta", "alpha", "question_10", "question_2", "beta"] {
            properties.insert(key.to_string(), json!({"type": "string"}));
        }
        let required = json!(["zeta", "alpha"]);
        let keys: Vec<&str> = in_order(&properties, Some(&required)).iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["zeta", "alpha", "beta", "question_2", "question_10"]);
    }
}
