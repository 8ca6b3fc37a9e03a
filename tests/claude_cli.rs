//! The real Claude Code CLI (npm `@anthropic-ai/claude-code`, pinned in package.json) driven by
//! AskBridge, against a mock of the Messages API that records what the model was sent. Each test
//! checks that the model received exactly the text the shared traces show
//! (`tests/fixtures/claude-cli/SUMMARY.md`).

use crate::support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use askbridge::agent::AgentEnv;
use askbridge::agent::claude::{AnswerPath, ClaudeCliBackend, ClaudeConfig};
use askbridge::approval::{Approval, Decision, PermissionMode, Shows};
use askbridge::error::AppError;
use askbridge::interaction::{InteractionOutcome, InteractionRequest};
use askbridge::question::{Question, QuestionAnswer};
use askbridge::session::{SessionManager, Timeouts};
use askbridge::store::Store;
use askbridge::testing::wait_until;
use askbridge::thread::{EventBody, TurnOutcome};
use serde_json::{Value, json};
use support::claude_code::{ClaudeHome, claude_bin};
use support::mock_anthropic::{MockAnthropic, Reply};
use support::session::AgentSession;

const AUTH: &str = "Which auth method should we use?";
const FEATURES: &str = "Which features?";

fn auth_question() -> Value {
    json!({"question": AUTH, "header": "Auth", "multiSelect": false, "options": [
        {"label": "JWT", "description": "Stateless tokens"}, {"label": "Sessions", "description": "Server-side sessions"}]})
}

fn features_question() -> Value {
    json!({"question": FEATURES, "header": "Features", "multiSelect": true, "options": [
        {"label": "Dark mode", "description": "Theme"}, {"label": "i18n", "description": "Languages"},
        {"label": "Analytics", "description": "Tracking"}]})
}

fn ask(id: &str, questions: Vec<Value>) -> Reply {
    Reply::tool_use(id, "AskUserQuestion", json!({"questions": questions}))
}

/// A session of the real CLI's in this process, and what restarts AskBridge on the same
/// database and home.
struct Harness {
    base: AgentSession,
    backend: Arc<ClaudeCliBackend>,
    config: ClaudeConfig,
    timeouts: Timeouts,
    home: ClaudeHome,
    /// The manager's store, to read what it stored and to make its writes fail.
    store: Store,
}

impl std::ops::Deref for Harness {
    type Target = AgentSession;
    fn deref(&self) -> &AgentSession {
        &self.base
    }
}

/// AskBridge with the real CLI, offline: a temporary home, the mock as the API, and the
/// variables that stop the CLI's other traffic (protocol §1).
async fn harness(script: Vec<Reply>, answer_path: AnswerPath) -> Harness {
    harness_with(script, answer_path, Timeouts::default()).await
}

async fn harness_with(script: Vec<Reply>, answer_path: AnswerPath, timeouts: Timeouts) -> Harness {
    support::session::log_to_test_output();
    let mock = MockAnthropic::start(script).await;
    let home = ClaudeHome::new();
    let mut env = home.env(&mock);
    // Test machines run as root; Claude Code allows bypassPermissions there only in a sandbox.
    env.push(("IS_SANDBOX".to_string(), "1".to_string()));
    let config = ClaudeConfig {
        bin: claude_bin(),
        workdir: home.project(),
        permission_mode: PermissionMode::Default,
        model: None,
        answer_path,
        agent_env: AgentEnv::default(),
        env,
        allow_bypass: true,
        max_agents: 4,
        idle_exit: None,
    };
    let backend = Arc::new(ClaudeCliBackend::new(config.clone()));
    let store = Store::open(&home.path().join("askbridge.db")).await.unwrap();
    let manager = SessionManager::with_timeouts(store.clone(), backend.clone(), timeouts);
    let base = AgentSession::start(manager, mock).await;
    Harness { base, backend, config, timeouts, home, store }
}

impl Harness {
    /// Stops AskBridge gracefully (as on SIGTERM) and starts it again on the same database and
    /// the same Claude Code home.
    async fn restart(&mut self) {
        self.base.manager.shut_down().await;
        self.backend = Arc::new(ClaudeCliBackend::new(self.config.clone()));
        self.store = Store::open(&self.home.path().join("askbridge.db")).await.unwrap();
        self.base.manager = SessionManager::with_timeouts(self.store.clone(), self.backend.clone(), self.timeouts);
        self.base.manager.recover_unfinished_turns().await.unwrap();
    }
}

