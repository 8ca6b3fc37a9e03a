//! The session list: most recent first, with create, switch, rename and delete.

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::use_navigate;

use super::icons;
use super::state::use_workspace;
use crate::session::{create_session, delete_session, rename_session};
use crate::thread::SessionSummary;

#[component]
pub fn SessionList(current: Option<String>) -> impl IntoView {
    let workspace = use_workspace();
    let navigate = use_navigate();
    let problem = RwSignal::new(None::<String>);
    let creating = RwSignal::new(false);
    let current = StoredValue::new(current);

    let new_session = move |_| {
        let navigate = navigate.clone();
        creating.set(true);
        spawn_local(async move {
            match create_session().await {
                Ok(summary) => {
                    workspace.drawer_open.set(false);
                    navigate(&format!("/s/{}", summary.id), Default::default());
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
                        key=|s| (s.id.clone(), s.title.clone(), s.working)
                        let:summary
                    >
                        <SessionItem
                            active=current.with_value(|c| c.as_deref() == Some(summary.id.as_str()))
                            summary
                            problem
                        />
                    </For>
                </ul>
                <Show when=move || workspace.sessions.with(Vec::is_empty)>
                    <p class="empty-list">"No sessions yet."</p>
                </Show>
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
    let navigate = use_navigate();
    let mode = RwSignal::new(Mode::Showing);
    let draft = RwSignal::new(summary.title.clone());
    let id = StoredValue::new(summary.id.clone());
    let title = StoredValue::new(summary.title.clone());
    let href = format!("/s/{}", summary.id);
    let working = summary.working;

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
        let navigate = navigate.clone();
        spawn_local(async move {
            match delete_session(id.get_value()).await {
                Ok(()) => {
                    workspace.sessions.update(|list| list.retain(|s| s.id != id.get_value()));
                    if active {
                        navigate("/", Default::default());
                    }
                }
                Err(error) => problem.set(Some(error.to_string())),
            }
        });
    };

    view! {
        <li class="session-item" class:active=active class:working=working>
            {move || match mode.get() {
                Mode::Renaming => {
                    view! {
                        <form
                            class="rename-form"
                            on:submit=move |ev| {
                                ev.prevent_default();
                                save();
                            }
                        >
                            <input
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
                                autofocus
                            />
                            <button type="submit" class="button small">"Save"</button>
                        </form>
                    }
                        .into_any()
                }
                Mode::ConfirmingDelete => {
                    view! {
                        <div class="confirm-delete" role="group" aria-label="Confirm delete">
                            <span>"Delete “" {title.get_value()} "”?"</span>
                            <button class="button small danger" on:click=remove.clone()>"Delete"</button>
                            <button class="button small" on:click=move |_| mode.set(Mode::Showing)>"Cancel"</button>
                        </div>
                    }
                        .into_any()
                }
                Mode::Showing => {
                    view! {
                        <a
                            class="session-link"
                            href=href.clone()
                            aria-current=active.then_some("page")
                            on:click=move |_| workspace.drawer_open.set(false)
                        >
                            <span class="session-name">{title.get_value()}</span>
                            {working.then(|| view! { <span class="working-dot" title="Working" aria-label="working"></span> })}
                        </a>
                        <span class="item-actions">
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
                    }
                        .into_any()
                }
            }}
        </li>
    }
}
