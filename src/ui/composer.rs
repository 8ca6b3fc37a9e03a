//! The composer: one message box for the whole workspace. It stays while the person moves
//! between sessions, so that what they type is never lost: text typed while a new session opens
//! lands in that session's box, and Enter pressed meanwhile sends it there once it is open.
//! Enter sends, Shift+Enter starts a new line; it says why it cannot send when it cannot; Stop
//! interrupts the agent's turn. While the agent works or waits for an answer, a message sent is
//! typed ahead: the server queues it for the next turn, and the thread shows it as queued. Enter
//! pressed while the message before is still on its way sends the new one after it. Each
//! session's draft survives a reload and a failed send.

use leptos::html;
use leptos::prelude::*;

use super::attachments::Attachments;
use super::focus;
use super::icons;
use super::kept::Kept;

use super::navigation::{Location, Page, use_location};
use super::server_call::ServerCall;
use super::slash::{BoxList, INPUT_ID, Key};
use super::state::{BoxKey, ThreadState, Workspace, use_workspace};
use crate::api::{InterruptTurn, SendMessage};
use crate::error::{MAX_MESSAGE_CHARS, validate_message};
use crate::live::ConnectionStatus;

/// Where a message typed now goes.
#[derive(Debug, Clone, PartialEq)]
enum Target {
    /// The first message of a session it will create (the welcome page).
    NewSession,
    /// A session is being created; the message goes there once it is open.
    Opening,
    Session(String),
}

impl Target {
    fn kept(&self) -> Kept {
        match self {
            Self::Session(id) => Kept::message_draft(Some(id)),
            Self::NewSession | Self::Opening => Kept::message_draft(None),
        }
    }
}

/// The composer's state, and what the person's keys and clicks do to it: the box's draft and
/// where it goes, the calls that send and stop, and why it cannot send when it cannot.
#[derive(Clone, Copy)]
struct ComposerState {
    workspace: Workspace,
    location: Location,
    input: NodeRef<html::Textarea>,
    draft: RwSignal<String>,
    /// Enter was pressed while the session was opening, or while the message before was still
    /// on its way: send once it is open, or once that one arrived.
    queued: RwSignal<bool>,
    send_call: ServerCall<SendMessage>,
    stop_call: ServerCall<InterruptTurn>,
    attachments: Attachments,
    target: Memo<Target>,
    /// The `/` list's keys, while the chunk draws it.
    slash_keys: StoredValue<Option<Callback<String, Key>>>,
    /// The `@` list is open (opened by the chunk's keys as an `@` word is typed).
    files: RwSignal<bool>,
}

impl ComposerState {
    fn new() -> Self {
        let workspace = use_workspace();
        let location = use_location();
        let target = Memo::new(move |_| {
            if workspace.opening.pending() {
                return Target::Opening;
            }
            match location.page() {
                Page::Session(id) => Target::Session(id),
                _ => Target::NewSession,
            }
        });
        Self {
            workspace,
            location,
            input: NodeRef::new(),
            draft: RwSignal::new(typed_before_hydration()),
            queued: RwSignal::new(false),
            send_call: ServerCall::new(),
            stop_call: ServerCall::new(),
            attachments: Attachments::new(),
            target,
            slash_keys: StoredValue::new(None),
            files: RwSignal::new(false),
        }
    }

    /// The thread of the session the box writes to, once the pane shows it (not while it loads).
    fn thread(self) -> Option<ThreadState> {
        let shown = self.workspace.thread.get()?;
        self.target.with(|t| matches!(t, Target::Session(id) if shown.session().as_ref() == Some(id))).then_some(shown)
    }

    fn working(self) -> bool {
        self.thread().is_some_and(|t| t.turn.try_with(|turn| turn.working).unwrap_or(false))
    }

    fn waiting(self) -> bool {
        self.thread().is_some_and(|t| t.waiting.try_get().unwrap_or(false))
    }

    /// Why the message cannot be sent right now, in words; None when it can.
    fn blocked(self) -> Option<String> {
        let workspace = self.workspace;
        if !workspace.hydrated.get() {
            Some("Loading…".into())
        } else if self.target.with(|t| *t == Target::Opening) {
            Some(if self.queued.get() { "Sending…" } else { "Opening a new session…" }.into())
        } else if workspace.connection.get() == ConnectionStatus::SignedOut {
            Some("Signed out: open the new sign-in link.".into())
        } else if matches!(workspace.connection.get(), ConnectionStatus::Closed(_)) && self.thread().is_some() {
            Some("This session is no longer available.".into())
        } else if self.send_call.pending() {
            Some("Sending…".into())
        } else if self.attachments.uploading() {
            Some("Attaching…".into())
        } else if self.draft.with(|d| d.chars().count() > MAX_MESSAGE_CHARS) {
            Some(format!("The message is longer than {MAX_MESSAGE_CHARS} characters."))
        } else {
            None
        }
    }

