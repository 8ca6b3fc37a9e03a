//! What the first load of a page leaves out (issue 12; the bytes are in docs/size.md). The open
//! session's pane (thread, messages, markdown, tool cards) and the interaction cards are WASM
//! chunks of their own (`cargo leptos build --split`), so the welcome page becomes interactive
//! without them. The browser fetches them when it is idle after hydration, or when one is first
//! drawn; a page the server drew with them fetches them before it hydrates, so that its HTML is
//! taken over as it is (a lazy view found missing while hydrating would be drawn a second time).

use leptos::prelude::*;

use super::state::ThreadState;
use super::workspace::SessionPane;
use crate::thread::SessionSummary;

/// The open session's pane: its header and the thread.
#[lazy]
pub fn session_pane(thread: ThreadState, initial: SessionSummary) -> AnyView {
    view! { <SessionPane thread initial /> }.into_any()
}

/// Draws a lazily loaded view: at once when its chunk is here (always on the server), else when
/// the chunk arrives.
pub fn when_loaded(view: impl Future<Output = AnyView> + Send + 'static) -> impl IntoView {
    Suspend::new(view)
}

/// Fetches the chunks that the page, as the server drew it, shows. Hydration waits for this.
#[cfg(feature = "hydrate")]
pub async fn before_hydration() {
    let shows = |selector: &str| document().query_selector(selector).ok().flatten().is_some();
    if shows(".thread") {
        __preload_session_pane().await;
    }
}

/// Fetches every chunk once the browser has nothing better to do, so that the first card or
/// session drawn after the welcome page does not wait for the network.
#[cfg(feature = "hydrate")]
pub fn prefetch_when_idle() {
    let prefetch = || {
        leptos::task::spawn_local(async {
            __preload_session_pane().await;
        })
    };
    // Safari has no requestIdleCallback: a second after hydration instead.
    if request_idle_callback_with_handle(prefetch).is_err() {
        set_timeout(prefetch, std::time::Duration::from_secs(1));
    }
}
