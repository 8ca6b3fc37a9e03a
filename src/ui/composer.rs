//! The composer: Enter sends, Shift+Enter starts a new line; says why it cannot send when it
//! cannot; Stop interrupts the agent's turn. The draft survives a reload and a failed send.

use leptos::html;
use leptos::prelude::*;
use leptos::task::spawn_local;

use super::icons;
use super::navigation::{session_path, use_location};
use super::state::{ThreadState, use_workspace};
use crate::api::{create_session, interrupt_turn, send_message};
use crate::error::{AppError, MAX_MESSAGE_CHARS, validate_message};
use crate::live::ConnectionStatus;

#[component]
pub fn Composer(
    session: Option<String>,
    thread: Option<ThreadState>,
    /// The folder for the session a first message creates.
    workdir: Option<RwSignal<String>>,
    /// The permission mode for the session a first message creates.
    mode: Option<RwSignal<crate::approval::PermissionMode>>,
) -> impl IntoView {
    let workspace = use_workspace();
    let location = use_location();
    let input = NodeRef::<html::Textarea>::new();
    let draft = RwSignal::new(String::new());
    let sending = RwSignal::new(false);
    let stopping = RwSignal::new(false);
    let problem = RwSignal::new(None::<String>);
    let session = StoredValue::new(session);
    let draft_key = StoredValue::new(format!("askbridge:draft:{}", session.get_value().as_deref().unwrap_or("new")));

    // The box takes the focus, unless a question card is waiting for it.
    let take_focus = !thread.is_some_and(|t| t.waiting.get_untracked());
    restore_draft(draft, draft_key, input, take_focus);

    let working = move || thread.is_some_and(|t| t.turn.with(|turn| turn.working));
    let gone = move || matches!(workspace.connection.get(), ConnectionStatus::Closed(_));
    let too_long = move || draft.with(|d| d.chars().count() > MAX_MESSAGE_CHARS);
    // Why the message cannot be sent right now, in words; None when it can.
    let blocked = move || -> Option<String> {
        if !workspace.hydrated.get() {
            Some("Loading…".into())
        } else if gone() {
            Some("This session is no longer available.".into())
        } else if thread.is_some_and(|t| t.waiting.get()) {
            Some("The agent is waiting for your answer above. Answer it (or skip it, or deny it) to go on.".into())
        } else if working() {
            Some("The agent is working. Wait for it, or press Stop.".into())
        } else if sending.get() {
            Some("Sending…".into())
        } else if too_long() {
            Some(format!("The message is longer than {MAX_MESSAGE_CHARS} characters."))
        } else {
            None
        }
    };
    let can_send = move || blocked().is_none() && draft.with(|d| !d.trim().is_empty());

    let send = move || {
        if !can_send() {
            return;
        }
        let text = draft.get_untracked();
        if let Err(error) = validate_message(&text) {
            problem.set(Some(error.to_string()));
            return;
        }
        sending.set(true);
        problem.set(None);
        spawn_local(async move {
            let result: Result<Option<String>, AppError> = async {
                match session.get_value() {
                    Some(id) => send_message(id, text).await.map(|()| None),
                    None => {
                        let created =
                            create_session(workdir.map(|w| w.get_untracked()), mode.map(|m| m.get_untracked())).await?;
                        send_message(created.id.clone(), text).await?;
                        Ok(Some(created.id))
                    }
                }
            }
            .await;
            sending.set(false);
            match result {
                Ok(created) => {
                    draft.set(String::new());
                    save_draft(draft_key, "");
                    if let Some(id) = created {
                        location.navigate(&session_path(&id));
                    } else if let Some(el) = input.get_untracked() {
                        let _ = el.focus();
                    }
                }
                // The draft stays, so nothing typed is lost.
                Err(error) => problem.set(Some(error.to_string())),
            }
        });
    };
    let send_on_submit = send;

    let stop = move |_| {
        let Some(id) = session.get_value() else { return };
        stopping.set(true);
        spawn_local(async move {
            if let Err(error) = interrupt_turn(id).await {
                problem.set(Some(error.to_string()));
            }
            stopping.set(false);
        });
    };

    let hint = move || problem.get().or_else(blocked);
    view! {
        <form
            class="composer"
            on:submit=move |ev| {
                ev.prevent_default();
                send_on_submit();
            }
        >
            <div class="composer-box">
                <textarea
                    node_ref=input
                    class="composer-input"
                    aria-label="Message"
                    aria-describedby="composer-hint"
                    placeholder="Message the agent…"
                    rows="1"
                    prop:value=move || draft.get()
                    on:input=move |ev| {
                        let value = event_target_value(&ev);
                        save_draft(draft_key, &value);
                        draft.set(value);
                    }
                    on:keydown=move |ev| {
                        if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() {
                            ev.prevent_default();
                            send();
                        }
                    }
                ></textarea>
                <div class="composer-actions">
                    <button
                        type="button"
                        class="button stop"
                        hidden=move || !working()
                        on:click=stop
                        disabled=move || stopping.get()
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
                class:problem=move || problem.with(Option::is_some)
                class:idle=move || hint().is_none()
                aria-live="polite"
            >
                {move || hint().unwrap_or_default()}
            </p>
        </form>
    }
}

/// Brings back what was typed before a reload, and focuses the box.
#[allow(unused_variables)]
fn restore_draft(draft: RwSignal<String>, key: StoredValue<String>, input: NodeRef<html::Textarea>, take_focus: bool) {
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        if let Some(saved) = local_storage().and_then(|s| s.get_item(&key.get_value()).ok().flatten()) {
            draft.set(saved);
        }
        if let Some(el) = input.get().filter(|_| take_focus) {
            let _ = el.focus();
        }
    });
}

#[allow(unused_variables)]
fn save_draft(key: StoredValue<String>, value: &str) {
    #[cfg(feature = "hydrate")]
    if let Some(storage) = local_storage() {
        let key = key.get_value();
        let _ = if value.is_empty() { storage.remove_item(&key) } else { storage.set_item(&key, value) };
    }
}

#[cfg(feature = "hydrate")]
fn local_storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}
