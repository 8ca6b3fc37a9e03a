//! The messages the person typed ahead (`TurnState::queue`), under the thread: each says when it
//! will be sent, and can be edited or removed until then; after a turn the person stopped, they
//! wait for "Send now" (or go with the next message).

use leptos::html;
use leptos::prelude::*;

use super::attachments::{attached_file, attached_image};
use super::server_call::ServerCall;
use super::state::ThreadState;
use crate::api::ChangeQueue;
use crate::error::validate_message;
use crate::thread::{AttachmentRef, Image, QueueChange, QueuedMessage, TurnOutcome};

/// Why the queue waits, in words (the queue waits for this, then goes).
fn waits_for(thread: ThreadState) -> &'static str {
    let held = thread.turn.with(|turn| !turn.working && turn.last_outcome == Some(TurnOutcome::Interrupted));
    if thread.waiting.get() {
        "Queued: sent once you have answered above"
    } else if held {
        "Not sent: you stopped the agent"
    } else {
        "Queued: sent when the agent's turn ends"
    }
}

/// The queue, at the end of the thread that `scroller` scrolls.
pub fn queued_messages(thread: ThreadState, scroller: NodeRef<html::Div>) -> impl IntoView {
    let call = ServerCall::<ChangeQueue>::new();
    let queue = Memo::new(move |_| thread.turn.with(|turn| turn.queue.clone()));
    let held = Memo::new(move |_| {
        thread.turn.with(|turn| !turn.working && turn.last_outcome == Some(TurnOutcome::Interrupted))
            && !thread.waiting.get()
    });
    // What was queued before the page showed it (a reload) stays where the person scrolled; what
    // is queued from now on is shown (`queued_message`).
    let shown_at_start: Vec<String> = queue.with_untracked(|q| q.iter().map(|m| m.id.clone()).collect());
    let send_now = move |_| {
        if let Some(session) = thread.session() {
            call.dispatch(ChangeQueue { session, change: QueueChange::SendNow }, |()| {});
        }
    };
    view! {
        <For each=move || queue.get() key=|queued| (queued.id.clone(), queued.text.clone()) let:queued>
            {
                let fresh = !shown_at_start.contains(&queued.id);
                queued_message(thread, call, queued, fresh.then_some(scroller))
            }
        </For>
        <div class="queued-actions" hidden=move || queue.with(Vec::is_empty) || !held.get()>
            <button type="button" class="button small primary" on:click=send_now disabled=move || call.pending()>
                "Send now"
            </button>
        </div>
        <p class="queued-problem" role="alert" hidden=move || call.problem().is_none()>
            {move || call.problem().unwrap_or_default()}
        </p>
    }
}

/// One queued message; `scroll`: the thread's scroller, when the message was queued while this
/// page showed the thread, so that it is scrolled into view (the queue is the thread's end: the
/// thread follows it again).
fn queued_message(
    thread: ThreadState,
    call: ServerCall<ChangeQueue>,
    queued: QueuedMessage,
    scroll: Option<NodeRef<html::Div>>,
) -> impl IntoView {
    let QueuedMessage { id, text, attachments, .. } = queued;
    if let Some(scroller) = scroll {
        request_animation_frame(move || {
            let Some(scroller) = scroller.try_get_untracked().flatten() else { return };
            thread.following.try_set_value(true);
            scroller.set_scroll_top(scroller.scroll_height());
        });
    }
    let editing = RwSignal::new(false);
    let editor = NodeRef::<html::Textarea>::new();
    let change = move |change: QueueChange| {
        if let Some(session) = thread.session() {
            call.dispatch(ChangeQueue { session, change }, move |()| editing.set(false));
        }
    };
    let (remove_id, save_id) = (id.clone(), id);
    let remove = move |_| change(QueueChange::Remove { message_id: remove_id.clone() });
    let save = move || {
        let Some(text) = editor.get_untracked().map(|el| el.value()) else { return };
        if let Err(error) = validate_message(&text) {
            call.state().problem.set(Some(error.to_string()));
            return;
        }
        change(QueueChange::Edit { message_id: save_id.clone(), text });
    };
    let files: Vec<AnyView> = attachments.iter().map(attachment).collect();
    view! {
        <article class="message queued" data-role="user" aria-label="Queued message">
            {queued_text(text, editing, editor, save.clone())}
            {files}
            {queued_note(thread, call, editing, save, remove)}
        </article>
    }
}

/// The message's text; while `editing`, a box to edit it in, which takes the focus as it opens:
/// Enter saves, Esc goes back to the text.
fn queued_text(
    text: String,
    editing: RwSignal<bool>,
    editor: NodeRef<html::Textarea>,
    save: impl Fn() + Clone + Send + Sync + 'static,
) -> impl IntoView {
    Effect::new(move |_| {
        if editing.get()
            && let Some(el) = editor.get()
        {
            let _ = el.focus();
        }
    });
    move || {
        if editing.get() {
            queued_editor(text.clone(), editing, editor, save.clone()).into_any()
        } else {
            view! { <p class="plain-text">{text.clone()}</p> }.into_any()
        }
    }
}

fn queued_editor(
    original: String,
    editing: RwSignal<bool>,
    editor: NodeRef<html::Textarea>,
    save: impl Fn() + Send + Sync + 'static,
) -> impl IntoView {
    view! {
        <textarea
            node_ref=editor
            class="queued-editor"
            aria-label="Edit the queued message"
            rows="3"
            prop:value=original
            on:keydown=move |ev| {
                if ev.is_composing() {
                    return;
                }
                if ev.key() == "Enter" && !ev.shift_key() {
                    ev.prevent_default();
                    save();
                } else if ev.key() == "Escape" {
                    ev.prevent_default();
                    ev.stop_propagation();
                    editing.set(false);
                }
            }
        ></textarea>
    }
}

/// When the message will be sent, and its buttons: Edit and Remove, or, while `editing`, Save and
/// Cancel.
fn queued_note(
    thread: ThreadState,
    call: ServerCall<ChangeQueue>,
    editing: RwSignal<bool>,
    save: impl Fn() + Send + Sync + 'static,
    remove: impl Fn(leptos::ev::MouseEvent) + Send + Sync + 'static,
) -> impl IntoView {
    view! {
        <p class="queued-note">
            <span class="queued-when">{move || waits_for(thread)}</span>
            <span class="queued-buttons">
                <button
                    type="button"
                    class="link-button"
                    hidden=move || editing.get()
                    disabled=move || call.pending()
                    on:click=move |_| editing.set(true)
                >
                    "Edit"
                </button>
                <button
                    type="button"
                    class="link-button"
                    hidden=move || !editing.get()
                    disabled=move || call.pending()
                    on:click=move |_| save()
                >
                    "Save"
                </button>
                <button
                    type="button"
                    class="link-button"
                    hidden=move || !editing.get()
                    on:click=move |_| editing.set(false)
                >
                    "Cancel"
                </button>
                <button
                    type="button"
                    class="link-button"
                    hidden=move || editing.get()
                    disabled=move || call.pending()
                    on:click=remove
                >
                    "Remove"
                </button>
            </span>
        </p>
    }
}

fn attachment(file: &AttachmentRef) -> AnyView {
    match file.kind() {
        Some(crate::thread::attachment::Kind::Image(_)) => attached_image(&Image::attached(file)).into_any(),
        _ => attached_file(file).into_any(),
    }
}
