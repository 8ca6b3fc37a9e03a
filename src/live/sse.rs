//! The live stream's HTTP face: `GET /api/live?session=<id>&after=<seq>` as Server-Sent Events.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use serde::Deserialize;
use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;

use super::hub::follow_session;
use super::{HEARTBEAT_EVENT, PROBLEM_EVENT, SESSION_EVENT, SESSIONS_EVENT};
use crate::error::AppError;
use crate::session::SessionManager;

#[derive(Debug, Deserialize)]
pub struct LiveQuery {
    session: Option<String>,
    after: Option<u64>,
}

pub async fn live(
    State(manager): State<Arc<SessionManager>>,
    Query(query): Query<LiveQuery>,
    headers: HeaderMap,
) -> impl IntoResponse {
    // `?after=` from our own client; `Last-Event-ID` from a plain EventSource or curl.
    let after = query.after.or_else(|| {
        headers.get("last-event-id").and_then(|value| value.to_str().ok()).and_then(|value| value.parse().ok())
    });
    let stream = open(manager, query.session, after.unwrap_or(0)).await;
    let heartbeat =
        KeepAlive::new().interval(std::time::Duration::from_secs(15)).event(Event::default().event(HEARTBEAT_EVENT));
    ([("x-accel-buffering", "no")], Sse::new(stream).keep_alive(heartbeat))
}

async fn open(
    manager: Arc<SessionManager>,
    session: Option<String>,
    after: u64,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let (tx, rx) = mpsc::channel::<Event>(64);
    let shutdown = manager.shutdown_token();
    let mut list = manager.watch_list();
    // The list as it is now comes first.
    list.mark_changed();
    let mut events = match &session {
        None => None,
        Some(id) => match manager.runtime(id).await {
            Ok(runtime) => Some(follow_session(manager.clone(), runtime, after, shutdown.clone())),
            Err(error) => {
                // A session that does not exist is news; a store that fails for now is not: the
                // stream ends, and the tab tries again.
                if let crate::store::StoreError::SessionNotFound(_) = error {
                    let _ = tx.send(problem(&AppError::from(error))).await;
                } else {
                    tracing::warn!(%error, "could not open a session's live stream");
                }
                return ReceiverStream::new(rx).map(Ok);
            }
        },
    };

    tokio::spawn(async move {
        loop {
            let next = tokio::select! {
                () = shutdown.cancelled() => return,
                () = tx.closed() => return,
                Ok(()) = list.changed() => match list.borrow_and_update().clone() {
                    // JSON already: the same bytes for every tab.
                    Some(json) => Ok(Event::default().event(SESSIONS_EVENT).data(&*json)),
                    None => continue,
                },
                event = next_event(&mut events) => match event {
                    Some(event) => Event::default().event(SESSION_EVENT).id(event.seq.to_string()).json_data(&*event),
                    None => {
                        // The session's channel closed: the session was deleted, or the server
                        // is stopping, or this server let go of it, or the store failed. Only
                        // the first is news for the tab; otherwise the stream just ends, and
                        // the tab reconnects and catches up by sequence number.
                        let id = session.clone().unwrap_or_default();
                        if !shutdown.is_cancelled()
                            && let Err(crate::store::StoreError::SessionNotFound(_)) = manager.stored_summary(&id).await
                        {
                            let _ = tx.send(problem(&AppError::SessionNotFound { id })).await;
                        }
                        return;
                    }
                },
            };
            match next {
                Ok(event) => {
                    if tx.send(event).await.is_err() {
                        return;
                    }
                }
                Err(error) => {
                    tracing::error!(%error, "could not encode a live event");
                    return;
                }
            }
        }
    });
    ReceiverStream::new(rx).map(Ok)
}

/// The next session event; never resolves when the stream follows no session.
async fn next_event(
    events: &mut Option<mpsc::Receiver<Arc<crate::thread::SessionEvent>>>,
) -> Option<Arc<crate::thread::SessionEvent>> {
    match events {
        Some(events) => events.recv().await,
        None => std::future::pending().await,
    }
}

fn problem(error: &AppError) -> Event {
    Event::default()
        .event(PROBLEM_EVENT)
        .json_data(error)
        .unwrap_or_else(|_| Event::default().event(PROBLEM_EVENT).data("{}"))
}
