//! Questions the agent asks the person: one model for `AskUserQuestion` and the flat
//! `AskFollowupQuestion`, the person's answers, the checks an answer must pass, and the answers
//! in words, as agents read them.

mod normalize;
mod partial_json;
pub mod words;

pub use normalize::{
    QuestionError, is_question_tool, normalize_partial, normalize_question_args, question_texts_so_far,
    without_open_string,
};

use serde::{Deserialize, Serialize};

use crate::error::AppError;

/// The longest free text ("Other", notes) an answer may carry, in characters.
pub const MAX_ANSWER_CHARS: usize = 4000;
/// What one card asks at most: a call over a limit opens a card that says which one, and the agent
/// is told the same (a tool error), so it can ask again in smaller pieces. Claude Code's own
/// `AskUserQuestion` stays well inside them (1 to 4 questions of 2 to 4 options); they bound what
/// any agent can make the server store and the page draw.
pub const MAX_QUESTIONS: usize = 10;
pub const MAX_OPTIONS: usize = 12;
/// A question's text, or a choice's description, in characters.
pub const MAX_TEXT_CHARS: usize = 4000;
/// A choice's label, or a question's header, in characters.
pub const MAX_LABEL_CHARS: usize = 200;
/// A choice's markdown preview, in characters.
pub const MAX_PREVIEW_CHARS: usize = 20_000;
/// The label of the free-text choice every question offers.
pub const OTHER: &str = "Other";

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Question {
    /// A short tag ("Auth"); empty when the agent gave none.
    pub header: String,
    pub question: String,
    pub options: Vec<Choice>,
    pub multi_select: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Choice {
    pub label: String,
    pub description: Option<String>,
    /// Markdown shown while this choice has the focus.
    pub preview: Option<String>,
}

/// The person's answer to one question.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionAnswer {
    /// The question's text, as asked.
    pub question: String,
    /// Chosen option labels: one on a single-select question, any number on a multi-select one.
    pub labels: Vec<String>,
    /// Free text from "Other": instead of a label (single-select) or besides them (multi-select).
    pub other: Option<String>,
    pub notes: Option<String>,
}

impl QuestionAnswer {
    /// An answer to `question`: the chosen labels, an "Other" text, a note.
    pub fn new(question: &str, labels: &[&str], other: Option<&str>, notes: Option<&str>) -> Self {
        Self {
            question: question.into(),
            labels: labels.iter().map(|label| label.to_string()).collect(),
            other: other.map(str::to_string),
            notes: notes.map(str::to_string),
        }
    }

    /// The answer as one line, the way agents receive it: labels joined with ", ", the free
    /// text verbatim.
    pub fn summary(&self) -> String {
        let mut parts: Vec<&str> = self.labels.iter().map(String::as_str).collect();
        if let Some(other) = &self.other {
            parts.push(other);
        }
        parts.join(", ")
    }
}

