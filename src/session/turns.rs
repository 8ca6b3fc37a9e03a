//! A session's turns. Each starts with the session's lease taken, runs on a task of its own, and,
//! however it ends, has its end recorded and its lease given back; then the turn the session
//! still owes the person starts (`Thread::next_turn`): a parked agent whose answers came resumes,
//! and the messages sent meanwhile get theirs after it. Also the turns nobody started (the server
//! died first), which the next start starts; those nobody ended are `recovery.rs`'s.
//!
//! A turn that cannot start, or a resume that fails, says why in the thread and is tried again:
//! a few times, further and further apart, then at the next start of the server or when the
//! person sends a message. What the person gave is kept all along.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{Instrument, info, info_span, warn};

use super::leases::Leases;
use super::log::SessionLog;
use super::policy::SessionPolicy;
use super::runtime::{RuntimeState, SessionRuntime};
use super::sink::SessionSink;
use crate::agent::{AgentBackend, AgentError, TurnAttachments, TurnRequest};
use crate::bridge::InteractionBridge;
use crate::error::AppError;
use crate::folder::Folders;
use crate::ids::new_id;
use crate::store::{Store, StoreError, StoreResult};
use crate::thread::{AttachmentRef, EventBody, Message, NextTurn, Role, Thread, TurnOutcome, Usage};

/// How many times in a row an owed turn that failed is tried again by itself, before it waits for
/// the next start of the server or the person's next message.
const RETRIES: u32 = 8;

/// The longest wait between two tries (the first waits `Timeouts::resume_retry`, each next one
/// twice the one before).
const LONGEST_RETRY: Duration = Duration::from_secs(600);

/// Where a session's turns run: the agent it was created with, and its folder.
pub(super) struct Placement {
    pub workdir: Option<PathBuf>,
    pub agent: String,
}

pub(super) struct Turns {
    pub(super) log: Arc<SessionLog>,
    pub(super) bridge: Arc<InteractionBridge>,
    pub(super) agent: Arc<dyn AgentBackend>,
    pub(super) policy: SessionPolicy,
    /// Cancelled when the server begins to stop: every turn's token is a child of it.
    pub(super) shutdown: CancellationToken,
    /// The running turns' tasks, waited for as the server stops.
    pub(super) tasks: TaskTracker,
    /// The first wait before an owed turn that failed is tried again.
    pub(super) retry_after: Duration,
    /// How many times in a row each session's owed turn failed (for the wait before the next try).
    pub(super) failures: Mutex<HashMap<String, u32>>,
    /// The checkpoints of the sessions' folders, where this server keeps them.
    pub(super) folders: Option<Arc<Folders>>,
}

impl Turns {
    pub(super) fn store(&self) -> &Store {
        self.log.store()
    }

    pub(super) fn leases(&self) -> &Leases {
        self.log.leases()
    }

    /// Where the session's turns run: its agent, and its folder as that agent will work in it,
    /// checked again at every start (it may have gone, or become a link out of the root).
    pub(super) async fn placement(&self, session_id: &str) -> Result<Placement, AppError> {
        let summary = self.store().session(session_id).await?;
        let workdir = match summary.workdir {
            Some(dir) => Some(self.policy.check_workdir(&dir)?),
            None => None,
        };
        Ok(Placement { workdir, agent: summary.agent })
    }

    /// The folder a turn of `placed` works in: the session's own, or its agent's default.
    pub(super) fn folder_of(&self, placed: &Placement) -> Option<PathBuf> {
        placed.workdir.clone().or_else(|| self.agent.backend(&placed.agent).unwrap_or(&*self.agent).default_workdir())
    }

