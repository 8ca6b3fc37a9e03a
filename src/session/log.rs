//! Each session's event log: the one place where events are numbered, applied to the thread,
//! stored and then broadcast. A session's lock is held from numbering to broadcast, which is what
//! keeps sequence numbers gap-free and in the order every tab sees them. The log is also the
//! bridge's ledger: an interaction is resolved under the same lock, against the thread as stored.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::bridge::{Ledger, Verdict};
use crate::error::AppError;
use crate::ids::now_ms;
use crate::interaction::{Interaction, InteractionOutcome, InteractionRequest};
use crate::store::{Append, Store, StoreResult};
use crate::thread::{EventBody, SessionEvent, SessionSummary, Thread};

/// Live events kept for slow tabs before they must catch up from the store.
const CHANNEL_CAPACITY: usize = 1024;

/// The session list is read again at most this often, however fast it changes. Every tab gets
/// it whole, so with many sessions busy at once this bounds what the tabs cost; the list read
/// after the last change always follows.
const LIST_INTERVAL: Duration = Duration::from_millis(250);

pub struct SessionLog {
    store: Store,
    runtimes: Mutex<HashMap<String, Arc<SessionRuntime>>>,
    list_changes: broadcast::Sender<()>,
    /// The session list as JSON, the same for every tab (`None` until it is first read).
    list: watch::Sender<Option<Arc<str>>>,
}

/// A loaded session: its thread as of its last event, and its live channel.
pub struct SessionRuntime {
    id: String,
    state: tokio::sync::Mutex<RuntimeState>,
    events: broadcast::Sender<Arc<SessionEvent>>,
}

pub(super) struct RuntimeState {
    pub thread: Thread,
    /// Cancels the running turn.
    pub turn: Option<CancellationToken>,
}

impl SessionLog {
    /// The log of the sessions in `store`, and the task that keeps its session list read.
    pub fn new(store: Store) -> Arc<Self> {
        let log = Arc::new(Self {
            store,
            runtimes: Mutex::new(HashMap::new()),
            list_changes: broadcast::channel(64).0,
            list: watch::channel(None).0,
        });
        log.keep_list_read();
        log
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The session list as JSON, now and after each change.
    pub fn watch_list(&self) -> watch::Receiver<Option<Arc<str>>> {
        self.list.subscribe()
    }

    /// Says that the session list changed (a session created, renamed, deleted, started or
    /// finished working, began or stopped waiting for the person).
    pub fn list_changed(&self) {
        let _ = self.list_changes.send(());
    }

    /// Reads the session list after each change, once for every tab that follows it. A read and
    /// an encoding per tab, with 200 tabs open while their sessions changed, took most of the
    /// server's time and database connections (issue 13, `tests/load.rs`: 402 of its 1,000
    /// rounds in two minutes). Ends when the log is dropped.
    fn keep_list_read(self: &Arc<Self>) {
        let log = Arc::downgrade(self);
        // Subscribed before the first read: a change after it is read again.
        let mut changes = self.list_changes.subscribe();
        tokio::spawn(async move {
            loop {
                let Some(this) = log.upgrade() else { return };
                let read = this.store.list_sessions().await.map_err(|error| error.to_string());
                match read.and_then(|list| serde_json::to_string(&list).map_err(|error| error.to_string())) {
                    Ok(json) => {
                        this.list.send_replace(Some(json.into()));
                    }
                    Err(error) => warn!(%error, "could not read the session list"),
                }
                drop(this);
                tokio::time::sleep(LIST_INTERVAL).await;
                match changes.recv().await {
                    Ok(()) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return,
                }
                // Several changes at once (a turn's start and its title) make one read.
                while changes.try_recv().is_ok() {}
            }
        });
    }

    /// The session's runtime, loading the session if needed.
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

    /// Lets go of a deleted session's runtime (its tabs' streams end with it).
    pub(super) fn forget(&self, id: &str) -> Option<Arc<SessionRuntime>> {
        self.runtimes.lock().expect("runtimes lock").remove(id)
    }

    /// The session and its thread, consistent with each other, as of the last event.
    pub async fn snapshot(&self, id: &str) -> Result<(SessionSummary, Thread), AppError> {
        let runtime = self.runtime(id).await?;
        let thread = runtime.state.lock().await.thread.clone();
        let summary = self.store.session(id).await?;
        Ok((summary, thread))
    }
}

impl Ledger for SessionLog {
    fn open<'a>(
        &'a self,
        session: &'a str,
        tool_use_id: &'a str,
        request: InteractionRequest,
    ) -> BoxFuture<'a, Result<Option<InteractionOutcome>, AppError>> {
        Box::pin(async move {
            let runtime = self.runtime(session).await?;
            let mut state = runtime.state.lock().await;
            let existing = state.thread.tool_call(tool_use_id).and_then(|call| call.interaction.as_ref());
            if let Some(decided) = existing.and_then(|interaction| interaction.outcome.clone()) {
                return Ok(Some(decided));
            }
            // New, or asked again by a resumed agent (then it is no longer parked).
            let opened = EventBody::InteractionOpened { tool_use_id: tool_use_id.to_string(), request };
            runtime.append_locked(&self.store, &mut state, opened).await?;
            drop(state);
            self.list_changed();
            Ok(None)
        })
    }

    fn park<'a>(
        &'a self,
        session: &'a str,
        tool_use_id: &'a str,
        parked: &'a (dyn Fn() + Send + Sync),
    ) -> BoxFuture<'a, Result<Option<InteractionOutcome>, AppError>> {
        Box::pin(async move {
            let runtime = self.runtime(session).await?;
            let mut state = runtime.state.lock().await;
            let interaction = interaction_of(&state.thread, tool_use_id)?;
            if let Some(decided) = &interaction.outcome {
                return Ok(Some(decided.clone()));
            }
            let body = EventBody::InteractionParked { tool_use_id: tool_use_id.to_string() };
            runtime.append_locked(&self.store, &mut state, body).await?;
            parked();
            Ok(None)
        })
    }

    fn settle<'a>(
        &'a self,
        session: &'a str,
        tool_use_id: &'a str,
        judge: &'a (dyn Fn(&Interaction) -> Verdict + Send + Sync),
        recorded: &'a (dyn Fn(&InteractionOutcome) + Send + Sync),
    ) -> BoxFuture<'a, Result<Verdict, AppError>> {
        Box::pin(async move {
            let runtime = self.runtime(session).await?;
            let mut state = runtime.state.lock().await;
            let interaction = interaction_of(&state.thread, tool_use_id)?;
            let verdict = judge(interaction);
            if let Some(outcome) = &verdict.record {
                let body =
                    EventBody::InteractionResolved { tool_use_id: tool_use_id.to_string(), outcome: outcome.clone() };
                runtime.append_locked(&self.store, &mut state, body).await?;
                recorded(outcome);
                drop(state);
                self.list_changed();
            }
            Ok(verdict)
        })
    }
}

