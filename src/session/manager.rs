//! The SessionManager: sessions created, renamed, loaded and deleted; a person's message starting
//! the agent's turn, and the turn's end recorded however it ends. Events go through the session's
//! log; questions and approvals through the bridge.
//!
//! Where several servers share one store (Postgres), a session's agent runs on the server that
//! holds its lease: taken when a turn starts, renewed while this server lives, given back when
//! the turn ends. An answer can be given through any server; the server whose agent waits takes it
//! from the store. A server that dies lets its leases expire, and another server ends the turns it
//! left (their cards say the answer was lost) and resumes what can be resumed.

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::FutureExt;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{Instrument, info, info_span, warn};

use super::log::{RuntimeState, SessionLog, SessionRuntime};
use super::sink::SessionSink;
use crate::agent::{AgentBackend, AgentError, TurnRequest};
use crate::approval::{Decision, PermissionMode};
use crate::bridge::{InteractionBridge, Timeouts};
use crate::error::{AppError, validate_message, validate_title};
use crate::ids::{new_id, now_ms};
use crate::interaction::InteractionOutcome;
use crate::question::{QuestionAnswer, validate_answers, words};
use crate::store::{Notice, Store, StoreError, StoreResult};
use crate::thread::{Block, EventBody, Role, SessionSummary, Thread, TurnOutcome};

pub struct SessionManager {
    log: Arc<SessionLog>,
    bridge: Arc<InteractionBridge>,
    agent: Arc<dyn AgentBackend>,
    policy: SessionPolicy,
    /// How long this server's leases last unless renewed.
    lease: std::time::Duration,
    shutdown: CancellationToken,
    pub(super) turns: TaskTracker,
}

/// What sessions may do on this server, beyond what their agent allows.
#[derive(Debug, Clone, Default)]
pub struct SessionPolicy {
    /// Session folders must be inside this one (`--workdir-root`), canonical: symlinks and `..`
    /// are resolved before the comparison.
    pub workdir_root: Option<PathBuf>,
    /// Why no session may switch to bypassPermissions here, if none may.
    pub bypass_refused: Option<String>,
}

impl SessionPolicy {
    /// The folder `dir` (as a person typed it) as the agent will work in it: an existing folder,
    /// canonical, inside the root.
    pub fn check_workdir(&self, dir: &str) -> Result<PathBuf, AppError> {
        let refuse = |why: String| Err(AppError::BadRequest { detail: why });
        let path = Path::new(dir);
        if !path.is_absolute() {
            return refuse(format!("“{dir}” is not a full path: give the folder's full path, from /"));
        }
        let canonical = match path.canonicalize() {
            Ok(canonical) => canonical,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return refuse(format!("there is no folder “{dir}” on the server"));
            }
            Err(error) => return refuse(format!("the folder “{dir}” cannot be used: {error}")),
        };
        if !canonical.is_dir() {
            return refuse(format!("“{dir}” is a file, not a folder"));
        }
        if let Some(root) = &self.workdir_root
            && !canonical.starts_with(root)
        {
            return refuse(format!(
                "“{dir}” is outside {}, the folder sessions may work in on this server (--workdir-root)",
                root.display()
            ));
        }
        Ok(canonical)
    }

    fn check_mode(&self, mode: PermissionMode) -> Result<(), AppError> {
        if !mode.is_choosable() {
            return Err(AppError::BadRequest {
                detail: format!("a session cannot be switched to the {mode} mode here"),
            });
        }
        match &self.bypass_refused {
            Some(why) if mode == PermissionMode::BypassPermissions => Err(AppError::BadRequest { detail: why.clone() }),
            _ => Ok(()),
        }
    }
}

impl SessionManager {
    pub fn new(store: Store, agent: Arc<dyn AgentBackend>) -> Arc<Self> {
        Self::with_timeouts(store, agent, Timeouts::default())
    }

    pub fn with_timeouts(store: Store, agent: Arc<dyn AgentBackend>, timeouts: Timeouts) -> Arc<Self> {
        Self::with_policy(store, agent, timeouts, SessionPolicy::default())
    }

