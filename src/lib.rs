//! AskBridge: a browser chat UI for coding agents, built around answering their questions.
//!
//! The crate has two faces. With `ssr` it is the server (`server`, `session`'s manager, `store`,
//! `agent`, `live::hub`); with `hydrate` it is the WebAssembly bundle that takes over the
//! server-rendered page (`ui`, `live::client`). `thread` and `error` are shared by both.

#![recursion_limit = "256"]

pub mod api;
pub mod app;
pub mod approval;
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
pub mod ids;
#[cfg(feature = "ssr")]
pub mod server;
#[cfg(feature = "ssr")]
pub mod session;
#[cfg(feature = "ssr")]
pub mod store;

#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(app::App);
}