/// The interaction of tool call `tool_use_id`, or why there is none.
fn interaction_of<'t>(thread: &'t Thread, tool_use_id: &str) -> Result<&'t Interaction, AppError> {
    thread
        .tool_call(tool_use_id)
        .and_then(|call| call.interaction.as_ref())
        .ok_or_else(|| AppError::InteractionNotFound { tool_use_id: tool_use_id.to_string() })
}

impl SessionRuntime {
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Receives every event appended from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<SessionEvent>> {
        self.events.subscribe()
    }

    pub(super) async fn lock(&self) -> tokio::sync::MutexGuard<'_, RuntimeState> {
        self.state.lock().await
    }

    pub(super) async fn append(&self, store: &Store, body: EventBody) -> StoreResult<SessionEvent> {
        let mut state = self.state.lock().await;
        self.append_locked(store, &mut state, body).await
    }

    /// Numbers, applies, stores and then broadcasts one event, under the lock the caller holds.
    pub(super) async fn append_locked(
        &self,
        store: &Store,
        state: &mut RuntimeState,
        body: EventBody,
    ) -> StoreResult<SessionEvent> {
        let event = SessionEvent { seq: state.thread.seq + 1, at_ms: now_ms(), body };
        let change = state.thread.apply(&event);
        if let Err(error) = store.append(Append::of(&self.id, &event, &state.thread, &change)).await {
            // Memory ran ahead of the disk: go back to what is stored — but for whether a turn
            // runs, which only this process knows (a turn whose end could not be stored is over).
            if let Ok(mut thread) = store.load_thread(&self.id).await {
                thread.turn.working = state.turn.is_some();
                state.thread = thread;
            }
            return Err(error);
        }
        let _ = self.events.send(Arc::new(event.clone()));
        Ok(event)
    }
}
