//! A session's turns. Each starts with the session's lease taken, runs on a task of its own, and,
//! however it ends, has its end recorded and its lease given back; an answer that came while it
//! was parking resumes the agent. Also the turns nobody ended: those a server left when it
//! stopped or died, which the next start (or another server) ends, resuming what can be resumed.

use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Arc;

use futures::FutureExt;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{Instrument, info, info_span, warn};

use super::leases::Leases;
use super::log::{RuntimeState, SessionLog, SessionRuntime};
use super::policy::SessionPolicy;
use super::sink::SessionSink;
use crate::agent::{AgentBackend, AgentError, TurnRequest};
use crate::bridge::InteractionBridge;
use crate::error::AppError;
use crate::ids::new_id;
use crate::interaction::InteractionOutcome;
use crate::store::{Store, StoreResult};
use crate::thread::{Block, EventBody, Message, TurnOutcome};

pub(super) struct Turns {
    pub(super) log: Arc<SessionLog>,
    pub(super) bridge: Arc<InteractionBridge>,
    pub(super) agent: Arc<dyn AgentBackend>,
    pub(super) policy: SessionPolicy,
    /// Cancelled when the server begins to stop: every turn's token is a child of it.
    pub(super) shutdown: CancellationToken,
    /// The running turns' tasks, waited for as the server stops.
    pub(super) tasks: TaskTracker,
}

impl Turns {
    fn store(&self) -> &Store {
        self.log.store()
    }

    fn leases(&self) -> &Leases {
        self.log.leases()
    }

    /// The session's folder as its agent will work in it, checked again at every start: it may
    /// have gone, or become a link out of the root.
    pub(super) async fn workdir(&self, session_id: &str) -> Result<Option<PathBuf>, AppError> {
        match self.store().session(session_id).await?.workdir {
            Some(dir) => Ok(Some(self.policy.check_workdir(&dir)?)),
            None => Ok(None),
        }
    }

    /// The folder for a turn about to start with its lease taken (given back when the folder
    /// cannot be used here: another server may reach it).
    async fn workdir_with_lease(&self, session_id: &str) -> Result<Option<PathBuf>, AppError> {
        let workdir = self.workdir(session_id).await;
        if workdir.is_err() {
            self.leases().give_back(session_id).await;
        }
        workdir
    }

    /// Records the turn's start and runs it; `text` is the person's message, empty to resume.
    /// Called with the session's lease taken, which it gives back if the turn cannot start.
    pub(super) async fn start(
        self: &Arc<Self>,
        runtime: &Arc<SessionRuntime>,
        state: &mut RuntimeState,
        history: Vec<Message>,
        text: String,
        workdir: Option<PathBuf>,
    ) -> Result<(), AppError> {
        let session_id = runtime.id();
        if let Err(error) = runtime.append_locked(self.store(), state, EventBody::TurnStarted).await {
            self.leases().give_back(session_id).await;
            return Err(error.into());
        }
        let cancel = self.shutdown.child_token();
        state.turn = Some(cancel.clone());
        self.log.list_changed();
        let request = TurnRequest {
            session_id: session_id.to_string(),
            resume: text.is_empty(),
            text,
            history,
            agent_session: state.thread.turn.agent_session.clone(),
            workdir,
            permission_mode: state.thread.turn.permission_mode,
            cancel,
        };
        let span = info_span!("turn", session = %session_id, agent = self.agent.name());
        self.tasks.spawn(self.clone().run(runtime.clone(), request).instrument(span));
        Ok(())
    }

    /// Runs the agent's turn to its end, and records how it ended.
    async fn run(self: Arc<Self>, runtime: Arc<SessionRuntime>, request: TurnRequest) {
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
        let (outcome, usage) = match result {
            Ok(usage) => (TurnOutcome::Completed, usage),
            Err(AgentError::SessionGone) => return,
            Err(AgentError::Parked) => (TurnOutcome::Parked, None),
            Err(_) if self.shutdown.is_cancelled() => (TurnOutcome::Abandoned, None),
            Err(AgentError::Interrupted) => (TurnOutcome::Interrupted, None),
            Err(_) if cancel.is_cancelled() => (TurnOutcome::Interrupted, None),
            Err(AgentError::Failed(error)) => {
                warn!(%error, "the agent failed");
                (TurnOutcome::Failed { error }, None)
            }
        };
        info!(?outcome, "turn ended");
        let parked = outcome == TurnOutcome::Parked;
        let mut state = runtime.lock().await;
        state.turn = None;
        let ended = EventBody::TurnEnded { outcome: outcome.clone(), usage };
        if let Err(error) = runtime.append_locked(self.store(), &mut state, ended).await {
            // The session was deleted meanwhile, or the disk failed. The turn is over all the
            // same: the session takes the next message (the store says so after the restart
            // recovery, or with the next turn's end).
            warn!(%error, "could not record the end of the turn");
            state.thread.turn.working = false;
            state.thread.turn.last_outcome = Some(outcome);
        }
        let answered_meanwhile = !state.thread.is_waiting();
        // Given back under the session's lock, before a next turn here takes it again.
        self.leases().give_back(runtime.id()).await;
        // Under the session's lock, before the next turn can start: forgotten after it, the
        // next turn's first question could lose its waiter, and the answer found it cancelled
        // (seen in `tests/load.rs` when this task is slow to get here).
        self.bridge.forget_session(runtime.id());
        drop(state);
        self.log.list_changed();
        if parked && answered_meanwhile {
            // The answers came while the turn was ending: nobody else will resume it.
            self.bridge.ask_to_resume(runtime.id());
        }
    }

