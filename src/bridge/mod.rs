//! The InteractionBridge: who is waiting for which answer.
//!
//! An agent that asks the person something registers here, keyed by `(session, tool_use_id)`,
//! and waits on the receiver it gets back. The SessionManager decides which resolution wins (under
//! the session's lock, with the thread as the record: first wins, the same answer again is
//! accepted, a different one is refused), stores it, and then delivers it here. The bridge also
//! keeps each answer for the override step of agents that fill in a tool's result by themselves
//! (`store_answer` / `take_answer`).

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::oneshot;

use crate::interaction::InteractionOutcome;
use crate::question::QuestionAnswer;

type Key = (String, String);

fn key(session: &str, tool_use_id: &str) -> Key {
    (session.to_string(), tool_use_id.to_string())
}

#[derive(Default)]
pub struct InteractionBridge {
    waiters: Mutex<HashMap<Key, oneshot::Sender<InteractionOutcome>>>,
    answers: Mutex<HashMap<Key, Vec<QuestionAnswer>>>,
}

impl InteractionBridge {
    /// Starts waiting for the outcome of `tool_use_id`; call before announcing the question so
    /// that even an instant answer finds its way.
    pub fn register(&self, session: &str, tool_use_id: &str) -> oneshot::Receiver<InteractionOutcome> {
        let (tx, rx) = oneshot::channel();
        self.waiters.lock().expect("bridge lock").insert(key(session, tool_use_id), tx);
        rx
    }

    /// Whether an agent still waits for this interaction.
    pub fn is_waiting(&self, session: &str, tool_use_id: &str) -> bool {
        self.waiters.lock().expect("bridge lock").get(&key(session, tool_use_id)).is_some_and(|tx| !tx.is_closed())
    }

    /// Hands the outcome to the waiting agent. False when nobody waits any more.
    pub fn deliver(&self, session: &str, tool_use_id: &str, outcome: InteractionOutcome) -> bool {
        let waiter = self.waiters.lock().expect("bridge lock").remove(&key(session, tool_use_id));
        waiter.is_some_and(|tx| tx.send(outcome).is_ok())
    }

    /// The agent stopped waiting (its turn was stopped).
    pub fn forget(&self, session: &str, tool_use_id: &str) {
        self.waiters.lock().expect("bridge lock").remove(&key(session, tool_use_id));
    }

    /// Drops everything kept for a session whose agent is gone.
    pub fn forget_session(&self, session: &str) {
        self.waiters.lock().expect("bridge lock").retain(|(s, _), _| s != session);
        self.answers.lock().expect("bridge lock").retain(|(s, _), _| s != session);
    }

    /// Keeps the person's answer until the agent's tool result arrives.
    pub fn store_answer(&self, session: &str, tool_use_id: &str, answers: Vec<QuestionAnswer>) {
        self.answers.lock().expect("bridge lock").insert(key(session, tool_use_id), answers);
    }

    /// The person's answer to `tool_use_id`, once: for replacing an auto-filled tool result.
    pub fn take_answer(&self, session: &str, tool_use_id: &str) -> Option<Vec<QuestionAnswer>> {
        self.answers.lock().expect("bridge lock").remove(&key(session, tool_use_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_delivered_outcome_reaches_the_waiter_once() {
        let bridge = InteractionBridge::default();
        let rx = bridge.register("s", "t");
        assert!(bridge.is_waiting("s", "t"));
        assert!(bridge.deliver("s", "t", InteractionOutcome::Expired));
        assert_eq!(rx.await.unwrap(), InteractionOutcome::Expired);
        assert!(!bridge.deliver("s", "t", InteractionOutcome::Expired));
        assert!(!bridge.is_waiting("s", "t"));
    }

    #[tokio::test]
    async fn a_waiter_that_gave_up_is_not_waiting() {
        let bridge = InteractionBridge::default();
        drop(bridge.register("s", "t"));
        assert!(!bridge.is_waiting("s", "t"));
        assert!(!bridge.deliver("s", "t", InteractionOutcome::Expired));
    }

    #[test]
    fn an_answer_is_taken_once_and_forgotten_with_its_session() {
        let bridge = InteractionBridge::default();
        let answer = vec![QuestionAnswer { question: "Q".into(), labels: vec!["A".into()], ..Default::default() }];
        bridge.store_answer("s", "t", answer.clone());
        assert_eq!(bridge.take_answer("s", "t"), Some(answer.clone()));
        assert_eq!(bridge.take_answer("s", "t"), None);
        bridge.store_answer("s", "t", answer);
        let _rx = bridge.register("s", "u");
        bridge.forget_session("s");
        assert_eq!(bridge.take_answer("s", "t"), None);
        assert!(!bridge.is_waiting("s", "u"));
    }
}
