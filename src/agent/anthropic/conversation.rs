//! The conversation sent to the model, rebuilt from the session's thread for every request: the
//! store is the only memory this agent has. Text, each tool call with the input the model wrote,
//! and each call's result, in order; a question's result comes from its interaction's outcome,
//! worded as Claude Code words it.

use std::collections::HashMap;
use std::sync::Arc;

use super::wire::{InputMessage, Role};
use crate::agent::messages_api::{CacheControl, ContentBlock, ImageSource, message_content};
use crate::interaction::InteractionOutcome;
use crate::question::words;
use crate::thread::{Block, Image, Message, Role as ThreadRole, ToolCall, ToolStatus};

/// Tool calls whose id starts with this are content blocks of a kind AskBridge does not use
/// (thinking, server tools), shown in the thread but never sent back.
pub const OTHER_BLOCK_ID: &str = "block_";

/// What the model is told when the person declined (Claude Code's wording for a decline).
pub fn declined(reason: Option<&str>) -> String {
    let mut message = "The user declined to answer these questions: they chose none of the options and gave no \
                       answer. Do not assume one."
        .to_string();
    if let Some(reason) = reason {
        message.push_str(&format!(" Their reason: {reason}"));
    }
    message
}

pub const EXPIRED: &str = "The user did not answer these questions in time, so there is no answer. Do not assume one.";

/// A question still open when the person wrote a new message instead of answering it.
pub const UNANSWERED: &str = "The user did not answer these questions; their next message follows.";

/// The tool result for a question that ended with `outcome`: the text and whether it is an error.
pub fn outcome_result(outcome: &InteractionOutcome) -> (String, bool) {
    match outcome {
        InteractionOutcome::Answered { answers } => (words::as_tool_result(answers), false),
        InteractionOutcome::Declined { reason } => (declined(reason.as_deref()), true),
        InteractionOutcome::Expired => (EXPIRED.to_string(), true),
        InteractionOutcome::Cancelled { reason } => {
            (format!("The question was cancelled before the user answered ({reason})."), true)
        }
        InteractionOutcome::Failed { error } => {
            (super::tools::tool_use_error(&format!("The question could not be shown to the user: {error}")), true)
        }
        // The server died while an agent waited, and that agent answered it by itself.
        InteractionOutcome::Lost { told } => (told.clone(), true),
        InteractionOutcome::Allowed { .. } | InteractionOutcome::Denied { .. } => {
            ("The questions were not answered.".to_string(), true)
        }
    }
}

/// A tool result the thread does not hold yet, worked out from the call's interaction (the
/// answer to a parked question): to record, and to send.
#[derive(Debug, Clone, PartialEq)]
pub struct NewResult {
    pub tool_use_id: String,
    pub content: String,
    pub is_error: bool,
}

/// The conversation of `history`, and the results it contains that the thread has not recorded.
/// `files`: the bytes of the files the person attached, by hash.
pub fn rebuild(history: &[Message], files: &HashMap<String, Arc<[u8]>>) -> (Vec<InputMessage>, Vec<NewResult>) {
    let mut messages: Vec<InputMessage> = Vec::new();
    let mut new_results = Vec::new();
    for message in history {
        match message.role {
            ThreadRole::Notice => {}
            ThreadRole::User => {
                let mut blocks = message_content(&message.text(), &message.attachments(), files);
                // Images that came with the message itself (a Claude Code session continued here).
                blocks.extend(message.blocks.iter().filter_map(|block| match block {
                    Block::Image(image) if image.hash.is_none() => image_block(image),
                    _ => None,
                }));
                push(&mut messages, Role::User, blocks);
            }
            ThreadRole::Assistant => {
                let mut blocks = Vec::new();
                let mut results = Vec::new();
                for block in &message.blocks {
                    match block {
                        Block::Text { text } if !text.trim().is_empty() => {
                            blocks.push(ContentBlock::text(text.clone()))
                        }
                        Block::Text { .. } => {}
                        // The model never writes images or files; a person's are in their own messages.
                        Block::Image(_) | Block::File(_) => {}
                        Block::ToolCall(call) if call.id.starts_with(OTHER_BLOCK_ID) => {}
                        // Arguments that never arrived whole were never a call the model made.
                        Block::ToolCall(ToolCall { input: None, .. }) => {}
                        Block::ToolCall(call) => {
                            let input = call.input.clone().unwrap_or_default();
                            blocks.push(ContentBlock::tool_use(&call.id, &call.name, input));
                            let (content, is_error) = match &call.result {
                                Some(result) => (result.clone(), call.status == ToolStatus::Failed),
                                None => {
                                    let (content, is_error) = result_of(call);
                                    new_results.push(NewResult {
                                        tool_use_id: call.id.clone(),
                                        content: content.clone(),
                                        is_error,
                                    });
                                    (content, is_error)
                                }
                            };
                            results.push(ContentBlock::tool_result(&call.id, content, is_error));
                        }
                    }
                }
                push(&mut messages, Role::Assistant, blocks);
                push(&mut messages, Role::User, results);
            }
        }
    }
    (messages, new_results)
}

