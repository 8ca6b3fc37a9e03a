//! Bad input against the whole router: each gets a clear, typed error with the right status, the
//! server keeps serving, and nothing already stored is lost.

use crate::support;

use std::time::Duration;

use askbridge::approval::PermissionMode;
use askbridge::error::{AppError, MAX_MESSAGE_CHARS};
use askbridge::question::QuestionAnswer;
use askbridge::testing::wait_until;
use askbridge::thread::Block;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use support::router::{Harness, harness, harness_with};
use tower::ServiceExt;

/// A call of the server function `function`, as a page sends it.
fn server_fn_request(function: &str, body: impl Into<Body>) -> Request<Body> {
    Request::post(format!("/api/{function}"))
        .header(header::HOST, "127.0.0.1:3000")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json")
        .body(body.into())
        .unwrap()
}

impl Harness {
    async fn post(&self, function: &str, body: impl Into<Body>) -> (StatusCode, Vec<u8>) {
        self.call_for_body(server_fn_request(function, body)).await
    }

    async fn post_json(&self, function: &str, body: Value) -> (StatusCode, Vec<u8>) {
        self.post(function, body.to_string()).await
    }

    /// A session with one finished exchange in it.
    async fn session_with_history(&self) -> String {
        let session = self.manager.create_session(None).await.unwrap();
        self.manager.send_message(&session.id, "remember me".into()).await.unwrap();
        wait_until("the turn to end", Duration::from_secs(5), || async {
            let (_, thread) = self.manager.snapshot(&session.id).await.unwrap();
            (!thread.turn.working).then_some(())
        })
        .await;
        session.id
    }

    async fn assert_history_intact(&self, id: &str) {
        let (_, thread) = self.manager.snapshot(id).await.unwrap();
        assert_eq!(thread.messages.len(), 2);
        assert_eq!(thread.messages[0].text(), "remember me");
        assert_eq!(thread.messages[1].text(), "ok");
        assert_eq!(self.store.load_thread(id).await.unwrap(), thread);
    }
}

fn error(body: &[u8]) -> AppError {
    serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("not a typed error ({e}): {}", String::from_utf8_lossy(body)))
}

