//! The SessionManager: each session's thread, its running turn, and the one place where events
//! are numbered, applied, stored and then broadcast.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use serde_json::Value;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{Instrument, info, info_span, warn};

use crate::agent::{AgentBackend, AgentError, TurnRequest};
use crate::approval::{Approval, Decision, MAX_DENIAL_CHARS, PermissionMode};
use crate::bridge::InteractionBridge;
use crate::error::{AppError, validate_message, validate_title};
use crate::ids::{new_id, now_ms};
use crate::interaction::{InteractionOutcome, InteractionRequest};
use crate::question::{MAX_ANSWER_CHARS, QuestionAnswer, normalize_question_args, validate_answers};
use crate::store::{Append, Store, StoreError, StoreResult};
use crate::thread::{EventBody, Role, SessionEvent, SessionSummary, Thread, TurnOutcome};

/// How long a backend may take to wind down after Stop before its turn is ended for it.
const INTERRUPT_GRACE: Duration = Duration::from_secs(5);
/// Live events kept for slow tabs before they must catch up from the store.
const CHANNEL_CAPACITY: usize = 1024;

/// How long the person has to answer; `None` waits as long as the agent does.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timeouts {
    pub question: Option<Duration>,
    pub approval: Option<Duration>,
}

pub struct SessionManager {
    store: Store,
    agent: Arc<dyn AgentBackend>,
    bridge: InteractionBridge,
    timeouts: Timeouts,
    runtimes: Mutex<HashMap<String, Arc<SessionRuntime>>>,
    list_changes: broadcast::Sender<()>,
    shutdown: CancellationToken,
    turns: TaskTracker,
}

/// A loaded session: its thread as of its last event, and its live channel.
pub struct SessionRuntime {
    id: String,
    state: tokio::sync::Mutex<RuntimeState>,
    events: broadcast::Sender<Arc<SessionEvent>>,
}

struct RuntimeState {
    thread: Thread,
    /// Cancels the running turn.
    turn: Option<CancellationToken>,
}

impl SessionManager {
    pub fn new(store: Store, agent: Arc<dyn AgentBackend>) -> Arc<Self> {
        Self::with_timeouts(store, agent, Timeouts::default())
    }

    pub fn with_timeouts(store: Store, agent: Arc<dyn AgentBackend>, timeouts: Timeouts) -> Arc<Self> {
        Arc::new(Self {
            store,
            agent,
            bridge: InteractionBridge::default(),
            timeouts,
            runtimes: Mutex::new(HashMap::new()),
            list_changes: broadcast::channel(64).0,
            shutdown: CancellationToken::new(),
            turns: TaskTracker::new(),
        })
    }

    pub fn store(&self) -> &Store {
        &self.store
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

    pub fn bridge(&self) -> &InteractionBridge {
        &self.bridge
    }

    /// Cancelled when the server begins to stop.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Ends the turns that a previous run of the server left unfinished, saying so in the thread.
    pub async fn recover_unfinished_turns(&self) -> StoreResult<()> {
        for id in self.store.sessions_with_unfinished_turns().await? {
            warn!(session = %id, "the server stopped during a turn; ending it");
            let runtime = self.runtime(&id).await?;
            let mut state = runtime.state.lock().await;
            runtime
                .append_locked(
                    &self.store,
                    &mut state,
                    EventBody::TurnEnded { outcome: TurnOutcome::Abandoned, usage: None },
                )
                .await?;
            runtime
                .append_locked(
                    &self.store,
                    &mut state,
                    EventBody::Notice {
                        message_id: new_id(),
                        text: "The server stopped while the agent was working, so that turn was cut short. \
                       Send a message to continue."
                            .to_string(),
                    },
                )
                .await?;
        }
        Ok(())
    }

    /// Stops every turn and waits (briefly) for them to record how they ended.
    pub async fn shut_down(&self) {
        self.shutdown.cancel();
        self.turns.close();
        if tokio::time::timeout(INTERRUPT_GRACE * 2, self.turns.wait()).await.is_err() {
            warn!("some turns did not end in time");
        }
        self.agent.shut_down().await;
    }

    pub async fn list_sessions(&self) -> Result<Vec<SessionSummary>, AppError> {
        Ok(self.store.list_sessions().await?)
    }

    /// Notified whenever the session list changes (a session created, renamed, deleted, started
    /// or finished working).
    pub fn subscribe_list(&self) -> broadcast::Receiver<()> {
        self.list_changes.subscribe()
    }

    fn list_changed(&self) {
        let _ = self.list_changes.send(());
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
            check_mode(mode)?;
            // Refused now rather than when the agent starts (bypass where it is not allowed).
            self.agent.set_permission_mode("", mode).await.map_err(|detail| AppError::BadRequest { detail })?;
        }
        let workdir = workdir.map(str::trim).filter(|w| !w.is_empty());
        if let Some(dir) = workdir {
            let path = std::path::Path::new(dir);
            if !path.is_absolute() || !path.is_dir() {
                return Err(AppError::BadRequest {
                    detail: format!("“{dir}” is not a folder on the server (give its full path)"),
                });
            }
        }
        let now = now_ms();
        let summary = SessionSummary {
            id: new_id(),
            title: "New session".to_string(),
            agent: self.agent.name().to_string(),
            created_at_ms: now,
            updated_at_ms: now,
            working: false,
            waiting: false,
            workdir: workdir.map(str::to_string),
        };
        self.store.create_session(&summary).await?;
        // Every session knows its mode from the start, so that its header shows it.
        let mode = mode.unwrap_or_else(|| self.agent.default_permission_mode());
        self.runtime(&summary.id).await?.append(&self.store, EventBody::PermissionModeChanged { mode }).await?;
        info!(session = %summary.id, agent = %summary.agent, "session created");
        self.list_changed();
        Ok(summary)
    }

    pub async fn rename_session(&self, id: &str, title: &str) -> Result<(), AppError> {
        let title = validate_title(title)?;
        self.store.rename_session(id, &title).await?;
        self.list_changed();
        Ok(())
    }