    fn can_send(self) -> bool {
        self.blocked().is_none() && self.draft.with(|d| !d.trim().is_empty())
    }

    fn focus_box(self) {
        if let Some(el) = self.input.get_untracked() {
            let _ = el.focus();
        }
    }

    /// A card waiting for the person's answer keeps the focus it took. Not before the page is
    /// interactive: a session page's pane, with its cards, comes after the box, and places the
    /// focus itself (`lazy::take_over_session_pane`).
    fn focus_box_unless_asked(self) {
        if self.workspace.hydrated.get_untracked() && !untrack(|| self.waiting()) {
            self.focus_box();
        }
    }

    /// The box's text and caret, at once: the draft reaches the box in a later effect, and a key
    /// typed before then would land in the old text, or where the old caret was (it did, in
    /// composer.spec's `@` list test: the caret set a frame later came after the next key).
    fn put_in_box(self, text: &str, caret: Option<u32>) {
        if let Some(el) = self.input.get_untracked() {
            el.set_value(text);
            let caret = caret.unwrap_or_else(|| text.encode_utf16().count() as u32);
            let _ = el.set_selection_range(caret, caret);
        }
    }

    /// The box holds `text` now, kept for where it goes.
    fn set_draft(self, text: String) {
        self.target.with_untracked(Target::kept).save(&text);
        self.draft.set(text);
    }

    fn send(self) {
        let text = self.draft.get_untracked();
        if text.trim().is_empty() || !self.workspace.hydrated.get_untracked() {
            return;
        }
        // `/model` is the model switch of the page (the header's, or the new session's).
        if let Some(model) = text.trim().strip_prefix("/model").filter(|rest| rest.is_empty() || rest.starts_with(' '))
        {
            match switch_model(model.trim()) {
                Ok(()) => self.set_draft(String::new()),
                Err(problem) => self.send_call.state().problem.set(Some(problem)),
            }
            return;
        }
        if let Err(error) = validate_message(&text) {
            self.send_call.state().problem.set(Some(error.to_string()));
            return;
        }
        match self.target.get_untracked() {
            // The session is created first; the message follows once it is open (below).
            Target::NewSession => {
                self.queued.set(true);
                self.workspace.open_new_session(self.location, self.workspace.new_session);
            }
            Target::Opening => self.queued.set(true),
            Target::Session(id) => {
                if untrack(|| self.can_send()) {
                    self.send_to(id, text);
                } else if untrack(|| self.send_call.pending()) {
                    self.queued.set(true);
                }
            }
        }
    }

    fn send_to(self, id: String, text: String) {
        let kept = Kept::message_draft(Some(&id));
        let sent_to = Target::Session(id.clone());
        let input = SendMessage { session: id, text: text.clone(), attachments: self.attachments.hashes() };
        // A card that opens meanwhile may take the focus: this text is no longer being
        // written (what is typed after it is).
        focus::sending(&text);
        self.send_call.dispatch_then(input, move |result| {
            focus::sent();
            if result.is_err() {
                // What Enter queued behind it waits in the box, under the problem, for another.
                self.queued.set(false);
                return;
            }
            self.attachments.clear();
            // What was typed after the sent text stays, in the box it was typed in.
            let rest = |typed: &str| typed.strip_prefix(&text).map(|rest| rest.trim_start().to_string());
            if self.target.get_untracked() == sent_to {
                if let Some(rest) = self.draft.with_untracked(|d| rest(d)) {
                    kept.save(&rest);
                    self.draft.set(rest);
                }
                // The answer to this call can come after the agent already asked.
                self.focus_box_unless_asked();
                // What was written and sent with Enter meanwhile goes now (the sent text already
                // taken out of it above: nothing goes twice).
                if self.queued.get_untracked() {
                    self.queued.set(false);
                    self.send();
                }
            } else if let Some(rest) = kept.load().as_deref().and_then(rest) {
                kept.save(&rest);
            }
        });
    }

    /// A command taken from the `/` menu, or a path from the `@` list: in the box, and sent when
    /// Enter took it.
    fn take(self, key: Key) {
        if let Key::Take { text, send: now, caret } = key {
            self.put_in_box(&text, caret);
            self.set_draft(text);
            self.focus_box();
            if now {
                self.send();
            }
        }
    }

    /// An example chosen on the welcome page: as if the person had typed it and pressed Enter.
    fn compose_example(self) {
        if let Some(text) = self.workspace.compose.get() {
            self.workspace.compose.set(None);
            self.draft.set(text.clone());
            Target::NewSession.kept().save(&text);
            self.send();
        }
    }

