//! Tests of the interaction bridge's rules (`mod.rs`).

use futures::future::BoxFuture;

use super::*;
use crate::approval::Approval;
use crate::question::{Choice, Question};

/// Interactions in a map, one lock for all: the ledger without a database.
#[derive(Default)]
struct MemoryLedger {
    interactions: tokio::sync::Mutex<HashMap<Key, Interaction>>,
}

impl Ledger for MemoryLedger {
    fn open<'a>(
        &'a self,
        session: &'a str,
        tool_use_id: &'a str,
        request: InteractionRequest,
        expires_at_ms: Option<i64>,
    ) -> BoxFuture<'a, Result<Option<InteractionOutcome>, AppError>> {
        Box::pin(async move {
            let mut interactions = self.interactions.lock().await;
            let existing = interactions.get(&key(session, tool_use_id));
            if let Some(decided) = existing.and_then(|i| i.outcome.clone()) {
                return Ok(Some(decided));
            }
            let expires_at_ms = existing.map_or(expires_at_ms, |i| i.expires_at_ms);
            interactions.insert(key(session, tool_use_id), Interaction::expiring(request, expires_at_ms));
            Ok(None)
        })
    }

    fn park<'a>(
        &'a self,
        session: &'a str,
        tool_use_id: &'a str,
        parked: &'a (dyn Fn() + Send + Sync),
    ) -> BoxFuture<'a, Result<Option<InteractionOutcome>, AppError>> {
        Box::pin(async move {
            let mut interactions = self.interactions.lock().await;
            let interaction = interactions
                .get_mut(&key(session, tool_use_id))
                .ok_or_else(|| AppError::InteractionNotFound { tool_use_id: tool_use_id.into() })?;
            if interaction.outcome.is_some() {
                return Ok(interaction.outcome.clone());
            }
            interaction.parked = true;
            parked();
            Ok(None)
        })
    }

    fn settle<'a>(
        &'a self,
        session: &'a str,
        tool_use_id: &'a str,
        judge: &'a (dyn Fn(&Interaction, Elsewhere) -> Verdict + Send + Sync),
        recorded: &'a (dyn Fn(&InteractionOutcome) + Send + Sync),
    ) -> BoxFuture<'a, Result<Verdict, AppError>> {
        Box::pin(async move {
            let mut interactions = self.interactions.lock().await;
            let interaction = interactions
                .get_mut(&key(session, tool_use_id))
                .ok_or_else(|| AppError::InteractionNotFound { tool_use_id: tool_use_id.into() })?;
            let verdict = judge(interaction, Elsewhere(false));
            if let Some(outcome) = &verdict.record {
                interaction.outcome = Some(outcome.clone());
                recorded(outcome);
            }
            Ok(verdict)
        })
    }

    fn deadlines(&self, now_ms: i64, limit: u32) -> BoxFuture<'_, Result<Deadlines, AppError>> {
        Box::pin(async move {
            let interactions = self.interactions.lock().await;
            let mut open: Vec<(i64, &Key)> = interactions
                .iter()
                .filter(|(_, i)| i.is_pending())
                .filter_map(|(key, i)| Some((i.expires_at_ms?, key)))
                .collect();
            open.sort();
            let due = open
                .iter()
                .filter(|(at, _)| *at <= now_ms)
                .take(limit as usize)
                .map(|(_, key)| (*key).clone())
                .collect();
            Ok((due, open.iter().map(|(at, _)| *at).find(|at| *at > now_ms)))
        })
    }
}

fn bridge(timeouts: Timeouts) -> (Arc<InteractionBridge>, Arc<MemoryLedger>) {
    bridge_and_resumes(timeouts).0
}

type Resumes = mpsc::UnboundedReceiver<String>;

fn bridge_and_resumes(timeouts: Timeouts) -> ((Arc<InteractionBridge>, Arc<MemoryLedger>), Resumes) {
    let ledger = Arc::new(MemoryLedger::default());
    let (bridge, resumes) = InteractionBridge::new(ledger.clone(), timeouts);
    let bridge = Arc::new(bridge);
    bridge.keep_deadlines(CancellationToken::new());
    ((bridge, ledger), resumes)
}

fn question() -> InteractionRequest {
    let choice = |label: &str| Choice { label: label.into(), description: None, preview: None };
    InteractionRequest::Question {
        questions: vec![Question {
            header: "Auth".into(),
            question: "Which auth?".into(),
            options: vec![choice("JWT"), choice("Sessions")],
            multi_select: false,
        }],
    }
}