    /// A checkpoint of the turn's folder as it begins, for the Changes view. A folder that cannot
    /// have one (too many files, no git) runs its turn all the same.
    async fn checkpoint(&self, session_id: &str, placed: &Placement, message: &str) {
        let (Some(folders), Some(folder)) = (&self.folders, self.folder_of(placed)) else { return };
        if let Err(error) = folders.checkpoint(&folder, session_id, message).await {
            warn!(%error, folder = %folder.display(), "no checkpoint of the folder for this turn");
        }
    }

    /// The placement of a turn about to start with its lease taken (given back when the folder
    /// cannot be used here: another server may reach it).
    async fn placement_with_lease(&self, session_id: &str) -> Result<Placement, AppError> {
        let placed = self.placement(session_id).await;
        if placed.is_err() {
            self.leases().give_back(session_id).await;
        }
        placed
    }

    /// Records the start of the turn the session owes (a resume, or the person's queued
    /// messages) and runs it. Called with the session's lease taken, which it gives back if the
    /// turn cannot start.
    async fn start(
        self: &Arc<Self>,
        runtime: &Arc<SessionRuntime>,
        state: &mut RuntimeState,
        next: NextTurn,
        placed: Placement,
    ) -> Result<(), AppError> {
        let session_id = runtime.id();
        // The conversation as the agent takes it: the queued messages are this turn's text (or,
        // for a resume, the next turn's), not part of what came before.
        let queued = &state.thread.turn.queued_messages;
        let history: Vec<Message> =
            state.thread.messages.iter().filter(|message| !queued.contains(&message.id)).cloned().collect();
        if next == NextTurn::Messages
            && let Some(message) = state.thread.turn.queued_messages.first()
        {
            self.checkpoint(session_id, &placed, message).await;
        }
        let (started, text, new_files) = match next {
            NextTurn::Resume => (EventBody::ResumeStarted, String::new(), Vec::new()),
            NextTurn::Messages => (
                EventBody::TurnStarted,
                state.thread.queued_text().unwrap_or_default(),
                state.thread.queued_attachments(),
            ),
        };
        let earlier = match self.agent.resends_history() {
            true => history.iter().flat_map(Message::attachments).collect(),
            false => Vec::new(),
        };
        let attachments = files_for_turn(self.store(), new_files, earlier).await;
        // The turn's writes carry the lease just taken, from its first.
        state.fence = self.leases().fence(session_id);
        state.lease_lost = false;
        if let Err(error) = runtime.append_locked(self.store(), state, started).await {
            state.fence = None;
            self.leases().give_back(session_id).await;
            return Err(error.into());
        }
        let cancel = self.shutdown.child_token();
        state.turn = Some(cancel.clone());
        self.log.list_changed();
        let request = TurnRequest {
            session_id: session_id.to_string(),
            agent: placed.agent,
            model: state.thread.turn.model.clone(),
            resume: next == NextTurn::Resume,
            text,
            history,
            agent_session: state.thread.turn.agent_session.clone(),
            workdir: placed.workdir,
            permission_mode: state.thread.turn.permission_mode,
            agent_mode: state.thread.turn.agent_mode.clone(),
            agent_host: state.thread.turn.agent_host.clone().map(Into::into),
            cancel,
            attachments,
        };
        self.spawn_turn(runtime, request);
        Ok(())
    }

    /// Runs the turn on a task of its own. Not `async`: `run` starts the next turn through
    /// `start`, and an async fn that spawned `run` would make the compiler prove `run` `Send`
    /// while working out `run` itself.
    fn spawn_turn(self: &Arc<Self>, runtime: &Arc<SessionRuntime>, request: TurnRequest) {
        let span = info_span!("turn", session = %runtime.id(), agent = self.agent.name());
        self.tasks.spawn(self.clone().run(runtime.clone(), request).instrument(span));
    }

