//! The page's state: the session list, the open session's thread, the live connection's status.
//! Everything comes from the server (the snapshot, then live events); the page only folds.

use leptos::html;
use leptos::prelude::*;

use super::navigation::{Location, session_path};
use super::server_call::ServerCall;
use crate::api::CreateSession;
use crate::approval::PermissionMode;
use crate::changes::NewWorktree;
use crate::live::ConnectionStatus;
use crate::thread::{EventBody, Message, SessionEvent, SessionSummary, Thread, TurnState};

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
    /// The message box's keys beyond Enter, once the session pane's chunk gave them
    /// (`box_keys::install`); true: the key was taken.
    pub box_keys: StoredValue<Option<Callback<BoxKey, bool>>>,
}

/// A key pressed in the message box, for the keys the session pane's chunk gives it
/// (`ui::box_keys`: ↑/↓, Shift+Tab, Esc to a waiting card) once it is here: they are not in the
/// first load of `/` (docs/size.md).
pub struct BoxKey {
    /// `None`: the person typed (what ↑ recalls starts again from the newest, and an `@` word
    /// opens the file list).
    pub event: Option<leptos::ev::KeyboardEvent>,
    pub draft: RwSignal<String>,
    pub input: NodeRef<html::Textarea>,
    /// The `@` list is open.
    pub files: RwSignal<bool>,
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
    /// In a new worktree of the folder's repository, when chosen (`new_session.rs`).
    pub worktree: RwSignal<Option<NewWorktree>>,
}