/// Checks an answer against the questions it answers and returns it tidied (trimmed text, empty
/// text dropped, labels in the options' order). Every question needs an answer.
pub fn validate_answers(questions: &[Question], answers: &[QuestionAnswer]) -> Result<Vec<QuestionAnswer>, AppError> {
    let invalid = |question: &str, detail: String| AppError::InvalidAnswer { question: question.to_string(), detail };
    for answer in answers {
        if !questions.iter().any(|q| q.question == answer.question) {
            return Err(invalid(&answer.question, "there is no such question in this card".into()));
        }
    }
    let mut tidy = Vec::with_capacity(questions.len());
    for question in questions {
        let text = question.question.as_str();
        let mut matching = answers.iter().filter(|a| a.question == text);
        let answer = matching.next().ok_or_else(|| invalid(text, "this question has no answer yet".into()))?;
        if matching.next().is_some() {
            return Err(invalid(text, "this question is answered twice".into()));
        }
        let clean = |text: &Option<String>, what: &str| -> Result<Option<String>, AppError> {
            let text = text.as_deref().map(str::trim).filter(|t| !t.is_empty());
            match text {
                Some(t) if t.chars().count() > MAX_ANSWER_CHARS => {
                    Err(invalid(&question.question, format!("the {what} is longer than {MAX_ANSWER_CHARS} characters")))
                }
                other => Ok(other.map(str::to_string)),
            }
        };
        let other = clean(&answer.other, "answer")?;
        let notes = clean(&answer.notes, "note")?;
        for label in &answer.labels {
            if !question.options.iter().any(|o| &o.label == label) {
                return Err(invalid(text, format!("“{label}” is not one of the options")));
            }
        }
        // In the options' order, each once.
        let labels: Vec<String> =
            question.options.iter().filter(|o| answer.labels.contains(&o.label)).map(|o| o.label.clone()).collect();
        if !question.multi_select && labels.len() + other.is_some() as usize > 1 {
            return Err(invalid(text, "only one choice is allowed here".into()));
        }
        if labels.is_empty() && other.is_none() {
            return Err(invalid(text, "choose an option or write an answer".into()));
        }
        tidy.push(QuestionAnswer { question: question.question.clone(), labels, other, notes });
    }
    Ok(tidy)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(label: &str) -> Choice {
        Choice { label: label.into(), description: None, preview: None }
    }

    fn questions() -> Vec<Question> {
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
                options: vec![choice("Dark mode"), choice("i18n"), choice("Analytics")],
                multi_select: true,
            },
        ]
    }

    fn answer(question: &str, labels: &[&str], other: Option<&str>) -> QuestionAnswer {
        QuestionAnswer {
            question: question.into(),
            labels: labels.iter().map(|l| l.to_string()).collect(),
            other: other.map(str::to_string),
            notes: None,
        }
    }

    #[test]
    fn a_complete_answer_is_accepted_and_tidied() {
        let tidy = validate_answers(
            &questions(),
            &[
                answer("Which features?", &["i18n", "Dark mode"], Some("  Offline  ")),
                answer("Which auth?", &["JWT"], Some("   ")),
            ],
        )
        .unwrap();
        assert_eq!(tidy[0], answer("Which auth?", &["JWT"], None));
        assert_eq!(tidy[1], answer("Which features?", &["Dark mode", "i18n"], Some("Offline")));
        assert_eq!(tidy[1].summary(), "Dark mode, i18n, Offline");
    }

    #[test]
    fn other_text_replaces_the_choice_on_single_select() {
        let tidy =
            validate_answers(&questions()[..1], &[answer("Which auth?", &[], Some("OAuth via Google"))]).unwrap();
        assert_eq!(tidy[0].summary(), "OAuth via Google");
    }

    #[test]
    fn wrong_answers_say_what_is_wrong() {
        let q = questions();
        let detail = |answers: &[QuestionAnswer]| match validate_answers(&q, answers) {
            Err(AppError::InvalidAnswer { question, detail }) => format!("{question}: {detail}"),
            other => panic!("expected InvalidAnswer, got {other:?}"),
        };
        let features = answer("Which features?", &["i18n"], None);
        assert_eq!(
            detail(&[answer("Which auth?", &["Magic"], None), features.clone()]),
            "Which auth?: “Magic” is not one of the options"
        );
        assert_eq!(
            detail(&[answer("Which auth?", &["JWT", "Sessions"], None), features.clone()]),
            "Which auth?: only one choice is allowed here"
        );
        assert_eq!(
            detail(&[answer("Which auth?", &["JWT"], Some("and more")), features.clone()]),
            "Which auth?: only one choice is allowed here"
        );
        assert_eq!(detail(std::slice::from_ref(&features)), "Which auth?: this question has no answer yet");
        assert_eq!(
            detail(&[answer("Which auth?", &[], None), features.clone()]),
            "Which auth?: choose an option or write an answer"
        );
        assert_eq!(
            detail(&[answer("Who?", &["JWT"], None), answer("Which auth?", &["JWT"], None), features.clone()]),
            "Who?: there is no such question in this card"
        );
        let long = "x".repeat(MAX_ANSWER_CHARS + 1);
        assert_eq!(
            detail(&[answer("Which auth?", &[], Some(&long)), features.clone()]),
            format!("Which auth?: the answer is longer than {MAX_ANSWER_CHARS} characters")
        );
        assert_eq!(
            detail(&[answer("Which auth?", &["JWT"], None), features.clone(), features]),
            "Which features?: this question is answered twice"
        );
    }
}
