//! The session's side panels, Changes, Files, Terminal and Worktree (`changes_view.rs`,
//! `files_view.rs`, `terminal_view.rs`, `worktree_view.rs`): a WASM chunk of their own (`changes`), fetched when one is first opened, so
//! that a session link's first load does not carry them (docs/size.md). Apart from `lazy.rs`,
//! which draws the session pane that opens them.

use leptos::prelude::*;

use super::chunk::ChunkMissing;
use super::state::ThreadState;
use crate::changes::Worktree;

/// The Changes panel, once its chunk is here.
pub fn changes_panel(thread: ThreadState, open: RwSignal<bool>) -> impl IntoView {
    Suspend::new(async move {
        #[cfg(not(feature = "hydrate"))]
        let drawn = draw_changes_panel(thread, open);
        #[cfg(feature = "hydrate")]
        let drawn = draw_changes_panel(thread, open).await;
        drawn.unwrap_or_else(|ChunkMissing| not_loaded().into_any())
    })
}

#[cfg_attr(
    feature = "hydrate",
    leptos::wasm_split::wasm_split(changes, wasm_split_path = ::leptos::wasm_split, fallible)
)]
#[cfg_attr(not(feature = "hydrate"), allow(clippy::unnecessary_wraps))]
fn draw_changes_panel(thread: ThreadState, open: RwSignal<bool>) -> Result<AnyView, ChunkMissing> {
    Ok(super::changes_view::changes_panel(thread, open).into_any())
}

/// The Files panel, once its chunk (the Changes panel's) is here.
pub fn files_panel(thread: ThreadState, open: RwSignal<bool>) -> impl IntoView {
    Suspend::new(async move {
        #[cfg(not(feature = "hydrate"))]
        let drawn = draw_files_panel(thread, open);
        #[cfg(feature = "hydrate")]
        let drawn = draw_files_panel(thread, open).await;
        drawn.unwrap_or_else(|ChunkMissing| not_loaded().into_any())
    })
}

#[cfg_attr(
    feature = "hydrate",
    leptos::wasm_split::wasm_split(changes, wasm_split_path = ::leptos::wasm_split, fallible)
)]
#[cfg_attr(not(feature = "hydrate"), allow(clippy::unnecessary_wraps))]
fn draw_files_panel(thread: ThreadState, open: RwSignal<bool>) -> Result<AnyView, ChunkMissing> {
    Ok(super::files_view::files_panel(thread, open).into_any())
}

/// The Terminal panel, once its chunk (the Changes panel's) is here; xterm.js itself comes after,
/// from `public/terminal.js`.
pub fn terminal_panel(thread: ThreadState, open: RwSignal<bool>) -> impl IntoView {
    Suspend::new(async move {
        #[cfg(not(feature = "hydrate"))]
        let drawn = draw_terminal_panel(thread, open);
        #[cfg(feature = "hydrate")]
        let drawn = draw_terminal_panel(thread, open).await;
        drawn.unwrap_or_else(|ChunkMissing| not_loaded().into_any())
    })
}

#[cfg_attr(
    feature = "hydrate",
    leptos::wasm_split::wasm_split(changes, wasm_split_path = ::leptos::wasm_split, fallible)
)]
#[cfg_attr(not(feature = "hydrate"), allow(clippy::unnecessary_wraps))]
fn draw_terminal_panel(thread: ThreadState, open: RwSignal<bool>) -> Result<AnyView, ChunkMissing> {
    Ok(super::terminal_view::terminal_panel(thread, open).into_any())
}

/// The Worktree panel, once its chunk (the Changes panel's) is here.
pub fn worktree_panel(
    thread: ThreadState,
    open: RwSignal<bool>,
    worktree: RwSignal<Option<Worktree>>,
) -> impl IntoView {
    Suspend::new(async move {
        #[cfg(not(feature = "hydrate"))]
        let drawn = draw_worktree_panel(thread, open, worktree);
        #[cfg(feature = "hydrate")]
        let drawn = draw_worktree_panel(thread, open, worktree).await;
        drawn.unwrap_or_else(|ChunkMissing| not_loaded().into_any())
    })
}

#[cfg_attr(
    feature = "hydrate",
    leptos::wasm_split::wasm_split(changes, wasm_split_path = ::leptos::wasm_split, fallible)
)]
#[cfg_attr(not(feature = "hydrate"), allow(clippy::unnecessary_wraps))]
fn draw_worktree_panel(
    thread: ThreadState,
    open: RwSignal<bool>,
    worktree: RwSignal<Option<Worktree>>,
) -> Result<AnyView, ChunkMissing> {
    Ok(super::worktree_view::worktree_panel(thread, open, worktree).into_any())
}

/// What a panel whose chunk could not be fetched shows (the server was updated since the page
/// loaded, say).
fn not_loaded() -> impl IntoView {
    view! {
        <aside class="changes-panel" role="alert">
            <p class="changes-empty">"This panel could not be loaded: the server may have been updated. "<a href="">"Reload the page"</a></p>
        </aside>
    }
}