impl Workspace {
    /// Creates a session with the folder, agent, model and mode chosen on the new-session page,
    /// and goes to it. Only with its first message (the composer's), so that no session is empty.
    pub fn open_new_session(&self, location: Location, options: NewSessionOptions) {
        if self.opening.state().pending.get_untracked() {
            return;
        }
        let this = *self;
        let input = CreateSession {
            workdir: options.works_in_folder.get_untracked().then(|| options.workdir.get_untracked()),
            permission_mode: Some(options.mode.get_untracked()),
            // The mode select asked the person before bypass could be chosen.
            confirm_bypass: true,
            agent: Some(options.agent.get_untracked()),
            model: Some(options.model.get_untracked()).filter(|m| !m.is_empty()),
            worktree: options.works_in_folder.get_untracked().then(|| options.worktree.get_untracked()).flatten(),
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

/// After this tab sends an answer, the agent's CLI has its own work to do on the same cores as the
/// page, and what the page draws meanwhile makes it wait (BENCHMARKS.md, "The answer path with a
/// page open"). So until the agent goes on (any event but the answer's echo and the tool's result:
/// its next words, another question, the turn's end) or `HOLD_AT_MOST` has passed, the page
/// redraws only the cards those two change. The rest (the turn now working, the session list, the
/// message box's hint, and the animations they start) is folded into the state at once and drawn
/// then, together. Not at the tool's result: Claude Code writes it out just before it sends the
/// model its request, and drawing everything there landed on the CLI's busiest moment (traced).
#[derive(Clone, Copy)]
pub struct Hold(StoredValue<Held>);

/// Longer than the CLI takes from an answer to its next request (about 60 ms on 2 cores), short
/// enough that the status it holds back is never noticed as late.
pub const HOLD_AT_MOST: std::time::Duration = std::time::Duration::from_millis(300);

#[derive(Default)]
struct Held {
    active: bool,
    #[cfg(feature = "hydrate")]
    timer: Option<leptos::leptos_dom::helpers::TimeoutHandle>,
    /// The redraws held back, in the order they came (a later one of the same signal wins).
    later: Vec<Box<dyn FnOnce() + Send + Sync>>,
}

impl Hold {
    fn new() -> Self {
        Self(StoredValue::new(Held::default()))
    }

    /// An answer is leaving: hold the redraws until it shows its effect, or `HOLD_AT_MOST`.
    pub fn begin(&self) {
        #[cfg(feature = "hydrate")]
        let timer = {
            let this = *self;
            set_timeout_with_handle(move || this.release(), HOLD_AT_MOST).ok()
        };
        self.0.try_update_value(|held| {
            #[cfg(feature = "hydrate")]
            if let Some(previous) = std::mem::replace(&mut held.timer, timer) {
                previous.clear();
            }
            held.active = true;
        });
    }

    /// Draws what was held back, now.
    pub fn release(&self) {
        let later = self.0.try_update_value(|held| {
            held.active = false;
            #[cfg(feature = "hydrate")]
            if let Some(timer) = held.timer.take() {
                timer.clear();
            }
            std::mem::take(&mut held.later)
        });
        for redraw in later.into_iter().flatten() {
            redraw();
        }
    }

    pub fn is_active(&self) -> bool {
        self.0.try_with_value(|held| held.active).unwrap_or(false)
    }

    /// `redraw` now, or once the hold ends when `keep` (and a hold is on).
    pub fn redraw(&self, keep: bool, redraw: impl FnOnce() + Send + Sync + 'static) {
        if keep && self.is_active() {
            self.0.update_value(|held| held.later.push(Box::new(redraw)));
        } else {
            redraw();
        }
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
    /// The redraws held back while an answer from this tab reaches the agent.
    pub hold: Hold,
    /// The thread shows its end and follows what comes; false once the person (or a card brought
    /// into view) scrolled up from it.
    pub following: StoredValue<bool>,
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
            hold: Hold::new(),
            following: StoredValue::new(true),
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

    /// What the person sent in this session, oldest first (the message box's ↑ brings them back).
    pub fn user_texts(&self) -> Vec<String> {
        self.thread
            .try_with_value(|thread| {
                thread
                    .messages
                    .iter()
                    .filter(|m| m.role == crate::thread::Role::User)
                    .filter_map(|m| {
                        let text: String = m
                            .blocks
                            .iter()
                            .filter_map(|b| match b {
                                crate::thread::Block::Text { text } => Some(text.as_str()),
                                _ => None,
                            })
                            .collect::<Vec<_>>()
                            .join("\n");
                        (!text.trim().is_empty()).then_some(text)
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The session this thread is, unless the pane that showed it is gone.
    pub fn session(&self) -> Option<String> {
        self.session_id.try_get_value()
    }

    pub fn apply(&self, event: &SessionEvent) {
        // The answer's echo and the tool's result are held with what they change beyond their
        // card; anything else is the agent going on, and ends the hold first.
        let echo = matches!(event.body, EventBody::InteractionResolved { .. } | EventBody::ToolResult { .. });
        if !echo && self.hold.is_active() {
            self.hold.release();
        }
        let Some((changed, turn, waiting)) = self.thread.try_update_value(|thread| {
            let change = thread.apply(event);
            let changed: Vec<(usize, Message)> = change
                .shown_messages()
                .filter_map(|index| Some((index, thread.messages.get(index)?.clone())))
                .collect();
            let waiting = (!change.interactions.is_empty() || change.turn).then(|| thread.is_waiting());
            (changed, change.turn.then(|| thread.turn.clone()), waiting)
        }) else {
            return;
        };
        if let Some(waiting) = waiting {
            let signal = self.waiting;
            self.hold.redraw(echo, move || signal.set(waiting));
        }
        for (index, message) in changed {
            let existing = self.messages.with_untracked(|entries| entries.get(index).map(|e| e.message.clone()));
            match existing {
                Some(signal) => signal.set(message),
                None => self.messages.update(|entries| entries.push(entry(&message))),
            }
        }
        let (signal, version) = (self.turn, self.version);
        if let Some(turn) = turn {
            self.hold.redraw(echo, move || signal.set(turn));
        }
        let seq = event.seq;
        self.hold.redraw(echo, move || version.set(seq));
    }
}

fn entry(message: &Message) -> MessageEntry {
    MessageEntry { id: message.id.clone(), message: ArcRwSignal::new(message.clone()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::{InteractionOutcome, InteractionRequest};

    fn event(seq: u64, body: EventBody) -> SessionEvent {
        SessionEvent { seq, at_ms: 1_000 + seq as i64, body }
    }

    /// A thread whose agent asks a question (`q`) and waits.
    fn asking() -> ThreadState {
        let mut thread = Thread::default();
        let request = InteractionRequest::Question { questions: Vec::new() };
        for e in [
            event(1, EventBody::UserMessage { message_id: "u1".into(), text: "go".into(), attachments: Vec::new() }),
            event(2, EventBody::TurnStarted),
            event(3, EventBody::AssistantMessageStarted { message_id: "a1".into() }),
            event(
                4,
                EventBody::ToolCallStarted { message_id: "a1".into(), tool_use_id: "q".into(), name: "Ask".into() },
            ),
            event(5, EventBody::InteractionOpened { tool_use_id: "q".into(), request, expires_at_ms: None }),
        ] {
            thread.apply(&e);
        }
        ThreadState::new("s".into(), thread)
    }

    fn answered() -> SessionEvent {
        event(6, EventBody::InteractionResolved { tool_use_id: "q".into(), outcome: InteractionOutcome::Expired })
    }

    fn card_outcome(thread: &ThreadState) -> Option<InteractionOutcome> {
        let message = thread.messages.with_untracked(|m| m[1].message.clone());
        message.with_untracked(|m| match &m.blocks[0] {
            crate::thread::Block::ToolCall(call) => call.interaction.as_ref().and_then(|i| i.outcome.clone()),
            _ => None,
        })
    }

    #[test]
    fn a_turns_usage_is_drawn_under_its_reply_as_the_turn_ends() {
        let owner = Owner::new();
        owner.set();
        let thread = asking();
        let usage = crate::thread::Usage { output_tokens: Some(32), ..Default::default() };
        thread.apply(&event(
            6,
            EventBody::TurnEnded { outcome: crate::thread::TurnOutcome::Completed, usage: Some(usage.clone()) },
        ));
        let reply = thread.messages.with_untracked(|m| m[1].message.clone());
        assert_eq!(reply.with_untracked(|m| m.usage.clone()), Some(usage));
    }

    #[test]
    fn an_answer_sent_from_here_redraws_its_card_and_holds_the_rest_until_the_agent_goes_on() {
        let owner = Owner::new();
        owner.set();
        let thread = asking();
        assert!(thread.waiting.get_untracked());

        thread.hold.begin();
        thread.apply(&answered());
        assert_eq!(card_outcome(&thread), Some(InteractionOutcome::Expired), "the card shows the answer at once");
        assert!(thread.waiting.get_untracked(), "the status is drawn once the answer lands");
        assert_eq!(thread.version.get_untracked(), 5);

        // The session list, too, waits.
        let sessions = RwSignal::new(Vec::<&str>::new());
        thread.hold.redraw(true, move || sessions.set(vec!["s"]));
        assert!(sessions.with_untracked(Vec::is_empty));

        // The tool's result shows on its card, and the rest still waits.
        thread
            .apply(&event(7, EventBody::ToolResult { tool_use_id: "q".into(), output: "ok".into(), is_error: false }));
        let result = thread.messages.with_untracked(|m| m[1].message.clone()).with_untracked(|m| match &m.blocks[0] {
            crate::thread::Block::ToolCall(call) => call.result.clone(),
            _ => None,
        });
        assert_eq!(result.as_deref(), Some("ok"));
        assert!(thread.waiting.get_untracked());
        assert_eq!(thread.version.get_untracked(), 5);

        // The agent goes on: everything held is drawn, then its words.
        thread.apply(&event(8, EventBody::AssistantMessageStarted { message_id: "a2".into() }));
        assert!(!thread.hold.is_active());
        assert!(!thread.waiting.get_untracked());
        assert!(thread.turn.with_untracked(|t| t.working));
        assert_eq!(thread.version.get_untracked(), 8);
        assert_eq!(sessions.with_untracked(Vec::len), 1);
        assert_eq!(thread.messages.with_untracked(Vec::len), 3);
    }

    #[test]
    fn with_no_answer_sent_from_here_every_event_is_drawn_at_once() {
        let owner = Owner::new();
        owner.set();
        let thread = asking();
        thread.apply(&answered());
        assert!(!thread.waiting.get_untracked());
        assert_eq!(thread.version.get_untracked(), 6);
        let sessions = RwSignal::new(Vec::<&str>::new());
        thread.hold.redraw(true, move || sessions.set(vec!["s"]));
        assert_eq!(sessions.with_untracked(Vec::len), 1);
    }

    #[test]
    fn a_hold_ends_when_released_even_if_nothing_more_arrives() {
        let owner = Owner::new();
        owner.set();
        let thread = asking();
        thread.hold.begin();
        thread.apply(&answered());
        assert!(thread.waiting.get_untracked());
        // What the timer does after HOLD_AT_MOST.
        thread.hold.release();
        assert!(!thread.waiting.get_untracked());
        assert_eq!(thread.version.get_untracked(), 6);
    }
}
