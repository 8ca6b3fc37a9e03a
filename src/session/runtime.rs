//! A loaded session's event log: the one place where events are numbered, applied to the thread,
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

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::stream::{MAX_QUEUED, STREAM_INTERVAL, Stream};
use crate::ids::now_ms;
use crate::store::{Append, Held, Store, StoreError, StoreResult, input_is_streamed};
use crate::thread::{EventBody, SessionEvent, Thread};

/// Live events kept for slow tabs before they must catch up from the store (which a tab that
/// lags does, `live::hub`). The channel's slots are allocated with it: 1,024 of them were most of
/// the 55 KiB a waiting session cost (issue 12, `make bench-parked`); a tab that falls 64 events
/// behind reads them from the store instead. It is made when the first tab follows the session
/// (`SessionRuntime::subscribe`): 64 slots were 2 of the 30 KiB of a session waiting with no tab
/// open (issue 38, BENCHMARKS.md "What a waiting session holds").
const CHANNEL_CAPACITY: usize = 64;

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

/// A loaded session: its thread as of its last event, and its live channel.
pub struct SessionRuntime {
    id: String,
    state: tokio::sync::Mutex<RuntimeState>,
    /// The live channel, once a tab follows the session: an event sent before it was made has
    /// nobody to reach, as one sent before a tab subscribed.
    events: OnceLock<broadcast::Sender<Arc<SessionEvent>>>,
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
    /// Events applied to `thread` and not stored yet: written in the transaction of the session's
    /// next event, or alone shortly after (`SessionRuntime::hold`). Broadcast once stored.
    held: Vec<Held>,
    /// A write was under way when the future making it was dropped (its caller went away): the
    /// store may or may not have it. Healed before the next write (`heal`).
    cut_short: bool,
}

impl SessionRuntime {
    /// The runtime of a session just loaded with its stored `thread`, asked for at `used_at` on
    /// the log's use clock.
    pub(super) fn loaded(
        id: &str,
        thread: Thread,
        used_at: u64,
        remote: mpsc::UnboundedSender<RemoteEvent>,
        observer: Arc<OnceLock<EventObserver>>,
    ) -> Self {
        SessionRuntime {
            id: id.to_string(),
            seq: AtomicU64::new(thread.seq),
            used_at: AtomicU64::new(used_at),
            state: tokio::sync::Mutex::new(RuntimeState {
                thread,
                turn: None,
                fence: None,
                lease_lost: false,
                held: Vec::new(),
                cut_short: false,
            }),
            events: OnceLock::new(),
            remote,
            observer,
            stream: Mutex::default(),
        }
    }

    /// Asked for again, at `at` on the log's use clock.
    pub(super) fn used(&self, at: u64) {
        self.used_at.store(at, Ordering::Relaxed);
    }

    pub(super) fn used_at(&self) -> u64 {
        self.used_at.load(Ordering::Relaxed)
    }

