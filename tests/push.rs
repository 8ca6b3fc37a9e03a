//! Web Push and webhooks when the agent asks (issue 23), against a local push service that plays
//! the browser vendor (`support/push_service.rs`: every push's VAPID token checked and its
//! payload decrypted by npm `http_ece`, not by the project's code) and a local webhook receiver.
//! The scripted agent asks real questions through a real session manager and store; the notifier
//! is fed the sessions' events through the seam the server uses (`observe_events`).

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use askbridge::agent::AgentBackend;
use askbridge::agent::acp::AcpAgent;
use askbridge::agent::scripted::{Scenario, ScriptedAgent};
use askbridge::approval::Decision;
use askbridge::error::AppError;
use askbridge::notify::notifier::{NotifyConfig, Report, Reported};
use askbridge::notify::outbound::PushHosts;
use askbridge::notify::webhook::WebhookSender;
use askbridge::notify::{Detail, Notifier, RetryPolicy, Subscription, VapidKey, Webhook};
use askbridge::question::QuestionAnswer;
use askbridge::session::{SessionManager, Timeouts};
use askbridge::store::{NoticeKind, PushSubscriptionRow, Store};
use askbridge::testing::postgres::TestPostgres;
use askbridge::testing::wait_until;
use askbridge::thread::{Block, EventBody};
use futures::FutureExt;
use serde::Deserialize;
use serde_json::{Value, json};
use support::push_service::{Answer, BrowserKeys, PushService, WebhookReceiver};
use support::server::{ASK_AND_QUOTE, LABELS, QUESTION};
use tokio::sync::broadcast;

const WAIT: Duration = Duration::from_secs(30);

const PERMISSION: &str = r#"
name = "permission"
pace = 2000
[[turn]]
[[turn.step]]
tool = "Bash"
input = { command = "cargo test", description = "Run the tests" }
approve = true
output = "ok"
[[turn.step]]
say = "done"
"#;

/// Quick tries for tests: the grace period and the waits between tries in milliseconds.
fn config(grace_ms: u64) -> NotifyConfig {
    let mut config = NotifyConfig::new("https://askbridge.example.com");
    config.grace = Duration::from_millis(grace_ms);
    let quick = RetryPolicy {
        attempts: 4,
        first_delay: Duration::from_millis(100),
        max_delay: Duration::from_secs(2),
        timeout: Duration::from_secs(5),
    };
    config.push_retry = quick;
    config.webhook_retry = quick;
    // The test's push service, on loopback, as an operator would add one (--push-host).
    config.push_hosts = PushHosts::with(["127.0.0.1"]);
    config
}

/// One server: a session manager whose scripted agent plays `scenario`, and its notifier fed
/// every event, as `server::serve` wires them.
struct Server {
    manager: Arc<SessionManager>,
    notifier: Notifier,
}

impl Server {
    fn start(store: &Store, scenario: &str, timeouts: Timeouts, config: NotifyConfig, vapid: VapidKey) -> Self {
        let agent = Arc::new(ScriptedAgent::new(Scenario::parse(scenario, "test").unwrap()));
        Self::with_agent(store, agent, timeouts, config, vapid)
    }

    fn with_agent(
        store: &Store,
        agent: Arc<dyn AgentBackend>,
        timeouts: Timeouts,
        config: NotifyConfig,
        vapid: VapidKey,
    ) -> Self {
        let manager = SessionManager::with_timeouts(store.clone(), agent, timeouts);
        let notifier = Notifier::new(store.clone(), vapid, config);
        let fed = notifier.clone();
        manager.observe_events(Arc::new(move |session, event| fed.observe(session, &event.body)));
        Self { manager, notifier }
    }

    async fn subscribe(&self, browser: &BrowserKeys) {
        let subscription = Subscription::parse(&browser.endpoint, &browser.p256dh, &browser.auth).unwrap();
        self.notifier.subscribe(&subscription, Some("Mozilla/5.0 (test)")).await.unwrap();
    }

    /// Starts a session and sends a message; returns the session and the tool_use_id of the
    /// interaction the agent opens.
    async fn ask(&self) -> (String, String) {
        let session = self.manager.create_session(None).await.unwrap().id;
        self.manager.send_message(&session, "go".into()).await.unwrap();
        let tool_use_id = self.opened(&session).await;
        (session, tool_use_id)
    }

