//! Tests of the thread's reducer (`mod.rs`).

use super::*;
use serde_json::json;

fn event(seq: u64, body: EventBody) -> SessionEvent {
    SessionEvent { seq, at_ms: 1_000 + seq as i64, body }
}

fn streamed_turn() -> Vec<SessionEvent> {
    vec![
        event(
            1,
            EventBody::UserMessage { message_id: "u1".into(), text: "list files".into(), attachments: Vec::new() },
        ),
        event(2, EventBody::TurnStarted),
        event(3, EventBody::AssistantMessageStarted { message_id: "a1".into() }),
        event(4, EventBody::TextDelta { message_id: "a1".into(), text: "Sure, ".into() }),
        event(5, EventBody::TextDelta { message_id: "a1".into(), text: "listing.".into() }),
        event(6, EventBody::ToolCallStarted { message_id: "a1".into(), tool_use_id: "t1".into(), name: "Bash".into() }),
        event(7, EventBody::ToolInputDelta { tool_use_id: "t1".into(), partial_json: "{\"comm".into() }),
        event(8, EventBody::ToolCallReady { tool_use_id: "t1".into(), input: json!({"command": "ls"}) }),
        event(9, EventBody::ToolResult { tool_use_id: "t1".into(), output: "a\nb".into(), is_error: false }),
        event(10, EventBody::TextDelta { message_id: "a1".into(), text: "Done.".into() }),
        event(11, EventBody::MessageFinished { message_id: "a1".into() }),
        event(12, EventBody::TurnEnded { outcome: TurnOutcome::Completed, usage: None }),
    ]
}

#[test]
fn folding_a_streamed_turn_gives_text_then_tool_then_text() {
    let mut thread = Thread::default();
    for e in streamed_turn() {
        thread.apply(&e);
    }
    assert_eq!(thread.seq, 12);
    assert_eq!(thread.messages.len(), 2);
    let reply = &thread.messages[1];
    assert!(!reply.streaming);
    assert_eq!(reply.blocks.len(), 3);
    assert_eq!(reply.blocks[0], Block::Text { text: "Sure, listing.".into() });
    let Block::ToolCall(call) = &reply.blocks[1] else { panic!("expected a tool call") };
    assert_eq!(call.status, ToolStatus::Done);
    assert_eq!(call.input, Some(json!({"command": "ls"})));
    assert_eq!(call.partial_input, "");
    assert_eq!(call.result.as_deref(), Some("a\nb"));
    assert_eq!(reply.blocks[2], Block::Text { text: "Done.".into() });
    assert!(!thread.turn.working);
}

#[test]
fn a_replys_first_blocks_take_the_room_they_need_and_no_more() {
    // A session waiting on its question holds its reply's blocks for as long as it waits: a
    // vector's first growth would make room for four (BENCHMARKS.md, "What a waiting session
    // holds").
    let mut thread = Thread::default();
    let turn = streamed_turn();
    for e in &turn[..6] {
        thread.apply(e);
    }
    let reply = &thread.messages[1];
    assert_eq!((reply.blocks.len(), reply.blocks.capacity()), (2, 2));
    for e in &turn[6..] {
        thread.apply(e);
    }
    let reply = &thread.messages[1];
    assert_eq!((reply.blocks.len(), reply.blocks.capacity()), (3, 3));
}

#[test]
fn replaying_events_already_applied_changes_nothing() {
    let events = streamed_turn();
    let mut once = Thread::default();
    for e in &events {
        once.apply(e);
    }
    let mut twice = once.clone();
    for e in &events {
        assert!(twice.apply(e).is_empty());
    }
    assert_eq!(once, twice);
}

#[test]
fn turn_end_cancels_tools_still_running() {
    let mut thread = Thread::default();
    for e in streamed_turn().into_iter().take(8) {
        thread.apply(&e);
    }
    let change = thread.apply(&event(9, EventBody::TurnEnded { outcome: TurnOutcome::Interrupted, usage: None }));
    assert_eq!(change, Change { messages: vec![1], turn: true, ..Change::default() });
    let Block::ToolCall(call) = &thread.messages[1].blocks[1] else { panic!() };
    assert_eq!(call.status, ToolStatus::Cancelled);
    assert!(!thread.messages[1].streaming);
}

