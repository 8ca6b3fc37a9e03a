//! A transcript's newest messages first, and older ones a page at a time: the file is read from
//! the end (or from a cursor) backwards, only as far as the page needs, so a 20 MB transcript
//! opens at its end in milliseconds. A cursor is the offset of the first line of the page after
//! it; the file only grows at its end, so a cursor stays valid while Claude Code writes on.

use std::fs::File;

use serde::{Deserialize, Serialize};

use super::entry::{ContentBlock, Entry};
use super::history::{Fold, MessageKey, message_key};
use super::lines::{self, Backwards};
use crate::thread::Message;

/// How far past a page's end the results of its last calls are looked for (they follow their
/// call within a few lines; a page that ends inside a turn needs them).
const RESULT_LOOKAHEAD_BYTES: usize = 4 * 1024 * 1024;

/// A page of a transcript's thread, oldest message first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranscriptPage {
    pub messages: Vec<Message>,
    /// Pass as `before` for the messages before these; `None`: this page starts the transcript.
    pub older: Option<u64>,
    /// Where this page ends in the file: its size when the newest page was read. Lines written
    /// since start there.
    pub end: u64,
}

/// The last `limit` messages (at least one) that end before `before` (the end of the file when
/// `None`). `before` must be a line start, as every cursor this gives out is.
pub fn read(file: &File, before: Option<u64>, limit: usize) -> std::io::Result<Result<TranscriptPage, BadCursor>> {
    let len = file.metadata()?.len();
    let end = before.unwrap_or(len);
    if before.is_some() && !lines::is_line_start(file, end, len)? {
        return Ok(Err(BadCursor));
    }
    let limit = limit.max(1);
    // Newest first: entries until the page holds `limit` messages and the next would start one more.
    let mut entries: Vec<(u64, Entry)> = Vec::new();
    let mut counted = 0;
    let mut last_key: Option<MessageKey> = None;
    let mut older = None;
    for line in Backwards::new(file, end) {
        let line = line?;
        let Some(entry) = line.bytes.as_deref().and_then(Entry::parse) else { continue };
        if entry.is_sidechain() {
            continue;
        }
        if let Some(key) = message_key(&entry, line.offset)
            && last_key.as_ref() != Some(&key)
        {
            if counted == limit {
                older = entries.last().map(|(offset, _)| *offset);
                break;
            }
            counted += 1;
            last_key = Some(key);
        }
        entries.push((line.offset, entry));
    }
    let mut fold = Fold::default();
    for (offset, entry) in entries.iter().rev() {
        fold.push(entry, *offset);
    }
    let more_after = end < len;
    if more_after {
        find_results_after(file, end, &mut fold)?;
    }
    let messages = fold.finish(more_after);
    Ok(Ok(TranscriptPage { messages, older: older.filter(|offset| *offset > 0), end }))
}

/// The cursor does not point at a line of this transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadCursor;

/// A page that ends inside a turn has calls whose results are on the next page: they are read from
/// the lines after it.
fn find_results_after(file: &File, from: u64, fold: &mut Fold) -> std::io::Result<()> {
    let mut open = fold.open_calls();
    if open.is_empty() {
        return Ok(());
    }
    let mut buf = vec![0; RESULT_LOOKAHEAD_BYTES];
    let mut filled = 0;
    while filled < buf.len() {
        match std::os::unix::fs::FileExt::read_at(file, &mut buf[filled..], from + filled as u64)? {
            0 => break,
            n => filled += n,
        }
    }
    for line in buf[..filled].split(|b| *b == b'\n') {
        let Some(entry) = Entry::parse(line) else { continue };
        if entry.kind() != "user" || entry.is_sidechain() {
            continue;
        }
        for block in entry.blocks() {
            if let ContentBlock::ToolResult { tool_use_id, content, is_error } = block
                && let Some(at) = open.iter().position(|id| id == tool_use_id)
            {
                fold.settle(tool_use_id, content, is_error, entry.tool_use_result());
                open.swap_remove(at);
            }
        }
        if open.is_empty() {
            break;
        }
    }
    Ok(())
}
