//! The session manager with the scripted agent and an in-memory store: turns, questions and
//! approvals from the first message to the stored thread.

use std::sync::Arc;
use std::time::Duration;

use super::{SessionManager, SessionPolicy, Timeouts};
use crate::agent::scripted::fixtures::ASKS_WHICH_AUTH;
use crate::agent::scripted::{Scenario, ScriptedAgent};
use crate::approval::{Approval, Decision, MAX_DENIAL_CHARS, PermissionMode};
use crate::error::AppError;
use crate::interaction::{InteractionOutcome, InteractionRequest};
use crate::question::QuestionAnswer;
use crate::store::Store;
use crate::testing::wait_until;
use crate::thread::{Block, Role, Thread, ToolStatus, TurnOutcome};

fn quick_scenario() -> Scenario {
    Scenario::parse(
        r#"
pace = 1000
[[turn]]
when = ["slow"]
[[turn.step]]
say = "starting"
[[turn.step]]
pause_ms = 60000

[[turn]]
[[turn.step]]
say = "You said {{message}}"
[[turn.step]]
tool = "Bash"
input = { command = "ls" }
output = "a"
duration_ms = 1
"#,
        "test",
    )
    .unwrap()
}

async fn manager() -> Arc<SessionManager> {
    let store = Store::open_in_memory().await.unwrap();
    SessionManager::new(store, Arc::new(ScriptedAgent::new(quick_scenario())))
}

async fn wait_idle(manager: &SessionManager, id: &str) -> Thread {
    wait_until("the turn to end", Duration::from_secs(5), || async {
        let (_, thread) = manager.snapshot(id).await.unwrap();
        (!thread.turn.working).then_some(thread)
    })
    .await
}

#[tokio::test]
async fn a_message_gets_a_streamed_reply_that_is_stored() {
    let manager = manager().await;
    let session = manager.create_session(None).await.unwrap();
    manager.send_message(&session.id, "hello".into()).await.unwrap();
    let thread = wait_idle(&manager, &session.id).await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed));
    let reply = &thread.messages[1];
    assert_eq!(reply.blocks[0], Block::Text { text: "You said hello".into() });
    let Block::ToolCall(call) = &reply.blocks[1] else { panic!() };
    assert_eq!(call.status, ToolStatus::Done);
    assert_eq!(manager.store().load_thread(&session.id).await.unwrap(), thread);
    assert_eq!(manager.store().session(&session.id).await.unwrap().title, "hello");
}

#[tokio::test]
async fn past_the_limit_idle_sessions_are_let_go_least_recently_used_first_and_read_again_whole() {
    let manager = manager().await;
    let mut ids = Vec::new();
    for n in 0..4 {
        let session = manager.create_session(None).await.unwrap();
        manager.send_message(&session.id, format!("hello {n}")).await.unwrap();
        wait_idle(&manager, &session.id).await;
        ids.push(session.id);
    }
    let before = manager.snapshot(&ids[0]).await.unwrap().1;
    // A tab follows the oldest session: it stays, whatever its age.
    let followed = manager.runtime(&ids[1]).await.unwrap();
    let tab = followed.subscribe();
    drop(followed);
    manager.snapshot(&ids[0]).await.unwrap();
    manager.set_max_loaded_sessions(2);
    assert!(manager.loaded_sessions() <= 2, "{} loaded", manager.loaded_sessions());
    assert!(manager.log.loaded(&ids[1]).is_some(), "the session a tab follows is kept");
    assert!(manager.log.loaded(&ids[0]).is_some(), "the most recently used one is kept");
    assert!(manager.log.loaded(&ids[2]).is_none() && manager.log.loaded(&ids[3]).is_none(), "the others are let go");

    // An evicted session opens as it was, and a new message works on it.
    let evicted = &ids[2];
    let (_, thread) = manager.snapshot(evicted).await.unwrap();
    assert_eq!(thread, manager.store().load_thread(evicted).await.unwrap());
    assert_eq!(thread.messages[0].text(), "hello 2");
    manager.send_message(evicted, "again".into()).await.unwrap();
    let thread = wait_idle(&manager, evicted).await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed));
    assert_eq!(manager.snapshot(&ids[0]).await.unwrap().1, before);
    drop(tab);
}

#[tokio::test]
async fn a_second_message_during_a_turn_is_queued_and_a_stop_keeps_it() {
    let manager = manager().await;
    let session = manager.create_session(None).await.unwrap();
    manager.send_message(&session.id, "slow".into()).await.unwrap();
    manager.send_message(&session.id, "again".into()).await.expect("typed ahead");
    manager.interrupt(&session.id).await.unwrap();
    let thread = wait_idle(&manager, &session.id).await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Interrupted));
    assert_eq!(thread.messages.iter().filter(|m| m.role == Role::User).count(), 1);
    assert_eq!(thread.turn.queue.iter().map(|q| q.text.as_str()).collect::<Vec<_>>(), ["again"]);
}

