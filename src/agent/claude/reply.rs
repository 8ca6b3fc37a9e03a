//! What the CLI is told of the person's decision, in its own format: a `can_use_tool` answer or
//! a hook's, for a question or a permission request; and the answers the hook delivered, kept
//! until the CLI echoes the tool's result. The turn (`turn/`) sends these; a terminal's hooks
//! (`terminal/`) use the same.

use std::collections::HashMap;

use serde_json::Value;

use super::config::AnswerPath;
use super::protocol::{PermissionReply, Reply, allow, deny, hook_allow, hook_deny, input_with_answers};
use crate::approval::Approval;
use crate::interaction::InteractionOutcome;
use crate::question::{QuestionAnswer, words};

/// What the person's decision means to the CLI.
pub(super) enum Answer {
    /// What the CLI is told; with the person's answers when the hook delivered them (the CLI then
    /// fills in the tool's result by itself, and the turn keeps them for it: [`HookAnswers`]).
    Reply { reply: Reply, answers: Option<Vec<QuestionAnswer>> },
    /// The wait was parked: a hook's call is deferred; a permission request cannot be (it stays
    /// unanswered, and the CLI is stopped).
    Parked,
    /// Nothing to say: the CLI withdrew the request, or the turn is over.
    Nothing,
    /// The request could not be stored, so no card shows it: the CLI is told so, and the turn
    /// ends (the store is failing).
    Unstored(String),
}

/// The answers the hook delivered, kept until the CLI echoes the tool's result. Through the hook
/// the CLI writes that result itself; the stored transcript and the card show the person's real
/// answer instead, in the CLI's words (the override step).
#[derive(Default)]
pub(super) struct HookAnswers(HashMap<String, Vec<QuestionAnswer>>);

impl HookAnswers {
    pub(super) fn keep(&mut self, tool_use_id: &str, answers: Vec<QuestionAnswer>) {
        self.0.insert(tool_use_id.to_string(), answers);
    }

    /// The result to store for `tool_use_id`, whose echo says `echoed`: the person's answer where
    /// the hook delivered one (once: the answers go with the echo).
    pub(super) fn result_text(&mut self, tool_use_id: &str, echoed: String) -> String {
        match self.0.remove(tool_use_id) {
            Some(answers) => words::as_tool_result(&answers),
            None => echoed,
        }
    }
}

/// The person's decision on a permission request, as the CLI expects it (a `can_use_tool`
/// answer; a terminal's PermissionRequest hook takes the same as its `decision`).
pub fn approval_reply(outcome: &InteractionOutcome, approval: &Approval) -> Option<PermissionReply> {
    Some(match outcome {
        InteractionOutcome::Allowed { always } => PermissionReply::Allow {
            updated_input: approval.input.clone(),
            updated_permissions: always
                .and_then(|i| approval.suggestions.get(i))
                .map(|suggestion| vec![suggestion.value.clone()]),
        },
        InteractionOutcome::Denied { message: Some(message) } => deny(message),
        InteractionOutcome::Denied { message: None } => {
            deny(if approval.is_plan() { "The user wants to keep planning." } else { "The user denied this." })
        }
        InteractionOutcome::Expired => deny(crate::approval::EXPIRED_MESSAGE),
        InteractionOutcome::Cancelled { .. } => return None,
        other => deny(&format!("The permission request ended without a decision ({}).", other.why_closed())),
    })
}

/// The outcome of a question as the turn hands it to the CLI: the reply, with the answers it
/// delivered through the hook.
pub(super) fn question_answer(outcome: InteractionOutcome, input: &Value, path: AnswerPath) -> Answer {
    let Some(reply) = question_reply(&outcome, input, path) else { return Answer::Nothing };
    let answers = match (outcome, path) {
        (InteractionOutcome::Answered { answers }, AnswerPath::Hook) => Some(answers),
        _ => None,
    };
    Answer::Reply { reply, answers }
}

