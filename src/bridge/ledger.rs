//! Where the bridge records: the port through which it reads an interaction as recorded and
//! records what it decided, one resolution at a time under the ledger's lock. In production the
//! ledger is the session's event log (`session/log.rs`); the bridge's tests use a map in memory.

use futures::future::BoxFuture;

use crate::error::AppError;
use crate::interaction::{Interaction, InteractionOutcome, InteractionRequest};

/// What the bridge decided about one resolution: what to record (if anything), and what the
/// person who sent it is told.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub record: Option<InteractionOutcome>,
    pub result: Result<(), AppError>,
}

impl Verdict {
    pub(super) fn record(outcome: InteractionOutcome) -> Self {
        Self { record: Some(outcome), result: Ok(()) }
    }

    pub(super) fn refuse(error: AppError) -> Self {
        Self { record: None, result: Err(error) }
    }
}

/// Where interactions are recorded, and the lock under which one is resolved at a time.
pub trait Ledger: Send + Sync {
    /// Records that tool call `tool_use_id` of `session` asks the person `request`, expiring at
    /// `expires_at_ms` (ms since the epoch) unless settled first — unless it was decided already
    /// (an agent resumed after a park asks again): then its outcome. Asked again while still
    /// open, it keeps the deadline it had.
    fn open<'a>(
        &'a self,
        session: &'a str,
        tool_use_id: &'a str,
        request: InteractionRequest,
        expires_at_ms: Option<i64>,
    ) -> BoxFuture<'a, Result<Option<InteractionOutcome>, AppError>>;

    /// Under the lock: records that no agent waits for the pending interaction any more and then
    /// calls `parked`; or, if it was decided meanwhile, returns that outcome and records nothing.
    fn park<'a>(
        &'a self,
        session: &'a str,
        tool_use_id: &'a str,
        parked: &'a (dyn Fn() + Send + Sync),
    ) -> BoxFuture<'a, Result<Option<InteractionOutcome>, AppError>>;

    /// Under the lock: reads the interaction, records the outcome `judge` picks (if any), and then,
    /// still under the lock, tells `recorded` what was recorded. `judge` is also told whether the
    /// session's agent runs on another server (which then waits, and hears of the outcome through
    /// the ledger). Returns the verdict; an unknown session or interaction is `SessionNotFound` or
    /// `InteractionNotFound`.
    fn settle<'a>(
        &'a self,
        session: &'a str,
        tool_use_id: &'a str,
        judge: &'a (dyn Fn(&Interaction, Elsewhere) -> Verdict + Send + Sync),
        recorded: &'a (dyn Fn(&InteractionOutcome) + Send + Sync),
    ) -> BoxFuture<'a, Result<Verdict, AppError>>;

    /// The open interactions whose deadline passed by `now_ms` (up to `limit` of them), and the
    /// next deadline after it: what the bridge's expiry timer is armed from.
    fn deadlines(&self, now_ms: i64, limit: u32) -> BoxFuture<'_, Result<Deadlines, AppError>>;
}

/// The open interactions whose deadline has passed, as (session, tool_use_id), the earliest
/// first; and the next deadline still to come (ms since the epoch), if any.
pub type Deadlines = (Vec<(String, String)>, Option<i64>);

/// Whether the session's agent runs on another server sharing the store, as far as the ledger
/// knows: then its waiters are that server's, not this bridge's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elsewhere(pub bool);
