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
use crate::error::{AppError, validate_message, validate_title};
use crate::store::{Append, Store, StoreError, StoreResult};
use crate::thread::{EventBody, Role, SessionEvent, SessionSummary, Thread, TurnOutcome};

/// How long a backend may take to wind down after Stop before its turn is ended for it.
const INTERRUPT_GRACE: Duration = Duration::from_secs(5);
/// Live events kept for slow tabs before they must catch up from the store.
const CHANNEL_CAPACITY: usize = 1024;

pub struct SessionManager {
    store: Store,
    agent: Arc<dyn AgentBackend>,
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
        Arc::new(Self {
            store,
            agent,
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

    pub async fn create_session(&self) -> Result<SessionSummary, AppError> {
        let now = now_ms();
        let summary = SessionSummary {
            id: new_id(),
            title: "New session".to_string(),
            agent: self.agent.name().to_string(),
            created_at_ms: now,
            updated_at_ms: now,
            working: false,
        };
        self.store.create_session(&summary).await?;
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

        let request = TurnRequest { session_id: session_id.to_string(), text, history, cancel };
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

    async fn run_turn(self: Arc<Self>, runtime: Arc<SessionRuntime>, request: TurnRequest) {
        let cancel = request.cancel.clone();
        let sink = TurnSink { runtime: runtime.clone(), store: self.store.clone() };
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
        self.list_changed();
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

/// How a backend reports its turn: each call is stored and broadcast before it returns.
pub struct TurnSink {
    runtime: Arc<SessionRuntime>,
    store: Store,
}

impl TurnSink {
    async fn emit(&self, body: EventBody) -> Result<(), AgentError> {
        match self.runtime.append(&self.store, body).await {
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

    /// Something the product says in the thread, outside the agent's own messages.
    pub async fn notice(&self, text: &str) -> Result<(), AgentError> {
        self.emit(EventBody::Notice { message_id: new_id(), text: text.to_string() }).await
    }
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_millis() as i64)
        .unwrap_or_default()
}

/// Time-ordered ids: sessions and messages sort by creation in the database and in logs.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().simple().to_string()
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
        let session = manager.create_session().await.unwrap();
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
        let session = manager.create_session().await.unwrap();
        manager.send_message(&session.id, "slow".into()).await.unwrap();
        let refused = manager.send_message(&session.id, "again".into()).await;
        assert_eq!(refused, Err(AppError::AgentBusy));
        manager.interrupt(&session.id).await.unwrap();
        let thread = wait_idle(&manager, &session.id).await;
        assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Interrupted));
        assert_eq!(thread.messages.iter().filter(|m| m.role == Role::User).count(), 1);
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
        let session = manager.create_session().await.unwrap();
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
                let session = manager.create_session().await.unwrap();
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

    #[test]
    fn titles_come_from_the_first_line_cut_at_a_word() {
        assert_eq!(title_from_message("\n  Fix the build \nplease"), "Fix the build");
        let long = "word ".repeat(30);
        let title = title_from_message(&long);
        assert!(title.ends_with('…') && title.chars().count() <= 61, "{title}");
    }
}