fn approval() -> InteractionRequest {
    let approval = Approval::new("Bash", serde_json::json!({"command": "ls"}))
        .with_suggestions(&[serde_json::json!({"type": "setMode", "mode": "acceptEdits"})]);
    InteractionRequest::Approval(approval)
}

fn answer(label: &str) -> Vec<QuestionAnswer> {
    vec![QuestionAnswer::new("Which auth?", &[label], None, None)]
}

/// An agent waiting in a task of its own; resolves with what it got.
async fn waiting(
    bridge: &Arc<InteractionBridge>,
    request: InteractionRequest,
    cancel: CancellationToken,
) -> tokio::task::JoinHandle<Result<InteractionOutcome, NoOutcome>> {
    let waiter = bridge.clone();
    let task = tokio::spawn(async move { waiter.wait_for_person("s", "t", request, true, &cancel).await });
    while !bridge.is_waiting("s", "t") {
        tokio::task::yield_now().await;
    }
    task
}

#[tokio::test]
async fn the_first_answer_wins_the_same_again_is_accepted_and_another_is_refused() {
    let (bridge, ledger) = bridge(Timeouts::default());
    let agent = waiting(&bridge, question(), CancellationToken::new()).await;
    bridge.answer("s", "t", answer("JWT")).await.unwrap();
    assert_eq!(bridge.answer("s", "t", answer("JWT")).await, Ok(()), "the same answer again");
    assert_eq!(bridge.answer("s", "t", answer("Sessions")).await, Err(AppError::AlreadyAnswered));
    assert_eq!(bridge.decline("s", "t", None).await, Err(AppError::AlreadyAnswered));
    let got = agent.await.unwrap().unwrap();
    assert_eq!(got, InteractionOutcome::Answered { answers: answer("JWT") });
    assert_eq!(ledger.interactions.lock().await[&key("s", "t")].outcome, Some(got));
}

#[tokio::test]
async fn of_many_answers_at_once_exactly_one_is_taken() {
    let (bridge, _) = bridge(Timeouts::default());
    let agent = waiting(&bridge, question(), CancellationToken::new()).await;
    let attempts: Vec<_> = (0..12)
        .map(|i| {
            let bridge = bridge.clone();
            let label = if i % 2 == 0 { "JWT" } else { "Sessions" };
            tokio::spawn(async move { (label, bridge.answer("s", "t", answer(label)).await) })
        })
        .collect();
    let got = agent.await.unwrap().unwrap();
    for attempt in attempts {
        let (label, result) = attempt.await.unwrap();
        if got == (InteractionOutcome::Answered { answers: answer(label) }) {
            assert_eq!(result, Ok(()));
        } else {
            assert_eq!(result, Err(AppError::AlreadyAnswered));
        }
    }
}

#[tokio::test]
async fn an_answer_must_fit_the_question_and_the_kind() {
    let (bridge, _) = bridge(Timeouts::default());
    let _agent = waiting(&bridge, question(), CancellationToken::new()).await;
    assert!(matches!(bridge.answer("s", "t", answer("Magic")).await, Err(AppError::InvalidAnswer { .. })));
    let allow = bridge.decide("s", "t", Decision::Allow { always: None }).await;
    assert!(matches!(allow, Err(AppError::BadRequest { .. })), "{allow:?}");
    assert_eq!(
        bridge.answer("s", "nope", answer("JWT")).await,
        Err(AppError::InteractionNotFound { tool_use_id: "nope".into() })
    );
    assert!(matches!(
        bridge.decline("s", "t", Some("x".repeat(MAX_ANSWER_CHARS + 1))).await,
        Err(AppError::BadRequest { .. })
    ));
    bridge.answer("s", "t", answer("JWT")).await.expect("still open after all that");
}

#[tokio::test]
async fn an_approval_takes_a_decision_and_only_its_own_suggestions() {
    let (bridge, _) = bridge(Timeouts::default());
    let agent = waiting(&bridge, approval(), CancellationToken::new()).await;
    let bad = bridge.decide("s", "t", Decision::Allow { always: Some(1) }).await;
    assert!(matches!(bad, Err(AppError::BadRequest { .. })), "{bad:?}");
    let long = Decision::Deny { message: Some("x".repeat(MAX_DENIAL_CHARS + 1)) };
    assert!(matches!(bridge.decide("s", "t", long).await, Err(AppError::BadRequest { .. })));
    assert!(matches!(bridge.answer("s", "t", vec![]).await, Err(AppError::BadRequest { .. })));
    assert!(matches!(bridge.decline("s", "t", None).await, Err(AppError::BadRequest { .. })));
    let deny = Decision::Deny { message: Some("  use nextest ".into()) };
    bridge.decide("s", "t", deny.clone()).await.unwrap();
    bridge.decide("s", "t", deny).await.expect("the same decision again");
    assert_eq!(bridge.decide("s", "t", Decision::Allow { always: None }).await, Err(AppError::AlreadyAnswered));
    let got = agent.await.unwrap().unwrap();
    assert_eq!(got, InteractionOutcome::Denied { message: Some("use nextest".into()) });
}

