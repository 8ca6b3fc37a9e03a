//! The event hub's read side: a session's events after a sequence number, first from the store,
//! then live, with no gap and no repeat, even when a slow tab falls behind the broadcast.

use std::sync::Arc;

use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use tracing::debug;

use crate::session::{SessionManager, SessionRuntime};
use crate::thread::SessionEvent;

/// Events read from the store at a time while catching up.
const CATCH_UP_PAGE: u32 = 500;

/// Every event of the session after `after`, in order, until the session or the server goes away.
pub fn follow_session(
    manager: Arc<SessionManager>,
    runtime: Arc<SessionRuntime>,
    after: u64,
    shutdown: CancellationToken,
) -> mpsc::Receiver<Arc<SessionEvent>> {
    let (tx, rx) = mpsc::channel(256);
    // Subscribe before reading the store: an event is stored before it is broadcast, so each one
    // is found in one place or the other (or both, and then skipped by its number).
    let mut live = runtime.subscribe();
    let session_id = runtime.id().to_string();
    tokio::spawn(async move {
        let mut last = after;
        if catch_up(&manager, &session_id, &mut last, &tx).await.is_err() {
            return;
        }
        loop {
            let event = tokio::select! {
                () = shutdown.cancelled() => return,
                () = tx.closed() => return,
                received = live.recv() => received,
            };
            let caught_up = match event {
                Ok(event) if event.seq <= last => Ok(()),
                Ok(event) if event.seq == last + 1 => {
                    last = event.seq;
                    tx.send(event).await.map_err(drop)
                }
                // Fell behind the broadcast (or saw a gap): the store has everything.
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {
                    debug!(session = %session_id, last, "live stream fell behind; catching up from the store");
                    catch_up(&manager, &session_id, &mut last, &tx).await
                }
                Err(broadcast::error::RecvError::Closed) => return,
            };
            if caught_up.is_err() {
                return;
            }
        }
    });
    rx
}

async fn catch_up(
    manager: &SessionManager,
    session_id: &str,
    last: &mut u64,
    tx: &mpsc::Sender<Arc<SessionEvent>>,
) -> Result<(), ()> {
    loop {
        let page = manager.events_after(session_id, *last, CATCH_UP_PAGE).await.map_err(drop)?;
        let full = page.len() == CATCH_UP_PAGE as usize;
        for event in page {
            *last = event.seq;
            tx.send(Arc::new(event)).await.map_err(drop)?;
        }
        if !full {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::scripted::{Scenario, ScriptedAgent};
    use crate::store::Store;
    use crate::testing::wait_until;
    use std::time::Duration;

    #[tokio::test]
    async fn a_stream_from_the_middle_gets_the_rest_then_live_events_without_repeats() {
        let scenario =
            Scenario::parse("pace = 200\n[[turn]]\n[[turn.step]]\nsay = \"one two three four five six seven\"\n", "t")
                .unwrap();
        let manager =
            SessionManager::new(Store::open_in_memory().await.unwrap(), Arc::new(ScriptedAgent::new(scenario)));
        let session = manager.create_session(None).await.unwrap();
        manager.send_message(&session.id, "first".into()).await.unwrap();
        // Join while the reply is streaming, from event 3.
        wait_until("the reply to start streaming", Duration::from_secs(5), || async {
            let (_, thread) = manager.snapshot(&session.id).await.unwrap();
            (thread.seq > 4).then_some(())
        })
        .await;
        let runtime = manager.runtime(&session.id).await.unwrap();
        let mut rx = follow_session(manager.clone(), runtime, 3, CancellationToken::new());

        let mut seen = Vec::new();
        loop {
            let event = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.unwrap().unwrap();
            seen.push(event.seq);
            if matches!(event.body, crate::thread::EventBody::TurnEnded { .. }) {
                break;
            }
        }
        let expected: Vec<u64> = (4..=*seen.last().unwrap()).collect();
        assert_eq!(seen, expected);
    }

    #[tokio::test]
    async fn a_stalled_tab_holds_a_bounded_backlog_and_slows_no_other_tab() {
        // Tool calls: each is several events (words streamed together would be stored, and
        // sent, as a few merged pieces).
        const CALLS: usize = 400;
        let calls: String = (0..CALLS)
            .map(|i| format!("[[turn.step]]\ntool = \"Bash\"\ninput = {{ command = \"echo {i}\" }}\noutput = \"{i}\"\nduration_ms = 0\n"))
            .collect();
        let scenario = Scenario::parse(&format!("pace = 1000000\n[[turn]]\n{calls}"), "t").unwrap();
        let manager =
            SessionManager::new(Store::open_in_memory().await.unwrap(), Arc::new(ScriptedAgent::new(scenario)));
        let session = manager.create_session(None).await.unwrap();
        let runtime = manager.runtime(&session.id).await.unwrap();
        // One tab never reads; another reads everything as it comes.
        let mut stalled = follow_session(manager.clone(), runtime.clone(), 0, CancellationToken::new());
        let mut reading = follow_session(manager.clone(), runtime, 0, CancellationToken::new());
        manager.send_message(&session.id, "go".into()).await.unwrap();
        let mut last = 0;
        loop {
            let event = tokio::time::timeout(Duration::from_secs(30), reading.recv()).await.unwrap().unwrap();
            assert_eq!(event.seq, last + 1, "in order, no gap");
            last = event.seq;
            if matches!(event.body, crate::thread::EventBody::TurnEnded { .. }) {
                break;
            }
        }
        assert!(last as usize > 2 * CALLS, "every call was events: {last}");
        // What waits for the stalled tab is its channel's worth, not the whole turn.
        assert!(stalled.len() <= 256, "a stalled tab's backlog is bounded: {}", stalled.len());
        // When it reads again, it gets everything, in order, from the store.
        let mut seen = 0;
        while seen < last {
            let event = tokio::time::timeout(Duration::from_secs(30), stalled.recv()).await.unwrap().unwrap();
            assert_eq!(event.seq, seen + 1);
            seen = event.seq;
        }
    }
}
