//! One session on a SessionManager of the test's own, used as a person would: send a message,
//! wait for a question, answer it, wait for the turn's end; and the mock Messages API its agent
//! talks to. For the tests that drive an agent in the test's process (`anthropic_api.rs`,
//! `claude_cli.rs`).

use std::sync::Arc;
use std::time::Duration;

use askbridge::question::QuestionAnswer;
use askbridge::session::SessionManager;
use askbridge::testing::wait_until;
use askbridge::thread::{Block, Thread, ToolCall, TurnOutcome};

use super::mock_anthropic::MockAnthropic;

/// How long a test waits for an agent's turn (the real CLI starts in seconds).
const TURN: Duration = Duration::from_secs(60);

/// AskBridge's logs in the test's output: `RUST_LOG=askbridge=debug` shows what it (and the CLI)
/// did.
pub fn log_to_test_output() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

pub async fn thread_of(manager: &SessionManager, session: &str) -> Thread {
    manager.snapshot(session).await.unwrap().1
}

/// Waits until the session's turn has ended as `outcome`, and returns the thread.
pub async fn turn_ended(manager: &SessionManager, session: &str, outcome: TurnOutcome) -> Thread {
    wait_until(&format!("the turn to end {outcome:?}"), TURN, || async {
        let thread = thread_of(manager, session).await;
        (!thread.turn.working && thread.turn.last_outcome.as_ref() == Some(&outcome)).then_some(thread)
    })
    .await
}

/// Every tool call of the thread, in order.
pub fn tool_calls(thread: &Thread) -> Vec<&ToolCall> {
    thread
        .messages
        .iter()
        .flat_map(|m| m.blocks.iter())
        .filter_map(|b| match b {
            Block::ToolCall(call) => Some(call),
            _ => None,
        })
        .collect()
}

pub struct AgentSession {
    pub manager: Arc<SessionManager>,
    pub mock: MockAnthropic,
    pub session: String,
}

impl AgentSession {
    /// A new session on `manager`, whose agent talks to `mock`.
    pub async fn start(manager: Arc<SessionManager>, mock: MockAnthropic) -> Self {
        let session = manager.create_session(None).await.unwrap().id;
        Self { manager, mock, session }
    }

    pub async fn send(&self, text: &str) {
        self.manager.send_message(&self.session, text.into()).await.unwrap();
    }

    pub async fn thread(&self) -> Thread {
        thread_of(&self.manager, &self.session).await
    }

    /// Waits until the turn has ended as `outcome`.
    pub async fn turn_ended(&self, outcome: TurnOutcome) -> Thread {
        turn_ended(&self.manager, &self.session, outcome).await
    }

    /// Waits until the turn has ended, however it ended.
    pub async fn turn_end(&self) -> Thread {
        wait_until("the turn to end", TURN, || async {
            let thread = self.thread().await;
            (!thread.turn.working).then_some(thread)
        })
        .await
    }

    /// Waits for the turn to end on a failure, and returns its error.
    pub async fn failed(&self) -> (Thread, String) {
        wait_until("the turn to fail", TURN, || async {
            let thread = self.thread().await;
            match (&thread.turn.working, &thread.turn.last_outcome) {
                (false, Some(TurnOutcome::Failed { error })) => Some((thread.clone(), error.clone())),
                (false, Some(other)) => panic!("the turn ended {other:?}, not failed"),
                _ => None,
            }
        })
        .await
    }

    /// Waits until `count` interactions are pending, and returns their tool_use ids in order: as
    /// long as a turn, since the first card of a session waits for its agent's start too
    /// (OpenCode's cold start took over 30 s beside the site's WASM build of a fresh `make test`,
    /// 11 s alone).
    pub async fn pending(&self, count: usize) -> Vec<String> {
        wait_until("a pending question", TURN, || async {
            let thread = self.thread().await;
            let pending: Vec<String> = tool_calls(&thread)
                .into_iter()
                .filter(|c| c.interaction.as_ref().is_some_and(|i| i.is_pending()))
                .map(|c| c.id.clone())
                .collect();
            assert!(
                pending.len() >= count || thread.turn.working,
                "the turn ended before the question: {:?}",
                thread.turn.last_outcome
            );
            (pending.len() >= count).then_some(pending)
        })
        .await
    }

    pub async fn answer(&self, tool_use_id: &str, answers: Vec<QuestionAnswer>) {
        self.manager.answer_question(&self.session, tool_use_id, answers).await.unwrap();
    }

    /// The tool results the model was sent: (tool_use_id, text, is_error).
    pub fn model_saw(&self) -> Vec<(String, String, bool)> {
        self.mock.tool_results()
    }
}