    pub fn with_policy(
        store: Store,
        agent: Arc<dyn AgentBackend>,
        timeouts: Timeouts,
        policy: SessionPolicy,
    ) -> Arc<Self> {
        let log = SessionLog::new(store);
        let (bridge, mut resumes) = InteractionBridge::new(log.clone(), timeouts);
        let manager = Arc::new(Self {
            bridge: Arc::new(bridge),
            log,
            agent,
            policy,
            lease: timeouts.lease(),
            shutdown: CancellationToken::new(),
            turns: TaskTracker::new(),
        });
        manager.follow_remote_events();
        // A parked interaction was settled: its session's agent may go on. Each session resumes
        // on its own task: one after the other, under load, the last of many parked sessions
        // waited for every other one's reads and writes (issue 13, `tests/load.rs`). Two resumes
        // of one session are one: the second finds its turn started (`resume` checks under the
        // session's lock).
        let weak = Arc::downgrade(&manager);
        tokio::spawn(async move {
            while let Some(session) = resumes.recv().await {
                let Some(manager) = weak.upgrade() else { return };
                tokio::spawn(async move {
                    if let Err(error) = manager.resume(&session).await {
                        warn!(%session, %error, "could not resume the agent");
                    }
                });
            }
        });
        manager
    }

    pub fn store(&self) -> &Store {
        self.log.store()
    }