    /// Starts the turn the person asked for (they sent a message, or "Send now"), if none runs
    /// and one is owed (`Thread::next_turn_on_request`), with the session's lease. Where another
    /// server holds it, its turn runs there, and takes the queue when it ends.
    pub(super) async fn start_requested_locked(
        self: &Arc<Self>,
        runtime: &Arc<SessionRuntime>,
        state: &mut RuntimeState,
        placed: Placement,
    ) -> Result<(), AppError> {
        let session_id = runtime.id();
        if state.turn.is_some()
            || state.thread.next_turn_on_request().is_none()
            || !self.leases().take(session_id).await?
        {
            return Ok(());
        }
        // The lease taken, the log as it is now: another server may have started it meanwhile.
        if let Err(error) = runtime.catch_up_locked(self.store(), state).await {
            self.leases().give_back(session_id).await;
            return Err(error.into());
        }
        match state.thread.next_turn_on_request() {
            Some(next) => self.start(runtime, state, next, placed).await,
            None => {
                self.leases().give_back(session_id).await;
                Ok(())
            }
        }
    }

    /// Runs the agent's turn to its end, and records how it ended.
    async fn run(self: Arc<Self>, runtime: Arc<SessionRuntime>, request: TurnRequest) {
        let resumed = request.resume;
        let Some((outcome, usage)) = self.play(&runtime, request).await else { return };
        // Boxed when it comes: the turn's task holds its largest state for all its life, which is
        // mostly waiting on the agent (a person's answer, the model), and the state of what
        // follows the agent's end (storing it, starting the next turn) was the most of it
        // (BENCHMARKS.md, "What a waiting session holds").
        Box::pin(self.ended(runtime, resumed, outcome, usage)).await;
    }

    /// The agent's turn is over, `outcome`: recorded, the lease given back or the next turn
    /// started.
    async fn ended(
        self: Arc<Self>,
        runtime: Arc<SessionRuntime>,
        resumed: bool,
        outcome: TurnOutcome,
        usage: Option<Usage>,
    ) {
        info!(?outcome, "turn ended");
        let session = runtime.id();
        let mut state = runtime.lock().await;
        if !self.record_end(&runtime, &mut state, &outcome, usage).await {
            drop(state);
            self.agent.end_session(session).await;
            self.log.list_changed();
            return;
        }
        // Under the session's lock, before the next turn can start: forgotten after it, the
        // next turn's first question could lose its waiter, and the answer found it cancelled
        // (seen in `tests/load.rs` when this task is slow to get here).
        self.bridge.forget_session(session);
        if resumed && !matches!(outcome, TurnOutcome::Failed { .. }) {
            self.failures.lock().expect("failures lock").remove(session);
        }
        match next_after(&outcome, resumed, &state.thread) {
            // The lease kept: the next turn runs here.
            Some(next) => {
                let started = match self.placement_with_lease(session).await {
                    Ok(placed) => self.start(&runtime, &mut state, next, placed).await,
                    Err(error) => Err(error),
                };
                if let Err(error) = started {
                    self.failed(&runtime, &mut state, next, &reason(&error)).await;
                }
            }
            None => {
                // Given back under the session's lock, before a next turn here takes it again.
                self.leases().give_back(session).await;
                if let TurnOutcome::Failed { error } = &outcome
                    && resumed
                    && state.thread.is_ready_to_resume()
                {
                    self.failed(&runtime, &mut state, NextTurn::Resume, error).await;
                }
            }
        }
        drop(state);
        self.log.list_changed();
    }

