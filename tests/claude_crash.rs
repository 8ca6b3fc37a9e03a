//! AskBridge killed (SIGKILL) while Claude Code waits for the person's answer: the CLI dies with
//! the server, so it cannot tell the model that the person declined (which it would, left alone
//! with its stdin closed: protocol §12, l_hook_eof). After the restart the card says what the
//! model will be told, that the call was interrupted, never "answered", and the answer can still
//! go to the agent as a message. The real `askbridge` binary, the real CLI and the mock Messages API.

use crate::support;

use std::process::Stdio;
use std::time::Duration;

use askbridge::agent::claude::protocol::TOLD_WHEN_KILLED;
use askbridge::testing::wait_until;
use serde_json::{Value, json};
use support::claude_code::{ClaudeHome, claude_bin};
use support::mock_anthropic::{MockAnthropic, Reply};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const AUTH: &str = "Which auth method should we use?";
/// The access token the server is started with (`ASKBRIDGE_TOKEN`), sent as a bearer token.
const TOKEN: &str = "crash-test-token-0123456789";

/// One JSON POST to the server's API, as a script would send it.
async fn post(port: u16, name: &str, body: Value) -> (u16, Value) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let body = body.to_string();
    let request = format!(
        "POST /api/{name} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Authorization: Bearer {TOKEN}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response[9..12].parse().unwrap();
    let (_, body) = response.split_once("\r\n\r\n").unwrap();
    // Small bodies come whole; a chunked one has its size lines around the JSON.
    let json = body.find(['{', '[']).map(|at| &body[at..body.rfind(['}', ']']).unwrap() + 1]).unwrap_or("null");
    (status, serde_json::from_str(json).unwrap_or(Value::Null))
}

struct Server {
    child: tokio::process::Child,
    port: u16,
}

async fn serve(home: &ClaudeHome, mock: &MockAnthropic) -> Server {
    serve_with(home, mock, &[]).await
}

/// The server with `env` added to its environment, on a port the system picks.
async fn serve_with(home: &ClaudeHome, mock: &MockAnthropic, env: &[(&str, &str)]) -> Server {
    let path = |p: &str| home.path().join(p).display().to_string();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_askbridge"));
    command
        .args(["serve", "--data-dir", &path("data"), "--agent", "claude"])
        .args(["--claude-bin", &claude_bin().display().to_string(), "--workdir", &path("project")])
        .env("ASKBRIDGE_TOKEN", TOKEN)
        .envs(home.env(mock))
        .envs(env.iter().copied())
        .stderr(Stdio::null());
    listening(command).await
}

/// Starts `command` (an `askbridge serve` without `--addr`) on `127.0.0.1:0`, and reads the port
/// it listens on from the link it prints: no port is chosen here and let go for it to take.
async fn listening(mut command: tokio::process::Command) -> Server {
    let mut child = command.args(["--addr", "127.0.0.1:0"]).stdout(Stdio::piped()).kill_on_drop(true).spawn().unwrap();
    let base = support::listening_at(&mut child).await;
    let port = base.rsplit(':').next().and_then(|port| port.parse().ok()).expect("a port in the link");
    Server { child, port }
}

/// The processes whose parent is `pid` (from /proc).
fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|child| {
            std::fs::read_to_string(format!("/proc/{child}/stat")).is_ok_and(|stat| {
                // After the command's name in parentheses: state, then the parent's pid. A child
                // that has exited and is not yet reaped (Z) has no environment left to read.
                let mut fields = stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace()).into_iter().flatten();
                fields.next() != Some("Z") && fields.next().and_then(|parent| parent.parse::<u32>().ok()) == Some(pid)
            })
        })
        .collect()
}

/// A process's environment, one `NAME=value` per line.
fn environment_of(pid: u32) -> String {
    String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default()).replace('\0', "\n")
}