#[tokio::test]
async fn a_session_folder_must_exist_on_the_server() {
    let manager = manager().await;
    for bad in ["relative/path", "/nonexistent/folder"] {
        let error = manager.create_session(Some(bad)).await.unwrap_err();
        assert!(matches!(error, AppError::BadRequest { .. }), "{bad}: {error:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().display().to_string();
    let session = manager.create_session(Some(&folder)).await.unwrap();
    let canonical = dir.path().canonicalize().unwrap().display().to_string();
    assert_eq!(manager.store().session(&session.id).await.unwrap().workdir, Some(canonical));
    assert_eq!(manager.create_session(Some("  ")).await.unwrap().workdir, None);
    let Err(AppError::BadRequest { detail }) = manager.create_session(Some("/nonexistent/folder")).await else {
        panic!()
    };
    assert_eq!(detail, "there is no folder “/nonexistent/folder” on the server");
}

/// `git` in `folder`, which must succeed.
fn git(folder: &std::path::Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git").args(args).current_dir(folder).output().unwrap();
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

#[tokio::test]
async fn a_deleted_sessions_worktree_goes_with_it_unless_work_in_it_would_be_lost() {
    let root = tempfile::tempdir().unwrap();
    let repo = root.path().canonicalize().unwrap().join("project");
    std::fs::create_dir(&repo).unwrap();
    for args in [
        &["init", "--quiet", "-b", "main"][..],
        &["config", "user.email", "me@example.com"],
        &["config", "user.name", "Me"],
    ] {
        git(&repo, args);
    }
    std::fs::write(repo.join("notes.md"), "one\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "--quiet", "-m", "first"]);
    let policy = SessionPolicy {
        worktrees: Some(root.path().canonicalize().unwrap().join("worktrees")),
        ..SessionPolicy::default()
    };
    let agent = Arc::new(ScriptedAgent::new(quick_scenario()));
    let manager =
        SessionManager::with_policy(Store::open_in_memory().await.unwrap(), agent, Timeouts::default(), policy);
    let workdir = repo.display().to_string();
    let in_worktree = |branch: &str| super::NewSession {
        workdir: Some(&workdir),
        worktree: Some(crate::changes::NewWorktree { base: "main".into(), branch: branch.into(), setup: None }),
        ..super::NewSession::default()
    };

    let idle = manager.create_session_with(in_worktree("askbridge/idle")).await.unwrap();
    let idle_folder = manager.session_folder(&idle.id).await.unwrap();
    let worked = manager.create_session_with(in_worktree("askbridge/worked")).await.unwrap();
    let worked_folder = manager.session_folder(&worked.id).await.unwrap();
    std::fs::write(worked_folder.join("notes.md"), "one\ntwo\n").unwrap();
    git(&worked_folder, &["commit", "--quiet", "-am", "two"]);

    manager.delete_session(&idle.id).await.unwrap();
    assert!(!idle_folder.exists(), "nothing was done in it: it goes");
    assert_eq!(git(&repo, &["branch", "--list", "askbridge/idle"]), "");
    manager.delete_session(&worked.id).await.unwrap();
    assert!(worked_folder.join("notes.md").exists(), "a commit not in main: it stays, with its branch");
    assert!(git(&repo, &["worktree", "list"]).contains("askbridge/worked"));
}

#[cfg(unix)]
#[tokio::test]
async fn a_session_folder_stays_inside_the_workdir_root_whatever_links_and_dots_say() {
    let outside = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let inside = root.path().join("project");
    std::fs::create_dir(&inside).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("escape")).unwrap();
    std::fs::write(root.path().join("notes.txt"), "").unwrap();
    let policy = SessionPolicy { workdir_root: Some(root.path().canonicalize().unwrap()), ..SessionPolicy::default() };
    let agent = Arc::new(ScriptedAgent::new(quick_scenario()));
    let manager =
        SessionManager::with_policy(Store::open_in_memory().await.unwrap(), agent, Timeouts::default(), policy);

    let session = manager.create_session(Some(&inside.display().to_string())).await.unwrap();
    let dotted = format!("{}/project/../project/.", root.path().display());
    assert!(manager.create_session(Some(&dotted)).await.is_ok(), "dots that stay inside are fine");
    let refused = [
        (root.path().join("escape").display().to_string(), "outside"),
        (format!("{}/project/../..", root.path().display()), "outside"),
        (outside.path().display().to_string(), "outside"),
        (root.path().join("notes.txt").display().to_string(), "is a file"),
        (root.path().join("gone").display().to_string(), "there is no folder"),
    ];
    for (dir, why) in refused {
        let Err(AppError::BadRequest { detail }) = manager.create_session(Some(&dir)).await else { panic!("{dir}") };
        assert!(detail.contains(why), "{dir}: {detail}");
    }

    // The folder is swapped for a link out of the root after the session was made: the next turn
    // is refused, and says why.
    std::fs::remove_dir(&inside).unwrap();
    std::os::unix::fs::symlink(outside.path(), &inside).unwrap();
    let Err(AppError::BadRequest { detail }) = manager.send_message(&session.id, "hello".into()).await else {
        panic!()
    };
    assert!(detail.contains("outside"), "{detail}");
    let (_, thread) = manager.snapshot(&session.id).await.unwrap();
    assert!(!thread.turn.working && thread.messages.is_empty(), "no turn started, no message left behind");
}

#[tokio::test]
async fn unknown_sessions_are_not_found() {
    let manager = manager().await;
    let error = manager.send_message("nope", "hi".into()).await.unwrap_err();
    assert_eq!(error, AppError::SessionNotFound { id: "nope".into() });
    assert!(matches!(manager.snapshot("nope").await, Err(AppError::SessionNotFound { .. })));
    assert!(matches!(manager.interrupt("nope").await, Err(AppError::SessionNotFound { .. })));
}

#[tokio::test]
async fn deleting_a_working_session_stops_its_turn() {
    let manager = manager().await;
    let session = manager.create_session(None).await.unwrap();
    manager.send_message(&session.id, "slow".into()).await.unwrap();
    manager.delete_session(&session.id).await.unwrap();
    manager.turns.tasks.close();
    tokio::time::timeout(Duration::from_secs(10), manager.turns.tasks.wait()).await.unwrap();
    assert!(manager.list_sessions().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_restart_ends_the_turn_it_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    // The first server runs on its own runtime, dropped mid-turn: as if the process died.
    let crashed_path = path.clone();
    let id = std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let manager = SessionManager::new(
                Store::open(&crashed_path).await.unwrap(),
                Arc::new(ScriptedAgent::new(quick_scenario())),
            );
            let session = manager.create_session(None).await.unwrap();
            manager.send_message(&session.id, "slow".into()).await.unwrap();
            // Wait until the agent is in its long pause, mid-turn.
            wait_until("the agent's long pause", Duration::from_secs(5), || async {
                let (_, thread) = manager.snapshot(&session.id).await.unwrap();
                thread.messages.last().is_some_and(|m| m.text() == "starting").then_some(())
            })
            .await;
            session.id
        })
    })
    .join()
    .unwrap();

    let manager =
        SessionManager::new(Store::open(&path).await.unwrap(), Arc::new(ScriptedAgent::new(quick_scenario())));
    manager.recover_unfinished_turns().await.unwrap();
    let (summary, thread) = manager.snapshot(&id).await.unwrap();
    assert!(!summary.working);
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Abandoned));
    assert_eq!(thread.messages.last().unwrap().role, Role::Notice);
    assert!(!thread.messages[1].streaming, "the cut-short reply no longer streams");
    assert_eq!(thread.messages[1].text(), "starting", "what streamed before the crash is kept (the journal)");
}

async fn asking_manager(timeout: Option<Duration>) -> (Arc<SessionManager>, String) {
    let scenario = Scenario::parse(ASKS_WHICH_AUTH, "test").unwrap();
    let manager = SessionManager::with_timeouts(
        Store::open_in_memory().await.unwrap(),
        Arc::new(ScriptedAgent::new(scenario)),
        Timeouts { question: timeout, approval: timeout, ..Timeouts::default() },
    );
    let session = manager.create_session(None).await.unwrap();
    manager.send_message(&session.id, "go".into()).await.unwrap();
    (manager, session.id)
}

/// Waits for the pending question and returns its tool_use id.
async fn pending_question(manager: &SessionManager, id: &str) -> String {
    wait_until("a question to appear", Duration::from_secs(5), || async {
        let (summary, thread) = manager.snapshot(id).await.unwrap();
        if !thread.is_waiting() {
            return None;
        }
        assert!(summary.waiting, "the session list says it waits");
        thread.messages.iter().flat_map(|m| m.blocks.iter()).find_map(|b| match b {
            Block::ToolCall(call) if call.interaction.as_ref().is_some_and(|i| i.is_pending()) => Some(call.id.clone()),
            _ => None,
        })
    })
    .await
}

fn jwt() -> Vec<QuestionAnswer> {
    vec![QuestionAnswer { question: "Which auth?".into(), labels: vec!["JWT".into()], ..Default::default() }]
}

fn sessions() -> Vec<QuestionAnswer> {
    vec![QuestionAnswer { question: "Which auth?".into(), labels: vec!["Sessions".into()], ..Default::default() }]
}

/// What the scripted agent recorded as having received: the question tool's result.
fn received(thread: &Thread, tool_use_id: &str) -> InteractionOutcome {
    serde_json::from_str(thread.tool_call(tool_use_id).unwrap().result.as_deref().unwrap()).unwrap()
}

