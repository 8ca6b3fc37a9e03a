//! How a turn ends when it does not complete: what a backend returns, and what the session
//! records as the turn's outcome.

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The turn was stopped through its cancellation token.
    #[error("interrupted")]
    Interrupted,
    /// The agent paused at a question or approval it left waiting (parked): the turn ends
    /// here, and the person's answer starts the next one (with `TurnRequest::resume`).
    #[error("paused until the person answers")]
    Parked,
    /// The session was deleted or the server is stopping: nobody will read the rest of the turn.
    #[error("the session is gone")]
    SessionGone,
    #[error("{0}")]
    Failed(String),
}
