//! A session page's cards, answerable before the page's WebAssembly runs (issue 38). A person who
//! opens a session's link while the agent waits (a notification's, say) should not wait for the
//! page's code, nor have it compete with the agent for the cores while the answer goes in. So the
//! server draws such a card with what each of its controls sends (`data-send`: the server
//! function and its body, as a push notification's actions carry them), marks the card
//! (`data-send-early`), and puts `early_answer.js` in the page: a click sends from there, and the
//! page's WebAssembly is compiled and hydrates once the answer is in (the script says when).
//! Cards a single click answers only: a one-question single-select card, and a permission.

use crate::interaction::InteractionRequest;

/// Whether a click answers `request` on the card the server drew.
pub fn answers_early(request: &InteractionRequest) -> bool {
    match request {
        InteractionRequest::Question { questions } => {
            matches!(questions.as_slice(), [only] if !only.multi_select && !only.options.is_empty())
        }
        InteractionRequest::Approval(_) => true,
        _ => false,
    }
}

#[cfg(feature = "ssr")]
pub use on_the_server::{SCRIPT, send_answer, send_decision};

#[cfg(feature = "ssr")]
mod on_the_server {
    use server_fn::ServerFn;

    use crate::api::{DecideApproval, SubmitAnswers};
    use crate::approval::Decision;
    use crate::question::QuestionAnswer;

    /// The script, written into the page (no request more before the card answers).
    pub const SCRIPT: &str = include_str!("early_answer.js");

    fn send(to: &str, body: impl serde::Serialize) -> String {
        serde_json::json!({"to": to, "body": body}).to_string()
    }

    /// What the option `label` of the card's one question sends.
    pub fn send_answer(session: &str, tool_use_id: &str, question: &str, label: &str) -> String {
        let answers = vec![QuestionAnswer::new(question, &[label], None, None)];
        let body =
            SubmitAnswers { session: session.into(), tool_use_id: tool_use_id.into(), answers, as_message: false };
        send(<SubmitAnswers as ServerFn>::PATH, body)
    }

    /// What a permission card's button for `decision` sends.
    pub fn send_decision(session: &str, tool_use_id: &str, decision: Decision) -> String {
        let body = DecideApproval { session: session.into(), tool_use_id: tool_use_id.into(), decision };
        send(<DecideApproval as ServerFn>::PATH, body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{DecideApproval, SubmitAnswers};
    use crate::approval::Decision;
    use crate::question::{Choice, Question, QuestionAnswer};

    fn question(multi_select: bool, options: usize) -> InteractionRequest {
        let options =
            (0..options).map(|i| Choice { label: format!("o{i}"), description: None, preview: None }).collect();
        InteractionRequest::Question {
            questions: vec![Question { header: String::new(), question: "Which?".into(), options, multi_select }],
        }
    }

    #[test]
    fn a_click_answers_a_single_choice_or_a_permission_early_and_nothing_else() {
        assert!(answers_early(&question(false, 2)));
        assert!(!answers_early(&question(true, 2)), "several choices are submitted");
        assert!(!answers_early(&question(false, 0)), "words only");
        let InteractionRequest::Question { questions } = question(false, 2) else { unreachable!() };
        let two = InteractionRequest::Question { questions: [questions.clone(), questions].concat() };
        assert!(!answers_early(&two), "two questions are submitted");
    }

    #[test]
    fn what_an_early_control_sends_is_the_server_functions_own_request() {
        let sent: serde_json::Value = serde_json::from_str(&send_answer("s1", "toolu_1", "Which?", "o1")).unwrap();
        assert_eq!(sent["to"], "/api/submit_answers");
        let body: SubmitAnswers = serde_json::from_value(sent["body"].clone()).unwrap();
        assert_eq!((body.session.as_str(), body.tool_use_id.as_str()), ("s1", "toolu_1"));
        assert_eq!(body.answers, vec![QuestionAnswer::new("Which?", &["o1"], None, None)]);
        let sent: serde_json::Value =
            serde_json::from_str(&send_decision("s1", "toolu_2", Decision::Deny { message: None })).unwrap();
        assert_eq!(sent["to"], "/api/decide_approval");
        let body: DecideApproval = serde_json::from_value(sent["body"].clone()).unwrap();
        assert_eq!(body.decision, Decision::Deny { message: None });
    }
}
