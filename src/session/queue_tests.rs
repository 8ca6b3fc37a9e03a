//! Typing ahead: messages the person sends while the agent works or waits for them wait in the
//! session's queue, editable and removable, and the next turn takes them; never instead of an
//! answer, never lost (a stop, a restart).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::Semaphore;

use super::{SessionManager, Timeouts};
use crate::agent::scripted::fixtures::ASKS_WHICH_AUTH;
use crate::agent::scripted::{Scenario, ScriptedAgent};
use crate::agent::{AgentBackend, AgentError, Sink, TurnRequest};
use crate::error::AppError;
use crate::interaction::InteractionOutcome;
use crate::question::QuestionAnswer;
use crate::store::Store;
use crate::testing::wait_until;
use crate::thread::{Block, QueueChange, Role, Thread, TurnOutcome, Usage};

/// The scripted agent, each of whose turns waits for a permit (`let_one_turn_end`) before it
/// goes on, and which records the text of every turn it is given: the test decides when a turn
/// ends, so that a message is sent while the agent surely works.
struct Gated {
    inner: ScriptedAgent,
    gate: Semaphore,
    told: Mutex<Vec<String>>,
}

impl Gated {
    fn new(scenario: &str) -> Arc<Self> {
        Arc::new(Self {
            inner: ScriptedAgent::new(Scenario::parse(scenario, "test").unwrap()),
            gate: Semaphore::new(0),
            told: Mutex::new(Vec::new()),
        })
    }

    fn let_one_turn_end(&self) {
        self.gate.add_permits(1);
    }

    fn told(&self) -> Vec<String> {
        self.told.lock().unwrap().clone()
    }
}

impl AgentBackend for Gated {
    fn name(&self) -> &'static str {
        "scripted"
    }

    fn run_turn(&self, request: TurnRequest, sink: Sink) -> BoxFuture<'_, Result<Option<Usage>, AgentError>> {
        if !request.resume {
            self.told.lock().unwrap().push(request.text.clone());
        }
        Box::pin(async move {
            let cancel = request.cancel.clone();
            tokio::select! {
                permit = self.gate.acquire() => permit.expect("the gate stays open").forget(),
                () = cancel.cancelled() => return Err(AgentError::Interrupted),
            }
            self.inner.run_turn(request, sink).await
        })
    }
}

const SAYS_WHAT_IT_GOT: &str = r#"
pace = 1000
[[turn]]
[[turn.step]]
say = "You said {{message}}"
"#;

async fn gated(scenario: &str) -> (Arc<SessionManager>, Arc<Gated>, String) {
    let agent = Gated::new(scenario);
    let manager = SessionManager::new(Store::open_in_memory().await.unwrap(), agent.clone());
    let id = manager.create_session(None).await.unwrap().id;
    (manager, agent, id)
}

async fn thread(manager: &SessionManager, id: &str) -> Thread {
    manager.snapshot(id).await.unwrap().1
}

async fn until(manager: &SessionManager, id: &str, what: &str, done: impl Fn(&Thread) -> bool) -> Thread {
    wait_until(what, Duration::from_secs(10), || async {
        let thread = thread(manager, id).await;
        done(&thread).then_some(thread)
    })
    .await
}

fn queued_texts(thread: &Thread) -> Vec<String> {
    thread.turn.queue.iter().map(|queued| queued.text.clone()).collect()
}

fn user_texts(thread: &Thread) -> Vec<String> {
    thread.messages.iter().filter(|m| m.role == Role::User).map(|m| m.text()).collect()
}

fn completed_turns(thread: &Thread, n: usize) -> bool {
    !thread.turn.working
        && thread.turn.last_outcome == Some(TurnOutcome::Completed)
        && thread.messages.iter().filter(|m| m.role == Role::Assistant).count() == n
}

#[tokio::test]
async fn a_message_typed_while_the_agent_works_waits_in_the_queue_and_is_the_next_turn() {
    let (manager, agent, id) = gated(SAYS_WHAT_IT_GOT).await;
    manager.send_message(&id, "first".into()).await.unwrap();
    manager.send_message(&id, "second".into()).await.expect("typed ahead, not refused");
    manager.send_message(&id, "third".into()).await.unwrap();

    let now = thread(&manager, &id).await;
    assert!(now.turn.working);
    assert_eq!(user_texts(&now), ["first"], "not in the thread before its turn");
    assert_eq!(queued_texts(&now), ["second", "third"]);
    let (second, third) = (now.turn.queue[0].id.clone(), now.turn.queue[1].id.clone());
    let edit = QueueChange::Edit { message_id: second.clone(), text: "second, edited".into() };
    manager.change_queue(&id, edit).await.unwrap();
    manager.change_queue(&id, QueueChange::Remove { message_id: third.clone() }).await.unwrap();
    assert_eq!(queued_texts(&thread(&manager, &id).await), ["second, edited"]);

    agent.let_one_turn_end();
    let taken = until(&manager, &id, "the queue's turn to start", |t| t.turn.working && t.turn.queue.is_empty()).await;
    assert_eq!(user_texts(&taken), ["first", "second, edited"], "in the thread where its turn starts");
    let late = manager.change_queue(&id, QueueChange::Edit { message_id: second.clone(), text: "x".into() }).await;
    assert_eq!(late, Err(AppError::AlreadySent { id: second }));

    agent.let_one_turn_end();
    let done = until(&manager, &id, "both turns to end", |t| completed_turns(t, 2)).await;
    assert_eq!(agent.told(), ["first", "second, edited"], "the removed message never reached the agent");
    let replies: Vec<String> = done.messages.iter().filter(|m| m.role == Role::Assistant).map(|m| m.text()).collect();
    assert_eq!(replies, ["You said first", "You said second, edited"]);
    assert_eq!(manager.store().load_thread(&id).await.unwrap(), done);
}

