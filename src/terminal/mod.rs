//! Sessions AskBridge does not run (DESIGN §7): a `claude` started in a terminal, the ordinary
//! way, runs the hooks in the user's Claude Code settings, and AskBridge's hooks bring its
//! questions and permission prompts here, to be answered like an agent's own.
//!
//! - `settings.rs`: AskBridge's hooks added to and removed from `settings.json`, as text edits
//!   that leave every other byte of the file as it was;
//! - `connect.rs`: `askbridge connect` and `disconnect`: the hooks, and where the server is (in a
//!   file only the user can read);
//! - `hook.rs`: `askbridge hook`, the program the hooks run: never in the way;
//! - `wire.rs`: what the hook and the server say to each other;
//! - `relay.rs`: the server's side: a terminal session per Claude Code session, its cards through
//!   the bridge, what the terminal does for the session list;
//! - `process.rs`: which `claude` a hook runs for, and whether it still lives.

pub mod connect;
pub mod hook;
pub mod process;
pub mod relay;
pub mod settings;
pub mod wire;

use std::sync::Arc;

use axum::Router;
use axum::routing::post;

use crate::session::SessionManager;

/// The hooks' routes, behind the same access check as every `/api/` route.
pub fn routes<S: Clone + Send + Sync + 'static>(manager: Arc<SessionManager>) -> Router<S> {
    Router::new()
        .route(wire::HOOK_PATH, post(relay::hook))
        .route(wire::WITHDRAW_PATH, post(relay::withdraw))
        .with_state(relay::Relay::new(manager))
}
