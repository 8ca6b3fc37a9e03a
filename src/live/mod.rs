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

use std::time::Duration;

use crate::error::AppError;

/// A lost stream's tries double from a quarter of a second up to 0.8 s (under a second with the
/// browser's jitter): a restarted server is seen within a second (issue 37: at 15 s it took 7.7 s
/// after a 10 s outage). A try is one request that fails at once while nothing listens, and one
/// ping.
const FIRST_RETRY: Duration = Duration::from_millis(250);
const LAST_RETRY: Duration = Duration::from_millis(800);

/// The wait before the `attempt`th try (from 1) to reconnect, before jitter.
pub fn retry_delay(attempt: u32) -> Duration {
    FIRST_RETRY.saturating_mul(1 << attempt.saturating_sub(1).min(10)).min(LAST_RETRY)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_stream_retries_sooner_than_a_second_however_long_the_server_stays_away() {
        let waits: Vec<u128> = [1, 2, 3, 4, 10, 1_000, u32::MAX].map(|n| retry_delay(n).as_millis()).into();
        assert_eq!(waits, [250, 500, 800, 800, 800, 800, 800]);
        // With the browser's jitter of ±20 %, the longest wait stays under a second.
        assert!(LAST_RETRY.mul_f64(1.2) < Duration::from_secs(1));
    }
}