    /// No tab follows it, no turn runs and its lock is free (whether anything else holds it is
    /// the caller's to see).
    pub(super) fn is_idle(&self) -> bool {
        self.events.get().is_none_or(|events| events.receiver_count() == 0)
            && self.state.try_lock().is_ok_and(|state| state.turn.is_none() && state.held.is_empty())
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// Receives every event appended from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<SessionEvent>> {
        self.events.get_or_init(|| broadcast::channel(CHANNEL_CAPACITY).0).subscribe()
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

    /// Applies an event the agent reported, to be stored in the transaction of the session's next
    /// event, or alone after [`STREAM_INTERVAL`] if none comes by then, and broadcast once stored
    /// as every event is: for an event that another follows at once. A reply's end is followed by
    /// its turn's end, and each transaction writes whole pages of SQLite's log and flushes it,
    /// whatever it holds: about 9 KiB to the disk for the reply's end alone (BENCHMARKS.md, "Pages
    /// of 1 KiB"). Only a server alone on its SQLite file holds events back: where servers share
    /// the store, each event is a compare-and-set against theirs. A failed write is the agent's
    /// error at its next event, as a failed write of streamed pieces is.
    pub(super) async fn hold(self: &Arc<Self>, store: &Store, body: EventBody) -> StoreResult<()> {
        if !store.journals() {
            return self.append(store, body).await;
        }
        let mut state = self.state.lock().await;
        // What streamed before it comes before it.
        self.write_queued(store, &mut state).await?;
        let event = SessionEvent { seq: state.thread.seq + 1, at_ms: now_ms(), body };
        let change = state.thread.apply(&event);
        let held = Held::of(&self.id, event, &state.thread, &change);
        state.held.push(held);
        drop(state);
        // A runtime that holds events is not idle (`is_idle`): it is not let go meanwhile.
        let (waiting, store) = (Arc::downgrade(self), store.clone());
        tokio::spawn(async move {
            tokio::time::sleep(STREAM_INTERVAL).await;
            let Some(runtime) = waiting.upgrade() else { return };
            let mut state = runtime.state.lock().await;
            runtime.settle_held(&store, &mut state).await;
        });
        Ok(())
    }

    /// Whether the agent's event is held back to be stored with the next (`hold`).
    pub(super) fn held_back(body: &EventBody) -> bool {
        matches!(body, EventBody::MessageFinished { .. })
    }

    /// Stores (and broadcasts) the held events now, under the lock the caller holds: before the
    /// thread is shown as it is, since nothing is shown before it is stored. A failure is the
    /// agent's to hear at its next event.
    pub(super) async fn settle_held(&self, store: &Store, state: &mut RuntimeState) {
        if let Err(error) = self.write_held(store, state).await {
            self.stream_failed(error);
        }
    }

    async fn write_held(&self, store: &Store, state: &mut RuntimeState) -> StoreResult<()> {
        self.heal(store, state).await?;
        if state.held.is_empty() {
            return Ok(());
        }
        state.cut_short = true;
        let written = store.append_all(state.held.iter().map(|held| held.append(&self.id)).collect()).await;
        state.cut_short = false;
        if let Err(error) = written {
            self.back_to_stored(store, state).await;
            return Err(error);
        }
        std::mem::take(&mut state.held).into_iter().for_each(|held| self.published(held.event));
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
            // Pieces follow the events held before them in the log (and are numbered after them):
            // those are stored first. With no pieces, they wait for the next event.
            if !queued.is_empty() {
                self.write_held(store, state).await?;
            }
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
        state.held.clear();
        if let Ok(mut thread) = store.load_thread(&self.id).await {
            thread.turn.working = state.turn.is_some();
            state.thread = thread;
        }
    }

    /// After a write that was cut short (`cut_short`): the thread read back as stored, what was
    /// stored and never published sent out now (that write's events, if its transaction
    /// committed), and the held events it did not store held again, on top of what was.
    async fn heal(&self, store: &Store, state: &mut RuntimeState) -> StoreResult<()> {
        if !state.cut_short {
            return Ok(());
        }
        let mut thread = store.load_thread(&self.id).await?;
        thread.turn.working = state.turn.is_some();
        for stored in store.events_after(&self.id, self.seq(), u32::MAX).await? {
            self.published(stored);
        }
        state.held.retain(|held| held.event.seq > thread.seq);
        for held in &state.held {
            thread.apply(&held.event);
        }
        warn!(session = %self.id, stored = thread.seq, "a write was cut short; the thread is read back as stored");
        state.thread = thread;
        state.cut_short = false;
        Ok(())
    }

    /// An event of this runtime's, stored: to the tabs, and to the observer.
    fn published(&self, event: SessionEvent) {
        self.seq.store(event.seq, Ordering::Release);
        self.observed(&event);
        self.broadcast(Arc::new(event));
    }

    /// To the tabs that follow the session, if any does.
    fn broadcast(&self, event: Arc<SessionEvent>) {
        if let Some(events) = self.events.get() {
            let _ = events.send(event);
        }
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
        self.heal(store, state).await?;
        let input_streamed = store.journals() && input_is_streamed(&state.thread, &body);
        let event = SessionEvent { seq: state.thread.seq + 1, at_ms: now_ms(), body };
        let change = state.thread.apply(&event);
        let fence = state.fence.as_deref().filter(|_| event.body.is_agents());
        let append = Append { fence, input_streamed, ..Append::of(&self.id, &event, &state.thread, &change) };
        // The events held back go in the same transaction, before it; they stay held until it is
        // stored.
        state.cut_short = true;
        let written = match state.held.is_empty() {
            true => store.append(append).await,
            false => {
                let held = state.held.iter().map(|held| held.append(&self.id));
                store.append_all(held.chain([append]).collect()).await
            }
        };
        state.cut_short = false;
        match written {
            Ok(()) => {}
            Err(conflict @ StoreError::SequenceConflict { .. }) => {
                // Ours was applied in memory only: the thread is read again as stored, and the
                // events other servers wrote go to this server's tabs.
                let running = state.turn.is_some();
                state.held.clear();
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
        std::mem::take(&mut state.held).into_iter().for_each(|held| self.published(held.event));
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
        self.broadcast(event.clone());
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
