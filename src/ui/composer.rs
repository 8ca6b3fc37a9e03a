//! The composer: one message box for the whole workspace. It stays while the person moves
//! between sessions, so that what they type is never lost: text typed while a new session opens
//! lands in that session's box, and Enter pressed meanwhile sends it there once it is open.
//! Enter sends, Shift+Enter starts a new line; it says why it cannot send when it cannot; Stop
//! interrupts the agent's turn. While the agent works or waits for an answer, a message sent is
//! typed ahead: the server queues it for the next turn, and the thread shows it as queued. Each session's draft survives a reload and a failed send.

use leptos::html;
use leptos::prelude::*;

use super::attachments::Attachments;
use super::focus;
use super::icons;
use super::kept::Kept;

use super::navigation::{Page, use_location};
use super::server_call::ServerCall;
use super::slash::{BoxList, INPUT_ID, Key};
use super::state::{BoxKey, ThreadState, use_workspace};
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

#[component]
pub fn Composer(
    /// The pane shows no session to write to (a problem page).
    #[prop(into)]
    hidden: Signal<bool>,
) -> impl IntoView {
    let workspace = use_workspace();
    let location = use_location();
    let input = NodeRef::<html::Textarea>::new();
    let draft = RwSignal::new(String::new());
    // Enter was pressed while the session was opening: send once it is open.
    let queued = RwSignal::new(false);
    let send_call = ServerCall::<SendMessage>::new();
    let stop_call = ServerCall::<InterruptTurn>::new();
    let attachments = Attachments::new();

    let target = Memo::new(move |_| {
        if workspace.opening.pending() {
            return Target::Opening;
        }
        match location.page() {
            Page::Session(id) => Target::Session(id),
            _ => Target::NewSession,
        }
    });
    // Whose `/` commands the menu lists: the session's agent, or the agent a new session gets.
    let whose = Signal::derive(move || match target.get() {
        Target::Session(id) => (Some(id), String::new()),
        _ => (None, workspace.new_session.agent.get()),
    });
    // The `/` list's keys, while the chunk draws it.
    let slash_keys = StoredValue::new(None::<Callback<String, Key>>);
    let slashing = Memo::new(move |_| draft.with(|d| d.starts_with('/')));
    // The `@` list is open (opened by the chunk's keys as an `@` word is typed).
    let files = RwSignal::new(false);
    let listing = Memo::new(move |_| slashing.get() || files.get());
    // The thread of the session the box writes to, once the pane shows it (not while it loads).
    let thread = move || -> Option<ThreadState> {
        let shown = workspace.thread.get()?;
        target.with(|t| matches!(t, Target::Session(id) if shown.session().as_ref() == Some(id))).then_some(shown)
    };
    let working = move || thread().is_some_and(|t| t.turn.try_with(|turn| turn.working).unwrap_or(false));
    let waiting = move || thread().is_some_and(|t| t.waiting.try_get().unwrap_or(false));
    let gone = move || matches!(workspace.connection.get(), ConnectionStatus::Closed(_));
    let signed_out = move || workspace.connection.get() == ConnectionStatus::SignedOut;
    let too_long = move || draft.with(|d| d.chars().count() > MAX_MESSAGE_CHARS);
    // Why the message cannot be sent right now, in words; None when it can.
    let blocked = move || -> Option<String> {
        if !workspace.hydrated.get() {
            Some("Loading…".into())
        } else if target.with(|t| *t == Target::Opening) {
            Some(if queued.get() { "Sending…" } else { "Opening a new session…" }.into())
        } else if signed_out() {
            Some("Signed out: open the new sign-in link.".into())
        } else if gone() && thread().is_some() {
            Some("This session is no longer available.".into())
        } else if send_call.pending() {
            Some("Sending…".into())
        } else if attachments.uploading() {
            Some("Attaching…".into())
        } else if too_long() {
            Some(format!("The message is longer than {MAX_MESSAGE_CHARS} characters."))
        } else {
            None
        }
    };
    let has_text = move || draft.with(|d| !d.trim().is_empty());
    let can_send = move || blocked().is_none() && has_text();
    let focus_box = move || {
        if let Some(el) = input.get_untracked() {
            let _ = el.focus();
        }
    };
    // A card waiting for the person's answer keeps the focus it took.
    let focus_box_unless_asked = move || {
        if !untrack(waiting) {
            focus_box();
        }
    };

    let send = move || {
        let text = draft.get_untracked();
        if text.trim().is_empty() || !workspace.hydrated.get_untracked() {
            return;
        }
        // `/model` is the model switch of the page (the header's, or the new session's).
        if let Some(model) = text.trim().strip_prefix("/model").filter(|rest| rest.is_empty() || rest.starts_with(' '))
        {
            match switch_model(model.trim()) {
                Ok(()) => {
                    target.with_untracked(Target::kept).save("");
                    draft.set(String::new());
                }
                Err(problem) => send_call.state().problem.set(Some(problem)),
            }
            return;
        }
        if let Err(error) = validate_message(&text) {
            send_call.state().problem.set(Some(error.to_string()));
            return;
        }
        match target.get_untracked() {
            // The session is created first; the message follows once it is open (below).
            Target::NewSession => {
                queued.set(true);
                workspace.open_new_session(location, workspace.new_session);
            }
            Target::Opening => queued.set(true),
            Target::Session(id) => {
                if !untrack(can_send) {
                    return;
                }
                let kept = Kept::message_draft(Some(&id));
                let sent_to = Target::Session(id.clone());
                let input = SendMessage { session: id, text: text.clone(), attachments: attachments.hashes() };
                // A card that opens meanwhile may take the focus: this text is no longer being
                // written (what is typed after it is).
                focus::sending(&text);
                send_call.dispatch_then(input, move |result| {
                    focus::sent();
                    if result.is_err() {
                        return;
                    }
                    attachments.clear();
                    // What was typed after the sent text stays, in the box it was typed in.
                    let rest = |typed: &str| typed.strip_prefix(&text).map(|rest| rest.trim_start().to_string());
                    if target.get_untracked() == sent_to {
                        if let Some(rest) = draft.with_untracked(|d| rest(d)) {
                            kept.save(&rest);
                            draft.set(rest);
                        }
                        // The answer to this call can come after the agent already asked.
                        focus_box_unless_asked();
                    } else if let Some(rest) = kept.load().as_deref().and_then(rest) {
                        kept.save(&rest);
                    }
                });
            }
        }
    };

    // A command taken from the `/` menu: in the box, and sent when Enter took it.
    let take = move |key: Key| {
        if let Key::Take { text, send: now } = key {
            target.with_untracked(Target::kept).save(&text);
            draft.set(text);
            focus_box();
            if now {
                send();
            }
        }
    };

    // Where the person types, for the cards to know (`focus`).
    Effect::new(move |_| focus::watch_typing());

    // An example chosen on the welcome page: as if the person had typed it and pressed Enter.
    Effect::new(move |_| {
        if let Some(text) = workspace.compose.get() {
            workspace.compose.set(None);
            draft.set(text.clone());
            Target::NewSession.kept().save(&text);
            send();
        }
    });

    // The box follows the target: each session has its draft. Text typed while a session opened
    // comes along into it (joined to a draft it may have), and a queued message is sent.
    Effect::new(move |previous: Option<Target>| {
        let now = target.get();
        if previous.as_ref().is_some_and(|before| *before != now) {
            // A failed send was about the other session.
            send_call.state().problem.set(None);
            stop_call.state().problem.set(None);
        }
        match (previous, &now) {
            // The page is interactive: what this browser kept comes back.
            (None, _) => draft.set(now.kept().load().unwrap_or_default()),
            (Some(before), _) if before == now => {}
            (Some(Target::NewSession), Target::Opening) => {}
            // The session could not be created: the text stays, and waits for another Enter.
            (Some(Target::Opening), Target::NewSession) => queued.set(false),
            (Some(Target::Opening), Target::Session(id)) => {
                let opened = workspace.just_opened.with_value(|o| o.as_ref() == Some(id));
                let typed = draft.get_untracked();
                let kept = now.kept();
                let joined = match kept.load().filter(|d| !d.trim().is_empty()) {
                    Some(earlier) if !typed.trim().is_empty() && earlier != typed => format!("{earlier}\n{typed}"),
                    Some(earlier) if typed.trim().is_empty() => earlier,
                    _ => typed,
                };
                kept.save(&joined);
                Target::Opening.kept().forget();
                draft.set(joined);
                if queued.get_untracked() {
                    queued.set(false);
                    if opened {
                        send();
                    }
                }
            }
            (Some(_), _) => {
                queued.set(false);
                draft.set(now.kept().load().unwrap_or_default());
            }
        }
        focus_box_unless_asked();
        now
    });

    let stop = move |_: ()| {
        if let Some(id) = thread().and_then(|t| t.session()) {
            stop_call.dispatch(InterruptTurn { session: id }, |()| {});
        }
    };

    let problem = move || {
        send_call
            .problem()
            .or_else(|| stop_call.problem())
            .or_else(|| target.with(|t| *t == Target::NewSession).then(|| workspace.opening.problem()).flatten())
    };
    // What the agent is doing, when it cannot take a message now: what is sent waits for it.
    let status = move || {
        if waiting() {
            Some(ASKING)
        } else if working() {
            Some(WORKING)
        } else {
            None
        }
    };
    let hint = move || problem().or_else(blocked).or_else(|| status().map(String::from));
    view! {
        <form
            class="composer"
            hidden=move || hidden.get()
            on:submit=move |ev| {
                ev.prevent_default();
                send();
            }
        >
            // Drawn by the session pane's chunk, once there is something to list.
            {move || {
                listing.get().then(|| {
                    let take = Callback::new(take);
                    let bound = BoxList { draft, input, whose, keys: slash_keys, take, files };
                    super::lazy::box_list(bound)
                })
            }}
            <div class="composer-box">
                {attachments.tray()}
                <textarea
                    node_ref=input
                    class="composer-input"
                    aria-label="Message"
                    aria-describedby="composer-hint"
                    placeholder="Message the agent…"
                    rows="1"
                    prop:value=move || draft.get()
                    on:input=move |ev| {
                        if let Some(keys) = workspace.box_keys.get_value() {
                            keys.run(BoxKey { event: None, draft, input, files });
                        }
                        let value = event_target_value(&ev);
                        target.with_untracked(Target::kept).save(&value);
                        draft.set(value);
                    }
                    id=INPUT_ID
                    aria-autocomplete="list"
                    aria-controls="slash-list"
                    on:keydown=move |ev| {
                        if ev.is_composing() {
                            return;
                        }
                        let by_menu = match slash_keys.get_value() {
                            Some(keys) if !ev.shift_key() => keys.run(ev.key()),
                            _ => Key::Pass,
                        };
                        match by_menu {
                            Key::Pass => {
                                if ev.key() == "Enter" && !ev.shift_key() {
                                    ev.prevent_default();
                                    send();
                                } else if ev.key() == "Escape" && untrack(working) && !untrack(waiting) {
                                    ev.prevent_default();
                                    stop(());
                                } else if let Some(keys) = workspace.box_keys.get_value()
                                    && keys.run(BoxKey { event: Some(ev.clone()), draft, input, files })
                                {
                                    ev.prevent_default();
                                }
                            }
                            Key::Handled => ev.prevent_default(),
                            taken => {
                                ev.prevent_default();
                                take(taken);
                            }
                        }
                    }
                ></textarea>
                <div class="composer-actions">
                    <button
                        type="button"
                        class="button stop"
                        hidden=move || !working()
                        on:click=move |_| stop(())
                        disabled=move || stop_call.pending()
                    >
                        {icons::stop()}
                        "Stop"
                    </button>
                    <button
                        type="submit"
                        class="button primary send"
                        disabled=move || !can_send()
                        aria-describedby="composer-hint"
                    >
                        {icons::send()}
                        "Send"
                    </button>
                </div>
            </div>
            <p
                id="composer-hint"
                class="composer-hint"
                class:problem=move || problem().is_some()
                class:idle=move || hint().is_none()
                class:asking=move || problem().is_none() && blocked().is_none() && waiting()
                aria-live="polite"
            >
                {move || hint().unwrap_or_default()}
            </p>
        </form>
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
