//! Sessions on the server: the SessionManager that runs turns and appends events.

mod manager;

pub use manager::{SessionManager, SessionRuntime, Timeouts, TurnSink};