    /// Resumes a session whose agent parked, once nothing it left waits for the person any more.
    pub(super) async fn resume(self: &Arc<Self>, session_id: &str) -> Result<(), AppError> {
        let runtime = self.log.runtime(session_id).await?;
        let mut state = runtime.lock().await;
        // Running here already; or on another server (its lease), which resumes it.
        if state.turn.is_some() || !state.thread.is_ready_to_resume() || !self.leases().take(session_id).await? {
            return Ok(());
        }
        // The lease taken, the log as it is now: another server may have resumed it meanwhile.
        if let Err(error) = runtime.catch_up_locked(self.store(), &mut state).await {
            self.leases().give_back(session_id).await;
            return Err(error.into());
        }
        if !state.thread.is_ready_to_resume() {
            self.leases().give_back(session_id).await;
            return Ok(());
        }
        info!(session = %session_id, "resuming the agent with the person's answers");
        let history = state.thread.messages.clone();
        let workdir = self.workdir_with_lease(session_id).await?;
        self.start(&runtime, &mut state, history, String::new(), workdir).await
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
                warn!(%session, "another server took this session's lease while its turn ran here");
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
        if state.thread.is_ready_to_resume() {
            info!(%session, "resuming the agent, whose server is gone, with the person's answers");
            let history = state.thread.messages.clone();
            let workdir = self.workdir_with_lease(session).await?;
            return self.start(&runtime, &mut state, history, String::new(), workdir).await;
        }
        self.leases().give_back(session).await;
        Ok(())
    }

    /// Ends the turns that a previous run of the server left unfinished, saying so in the thread
    /// (where servers share the store: the turns no live server holds).
    pub(super) async fn recover_unfinished(&self) -> StoreResult<()> {
        self.leases().forget_previous_run().await?;
        for id in self.store().sessions_with_unfinished_turns().await? {
            let runtime = self.log.runtime(&id).await?;
            let mut state = runtime.lock().await;
            // Another server may be taking it at the same moment: one of them does.
            if !self.leases().take(&id).await? {
                continue;
            }
            runtime.catch_up_locked(self.store(), &mut state).await?;
            if state.thread.turn.working {
                warn!(session = %id, "the server stopped during a turn; ending it");
                self.end_abandoned(&runtime, &mut state, "The server stopped").await?;
            }
            self.leases().release(&id).await?;
        }
        Ok(())
    }

    /// Ends a turn whose server stopped while it ran. What waited and was not parked: the agent
    /// answered it by itself when its server died; the card says what it was told, never that
    /// the person answered.
    async fn end_abandoned(&self, runtime: &SessionRuntime, state: &mut RuntimeState, what: &str) -> StoreResult<()> {
        let lost: Vec<(String, String)> = state
            .thread
            .messages
            .iter()
            .flat_map(|message| message.blocks.iter())
            .filter_map(|block| match block {
                Block::ToolCall(call) => {
                    let interaction = call.interaction.as_ref().filter(|i| i.is_pending() && !i.parked)?;
                    Some((call.id.clone(), self.agent.told_when_lost(&interaction.request)?))
                }
                Block::Text { .. } | Block::Image(_) => None,
            })
            .collect();
        for (tool_use_id, told) in lost {
            let outcome = InteractionOutcome::Lost { told };
            runtime.append_locked(self.store(), state, EventBody::InteractionResolved { tool_use_id, outcome }).await?;
        }
        let ended = EventBody::TurnEnded { outcome: TurnOutcome::Abandoned, usage: None };
        runtime.append_locked(self.store(), state, ended).await?;
        let text =
            format!("{what} while the agent was working, so that turn was cut short. Send a message to continue.");
        let notice = EventBody::Notice { message_id: new_id(), text };
        runtime.append_locked(self.store(), state, notice).await?;
        self.log.list_changed();
        Ok(())
    }
}
