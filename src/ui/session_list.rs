//! The session list: the sessions the person was last active in first (what agents do in the
//! background moves nothing under the pointer; a session that needs the person says so where it
//! is), each with its status, its time, and its folder where titles repeat; with create, switch,
//! rename and delete. It lives as long as the page; the open session is the one the address names.

use leptos::prelude::*;

use super::icons;
use super::navigation::{Page, session_path, use_location};
use super::server_call::{CallState, ServerCall};
use super::state::use_workspace;
use super::time::local_time;
use crate::api::{DeleteSession, RenameSession};
use crate::thread::{SessionStatus, SessionSummary};

#[component]
pub fn SessionList() -> impl IntoView {
    let workspace = use_workspace();
    let location = use_location();
    // Renames and deletes say here when they fail.
    let changes = CallState::new();
    let problem = move || workspace.opening.problem().or_else(|| changes.problem.get());
    let new_session = move |_| workspace.open_new_session(location, None);
    // Titles that more than one session has: those items show their folder too.
    let repeated = Memo::new(move |_| {
        workspace.sessions.with(|list| {
            let mut titles: Vec<&str> = list.iter().map(|s| s.title.as_str()).collect();
            titles.sort_unstable();
            let mut repeated: Vec<String> =
                titles.windows(2).filter(|w| w[0] == w[1]).map(|w| w[0].to_string()).collect();
            repeated.dedup();
            repeated
        })
    });

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
                        key=|s| (s.id.clone(), s.title.clone(), s.working, s.waiting, s.active_at_ms)
                        let:summary
                    >
                        <SessionItem summary changes repeated />
                    </For>
                </ul>
                <p class="empty-list" hidden=move || !workspace.sessions.with(Vec::is_empty)>
                    "No sessions yet."
                </p>
                {workspace.claude_sessions.then(|| claude_sessions_section(location))}
            </nav>
        </aside>
    }
}

/// Claude Code's own sessions on this machine, folded until opened (then drawn by the session
/// pane's chunk); open at once on a Claude Code session's page.
fn claude_sessions_section(location: super::navigation::Location) -> impl IntoView {
    let on_claude_page = matches!(location.page_untracked(), Page::ClaudeSession(_));
    let open = RwSignal::new(on_claude_page);
    view! {
        <details
            class="claude-sessions"
            open=on_claude_page
            on:toggle=move |ev| {
                let details = event_target::<leptos::web_sys::HtmlDetailsElement>(&ev);
                open.set(details.open());
            }
        >
            <summary>"Claude Code sessions"</summary>
            {move || open.get().then(super::lazy::claude_sessions_list)}
        </details>
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Showing,
    Renaming,
    ConfirmingDelete,
}

#[component]
fn SessionItem(summary: SessionSummary, changes: CallState, repeated: Memo<Vec<String>>) -> impl IntoView {
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
    let status = summary.status();
    let folder = summary.workdir.clone();
    let title_repeats = Memo::new(move |_| title.with_value(|t| repeated.with(|r| r.contains(t))));
    let active_at = summary.active_at_ms;
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
        <li class="session-item" class:active=move || active.get() data-status=status.key()>
            <a
                class="session-link"
                href=href
                aria-current=move || active.get().then_some("page")
                hidden=move || !showing()
                on:click=move |_| workspace.drawer_open.set(false)
            >
                <span class="session-name">{title.get_value()}</span>
                <span class="session-sub">
                    {(status != SessionStatus::Ready).then(|| view! {
                        <span class="status-badge" data-status=status.key() title=status.explained()>
                            <span class="status-dot" aria-hidden="true"></span>
                            {status.label()}
                        </span>
                    })}
                    <span class="session-time">{local_time(active_at)}</span>
                    {folder.map(|folder| {
                        let name = folder.rsplit('/').find(|part| !part.is_empty()).unwrap_or("/").to_string();
                        view! { <span class="session-folder" title=folder hidden=move || !title_repeats.get()>{name}</span> }
                    })}
                </span>
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
