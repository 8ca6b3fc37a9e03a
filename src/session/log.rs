//! The sessions this server has loaded: each one's runtime (`runtime.rs`: its thread, its live
//! channel, the compare-and-set through which its events are appended), loaded from the store when
//! first asked for and let go of when idle past `--max-loaded-sessions`; and the session list
//! every tab follows, read again after each change. The log is also the bridge's ledger
//! (`ledger.rs`).
//!
//! Several servers may share one store (Postgres): what this server caught up with of the others'
//! events goes to the manager too ([`SessionLog::remote_events`]), so that an answer given elsewhere
//! reaches the agent waiting here.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, watch};
use tracing::warn;

use super::leases::Leases;
use super::runtime::{EventObserver, RemoteEvent, SessionRuntime};
use crate::error::AppError;
use crate::store::{Store, StoreResult};
use crate::thread::{SessionSummary, Thread};

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
            runtime.used(self.uses.fetch_add(1, Ordering::Relaxed));
            return Ok(runtime.clone());
        }
        let thread = self.store.load_thread(id).await?;
        let mut runtimes = self.runtimes.lock().expect("runtimes lock");
        // Another request may have loaded it meanwhile: keep the first, it may have moved on.
        let runtime = runtimes
            .entry(id.to_string())
            .or_insert_with(|| {
                let used_at = self.uses.fetch_add(1, Ordering::Relaxed);
                Arc::new(SessionRuntime::loaded(id, thread, used_at, self.remote.clone(), self.observer.clone()))
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
        let mut state = runtime.lock().await;
        if self.store.is_shared() {
            // A notification may be on its way: a page shows what the store holds now.
            runtime.catch_up_locked(&self.store, &mut state).await?;
        }
        // What the thread holds and the store not yet is stored first: nothing is shown before.
        runtime.settle_held(&self.store, &mut state).await;
        let thread = state.thread.clone();
        drop(state);
        let summary = self.store.session(id).await?;
        Ok((summary, thread))
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
        .filter(|(_, runtime)| Arc::strong_count(runtime) == 1 && runtime.is_idle())
        .map(|(id, runtime)| (runtime.used_at(), id.clone()))
        .collect();
    idle.sort_unstable();
    let excess = runtimes.len() - (max - max / 10).max(1);
    for (_, id) in idle.into_iter().take(excess) {
        runtimes.remove(&id);
    }
}
