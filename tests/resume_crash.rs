//! The real `askbridge` binary killed (SIGKILL) while a parked agent resumes with the person's
//! answer, after the agent had it and while it went on: at the next start the turn goes on by
//! itself, to its end, without a message from the person (issue 33: turns cut short there
//! "never went on until a message was sent").

use crate::support;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use askbridge::testing::wait_until;
use serde_json::{Value, json};
use support::server::{Api, TOKEN};

const QUESTION: &str = "Which auth?";
/// Asks, then answers slowly (4 words a second): long enough to be killed in the middle.
const SCENARIO: &str = r#"
pace = 4
[[turn]]
[[turn.step]]
ask = "AskFollowupQuestion"
input = { question = "Which auth?", options = ["JWT", "Sessions"] }
[[turn.step]]
say = "got {{answer}} and then a reply long enough to be cut short by a crash of the server, word by word, to its very last word"
"#;

/// The binary, and its API (`support::server::Api`, with the test's token).
struct Server {
    child: tokio::process::Child,
    api: Api,
}

impl Server {
    /// On a port the system picks: the link it prints says which.
    async fn start(dir: &Path) -> Server {
        let scenario = dir.join("scenario.toml");
        std::fs::write(&scenario, SCENARIO).unwrap();
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_askbridge"))
            .args(["serve", "--addr", "127.0.0.1:0", "--agent", "scripted", "--park-after", "200ms"])
            .arg("--scenario")
            .arg(&scenario)
            .arg("--data-dir")
            .arg(dir.join("data"))
            .env("ASKBRIDGE_TOKEN", TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let base = support::listening_at(&mut child).await;
        Server { child, api: Api::at(&base) }
    }

    async fn call(&self, function: &str, body: Value) -> Value {
        self.api.call(function, body).await.unwrap_or_else(|error| panic!("{function}: {error:?}"))
    }

    async fn thread(&self, session: &str) -> Value {
        self.call("load_session", json!({"id": session})).await["thread"].clone()
    }

    /// SIGKILL: nothing of the server's own shutdown runs.
    async fn kill(mut self) {
        self.child.kill().await.unwrap();
    }
}

/// The question's call in the thread, and the text of every reply so far.
fn call_and_text(thread: &Value) -> (Value, String) {
    let blocks: Vec<Value> = thread["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["blocks"].as_array().cloned().unwrap_or_default())
        .collect();
    let call = blocks.iter().find_map(|b| b.get("tool_call").cloned()).unwrap_or(Value::Null);
    let text = blocks.iter().filter_map(|b| b["text"]["text"].as_str()).collect::<Vec<_>>().join(" ");
    (call, text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_while_the_agent_resumes_with_an_answer_goes_on_with_it_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path()).await;
    let session = server.call("create_session", json!({"workdir": null})).await["id"].as_str().unwrap().to_string();
    server.call("send_message", json!({"session": session, "text": "set up auth"})).await;
    let call = wait_until("the question to be parked", Duration::from_secs(30), || async {
        let (call, _) = call_and_text(&server.thread(&session).await);
        (call["interaction"]["parked"] == true).then_some(call)
    })
    .await;
    let answers = json!([{"question": QUESTION, "labels": ["JWT"]}]);
    server.call("submit_answers", json!({"session": session, "tool_use_id": call["id"], "answers": answers})).await;
    // The agent has the answer, and is in the middle of what it does with it.
    wait_until("the resumed agent to be part way through its reply", Duration::from_secs(30), || async {
        let (call, text) = call_and_text(&server.thread(&session).await);
        (call["result"].is_string() && text.contains("got") && !text.contains("very last word")).then_some(())
    })
    .await;
    server.kill().await;

    let server = Server::start(dir.path()).await;
    let thread = wait_until("the turn to go on to its end by itself", Duration::from_secs(60), || async {
        let thread = server.thread(&session).await;
        (thread["turn"]["working"] == false && thread["turn"]["last_outcome"] == "completed").then_some(thread)
    })
    .await;
    let (_, text) = call_and_text(&thread);
    assert!(text.contains("got \"Which auth?\"=\"JWT\"") && text.contains("very last word"), "{text}");
    server.kill().await;
}