    async fn opened(&self, session: &str) -> String {
        wait_until("the agent to ask", WAIT, || async {
            let (_, thread) = self.manager.snapshot(session).await.unwrap();
            thread.messages.iter().flat_map(|message| &message.blocks).find_map(|block| match block {
                Block::ToolCall(call) if call.interaction.as_ref().is_some_and(|i| i.is_pending()) => {
                    Some(call.id.clone())
                }
                _ => None,
            })
        })
        .await
    }
}

fn timeouts() -> Timeouts {
    Timeouts { park_after: Some(Duration::from_secs(600)), ..Timeouts::default() }
}

async fn push_service() -> (PushService, VapidKey) {
    let service = PushService::start().await;
    let vapid = VapidKey::generate();
    service.expect_server_key(&vapid.public_key());
    (service, vapid)
}

/// The next report about `notice` of `tool_use_id`.
async fn report(reports: &mut broadcast::Receiver<Report>, tool_use_id: &str, notice: NoticeKind) -> Reported {
    tokio::time::timeout(WAIT, async {
        loop {
            let report = reports.recv().await.unwrap();
            if report.tool_use_id == tool_use_id && report.notice == notice {
                return report.what;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no report of {notice:?} for {tool_use_id}"))
}

/// What an action's body holds, read as the server function reads it.
#[derive(Deserialize)]
struct AnswerBody {
    session: String,
    tool_use_id: String,
    answers: Vec<QuestionAnswer>,
}

#[derive(Deserialize)]
struct DecideBody {
    session: String,
    tool_use_id: String,
    decision: Decision,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_is_pushed_once_signed_and_encrypted_and_its_action_answers_it() {
    let (service, vapid) = push_service().await;
    let store = Store::open_in_memory().await.unwrap();
    let server = Server::start(&store, ASK_AND_QUOTE, timeouts(), config(200), vapid);
    let mut reports = server.notifier.reports();
    server.subscribe(&service.browser("phone").await).await;

    let (session, tool_use_id) = server.ask().await;
    let pushes = service.wait_for(1, "the question's push").await;
    let push = &pushes[0];
    let payload = push.payload();
    assert_eq!(payload["type"], "ask");
    assert_eq!(payload["event"], "opened");
    assert_eq!(payload["kind"], "question");
    assert_eq!(payload["session"], session.as_str());
    assert_eq!(payload["tool_use_id"], tool_use_id.as_str());
    assert_eq!(payload["question"], QUESTION);
    assert_eq!(payload["options"], json!(LABELS));
    assert_eq!(payload["url"], format!("/s/{session}#{tool_use_id}"));
    let titles: Vec<&str> =
        payload["actions"].as_array().unwrap().iter().map(|a| a["title"].as_str().unwrap()).collect();
    assert_eq!(titles, LABELS);
    // RFC 8030: kept a day for an offline phone, urgent, and replaceable by its "answered".
    assert_eq!(push.ttl.as_deref(), Some("86400"));
    assert_eq!(push.urgency.as_deref(), Some("high"));
    assert_eq!(push.topic.as_deref(), payload["tag"].as_str());
    assert_eq!(push.claims()["aud"], service.base.as_str());
    assert_eq!(push.claims()["sub"], "https://askbridge.example.com");
    assert_eq!(report(&mut reports, &tool_use_id, NoticeKind::PushOpened).await, Reported::Sent { to: 1 });

    // The agent asking again (a resumed turn) pushes nothing more.
    let again = EventBody::InteractionOpened {
        tool_use_id: tool_use_id.clone(),
        request: store.pending_request(&session, &tool_use_id).await.unwrap().unwrap(),
        expires_at_ms: None,
    };
    server.notifier.observe(&session, &again);
    assert_eq!(report(&mut reports, &tool_use_id, NoticeKind::PushOpened).await, Reported::NotClaimed);

    // The notification's first action answers through the same path as the card.
    let action: AnswerBody = serde_json::from_value(payload["actions"][0]["body"].clone()).unwrap();
    assert_eq!(payload["actions"][0]["path"], "/api/submit_answers");
    server.manager.answer_question(&action.session, &action.tool_use_id, action.answers).await.unwrap();
    wait_until("the agent to get the answer", WAIT, || async {
        let (_, thread) = server.manager.snapshot(&session).await.unwrap();
        thread
            .messages
            .iter()
            .any(|m| m.text().contains(&format!("got \"{QUESTION}\"=\"{}\"", LABELS[0])))
            .then_some(())
    })
    .await;

    // Answered: one more push, which closes the notification; the question was pushed once.
    let pushes = service.wait_for(2, "the closing push").await;
    assert_eq!(pushes[1].payload(), &json!({"type": "close", "tag": payload["tag"]}));
    assert_eq!(pushes[1].topic, push.topic);
    assert_eq!(pushes[1].urgency.as_deref(), Some("normal"));
    assert_eq!(report(&mut reports, &tool_use_id, NoticeKind::PushClosed).await, Reported::Sent { to: 1 });
    assert_eq!(service.received().iter().filter(|p| p.payload()["type"] == "ask").count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_whose_push_service_answers_410_is_unsubscribed() {
    let (service, vapid) = push_service().await;
    let store = Store::open_in_memory().await.unwrap();
    let server = Server::start(&store, ASK_AND_QUOTE, timeouts(), config(100), vapid);
    server.subscribe(&service.browser("old-laptop").await).await;
    server.subscribe(&service.browser("phone").await).await;
    service.answer("old-laptop", &[Answer::Status(410)]);
    assert_eq!(store.push_subscriptions().await.unwrap().len(), 2);

    server.ask().await;
    service.wait_for(2, "a push to each browser").await;
    let left = wait_until("the gone subscription to be forgotten", WAIT, || async {
        let rows = store.push_subscriptions().await.unwrap();
        (rows.len() == 1).then_some(rows)
    })
    .await;
    assert!(left[0].endpoint.ends_with("/push/phone"), "{left:?}");
    assert_eq!(left[0].user_agent.as_deref(), Some("Mozilla/5.0 (test)"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_pushed_for_a_question_answered_while_a_tab_shows_it() {
    let (service, vapid) = push_service().await;
    let store = Store::open_in_memory().await.unwrap();
    let server = Server::start(&store, ASK_AND_QUOTE, timeouts(), config(300), vapid);
    let mut reports = server.notifier.reports();
    server.subscribe(&service.browser("phone").await).await;

    let session = server.manager.create_session(None).await.unwrap().id;
    server.notifier.tab_visibility("tab-1", Some(&session), true);
    server.manager.send_message(&session, "go".into()).await.unwrap();
    let tool_use_id = server.opened(&session).await;
    assert_eq!(report(&mut reports, &tool_use_id, NoticeKind::PushOpened).await, Reported::Seen);
    server
        .manager
        .answer_question(&session, &tool_use_id, vec![QuestionAnswer::new(QUESTION, &[LABELS[1]], None, None)])
        .await
        .unwrap();
    // No notification was shown: none to close.
    assert_eq!(report(&mut reports, &tool_use_id, NoticeKind::PushClosed).await, Reported::NotClaimed);
    assert!(service.received().is_empty(), "{:?}", service.received());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_answered_within_the_grace_period_is_not_pushed() {
    let (service, vapid) = push_service().await;
    let store = Store::open_in_memory().await.unwrap();
    let server = Server::start(&store, ASK_AND_QUOTE, timeouts(), config(1_500), vapid);
    let mut reports = server.notifier.reports();
    server.subscribe(&service.browser("phone").await).await;
    let (session, tool_use_id) = server.ask().await;
    server
        .manager
        .answer_question(&session, &tool_use_id, vec![QuestionAnswer::new(QUESTION, &[LABELS[0]], None, None)])
        .await
        .unwrap();
    assert_eq!(report(&mut reports, &tool_use_id, NoticeKind::PushOpened).await, Reported::Closed);
    assert!(service.received().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_service_failing_with_500_is_tried_again_with_growing_waits_until_it_takes_the_push() {
    let (service, vapid) = push_service().await;
    let store = Store::open_in_memory().await.unwrap();
    let server = Server::start(&store, ASK_AND_QUOTE, timeouts(), config(100), vapid);
    server.subscribe(&service.browser("phone").await).await;
    service.answer("phone", &[Answer::Status(500), Answer::Status(503)]);
    server.ask().await;
    let pushes = service.wait_for(3, "two failures and a success").await;
    let answers: Vec<Answer> = pushes.iter().map(|p| p.answer).collect();
    assert_eq!(answers, [Answer::Status(500), Answer::Status(503), Answer::Status(201)]);
    for push in &pushes {
        assert_eq!(push.payload()["question"], QUESTION, "every try is a valid push");
    }
    let (first, second) = (pushes[1].at - pushes[0].at, pushes[2].at - pushes[1].at);
    assert!(first >= Duration::from_millis(100), "{first:?}");
    assert!(second >= Duration::from_millis(200), "the wait doubles: {first:?} then {second:?}");
    assert_eq!(store.push_subscriptions().await.unwrap().len(), 1, "a failing service is no reason to unsubscribe");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_that_parks_while_its_first_push_is_tried_again_is_pushed_parked_only_after_it() {
    let (service, vapid) = push_service().await;
    let store = Store::open_in_memory().await.unwrap();
    let parks = Timeouts { park_after: Some(Duration::from_millis(400)), ..Timeouts::default() };
    let mut config = config(100);
    // The first try fails, and the next one comes a second later: after the park.
    config.push_retry.first_delay = Duration::from_secs(1);
    let server = Server::start(&store, PERMISSION, parks, config, vapid);
    server.subscribe(&service.browser("phone").await).await;
    service.answer("phone", &[Answer::Status(500)]);
    server.ask().await;
    let pushes = service.wait_for(3, "the request's push, tried twice, then its park's").await;
    let events: Vec<_> = pushes.iter().map(|push| (push.payload()["event"].clone(), push.answer)).collect();
    assert_eq!(
        events,
        [
            (json!("opened"), Answer::Status(500)),
            (json!("opened"), Answer::Status(201)),
            (json!("parked"), Answer::Status(201))
        ],
        "a phone shows the last push of a tag: the park's must come last"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_question_is_pushed_once_more_and_a_permission_is_allowed_from_the_notification() {
    let (service, vapid) = push_service().await;
    let store = Store::open_in_memory().await.unwrap();
    let parks = Timeouts { park_after: Some(Duration::from_millis(400)), ..Timeouts::default() };
    let server = Server::start(&store, PERMISSION, parks, config(100), vapid);
    server.subscribe(&service.browser("phone").await).await;
    let (session, tool_use_id) = server.ask().await;
    let pushes = service.wait_for(2, "the request's push, then its park's").await;
    let (opened, parked) = (pushes[0].payload(), pushes[1].payload());
    assert_eq!(opened["kind"], "permission");
    assert_eq!(opened["question"], "Run `cargo test`?");
    assert_eq!(opened["options"], json!(["Allow once", "Deny"]));
    assert_eq!(parked["event"], "parked");
    assert_eq!(parked["tag"], opened["tag"]);
    assert!(parked["title"].as_str().unwrap().starts_with("Still waiting"), "{parked}");

    let allow = &parked["actions"][0];
    assert_eq!((allow["title"].as_str(), allow["path"].as_str()), (Some("Allow once"), Some("/api/decide_approval")));
    let body: DecideBody = serde_json::from_value(allow["body"].clone()).unwrap();
    assert_eq!((body.session.as_str(), body.tool_use_id.as_str()), (session.as_str(), tool_use_id.as_str()));
    server.manager.decide_approval(&body.session, &body.tool_use_id, body.decision).await.unwrap();
    let pushes = service.wait_for(3, "the closing push").await;
    assert_eq!(pushes[2].payload()["type"], "close");
    wait_until("the resumed agent to finish", WAIT, || async {
        let (_, thread) = server.manager.snapshot(&session).await.unwrap();
        thread.messages.iter().any(|m| m.text().contains("done")).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_postgres_send_one_push_per_question() {
    let database = TestPostgres::shared().database().await;
    let service = PushService::start().await;
    let (store_a, store_b) = (Store::connect(&database).await.unwrap(), Store::connect(&database).await.unwrap());
    // Each server has a data folder (and a key file) of its own; the team's key is the first
    // one kept in the database, whichever server signs a push.
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let vapid_a = VapidKey::of_team(&store_a, dir_a.path()).await.unwrap();
    let vapid_b = VapidKey::of_team(&store_b, dir_b.path()).await.unwrap();
    assert_eq!(vapid_a.public_key(), vapid_b.public_key(), "one key for the team");
    let own_b = VapidKey::load_or_create(dir_b.path()).unwrap();
    assert_ne!(own_b.public_key(), vapid_b.public_key(), "B's own file holds another key, which it does not use");
    service.expect_server_key(&vapid_a.public_key());
    let a = Server::start(&store_a, ASK_AND_QUOTE, timeouts(), config(300), vapid_a);
    let b = Server::start(&store_b, ASK_AND_QUOTE, timeouts(), config(300), vapid_b);
    a.manager.join_team().await.unwrap();
    b.manager.join_team().await.unwrap();
    let (mut reports_a, mut reports_b) = (a.notifier.reports(), b.notifier.reports());
    a.subscribe(&service.browser("phone").await).await;

    // The agent runs on A; B follows the session (a tab there), so both hear the question.
    let session = a.manager.create_session(None).await.unwrap().id;
    b.manager.snapshot(&session).await.unwrap();
    a.manager.send_message(&session, "go".into()).await.unwrap();
    let tool_use_id = a.opened(&session).await;
    let seen = [
        report(&mut reports_a, &tool_use_id, NoticeKind::PushOpened).await,
        report(&mut reports_b, &tool_use_id, NoticeKind::PushOpened).await,
    ];
    assert!(seen.contains(&Reported::Sent { to: 1 }) && seen.contains(&Reported::NotClaimed), "{seen:?}");
    service.wait_for(1, "the question's push").await;

    a.manager
        .answer_question(&session, &tool_use_id, vec![QuestionAnswer::new(QUESTION, &[LABELS[0]], None, None)])
        .await
        .unwrap();
    let closed = [
        report(&mut reports_a, &tool_use_id, NoticeKind::PushClosed).await,
        report(&mut reports_b, &tool_use_id, NoticeKind::PushClosed).await,
    ];
    assert!(closed.contains(&Reported::Sent { to: 1 }) && closed.contains(&Reported::NotClaimed), "{closed:?}");
    let pushes = service.wait_for(2, "the closing push").await;
    let kinds: Vec<&str> = pushes.iter().map(|p| p.payload()["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["ask", "close"], "one push per question, one to close it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_get_the_generic_ntfy_and_slack_shapes_when_a_question_opens_and_parks() {
    let receiver = WebhookReceiver::start().await;
    let store = Store::open_in_memory().await.unwrap();
    let mut config = config(100);
    config.webhooks = vec![
        Webhook::parse(&format!("{}/hooks/askbridge", receiver.base)).unwrap(),
        Webhook::parse(&format!("ntfy+{}/askbridge-me", receiver.base)).unwrap(),
        Webhook::parse(&format!("slack+{}/services/T0/B0/XYZ", receiver.base)).unwrap(),
    ];
    let parks = Timeouts { park_after: Some(Duration::from_millis(500)), ..Timeouts::default() };
    let server = Server::start(&store, ASK_AND_QUOTE, parks, config, VapidKey::generate());
    let (session, tool_use_id) = server.ask().await;
    let hooks = receiver.wait_for(6, "three webhooks for the question and three for its park").await;
    let url = format!("https://askbridge.example.com/s/{session}#{tool_use_id}");
    let generic: Vec<&Value> = hooks.iter().filter(|h| h.path == "/hooks/askbridge").map(|h| &h.body).collect();
    assert_eq!(
        generic[0],
        &json!({"event": "opened", "session": session, "title": "go", "folder": null, "kind": "question",
                "question": QUESTION, "options": LABELS, "url": url})
    );
    assert_eq!(generic[1]["event"], "parked");
    let ntfy: Vec<&Value> = hooks.iter().filter(|h| h.path == "/").map(|h| &h.body).collect();
    assert_eq!(ntfy[0]["topic"], "askbridge-me");
    assert_eq!(ntfy[0]["click"], url.as_str());
    assert_eq!(ntfy[0]["message"], format!("{QUESTION}\n{}", LABELS.join(" · ")));
    let slack: Vec<&Value> = hooks.iter().filter(|h| h.path == "/services/T0/B0/XYZ").map(|h| &h.body).collect();
    assert!(slack[0]["text"].as_str().unwrap().ends_with(&format!("<{url}|Open the card>")), "{}", slack[0]);
    assert!(hooks.iter().all(|h| h.content_type.as_deref() == Some("application/json")));
    assert_eq!(hooks.len(), 6, "{hooks:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_gets_nothing_for_a_question_a_tab_shows_and_one_post_for_one_nobody_sees_or_answers_in_time() {
    let receiver = WebhookReceiver::start().await;
    let store = Store::open_in_memory().await.unwrap();
    let mut config = config(300);
    config.webhooks = vec![Webhook::parse(&format!("{}/hook", receiver.base)).unwrap()];
    let server = Server::start(&store, ASK_AND_QUOTE, timeouts(), config, VapidKey::generate());
    let mut reports = server.notifier.reports();

    // On screen: nothing is posted, for this server or any other (claimed as seen).
    let shown = server.manager.create_session(None).await.unwrap().id;
    server.notifier.tab_visibility("tab-1", Some(&shown), true);
    server.manager.send_message(&shown, "go".into()).await.unwrap();
    let seen = server.opened(&shown).await;
    assert_eq!(report(&mut reports, &seen, NoticeKind::WebhookOpened).await, Reported::Seen);

    // Answered within the grace period: nothing either.
    let (session, answered) = server.ask().await;
    server
        .manager
        .answer_question(&session, &answered, vec![QuestionAnswer::new(QUESTION, &[LABELS[0]], None, None)])
        .await
        .unwrap();
    assert_eq!(report(&mut reports, &answered, NoticeKind::WebhookOpened).await, Reported::Closed);

    // Nobody looking: one post, once the grace period is over.
    server.notifier.tab_visibility("tab-1", None, true);
    let (_, unseen) = server.ask().await;
    assert_eq!(report(&mut reports, &unseen, NoticeKind::WebhookOpened).await, Reported::Sent { to: 1 });
    let hooks = receiver.wait_for(1, "the post for the question nobody sees").await;
    assert_eq!(hooks.len(), 1, "{hooks:#?}");
    assert_eq!(hooks[0].body["event"], "opened");
    assert!(hooks[0].body["url"].as_str().unwrap().ends_with(&format!("#{unseen}")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_webhook_is_tried_again_and_a_hanging_one_is_given_up_without_holding_the_agent() {
    let receiver = WebhookReceiver::start().await;
    receiver.answer(&[Answer::Status(503), Answer::Status(500)]);
    let store = Store::open_in_memory().await.unwrap();
    let mut config = config(100);
    config.webhooks = vec![Webhook::parse(&format!("{}/hook", receiver.base)).unwrap()];
    let server = Server::start(&store, ASK_AND_QUOTE, timeouts(), config, VapidKey::generate());
    let (session, tool_use_id) = server.ask().await;
    let hooks = receiver.wait_for(3, "two failures and a success").await;
    assert!(hooks.iter().all(|h| h.body["event"] == "opened"));
    assert!(hooks[1].at - hooks[0].at >= Duration::from_millis(100));

    // A receiver that never answers: each try ends at its timeout, the tries are bounded, and
    // the agent goes on meanwhile.
    receiver.answer(&[Answer::Hang, Answer::Hang, Answer::Hang, Answer::Hang]);
    let hook = Webhook::parse(&format!("{}/hook", receiver.base)).unwrap();
    let policy = RetryPolicy {
        attempts: 2,
        first_delay: Duration::from_millis(50),
        max_delay: Duration::from_millis(50),
        timeout: Duration::from_millis(300),
    };
    let sender = WebhookSender::new(policy);
    let started = std::time::Instant::now();
    let body = json!({"event": "opened"});
    let url = reqwest::Url::parse(&format!("{}/hook", receiver.base)).unwrap();
    let (taken, answered) = tokio::join!(
        tokio::time::timeout(Duration::from_secs(5), sender.send(&hook, url, &body)),
        server.manager.answer_question(
            &session,
            &tool_use_id,
            vec![QuestionAnswer::new(QUESTION, &[LABELS[1]], None, None)]
        ),
    );
    assert_eq!(taken, Ok(false), "given up");
    answered.unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "two tries of 300 ms and a wait: {took:?}");
    wait_until("the agent to go on", WAIT, || async {
        let (_, thread) = server.manager.snapshot(&session).await.unwrap();
        thread
            .messages
            .iter()
            .any(|m| m.text().contains(&format!("got \"{QUESTION}\"=\"{}\"", LABELS[1])))
            .then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minimal_detail_pushes_only_that_a_session_needs_you() {
    let (service, vapid) = push_service().await;
    let store = Store::open_in_memory().await.unwrap();
    let mut config = config(100);
    config.detail = Detail::Minimal;
    let server = Server::start(&store, ASK_AND_QUOTE, timeouts(), config, vapid);
    server.subscribe(&service.browser("phone").await).await;
    let (session, tool_use_id) = server.ask().await;
    let pushes = service.wait_for(1, "the push").await;
    let payload = pushes[0].payload();
    assert_eq!(payload["body"], "A session needs you");
    assert_eq!(payload["url"], format!("/s/{session}#{tool_use_id}"));
    assert!(!payload.to_string().contains(QUESTION), "{payload}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_test_push_service_refuses_a_push_signed_with_another_key() {
    // The checks above are the vendor's, not ours: a push whose k= is not the key the browser
    // subscribed with is refused, as a real push service refuses it.
    let (service, vapid) = push_service().await;
    service.expect_server_key(&VapidKey::generate().public_key());
    let store = Store::open_in_memory().await.unwrap();
    let server = Server::start(&store, ASK_AND_QUOTE, timeouts(), config(100), vapid);
    server.subscribe(&service.browser("phone").await).await;
    server.ask().await;
    let pushes = service.wait_for(1, "the push").await;
    let why = pushes[0].checked.as_ref().unwrap_err();
    assert!(why.contains("k= is not the key"), "{why}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_the_server_a_browser_subscribes_is_told_of_a_question_and_unsubscribes() {
    let dir = tempfile::tempdir().unwrap();
    let service = PushService::start().await;
    let scenario = support::server::ask_and_quote_in(dir.path());
    let flags = [
        "--agent",
        "scripted",
        "--scenario",
        &scenario,
        "--notify-after",
        "100ms",
        "--public-url",
        "https://ab.example.com",
        // The test's push service, on loopback.
        "--push-host",
        "127.0.0.1",
    ];
    let server = support::server::Server::start(dir.path(), &flags).await;
    let api = server.api();

    // The page subscribes with the server's key, made when first asked for and kept in the data
    // folder, for its owner only.
    assert!(!server.data.join(askbridge::notify::vapid::KEY_FILE).exists());
    let key = api.call("push_key", json!({})).await.unwrap();
    let key = key.as_str().unwrap();
    assert_eq!(VapidKey::load_or_create(&server.data).unwrap().public_key(), key);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let file = server.data.join(askbridge::notify::vapid::KEY_FILE);
        assert_eq!(std::fs::metadata(file).unwrap().permissions().mode() & 0o777, 0o600);
    }
    service.expect_server_key(key);
    let phone = service.browser("phone").await;
    let to_json = |endpoint: &str| json!({"endpoint": endpoint, "expirationTime": null, "keys": {"p256dh": phone.p256dh, "auth": phone.auth}});
    api.call("push_subscribe", to_json(&phone.endpoint)).await.unwrap();
    for refused in ["http://push.example.com/x", "not a url", "https://169.254.169.254/latest"] {
        let error = api.call("push_subscribe", to_json(refused)).await.unwrap_err();
        assert!(matches!(error, askbridge::error::AppError::BadRequest { .. }), "{refused}: {error:?}");
    }
    let bad_key = json!({"endpoint": phone.endpoint, "keys": {"p256dh": "AAAA", "auth": phone.auth}});
    assert!(api.call("push_subscribe", bad_key).await.is_err());

    let session = api.call("create_session", json!({})).await.unwrap()["id"].as_str().unwrap().to_string();
    api.call("tab_visibility", json!({"tab": "tab-1", "session": session, "visible": false})).await.unwrap();
    api.send(&session, "go").await.unwrap();
    let pushes = service.wait_for(1, "the question's push").await;
    assert_eq!(pushes[0].payload()["question"], QUESTION);
    assert_eq!(pushes[0].payload()["session"], session.as_str());
    assert_eq!(pushes[0].claims()["sub"], "https://ab.example.com");

    api.call("push_unsubscribe", json!({"endpoint": phone.endpoint})).await.unwrap();
    let data = server.stop().await;
    let store = Store::open(&data.join("askbridge.db")).await.unwrap();
    assert!(store.push_subscriptions().await.unwrap().is_empty());
}

#[tokio::test]
async fn alone_on_sqlite_a_server_signs_with_its_own_key_file() {
    let store = Store::open_in_memory().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let own = VapidKey::load_or_create(dir.path()).unwrap();
    assert_eq!(VapidKey::of_team(&store, dir.path()).await.unwrap().public_key(), own.public_key());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_to_internal_addresses_are_refused_and_nothing_reaches_them() {
    // What a subscription could point the server at: a listener on this machine's loopback.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (service, vapid) = push_service().await;
    let keys = service.browser("any").await;
    let store = Store::open_in_memory().await.unwrap();
    let mut defaults = config(100);
    defaults.push_hosts = PushHosts::default();
    let server = Server::start(&store, ASK_AND_QUOTE, timeouts(), defaults, vapid);
    let internal = [
        format!("http://127.0.0.1:{port}/push"),
        format!("http://2130706433:{port}/push"),
        format!("http://localhost:{port}/push"),
        format!("https://127.0.0.1:{port}/push"),
        "https://169.254.169.254/latest/meta-data".to_string(),
        "https://10.0.0.1/push".to_string(),
        "https://192.168.1.1/push".to_string(),
        "https://[fd00::1]/push".to_string(),
        "https://internal.example.com/push".to_string(),
    ];
    for endpoint in &internal {
        let subscription = Subscription::parse(endpoint, &keys.p256dh, &keys.auth).unwrap();
        let refused = server.notifier.subscribe(&subscription, None).await;
        assert!(matches!(refused, Err(AppError::BadRequest { .. })), "{endpoint}: {refused:?}");
    }
    assert!(store.push_subscriptions().await.unwrap().is_empty());

    // One stored before the check (an older version took it) is forgotten, never posted to.
    let row = PushSubscriptionRow {
        endpoint: format!("http://127.0.0.1:{port}/push/old"),
        p256dh: keys.p256dh.clone(),
        auth: keys.auth.clone(),
        user_agent: None,
        created_at_ms: 0,
    };
    store.save_push_subscription(&row).await.unwrap();
    let mut reports = server.notifier.reports();
    let (_, tool_use_id) = server.ask().await;
    assert_eq!(report(&mut reports, &tool_use_id, NoticeKind::PushOpened).await, Reported::Sent { to: 0 });
    assert!(store.push_subscriptions().await.unwrap().is_empty(), "forgotten");
    assert!(listener.accept().now_or_never().is_none(), "nothing connected to the listener");
    assert!(service.received().is_empty());
}

/// An ACP agent's question (Claude's adapter, pinned, asking through a form elicitation) is pushed
/// as Claude Code's would be, with its options as actions; the first action answers it, and the
/// model reads that answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acp_agents_question_is_pushed_and_answered_from_the_notification() {
    let (service, vapid) = push_service().await;
    let mut one = crate::acp_agents::questions();
    one["questions"].as_array_mut().unwrap().truncate(1);
    let script = vec![
        support::mock_anthropic::Reply::tool_use("toolu_acp", "AskUserQuestion", one),
        support::mock_anthropic::Reply::text("Noted."),
    ];
    let (config_acp, home, mock) = crate::acp_agents::claude_config(script).await;
    let store = Store::open(&home.path().join("askbridge.db")).await.unwrap();
    let agent = Arc::new(AcpAgent::new(config_acp));
    let server = Server::with_agent(&store, agent, timeouts(), config(100), vapid);
    server.subscribe(&service.browser("phone").await).await;
    let (session, tool_use_id) = server.ask().await;
    assert_eq!(tool_use_id, "toolu_acp");
    let pushes = service.wait_for(1, "the question's push").await;
    let payload = pushes[0].payload();
    assert_eq!(
        (payload["kind"].as_str(), payload["question"].as_str()),
        (Some("question"), Some("Which auth method should we use?"))
    );
    let titles: Vec<&str> = payload["actions"].as_array().unwrap().iter().filter_map(|a| a["title"].as_str()).collect();
    assert_eq!(titles, ["JWT", "Sessions"]);
    let action: AnswerBody = serde_json::from_value(payload["actions"][0]["body"].clone()).unwrap();
    server.manager.answer_question(&action.session, &action.tool_use_id, action.answers).await.unwrap();
    wait_until("the model to read the answer", WAIT, || async {
        mock.tool_results()
            .iter()
            .any(|(_, text, _)| text.contains(r#""Which auth method should we use?"="JWT""#))
            .then_some(())
    })
    .await;
    let pushes = service.wait_for(2, "the closing push").await;
    assert_eq!(pushes[1].payload()["type"], "close");
    server.manager.delete_session(&session).await.unwrap();
}
