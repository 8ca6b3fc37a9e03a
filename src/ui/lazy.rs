//! What the first load of a page leaves out (issue 12; the bytes are in docs/size.md). The open
//! session is a WASM chunk of its own (`scripts/build-site.mjs` splits it off), so the welcome page becomes
//! interactive without it:
//! - its pane (its header, the thread, markdown, tool cards, question and approval cards), and
//!   the list and the pages of Claude Code's own sessions (`claude_sessions.rs`), which share them;
//! - reading a session at all: its thread as the page or `load_session` carries it, and its live
//!   events. The code that decodes a thread and its events (a third of the bundle's serde code)
//!   lives only here, behind `take_over_session_pane`, `load_session` and the event reader.
//!
//! The browser fetches the chunk when it is idle after hydration, or when a session is first
//! shown. A session page the server drew hydrates without it too (issue 38: its link opens with
//! the first load of `/` and no more): the pane is left as the server drew it, in a slot that
//! hydration does not enter, and the chunk, fetched as the page starts, takes that very markup
//! over when it lands (`session_pane_in_place`), so that nothing is drawn twice and nothing a
//! person did meanwhile (a card answered early, `early_answer.rs`; a word typed) is lost.
//!
//! Hydration takes markup over as the server wrote it: it does not write what its own values
//! would change. So what the pane reads of the first load's state must not change before the
//! pane is taken over, or the change would never show: the bell reads the browser's permission,
//! and the session list takes the live stream's lists, once the page is interactive
//! (`workspace.hydrated`, set when the pane is); the message box is not focused before then
//! either, so that a card of the pane can take the focus as on a page drawn at once.

#[cfg(feature = "hydrate")]
use std::future::Future;
#[cfg(feature = "hydrate")]
use std::pin::Pin;

use leptos::prelude::*;

pub use super::chunk::ChunkMissing;
use super::claude_sessions::{ClaudeSessionsList, TranscriptPane};
use super::notify::Bell;
use super::session_pane::SessionPane;
use super::slash::{BoxList, SlashMenu};
use super::state::{NewSessionOptions, ThreadState};
use crate::api::SessionView;
use crate::error::AppError;
use crate::thread::SessionSummary;

/// The name of the chunk, as `__wasm_split_manifest.json` (written by the site build) knows it.
#[cfg(feature = "ssr")]
const SESSION_PANE_CHUNK: &str = "session_pane";

/// What is told the thread state of a session pane as the pane is drawn: the workspace points
/// its message box and its live stream at it.
pub type OnThread = Box<dyn FnOnce(ThreadState) + Send>;

/// The open session's pane: at once when its chunk is here (always on the server), else when it
/// arrives; a chunk that cannot be fetched (the server was updated since this page loaded, say)
/// leaves a note instead of breaking the page. The session's thread state is made by the chunk
/// (its code is there), and handed to `on_thread`. On the server it is the whole pane, in the
/// slot that the browser's first view of the page leaves alone (`session_pane_in_place`).
pub fn session_pane(view: SessionView, on_thread: OnThread) -> impl IntoView {
    Suspend::new(async move {
        #[cfg(not(feature = "hydrate"))]
        let drawn = draw_session_pane(view, on_thread);
        #[cfg(feature = "hydrate")]
        let drawn = draw_session_pane(view, on_thread).await;
        drawn.unwrap_or_else(|ChunkMissing| chunk_missing().into_any())
    })
}

// In the browser, a split point: `wasm_split` makes it async and moves what only it reaches into
// the chunk. `fallible`: a failed fetch is an error here, not a panic (which would abort the page).
#[cfg_attr(
    feature = "hydrate",
    leptos::wasm_split::wasm_split(
        session_pane,
        wasm_split_path = ::leptos::wasm_split,
        preload(preload_session_pane),
        fallible
    )
)]
#[cfg_attr(not(feature = "hydrate"), allow(clippy::unnecessary_wraps))]
fn draw_session_pane(view: SessionView, on_thread: OnThread) -> Result<AnyView, ChunkMissing> {
    let (thread, pane) = pane_of(view);
    on_thread(thread);
    Ok(pane)
}

