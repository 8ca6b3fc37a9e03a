//! How a question asked in a transcript ended, read back from what Claude Code recorded: the
//! structured `toolUseResult` (`answers`: question text → the answer as one string, labels joined
//! with ", "; `annotations`: notes), else the tool_result's words (protocol §6). The inverse of
//! `agent::claude::protocol::input_with_answers` and `question::words::as_tool_result`.

use serde_json::Value;

use crate::interaction::InteractionOutcome;
use crate::question::{Question, QuestionAnswer};

/// The outcome of an AskUserQuestion call whose tool_result was `text` (`is_error` as recorded).
pub fn question_outcome(
    questions: &[Question],
    text: &str,
    is_error: bool,
    structured: Option<&Value>,
) -> InteractionOutcome {
    if is_error {
        // The CLI refused the call itself (validation, the tool disabled in print mode): nobody
        // was asked. Anything else is the person (or their terminal) saying no.
        if let Some(error) = text.strip_prefix("<tool_use_error>") {
            return InteractionOutcome::Failed {
                error: error.trim_end_matches("</tool_use_error>").trim().to_string(),
            };
        }
        return InteractionOutcome::Declined { reason: Some(text.trim().to_string()).filter(|t| !t.is_empty()) };
    }
    let mut answers = structured.map(|s| from_structured(questions, s)).unwrap_or_default();
    if answers.is_empty() {
        answers = from_words(questions, text);
    }
    if answers.is_empty() {
        // "The user did not answer the questions.", or "The user responded: …" (free text
        // instead of answers).
        return InteractionOutcome::Declined { reason: Some(text.trim().to_string()).filter(|t| !t.is_empty()) };
    }
    InteractionOutcome::Answered { answers }
}

fn from_structured(questions: &[Question], structured: &Value) -> Vec<QuestionAnswer> {
    let Some(answers) = structured.get("answers").and_then(Value::as_object) else { return Vec::new() };
    let annotations = structured.get("annotations").and_then(Value::as_object);
    questions
        .iter()
        .filter_map(|question| {
            let text = answers.get(&question.question)?.as_str()?;
            let notes = annotations
                .and_then(|a| a.get(&question.question))
                .and_then(|a| a.get("notes"))
                .and_then(Value::as_str);
            answer_to(question, text, notes)
        })
        .collect()
}

/// `"<question>"="<answer>"` pairs, as in `Your questions have been answered: "Q1"="A", "Q2"="B, C".
/// …` or `The user answered: "Q1"="A" notes: …. Read the answers carefully …`.
fn from_words(questions: &[Question], text: &str) -> Vec<QuestionAnswer> {
    questions
        .iter()
        .filter_map(|question| {
            let key = format!("\"{}\"=\"", question.question);
            let rest = &text[text.find(&key)? + key.len()..];
            // The answer ends at the quote that ends its pair: before the next pair, the notes,
            // or the closing sentence. An answer may itself hold quotes: take the first such end.
            let ends = ["\", \"", "\" notes: ", "\". "];
            let end = ends.iter().filter_map(|e| rest.find(e)).min().or_else(|| rest.rfind('"'))?;
            let answer = &rest[..end];
            let notes = rest[end..].strip_prefix("\" notes: ").map(|notes| {
                let stop = [". Read the answers carefully", ", \""].iter().filter_map(|e| notes.find(e)).min();
                let stop = stop.unwrap_or(notes.len());
                &notes[..stop]
            });
            answer_to(question, answer, notes)
        })
        .collect()
}

/// One answer string, split back into the question's labels and free text.
fn answer_to(question: &Question, text: &str, notes: Option<&str>) -> Option<QuestionAnswer> {
    let text = text.trim();
    let notes = notes.map(str::trim).filter(|n| !n.is_empty()).map(str::to_string);
    if text.is_empty() || text == "(notes only)" {
        return notes.map(|notes| QuestionAnswer {
            question: question.question.clone(),
            notes: Some(notes),
            ..Default::default()
        });
    }
    let is_label = |part: &str| question.options.iter().any(|o| o.label == part);
    let (labels, other): (Vec<String>, Option<String>) = if is_label(text) {
        (vec![text.to_string()], None)
    } else if question.multi_select {
        let (labels, rest): (Vec<&str>, Vec<&str>) = text.split(", ").partition(|part| is_label(part));
        let other = Some(rest.join(", ")).filter(|r| !r.is_empty());
        (labels.into_iter().map(str::to_string).collect(), other)
    } else {
        (Vec::new(), Some(text.to_string()))
    };
    Some(QuestionAnswer { question: question.question.clone(), labels, other, notes })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::question::Choice;
    use serde_json::json;

    fn questions() -> Vec<Question> {
        let choice = |label: &str| Choice { label: label.into(), description: None, preview: None };
        vec![
            Question {
                header: "Auth".into(),
                question: "Which auth?".into(),
                options: vec![choice("JWT"), choice("Sessions")],
                multi_select: false,
            },
            Question {
                header: "Features".into(),
                question: "Which features?".into(),
                options: vec![choice("Dark mode"), choice("i18n")],
                multi_select: true,
            },
        ]
    }

    #[test]
    fn structured_answers_are_split_into_labels_and_other_text() {
        let structured = json!({"answers": {"Which auth?": "JWT", "Which features?": "Dark mode, Offline support"},
                                "annotations": {"Which auth?": {"notes": "short-lived"}}});
        let outcome = question_outcome(&questions(), "ignored", false, Some(&structured));
        assert_eq!(
            outcome,
            InteractionOutcome::Answered {
                answers: vec![
                    QuestionAnswer::new("Which auth?", &["JWT"], None, Some("short-lived")),
                    QuestionAnswer::new("Which features?", &["Dark mode"], Some("Offline support"), None),
                ]
            }
        );
    }

    #[test]
    fn the_words_are_read_when_nothing_structured_was_kept() {
        let text = "The user answered: \"Which auth?\"=\"OAuth, via \"Google\"\" notes: soon, \"Which features?\"=\"i18n\". \
                    Read the answers carefully — they may request clarification";
        let InteractionOutcome::Answered { answers } = question_outcome(&questions(), text, false, None) else {
            panic!()
        };
        assert_eq!(answers[0], QuestionAnswer::new("Which auth?", &[], Some("OAuth, via \"Google\""), Some("soon")));
        assert_eq!(answers[1], QuestionAnswer::new("Which features?", &["i18n"], None, None));
    }

    #[test]
    fn refusals_and_non_answers_are_never_answers() {
        let qs = questions();
        assert_eq!(
            question_outcome(&qs, "The user doesn't want to proceed with this tool use.", true, None),
            InteractionOutcome::Declined {
                reason: Some("The user doesn't want to proceed with this tool use.".into())
            }
        );
        assert_eq!(
            question_outcome(&qs, "<tool_use_error>Error: No such tool available</tool_use_error>", true, None),
            InteractionOutcome::Failed { error: "Error: No such tool available".into() }
        );
        assert!(matches!(
            question_outcome(&qs, "The user did not answer the questions.", false, Some(&json!({"answers": {}}))),
            InteractionOutcome::Declined { .. }
        ));
    }
}