fn answered(text: &str) -> (String, String, bool) {
    ("toolu_ask".into(), text.into(), false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_answer_reaches_the_model() {
    let h =
        harness(vec![ask("toolu_ask", vec![auth_question()]), Reply::text("JWT it is.")], AnswerPath::CanUseTool).await;
    h.send("Help me set up auth.").await;
    let pending = h.pending(1).await;
    assert_eq!(pending, vec!["toolu_ask"]);
    h.answer("toolu_ask", vec![QuestionAnswer::new(AUTH, &["JWT"], None, None)]).await;
    let thread = h.turn_end().await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed));
    assert_eq!(
        h.model_saw(),
        vec![answered(
            "Your questions have been answered: \"Which auth method should we use?\"=\"JWT\". You can now continue with these answers in mind."
        )]
    );
    assert!(thread.messages.last().unwrap().text().contains("JWT it is."));
    // The header knows what runs.
    assert!(
        thread.turn.agent_info.as_deref().unwrap().starts_with("Claude Code 2.1.332"),
        "{:?}",
        thread.turn.agent_info
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_select_answer_is_joined_with_commas() {
    let h = harness(
        vec![ask("toolu_ask", vec![auth_question(), features_question()]), Reply::text("Noted.")],
        AnswerPath::CanUseTool,
    )
    .await;
    h.send("Help me set up auth.").await;
    h.pending(1).await;
    h.answer(
        "toolu_ask",
        vec![
            QuestionAnswer::new(AUTH, &["JWT"], None, None),
            QuestionAnswer::new(FEATURES, &["Dark mode", "i18n"], None, None),
        ],
    )
    .await;
    h.turn_end().await;
    assert_eq!(
        h.model_saw(),
        vec![answered(
            "Your questions have been answered: \"Which auth method should we use?\"=\"JWT\", \"Which features?\"=\"Dark mode, i18n\". You can now continue with these answers in mind."
        )]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn free_text_reaches_the_model_verbatim() {
    let h = harness(
        vec![ask("toolu_ask", vec![auth_question(), features_question()]), Reply::text("OK.")],
        AnswerPath::CanUseTool,
    )
    .await;
    h.send("Help me set up auth.").await;
    h.pending(1).await;
    h.answer(
        "toolu_ask",
        vec![
            QuestionAnswer::new(AUTH, &[], Some("OAuth via Google, please"), None),
            QuestionAnswer::new(FEATURES, &["Dark mode"], Some("Offline support"), None),
        ],
    )
    .await;
    h.turn_end().await;
    assert_eq!(
        h.model_saw(),
        vec![answered(
            "The user answered: \"Which auth method should we use?\"=\"OAuth via Google, please\", \"Which features?\"=\"Dark mode, Offline support\". Read the answers carefully — they may request clarification, changes, or that you not proceed — and follow what they actually say."
        )]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notes_reach_the_model_with_the_answer() {
    let h = harness(vec![ask("toolu_ask", vec![auth_question()]), Reply::text("OK.")], AnswerPath::CanUseTool).await;
    h.send("Help me set up auth.").await;
    h.pending(1).await;
    h.answer("toolu_ask", vec![QuestionAnswer::new(AUTH, &["JWT"], None, Some("short-lived tokens please"))]).await;
    h.turn_end().await;
    assert_eq!(
        h.model_saw(),
        vec![answered(
            "The user answered: \"Which auth method should we use?\"=\"JWT\" notes: short-lived tokens please. Read the answers carefully — they may request clarification, changes, or that you not proceed — and follow what they actually say."
        )]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_question_is_never_read_as_an_answer() {
    let h = harness(
        vec![ask("toolu_ask", vec![auth_question()]), Reply::text("OK, I will not assume.")],
        AnswerPath::CanUseTool,
    )
    .await;
    h.send("Help me set up auth.").await;
    h.pending(1).await;
    h.manager.decline_question(&h.session, "toolu_ask", None).await.unwrap();
    h.turn_end().await;
    assert_eq!(
        h.model_saw(),
        vec![(
            "toolu_ask".to_string(),
            "The user declined to answer these questions: they chose none of the options and gave no answer. Do not assume one."
                .to_string(),
            true
        )]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_pending_questions_are_answered_by_their_own_ids_in_any_order() {
    let both = Reply::tool_use("toolu_first", "AskUserQuestion", json!({"questions": [auth_question()]})).with(
        support::mock_anthropic::Block::ToolUse {
            id: "toolu_second".into(),
            name: "AskUserQuestion".into(),
            input: json!({"questions": [{"question": "Which database?", "header": "DB", "multiSelect": false,
                "options": [{"label": "Postgres", "description": "SQL"}, {"label": "SQLite", "description": "Embedded"}]}]}),
        },
    );
    let h = harness(vec![both, Reply::text("Both noted.")], AnswerPath::CanUseTool).await;
    h.send("Two questions please.").await;
    let pending = h.pending(2).await;
    assert_eq!(pending, vec!["toolu_first", "toolu_second"]);
    // The second first.
    h.answer("toolu_second", vec![QuestionAnswer::new("Which database?", &["Postgres"], None, None)]).await;
    h.answer("toolu_first", vec![QuestionAnswer::new(AUTH, &["JWT"], None, None)]).await;
    h.turn_end().await;
    let mut saw = h.model_saw();
    saw.sort();
    assert_eq!(
        saw,
        vec![
            (
                "toolu_first".into(),
                "Your questions have been answered: \"Which auth method should we use?\"=\"JWT\". You can now continue with these answers in mind.".into(),
                false
            ),
            (
                "toolu_second".into(),
                "Your questions have been answered: \"Which database?\"=\"Postgres\". You can now continue with these answers in mind.".into(),
                false
            ),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hook_path_answers_and_the_transcript_shows_the_persons_answer() {
    let h = harness(
        vec![ask("toolu_ask", vec![auth_question(), features_question()]), Reply::text("Thanks.")],
        AnswerPath::Hook,
    )
    .await;
    h.send("Help me set up auth.").await;
    h.pending(1).await;
    // While Claude Code streamed the arguments, the card filled in, options included; it opened
    // with the questions of its last preview, so opening it changes only its state.
    let events = h.store.events_after(&h.session, 0, 1000).await.unwrap();
    // Each preview event stores what changed (`from`, and the questions after it): the card's
    // preview after each is the fold of them.
    let mut shown: Vec<Question> = Vec::new();
    let mut stored = Vec::new();
    let previews: Vec<(usize, Vec<Question>)> = events
        .iter()
        .enumerate()
        .filter_map(|(at, event)| match &event.body {
            EventBody::ToolInputPreview { tool_use_id, from, questions } if tool_use_id == "toolu_ask" => {
                stored.push((*from, questions.len()));
                shown.truncate(*from);
                shown.extend(questions.iter().cloned());
                Some((at, shown.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(stored, [(0, 1), (1, 1)], "the second question alone, after the first: {stored:?}");
    let (opened_at, opened) = events
        .iter()
        .enumerate()
        .find_map(|(at, event)| match &event.body {
            EventBody::InteractionOpened { request: InteractionRequest::Question { questions }, .. } => {
                Some((at, questions))
            }
            _ => None,
        })
        .expect("the card opened");
    // One question after the other, each whole (the mock writes the keys sorted: a question's
    // text comes last).
    assert_eq!(previews.iter().map(|(_, p)| p.len()).collect::<Vec<_>>(), [1, 2], "{previews:?}");
    let (last_at, last) = previews.last().unwrap();
    assert!(*last_at < opened_at);
    assert_eq!(last, opened);
    assert_eq!(
        last[1].options.iter().map(|o| o.label.as_str()).collect::<Vec<_>>(),
        ["Dark mode", "i18n", "Analytics"]
    );
    let answers = vec![
        QuestionAnswer::new(AUTH, &["JWT"], None, None),
        QuestionAnswer::new(FEATURES, &["Dark mode", "i18n"], None, None),
    ];
    h.answer("toolu_ask", answers.clone()).await;
    let thread = h.turn_end().await;
    let expected = "Your questions have been answered: \"Which auth method should we use?\"=\"JWT\", \"Which features?\"=\"Dark mode, i18n\". You can now continue with these answers in mind.";
    assert_eq!(h.model_saw(), vec![answered(expected)]);
    // The override: the stored transcript's result is the person's answer, and the card shows it.
    let stored = h.store.load_thread(&h.session).await.unwrap();
    let call = stored.tool_call("toolu_ask").unwrap();
    assert_eq!(call.result.as_deref(), Some(expected));
    assert_eq!(call.interaction.as_ref().unwrap().outcome, Some(InteractionOutcome::Answered { answers }));
    assert_eq!(stored, thread);
    // Once: the one result the CLI echoed, stored as the person's answer.
    let results: Vec<String> = h
        .store
        .events_after(&h.session, 0, 1000)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|event| match event.body {
            EventBody::ToolResult { tool_use_id, output, .. } if tool_use_id == "toolu_ask" => Some(output),
            _ => None,
        })
        .collect();
    assert_eq!(results, [expected]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_while_a_question_is_pending_cancels_it_and_the_session_goes_on() {
    let h = harness(
        vec![ask("toolu_ask", vec![auth_question()]), Reply::text("Picking up again.")],
        AnswerPath::CanUseTool,
    )
    .await;
    h.send("Help me set up auth.").await;
    h.pending(1).await;
    h.manager.interrupt(&h.session).await.unwrap();
    let thread = h.turn_end().await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Interrupted));
    let interaction = thread.tool_call("toolu_ask").unwrap().interaction.clone().unwrap();
    assert!(matches!(interaction.outcome, Some(InteractionOutcome::Cancelled { .. })), "{interaction:?}");
    let late =
        h.manager.answer_question(&h.session, "toolu_ask", vec![QuestionAnswer::new(AUTH, &["JWT"], None, None)]).await;
    assert!(matches!(late, Err(AppError::NotWaiting { .. })), "{late:?}");

    // The next message starts a new turn; the model learns the question was rejected.
    h.send("OK, continue.").await;
    let thread = h.turn_end().await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed));
    let (_, text, is_error) = h.model_saw().into_iter().find(|(id, _, _)| id == "toolu_ask").unwrap();
    assert!(is_error && text.starts_with("The user doesn't want to proceed with this tool use."), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_that_dies_mid_question_is_reported_and_resumed_by_the_next_message() {
    let h =
        harness(vec![ask("toolu_ask", vec![auth_question()]), Reply::text("Resumed fine.")], AnswerPath::CanUseTool)
            .await;
    h.send("Remember the word pineapple, then ask me.").await;
    h.pending(1).await;
    let pid = h.backend.pid(&h.session).expect("the CLI runs");
    std::process::Command::new("kill").arg("-9").arg(pid.to_string()).status().unwrap();

    let thread = h.turn_end().await;
    let Some(TurnOutcome::Failed { error }) = &thread.turn.last_outcome else {
        panic!("{:?}", thread.turn.last_outcome)
    };
    assert!(error.contains("Claude Code exited") && error.contains("signal"), "{error}");
    let interaction = thread.tool_call("toolu_ask").unwrap().interaction.clone().unwrap();
    assert!(matches!(interaction.outcome, Some(InteractionOutcome::Cancelled { .. })));

    // The next message restarts the CLI on the same conversation.
    h.send("Are you back?").await;
    let thread = h.turn_end().await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed));
    let last = h.mock.requests().last().cloned().unwrap();
    let conversation = last["messages"].to_string();
    assert!(conversation.contains("pineapple"), "the resumed CLI sent the earlier conversation: {conversation}");
    assert!(conversation.contains("Are you back?"));
}

/// The processes whose command line holds `marker`, and those in process group `group`.
fn processes_of(marker: &str, group: Option<u32>) -> Vec<(u32, String)> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let after_name: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
            // A zombie has ended; its parent has yet to read its status.
            if after_name.first() == Some(&"Z") {
                return None;
            }
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let in_group = group.is_some() && after_name.get(2).and_then(|g| g.parse::<u32>().ok()) == group;
            (cmdline.contains(marker) || in_group).then_some((pid, cmdline))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_ends_everything_the_cli_started_even_when_the_cli_does_not_answer() {
    // A number nothing else on the machine sleeps for: how the command is found in /proc.
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let marker = format!("7{:06}", nanos % 1_000_000);
    // Claude Code refuses a bare `sleep`; this one runs in a session of its own (setsid), as
    // every command of the CLI's does.
    let command = format!("echo started && sleep {marker}");
    let h = harness(vec![bash("toolu_sleep", &command), Reply::text("Never reached.")], AnswerPath::Hook).await;
    h.send("Wait for a long time.").await;
    let running = wait_until("the command to run", Duration::from_secs(60), || async {
        let thread = h.thread().await;
        let call = thread.tool_call("toolu_sleep");
        if call.and_then(|c| c.interaction.as_ref()).is_some_and(|i| i.is_pending()) {
            h.manager.decide_approval(&h.session, "toolu_sleep", Decision::Allow { always: None }).await.unwrap();
        }
        let sleeping = processes_of(&format!("sleep {marker}"), None);
        (!sleeping.is_empty()).then_some(sleeping)
    });
    let sleeping = running.await;
    let cli = h.backend.pid(&h.session).expect("the CLI runs");

    // A CLI that cannot answer Stop (stuck): it is stopped, so that only the grace can end it.
    std::process::Command::new("kill").args(["-STOP", &cli.to_string()]).status().unwrap();
    let stopped_at = std::time::Instant::now();
    h.manager.interrupt(&h.session).await.unwrap();
    let thread = h.turn_end().await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Interrupted));
    let took = stopped_at.elapsed();
    assert!(took < Duration::from_secs(19), "one grace period (15 s), then the kill: {took:?}");
    let left = processes_of(&format!("sleep {marker}"), Some(cli));
    assert!(left.is_empty(), "survived the CLI: {left:?} (the command was {sleeping:?})");
    assert_eq!(h.backend.pid(&h.session), None, "no CLI is kept for the next turn");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_cannot_be_stored_is_answered_with_why_and_the_turn_ends_saying_so() {
    let cases = [
        ("question", ask("toolu_ask", vec![auth_question()]), "toolu_ask", AnswerPath::Hook),
        ("permission request", bash("toolu_ask", "touch hi.txt"), "toolu_ask", AnswerPath::CanUseTool),
    ];
    for (what, request, id, path) in cases {
        let h = harness(vec![request, Reply::text("Understood.")], path).await;
        // The disk fails just as the card opens: the card's write is the first to fail.
        h.store.fail_writes_from_next_card();
        h.send("Set up auth; ask me first.").await;
        let (thread, error) = h.failed().await;
        assert!(error.contains(&format!("{what} could not be stored")) && error.contains("stopped"), "{error}");
        assert!(thread.tool_call(id).is_none_or(|call| call.interaction.is_none()), "no card: {thread:?}");

        // Once the disk is back, the session goes on; the model had been told why.
        h.store.fail_writes(false);
        h.send("Are you there?").await;
        h.turn_end().await;
        let told = h.model_saw().into_iter().find(|(tool, _, _)| tool == id);
        let (_, text, is_error) = told.unwrap_or_else(|| panic!("the model never heard of {id}: {:?}", h.model_saw()));
        assert!(is_error && text.contains(&format!("AskBridge could not store this {what}")), "{text}");
        assert!(!h.project().join("hi.txt").exists(), "the command did not run");
    }
}

// ---- Approvals (issue: tool approvals and permission modes) ----

fn bash(id: &str, command: &str) -> Reply {
    Reply::tool_use(id, "Bash", json!({"command": command, "description": "Create a file"}))
}

impl Harness {
    fn project(&self) -> PathBuf {
        self.home.project()
    }

    async fn decide(&self, tool_use_id: &str, decision: Decision) {
        self.manager.decide_approval(&self.session, tool_use_id, decision).await.unwrap();
    }

    async fn approval(&self, tool_use_id: &str) -> Approval {
        let thread = self.thread().await;
        match thread.tool_call(tool_use_id).and_then(|c| c.interaction.clone()).map(|i| i.request) {
            Some(InteractionRequest::Approval(approval)) => approval,
            other => panic!("not an approval: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_command_runs_and_its_result_reaches_the_model() {
    let h = harness(vec![bash("toolu_bash", "touch hi.txt"), Reply::text("Created.")], AnswerPath::CanUseTool).await;
    h.send("Create hi.txt").await;
    assert_eq!(h.pending(1).await, vec!["toolu_bash"]);
    let approval = h.approval("toolu_bash").await;
    assert_eq!(approval.tool, "Bash");
    assert_eq!(approval.shows, Shows::Command { command: "touch hi.txt".into() });
    assert_eq!(approval.description.as_deref(), Some("Create a file"));
    assert!(
        approval.suggestions.iter().any(|s| s.label.starts_with("Always allow Bash(touch hi.txt) in this project")),
        "{:?}",
        approval.suggestions
    );
    assert!(!h.project().join("hi.txt").exists(), "nothing runs before the person allows it");

    h.decide("toolu_bash", Decision::Allow { always: None }).await;
    let thread = h.turn_end().await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed));
    assert_eq!(h.model_saw(), vec![("toolu_bash".into(), "(Bash completed with no output)".into(), false)]);
    assert!(h.project().join("hi.txt").exists(), "the command ran");
    assert!(thread.messages.last().unwrap().text().contains("Created."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_command_does_not_run_and_the_model_gets_the_persons_message() {
    let h = harness(vec![bash("toolu_bash", "touch hi.txt"), Reply::text("Understood.")], AnswerPath::CanUseTool).await;
    h.send("Create hi.txt").await;
    h.pending(1).await;
    h.decide("toolu_bash", Decision::Deny { message: Some("Not allowed by the web user.".into()) }).await;
    let thread = h.turn_end().await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed));
    assert_eq!(h.model_saw(), vec![("toolu_bash".into(), "Not allowed by the web user.".into(), true)]);
    assert!(!h.project().join("hi.txt").exists());
    let interaction = thread.tool_call("toolu_bash").unwrap().interaction.clone().unwrap();
    assert_eq!(
        interaction.outcome,
        Some(InteractionOutcome::Denied { message: Some("Not allowed by the web user.".into()) })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_allow_writes_the_rule_and_the_same_command_runs_without_a_card_next_turn() {
    let h = harness(
        vec![
            bash("toolu_one", "touch hi.txt"),
            Reply::text("Once."),
            bash("toolu_two", "touch hi.txt"),
            Reply::text("Twice."),
        ],
        AnswerPath::CanUseTool,
    )
    .await;
    h.send("Create hi.txt").await;
    h.pending(1).await;
    let approval = h.approval("toolu_one").await;
    let rule = approval
        .suggestions
        .iter()
        .position(|s| s.value["type"] == "addRules" && s.value["destination"] == "localSettings")
        .expect("Claude Code suggests a rule for the project");
    h.decide("toolu_one", Decision::Allow { always: Some(rule) }).await;
    h.turn_end().await;
    let settings = std::fs::read_to_string(h.project().join(".claude/settings.local.json")).unwrap();
    let settings: Value = serde_json::from_str(&settings).unwrap();
    assert_eq!(settings["permissions"]["allow"], json!(["Bash(touch hi.txt)"]));

    h.send("Again, please").await;
    let thread = h.turn_end().await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed));
    assert!(thread.tool_call("toolu_two").unwrap().interaction.is_none(), "no card the second time");
    assert_eq!(
        h.model_saw(),
        vec![
            ("toolu_one".into(), "(Bash completed with no output)".into(), false),
            ("toolu_two".into(), "(Bash completed with no output)".into(), false),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_switching_to_bypass_bash_runs_without_a_card_but_questions_still_ask() {
    let h = harness(
        vec![
            Reply::text("Hello."),
            bash("toolu_bash", "touch hi.txt"),
            ask("toolu_ask", vec![auth_question()]),
            Reply::text("JWT it is."),
        ],
        AnswerPath::CanUseTool,
    )
    .await;
    h.send("Hi").await;
    h.turn_end().await;
    // The CLI runs (between turns); the switch reaches it now.
    h.manager.set_permission_mode(&h.session, PermissionMode::BypassPermissions).await.unwrap();
    h.send("Create hi.txt, then ask me about auth.").await;
    assert_eq!(h.pending(1).await, vec!["toolu_ask"], "only the question waits");
    h.answer("toolu_ask", vec![QuestionAnswer::new(AUTH, &["JWT"], None, None)]).await;
    let thread = h.turn_end().await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed));
    assert!(thread.tool_call("toolu_bash").unwrap().interaction.is_none());
    assert!(h.project().join("hi.txt").exists());
    assert_eq!(thread.turn.permission_mode, Some(PermissionMode::BypassPermissions));
    let saw = h.model_saw();
    assert_eq!(saw[0], ("toolu_bash".into(), "(Bash completed with no output)".into(), false));
    assert_eq!(
        saw[1],
        answered(
            "Your questions have been answered: \"Which auth method should we use?\"=\"JWT\". You can now continue with these answers in mind."
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_is_approved_or_sent_back_from_its_card() {
    const PLAN: &str = "## Plan\n\n1. Create hi.txt\n2. Say hello";
    let h = harness(
        vec![
            Reply::tool_use("toolu_plan1", "ExitPlanMode", json!({"plan": PLAN})),
            Reply::text("I will revise it."),
            Reply::tool_use("toolu_plan2", "ExitPlanMode", json!({"plan": PLAN})),
            Reply::text("Starting."),
        ],
        AnswerPath::CanUseTool,
    )
    .await;
    h.manager.set_permission_mode(&h.session, PermissionMode::Plan).await.unwrap();
    h.send("Plan the work.").await;
    assert_eq!(h.pending(1).await, vec!["toolu_plan1"]);
    let approval = h.approval("toolu_plan1").await;
    assert!(approval.is_plan());
    assert_eq!(approval.shows, Shows::Plan { markdown: PLAN.into() });
    h.decide("toolu_plan1", Decision::Deny { message: Some("Add a step for tests.".into()) }).await;
    let thread = h.turn_end().await;
    assert_eq!(thread.turn.permission_mode, Some(PermissionMode::Plan), "still planning");
    let saw = h.model_saw();
    assert_eq!(saw[0].0, "toolu_plan1");
    assert!(saw[0].1.contains("Add a step for tests.") && saw[0].2, "{saw:?}");

    h.send("Try again.").await;
    assert_eq!(h.pending(1).await, vec!["toolu_plan2"]);
    h.decide("toolu_plan2", Decision::Allow { always: None }).await;
    let thread = h.turn_end().await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed));
    let saw = h.model_saw();
    assert!(!saw[1].2 && saw[1].1.contains("approved"), "{saw:?}");
    assert_ne!(thread.turn.permission_mode, Some(PermissionMode::Plan), "the approved plan ends plan mode");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecided_command_is_denied_when_the_approval_timeout_passes() {
    let timeouts = Timeouts { approval: Some(Duration::from_millis(300)), ..Timeouts::default() };
    let h = harness_with(
        vec![bash("toolu_bash", "touch hi.txt"), Reply::text("Nobody answered.")],
        AnswerPath::CanUseTool,
        timeouts,
    )
    .await;
    h.send("Create hi.txt").await;
    let thread = h.turn_end().await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed));
    let interaction = thread.tool_call("toolu_bash").unwrap().interaction.clone().unwrap();
    assert_eq!(interaction.outcome, Some(InteractionOutcome::Expired));
    assert_eq!(
        h.model_saw(),
        vec![(
            "toolu_bash".into(),
            "The user did not answer this permission request in time, so it was not allowed.".into(),
            true
        )]
    );
    assert!(!h.project().join("hi.txt").exists());
}

// ---- Durable sessions: parking (protocol §12) and subagents (§13) ----

const ANSWERED: &str = "Your questions have been answered: \"Which auth method should we use?\"=\"JWT\". You can now continue with these answers in mind.";

/// The text of the last message the model was sent, as JSON.
fn last_message(h: &Harness) -> String {
    let last = h.mock.requests().last().cloned().unwrap();
    last["messages"].as_array().unwrap().last().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_waiting_at_a_graceful_stop_is_answered_after_the_restart() {
    let mut h =
        harness(vec![ask("toolu_ask", vec![auth_question()]), Reply::text("JWT it is.")], AnswerPath::Hook).await;
    h.send("Help me set up auth.").await;
    h.pending(1).await;
    h.restart().await;

    // The card waits, parked: no process, and the model has been told nothing.
    let thread = h.thread().await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Parked));
    let interaction = thread.tool_call("toolu_ask").unwrap().interaction.clone().unwrap();
    assert!(interaction.is_pending() && interaction.parked, "{interaction:?}");
    assert_eq!(h.backend.pid(&h.session), None);
    assert!(h.model_saw().is_empty(), "nothing reached the model meanwhile: {:?}", h.model_saw());

    h.answer("toolu_ask", vec![QuestionAnswer::new(AUTH, &["JWT"], None, None)]).await;
    let thread = h.turn_ended(TurnOutcome::Completed).await;
    assert_eq!(h.model_saw(), vec![answered(ANSWERED)]);
    assert!(last_message(&h).contains("Continue from where you left off."), "{}", last_message(&h));
    assert!(thread.messages.last().unwrap().text().contains("JWT it is."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_nobody_answers_parks_after_the_set_time_and_no_process_is_left() {
    let timeouts = Timeouts { park_after: Some(Duration::from_secs(1)), ..Timeouts::default() };
    let h = harness_with(
        vec![ask("toolu_ask", vec![auth_question()]), Reply::text("JWT it is.")],
        AnswerPath::Hook,
        timeouts,
    )
    .await;
    h.send("Help me set up auth.").await;
    h.pending(1).await;
    let pid = h.backend.pid(&h.session).expect("the CLI runs while the question is fresh");
    h.turn_ended(TurnOutcome::Parked).await;
    assert_eq!(h.backend.pid(&h.session), None);
    let gone = wait_until("the parked CLI to exit", Duration::from_secs(10), || async {
        (!std::path::Path::new(&format!("/proc/{pid}")).exists()).then_some(())
    });
    gone.await;
    assert!(h.thread().await.tool_call("toolu_ask").unwrap().interaction.as_ref().unwrap().is_pending());

    h.answer("toolu_ask", vec![QuestionAnswer::new(AUTH, &["JWT"], None, None)]).await;
    h.turn_ended(TurnOutcome::Completed).await;
    assert_eq!(h.model_saw(), vec![answered(ANSWERED)]);
    // What the turn that parked spent is counted once, with the resumed one: the session's
    // total is what the mock's replies cost at the list prices, neither more nor less.
    let spent: f64 = h.mock.usage().iter().map(list_price).sum();
    let counted = h.thread().await.turn.total_cost_usd.expect("a cost was counted");
    assert!((counted - spent).abs() < 1e-6, "counted ${counted}, the replies cost ${spent}");
}

/// What a reply the mock served cost at Claude Code's list prices per million tokens (the mock
/// sends no cache figures).
fn list_price(usage: &Value) -> f64 {
    let model = usage["model"].as_str().unwrap_or_default();
    let (input, output) = [("opus", (4.0, 20.0)), ("sonnet", (2.0, 10.0)), ("haiku", (0.10, 0.50))]
        .into_iter()
        .find(|(family, _)| model.contains(family))
        .map_or_else(|| panic!("no list price for {model}"), |(_, prices)| prices);
    let tokens = |key: &str| usage[key].as_u64().unwrap_or(0) as f64 / 1_000_000.0;
    tokens("input_tokens") * input + tokens("output_tokens") * output
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_request_pending_at_a_graceful_stop_is_decided_after_the_restart_and_told_in_words() {
    let mut h = harness(
        vec![bash("toolu_bash", "touch hi.txt"), bash("toolu_retry", "touch hi.txt"), Reply::text("Created.")],
        AnswerPath::Hook,
    )
    .await;
    h.send("Create hi.txt").await;
    h.pending(1).await;
    h.restart().await;
    let thread = h.thread().await;
    assert!(thread.tool_call("toolu_bash").unwrap().interaction.as_ref().unwrap().is_pending(), "decidable");

    h.decide("toolu_bash", Decision::Allow { always: None }).await;
    let thread = h.turn_ended(TurnOutcome::Completed).await;
    let told = h.mock.requests()[1]["messages"].to_string();
    assert!(told.contains("you may now run `touch hi.txt`"), "the resumed agent was told in words: {told}");
    let retry = thread.tool_call("toolu_retry").unwrap();
    assert!(retry.interaction.is_none(), "the identical retry is not asked again: {retry:?}");
    assert!(h.project().join("hi.txt").exists(), "the command ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagents_request_is_shown_and_runs_after_the_main_turn_ended() {
    let delegate = Reply::tool_use(
        "toolu_agent",
        "Agent",
        json!({"description": "Run the command", "subagent_type": "general-purpose",
               "prompt": "Run `touch from-subagent.txt` in the project folder, then say done."}),
    );
    let script = vec![
        delegate,
        Reply::text("The subagent is on it.").when("Async agent launched"),
        bash("toolu_sub_bash", "touch from-subagent.txt").when("from-subagent.txt"),
        Reply::text("done"),
        Reply::text("The subagent finished."),
    ];
    let h = harness(script, AnswerPath::Hook).await;
    h.send("Delegate: create the file.").await;
    let pending = h.pending(1).await;
    assert_eq!(pending, vec!["toolu_sub_bash"]);
    let approval = h.approval("toolu_sub_bash").await;
    assert_eq!(approval.asked_by.as_deref(), Some("Run the command"), "says which subagent asks");
    h.decide("toolu_sub_bash", Decision::Allow { always: None }).await;
    let thread = h.turn_ended(TurnOutcome::Completed).await;
    assert!(h.project().join("from-subagent.txt").exists(), "the subagent's command ran");
    let ran = thread.tool_call("toolu_sub_bash").unwrap();
    assert_eq!(ran.result.as_deref(), Some("(Bash completed with no output)"));
    assert!(thread.messages.iter().any(|m| m.text().contains("The subagent finished.")), "the CLI's own turn is shown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reply_after_a_subagent_ends_its_own_turn_not_the_next() {
    let delegate = Reply::tool_use(
        "toolu_agent",
        "Agent",
        json!({"description": "Run the command", "subagent_type": "general-purpose",
               "prompt": "Run `touch from-subagent.txt` in the project folder, then say done."}),
    );
    let script = vec![
        delegate,
        Reply::text("The subagent is on it.").when("Async agent launched"),
        bash("toolu_sub_bash", "touch from-subagent.txt").when("from-subagent.txt"),
        Reply::text("done"),
        // The turn the CLI starts by itself once the subagent is done: a model slower than any
        // fixed wait for it would allow.
        Reply::text("The subagent finished.").after(Duration::from_secs(5)),
        Reply::text("Nothing else to do."),
    ];
    let h = harness(script, AnswerPath::Hook).await;
    h.send("Delegate: create the file.").await;
    h.pending(1).await;
    h.decide("toolu_sub_bash", Decision::Allow { always: None }).await;
    let thread = h.turn_ended(TurnOutcome::Completed).await;
    let last = thread.messages.last().unwrap().text();
    assert!(last.contains("The subagent finished."), "the turn waited for the CLI's own turn: {last:?}");

    h.send("Anything else?").await;
    let thread = h.turn_ended(TurnOutcome::Completed).await;
    let replies: Vec<String> = thread.messages.iter().map(|m| m.text()).filter(|t| !t.is_empty()).collect();
    assert_eq!(
        &replies[replies.len() - 2..],
        ["Anything else?", "Nothing else to do."],
        "the next message gets its own reply: {replies:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sessions_model_starts_the_cli_and_a_switch_reaches_the_cli_that_runs() {
    use askbridge::agent::AgentBackend;
    let h = harness(vec![Reply::text("one"), Reply::text("two")], AnswerPath::Hook).await;
    // What the CLI itself offers (a CLI started only to ask: it sends the API nothing).
    let models: Vec<String> = h.backend.models().await.into_iter().map(|m| m.value).collect();
    for alias in ["default", "sonnet", "opus", "haiku"] {
        assert!(models.iter().any(|m| m == alias), "{alias} in {models:?}");
    }
    let commands: Vec<String> = h.backend.commands(None).await.into_iter().map(|c| c.name).collect();
    assert!(commands.iter().any(|c| c == "compact") && commands.iter().any(|c| c == "clear"), "{commands:?}");
    assert!(h.mock.requests().is_empty(), "asking sent the API nothing");
    // No CLI runs yet: the next start takes --model.
    h.manager.set_model(&h.session, Some("haiku")).await.unwrap();
    h.send("first").await;
    h.turn_end().await;
    assert!(h.backend.pid(&h.session).is_some(), "the CLI stays between turns");
    // It runs: set_model, confirmed by the CLI, for the next turn.
    h.manager.set_model(&h.session, Some("sonnet")).await.unwrap();
    h.send("second").await;
    h.turn_end().await;
    let models: Vec<Value> = h.mock.requests().iter().map(|r| r["model"].clone()).collect();
    assert_eq!(models, [json!("claude-haiku-5-5"), json!("claude-sonnet-5-5")]);
}

/// The text of every request's last message, as the model was sent it.
fn last_messages(mock: &MockAnthropic) -> Vec<String> {
    mock.requests()
        .iter()
        .map(|request| {
            let last = request["messages"].as_array().and_then(|m| m.last()).cloned().unwrap_or_default();
            match &last["content"] {
                Value::String(text) => text.clone(),
                blocks => blocks.as_array().into_iter().flatten().filter_map(|b| b["text"].as_str()).collect(),
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_and_clear_do_what_they_do_in_the_terminal_and_the_thread_says_so() {
    use askbridge::thread::Role;
    let summary = "<summary>We said hello.</summary>";
    let h = harness(
        vec![
            Reply::text("Hello there.").when("hello"),
            Reply::text(summary).when("TEXT ONLY"),
            Reply::text(summary).when("TEXT ONLY"),
            Reply::text("A fresh start.").when("again"),
        ],
        AnswerPath::Hook,
    )
    .await;
    h.send("hello").await;
    let before = h.turn_end().await.turn.agent_session.clone();
    h.send("/compact").await;
    h.turn_end().await;
    assert!(last_messages(&h.mock).iter().any(|m| m.contains("TEXT ONLY")), "the CLI asked the model for a summary");
    h.send("/clear").await;
    h.turn_end().await;
    h.send("again").await;
    let thread = h.turn_end().await;
    let notices: Vec<String> = thread.messages.iter().filter(|m| m.role == Role::Notice).map(|m| m.text()).collect();
    assert!(
        notices
            .iter()
            .any(|n| n.starts_with("The conversation was compacted (/compact): ") && n.contains("tokens of context")),
        "{notices:?}"
    );
    assert!(notices.iter().any(|n| n.starts_with("The context was cleared (/clear)")), "{notices:?}");
    // A new conversation: its own id (which a restart resumes), and the model sees only it.
    assert_ne!(thread.turn.agent_session, before);
    let last = h.mock.requests().last().cloned().unwrap();
    let sent = last["messages"].to_string();
    assert!(sent.contains("again") && !sent.contains("hello"), "{sent}");
}

/// A 1×1 PNG: a real image, which the CLI reads as one.
const PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// Every `image` block of every request the model was sent.
fn images_sent(requests: &[Value]) -> Vec<Value> {
    let blocks = requests.iter().flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default());
    blocks
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|block| block["type"] == "image")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attached_image_reaches_the_model_through_the_cli_as_an_image_block_with_the_same_bytes() {
    use base64::Engine;
    let h = harness(vec![Reply::text("A single pixel.")], AnswerPath::CanUseTool).await;
    let png = base64::engine::general_purpose::STANDARD.decode(PIXEL_PNG).unwrap();
    let file = h.manager.store_attachment("image/png", Some("pixel.png"), &png).await.unwrap();
    h.manager.send_message_with(&h.session, "What is in this picture?".into(), &[file.hash]).await.unwrap();
    let thread = h.turn_end().await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed));
    let images = images_sent(&h.mock.requests());
    assert!(!images.is_empty(), "no image block reached the model");
    assert_eq!(images[0]["source"], json!({"type": "base64", "media_type": "image/png", "data": PIXEL_PNG}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_project_s_and_the_user_s_own_commands_are_listed_with_the_cli_s() {
    use askbridge::agent::AgentBackend;
    let h = harness(vec![], AnswerPath::Hook).await;
    let project = h.home.project();
    std::fs::create_dir_all(project.join(".claude/commands")).unwrap();
    std::fs::write(
        project.join(".claude/commands/deploy.md"),
        "---\ndescription: Deploy the app to staging\nargument-hint: <branch>\n---\nDeploy $ARGUMENTS\n",
    )
    .unwrap();
    std::fs::create_dir_all(h.home.path().join(".claude/commands")).unwrap();
    std::fs::write(h.home.path().join(".claude/commands/notes.md"), "Write the release notes\n").unwrap();
    let commands = h.backend.commands(Some(&project)).await;
    let deploy = commands.iter().find(|c| c.name == "deploy").expect("the project's command");
    assert_eq!(
        (deploy.description.as_str(), deploy.argument_hint.as_str()),
        ("Deploy the app to staging (project)", "<branch>")
    );
    let notes = commands.iter().find(|c| c.name == "notes").expect("the user's command");
    assert_eq!(notes.description, "Write the release notes (user)");
    assert!(commands.iter().any(|c| c.name == "compact"));
}
