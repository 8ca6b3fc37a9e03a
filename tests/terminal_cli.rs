//! The interactive terminal UI of the real Claude Code CLI (`claude` started the ordinary way, in
//! tmux) answering a question through a command hook in the user's settings, against the mock API.
//! This is what `askbridge hook` will rest on (docs/claude-terminal.md); here the hook is a shell
//! script with a fixed reply, so a failure points at the CLI or the harness, not at AskBridge.
//!
//! A custom test harness (libtest-mimic) so that a machine without tmux reports these tests as
//! ignored, with the reason, instead of failing or passing them silently.

mod support;

use std::path::Path;
use std::time::Duration;

use libtest_mimic::{Arguments, Completion, Failed, Trial};
use serde_json::{Value, json};
use support::mock_anthropic::{Block, MockAnthropic, Reply};
use support::terminal::{ClaudeHome, Terminal, claude_bin, tmux_available};

const AUTH: &str = "Which auth method should we use?";

/// Long enough for a cold start of the CLI on a busy 2-core machine.
const UI_START: Duration = Duration::from_secs(60);
const STEP: Duration = Duration::from_secs(30);

fn main() {
    let args = Arguments::from_args();
    let trials = vec![
        terminal_trial(
            "a_permission_request_hook_answers_the_question_while_the_terminal_shows_it",
            a_permission_request_hook_answers_the_question_while_the_terminal_shows_it,
        ),
        terminal_trial(
            "a_pre_tool_use_hook_answers_the_question_before_the_terminal_shows_it",
            a_pre_tool_use_hook_answers_the_question_before_the_terminal_shows_it,
        ),
    ];
    libtest_mimic::run(&args, trials).exit();
}

/// A trial that needs tmux and the pinned CLI; without tmux it is ignored, saying why.
fn terminal_trial<F, Fut>(name: &str, test: F) -> Trial
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), Failed>>,
{
    Trial::ignorable_test(name, move || {
        if !tmux_available() {
            return Ok(Completion::ignored_with("tmux is not installed: apt-get install tmux"));
        }
        if !claude_bin().exists() {
            return Err("the pinned Claude Code CLI is missing: run `make setup` (npm ci) first".into());
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| Failed::from(format!("tokio runtime: {e}")))?;
        runtime.block_on(test()).map(|()| Completion::Completed)
    })
}

fn question() -> Value {
    json!({"question": AUTH, "header": "Auth", "multiSelect": false, "options": [
        {"label": "JWT", "description": "Stateless tokens"}, {"label": "Sessions", "description": "Server-side sessions"}]})
}

fn ask_script() -> Vec<Reply> {
    let ask = Block::ToolUse {
        id: "toolu_ask".into(),
        name: "AskUserQuestion".into(),
        input: json!({"questions": [question()]}),
    };
    vec![Reply::text("Let me ask.").with(ask), Reply::text("Thanks for answering.")]
}

/// The input the CLI shows the hook, with `answers` added: the reply that answers the question.
fn answered_input(label: &str) -> Value {
    json!({"questions": [question()], "answers": { AUTH: label }})
}

/// Writes an executable hook that saves its stdin to `stdin.json` beside it, waits until the test
/// creates the file `go` there, and prints `reply`.
fn write_hook(dir: &Path, reply: &Value) -> Result<String, Failed> {
    use std::os::unix::fs::PermissionsExt;
    let hook = dir.join("hook.sh");
    let go = dir.join("go");
    // Bounded, so a test that fails before creating `go` leaves no hook behind for long.
    let wait_line =
        format!("i=0; while [ ! -e '{}' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\n", go.display());
    let script =
        format!("#!/bin/sh\ncat > '{}'\n{wait_line}cat <<'REPLY'\n{reply}\nREPLY\n", dir.join("stdin.json").display());
    std::fs::write(&hook, script).map_err(|e| Failed::from(format!("write hook: {e}")))?;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| Failed::from(format!("chmod hook: {e}")))?;
    Ok(hook.display().to_string())
}

fn hook_stdin(dir: &Path) -> Result<Value, Failed> {
    let text = std::fs::read_to_string(dir.join("stdin.json")).map_err(|e| Failed::from(format!("hook stdin: {e}")))?;
    serde_json::from_str(&text).map_err(|e| Failed::from(format!("hook stdin is not JSON ({e}): {text}")))
}

fn expect(condition: bool, what: impl FnOnce() -> String) -> Result<(), Failed> {
    if condition { Ok(()) } else { Err(what().into()) }
}

