//! Each session's event log: the one place where events are numbered, applied to the thread,
//! stored and then broadcast. A session's lock is held from numbering to broadcast, which is what
//! keeps sequence numbers gap-free and in the order every tab sees them. The log is also the
//! bridge's ledger: an interaction is resolved under the same lock, against the thread as stored.
//!
//! Several servers may share one store (Postgres). Then the store's compare-and-set on a session's
//! last sequence number is what orders its events: an append that finds the log moved on takes the
//! other servers' events (applied and broadcast to this server's tabs, as every event is) and is
//! judged again. The store's notifications say when to catch up; they are a hint, the sequence
//! numbers in the store are the truth. What this server caught up with goes to the manager too
//! ([`SessionLog::remote_events`]): an answer given elsewhere reaches the agent waiting here.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::{broadcast, mpsc, watch};
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::leases::Leases;
use super::stream::{MAX_QUEUED, STREAM_INTERVAL, Stream};
use crate::bridge::{Deadlines, Elsewhere, Ledger, Verdict};
use crate::error::AppError;
use crate::ids::now_ms;
use crate::interaction::{Interaction, InteractionOutcome, InteractionRequest};
use crate::store::{Append, Store, StoreError, StoreResult};
use crate::thread::{EventBody, SessionEvent, SessionSummary, Thread};

/// Live events kept for slow tabs before they must catch up from the store (which a tab that
/// lags does, `live::hub`). The channel's slots are allocated with it, for every loaded session,
/// waiting or not: 1,024 of them were most of the 55 KiB a waiting session cost (issue 12,
/// `make bench-parked`); a tab that falls 64 events behind reads them from the store instead.
const CHANNEL_CAPACITY: usize = 64;

/// How many sessions stay loaded (thread in memory) unless `--max-loaded-sessions` says
/// otherwise. An idle loaded session costs a few KiB to some hundreds (its thread); 1,000 of
/// them stay well within a small machine's memory, and a page that opens an evicted one reads
/// it from the store in a few milliseconds.
pub const DEFAULT_MAX_LOADED: usize = 1_000;

/// The session list is read again at most this often, however fast it changes. Every tab gets
/// it whole, so with many sessions busy at once this bounds what the tabs cost; the list read
/// after the last change always follows.
const LIST_INTERVAL: Duration = Duration::from_millis(250);
pub use crate::thread::LIST_FIRST_PAGE;

/// How many times an event is tried again after other servers appended first. Each try follows
/// the events it found, so only a session written to by that many servers at once runs out.
const ATTEMPTS: usize = 32;

/// What a compare-and-set's judge decided, having read the thread. It lives for one attempt:
/// boxing the event to make the two variants the same size would cost an allocation per append.
#[allow(clippy::large_enum_variant)]
pub(super) enum Judged<T> {
    /// Append this event; once it is stored, the caller gets `T`.
    Append(EventBody, T),
    /// Append nothing: the caller gets `T` at once.
    Done(T),
}

/// An event another server appended, as this one caught up with it: (session, event).
pub type RemoteEvent = (String, Arc<SessionEvent>);

/// Told of every event a session's log takes, this server's and those caught up from others,
/// once stored, under the session's lock: it must return at once (the notifier hands its work
/// to a task of its own). Set once, by the server (`SessionManager::observe_events`).
pub type EventObserver = Arc<dyn Fn(&str, &SessionEvent) + Send + Sync>;

pub struct SessionLog {
    store: Store,
    /// The leases this server holds on sessions.
    leases: Leases,
    runtimes: Mutex<HashMap<String, Arc<SessionRuntime>>>,
    /// The most sessions kept loaded; past it, the least recently used idle ones are let go.
    max_loaded: AtomicUsize,
    /// Counts every time a session is asked for (milliseconds would tie in a busy moment).
    uses: AtomicU64,
    remote: mpsc::UnboundedSender<RemoteEvent>,
    remote_events: Mutex<Option<mpsc::UnboundedReceiver<RemoteEvent>>>,
    list_changes: broadcast::Sender<()>,
    /// The session list as JSON, the same for every tab (`None` until it is first read).
    list: watch::Sender<Option<Arc<str>>>,
    observer: Arc<OnceLock<EventObserver>>,
}