/// An image the thread carries itself (base64 bytes, or a URL), as a block.
fn image_block(image: &Image) -> Option<ContentBlock> {
    let source = match &image.url {
        Some(url) if image.data.is_empty() => ImageSource::Url { url: url.clone() },
        _ if image.data.is_empty() => return None,
        _ => ImageSource::Base64 { media_type: image.media_type.clone(), data: image.data.clone() },
    };
    Some(ContentBlock::image(source))
}

/// The result of a call the thread holds no result for.
fn result_of(call: &ToolCall) -> (String, bool) {
    match &call.interaction {
        Some(interaction) => match &interaction.outcome {
            Some(outcome) => outcome_result(outcome),
            None => (UNANSWERED.to_string(), true),
        },
        None => (super::tools::tool_use_error(&format!("Error: No such tool available: {}", call.name)), true),
    }
}

/// Appends blocks as a turn of `role`, joined to the last turn if it has the same role (the API
/// wants the roles to alternate; a person's message after tool results shares their turn).
pub fn push(messages: &mut Vec<InputMessage>, role: Role, blocks: Vec<ContentBlock>) {
    if blocks.is_empty() {
        return;
    }
    match messages.last_mut() {
        Some(last) if last.role == role => last.content.extend(blocks),
        _ => messages.push(InputMessage { role, content: blocks }),
    }
}

