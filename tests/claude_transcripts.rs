//! Claude Code's own transcripts, made by the real CLI (the pinned npm package) against the mock
//! Messages API, read back with `agent::claude::transcripts`: a plain reply, tool calls with their
//! results, an image in the prompt, a question answered over the control protocol, a resumed
//! session, and a `claude` that is still running.
//!
//! `ASKBRIDGE_WRITE_FIXTURES=1` also writes anonymised copies of the transcripts to
//! `tests/fixtures/claude-cli/transcripts/`, which the unit tests read without the CLI.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use askbridge::agent::claude::transcripts::{ProjectsDir, TranscriptPage, live};
use askbridge::interaction::{InteractionOutcome, InteractionRequest};
use askbridge::question::QuestionAnswer;
use askbridge::thread::{Block, Role, ToolCall, ToolStatus};
use serde_json::{Value, json};
use support::mock_anthropic::{Block as MockBlock, MockAnthropic, Reply};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A 1×1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

fn claude_bin() -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("node_modules/.bin/claude");
    assert!(bin.exists(), "the pinned Claude Code CLI is missing: run `make setup` (npm ci) first");
    bin
}

/// A Claude Code home of its own, offline (protocol §1), with a project folder to work in.
struct Home {
    dir: tempfile::TempDir,
    mock: MockAnthropic,
}