/// A session's thread state, and its pane drawn from it.
fn pane_of(SessionView { summary, thread }: SessionView) -> (ThreadState, AnyView) {
    let thread = ThreadState::new(summary.id.clone(), thread);
    (thread, view! { <SessionPane thread initial=summary /> }.into_any())
}

/// The page of a Claude Code session (`/c/<id>`), drawn by the chunk.
pub fn transcript_pane(id: String) -> impl IntoView {
    Suspend::new(async move {
        #[cfg(feature = "ssr")]
        leptos::prefetch_lazy_fn_on_server(SESSION_PANE_CHUNK);
        #[cfg(not(feature = "hydrate"))]
        let drawn = draw_transcript_pane(id);
        #[cfg(feature = "hydrate")]
        let drawn = draw_transcript_pane(id).await;
        drawn.unwrap_or_else(|ChunkMissing| chunk_missing().into_any())
    })
}

#[cfg_attr(
    feature = "hydrate",
    leptos::wasm_split::wasm_split(
        session_pane,
        wasm_split_path = ::leptos::wasm_split,
        preload(preload_transcript_pane),
        fallible
    )
)]
#[cfg_attr(not(feature = "hydrate"), allow(clippy::unnecessary_wraps))]
fn draw_transcript_pane(id: String) -> Result<AnyView, ChunkMissing> {
    Ok(view! { <TranscriptPane id /> }.into_any())
}

/// The keyboard shortcuts' dialog, drawn by the chunk when `?` opens it.
pub fn keys_dialog(open: RwSignal<bool>) -> impl IntoView {
    Suspend::new(async move {
        #[cfg(not(feature = "hydrate"))]
        let drawn = draw_keys_dialog(open);
        #[cfg(feature = "hydrate")]
        let drawn = draw_keys_dialog(open).await;
        drawn.unwrap_or_else(|ChunkMissing| ().into_any())
    })
}

#[cfg_attr(
    feature = "hydrate",
    leptos::wasm_split::wasm_split(session_pane, wasm_split_path = ::leptos::wasm_split, fallible)
)]
#[cfg_attr(not(feature = "hydrate"), allow(clippy::unnecessary_wraps))]
fn draw_keys_dialog(open: RwSignal<bool>) -> Result<AnyView, ChunkMissing> {
    Ok(super::keys_dialog::keys_dialog(open).into_any())
}

/// A session item's rename form or delete question, drawn by the chunk when asked for.
pub fn session_edit(item: super::session_edit::ItemEdit) -> impl IntoView {
    Suspend::new(async move {
        #[cfg(not(feature = "hydrate"))]
        let drawn = draw_session_edit(item);
        #[cfg(feature = "hydrate")]
        let drawn = draw_session_edit(item).await;
        drawn.unwrap_or_else(|ChunkMissing| ().into_any())
    })
}

#[cfg_attr(
    feature = "hydrate",
    leptos::wasm_split::wasm_split(session_pane, wasm_split_path = ::leptos::wasm_split, fallible)
)]
#[cfg_attr(not(feature = "hydrate"), allow(clippy::unnecessary_wraps))]
fn draw_session_edit(item: super::session_edit::ItemEdit) -> Result<AnyView, ChunkMissing> {
    Ok(super::session_edit::session_edit(item).into_any())
}

/// The new-session page's folder, Agent, Model and Permissions, drawn by the chunk once the page
/// is interactive (nothing of them is in the server's HTML, so hydration never waits for them).
pub fn new_session_choices(options: NewSessionOptions) -> impl IntoView {
    Suspend::new(async move {
        #[cfg(not(feature = "hydrate"))]
        let drawn = draw_new_session_choices(options);
        #[cfg(feature = "hydrate")]
        let drawn = draw_new_session_choices(options).await;
        drawn.unwrap_or_else(|ChunkMissing| ().into_any())
    })
}

