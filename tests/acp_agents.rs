//! AskBridge as an ACP client of the real agents, offline (protocol/acp.md): Claude's adapter
//! (`@agentclientprotocol/claude-agent-acp`, pinned in package.json, with the Claude binary its
//! SDK brings) against the mock Messages API, under the real session manager and store.

use crate::support;

mod codex_opencode_cline;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use askbridge::agent::AgentBackend;
use askbridge::agent::AgentEnv;
use askbridge::agent::acp::{AcpAgent, AcpConfig, HostSettings, Launch};
use askbridge::approval::{Decision, PermissionMode, Shows};
use askbridge::interaction::{InteractionOutcome, InteractionRequest};
use askbridge::question::QuestionAnswer;
use askbridge::session::{SessionManager, Timeouts};
use askbridge::store::Store;
use askbridge::testing::wait_until;
use askbridge::thread::TurnOutcome;
use serde_json::{Value, json};
use support::claude_code::ClaudeHome;
use support::mock_anthropic::{MockAnthropic, Reply};
use support::mock_gemini::{GeminiReply, MockGemini};
use support::session::{AgentSession, tool_calls};

const AUTH: &str = "Which auth method should we use?";
const FEATURES: &str = "Which features?";

/// The pinned adapter (`make setup`'s npm ci).
fn claude_adapter() -> PathBuf {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js");
    assert!(script.exists(), "the pinned Claude ACP adapter is missing: run `make setup` (npm ci) first");
    script
}

pub(crate) fn questions() -> Value {
    json!({"questions": [
        {"question": AUTH, "header": "Auth", "multiSelect": false, "options": [
            {"label": "JWT", "description": "Stateless tokens"}, {"label": "Sessions", "description": "Server-side sessions"}]},
        {"question": FEATURES, "header": "Features", "multiSelect": true, "options": [
            {"label": "Dark mode", "description": "Theme"}, {"label": "i18n", "description": "Languages"},
            {"label": "Analytics", "description": "Tracking"}]}]})
}

struct Harness {
    base: AgentSession,
    home: ClaudeHome,
    agent: Arc<AcpAgent>,
    config: AcpConfig,
    timeouts: Timeouts,
}

impl std::ops::Deref for Harness {
    type Target = AgentSession;
    fn deref(&self) -> &AgentSession {
        &self.base
    }
}

/// A session of Claude's adapter, its model the mock playing `script`.
async fn claude_over_acp(script: Vec<Reply>) -> Harness {
    let (config, home, mock) = claude_config(script).await;
    harness(config, home, mock).await
}

/// The same, the adapter under its host (this build's `askbridge acp-host`), which outlives the
/// server.
async fn claude_hosted(script: Vec<Reply>, timeouts: Timeouts) -> Harness {
    let (mut config, home, mock) = claude_config(script).await;
    config.host = Some(HostSettings { exe: env!("CARGO_BIN_EXE_askbridge").into(), idle_exit: None });
    harness_with(config, home, mock, timeouts).await
}

pub(crate) async fn claude_config(script: Vec<Reply>) -> (AcpConfig, ClaudeHome, MockAnthropic) {
    support::session::log_to_test_output();
    let mock = MockAnthropic::start(script).await;
    mock.answer_side_requests("Mock title");
    let home = ClaudeHome::new();
    let mut env = home.env(&mock);
    env.push(("IS_SANDBOX".to_string(), "1".to_string()));
    let config = AcpConfig {
        name: "claude-acp",
        label: "claude-acp",
        launch: Launch {
            program: "node".into(),
            args: vec![claude_adapter().display().to_string()],
            inherit: AgentEnv::default(),
            env,
        },
        workdir: home.project(),
        groups_dir: Some(home.path().join("data/acp")),
        host: None,
    };
    (config, home, mock)
}

/// A session of the agent `config` names, under the real session manager and a store in `home`.
async fn harness(config: AcpConfig, home: ClaudeHome, mock: MockAnthropic) -> Harness {
    harness_with(config, home, mock, Timeouts::default()).await
}