    /// Deletes a session; its running turn is stopped and its open tabs are disconnected.
    pub async fn delete_session(&self, id: &str) -> Result<(), AppError> {
        let runtime = self.runtimes.lock().expect("runtimes lock").remove(id);
        if let Some(runtime) = runtime {
            let state = runtime.state.lock().await;
            if let Some(turn) = &state.turn {
                turn.cancel();
            }
        }
        self.store.delete_session(id).await?;
        self.agent.end_session(id).await;
        info!(session = %id, "session deleted");
        self.list_changed();
        Ok(())
    }

    /// The session and its thread, consistent with each other, as of the last event.
    pub async fn snapshot(&self, id: &str) -> Result<(SessionSummary, Thread), AppError> {
        let runtime = self.runtime(id).await?;
        let thread = runtime.state.lock().await.thread.clone();
        let summary = self.store.session(id).await?;
        Ok((summary, thread))
    }

    /// The session's live channel, loading the session if needed.
    pub async fn runtime(&self, id: &str) -> StoreResult<Arc<SessionRuntime>> {
        if let Some(runtime) = self.runtimes.lock().expect("runtimes lock").get(id) {
            return Ok(runtime.clone());
        }
        let thread = self.store.load_thread(id).await?;
        let mut runtimes = self.runtimes.lock().expect("runtimes lock");
        // Another request may have loaded it meanwhile: keep the first, it may have moved on.
        let runtime = runtimes.entry(id.to_string()).or_insert_with(|| {
            Arc::new(SessionRuntime {
                id: id.to_string(),
                state: tokio::sync::Mutex::new(RuntimeState { thread, turn: None }),
                events: broadcast::channel(CHANNEL_CAPACITY).0,
            })
        });
        Ok(runtime.clone())
    }

    /// Stores the person's message and starts the agent's turn; returns once the message is
    /// stored, before the agent answers.
    pub async fn send_message(self: &Arc<Self>, session_id: &str, text: String) -> Result<(), AppError> {
        validate_message(&text)?;
        let runtime = self.runtime(session_id).await?;
        let mut state = runtime.state.lock().await;
        if state.thread.turn.working {
            return Err(AppError::AgentBusy);
        }
        let history = state.thread.messages.clone();
        let agent_session = state.thread.turn.agent_session.clone();
        let permission_mode = state.thread.turn.permission_mode;
        let workdir = self.store.session(session_id).await?.workdir.map(std::path::PathBuf::from);
        let first_message = !history.iter().any(|message| message.role == Role::User);
        runtime
            .append_locked(&self.store, &mut state, EventBody::UserMessage { message_id: new_id(), text: text.clone() })
            .await?;
        runtime.append_locked(&self.store, &mut state, EventBody::TurnStarted).await?;
        let cancel = self.shutdown.child_token();
        state.turn = Some(cancel.clone());
        drop(state);

        if first_message {
            self.store.set_automatic_title(session_id, &title_from_message(&text)).await?;
        }
        self.list_changed();

        let request = TurnRequest {
            session_id: session_id.to_string(),
            text,
            history,
            agent_session,
            workdir,
            permission_mode,
            cancel,
        };
        let span = info_span!("turn", session = %session_id, agent = self.agent.name());
        self.turns.spawn(self.clone().run_turn(runtime, request).instrument(span));
        Ok(())
    }

    /// Stops the session's running turn. Stopping an idle session does nothing.
    pub async fn interrupt(&self, session_id: &str) -> Result<(), AppError> {
        let runtime = self.runtime(session_id).await?;
        let state = runtime.state.lock().await;
        if let Some(turn) = &state.turn {
            info!(session = %session_id, "interrupt requested");
            turn.cancel();
        }
        Ok(())
    }

    /// Answers a pending question: checked against the questions asked, then the first answer
    /// wins, the same answer again is accepted, and a different later one is refused.
    pub async fn answer_question(
        &self,
        session_id: &str,
        tool_use_id: &str,
        answers: Vec<QuestionAnswer>,
    ) -> Result<(), AppError> {
        let runtime = self.runtime(session_id).await?;
        let questions = match interaction_request(&runtime, tool_use_id).await? {
            InteractionRequest::Approval(_) => return Err(not_a_question(tool_use_id)),
            InteractionRequest::Question { questions } => questions,
            InteractionRequest::Unreadable { .. } => Vec::new(),
        };
        let answers = validate_answers(&questions, &answers)?;
        self.resolve(&runtime, tool_use_id, InteractionOutcome::Answered { answers }).await
    }

    /// Allows or denies a pending approval. The first decision wins.
    pub async fn decide_approval(
        &self,
        session_id: &str,
        tool_use_id: &str,
        decision: Decision,
    ) -> Result<(), AppError> {
        let runtime = self.runtime(session_id).await?;
        let InteractionRequest::Approval(approval) = interaction_request(&runtime, tool_use_id).await? else {
            return Err(AppError::BadRequest {
                detail: format!("{tool_use_id} is a question, not a permission request: answer it or skip it"),
            });
        };
        let outcome = match decision {
            Decision::Allow { always: Some(index) } if index >= approval.suggestions.len() => {
                return Err(AppError::BadRequest { detail: format!("there is no suggestion {index} to always allow") });
            }
            Decision::Allow { always } => InteractionOutcome::Allowed { always },
            Decision::Deny { message } => {
                let message = message.map(|m| m.trim().to_string()).filter(|m| !m.is_empty());
                if message.as_ref().is_some_and(|m| m.chars().count() > MAX_DENIAL_CHARS) {
                    return Err(AppError::BadRequest { detail: "the message is too long".into() });
                }
                InteractionOutcome::Denied { message }
            }
        };
        self.resolve(&runtime, tool_use_id, outcome).await
    }

    /// Switches the session's permission mode: recorded for the next start, and sent to the
    /// agent now if it runs.
    pub async fn set_permission_mode(&self, session_id: &str, mode: PermissionMode) -> Result<(), AppError> {
        check_mode(mode)?;
        let runtime = self.runtime(session_id).await?;
        // The agent may refuse (bypass not allowed here); a running one switches now.
        self.agent.set_permission_mode(session_id, mode).await.map_err(|detail| AppError::BadRequest { detail })?;
        let mut state = runtime.state.lock().await;
        if state.thread.turn.permission_mode != Some(mode) {
            runtime
                .append_locked(&self.store, &mut state, EventBody::PermissionModeChanged { mode })
                .await?;
        }
        info!(session = %session_id, %mode, "permission mode set");
        Ok(())
    }

