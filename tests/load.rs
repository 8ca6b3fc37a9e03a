//! Load with nothing lost (issue 13): the whole server on a real loopback port, 200 sessions at
//! once, 1,000 messages and 1,000 answers, while each session's tab drops its live stream and
//! comes back with `after=seq`. Then every event is stored once, in order, with no gap; every
//! answer is applied exactly once (a different answer sent at the same moment is refused as
//! already answered, the same answer again changes nothing); and every tab got exactly what the
//! store holds, no repeat and no gap, across all its reconnections.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use askbridge::error::AppError;
use askbridge::interaction::InteractionOutcome;
use askbridge::question::QuestionAnswer;
use askbridge::store::Store;
use askbridge::thread::{EventBody, Role, SessionEvent, Thread, TurnOutcome};
use serde_json::json;
use support::server::{Api, LABELS, QUESTION, Server, Tab, ask_and_quote_in};

const SESSIONS: usize = 200;
/// Messages per session, each answered by one question: 1,000 messages and 1,000 answers.
const ROUNDS: usize = 5;
/// In this round every session waits until its question is parked before answering it, so that
/// answers also go the way that resumes an agent which let go.
const PARKED_ROUND: usize = 2;
const PARK_AFTER: &str = "1s";
/// The test fails, saying so, when it has made no progress for this long (no round ended, no
/// session checked): something is stuck. A bound on the whole test was a margin (180 s), and a
/// busy machine crossed it while the test was still going (800 of 1,000 rounds done, beside a
/// site's build and the browser tests, 30 Nov).
const STALL: Duration = Duration::from_secs(60);

/// Rounds (a message answered and its reply ended) done so far, for the message of a stall.
static ROUNDS_DONE: AtomicUsize = AtomicUsize::new(0);
/// Steps done so far, rounds and then each session's checks: what the stall watch follows.
static PROGRESS: AtomicUsize = AtomicUsize::new(0);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_with_nothing_lost() {
    let stalled = async {
        let (mut seen, mut since) = (usize::MAX, Instant::now());
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let done = PROGRESS.load(Ordering::Relaxed);
            if done != seen {
                (seen, since) = (done, Instant::now());
            } else if since.elapsed() >= STALL {
                return ROUNDS_DONE.load(Ordering::Relaxed);
            }
        }
    };
    tokio::select! {
        () = load() => {}
        done = stalled => panic!(
            "the load test made no progress for {STALL:?} ({done} of {} rounds done): something is stuck",
            SESSIONS * ROUNDS
        ),
    }
}

async fn load() {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    // Every message asks one question and then quotes the answer it got.
    let scenario = ask_and_quote_in(dir.path());
    let flags = ["--agent", "scripted", "--scenario", &scenario, "--park-after", PARK_AFTER];
    let server = Server::start(dir.path(), &flags).await;
    let api = server.api();

    let mut sessions = tokio::task::JoinSet::new();
    for index in 0..SESSIONS {
        sessions.spawn(run_session(api.clone(), index));
    }
    let mut runs = Vec::with_capacity(SESSIONS);
    while let Some(run) = sessions.join_next().await {
        match run {
            Ok(run) => runs.push(run),
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Err(error) => panic!("a session's task failed: {error}"),
        }
    }
    let loaded = started.elapsed();

    futures::future::join_all(runs.iter().map(|run| check_served(&api, run))).await;
    drop(api);
    let data = server.stop().await;

    // The store is the truth: every tab got exactly it, and every rule held in it.
    let store = Store::open(&data.join("askbridge.db")).await.unwrap();
    let (mut events, mut reconnections) = (0, 0);
    for run in &runs {
        let stored = store.events_after(&run.id, 0, u32::MAX).await.unwrap();
        assert!(
            stored.iter().enumerate().all(|(i, event)| event.seq == i as u64 + 1),
            "session {}: the stored log has a gap or a repeat: {:?}",
            run.id,
            stored.iter().map(|e| e.seq).collect::<Vec<_>>()
        );
        assert_eq!(stored, run.tab.log, "session {}: the tab's events are not the stored ones", run.id);
        assert_eq!(store.load_thread(&run.id).await.unwrap(), fold(&stored), "session {}: stored thread", run.id);
        check_log(run, &stored);
        events += stored.len();
        reconnections += run.tab.connections - 1;
        PROGRESS.fetch_add(1, Ordering::Relaxed);
    }
    assert_eq!(store.list_sessions().await.unwrap().len(), SESSIONS);
    eprintln!(
        "{SESSIONS} sessions, {} messages and as many answers, {events} events, {reconnections} reconnections: \
         {loaded:.1?} under load, {:.1?} in all",
        SESSIONS * ROUNDS,
        started.elapsed()
    );
}