/// The PermissionRequest hook runs alongside the terminal's own question UI: the person could
/// answer there, and the hook's reply (`decision.behavior: allow` with `updatedInput.answers`)
/// closes the UI and answers the model.
async fn a_permission_request_hook_answers_the_question_while_the_terminal_shows_it() -> Result<(), Failed> {
    let mock = MockAnthropic::start(ask_script()).await;
    let home = ClaudeHome::new(&mock.base_url()).map_err(|e| e.to_string())?;
    let hooks = tempfile::tempdir().map_err(|e| e.to_string())?;
    let reply = json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
        "decision": {"behavior": "allow", "updatedInput": answered_input("Sessions")}}});
    let hook = write_hook(hooks.path(), &reply)?;
    home.write_settings(&json!({"hooks": {"PermissionRequest": [
        {"matcher": "AskUserQuestion", "hooks": [{"type": "command", "command": hook}]}]}}))
        .map_err(|e| e.to_string())?;

    let terminal = Terminal::start(&home, &home.project(), &[], &[]).map_err(|e| e.to_string())?;
    terminal.wait_for("manual mode on", UI_START).await.map_err(|e| e.to_string())?;
    terminal.type_text("Ask me about auth").map_err(|e| e.to_string())?;
    terminal.send_keys(&["Enter"]).map_err(|e| e.to_string())?;

    // The terminal's own question UI is up while the hook is still waiting.
    let screen = terminal.wait_for("Enter to select", STEP).await.map_err(|e| e.to_string())?;
    expect(screen.contains(AUTH), || format!("the question is not on the screen:\n{screen}"))?;
    std::fs::write(hooks.path().join("go"), "").map_err(|e| e.to_string())?;

    let screen = terminal.wait_for("Thanks for answering", STEP).await.map_err(|e| e.to_string())?;
    expect(screen.contains(&format!("{AUTH} → Sessions")), || {
        format!("the terminal does not show the answer:\n{screen}")
    })?;
    expect(screen.contains("Allowed by PermissionRequest hook"), || format!("no hook note on the screen:\n{screen}"))?;

    mock.wait_for_requests(2, STEP).await;
    let seen = mock.tool_results();
    let expected = (
        "toolu_ask".to_owned(),
        format!(
            "Your questions have been answered: \"{AUTH}\"=\"Sessions\". You can now continue with these answers in mind."
        ),
        false,
    );
    expect(seen == vec![expected.clone()], || format!("the model saw {seen:?}, expected {expected:?}"))?;

    let stdin = hook_stdin(hooks.path())?;
    expect(stdin["hook_event_name"] == "PermissionRequest" && stdin["tool_name"] == "AskUserQuestion", || {
        format!("hook stdin: {stdin}")
    })?;
    expect(stdin["tool_input"]["questions"][0]["question"] == AUTH, || format!("hook stdin: {stdin}"))?;
    expect(stdin["session_id"].as_str().is_some_and(|s| !s.is_empty()), || format!("no session_id: {stdin}"))?;
    Ok(())
}

/// The PreToolUse hook runs before the terminal shows anything (the screen says "running
/// PreToolUse hook"); `permissionDecision: allow` with `updatedInput.answers` answers the question
/// and the terminal's question UI never opens (protocol §14).
async fn a_pre_tool_use_hook_answers_the_question_before_the_terminal_shows_it() -> Result<(), Failed> {
    let mock = MockAnthropic::start(ask_script()).await;
    let home = ClaudeHome::new(&mock.base_url()).map_err(|e| e.to_string())?;
    let hooks = tempfile::tempdir().map_err(|e| e.to_string())?;
    let reply = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "allow", "updatedInput": answered_input("JWT")}});
    let hook = write_hook(hooks.path(), &reply)?;
    home.write_settings(&json!({"hooks": {"PreToolUse": [
        {"matcher": "AskUserQuestion", "hooks": [{"type": "command", "command": hook}]}]}}))
        .map_err(|e| e.to_string())?;

    let terminal = Terminal::start(&home, &home.project(), &[], &[]).map_err(|e| e.to_string())?;
    terminal.wait_for("manual mode on", UI_START).await.map_err(|e| e.to_string())?;
    terminal.type_text("Ask me about auth").map_err(|e| e.to_string())?;
    terminal.send_keys(&["Enter"]).map_err(|e| e.to_string())?;

    let screen = terminal.wait_for("running PreToolUse hook", STEP).await.map_err(|e| e.to_string())?;
    expect(!screen.contains("Enter to select"), || format!("the question UI opened while the hook ran:\n{screen}"))?;
    std::fs::write(hooks.path().join("go"), "").map_err(|e| e.to_string())?;

    let screen = terminal.wait_for("Thanks for answering", STEP).await.map_err(|e| e.to_string())?;
    expect(screen.contains(&format!("{AUTH} → JWT")), || {
        format!("the terminal does not show the answer:\n{screen}")
    })?;

    mock.wait_for_requests(2, STEP).await;
    let seen = mock.tool_results();
    let expected = (
        "toolu_ask".to_owned(),
        format!(
            "Your questions have been answered: \"{AUTH}\"=\"JWT\". You can now continue with these answers in mind."
        ),
        false,
    );
    expect(seen == vec![expected.clone()], || format!("the model saw {seen:?}, expected {expected:?}"))?;

    let stdin = hook_stdin(hooks.path())?;
    expect(stdin["hook_event_name"] == "PreToolUse" && stdin["tool_use_id"] == "toolu_ask", || {
        format!("hook stdin: {stdin}")
    })?;
    Ok(())
}
