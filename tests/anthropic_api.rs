//! The Messages API agent (`--agent anthropic`) driven through a SessionManager against the mock
//! Messages API, which records every request body: a question parks the turn, the answer goes
//! back as the tool_result Claude Code would write, and the conversation is rebuilt from the
//! store — also by a second server on the same database. And the failures a person can act on.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use askbridge::agent::anthropic::{AnthropicAgent, AnthropicConfig};
use askbridge::interaction::{InteractionOutcome, InteractionRequest};
use askbridge::question::{Question, QuestionAnswer};
use askbridge::session::{NewSession, SessionManager, Timeouts};
use askbridge::store::Store;
use askbridge::thread::{EventBody, Role, Thread, ToolCall, TurnOutcome};
use serde_json::{Value, json};
use support::mock_anthropic::{Block as MockBlock, End, MockAnthropic, Reply};
use support::session::{AgentSession, thread_of, tool_calls, turn_ended};

const MODEL: &str = "claude-sonnet-5-5";
const SYSTEM: &str = "You help people set up their apps. Ask before you choose for them.";
const AUTH: &str = "Which auth method should we use?";
const DB: &str = "Which database?";
const JWT_ANSWERED: &str = "Your questions have been answered: \"Which auth method should we use?\"=\"JWT\". You can \
                            now continue with these answers in mind.";

fn auth_input() -> Value {
    json!({"questions": [{"question": AUTH, "header": "Auth", "multiSelect": false, "options": [
        {"label": "JWT", "description": "Stateless tokens"}, {"label": "Sessions", "description": "Server-side sessions"}]}]})
}

fn db_input() -> Value {
    json!({"questions": [{"question": DB, "header": "Database", "options": [
        {"label": "Postgres", "description": "A server"}, {"label": "SQLite", "description": "A file"}]}]})
}

/// "Let me ask." and the auth question.
fn asks_auth(id: &str) -> Reply {
    Reply::text("Let me ask.").with(MockBlock::ToolUse {
        id: id.into(),
        name: "AskUserQuestion".into(),
        input: auth_input(),
    })
}

fn jwt() -> Vec<QuestionAnswer> {
    vec![QuestionAnswer::new(AUTH, &["JWT"], None, None)]
}

fn agent(mock: &MockAnthropic) -> Arc<AnthropicAgent> {
    let mut config = AnthropicConfig::new("sk-test");
    config.base_url = mock.base_url();
    config.model = MODEL.into();
    config.max_tokens = 1024;
    config.system_prompt = Some(SYSTEM.into());
    config.retry_base = Duration::from_millis(50);
    Arc::new(AnthropicAgent::new(config).unwrap())
}

async fn harness(script: Vec<Reply>) -> AgentSession {
    harness_with(script, Timeouts::default()).await
}

async fn harness_with(script: Vec<Reply>, timeouts: Timeouts) -> AgentSession {
    support::session::log_to_test_output();
    let mock = MockAnthropic::start(script).await;
    let store = Store::open_in_memory().await.unwrap();
    let manager = SessionManager::with_timeouts(store, agent(&mock), timeouts);
    AgentSession::start(manager, mock).await
}

fn call<'a>(thread: &'a Thread, id: &str) -> &'a ToolCall {
    tool_calls(thread).into_iter().find(|c| c.id == id).unwrap_or_else(|| panic!("no tool call {id}"))
}

fn notices(thread: &Thread) -> Vec<String> {
    thread.messages.iter().filter(|m| m.role == Role::Notice).map(|m| m.text()).collect()
}

