//! A session item's rename form and the question whether to delete it, drawn by the session
//! pane's chunk when the item's pencil or bin is pressed (`lazy::session_edit`).

use leptos::prelude::*;

use super::navigation::use_location;
use super::server_call::CallState;
use super::server_call::ServerCall;
use super::state::use_workspace;
use crate::api::{DeleteSession, RenameSession};

/// What a session's item shows: its link, or (drawn by the chunk) its rename form or the
/// question whether to delete it.
#[derive(Clone, Copy, PartialEq)]
pub enum Mode {
    Showing,
    Renaming,
    ConfirmingDelete,
}

/// What a session item's rename form and delete question work on.
pub struct ItemEdit {
    pub id: StoredValue<String>,
    pub title: StoredValue<String>,
    pub mode: RwSignal<Mode>,
    /// The item is the open session (deleting it goes back to `/`).
    pub active: Memo<bool>,
    /// Where the list says what failed.
    pub changes: CallState,
}

pub fn session_edit(item: ItemEdit) -> impl IntoView {
    let ItemEdit { id, title, mode, active, changes } = item;
    let workspace = use_workspace();
    let location = use_location();
    let rename = ServerCall::<RenameSession>::sharing(changes);
    let delete = ServerCall::<DeleteSession>::sharing(changes);
    let draft = RwSignal::new(title.get_value());
    let rename_input = NodeRef::<leptos::html::Input>::new();
    // The title box takes the focus when it opens.
    Effect::new(move |_| {
        if mode.get() == Mode::Renaming
            && let Some(input) = rename_input.get()
        {
            let _ = input.focus();
            input.select();
        }
    });
    let save = move || {
        let new_title = draft.get_untracked();
        if new_title.trim().is_empty() || new_title == title.get_value() {
            mode.set(Mode::Showing);
            return;
        }
        rename.dispatch(RenameSession { id: id.get_value(), title: new_title }, move |()| mode.set(Mode::Showing));
    };
    let remove = move |_| {
        // The item may be gone when the answer comes (the live list drops it first).
        let (deleted, was_open) = (id.get_value(), active.get_untracked());
        delete.dispatch(DeleteSession { id: deleted.clone() }, move |()| {
            workspace.sessions.update(|list| list.retain(|s| s.id != deleted));
            if was_open {
                location.navigate("/");
            }
        });
    };
    // One element tree for both, shown and hidden: cheaper in the bundle than two views.
    view! {
        <form
            class="rename-form"
            hidden=move || mode.get() != Mode::Renaming
            on:submit=move |ev| {
                ev.prevent_default();
                save();
            }
        >
            <input
                node_ref=rename_input
                class="rename-input"
                aria-label="Session title"
                maxlength="200"
                prop:value=move || draft.get()
                on:input=move |ev| draft.set(event_target_value(&ev))
                on:keydown=move |ev| {
                    if ev.key() == "Escape" {
                        mode.set(Mode::Showing);
                    }
                }
            />
            <button type="submit" class="button small">"Save"</button>
        </form>
        <div
            class="confirm-delete"
            role="group"
            aria-label="Confirm delete"
            hidden=move || mode.get() != Mode::ConfirmingDelete
        >
            <span>"Delete “" {title.get_value()} "”?"</span>
            <button class="button small danger" on:click=remove>"Delete"</button>
            <button class="button small" on:click=move |_| mode.set(Mode::Showing)>"Cancel"</button>
        </div>
    }
}
