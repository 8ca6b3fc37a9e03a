//! The InteractionBridge owns an interaction's life (DESIGN §3): an agent registers and waits; the
//! person's answer, decline or decision resolves it; the first resolution wins, the same one again
//! is accepted, a different one is refused; a timeout expires it and Stop cancels it.
//!
//! An interaction can also be parked: the agent lets go of it (the server stops, nobody answered for
//! a while, or the agent's turn simply ends there, as the Messages API agent's does), the card
//! stays pending, and the answer, once recorded, asks the session to resume the agent.
//!
//! A timeout is a deadline recorded with the interaction as it opens, not a timer in the waiting
//! agent: a parked interaction has no agent, and a restart keeps no timer. Each server arms one
//! timer from the ledger's next deadline (`keep_deadlines`), and expiring is a resolution like
//! any other: the first outcome wins, so servers racing to expire one interaction is fine.
//!
//! The bridge decides; the [`Ledger`] (`ledger.rs`) records. Each resolution is judged against
//! the interaction as recorded, under the ledger's lock, and recorded before the waiting agent
//! hears of it. In production the ledger is the session's event log; in the tests below it is a
//! map in memory. How long everything waits is `timeouts.rs`.

mod ledger;
mod timeouts;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::approval::{Decision, MAX_DENIAL_CHARS};
use crate::error::AppError;
use crate::ids::now_ms;
use crate::interaction::{Interaction, InteractionOutcome, InteractionRequest};
use crate::question::{MAX_ANSWER_CHARS, QuestionAnswer, validate_answers};

pub use ledger::{Deadlines, Elsewhere, Ledger, Verdict};
pub use timeouts::{DEFAULT_LEASE, Timeouts};

/// What an agent that is gone is told, and the card says.
const AGENT_GONE: &str = "the agent is no longer running";

/// How many interactions past their deadline are expired in one go; more are taken at once after.
const DUE_PAGE: u32 = 64;

type Key = (String, String);

fn key(session: &str, tool_use_id: &str) -> Key {
    (session.to_string(), tool_use_id.to_string())
}

/// Why an agent stopped waiting without an outcome.
#[derive(Debug, PartialEq, Eq)]
pub enum NoOutcome {
    /// The turn was stopped, or the session deleted.
    Stopped,
    /// The interaction is parked: the agent should let go of it; the answer will resume it.
    Parked,
    /// The interaction could not be recorded.
    NotRecorded(AppError),
}

/// An agent waiting: where its outcome goes, and how it is told to park.
struct Waiter {
    outcome: oneshot::Sender<InteractionOutcome>,
    park: CancellationToken,
    parkable: bool,
}

pub struct InteractionBridge {
    ledger: Arc<dyn Ledger>,
    timeouts: Timeouts,
    waiters: Mutex<HashMap<Key, Waiter>>,
    /// Sessions whose parked interaction was settled: their agent may resume.
    resume: mpsc::UnboundedSender<String>,
    /// Wakes the expiry timer to read the next deadline again: interactions opened or closed.
    rearm: Arc<Notify>,
    /// Cancelled when the bridge is dropped: its expiry timer ends with it.
    dropped: CancellationToken,
}

impl Drop for InteractionBridge {
    fn drop(&mut self) {
        self.dropped.cancel();
    }
}

impl InteractionBridge {
    /// The bridge, and the sessions to resume as their parked interactions are settled.
    pub fn new(ledger: Arc<dyn Ledger>, timeouts: Timeouts) -> (Self, mpsc::UnboundedReceiver<String>) {
        let (resume, resumes) = mpsc::unbounded_channel();
        let bridge = Self {
            ledger,
            timeouts,
            waiters: Mutex::default(),
            resume,
            rearm: Arc::default(),
            dropped: CancellationToken::new(),
        };
        (bridge, resumes)
    }