#[tokio::test]
async fn a_question_nobody_answers_expires_and_a_late_answer_is_refused() {
    let timeouts = Timeouts { question: Some(Duration::from_millis(20)), ..Timeouts::default() };
    let (bridge, _) = bridge(timeouts);
    let got = bridge.wait_for_person("s", "t", question(), true, &CancellationToken::new()).await;
    assert_eq!(got, Ok(InteractionOutcome::Expired));
    let late = bridge.answer("s", "t", answer("JWT")).await;
    assert_eq!(late, Err(AppError::NotWaiting { detail: "it was not answered in time".into() }));
}

#[tokio::test]
async fn stop_ends_the_wait_and_an_answer_after_it_cancels_the_card() {
    let (bridge, ledger) = bridge(Timeouts::default());
    let cancel = CancellationToken::new();
    let agent = waiting(&bridge, question(), cancel.clone()).await;
    cancel.cancel();
    assert_eq!(agent.await.unwrap(), Err(NoOutcome::Stopped));
    let late = bridge.answer("s", "t", answer("JWT")).await;
    assert_eq!(late, Err(AppError::NotWaiting { detail: AGENT_GONE.into() }));
    let outcome = ledger.interactions.lock().await[&key("s", "t")].outcome.clone();
    assert_eq!(outcome, Some(InteractionOutcome::Cancelled { reason: AGENT_GONE.into() }), "never 'answered'");
}

#[tokio::test]
async fn a_withdrawn_request_refuses_answers_with_the_reason() {
    let (bridge, _) = bridge(Timeouts::default());
    let agent = waiting(&bridge, question(), CancellationToken::new()).await;
    bridge.cancel("s", "t", "the turn was stopped").await;
    assert_eq!(agent.await.unwrap(), Ok(InteractionOutcome::Cancelled { reason: "the turn was stopped".into() }));
    let late = bridge.answer("s", "t", answer("JWT")).await;
    assert_eq!(late, Err(AppError::NotWaiting { detail: "it was cancelled (the turn was stopped)".into() }));
}

#[tokio::test]
async fn a_forgotten_session_keeps_no_waiter() {
    let (bridge, _) = bridge(Timeouts::default());
    let _agent = waiting(&bridge, question(), CancellationToken::new()).await;
    bridge.forget_session("s");
    assert!(!bridge.is_waiting("s", "t"));
}

#[tokio::test]
async fn a_parked_question_stays_open_and_its_answer_asks_to_resume_the_agent() {
    let ((bridge, ledger), mut resumes) = bridge_and_resumes(Timeouts::default());
    let agent = waiting(&bridge, question(), CancellationToken::new()).await;
    assert!(bridge.park_waiting(Some("other")).is_empty());
    assert_eq!(bridge.park_waiting(None), ["s"]);
    assert_eq!(agent.await.unwrap(), Err(NoOutcome::Parked), "the agent lets go");
    assert!(!bridge.is_waiting("s", "t"));
    let parked = ledger.interactions.lock().await[&key("s", "t")].clone();
    assert!(parked.is_pending() && parked.parked, "{parked:?}");
    // The answer is recorded (not cancelled as for a gone agent), and the session is told.
    bridge.answer("s", "t", answer("JWT")).await.unwrap();
    assert_eq!(resumes.recv().await.as_deref(), Some("s"));
    assert_eq!(bridge.answer("s", "t", answer("Sessions")).await, Err(AppError::AlreadyAnswered));
    // The resumed agent asks again and gets the answer at once.
    let again = bridge.wait_for_person("s", "t", question(), true, &CancellationToken::new()).await;
    assert_eq!(again, Ok(InteractionOutcome::Answered { answers: answer("JWT") }));
}