async fn harness_with(config: AcpConfig, home: ClaudeHome, mock: MockAnthropic, timeouts: Timeouts) -> Harness {
    let agent = Arc::new(AcpAgent::new(config.clone()));
    let store = Store::open(&home.path().join("askbridge.db")).await.unwrap();
    let manager = SessionManager::with_timeouts(store, agent.clone(), timeouts);
    let base = AgentSession::start(manager, mock).await;
    Harness { base, home, agent, config, timeouts }
}

impl Harness {
    /// Sends `text`, and once the turn completed, the agent's last message.
    async fn reply_to(&self, text: &str) -> String {
        self.send(text).await;
        let thread = self.turn_end().await;
        assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed), "{:?}", thread.turn.last_outcome);
        thread.messages.last().unwrap().text()
    }

    /// Stops AskBridge gracefully (as on SIGTERM) and starts it again on the same database.
    async fn restart(&mut self) {
        self.base.manager.shut_down().await;
        self.agent = Arc::new(AcpAgent::new(self.config.clone()));
        let store = Store::open(&self.home.path().join("askbridge.db")).await.unwrap();
        self.base.manager = SessionManager::with_timeouts(store, self.agent.clone(), self.timeouts);
        self.base.manager.recover_unfinished_turns().await.unwrap();
    }

    async fn request(&self, tool_use_id: &str) -> InteractionRequest {
        let thread = self.thread().await;
        let call = tool_calls(&thread).into_iter().find(|c| c.id == tool_use_id).cloned().unwrap();
        call.interaction.unwrap().request
    }
}