    /// When an interaction opened now for `request` expires, if a timeout applies to it.
    fn deadline_for(&self, request: &InteractionRequest) -> Option<i64> {
        let timeout = if request.is_approval() { self.timeouts.approval } else { self.timeouts.question }?;
        Some(now_ms().saturating_add(i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX)))
    }

    /// Expires what is past its deadline, now and whenever the next deadline comes, until `stop`
    /// (or the bridge is dropped). Armed from the ledger, so that it covers parked interactions,
    /// those opened before a restart, and (read again when told, `rearm_deadlines`) those other
    /// servers opened.
    pub fn keep_deadlines(self: &Arc<Self>, stop: CancellationToken) {
        let bridge = Arc::downgrade(self);
        let (rearm, dropped) = (self.rearm.clone(), self.dropped.clone());
        tokio::spawn(async move {
            loop {
                let Some(this) = bridge.upgrade() else { return };
                let wait = this.expire_due().await;
                drop(this);
                let next = async {
                    match wait {
                        Some(wait) => tokio::time::sleep(wait).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = dropped.cancelled() => return,
                    () = rearm.notified() => {}
                    () = next => {}
                }
            }
        });
    }

    /// Tells the expiry timer to read the next deadline again (another server may have opened
    /// an interaction).
    pub fn rearm_deadlines(&self) {
        self.rearm.notify_one();
    }

    /// Expires the interactions past their deadline; how long until the next one (`None`: none).
    async fn expire_due(&self) -> Option<Duration> {
        let now = now_ms();
        let (due, next) = match self.ledger.deadlines(now, DUE_PAGE).await {
            Ok(deadlines) => deadlines,
            Err(error) => {
                warn!(%error, "could not read when interactions expire; reading again in a second");
                return Some(Duration::from_secs(1));
            }
        };
        let mut expired = 0;
        for (session, tool_use_id) in &due {
            expired += usize::from(self.expire(session, tool_use_id, now).await);
        }
        if due.len() == DUE_PAGE as usize && expired > 0 {
            // A full page: there may be more.
            return Some(Duration::ZERO);
        }
        next.map(|at| Duration::from_millis(u64::try_from(at.saturating_sub(now)).unwrap_or(0)))
    }

    /// Expires the interaction, if its deadline passed and something still waits on it: a
    /// parked agent, or one waiting here or on another server. One whose agent is gone is left to
    /// the end of its turn (cut short: its card says what the agent was told). True if expired.
    async fn expire(&self, session: &str, tool_use_id: &str, now: i64) -> bool {
        let judge = |interaction: &Interaction, elsewhere: Elsewhere| {
            let due = interaction.expires_at_ms.is_some_and(|at| at <= now);
            let awaited = interaction.parked || elsewhere.0 || self.is_waiting(session, tool_use_id);
            if interaction.is_pending() && due && awaited {
                Verdict::record(InteractionOutcome::Expired)
            } else {
                Verdict::refuse(AppError::NotWaiting { detail: "it is not due to expire".into() })
            }
        };
        match self.settle(session, tool_use_id, &judge).await {
            Ok(()) => {
                info!(session, tool_use_id, "expired: nobody answered in time");
                true
            }
            Err(
                AppError::NotWaiting { .. } | AppError::SessionNotFound { .. } | AppError::InteractionNotFound { .. },
            ) => false,
            Err(error) => {
                warn!(session, tool_use_id, %error, "could not record the expiry");
                false
            }
        }
    }

    /// Opens the interaction and waits for its outcome (an expiry too, when its deadline passes:
    /// `keep_deadlines`), or for `cancel`. A `parkable` wait also ends when the interaction is
    /// parked (`park_waiting`, or `--park-after` passed): the agent lets go; its deadline stays.
    pub async fn wait_for_person(
        &self,
        session: &str,
        tool_use_id: &str,
        request: InteractionRequest,
        parkable: bool,
        cancel: &CancellationToken,
    ) -> Result<InteractionOutcome, NoOutcome> {
        let deadline = self.deadline_for(&request);
        // Registered before the card appears, so that even an instant answer finds its way.
        let (mut answered, park) = self.register(session, tool_use_id, parkable);
        match self.ledger.open(session, tool_use_id, request, deadline).await {
            Ok(None) => self.rearm_deadlines(),
            // Decided while the agent was away (it was parked): the answer, at once.
            Ok(Some(outcome)) => {
                self.forget(session, tool_use_id);
                return Ok(outcome);
            }
            Err(error) => {
                self.forget(session, tool_use_id);
                return Err(NoOutcome::NotRecorded(error));
            }
        }
        info!(session, tool_use_id, "waiting for the person");
        let after = |limit: Option<Duration>| async move {
            match limit {
                Some(limit) => tokio::time::sleep(limit).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            outcome = &mut answered => outcome.map_err(|_| NoOutcome::Stopped),
            () = cancel.cancelled() => {
                self.forget(session, tool_use_id);
                Err(NoOutcome::Stopped)
            }
            () = park.cancelled(), if parkable => self.park(session, tool_use_id, answered).await,
            () = after(self.timeouts.park_after), if parkable => self.park(session, tool_use_id, answered).await,
        }
    }

    /// Answers a pending question: checked against the questions asked, then the first answer
    /// wins, the same answer again is accepted, and a different later one is refused.
    pub async fn answer(&self, session: &str, tool_use_id: &str, answers: Vec<QuestionAnswer>) -> Result<(), AppError> {
        let judge = |interaction: &Interaction, elsewhere| {
            let questions = match &interaction.request {
                InteractionRequest::Approval(_) => return Verdict::refuse(not_a_question(tool_use_id)),
                InteractionRequest::Question { questions } => questions.as_slice(),
                InteractionRequest::Unreadable { .. } => &[],
            };
            match validate_answers(questions, &answers) {
                Ok(answers) => self.first_wins(
                    session,
                    tool_use_id,
                    interaction,
                    elsewhere,
                    InteractionOutcome::Answered { answers },
                ),
                Err(error) => Verdict::refuse(error),
            }
        };
        self.settle(session, tool_use_id, &judge).await
    }

    /// Skips a pending question; the agent is told that the person declined to answer.
    pub async fn decline(&self, session: &str, tool_use_id: &str, reason: Option<String>) -> Result<(), AppError> {
        let reason = reason.map(|r| r.trim().to_string()).filter(|r| !r.is_empty());
        if reason.as_ref().is_some_and(|r| r.chars().count() > MAX_ANSWER_CHARS) {
            return Err(AppError::BadRequest {
                detail: format!("the reason is longer than {MAX_ANSWER_CHARS} characters"),
            });
        }
        let judge = |interaction: &Interaction, elsewhere| {
            if interaction.request.is_approval() {
                return Verdict::refuse(not_a_question(tool_use_id));
            }
            let outcome = InteractionOutcome::Declined { reason: reason.clone() };
            self.first_wins(session, tool_use_id, interaction, elsewhere, outcome)
        };
        self.settle(session, tool_use_id, &judge).await
    }

    /// Allows or denies a pending approval. The first decision wins.
    pub async fn decide(&self, session: &str, tool_use_id: &str, decision: Decision) -> Result<(), AppError> {
        let outcome = match decision {
            Decision::Allow { always } => InteractionOutcome::Allowed { always },
            Decision::Deny { message } => {
                let message = message.map(|m| m.trim().to_string()).filter(|m| !m.is_empty());
                if message.as_ref().is_some_and(|m| m.chars().count() > MAX_DENIAL_CHARS) {
                    return Err(AppError::BadRequest { detail: "the message is too long".into() });
                }
                InteractionOutcome::Denied { message }
            }
        };
        let judge = |interaction: &Interaction, elsewhere| {
            let InteractionRequest::Approval(approval) = &interaction.request else {
                return Verdict::refuse(AppError::BadRequest {
                    detail: format!("{tool_use_id} is a question, not a permission request: answer it or skip it"),
                });
            };
            if let InteractionOutcome::Allowed { always: Some(index) } = &outcome
                && *index >= approval.suggestions.len()
            {
                return Verdict::refuse(AppError::BadRequest {
                    detail: format!("there is no suggestion {index} to always allow"),
                });
            }
            self.first_wins(session, tool_use_id, interaction, elsewhere, outcome.clone())
        };
        self.settle(session, tool_use_id, &judge).await
    }

    /// The agent withdrew its request: the card turns cancelled, and a late answer is refused.
    pub async fn cancel(&self, session: &str, tool_use_id: &str, reason: &str) {
        let outcome = InteractionOutcome::Cancelled { reason: reason.to_string() };
        match self.resolve(session, tool_use_id, outcome).await {
            Ok(()) | Err(AppError::NotWaiting { .. } | AppError::AlreadyAnswered) => {}
            Err(error) => warn!(session, tool_use_id, %error, "could not withdraw the request"),
        }
    }

    /// Parks the interaction the agent waits for: recorded as parked (the waiter goes under the
    /// same lock, so that an answer finds either the waiter or the park), unless an answer got
    /// there first.
    async fn park(
        &self,
        session: &str,
        tool_use_id: &str,
        mut answered: oneshot::Receiver<InteractionOutcome>,
    ) -> Result<InteractionOutcome, NoOutcome> {
        let parked = || self.forget(session, tool_use_id);
        match self.ledger.park(session, tool_use_id, &parked).await {
            Ok(None) => {
                info!(session, tool_use_id, "parked: the agent lets go until the person answers");
                Err(NoOutcome::Parked)
            }
            // Decided first. Recorded here, it was handed to this waiter in the same step; recorded
            // by another server, it comes with that server's notice. Taken as recorded, so that a
            // hand-over that never comes (a notice lost, a settle cut short) leaves no agent
            // waiting for ever.
            Ok(Some(recorded)) => {
                self.forget(session, tool_use_id);
                Ok(answered.try_recv().unwrap_or(recorded))
            }
            Err(error) => {
                self.forget(session, tool_use_id);
                Err(NoOutcome::NotRecorded(error))
            }
        }
    }

    /// Opens an interaction that no agent waits for: the agent's turn ends here, and the answer
    /// (or its expiry, once its deadline passes) resumes it. Its outcome, if it was decided
    /// already.
    pub async fn open_parked(
        &self,
        session: &str,
        tool_use_id: &str,
        request: InteractionRequest,
    ) -> Result<Option<InteractionOutcome>, AppError> {
        let deadline = self.deadline_for(&request);
        if let Some(outcome) = self.ledger.open(session, tool_use_id, request, deadline).await? {
            return Ok(Some(outcome));
        }
        self.rearm_deadlines();
        self.ledger.park(session, tool_use_id, &|| {}).await
    }

    /// Tells every waiting agent (of `session`, or of all sessions) to park its interactions;
    /// the sessions told, once each. (A wait that cannot be parked goes on.)
    pub fn park_waiting(&self, session: Option<&str>) -> Vec<String> {
        let waiters = self.waiters.lock().expect("bridge lock");
        let mut told: Vec<String> = Vec::new();
        for ((waiting_session, _), waiter) in waiters.iter() {
            if waiter.parkable && session.is_none_or(|session| session == waiting_session) {
                waiter.park.cancel();
                if !told.contains(waiting_session) {
                    told.push(waiting_session.clone());
                }
            }
        }
        told
    }

    /// Ends an interaction with `outcome`, if it is still open (first wins).
    async fn resolve(&self, session: &str, tool_use_id: &str, outcome: InteractionOutcome) -> Result<(), AppError> {
        let judge = |interaction: &Interaction, elsewhere| {
            self.first_wins(session, tool_use_id, interaction, elsewhere, outcome.clone())
        };
        self.settle(session, tool_use_id, &judge).await
    }

    /// The rule of every resolution: the first outcome recorded holds. The same one again is
    /// accepted; another decision is refused as already answered; an interaction that timed out
    /// or was cancelled says so; and one whose agent is gone is cancelled rather than answered (an
    /// agent on another server is not gone: that server hands it the outcome).
    fn first_wins(
        &self,
        session: &str,
        tool_use_id: &str,
        interaction: &Interaction,
        elsewhere: Elsewhere,
        outcome: InteractionOutcome,
    ) -> Verdict {
        match &interaction.outcome {
            Some(existing) if *existing == outcome => Verdict { record: None, result: Ok(()) },
            Some(existing) if existing.is_decision() => Verdict::refuse(AppError::AlreadyAnswered),
            Some(existing) => Verdict::refuse(AppError::NotWaiting { detail: existing.why_closed() }),
            // Parked: nobody waits, and the answer resumes the agent.
            None if interaction.parked => Verdict::record(outcome),
            None if !elsewhere.0 && !self.is_waiting(session, tool_use_id) => Verdict {
                record: Some(InteractionOutcome::Cancelled { reason: AGENT_GONE.into() }),
                result: Err(AppError::NotWaiting { detail: AGENT_GONE.into() }),
            },
            None => Verdict::record(outcome),
        }
    }

    /// Judges under the ledger's lock, records, then hands the outcome to the waiting agent.
    async fn settle(
        &self,
        session: &str,
        tool_use_id: &str,
        judge: &(dyn Fn(&Interaction, Elsewhere) -> Verdict + Send + Sync),
    ) -> Result<(), AppError> {
        let recorded = |outcome: &InteractionOutcome| self.resolved(session, tool_use_id, outcome);
        self.ledger.settle(session, tool_use_id, judge, &recorded).await?.result
    }

    /// An outcome is recorded, by this server or (through the store they share) another: the
    /// waiting agent gets it, or, when nobody here waits, the session may resume its agent.
    pub fn resolved(&self, session: &str, tool_use_id: &str, outcome: &InteractionOutcome) {
        info!(session, tool_use_id, outcome = outcome.name(), "interaction resolved");
        // Its deadline no longer counts.
        self.rearm_deadlines();
        if !self.deliver(session, tool_use_id, outcome.clone()) {
            // Nobody waits: the session decides whether its agent resumes now.
            let _ = self.resume.send(session.to_string());
        }
    }

    /// Starts waiting for the outcome of `tool_use_id`; the token says when to park.
    fn register(
        &self,
        session: &str,
        tool_use_id: &str,
        parkable: bool,
    ) -> (oneshot::Receiver<InteractionOutcome>, CancellationToken) {
        let (outcome, rx) = oneshot::channel();
        let park = CancellationToken::new();
        let waiter = Waiter { outcome, park: park.clone(), parkable };
        self.waiters.lock().expect("bridge lock").insert(key(session, tool_use_id), waiter);
        (rx, park)
    }

    /// Whether an agent still waits for this interaction.
    pub fn is_waiting(&self, session: &str, tool_use_id: &str) -> bool {
        self.waiters
            .lock()
            .expect("bridge lock")
            .get(&key(session, tool_use_id))
            .is_some_and(|waiter| !waiter.outcome.is_closed())
    }

    /// Hands the outcome to the waiting agent. False when nobody waits any more.
    fn deliver(&self, session: &str, tool_use_id: &str, outcome: InteractionOutcome) -> bool {
        let waiter = self.waiters.lock().expect("bridge lock").remove(&key(session, tool_use_id));
        waiter.is_some_and(|waiter| waiter.outcome.send(outcome).is_ok())
    }

    fn forget(&self, session: &str, tool_use_id: &str) {
        self.waiters.lock().expect("bridge lock").remove(&key(session, tool_use_id));
    }

    /// Drops the waiters of a session whose turn ended or which was deleted.
    pub fn forget_session(&self, session: &str) {
        self.waiters.lock().expect("bridge lock").retain(|(s, _), _| s != session);
    }
}

fn not_a_question(tool_use_id: &str) -> AppError {
    AppError::BadRequest {
        detail: format!("{tool_use_id} is a permission request, not a question: allow it or deny it"),
    }
}

#[cfg(test)]
mod tests;