    /// The box follows the target: each session has its draft. Text typed while a session opened
    /// comes along into it (joined to a draft it may have), and a queued message is sent.
    fn follow_target(self, previous: Option<Target>) -> Target {
        let now = self.target.get();
        if previous.as_ref().is_some_and(|before| *before != now) {
            // A failed send was about the other session.
            self.send_call.state().problem.set(None);
            self.stop_call.state().problem.set(None);
        }
        match (previous, &now) {
            // The page is interactive: what this browser kept comes back, unless the person typed
            // before that.
            (None, _) if self.draft.with_untracked(String::is_empty) => {
                self.draft.set(now.kept().load().unwrap_or_default());
            }
            (None, _) => {}
            (Some(before), _) if before == now => {}
            (Some(Target::NewSession), Target::Opening) => {}
            // The session could not be created: the text stays, and waits for another Enter.
            (Some(Target::Opening), Target::NewSession) => self.queued.set(false),
            (Some(Target::Opening), Target::Session(id)) => self.land_in_opened(id, &now),
            (Some(_), _) => {
                self.queued.set(false);
                self.draft.set(now.kept().load().unwrap_or_default());
            }
        }
        self.focus_box_unless_asked();
        now
    }

    /// The session being opened (`now`, whose id is `id`) is open: the text typed meanwhile joins
    /// its draft, and a message queued by Enter is sent if this is the session that opening made.
    fn land_in_opened(self, id: &str, now: &Target) {
        let opened = self.workspace.just_opened.with_value(|o| o.as_deref() == Some(id));
        let typed = self.draft.get_untracked();
        let kept = now.kept();
        let joined = match kept.load().filter(|d| !d.trim().is_empty()) {
            Some(earlier) if !typed.trim().is_empty() && earlier != typed => format!("{earlier}\n{typed}"),
            Some(earlier) if typed.trim().is_empty() => earlier,
            _ => typed,
        };
        kept.save(&joined);
        Target::Opening.kept().forget();
        self.draft.set(joined);
        if self.queued.get_untracked() {
            self.queued.set(false);
            if opened {
                self.send();
            }
        }
    }

    fn stop(self) {
        if let Some(id) = self.thread().and_then(|t| t.session()) {
            self.stop_call.dispatch(InterruptTurn { session: id }, |()| {});
        }
    }

    fn problem(self) -> Option<String> {
        self.send_call.problem().or_else(|| self.stop_call.problem()).or_else(|| {
            self.target.with(|t| *t == Target::NewSession).then(|| self.workspace.opening.problem()).flatten()
        })
    }

    /// What the agent is doing, when it cannot take a message now: what is sent waits for it.
    fn status(self) -> Option<&'static str> {
        if self.waiting() {
            Some(ASKING)
        } else if self.working() {
            Some(WORKING)
        } else {
            None
        }
    }

    fn hint(self) -> Option<String> {
        self.problem().or_else(|| self.blocked()).or_else(|| self.status().map(String::from))
    }

    fn on_input(self, ev: leptos::ev::Event) {
        let ComposerState { draft, input, files, .. } = self;
        if let Some(keys) = self.workspace.box_keys.get_value() {
            keys.run(BoxKey { event: None, draft, input, files });
        }
        self.set_draft(event_target_value(&ev));
    }

    /// Enter sends (the `/` list's keys first, while it is open), Esc stops a working agent, and
    /// the keys the chunk gives the box (`box_keys`) do the rest.
    fn on_keydown(self, ev: leptos::ev::KeyboardEvent) {
        let ComposerState { draft, input, files, .. } = self;
        if ev.is_composing() {
            return;
        }
        let by_menu = match self.slash_keys.get_value() {
            Some(keys) if !ev.shift_key() => keys.run(ev.key()),
            _ => Key::Pass,
        };
        match by_menu {
            Key::Pass => {
                if ev.key() == "Enter" && !ev.shift_key() {
                    ev.prevent_default();
                    self.send();
                } else if ev.key() == "Escape" && untrack(|| self.working() && !self.waiting()) {
                    ev.prevent_default();
                    self.stop();
                } else if let Some(keys) = self.workspace.box_keys.get_value()
                    && keys.run(BoxKey { event: Some(ev.clone()), draft, input, files })
                {
                    ev.prevent_default();
                }
            }
            Key::Handled => ev.prevent_default(),
            taken => {
                ev.prevent_default();
                self.take(taken);
            }
        }
    }
}

