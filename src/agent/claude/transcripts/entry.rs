//! One line of a Claude Code transcript, read leniently. The format is Claude Code's own and
//! changes between versions (new entry types, new fields), so every field is looked up by hand and
//! a field of an unexpected type counts as absent: a line we cannot use is skipped, never an error.
//!
//! What CLI 2.1.332 writes (tests/fixtures/claude-cli/transcripts/): `user` and `assistant`
//! entries, chained by `uuid`/`parentUuid`, with `sessionId`, `cwd`, `timestamp`, `isSidechain`;
//! an assistant message is one line per content block, the lines sharing `message.id`; tool
//! results come back as `user` entries holding `tool_result` blocks and a structured
//! `toolUseResult`. Around them: `summary`, `system`, `queue-operation`, `last-prompt`,
//! `file-history-snapshot` and others we do not show.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    value: Value,
}

impl Entry {
    /// The entry on one line, if the line is a JSON object with a `type`. Bytes that are not
    /// UTF-8 are replaced (a stray byte costs a character, not the message).
    pub fn parse(line: &[u8]) -> Option<Self> {
        let text = String::from_utf8_lossy(line);
        let value: Value = serde_json::from_str(text.trim()).ok()?;
        value.get("type")?.as_str()?;
        Some(Self { value })
    }

    pub fn kind(&self) -> &str {
        self.str("type").unwrap_or_default()
    }

    pub fn uuid(&self) -> Option<&str> {
        self.str("uuid")
    }

    /// The entry before this one in the conversation: `parentUuid`, or across a compaction (whose
    /// boundary starts a new chain) `logicalParentUuid`.
    pub fn parent(&self) -> Option<&str> {
        self.str("parentUuid").or_else(|| self.str("logicalParentUuid"))
    }

    pub fn cwd(&self) -> Option<&str> {
        self.str("cwd").filter(|cwd| !cwd.is_empty())
    }

    /// When the entry was written, in ms since the epoch.
    pub fn at_ms(&self) -> Option<i64> {
        let stamp = self.str("timestamp")?;
        let time = humantime::parse_rfc3339_weak(stamp.trim_end_matches('Z')).ok()?;
        let since = time.duration_since(std::time::UNIX_EPOCH).ok()?;
        i64::try_from(since.as_millis()).ok()
    }

    /// A subagent's entry (or a side conversation): not part of the session's own thread.
    pub fn is_sidechain(&self) -> bool {
        self.flag("isSidechain") || self.str("agentId").is_some()
    }

    /// Something Claude Code adds for the model (a caveat before a local command's output, a
    /// skill's text), not what the person wrote.
    pub fn is_meta(&self) -> bool {
        self.flag("isMeta")
    }

    /// The summary that replaces the history before a `/compact`.
    pub fn is_compact_summary(&self) -> bool {
        self.flag("isCompactSummary")
    }

    /// `summary` entries: a title for the conversation.
    pub fn summary(&self) -> Option<&str> {
        self.str("summary")
    }

    pub fn subtype(&self) -> Option<&str> {
        self.str("subtype")
    }

    /// `message.id` of an assistant entry: the lines of one API message share it.
    pub fn message_id(&self) -> Option<&str> {
        self.value.get("message")?.get("id")?.as_str()
    }

    /// `message.content`: a string, or a list of content blocks.
    pub fn content(&self) -> Option<&Value> {
        self.value.get("message")?.get("content")
    }

    /// The content blocks (a string content is one text block).
    pub fn blocks(&self) -> Vec<ContentBlock<'_>> {
        match self.content() {
            Some(Value::String(text)) => vec![ContentBlock::Text(text)],
            Some(Value::Array(blocks)) => blocks.iter().map(ContentBlock::of).collect(),
            _ => Vec::new(),
        }
    }

    /// The structured result of a tool (`toolUseResult`), e.g. AskUserQuestion's answers.
    pub fn tool_use_result(&self) -> Option<&Value> {
        self.value.get("toolUseResult")
    }

    /// A user entry that is something the person wrote (text or images), not only tool results.
    pub fn is_prompt(&self) -> bool {
        self.kind() == "user"
            && !self.is_sidechain()
            && !self.is_meta()
            && self.blocks().iter().any(|b| matches!(b, ContentBlock::Text(_) | ContentBlock::Image(_)))
    }

    /// Any top-level string field.
    pub fn str_field(&self, key: &str) -> Option<&str> {
        self.str(key)
    }

    /// Any top-level number.
    pub fn f64_field(&self, key: &str) -> Option<f64> {
        self.value.get(key)?.as_f64()
    }

    fn str(&self, key: &str) -> Option<&str> {
        self.value.get(key)?.as_str()
    }

    fn flag(&self, key: &str) -> bool {
        self.value.get(key).and_then(Value::as_bool).unwrap_or(false)
    }
}

/// A content block of a message, as much of it as the thread shows.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock<'a> {
    Text(&'a str),
    Image(&'a Value),
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a Value,
        is_error: bool,
    },
    /// Thinking, server tools, and whatever comes next.
    Other,
}

impl<'a> ContentBlock<'a> {
    fn of(block: &'a Value) -> Self {
        let str = |key: &str| block.get(key).and_then(Value::as_str);
        match str("type") {
            Some("text") => str("text").map(ContentBlock::Text).unwrap_or(ContentBlock::Other),
            Some("image") => block.get("source").map(ContentBlock::Image).unwrap_or(ContentBlock::Other),
            Some("tool_use") => match (str("id"), str("name")) {
                (Some(id), Some(name)) => {
                    ContentBlock::ToolUse { id, name, input: block.get("input").unwrap_or(&Value::Null) }
                }
                _ => ContentBlock::Other,
            },
            Some("tool_result") => match str("tool_use_id") {
                Some(tool_use_id) => ContentBlock::ToolResult {
                    tool_use_id,
                    content: block.get("content").unwrap_or(&Value::Null),
                    is_error: block.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                },
                None => ContentBlock::Other,
            },
            _ => ContentBlock::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_an_entry_only_if_it_is_an_object_with_a_type() {
        assert!(Entry::parse(br#"{"type":"user"}"#).is_some());
        for bad in [&b""[..], b"null", b"[1]", br#"{"uuid":"x"}"#, br#"{"type":3}"#, b"{\"type\":\"us", b"\xff\xfe"] {
            assert_eq!(Entry::parse(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn bytes_that_are_not_utf8_cost_a_character_not_the_line() {
        let entry = Entry::parse(b"{\"type\":\"user\",\"message\":{\"content\":\"caf\xe9\"}}").unwrap();
        assert_eq!(entry.blocks(), vec![ContentBlock::Text("caf\u{fffd}")]);
    }

    #[test]
    fn fields_of_an_unexpected_type_count_as_absent() {
        let entry =
            Entry::parse(br#"{"type":"user","cwd":7,"isSidechain":"yes","timestamp":false,"message":{"content":5}}"#)
                .unwrap();
        assert_eq!(entry.cwd(), None);
        assert!(!entry.is_sidechain());
        assert_eq!(entry.at_ms(), None);
        assert!(entry.blocks().is_empty());
    }

    #[test]
    fn timestamps_are_read_with_their_milliseconds() {
        let entry = Entry::parse(br#"{"type":"user","timestamp":"2026-11-26T10:00:01.250Z"}"#).unwrap();
        assert_eq!(entry.at_ms(), Some(1_795_687_201_250));
    }
}
