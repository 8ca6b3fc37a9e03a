//! Live events: one ordered stream per tab, carrying its session's events and the session list.
//!
//! Server-Sent Events rather than a websocket: the stream only ever flows to the browser (actions
//! go through server functions), SSE is plain HTTP so the token cookie, the Origin check and
//! proxies treat it like any other request, and each event carries its sequence number as the SSE
//! `id`. A tab that reconnects says the last number it saw (`?after=`, or the standard
//! `Last-Event-ID` header) and gets everything after it, from the store when memory has moved on.

#[cfg(feature = "hydrate")]
pub mod client;
#[cfg(feature = "ssr")]
pub mod hub;
#[cfg(feature = "ssr")]
pub mod sse;

/// The path of the live stream; `?session=<id>&after=<seq>`.
pub const LIVE_PATH: &str = "/api/live";
/// 204 for a signed-in browser, 401 otherwise (the server's `security::PING_PATH`): asked when
/// the stream fails, to tell a server that is down from a sign-in that is gone.
pub const PING_PATH: &str = "/api/ping";

/// SSE event names.
pub const SESSION_EVENT: &str = "session";
pub const SESSIONS_EVENT: &str = "sessions";
/// The server's heartbeat, so that the browser can tell a quiet stream from a dead one.
pub const HEARTBEAT_EVENT: &str = "ping";
/// A problem that ends the stream (an `AppError` as JSON), such as a deleted session.
pub const PROBLEM_EVENT: &str = "problem";

use crate::error::AppError;

/// How the tab's live stream is doing, for the banner that says so.
#[derive(Debug, Clone, PartialEq)]
pub enum ConnectionStatus {
    Connecting,
    Live,
    /// Lost; the next attempt is scheduled.
    Reconnecting {
        attempt: u32,
    },
    /// The server ended the stream for good (the session was deleted).
    Closed(AppError),
    /// The server is up but does not know this browser any more (its access token changed):
    /// nothing is retried until the person signs in again.
    SignedOut,
}
