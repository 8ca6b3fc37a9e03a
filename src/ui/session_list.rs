//! The session list: most recent first, with create, switch, rename and delete. It lives as long
//! as the page; the open session is the one the address names.

use leptos::prelude::*;

use super::icons;
use super::navigation::{Page, session_path, use_location};
use super::server_call::{CallState, ServerCall};
use super::state::use_workspace;
use crate::api::{DeleteSession, RenameSession};
use crate::thread::SessionSummary;

#[component]
pub fn SessionList() -> impl IntoView {
    let workspace = use_workspace();
    let location = use_location();
    // Renames and deletes say here when they fail.
    let changes = CallState::new();
    let problem = move || workspace.opening.problem().or_else(|| changes.problem.get());
    let new_session = move |_| workspace.open_new_session(location, None);

    view! {
        <aside class="sidebar" aria-label="Sessions">
            <div class="sidebar-head">
                <a class="brand" href="/">
                    <span class="brand-mark" aria-hidden="true">{icons::bridge()}</span>
                    "AskBridge"
                </a>
                <button
                    class="button primary new-session"
                    on:click=new_session
                    disabled=move || !workspace.hydrated.get() || workspace.opening.pending()
                >
                    {icons::plus()}
                    "New session"
                </button>
            </div>
            {move || problem().map(|text| view! { <p class="list-problem" role="alert">{text}</p> })}
            <nav class="session-nav" aria-label="Session list">
                <ul class="session-items">
                    <For
                        each=move || workspace.sessions.get()
                        key=|s| (s.id.clone(), s.title.clone(), s.working, s.waiting)
                        let:summary
                    >
                        <SessionItem summary changes />
                    </For>
                </ul>
                <p class="empty-list" hidden=move || !workspace.sessions.with(Vec::is_empty)>
                    "No sessions yet."
                </p>
            </nav>
        </aside>
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Showing,
    Renaming,
    ConfirmingDelete,
}

#[component]
fn SessionItem(summary: SessionSummary, changes: CallState) -> impl IntoView {
    let workspace = use_workspace();
    let location = use_location();
    let mode = RwSignal::new(Mode::Showing);
    let draft = RwSignal::new(summary.title.clone());
    let id = StoredValue::new(summary.id.clone());
    let active = Memo::new(move |_| id.with_value(|id| location.page() == Page::Session(id.clone())));
    let rename = ServerCall::<RenameSession>::sharing(changes);
    let delete = ServerCall::<DeleteSession>::sharing(changes);
    let title = StoredValue::new(summary.title.clone());
    let href = session_path(&summary.id);
    let working = summary.working;
    let waiting = summary.waiting;
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

    // One element tree for every mode, shown and hidden: cheaper in the bundle than three views.
    let showing = move || mode.get() == Mode::Showing;
    view! {
        <li class="session-item" class:active=move || active.get() class:working=working>
            <a
                class="session-link"
                href=href
                aria-current=move || active.get().then_some("page")
                hidden=move || !showing()
                on:click=move |_| workspace.drawer_open.set(false)
            >
                <span class="session-name">{title.get_value()}</span>
                {waiting.then(|| view! { <span class="waiting-badge" title="A question waits for your answer">"Waiting"</span> })}
                {(working && !waiting).then(|| view! { <span class="working-dot" title="Working" aria-label="working"></span> })}
            </a>
            <span class="item-actions" hidden=move || !showing()>
                <button
                    class="icon-button"
                    aria-label=format!("Rename {}", title.get_value())
                    on:click=move |_| {
                        draft.set(title.get_value());
                        mode.set(Mode::Renaming);
                    }
                >
                    {icons::pencil()}
                </button>
                <button
                    class="icon-button"
                    aria-label=format!("Delete {}", title.get_value())
                    on:click=move |_| mode.set(Mode::ConfirmingDelete)
                >
                    {icons::trash()}
                </button>
            </span>
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
        </li>
    }
}
