//! The page's state: the session list, the open session's thread, the live connection's status.
//! Everything comes from the server (the snapshot, then live events); the page only folds.

use leptos::prelude::*;

use crate::live::ConnectionStatus;
use crate::thread::{Message, SessionEvent, SessionSummary, Thread, TurnState};

/// Shared by every component of the workspace, through context.
#[derive(Clone, Copy)]
pub struct Workspace {
    pub sessions: RwSignal<Vec<SessionSummary>>,
    pub connection: RwSignal<ConnectionStatus>,
    /// The session list, on a phone, slides over the thread.
    pub drawer_open: RwSignal<bool>,
    /// True once the page is interactive; controls stay disabled before.
    pub hydrated: RwSignal<bool>,
}

pub fn use_workspace() -> Workspace {
    expect_context::<Workspace>()
}

/// Keeps the tab's title on what the pane shows ("Title · AskBridge"). The server sends
/// "AskBridge"; the browser names the tab once it takes over.
#[allow(unused_variables)]
pub fn use_document_title(title: impl Fn() -> String + Send + Sync + 'static) {
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        let title = title();
        if let Some(document) = web_sys::window().and_then(|w| w.document()) {
            document.set_title(&if title.is_empty() {
                "AskBridge".to_string()
            } else {
                format!("{title} · AskBridge")
            });
        }
    });
}

/// One message of the open thread, with its own signal: a streamed word re-renders that message
/// and nothing else.
#[derive(Clone)]
pub struct MessageEntry {
    pub id: String,
    pub message: ArcRwSignal<Message>,
}

/// The open session's thread, kept in step with the server by applying its events.
#[derive(Clone, Copy)]
pub struct ThreadState {
    pub session_id: StoredValue<String>,
    thread: StoredValue<Thread>,
    pub messages: RwSignal<Vec<MessageEntry>>,
    pub turn: RwSignal<TurnState>,
    /// A question or approval waits for the person.
    pub waiting: RwSignal<bool>,
    /// Changes with every applied event; the thread view follows it to keep the newest in view.
    pub version: RwSignal<u64>,
}

impl ThreadState {
    pub fn new(session_id: String, thread: Thread) -> Self {
        let entries = thread.messages.iter().map(entry).collect();
        Self {
            session_id: StoredValue::new(session_id),
            turn: RwSignal::new(thread.turn.clone()),
            waiting: RwSignal::new(thread.is_waiting()),
            version: RwSignal::new(thread.seq),
            messages: RwSignal::new(entries),
            thread: StoredValue::new(thread),
        }
    }

    /// The sequence number of the last event applied.
    pub fn seq(&self) -> u64 {
        self.thread.with_value(|thread| thread.seq)
    }

    pub fn apply(&self, event: &SessionEvent) {
        let Some((changed, turn, waiting)) = self.thread.try_update_value(|thread| {
            let change = thread.apply(event);
            let changed: Vec<(usize, Message)> = change
                .messages
                .iter()
                .filter_map(|&index| Some((index, thread.messages.get(index)?.clone())))
                .collect();
            let waiting = (!change.interactions.is_empty() || change.turn).then(|| thread.is_waiting());
            (changed, change.turn.then(|| thread.turn.clone()), waiting)
        }) else {
            return;
        };
        if let Some(waiting) = waiting {
            self.waiting.set(waiting);
        }
        for (index, message) in changed {
            let existing = self.messages.with_untracked(|entries| entries.get(index).map(|e| e.message.clone()));
            match existing {
                Some(signal) => signal.set(message),
                None => self.messages.update(|entries| entries.push(entry(&message))),
            }
        }
        if let Some(turn) = turn {
            self.turn.set(turn);
        }
        self.version.set(event.seq);
    }
}

fn entry(message: &Message) -> MessageEntry {
    MessageEntry { id: message.id.clone(), message: ArcRwSignal::new(message.clone()) }
}