    /// What other servers sharing the store did, as this server's runtimes take it: an answer
    /// reaches the agent waiting here (or resumes the session), and a turn started elsewhere
    /// ends what this server's agent kept of the session (the next turn here starts afresh from
    /// the store, with what the other server's turn left).
    fn follow_remote_events(self: &Arc<Self>) {
        let Some(mut remote) = self.log.remote_events() else { return };
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            while let Some((session, event)) = remote.recv().await {
                let Some(manager) = weak.upgrade() else { return };
                match &event.body {
                    EventBody::InteractionResolved { tool_use_id, outcome } => {
                        manager.bridge.resolved(&session, tool_use_id, outcome);
                    }
                    EventBody::TurnStarted => manager.agent.end_session(&session).await,
                    _ => {}
                }
            }
        });
    }

    /// Starts following the other servers that share the store, if it is shared: their events
    /// (through the store's notifications, caught up from the store when some were missed),
    /// this server's leases renewed, and the sessions of servers that died taken over. Ends
    /// when the server stops.
    pub async fn join_team(self: &Arc<Self>) -> StoreResult<()> {
        let Some(mut listener) = self.store().listen().await? else { return Ok(()) };
        let weak = Arc::downgrade(self);
        let stop = self.shutdown.clone();
        tokio::spawn(async move {
            loop {
                let next = tokio::select! {
                    () = stop.cancelled() => return,
                    next = listener.next() => next,
                };
                let Some(manager) = weak.upgrade() else { return };
                match next {
                    Ok(Some(notice)) => manager.heard(notice).await,
                    Ok(None) => {
                        info!("the store's notifications were interrupted: catching up from the store");
                        for runtime in manager.log.all_loaded() {
                            if let Err(error) = runtime.catch_up(manager.store()).await {
                                warn!(session = %runtime.id(), %error, "could not catch up");
                            }
                        }
                        manager.log.list_changed();
                    }
                    Err(error) => {
                        warn!(%error, "the store's notifications failed; listening again in a second");
                        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    }
                }
            }
        });
        let weak = Arc::downgrade(self);
        let stop = self.shutdown.clone();
        let every = self.lease / 3;
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(every) => {}
                }
                let Some(manager) = weak.upgrade() else { return };
                manager.keep_leases().await;
            }
        });
        Ok(())
    }

    async fn heard(&self, notice: Notice) {
        match notice {
            Notice::Appended { session, seq } => {
                if let Some(runtime) = self.log.loaded(&session)
                    && runtime.seq() < seq
                    && let Err(error) = runtime.catch_up(self.store()).await
                {
                    warn!(%session, %error, "could not catch up");
                }
                self.log.list_changed();
            }
            Notice::ListChanged => self.log.list_changed(),
            Notice::Deleted { session } => self.let_go(&session).await,
            Notice::Interrupt { session } => {
                if let Some(runtime) = self.log.loaded(&session)
                    && let Some(turn) = &runtime.lock().await.turn
                {
                    info!(%session, "interrupt requested through another server");
                    turn.cancel();
                }
            }
        }
    }

    /// Renews this server's leases, and takes over the sessions whose server let its lease
    /// expire: it died (or lost the store for longer than a lease).
    async fn keep_leases(self: &Arc<Self>) {
        if let Err(error) = self.store().renew_leases(self.log.server_id(), self.lease).await {
            warn!(%error, "could not renew this server's leases");
        }
        match self.store().sessions_with_expired_leases().await {
            Ok(sessions) => {
                for session in sessions {
                    if let Err(error) = self.take_over(&session).await {
                        warn!(%session, %error, "could not take over the session");
                    }
                }
            }
            Err(error) => warn!(%error, "could not read the expired leases"),
        }
    }

    /// Takes a session whose server is gone: a turn it left unfinished ends (what its agent
    /// waited for was lost), and a parked agent whose answers came resumes here.
    async fn take_over(self: &Arc<Self>, session: &str) -> Result<(), AppError> {
        let runtime = self.runtime(session).await?;
        let mut state = runtime.lock().await;
        if state.turn.is_some() {
            // Ours, running: this server could not renew it in time (a renewal expires leases
            // no more). Taken again, unless another server took it meanwhile.
            if !self.take_lease(session).await? {
                warn!(%session, "another server took this session's lease while its turn ran here");
            }
            return Ok(());
        }
        if !self.take_lease(session).await? {
            return Ok(());
        }
        runtime.catch_up_locked(self.store(), &mut state).await?;
        if state.thread.turn.working {
            warn!(%session, "the server running this session's agent is gone; ending its turn");
            self.end_abandoned_turn(&runtime, &mut state, "The server running the agent stopped").await?;
        }
        if state.thread.is_ready_to_resume() {
            info!(%session, "resuming the agent, whose server is gone, with the person's answers");
            let history = state.thread.messages.clone();
            let workdir = self.workdir_for_turn(session).await?;
            return self.start_turn(&runtime, &mut state, history, String::new(), workdir).await;
        }
        self.give_back_lease(session).await;
        Ok(())
    }

    /// Takes the session's lease for a turn here: false while another server runs its agent.
    async fn take_lease(&self, session: &str) -> StoreResult<bool> {
        self.store().take_lease(session, self.log.server_id(), self.lease).await
    }

    /// Gives the session's lease back: no turn of it runs here (any more).
    async fn give_back_lease(&self, session: &str) {
        if let Err(error) = self.store().release_lease(session, self.log.server_id()).await {
            warn!(%session, %error, "could not give back the session's lease");
        }
    }

    /// The session's folder for a turn about to start with its lease taken (given back when the
    /// folder cannot be used here: another server may reach it).
    async fn workdir_for_turn(&self, session: &str) -> Result<Option<PathBuf>, AppError> {
        let workdir = self.session_workdir(session).await;
        if workdir.is_err() {
            self.give_back_lease(session).await;
        }
        workdir
    }

    pub fn bridge(&self) -> &InteractionBridge {
        &self.bridge
    }

    pub fn agent_name(&self) -> &'static str {
        self.agent.name()
    }

    /// Where a new session's agent works unless told otherwise, when that means anything.
    pub fn default_workdir(&self) -> Option<std::path::PathBuf> {
        self.agent.default_workdir()
    }

    /// The permission mode of a session that does not choose one.
    pub fn default_permission_mode(&self) -> PermissionMode {
        self.agent.default_permission_mode()
    }

    /// Cancelled when the server begins to stop.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// The session's live channel, loading the session if needed.
    pub async fn runtime(&self, id: &str) -> StoreResult<Arc<SessionRuntime>> {
        self.log.runtime(id).await
    }

    /// The session and its thread, consistent with each other, as of the last event.
    pub async fn snapshot(&self, id: &str) -> Result<(SessionSummary, Thread), AppError> {
        self.log.snapshot(id).await
    }

    pub async fn list_sessions(&self) -> Result<Vec<SessionSummary>, AppError> {
        Ok(self.store().list_sessions().await?)
    }

    /// The session list as JSON, for the tabs' live streams: now, and again after each change
    /// (read once for all of them, at most every 250 ms).
    pub fn watch_list(&self) -> watch::Receiver<Option<Arc<str>>> {
        self.log.watch_list()
    }

    /// Ends the turns that a previous run of the server left unfinished, saying so in the thread
    /// (where servers share the store: the turns no live server holds).
    pub async fn recover_unfinished_turns(&self) -> StoreResult<()> {
        if !self.store().is_shared() {
            // The only server: whatever lease the store holds is a previous run's.
            self.store().clear_leases().await?;
        }
        for id in self.store().sessions_with_unfinished_turns().await? {
            let runtime = self.runtime(&id).await?;
            let mut state = runtime.lock().await;
            // Another server may be taking it at the same moment: one of them does.
            if !self.take_lease(&id).await? {
                continue;
            }
            runtime.catch_up_locked(self.store(), &mut state).await?;
            if state.thread.turn.working {
                warn!(session = %id, "the server stopped during a turn; ending it");
                self.end_abandoned_turn(&runtime, &mut state, "The server stopped").await?;
            }
            self.store().release_lease(&id, self.log.server_id()).await?;
        }
        Ok(())
    }

    /// Ends a turn whose server stopped while it ran. What waited and was not parked: the agent
    /// answered it by itself when its server died; the card says what it was told, never that
    /// the person answered.
    async fn end_abandoned_turn(
        &self,
        runtime: &SessionRuntime,
        state: &mut RuntimeState,
        what: &str,
    ) -> StoreResult<()> {
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

    /// Parks what waits for the person (it outlives the server), stops every other turn, and
    /// waits (briefly) for them to record how they ended.
    pub async fn shut_down(&self) {
        self.turns.close();
        let grace = self.agent.interrupt_grace();
        let parking = self.bridge.park_waiting(None);
        if !parking.is_empty() {
            // The turns that park end by themselves (Claude Code: once the CLI has deferred).
            let parked = async {
                for session in &parking {
                    let Ok(runtime) = self.runtime(session).await else { continue };
                    while runtime.lock().await.thread.turn.working {
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    }
                }
            };
            if tokio::time::timeout(grace, parked).await.is_err() {
                warn!("some turns did not park in time");
            }
        }
        self.shutdown.cancel();
        if tokio::time::timeout(grace * 2, self.turns.wait()).await.is_err() {
            warn!("some turns did not end in time");
        }
        self.agent.shut_down().await;
        // Whatever this server still holds, another may take now rather than when it expires.
        if let Err(error) = self.store().release_leases(self.log.server_id()).await {
            warn!(%error, "could not give back this server's leases");
        }
    }

    /// Starts a session in the agent's default folder and permission mode.
    pub async fn create_session(&self, workdir: Option<&str>) -> Result<SessionSummary, AppError> {
        self.create_session_with(workdir, None).await
    }

    /// Starts a session; its agent works in `workdir` (an existing folder on this machine, given
    /// as an absolute path) or the server's default, in permission `mode` or the server's default.
    pub async fn create_session_with(
        &self,
        workdir: Option<&str>,
        mode: Option<PermissionMode>,
    ) -> Result<SessionSummary, AppError> {
        if let Some(mode) = mode {
            self.policy.check_mode(mode)?;
            // Refused now rather than when the agent starts (bypass where it is not allowed).
            self.agent.set_permission_mode("", mode).await.map_err(|detail| AppError::BadRequest { detail })?;
        }
        let workdir = match workdir.map(str::trim).filter(|w| !w.is_empty()) {
            Some(dir) => Some(self.policy.check_workdir(dir)?.display().to_string()),
            None => None,
        };
        let now = now_ms();
        let summary = SessionSummary {
            id: new_id(),
            title: "New session".to_string(),
            agent: self.agent.name().to_string(),
            created_at_ms: now,
            updated_at_ms: now,
            working: false,
            waiting: false,
            workdir,
        };
        self.store().create_session(&summary).await?;
        // Every session knows its mode from the start, so that its header shows it.
        let mode = mode.unwrap_or_else(|| self.agent.default_permission_mode());
        self.runtime(&summary.id).await?.append(self.store(), EventBody::PermissionModeChanged { mode }).await?;
        info!(session = %summary.id, agent = %summary.agent, "session created");
        self.log.list_changed();
        Ok(summary)
    }

    pub async fn rename_session(&self, id: &str, title: &str) -> Result<(), AppError> {
        let title = validate_title(title)?;
        self.store().rename_session(id, &title).await?;
        self.log.list_changed();
        Ok(())
    }

    /// Deletes a session; its running turn is stopped and its open tabs are disconnected, on
    /// this server and (told through the store) on every other one.
    pub async fn delete_session(&self, id: &str) -> Result<(), AppError> {
        self.store().delete_session(id).await?;
        self.let_go(id).await;
        info!(session = %id, "session deleted");
        self.log.list_changed();
        Ok(())
    }

    /// Lets go of everything this server holds of a deleted session: its runtime (whose tabs'
    /// streams then say the session is gone), its running turn, its agent and its waiters.
    async fn let_go(&self, id: &str) {
        if let Some(runtime) = self.log.forget(id)
            && let Some(turn) = &runtime.lock().await.turn
        {
            turn.cancel();
        }
        self.agent.end_session(id).await;
        self.bridge.forget_session(id);
    }

    /// Stores the person's message and starts the agent's turn; returns once the message is
    /// stored, before the agent answers.
    pub async fn send_message(self: &Arc<Self>, session_id: &str, text: String) -> Result<(), AppError> {
        validate_message(&text)?;
        let runtime = self.runtime(session_id).await?;
        let mut state = runtime.lock().await;
        // Before the message is stored: a turn that cannot start should not leave it behind.
        let workdir = self.session_workdir(session_id).await?;
        if state.thread.turn.working || !self.take_lease(session_id).await? {
            // Running, here or (the lease says) on another server sharing the store.
            return Err(AppError::AgentBusy);
        }
        let mut first_message = false;
        let mut history = Vec::new();
        let stored = loop {
            // Judged again when another server appended first (it may have started a turn).
            if state.thread.turn.working {
                break Err(AppError::AgentBusy);
            }
            // A parked agent takes its answer before anything else (a message would reach it first).
            if state.thread.is_waiting() {
                break Err(AppError::WaitingForAnswer);
            }
            first_message = !state.thread.messages.iter().any(|message| message.role == Role::User);
            history = state.thread.messages.clone();
            let message = EventBody::UserMessage { message_id: new_id(), text: text.clone() };
            match runtime.try_append_locked(self.store(), &mut state, message).await {
                Err(StoreError::SequenceConflict { .. }) => continue,
                result => break result.map_err(AppError::from),
            }
        };
        if let Err(error) = stored {
            self.give_back_lease(session_id).await;
            return Err(error);
        }
        if first_message
            && let Err(error) = self.store().set_automatic_title(session_id, &title_from_message(&text)).await
        {
            // A title is not worth a turn: the message is stored, and the list keeps its old title.
            warn!(session = %session_id, %error, "could not title the session after its first message");
        }
        self.start_turn(&runtime, &mut state, history, text, workdir).await
    }

    /// Resumes a session whose agent parked, once nothing it left waits for the person any more.
    async fn resume(self: &Arc<Self>, session_id: &str) -> Result<(), AppError> {
        let runtime = self.runtime(session_id).await?;
        let mut state = runtime.lock().await;
        // Running here already; or on another server (its lease), which resumes it.
        if state.turn.is_some() || !state.thread.is_ready_to_resume() || !self.take_lease(session_id).await? {
            return Ok(());
        }
        // The lease taken, the log as it is now: another server may have resumed it meanwhile.
        if let Err(error) = runtime.catch_up_locked(self.store(), &mut state).await {
            self.give_back_lease(session_id).await;
            return Err(error.into());
        }
        if !state.thread.is_ready_to_resume() {
            self.give_back_lease(session_id).await;
            return Ok(());
        }
        info!(session = %session_id, "resuming the agent with the person's answers");
        let history = state.thread.messages.clone();
        let workdir = self.workdir_for_turn(session_id).await?;
        self.start_turn(&runtime, &mut state, history, String::new(), workdir).await
    }

    /// The session's folder as its agent will work in it, checked again at every start: it may
    /// have gone, or become a link out of the root.
    async fn session_workdir(&self, session_id: &str) -> Result<Option<PathBuf>, AppError> {
        match self.store().session(session_id).await?.workdir {
            Some(dir) => Ok(Some(self.policy.check_workdir(&dir)?)),
            None => Ok(None),
        }
    }

    /// Records the turn's start and runs it; `text` is the person's message, empty to resume.
    /// Called with the session's lease taken, which it gives back if the turn cannot start.
    async fn start_turn(
        self: &Arc<Self>,
        runtime: &Arc<SessionRuntime>,
        state: &mut RuntimeState,
        history: Vec<crate::thread::Message>,
        text: String,
        workdir: Option<PathBuf>,
    ) -> Result<(), AppError> {
        let session_id = runtime.id();
        if let Err(error) = runtime.append_locked(self.store(), state, EventBody::TurnStarted).await {
            self.give_back_lease(session_id).await;
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
        self.turns.spawn(self.clone().run_turn(runtime.clone(), request).instrument(span));
        Ok(())
    }

    /// Stops the session's running turn. Stopping an idle session does nothing.
    pub async fn interrupt(&self, session_id: &str) -> Result<(), AppError> {
        let runtime = self.runtime(session_id).await?;
        let state = runtime.lock().await;
        if let Some(turn) = &state.turn {
            info!(session = %session_id, "interrupt requested");
            turn.cancel();
        } else if state.thread.turn.working && self.store().is_shared() {
            // Its agent runs on another server, which hears this through the store.
            self.store().notify(&Notice::Interrupt { session: session_id.to_string() }).await?;
        }
        Ok(())
    }

    /// Answers a pending question (the bridge's rules: checked, then the first answer wins).
    pub async fn answer_question(
        &self,
        session_id: &str,
        tool_use_id: &str,
        answers: Vec<QuestionAnswer>,
    ) -> Result<(), AppError> {
        self.bridge.answer(session_id, tool_use_id, answers).await
    }

    /// Skips a pending question; the agent is told that the person declined to answer.
    pub async fn decline_question(
        &self,
        session_id: &str,
        tool_use_id: &str,
        reason: Option<String>,
    ) -> Result<(), AppError> {
        self.bridge.decline(session_id, tool_use_id, reason).await
    }

    /// Allows or denies a pending approval. The first decision wins.
    pub async fn decide_approval(
        &self,
        session_id: &str,
        tool_use_id: &str,
        decision: Decision,
    ) -> Result<(), AppError> {
        self.bridge.decide(session_id, tool_use_id, decision).await
    }

    /// Sends the person's answer to a question whose answer never reached the agent (the server
    /// died while it waited: `InteractionOutcome::Lost`) as a message, with their consent.
    pub async fn send_lost_answer(
        self: &Arc<Self>,
        session_id: &str,
        tool_use_id: &str,
        answers: Vec<QuestionAnswer>,
    ) -> Result<(), AppError> {
        let (_, thread) = self.snapshot(session_id).await?;
        let interaction = thread
            .tool_call(tool_use_id)
            .and_then(|call| call.interaction.clone())
            .ok_or_else(|| AppError::InteractionNotFound { tool_use_id: tool_use_id.to_string() })?;
        if !matches!(interaction.outcome, Some(InteractionOutcome::Lost { .. })) {
            return Err(AppError::BadRequest {
                detail: "only an answer that never reached the agent can be sent as a message".into(),
            });
        }
        let answers = validate_answers(interaction.questions(), &answers)?;
        let text = format!(
            "You asked me something before AskBridge stopped, and my answer did not reach you then. My answer: {}. \
             Please go on with it in mind.",
            words::as_quote(&answers)
        );
        self.send_message(session_id, text).await
    }

    /// Switches the session's permission mode: recorded for the next start, and sent to the
    /// agent now if it runs.
    pub async fn set_permission_mode(&self, session_id: &str, mode: PermissionMode) -> Result<(), AppError> {
        self.policy.check_mode(mode)?;
        let runtime = self.runtime(session_id).await?;
        // The agent may refuse (bypass not allowed here); a running one switches now.
        self.agent.set_permission_mode(session_id, mode).await.map_err(|detail| AppError::BadRequest { detail })?;
        let mut state = runtime.lock().await;
        if state.thread.turn.permission_mode != Some(mode) {
            runtime.append_locked(self.store(), &mut state, EventBody::PermissionModeChanged { mode }).await?;
        }
        info!(session = %session_id, %mode, "permission mode set");
        Ok(())
    }

    async fn run_turn(self: Arc<Self>, runtime: Arc<SessionRuntime>, request: TurnRequest) {
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
        self.give_back_lease(runtime.id()).await;
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
}

/// A person may put a session in the modes the UI offers, not Claude Code's others.
/// A title from the first message: its first line, cut at a word near 60 characters.
pub(super) fn title_from_message(text: &str) -> String {
    const MAX: usize = 60;
    let line = text.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or("New session");
    if line.chars().count() <= MAX {
        return line.to_string();
    }
    let mut title = String::new();
    for word in line.split_whitespace() {
        if title.chars().count() + word.chars().count() + 1 > MAX {
            break;
        }
        if !title.is_empty() {
            title.push(' ');
        }
        title.push_str(word);
    }
    if title.is_empty() {
        title = line.chars().take(MAX).collect();
    }
    title.push('…');
    title
}
