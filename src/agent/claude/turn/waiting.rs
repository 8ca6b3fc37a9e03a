//! The CLI's requests that wait for the person: each waits in a task of its own (so that the
//! CLI's other messages keep flowing meanwhile), and its answer, in the CLI's form, comes back to
//! the turn.

use std::collections::HashMap;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::super::config::AnswerPath;
use super::super::protocol::CanUseTool;
use super::super::reply::{Answer, approval_reply, question_answer};
use crate::agent::{AgentError, Sink};
use crate::approval::{Approval, Shows};

/// A request of the CLI's that waits for the person.
pub(super) struct Asking {
    pub(super) tool_use_id: String,
    /// Through the PreToolUse hook (which can defer) or `can_use_tool` (which cannot).
    pub(super) hook: bool,
    /// A question, or else a permission request.
    pub(super) question: bool,
}

/// A request's answer, as its task sends it back to the turn: (request id, answer).
type Replied = (String, Answer);

/// The requests of one turn that wait for the person, or were parked.
pub(super) struct Waiting {
    sink: Sink,
    /// The CLI's pending requests, by its request id.
    pub(super) asking: HashMap<String, Asking>,
    /// Requests parked, by request id: hooks deferred, or permission requests left unanswered.
    pub(super) parked: HashMap<String, Asking>,
    /// The waiting tasks' answers come back here.
    replies: (mpsc::UnboundedSender<Replied>, mpsc::UnboundedReceiver<Replied>),
    /// Ends the waiting tasks with the turn.
    waits_end: CancellationToken,
}

impl Waiting {
    /// `cancel` (Stop) ends every wait.
    pub(super) fn new(sink: Sink, cancel: &CancellationToken) -> Self {
        Self {
            sink,
            asking: HashMap::new(),
            parked: HashMap::new(),
            replies: mpsc::unbounded_channel(),
            waits_end: cancel.child_token(),
        }
    }

    /// Ends the waiting tasks when dropped (with the turn).
    pub(super) fn end_with_the_turn(&self) -> DropGuard {
        self.waits_end.clone().drop_guard()
    }

    /// The next answer a waiting task sends back.
    pub(super) async fn next_reply(&mut self) -> Option<Replied> {
        self.replies.1.recv().await
    }

    /// A permission request was parked: the CLI cannot go on by itself, it waits for an answer
    /// that cannot be deferred.
    pub(super) fn parked_a_permission_request(&self) -> bool {
        self.parked.values().any(|asking| !asking.hook)
    }

    /// Asks the person's permission, in a task of its own; the answer comes back on `replies`.
    pub(super) fn approve(
        &mut self,
        request_id: String,
        tool_use_id: String,
        ask: CanUseTool,
        asked_by: Option<String>,
    ) {
        self.asking
            .insert(request_id.clone(), Asking { tool_use_id: tool_use_id.clone(), hook: false, question: false });
        let approval = Approval {
            description: ask
                .description
                .clone()
                .or_else(|| ask.input.get("description").and_then(Value::as_str).map(str::to_string)),
            reason: ask.decision_reason.clone(),
            blocked_path: ask.blocked_path.clone(),
            asked_by,
            ..Approval::new(&ask.tool_name, ask.input.clone())
        }
        .with_suggestions(&ask.permission_suggestions);
        let sink = self.sink.clone();
        let replies = self.replies.0.clone();
        let cancel = self.waits_end.child_token();
        tokio::spawn(async move {
            let mut approval = approval;
            if approval.is_plan() && !matches!(approval.shows, Shows::Plan { .. }) {
                let written = sink.tool_input(&tool_use_id).await;
                if let Some(plan) = plan_text(&approval.input, written.as_ref()).await {
                    approval.shows = Shows::Plan { markdown: plan };
                }
            }
            // Parkable: a permission request cannot be deferred, but its card can outlive the CLI
            // and the decision reach the resumed agent in words.
            let answer = match sink.ask_approval(&tool_use_id, approval.clone(), true, &cancel).await {
                Ok(outcome) => approval_reply(&outcome, &approval)
                    .map_or(Answer::Nothing, |reply| Answer::Reply { reply: reply.into(), answers: None }),
                Err(AgentError::Parked) => Answer::Parked,
                Err(AgentError::Failed(error)) => Answer::Unstored(error),
                Err(_) => Answer::Nothing,
            };
            let _ = replies.send((request_id, answer));
        });
    }

    /// Puts a question to the person, in a task of its own; the reply for the CLI comes back on
    /// `replies`. Through the hook (`hook`) a question can be parked: the call is deferred.
    pub(super) fn ask(&mut self, request_id: String, tool_use_id: String, tool: String, input: Value, hook: bool) {
        self.asking.insert(request_id.clone(), Asking { tool_use_id: tool_use_id.clone(), hook, question: true });
        let sink = self.sink.clone();
        let replies = self.replies.0.clone();
        // Stop ends the wait; the turn's end cancels the card.
        let cancel = self.waits_end.child_token();
        let path = if hook { AnswerPath::Hook } else { AnswerPath::CanUseTool };
        tokio::spawn(async move {
            let answer = match sink.ask(&tool_use_id, &tool, &input, hook, &cancel).await {
                Ok(outcome) => question_answer(outcome, &input, path),
                Err(AgentError::Parked) => Answer::Parked,
                Err(AgentError::Failed(error)) => Answer::Unstored(error),
                Err(_) => Answer::Nothing,
            };
            let _ = replies.send((request_id, answer));
        });
    }
}

/// The plan an `ExitPlanMode` request is about. Claude Code fills in `plan` from its plan file
/// and drops what the model wrote when there is none, so look in the request, then in the plan
/// file it names (only inside Claude Code's plans folder: `plan_file`), then in what the model
/// wrote.
async fn plan_text(input: &Value, written: Option<&Value>) -> Option<String> {
    let text = |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    if let Some(plan) = text(input, "plan") {
        return Some(plan);
    }
    if let (Some(path), Some(plans)) = (text(input, "planFilePath"), super::super::plan_file::plans_dir())
        && let Some(plan) = super::super::plan_file::read_plan(&path, &plans).await
    {
        return Some(plan);
    }
    written.and_then(|written| text(written, "plan"))
}