/// A loaded session: its thread as of its last event, and its live channel.
pub struct SessionRuntime {
    id: String,
    state: tokio::sync::Mutex<RuntimeState>,
    events: broadcast::Sender<Arc<SessionEvent>>,
    /// The last event applied, readable without the lock: a notification of an event this
    /// runtime has is ignored without waiting for it.
    seq: AtomicU64,
    /// When it was last asked for, on the log's use clock: the least recently used idle session
    /// is evicted first.
    used_at: AtomicU64,
    remote: mpsc::UnboundedSender<RemoteEvent>,
    observer: Arc<OnceLock<EventObserver>>,
    /// What the agent streamed and is not stored yet (group commit, `stream`).
    stream: Mutex<Stream>,
}

pub(super) struct RuntimeState {
    pub thread: Thread,
    /// Cancels the running turn.
    pub turn: Option<CancellationToken>,
    /// The fencing token of the lease the running turn holds (where servers share the store):
    /// the agent's writes carry it.
    pub fence: Option<String>,
    /// Another server took the running turn's lease: its agent stops, and writes nothing more.
    pub lease_lost: bool,
}

impl SessionLog {
    /// The log of the sessions in `store`, whose leases last `lease` unless renewed, and the task
    /// that keeps its session list read.
    pub fn new(store: Store, lease: Duration) -> Arc<Self> {
        let (remote, remote_events) = mpsc::unbounded_channel();
        let log = Arc::new(Self {
            leases: Leases::new(store.clone(), lease),
            store,
            runtimes: Mutex::new(HashMap::new()),
            max_loaded: AtomicUsize::new(DEFAULT_MAX_LOADED),
            uses: AtomicU64::new(0),
            remote,
            remote_events: Mutex::new(Some(remote_events)),
            list_changes: broadcast::channel(64).0,
            list: watch::channel(None).0,
            observer: Arc::default(),
        });
        log.keep_list_read();
        log
    }

    pub(super) fn store(&self) -> &Store {
        &self.store
    }

    /// This server's leases.
    pub(super) fn leases(&self) -> &Leases {
        &self.leases
    }

    /// Sets who is told of every event (see `EventObserver`); a second call is ignored.
    pub fn observe(&self, observer: EventObserver) {
        let _ = self.observer.set(observer);
    }

    /// The events other servers appended, as this server's runtimes take them (once: for the
    /// manager).
    pub(super) fn remote_events(&self) -> Option<mpsc::UnboundedReceiver<RemoteEvent>> {
        self.remote_events.lock().expect("remote events lock").take()
    }

    /// The session's runtime if it is loaded (a session nobody here follows needs no catching up).
    pub(super) fn loaded(&self, id: &str) -> Option<Arc<SessionRuntime>> {
        self.runtimes.lock().expect("runtimes lock").get(id).cloned()
    }

    /// Every loaded runtime: after notifications may have been missed, each catches up.
    pub(super) fn all_loaded(&self) -> Vec<Arc<SessionRuntime>> {
        self.runtimes.lock().expect("runtimes lock").values().cloned().collect()
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

    /// Reads the session list after each change, once for every tab that follows it: its first
    /// page and whatever else works or waits for the person (`Store::list_for_tabs`), not every
    /// session (a page of 10,000 sessions weighed megabytes, sent again at each change). A read and
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
                let read = this.store.list_for_tabs(LIST_FIRST_PAGE).await.map_err(|error| error.to_string());
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
            runtime.used_at.store(self.uses.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
            return Ok(runtime.clone());
        }
        let thread = self.store.load_thread(id).await?;
        let mut runtimes = self.runtimes.lock().expect("runtimes lock");
        // Another request may have loaded it meanwhile: keep the first, it may have moved on.
        let runtime = runtimes
            .entry(id.to_string())
            .or_insert_with(|| {
                Arc::new(SessionRuntime {
                    id: id.to_string(),
                    seq: AtomicU64::new(thread.seq),
                    used_at: AtomicU64::new(self.uses.fetch_add(1, Ordering::Relaxed)),
                    state: tokio::sync::Mutex::new(RuntimeState { thread, turn: None, fence: None, lease_lost: false }),
                    events: broadcast::channel(CHANNEL_CAPACITY).0,
                    remote: self.remote.clone(),
                    observer: self.observer.clone(),
                    stream: Mutex::default(),
                })
            })
            .clone();
        evict_idle(&mut runtimes, self.max_loaded.load(Ordering::Relaxed));
        Ok(runtime)
    }

