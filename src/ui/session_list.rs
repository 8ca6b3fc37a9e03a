//! The session list: most recent first, with create, switch, rename and delete.

use leptos::prelude::*;
use leptos::task::spawn_local;

use super::icons;
use super::navigation::{session_path, use_location};
use super::state::use_workspace;
use crate::api::{create_session, delete_session, rename_session};
use crate::thread::SessionSummary;

#[component]
pub fn SessionList(current: Option<String>) -> impl IntoView {
    let workspace = use_workspace();
    let location = use_location();
    let problem = RwSignal::new(None::<String>);
    let creating = RwSignal::new(false);
    let current = StoredValue::new(current);

    let new_session = move |_| {
        creating.set(true);
        spawn_local(async move {
            match create_session(None, None).await {
                Ok(summary) => {
                    workspace.drawer_open.set(false);
                    location.navigate(&session_path(&summary.id));
                }
                Err(error) => problem.set(Some(error.to_string())),
            }
            creating.set(false);
        });
    };

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
                    disabled=move || !workspace.hydrated.get() || creating.get()
                >
                    {icons::plus()}
                    "New session"
                </button>
            </div>
            {move || problem.get().map(|text| view! { <p class="list-problem" role="alert">{text}</p> })}
            <nav class="session-nav" aria-label="Session list">
                <ul class="session-items">
                    <For
                        each=move || workspace.sessions.get()
                        key=|s| (s.id.clone(), s.title.clone(), s.working, s.waiting)
                        let:summary
                    >
                        <SessionItem
                            active=current.with_value(|c| c.as_deref() == Some(summary.id.as_str()))
                            summary
                            problem
                        />
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
fn SessionItem(summary: SessionSummary, active: bool, problem: RwSignal<Option<String>>) -> impl IntoView {
    let workspace = use_workspace();
    let location = use_location();
    let mode = RwSignal::new(Mode::Showing);
    let draft = RwSignal::new(summary.title.clone());
    let id = StoredValue::new(summary.id.clone());
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
        spawn_local(async move {
            match rename_session(id.get_value(), new_title).await {
                Ok(()) => mode.set(Mode::Showing),
                Err(error) => problem.set(Some(error.to_string())),
            }
        });
    };
    let remove = move |_| {
        spawn_local(async move {
            match delete_session(id.get_value()).await {
                Ok(()) => {
                    workspace.sessions.update(|list| list.retain(|s| s.id != id.get_value()));
                    if active {
                        location.navigate("/");
                    }
                }
                Err(error) => problem.set(Some(error.to_string())),
            }
        });
    };

    // One element tree for every mode, shown and hidden: cheaper in the bundle than three views.
    let showing = move || mode.get() == Mode::Showing;
    view! {
        <li class="session-item" class:active=active class:working=working>
            <a
                class="session-link"
                href=href
                aria-current=active.then_some("page")
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
