//! A transcript's newest messages first, and older ones a page at a time: the file is read from
//! the end (or from a cursor) backwards, only as far as the page needs, so a 20 MB transcript
//! opens at its end in milliseconds. The file only grows at its end, so a cursor stays valid while
//! Claude Code writes on.
//!
//! Only the conversation as it stands is shown, as `claude --resume` sees it: entries are chained
//! by `parentUuid`, and when the person went back to an earlier message and took another way
//! (a rewind), the way left behind stays in the file. Walking back from the newest entry, a message
//! that is not the one the chain expects is such a way left behind, and is skipped. If the entry
//! the chain expects never comes (a chain broken by a crash, an unknown writer), the page is read
//! again without the chain: nothing is hidden on a guess.

use std::fmt;
use std::fs::File;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::entry::{ContentBlock, Entry};
use super::history::{Fold, MessageKey, message_key};
use super::lines::{self, Backwards};
use crate::thread::Message;

/// How far past a page's end the results of its last calls are looked for (they follow their
/// call within a few lines; a page that ends inside a turn needs them).
const RESULT_LOOKAHEAD_BYTES: usize = 4 * 1024 * 1024;
/// How many messages of a way left behind are skipped before the chain is taken as broken.
const MAX_SKIPPED: usize = 2000;

/// A page of a transcript's thread, oldest message first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranscriptPage {
    pub messages: Vec<Message>,
    /// Pass as `before` for the messages before these; `None`: this page starts the transcript.
    pub older: Option<Cursor>,
    /// Where this page ends in the file: its size when the newest page was read. Lines written
    /// since start there.
    pub end: u64,
}

/// Where a page starts: the offset of its first line, and the entry the chain expects before it.
/// Opaque to the browser, as a string: `"1234"` or `"1234:<uuid>"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct Cursor {
    pub offset: u64,
    expects: Option<String>,
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.expects {
            Some(uuid) => write!(f, "{}:{uuid}", self.offset),
            None => write!(f, "{}", self.offset),
        }
    }
}

impl FromStr for Cursor {
    type Err = BadCursor;

    fn from_str(text: &str) -> Result<Self, BadCursor> {
        let (offset, expects) = match text.split_once(':') {
            Some((offset, uuid)) => (offset, Some(uuid)),
            None => (text, None),
        };
        let offset = offset.parse().map_err(|_| BadCursor)?;
        let expects = match expects {
            Some(uuid) if is_uuid_like(uuid) => Some(uuid.to_string()),
            Some(_) => return Err(BadCursor),
            None => None,
        };
        Ok(Self { offset, expects })
    }
}

impl From<Cursor> for String {
    fn from(cursor: Cursor) -> Self {
        cursor.to_string()
    }
}

impl TryFrom<String> for Cursor {
    type Error = BadCursor;

    fn try_from(text: String) -> Result<Self, BadCursor> {
        text.parse()
    }
}

fn is_uuid_like(text: &str) -> bool {
    !text.is_empty() && text.len() <= 64 && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The cursor does not point at a line of this transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadCursor;

impl fmt::Display for BadCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("no such place in the transcript")
    }
}

/// The last `limit` messages (at least one) before `before` (the end of the file when `None`).
pub fn read(file: &File, before: Option<&Cursor>, limit: usize) -> std::io::Result<Result<TranscriptPage, BadCursor>> {
    let len = file.metadata()?.len();
    if let Some(cursor) = before
        && !lines::is_line_start(file, cursor.offset, len)?
    {
        return Ok(Err(BadCursor));
    }
    let limit = limit.max(1);
    let expects = before.and_then(|c| c.expects.clone());
    let page = match collect(file, before, limit, true, expects.clone())? {
        Some(page) => page,
        None => collect(file, before, limit, false, expects)?.expect("a page read without its chain always ends"),
    };
    let end = before.map_or(len, |c| c.offset);
    let mut fold = Fold::default();
    for (offset, entry) in page.entries.iter().rev() {
        fold.push(entry, *offset);
    }
    let more_after = end < len;
    if more_after {
        find_results_after(file, end, &mut fold)?;
    }
    Ok(Ok(TranscriptPage { messages: fold.finish(more_after), older: page.older, end }))
}

struct Collected {
    /// Newest first.
    entries: Vec<(u64, Entry)>,
    older: Option<Cursor>,
}

/// Entries, newest first, until the page holds `limit` messages and the next would start one
/// more. With `chain`, messages off the chain are skipped; `None` when the chain breaks.
fn collect(
    file: &File,
    before: Option<&Cursor>,
    limit: usize,
    chain: bool,
    mut expects: Option<String>,
) -> std::io::Result<Option<Collected>> {
    let end = before.map_or(file.metadata()?.len(), |c| c.offset);
    let mut entries: Vec<(u64, Entry)> = Vec::new();
    let mut counted = 0;
    let mut last_key: Option<MessageKey> = None;
    let mut skipped = 0;
    for line in Backwards::new(file, end) {
        let line = line?;
        let Some(entry) = line.bytes.as_deref().and_then(Entry::parse) else { continue };
        if entry.is_sidechain() {
            continue;
        }
        let key = message_key(&entry, line.offset);
        let starts_message = key.is_some() && key != last_key;
        let on_chain = match (&expects, entry.uuid()) {
            (Some(expected), Some(uuid)) => expected == uuid,
            _ => true,
        };
        if chain && !on_chain && starts_message {
            // A message of a way left behind. Its tool results and the rest of its lines pass
            // (they attach to nothing), so sibling lines of one message are never lost.
            skipped += 1;
            if skipped > MAX_SKIPPED {
                return Ok(None);
            }
            continue;
        }
        if starts_message {
            if counted == limit {
                // The next page goes on from here, still expecting this entry.
                let older = entries.last().map(|(offset, _)| Cursor { offset: *offset, expects: expects.clone() });
                return Ok(Some(Collected { entries, older }));
            }
            counted += 1;
            last_key = key;
        }
        if on_chain && entry.uuid().is_some() {
            expects = entry.parent().map(str::to_string);
            skipped = 0;
        }
        entries.push((line.offset, entry));
    }
    if chain && skipped > 0 {
        // The chain expected an entry that is not in the file.
        return Ok(None);
    }
    Ok(Some(Collected { entries, older: None }))
}

/// A page that ends inside a turn has calls whose results are on the next page: they are read from
/// the lines after it, up to the next prompt.
fn find_results_after(file: &File, from: u64, fold: &mut Fold) -> std::io::Result<()> {
    let mut open = fold.open_calls();
    if open.is_empty() {
        return Ok(());
    }
    for line in lines::Forwards::new(file, from, RESULT_LOOKAHEAD_BYTES) {
        let Some(entry) = line?.bytes.as_deref().and_then(Entry::parse) else { continue };
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
        // A new prompt: what is still open was cut off, and its result will not come.
        if open.is_empty() || entry.is_prompt() {
            break;
        }
    }
    Ok(())
}