#[tokio::test]
async fn alone_on_its_store_a_server_writes_no_lease_for_a_turn() {
    let (manager, id) = asking_manager(None).await;
    let question = pending_question(&manager, &id).await;
    assert_eq!(manager.store().lease_holder(&id).await.unwrap(), None, "the turn runs, its lease is in memory only");
    manager.answer_question(&id, &question, jwt()).await.unwrap();
    let thread = wait_idle(&manager, &id).await;
    assert!(thread.messages[1].text().ends_with("got \"Which auth?\"=\"JWT\""), "the turn went on as ever");
}

#[tokio::test]
async fn the_agent_receives_exactly_the_answer_given() {
    let (manager, id) = asking_manager(None).await;
    let question = pending_question(&manager, &id).await;
    manager.answer_question(&id, &question, jwt()).await.unwrap();
    let thread = wait_idle(&manager, &id).await;
    assert_eq!(received(&thread, &question), InteractionOutcome::Answered { answers: jwt() });
    assert!(thread.messages[1].text().ends_with("got \"Which auth?\"=\"JWT\""));
    assert!(!manager.store().session(&id).await.unwrap().waiting);
    assert!(!manager.bridge().is_waiting(&id, &question), "forgotten with the turn");
}

#[tokio::test]
async fn the_first_answer_wins_the_same_again_is_accepted_and_another_is_refused() {
    let (manager, id) = asking_manager(None).await;
    let question = pending_question(&manager, &id).await;
    // Many at once: exactly one answer is taken, and the others learn which.
    let attempts: Vec<_> = (0..12)
        .map(|i| {
            let manager = manager.clone();
            let (id, question) = (id.clone(), question.clone());
            tokio::spawn(async move {
                let answer = if i % 2 == 0 { jwt() } else { sessions() };
                (answer.clone(), manager.answer_question(&id, &question, answer).await)
            })
        })
        .collect();
    let mut results = Vec::new();
    for attempt in attempts {
        results.push(attempt.await.unwrap());
    }
    let thread = wait_idle(&manager, &id).await;
    let InteractionOutcome::Answered { answers: winner } = received(&thread, &question) else { panic!() };
    for (answer, result) in results {
        if answer == winner {
            assert_eq!(result, Ok(()), "the same answer is accepted");
        } else {
            assert_eq!(result, Err(AppError::AlreadyAnswered));
        }
    }
    let stored = manager.store().load_thread(&id).await.unwrap();
    let outcome = stored.tool_call(&question).unwrap().interaction.as_ref().unwrap().outcome.clone();
    assert_eq!(outcome, Some(InteractionOutcome::Answered { answers: winner }));
}

#[tokio::test]
async fn a_declined_question_tells_the_agent_so() {
    let (manager, id) = asking_manager(None).await;
    let question = pending_question(&manager, &id).await;
    manager.decline_question(&id, &question, Some("  later ".into())).await.unwrap();
    let thread = wait_idle(&manager, &id).await;
    assert_eq!(received(&thread, &question), InteractionOutcome::Declined { reason: Some("later".into()) });
    assert_eq!(
        manager.answer_question(&id, &question, jwt()).await,
        Err(AppError::NotWaiting { detail: "it was skipped".into() })
    );
}

#[tokio::test]
async fn an_unanswered_question_expires_and_the_agent_is_told() {
    let (manager, id) = asking_manager(Some(Duration::from_millis(50))).await;
    let question = pending_question(&manager, &id).await;
    let thread = wait_idle(&manager, &id).await;
    assert_eq!(received(&thread, &question), InteractionOutcome::Expired);
    assert!(thread.messages[1].text().contains("nobody answered in time"));
    assert!(matches!(manager.answer_question(&id, &question, jwt()).await, Err(AppError::NotWaiting { .. })));
}

#[tokio::test]
async fn stopping_the_turn_cancels_the_question_and_refuses_late_answers() {
    let (manager, id) = asking_manager(None).await;
    let question = pending_question(&manager, &id).await;
    manager.interrupt(&id).await.unwrap();
    let thread = wait_idle(&manager, &id).await;
    let interaction = thread.tool_call(&question).unwrap().interaction.clone().unwrap();
    assert_eq!(interaction.outcome, Some(InteractionOutcome::Cancelled { reason: "the turn was stopped".into() }));
    assert!(!manager.store().session(&id).await.unwrap().waiting);
    let late = manager.answer_question(&id, &question, jwt()).await;
    assert_eq!(late, Err(AppError::NotWaiting { detail: "it was cancelled (the turn was stopped)".into() }));
}

#[tokio::test]
async fn answers_are_checked_against_the_question() {
    let (manager, id) = asking_manager(None).await;
    let question = pending_question(&manager, &id).await;
    let wrong =
        vec![QuestionAnswer { question: "Which auth?".into(), labels: vec!["Magic".into()], ..Default::default() }];
    assert!(matches!(manager.answer_question(&id, &question, wrong).await, Err(AppError::InvalidAnswer { .. })));
    assert_eq!(
        manager.answer_question(&id, "toolu_nope", jwt()).await,
        Err(AppError::InteractionNotFound { tool_use_id: "toolu_nope".into() })
    );
    assert!(matches!(manager.answer_question("nope", &question, jwt()).await, Err(AppError::SessionNotFound { .. })));
    // Still pending after all that.
    manager.answer_question(&id, &question, jwt()).await.unwrap();
}

const APPROVING: &str = r#"
pace = 1000
[[turn]]
when = ["test"]
[[turn.step]]
tool = "Bash"
input = { command = "cargo test", description = "Run the tests" }
output = "test result: ok"
approve = true
reason = "Runs a command"
[[turn.step]]
say = "tests ran"

[[turn]]
[[turn.step]]
tool = "Bash"
input = { command = "rm -rf target" }
output = "removed"
approve = true
[[turn.step]]
ask = "AskUserQuestion"
input = { questions = [{ question = "Which auth?", header = "Auth", options = [{ label = "JWT", description = "t" }, { label = "Sessions", description = "s" }] }] }
"#;

async fn approving_manager(timeout: Option<Duration>) -> (Arc<SessionManager>, String) {
    let manager = SessionManager::with_timeouts(
        Store::open_in_memory().await.unwrap(),
        Arc::new(ScriptedAgent::new(Scenario::parse(APPROVING, "test").unwrap())),
        Timeouts { approval: timeout, ..Timeouts::default() },
    );
    let session = manager.create_session(None).await.unwrap();
    (manager, session.id)
}

fn approval_of(thread: &Thread, tool_use_id: &str) -> (Approval, Option<InteractionOutcome>) {
    let interaction = thread.tool_call(tool_use_id).unwrap().interaction.clone().unwrap();
    let InteractionRequest::Approval(approval) = interaction.request else { panic!("not an approval") };
    (approval, interaction.outcome)
}