#[tokio::test]
async fn an_agent_told_to_park_takes_an_answer_recorded_but_not_yet_handed_to_it() {
    // Recorded as another server records (through the store), before its notice reached this
    // server's bridge: nothing hands it to the waiter, and the park finds it decided.
    let ((bridge, ledger), mut resumes) = bridge_and_resumes(Timeouts::default());
    let agent = waiting(&bridge, question(), CancellationToken::new()).await;
    let answered = InteractionOutcome::Answered { answers: answer("JWT") };
    ledger.interactions.lock().await.get_mut(&key("s", "t")).unwrap().outcome = Some(answered.clone());
    assert_eq!(bridge.park_waiting(None), ["s"]);
    let got = tokio::time::timeout(Duration::from_secs(10), agent).await.expect("the agent goes on").unwrap();
    assert_eq!(got, Ok(answered.clone()));
    assert!(!bridge.is_waiting("s", "t"));
    // The notice, when it comes, finds the agent gone on: the session is asked to resume, and
    // finds its turn still working (`start_owed`).
    bridge.resolved("s", "t", &answered);
    assert_eq!(resumes.recv().await.as_deref(), Some("s"));
}

#[tokio::test]
async fn an_agent_nobody_answers_is_parked_after_the_set_time() {
    let timeouts = Timeouts { park_after: Some(Duration::from_millis(20)), ..Timeouts::default() };
    let (bridge, ledger) = bridge(timeouts);
    let got = bridge.wait_for_person("s", "t", question(), true, &CancellationToken::new()).await;
    assert_eq!(got, Err(NoOutcome::Parked));
    assert!(ledger.interactions.lock().await[&key("s", "t")].parked);
}

#[tokio::test]
async fn a_question_opened_parked_waits_without_an_agent() {
    let ((bridge, _), mut resumes) = bridge_and_resumes(Timeouts::default());
    assert_eq!(bridge.open_parked("s", "t", question()).await, Ok(None));
    bridge.decline("s", "t", None).await.unwrap();
    assert_eq!(resumes.recv().await.as_deref(), Some("s"));
    let decided = bridge.open_parked("s", "t", question()).await;
    assert_eq!(decided, Ok(Some(InteractionOutcome::Declined { reason: None })), "asked again: the outcome");
}

#[tokio::test]
async fn a_question_parked_before_its_timeout_still_expires_on_time_and_asks_to_resume() {
    let timeouts = Timeouts {
        question: Some(Duration::from_millis(300)),
        park_after: Some(Duration::from_millis(20)),
        ..Timeouts::default()
    };
    let ((bridge, ledger), mut resumes) = bridge_and_resumes(timeouts);
    let asked = std::time::Instant::now();
    let got = bridge.wait_for_person("s", "t", question(), true, &CancellationToken::new()).await;
    assert_eq!(got, Err(NoOutcome::Parked));
    assert_eq!(resumes.recv().await.as_deref(), Some("s"), "the expiry resumes the agent");
    assert!(asked.elapsed() >= Duration::from_millis(300), "not before its time: {:?}", asked.elapsed());
    assert_eq!(ledger.interactions.lock().await[&key("s", "t")].outcome, Some(InteractionOutcome::Expired));
    let late = bridge.answer("s", "t", answer("JWT")).await;
    assert_eq!(late, Err(AppError::NotWaiting { detail: "it was not answered in time".into() }));
}

#[tokio::test]
async fn a_deadline_recorded_before_a_restart_expires_with_the_next_bridge() {
    let timeouts = Timeouts { question: Some(Duration::from_millis(200)), ..Timeouts::default() };
    let ((before, ledger), _) = bridge_and_resumes(timeouts);
    assert_eq!(before.open_parked("s", "t", question()).await, Ok(None));
    drop(before);
    let (after, mut resumes) = InteractionBridge::new(ledger.clone(), timeouts);
    let after = Arc::new(after);
    after.keep_deadlines(CancellationToken::new());
    assert_eq!(resumes.recv().await.as_deref(), Some("s"));
    assert_eq!(ledger.interactions.lock().await[&key("s", "t")].outcome, Some(InteractionOutcome::Expired));
}

#[tokio::test]
async fn a_question_asked_again_keeps_the_deadline_it_opened_with() {
    let timeouts = Timeouts { question: Some(Duration::from_secs(60)), ..Timeouts::default() };
    let (bridge, ledger) = bridge(timeouts);
    assert_eq!(bridge.open_parked("s", "t", question()).await, Ok(None));
    let first = ledger.interactions.lock().await[&key("s", "t")].expires_at_ms.expect("a deadline");
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(bridge.open_parked("s", "t", question()).await, Ok(None));
    assert_eq!(ledger.interactions.lock().await[&key("s", "t")].expires_at_ms, Some(first));
}
