//! What a question card says in each phase of its life: its state for the styles, its status
//! line (in the words the header and the session list use), and how it ended.

use super::super::interaction_card::Phase;
use crate::interaction::InteractionOutcome;

/// What the card says in each phase: its state for the styles, the status line, the outcome.
#[derive(PartialEq)]
pub(super) struct Status {
    pub(super) key: &'static str,
    pub(super) status: &'static str,
    pub(super) outcome: Option<String>,
}

impl Status {
    pub(super) fn of(phase: &Phase) -> Self {
        let (key, status, outcome) = match phase {
            Phase::Streaming => ("streaming", "The agent is writing a question…", None),
            Phase::CutShort => (
                "cancelled",
                "Cut short",
                Some(
                    "The turn ended before the agent finished writing this question, so it was never asked \
                     and cannot be answered. The agent was told nothing of it: send a message to go on."
                        .into(),
                ),
            ),
            // Said as the header and the session list say it; `QuestionCard` makes it "Paused"
            // when the agent let go of the question.
            Phase::Pending => ("pending", "Waiting for you", None),
            Phase::Sending => ("submitting", "Sending your answer…", None),
            Phase::Unsent(_) => ("error", "Not sent", None),
            Phase::Done(InteractionOutcome::Answered { .. } | InteractionOutcome::Allowed { .. }) => {
                ("answered", "Answered", None)
            }
            // Not an outcome a question gets; shown as what it is.
            Phase::Done(InteractionOutcome::Denied { .. }) => ("declined", "Denied", None),
            Phase::Done(InteractionOutcome::Declined { reason }) => (
                "declined",
                "Skipped",
                Some(match reason {
                    Some(reason) => {
                        format!("You skipped this question ({reason}). The agent was told that you declined to answer.")
                    }
                    None => "You skipped this question. The agent was told that you declined to answer.".to_string(),
                }),
            ),
            Phase::Done(InteractionOutcome::Expired) => {
                ("expired", "Expired", Some("Not answered in time. The agent was told that you did not answer.".into()))
            }
            Phase::Done(InteractionOutcome::Cancelled { reason }) => (
                "cancelled",
                "Cancelled",
                Some(format!("Cancelled: {reason}. The agent is no longer waiting for an answer.")),
            ),
            Phase::Done(InteractionOutcome::Lost { told }) => (
                "lost",
                "Not answered",
                Some(format!(
                    "The server stopped before you answered, and the agent was told: “{told}”. \
                     You can still answer, as a message."
                )),
            ),
            Phase::Elsewhere => (
                "elsewhere",
                "Asked in the terminal",
                Some("This question waits in the `claude` that asked it: answer it there.".into()),
            ),
            Phase::Done(InteractionOutcome::Failed { error }) | Phase::Unreadable(error) => (
                "unreadable",
                "Could not be read",
                Some(format!("The agent's question could not be read: {error}. The agent was told so.")),
            ),
        };
        Self { key, status, outcome }
    }
}