#[cfg_attr(
    feature = "hydrate",
    leptos::wasm_split::wasm_split(session_pane, wasm_split_path = ::leptos::wasm_split, fallible)
)]
#[cfg_attr(not(feature = "hydrate"), allow(clippy::unnecessary_wraps))]
fn draw_new_session_choices(options: NewSessionOptions) -> Result<AnyView, ChunkMissing> {
    super::box_keys::install();
    let choices = super::agent_choice::new_session_choices(options);
    Ok(super::new_session::new_session_options(super::state::use_workspace(), choices).into_any())
}

/// The message box's lists, drawn by the chunk: the `/` commands while the box starts with `/`,
/// the folder's files while an `@` word is typed.
pub fn box_list(bound: BoxList) -> impl IntoView {
    Suspend::new(async move {
        #[cfg(not(feature = "hydrate"))]
        let drawn = draw_box_list(bound);
        #[cfg(feature = "hydrate")]
        let drawn = draw_box_list(bound).await;
        drawn.unwrap_or_else(|ChunkMissing| ().into_any())
    })
}

#[cfg_attr(
    feature = "hydrate",
    leptos::wasm_split::wasm_split(session_pane, wasm_split_path = ::leptos::wasm_split, fallible)
)]
#[cfg_attr(not(feature = "hydrate"), allow(clippy::unnecessary_wraps))]
fn draw_box_list(bound: BoxList) -> Result<AnyView, ChunkMissing> {
    let BoxList { draft, input, whose, keys, take, files } = bound;
    let list = move || match files.get() {
        true => super::file_list::file_list(draft, input, whose, keys, take, files).into_any(),
        false => SlashMenu::new(draft, whose).view(keys, take).into_any(),
    };
    Ok(list.into_any())
}

/// The sidebar's list of Claude Code's sessions, drawn by the chunk when it is first opened.
pub fn claude_sessions_list() -> impl IntoView {
    Suspend::new(async move {
        #[cfg(not(feature = "hydrate"))]
        let drawn = draw_claude_sessions_list();
        #[cfg(feature = "hydrate")]
        let drawn = draw_claude_sessions_list().await;
        drawn.unwrap_or_else(|ChunkMissing| chunk_missing().into_any())
    })
}

#[cfg_attr(
    feature = "hydrate",
    leptos::wasm_split::wasm_split(
        session_pane,
        wasm_split_path = ::leptos::wasm_split,
        preload(preload_claude_sessions_list),
        fallible
    )
)]
#[cfg_attr(not(feature = "hydrate"), allow(clippy::unnecessary_wraps))]
fn draw_claude_sessions_list() -> Result<AnyView, ChunkMissing> {
    Ok(view! { <ClaudeSessionsList /> }.into_any())
}

/// Loads a session to show it (switching sessions without a reload): the request is made, and its
/// answer read, by the chunk. `Err` when the chunk cannot be fetched.
pub async fn load_session(id: String) -> Result<Result<SessionView, AppError>, ChunkMissing> {
    #[cfg(feature = "hydrate")]
    {
        Ok(load_session_in_chunk(id).await?.await)
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = id;
        Ok(Err(AppError::Internal { detail: "sessions are loaded by the browser".into() }))
    }
}

/// A page of the session list, or what a search found (`api::list_sessions`), asked and read by
/// the chunk: the request's code weighs on the first load otherwise (docs/size.md).
pub async fn list_sessions(
    after: Option<crate::thread::SessionCursor>,
    query: Option<String>,
) -> Result<Vec<SessionSummary>, AppError> {
    #[cfg(feature = "hydrate")]
    {
        let unreachable =
            |ChunkMissing| AppError::Unreachable { detail: "part of the page could not be loaded".into() };
        list_sessions_in_chunk(after, query).await.map_err(unreachable)?.await
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = (after, query);
        Ok(Vec::new())
    }
}

