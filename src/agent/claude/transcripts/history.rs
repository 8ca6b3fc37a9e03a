//! A transcript's entries as the app's own thread: the person's messages (text and images), the
//! assistant's text and tool calls with their results, AskUserQuestion calls as question
//! interactions with how they were answered, and a few notices (an interrupt, a compaction).
//! Everything else Claude Code records (thinking, snapshots, its own bookkeeping) is left out.

use std::collections::HashMap;

use serde_json::Value;

use super::answers::question_outcome;
use super::entry::{ContentBlock, Entry};
use crate::interaction::{Interaction, InteractionOutcome, InteractionRequest};
use crate::question::{is_question_tool, normalize_question_args};
use crate::thread::{Block, Image, Message, Role, ToolCall, ToolStatus};

/// Which message of the thread an entry starts or continues: the lines of one assistant message
/// share its API id; every message of the person's, and every notice, is a message of its own.
/// Paging counts messages with the same keys as the fold, so "the last N messages" agree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageKey {
    Assistant(String),
    /// The line's offset: unique in the file.
    Own(u64),
}

/// The message `entry` (at `offset`) belongs to, if it makes or grows one.
pub fn message_key(entry: &Entry, offset: u64) -> Option<MessageKey> {
    if entry.is_sidechain() {
        return None;
    }
    match entry.kind() {
        "assistant" => {
            Some(MessageKey::Assistant(entry.message_id().map_or_else(|| format!("@{offset}"), str::to_string)))
        }
        "user" if entry.is_meta() => None,
        "user" if entry.is_compact_summary() || entry.is_prompt() => Some(MessageKey::Own(offset)),
        "system" if entry.subtype() == Some("compact_boundary") => Some(MessageKey::Own(offset)),
        _ => None,
    }
}

/// Folds entries, oldest first, into messages.
#[derive(Default)]
pub struct Fold {
    messages: Vec<Message>,
    /// The key of the last message, to know whether an assistant line continues it.
    last_key: Option<MessageKey>,
    /// tool_use id → (message, block) of its call.
    calls: HashMap<String, (usize, usize)>,
}

impl Fold {
    pub fn push(&mut self, entry: &Entry, offset: u64) {
        if entry.is_sidechain() || entry.is_meta() {
            return;
        }
        let at_ms = entry.at_ms().unwrap_or_default();
        let id = || entry.uuid().map_or_else(|| format!("line-{offset}"), str::to_string);
        match entry.kind() {
            "user" if entry.is_compact_summary() => self.notice(
                id(),
                "The conversation was compacted: Claude continued from a summary of it.",
                at_ms,
                offset,
            ),
            "user" => self.user(entry, id(), at_ms, offset),
            "assistant" => self.assistant(entry, id(), at_ms, offset),
            "system" if entry.subtype() == Some("compact_boundary") => {
                self.notice(id(), "Conversation compacted.", at_ms, offset)
            }
            _ => {}
        }
    }

    fn user(&mut self, entry: &Entry, id: String, at_ms: i64, offset: u64) {
        let mut blocks = Vec::new();
        for block in entry.blocks() {
            match block {
                ContentBlock::Text(text) => {
                    if let Some(shown) = shown_user_text(text) {
                        blocks.push(Block::Text { text: shown });
                    }
                }
                ContentBlock::Image(source) => blocks.push(image(source)),
                ContentBlock::ToolResult { tool_use_id, content, is_error } => {
                    self.settle(tool_use_id, content, is_error, entry.tool_use_result())
                }
                ContentBlock::ToolUse { .. } | ContentBlock::Other => {}
            }
        }
        if blocks.is_empty() {
            return;
        }
        // Claude Code's own lines in the person's name: "[Request interrupted by user]".
        let role = match &blocks[..] {
            [Block::Text { text }] if text.starts_with("[Request interrupted") => Role::Notice,
            _ => Role::User,
        };
        self.messages.push(Message { id, role, blocks, streaming: false, created_at_ms: at_ms, usage: None });
        self.last_key = Some(MessageKey::Own(offset));
    }

    fn assistant(&mut self, entry: &Entry, id: String, at_ms: i64, offset: u64) {
        let key = message_key(entry, offset);
        let continues = key.is_some() && key == self.last_key && !self.messages.is_empty();
        let mut blocks = Vec::new();
        for block in entry.blocks() {
            match block {
                ContentBlock::Text(text) if !text.trim().is_empty() => {
                    blocks.push(Block::Text { text: text.to_string() })
                }
                ContentBlock::ToolUse { id, name, input } => blocks.push(Block::ToolCall(tool_call(id, name, input))),
                _ => {}
            }
        }
        if blocks.is_empty() {
            return;
        }
        if !continues {
            self.messages.push(Message {
                id,
                role: Role::Assistant,
                blocks: Vec::new(),
                streaming: false,
                created_at_ms: at_ms,
                usage: None,
            });
            self.last_key = key;
        }
        let index = self.messages.len() - 1;
        let message = &mut self.messages[index];
        for block in blocks {
            if let Block::ToolCall(call) = &block {
                self.calls.insert(call.id.clone(), (index, message.blocks.len()));
            }
            message.blocks.push(block);
        }
    }

