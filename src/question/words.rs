//! The person's answers in words, in the forms agents read them. One place, so that every agent
//! (and the card's summary) words an answer the same way; each form below says who reads it.

use super::QuestionAnswer;

/// `"Which auth?"="JWT"` per question, joined with `, `, as Claude Code pairs them (protocol
/// §6); the notes after the pair in the given style.
fn pairs(answers: &[QuestionAnswer], notes: impl Fn(&str) -> String) -> String {
    answers
        .iter()
        .map(|answer| {
            let mut pair = format!("\"{}\"=\"{}\"", answer.question, answer.summary());
            if let Some(note) = &answer.notes {
                pair.push_str(&notes(note));
            }
            pair
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The tool result Claude Code gives the model for these answers (protocol §6, SUMMARY.md): the
/// lead-in for answers that are all option labels, and the careful one for free text or notes.
/// Agents that write the tool result themselves use it, so that models read both the same.
pub fn as_tool_result(answers: &[QuestionAnswer]) -> String {
    let pairs = pairs(answers, |note| format!(" notes: {note}"));
    let only_labels = answers.iter().all(|a| a.other.is_none() && a.notes.is_none());
    if only_labels {
        format!("Your questions have been answered: {pairs}. You can now continue with these answers in mind.")
    } else {
        format!(
            "The user answered: {pairs}. Read the answers carefully — they may request clarification, changes, or \
             that you not proceed — and follow what they actually say."
        )
    }
}

/// The answers quoted back in a sentence (the scripted agent's `{{answer}}`):
/// A person's answer that never reached the agent (the server stopped while it waited), sent as
/// their next message, with their consent.
pub fn lost_answer_as_message(answers: &[QuestionAnswer]) -> String {
    format!(
        "You asked me something before AskBridge stopped, and my answer did not reach you then. My answer: {}. \
         Please go on with it in mind.",
        as_quote(answers)
    )
}

/// `"Which auth?"="JWT" (note: …)`.
pub fn as_quote(answers: &[QuestionAnswer]) -> String {
    pairs(answers, |note| format!(" (note: {note})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tool_result_words_answers_as_claude_code_does() {
        let labels = [
            QuestionAnswer::new("Q1", &["JWT"], None, None),
            QuestionAnswer::new("Q2", &["Dark mode", "i18n"], None, None),
        ];
        assert_eq!(
            as_tool_result(&labels),
            "Your questions have been answered: \"Q1\"=\"JWT\", \"Q2\"=\"Dark mode, i18n\". You can now continue with these answers in mind."
        );
        let other = [QuestionAnswer::new("Q1", &["JWT"], None, Some("short-lived tokens please"))];
        assert!(
            as_tool_result(&other).starts_with("The user answered: \"Q1\"=\"JWT\" notes: short-lived tokens please.")
        );
        let free = [QuestionAnswer::new("Q1", &[], Some("OAuth via Google, please"), None)];
        assert!(as_tool_result(&free).starts_with("The user answered: \"Q1\"=\"OAuth via Google, please\"."));
    }

    #[test]
    fn a_quote_pairs_each_answer_with_its_note() {
        let answers = [
            QuestionAnswer::new("Which auth?", &["JWT"], None, Some("short-lived")),
            QuestionAnswer::new("Which features?", &["Dark mode", "i18n"], None, None),
        ];
        assert_eq!(
            as_quote(&answers),
            "\"Which auth?\"=\"JWT\" (note: short-lived), \"Which features?\"=\"Dark mode, i18n\""
        );
    }
}
