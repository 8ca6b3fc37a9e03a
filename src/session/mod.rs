//! Sessions on the server:
//! - `log.rs`: the sessions loaded on this server, and the session list the tabs follow;
//! - `runtime.rs`: a loaded session's event log, the one writer that numbers, applies, stores
//!   and broadcasts its events, through one compare-and-set (`SessionRuntime::append_judged`);
//! - `ledger.rs`: the bridge's ledger, kept in the sessions' logs;
//! - `manager.rs`: the SessionManager, what a person does with sessions (create, load, delete,
//!   send a message, answer, decide, switch the mode);
//! - `turns.rs`: the agent's turns, started, run and ended, and those a stopped server left;
//! - `leases.rs`: which server runs a session's agent, where several share the store, and the
//!   fencing token its agent's writes carry;
//! - `team.rs`: a server among others on one store: their events followed, leases renewed, lost
//!   ones stopped, dead servers' sessions taken over;
//! - `policy.rs`: what sessions may do on this server (folders, modes);
//! - `sink.rs`: the sink through which a backend reports a turn;
//! - `attachments.rs`: files the person attaches, stored by their hash and read back for turns;
//! - `listing.rs`: the session list, its pages and search, and the titles given automatically;
//! - `files.rs`: the files of a session's folder, for the message box's `@` list;
//! - `outside.rs`: sessions AskBridge does not run (a `claude` in a terminal): made at their
//!   first hook, their calls shown, their cards through the same bridge.

mod attachments;
mod changes;
mod files;
mod leases;
mod ledger;
mod listing;
mod log;
mod manager;
mod outside;
mod policy;
#[cfg(test)]
mod queue_tests;
mod recovery;
mod runtime;
mod settings;
mod shell;
mod sink;
mod stream;
mod team;
#[cfg(test)]
mod tests;
mod turns;
mod worktree;

pub use crate::bridge::Timeouts;
pub use log::{DEFAULT_MAX_LOADED, LIST_FIRST_PAGE, SessionLog};
pub use manager::{NewSession, SessionManager};
pub use policy::SessionPolicy;
pub use runtime::{EventObserver, SessionRuntime};