    fn notice(&mut self, id: String, text: &str, at_ms: i64, offset: u64) {
        let blocks = vec![Block::Text { text: text.to_string() }];
        self.messages.push(Message {
            id,
            role: Role::Notice,
            blocks,
            streaming: false,
            created_at_ms: at_ms,
            usage: None,
        });
        self.last_key = Some(MessageKey::Own(offset));
    }

    /// Records a tool's result on its call, if the call is in the thread (it may be on an
    /// earlier page).
    pub fn settle(&mut self, tool_use_id: &str, content: &Value, is_error: bool, structured: Option<&Value>) {
        let Some(&(message, block)) = self.calls.get(tool_use_id) else { return };
        let Some(Block::ToolCall(call)) = self.messages.get_mut(message).and_then(|m| m.blocks.get_mut(block)) else {
            return;
        };
        let text = result_text(content);
        if let Some(interaction) = &mut call.interaction {
            interaction.outcome = Some(match &interaction.request {
                InteractionRequest::Question { questions } => question_outcome(questions, &text, is_error, structured),
                _ if is_error => InteractionOutcome::Declined { reason: Some(text.clone()) },
                _ => InteractionOutcome::Failed { error: text.clone() },
            });
        }
        call.status = if is_error { ToolStatus::Failed } else { ToolStatus::Done };
        call.result = Some(text);
    }

