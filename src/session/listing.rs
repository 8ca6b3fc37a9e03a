//! What the person reads of the stored sessions: the list, in pages in the order of their activity,
//! a search, what every tab follows, the titles AskBridge gives sessions by itself; and a session's
//! stored events, for a tab that catches up.

use super::manager::SessionManager;
use crate::error::AppError;
use crate::store::StoreResult;
use crate::thread::{LIST_FIRST_PAGE, SessionCursor, SessionEvent, SessionSummary};

impl SessionManager {
    /// The session's stored events after `after`, at most `limit`, in order: what a tab that
    /// joins or falls behind reads before it follows the live ones.
    pub async fn events_after(&self, session: &str, after: u64, limit: u32) -> Result<Vec<SessionEvent>, AppError> {
        Ok(self.store().events_after(session, after, limit).await?)
    }

    /// The session's summary as stored (not loading it).
    pub async fn stored_summary(&self, session: &str) -> StoreResult<SessionSummary> {
        self.store().session(session).await
    }

    /// Every session, most recently active first.
    pub async fn list_sessions(&self) -> Result<Vec<SessionSummary>, AppError> {
        Ok(self.store().list_sessions().await?)
    }

    /// A page of the list: from its top, or after `after` (the last session of a page).
    pub async fn list_sessions_page(
        &self,
        after: Option<&SessionCursor>,
        limit: u32,
    ) -> Result<Vec<SessionSummary>, AppError> {
        Ok(self.store().list_sessions_page(after, limit).await?)
    }

    /// The sessions whose title or text holds `query`, at most `limit`.
    pub async fn search_sessions(&self, query: &str, limit: u32) -> Result<Vec<SessionSummary>, AppError> {
        Ok(self.store().search_sessions(query, limit).await?)
    }

    /// What every tab's list shows: its first page, and the sessions beyond it that work or wait.
    pub async fn list_for_tabs(&self) -> Result<Vec<SessionSummary>, AppError> {
        Ok(self.store().list_for_tabs(LIST_FIRST_PAGE).await?)
    }

    /// The agents' own ids of the conversations AskBridge's sessions hold (a Claude Code session
    /// it runs or continued): Claude Code's own list leaves them out, they are listed here.
    pub async fn agent_sessions(&self) -> Result<std::collections::HashSet<String>, AppError> {
        Ok(self.store().agent_sessions().await?.into_iter().collect())
    }
}