    /// Skips a pending question; the agent is told that the person declined to answer.
    pub async fn decline_question(
        &self,
        session_id: &str,
        tool_use_id: &str,
        reason: Option<String>,
    ) -> Result<(), AppError> {
        let reason = reason.map(|r| r.trim().to_string()).filter(|r| !r.is_empty());
        if reason.as_ref().is_some_and(|r| r.chars().count() > MAX_ANSWER_CHARS) {
            return Err(AppError::BadRequest {
                detail: format!("the reason is longer than {MAX_ANSWER_CHARS} characters"),
            });
        }
        let runtime = self.runtime(session_id).await?;
        if let InteractionRequest::Approval(_) = interaction_request(&runtime, tool_use_id).await? {
            return Err(not_a_question(tool_use_id));
        }
        self.resolve(&runtime, tool_use_id, InteractionOutcome::Declined { reason }).await
    }

    /// Ends an interaction with `outcome`, if it is still open. Runs under the session's lock:
    /// of two resolutions at once, the one that takes the lock first wins.
    async fn resolve(
        &self,
        runtime: &SessionRuntime,
        tool_use_id: &str,
        outcome: InteractionOutcome,
    ) -> Result<(), AppError> {
        let mut state = runtime.state.lock().await;
        let existing = state
            .thread
            .tool_call(tool_use_id)
            .and_then(|call| call.interaction.as_ref())
            .ok_or_else(|| AppError::InteractionNotFound { tool_use_id: tool_use_id.to_string() })?
            .outcome
            .clone();
        match existing {
            None => {}
            Some(existing) if existing == outcome => return Ok(()),
            Some(
                InteractionOutcome::Answered { .. }
                | InteractionOutcome::Allowed { .. }
                | InteractionOutcome::Denied { .. },
            ) => {
                return Err(AppError::AlreadyAnswered);
            }
            Some(other) => return Err(AppError::NotWaiting { detail: other.why_closed() }),
        }
        let session_id = runtime.id.clone();
        if !self.bridge.is_waiting(&session_id, tool_use_id) {
            // The agent is gone: the interaction ends here, and the answer is not taken.
            let reason = "the agent is no longer running".to_string();
            runtime
                .append_locked(
                    &self.store,
                    &mut state,
                    EventBody::InteractionResolved {
                        tool_use_id: tool_use_id.to_string(),
                        outcome: InteractionOutcome::Cancelled { reason: reason.clone() },
                    },
                )
                .await?;
            drop(state);
            self.list_changed();
            return Err(AppError::NotWaiting { detail: reason });
        }
        runtime
            .append_locked(
                &self.store,
                &mut state,
                EventBody::InteractionResolved { tool_use_id: tool_use_id.to_string(), outcome: outcome.clone() },
            )
            .await?;
        if let InteractionOutcome::Answered { answers } = &outcome {
            self.bridge.store_answer(&session_id, tool_use_id, answers.clone());
        }
        info!(session = %session_id, tool_use_id, outcome = outcome.name(), "interaction resolved");
        self.bridge.deliver(&session_id, tool_use_id, outcome);
        drop(state);
        self.list_changed();
        Ok(())
    }

    async fn run_turn(self: Arc<Self>, runtime: Arc<SessionRuntime>, request: TurnRequest) {
        let cancel = request.cancel.clone();
        let sink = TurnSink { manager: self.clone(), runtime: runtime.clone() };
        let turn = AssertUnwindSafe(self.agent.run_turn(request, &sink)).catch_unwind();
        let grace_over = async {
            cancel.cancelled().await;
            tokio::time::sleep(INTERRUPT_GRACE).await;
        };
        let result = tokio::select! {
            result = turn => result.unwrap_or_else(|_| Err(AgentError::Failed("the agent crashed".into()))),
            () = grace_over => Err(AgentError::Interrupted),
        };
        let (outcome, usage) = match result {
            Ok(usage) => (TurnOutcome::Completed, usage),
            Err(AgentError::SessionGone) => return,
            Err(_) if self.shutdown.is_cancelled() => (TurnOutcome::Abandoned, None),
            Err(AgentError::Interrupted) => (TurnOutcome::Interrupted, None),
            Err(_) if cancel.is_cancelled() => (TurnOutcome::Interrupted, None),
            Err(AgentError::Failed(error)) => {
                warn!(%error, "the agent failed");
                (TurnOutcome::Failed { error }, None)
            }
        };
        info!(?outcome, "turn ended");
        let mut state = runtime.state.lock().await;
        state.turn = None;
        if let Err(error) =
            runtime.append_locked(&self.store, &mut state, EventBody::TurnEnded { outcome, usage }).await
        {
            // The session was deleted meanwhile, or the disk failed: the restart recovery ends it.
            warn!(%error, "could not record the end of the turn");
        }
        drop(state);
        self.bridge.forget_session(runtime.id());
        self.list_changed();
    }
}

/// A person may put a session in the modes the UI offers, not Claude Code's others.
fn check_mode(mode: PermissionMode) -> Result<(), AppError> {
    if mode.is_choosable() {
        Ok(())
    } else {
        Err(AppError::BadRequest { detail: format!("a session cannot be switched to the {mode} mode here") })
    }
}

/// What interaction `tool_use_id` asks for.
async fn interaction_request(runtime: &SessionRuntime, tool_use_id: &str) -> Result<InteractionRequest, AppError> {
    let state = runtime.state.lock().await;
    state
        .thread
        .tool_call(tool_use_id)
        .and_then(|call| call.interaction.as_ref())
        .map(|interaction| interaction.request.clone())
        .ok_or_else(|| AppError::InteractionNotFound { tool_use_id: tool_use_id.to_string() })
}

fn not_a_question(tool_use_id: &str) -> AppError {
    AppError::BadRequest {
        detail: format!("{tool_use_id} is a permission request, not a question: allow it or deny it"),
    }
}


impl SessionRuntime {
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Receives every event appended from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<SessionEvent>> {
        self.events.subscribe()
    }

    async fn append(&self, store: &Store, body: EventBody) -> StoreResult<SessionEvent> {
        let mut state = self.state.lock().await;
        self.append_locked(store, &mut state, body).await
    }