/// A server call's answer on its way, as the chunk hands it out.
#[cfg(feature = "hydrate")]
type Loading<T> = Pin<Box<dyn Future<Output = Result<T, AppError>>>>;

#[cfg(feature = "hydrate")]
#[leptos::wasm_split::wasm_split(session_pane, wasm_split_path = ::leptos::wasm_split, fallible)]
fn list_sessions_in_chunk(
    after: Option<crate::thread::SessionCursor>,
    query: Option<String>,
) -> Result<Loading<Vec<SessionSummary>>, ChunkMissing> {
    use server_fn::ServerFn;
    Ok(Box::pin(crate::api::ListSessions::run_on_client(crate::api::ListSessions { after, query, limit: None })))
}

/// The future that loads the session (a split point cannot be `async` itself). Reaching the chunk
/// also means that its event reader is set (`set_event_reader`) before the session is followed.
#[cfg(feature = "hydrate")]
#[leptos::wasm_split::wasm_split(session_pane, wasm_split_path = ::leptos::wasm_split, fallible)]
fn load_session_in_chunk(id: String) -> Result<Loading<SessionView>, ChunkMissing> {
    use server_fn::ServerFn;
    set_event_reader(super::session_pane::apply_live_event);
    Ok(Box::pin(crate::api::LoadSession::run_on_client(crate::api::LoadSession { id })))
}

/// The element the open session's pane is drawn in, on both faces and in both ways.
pub fn pane_slot(pane: AnyView) -> AnyView {
    view! { <div class="pane-slot">{pane}</div> }.into_any()
}

/// A session's pane as the server drew it in the page, taken over when the chunk lands: this
/// view's slot (`pane_slot`'s element) hydrates with no children, which leaves the server's
/// markup in it alone, and the chunk hydrates the pane into that markup later, under this view's
/// owner (the workspace's contexts). `ready` gets the session's state once the pane is live, or
/// `ChunkMissing`; not called when the person has moved to another page meanwhile.
#[cfg(feature = "hydrate")]
pub fn session_pane_in_place(ready: impl FnOnce(Result<ThreadState, ChunkMissing>) + 'static) -> AnyView {
    let owner = Owner::current();
    // Disposed with this view: then the pane is not taken over.
    let shown = StoredValue::new(());
    leptos::task::spawn_local(async move {
        let taken = take_over_session_pane(shown, owner).await;
        if shown.try_get_value().is_some() {
            ready(taken.and_then(|thread| thread.ok_or(ChunkMissing)));
        }
    });
    // No children at all (not even `()`, which has a marker of its own): not entered.
    view! { <div class="pane-slot"></div> }.into_any()
}

/// Reads the session the page carries (`SESSION_DATA_ID`) and hydrates its pane in the slot where
/// the server drew it; `None` when the page's data cannot be read or the slot is gone.
#[cfg(feature = "hydrate")]
#[leptos::wasm_split::wasm_split(session_pane, wasm_split_path = ::leptos::wasm_split, fallible)]
fn take_over_session_pane(shown: StoredValue<()>, owner: Option<Owner>) -> Result<Option<ThreadState>, ChunkMissing> {
    use leptos::tachys::hydration::Cursor;
    use leptos::tachys::view::{Position, PositionState, RenderHtml};
    use wasm_bindgen::JsCast;
    set_event_reader(super::session_pane::apply_live_event);
    let slot = document().query_selector(".pane-slot").ok().flatten();
    let (Some(slot), Some(())) = (slot, shown.try_get_value()) else { return Ok(None) };
    let text = document().get_element_by_id(super::page_data::SESSION_DATA_ID).and_then(|s| s.text_content());
    let Some(view) = text.and_then(|text| serde_json::from_str::<SessionView>(&text).ok()) else {
        return Ok(None);
    };
    let hydrate = move || {
        let (thread, pane) = pane_of(view);
        let drawn = super::focus::taking_over(|| {
            pane.hydrate::<true>(&Cursor::new(slot), &PositionState::new(Position::FirstChild))
        });
        // Kept while the pane is shown: the owner's cleanup drops it with the pane's effects.
        StoredValue::new_local(drawn);
        // The message box, which did not take the focus before the pane was here, takes it now
        // if no card waits and the person has not put it anywhere (a card takes it itself).
        let unplaced = document().active_element().is_none_or(|active| active.tag_name() == "BODY");
        if unplaced
            && !thread.waiting.get_untracked()
            && let Some(input) = document().get_element_by_id(super::slash::INPUT_ID)
            && let Ok(input) = input.dyn_into::<web_sys::HtmlElement>()
        {
            _ = input.focus();
        }
        thread
    };
    Ok(Some(match owner {
        Some(owner) => owner.with(hydrate),
        None => hydrate(),
    }))
}