#[tokio::test]
async fn an_allowed_tool_runs_and_the_next_call_asks_again() {
    let (manager, id) = approving_manager(None).await;
    manager.send_message(&id, "run the test".into()).await.unwrap();
    let call = pending_question(&manager, &id).await;
    let (_, thread) = manager.snapshot(&id).await.unwrap();
    let (approval, _) = approval_of(&thread, &call);
    assert_eq!(approval.tool, "Bash");
    assert_eq!(approval.reason.as_deref(), Some("Runs a command"));
    assert_eq!(approval.shows, crate::approval::Shows::Command { command: "cargo test".into() });
    assert_eq!(approval.suggestions[0].label, "Always allow Bash(cargo test) for this session");
    manager.decide_approval(&id, &call, Decision::Allow { always: None }).await.unwrap();
    let thread = wait_idle(&manager, &id).await;
    let ran = thread.tool_call(&call).unwrap();
    assert_eq!((ran.result.as_deref(), ran.status), (Some("test result: ok"), ToolStatus::Done));
    assert!(thread.messages[1].text().contains("tests ran"));
    assert_eq!(approval_of(&thread, &call).1, Some(InteractionOutcome::Allowed { always: None }));
    // Once is once.
    manager.send_message(&id, "test again".into()).await.unwrap();
    let again = pending_question(&manager, &id).await;
    assert_ne!(again, call);
}

#[tokio::test]
async fn a_denied_tool_does_not_run_and_the_agent_gets_the_message() {
    let (manager, id) = approving_manager(None).await;
    manager.send_message(&id, "run the test".into()).await.unwrap();
    let call = pending_question(&manager, &id).await;
    // Bad decisions are refused and change nothing.
    let bad = manager.decide_approval(&id, &call, Decision::Allow { always: Some(7) }).await;
    assert!(matches!(bad, Err(AppError::BadRequest { .. })), "{bad:?}");
    let long = Some("x".repeat(MAX_DENIAL_CHARS + 1));
    let bad = manager.decide_approval(&id, &call, Decision::Deny { message: long }).await;
    assert!(matches!(bad, Err(AppError::BadRequest { .. })), "{bad:?}");
    let wrong_kind = manager.answer_question(&id, &call, Vec::new()).await;
    assert!(matches!(wrong_kind, Err(AppError::BadRequest { .. })), "{wrong_kind:?}");
    let wrong_kind = manager.decline_question(&id, &call, None).await;
    assert!(matches!(wrong_kind, Err(AppError::BadRequest { .. })), "{wrong_kind:?}");
    assert_eq!(
        manager.decide_approval(&id, "toolu_nope", Decision::Allow { always: None }).await,
        Err(AppError::InteractionNotFound { tool_use_id: "toolu_nope".into() })
    );

    let deny = Decision::Deny { message: Some("  use nextest  ".into()) };
    manager.decide_approval(&id, &call, deny.clone()).await.unwrap();
    manager.decide_approval(&id, &call, deny).await.expect("the same decision again is accepted");
    let thread = wait_idle(&manager, &id).await;
    let denied = thread.tool_call(&call).unwrap();
    assert_eq!((denied.result.as_deref(), denied.status), (Some("The user denied this."), ToolStatus::Failed));
    let text = thread.messages[1].text();
    assert!(text.contains("did not run Bash") && text.contains("“use nextest”"), "{text}");
    assert!(!text.contains("tests ran"), "the turn stops at a denied tool");
    assert_eq!(approval_of(&thread, &call).1, Some(InteractionOutcome::Denied { message: Some("use nextest".into()) }));
    assert_eq!(
        manager.decide_approval(&id, &call, Decision::Allow { always: None }).await,
        Err(AppError::AlreadyAnswered)
    );
}

#[tokio::test]
async fn always_allow_lets_the_same_command_run_without_asking_next_turn() {
    let (manager, id) = approving_manager(None).await;
    manager.send_message(&id, "run the test".into()).await.unwrap();
    let call = pending_question(&manager, &id).await;
    manager.decide_approval(&id, &call, Decision::Allow { always: Some(0) }).await.unwrap();
    wait_idle(&manager, &id).await;
    manager.send_message(&id, "test once more".into()).await.unwrap();
    let thread = wait_idle(&manager, &id).await;
    let last = thread.messages.last().unwrap();
    let Some(Block::ToolCall(second)) = last.blocks.first() else { panic!("{last:?}") };
    assert!(second.interaction.is_none(), "no card the second time");
    assert_eq!(second.result.as_deref(), Some("test result: ok"));
}

#[tokio::test]
async fn bypass_mode_skips_approvals_but_questions_still_ask() {
    let (manager, id) = approving_manager(None).await;
    let bad = manager.set_permission_mode(&id, PermissionMode::Auto).await;
    assert!(matches!(bad, Err(AppError::BadRequest { .. })), "{bad:?}");
    manager.set_permission_mode(&id, PermissionMode::BypassPermissions).await.unwrap();
    manager.send_message(&id, "clean up".into()).await.unwrap();
    let question = pending_question(&manager, &id).await;
    let (_, thread) = manager.snapshot(&id).await.unwrap();
    let Some(Block::ToolCall(bash)) = thread.messages[1].blocks.first() else { panic!() };
    assert!(bash.interaction.is_none() && bash.result.as_deref() == Some("removed"), "{bash:?}");
    assert!(thread.tool_call(&question).unwrap().name == "AskUserQuestion");
    // The mode is part of the session, stored with it.
    let stored = manager.store().load_thread(&id).await.unwrap();
    assert_eq!(stored.turn.permission_mode, Some(PermissionMode::BypassPermissions));
    manager.answer_question(&id, &question, jwt()).await.unwrap();
    wait_idle(&manager, &id).await;
}

#[tokio::test]
async fn an_undecided_approval_expires_and_the_tool_is_denied() {
    let (manager, id) = approving_manager(Some(Duration::from_millis(50))).await;
    manager.send_message(&id, "run the test".into()).await.unwrap();
    let call = pending_question(&manager, &id).await;
    let thread = wait_idle(&manager, &id).await;
    assert_eq!(approval_of(&thread, &call).1, Some(InteractionOutcome::Expired));
    assert!(thread.tool_call(&call).unwrap().result.as_deref().unwrap().contains("in time"));
    assert!(thread.messages[1].text().contains("Nobody answered in time"));
}

#[tokio::test]
async fn a_question_the_agent_garbled_fails_at_once_and_says_why() {
    let scenario = Scenario::parse(
        "pace = 1000\n[[turn]]\n[[turn.step]]\nask = \"AskUserQuestion\"\ninput = { questions = [] }\n[[turn.step]]\nsay = \"{{answer}}\"\n",
        "t",
    )
    .unwrap();
    let manager = SessionManager::new(Store::open_in_memory().await.unwrap(), Arc::new(ScriptedAgent::new(scenario)));
    let session = manager.create_session(None).await.unwrap();
    manager.send_message(&session.id, "go".into()).await.unwrap();
    let thread = wait_idle(&manager, &session.id).await;
    let Block::ToolCall(call) = &thread.messages[1].blocks[0] else { panic!() };
    let interaction = call.interaction.as_ref().unwrap();
    assert_eq!(interaction.request, InteractionRequest::Unreadable { error: "`questions` is empty".into() });
    assert_eq!(interaction.outcome, Some(InteractionOutcome::Failed { error: "`questions` is empty".into() }));
    assert!(thread.messages[1].text().contains("could not be read"));
}

