//! The page's state: the session list, the open session's thread, the live connection's status.
//! Everything comes from the server (the snapshot, then live events); the page only folds.

use leptos::prelude::*;

use super::navigation::{Location, session_path};
use super::server_call::ServerCall;
use crate::api::CreateSession;
use crate::approval::PermissionMode;
use crate::live::ConnectionStatus;
use crate::thread::{Message, SessionEvent, SessionSummary, Thread, TurnState};

/// Shared by every component of the workspace, through context. It lives as long as the page:
/// moving between sessions changes what it holds, never the workspace itself.
#[derive(Clone, Copy)]
pub struct Workspace {
    pub sessions: RwSignal<Vec<SessionSummary>>,
    pub connection: RwSignal<ConnectionStatus>,
    /// The session list, on a phone, slides over the thread.
    pub drawer_open: RwSignal<bool>,
    /// True once the page is interactive; controls stay disabled before.
    pub hydrated: RwSignal<bool>,
    /// The thread the pane shows, when it shows a session.
    pub thread: RwSignal<Option<ThreadState>>,
    /// A new session is being created (by New session, or by a first message).
    pub opening: ServerCall<CreateSession>,
    /// The session the last `open_new_session` created, so that the composer knows that landing
    /// there is the end of that opening.
    pub just_opened: StoredValue<Option<String>>,
    /// The folder and mode a first message's session gets, as chosen on the welcome page.
    pub new_session: NewSessionOptions,
    /// A message to send now, in a new session (an example on the welcome page): the composer
    /// takes it as if typed.
    pub compose: RwSignal<Option<String>>,
    /// Messages to try, from the agent (the offline demo's).
    pub examples: StoredValue<Vec<String>>,
    /// Claude Code keeps sessions on this machine: the list offers them.
    pub claude_sessions: bool,
    /// Where a session's agent works when it chose no folder.
    pub default_workdir: StoredValue<Option<String>>,
}

#[derive(Clone, Copy)]
pub struct NewSessionOptions {
    /// Sent only for an agent that works in a folder.
    pub workdir: RwSignal<String>,
    pub mode: RwSignal<PermissionMode>,
    /// The agent new sessions talk to (its name), and what people call it.
    pub agent: RwSignal<String>,
    pub agent_label: RwSignal<String>,
    /// It works in a folder: the folder field is shown, and sent.
    pub works_in_folder: RwSignal<bool>,
    /// Its model; empty: its default.
    pub model: RwSignal<String>,
}

impl Workspace {
    /// Creates a session and goes to it; with `options`, in the folder and mode chosen on the
    /// welcome page (otherwise the server's defaults).
    pub fn open_new_session(&self, location: Location, options: Option<NewSessionOptions>) {
        if self.opening.state().pending.get_untracked() {
            return;
        }
        let this = *self;
        let input = CreateSession {
            workdir: options.filter(|o| o.works_in_folder.get_untracked()).map(|o| o.workdir.get_untracked()),
            permission_mode: options.map(|o| o.mode.get_untracked()),
            // The mode select asked the person before bypass could be chosen.
            confirm_bypass: true,
            agent: options.map(|o| o.agent.get_untracked()),
            model: options.map(|o| o.model.get_untracked()).filter(|m| !m.is_empty()),
        };
        self.opening.dispatch(input, move |summary| {
            this.just_opened.set_value(Some(summary.id.clone()));
            this.drawer_open.set(false);
            location.navigate(&session_path(&summary.id));
        });
    }
}

pub fn use_workspace() -> Workspace {
    expect_context::<Workspace>()
}

/// Keeps the tab's title on what the pane shows ("Title · AskBridge"), with a `●` in front while
/// any session waits for the person (the open one or another), for a tab in the background. The
/// server sends "AskBridge"; the browser names the tab once it takes over.
#[allow(unused_variables)]
pub fn use_document_title(title: impl Fn() -> String + Send + Sync + 'static) {
    #[cfg(feature = "hydrate")]
    {
        let workspace = use_workspace();
        Effect::new(move |_| {
            let title = title();
            let waiting = workspace.thread.get().is_some_and(|t| t.waiting.try_get().unwrap_or(false))
                || workspace.sessions.with(|list| list.iter().any(|s| s.waiting));
            let title = if title.is_empty() { "AskBridge".to_string() } else { format!("{title} · AskBridge") };
            document().set_title(&if waiting { format!("● {title}") } else { title });
        });
    }
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
    /// A thread shown, not run here (a Claude Code transcript): its cards take no answers.
    pub read_only: bool,
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
            read_only: false,
        }
    }

    /// A thread to read, not to answer in (a Claude Code transcript).
    pub fn read_only(id: String, thread: Thread) -> Self {
        Self { read_only: true, ..Self::new(id, thread) }
    }

    /// Puts older messages before the ones shown (a transcript's earlier page).
    pub fn prepend(&self, older: Vec<Message>) {
        let entries: Vec<MessageEntry> = older.iter().map(entry).collect();
        self.messages.update(|shown| {
            shown.splice(0..0, entries);
        });
    }

    /// The sequence number of the last event applied.
    pub fn seq(&self) -> u64 {
        self.thread.try_with_value(|thread| thread.seq).unwrap_or(0)
    }

    /// The session this thread is, unless the pane that showed it is gone.
    pub fn session(&self) -> Option<String> {
        self.session_id.try_get_value()
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
