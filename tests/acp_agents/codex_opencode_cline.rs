//! Codex (through its ACP adapter), OpenCode and Cline over ACP, offline (acp.md §3): each the
//! pinned npm package, its model a mock of the API it calls, in our test code (Codex and OpenCode
//! the Responses API, `support/mock_openai.rs`; Cline the Messages API), under the real session
//! manager and store. The traces they were written from are in `fixtures/acp/` (`codex_*`,
//! `opencode_bash`, `cline_v3_*`).

use super::*;
use crate::support::mock_openai::{MockOpenAi, OpenAiReply};

/// A pinned agent's program in the project's install (`make setup`'s npm ci): in
/// `node_modules/.bin`, where the server finds it too (`acp/known.rs`), but for OpenCode, whose
/// Linux build is installed alone (package.json says why).
fn pinned(path: &str) -> PathBuf {
    let program = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("node_modules").join(path);
    assert!(program.exists(), "the pinned {path} is missing: run `make setup` (npm ci) first");
    program
}

fn acp_config(
    name: &'static str,
    home: &ClaudeHome,
    program: &str,
    args: Vec<String>,
    env: Vec<(&str, String)>,
) -> AcpConfig {
    let mut all = vec![
        ("HOME".to_string(), home.path().display().to_string()),
        ("TMPDIR".to_string(), home.path().join("tmp").display().to_string()),
    ];
    all.extend(env.into_iter().map(|(name, value)| (name.to_string(), value)));
    AcpConfig {
        name,
        label: name,
        launch: Launch { program: program.into(), args, inherit: AgentEnv::default(), env: all },
        workdir: home.project(),
        groups_dir: Some(home.path().join("data/acp")),
        host: None,
    }
}

/// A session of Codex's adapter, its model provider the mock (Codex's `config.toml`), signed in
/// with a key (`authenticate {methodId: "api-key"}`).
async fn codex_over_acp(script: Vec<OpenAiReply>) -> (Harness, MockOpenAi) {
    support::session::log_to_test_output();
    let openai = MockOpenAi::start(script).await;
    let home = ClaudeHome::new();
    let codex_home = home.path().join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    let provider = format!(
        "model = \"gpt-5.5\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\nname = \"mock\"\n\
         base_url = \"{}\"\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n",
        openai.base_url()
    );
    std::fs::write(codex_home.join("config.toml"), provider).unwrap();
    let adapter = pinned(".bin/codex-acp").display().to_string();
    let env = vec![("CODEX_HOME", codex_home.display().to_string()), ("OPENAI_API_KEY", "dummy".to_string())];
    let config = acp_config("codex", &home, &adapter, Vec::new(), env);
    (harness(config, home, MockAnthropic::start(Vec::new()).await).await, openai)
}

/// A session of OpenCode, its provider the mock (`OPENCODE_CONFIG_CONTENT`), asking before a
/// command or an edit (its default runs them).
async fn opencode_over_acp(script: Vec<OpenAiReply>) -> (Harness, MockOpenAi) {
    support::session::log_to_test_output();
    let openai = MockOpenAi::start(script).await;
    let home = ClaudeHome::new();
    let config = json!({
        "model": "mock/gpt-5.5", "small_model": "mock/gpt-5.5",
        "provider": {"mock": {"npm": "@ai-sdk/openai", "name": "Mock",
                              "options": {"baseURL": openai.base_url(), "apiKey": "dummy"},
                              "models": {"gpt-5.5": {"name": "GPT 5.5"}}}},
        "permission": {"bash": "ask", "edit": "ask"},
    });
    let env = vec![
        ("OPENCODE_CONFIG_CONTENT", config.to_string()),
        ("OPENCODE_DISABLE_MODELS_FETCH", "1".to_string()),
        ("OPENCODE_DISABLE_AUTOUPDATE", "1".to_string()),
    ];
    let program = pinned("opencode-linux-x64/bin/opencode").display().to_string();
    let config = acp_config("opencode", &home, &program, vec!["acp".into()], env);
    (harness(config, home, MockAnthropic::start(Vec::new()).await).await, openai)
}