    /// The agent's turn, played to its end (or past the grace an interrupted agent has), and how
    /// it ended; `None` when its session was deleted meanwhile (nothing is left to record).
    async fn play(&self, runtime: &Arc<SessionRuntime>, request: TurnRequest) -> Option<(TurnOutcome, Option<Usage>)> {
        let cancel = request.cancel.clone();
        let sink =
            Arc::new(SessionSink { log: self.log.clone(), bridge: self.bridge.clone(), runtime: runtime.clone() });
        let turn = AssertUnwindSafe(self.agent.run_turn(request, sink)).catch_unwind();
        let grace = self.agent.interrupt_grace();
        let grace_over = async {
            cancel.cancelled().await;
            tokio::time::sleep(grace).await;
        };
        let result = tokio::select! {
            result = turn => result.unwrap_or_else(|_| Err(AgentError::Failed("the agent crashed".into()))),
            () = grace_over => Err(AgentError::Interrupted),
        };
        Some(match result {
            Ok(usage) => (TurnOutcome::Completed, usage),
            Err(AgentError::SessionGone) => return None,
            Err(AgentError::Parked) => (TurnOutcome::Parked, None),
            Err(_) if self.shutdown.is_cancelled() => (TurnOutcome::Abandoned, None),
            Err(AgentError::Interrupted) => (TurnOutcome::Interrupted, None),
            Err(_) if cancel.is_cancelled() => (TurnOutcome::Interrupted, None),
            Err(AgentError::Failed(error)) => {
                warn!(%error, "the agent failed");
                (TurnOutcome::Failed { error }, None)
            }
        })
    }

    /// Records the turn's end in the session's log. False when the session's lease was lost
    /// meanwhile: another server took the session over (and ended this turn in its log), so
    /// nothing of this turn is written, the thread is read back as that server left it, and the
    /// caller lets go of the agent.
    async fn record_end(
        &self,
        runtime: &SessionRuntime,
        state: &mut RuntimeState,
        outcome: &TurnOutcome,
        usage: Option<Usage>,
    ) -> bool {
        let session = runtime.id();
        state.turn = None;
        let ended = EventBody::TurnEnded { outcome: outcome.clone(), usage };
        let recorded = match state.lease_lost {
            true => Err(StoreError::LeaseLost { session: session.to_string() }),
            false => runtime.append_locked(self.store(), state, ended).await,
        };
        state.fence = None;
        if state.lease_lost || matches!(recorded, Err(StoreError::LeaseLost { .. })) {
            state.lease_lost = false;
            self.bridge.forget_session(session);
            if let Ok(thread) = self.store().load_thread(session).await {
                state.thread = thread;
            }
            return false;
        }
        if let Err(error) = recorded {
            // The session was deleted meanwhile, or the disk failed. The turn is over all the
            // same: the session takes the next message (the store says so after the restart
            // recovery, or with the next turn's end).
            warn!(%error, "could not record the end of the turn");
            state.thread.turn.working = false;
            state.thread.turn.last_outcome = Some(outcome.clone());
        }
        true
    }

    /// Starts the turn the session owes the person, if any and if no turn runs: here, or (its
    /// lease says) on another server, which starts it. A turn that cannot start says so in the
    /// thread and is tried again later.
    pub(super) async fn start_owed(self: &Arc<Self>, session_id: &str) -> Result<(), AppError> {
        let runtime = self.log.runtime(session_id).await?;
        let mut state = runtime.lock().await;
        if state.turn.is_some() || state.thread.next_turn().is_none() || !self.leases().take(session_id).await? {
            return Ok(());
        }
        // The lease taken, the log as it is now: another server may have started it meanwhile.
        if let Err(error) = runtime.catch_up_locked(self.store(), &mut state).await {
            self.leases().give_back(session_id).await;
            return Err(error.into());
        }
        let Some(next) = state.thread.next_turn() else {
            self.leases().give_back(session_id).await;
            return Ok(());
        };
        match next {
            NextTurn::Resume => info!(session = %session_id, "resuming the agent with the person's answers"),
            NextTurn::Messages => info!(session = %session_id, "starting the turn of the person's message"),
        }
        let started = match self.placement_with_lease(session_id).await {
            Ok(placed) => self.start(&runtime, &mut state, next, placed).await,
            Err(error) => Err(error),
        };
        if let Err(error) = started {
            self.failed(&runtime, &mut state, next, &reason(&error)).await;
        }
        Ok(())
    }