/// What the history API and a tab that opens now (from the first event) say of a session: the
/// same as its tab, which dropped its stream all along.
async fn check_served(api: &Api, run: &SessionRun) {
    let view = api.call("load_session", json!({"id": run.id})).await.unwrap();
    let thread: Thread = serde_json::from_value(view["thread"].clone()).unwrap();
    assert_eq!(thread.seq, run.tab.last(), "session {}: the history API and the tab disagree", run.id);
    assert_eq!(fold(&run.tab.log), thread, "session {}: the tab's events do not make the served thread", run.id);
    let mut fresh = Tab::new(api.clone(), &run.id, None);
    fresh.until("the last event", |event| (event.seq == thread.seq).then_some(())).await;
    assert_eq!(fresh.log, run.tab.log, "session {}: a new tab replays other events", run.id);
    PROGRESS.fetch_add(1, Ordering::Relaxed);
}

/// What one session did: its id, its tab (every event it received), the message taken in each
/// round, the messages queued (and taken back) and the answer that won it.
struct SessionRun {
    id: String,
    tab: Tab,
    messages: Vec<String>,
    queued: Vec<String>,
    answers: Vec<(String, &'static str)>,
}

/// One session, as a person with a flaky connection uses it: each round sends two messages at
/// once (one is taken, the other typed ahead and taken back), answers the question twice at once with different answers (one wins),
/// sends both again, and waits for the reply to end. The tab drops its stream now and then, and
/// in every other round it is away while the answer lands.
async fn run_session(api: Api, index: usize) -> SessionRun {
    let summary = api.call("create_session", json!({})).await.unwrap();
    let id = summary["id"].as_str().unwrap().to_string();
    let mut tab = Tab::new(api.clone(), &id, Some(index as u64));
    let (mut messages, mut queued, mut answers) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        // Two messages at once: exactly one starts the turn; the other is typed ahead (queued
        // for the next turn), and taken back out of the queue before this turn ends.
        let texts = [format!("session {index} round {round} a"), format!("session {index} round {round} b")];
        let (a, b) = tokio::join!(api.send(&id, &texts[0]), api.send(&id, &texts[1]));
        assert_eq!((a, b), (Ok(()), Ok(())), "session {id} round {round}: two messages at once");
        let [(queued_id, queued_text)] = <[_; 1]>::try_from(api.queue(&id).await)
            .unwrap_or_else(|queue| panic!("session {id} round {round}: the queue holds {queue:?}"));
        let taken = usize::from(queued_text == texts[0]);
        messages.push(texts[taken].clone());
        queued.push(queued_text);
        api.remove_queued(&id, &queued_id).await.unwrap_or_else(|e| panic!("session {id} round {round}: {e}"));

        let tool_use_id = tab
            .until("the question", |event| match &event.body {
                EventBody::InteractionOpened { tool_use_id, .. } => Some(tool_use_id.clone()),
                _ => None,
            })
            .await;
        if round == PARKED_ROUND {
            tab.until("the question to be parked", |event| {
                matches!(&event.body, EventBody::InteractionParked { tool_use_id: parked } if *parked == tool_use_id)
                    .then_some(())
            })
            .await;
            tab.until("the agent to let go", |event| {
                matches!(&event.body, EventBody::TurnEnded { outcome: TurnOutcome::Parked, .. }).then_some(())
            })
            .await;
            // Parked, a message waits for the answer (and is taken back).
            api.send(&id, "overtaking").await.unwrap_or_else(|e| panic!("session {id}: {e}"));
            let [(overtaking, _)] = <[_; 1]>::try_from(api.queue(&id).await)
                .unwrap_or_else(|queue| panic!("session {id}: the queue holds {queue:?}"));
            queued.push("overtaking".to_string());
            api.remove_queued(&id, &overtaking).await.unwrap_or_else(|e| panic!("session {id}: {e}"));
        }
        if round % 2 == 1 {
            tab.disconnect();
        }

        // Two different answers at once: exactly one is applied.
        let (jwt, sessions) = tokio::join!(
            api.answer(&id, &tool_use_id, QUESTION, LABELS[0]),
            api.answer(&id, &tool_use_id, QUESTION, LABELS[1])
        );
        let (winner, loser) = match (jwt, sessions) {
            (Ok(()), Err(AppError::AlreadyAnswered)) => (LABELS[0], LABELS[1]),
            (Err(AppError::AlreadyAnswered), Ok(())) => (LABELS[1], LABELS[0]),
            other => panic!("session {id} round {round}: two answers at once gave {other:?}"),
        };
        // The same answer again is accepted (and changes nothing); the other is still refused.
        assert_eq!(api.answer(&id, &tool_use_id, QUESTION, winner).await, Ok(()), "session {id} round {round}");
        assert_eq!(
            api.answer(&id, &tool_use_id, QUESTION, loser).await,
            Err(AppError::AlreadyAnswered),
            "session {id}"
        );
        answers.push((tool_use_id.clone(), winner));

        tab.until("the reply to end", |event| {
            matches!(&event.body, EventBody::TurnEnded { outcome: TurnOutcome::Completed, .. }).then_some(())
        })
        .await;
        ROUNDS_DONE.fetch_add(1, Ordering::Relaxed);
        PROGRESS.fetch_add(1, Ordering::Relaxed);
        // Once the turn is over, a late answer is refused all the same.
        assert_eq!(
            api.answer(&id, &tool_use_id, QUESTION, loser).await,
            Err(AppError::AlreadyAnswered),
            "session {id}"
        );
    }
    SessionRun { id, tab, messages, queued, answers }
}

