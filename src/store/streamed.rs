//! A tool call's arguments that streamed, stored once. Where a file keeps what streams (a server
//! alone on SQLite, `journal.rs`), a tool call's arguments are in the file as they streamed, and
//! its `ToolCallReady` event does not repeat them (`Append::input_streamed`). Nor does its
//! message's row, when they are large and nothing that search reads is in them (a file written,
//! an edit): the row leaves the input out and says where the file has it (`streamed_inputs`, each
//! such call's id and the sequence number its pieces follow), and the thread read back has it
//! again from the file (`load_thread`). The row's copy was the largest write of a reply with a
//! file in it: 100 KB of a file written cost about 100 pages of SQLite's log at the reply's end,
//! 0.8 bytes to the disk per byte streamed (BENCHMARKS.md, "A tool call's arguments stored
//! once"). A message's later writes (a result, an answer) leave it out again, as its row said,
//! after a restart too.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::thread::{Block, EventBody, Message, SessionEvent, ToolCall};

/// The keys of a message's JSON whose text the search index reads: migration 0017's trigger,
/// `t.key IN (…)`. An input with any of them stays in its row, so that search finds it.
const SEARCHED_KEYS: [&str; 9] =
    ["text", "result", "command", "description", "question", "label", "other", "notes", "plan"];

/// Inputs smaller than this stay in their rows: a page or two of the log, against a read of the
/// session's file each time the thread is loaded.
const LEFT_OUT_FROM: usize = 2_048;

/// Which of a row's tool calls leave their inputs out, by id: where its pieces follow.
pub(super) type LeftOut = BTreeMap<String, u64>;

/// The tool calls whose arguments streamed into a session's file, by id (a session's part of the
/// journal, `Journal::inputs`): those seen streaming while this process ran, and those whose rows
/// leave them out. Most are forgotten once their message's row is written.
#[derive(Debug, Default)]
pub(super) struct StreamedInputs(HashMap<String, StreamedInput>);

/// Where a tool call's arguments are in a session's file, and whether they are its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct StreamedInput {
    /// The sequence number its first piece follows.
    after: u64,
    /// Its `ToolCallReady` was what streamed, parsed (`Append::input_streamed`).
    ready: bool,
}

impl StreamedInputs {
    /// A piece was appended to the file: a tool call's first says where its arguments start.
    pub(super) fn appended(&mut self, piece: &SessionEvent) {
        if let EventBody::ToolInputDelta { tool_use_id, .. } = &piece.body
            && !self.0.contains_key(tool_use_id)
        {
            self.0.insert(tool_use_id.clone(), StreamedInput { after: piece.seq - 1, ready: false });
        }
    }

    /// Tool call `id`'s `ToolCallReady` is what streamed (`ready`), or is not known to be (one
    /// stored with the input it gave).
    pub(super) fn ready(&mut self, id: &str, ready: bool) {
        if let Some(input) = self.0.get_mut(id) {
            input.ready = ready;
        }
    }
}

impl StreamedInputs {
    /// The inputs of a message's tool calls that its row leaves out. Those it holds are forgotten:
    /// the file's pieces are no longer needed to read them back.
    pub(super) fn left_out_of(&mut self, message: &Message) -> LeftOut {
        let mut left_out = LeftOut::new();
        for block in &message.blocks {
            let Block::ToolCall(ToolCall { id, input: Some(input), .. }) = block else { continue };
            match self.0.get(id) {
                Some(&StreamedInput { after, ready: true }) if left_out_of_rows(input) => {
                    left_out.insert(id.clone(), after);
                }
                Some(_) => {
                    self.0.remove(id);
                }
                None => {}
            }
        }
        left_out
    }

    /// The rows read back leave these inputs out: their next writes leave them out again.
    pub(super) fn remember(&mut self, left_out: &[Option<LeftOut>]) {
        for (id, &after) in left_out.iter().flatten().flatten() {
            self.0.insert(id.clone(), StreamedInput { after, ready: true });
        }
    }
}

/// A message's blocks as its row stores them: without the inputs `left_out` names.
pub(super) fn stored_blocks<'a>(blocks: &'a [Block], left_out: &LeftOut) -> Cow<'a, [Block]> {
    if left_out.is_empty() {
        return Cow::Borrowed(blocks);
    }
    Cow::Owned(
        blocks
            .iter()
            .map(|block| match block {
                Block::ToolCall(call) if left_out.contains_key(&call.id) => Block::ToolCall(without_input(call)),
                other => other.clone(),
            })
            .collect(),
    )
}