/// The tool call `tool_use_id` of the session, as the server has it.
async fn tool_call(port: u16, session: &str, tool_use_id: &str) -> Option<Value> {
    let (_, view) = post(port, "load_session", json!({"id": session})).await;
    let messages = view["thread"]["messages"].as_array()?.clone();
    messages
        .iter()
        .flat_map(|m| m["blocks"].as_array().cloned().unwrap_or_default())
        .find_map(|b| (b["tool_call"]["id"] == tool_use_id).then(|| b["tool_call"].clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_crash_the_card_says_what_the_agent_was_told_and_the_answer_can_follow_as_a_message() {
    let question = json!({"question": AUTH, "header": "Auth", "multiSelect": false, "options": [
        {"label": "JWT", "description": "Stateless tokens"}, {"label": "Sessions", "description": "Server-side"}]});
    let mock = MockAnthropic::start(vec![
        Reply::tool_use("toolu_ask", "AskUserQuestion", json!({"questions": [question]})),
        Reply::text("Thanks, JWT then."),
    ])
    .await;
    let home = ClaudeHome::new();
    let mut server = serve(&home, &mock).await;
    let port = server.port;
    let (_, session) = post(port, "create_session", json!({})).await;
    let session = session["id"].as_str().unwrap().to_string();
    let (status, _) = post(port, "send_message", json!({"session": session, "text": "Set up auth; ask me."})).await;
    assert_eq!(status, 200);
    wait_until("the question", Duration::from_secs(60), || async {
        let call = tool_call(port, &session, "toolu_ask").await?;
        (call["interaction"]["outcome"].is_null() && call["interaction"].is_object()).then_some(())
    })
    .await;

    // The CLI runs with the allowed part of the server's environment, never the access token.
    let server_pid = server.child.id().unwrap();
    // A child that exits meanwhile (the CLI the server asked for its models) reads as empty.
    let cli_environments = children_of(server_pid)
        .into_iter()
        .map(environment_of)
        .filter(|environment| !environment.is_empty())
        .collect::<Vec<_>>();
    assert!(!cli_environments.is_empty(), "the CLI runs, as a child of the server");
    for environment in cli_environments {
        assert!(environment.contains("ANTHROPIC_BASE_URL="), "the CLI's environment was read");
        assert!(
            !environment.contains("ASKBRIDGE_TOKEN") && !environment.contains(TOKEN),
            "the token reached the agent"
        );
    }

    // SIGKILL: no chance to park. The CLI dies with the server, and has told the model nothing.
    server.child.kill().await.unwrap();
    wait_until("the CLI to die with the server", Duration::from_secs(10), || async {
        agents_of(&session).is_empty().then_some(())
    })
    .await;
    assert_eq!(mock.requests().len(), 1, "the CLI asked the model nothing after the server died");

    let server = serve(&home, &mock).await;
    let port = server.port;
    let call = tool_call(server.port, &session, "toolu_ask").await.unwrap();
    let outcome = &call["interaction"]["outcome"];
    assert_eq!(outcome["lost"]["told"], TOLD_WHEN_KILLED, "{outcome}");

    let answers = json!([{"question": AUTH, "labels": ["JWT"], "other": null, "notes": null}]);
    let (status, body) = post(
        port,
        "send_answer_as_message",
        json!({"session": session, "tool_use_id": "toolu_ask", "answers": answers}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let requests = mock.wait_for_requests(2, Duration::from_secs(60)).await;
    // The CLI writes its transcript a moment after it asks: killed in that moment, the call is
    // not in it, and the model sees no call at all. Either way, never that the person declined.
    let told = support::mock_anthropic::tool_results_in(&requests[1..]);
    assert!(
        told.iter().all(|(id, text, is_error)| id != "toolu_ask" || (*is_error && text == TOLD_WHEN_KILLED)),
        "{told:?}"
    );
    let sent = requests[1]["messages"].to_string();
    assert!(sent.contains("my answer did not reach you") && sent.contains("JWT"), "{sent}");
}

/// The server's own configuration (the database URL with its password, the token, the site's
/// folder) stays out of the CLI's environment and of every command it runs, whose output the
/// model and the team would read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_never_gets_the_servers_configuration() {
    let mock = MockAnthropic::start(vec![
        Reply::tool_use("toolu_env", "Bash", json!({"command": "env", "description": "Show the environment"})),
        Reply::text("That is my environment."),
    ])
    .await;
    let home = ClaudeHome::new();
    let database = format!("sqlite://{}", home.path().join("data/askbridge.db").display());
    let site = home.path().join("site").display().to_string();
    let server = serve_with(
        &home,
        &mock,
        &[("DATABASE_URL", &database), ("LEPTOS_SITE_ROOT", &site), ("GIT_AUTHOR_NAME", "Ada")],
    )
    .await;
    let port = server.port;
    let (_, session) = post(port, "create_session", json!({})).await;
    let session = session["id"].as_str().unwrap().to_string();
    let (status, _) =
        post(port, "send_message", json!({"session": session, "text": "Show me your environment."})).await;
    assert_eq!(status, 200);
    // `env` reads nothing: Claude Code runs it without asking; a card would be allowed here.
    let environment_shown = wait_until("the model to get the output of env", Duration::from_secs(60), || async {
        if let Some(call) = tool_call(port, &session, "toolu_env").await
            && call["interaction"].is_object()
            && call["interaction"]["outcome"].is_null()
        {
            let decision =
                json!({"session": session, "tool_use_id": "toolu_env", "decision": {"allow": {"always": null}}});
            post(port, "decide_approval", decision).await;
        }
        let told = support::mock_anthropic::tool_results_in(&mock.requests());
        told.into_iter().find(|(id, _, _)| id == "toolu_env").map(|(_, text, _)| text)
    });
    let shown = environment_shown.await;

    let server_pid = server.child.id().unwrap();
    // The session's CLI; the one the server may still run to learn the models is marked
    // `catalog`, and is held to the same allow-list.
    let clis = children_of(server_pid);
    let ours = agents_of(&session);
    assert!(!ours.is_empty() && ours.iter().all(|pid| clis.contains(pid)), "the CLI runs, as a child of the server");
    // The catalog's CLI may exit between the listing and the reading: gone, it reads as empty.
    let read =
        clis.into_iter().map(|pid| (Some(pid), environment_of(pid))).filter(|(_, environment)| !environment.is_empty());
    for (pid, environment) in read.chain([(None, shown)]) {
        assert!(environment.contains("ANTHROPIC_BASE_URL="), "the environment was read: {environment}");
        let marked = |id: &str| environment.lines().any(|line| line == format!("ASKBRIDGE_SESSION={id}"));
        let session_s = pid.is_none_or(|pid| ours.contains(&pid));
        assert!(if session_s { marked(&session) } else { marked("catalog") }, "marked as AskBridge's: {environment}");
        for (secret, value) in
            [("DATABASE_URL", database.as_str()), ("ASKBRIDGE_TOKEN", TOKEN), ("LEPTOS_SITE_ROOT", &site)]
        {
            assert!(!environment.contains(secret) && !environment.contains(value), "{secret} reached the agent");
        }
        assert!(!environment.contains("GIT_AUTHOR_NAME"), "only what the allow-list names");
    }
}

/// A server of a team: `name`'s own data folder, the shared Postgres `database`, short leases.
async fn serve_team(home: &ClaudeHome, mock: &MockAnthropic, name: &str, database: &str) -> Server {
    let path = |p: &str| home.path().join(p).display().to_string();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_askbridge"));
    command
        .args(["serve", "--data-dir", &path(name), "--agent", "claude"])
        .args(["--claude-bin", &claude_bin().display().to_string(), "--workdir", &path("project")])
        .args(["--database-url", database, "--lease", "1s", "--park-after", "10m"])
        .env("ASKBRIDGE_TOKEN", TOKEN)
        .env("RUST_LOG", "info")
        .envs(home.env(mock))
        .stderr(std::fs::File::create(home.path().join(format!("{name}.log"))).unwrap());
    listening(command).await
}

/// The processes AskBridge started for `session` (each CLI is marked `ASKBRIDGE_SESSION=<id>`):
/// the CLIs themselves, not what they run (a CLI's own short-lived helpers inherit its
/// environment, and were counted as a second agent on a busy machine).
fn agents_of(session: &str) -> Vec<u32> {
    let marker = format!("ASKBRIDGE_SESSION={session}\n");
    let marked: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| (environment_of(*pid) + "\n").contains(&marker))
        .collect();
    marked.iter().copied().filter(|pid| parent_of(*pid).is_none_or(|parent| !marked.contains(&parent))).collect()
}

/// A process's parent (from /proc), while it lives.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's name in parentheses: state, then the parent's pid.
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

fn signal(pid: u32, signal: &str) {
    let status = std::process::Command::new("kill").args([signal, &pid.to_string()]).status().unwrap();
    assert!(status.success(), "kill {signal} {pid}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_lost_its_lease_stops_its_agent_and_writes_nothing_so_one_agent_runs() {
    let database = askbridge::testing::postgres::TestPostgres::shared().database().await;
    let question = json!({"question": AUTH, "header": "Auth", "multiSelect": false, "options": [
        {"label": "JWT", "description": "Stateless tokens"}, {"label": "Sessions", "description": "Server-side"}]});
    let mock = MockAnthropic::start(vec![
        Reply::tool_use("toolu_ask", "AskUserQuestion", json!({"questions": [question]})),
        Reply::text("Going on from B."),
    ])
    .await;
    let home = ClaudeHome::new();
    let a = serve_team(&home, &mock, "a", &database).await;
    let _b = serve_team(&home, &mock, "b", &database).await;
    let (port_a, port_b) = (a.port, _b.port);
    let (_, session) = post(port_a, "create_session", json!({})).await;
    let session = session["id"].as_str().unwrap().to_string();
    let (status, _) = post(port_a, "send_message", json!({"session": session, "text": "Set up auth; ask me."})).await;
    assert_eq!(status, 200);
    wait_until("A's agent to ask", Duration::from_secs(60), || async {
        tool_call(port_b, &session, "toolu_ask").await?["interaction"].is_object().then_some(())
    })
    .await;
    let a_pid = a.child.id().unwrap();
    let agent_a = agents_of(&session);
    assert!(
        agent_a.len() == 1 && agent_a.iter().all(|pid| parent_of(*pid) == Some(a_pid)),
        "A's CLI runs the session: {agent_a:?}, A is {a_pid}"
    );

    // A stalls (a pause, a machine asleep) for longer than its lease: B takes the session over.
    signal(a_pid, "-STOP");
    wait_until("B to end the turn A left", Duration::from_secs(30), || async {
        let (_, view) = post(port_b, "load_session", json!({"id": session})).await;
        (view["thread"]["turn"]["last_outcome"] == "abandoned").then_some(())
    })
    .await;
    let (status, _) = post(port_b, "send_message", json!({"session": session, "text": "Go on."})).await;
    assert_eq!(status, 200);
    let ended = || async {
        let (_, view) = post(port_b, "load_session", json!({"id": session})).await;
        (view["thread"]["turn"]["last_outcome"] == "completed").then_some(view)
    };
    let before = wait_until("B's turn", Duration::from_secs(60), ended).await;
    assert_eq!(agents_of(&session).len(), 2, "A's CLI, left waiting, and B's");

    // A wakes: it finds its lease taken, stops its agent and writes nothing.
    signal(a_pid, "-CONT");
    wait_until("one agent for the session", Duration::from_secs(30), || async {
        (agents_of(&session).len() == 1).then_some(())
    })
    .await;
    assert!(agent_a.iter().all(|pid| !agents_of(&session).contains(pid)), "A's CLI is the one that ended");
    let (_, after) = post(port_b, "load_session", json!({"id": session})).await;
    assert_eq!(after["thread"], before["thread"], "A wrote nothing into the session B runs");
}

/// Killed (SIGKILL) after the resumed CLI had the person's answer, while the model was writing
/// what comes next: at the next start the turn goes on by itself (a resume with nothing to ask
/// again: the CLI is told "Continue from where you left off."), and the model got the answer once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_after_the_resumed_agent_had_the_answer_goes_on_at_the_next_start() {
    let question = json!({"question": AUTH, "header": "Auth", "multiSelect": false, "options": [
        {"label": "JWT", "description": "Stateless tokens"}, {"label": "Sessions", "description": "Server-side"}]});
    let mock = MockAnthropic::start(vec![
        Reply::tool_use("toolu_ask", "AskUserQuestion", json!({"questions": [question]})),
        // The model takes its time with the answer: the server dies meanwhile.
        Reply::text("Never sent: the server died first.").after(Duration::from_secs(600)),
        Reply::text("Going on with JWT after the crash."),
    ])
    .await;
    let home = ClaudeHome::new();
    let server = serve_with(&home, &mock, &[("ASKBRIDGE_PARK_AFTER", "1s")]).await;
    let port = server.port;
    let (_, session) = post(port, "create_session", json!({})).await;
    let session = session["id"].as_str().unwrap().to_string();
    let (status, _) = post(port, "send_message", json!({"session": session, "text": "Set up auth; ask me."})).await;
    assert_eq!(status, 200);
    wait_until("the question to be parked", Duration::from_secs(60), || async {
        (tool_call(port, &session, "toolu_ask").await?["interaction"]["parked"] == true).then_some(())
    })
    .await;
    let answers = json!([{"question": AUTH, "labels": ["JWT"], "other": null, "notes": null}]);
    let (status, body) =
        post(port, "submit_answers", json!({"session": session, "tool_use_id": "toolu_ask", "answers": answers})).await;
    assert_eq!(status, 200, "{body}");
    // The resumed CLI sent the answer to the model, and waits for its reply.
    let requests = mock.wait_for_requests(2, Duration::from_secs(60)).await;
    assert_eq!(requests.len(), 2);
    wait_until("the answer's result in the thread", Duration::from_secs(30), || async {
        tool_call(port, &session, "toolu_ask").await?["result"].is_string().then_some(())
    })
    .await;
    let mut server = server;
    server.child.kill().await.unwrap();
    wait_until("the CLI to die with the server", Duration::from_secs(10), || async {
        agents_of(&session).is_empty().then_some(())
    })
    .await;

    let server = serve(&home, &mock).await;
    let view = wait_until("the turn to go on to its end by itself", Duration::from_secs(90), || async {
        let (_, view) = post(server.port, "load_session", json!({"id": session})).await;
        (view["thread"]["turn"]["last_outcome"] == "completed").then_some(view)
    })
    .await;
    assert!(view["thread"].to_string().contains("Going on with JWT after the crash."), "{view}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "one more request, after the restart");
    let answered = support::mock_anthropic::tool_results_in(&requests[2..]);
    assert_eq!(answered.iter().filter(|(id, _, _)| id == "toolu_ask").count(), 1, "the answer, once: {answered:?}");
    assert!(answered.iter().all(|(_, text, is_error)| !is_error && text.contains("JWT")), "{answered:?}");
    assert!(requests[2]["messages"].to_string().contains("Continue from where you left off."));
}
