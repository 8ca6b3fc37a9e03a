//! AskBridge: a browser chat UI for coding agents, built around answering their questions.
//!
//! The crate has two faces. With `ssr` it is the server; with `hydrate` it is the WebAssembly
//! bundle that takes over the server-rendered page. The modules, lowest layer first (an import
//! only ever points down this list; `tests/architecture.rs` checks it, `docs/architecture.md`
//! explains it):
//!
//! - `error`: typed errors for people, with their HTTP status (shared); `ids`: ids and the clock
//!   (server); `testing`: what the server's tests share: a wait on a condition, a private
//!   Postgres, a small full disk (server, hidden from the docs).
//! - `question`, `approval`, `interaction`: what the agent asks and how it ends (shared).
//! - `thread`: the conversation and its events, one reducer for server and browser (shared).
//! - `store` (SQLite or Postgres: sessions, event logs, leases, notices between servers) and
//!   `bridge` (an interaction's life: who waits, who wins) (server).
//! - `agent`: the backend trait, its output port (`TurnSink`), and the backends (server).
//! - `changes`: what an agent changed in a session's folder, as the Changes view shows it
//!   (shared).
//! - `notify`: reaching the person when nobody is looking: Web Push and webhooks (server).
//! - `folder`: the folders sessions work in: a checkpoint at each turn's start (a git repository
//!   of AskBridge's own), diffs, a turn undone, news of each write (server); `shell`: a terminal
//!   per session, a shell in a PTY with its scrollback (server).
//! - `session`: each session's event log, the manager of sessions, their turns and leases (server).
//! - `live`: live events (the hub and SSE route on the server, the client in the browser).
//! - `api`: the server functions, the edge the browser calls (both faces).
//! - `ui`, `app`: the components and the page shell (both faces, hydrated in the browser).
//! - `terminal`: a `claude` in a terminal, answered here through its hooks (server).
//! - `server`: the command line, the router, the access checks (server).

#![recursion_limit = "256"]

pub mod api;
pub mod app;
pub mod approval;
pub mod changes;
pub mod error;
pub mod interaction;
pub mod live;
pub mod question;
pub mod thread;
pub mod ui;

#[cfg(feature = "ssr")]
pub mod agent;
#[cfg(feature = "ssr")]
pub mod bridge;
#[cfg(feature = "ssr")]
pub mod folder;
#[cfg(feature = "ssr")]
pub mod ids;
#[cfg(feature = "ssr")]
pub mod notify;
#[cfg(feature = "ssr")]
pub mod server;
#[cfg(feature = "ssr")]
pub mod session;
#[cfg(feature = "ssr")]
pub mod shell;
#[cfg(feature = "ssr")]
pub mod store;
#[cfg(feature = "ssr")]
pub mod terminal;
#[cfg(feature = "ssr")]
#[doc(hidden)]
pub mod testing;

#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    // A session page waits for the code of what the server drew in it (`ui::lazy`).
    wasm_bindgen_futures::spawn_local(async {
        if ui::lazy::before_hydration().await.is_err() {
            // Hydrating without it would draw the session a second time.
            leptos::logging::error!("the session's code could not be fetched: the page stays as the server drew it");
            return;
        }
        leptos::mount::hydrate_body(app::App);
        ui::lazy::prefetch_when_idle();
    });
}