/// What the CLI is told, in the agent's own format, or `None` when nobody will read it.
pub fn question_reply(outcome: &InteractionOutcome, input: &Value, path: AnswerPath) -> Option<Reply> {
    let decision = question_decision(outcome, input)?;
    Some(match (path, decision) {
        (AnswerPath::CanUseTool, decision) => decision.into(),
        (AnswerPath::Hook, PermissionReply::Allow { updated_input, .. }) => hook_allow(updated_input).into(),
        (AnswerPath::Hook, PermissionReply::Deny { message }) => hook_deny(&message).into(),
    })
}

/// The outcome of a question as a `can_use_tool` answer (a terminal's PermissionRequest hook takes
/// the same as its `decision`): the answers, or why there are none; `None` when nobody will read it.
pub fn question_decision(outcome: &InteractionOutcome, input: &Value) -> Option<PermissionReply> {
    let refusal = match outcome {
        InteractionOutcome::Answered { answers } => return Some(allow(input_with_answers(input, answers))),
        InteractionOutcome::Cancelled { .. } | InteractionOutcome::Lost { .. } => return None,
        InteractionOutcome::Declined { reason } => {
            let mut message = "The user declined to answer these questions: they chose none of the options and \
                               gave no answer. Do not assume one."
                .to_string();
            if let Some(reason) = reason {
                message.push_str(&format!(" Their reason: {reason}"));
            }
            message
        }
        InteractionOutcome::Expired => "The user did not answer these questions in time, so there is no answer. \
                                        Do not assume one."
            .to_string(),
        InteractionOutcome::Failed { error } => format!("The questions could not be shown to the user: {error}"),
        // Approval outcomes: not an answer to a question.
        InteractionOutcome::Allowed { .. } | InteractionOutcome::Denied { .. } => {
            "The questions were not answered.".to_string()
        }
    };
    Some(deny(&refusal))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::claude::protocol::CanUseTool;
    use crate::agent::claude::protocol::traces::first_exchange;

    fn jwt() -> Vec<QuestionAnswer> {
        vec![QuestionAnswer::new("Which auth?", &["JWT"], None, None)]
    }

    #[test]
    fn the_hook_path_keeps_the_answers_it_delivered_and_can_use_tool_keeps_none() {
        let input = json!({"questions": []});
        let answered = InteractionOutcome::Answered { answers: jwt() };
        let Answer::Reply { reply, answers } = question_answer(answered.clone(), &input, AnswerPath::Hook) else {
            panic!("an answer is a reply")
        };
        assert_eq!(serde_json::to_value(reply).unwrap()["hookSpecificOutput"]["permissionDecision"], "allow");
        assert_eq!(answers, Some(jwt()));
        let Answer::Reply { answers, .. } = question_answer(answered, &input, AnswerPath::CanUseTool) else {
            panic!("an answer is a reply")
        };
        assert_eq!(answers, None, "the CLI's own result already says it");
        let declined = question_answer(InteractionOutcome::Declined { reason: None }, &input, AnswerPath::Hook);
        assert!(matches!(declined, Answer::Reply { answers: None, .. }));
    }

    #[test]
    fn always_allow_is_written_exactly_as_the_trace_shows() {
        let (request, response) = first_exchange("d_bash_allow_always.jsonl", "can_use_tool");
        let ask: CanUseTool = serde_json::from_value(request).unwrap();
        let approval = Approval::new(&ask.tool_name, ask.input.clone()).with_suggestions(&ask.permission_suggestions);
        let reply = approval_reply(&InteractionOutcome::Allowed { always: Some(0) }, &approval).unwrap();
        assert_eq!(serde_json::to_value(reply).unwrap(), response);
    }

    #[test]
    fn the_echoed_result_of_a_hook_answer_is_the_persons_answer_once() {
        let mut kept = HookAnswers::default();
        kept.keep("toolu_ask", jwt());
        assert_eq!(kept.result_text("toolu_other", "its own".into()), "its own");
        assert_eq!(kept.result_text("toolu_ask", "filled in by the CLI".into()), words::as_tool_result(&jwt()));
        assert_eq!(kept.result_text("toolu_ask", "again".into()), "again", "the answers went with the echo");
    }
}