fn cached(mut block: Value) -> Value {
    block["cache_control"] = json!({"type": "ephemeral"});
    block
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

fn tool_use(id: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": "AskUserQuestion", "input": input})
}

fn tool_result(id: &str, content: &str, is_error: bool) -> Value {
    let mut block = json!({"type": "tool_result", "tool_use_id": id, "content": content});
    if is_error {
        block["is_error"] = json!(true);
    }
    block
}

/// What every request carries besides the messages.
fn assert_request_frame(request: &Value) {
    assert_eq!(request["model"], MODEL);
    assert_eq!(request["max_tokens"], 1024);
    assert_eq!(request["stream"], true);
    assert_eq!(request["system"], json!([cached(text(SYSTEM))]));
    let tools: Vec<&str> = request["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(tools, ["AskUserQuestion", "AskFollowupQuestion"]);
    assert_eq!(request["tools"][0]["input_schema"]["properties"]["questions"]["maxItems"], 4);
    assert_eq!(request["tools"][1]["input_schema"]["required"], json!(["question"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_parks_the_turn_and_the_answer_resumes_it_as_a_tool_result() {
    let h = harness(vec![asks_auth("toolu_ask"), Reply::text("JWT it is.")]).await;
    h.send("Help me set up auth.").await;
    let thread = h.turn_ended(TurnOutcome::Parked).await;
    let asked = call(&thread, "toolu_ask");
    let interaction = asked.interaction.as_ref().expect("a card");
    assert!(interaction.is_pending() && interaction.parked, "{interaction:?}");
    assert!(
        matches!(&interaction.request, InteractionRequest::Question { questions } if questions[0].question == AUTH)
    );
    assert!(thread.is_waiting());
    // While its arguments streamed, the card filled in, options included.
    let previews: Vec<Vec<Question>> = h
        .manager
        .events_after(&h.session, 0, 1000)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|event| match event.body {
            EventBody::ToolInputPreview { tool_use_id, from: 0, questions } if tool_use_id == "toolu_ask" => {
                Some(questions)
            }
            _ => None,
        })
        .collect();
    // Texts show whole, never half a word (the mock writes the keys sorted, so the question's
    // text comes last and the card shows once, options and all).
    assert!(!previews.is_empty() && previews.iter().all(|p| p[0].question == AUTH), "{previews:?}");
    let last = previews.last().unwrap();
    assert_eq!(last[0].options.iter().map(|o| o.label.as_str()).collect::<Vec<_>>(), ["JWT", "Sessions"]);
    assert!(asked.preview.is_empty(), "the preview goes once the card opens");

    let requests = h.mock.requests();
    assert_eq!(requests.len(), 1, "nothing is sent while the question waits");
    assert_request_frame(&requests[0]);
    assert_eq!(requests[0]["messages"], json!([{"role": "user", "content": [cached(text("Help me set up auth."))]}]));

    h.answer("toolu_ask", jwt()).await;
    let thread = h.turn_ended(TurnOutcome::Completed).await;
    let requests = h.mock.wait_for_requests(2, Duration::from_secs(5)).await;
    assert_eq!(requests.len(), 2);
    assert_request_frame(&requests[1]);
    assert_eq!(
        requests[1]["messages"],
        json!([
            {"role": "user", "content": [text("Help me set up auth.")]},
            {"role": "assistant", "content": [text("Let me ask."), tool_use("toolu_ask", auth_input())]},
            {"role": "user", "content": [cached(tool_result("toolu_ask", JWT_ANSWERED, false))]},
        ])
    );
    // The call shows what the model was told; the reply follows.
    assert_eq!(call(&thread, "toolu_ask").result.as_deref(), Some(JWT_ANSWERED));
    assert_eq!(thread.messages.last().unwrap().text(), "JWT it is.");
    // The header: the model, and what the session cost (the parked turn included).
    assert_eq!(thread.turn.agent_info.as_deref(), Some("Messages API · claude-sonnet-5-5"));
    let usage = thread.turn.last_usage.clone().expect("usage");
    assert!(usage.cost_usd.unwrap() > 0.0 && usage.input_tokens.unwrap() > 0, "{usage:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_question_is_an_error_result_that_says_so() {
    let h = harness(vec![asks_auth("toolu_ask"), Reply::text("I will not assume.")]).await;
    h.send("Help me set up auth.").await;
    h.turn_ended(TurnOutcome::Parked).await;
    h.manager.decline_question(&h.session, "toolu_ask", Some("not now".into())).await.unwrap();
    h.turn_ended(TurnOutcome::Completed).await;
    let declined = "The user declined to answer these questions: they chose none of the options and gave no \
                    answer. Do not assume one. Their reason: not now";
    assert_eq!(h.mock.tool_results(), vec![("toolu_ask".into(), declined.into(), true)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_question_tells_the_model_nobody_answered() {
    let timeouts = Timeouts { question: Some(Duration::from_millis(300)), ..Timeouts::default() };
    let h = harness_with(vec![asks_auth("toolu_ask"), Reply::text("Nobody there.")], timeouts).await;
    h.send("Help me set up auth.").await;
    let thread = h.turn_ended(TurnOutcome::Completed).await;
    assert_eq!(call(&thread, "toolu_ask").interaction.as_ref().unwrap().outcome, Some(InteractionOutcome::Expired));
    let expired = "The user did not answer these questions in time, so there is no answer. Do not assume one.";
    assert_eq!(h.mock.tool_results(), vec![("toolu_ask".into(), expired.into(), true)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_is_answered_through_another_server_after_a_restart() {
    let mock = MockAnthropic::start(vec![asks_auth("toolu_ask"), Reply::text("JWT it is.")]).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("askbridge.db");

    let first = SessionManager::new(Store::open(&db).await.unwrap(), agent(&mock));
    let session = first.create_session(None).await.unwrap().id;
    first.send_message(&session, "Help me set up auth.".into()).await.unwrap();
    turn_ended(&first, &session, TurnOutcome::Parked).await;
    first.shut_down().await;
    drop(first);

    // A new server on the same database, with a new agent: nothing in memory survives.
    let second = SessionManager::new(Store::open(&db).await.unwrap(), agent(&mock));
    second.recover_unfinished_turns().await.unwrap();
    let thread = thread_of(&second, &session).await;
    assert!(thread.is_waiting(), "the question still waits after the restart");
    second.answer_question(&session, "toolu_ask", jwt()).await.unwrap();
    let thread = turn_ended(&second, &session, TurnOutcome::Completed).await;
    assert_eq!(thread.messages.last().unwrap().text(), "JWT it is.");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1]["messages"],
        json!([
            {"role": "user", "content": [text("Help me set up auth.")]},
            {"role": "assistant", "content": [text("Let me ask."), tool_use("toolu_ask", auth_input())]},
            {"role": "user", "content": [cached(tool_result("toolu_ask", JWT_ANSWERED, false))]},
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_questions_in_one_message_are_answered_together() {
    let reply = asks_auth("toolu_auth").with(MockBlock::ToolUse {
        id: "toolu_db".into(),
        name: "AskUserQuestion".into(),
        input: db_input(),
    });
    let h = harness(vec![reply, Reply::text("JWT on Postgres.")]).await;
    h.send("Set it all up.").await;
    h.turn_ended(TurnOutcome::Parked).await;
    h.answer("toolu_db", vec![QuestionAnswer::new(DB, &["Postgres"], None, None)]).await;
    // One answer of two: the agent stays paused.
    let thread = h.thread().await;
    assert!(thread.is_waiting() && !thread.turn.working, "{:?}", thread.turn);
    assert_eq!(h.mock.requests().len(), 1);
    h.answer("toolu_auth", jwt()).await;
    h.turn_ended(TurnOutcome::Completed).await;
    let requests = h.mock.wait_for_requests(2, Duration::from_secs(5)).await;
    let db_answered = "Your questions have been answered: \"Which database?\"=\"Postgres\". You can now continue \
                       with these answers in mind.";
    assert_eq!(
        requests[1]["messages"][2],
        json!({"role": "user", "content": [
            tool_result("toolu_auth", JWT_ANSWERED, false),
            cached(tool_result("toolu_db", db_answered, false)),
        ]})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_that_fails_its_schema_goes_back_to_the_model_and_the_card_says_why() {
    let one_option = json!({"questions": [{"question": AUTH, "header": "Auth", "multiSelect": false,
        "options": [{"label": "JWT", "description": "Stateless tokens"}]}]});
    let h =
        harness(vec![Reply::tool_use("toolu_bad", "AskUserQuestion", one_option), Reply::text("I will go with JWT.")])
            .await;
    h.send("Help me set up auth.").await;
    let thread = h.turn_ended(TurnOutcome::Completed).await;
    let interaction = call(&thread, "toolu_bad").interaction.clone().unwrap();
    let Some(InteractionOutcome::Failed { error }) = &interaction.outcome else { panic!("{interaction:?}") };
    assert!(error.contains("fewer than 2 options") && error.contains("too_small"), "{error}");
    let results = h.mock.tool_results();
    assert_eq!(results.len(), 1);
    assert!(results[0].1.starts_with("<tool_use_error>InputValidationError: This call included"), "{results:?}");
    assert!(results[0].2, "an error result");
    assert_eq!(thread.messages.last().unwrap().text(), "I will go with JWT.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_key_is_said_plainly_and_not_retried() {
    let h = harness(vec![Reply::error(401, "authentication_error", "invalid x-api-key", None)]).await;
    h.send("Hello?").await;
    let (_, error) = h.failed().await;
    assert!(error.starts_with("The Anthropic API key was refused (401 authentication_error)"), "{error}");
    assert!(error.contains("ANTHROPIC_API_KEY"), "{error}");
    assert_eq!(h.mock.requests().len(), 1, "a bad key is not tried again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_is_retried_after_the_time_the_api_asks() {
    let h = harness(vec![Reply::error(429, "rate_limit_error", "slow down", Some(1)), Reply::text("Hello!")]).await;
    let started = std::time::Instant::now();
    h.send("Hello?").await;
    let thread = h.turn_ended(TurnOutcome::Completed).await;
    assert!(started.elapsed() >= Duration::from_secs(1), "retry-after was honoured");
    assert_eq!(notices(&thread), ["The Messages API is rate-limiting this key (429): retrying in 1 s (4 tries left)."]);
    assert_eq!(thread.messages.last().unwrap().text(), "Hello!");
    let requests = h.mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0], requests[1], "the same request again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overloaded_api_is_retried_with_back_off() {
    let h = harness(vec![
        Reply::error(529, "overloaded_error", "Overloaded", None),
        Reply::error(529, "overloaded_error", "Overloaded", None),
        Reply::text("Hello!"),
    ])
    .await;
    h.send("Hello?").await;
    let thread = h.turn_ended(TurnOutcome::Completed).await;
    assert_eq!(
        notices(&thread),
        [
            "The Messages API is overloaded (529): retrying in 1 s (4 tries left).",
            "The Messages API is overloaded (529): retrying in 1 s (3 tries left).",
        ]
    );
    assert_eq!(h.mock.requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_that_persists_fails_the_turn_saying_why() {
    let failing = || Reply::error(500, "api_error", "Internal server error", None);
    let h = harness((0..5).map(|_| failing()).collect()).await;
    h.send("Hello?").await;
    let (thread, error) = h.failed().await;
    assert!(error.starts_with("The Messages API failed (500 api_error)"), "{error}");
    assert_eq!(notices(&thread).len(), 4, "four retries announced");
    assert_eq!(h.mock.requests().len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_cut_mid_stream_is_kept_marked_and_can_be_retried() {
    let long = "Here is a long answer that will not arrive whole because the connection breaks.";
    let h = harness(vec![Reply::text(long).ending(End::CutAfter(6)), Reply::text("Sorry, again: all of it.")]).await;
    h.send("Explain.").await;
    let (thread, error) = h.failed().await;
    assert!(error.starts_with("the reply was cut off"), "{error}");
    let partial = thread.messages.iter().find(|m| m.role == Role::Assistant).unwrap().text();
    assert!(!partial.is_empty() && long.starts_with(&partial) && partial != long, "kept: {partial:?}");
    let notice = notices(&thread).pop().unwrap();
    assert!(notice.starts_with("The reply above was cut off before it was complete"), "{notice}");

    // Sending again works, and the model sees what arrived.
    h.send("Please go on.").await;
    let thread = h.turn_ended(TurnOutcome::Completed).await;
    assert_eq!(thread.messages.last().unwrap().text(), "Sorry, again: all of it.");
    let requests = h.mock.requests();
    assert_eq!(
        requests[1]["messages"],
        json!([
            {"role": "user", "content": [text("Explain.")]},
            {"role": "assistant", "content": [text(&partial)]},
            {"role": "user", "content": [cached(text("Please go on."))]},
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_tokens_inside_a_question_says_it_arrived_incomplete() {
    let h = harness(vec![asks_auth("toolu_cut").ending(End::MaxTokens)]).await;
    h.send("Help me set up auth.").await;
    let (thread, error) = h.failed().await;
    assert!(error.contains("max_tokens limit (1024)") && error.contains("--max-tokens"), "{error}");
    let interaction = call(&thread, "toolu_cut").interaction.clone().expect("a card");
    let Some(InteractionOutcome::Failed { error }) = &interaction.outcome else { panic!("{interaction:?}") };
    assert!(error.starts_with("the question arrived incomplete"), "{error}");
    assert!(!thread.is_waiting());
}

#[tokio::test]
async fn the_model_a_session_picks_is_the_model_of_its_requests_and_a_switch_takes_the_next_turn() {
    support::session::log_to_test_output();
    let mock = MockAnthropic::start(vec![Reply::text("first"), Reply::text("second"), Reply::text("third")]).await;
    let store = Store::open_in_memory().await.unwrap();
    let manager = SessionManager::new(store, agent(&mock));
    let offers = manager.agent_offers().await;
    let listed: Vec<&str> = offers[0].models.iter().map(|m| m.value.as_str()).collect();
    assert_eq!(listed, support::mock_anthropic::MODELS.map(|(id, _)| id), "GET /v1/models, every page");
    let new = NewSession { model: Some("claude-haiku-5-5"), ..NewSession::default() };
    let session = manager.create_session_with(new).await.unwrap().id;
    let run = AgentSession { manager: manager.clone(), mock, session };
    run.send("one").await;
    run.turn_ended(TurnOutcome::Completed).await;
    run.manager.set_model(&run.session, Some("claude-opus-5-5")).await.unwrap();
    // An event of the session's log: every tab hears of it, and a restart reads it back.
    assert_eq!(run.thread().await.turn.model.as_deref(), Some("claude-opus-5-5"));
    run.send("two").await;
    run.turn_ended(TurnOutcome::Completed).await;
    // Back to the server's --model.
    run.manager.set_model(&run.session, None).await.unwrap();
    run.send("three").await;
    run.turn_ended(TurnOutcome::Completed).await;
    let models: Vec<Value> = run.mock.requests().iter().map(|r| r["model"].clone()).collect();
    assert_eq!(models, [json!("claude-haiku-5-5"), json!("claude-opus-5-5"), json!(MODEL)]);
    assert_eq!(run.thread().await.turn.model, None);
}

#[tokio::test]
async fn a_model_name_that_could_be_a_flag_or_names_nothing_is_refused() {
    let mock = MockAnthropic::start(vec![]).await;
    let manager = SessionManager::new(Store::open_in_memory().await.unwrap(), agent(&mock));
    for bad in ["--dangerously-skip-permissions", "two words", "x;rm"] {
        let new = NewSession { model: Some(bad), ..NewSession::default() };
        let error = manager.create_session_with(new).await.unwrap_err();
        assert!(error.to_string().contains("is not a model name"), "{bad}: {error}");
    }
    let session = manager.create_session(None).await.unwrap().id;
    assert!(manager.set_model(&session, Some("-p")).await.is_err());
    assert_eq!(thread_of(&manager, &session).await.turn.model, None, "nothing recorded");
    let new = NewSession { agent: Some("claude"), ..NewSession::default() };
    let error = manager.create_session_with(new).await.unwrap_err().to_string();
    assert!(error.contains("does not run the agent “claude”") && error.contains("anthropic"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attached_image_and_text_file_reach_the_model_and_the_image_again_on_the_next_turn() {
    use base64::Engine;
    let h = harness(vec![Reply::text("A pixel."), Reply::text("Still a pixel.")]).await;
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR-and-the-rest".to_vec();
    let image = h.manager.store_attachment("image/png", Some("pixel.png"), &png).await.unwrap();
    let notes = h.manager.store_attachment("text/plain", Some("notes.txt"), b"line one\n").await.unwrap();
    h.manager
        .send_message_with(&h.session, "Look at these.".into(), &[image.hash.clone(), notes.hash.clone()])
        .await
        .unwrap();
    h.turn_ended(TurnOutcome::Completed).await;
    h.send("And now?").await;
    let thread = h.turn_ended(TurnOutcome::Completed).await;

    let data = base64::engine::general_purpose::STANDARD.encode(&png);
    let image_block = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}});
    let person = json!([text("Look at these."), image_block, text("File: notes.txt\n\nline one\n")]);
    let requests = h.mock.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0]["messages"][0]["content"];
    // The last block carries the cache breakpoint.
    assert_eq!(first[2]["cache_control"], json!({"type": "ephemeral"}));
    let mut first = first.clone();
    first[2].as_object_mut().unwrap().remove("cache_control");
    assert_eq!(first, person);
    // The conversation rebuilt from the thread on the next turn carries the same bytes again.
    assert_eq!(requests[1]["messages"][0]["content"], person);

    // The thread refers to the stored files and carries none of their bytes.
    let blocks = &thread.messages[0].blocks;
    let askbridge::thread::Block::Image(shown) = &blocks[1] else { panic!("{blocks:?}") };
    assert_eq!((shown.hash.as_deref(), shown.data.as_str()), (Some(image.hash.as_str()), ""));
    assert_eq!(blocks[2], askbridge::thread::Block::File(notes));
}