    /// Numbers, applies, stores and then broadcasts one event. The lock on `state` is what keeps
    /// sequence numbers gap-free and in the order the tabs see them.
    async fn append_locked(
        &self,
        store: &Store,
        state: &mut RuntimeState,
        body: EventBody,
    ) -> StoreResult<SessionEvent> {
        let event = SessionEvent { seq: state.thread.seq + 1, at_ms: now_ms(), body };
        let change = state.thread.apply(&event);
        if let Err(error) = store.append(Append::of(&self.id, &event, &state.thread, &change)).await {
            // Memory ran ahead of the disk: go back to what is stored.
            if let Ok(thread) = store.load_thread(&self.id).await {
                state.thread = thread;
            }
            return Err(error);
        }
        let _ = self.events.send(Arc::new(event.clone()));
        Ok(event)
    }
}

/// How a backend reports its turn: each call is stored and broadcast before it returns. Clones
/// report to the same turn (for work a backend runs in tasks of its own, such as questions).
#[derive(Clone)]
pub struct TurnSink {
    manager: Arc<SessionManager>,
    runtime: Arc<SessionRuntime>,
}

impl TurnSink {
    async fn emit(&self, body: EventBody) -> Result<(), AgentError> {
        match self.runtime.append(&self.manager.store, body).await {
            Ok(_) => Ok(()),
            Err(StoreError::SessionNotFound(_)) => Err(AgentError::SessionGone),
            Err(error) => Err(AgentError::Failed(format!("could not store the agent's output: {error}"))),
        }
    }

    pub fn session_id(&self) -> &str {
        &self.runtime.id
    }

    /// Starts an assistant message and returns its id.
    pub async fn start_message(&self) -> Result<String, AgentError> {
        let message_id = new_id();
        self.emit(EventBody::AssistantMessageStarted { message_id: message_id.clone() }).await?;
        Ok(message_id)
    }

    pub async fn text(&self, message_id: &str, text: &str) -> Result<(), AgentError> {
        self.emit(EventBody::TextDelta { message_id: message_id.to_string(), text: text.to_string() }).await
    }

    pub async fn tool_call_started(&self, message_id: &str, tool_use_id: &str, name: &str) -> Result<(), AgentError> {
        self.emit(EventBody::ToolCallStarted {
            message_id: message_id.to_string(),
            tool_use_id: tool_use_id.to_string(),
            name: name.to_string(),
        })
        .await
    }

    pub async fn tool_input_delta(&self, tool_use_id: &str, partial_json: &str) -> Result<(), AgentError> {
        self.emit(EventBody::ToolInputDelta {
            tool_use_id: tool_use_id.to_string(),
            partial_json: partial_json.to_string(),
        })
        .await
    }

    pub async fn tool_call_ready(&self, tool_use_id: &str, input: Value) -> Result<(), AgentError> {
        self.emit(EventBody::ToolCallReady { tool_use_id: tool_use_id.to_string(), input }).await
    }

    pub async fn tool_result(&self, tool_use_id: &str, output: &str, is_error: bool) -> Result<(), AgentError> {
        self.emit(EventBody::ToolResult { tool_use_id: tool_use_id.to_string(), output: output.to_string(), is_error })
            .await
    }

    pub async fn finish_message(&self, message_id: &str) -> Result<(), AgentError> {
        self.emit(EventBody::MessageFinished { message_id: message_id.to_string() }).await
    }

    /// Puts the question in tool call `tool_use_id` to the person and waits for the outcome: an
    /// answer, a decline, an expiry (with `--question-timeout`), or `Failed` at once when the
    /// arguments cannot be understood. Stopping the turn stops the wait.
    pub async fn ask(
        &self,
        tool_use_id: &str,
        tool_name: &str,
        input: &Value,
        cancel: &CancellationToken,
    ) -> Result<InteractionOutcome, AgentError> {
        let session = self.session_id().to_string();
        let questions = match normalize_question_args(tool_name, input) {
            Ok(questions) => questions,
            Err(error) => {
                let error = error.to_string();
                warn!(session, tool_use_id, %error, "the agent's question could not be read");
                self.emit(EventBody::InteractionOpened {
                    tool_use_id: tool_use_id.to_string(),
                    request: InteractionRequest::Unreadable { error: error.clone() },
                })
                .await?;
                let outcome = InteractionOutcome::Failed { error };
                self.emit(EventBody::InteractionResolved {
                    tool_use_id: tool_use_id.to_string(),
                    outcome: outcome.clone(),
                })
                .await?;
                return Ok(outcome);
            }
        };
        let timeout = self.manager.timeouts.question;
        self.wait_for_person(tool_use_id, InteractionRequest::Question { questions }, timeout, cancel).await
    }

    /// Asks the person's permission for tool call `tool_use_id` and waits for the decision
    /// (`Allowed`, `Denied`, `Expired` with `--approval-timeout`). Stopping the turn stops the wait.
    pub async fn ask_approval(
        &self,
        tool_use_id: &str,
        approval: Approval,
        cancel: &CancellationToken,
    ) -> Result<InteractionOutcome, AgentError> {
        let timeout = self.manager.timeouts.approval;
        self.wait_for_person(tool_use_id, InteractionRequest::Approval(approval), timeout, cancel).await
    }

    /// Opens an interaction and waits for its outcome, or for `timeout`, or for Stop.
    async fn wait_for_person(
        &self,
        tool_use_id: &str,
        request: InteractionRequest,
        timeout: Option<Duration>,
        cancel: &CancellationToken,
    ) -> Result<InteractionOutcome, AgentError> {
        let session = self.session_id().to_string();
        let bridge = &self.manager.bridge;
        let answered = bridge.register(&session, tool_use_id);
        let opened = self.emit(EventBody::InteractionOpened { tool_use_id: tool_use_id.to_string(), request }).await;
        if let Err(error) = opened {
            bridge.forget(&session, tool_use_id);
            return Err(error);
        }
        self.manager.list_changed();
        info!(session, tool_use_id, "waiting for the person");

        let expired = async {
            match timeout {
                Some(timeout) => tokio::time::sleep(timeout).await,
                None => std::future::pending().await,
            }
        };
        let mut answered = answered;
        tokio::select! {
            outcome = &mut answered => return outcome.map_err(|_| AgentError::Interrupted),
            () = cancel.cancelled() => {
                bridge.forget(&session, tool_use_id);
                return Err(AgentError::Interrupted);
            }
            () = expired => {}
        }
        // Time is up, unless an answer got there first: then that answer is the outcome.
        match self.manager.resolve(&self.runtime, tool_use_id, InteractionOutcome::Expired).await {
            Ok(()) | Err(AppError::AlreadyAnswered) | Err(AppError::NotWaiting { .. }) => {}
            Err(error) => warn!(session, tool_use_id, %error, "could not record the expiry"),
        }
        answered.await.map_err(|_| AgentError::Interrupted)
    }