/// The agent runs under its host: the server stops while the question waits, and the agent waits
/// on in the host; the restarted server shows the card parked, its answer attaches to the host,
/// the agent's request is answered, and the model reads the answer. Deleting the session ends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_asked_through_a_host_outlives_the_server_and_its_answer_reaches_the_model() {
    let mut h = claude_hosted(
        vec![Reply::tool_use("toolu_ask", "AskUserQuestion", questions()), Reply::text("Noted.")],
        Timeouts::default(),
    )
    .await;
    h.send("Set up auth for me.").await;
    assert_eq!(h.pending(1).await, ["toolu_ask"]);
    h.restart().await;
    assert!(h.agent.outlived_the_server(&h.session, None), "the host lives on");
    let thread = h.thread().await;
    let card = tool_calls(&thread).into_iter().find(|c| c.id == "toolu_ask").cloned().unwrap();
    let interaction = card.interaction.unwrap();
    assert!(interaction.is_pending() && interaction.parked, "{interaction:?}");
    assert!(h.model_saw().is_empty());

    h.answer(
        "toolu_ask",
        vec![
            QuestionAnswer::new(AUTH, &["Sessions"], None, None),
            QuestionAnswer::new(FEATURES, &["i18n"], None, None),
        ],
    )
    .await;
    let thread = h.turn_ended(TurnOutcome::Completed).await;
    let saw = h.model_saw();
    assert_eq!(saw.len(), 1, "{saw:?}");
    assert!(saw[0].1.contains(r#""Which auth method should we use?"="Sessions""#), "{saw:?}");
    assert!(thread.messages.last().unwrap().text().contains("Noted."));

    // Deleting the session ends the host, and the agent in it.
    let acp = h.home.path().join("data/acp");
    assert!(acp.join(format!("{}.sock", h.session)).exists(), "the host listens");
    let record = std::fs::read_to_string(acp.join(format!("{}.group", h.session))).unwrap();
    let host: u32 = record.split_whitespace().nth(1).unwrap().parse().unwrap();
    h.agent.end_session(&h.session).await;
    let gone = || {
        std::fs::read_to_string(format!("/proc/{host}/stat"))
            .map_or(true, |stat| stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')))
    };
    wait_until("the host to end", Duration::from_secs(10), || async { gone().then_some(()) }).await;
    assert!(!acp.join(format!("{}.sock", h.session)).exists(), "nothing to attach to");
}

/// `--park-after`: a question left waiting parks; the turn ends and lets go of the agent, which
/// waits in its host; the answer attaches again and the agent goes on with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosted_question_left_waiting_parks_and_its_answer_resumes_the_agent() {
    let script = vec![Reply::tool_use("toolu_ask", "AskUserQuestion", questions()), Reply::text("Noted.")];
    let timeouts = Timeouts { park_after: Some(Duration::from_millis(500)), ..Timeouts::default() };
    let h = claude_hosted(script, timeouts).await;
    h.send("Set up auth for me.").await;
    let thread = h.turn_ended(TurnOutcome::Parked).await;
    let card = tool_calls(&thread).into_iter().find(|c| c.id == "toolu_ask").cloned().unwrap();
    assert!(card.interaction.as_ref().is_some_and(|i| i.is_pending() && i.parked), "{card:?}");
    assert!(h.agent.outlived_the_server(&h.session, None), "the agent waits in its host");

    h.answer(
        "toolu_ask",
        vec![QuestionAnswer::new(AUTH, &["JWT"], None, None), QuestionAnswer::new(FEATURES, &["i18n"], None, None)],
    )
    .await;
    let thread = h.turn_ended(TurnOutcome::Completed).await;
    let saw = h.model_saw();
    assert!(saw.len() == 1 && saw[0].1.contains(r#""Which auth method should we use?"="JWT""#), "{saw:?}");
    assert!(thread.messages.last().unwrap().text().contains("Noted."));
    h.agent.end_session(&h.session).await;
}

/// A question nobody answers in time expires: the agent is told the person declined, never an
/// answer, and goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acp_question_not_answered_in_time_expires_and_the_agent_is_told_it_was_declined() {
    let (config, home, mock) =
        claude_config(vec![Reply::tool_use("toolu_ask", "AskUserQuestion", questions()), Reply::text("Ok.")]).await;
    let timeouts = Timeouts { question: Some(Duration::from_secs(1)), ..Timeouts::default() };
    let h = harness_with(config, home, mock, timeouts).await;
    h.send("Set up auth for me.").await;
    let thread = h.turn_ended(TurnOutcome::Completed).await;
    let card = tool_calls(&thread).into_iter().find(|c| c.id == "toolu_ask").cloned().unwrap();
    assert_eq!(card.interaction.unwrap().outcome, Some(InteractionOutcome::Expired));
    let saw = h.model_saw();
    assert!(!saw[0].1.contains("Tool use aborted") && !saw[0].1.contains("=\""), "declined: {saw:?}");
    assert!(thread.messages.last().unwrap().text().contains("Ok."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claudes_ask_user_question_over_acp_is_our_question_card_and_the_model_reads_the_answers() {
    let h = claude_over_acp(vec![Reply::tool_use("toolu_ask", "AskUserQuestion", questions()), Reply::text("Noted.")])
        .await;
    h.send("Set up auth for me.").await;
    let pending = h.pending(1).await;
    assert_eq!(pending, ["toolu_ask"]);
    let InteractionRequest::Question { questions } = h.request("toolu_ask").await else {
        panic!("not a question card")
    };
    assert_eq!(questions.iter().map(|q| q.question.as_str()).collect::<Vec<_>>(), [AUTH, FEATURES]);
    assert_eq!(questions[0].header, "Auth");
    assert!(questions[1].multi_select);
    assert_eq!(questions[1].options[2].description.as_deref(), Some("Tracking"));

    h.answer(
        "toolu_ask",
        vec![
            QuestionAnswer::new(AUTH, &["JWT"], None, None),
            QuestionAnswer::new(FEATURES, &["Dark mode", "i18n"], Some("RTL"), None),
        ],
    )
    .await;
    let thread = h.turn_end().await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed), "{:?}", thread.turn.last_outcome);
    let saw = h.model_saw();
    assert_eq!(saw.len(), 1, "{saw:?}");
    assert!(
        saw[0].1.contains(r#""Which auth method should we use?"="JWT""#)
            && saw[0].1.contains(r#""Which features?"="Dark mode, i18n, RTL""#),
        "{saw:?}"
    );
    assert!(thread.messages.last().unwrap().text().contains("Noted."));
    assert!(
        thread.turn.agent_info.as_deref().is_some_and(|info| info.contains("(ACP)")),
        "{:?}",
        thread.turn.agent_info
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skipping_a_question_over_acp_declines_it_and_the_model_is_told_the_person_skipped() {
    let h =
        claude_over_acp(vec![Reply::tool_use("toolu_ask", "AskUserQuestion", questions()), Reply::text("Ok.")]).await;
    h.send("Set up auth for me.").await;
    h.pending(1).await;
    h.manager.decline_question(&h.session, "toolu_ask", None).await.unwrap();
    let thread = h.turn_end().await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed));
    let saw = h.model_saw();
    assert!(!saw[0].1.contains("Tool use aborted") && !saw[0].1.contains("=\""), "declined, not cancelled: {saw:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_allowed_once_over_acp_runs_and_one_denied_does_not() {
    let touch = |id: &str, file: &str| {
        Reply::tool_use(id, "Bash", json!({"command": format!("touch {file}"), "description": "Make a file"}))
    };
    let h = claude_over_acp(vec![
        touch("toolu_yes", "allowed.txt"),
        Reply::text("Made it."),
        touch("toolu_no", "denied.txt").when("Now the other"),
        Reply::text("Fine.").when("denied"),
    ])
    .await;
    h.send("Make a file.").await;
    h.pending(1).await;
    let InteractionRequest::Approval(approval) = h.request("toolu_yes").await else { panic!("not an approval") };
    assert_eq!(approval.shows, Shows::Command { command: "touch allowed.txt".into() });
    h.manager.decide_approval(&h.session, "toolu_yes", Decision::Allow { always: None }).await.unwrap();
    let thread = h.turn_end().await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed), "{:?}", thread.turn.last_outcome);
    assert!(h.home.project().join("allowed.txt").exists());

    h.send("Now the other one.").await;
    wait_until("the second card", Duration::from_secs(60), || async {
        let thread = h.thread().await;
        tool_calls(&thread)
            .iter()
            .any(|c| c.id == "toolu_no" && c.interaction.as_ref().is_some_and(|i| i.is_pending()))
            .then_some(())
    })
    .await;
    h.manager
        .decide_approval(&h.session, "toolu_no", Decision::Deny { message: Some("not that one".into()) })
        .await
        .unwrap();
    let thread = h.turn_end().await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed), "{:?}", thread.turn.last_outcome);
    assert!(!h.home.project().join("denied.txt").exists());
    let denied = tool_calls(&thread).into_iter().find(|c| c.id == "toolu_no").unwrap();
    assert!(matches!(denied.interaction.as_ref().unwrap().outcome, Some(InteractionOutcome::Denied { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_while_a_question_waits_cancels_it_and_ends_the_turn() {
    let h = claude_over_acp(vec![Reply::tool_use("toolu_ask", "AskUserQuestion", questions())]).await;
    h.send("Set up auth for me.").await;
    h.pending(1).await;
    h.manager.interrupt(&h.session).await.unwrap();
    let thread = h.turn_ended(TurnOutcome::Interrupted).await;
    let call = tool_calls(&thread).into_iter().find(|c| c.id == "toolu_ask").unwrap();
    let outcome = call.interaction.as_ref().unwrap().outcome.clone();
    assert!(matches!(outcome, Some(InteractionOutcome::Cancelled { .. })), "{outcome:?}");
}

/// A session of `tests/fixtures/acp/bad_agent.mjs`, misbehaving as `mode` says.
async fn bad_agent(mode: &str) -> Harness {
    support::session::log_to_test_output();
    let home = ClaudeHome::new();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/acp/bad_agent.mjs");
    let config = AcpConfig {
        name: "bad",
        label: "bad",
        launch: Launch {
            program: "node".into(),
            args: vec![script.display().to_string(), mode.to_string()],
            inherit: AgentEnv::default(),
            env: Vec::new(),
        },
        workdir: home.project(),
        groups_dir: Some(home.path().join("data/acp")),
        host: None,
    };
    harness(config, home, MockAnthropic::start(Vec::new()).await).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_writes_garbage_is_read_past_and_its_turn_goes_on() {
    let h = bad_agent("garbage").await;
    assert!(h.reply_to("go").await.contains("still here"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_exits_while_it_asks_fails_the_turn_and_closes_the_card_saying_so() {
    let h = bad_agent("exit").await;
    h.send("clean up").await;
    let (thread, error) = h.failed().await;
    assert!(error.contains("stopped in the middle of the turn"), "{error}");
    let call = tool_calls(&thread).into_iter().find(|c| c.id == "call_exit").unwrap();
    let outcome = call.interaction.as_ref().unwrap().outcome.clone();
    assert!(matches!(outcome, Some(InteractionOutcome::Cancelled { .. })), "the card is not left open: {outcome:?}");
    // The next message starts the agent again.
    h.send("again").await;
    let (_, error) = h.failed().await;
    assert!(error.contains("stopped in the middle of the turn"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_ids_and_methods_are_refused_and_the_turn_goes_on() {
    let h = bad_agent("unknown").await;
    // Files and extensions are not ours to serve: JSON-RPC's "method not found".
    assert!(h.reply_to("go").await.contains("fs: -32601; ext: -32601"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_no_card_can_show_says_why_and_the_agent_is_told_the_person_declined() {
    let h = bad_agent("schema").await;
    h.send("go").await;
    let thread = h.turn_end().await;
    assert!(thread.messages.last().unwrap().text().contains("action: decline"));
    let call = tool_calls(&thread).into_iter().next().unwrap();
    let interaction = call.interaction.as_ref().unwrap();
    let InteractionRequest::Unreadable { error } = &interaction.request else { panic!("{:?}", interaction.request) };
    assert!(error.contains("address"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_updates_arrives_whole() {
    let h = bad_agent("flood").await;
    assert_eq!(h.reply_to("go").await.matches('w').count(), 2000);
}

/// The pinned Gemini CLI (`make setup`'s npm ci), one JS bundle.
fn gemini_cli() -> PathBuf {
    let bundle = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("node_modules/@google/gemini-cli/bundle/gemini.js");
    assert!(bundle.exists(), "the pinned Gemini CLI is missing: run `make setup` (npm ci) first");
    bundle
}

/// A session of Gemini CLI over ACP, offline: its own HOME, the mock as the Gemini API.
async fn gemini_over_acp(script: Vec<GeminiReply>) -> (Harness, MockGemini) {
    support::session::log_to_test_output();
    let gemini = MockGemini::start(script).await;
    let home = ClaudeHome::new();
    let env = vec![
        ("HOME".to_string(), home.path().display().to_string()),
        ("TMPDIR".to_string(), home.path().join("tmp").display().to_string()),
        ("GOOGLE_GEMINI_BASE_URL".to_string(), gemini.base_url()),
        ("GEMINI_API_KEY".to_string(), "dummy".to_string()),
    ];
    let config = AcpConfig {
        name: "gemini",
        label: "gemini",
        launch: Launch {
            program: "node".into(),
            args: vec![gemini_cli().display().to_string(), "--acp".into()],
            inherit: AgentEnv::default(),
            env,
        },
        workdir: home.project(),
        groups_dir: Some(home.path().join("data/acp")),
        host: None,
    };
    (harness(config, home, MockAnthropic::start(Vec::new()).await).await, gemini)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gemini_shell_command_allowed_once_runs_and_the_next_one_denied_with_words_does_not_and_the_model_reads_them()
{
    let touch = |file: &str| {
        GeminiReply::Call(
            "run_shell_command".into(),
            json!({"command": format!("touch {file}"), "description": "Make a file"}),
        )
    };
    let (h, gemini) = gemini_over_acp(vec![
        touch("allowed.txt"),
        GeminiReply::Text("Made it.".into()),
        touch("denied.txt"),
        GeminiReply::Text("Fine.".into()),
        GeminiReply::Text("Elsewhere, then.".into()),
    ])
    .await;
    h.send("Make a file.").await;
    let pending = h.pending(1).await;
    let InteractionRequest::Approval(approval) = h.request(&pending[0]).await else { panic!("not an approval") };
    assert_eq!(approval.shows, Shows::Command { command: "touch allowed.txt".into() });
    assert_eq!(approval.suggestions.len(), 1, "Gemini's “Allow for this session”");
    h.manager.decide_approval(&h.session, &pending[0], Decision::Allow { always: None }).await.unwrap();
    let thread = h.turn_end().await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed), "{:?}", thread.turn.last_outcome);
    assert!(h.home.project().join("allowed.txt").exists());
    assert!(thread.messages.last().unwrap().text().contains("Made it."));

    h.send("Now another.").await;
    let second = wait_until("the second card", Duration::from_secs(60), || async {
        let thread = h.thread().await;
        tool_calls(&thread)
            .into_iter()
            .find(|c| c.id != pending[0] && c.interaction.as_ref().is_some_and(|i| i.is_pending()))
            .map(|c| c.id.clone())
    })
    .await;
    let message = Some("Not in this folder.".to_string());
    h.manager.decide_approval(&h.session, &second, Decision::Deny { message }).await.unwrap();
    let thread = h.turn_end().await;
    assert!(!h.home.project().join("denied.txt").exists());
    // ACP's answer carries no words: they follow in the same turn, and the model reads them.
    let last = gemini.requests().last().cloned().unwrap();
    assert!(
        last["contents"].to_string().contains("I did not allow the command `touch denied.txt`: Not in this folder."),
        "{last}"
    );
    assert!(thread.messages.last().unwrap().text().contains("Elsewhere, then."));
}

/// The Permissions choice reaches the running agent (`session/set_mode`): in “Accept edits” the
/// adapter writes a file without asking, where the session's first mode would have asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mode_switch_reaches_the_running_agent_and_edits_then_go_ahead_without_a_card() {
    let (config, home, mock) = claude_config(Vec::new()).await;
    let file = home.project().join("notes.txt");
    let write = json!({"file_path": file.display().to_string(), "content": "hello\n"});
    mock.push(Reply::text("Hello."));
    mock.push(Reply::tool_use("toolu_write", "Write", write));
    mock.push(Reply::text("Written."));
    let h = harness(config, home, mock).await;
    h.reply_to("Hi.").await;
    h.manager.set_permission_mode(&h.session, PermissionMode::AcceptEdits).await.unwrap();
    let said = h.reply_to("Write the notes.").await;
    assert!(said.contains("Written."), "{said}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hello\n");
    let thread = h.thread().await;
    assert!(tool_calls(&thread).iter().all(|call| call.interaction.is_none()), "no card was asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_models_and_commands_are_offered_and_a_chosen_model_is_the_next_turns() {
    let h = claude_over_acp(vec![Reply::text("Hello."), Reply::text("Hello again.")]).await;
    h.reply_to("Hi.").await;
    let agent = &h.agent;
    let models = agent.models().await;
    assert!(models.iter().any(|m| m.value == "haiku" && m.label.starts_with("Haiku")), "{models:?}");
    assert!(!agent.commands(None).await.is_empty(), "the agent's `/` commands");
    assert!(agent.set_model(&h.session, Some("no-such-model")).await.is_err());

    h.manager.set_model(&h.session, Some("haiku")).await.unwrap();
    h.reply_to("Again.").await;
    let last = h.mock.requests().last().cloned().unwrap();
    assert!(last["model"].as_str().unwrap().contains("haiku"), "{}", last["model"]);
}
