//! The SessionManager: what a person does with sessions. Sessions created, renamed, loaded and
//! deleted; a message that starts the agent's turn (`turns.rs` runs it); answers, declines and
//! decisions, through the bridge; the permission mode. Events go through the session's log.
//!
//! Where several servers share one store (Postgres), a session's agent runs on the server that
//! holds its lease (`leases.rs`); how a server follows the others is `team.rs`.

use std::sync::Arc;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

use super::files::FileLists;
use super::log::SessionLog;
use super::policy::SessionPolicy;
use super::runtime::{Judged, SessionRuntime};
use super::turns::Turns;
use crate::agent::AgentBackend;
use crate::approval::{Decision, PermissionMode};
use crate::bridge::{InteractionBridge, Timeouts};
use crate::changes::NewWorktree;
use crate::error::{AppError, validate_message, validate_title};
use crate::folder::Folders;
use crate::ids::{new_id, now_ms};
use crate::interaction::InteractionOutcome;
use crate::question::{QuestionAnswer, validate_answers, words};
use crate::shell::Shells;
use crate::store::{Notice, Store, StoreResult};
use crate::thread::{
    AgentOffer, EventBody, MAX_MODEL_CHARS, Message, QueueChange, SessionSummary, SlashCommand, Thread, is_model_name,
};