    /// The agent's process is up; `agent_session` is its id for the conversation.
    pub async fn agent_started(&self, info: &str, agent_session: Option<String>) -> Result<(), AgentError> {
        self.emit(EventBody::AgentStarted { info: info.to_string(), agent_session }).await
    }

    /// The agent withdrew its question (it was interrupted or gave up waiting): the card turns
    /// cancelled, and a late answer is refused.
    pub async fn withdraw_question(&self, tool_use_id: &str, reason: &str) {
        let outcome = InteractionOutcome::Cancelled { reason: reason.to_string() };
        match self.manager.resolve(&self.runtime, tool_use_id, outcome).await {
            Ok(()) | Err(AppError::NotWaiting { .. } | AppError::AlreadyAnswered) => {}
            Err(error) => warn!(tool_use_id, %error, "could not withdraw the question"),
        }
    }

    /// The person's answer to `tool_use_id`, once, for an agent that fills in the question's
    /// result by itself (the override step).
    pub fn take_answer(&self, tool_use_id: &str) -> Option<Vec<QuestionAnswer>> {
        self.manager.bridge.take_answer(self.session_id(), tool_use_id)
    }

    /// The arguments of tool call `tool_use_id` as the agent wrote them, once complete.
    pub async fn tool_input(&self, tool_use_id: &str) -> Option<serde_json::Value> {
        self.runtime.state.lock().await.thread.tool_call(tool_use_id).and_then(|call| call.input.clone())
    }

    /// The session's permission mode now (`None`: the agent's default).
    pub async fn current_permission_mode(&self) -> Option<PermissionMode> {
        self.runtime.state.lock().await.thread.turn.permission_mode
    }

    /// The agent reports its permission mode (it changed it, or the person did).
    pub async fn permission_mode(&self, mode: PermissionMode) -> Result<(), AgentError> {
        let known = self.runtime.state.lock().await.thread.turn.permission_mode;
        if known == Some(mode) {
            return Ok(());
        }
        self.emit(EventBody::PermissionModeChanged { mode }).await
    }

    /// Something the product says in the thread, outside the agent's own messages.
    pub async fn notice(&self, text: &str) -> Result<(), AgentError> {
        self.emit(EventBody::Notice { message_id: new_id(), text: text.to_string() }).await
    }
}


/// A title from the first message: its first line, cut at a word near 60 characters.
fn title_from_message(text: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::scripted::{Scenario, ScriptedAgent};
    use crate::thread::{Block, ToolStatus};

    fn quick_scenario() -> Scenario {
        Scenario::parse(
            r#"
pace = 1000
[[turn]]
when = ["slow"]
[[turn.step]]
say = "starting"
[[turn.step]]
pause_ms = 60000

[[turn]]
[[turn.step]]
say = "You said {{message}}"
[[turn.step]]
tool = "Bash"
input = { command = "ls" }
output = "a"
duration_ms = 1
"#,
            "test",
        )
        .unwrap()
    }

    async fn manager() -> Arc<SessionManager> {
        let store = Store::open_in_memory().await.unwrap();
        SessionManager::new(store, Arc::new(ScriptedAgent::new(quick_scenario())))
    }

    async fn wait_idle(manager: &SessionManager, id: &str) -> Thread {
        for _ in 0..500 {
            let (_, thread) = manager.snapshot(id).await.unwrap();
            if !thread.turn.working {
                return thread;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the turn did not end");
    }

    #[tokio::test]
    async fn a_message_gets_a_streamed_reply_that_is_stored() {
        let manager = manager().await;
        let session = manager.create_session(None).await.unwrap();
        manager.send_message(&session.id, "hello".into()).await.unwrap();
        let thread = wait_idle(&manager, &session.id).await;
        assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed));
        let reply = &thread.messages[1];
        assert_eq!(reply.blocks[0], Block::Text { text: "You said hello".into() });
        let Block::ToolCall(call) = &reply.blocks[1] else { panic!() };
        assert_eq!(call.status, ToolStatus::Done);
        assert_eq!(manager.store().load_thread(&session.id).await.unwrap(), thread);
        assert_eq!(manager.store().session(&session.id).await.unwrap().title, "hello");
    }

    #[tokio::test]
    async fn a_second_message_during_a_turn_is_refused_and_loses_nothing() {
        let manager = manager().await;
        let session = manager.create_session(None).await.unwrap();
        manager.send_message(&session.id, "slow".into()).await.unwrap();
        let refused = manager.send_message(&session.id, "again".into()).await;
        assert_eq!(refused, Err(AppError::AgentBusy));
        manager.interrupt(&session.id).await.unwrap();
        let thread = wait_idle(&manager, &session.id).await;
        assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Interrupted));
        assert_eq!(thread.messages.iter().filter(|m| m.role == Role::User).count(), 1);
    }

    #[tokio::test]
    async fn a_session_folder_must_exist_on_the_server() {
        let manager = manager().await;
        for bad in ["relative/path", "/nonexistent/folder"] {
            let error = manager.create_session(Some(bad)).await.unwrap_err();
            assert!(matches!(error, AppError::BadRequest { .. }), "{bad}: {error:?}");
        }
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().display().to_string();
        let session = manager.create_session(Some(&folder)).await.unwrap();
        assert_eq!(manager.store().session(&session.id).await.unwrap().workdir, Some(folder));
        assert_eq!(manager.create_session(Some("  ")).await.unwrap().workdir, None);
    }

    #[tokio::test]
    async fn unknown_sessions_are_not_found() {
        let manager = manager().await;
        let error = manager.send_message("nope", "hi".into()).await.unwrap_err();
        assert_eq!(error, AppError::SessionNotFound { id: "nope".into() });
        assert!(matches!(manager.snapshot("nope").await, Err(AppError::SessionNotFound { .. })));
        assert!(matches!(manager.interrupt("nope").await, Err(AppError::SessionNotFound { .. })));
    }

    #[tokio::test]
    async fn deleting_a_working_session_stops_its_turn() {
        let manager = manager().await;
        let session = manager.create_session(None).await.unwrap();
        manager.send_message(&session.id, "slow".into()).await.unwrap();
        manager.delete_session(&session.id).await.unwrap();
        manager.turns.close();
        tokio::time::timeout(Duration::from_secs(10), manager.turns.wait()).await.unwrap();
        assert!(manager.list_sessions().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_restart_ends_the_turn_it_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        // The first server runs on its own runtime, dropped mid-turn: as if the process died.
        let crashed_path = path.clone();
        let id = std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            runtime.block_on(async {
                let manager = SessionManager::new(
                    Store::open(&crashed_path).await.unwrap(),
                    Arc::new(ScriptedAgent::new(quick_scenario())),
                );
                let session = manager.create_session(None).await.unwrap();
                manager.send_message(&session.id, "slow".into()).await.unwrap();
                // Wait until the agent is in its long pause, mid-turn.
                loop {
                    let (_, thread) = manager.snapshot(&session.id).await.unwrap();
                    if thread.messages.last().is_some_and(|m| m.text() == "starting") {
                        break session.id;
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            })
        })
        .join()
        .unwrap();

        let manager =
            SessionManager::new(Store::open(&path).await.unwrap(), Arc::new(ScriptedAgent::new(quick_scenario())));
        manager.recover_unfinished_turns().await.unwrap();
        let (summary, thread) = manager.snapshot(&id).await.unwrap();
        assert!(!summary.working);
        assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Abandoned));
        assert_eq!(thread.messages.last().unwrap().role, Role::Notice);
        assert!(!thread.messages[1].streaming, "the cut-short reply no longer streams");
    }

    const ASKING: &str = r#"