/// A session of Cline, its Anthropic provider pointed at the mock Messages API (the `baseUrl` of
/// its own settings file: it reads no `ANTHROPIC_BASE_URL`).
async fn cline_over_acp(script: Vec<Reply>) -> Harness {
    support::session::log_to_test_output();
    let mock = MockAnthropic::start(script).await;
    mock.answer_side_requests("Mock title");
    let home = ClaudeHome::new();
    let settings = home.path().join(".cline/data/settings");
    std::fs::create_dir_all(&settings).unwrap();
    let providers = json!({"version": 1, "lastUsedProvider": "anthropic", "modes": {}, "providers": {"anthropic": {
        "settings": {"provider": "anthropic", "apiKey": "dummy", "model": "claude-sonnet-4-5",
                     "baseUrl": format!("{}/v1", mock.base_url())},
        "updatedAt": "2026-12-01T00:00:00.000Z", "tokenSource": "manual"}}});
    std::fs::write(settings.join("providers.json"), providers.to_string()).unwrap();
    let env = vec![
        ("CLINE_PROVIDER", "anthropic".to_string()),
        ("CLINE_API_KEY", "dummy".to_string()),
        ("CLINE_MODEL", "claude-sonnet-4-5".to_string()),
        ("CLINE_SESSION_BACKEND_MODE", "local".to_string()),
        ("CLINE_NO_AUTO_UPDATE", "1".to_string()),
    ];
    let program = pinned(".bin/cline").display().to_string();
    harness(acp_config("cline", &home, &program, vec!["--acp".into()], env), home, mock).await
}

/// Waits for a pending card other than `answered`'s, and returns its id.
async fn next_card(h: &Harness, answered: &[String]) -> String {
    wait_until("the next card", Duration::from_secs(60), || async {
        let thread = h.thread().await;
        tool_calls(&thread)
            .into_iter()
            .find(|c| !answered.contains(&c.id) && c.interaction.as_ref().is_some_and(|i| i.is_pending()))
            .map(|c| c.id.clone())
    })
    .await
}

/// Allows the card `id` once, or denies it with `message`, and waits for the turn to end.
async fn decide(h: &Harness, id: &str, decision: Decision) -> askbridge::thread::Thread {
    h.manager.decide_approval(&h.session, id, decision).await.unwrap();
    h.turn_end().await
}

const CODEX_QUESTION: &str = "Which auth method should we use?";

/// Codex asks in Plan mode (`/plan`, its own command): its `request_user_input` is the question
/// card, one question with its options and an Other; an answer in words goes back as its
/// "None of the above" with the words in its note, and the model reads them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codexs_question_in_plan_mode_is_our_card_and_words_typed_as_other_reach_the_model() {
    let ask = json!({"questions": [{"id": "auth", "header": "Auth", "question": CODEX_QUESTION, "options": [
        {"label": "JWT (Recommended)", "description": "Stateless tokens"},
        {"label": "Sessions", "description": "Server-side sessions"}]}]});
    let (h, openai) = codex_over_acp(vec![
        OpenAiReply::Call("request_user_input".into(), ask),
        OpenAiReply::Text("OAuth it is.".into()),
    ])
    .await;
    h.send("/plan").await;
    let thread = h.turn_end().await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed), "{:?}", thread.turn.last_outcome);
    assert!(openai.requests().is_empty(), "/plan is Codex's own: no model call");

    h.send("Set up auth for me.").await;
    let pending = h.pending(1).await;
    let InteractionRequest::Question { questions } = h.request(&pending[0]).await else {
        panic!("not a question card")
    };
    assert_eq!(questions.len(), 1, "{questions:?}");
    assert_eq!((questions[0].question.as_str(), questions[0].header.as_str()), (CODEX_QUESTION, "Auth"));
    let labels: Vec<&str> = questions[0].options.iter().map(|o| o.label.as_str()).collect();
    assert_eq!(labels, ["JWT (Recommended)", "Sessions"]);

    h.answer(&pending[0], vec![QuestionAnswer::new(CODEX_QUESTION, &[], Some("OAuth, with GitHub"), None)]).await;
    let thread = h.turn_end().await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed), "{:?}", thread.turn.last_outcome);
    let outputs = openai.function_outputs();
    assert_eq!(outputs.len(), 1, "{outputs:?}");
    let output = outputs[0]["output"].as_str().unwrap();
    assert!(output.contains("OAuth, with GitHub") && output.contains("None of the above"), "{output}");
    assert!(thread.messages.last().unwrap().text().contains("OAuth it is."));
}

