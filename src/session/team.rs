//! A server among others that share one store (Postgres): it follows their events (through the
//! store's notifications, caught up from the store when some were missed), renews its leases,
//! stops an agent whose lease another server took, and takes over the sessions of servers that
//! died. An answer can be given through any server; the server whose agent waits takes it from
//! the store. A server that dies lets its leases expire, and another ends the turns it left
//! (their cards say the answer was lost) and resumes what can be resumed.

use std::sync::Arc;

use tracing::{info, warn};

use super::manager::SessionManager;
use crate::store::{Notice, StoreResult};
use crate::thread::EventBody;

impl SessionManager {
    /// What other servers sharing the store did, as this server's runtimes take it: an answer
    /// reaches the agent waiting here (or resumes the session), a message typed ahead elsewhere
    /// starts its turn here if no turn runs (and no other server took it), and a turn started elsewhere
    /// ends what this server's agent kept of the session (the next turn here starts afresh from
    /// the store, with what the other server's turn left).
    pub(super) fn follow_remote_events(self: &Arc<Self>) {
        let Some(mut remote) = self.log.remote_events() else { return };
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            while let Some((session, event)) = remote.recv().await {
                let Some(manager) = weak.upgrade() else { return };
                match &event.body {
                    EventBody::InteractionResolved { tool_use_id, outcome } => {
                        manager.bridge.resolved(&session, tool_use_id, outcome);
                    }
                    // Its deadline, for this server's expiry timer too.
                    EventBody::InteractionOpened { .. } => manager.bridge.rearm_deadlines(),
                    EventBody::TurnStarted | EventBody::ResumeStarted => manager.agent.end_session(&session).await,
                    // Typed ahead through another server, just as this one's turn ended (and gave
                    // its lease back before it could see it): the queue is taken here now.
                    EventBody::MessageQueued { .. } => {
                        tokio::spawn(async move {
                            if let Err(error) = manager.turns.start_owed(&session).await {
                                warn!(%session, %error, "could not start the turn of a queued message");
                            }
                        });
                    }
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
                    // A deletion or a Stop waits for a session's lock and its agent's end: on a
                    // task of its own, so that the notices for every other session keep coming.
                    Ok(Some(notice @ (Notice::Deleted { .. } | Notice::Interrupt { .. }))) => {
                        tokio::spawn(async move { manager.heard(notice).await });
                    }
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
        let every = self.log.leases().renew_every();
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
    async fn keep_leases(&self) {
        self.log.leases().renew().await;
        // Leases another server took meanwhile (this one was paused, or cut off from the store
        // for longer than a lease): their agents here stop.
        for session in self.log.leases().lost().await {
            self.turns.lease_lost(&session).await;
        }
        // Deadlines that other servers recorded for sessions this one does not follow.
        self.bridge.rearm_deadlines();
        for session in self.log.leases().expired().await {
            if let Err(error) = self.turns.take_over(&session).await {
                warn!(%session, %error, "could not take over the session");
            }
        }
    }
}