/// The reply the agent gave after it resumed: its last message's text.
fn last_reply(thread: &Thread) -> String {
    thread.messages.iter().rev().find(|m| m.role == Role::Assistant).map(|m| m.text()).unwrap_or_default()
}

async fn asking_manager_on(path: &std::path::Path, timeouts: Timeouts) -> Arc<SessionManager> {
    let scenario = Scenario::parse(ASKS_WHICH_AUTH, "test").unwrap();
    SessionManager::with_timeouts(Store::open(path).await.unwrap(), Arc::new(ScriptedAgent::new(scenario)), timeouts)
}

#[tokio::test]
async fn a_question_parked_at_a_graceful_stop_is_answered_after_the_restart_and_the_turn_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let manager = asking_manager_on(&path, Timeouts::default()).await;
    let id = manager.create_session(None).await.unwrap().id;
    manager.send_message(&id, "go".into()).await.unwrap();
    let question = pending_question(&manager, &id).await;
    manager.shut_down().await;
    let (_, thread) = manager.snapshot(&id).await.unwrap();
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Parked));
    let interaction = thread.tool_call(&question).unwrap().interaction.clone().unwrap();
    assert!(interaction.is_pending() && interaction.parked, "{interaction:?}");
    drop(manager);

    let manager = asking_manager_on(&path, Timeouts::default()).await;
    manager.recover_unfinished_turns().await.unwrap();
    let (summary, _) = manager.snapshot(&id).await.unwrap();
    assert!(summary.waiting, "the session list still says it waits");
    manager.answer_question(&id, &question, jwt()).await.unwrap();
    let thread = wait_until("the resumed turn to end", Duration::from_secs(5), || async {
        let (_, thread) = manager.snapshot(&id).await.unwrap();
        (thread.turn.last_outcome == Some(TurnOutcome::Completed)).then_some(thread)
    })
    .await;
    assert_eq!(received(&thread, &question), InteractionOutcome::Answered { answers: jwt() });
    assert!(last_reply(&thread).ends_with("got \"Which auth?\"=\"JWT\""), "{}", last_reply(&thread));
    assert_eq!(manager.store().load_thread(&id).await.unwrap(), thread);
}

#[tokio::test]
async fn an_agent_nobody_answers_parks_after_the_set_time_and_a_decline_resumes_it() {
    let dir = tempfile::tempdir().unwrap();
    let timeouts = Timeouts { park_after: Some(Duration::from_millis(50)), ..Timeouts::default() };
    let manager = asking_manager_on(&dir.path().join("db"), timeouts).await;
    let id = manager.create_session(None).await.unwrap().id;
    manager.send_message(&id, "go".into()).await.unwrap();
    let question = pending_question(&manager, &id).await;
    wait_until("the turn to park", Duration::from_secs(5), || async {
        let (_, thread) = manager.snapshot(&id).await.unwrap();
        (thread.turn.last_outcome == Some(TurnOutcome::Parked)).then_some(())
    })
    .await;
    manager.decline_question(&id, &question, None).await.unwrap();
    let thread = wait_until("the resumed turn to end", Duration::from_secs(5), || async {
        let (_, thread) = manager.snapshot(&id).await.unwrap();
        (thread.turn.last_outcome == Some(TurnOutcome::Completed)).then_some(thread)
    })
    .await;
    assert_eq!(received(&thread, &question), InteractionOutcome::Declined { reason: None });
    assert!(last_reply(&thread).contains("you skipped the question"), "{}", last_reply(&thread));
}

#[tokio::test]
async fn an_approval_parked_at_a_stop_is_carried_out_after_the_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let open = async |path: &std::path::Path| {
        SessionManager::new(
            Store::open(path).await.unwrap(),
            Arc::new(ScriptedAgent::new(Scenario::parse(APPROVING, "test").unwrap())),
        )
    };
    let manager = open(&path).await;
    let id = manager.create_session(None).await.unwrap().id;
    manager.send_message(&id, "run the test".into()).await.unwrap();
    let call = pending_question(&manager, &id).await;
    manager.shut_down().await;
    drop(manager);

    let manager = open(&path).await;
    manager.decide_approval(&id, &call, Decision::Allow { always: None }).await.unwrap();
    let thread = wait_until("the resumed turn to end", Duration::from_secs(5), || async {
        let (_, thread) = manager.snapshot(&id).await.unwrap();
        (thread.turn.last_outcome == Some(TurnOutcome::Completed)).then_some(thread)
    })
    .await;
    let ran = thread.tool_call(&call).unwrap();
    assert_eq!((ran.result.as_deref(), ran.status), (Some("test result: ok"), ToolStatus::Done));
    assert!(last_reply(&thread).contains("tests ran"), "{}", last_reply(&thread));
}

#[tokio::test]
async fn a_turn_whose_end_cannot_be_stored_does_not_leave_the_session_busy() {
    let manager = manager().await;
    let session = manager.create_session(None).await.unwrap();
    manager.send_message(&session.id, "slow".into()).await.unwrap();
    wait_until("the reply to start", Duration::from_secs(5), || async {
        let (_, thread) = manager.snapshot(&session.id).await.unwrap();
        thread.messages.last().is_some_and(|m| m.text() == "starting").then_some(())
    })
    .await;
    manager.store().fail_writes(true);
    manager.interrupt(&session.id).await.unwrap();
    wait_until("the turn to end", Duration::from_secs(10), || async {
        let (_, thread) = manager.snapshot(&session.id).await.unwrap();
        (!thread.turn.working).then_some(())
    })
    .await;
    let refused = manager.send_message(&session.id, "hello".into()).await;
    assert!(
        matches!(&refused, Err(AppError::Storage { detail }) if detail.contains("cannot be written")),
        "{refused:?}"
    );
    manager.store().fail_writes(false);
    manager.send_message(&session.id, "hello".into()).await.expect("not stuck as busy");
    let thread = wait_idle(&manager, &session.id).await;
    assert_eq!(thread.messages.iter().filter(|m| m.role == Role::User).count(), 2, "nothing lost");
}

/// The kinds of the session's stored events, in order.
async fn kinds(manager: &SessionManager, id: &str) -> Vec<&'static str> {
    manager.store().events_after(id, 0, 10_000).await.unwrap().iter().map(|event| event.body.kind()).collect()
}

/// Waits for the session's last turn to end with `outcome`, and returns its thread.
async fn ended(manager: &SessionManager, id: &str, outcome: TurnOutcome) -> Thread {
    // A bound for a stuck turn, not a measure: every stored event waits for the disk (fsync), on
    // a machine other tests keep busy.
    wait_until("the turn to end", Duration::from_secs(30), || async {
        let (_, thread) = manager.snapshot(id).await.unwrap();
        (thread.turn.last_outcome.as_ref() == Some(&outcome)).then_some(thread)
    })
    .await
}