#[tokio::test]
async fn an_unknown_session_is_not_found() {
    let h = harness().await;
    let (status, body) = h.post_json("send_message", json!({"session": "nope", "text": "hi"})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error(&body), AppError::SessionNotFound { id: "nope".into() });

    let (status, body) = h.post_json("load_session", json!({"id": "nope"})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(error(&body), AppError::SessionNotFound { id: "nope".into() });
}

#[tokio::test]
async fn an_unknown_session_page_says_so_with_404() {
    let h = harness().await;
    let (status, body) = h
        .call_for_body(Request::get("/s/nope").header(header::HOST, "127.0.0.1:3000").body(Body::empty()).unwrap())
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(String::from_utf8_lossy(&body).contains("This session does not exist"));
}

#[tokio::test]
async fn an_oversized_message_is_refused_and_nothing_is_lost() {
    let h = harness().await;
    let id = h.session_with_history().await;
    let text = "x".repeat(MAX_MESSAGE_CHARS + 1);
    let (status, body) = h.post_json("send_message", json!({"session": id, "text": text})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error(&body), AppError::MessageTooLong { chars: MAX_MESSAGE_CHARS + 1, max: MAX_MESSAGE_CHARS });
    h.assert_history_intact(&id).await;
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_with_413() {
    let h = harness().await;
    let id = h.session_with_history().await;
    let text = "x".repeat(2 * 1024 * 1024);
    let (status, body) = h.post_json("send_message", json!({"session": id, "text": text})).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(error(&body), AppError::TooLarge { max_kib: 1024 });

    // With a Content-Length, the limit answers before the body is read.
    let (status, body) = h
        .call_for_body(
            Request::post("/api/send_message")
                .header(header::HOST, "127.0.0.1:3000")
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::CONTENT_LENGTH, 3 * 1024 * 1024)
                .body(Body::from(vec![b' '; 3 * 1024 * 1024]))
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(error(&body), AppError::TooLarge { max_kib: 1024 });
    h.assert_history_intact(&id).await;
}

#[tokio::test]
async fn malformed_server_function_bodies_get_a_typed_400() {
    let h = harness().await;
    let id = h.session_with_history().await;
    for body in ["{not json", "[]", "{\"session\": 3}", "{\"text\": \"no session\"}", ""] {
        let (status, response) = h.post("send_message", body.to_string()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(matches!(error(&response), AppError::BadRequest { .. }), "{body}");
    }
    h.assert_history_intact(&id).await;
}

#[tokio::test]
async fn a_blank_message_and_a_bad_title_are_explained() {
    let h = harness().await;
    let id = h.session_with_history().await;
    let (status, body) = h.post_json("send_message", json!({"session": id, "text": "  "})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error(&body), AppError::EmptyMessage);
    let (status, body) = h.post_json("rename_session", json!({"id": id, "title": ""})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(matches!(error(&body), AppError::InvalidTitle { .. }));
    h.assert_history_intact(&id).await;
}

#[tokio::test]
async fn the_live_stream_of_an_unknown_session_ends_with_a_problem_event() {
    let h = harness().await;
    let (status, body) = h
        .call_for_body(
            Request::get("/api/live?session=nope&after=0")
                .header(header::HOST, "127.0.0.1:3000")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let text = String::from_utf8_lossy(&body);
    assert!(text.contains("event: problem"), "{text}");
    assert!(text.contains("session_not_found"), "{text}");
}

#[tokio::test]
async fn the_live_stream_replays_from_a_sequence_number() {
    let h = harness().await;
    let id = h.session_with_history().await;
    let response = h
        .app
        .clone()
        .oneshot(
            Request::get(format!("/api/live?session={id}&after=2"))
                .header(header::HOST, "127.0.0.1:3000")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.headers()[header::CONTENT_TYPE], "text/event-stream");
    // Read what has arrived until the turn's end; the stream itself stays open.
    let mut body = response.into_body();
    let mut text = String::new();
    while !text.contains("turn_ended") {
        let frame = tokio::time::timeout(Duration::from_secs(5), body.frame()).await.unwrap().unwrap().unwrap();
        if let Ok(data) = frame.into_data() {
            text.push_str(&String::from_utf8_lossy(&data));
        }
    }
    let ids: Vec<u64> = text.lines().filter_map(|line| line.strip_prefix("id: ")).map(|n| n.parse().unwrap()).collect();
    assert_eq!(ids.first(), Some(&3));
    assert!(ids.windows(2).all(|pair| pair[1] == pair[0] + 1), "{ids:?}");
}

#[tokio::test]
async fn bad_approval_decisions_and_modes_are_explained_and_change_nothing() {
    let h = harness().await;
    let id = h.session_with_history().await;
    let (status, body) = h
        .post_json(
            "decide_approval",
            json!({"session": "nope", "tool_use_id": "t", "decision": {"allow": {"always": null}}}),
        )
        .await;
    assert_eq!((status, error(&body)), (StatusCode::NOT_FOUND, AppError::SessionNotFound { id: "nope".into() }));
    let (status, body) = h
        .post_json(
            "decide_approval",
            json!({"session": id, "tool_use_id": "toolu_x", "decision": {"deny": {"message": "no"}}}),
        )
        .await;
    assert_eq!(
        (status, error(&body)),
        (StatusCode::NOT_FOUND, AppError::InteractionNotFound { tool_use_id: "toolu_x".into() })
    );
    for decision in [json!("allow"), json!({"maybe": {}}), json!({"allow": {"always": -1}}), json!(null)] {
        let (status, body) = h
            .post_json("decide_approval", json!({"session": id, "tool_use_id": "toolu_x", "decision": decision}))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{decision}");
        assert!(matches!(error(&body), AppError::BadRequest { .. }), "{decision}");
    }
    let (status, body) = h.post_json("set_permission_mode", json!({"session": id, "mode": "yolo"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let AppError::BadRequest { detail } = error(&body) else { panic!() };
    assert!(detail.contains("default, acceptEdits, plan, bypassPermissions"), "{detail}");
    let (status, _) = h.post_json("create_session", json!({"permission_mode": "yolo"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    h.assert_history_intact(&id).await;
    let (_, thread) = h.manager.snapshot(&id).await.unwrap();
    assert_eq!(thread.turn.permission_mode, Some(PermissionMode::Default), "every session starts with a mode");
}

/// A page that sends an answer and goes away at once (a tab closed, a phone's page dropped right
/// after the tap): the call runs to its end on the server, and the agent gets the answer. Here the
/// call is polled once, as far as its first wait (the store's write), and dropped, as hyper drops
/// a handler's future when its connection closes.
#[tokio::test]
async fn an_answer_whose_page_went_away_mid_call_still_reaches_the_agent() {
    let h = harness_with(support::server::ASK_AND_QUOTE).await;
    let session = h.manager.create_session(None).await.unwrap().id;
    h.manager.send_message(&session, "which?".into()).await.unwrap();
    let tool_use_id = wait_until("the question", Duration::from_secs(30), || async {
        let (_, thread) = h.manager.snapshot(&session).await.unwrap();
        thread.messages.iter().flat_map(|m| &m.blocks).find_map(|block| match block {
            Block::ToolCall(call) if call.interaction.as_ref().is_some_and(|i| i.is_pending()) => Some(call.id.clone()),
            _ => None,
        })
    })
    .await;

    let answers = [QuestionAnswer::new(support::server::QUESTION, &["JWT"], None, None)];
    let body = json!({"session": session, "tool_use_id": tool_use_id, "answers": answers});
    let request = server_fn_request("submit_answers", body.to_string());
    // Boxed, so that dropping it drops the call itself (as hyper does), not a pin of it.
    let mut call = Box::pin(h.app.clone().oneshot(request));
    assert!(futures::poll!(call.as_mut()).is_pending(), "the answer is stored before the call answers");
    drop(call);

    wait_until("the agent to quote the answer", Duration::from_secs(30), || async {
        let (_, thread) = h.manager.snapshot(&session).await.unwrap();
        let quoted = thread.messages.iter().flat_map(|m| &m.blocks).any(|block| match block {
            Block::Text { text } => text.contains(r#"="JWT""#),
            _ => false,
        });
        (quoted && !thread.turn.working).then_some(())
    })
    .await;
}

#[tokio::test]
async fn bypass_needs_the_persons_confirmation_in_the_request() {
    let h = harness().await;
    let id = h.session_with_history().await;
    let (status, body) = h.post_json("set_permission_mode", json!({"session": id, "mode": "bypassPermissions"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let AppError::BadRequest { detail } = error(&body) else { panic!() };
    assert!(detail.contains("confirm_bypass"), "{detail}");
    let (status, _) = h
        .post_json("set_permission_mode", json!({"session": id, "mode": "bypassPermissions", "confirm_bypass": false}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (_, thread) = h.manager.snapshot(&id).await.unwrap();
    assert_eq!(thread.turn.permission_mode, Some(PermissionMode::Default), "the mode did not change");
    let (status, _) = h.post_json("create_session", json!({"permission_mode": "bypassPermissions"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(h.manager.list_sessions().await.unwrap().len(), 1, "no session was made");

    let (status, body) = h
        .post_json("set_permission_mode", json!({"session": id, "mode": "bypassPermissions", "confirm_bypass": true}))
        .await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let (_, thread) = h.manager.snapshot(&id).await.unwrap();
    assert_eq!(thread.turn.permission_mode, Some(PermissionMode::BypassPermissions));
    // Other modes need no confirmation.
    let (status, _) = h.post_json("set_permission_mode", json!({"session": id, "mode": "plan"})).await;
    assert_eq!(status, StatusCode::OK);
}

// Every server function, sent bodies in any state: cut short, bytes changed, or noise. The answer
// is a typed error (or success), never a 5xx or a panic, and a session's history stays intact.
const BODIES: &[(&str, &str)] = &[
    ("create_session", r#"{"workdir": null, "permission_mode": "plan"}"#),
    ("send_message", r#"{"session": "SESSION", "text": "hello there"}"#),
    ("load_session", r#"{"id": "SESSION"}"#),
    ("rename_session", r#"{"id": "SESSION", "title": "A title"}"#),
    ("interrupt_turn", r#"{"session": "SESSION"}"#),
    (
        "submit_answers",
        r#"{"session": "SESSION", "tool_use_id": "t", "answers": [{"question": "Q", "labels": ["A"], "other": null, "notes": null}]}"#,
    ),
    ("decline_question", r#"{"session": "SESSION", "tool_use_id": "t", "reason": "later"}"#),
    ("decide_approval", r#"{"session": "SESSION", "tool_use_id": "t", "decision": {"deny": {"message": "no"}}}"#),
    ("set_permission_mode", r#"{"session": "SESSION", "mode": "acceptEdits"}"#),
    ("send_answer_as_message", r#"{"session": "SESSION", "tool_use_id": "t", "answers": []}"#),
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 96, ..Default::default() })]
    #[test]
    fn no_body_makes_a_server_function_fail_untyped(
        pick in proptest::prelude::any::<proptest::sample::Index>(),
        cut in proptest::prelude::any::<proptest::sample::Index>(),
        noise in proptest::collection::vec((proptest::prelude::any::<proptest::sample::Index>(), proptest::prelude::any::<u8>()), 0..4),
        raw in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
        use_raw in proptest::prelude::any::<bool>(),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let h = harness().await;
            let id = h.session_with_history().await;
            let (function, body) = BODIES[pick.index(BODIES.len())];
            let body = if use_raw {
                raw.clone()
            } else {
                let mut body = body.replace("SESSION", &id).into_bytes();
                body.truncate(cut.index(body.len() + 1));
                for (at, byte) in &noise {
                    if !body.is_empty() {
                        let at = at.index(body.len());
                        body[at] = *byte;
                    }
                }
                body
            };
            let (status, answer) = h.post(function, body.clone()).await;
            assert!(!status.is_server_error(), "{function} {:?}: {status}", String::from_utf8_lossy(&body));
            if !status.is_success() {
                error(&answer);
            }
            // The session sent a message may have grown by one exchange; its history is intact.
            let (_, thread) = h.manager.snapshot(&id).await.unwrap();
            assert_eq!(thread.messages[0].text(), "remember me");
            assert_eq!(h.store.load_thread(&id).await.unwrap().messages[..2], thread.messages[..2]);
        });
    }
}

#[tokio::test]
async fn an_id_of_600000_characters_gets_a_typed_error_that_repeats_only_its_beginning() {
    let h = harness().await;
    let long = "x".repeat(600_000);
    for (function, body) in [
        ("load_session", json!({"id": long})),
        ("rename_session", json!({"id": long, "title": "t"})),
        ("send_message", json!({"session": long, "text": "hi"})),
        ("interrupt_turn", json!({"session": long})),
    ] {
        let (status, body) = h.post_json(function, body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{function}");
        match error(&body) {
            AppError::SessionNotFound { id } => {
                assert!(id.starts_with("xxx") && id.ends_with('…') && id.chars().count() < 300, "{function}: {id}")
            }
            other => panic!("{function}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn the_terminal_hooks_routes_answer_bad_input_with_typed_errors() {
    let h = harness().await;
    for path in ["/api/terminal/hook", "/api/terminal/withdraw"] {
        for body in ["not json", "{}", "[1, 2]"] {
            let (status, answer) = h
                .call_for_body(
                    Request::post(path)
                        .header(header::HOST, "127.0.0.1:3000")
                        .header(header::CONTENT_TYPE, "application/json")
                        .body(Body::from(body))
                        .unwrap(),
                )
                .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{path} {body}");
            assert!(
                matches!(error(&answer), AppError::BadRequest { detail } if detail.starts_with("the hook's request")),
                "{path} {body}"
            );
        }
    }
}