    /// An owed turn could not start, or a resume failed (the lease is given back): the thread
    /// says why and what to do, once for the same reason, and it is tried again later.
    async fn failed(
        self: &Arc<Self>,
        runtime: &Arc<SessionRuntime>,
        state: &mut RuntimeState,
        next: NextTurn,
        why: &str,
    ) {
        let session = runtime.id();
        warn!(%session, ?next, why, "the turn the person is owed could not start; trying again later");
        let text = match next {
            NextTurn::Resume => format!(
                "The agent could not resume with your answer: {why}. Your answer is kept. Once this is fixed, the \
                 agent takes it: AskBridge tries again by itself for a while and whenever it restarts, and at once \
                 when you send a message (the agent takes your answer first, then your message)."
            ),
            NextTurn::Messages => format!(
                "Your message could not reach the agent: {why}. It is kept. Once this is fixed, the agent gets it: \
                 AskBridge tries again by itself for a while and whenever it restarts, and at once when you send \
                 another message."
            ),
        };
        let said = state.thread.messages.last().is_some_and(|m| m.role == Role::Notice && m.text() == text);
        if !said {
            let notice = EventBody::Notice { message_id: new_id(), text };
            if let Err(error) = runtime.append_locked(self.store(), state, notice).await {
                warn!(%session, %error, "could not say in the thread why the turn did not start");
            }
        }
        self.retry_later(session);
    }

    /// Tries the session's owed turn again after a wait that doubles with each failure in a row,
    /// a few times; after that, only the next start or the person's next message tries it.
    pub(super) fn retry_later(self: &Arc<Self>, session: &str) {
        let failures = {
            let mut all = self.failures.lock().expect("failures lock");
            let failures = all.entry(session.to_string()).or_insert(0);
            *failures += 1;
            *failures
        };
        if failures > RETRIES {
            warn!(%session, "the owed turn failed {RETRIES} times in a row; it waits for a restart or a message");
            return;
        }
        let wait = self.retry_after.saturating_mul(1 << (failures - 1).min(16)).min(LONGEST_RETRY);
        let (turns, session, stop) = (Arc::downgrade(self), session.to_string(), self.shutdown.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(wait) => {}
            }
            let Some(turns) = turns.upgrade() else { return };
            match turns.start_owed(&session).await {
                Ok(()) | Err(AppError::SessionNotFound { .. }) => {}
                Err(error) => {
                    warn!(%session, %error, "could not try the owed turn again");
                    turns.retry_later(&session);
                }
            }
        });
    }

    /// The person acted (sent a message): the next failure waits the shortest time again.
    pub(super) fn forget_failures(&self, session: &str) {
        self.failures.lock().expect("failures lock").remove(session);
    }

    /// Starts the turns the sessions owe that no server started: a resume whose answer was stored
    /// just before the server died, a message stored just before its turn, a resume that failed.
    /// Each as `start_owed` does it (with its lease: where servers share the store, one of them).
    pub(super) async fn start_all_owed(self: &Arc<Self>) -> StoreResult<()> {
        for id in self.store().sessions_owed_a_turn().await? {
            // Read from the store first: most candidates owe nothing, and stay unloaded.
            match self.store().load_thread(&id).await {
                Ok(thread) if thread.next_turn().is_none() => continue,
                Ok(_) => {}
                Err(error) => {
                    warn!(session = %id, %error, "could not read the session to start its owed turn");
                    continue;
                }
            }
            if let Err(error) = self.start_owed(&id).await {
                warn!(session = %id, %error, "could not start the owed turn");
            }
        }
        Ok(())
    }

    /// Takes a session whose server is gone (its lease expired): a turn it left unfinished ends
    /// (what its agent waited for was lost), and a parked agent whose answers came resumes here.
    pub(super) async fn take_over(self: &Arc<Self>, session: &str) -> Result<(), AppError> {
        let runtime = self.log.runtime(session).await?;
        let mut state = runtime.lock().await;
        if state.turn.is_some() {
            // Ours, running: this server could not renew it in time (a renewal expires leases
            // no more). Taken again, unless another server took it meanwhile.
            if !self.leases().take(session).await? {
                drop(state);
                self.lease_lost(session).await;
            }
            return Ok(());
        }
        if !self.leases().take(session).await? {
            return Ok(());
        }
        runtime.catch_up_locked(self.store(), &mut state).await?;
        if state.thread.turn.working {
            warn!(%session, "the server running this session's agent is gone; ending its turn");
            self.end_abandoned(&runtime, &mut state, "The server running the agent stopped").await?;
        }
        if let Some(next) = state.thread.next_turn() {
            info!(%session, ?next, "starting the turn owed by the session whose server is gone");
            let started = match self.placement_with_lease(session).await {
                Ok(placed) => self.start(&runtime, &mut state, next, placed).await,
                Err(error) => Err(error),
            };
            if let Err(error) = started {
                self.failed(&runtime, &mut state, next, &reason(&error)).await;
            }
            return Ok(());
        }
        self.leases().give_back(session).await;
        Ok(())
    }

    /// Another server took the session's lease while its turn ran here (this server could not
    /// renew it in time: paused, or cut off from the store): the agent here stops at once, its
    /// process with it, and the turn's end is not written (the server that took over ends it).
    pub(super) async fn lease_lost(&self, session: &str) {
        let Ok(runtime) = self.log.runtime(session).await else { return };
        let mut state = runtime.lock().await;
        let Some(turn) = &state.turn else { return };
        warn!(%session, "another server took this session's lease while its turn ran here; stopping it");
        turn.cancel();
        state.lease_lost = true;
        drop(state);
        self.agent.end_session(session).await;
    }
}