#[component]
pub fn Composer(
    /// The pane shows no session to write to (a problem page).
    #[prop(into)]
    hidden: Signal<bool>,
) -> impl IntoView {
    let state = ComposerState::new();

    // Where the person types, for the cards to know (`focus`).
    Effect::new(move |_| focus::watch_typing());
    Effect::new(move |_| state.compose_example());
    Effect::new(move |previous: Option<Target>| state.follow_target(previous));

    view! {
        <form
            class="composer"
            hidden=move || hidden.get()
            on:submit=move |ev| {
                ev.prevent_default();
                state.send();
            }
        >
            {box_list(state)}
            <div class="composer-box">
                {state.attachments.tray()}
                {message_box(state)}
                {composer_actions(state)}
            </div>
            {composer_hint(state)}
        </form>
    }
}

/// The `/` or `@` list above the box: drawn by the session pane's chunk, once there is something
/// to list.
fn box_list(state: ComposerState) -> impl IntoView {
    let ComposerState { workspace, draft, input, target, slash_keys, files, .. } = state;
    // Whose `/` commands the menu lists: the session's agent, or the agent a new session gets.
    let whose = Signal::derive(move || match target.get() {
        Target::Session(id) => (Some(id), String::new()),
        _ => (None, workspace.new_session.agent.get()),
    });
    let slashing = Memo::new(move |_| draft.with(|d| d.starts_with('/')));
    let listing = Memo::new(move |_| slashing.get() || files.get());
    move || {
        listing.get().then(|| {
            let take = Callback::new(move |key| state.take(key));
            let bound = BoxList { draft, input, whose, keys: slash_keys, take, files };
            super::lazy::box_list(bound)
        })
    }
}

/// What the server's message box holds as the page hydrates: it takes keys before the page's
/// code runs (which a session page with a card to answer holds back, `early_answer.rs`), and the
/// draft would otherwise overwrite them.
fn typed_before_hydration() -> String {
    #[cfg(feature = "hydrate")]
    if let Some(typed) = document()
        .get_element_by_id(INPUT_ID)
        .and_then(|el| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlTextAreaElement>(el).ok())
    {
        return typed.value();
    }
    String::new()
}

fn message_box(state: ComposerState) -> impl IntoView {
    let draft = state.draft;
    view! {
        <textarea
            node_ref=state.input
            class="composer-input"
            aria-label="Message"
            aria-describedby="composer-hint"
            placeholder="Message the agent…"
            rows="1"
            prop:value=move || draft.get()
            on:input=move |ev| state.on_input(ev)
            id=INPUT_ID
            aria-autocomplete="list"
            aria-controls="slash-list"
            on:keydown=move |ev| state.on_keydown(ev)
        ></textarea>
    }
}

fn composer_actions(state: ComposerState) -> impl IntoView {
    view! {
        <div class="composer-actions">
            <button
                type="button"
                class="button stop"
                hidden=move || !state.working()
                on:click=move |_| state.stop()
                disabled=move || state.stop_call.pending()
            >
                {icons::stop()}
                "Stop"
            </button>
            <button
                type="submit"
                class="button primary send"
                disabled=move || !state.can_send()
                aria-describedby="composer-hint"
            >
                {icons::send()}
                "Send"
            </button>
        </div>
    }
}

fn composer_hint(state: ComposerState) -> impl IntoView {
    view! {
        <p
            id="composer-hint"
            class="composer-hint"
            class:problem=move || state.problem().is_some()
            class:idle=move || state.hint().is_none()
            class:asking=move || state.problem().is_none() && state.blocked().is_none() && state.waiting()
            aria-live="polite"
        >
            {move || state.hint().unwrap_or_default()}
        </p>
    }
}

/// What the hint says while a card waits: the card may not have taken the focus (the person was
/// writing here), so it says where the card is and the key that goes to it.
const ASKING: &str =
    "The agent asks you something above: press Esc to go to it. What you send here waits for your answer.";

/// What the hint says while the agent works: a message is typed ahead (queued) for its next turn.
const WORKING: &str = "The agent is working: what you send now is queued for its next turn. Esc stops it.";

/// `/model` in the box: the page's model switch takes the focus, or, with a name, is switched to
/// it (as if picked). Says why not when the page has none or does not offer that model.
fn switch_model(model: &str) -> Result<(), String> {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let select = document()
            .query_selector("select[aria-label='Model']")
            .ok()
            .flatten()
            .and_then(|el| el.dyn_into::<web_sys::HtmlSelectElement>().ok())
            .ok_or("This agent offers no models to switch between.")?;
        if !model.is_empty() {
            let before = select.value();
            select.set_value(model);
            if select.value() != model {
                select.set_value(&before);
                return Err(format!("“{model}” is not one of the models offered: pick one from the list."));
            }
            let changed = web_sys::Event::new("change").map_err(|_| "The model could not be switched.")?;
            let _ = select.dispatch_event(&changed);
        }
        let _ = select.focus();
        Ok(())
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = model;
        Ok(())
    }
}