    /// The ids of the calls that have no result yet.
    pub fn open_calls(&self) -> Vec<String> {
        self.calls
            .iter()
            .filter(|(_, (m, b))| {
                matches!(self.messages[*m].blocks.get(*b), Some(Block::ToolCall(call)) if call.result.is_none())
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The messages. A call with no result that the conversation went past (a later message
    /// here, or `more_after`: the transcript goes on after these entries) was cut off: it is
    /// cancelled. A call in the last message keeps running, and its question stays open: the CLI
    /// runs it right now, or it was deferred (parked) and `claude --resume` asks it again.
    pub fn finish(mut self, more_after: bool) -> Vec<Message> {
        let last = self.messages.len().saturating_sub(1);
        for (index, message) in self.messages.iter_mut().enumerate() {
            if index == last && !more_after {
                break;
            }
            for block in &mut message.blocks {
                let Block::ToolCall(call) = block else { continue };
                if call.result.is_some() {
                    continue;
                }
                call.status = ToolStatus::Cancelled;
                if let Some(interaction) = call.interaction.as_mut().filter(|i| i.is_pending()) {
                    interaction.outcome = Some(InteractionOutcome::Cancelled {
                        reason: "the conversation went on without an answer".into(),
                    });
                }
            }
        }
        self.messages
    }
}

fn tool_call(id: &str, name: &str, input: &Value) -> ToolCall {
    let interaction = is_question_tool(name).then(|| {
        Interaction::new(match normalize_question_args(name, input) {
            Ok(questions) => InteractionRequest::Question { questions },
            Err(error) => InteractionRequest::Unreadable { error: error.to_string() },
        })
    });
    ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        input: Some(input.clone()),
        partial_input: String::new(),
        preview: Vec::new(),
        status: ToolStatus::Running,
        result: None,
        interaction,
    }
}

/// A tool result's text: a string, or the text of its blocks (an image in it is named).
fn result_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| match block.get("type").and_then(Value::as_str) {
                Some("text") => block.get("text").and_then(Value::as_str).map(str::to_string),
                Some("image") => Some("[image]".to_string()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// An image block's `source`: base64 bytes, or a URL. A media type that is not an image's is not
/// passed on to a page's `<img>`.
fn image(source: &Value) -> Block {
    let str = |key: &str| source.get(key).and_then(Value::as_str).unwrap_or_default();
    let media_type = str("media_type");
    let media_type = if media_type.starts_with("image/")
        && media_type.len() <= 40
        && media_type[6..].bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    {
        media_type.to_string()
    } else {
        String::new()
    };
    match str("type") {
        "url" => Block::Image(Image { media_type, url: Some(str("url").to_string()), ..Image::default() }),
        _ => Block::Image(Image { media_type, data: str("data").to_string(), ..Image::default() }),
    }
}

/// What the thread shows of a person's text: slash commands as typed (`/compact keep it short`),
/// a local command's output as its text, and nothing for an empty one.
fn shown_user_text(text: &str) -> Option<String> {
    let tag = |name: &str| {
        let open = format!("<{name}>");
        let close = format!("</{name}>");
        let start = text.find(&open)? + open.len();
        let end = text[start..].find(&close)? + start;
        Some(text[start..end].trim())
    };
    if let Some(name) = tag("command-name") {
        let args = tag("command-args").unwrap_or_default();
        return Some(if args.is_empty() { name.to_string() } else { format!("{name} {args}") });
    }
    for output in ["local-command-stdout", "local-command-stderr", "bash-stdout", "bash-stderr"] {
        if text.trim_start().starts_with(&format!("<{output}>")) {
            return tag(output).filter(|t| !t.is_empty()).map(str::to_string);
        }
    }
    if let Some(command) = tag("bash-input") {
        return Some(format!("! {command}"));
    }
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fold(lines: &[Value]) -> Vec<Message> {
        let mut fold = Fold::default();
        for (i, line) in lines.iter().enumerate() {
            fold.push(&Entry::parse(line.to_string().as_bytes()).unwrap(), i as u64);
        }
        fold.finish(false)
    }

    fn assistant(id: &str, block: Value) -> Value {
        json!({"type": "assistant", "uuid": format!("u-{id}-{block}"), "message": {"id": id, "role": "assistant", "content": [block]}})
    }

    fn result(id: &str, content: &str, is_error: bool) -> Value {
        json!({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": content, "is_error": is_error}]}})
    }

    #[test]
    fn lines_of_one_api_message_make_one_message_and_results_land_on_their_calls() {
        let messages = fold(&[
            json!({"type": "user", "uuid": "p1", "message": {"role": "user", "content": "list files"}}),
            assistant("msg_1", json!({"type": "text", "text": "Sure."})),
            assistant("msg_1", json!({"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}})),
            result("t1", "a\nb", false),
            assistant("msg_2", json!({"type": "thinking", "thinking": "hm"})),
            assistant("msg_2", json!({"type": "text", "text": "Two files."})),
        ]);
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[0].role, Role::User);
        assert_eq!(messages[0].text(), "list files");
        assert_eq!(messages[1].blocks.len(), 2);
        let Block::ToolCall(call) = &messages[1].blocks[1] else { panic!() };
        assert_eq!((call.status, call.result.as_deref()), (ToolStatus::Done, Some("a\nb")));
        assert_eq!(messages[2].text(), "Two files.");
    }

    #[test]
    fn a_call_the_conversation_went_past_is_cancelled_and_the_last_one_still_runs() {
        let messages = fold(&[
            assistant("msg_1", json!({"type": "tool_use", "id": "t1", "name": "Bash", "input": {}})),
            json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user for tool use]"}]}}),
            assistant(
                "msg_2",
                json!({"type": "tool_use", "id": "t2", "name": "AskUserQuestion", "input": {"questions": [
                {"question": "Which?", "header": "H", "options": [{"label": "A", "description": ""}, {"label": "B", "description": ""}]}]}}),
            ),
        ]);
        let Block::ToolCall(cut) = &messages[0].blocks[0] else { panic!() };
        assert_eq!(cut.status, ToolStatus::Cancelled);
        assert_eq!(messages[1].role, Role::Notice);
        let Block::ToolCall(open) = &messages[2].blocks[0] else { panic!() };
        assert_eq!(open.status, ToolStatus::Running);
        assert!(open.interaction.as_ref().unwrap().is_pending());
    }

    #[test]
    fn a_question_is_an_interaction_with_its_answer() {
        let messages = fold(&[
            assistant(
                "msg_1",
                json!({"type": "tool_use", "id": "t1", "name": "AskUserQuestion", "input": {"questions": [
                {"question": "Which?", "header": "H", "options": [{"label": "A", "description": ""}, {"label": "B", "description": ""}]}]}}),
            ),
            json!({"type": "user", "toolUseResult": {"answers": {"Which?": "B"}}, "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "Your questions have been answered: \"Which?\"=\"B\"."}]}}),
        ]);
        let Block::ToolCall(call) = &messages[0].blocks[0] else { panic!() };
        let outcome = call.interaction.as_ref().unwrap().outcome.clone().unwrap();
        let InteractionOutcome::Answered { answers } = outcome else { panic!("{outcome:?}") };
        assert_eq!(answers[0].labels, vec!["B".to_string()]);
    }

    #[test]
    fn images_commands_and_meta_lines_are_shown_as_a_person_sees_them() {
        let messages = fold(&[
            json!({"type": "user", "isMeta": true, "message": {"role": "user", "content": "Caveat: …"}}),
            json!({"type": "user", "message": {"role": "user", "content": "<command-name>/compact</command-name>\n<command-message>compact</command-message>\n<command-args>keep it short</command-args>"}}),
            json!({"type": "user", "message": {"role": "user", "content": "<local-command-stdout></local-command-stdout>"}}),
            json!({"type": "user", "message": {"role": "user", "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png\" onerror=\"x", "data": "iVBO"}}]}}),
        ]);
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0].text(), "/compact keep it short");
        assert_eq!(messages[1].blocks[1], Block::Image(Image { data: "iVBO".into(), ..Image::default() }));
    }
}