/// A turn's files with their bytes: those of the messages it answers, and (`earlier`) those of
/// the messages before, for an agent that is sent the whole conversation each time. A file no
/// longer stored is left out (the agent is told so where it was).
async fn files_for_turn(
    store: &Store,
    new: Vec<AttachmentRef>,
    earlier: impl IntoIterator<Item = AttachmentRef>,
) -> TurnAttachments {
    let mut bytes = HashMap::new();
    for file in new.iter().cloned().chain(earlier) {
        if bytes.contains_key(&file.hash) {
            continue;
        }
        match store.attachment(&file.hash).await {
            Ok(Some((_, content))) => {
                bytes.insert(file.hash, Arc::<[u8]>::from(content));
            }
            Ok(None) => warn!(hash = %file.hash, "an attached file is not stored"),
            Err(error) => warn!(hash = %file.hash, %error, "an attached file could not be read"),
        }
    }
    TurnAttachments { new, bytes }
}

/// The turn a session owes the person once a turn ended so, if any.
fn next_after(outcome: &TurnOutcome, resumed: bool, thread: &Thread) -> Option<NextTurn> {
    match outcome {
        // The answers came while it parked: it resumes at once.
        TurnOutcome::Parked => thread.next_turn(),
        // The messages sent while the answers waited for this resume (even one whose agent
        // did not take them as told: never resumed again and again).
        TurnOutcome::Completed if resumed => {
            (thread.has_queued() && !thread.is_waiting()).then_some(NextTurn::Messages)
        }
        // The messages typed ahead while it worked.
        TurnOutcome::Completed | TurnOutcome::Failed { .. } if !resumed => thread.next_turn(),
        // Stopped by the person, or by the server stopping: nothing more now (what was typed
        // ahead waits for the person's word, or for the next start). A resume that failed is
        // tried again later; the messages wait behind it.
        _ => None,
    }
}

/// Why a turn could not start, in words for the thread.
fn reason(error: &AppError) -> String {
    match error {
        AppError::BadRequest { detail } => detail.clone(),
        other => other.to_string().trim_end_matches('.').to_string(),
    }
}