#[tokio::test]
async fn what_was_typed_ahead_of_a_stopped_turn_waits_for_the_persons_word() {
    let (manager, agent, id) = gated(SAYS_WHAT_IT_GOT).await;
    manager.send_message(&id, "first".into()).await.unwrap();
    manager.send_message(&id, "second".into()).await.unwrap();
    manager.interrupt(&id).await.unwrap();
    let stopped = until(&manager, &id, "the stop", |t| t.turn.last_outcome == Some(TurnOutcome::Interrupted)).await;
    assert_eq!(queued_texts(&stopped), ["second"], "kept, not sent");
    assert_eq!(stopped.next_turn(), None);

    // A new message takes the queue along, in the order it was typed.
    agent.let_one_turn_end();
    manager.send_message(&id, "third".into()).await.unwrap();
    let done = until(&manager, &id, "the turn of both", |t| completed_turns(t, 1)).await;
    assert_eq!(agent.told(), ["first", "second\n\nthird"]);
    assert_eq!(user_texts(&done), ["first", "second", "third"]);
}

#[tokio::test]
async fn send_now_sends_what_waits_after_a_stop() {
    let (manager, agent, id) = gated(SAYS_WHAT_IT_GOT).await;
    manager.send_message(&id, "first".into()).await.unwrap();
    manager.send_message(&id, "second".into()).await.unwrap();
    manager.interrupt(&id).await.unwrap();
    until(&manager, &id, "the stop", |t| t.turn.last_outcome == Some(TurnOutcome::Interrupted)).await;
    agent.let_one_turn_end();
    manager.change_queue(&id, QueueChange::SendNow).await.unwrap();
    let done = until(&manager, &id, "the queue's turn", |t| completed_turns(t, 1)).await;
    assert_eq!(agent.told(), ["first", "second"]);
    assert!(done.turn.queue.is_empty());
    // Nothing waits: Send now does nothing.
    manager.change_queue(&id, QueueChange::SendNow).await.unwrap();
    assert!(!thread(&manager, &id).await.turn.working);
}

fn jwt() -> Vec<QuestionAnswer> {
    vec![QuestionAnswer { question: "Which auth?".into(), labels: vec!["JWT".into()], ..Default::default() }]
}

fn pending_question(thread: &Thread) -> Option<String> {
    thread.messages.iter().flat_map(|m| m.blocks.iter()).find_map(|block| match block {
        Block::ToolCall(call) if call.interaction.as_ref().is_some_and(|i| i.is_pending()) => Some(call.id.clone()),
        _ => None,
    })
}

fn answer_of(thread: &Thread, tool_use_id: &str) -> InteractionOutcome {
    serde_json::from_str(thread.tool_call(tool_use_id).unwrap().result.as_deref().unwrap()).unwrap()
}

#[tokio::test]
async fn a_message_typed_while_a_question_waits_goes_after_the_answer_never_instead_of_it() {
    let (manager, agent, id) = gated(ASKS_WHICH_AUTH).await;
    agent.let_one_turn_end();
    manager.send_message(&id, "go".into()).await.unwrap();
    let asking = until(&manager, &id, "the question", |t| t.is_waiting()).await;
    let question = pending_question(&asking).unwrap();
    manager.send_message(&id, "JWT".into()).await.expect("typed ahead");
    let still = thread(&manager, &id).await;
    assert!(still.is_waiting(), "a message answers nothing");
    assert_eq!(queued_texts(&still), ["JWT"]);

    agent.let_one_turn_end();
    manager.answer_question(&id, &question, jwt()).await.unwrap();
    let next = until(&manager, &id, "the message's turn to ask again", |t| {
        t.is_waiting() && t.turn.queue.is_empty() && pending_question(t).as_deref() != Some(question.as_str())
    })
    .await;
    assert_eq!(answer_of(&next, &question), InteractionOutcome::Answered { answers: jwt() });
    assert_eq!(agent.told(), ["go", "JWT"]);
    let texts: Vec<String> = next.messages.iter().map(|m| m.text()).collect();
    let answered = texts.iter().position(|t| t.ends_with("got \"Which auth?\"=\"JWT\"")).expect("the reply");
    let message = texts.iter().rposition(|t| t == "JWT").unwrap();
    assert!(answered < message, "the answer's reply, then the message: {texts:?}");
}

#[tokio::test]
async fn a_queued_message_survives_a_restart_and_then_gets_its_turn() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let open = async |path: &std::path::Path| {
        let scenario = Scenario::parse(ASKS_WHICH_AUTH, "test").unwrap();
        SessionManager::with_timeouts(
            Store::open(path).await.unwrap(),
            Arc::new(ScriptedAgent::new(scenario)),
            Timeouts::default(),
        )
    };
    let manager = open(&path).await;
    let id = manager.create_session(None).await.unwrap().id;
    manager.send_message(&id, "go".into()).await.unwrap();
    let question = pending_question(&until(&manager, &id, "the question", Thread::is_waiting).await).unwrap();
    manager.send_message(&id, "and the tests".into()).await.unwrap();
    manager.shut_down().await;
    drop(manager);

    let manager = open(&path).await;
    manager.recover_unfinished_turns().await.unwrap();
    let after = thread(&manager, &id).await;
    assert!(after.is_waiting());
    assert_eq!(queued_texts(&after), ["and the tests"]);
    manager.answer_question(&id, &question, jwt()).await.unwrap();
    let next = until(&manager, &id, "the message's turn", |t| t.turn.queue.is_empty() && t.is_waiting()).await;
    assert_eq!(user_texts(&next), ["go", "and the tests"]);
}
