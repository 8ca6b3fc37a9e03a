//! Sessions on the server: each session's event log (the one writer that numbers, applies, stores
//! and broadcasts its events), the SessionManager that creates, loads and deletes sessions and runs
//! their turns, and the sink through which a backend reports a turn.

mod log;
mod manager;
mod sink;
#[cfg(test)]
mod tests;

pub use crate::bridge::Timeouts;
pub use log::{EventObserver, SessionLog, SessionRuntime};
pub use manager::{SessionManager, SessionPolicy};