impl Home {
    async fn new(script: Vec<Reply>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        for sub in [".claude", "tmp", "project"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        std::fs::write(dir.path().join("project/notes.txt"), "The notes say hi.\n").unwrap();
        Self { dir, mock: MockAnthropic::start(script).await }
    }

    fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    fn projects(&self) -> ProjectsDir {
        ProjectsDir::new(self.dir.path().join(".claude/projects"))
    }

    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let path = |p: &str| self.dir.path().join(p).display().to_string();
        let mut command = tokio::process::Command::new(claude_bin());
        command
            .args(args)
            .current_dir(self.project())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", path(""))
            .env("CLAUDE_CONFIG_DIR", path(".claude"))
            .env("TMPDIR", path("tmp"))
            .env("XDG_RUNTIME_DIR", path("tmp"))
            .env("CLAUDE_CODE_TMPDIR", path("tmp"))
            .env("ANTHROPIC_BASE_URL", self.mock.base_url())
            .env("ANTHROPIC_API_KEY", "dummy")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            .env("IS_SANDBOX", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    }

    /// `claude -p <prompt>`, to its end.
    async fn print(&self, args: &[&str]) -> Value {
        let output = tokio::time::timeout(Duration::from_secs(90), self.command(args).output())
            .await
            .expect("claude -p ran too long")
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "claude failed: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_str(stdout.trim()).unwrap_or(Value::Null)
    }

    /// The only session of this home, its id and its newest page.
    fn only_session(&self) -> (String, TranscriptPage) {
        let groups = self.projects().list();
        assert_eq!(groups.len(), 1, "{groups:#?}");
        assert_eq!(groups[0].sessions.len(), 1, "{groups:#?}");
        let id = groups[0].sessions[0].id.clone();
        let page = self.projects().page(&id, None, 50).unwrap();
        (id, page)
    }

    /// With `ASKBRIDGE_WRITE_FIXTURES=1`: the transcript of `id` as a fixture, this home's paths
    /// replaced by `/home/user`.
    fn keep_as_fixture(&self, id: &str, name: &str) {
        if std::env::var_os("ASKBRIDGE_WRITE_FIXTURES").is_none() {
            return;
        }
        let transcript = self.projects().find(id).unwrap();
        let text = std::fs::read_to_string(&transcript.path).unwrap();
        let home = self.dir.path().display().to_string();
        let encoded: String = home.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
        let text = text.replace(&home, "/home/user").replace(&encoded, "-home-user");
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-cli/transcripts");
        std::fs::create_dir_all(&fixtures).unwrap();
        std::fs::write(fixtures.join(format!("{name}.jsonl")), text).unwrap();
    }
}

fn calls(page: &TranscriptPage) -> Vec<&ToolCall> {
    page.messages
        .iter()
        .flat_map(|m| m.blocks.iter())
        .filter_map(|b| match b {
            Block::ToolCall(call) => Some(call),
            _ => None,
        })
        .collect()
}

fn shape(page: &TranscriptPage) -> Vec<(Role, String)> {
    page.messages.iter().map(|m| (m.role, m.text())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_reply_is_listed_and_read() {
    let home = Home::new(vec![Reply::text("Hello from the mock.")]).await;
    let result = home.print(&["-p", "Say hello to the transcript reader", "--output-format", "json"]).await;
    let (id, page) = home.only_session();
    assert_eq!(result["session_id"].as_str(), Some(id.as_str()));
    assert_eq!(
        shape(&page),
        vec![
            (Role::User, "Say hello to the transcript reader".into()),
            (Role::Assistant, "Hello from the mock.".into())
        ]
    );
    let session = &home.projects().list()[0].sessions[0];
    assert_eq!(session.project, home.project().display().to_string());
    assert!(session.project_known);
    assert_eq!(session.first_prompt.as_deref(), Some("Say hello to the transcript reader"));
    let target = home.projects().resume_target(&id).unwrap();
    assert_eq!(target.folder, home.project());
    home.keep_as_fixture(&id, "plain");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_come_with_their_results() {
    let home = Home::new(vec![]).await;
    let notes = home.project().join("notes.txt").display().to_string();
    for reply in [
        Reply::text("Let me read the notes.").with(MockBlock::ToolUse {
            id: "toolu_read".into(),
            name: "Read".into(),
            input: json!({"file_path": notes}),
        }),
        Reply::tool_use(
            "toolu_bash",
            "Bash",
            json!({"command": "echo transcript-bash", "description": "Print a word"}),
        ),
        Reply::text("The notes say hi, and echo printed transcript-bash."),
    ] {
        home.mock.push(reply);
    }
    home.print(&[
        "-p",
        "Read notes.txt, then run echo",
        "--permission-mode",
        "bypassPermissions",
        "--output-format",
        "json",
    ])
    .await;
    let (id, page) = home.only_session();
    let calls = calls(&page);
    assert_eq!(calls.len(), 2, "{page:#?}");
    assert_eq!((calls[0].name.as_str(), calls[0].status), ("Read", ToolStatus::Done));
    assert!(calls[0].result.as_deref().unwrap().contains("The notes say hi."), "{:?}", calls[0].result);
    assert_eq!(calls[0].input.as_ref().unwrap()["file_path"], json!(notes));
    assert_eq!((calls[1].name.as_str(), calls[1].status), ("Bash", ToolStatus::Done));
    assert_eq!(calls[1].result.as_deref(), Some("transcript-bash"));
    assert_eq!(page.messages.first().unwrap().text(), "Read notes.txt, then run echo");
    assert_eq!(page.messages.last().unwrap().text(), "The notes say hi, and echo printed transcript-bash.");
    home.keep_as_fixture(&id, "tools");
}

/// Runs `claude -p` in stream-json, writes `lines` to it, and answers each question with
/// `answer(input)` (an allow with `updatedInput`); returns every line it printed.
async fn stream_json(home: &Home, extra: &[&str], lines: &[Value], answer: impl Fn(&Value) -> Value) -> Vec<Value> {
    let mut args = vec!["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"];
    args.extend_from_slice(extra);
    let mut child = home.command(&args).stdin(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let read = async {
        while let Some(line) = stdout.next_line().await.unwrap() {
            let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
            if message["type"] == "control_request" && message["request"]["subtype"] == "can_use_tool" {
                let reply = json!({"type": "control_response", "response": {"subtype": "success",
                    "request_id": message["request_id"], "response": answer(&message["request"]["input"])}});
                stdin.write_all(format!("{reply}\n").as_bytes()).await.unwrap();
            }
            let done = message["type"] == "result";
            seen.push(message);
            if done {
                break;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(90), read).await.expect("the turn ran too long");
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{seen:#?}");
    seen
}

fn user_message(content: Value) -> Value {
    json!({"type": "user", "message": {"role": "user", "content": content}, "parent_tool_use_id": null, "session_id": ""})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_in_the_prompt_is_an_image_block() {
    let home = Home::new(vec![Reply::text("A single red pixel.")]).await;
    let prompt = user_message(json!([
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    ]));
    stream_json(&home, &[], &[prompt], |_| Value::Null).await;
    let (id, page) = home.only_session();
    let first = &page.messages[0];
    assert_eq!(first.role, Role::User);
    assert_eq!(first.text(), "What is in this picture?");
    let image = first.blocks.iter().find_map(|b| match b {
        Block::Image(image) => Some(image),
        _ => None,
    });
    let image = image.unwrap_or_else(|| panic!("no image in {first:#?}"));
    assert_eq!((image.media_type.as_str(), image.data.as_str()), ("image/png", PNG));
    // The model was sent the same bytes.
    let sent = home.mock.requests();
    assert!(sent[0].to_string().contains(PNG));
    assert_eq!(page.messages.last().unwrap().text(), "A single red pixel.");
    home.keep_as_fixture(&id, "image");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_answered_over_the_control_protocol_reads_as_answered() {
    let auth = json!({"question": "Which auth method should we use?", "header": "Auth", "multiSelect": false,
        "options": [{"label": "JWT", "description": "Stateless tokens"}, {"label": "Sessions", "description": "Server-side sessions"}]});
    let features = json!({"question": "Which features?", "header": "Features", "multiSelect": true,
        "options": [{"label": "Dark mode", "description": "Theme"}, {"label": "i18n", "description": "Languages"},
                    {"label": "Analytics", "description": "Tracking"}]});
    let home = Home::new(vec![
        Reply::text("Let me ask.").with(MockBlock::ToolUse {
            id: "toolu_ask".into(),
            name: "AskUserQuestion".into(),
            input: json!({"questions": [auth, features]}),
        }),
        Reply::text("JWT with dark mode and offline support it is."),
    ])
    .await;
    let prompt = user_message(json!("Help me set up auth for my app. Ask me what I want."));
    let transcripts = home.projects();
    let running_seen = std::sync::Mutex::new(None);
    stream_json(&home, &["--permission-prompt-tool", "stdio"], &[prompt], |input| {
        // While the CLI waits for this answer, it is a running session.
        let running = live::scan(&transcripts);
        *running_seen.lock().unwrap() = Some(running);
        let mut updated = input.clone();
        updated["answers"] =
            json!({"Which auth method should we use?": "JWT", "Which features?": "Dark mode, Offline support"});
        updated["annotations"] = json!({"Which auth method should we use?": {"notes": "short-lived tokens"}});
        json!({"behavior": "allow", "updatedInput": updated})
    })
    .await;
    let (id, page) = home.only_session();
    let running = running_seen.lock().unwrap().take().unwrap();
    assert!(running.is_running(&id), "the CLI waiting for an answer writes {id}: {running:?}");
    let writer = running.writer(&id).unwrap();
    // Claude Code's own registry (`<config>/sessions/<pid>.json`) says so.
    assert_eq!(writer.evidence, live::Evidence::SessionFile, "{writer:?}");
    assert!(writer.ours, "this test process started it: it is ours, not a terminal's");
    assert!(!live::scan(&home.projects()).is_running(&id), "the CLI has exited");
    let call = calls(&page).into_iter().find(|c| c.name == "AskUserQuestion").expect("the question");
    let interaction = call.interaction.as_ref().unwrap();
    let InteractionRequest::Question { questions } = &interaction.request else { panic!("{interaction:?}") };
    assert_eq!(questions.len(), 2);
    assert_eq!(
        interaction.outcome,
        Some(InteractionOutcome::Answered {
            answers: vec![
                QuestionAnswer::new("Which auth method should we use?", &["JWT"], None, Some("short-lived tokens")),
                QuestionAnswer::new("Which features?", &["Dark mode"], Some("Offline support"), None),
            ]
        })
    );
    assert_eq!(call.status, ToolStatus::Done);
    assert_eq!(page.messages.last().unwrap().text(), "JWT with dark mode and offline support it is.");
    home.keep_as_fixture(&id, "question");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_in_the_resume_folder_continues_the_same_transcript() {
    let home = Home::new(vec![Reply::text("First answer."), Reply::text("Second answer.")]).await;
    home.print(&["-p", "First question", "--output-format", "json"]).await;
    let (id, _) = home.only_session();
    let target = home.projects().resume_target(&id).unwrap();
    assert_eq!(target.folder, home.project());
    home.print(&["-p", "Second question", "--resume", &id, "--output-format", "json"]).await;
    let (again, page) = home.only_session();
    assert_eq!(again, id, "the same session, the same file");
    let texts: Vec<String> = page.messages.iter().map(|m| m.text()).collect();
    assert_eq!(texts, vec!["First question", "First answer.", "Second question", "Second answer."]);
    // The model saw the old turn when the session went on.
    assert!(home.mock.requests()[1].to_string().contains("First answer."));
    home.keep_as_fixture(&id, "resumed");
}
