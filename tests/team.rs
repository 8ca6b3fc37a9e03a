//! A team server (issue 14): several AskBridge servers on one real Postgres, started by the test
//! in a temporary folder. A question asked through one server is shown live and answered through
//! another, and the agent gets the answer; two answers at once through two servers: exactly one
//! wins. A server that stops lets another take its sessions: a Messages API question waiting on
//! it is answered through another server, which resumes the conversation; a server killed in the
//! middle of a turn lets its lease expire, and another server ends that turn honestly. A parked
//! question expires once, on time, whichever server's timer gets there first.

use crate::support;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use askbridge::error::AppError;
use askbridge::store::Store;
use askbridge::testing::postgres::TestPostgres;
use askbridge::thread::{EventBody, Role, SessionEvent, Thread, TurnOutcome};
use serde_json::{Value, json};
use support::mock_anthropic::{Block as MockBlock, MockAnthropic, Reply};
use support::server::{Api, QUESTION, Server, TOKEN, Tab, ask_and_quote_in};

fn opened(event: &SessionEvent) -> Option<String> {
    match &event.body {
        EventBody::InteractionOpened { tool_use_id, .. } => Some(tool_use_id.clone()),
        _ => None,
    }
}

fn ended(outcome: TurnOutcome) -> impl Fn(&SessionEvent) -> Option<()> {
    move |event| matches!(&event.body, EventBody::TurnEnded { outcome: o, .. } if *o == outcome).then_some(())
}

fn fold(events: &[SessionEvent]) -> Thread {
    let mut thread = Thread::default();
    for event in events {
        thread.apply(event);
    }
    thread
}

fn last_reply(thread: &Thread) -> String {
    thread
        .messages
        .iter()
        .rev()
        .find(|message| message.role == Role::Assistant)
        .map(|m| m.text().trim().to_string())
        .unwrap_or_default()
}

async fn create_session(api: &Api) -> String {
    let summary = api.call("create_session", json!({})).await.unwrap();
    summary["id"].as_str().unwrap().to_string()
}

/// Two servers, A and B, on `database`, each with `flags` too.
async fn two_servers(dir: &Path, database: &str, flags: &[&str]) -> (Server, Server) {
    let flags = [&["--database-url", database], flags].concat();
    (Server::start(&dir.join("a"), &flags).await, Server::start(&dir.join("b"), &flags).await)
}

/// Two servers whose scripted agent asks one question per message and then quotes the answer it
/// got, which shows what reached the agent, on whichever server it ran; it waits for the answer
/// running (not parked).
async fn two_scripted_servers(dir: &Path, database: &str) -> (Server, Server) {
    let scenario = ask_and_quote_in(dir);
    two_servers(dir, database, &["--agent", "scripted", "--scenario", &scenario, "--park-after", "10m"]).await
}