/// A session asking "Which auth?", parked (the agent let go after 50 ms), on a database in `dir`.
async fn parked_session(dir: &std::path::Path, timeouts: Timeouts) -> (Arc<SessionManager>, String, String) {
    let timeouts = Timeouts { park_after: Some(Duration::from_millis(50)), ..timeouts };
    let manager = asking_manager_on(&dir.join("db"), timeouts).await;
    let id = manager.create_session(None).await.unwrap().id;
    manager.send_message(&id, "go".into()).await.unwrap();
    let question = pending_question(&manager, &id).await;
    ended(&manager, &id, TurnOutcome::Parked).await;
    (manager, id, question)
}

#[tokio::test]
async fn an_answer_stored_just_before_the_server_died_reaches_the_agent_after_the_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    // The first server runs on a runtime of its own, dropped as soon as the answer is stored: as if
    // it was killed before the resume could start. (`answer_question` would start the resume at
    // once, and the scripted agent might get the answer before the drop: then the agent had it,
    // and the restart rightly cuts the turn short instead.)
    let first = dir.path().to_path_buf();
    let (id, question) = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (store, id, question) = runtime.block_on(async {
            let (manager, id, question) = parked_session(&first, Timeouts::default()).await;
            let answered = crate::thread::EventBody::InteractionResolved {
                tool_use_id: question.clone(),
                outcome: InteractionOutcome::Answered { answers: jwt() },
            };
            manager.runtime(&id).await.unwrap().append(manager.store(), answered).await.unwrap();
            (manager.store().clone(), id, question)
        });
        drop(runtime);
        // A dead process's writes are done with when it is: the database's own threads finish
        // (or roll back) what the dropped tasks had handed them before the next server opens it.
        let closing = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        closing.block_on(async {
            tokio::time::timeout(Duration::from_secs(10), store.close()).await.expect("the first server's store closes")
        });
        (id, question)
    })
    .join()
    .unwrap();

    let manager = asking_manager_on(&path, Timeouts::default()).await;
    manager.recover_unfinished_turns().await.unwrap();
    let thread = ended(&manager, &id, TurnOutcome::Completed).await;
    assert_eq!(received(&thread, &question), InteractionOutcome::Answered { answers: jwt() });
    assert!(last_reply(&thread).ends_with("got \"Which auth?\"=\"JWT\""), "{}", last_reply(&thread));
}

#[tokio::test]
async fn a_message_stored_just_before_the_server_died_gets_its_turn_after_the_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let open = async |path: &std::path::Path| {
        SessionManager::new(Store::open(path).await.unwrap(), Arc::new(ScriptedAgent::new(quick_scenario())))
    };
    let manager = open(&path).await;
    let id = manager.create_session(None).await.unwrap().id;
    // Stored, and the server gone before the turn's start was: what `send_message` does first.
    let message = crate::thread::EventBody::UserMessage {
        message_id: "m1".into(),
        text: "hello".into(),
        attachments: Vec::new(),
    };
    manager.runtime(&id).await.unwrap().append(manager.store(), message).await.unwrap();
    drop(manager);

    let manager = open(&path).await;
    manager.recover_unfinished_turns().await.unwrap();
    let thread = ended(&manager, &id, TurnOutcome::Completed).await;
    assert_eq!(last_reply(&thread), "You said hello");
    assert_eq!(kinds(&manager, &id).await[..3], ["permission_mode_changed", "user_message", "turn_started"]);
}

#[tokio::test]
async fn a_message_sent_while_an_answer_waits_for_its_resume_goes_after_the_resume() {
    let dir = tempfile::tempdir().unwrap();
    let (manager, id, question) = parked_session(dir.path(), Timeouts::default()).await;
    // The answer stored, its resume not started yet: the moment a message could overtake it.
    let answered = crate::thread::EventBody::InteractionResolved {
        tool_use_id: question.clone(),
        outcome: InteractionOutcome::Answered { answers: jwt() },
    };
    manager.runtime(&id).await.unwrap().append(manager.store(), answered).await.unwrap();
    manager.send_message(&id, "and then?".into()).await.expect("stored, not refused");
    wait_until("the message's turn to ask again", Duration::from_secs(10), || async {
        let (_, thread) = manager.snapshot(&id).await.unwrap();
        thread.is_waiting().then_some(())
    })
    .await;
    let (_, thread) = manager.snapshot(&id).await.unwrap();
    assert_eq!(received(&thread, &question), InteractionOutcome::Answered { answers: jwt() }, "the agent took it");
    let kinds = kinds(&manager, &id).await;
    let resumed = kinds.iter().position(|kind| *kind == "resume_started").expect("resumed");
    let message = kinds.iter().position(|kind| *kind == "message_queued").expect("typed ahead of the resume");
    let after = &kinds[resumed..];
    let message_turn = after.iter().position(|kind| *kind == "turn_started").expect("the message's turn") + resumed;
    assert!(message < resumed, "{kinds:?}");
    assert!(kinds[resumed..message_turn].contains(&"turn_ended"), "one after the other: {kinds:?}");
    let texts: Vec<String> = thread.messages.iter().map(|m| m.text()).collect();
    assert!(texts.iter().any(|t| t.ends_with("got \"Which auth?\"=\"JWT\"")), "{texts:?}");
}

#[tokio::test]
async fn a_resume_that_cannot_start_says_why_and_goes_on_once_the_cause_is_fixed() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("project");
    std::fs::create_dir(&folder).unwrap();
    let timeouts = Timeouts {
        park_after: Some(Duration::from_millis(50)),
        resume_retry: Some(Duration::from_millis(200)),
        ..Timeouts::default()
    };
    let manager = asking_manager_on(&dir.path().join("db"), timeouts).await;
    let id = manager.create_session(Some(&folder.display().to_string())).await.unwrap().id;
    manager.send_message(&id, "go".into()).await.unwrap();
    let question = pending_question(&manager, &id).await;
    ended(&manager, &id, TurnOutcome::Parked).await;

    std::fs::remove_dir(&folder).unwrap();
    manager.answer_question(&id, &question, jwt()).await.expect("the answer is taken all the same");
    let notice = wait_until("the thread to say why", Duration::from_secs(10), || async {
        let (_, thread) = manager.snapshot(&id).await.unwrap();
        thread.messages.last().filter(|m| m.role == Role::Notice).map(|m| m.text())
    })
    .await;
    assert!(notice.contains("could not resume with your answer") && notice.contains("there is no folder"), "{notice}");
    assert!(notice.contains("Your answer is kept"), "{notice}");

    std::fs::create_dir(&folder).unwrap();
    let thread = ended(&manager, &id, TurnOutcome::Completed).await;
    assert_eq!(received(&thread, &question), InteractionOutcome::Answered { answers: jwt() });
    let notices = thread.messages.iter().filter(|m| m.role == Role::Notice).count();
    assert_eq!(notices, 1, "said once, however many tries");
}

#[tokio::test]
async fn a_parked_question_expires_on_time_after_a_restart_and_the_agent_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let timeouts = Timeouts { question: Some(Duration::from_millis(1500)), ..Timeouts::default() };
    let asked = std::time::Instant::now();
    let (manager, id, question) = parked_session(dir.path(), timeouts).await;
    manager.shut_down().await;
    drop(manager);

    let manager =
        asking_manager_on(&dir.path().join("db"), Timeouts { park_after: Some(Duration::from_millis(50)), ..timeouts })
            .await;
    manager.recover_unfinished_turns().await.unwrap();
    let (_, thread) = manager.snapshot(&id).await.unwrap();
    assert!(thread.is_waiting(), "not expired before its time");
    let thread = ended(&manager, &id, TurnOutcome::Completed).await;
    assert!(asked.elapsed() >= Duration::from_millis(1500), "{:?}", asked.elapsed());
    assert_eq!(received(&thread, &question), InteractionOutcome::Expired);
    assert!(last_reply(&thread).contains("nobody answered in time"), "{}", last_reply(&thread));
}