/// The conversation with one prompt-caching breakpoint, on the last block of the last turn: the
/// next request reads everything before it from the cache.
pub fn with_cache_breakpoint(messages: &[InputMessage]) -> Vec<InputMessage> {
    let mut messages = messages.to_vec();
    if let Some(block) = messages.last_mut().and_then(|m| m.content.last_mut()) {
        block.set_cache_control(Some(CacheControl::Ephemeral));
    }
    messages
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::{Interaction, InteractionRequest};
    use crate::question::QuestionAnswer;
    use serde_json::json;

    fn message(role: ThreadRole, blocks: Vec<Block>) -> Message {
        Message { id: "m".into(), role, blocks, streaming: false, created_at_ms: 0, usage: None }
    }

    fn text(t: &str) -> Block {
        Block::Text { text: t.into() }
    }

    fn question_call(id: &str, outcome: Option<InteractionOutcome>, result: Option<&str>) -> Block {
        let mut interaction = Interaction::new(InteractionRequest::Question { questions: Vec::new() });
        interaction.outcome = outcome;
        Block::ToolCall(ToolCall {
            id: id.into(),
            name: "AskUserQuestion".into(),
            input: Some(json!({"questions": []})),
            partial_input: String::new(),
            preview: Vec::new(),
            status: if result.is_some() { ToolStatus::Done } else { ToolStatus::Running },
            result: result.map(str::to_string),
            interaction: Some(interaction),
        })
    }

    #[test]
    fn the_thread_becomes_text_tool_use_and_tool_result_blocks_in_order() {
        let answered = InteractionOutcome::Answered { answers: vec![QuestionAnswer::new("Q?", &["A"], None, None)] };
        let history = vec![
            message(ThreadRole::User, vec![text("hello")]),
            message(
                ThreadRole::Assistant,
                vec![
                    text("Let me ask."),
                    question_call("toolu_1", Some(answered), None),
                    question_call("toolu_2", Some(InteractionOutcome::Expired), Some("recorded already")),
                ],
            ),
            message(ThreadRole::Notice, vec![text("not for the model")]),
        ];
        let (messages, new) = rebuild(&history, &HashMap::new());
        assert_eq!(
            serde_json::to_value(&messages).unwrap(),
            json!([
                {"role": "user", "content": [{"type": "text", "text": "hello"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Let me ask."},
                    {"type": "tool_use", "id": "toolu_1", "name": "AskUserQuestion", "input": {"questions": []}},
                    {"type": "tool_use", "id": "toolu_2", "name": "AskUserQuestion", "input": {"questions": []}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content":
                        "Your questions have been answered: \"Q?\"=\"A\". You can now continue with these answers in mind."},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "recorded already"},
                ]},
            ])
        );
        assert_eq!(new.len(), 1, "only the answer the thread has no result for: {new:?}");
        assert_eq!(new[0].tool_use_id, "toolu_1");
    }

    #[test]
    fn a_message_after_an_unanswered_question_shares_the_results_turn() {
        let history = vec![
            message(ThreadRole::User, vec![text("hi")]),
            message(ThreadRole::Assistant, vec![question_call("toolu_1", None, None)]),
            message(ThreadRole::User, vec![text("never mind")]),
        ];
        let (messages, _) = rebuild(&history, &HashMap::new());
        assert_eq!(messages.len(), 3);
        assert_eq!(
            serde_json::to_value(&messages[2]).unwrap(),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": UNANSWERED, "is_error": true},
                {"type": "text", "text": "never mind"},
            ]})
        );
    }

    #[test]
    fn incomplete_calls_and_other_blocks_are_left_out() {
        let mut cut = question_call("toolu_cut", None, None);
        if let Block::ToolCall(call) = &mut cut {
            call.input = None;
        }
        let mut thinking = question_call("block_m_0", None, Some("…"));
        if let Block::ToolCall(call) = &mut thinking {
            call.interaction = None;
        }
        let history = vec![
            message(ThreadRole::User, vec![text("a")]),
            message(ThreadRole::Assistant, vec![thinking, cut]),
            message(ThreadRole::User, vec![text("b")]),
        ];
        let (messages, new) = rebuild(&history, &HashMap::new());
        assert_eq!(messages.len(), 1, "two person's messages in one turn: {messages:?}");
        assert_eq!(messages[0].content.len(), 2);
        assert!(new.is_empty());
    }

    #[test]
    fn an_earlier_message_sends_its_attached_image_again_from_the_stored_bytes() {
        let shot = crate::thread::AttachmentRef {
            hash: "ab".repeat(32),
            media_type: "image/png".into(),
            name: Some("shot.png".into()),
            size: 4,
        };
        let history = vec![
            message(ThreadRole::User, vec![text("look"), Block::Image(Image::attached(&shot))]),
            message(ThreadRole::Assistant, vec![text("A cat.")]),
        ];
        let bytes = HashMap::from([(shot.hash.clone(), Arc::<[u8]>::from(&b"\x89PNG"[..]))]);
        let (messages, _) = rebuild(&history, &bytes);
        assert_eq!(
            serde_json::to_value(&messages[0]).unwrap(),
            json!({"role": "user", "content": [
                {"type": "text", "text": "look"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}},
            ]})
        );
    }

    #[test]
    fn the_cache_breakpoint_is_on_the_last_block() {
        let (messages, _) = rebuild(&[message(ThreadRole::User, vec![text("a")])], &HashMap::new());
        let cached = with_cache_breakpoint(&messages);
        assert_eq!(
            serde_json::to_value(&cached[0].content[0]).unwrap(),
            json!({"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}})
        );
        assert!(serde_json::to_value(&messages).unwrap()[0]["content"][0].get("cache_control").is_none());
    }
}