pub struct SessionManager {
    pub(super) log: Arc<SessionLog>,
    pub(super) bridge: Arc<InteractionBridge>,
    pub(super) agent: Arc<dyn AgentBackend>,
    pub(super) turns: Arc<Turns>,
    pub(super) shutdown: CancellationToken,
    /// The folders' files the `@` list asked for lately.
    pub(super) files: FileLists,
    /// The sessions' terminals (`shell.rs`).
    pub(super) shells: Shells,
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
        let log = SessionLog::new(store, timeouts.lease());
        let policy_checkpoints = policy.checkpoints.clone();
        let shells = Shells::new(policy.shell_env.clone());
        let (bridge, mut resumes) = InteractionBridge::new(log.clone(), timeouts);
        let bridge = Arc::new(bridge);
        let shutdown = CancellationToken::new();
        // Questions and approvals expire from the deadlines in the store, parked ones included.
        bridge.keep_deadlines(shutdown.clone());
        let turns = Arc::new(Turns {
            log: log.clone(),
            bridge: bridge.clone(),
            agent: agent.clone(),
            policy,
            shutdown: shutdown.clone(),
            tasks: TaskTracker::new(),
            retry_after: timeouts.resume_retry(),
            folders: policy_checkpoints.map(|data| Arc::new(Folders::new(&data))),
            failures: Default::default(),
        });
        let manager = Arc::new(Self { log, bridge, agent, turns, shutdown, files: FileLists::default(), shells });
        manager.follow_remote_events();
        // A parked interaction was settled: its session's agent may go on. Each session resumes
        // on its own task: one after the other, under load, the last of many parked sessions
        // waited for every other one's reads and writes (issue 13, `tests/load.rs`). Two resumes
        // of one session are one: the second finds its turn started (`start_owed` checks under
        // the session's lock). One that cannot start says so in the thread and is tried again.
        let weak = Arc::downgrade(&manager);
        tokio::spawn(async move {
            while let Some(session) = resumes.recv().await {
                let Some(manager) = weak.upgrade() else { return };
                tokio::spawn(async move {
                    match manager.turns.start_owed(&session).await {
                        Ok(()) | Err(AppError::SessionNotFound { .. }) => {}
                        Err(error) => {
                            warn!(%session, %error, "could not resume the agent; trying again later");
                            manager.turns.retry_later(&session);
                        }
                    }
                });
            }
        });
        manager
    }

    pub(super) fn store(&self) -> &Store {
        self.log.store()
    }

    /// Tells `observer` of every event of every session from now on (the notifier's feed).
    pub fn observe_events(&self, observer: super::EventObserver) {
        self.log.observe(observer);
    }

    pub(super) fn bridge(&self) -> &InteractionBridge {
        &self.bridge
    }

    pub fn agent_name(&self) -> &'static str {
        self.agent.name()
    }

    /// What people call the agent new sessions talk to.
    pub fn agent_label(&self) -> &'static str {
        self.agent.label()
    }

    /// Messages a newcomer can try (the offline demo's), for the welcome page.
    pub fn example_prompts(&self) -> Vec<String> {
        self.agent.example_prompts()
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

    /// At most `max` sessions stay loaded; the least recently used idle ones are let go first,
    /// and read from the store again when next asked for (`--max-loaded-sessions`).
    pub fn set_max_loaded_sessions(&self, max: usize) {
        self.log.set_max_loaded(max);
    }

    /// How many sessions are loaded now.
    pub fn loaded_sessions(&self) -> usize {
        self.log.loaded_count()
    }

    /// The session's live channel, loading the session if needed.
    pub async fn runtime(&self, id: &str) -> StoreResult<Arc<SessionRuntime>> {
        self.log.runtime(id).await
    }

    /// The session and its thread, consistent with each other, as of the last event.
    pub async fn snapshot(&self, id: &str) -> Result<(SessionSummary, Thread), AppError> {
        self.log.snapshot(id).await
    }

    /// The session list as JSON, for the tabs' live streams: now, and again after each change
    /// (read once for all of them, at most every 250 ms).
    pub fn watch_list(&self) -> watch::Receiver<Option<Arc<str>>> {
        self.log.watch_list()
    }

    /// Ends the turns that a previous run of the server left unfinished, saying so in the thread
    /// (where servers share the store: the turns no live server holds); then starts the turns
    /// the sessions owe the person: a resume whose answer was stored, a message stored, just
    /// before the server died; a resume that failed.
    pub async fn recover_unfinished_turns(&self) -> StoreResult<()> {
        self.turns.recover_unfinished().await?;
        self.turns.start_all_owed().await
    }

    /// Parks what waits for the person (it outlives the server), stops every other turn, and
    /// waits (briefly) for them to record how they ended.
    pub async fn shut_down(&self) {
        self.turns.tasks.close();
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
        if tokio::time::timeout(grace * 2, self.turns.tasks.wait()).await.is_err() {
            warn!("some turns did not end in time");
        }
        self.agent.shut_down().await;
        self.log.leases().give_back_all().await;
    }

    /// Starts a session in the agent's default folder and permission mode.
    pub async fn create_session(&self, workdir: Option<&str>) -> Result<SessionSummary, AppError> {
        self.create_session_with(NewSession { workdir, ..NewSession::default() }).await
    }

    /// Starts a session as `new` says: its agent (one this server runs), the folder it works in
    /// (an existing folder on this machine, given as an absolute path), its permission mode and
    /// model, each the server's default when not given; with `history` (the agent's id for a
    /// conversation, and its messages), it goes on with that conversation.
    pub async fn create_session_with(&self, new: NewSession<'_>) -> Result<SessionSummary, AppError> {
        let NewSession { workdir, mode, agent, model, history, title, worktree } = new;
        let agent = match agent.map(str::trim).filter(|a| !a.is_empty()) {
            None => &*self.agent,
            Some(name) => self.agent_named(name)?,
        };
        let model = match model.map(str::trim).filter(|m| !m.is_empty()) {
            Some(model) => Some(checked_model(model)?),
            None => None,
        };
        if let Some(mode) = mode {
            self.turns.policy.check_mode(mode)?;
            // Refused now rather than when the agent starts (bypass where it is not allowed).
            agent.set_permission_mode("", mode).await.map_err(|detail| AppError::BadRequest { detail })?;
        }
        let workdir = match workdir.map(str::trim).filter(|w| !w.is_empty()) {
            Some(dir) => Some(self.turns.policy.check_workdir(dir)?),
            None => None,
        };
        // Last, once everything else was checked: a worktree is a branch and a folder made.
        let workdir = match worktree {
            Some(new) => Some(self.make_worktree(workdir.as_deref(), &new).await?),
            None => workdir,
        };
        let workdir = workdir.map(|dir| dir.display().to_string());
        let now = now_ms();
        let summary = SessionSummary {
            id: new_id(),
            title: title.unwrap_or("New session").to_string(),
            agent: agent.name().to_string(),
            created_at_ms: now,
            updated_at_ms: now,
            working: false,
            waiting: false,
            workdir,
            active_at_ms: now,
            terminal: None,
            matched: None,
        };
        self.store().create_session(&summary).await?;
        // Every session knows its mode from the start, so that its header shows it.
        let mode = mode.unwrap_or_else(|| agent.default_permission_mode());
        let runtime = self.runtime(&summary.id).await?;
        runtime.append(self.store(), EventBody::PermissionModeChanged { mode, agent_mode: None }).await?;
        if model.is_some() {
            runtime.append(self.store(), EventBody::ModelChanged { model }).await?;
        }
        if let Some((agent_session, messages)) = history {
            runtime.append(self.store(), EventBody::HistoryImported { agent_session, messages }).await?;
        }
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
        let folder = self.session_folder(id).await.ok();
        self.store().delete_session(id).await?;
        self.let_go(id).await;
        if let (Some(folders), Some(folder)) = (&self.turns.folders, &folder)
            && let Err(error) = folders.forget(folder, id).await
        {
            warn!(session = %id, %error, "the deleted session's checkpoints could not be deleted");
        }
        if let Some(folder) = &folder {
            self.tidy_deleted_worktree(id, folder).await;
        }
        info!(session = %id, "session deleted");
        self.log.list_changed();
        Ok(())
    }

    /// Lets go of everything this server holds of a deleted session: its runtime (whose tabs'
    /// streams then say the session is gone), its running turn, its agent and its waiters.
    pub(super) async fn let_go(&self, id: &str) {
        if let Some(runtime) = self.log.forget(id)
            && let Some(turn) = &runtime.lock().await.turn
        {
            turn.cancel();
        }
        self.agent.end_session(id).await;
        self.bridge.forget_session(id);
        self.shells.end(id);
    }

    /// Stores the person's message and starts the agent's turn; returns once the message is
    /// stored, before the agent answers. While the agent works or waits for the person (or has
    /// their answers to take first) the message is typed ahead: it waits in the session's queue,
    /// and the next turn takes it (`Thread::queues_messages`).
    pub async fn send_message(&self, session_id: &str, text: String) -> Result<(), AppError> {
        self.send_message_with(session_id, text, &[]).await
    }

    /// `send_message`, with files the person attached (stored before, `store_attachment`): by
    /// their hashes, each of which must be stored.
    pub async fn send_message_with(&self, session_id: &str, text: String, files: &[String]) -> Result<(), AppError> {
        validate_message(&text)?;
        let attachments = self.attachments_of_message(files).await?;
        let runtime = self.runtime(session_id).await?;
        let mut state = runtime.lock().await;
        // Before the message is stored: a turn that cannot start should not leave it behind.
        let placed = self.turns.placement(session_id).await?;
        // Judged again when another server appended first (it may have started a turn).
        // Its transaction also moves the session up the list, and titles it after its first
        // message (`Append::moves_up`, `Append::first_title`).
        let queued = runtime
            .append_judged(self.store(), &mut state, |thread| {
                let message_id = new_id();
                let (text, attachments) = (text.clone(), attachments.clone());
                if thread.queues_messages() {
                    return Ok::<_, AppError>(Judged::Append(
                        EventBody::MessageQueued { message_id, text, attachments },
                        true,
                    ));
                }
                Ok(Judged::Append(EventBody::UserMessage { message_id, text, attachments }, false))
            })
            .await?;
        self.log.list_changed();
        if queued {
            info!(session = %session_id, "message queued for the agent's next turn");
        }
        // A resume that failed is tried again now, with a short wait again if it fails.
        self.turns.forget_failures(session_id);
        self.turns.start_requested_locked(&runtime, &mut state, placed).await
    }

    /// Changes what the session's queue holds (`QueueChange`). A message a turn took already is
    /// the agent's: it can no longer be changed (`AppError::AlreadySent`).
    pub async fn change_queue(&self, session_id: &str, change: QueueChange) -> Result<(), AppError> {
        let runtime = self.runtime(session_id).await?;
        let (message_id, body) = match change {
            QueueChange::SendNow => {
                let placed = self.turns.placement(session_id).await?;
                let mut state = runtime.lock().await;
                self.turns.forget_failures(session_id);
                return self.turns.start_requested_locked(&runtime, &mut state, placed).await;
            }
            QueueChange::Edit { message_id, text } => {
                validate_message(&text)?;
                (message_id.clone(), EventBody::QueuedMessageEdited { message_id, text })
            }
            QueueChange::Remove { message_id } => (message_id.clone(), EventBody::QueuedMessageRemoved { message_id }),
        };
        let mut state = runtime.lock().await;
        runtime
            .append_judged(self.store(), &mut state, |thread| {
                if !thread.turn.queue.iter().any(|queued| queued.id == message_id) {
                    return Err(AppError::AlreadySent { id: message_id.clone() });
                }
                Ok(Judged::Append(body.clone(), ()))
            })
            .await
    }

    /// The files of a session's folder that best match `query`, for the message box's `@` list;
    /// before the session exists, those of the folder chosen for it (`workdir`, else the folder
    /// `agent` works in by default). Checked as a session's folder is: inside the allowed root.
    pub async fn folder_files(
        &self,
        session: Option<&str>,
        workdir: Option<&str>,
        agent: Option<&str>,
        query: &str,
    ) -> Result<Vec<String>, AppError> {
        let (folder, agent) = match session {
            Some(id) => {
                let placed = self.turns.placement(id).await?;
                (placed.workdir, placed.agent)
            }
            None => {
                let chosen = workdir.map(str::trim).filter(|dir| !dir.is_empty());
                let folder = chosen.map(|dir| self.turns.policy.check_workdir(dir)).transpose()?;
                (folder, agent.unwrap_or_default().to_string())
            }
        };
        let folder = match folder {
            Some(folder) => folder,
            None => {
                let backend = self.agent.backend(&agent).unwrap_or(&*self.agent);
                let default = backend.default_workdir().ok_or_else(|| AppError::BadRequest {
                    detail: "this session works in no folder, so there are no files to list".into(),
                })?;
                self.turns.policy.check_workdir(&default.display().to_string())?
            }
        };
        Ok(self.files.matching(&folder, query).await)
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
        self.bridge.answer(session_id, tool_use_id, answers).await?;
        self.mark_active(session_id).await;
        Ok(())
    }

    /// Skips a pending question; the agent is told that the person declined to answer.
    pub async fn decline_question(
        &self,
        session_id: &str,
        tool_use_id: &str,
        reason: Option<String>,
    ) -> Result<(), AppError> {
        self.bridge.decline(session_id, tool_use_id, reason).await?;
        self.mark_active(session_id).await;
        Ok(())
    }

    /// Allows or denies a pending approval. The first decision wins.
    pub async fn decide_approval(
        &self,
        session_id: &str,
        tool_use_id: &str,
        decision: Decision,
    ) -> Result<(), AppError> {
        self.bridge.decide(session_id, tool_use_id, decision).await?;
        self.mark_active(session_id).await;
        Ok(())
    }

    /// The person did something in the session: it moves up the list. Not worth failing their
    /// action for: what they did is stored.
    async fn mark_active(&self, session_id: &str) {
        match self.store().mark_active(session_id, now_ms()).await {
            Ok(()) => self.log.list_changed(),
            Err(error) => warn!(session = %session_id, %error, "could not move the session up the list"),
        }
    }

    /// Sends the person's answer to a question whose answer never reached the agent (the server
    /// died while it waited: `InteractionOutcome::Lost`) as a message, with their consent.
    pub async fn send_lost_answer(
        &self,
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
        self.send_message(session_id, words::lost_answer_as_message(&answers)).await
    }

    /// The agents new sessions can talk to, the server's default first, with their models.
    pub async fn agent_offers(&self) -> Vec<AgentOffer> {
        let mut offers = Vec::new();
        for name in self.agent.names() {
            let agent = self.agent.backend(name).unwrap_or(&*self.agent);
            offers.push(AgentOffer {
                name: name.to_string(),
                label: agent.label().to_string(),
                default_workdir: agent.default_workdir().map(|dir| dir.display().to_string()),
                // A page is not held up for long by an agent that is slow to say.
                models: tokio::time::timeout(OFFER_WAIT, agent.models()).await.unwrap_or_default(),
                modes: agent.modes().await,
            });
        }
        offers
    }

    /// The `/` commands of the session's agent, in the session's folder.
    pub async fn slash_commands(&self, session_id: &str) -> Result<Vec<SlashCommand>, AppError> {
        let placed = self.turns.placement(session_id).await?;
        let agent = self.agent_named(&placed.agent)?;
        Ok(agent.commands(placed.workdir.as_deref()).await)
    }

    /// The `/` commands `agent` (the default one if `None`) takes in its own folder.
    pub async fn agent_commands(&self, agent: Option<&str>) -> Result<Vec<SlashCommand>, AppError> {
        let agent = match agent {
            Some(name) => self.agent_named(name)?,
            None => &*self.agent,
        };
        Ok(agent.commands(None).await)
    }

    /// The agent called `name`, if this server runs it.
    pub(super) fn agent_named(&self, name: &str) -> Result<&dyn AgentBackend, AppError> {
        if name == self.agent.name() {
            return Ok(self.agent.backend(name).unwrap_or(&*self.agent));
        }
        self.agent.backend(name).ok_or_else(|| AppError::BadRequest {
            detail: format!("this server does not run the agent “{name}”; it runs: {}", self.agent.names().join(", ")),
        })
    }
}

/// How long a page waits for an agent to list its models.
const OFFER_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// What a new session gets; anything not given is the server's default.
#[derive(Default)]
pub struct NewSession<'a> {
    pub workdir: Option<&'a str>,
    pub mode: Option<PermissionMode>,
    /// The agent's name (`claude`, `anthropic`, `scripted`).
    pub agent: Option<&'a str>,
    pub model: Option<&'a str>,
    /// The agent's id for a conversation to go on with, and its messages.
    pub history: Option<(String, Vec<Message>)>,
    /// Its title, where AskBridge names it by itself (a continued transcript's); otherwise
    /// "New session" until its first message titles it.
    pub title: Option<&'a str>,
    /// In a new worktree of `workdir`'s repository (`worktree.rs`).
    pub worktree: Option<NewWorktree>,
}

/// `model`, if it can name one.
pub(super) fn checked_model(model: &str) -> Result<String, AppError> {
    if is_model_name(model) {
        Ok(model.to_string())
    } else {
        Err(AppError::BadRequest {
            detail: format!(
                "“{}” is not a model name: use an alias such as sonnet, or a model id (letters, digits and .-_:[]@/, at most {MAX_MODEL_CHARS})",
                model.chars().take(40).collect::<String>()
            ),
        })
    }
}