/// A tab on each server, following `session` live from now on.
async fn a_tab_on_each(api_a: &Api, api_b: &Api, session: &str) -> (Tab, Tab) {
    let mut tabs = (Tab::new(api_a.clone(), session, None), Tab::new(api_b.clone(), session, None));
    tabs.0.connect().await;
    tabs.1.connect().await;
    tabs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_asked_through_one_server_is_shown_and_answered_through_another() {
    let database = TestPostgres::shared().database().await;
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_scripted_servers(dir.path(), &database).await;
    let (api_a, api_b) = (a.api(), b.api());

    let id = create_session(&api_a).await;
    // A tab on each server, live before anything is asked.
    let (mut tab_a, mut tab_b) = a_tab_on_each(&api_a, &api_b, &id).await;

    // Asked through A (its agent runs there), shown on B as it is asked, answered through B.
    api_a.send(&id, "Set up auth").await.unwrap();
    let asked = tab_b.until("the question, on B's tab", opened).await;
    api_b.answer(&id, &asked, QUESTION, "JWT").await.unwrap();
    // The agent on A got exactly that answer, and both tabs saw it.
    tab_b.until("the reply, on B's tab", ended(TurnOutcome::Completed)).await;
    assert_eq!(last_reply(&fold(&tab_b.log)), "got \"Which auth?\"=\"JWT\"");
    tab_a.until("the reply, on A's tab", ended(TurnOutcome::Completed)).await;

    // The next message goes through B, whose agent now runs the session. Two different answers
    // at once, through A and B: exactly one wins, the other is told it came too late.
    api_b.send(&id, "And again").await.unwrap();
    let asked = tab_a.until("the second question, on A's tab", opened).await;
    let (through_a, through_b) =
        tokio::join!(api_a.answer(&id, &asked, QUESTION, "JWT"), api_b.answer(&id, &asked, QUESTION, "Sessions"));
    let winner = match (&through_a, &through_b) {
        (Ok(()), Err(AppError::AlreadyAnswered)) => "JWT",
        (Err(AppError::AlreadyAnswered), Ok(())) => "Sessions",
        other => panic!("two answers at once through two servers gave {other:?}"),
    };
    let refused = through_a.err().or(through_b.err()).unwrap();
    assert!(refused.to_string().contains("already answered"), "{refused}");
    // The same answer again, through either server, changes nothing.
    api_a.answer(&id, &asked, QUESTION, winner).await.unwrap();
    tab_a.until("the second reply, on A's tab", ended(TurnOutcome::Completed)).await;
    tab_b.until("the second reply, on B's tab", ended(TurnOutcome::Completed)).await;
    assert_eq!(last_reply(&fold(&tab_a.log)), format!("got \"Which auth?\"=\"{winner}\""));

    // Both tabs got exactly the stored log: no gap, no repeat (each tab checks its order).
    let store = Store::connect(&database).await.unwrap();
    let stored = store.events_after(&id, 0, u32::MAX).await.unwrap();
    assert_eq!(tab_a.log, stored, "A's tab");
    assert_eq!(tab_b.log, stored, "B's tab");
    let resolved = stored.iter().filter(|e| matches!(e.body, EventBody::InteractionResolved { .. })).count();
    assert_eq!(resolved, 2, "each question is resolved once");
    drop((api_a, api_b));
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_question_expires_once_on_time_across_servers_and_its_agent_resumes_once() {
    let database = TestPostgres::shared().database().await;
    let dir = tempfile::tempdir().unwrap();
    let scenario = ask_and_quote_in(dir.path());
    let flags = ["--agent", "scripted", "--scenario", &scenario, "--park-after", "300ms", "--question-timeout", "2s"];
    let (a, b) = two_servers(dir.path(), &database, &flags).await;
    let (api_a, api_b) = (a.api(), b.api());
    let id = create_session(&api_a).await;
    let (mut tab_a, mut tab_b) = a_tab_on_each(&api_a, &api_b, &id).await;

    api_a.send(&id, "Set up auth").await.unwrap();
    tab_b.until("the question, on B's tab", opened).await;
    let asked = std::time::Instant::now();
    tab_b.until("the agent to let go of it", ended(TurnOutcome::Parked)).await;
    // Both servers' timers know its deadline; it expires once, and its agent resumes once.
    tab_a.until("the resumed reply, on A's tab", ended(TurnOutcome::Completed)).await;
    assert!(asked.elapsed() >= Duration::from_millis(1500), "not before its time: {:?}", asked.elapsed());
    assert_eq!(last_reply(&fold(&tab_a.log)), "got nothing: nobody answered in time");
    let store = Store::connect(&database).await.unwrap();
    let stored = store.events_after(&id, 0, u32::MAX).await.unwrap();
    let count = |kind: &str| stored.iter().filter(|e| e.body.kind() == kind).count();
    assert_eq!((count("interaction_resolved"), count("resume_started")), (1, 1), "{stored:#?}");
    drop((api_a, api_b));
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_and_delete_through_another_server_reach_the_server_that_runs_the_session() {
    let database = TestPostgres::shared().database().await;
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_scripted_servers(dir.path(), &database).await;
    let (api_a, api_b) = (a.api(), b.api());

    let id = create_session(&api_a).await;
    let (mut tab_a, mut tab_b) = a_tab_on_each(&api_a, &api_b, &id).await;
    api_a.send(&id, "Set up auth").await.unwrap();
    tab_b.until("the question, on B's tab", opened).await;

    // Renamed through B: only the list changes (A's tab stays open, as the next event shows).
    api_b.call("rename_session", json!({"id": id, "title": "Auth"})).await.unwrap();
    // Stop, pressed on a page served by B: the turn runs on A, which stops it.
    api_b.call("interrupt_turn", json!({"session": id})).await.unwrap();
    tab_b.until("the turn to stop", ended(TurnOutcome::Interrupted)).await;
    tab_a.until("the turn to stop, on A's tab", ended(TurnOutcome::Interrupted)).await;

    // Deleted through B: A lets go of it, and A's tab is told the session is gone.
    api_b.call("delete_session", json!({"id": id})).await.unwrap();
    assert!(matches!(tab_a.until_problem().await, AppError::SessionNotFound { .. }));
    let listed = api_a.call("list_sessions", json!({})).await.unwrap();
    assert_eq!(listed, json!([]), "A lists no session");
    drop((api_a, api_b));
    a.stop().await;
    b.stop().await;
}

fn auth_question() -> Value {
    json!({"questions": [{"question": QUESTION, "header": "Auth", "multiSelect": false, "options": [
        {"label": "JWT", "description": "Stateless tokens"}, {"label": "Sessions", "description": "Server-side"}]}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_messages_api_question_left_by_a_stopped_server_is_answered_and_resumed_through_another() {
    let database = TestPostgres::shared().database().await;
    let asks = Reply::text("Let me ask.").with(MockBlock::ToolUse {
        id: "toolu_auth".into(),
        name: "AskUserQuestion".into(),
        input: auth_question(),
    });
    let mock = MockAnthropic::start(vec![asks, Reply::text("JWT it is.")]).await;
    let dir = tempfile::tempdir().unwrap();
    let base_url = mock.base_url();
    let flags = ["--agent", "anthropic", "--base-url", &base_url, "--api-key", "sk-test"];
    let (a, b) = two_servers(dir.path(), &database, &flags).await;
    let (api_a, api_b) = (a.api(), b.api());

    let id = create_session(&api_a).await;
    let mut tab_b = Tab::new(api_b.clone(), &id, None);
    tab_b.connect().await;
    api_a.send(&id, "Help me set up auth.").await.unwrap();
    tab_b.until("the question, parked", ended(TurnOutcome::Parked)).await;

    // A stops while the question waits; B takes the session when the answer comes.
    drop(api_a);
    a.stop().await;
    api_b.answer(&id, "toolu_auth", QUESTION, "JWT").await.unwrap();
    tab_b.until("the conversation to go on, on B", ended(TurnOutcome::Completed)).await;
    let thread = fold(&tab_b.log);
    assert_eq!(last_reply(&thread), "JWT it is.");
    let requests = mock.wait_for_requests(2, Duration::from_secs(10)).await;
    let results = support::mock_anthropic::tool_results_in(&requests[1..]);
    assert_eq!(results.len(), 1, "{results:?}");
    let (tool_use_id, content, is_error) = &results[0];
    assert_eq!((tool_use_id.as_str(), *is_error), ("toolu_auth", false));
    assert!(content.contains("\"Which auth?\"=\"JWT\""), "{content}");
    drop(api_b);
    b.stop().await;
}

/// The real binary, so that it can die as a process does: no goodbye, its lease left to expire.
async fn start_process(dir: &Path, flags: &[&str]) -> (tokio::process::Child, Api) {
    start_process_with(dir, flags, &[]).await
}

/// The same, with `env` added to its environment.
async fn start_process_with(dir: &Path, flags: &[&str], env: &[(String, String)]) -> (tokio::process::Child, Api) {
    let log = std::fs::File::create(dir.join("server.log")).unwrap();
    // On a port the system picks: the link it prints says which.
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_askbridge"))
        .args(["serve", "--addr", "127.0.0.1:0", "--token", TOKEN, "--data-dir"])
        .arg(dir.join("data"))
        .args(flags)
        .envs(env.iter().map(|(name, value)| (name, value)))
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Serving once it prints its address.
    let base = support::listening_at(&mut child).await;
    (child, Api::at(&base))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_turn_lets_its_lease_expire_and_another_ends_the_turn_honestly() {
    let database = TestPostgres::shared().database().await;
    let dir = tempfile::tempdir().unwrap();
    // Every message asks one question and then quotes the answer it got, which shows what
    // reached the agent, on whichever server it ran.
    let scenario = ask_and_quote_in(dir.path());
    let flags = [
        "--database-url",
        &database,
        "--agent",
        "scripted",
        "--scenario",
        &scenario,
        "--park-after",
        "10m",
        "--lease",
        "1s",
    ];
    std::fs::create_dir_all(dir.path().join("a")).unwrap();
    let (mut a, api_a) = start_process(&dir.path().join("a"), &flags).await;
    let b = Server::start(&dir.path().join("b"), &flags).await;
    let api_b = b.api();

    let id = create_session(&api_a).await;
    let mut tab_b = Tab::new(api_b.clone(), &id, None);
    tab_b.connect().await;
    api_a.send(&id, "Set up auth").await.unwrap();
    // A's agent waits for the answer, running (not parked): its turn holds A's lease.
    tab_b.until("the question, on B's tab", opened).await;
    // Typed ahead through B while the agent runs on A: queued, for after that turn.
    api_b.send(&id, "and then the tests").await.expect("queued");

    a.start_kill().unwrap();
    a.wait().await.unwrap();
    // Once A's lease expires, B ends the turn A left, saying so.
    tab_b.until("B to take over A's turn", ended(TurnOutcome::Abandoned)).await;
    let notice = tab_b
        .until("the notice that says so", |event| match &event.body {
            EventBody::Notice { text, .. } => Some(text.clone()),
            _ => None,
        })
        .await;
    assert!(notice.contains("The server running the agent stopped"), "{notice}");
    let thread = fold(&tab_b.log);
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Abandoned));
    assert!(!thread.turn.working);

    // The session goes on through B, with the message that waited for the turn A left.
    let asked = tab_b.until("the queued message's question, on B", opened).await;
    let thread = fold(&tab_b.log);
    assert_eq!(thread.messages.iter().rfind(|m| m.role == Role::User).unwrap().text(), "and then the tests");
    api_b.answer(&id, &asked, QUESTION, "Sessions").await.unwrap();
    tab_b.until("B's reply", ended(TurnOutcome::Completed)).await;
    assert_eq!(last_reply(&fold(&tab_b.log)), "got \"Which auth?\"=\"Sessions\"");
    drop(api_b);
    b.stop().await;
}

/// An ACP agent (Claude's adapter, pinned) run by two real servers of one team, on this machine:
/// its question asked through A is answered through B, and reaches the agent on A. Then A stops
/// (as on SIGTERM) while a second question waits: the question parks in the agent's host, which
/// outlives A, and its answer through B attaches B to that host, in A's folder, and the agent
/// goes on with the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acp_question_is_answered_through_another_server_and_after_its_server_stopped_too() {
    let database = TestPostgres::shared().database().await;
    let ask = |id: &str| Reply::tool_use(id, "AskUserQuestion", auth_question());
    let mock = MockAnthropic::start(vec![
        ask("toolu_1"),
        Reply::text("JWT it is."),
        ask("toolu_2"),
        Reply::text("Sessions it is."),
    ])
    .await;
    mock.answer_side_requests("Mock title");
    let home = support::claude_code::ClaudeHome::new();
    let mut env = home.env(&mock);
    env.push(("IS_SANDBOX".to_string(), "1".to_string()));
    let adapter =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js");
    let command = format!("claude-acp=node {}", adapter.display());
    let project = home.project().display().to_string();
    let flags = [
        "--database-url",
        &database,
        "--acp",
        &command,
        "--agent",
        "claude-acp",
        "--workdir",
        &project,
        "--agent-env",
        "DISABLE_*,IS_SANDBOX",
        "--lease",
        "2s",
    ];
    let dir = tempfile::tempdir().unwrap();
    for server in ["a", "b"] {
        std::fs::create_dir_all(dir.path().join(server)).unwrap();
    }
    let (mut a, api_a) = start_process_with(&dir.path().join("a"), &flags, &env).await;
    let (mut b, api_b) = start_process_with(&dir.path().join("b"), &flags, &env).await;

    let id = create_session(&api_a).await;
    let mut tab_b = Tab::new(api_b.clone(), &id, None);
    tab_b.connect().await;
    api_a.send(&id, "Set up auth; ask me which.").await.unwrap();
    let asked = tab_b.until("the question, on B's tab", opened).await;
    api_b.answer(&id, &asked, QUESTION, "JWT").await.unwrap();
    tab_b.until("the reply, on B's tab", ended(TurnOutcome::Completed)).await;
    assert_eq!(last_reply(&fold(&tab_b.log)), "JWT it is.");
    let sent = mock.requests()[1..].iter().map(|r| r["messages"].to_string()).collect::<String>();
    assert!(sent.contains(r#"\"Which auth?\"=\"JWT\""#), "the model read the answer given through B: {sent}");

    // A stops while the second question waits: the card parks; the agent waits in its host.
    api_a.send(&id, "And the next step?").await.unwrap();
    let asked =
        tab_b.until("the second question, on B's tab", |event| opened(event).filter(|id| *id == "toolu_2")).await;
    let pid = a.id().unwrap().to_string();
    std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    a.wait().await.unwrap();
    tab_b
        .until("the question to park", |event| matches!(&event.body, EventBody::InteractionParked { .. }).then_some(()))
        .await;
    api_b.answer(&id, &asked, QUESTION, "Sessions").await.unwrap();
    tab_b.until("the agent to go on, through B", ended(TurnOutcome::Completed)).await;
    let thread = fold(&tab_b.log);
    assert_eq!(last_reply(&thread), "Sessions it is.");
    let sent = mock.requests().last().unwrap()["messages"].to_string();
    assert!(sent.contains(r#"\"Which auth?\"=\"Sessions\""#), "{sent}");
    assert!(
        thread.turn.agent_host.as_deref().is_some_and(|host| host.contains("/a/data/")),
        "{:?}",
        thread.turn.agent_host
    );

    // Deleting the session through B ends the agent's host, in A's folder.
    api_b.call("delete_session", json!({"id": id})).await.unwrap();
    let socket = dir.path().join(format!("a/data/acp/{id}.sock"));
    askbridge::testing::wait_until("the host to end", Duration::from_secs(10), || async {
        (!socket.exists()).then_some(())
    })
    .await;
    drop(api_b);
    b.start_kill().unwrap();
    b.wait().await.unwrap();
}
