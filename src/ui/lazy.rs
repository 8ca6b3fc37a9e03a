//! What the first load of a page leaves out (issue 12; the bytes are in docs/size.md). The open
//! session's pane (its header, the thread, markdown, tool cards, question and approval cards) is
//! a WASM chunk of its own (`cargo leptos build --split`), so the welcome page becomes
//! interactive without it. The browser fetches it when it is idle after hydration, or when a
//! session is first drawn; a session page the server drew fetches it before it hydrates (its
//! `<head>` preloads it), so that its HTML is taken over as it is.

use leptos::prelude::*;

use super::state::ThreadState;
use super::workspace::SessionPane;
use crate::thread::SessionSummary;

/// The name of the chunk, as `__wasm_split_manifest.json` (written by cargo-leptos) knows it.
#[cfg(feature = "ssr")]
const SESSION_PANE_CHUNK: &str = "session_pane";

/// The open session's pane: at once when its chunk is here (always on the server), else when it
/// arrives; a chunk that cannot be fetched (the server was updated since this page loaded, say)
/// leaves a note instead of breaking the page.
pub fn session_pane(thread: ThreadState, initial: SessionSummary) -> impl IntoView {
    Suspend::new(async move {
        #[cfg(feature = "ssr")]
        leptos::prefetch_lazy_fn_on_server(SESSION_PANE_CHUNK);
        #[cfg(not(feature = "hydrate"))]
        let drawn = draw_session_pane(thread, initial);
        #[cfg(feature = "hydrate")]
        let drawn = draw_session_pane(thread, initial).await;
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
fn draw_session_pane(thread: ThreadState, initial: SessionSummary) -> Result<AnyView, ChunkMissing> {
    Ok(view! { <SessionPane thread initial /> }.into_any())
}

/// The session pane's chunk could not be fetched.
#[derive(Debug, Clone, Copy)]
pub struct ChunkMissing;

#[cfg(feature = "hydrate")]
impl From<leptos::wasm_split::SplitLoaderError> for ChunkMissing {
    fn from(_: leptos::wasm_split::SplitLoaderError) -> Self {
        Self
    }
}

fn chunk_missing() -> impl IntoView {
    view! {
        <section class="welcome problem-pane" role="alert">
            <h2>"This session could not be shown"</h2>
            <p>"Part of the page could not be loaded; the server may have been updated."</p>
            <p><a href="">"Reload the page"</a></p>
        </section>
    }
}

/// Fetches the chunk when the page, as the server drew it, shows a session. Hydration waits for
/// this; `Err` if the chunk cannot be had (then the page is left as the server drew it).
#[cfg(feature = "hydrate")]
pub async fn before_hydration() -> Result<(), ChunkMissing> {
    if document().query_selector(".thread").ok().flatten().is_some() {
        preload_session_pane().await?;
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