/// The scripted agent, whose resumes fail while `failing` is set (as a missing CLI's would).
struct FailingResumes {
    inner: ScriptedAgent,
    failing: std::sync::atomic::AtomicBool,
}

impl crate::agent::AgentBackend for FailingResumes {
    fn name(&self) -> &'static str {
        "scripted"
    }

    fn run_turn(
        &self,
        request: crate::agent::TurnRequest,
        sink: crate::agent::Sink,
    ) -> futures::future::BoxFuture<'_, Result<Option<crate::thread::Usage>, crate::agent::AgentError>> {
        if request.resume && self.failing.load(std::sync::atomic::Ordering::SeqCst) {
            let failed = crate::agent::AgentError::Failed("cannot run `claude`: No such file or directory".into());
            return Box::pin(async move { Err(failed) });
        }
        self.inner.run_turn(request, sink)
    }
}

#[tokio::test]
async fn a_resume_whose_agent_fails_says_why_and_takes_the_answer_then_the_message_once_it_can() {
    let agent = Arc::new(FailingResumes {
        inner: ScriptedAgent::new(Scenario::parse(ASKS_WHICH_AUTH, "test").unwrap()),
        failing: true.into(),
    });
    let timeouts = Timeouts {
        park_after: Some(Duration::from_millis(50)),
        resume_retry: Some(Duration::from_millis(300)),
        ..Timeouts::default()
    };
    let manager = SessionManager::with_timeouts(Store::open_in_memory().await.unwrap(), agent.clone(), timeouts);
    let id = manager.create_session(None).await.unwrap().id;
    manager.send_message(&id, "go".into()).await.unwrap();
    let question = pending_question(&manager, &id).await;
    ended(&manager, &id, TurnOutcome::Parked).await;

    manager.answer_question(&id, &question, jwt()).await.unwrap();
    let notice = wait_until("the thread to say why", Duration::from_secs(10), || async {
        let (_, thread) = manager.snapshot(&id).await.unwrap();
        thread.messages.last().filter(|m| m.role == Role::Notice).map(|m| m.text())
    })
    .await;
    assert!(notice.contains("could not resume with your answer: cannot run `claude`"), "{notice}");
    // A message now is kept, and waits behind the answer.
    manager.send_message(&id, "still there?".into()).await.expect("kept, not refused");

    agent.failing.store(false, std::sync::atomic::Ordering::SeqCst);
    wait_until("the message's turn to ask again", Duration::from_secs(10), || async {
        let (_, thread) = manager.snapshot(&id).await.unwrap();
        (thread.is_waiting() && !thread.has_queued()).then_some(())
    })
    .await;
    let (_, thread) = manager.snapshot(&id).await.unwrap();
    assert_eq!(received(&thread, &question), InteractionOutcome::Answered { answers: jwt() });
    let kinds = kinds(&manager, &id).await;
    let last_resume = kinds.iter().rposition(|kind| *kind == "resume_started").unwrap();
    let message_turn = kinds.iter().rposition(|kind| *kind == "turn_started").unwrap();
    assert!(last_resume < message_turn, "the answer first, then the message: {kinds:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deletion_that_waits_for_its_session_does_not_hold_up_the_notices_of_other_sessions() {
    let url = crate::testing::postgres::TestPostgres::shared().database().await;
    let server = || async {
        let manager =
            SessionManager::new(Store::connect(&url).await.unwrap(), Arc::new(ScriptedAgent::new(quick_scenario())));
        manager.join_team().await.unwrap();
        manager
    };
    let (a, b) = (server().await, server().await);
    let x = a.create_session(None).await.unwrap().id;
    let y = a.create_session(None).await.unwrap().id;
    let x_on_a = a.runtime(&x).await.unwrap();
    let mut y_on_a = a.runtime(&y).await.unwrap().subscribe();

    // On A, something holds x (a slow write, an agent winding down) while B deletes it.
    let held = x_on_a.lock().await;
    b.delete_session(&x).await.unwrap();
    b.send_message(&y, "hello".into()).await.unwrap();
    let heard = tokio::time::timeout(Duration::from_secs(30), y_on_a.recv())
        .await
        .expect("A's tab on y hears B's message while x's deletion waits on A")
        .unwrap();
    assert!(matches!(heard.body, crate::thread::EventBody::UserMessage { .. }), "{heard:?}");

    drop(held);
    drop(x_on_a);
    wait_until("A to let x go", Duration::from_secs(10), || async { a.log.loaded(&x).is_none().then_some(()) }).await;
}

/// Group commit (`stream.rs`): words that stream faster than the store writes go to it together,
/// merged into a few events, in order, and the stored thread holds every one of them.
#[tokio::test]
async fn words_streamed_faster_than_the_store_writes_are_stored_together_and_whole() {
    const WORDS: usize = 300;
    let words: String = (0..WORDS).map(|i| format!("w{i} ")).collect();
    let scenario =
        Scenario::parse(&format!("pace = 1000000\n[[turn]]\n[[turn.step]]\nsay = \"{words}\"\n"), "t").unwrap();
    let manager = SessionManager::new(Store::open_in_memory().await.unwrap(), Arc::new(ScriptedAgent::new(scenario)));
    let session = manager.create_session(None).await.unwrap();
    manager.send_message(&session.id, "go".into()).await.unwrap();
    let thread = wait_idle(&manager, &session.id).await;

    assert_eq!(thread.messages[1].blocks, vec![Block::Text { text: words.trim_end().to_string() }]);
    assert_eq!(manager.store().load_thread(&session.id).await.unwrap(), thread);
    let pieces = manager
        .store()
        .events_after(&session.id, 0, u32::MAX)
        .await
        .unwrap()
        .into_iter()
        .filter(|event| event.body.is_delta())
        .count();
    assert!(pieces < WORDS / 10, "{pieces} stored pieces for {WORDS} words");
}

/// An agent that asks 10,000 questions in one call (issue 33): the card's preview stores only
/// what changed, and stops at the most one card asks; the card that opens says what went over,
/// and so is the agent told; deleting the session gives its space back to the file system.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_questions_cost_bounded_storage_and_a_card_that_says_why() {
    use crate::question::{MAX_OPTIONS, MAX_QUESTIONS};
    use crate::thread::EventBody;
    const ASKED: usize = 10_000;
    let questions: Vec<serde_json::Value> = (1..=ASKED)
        .map(|n| {
            let options: Vec<serde_json::Value> =
                ["Yes", "No"].iter().map(|label| serde_json::json!({"label": label})).collect();
            serde_json::json!({"question": format!("Question {n}?"), "header": format!("Q{n}"), "options": options})
        })
        .collect();
    let input = serde_json::json!({ "questions": questions }).to_string();
    let scenario = Scenario::parse(
        &format!(
            "pace = 1000000\nargument_chunk = 1024\n[[turn]]\n[[turn.step]]\nask = \"AskUserQuestion\"\ninput = '''{input}'''\n\
             [[turn.step]]\nsay = \"got {{{{answer}}}}\"\n"
        ),
        "t",
    )
    .unwrap();
    let folder = tempfile::tempdir().unwrap();
    let database = folder.path().join("askbridge.db");
    let store = Store::open(&database).await.unwrap();
    let manager = SessionManager::new(store, Arc::new(ScriptedAgent::new(scenario)));
    let session = manager.create_session(None).await.unwrap();
    manager.send_message(&session.id, "ask me everything".into()).await.unwrap();
    let thread = wait_until("the turn to end", Duration::from_secs(120), || async {
        let (_, thread) = manager.snapshot(&session.id).await.unwrap();
        (!thread.turn.working).then_some(thread)
    })
    .await;

    // The card says what went over, and the agent was told the same.
    let call = thread.messages[1]
        .blocks
        .iter()
        .find_map(|block| match block {
            Block::ToolCall(call) => Some(call),
            _ => None,
        })
        .expect("the question's call");
    let interaction = call.interaction.as_ref().expect("its card");
    let said = format!("there are {ASKED} questions, and one card asks at most {MAX_QUESTIONS}");
    assert!(
        matches!(&interaction.request, InteractionRequest::Unreadable { error } if error.contains(&said)),
        "{:?}",
        interaction.request
    );
    assert!(thread.messages.last().unwrap().text().contains(&said), "the agent is told why");

    // The preview: only what changed, and never more than one card's worth.
    let previews: Vec<_> = manager
        .store()
        .events_after(&session.id, 0, u32::MAX)
        .await
        .unwrap()
        .into_iter()
        .filter(|event| matches!(event.body, EventBody::ToolInputPreview { .. }))
        .collect();
    let stored: usize = previews.iter().map(|event| serde_json::to_string(&event.body).unwrap().len()).sum();
    assert!(!previews.is_empty(), "the card filled in while the agent wrote");
    assert!(previews.len() <= MAX_QUESTIONS * (MAX_OPTIONS + 2), "{} preview events", previews.len());
    assert!(stored < 256 * 1024, "{stored} bytes of preview stored");

    // Deleting the session gives its space back.
    let size = || std::fs::metadata(&database).unwrap().len();
    let before = size();
    manager.delete_session(&session.id).await.unwrap();
    let after = size();
    assert!(after + input.len() as u64 / 2 < before, "the database file went from {before} to {after} bytes");
}