pace = 1000
[[turn]]
[[turn.step]]
ask = "AskUserQuestion"
input = { questions = [{ question = "Which auth?", header = "Auth", options = [{ label = "JWT", description = "t" }, { label = "Sessions", description = "s" }] }] }
[[turn.step]]
say = "got {{answer}}"
"#;

    async fn asking_manager(timeout: Option<Duration>) -> (Arc<SessionManager>, String) {
        let scenario = Scenario::parse(ASKING, "test").unwrap();
        let manager = SessionManager::with_timeouts(
            Store::open_in_memory().await.unwrap(),
            Arc::new(ScriptedAgent::new(scenario)),
            Timeouts { question: timeout, approval: timeout },
        );
        let session = manager.create_session(None).await.unwrap();
        manager.send_message(&session.id, "go".into()).await.unwrap();
        (manager, session.id)
    }

    /// Waits for the pending question and returns its tool_use id.
    async fn pending_question(manager: &SessionManager, id: &str) -> String {
        for _ in 0..500 {
            let (summary, thread) = manager.snapshot(id).await.unwrap();
            if thread.is_waiting() {
                assert!(summary.waiting, "the session list says it waits");
                let call = thread
                    .messages
                    .iter()
                    .flat_map(|m| m.blocks.iter())
                    .find_map(|b| match b {
                        Block::ToolCall(call) if call.interaction.as_ref().is_some_and(|i| i.is_pending()) => {
                            Some(call)
                        }
                        _ => None,
                    })
                    .unwrap();
                return call.id.clone();
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("no question appeared");
    }

    fn jwt() -> Vec<QuestionAnswer> {
        vec![QuestionAnswer { question: "Which auth?".into(), labels: vec!["JWT".into()], ..Default::default() }]
    }

    fn sessions() -> Vec<QuestionAnswer> {
        vec![QuestionAnswer { question: "Which auth?".into(), labels: vec!["Sessions".into()], ..Default::default() }]
    }

    /// What the scripted agent recorded as having received: the question tool's result.
    fn received(thread: &Thread, tool_use_id: &str) -> InteractionOutcome {
        serde_json::from_str(thread.tool_call(tool_use_id).unwrap().result.as_deref().unwrap()).unwrap()
    }

    #[tokio::test]
    async fn the_agent_receives_exactly_the_answer_given() {
        let (manager, id) = asking_manager(None).await;
        let question = pending_question(&manager, &id).await;
        manager.answer_question(&id, &question, jwt()).await.unwrap();
        let thread = wait_idle(&manager, &id).await;
        assert_eq!(received(&thread, &question), InteractionOutcome::Answered { answers: jwt() });
        assert!(thread.messages[1].text().ends_with("got \"Which auth?\"=\"JWT\""));
        assert!(!manager.store().session(&id).await.unwrap().waiting);
        assert_eq!(manager.bridge().take_answer(&id, &question), None, "forgotten with the turn");
    }

    #[tokio::test]
    async fn the_first_answer_wins_the_same_again_is_accepted_and_another_is_refused() {
        let (manager, id) = asking_manager(None).await;
        let question = pending_question(&manager, &id).await;
        // Many at once: exactly one answer is taken, and the others learn which.
        let attempts: Vec<_> = (0..12)
            .map(|i| {
                let manager = manager.clone();
                let (id, question) = (id.clone(), question.clone());
                tokio::spawn(async move {
                    let answer = if i % 2 == 0 { jwt() } else { sessions() };
                    (answer.clone(), manager.answer_question(&id, &question, answer).await)
                })
            })
            .collect();
        let mut results = Vec::new();
        for attempt in attempts {
            results.push(attempt.await.unwrap());
        }
        let thread = wait_idle(&manager, &id).await;
        let InteractionOutcome::Answered { answers: winner } = received(&thread, &question) else { panic!() };
        for (answer, result) in results {
            if answer == winner {
                assert_eq!(result, Ok(()), "the same answer is accepted");
            } else {
                assert_eq!(result, Err(AppError::AlreadyAnswered));
            }
        }
        let stored = manager.store().load_thread(&id).await.unwrap();
        let outcome = stored.tool_call(&question).unwrap().interaction.as_ref().unwrap().outcome.clone();
        assert_eq!(outcome, Some(InteractionOutcome::Answered { answers: winner }));
    }

    #[tokio::test]
    async fn a_declined_question_tells_the_agent_so() {
        let (manager, id) = asking_manager(None).await;
        let question = pending_question(&manager, &id).await;
        manager.decline_question(&id, &question, Some("  later ".into())).await.unwrap();
        let thread = wait_idle(&manager, &id).await;
        assert_eq!(received(&thread, &question), InteractionOutcome::Declined { reason: Some("later".into()) });
        assert_eq!(
            manager.answer_question(&id, &question, jwt()).await,
            Err(AppError::NotWaiting { detail: "it was skipped".into() })
        );
    }

    #[tokio::test]
    async fn an_unanswered_question_expires_and_the_agent_is_told() {
        let (manager, id) = asking_manager(Some(Duration::from_millis(50))).await;
        let question = pending_question(&manager, &id).await;
        let thread = wait_idle(&manager, &id).await;
        assert_eq!(received(&thread, &question), InteractionOutcome::Expired);
        assert!(thread.messages[1].text().contains("nobody answered in time"));
        assert!(matches!(manager.answer_question(&id, &question, jwt()).await, Err(AppError::NotWaiting { .. })));
    }

    #[tokio::test]
    async fn stopping_the_turn_cancels_the_question_and_refuses_late_answers() {
        let (manager, id) = asking_manager(None).await;
        let question = pending_question(&manager, &id).await;
        manager.interrupt(&id).await.unwrap();
        let thread = wait_idle(&manager, &id).await;
        let interaction = thread.tool_call(&question).unwrap().interaction.clone().unwrap();
        assert_eq!(interaction.outcome, Some(InteractionOutcome::Cancelled { reason: "the turn was stopped".into() }));
        assert!(!manager.store().session(&id).await.unwrap().waiting);
        let late = manager.answer_question(&id, &question, jwt()).await;
        assert_eq!(late, Err(AppError::NotWaiting { detail: "it was cancelled (the turn was stopped)".into() }));
    }

    #[tokio::test]
    async fn answers_are_checked_against_the_question() {
        let (manager, id) = asking_manager(None).await;
        let question = pending_question(&manager, &id).await;
        let wrong =
            vec![QuestionAnswer { question: "Which auth?".into(), labels: vec!["Magic".into()], ..Default::default() }];
        assert!(matches!(manager.answer_question(&id, &question, wrong).await, Err(AppError::InvalidAnswer { .. })));
        assert_eq!(
            manager.answer_question(&id, "toolu_nope", jwt()).await,
            Err(AppError::InteractionNotFound { tool_use_id: "toolu_nope".into() })
        );
        assert!(matches!(
            manager.answer_question("nope", &question, jwt()).await,
            Err(AppError::SessionNotFound { .. })
        ));
        // Still pending after all that.
        manager.answer_question(&id, &question, jwt()).await.unwrap();
    }

    const APPROVING: &str = r#"
pace = 1000
[[turn]]
when = ["test"]
[[turn.step]]
tool = "Bash"
input = { command = "cargo test", description = "Run the tests" }
output = "test result: ok"
approve = true
reason = "Runs a command"
[[turn.step]]
say = "tests ran"

[[turn]]
[[turn.step]]
tool = "Bash"
input = { command = "rm -rf target" }
output = "removed"
approve = true
[[turn.step]]
ask = "AskUserQuestion"
input = { questions = [{ question = "Which auth?", header = "Auth", options = [{ label = "JWT", description = "t" }, { label = "Sessions", description = "s" }] }] }
"#;

    async fn approving_manager(timeout: Option<Duration>) -> (Arc<SessionManager>, String) {
        let manager = SessionManager::with_timeouts(
            Store::open_in_memory().await.unwrap(),
            Arc::new(ScriptedAgent::new(Scenario::parse(APPROVING, "test").unwrap())),
            Timeouts { question: None, approval: timeout },
        );
        let session = manager.create_session(None).await.unwrap();
        (manager, session.id)
    }

    fn approval_of(thread: &Thread, tool_use_id: &str) -> (Approval, Option<InteractionOutcome>) {
        let interaction = thread.tool_call(tool_use_id).unwrap().interaction.clone().unwrap();
        let InteractionRequest::Approval(approval) = interaction.request else { panic!("not an approval") };
        (approval, interaction.outcome)
    }

    #[tokio::test]
    async fn an_allowed_tool_runs_and_the_next_call_asks_again() {
        let (manager, id) = approving_manager(None).await;
        manager.send_message(&id, "run the test".into()).await.unwrap();
        let call = pending_question(&manager, &id).await;
        let (_, thread) = manager.snapshot(&id).await.unwrap();
        let (approval, _) = approval_of(&thread, &call);
        assert_eq!(approval.tool, "Bash");
        assert_eq!(approval.reason.as_deref(), Some("Runs a command"));
        assert_eq!(approval.shows, crate::approval::Shows::Command { command: "cargo test".into() });
        assert_eq!(approval.suggestions[0].label, "Always allow Bash(cargo test) for this session");
        manager.decide_approval(&id, &call, Decision::Allow { always: None }).await.unwrap();
        let thread = wait_idle(&manager, &id).await;
        let ran = thread.tool_call(&call).unwrap();
        assert_eq!((ran.result.as_deref(), ran.status), (Some("test result: ok"), ToolStatus::Done));
        assert!(thread.messages[1].text().contains("tests ran"));
        assert_eq!(approval_of(&thread, &call).1, Some(InteractionOutcome::Allowed { always: None }));
        // Once is once.
        manager.send_message(&id, "test again".into()).await.unwrap();
        let again = pending_question(&manager, &id).await;
        assert_ne!(again, call);
    }

    #[tokio::test]
    async fn a_denied_tool_does_not_run_and_the_agent_gets_the_message() {
        let (manager, id) = approving_manager(None).await;
        manager.send_message(&id, "run the test".into()).await.unwrap();
        let call = pending_question(&manager, &id).await;
        // Bad decisions are refused and change nothing.
        let bad = manager.decide_approval(&id, &call, Decision::Allow { always: Some(7) }).await;
        assert!(matches!(bad, Err(AppError::BadRequest { .. })), "{bad:?}");
        let long = Some("x".repeat(MAX_DENIAL_CHARS + 1));
        let bad = manager.decide_approval(&id, &call, Decision::Deny { message: long }).await;
        assert!(matches!(bad, Err(AppError::BadRequest { .. })), "{bad:?}");
        let wrong_kind = manager.answer_question(&id, &call, Vec::new()).await;
        assert!(matches!(wrong_kind, Err(AppError::BadRequest { .. })), "{wrong_kind:?}");
        let wrong_kind = manager.decline_question(&id, &call, None).await;
        assert!(matches!(wrong_kind, Err(AppError::BadRequest { .. })), "{wrong_kind:?}");
        assert_eq!(
            manager.decide_approval(&id, "toolu_nope", Decision::Allow { always: None }).await,
            Err(AppError::InteractionNotFound { tool_use_id: "toolu_nope".into() })
        );

        let deny = Decision::Deny { message: Some("  use nextest  ".into()) };
        manager.decide_approval(&id, &call, deny.clone()).await.unwrap();
        manager.decide_approval(&id, &call, deny).await.expect("the same decision again is accepted");
        let thread = wait_idle(&manager, &id).await;
        let denied = thread.tool_call(&call).unwrap();
        assert_eq!((denied.result.as_deref(), denied.status), (Some("The user denied this."), ToolStatus::Failed));
        let text = thread.messages[1].text();
        assert!(text.contains("did not run Bash") && text.contains("“use nextest”"), "{text}");
        assert!(!text.contains("tests ran"), "the turn stops at a denied tool");
        assert_eq!(
            approval_of(&thread, &call).1,
            Some(InteractionOutcome::Denied { message: Some("use nextest".into()) })
        );
        assert_eq!(
            manager.decide_approval(&id, &call, Decision::Allow { always: None }).await,
            Err(AppError::AlreadyAnswered)
        );
    }

    #[tokio::test]
    async fn always_allow_lets_the_same_command_run_without_asking_next_turn() {
        let (manager, id) = approving_manager(None).await;
        manager.send_message(&id, "run the test".into()).await.unwrap();
        let call = pending_question(&manager, &id).await;
        manager.decide_approval(&id, &call, Decision::Allow { always: Some(0) }).await.unwrap();
        wait_idle(&manager, &id).await;
        manager.send_message(&id, "test once more".into()).await.unwrap();
        let thread = wait_idle(&manager, &id).await;
        let last = thread.messages.last().unwrap();
        let Some(Block::ToolCall(second)) = last.blocks.first() else { panic!("{last:?}") };
        assert!(second.interaction.is_none(), "no card the second time");
        assert_eq!(second.result.as_deref(), Some("test result: ok"));
    }

    #[tokio::test]
    async fn bypass_mode_skips_approvals_but_questions_still_ask() {
        let (manager, id) = approving_manager(None).await;
        let bad = manager.set_permission_mode(&id, PermissionMode::Auto).await;
        assert!(matches!(bad, Err(AppError::BadRequest { .. })), "{bad:?}");
        manager.set_permission_mode(&id, PermissionMode::BypassPermissions).await.unwrap();
        manager.send_message(&id, "clean up".into()).await.unwrap();
        let question = pending_question(&manager, &id).await;
        let (_, thread) = manager.snapshot(&id).await.unwrap();
        let Some(Block::ToolCall(bash)) = thread.messages[1].blocks.first() else { panic!() };
        assert!(bash.interaction.is_none() && bash.result.as_deref() == Some("removed"), "{bash:?}");
        assert!(thread.tool_call(&question).unwrap().name == "AskUserQuestion");
        // The mode is part of the session, stored with it.
        let stored = manager.store().load_thread(&id).await.unwrap();
        assert_eq!(stored.turn.permission_mode, Some(PermissionMode::BypassPermissions));
        manager.answer_question(&id, &question, jwt()).await.unwrap();
        wait_idle(&manager, &id).await;
    }

    #[tokio::test]
    async fn an_undecided_approval_expires_and_the_tool_is_denied() {
        let (manager, id) = approving_manager(Some(Duration::from_millis(50))).await;
        manager.send_message(&id, "run the test".into()).await.unwrap();
        let call = pending_question(&manager, &id).await;
        let thread = wait_idle(&manager, &id).await;
        assert_eq!(approval_of(&thread, &call).1, Some(InteractionOutcome::Expired));
        assert!(thread.tool_call(&call).unwrap().result.as_deref().unwrap().contains("in time"));
        assert!(thread.messages[1].text().contains("Nobody answered in time"));
    }

    #[tokio::test]
    async fn a_question_the_agent_garbled_fails_at_once_and_says_why() {
        let scenario = Scenario::parse(
            "pace = 1000\n[[turn]]\n[[turn.step]]\nask = \"AskUserQuestion\"\ninput = { questions = [] }\n[[turn.step]]\nsay = \"{{answer}}\"\n",
            "t",
        )
        .unwrap();
        let manager =
            SessionManager::new(Store::open_in_memory().await.unwrap(), Arc::new(ScriptedAgent::new(scenario)));
        let session = manager.create_session(None).await.unwrap();
        manager.send_message(&session.id, "go".into()).await.unwrap();
        let thread = wait_idle(&manager, &session.id).await;
        let Block::ToolCall(call) = &thread.messages[1].blocks[0] else { panic!() };
        let interaction = call.interaction.as_ref().unwrap();
        assert_eq!(interaction.request, InteractionRequest::Unreadable { error: "`questions` is empty".into() });
        assert_eq!(interaction.outcome, Some(InteractionOutcome::Failed { error: "`questions` is empty".into() }));
        assert!(thread.messages[1].text().contains("could not be read"));
    }

    #[test]
    fn titles_come_from_the_first_line_cut_at_a_word() {
        assert_eq!(title_from_message("\n  Fix the build \nplease"), "Fix the build");
        let long = "word ".repeat(30);
        let title = title_from_message(&long);
        assert!(title.ends_with('…') && title.chars().count() <= 61, "{title}");
    }
}
