//! The session list: the sessions the person was last active in first (what agents do in the
//! background moves nothing under the pointer; a session that needs the person says so where it
//! is), each with its status, its time, and its folder where titles repeat; with create, switch,
//! rename and delete. It lives as long as the page; the open session is the one the address names.

use leptos::prelude::*;

use super::icons;
use super::navigation::{Page, session_path, use_location};
use super::server_call::CallState;
use super::session_edit::{ItemEdit, Mode};
use super::state::use_workspace;
use super::time::local_time;
use crate::api::SESSIONS_PAGE;
use crate::thread::{LIST_FIRST_PAGE, SessionCursor, SessionStatus, SessionSummary};

#[component]
pub fn SessionList() -> impl IntoView {
    let workspace = use_workspace();
    let location = use_location();
    // Renames and deletes say here when they fail.
    let changes = CallState::new();
    let problem = move || workspace.opening.problem().or_else(|| changes.problem.get());
    // To the new-session page, where the folder, agent, model and mode are chosen and the session
    // is created with its first message: never an empty one.
    let new_session = move |_| {
        workspace.drawer_open.set(false);
        if location.page_untracked() != Page::Home {
            location.navigate("/");
        }
        focus_message_box();
    };
    let pages = ListPages::new(workspace.sessions);
    // Titles that more than one session has: those items show their folder too.
    let repeated = Memo::new(move |_| {
        pages.shown.with(|list| {
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
            <input
                type="search"
                class="session-search"
                aria-label="Search sessions"
                placeholder="Search sessions"
                on:input=move |ev| pages.search(event_target_value(&ev))
            />
            <nav class="session-nav" aria-label="Session list" on:scroll=move |ev| pages.near_the_end(&ev)>
                <ul class="session-items">
                    <For
                        each=move || pages.shown.get()
                        key=|s| (s.id.clone(), s.title.clone(), s.status(), s.active_at_ms, s.matched.clone())
                        let:summary
                    >
                        <SessionItem summary changes repeated />
                    </For>
                </ul>
                <p class="empty-list" hidden=move || !pages.shown.with(Vec::is_empty)>
                    {move || if pages.searching() { "No session matches." } else { "No sessions yet." }}
                </p>
                <button class="link-button show-older" hidden=move || !pages.has_more() on:click=move |_| pages.load_more()>
                    "Show older sessions"
                </button>
                <p class="list-problem" role="alert" hidden=move || pages.calls.problem.with(Option::is_none)>
                    {move || pages.calls.problem.get()}
                </p>
                {workspace.claude_sessions.then(|| claude_sessions_section(location))}
            </nav>
        </aside>
    }
}

/// Puts the focus in the message box, to write the new session's first message.
fn focus_message_box() {
    #[cfg(feature = "hydrate")]
    if let Some(el) = document().get_element_by_id(super::slash::INPUT_ID) {
        use wasm_bindgen::JsCast;
        _ = el.unchecked_ref::<web_sys::HtmlElement>().focus();
    }
}

/// The list beyond what every tab follows live (its first page, and what works or waits): older
/// pages loaded as the person scrolls to the end, or what a search found instead.
#[derive(Clone, Copy)]
struct ListPages {
    /// Pages after the live list, oldest last.
    older: RwSignal<Vec<SessionSummary>>,
    /// The last page asked for came back full: there may be more.
    more_to_come: RwSignal<bool>,
    /// What the search box holds, and what it found (`None`: no search).
    query: RwSignal<String>,
    found: RwSignal<Option<Vec<SessionSummary>>>,
    shown: Memo<Vec<SessionSummary>>,
    calls: CallState,
    waiting: StoredValue<Option<TimeoutHandle>>,
}

impl ListPages {
    fn new(live: RwSignal<Vec<SessionSummary>>) -> Self {
        let older = RwSignal::new(Vec::<SessionSummary>::new());
        let found = RwSignal::new(None::<Vec<SessionSummary>>);
        let shown = Memo::new(move |_| {
            if let Some(found) = found.get() {
                // What a search found, as the live list says it is now (renamed, working).
                return live.with(|live| {
                    let now = |s: SessionSummary| match live.iter().find(|l| l.id == s.id) {
                        Some(l) => SessionSummary { matched: s.matched, ..l.clone() },
                        None => s,
                    };
                    found.into_iter().map(now).collect()
                });
            }
            let mut list = live.get();
            older.with(|older| {
                for session in older {
                    if !list.iter().any(|s| s.id == session.id) {
                        list.push(session.clone());
                    }
                }
            });
            list
        });
        let full = live.with_untracked(Vec::len) >= LIST_FIRST_PAGE as usize;
        Self {
            older,
            more_to_come: RwSignal::new(full),
            query: RwSignal::new(String::new()),
            found,
            shown,
            calls: CallState::new(),
            waiting: StoredValue::new(None),
        }
    }

    fn searching(&self) -> bool {
        self.found.with(Option::is_some)
    }

    fn has_more(&self) -> bool {
        !self.searching() && self.more_to_come.get()
    }

    /// The page after the last session shown, in the list's order.
    fn load_more(&self) {
        if self.calls.pending.get_untracked() || !untrack(|| self.has_more()) {
            return;
        }
        let after = self.shown.with_untracked(|list| list.last().map(SessionSummary::cursor));
        let this = *self;
        self.ask(after, None, move |page| {
            this.more_to_come.set(page.len() >= SESSIONS_PAGE as usize);
            this.older.update(|older| older.extend(page));
        });
    }

    /// Asks the server for a page or a search (through the session pane's chunk, `lazy.rs`).
    fn ask(
        &self,
        after: Option<SessionCursor>,
        query: Option<String>,
        then: impl FnOnce(Vec<SessionSummary>) + 'static,
    ) {
        let calls = self.calls;
        calls.pending.set(true);
        calls.problem.set(None);
        leptos::task::spawn_local(async move {
            let result = super::lazy::list_sessions(after, query).await;
            calls.pending.try_set(false);
            match result {
                Ok(list) => then(list),
                Err(error) => _ = calls.problem.try_set(Some(error.to_string())),
            }
        });
    }

    /// Scrolled to near the list's end: the next page comes.
    fn near_the_end(&self, event: &leptos::ev::Event) {
        let Some(nav) = event.target().and_then(|t| wasm_bindgen::JsCast::dyn_into::<leptos::web_sys::Element>(t).ok())
        else {
            return;
        };
        if nav.scroll_top() + nav.client_height() + 200 >= nav.scroll_height() {
            self.load_more();
        }
    }

    /// Searches as the person types, a quarter second after the last key.
    fn search(&self, text: String) {
        self.query.set(text.clone());
        if let Some(timer) = self.waiting.get_value() {
            timer.clear();
        }
        if text.trim().is_empty() {
            self.found.set(None);
            return;
        }
        let this = *self;
        let timer = set_timeout_with_handle(
            move || {
                let asked = text.clone();
                this.ask(None, Some(text.clone()), move |found| {
                    // Only the answer to what the box still holds.
                    if this.query.get_untracked() == asked {
                        this.found.set(Some(found));
                    }
                });
            },
            std::time::Duration::from_millis(250),
        );
        self.waiting.set_value(timer.ok());
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

#[component]
fn SessionItem(summary: SessionSummary, changes: CallState, repeated: Memo<Vec<String>>) -> impl IntoView {
    let workspace = use_workspace();
    let location = use_location();
    let mode = RwSignal::new(Mode::Showing);
    let id = StoredValue::new(summary.id.clone());
    let active = Memo::new(move |_| id.with_value(|id| location.page() == Page::Session(id.clone())));
    let title = StoredValue::new(summary.title.clone());
    let href = session_path(&summary.id);
    let status = summary.status();
    let folder = summary.workdir.clone();
    let matched = summary.matched.clone();
    let title_repeats = Memo::new(move |_| title.with_value(|t| repeated.with(|r| r.contains(t))));
    let active_at = summary.active_at_ms;
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
                // A search's result says why it was found.
                {matched.map(|matched| view! { <span class="session-matched">{matched}</span> })}
            </a>
            <span class="item-actions" hidden=move || !showing()>
                <button
                    class="icon-button"
                    aria-label=format!("Rename {}", title.get_value())
                    on:click=move |_| mode.set(Mode::Renaming)
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
            // The form and the question are the chunk's: nothing of them is in the page until
            // asked for (the first load carries neither their code nor, per session, their HTML).
            {move || (!showing()).then(|| super::lazy::session_edit(ItemEdit { id, title, mode, active, changes }))}
        </li>
    }
}