/// The rules of one session's stored log: each message stored once and in its round's order,
/// each question answered once with the answer that won, the agent told exactly that once, and
/// every turn started once and ended once.
fn check_log(run: &SessionRun, log: &[SessionEvent]) {
    let id = &run.id;
    let bodies: Vec<&EventBody> = log.iter().map(|event| &event.body).collect();
    let messages: Vec<&str> = bodies
        .iter()
        .filter_map(|body| match body {
            EventBody::UserMessage { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(messages, run.messages, "session {id}: the messages stored");
    let queued: Vec<&str> = bodies
        .iter()
        .filter_map(|body| match body {
            EventBody::MessageQueued { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(queued, run.queued, "session {id}: the messages typed ahead");
    let removed = bodies.iter().filter(|body| matches!(body, EventBody::QueuedMessageRemoved { .. })).count();
    assert_eq!(removed, run.queued.len(), "session {id}: each taken back once");
    let opened: Vec<&str> = bodies
        .iter()
        .filter_map(|body| match body {
            EventBody::InteractionOpened { tool_use_id, .. } => Some(tool_use_id.as_str()),
            _ => None,
        })
        .collect();
    let asked: Vec<&str> = run.answers.iter().map(|(tool_use_id, _)| tool_use_id.as_str()).collect();
    assert_eq!(opened, asked, "session {id}: each question opened once, in order");
    for (tool_use_id, winner) in &run.answers {
        let resolved: Vec<&InteractionOutcome> = bodies
            .iter()
            .filter_map(|body| match body {
                EventBody::InteractionResolved { tool_use_id: t, outcome } if t == tool_use_id => Some(outcome),
                _ => None,
            })
            .collect();
        let answer = QuestionAnswer::new(QUESTION, &[winner], None, None);
        assert_eq!(
            resolved,
            [&InteractionOutcome::Answered { answers: vec![answer] }],
            "session {id}: {tool_use_id} is answered once, with the answer that won"
        );
        let results = bodies
            .iter()
            .filter(|body| matches!(body, EventBody::ToolResult { tool_use_id: t, .. } if t == tool_use_id))
            .count();
        assert_eq!(results, 1, "session {id}: the agent got the answer to {tool_use_id} once");
    }
    // Turns neither overlap nor end twice; each round's ends as completed (a parked one resumes).
    let mut working = false;
    let mut completed = 0;
    for body in &bodies {
        match body {
            EventBody::TurnStarted | EventBody::ResumeStarted => {
                assert!(!working, "session {id}: a turn started inside another");
                working = true;
            }
            EventBody::TurnEnded { outcome, .. } => {
                assert!(working, "session {id}: a turn ended twice");
                assert!(matches!(outcome, TurnOutcome::Completed | TurnOutcome::Parked), "session {id}: {outcome:?}");
                completed += usize::from(*outcome == TurnOutcome::Completed);
                working = false;
            }
            _ => {}
        }
    }
    assert!(!working && completed == ROUNDS, "session {id}: {completed} turns completed");
    // What the agent said it got is the answer that won, round by round.
    let thread = fold(log);
    let replies: Vec<String> = thread
        .messages
        .iter()
        .filter(|message| message.role == Role::Assistant)
        .map(|message| message.text().trim().to_string())
        .filter(|text| !text.is_empty())
        .collect();
    let expected: Vec<String> =
        run.answers.iter().map(|(_, winner)| format!("got \"{QUESTION}\"=\"{winner}\"")).collect();
    assert_eq!(replies, expected, "session {id}: what the agent was told");
}

/// A thread folded from its events, as every tab folds them.
fn fold(events: &[SessionEvent]) -> Thread {
    let mut thread = Thread::default();
    for event in events {
        thread.apply(event);
    }
    thread
}