/// In Codex's read-only mode (AskBridge's "Ask before acting") a command asks: allowed once it
/// runs; the next, denied with words, does not, and Codex, which ends its turn at a refusal,
/// reads the words as the person's next message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_command_allowed_once_runs_and_one_denied_with_words_does_not_and_codex_reads_them() {
    let touch = |file: &str| {
        let arguments = json!({"cmd": format!("touch {file}"), "sandbox_permissions": "require_escalated",
                               "justification": "Make a file?"});
        OpenAiReply::Call("exec_command".into(), arguments)
    };
    let (h, openai) = codex_over_acp(vec![
        touch("allowed.txt"),
        OpenAiReply::Text("Made it.".into()),
        touch("denied.txt"),
        OpenAiReply::Text("Elsewhere, then.".into()),
    ])
    .await;
    h.send("Make a file.").await;
    let first = h.pending(1).await.remove(0);
    let InteractionRequest::Approval(approval) = h.request(&first).await else { panic!("not an approval") };
    assert_eq!(approval.shows, Shows::Command { command: "touch allowed.txt".into() });
    assert_eq!(approval.suggestions.len(), 1, "Codex's “don't ask again for commands that start with …”");
    let thread = decide(&h, &first, Decision::Allow { always: None }).await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed), "{:?}", thread.turn.last_outcome);
    assert!(h.home.project().join("allowed.txt").exists());

    h.send("Now another.").await;
    let second = next_card(&h, std::slice::from_ref(&first)).await;
    let thread = decide(&h, &second, Decision::Deny { message: Some("Not in this folder.".into()) }).await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed), "{:?}", thread.turn.last_outcome);
    assert!(!h.home.project().join("denied.txt").exists());
    let last = openai.requests().last().cloned().unwrap();
    assert!(last["input"].to_string().contains("Not in this folder."), "the words reach the model: {last}");
    assert!(thread.messages.last().unwrap().text().contains("Elsewhere, then."));
    let denied = tool_calls(&thread).into_iter().find(|c| c.id == second).unwrap();
    assert!(matches!(denied.interaction.as_ref().unwrap().outcome, Some(InteractionOutcome::Denied { .. })));
}

/// Codex names its own modes; the session offers them by its names, a switch reaches the
/// running agent, and one that stands for bypass is judged as bypass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codexs_own_modes_are_offered_by_its_names_and_a_switch_reaches_it() {
    let (h, _openai) = codex_over_acp(vec![OpenAiReply::Text("Hello.".into())]).await;
    h.send("Hi.").await;
    h.turn_end().await;
    let thread = h.thread().await;
    assert_eq!(thread.turn.agent_mode.as_deref(), Some("read-only"), "AskBridge's default is Codex's read-only");
    let modes = h.agent.modes().await;
    let labels: Vec<&str> = modes.iter().map(|m| m.label.as_str()).collect();
    assert_eq!(labels, ["Read-only", "Workspace access", "Auto review", "Full access"]);

    h.manager.set_agent_mode(&h.session, "workspace-write", false).await.unwrap();
    let thread = h.thread().await;
    assert_eq!(thread.turn.agent_mode.as_deref(), Some("workspace-write"));
    assert_eq!(thread.turn.permission_mode, Some(PermissionMode::AcceptEdits));
    let refused = h.manager.set_agent_mode(&h.session, "agent-full-access", false).await.unwrap_err();
    assert!(refused.to_string().contains("confirmation"), "{refused}");
    let unknown = h.manager.set_agent_mode(&h.session, "yolo", true).await.unwrap_err();
    assert!(unknown.to_string().contains("it offers Read-only"), "{unknown}");
}