    /// At most `max` sessions stay loaded (`--max-loaded-sessions`).
    pub fn set_max_loaded(&self, max: usize) {
        self.max_loaded.store(max.max(1), Ordering::Relaxed);
        evict_idle(&mut self.runtimes.lock().expect("runtimes lock"), max.max(1));
    }

    /// How many sessions are loaded now.
    pub fn loaded_count(&self) -> usize {
        self.runtimes.lock().expect("runtimes lock").len()
    }

    /// Lets go of a deleted session's runtime (its tabs' streams end with it).
    pub(super) fn forget(&self, id: &str) -> Option<Arc<SessionRuntime>> {
        self.runtimes.lock().expect("runtimes lock").remove(id)
    }

    /// The session and its thread, consistent with each other, as of the last event.
    pub async fn snapshot(&self, id: &str) -> Result<(SessionSummary, Thread), AppError> {
        let runtime = self.runtime(id).await?;
        let mut state = runtime.state.lock().await;
        if self.store.is_shared() {
            // A notification may be on its way: a page shows what the store holds now.
            runtime.catch_up_locked(&self.store, &mut state).await?;
        }
        let thread = state.thread.clone();
        drop(state);
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
        expires_at_ms: Option<i64>,
    ) -> BoxFuture<'a, Result<Option<InteractionOutcome>, AppError>> {
        Box::pin(async move {
            let runtime = self.runtime(session).await?;
            let mut state = runtime.state.lock().await;
            let decided = runtime
                .append_judged(&self.store, &mut state, |thread| {
                    let existing = thread.tool_call(tool_use_id).and_then(|call| call.interaction.as_ref());
                    Ok::<_, AppError>(match existing.and_then(|interaction| interaction.outcome.clone()) {
                        Some(decided) => Judged::Done(Some(decided)),
                        // New, or asked again by a resumed agent (then it is no longer parked,
                        // and keeps the deadline it had).
                        None => Judged::Append(
                            EventBody::InteractionOpened {
                                tool_use_id: tool_use_id.to_string(),
                                request: request.clone(),
                                expires_at_ms: existing.map_or(expires_at_ms, |open| open.expires_at_ms),
                            },
                            None,
                        ),
                    })
                })
                .await?;
            drop(state);
            if decided.is_none() {
                self.list_changed();
            }
            Ok(decided)
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
            let decided = runtime
                .append_judged(&self.store, &mut state, |thread| {
                    Ok::<_, AppError>(match &interaction_of(thread, tool_use_id)?.outcome {
                        Some(decided) => Judged::Done(Some(decided.clone())),
                        None => {
                            Judged::Append(EventBody::InteractionParked { tool_use_id: tool_use_id.to_string() }, None)
                        }
                    })
                })
                .await?;
            if decided.is_none() {
                // Still under the lock: an answer finds either the waiter or the park.
                parked();
            }
            Ok(decided)
        })
    }

    fn settle<'a>(
        &'a self,
        session: &'a str,
        tool_use_id: &'a str,
        judge: &'a (dyn Fn(&Interaction, Elsewhere) -> Verdict + Send + Sync),
        recorded: &'a (dyn Fn(&InteractionOutcome) + Send + Sync),
    ) -> BoxFuture<'a, Result<Verdict, AppError>> {
        Box::pin(async move {
            let elsewhere = Elsewhere(self.leases.held_elsewhere(session).await?);
            let runtime = self.runtime(session).await?;
            let mut state = runtime.state.lock().await;
            // Judged against the log as this server has it, and written only if the log is still
            // there; else judged again with what came. Across servers, exactly one outcome is
            // recorded.
            let verdict = runtime
                .append_judged(&self.store, &mut state, |thread| {
                    let verdict = judge(interaction_of(thread, tool_use_id)?, elsewhere);
                    Ok::<_, AppError>(match &verdict.record {
                        Some(outcome) => Judged::Append(
                            EventBody::InteractionResolved {
                                tool_use_id: tool_use_id.to_string(),
                                outcome: outcome.clone(),
                            },
                            verdict,
                        ),
                        None => Judged::Done(verdict),
                    })
                })
                .await?;
            if let Some(outcome) = &verdict.record {
                recorded(outcome);
                drop(state);
                self.list_changed();
            }
            Ok(verdict)
        })
    }

    fn deadlines(&self, now_ms: i64, limit: u32) -> BoxFuture<'_, Result<Deadlines, AppError>> {
        Box::pin(async move { Ok(self.store.interaction_deadlines(now_ms, limit).await?) })
    }
}

