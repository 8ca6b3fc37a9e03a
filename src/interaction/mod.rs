//! An interaction: the agent asks the person something through one of its tool calls (a question,
//! or permission to run the tool) and waits. This is what the bridge arbitrates, the store
//! records and the cards show: what was asked, and how it ended.

use serde::{Deserialize, Serialize};

use crate::approval::Approval;
use crate::question::{Question, QuestionAnswer};

/// How the person's part of an interaction ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InteractionOutcome {
    Answered {
        answers: Vec<QuestionAnswer>,
    },
    /// The person chose to skip it.
    Declined {
        reason: Option<String>,
    },
    /// Nobody answered within `--question-timeout` (or `--approval-timeout`).
    Expired,
    /// An approval: allowed, once or (`always`: the index of the chosen suggestion) from now on.
    Allowed {
        always: Option<usize>,
    },
    /// An approval: denied; the message goes to the agent.
    Denied {
        message: Option<String>,
    },
    /// The agent stopped waiting: interrupted, exited, or the server restarted.
    Cancelled {
        reason: String,
    },
    /// The request itself could not be used (a malformed question).
    Failed {
        error: String,
    },
    /// The server died while the agent waited, before the interaction was parked; the agent
    /// answered it by itself, and `told` is what it was told (never an answer from the person).
    Lost {
        told: String,
    },
}

impl InteractionOutcome {
    /// The outcome's name, as stored (the `state` column) and logged.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Answered { .. } => "answered",
            Self::Declined { .. } => "declined",
            Self::Expired => "expired",
            Self::Allowed { .. } => "allowed",
            Self::Denied { .. } => "denied",
            Self::Cancelled { .. } => "cancelled",
            Self::Failed { .. } => "failed",
            Self::Lost { .. } => "lost",
        }
    }

    /// The person decided it (rather than time, the agent or a malformed request).
    pub fn is_decision(&self) -> bool {
        matches!(self, Self::Answered { .. } | Self::Allowed { .. } | Self::Denied { .. })
    }

    /// Why an interaction with this outcome takes no more answers, in words ("it was skipped").
    pub fn why_closed(&self) -> String {
        match self {
            Self::Allowed { .. } => "it was already allowed".into(),
            Self::Denied { .. } => "it was already denied".into(),
            Self::Answered { .. } => "it was already answered".into(),
            Self::Declined { .. } => "it was skipped".into(),
            Self::Expired => "it was not answered in time".into(),
            Self::Cancelled { reason } => format!("it was cancelled ({reason})"),
            Self::Failed { error } => format!("the question could not be read ({error})"),
            Self::Lost { .. } => "the server stopped before it could be answered".into(),
        }
    }
}

/// What the agent asked for.
// An approval is as common as a question, and there is one request per card: boxing it would
// cost an allocation per card and a deref in every match, to save bytes nobody keeps many of.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InteractionRequest {
    Question {
        questions: Vec<Question>,
    },
    /// The agent asked, but its arguments could not be understood; `error` says why.
    Unreadable {
        error: String,
    },
    /// Permission to run a tool (or to leave plan mode).
    Approval(Approval),
}

impl InteractionRequest {
    pub fn is_approval(&self) -> bool {
        matches!(self, Self::Approval(_))
    }
}

/// A question or an approval waiting for, or answered by, the person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interaction {
    pub request: InteractionRequest,
    /// `None` while pending.
    pub outcome: Option<InteractionOutcome>,
    /// Pending with no agent process waiting: the agent is paused until the person answers, and
    /// the answer resumes it (DESIGN §3).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub parked: bool,
    /// When it expires unless settled first (ms since the epoch), set as it opens from
    /// `--question-timeout` or `--approval-timeout`: stored, so that parking and restarts keep it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<i64>,
}

impl Interaction {
    pub fn new(request: InteractionRequest) -> Self {
        Self { request, outcome: None, parked: false, expires_at_ms: None }
    }

    /// A new interaction that expires at `expires_at_ms`, if anything.
    pub fn expiring(request: InteractionRequest, expires_at_ms: Option<i64>) -> Self {
        Self { expires_at_ms, ..Self::new(request) }
    }

    pub fn is_pending(&self) -> bool {
        self.outcome.is_none()
    }

    /// The person said no (a permission request denied).
    pub fn is_denied(&self) -> bool {
        matches!(self.outcome, Some(InteractionOutcome::Denied { .. }))
    }

    pub fn questions(&self) -> &[Question] {
        match &self.request {
            InteractionRequest::Question { questions } => questions,
            InteractionRequest::Unreadable { .. } | InteractionRequest::Approval(_) => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_has_a_name_and_words() {
        let outcomes = [
            InteractionOutcome::Answered { answers: vec![] },
            InteractionOutcome::Declined { reason: None },
            InteractionOutcome::Expired,
            InteractionOutcome::Allowed { always: None },
            InteractionOutcome::Denied { message: None },
            InteractionOutcome::Cancelled { reason: "the turn was stopped".into() },
            InteractionOutcome::Failed { error: "`questions` is empty".into() },
            InteractionOutcome::Lost { told: "STOP".into() },
        ];
        let names: Vec<_> = outcomes.iter().map(InteractionOutcome::name).collect();
        assert_eq!(names, ["answered", "declined", "expired", "allowed", "denied", "cancelled", "failed", "lost"]);
        for outcome in &outcomes {
            let words = outcome.why_closed();
            assert!(words.starts_with("it ") || words.starts_with("the "), "{words}");
            assert!(!words.contains('{'), "no debug formatting reaches a person: {words}");
        }
    }
}
