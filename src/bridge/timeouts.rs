//! How long things wait: the person, before a question or approval expires; an agent, before
//! it is parked; a server's hold on a session's agent, before another server may take it; and a
//! turn owed to the person that could not start, before it is tried again.

use std::time::Duration;

/// How long the person has to answer (`None` waits as long as the agent does), how long an
/// agent waits before it is parked (`None`: it waits, running), and how long a server's hold on
/// a session's agent lasts unless renewed (`None`: [`DEFAULT_LEASE`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Timeouts {
    pub question: Option<Duration>,
    pub approval: Option<Duration>,
    pub park_after: Option<Duration>,
    pub lease: Option<Duration>,
    /// How long a turn owed to the person that could not start (a resume that failed) waits
    /// before it is tried again the first time (`None`: [`DEFAULT_RESUME_RETRY`]); each next try
    /// waits twice as long.
    pub resume_retry: Option<Duration>,
}

/// How long a server holds a session's agent (its lease) unless it renews it: after a crash,
/// what its sessions wait before another server takes them.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(15);

/// The first wait before an owed turn that could not start is tried again.
pub const DEFAULT_RESUME_RETRY: Duration = Duration::from_secs(5);

impl Timeouts {
    pub fn lease(&self) -> Duration {
        self.lease.unwrap_or(DEFAULT_LEASE)
    }

    pub fn resume_retry(&self) -> Duration {
        self.resume_retry.unwrap_or(DEFAULT_RESUME_RETRY)
    }
}