/// A session of `manager`'s whose turn started and whose reply `a1` started and ended, that end
/// held (`SessionRuntime::hold`); a tab that followed it from before its turn, and the sequence
/// number it followed from.
struct HeldReply {
    id: String,
    runtime: Arc<super::runtime::SessionRuntime>,
    store: Store,
    tab: tokio::sync::broadcast::Receiver<Arc<crate::thread::SessionEvent>>,
    before: u64,
}

async fn held_reply(manager: &SessionManager) -> HeldReply {
    use crate::thread::EventBody;
    let id = manager.create_session(None).await.unwrap().id;
    let (runtime, store) = (manager.runtime(&id).await.unwrap(), manager.store().clone());
    let tab = runtime.subscribe();
    let before = runtime.seq();
    runtime.append(&store, EventBody::TurnStarted).await.unwrap();
    runtime.append(&store, EventBody::AssistantMessageStarted { message_id: "a1".into() }).await.unwrap();
    runtime.hold(&store, EventBody::MessageFinished { message_id: "a1".into() }).await.unwrap();
    HeldReply { id, runtime, store, tab, before }
}

/// A reply's end waits for the event after it, its turn's end, and the two are one transaction;
/// neither is broadcast before it is stored. A reply's end that nothing follows is stored alone,
/// a moment later.
#[tokio::test]
async fn a_replys_end_is_stored_with_its_turns_end_and_alone_when_nothing_follows() {
    use crate::thread::EventBody;
    let manager = manager().await;
    let HeldReply { id, runtime, store, mut tab, .. } = held_reply(&manager).await;
    let finished = |message: &str| EventBody::MessageFinished { message_id: message.into() };

    let commits = store.commits();
    runtime.append(&store, EventBody::TurnEnded { outcome: TurnOutcome::Completed, usage: None }).await.unwrap();
    assert_eq!(store.commits(), commits + 1, "the reply's end and the turn's end in one transaction");
    let kinds: Vec<&str> = std::iter::from_fn(|| tab.try_recv().ok()).map(|event| event.body.kind()).collect();
    assert_eq!(kinds, ["turn_started", "assistant_message_started", "message_finished", "turn_ended"]);
    let stored = store.load_thread(&id).await.unwrap();
    assert!(!stored.messages[0].streaming && !stored.turn.working, "{stored:?}");

    runtime.append(&store, EventBody::AssistantMessageStarted { message_id: "a2".into() }).await.unwrap();
    assert_eq!(tab.recv().await.unwrap().body.kind(), "assistant_message_started");
    runtime.hold(&store, finished("a2")).await.unwrap();
    assert!(tab.try_recv().is_err(), "not broadcast before it is stored");
    let event = tokio::time::timeout(Duration::from_secs(5), tab.recv()).await.expect("stored alone").unwrap();
    assert_eq!(event.body, finished("a2"));
    assert!(!store.load_thread(&id).await.unwrap().messages[1].streaming, "stored before it was broadcast");
}

/// A write whose caller went away midway (its future dropped while the store wrote, as a turn's
/// task is at the end of its grace) loses nothing else: the reply's end held for it is stored with
/// the next event, the log has no gap, and each stored event reaches the tabs once, in order.
#[tokio::test]
async fn a_write_cut_short_by_its_caller_going_away_loses_no_held_event_and_leaves_no_gap() {
    use crate::thread::EventBody;
    let manager = manager().await;
    let HeldReply { id, runtime, store, mut tab, before } = held_reply(&manager).await;

    let mut cut_short =
        Box::pin(runtime.append(&store, EventBody::AssistantMessageStarted { message_id: "a2".into() }));
    assert!(futures::poll!(cut_short.as_mut()).is_pending(), "the write is under way");
    drop(cut_short);

    // The next one (not a turn's end, which would end the reply anyway).
    runtime.append(&store, EventBody::AssistantMessageStarted { message_id: "a3".into() }).await.unwrap();
    let stored = store.load_thread(&id).await.unwrap();
    assert!(!stored.messages[0].streaming, "the held reply's end is stored: {stored:?}");
    let seqs: Vec<u64> = store.events_after(&id, 0, u32::MAX).await.unwrap().iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=stored.seq).collect::<Vec<_>>(), "no gap in the log");
    assert_eq!(runtime.lock().await.thread.seq, stored.seq, "the runtime's thread is the stored one");
    let seen: Vec<u64> = std::iter::from_fn(|| tab.try_recv().ok()).map(|event| event.seq).collect();
    assert_eq!(seen, (before + 1..=stored.seq).collect::<Vec<_>>(), "each stored event reached the tab once, in order");
}