/// Gives the rows' left-out inputs back from the session's file (its pieces after the least of
/// their sequence numbers). An input whose pieces cannot be read (a damaged file, or one not kept
/// with the database) stays `None`, and says so in the log.
pub(super) fn read_back(messages: &mut [Message], left_out: &[Option<LeftOut>], pieces: &[SessionEvent]) {
    let wanted: HashMap<&str, u64> =
        left_out.iter().flatten().flat_map(|row| row.iter().map(|(id, &after)| (id.as_str(), after))).collect();
    let mut streamed: HashMap<&str, String> = HashMap::new();
    for piece in pieces {
        if let EventBody::ToolInputDelta { tool_use_id, partial_json } = &piece.body
            && let Some((&id, _)) = wanted.get_key_value(tool_use_id.as_str()).filter(|(_, after)| piece.seq > **after)
        {
            streamed.entry(id).or_default().push_str(partial_json);
        }
    }
    for (message, row) in messages.iter_mut().zip(left_out) {
        let Some(row) = row else { continue };
        for block in &mut message.blocks {
            let Block::ToolCall(call) = block else { continue };
            if !row.contains_key(&call.id) {
                continue;
            }
            match streamed.get(call.id.as_str()).and_then(|text| serde_json::from_str(text).ok()) {
                Some(input) => call.input = Some(input),
                None => {
                    tracing::warn!(tool_use_id = %call.id, "a tool call's streamed arguments could not be read back")
                }
            }
        }
    }
}

/// The least sequence number after which the rows' left-out inputs are in the file.
pub(super) fn read_from(left_out: &[Option<LeftOut>]) -> Option<u64> {
    left_out.iter().flatten().flat_map(|row| row.values().copied()).min()
}

/// Whether an input is left out of its row: large, and nothing in it that search reads.
fn left_out_of_rows(input: &Value) -> bool {
    text_bytes(input) >= LEFT_OUT_FROM && !searched(input)
}

/// The bytes of an input's strings: most of what its JSON is.
fn text_bytes(value: &Value) -> usize {
    match value {
        Value::String(text) => text.len(),
        Value::Array(items) => items.iter().map(text_bytes).sum(),
        Value::Object(fields) => fields.iter().map(|(key, value)| key.len() + text_bytes(value)).sum(),
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
    }
}

/// Whether search reads any of the value's text (`SEARCHED_KEYS`, at any depth).
fn searched(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.iter().any(searched),
        Value::Object(fields) => {
            fields.iter().any(|(key, value)| SEARCHED_KEYS.contains(&key.as_str()) || searched(value))
        }
        Value::String(_) | Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

/// The call as its row stores it: field by field, so that the large input is not cloned to be
/// dropped.
fn without_input(call: &ToolCall) -> ToolCall {
    ToolCall {
        id: call.id.clone(),
        name: call.name.clone(),
        input: None,
        partial_input: String::new(),
        preview: call.preview.clone(),
        status: call.status,
        result: call.result.clone(),
        interaction: call.interaction.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_reads_the_keys_the_search_trigger_reads() {
        let trigger = include_str!("../../migrations/sqlite/0017_search_reindex_on_change.sql");
        let (_, keys) = trigger.split_once("t.key IN (").expect("the trigger names its keys");
        let keys: Vec<&str> =
            keys.split_once(')').unwrap().0.split(',').map(|key| key.trim().trim_matches('\'')).collect();
        assert_eq!(keys, SEARCHED_KEYS);
    }

    #[test]
    fn a_large_input_is_left_out_unless_search_reads_some_of_it() {
        let content = "x".repeat(LEFT_OUT_FROM);
        assert!(left_out_of_rows(&serde_json::json!({"file_path": "/a", "content": content})));
        assert!(!left_out_of_rows(&serde_json::json!({"file_path": "/a", "content": "small"})));
        assert!(!left_out_of_rows(&serde_json::json!({"command": content})), "a command is searched");
        let plan = serde_json::json!({"steps": [{"plan": "p", "detail": content}]});
        assert!(!left_out_of_rows(&plan), "at any depth");
    }
}
