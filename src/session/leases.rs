//! This server's leases on sessions (the SQL is `store/leases.rs`). Where several servers share
//! one store, a session's agent runs on the server that holds its lease: taken when a turn
//! starts, renewed while the server lives, given back when the turn ends. A lease left to expire
//! marks a session whose server is gone, for another to take over. With SQLite there is one
//! server, and every lease it finds at start is a previous run's.
//!
//! The lease is also what a write will carry as its fencing token (issue 20): the session log's
//! compare-and-set reaches it here.
//!
//! Alone on its store, a server keeps its leases here only: no other server could read them,
//! and writing each turn's lease and its release cost two transactions of the turn's nine, about
//! 16 KiB of the disk's pages per turn (BENCHMARKS.md, "What a turn costs, and what a byte
//! costs").

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tracing::warn;

use crate::ids::new_id;
use crate::store::{Store, StoreResult};

pub(super) struct Leases {
    store: Store,
    /// This server among those that share the store: the holder of the leases it takes.
    server: String,
    /// How long a lease lasts unless renewed.
    ttl: Duration,
    /// The fencing token of each lease this server holds, which its agents' writes carry.
    fences: Mutex<HashMap<String, String>>,
}

impl Leases {
    pub(super) fn new(store: Store, ttl: Duration) -> Self {
        Self { store, server: new_id(), ttl, fences: Mutex::default() }
    }

    /// How often the leases are renewed: three times a lease, so that one renewal that fails
    /// does not lose them.
    pub(super) fn renew_every(&self) -> Duration {
        self.ttl / 3
    }

    /// Takes the session's lease for a turn here: false while another server runs its agent.
    pub(super) async fn take(&self, session: &str) -> StoreResult<bool> {
        if !self.store.is_shared() {
            self.fences().entry(session.to_string()).or_insert_with(new_id);
            return Ok(true);
        }
        let Some(fence) = self.store.take_lease(session, &self.server, &new_id(), self.ttl).await? else {
            return Ok(false);
        };
        self.fences().insert(session.to_string(), fence);
        Ok(true)
    }

    /// The fencing token of the session's lease, for its agent's writes: where servers share
    /// the store and this one holds the lease.
    pub(super) fn fence(&self, session: &str) -> Option<String> {
        self.store.is_shared().then(|| self.fences().get(session).cloned()).flatten()
    }

    /// Gives the session's lease back: no turn of it runs here (any more).
    pub(super) async fn release(&self, session: &str) -> StoreResult<()> {
        // Forgotten first: a lease still listed here is one this server holds.
        self.fences().remove(session);
        if !self.store.is_shared() {
            return Ok(());
        }
        self.store.release_lease(session, &self.server).await
    }

    /// The leases this server held and holds no more (another server took them): each is
    /// forgotten, and its session's agent here must stop.
    pub(super) async fn lost(&self) -> Vec<String> {
        if !self.store.is_shared() {
            return Vec::new();
        }
        let held: HashMap<String, String> = self.fences().clone();
        let sessions: Vec<String> = held.keys().cloned().collect();
        match self.store.leases_lost(&self.server, &sessions).await {
            Ok(lost) => {
                let mut fences = self.fences();
                // Only a lease still held as it was when asked: one let go, or let go and taken
                // again, meanwhile, is not lost.
                lost.into_iter()
                    .filter(|session| {
                        let same = fences.get(session) == held.get(session);
                        if same {
                            fences.remove(session);
                        }
                        same
                    })
                    .collect()
            }
            Err(error) => {
                warn!(%error, "could not check this server's leases");
                Vec::new()
            }
        }
    }

    fn fences(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.fences.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// As `release`, where a failure is only worth a line in the log: the lease expires anyway.
    pub(super) async fn give_back(&self, session: &str) {
        if let Err(error) = self.release(session).await {
            warn!(%session, %error, "could not give back the session's lease");
        }
    }

    /// Gives back every lease this server holds, as it stops: another server may take them now
    /// rather than when they expire.
    pub(super) async fn give_back_all(&self) {
        self.fences().clear();
        if !self.store.is_shared() {
            return;
        }
        if let Err(error) = self.store.release_leases(&self.server).await {
            warn!(%error, "could not give back this server's leases");
        }
    }

    /// Renews this server's live leases for another lease's length.
    pub(super) async fn renew(&self) {
        if let Err(error) = self.store.renew_leases(&self.server, self.ttl).await {
            warn!(%error, "could not renew this server's leases");
        }
    }

    /// The sessions whose lease expired: their server died (or lost the store for longer than a
    /// lease), and they may need taking over.
    pub(super) async fn expired(&self) -> Vec<String> {
        self.store.sessions_with_expired_leases().await.unwrap_or_else(|error| {
            warn!(%error, "could not read the expired leases");
            Vec::new()
        })
    }

    /// Whether another server's live lease says that it runs the session's agent.
    pub(super) async fn held_elsewhere(&self, session: &str) -> StoreResult<bool> {
        if !self.store.is_shared() {
            return Ok(false);
        }
        Ok(self.store.lease_holder(session).await?.is_some_and(|holder| holder != self.server))
    }

    /// At start: alone on the store (SQLite), whatever lease it holds is a previous run's.
    pub(super) async fn forget_previous_run(&self) -> StoreResult<()> {
        if !self.store.is_shared() {
            self.store.clear_leases().await?;
        }
        Ok(())
    }
}