/// A parked question, answered: the thread as the agent's resume finds it.
fn parked_and_answered() -> Vec<SessionEvent> {
    let question = crate::interaction::InteractionRequest::Question { questions: Vec::new() };
    vec![
        event(1, EventBody::UserMessage { message_id: "u1".into(), text: "go".into(), attachments: Vec::new() }),
        event(2, EventBody::TurnStarted),
        event(3, EventBody::AssistantMessageStarted { message_id: "a1".into() }),
        event(4, EventBody::ToolCallStarted { message_id: "a1".into(), tool_use_id: "q".into(), name: "Ask".into() }),
        event(5, EventBody::InteractionOpened { tool_use_id: "q".into(), request: question, expires_at_ms: Some(9) }),
        event(6, EventBody::InteractionParked { tool_use_id: "q".into() }),
        event(7, EventBody::TurnEnded { outcome: TurnOutcome::Parked, usage: None }),
        event(8, EventBody::InteractionResolved { tool_use_id: "q".into(), outcome: InteractionOutcome::Expired }),
    ]
}

#[test]
fn a_message_sent_before_the_resume_waits_for_it_and_then_gets_its_own_turn() {
    let mut thread = Thread::default();
    thread.apply(&event(
        1,
        EventBody::UserMessage { message_id: "u1".into(), text: "go".into(), attachments: Vec::new() },
    ));
    assert_eq!(thread.next_turn(), Some(NextTurn::Messages), "a message with no turn after it");
    let mut thread = Thread::default();
    for e in parked_and_answered() {
        thread.apply(&e);
    }
    assert_eq!(thread.tool_call("q").unwrap().interaction.as_ref().unwrap().expires_at_ms, Some(9));
    assert_eq!(thread.next_turn(), Some(NextTurn::Resume));
    let change = thread.apply(&event(
        9,
        EventBody::UserMessage { message_id: "u2".into(), text: "and".into(), attachments: Vec::new() },
    ));
    assert!(change.turn, "the queue is stored with the turn state");
    thread.apply(&event(
        10,
        EventBody::UserMessage { message_id: "u3".into(), text: "then".into(), attachments: Vec::new() },
    ));
    assert_eq!(thread.next_turn(), Some(NextTurn::Resume), "the answer goes first");
    thread.apply(&event(11, EventBody::ResumeStarted));
    assert_eq!(thread.next_turn(), None);
    thread.apply(&event(12, EventBody::ToolResult { tool_use_id: "q".into(), output: "x".into(), is_error: false }));
    thread.apply(&event(13, EventBody::TurnEnded { outcome: TurnOutcome::Completed, usage: None }));
    assert_eq!(thread.next_turn(), Some(NextTurn::Messages));
    assert_eq!(thread.queued_text().as_deref(), Some("and\n\nthen"));
    thread.apply(&event(14, EventBody::TurnStarted));
    assert!(thread.turn.queued_messages.is_empty() && thread.next_turn().is_none());
}

#[test]
fn events_for_unknown_messages_are_ignored() {
    let mut thread = Thread::default();
    let change = thread.apply(&event(1, EventBody::TextDelta { message_id: "nope".into(), text: "x".into() }));
    assert!(change.is_empty());
    assert_eq!(thread.seq, 1);
}

#[test]
fn tool_summary_prefers_the_argument_people_look_for() {
    assert_eq!(summarize_tool_input("Bash", &json!({"description": "x", "command": "ls -la"})), "ls -la");
    assert_eq!(summarize_tool_input("Read", &json!({"file_path": "/a/b.rs"})), "/a/b.rs");
    assert_eq!(summarize_tool_input("Mystery", &json!({"n": 3, "label": "multi\nline"})), "multi line");
    assert_eq!(summarize_tool_input("Mystery", &json!({})), "");
    assert!(summarize_tool_input("Bash", &json!({"command": "x".repeat(500)})).ends_with('…'));
}