/// OpenCode, asked to ask before commands: allowed once runs, the next rejected does not (and
/// OpenCode ends its turn there, the call failed with its words). Its modes ("build", "plan") are its config option of category `mode`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opencode_command_allowed_once_runs_and_one_denied_does_not() {
    let touch = |file: &str| {
        OpenAiReply::Call("bash".into(), json!({"command": format!("touch {file}"), "description": "Make a file"}))
    };
    let (h, openai) =
        opencode_over_acp(vec![touch("allowed.txt"), OpenAiReply::Text("Made it.".into()), touch("denied.txt")]).await;
    h.send("Make a file.").await;
    let first = h.pending(1).await.remove(0);
    let InteractionRequest::Approval(approval) = h.request(&first).await else { panic!("not an approval") };
    assert_eq!(approval.shows, Shows::Command { command: "touch allowed.txt".into() });
    let thread = decide(&h, &first, Decision::Allow { always: None }).await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed), "{:?}", thread.turn.last_outcome);
    assert!(h.home.project().join("allowed.txt").exists());
    assert!(thread.messages.last().unwrap().text().contains("Made it."));

    h.send("Now another.").await;
    let second = next_card(&h, std::slice::from_ref(&first)).await;
    let asked = openai.requests().len();
    let thread = decide(&h, &second, Decision::Deny { message: None }).await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed), "{:?}", thread.turn.last_outcome);
    assert!(!h.home.project().join("denied.txt").exists());
    // OpenCode ends its turn at a refusal, the call failed with its words: the model is not asked.
    assert_eq!(openai.requests().len(), asked, "no model call after the refusal");
    let denied = tool_calls(&thread).into_iter().find(|c| c.id == second).unwrap();
    assert!(matches!(denied.interaction.as_ref().unwrap().outcome, Some(InteractionOutcome::Denied { .. })));
    assert!(denied.result.as_deref().is_some_and(|o| o.contains("rejected")), "{:?}", denied.result);
    let modes: Vec<String> = h.agent.modes().await.into_iter().map(|m| m.id).collect();
    assert_eq!(modes, ["build", "plan"]);
}

/// Cline asks before every tool: a command allowed once runs, the next rejected does not, and
/// the model reads that the person rejected it. Its modes are its own: Plan and Act.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cline_command_allowed_once_runs_and_one_denied_does_not() {
    let touch =
        |id: &str, file: &str| Reply::tool_use(id, "run_commands", json!({"commands": [format!("touch {file}")]}));
    let h = cline_over_acp(vec![
        touch("toolu_yes", "allowed.txt"),
        Reply::text("Made it."),
        touch("toolu_no", "denied.txt").when("Now another"),
        Reply::text("Fine.").when("rejected"),
    ])
    .await;
    h.send("Make a file.").await;
    let first = h.pending(1).await.remove(0);
    let InteractionRequest::Approval(approval) = h.request(&first).await else { panic!("not an approval") };
    assert_eq!(approval.shows, Shows::Command { command: "touch allowed.txt".into() });
    let thread = decide(&h, &first, Decision::Allow { always: None }).await;
    assert_eq!(thread.turn.last_outcome, Some(TurnOutcome::Completed), "{:?}", thread.turn.last_outcome);
    assert!(h.home.project().join("allowed.txt").exists());

    h.send("Now another one.").await;
    let second = next_card(&h, std::slice::from_ref(&first)).await;
    let thread = decide(&h, &second, Decision::Deny { message: None }).await;
    assert!(!h.home.project().join("denied.txt").exists());
    let saw = h.model_saw();
    assert!(saw.iter().any(|(id, text, _)| id == "toolu_no" && text.contains("rejected")), "{saw:?}");
    assert!(thread.messages.last().unwrap().text().contains("Fine."));
    let labels: Vec<String> = h.agent.modes().await.into_iter().map(|m| m.label).collect();
    assert_eq!(labels, ["Plan", "Act"]);
    assert_eq!(h.thread().await.turn.agent_mode.as_deref(), Some("act"));
}