/// Over `max` loaded sessions: lets go of the least recently used idle ones, down to nine in ten
/// of `max` (so that each session loaded past it does not sort the map again). Idle: nothing but
/// this map holds it (no turn, no task, no request in flight), no tab follows it, and its lock is
/// free. It is read from the store again when next asked for; what it held is all stored.
fn evict_idle(runtimes: &mut HashMap<String, Arc<SessionRuntime>>, max: usize) {
    if runtimes.len() <= max {
        return;
    }
    let mut idle: Vec<(u64, String)> = runtimes
        .iter()
        .filter(|(_, runtime)| {
            Arc::strong_count(runtime) == 1
                && runtime.events.receiver_count() == 0
                && runtime.state.try_lock().is_ok_and(|state| state.turn.is_none())
        })
        .map(|(id, runtime)| (runtime.used_at.load(Ordering::Relaxed), id.clone()))
        .collect();
    idle.sort_unstable();
    let excess = runtimes.len() - (max - max / 10).max(1);
    for (_, id) in idle.into_iter().take(excess) {
        runtimes.remove(&id);
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

    /// The sequence number of the last event this runtime has.
    pub(super) fn seq(&self) -> u64 {
        self.seq.load(Ordering::Acquire)
    }

    pub(super) async fn append(&self, store: &Store, body: EventBody) -> StoreResult<()> {
        let mut state = self.state.lock().await;
        self.append_locked(store, &mut state, body).await
    }

    /// Queues a piece the agent streamed (a text or argument delta), to be stored with the others
    /// that come meanwhile ([`super::stream`]) and broadcast once stored. A write of earlier
    /// pieces that failed is the error here.
    pub(super) async fn stream(self: &Arc<Self>, store: &Store, piece: EventBody) -> StoreResult<()> {
        let (queued, start_writer) = {
            let mut stream = self.stream.lock().expect("stream lock");
            if let Some(error) = stream.failed.take() {
                return Err(error);
            }
            let queued = stream.push(piece);
            (queued, !std::mem::replace(&mut stream.writing, true))
        };
        if start_writer {
            tokio::spawn(self.clone().write_stream(store.clone()));
        }
        if queued >= MAX_QUEUED {
            // The store lags far behind the agent: it waits for the write.
            let mut state = self.state.lock().await;
            self.write_queued(store, &mut state).await?;
        }
        Ok(())
    }

    /// Keeps a failed write of streamed pieces for the agent to hear at its next event.
    fn stream_failed(&self, error: StoreError) {
        warn!(session = %self.id, %error, "could not store what the agent streamed");
        self.stream.lock().expect("stream lock").failed = Some(error);
    }

    /// What a failed write of streamed pieces left for the agent to hear.
    pub(super) fn stream_failure(&self) -> Option<StoreError> {
        self.stream.lock().expect("stream lock").failed.take()
    }

    /// Writes the queued pieces at once, then at most every [`STREAM_INTERVAL`] while more come.
    /// It holds the runtime only while it writes: an idle session it waits for can be let go
    /// (its turn's end wrote whatever was queued).
    async fn write_stream(self: Arc<Self>, store: Store) {
        let mut runtime = self;
        loop {
            let started = tokio::time::Instant::now();
            let written = {
                let mut state = runtime.state.lock().await;
                runtime.write_queued(&store, &mut state).await
            };
            if let Err(error) = written {
                runtime.stream_failed(error);
            }
            let waiting = Arc::downgrade(&runtime);
            drop(runtime);
            tokio::time::sleep_until(started + STREAM_INTERVAL).await;
            let Some(again) = waiting.upgrade() else { return };
            runtime = again;
            let mut stream = runtime.stream.lock().expect("stream lock");
            if stream.is_empty() {
                stream.writing = false;
                return;
            }
        }
    }

    /// Stores (and broadcasts) the queued pieces, merged, under the lock the caller holds.
    async fn write_queued(&self, store: &Store, state: &mut RuntimeState) -> StoreResult<()> {
        let queued = self.stream.lock().expect("stream lock").take();
        if store.journals() {
            return self.write_pieces(store, state, queued).await;
        }
        for piece in queued {
            self.judge_and_write(store, state, |_| Ok::<_, StoreError>(Judged::Append(piece.clone(), ()))).await?;
        }
        Ok(())
    }

    /// Numbers, applies, stores (in one write to the journal) and then broadcasts the pieces,
    /// under the lock the caller holds. Only a server alone on its store journals: no other
    /// server appends, so there is nothing to judge again.
    async fn write_pieces(&self, store: &Store, state: &mut RuntimeState, pieces: Vec<EventBody>) -> StoreResult<()> {
        if pieces.is_empty() {
            return Ok(());
        }
        let events: Vec<SessionEvent> = pieces
            .into_iter()
            .map(|body| {
                let event = SessionEvent { seq: state.thread.seq + 1, at_ms: now_ms(), body };
                state.thread.apply(&event);
                event
            })
            .collect();
        if let Err(error) = store.append_pieces(&self.id, events.clone()).await {
            self.back_to_stored(store, state).await;
            return Err(error);
        }
        events.into_iter().for_each(|event| self.published(event));
        Ok(())
    }

    /// Memory ran ahead of the disk: back to what is stored — but for whether a turn runs, which
    /// only this process knows (a turn whose end could not be stored is over).
    async fn back_to_stored(&self, store: &Store, state: &mut RuntimeState) {
        if let Ok(mut thread) = store.load_thread(&self.id).await {
            thread.turn.working = state.turn.is_some();
            state.thread = thread;
        }
    }

    /// An event of this runtime's, stored: to the tabs, and to the observer.
    fn published(&self, event: SessionEvent) {
        self.seq.store(event.seq, Ordering::Release);
        self.observed(&event);
        let _ = self.events.send(Arc::new(event));
    }

    /// Numbers, applies, stores and then broadcasts one event, under the lock the caller holds;
    /// after the events of other servers sharing the store, if they appended first. For events
    /// that follow whatever came before (an agent's output); what depends on the thread as it
    /// was is judged again instead (`append_judged`).
    pub(super) async fn append_locked(
        &self,
        store: &Store,
        state: &mut RuntimeState,
        body: EventBody,
    ) -> StoreResult<()> {
        self.append_judged(store, state, |_| Ok(Judged::Append(body.clone(), ()))).await
    }

    /// The compare-and-set on the session's log, the one way every event is appended: `judge`
    /// reads the thread as this server has it and says what to append (or that nothing is to be
    /// appended, and what to answer); the event is stored only if the stored log still ends where
    /// this thread does. If another server appended first, this runtime takes its events and
    /// `judge` reads the thread again, up to [`ATTEMPTS`] times; then the conflict is the error.
    ///
    /// Whatever a write must prove beyond the sequence number (the lease this server holds, as a
    /// fencing token) belongs here, for every event at once.
    pub(super) async fn append_judged<T, E: From<StoreError>>(
        &self,
        store: &Store,
        state: &mut RuntimeState,
        judge: impl FnMut(&Thread) -> Result<Judged<T>, E>,
    ) -> Result<T, E> {
        // What the agent streamed before this comes before it in the log. If that cannot be
        // written (the lease went to another server, say), the agent hears it at its next event;
        // this event is judged on its own (a person's answer is not the agent's write).
        if let Err(error) = self.write_queued(store, state).await {
            self.stream_failed(error);
        }
        self.judge_and_write(store, state, judge).await
    }

    /// `append_judged`, without first writing what the agent streamed.
    async fn judge_and_write<T, E: From<StoreError>>(
        &self,
        store: &Store,
        state: &mut RuntimeState,
        mut judge: impl FnMut(&Thread) -> Result<Judged<T>, E>,
    ) -> Result<T, E> {
        let mut attempt = 1;
        loop {
            let (body, answer) = match judge(&state.thread)? {
                Judged::Done(answer) => return Ok(answer),
                Judged::Append(body, answer) => (body, answer),
            };
            match self.write_once(store, state, body).await {
                Ok(()) => return Ok(answer),
                Err(StoreError::SequenceConflict { .. }) if attempt < ATTEMPTS => attempt += 1,
                Err(error) => return Err(error.into()),
            }
        }
    }

    /// One try of `append_judged`: when another server appended first, this runtime takes what
    /// it appended (stored, applied, broadcast) and the conflict is returned, to judge again.
    async fn write_once(&self, store: &Store, state: &mut RuntimeState, body: EventBody) -> StoreResult<()> {
        if state.lease_lost && body.is_agents() {
            // What the agent here still says as it stops, once another server took it over.
            return Err(StoreError::LeaseLost { session: self.id.clone() });
        }
        let event = SessionEvent { seq: state.thread.seq + 1, at_ms: now_ms(), body };
        let change = state.thread.apply(&event);
        let fence = state.fence.as_deref().filter(|_| event.body.is_agents());
        match store.append(Append { fence, ..Append::of(&self.id, &event, &state.thread, &change) }).await {
            Ok(()) => {}
            Err(conflict @ StoreError::SequenceConflict { .. }) => {
                // Ours was applied in memory only: the thread is read again as stored, and the
                // events other servers wrote go to this server's tabs.
                let running = state.turn.is_some();
                state.thread = store.load_thread(&self.id).await?;
                state.thread.turn.working |= running;
                let missed = store.events_after(&self.id, event.seq - 1, u32::MAX).await?;
                for missed in missed.into_iter().filter(|missed| missed.seq <= state.thread.seq) {
                    self.publish_remote(missed);
                }
                self.seq.store(state.thread.seq, Ordering::Release);
                return Err(conflict);
            }
            Err(error) => {
                if let StoreError::LeaseLost { .. } = error {
                    // Another server runs this session's agent now: the one here stops, and
                    // nothing it does is written.
                    warn!(session = %self.id, "another server took this session's lease; its agent here stops");
                    state.lease_lost = true;
                    if let Some(turn) = &state.turn {
                        turn.cancel();
                    }
                }
                self.back_to_stored(store, state).await;
                return Err(error);
            }
        }
        self.published(event);
        Ok(())
    }

    /// Takes the events other servers appended since this runtime's last one: applied, then
    /// broadcast to this server's tabs.
    pub(super) async fn catch_up_locked(&self, store: &Store, state: &mut RuntimeState) -> StoreResult<()> {
        const PAGE: u32 = 512;
        loop {
            let events = store.events_after(&self.id, state.thread.seq, PAGE).await?;
            let full = events.len() == PAGE as usize;
            for event in events {
                if event.seq != state.thread.seq + 1 {
                    // Not the next one: the log has no gaps, so the session was deleted and made
                    // again under its id, which ids from new_id never are. Nothing to take.
                    warn!(session = %self.id, seq = event.seq, have = state.thread.seq, "the stored log skips");
                    return Ok(());
                }
                state.thread.apply(&event);
                self.seq.store(event.seq, Ordering::Release);
                self.publish_remote(event);
            }
            if !full {
                return Ok(());
            }
        }
    }

    /// An event another server stored, now this runtime's too: to the tabs, and to the manager.
    fn publish_remote(&self, event: SessionEvent) {
        self.observed(&event);
        let event = Arc::new(event);
        let _ = self.events.send(event.clone());
        let _ = self.remote.send((self.id.clone(), event));
    }

    fn observed(&self, event: &SessionEvent) {
        if let Some(observe) = self.observer.get() {
            observe(&self.id, event);
        }
    }

    /// Catches up under the lock (see `catch_up_locked`).
    pub(super) async fn catch_up(&self, store: &Store) -> StoreResult<()> {
        let mut state = self.state.lock().await;
        self.catch_up_locked(store, &mut state).await
    }
}