/// How a live event's JSON reaches the open thread: a function of the chunk's.
pub type EventReader = fn(ThreadState, Bell, &str) -> bool;

thread_local! {
    static EVENT_READER: std::cell::Cell<Option<EventReader>> = const { std::cell::Cell::new(None) };
}

#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
fn set_event_reader(reader: EventReader) {
    EVENT_READER.with(|cell| cell.set(Some(reader)));
}

/// Applies a live event (`json`) to the open thread; false while the chunk that reads events is
/// not here yet.
pub fn read_live_event(thread: ThreadState, bell: Bell, json: &str) -> bool {
    EVENT_READER.with(|cell| cell.get()).is_some_and(|read| read(thread, bell, json))
}

pub fn chunk_missing() -> impl IntoView {
    view! {
        <section class="welcome problem-pane" role="alert">
            <h2>"This session could not be shown"</h2>
            <p>"Part of the page could not be loaded; the server may have been updated."</p>
            <p><a href="">"Reload the page"</a></p>
        </section>
    }
}

/// What the page needs before it hydrates: on a Claude Code session's page, the chunk. On a
/// session page, the chunk's fetch starts now, and hydration does not wait for it
/// (`session_pane_in_place`). `Err` if the chunk cannot be had (then the page is left as the
/// server drew it).
#[cfg(feature = "hydrate")]
pub async fn before_hydration() -> Result<(), ChunkMissing> {
    // A Claude Code session's page: the chunk draws its pane and the sidebar's list of Claude
    // Code's sessions (open on that page). Each is a split point with a loader of its own, and
    // each must be ready: a `Suspend` that waits while hydrating leaves the server's HTML
    // unmatched, and hydration panics (every cold load of /c/<id> did, found by `make bench`).
    let claude_page = window().location().pathname().is_ok_and(|path| path.starts_with("/c/"));
    if claude_page {
        preload_transcript_pane().await?;
        preload_claude_sessions_list().await?;
    }
    if document().get_element_by_id(super::page_data::SESSION_DATA_ID).is_some() {
        // Asked for before the page hydrates (which holds the thread for a while), not after;
        // Leptos's executor is not set up before hydration.
        wasm_bindgen_futures::spawn_local(async {
            _ = preload_session_pane().await;
        });
        _ = wasm_bindgen_futures::JsFuture::from(js_sys::Promise::resolve(&wasm_bindgen::JsValue::NULL)).await;
    }
    Ok(())
}

/// Fetches the chunk once the browser has nothing better to do, so that the first session drawn
/// after the welcome page does not wait for the network. A failure is retried when it is drawn.
#[cfg(feature = "hydrate")]
pub fn prefetch_when_idle() {
    let prefetch = || {
        leptos::task::spawn_local(async {
            _ = preload_session_pane().await;
        })
    };
    // Safari has no requestIdleCallback: a second after hydration instead.
    if request_idle_callback_with_handle(prefetch).is_err() {
        set_timeout(prefetch, std::time::Duration::from_secs(1));
    }
}
