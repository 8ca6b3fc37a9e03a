//! AskBridge's hooks in Claude Code's user settings (`settings.json`), added and removed as text
//! edits, so that everything else in the file keeps its bytes: its keys, other hooks, indentation,
//! line endings, a missing final newline. A person's settings are theirs; a program that rewrote
//! the whole file (as `serde_json` would) would reorder and reindent what it has no business with.
//!
//! `connect` finds where each entry goes and inserts it in the file's own style, and records each
//! edit (where, how long, what it replaced: only whitespace). `disconnect` undoes the edits
//! exactly when the file is as `connect` left it (its digest says so); otherwise it removes
//! AskBridge's entries wherever they are now, and leaves the rest as it finds it.
//!
//! The file is checked to be JSON by `serde_json` first; the scanner below only finds where each
//! value starts and ends.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// One hook AskBridge adds: under `event`, a matcher group with one command hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookEntry {
    pub event: &'static str,
    /// `None` for events without matchers (Notification, Stop, …).
    pub matcher: Option<&'static str>,
    pub command: String,
    /// Seconds Claude Code lets the command run.
    pub timeout: u64,
}

/// What went wrong with the settings file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("it is not valid JSON ({0}); fix it by hand first, nothing was changed")]
    NotJson(String),
    #[error("it is not a JSON object; nothing was changed")]
    NotAnObject,
    #[error(
        "its “{0}” is not what Claude Code expects there (an object of hooks, or a list of matchers); nothing was changed"
    )]
    Unexpected(String),
}

/// One text edit of `connect`: at `at`, `inserted` bytes replaced `removed` (whitespace, or
/// nothing). Offsets are in the text as it was after this edit and every edit before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edit {
    pub at: usize,
    pub inserted: usize,
    pub removed: String,
}

/// What `connect` did to the file, kept (in AskBridge's own connection file) to undo it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// There was no file: `disconnect` removes it again if nothing else was added.
    pub created: bool,
    pub edits: Vec<Edit>,
    /// SHA-256 (hex) of the file as `connect` left it.
    pub digest: String,
}

/// The file after `connect`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connected {
    pub text: String,
    /// The events whose entry was added now (those already there are left alone).
    pub added: Vec<&'static str>,
    pub record: Record,
}

/// The file after `disconnect`: `None` when it is to be removed (`connect` made it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disconnected {
    pub text: Option<String>,
    /// How many of AskBridge's entries were taken out.
    pub removed: usize,
    /// The file had changed since `connect`: the entries were found and removed one by one.
    pub searched: bool,
}

/// Whether a hook command is AskBridge's (`'…/askbridge' hook`).
pub fn is_ours(command: &str) -> bool {
    command.contains("askbridge") && command.split_whitespace().any(|word| word == "hook")
}

pub fn digest(text: &str) -> String {
    Sha256::digest(text.as_bytes()).iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Adds each entry whose event has none of AskBridge's yet. `original` is the file's text, `None`
/// when there is no file.
pub fn connect(original: Option<&str>, entries: &[HookEntry]) -> Result<Connected, SettingsError> {
    let mut record = Record { created: original.is_none(), ..Record::default() };
    let mut text = original.unwrap_or_default().to_string();
    if text.trim().is_empty() {
        let added: Vec<_> = entries.iter().map(|e| e.event).collect();
        let style = Style { nl: "\n", unit: "  ".into(), compact: false };
        let root = format!("{{\n  {}\n}}\n", member("hooks", &HooksValue(entries), &style, "  "));
        record.edits.push(Edit { at: 0, inserted: root.len(), removed: text.clone() });
        record.digest = digest(&root);
        return Ok(Connected { text: root, added, record });
    }
    check_json(&text)?;
    let mut added = Vec::new();
    // One edit at a time, each found in the text as the edits before it left it.
    loop {
        let root = parse(&text)?;
        let style = Style::of(&text, &root);
        let Node::Object { members, .. } = &root else { return Err(SettingsError::NotAnObject) };
        let edit = match members.iter().find(|m| m.key == "hooks") {
            None => {
                added.extend(entries.iter().map(|e| e.event));
                Some(insert(&text, &root, &Item::new(Some("hooks"), &HooksValue(entries), &style), &style))
            }
            Some(hooks) => {
                let Node::Object { members: events, .. } = &hooks.value else {
                    return Err(SettingsError::Unexpected("hooks".into()));
                };
                let mut next = None;
                for entry in entries {
                    match events.iter().find(|m| m.key == entry.event) {
                        None => {
                            added.push(entry.event);
                            let value = [Group::of(entry)];
                            let item = Item::new(Some(entry.event), &value, &style);
                            next = Some(insert(&text, &hooks.value, &item, &style));
                            break;
                        }
                        Some(event) => {
                            let Node::Array { items, .. } = &event.value else {
                                return Err(SettingsError::Unexpected(format!("hooks.{}", entry.event)));
                            };
                            if items.iter().any(|item| group_hooks(&text, item).iter().any(|c| is_ours(c))) {
                                continue;
                            }
                            added.push(entry.event);
                            let item = Item::new(None, &Group::of(entry), &style);
                            next = Some(insert(&text, &event.value, &item, &style));
                            break;
                        }
                    }
                }
                next
            }
        };
        let Some((at, removed_len, inserted)) = edit else { break };
        let removed = text[at..at + removed_len].to_string();
        text.replace_range(at..at + removed_len, &inserted);
        record.edits.push(Edit { at, inserted: inserted.len(), removed });
    }
    record.digest = digest(&text);
    Ok(Connected { text, added, record })
}

/// Takes AskBridge's entries out of `text`: exactly `connect`'s edits undone when the file is as
/// it left it, else each entry found and removed.
pub fn disconnect(text: &str, record: Option<&Record>) -> Result<Disconnected, SettingsError> {
    if let Some(record) = record.filter(|r| r.digest == digest(text) && !r.edits.is_empty()) {
        let mut restored = text.to_string();
        let mut removed = 0;
        for edit in record.edits.iter().rev() {
            let end = edit.at + edit.inserted;
            if end > restored.len() || !restored.is_char_boundary(edit.at) || !restored.is_char_boundary(end) {
                return search_and_remove(text);
            }
            removed += restored[edit.at..end].matches("\"command\"").count();
            restored.replace_range(edit.at..end, &edit.removed);
        }
        let text = if record.created && restored.is_empty() { None } else { Some(restored) };
        return Ok(Disconnected { text, removed, searched: false });
    }
    search_and_remove(text)
}

fn search_and_remove(original: &str) -> Result<Disconnected, SettingsError> {
    if original.trim().is_empty() {
        return Ok(Disconnected { text: Some(original.to_string()), removed: 0, searched: true });
    }
    check_json(original)?;
    let mut text = original.to_string();
    let mut removed = 0;
    loop {
        let root = parse(&text)?;
        let Some(cut) = next_removal(&text, &root)? else { break };
        if cut.ours {
            removed += 1;
        }
        text.replace_range(cut.from..cut.to, "");
    }
    Ok(Disconnected { text: Some(text), removed, searched: true })
}

struct Cut {
    from: usize,
    to: usize,
    /// One of AskBridge's hooks (rather than a container it left empty).
    ours: bool,
}

/// The first of AskBridge's hooks still in the file (a whole matcher group when all of its hooks
/// are ours), or an event list or `hooks` object emptied by removing them.
fn next_removal(text: &str, root: &Node) -> Result<Option<Cut>, SettingsError> {
    let Node::Object { members, .. } = root else { return Err(SettingsError::NotAnObject) };
    let Some(hooks) = members.iter().find(|m| m.key == "hooks") else { return Ok(None) };
    let Node::Object { members: events, .. } = &hooks.value else { return Ok(None) };
    for event in events {
        let Node::Array { items: groups, .. } = &event.value else { continue };
        for (g, group) in groups.iter().enumerate() {
            let commands = group_hooks(text, group);
            if commands.is_empty() || !commands.iter().any(|c| is_ours(c)) {
                continue;
            }
            if commands.iter().all(|c| is_ours(c)) {
                let (from, to) = item_span(text, &event.value, g);
                return Ok(Some(Cut { from, to, ours: true }));
            }
            // Someone put other hooks beside ours: only ours goes.
            if let Node::Object { members, .. } = group
                && let Some(list) = members.iter().find(|m| m.key == "hooks")
                && let Node::Array { items, .. } = &list.value
                && let Some(h) = items.iter().position(|item| command_of(text, item).is_some_and(|c| is_ours(&c)))
            {
                let (from, to) = item_span(text, &list.value, h);
                return Ok(Some(Cut { from, to, ours: true }));
            }
        }
        if groups.is_empty() && HOOK_EVENTS.contains(&event.key.as_str()) {
            let index = events.iter().position(|e| std::ptr::eq(e, event)).unwrap_or_default();
            let (from, to) = item_span(text, &hooks.value, index);
            return Ok(Some(Cut { from, to, ours: false }));
        }
    }
    if events.is_empty() && hooks.value.is_empty_container(text) {
        let index = members.iter().position(|m| m.key == "hooks").unwrap_or_default();
        let (from, to) = item_span(text, root, index);
        return Ok(Some(Cut { from, to, ours: false }));
    }
    Ok(None)
}

/// The events AskBridge registers (an empty list of one of these, left by a removal, goes too).
const HOOK_EVENTS: &[&str] =
    &["PermissionRequest", "Notification", "Stop", "UserPromptSubmit", "SessionStart", "SessionEnd"];

/// The commands of a matcher group's hooks.
fn group_hooks(text: &str, group: &Node) -> Vec<String> {
    let Node::Object { members, .. } = group else { return Vec::new() };
    let Some(list) = members.iter().find(|m| m.key == "hooks") else { return Vec::new() };
    let Node::Array { items, .. } = &list.value else { return Vec::new() };
    items.iter().filter_map(|item| command_of(text, item)).collect()
}

fn command_of(text: &str, hook: &Node) -> Option<String> {
    let value: Value = serde_json::from_str(&text[hook.start()..hook.end()]).ok()?;
    value.get("command")?.as_str().map(str::to_string)
}

/// The span that removing item `index` of `container` takes out: the item and the separator
/// before it (or, for the first, the one after it; for the only one, everything inside).
fn item_span(text: &str, container: &Node, index: usize) -> (usize, usize) {
    let starts = container.item_starts();
    let ends = container.item_ends();
    if index > 0 {
        (ends[index - 1], ends[index])
    } else if starts.len() > 1 {
        (starts[0], starts[1])
    } else {
        let (open, close) = (container.start() + 1, container.end() - 1);
        // The only item: the container keeps no whitespace it held around it.
        let _ = text;
        (open, close)
    }
}

fn check_json(text: &str) -> Result<(), SettingsError> {
    serde_json::from_str::<Value>(text).map(drop).map_err(|error| SettingsError::NotJson(error.to_string()))
}

// ---- The file's style ----

struct Style {
    nl: &'static str,
    /// One level of indentation (two spaces, four, a tab…).
    unit: String,
    /// The root object is written on one line.
    compact: bool,
}

impl Style {
    fn of(text: &str, root: &Node) -> Self {
        let nl = if text.contains("\r\n") { "\r\n" } else { "\n" };
        let starts = root.item_starts();
        let compact = match starts.first() {
            Some(&first) => !text[root.start()..first].contains('\n'),
            None => false,
        };
        let unit = starts
            .first()
            .map(|&first| line_indent(text, first).to_string())
            .filter(|indent| !indent.is_empty())
            .map(|indent| {
                let base = line_indent(text, root.start());
                indent.strip_prefix(base).filter(|u| !u.is_empty()).unwrap_or(&indent).to_string()
            })
            .unwrap_or_else(|| "  ".into());
        Style { nl, unit, compact }
    }
}

/// The whitespace that starts the line holding byte `at`.
fn line_indent(text: &str, at: usize) -> &str {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..];
    let width = line.len() - line.trim_start_matches([' ', '\t']).len();
    &line[..width.min(at - line_start)]
}

/// What is inserted: `"key": value` in an object, or a value in an array, written both ways.
struct Item {
    /// Indented in the file's unit, as if at the left margin.
    pretty: String,
    /// On one line.
    compact: String,
}

impl Item {
    fn new(key: Option<&str>, value: &impl Serialize, style: &Style) -> Self {
        let compact = serde_json::to_string(value).expect("hook entries serialize");
        match key {
            Some(key) => Item { pretty: member(key, value, style, ""), compact: format!("{}:{compact}", quoted(key)) },
            None => Item { pretty: pretty(value, style, ""), compact },
        }
    }

    fn at(&self, style: &Style, indent: &str) -> String {
        self.pretty.replace(style.nl, &format!("{}{indent}", style.nl))
    }
}

fn quoted(key: &str) -> String {
    serde_json::to_string(key).expect("a key serializes")
}

/// Where `item` goes at the end of `container`, in the file's style: (offset, bytes replaced,
/// text inserted).
fn insert(text: &str, container: &Node, item: &Item, style: &Style) -> (usize, usize, String) {
    let ends = container.item_ends();
    let starts = container.item_starts();
    let render = |indent: &str| item.at(style, indent);
    if let (Some(&last_end), Some(&last_start), Some(&first_start)) = (ends.last(), starts.last(), starts.first()) {
        let multiline = text[container.start()..first_start].contains('\n');
        if multiline && !style.compact {
            let indent = line_indent(text, last_start);
            return (last_end, 0, format!(",{}{indent}{}", style.nl, render(indent)));
        }
        let spaced = text[container.start() + 1..first_start].starts_with(' ')
            || (starts.len() > 1 && text[ends[0]..starts[1]].contains(", "));
        let sep = if spaced { ", " } else { "," };
        return (last_end, 0, format!("{sep}{}", item.compact));
    }
    let (open, close) = (container.start() + 1, container.end() - 1);
    if style.compact {
        return (open, close - open, item.compact.clone());
    }
    let outer = line_indent(text, container.start());
    let inner = format!("{outer}{}", style.unit);
    (open, close - open, format!("{nl}{inner}{}{nl}{outer}", render(&inner), nl = style.nl))
}

fn member(key: &str, value: &impl Serialize, style: &Style, indent: &str) -> String {
    format!("{}: {}", quoted(key), pretty(value, style, indent))
}

/// `value` as indented JSON in the file's unit, its lines after the first at `indent`.
fn pretty(value: &impl Serialize, style: &Style, indent: &str) -> String {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(style.unit.as_bytes());
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    value.serialize(&mut serializer).expect("hook entries serialize");
    let text = String::from_utf8(out).expect("JSON is UTF-8");
    text.replace('\n', &format!("{}{indent}", style.nl))
}

// ---- What is written ----

/// A matcher group, its keys in the order people write them.
#[derive(Serialize)]
struct Group<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    matcher: Option<&'a str>,
    hooks: [Command<'a>; 1],
}

#[derive(Serialize)]
struct Command<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    command: &'a str,
    timeout: u64,
}

impl<'a> Group<'a> {
    fn of(entry: &'a HookEntry) -> Self {
        Group {
            matcher: entry.matcher,
            hooks: [Command { kind: "command", command: &entry.command, timeout: entry.timeout }],
        }
    }
}

/// The `hooks` object for a file that has none, events in the order given.
struct HooksValue<'a>(&'a [HookEntry]);

impl Serialize for HooksValue<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for entry in self.0 {
            map.serialize_entry(entry.event, &[Group::of(entry)])?;
        }
        map.end()
    }
}

// ---- Where each value is ----

/// A JSON value and where it lies in the text (`end` exclusive).
#[derive(Debug)]
enum Node {
    Object { start: usize, end: usize, members: Vec<Member> },
    Array { start: usize, end: usize, items: Vec<Node> },
    Scalar { start: usize, end: usize },
}

#[derive(Debug)]
struct Member {
    key: String,
    key_start: usize,
    value: Node,
}

impl Node {
    fn start(&self) -> usize {
        match self {
            Node::Object { start, .. } | Node::Array { start, .. } | Node::Scalar { start, .. } => *start,
        }
    }

    fn end(&self) -> usize {
        match self {
            Node::Object { end, .. } | Node::Array { end, .. } | Node::Scalar { end, .. } => *end,
        }
    }

    /// Where each item starts (a member at its key).
    fn item_starts(&self) -> Vec<usize> {
        match self {
            Node::Object { members, .. } => members.iter().map(|m| m.key_start).collect(),
            Node::Array { items, .. } => items.iter().map(Node::start).collect(),
            Node::Scalar { .. } => Vec::new(),
        }
    }

    fn item_ends(&self) -> Vec<usize> {
        match self {
            Node::Object { members, .. } => members.iter().map(|m| m.value.end()).collect(),
            Node::Array { items, .. } => items.iter().map(Node::end).collect(),
            Node::Scalar { .. } => Vec::new(),
        }
    }

    fn is_empty_container(&self, _text: &str) -> bool {
        self.item_starts().is_empty() && !matches!(self, Node::Scalar { .. })
    }
}

/// Scans `text` (already known to be JSON) into nodes with their spans.
fn parse(text: &str) -> Result<Node, SettingsError> {
    let mut scanner = Scanner { text: text.as_bytes(), at: 0 };
    scanner.space();
    let node = scanner.value().ok_or_else(|| SettingsError::NotJson("unexpected text".into()))?;
    Ok(node)
}

struct Scanner<'a> {
    text: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn space(&mut self) {
        while self.text.get(self.at).is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn value(&mut self) -> Option<Node> {
        let start = self.at;
        match self.peek()? {
            b'{' => {
                self.at += 1;
                let mut members = Vec::new();
                loop {
                    self.space();
                    match self.peek()? {
                        b'}' => break,
                        b',' => {
                            self.at += 1;
                            continue;
                        }
                        _ => {}
                    }
                    let key_start = self.at;
                    let key_end = self.string()?;
                    let key: String = serde_json::from_slice(&self.text[key_start..key_end]).ok()?;
                    self.space();
                    (self.peek()? == b':').then_some(())?;
                    self.at += 1;
                    self.space();
                    let value = self.value()?;
                    members.push(Member { key, key_start, value });
                }
                self.at += 1;
                Some(Node::Object { start, end: self.at, members })
            }
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                loop {
                    self.space();
                    match self.peek()? {
                        b']' => break,
                        b',' => {
                            self.at += 1;
                            continue;
                        }
                        _ => items.push(self.value()?),
                    }
                }
                self.at += 1;
                Some(Node::Array { start, end: self.at, items })
            }
            b'"' => {
                let end = self.string()?;
                Some(Node::Scalar { start, end })
            }
            _ => {
                while self.peek().is_some_and(|b| !matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')) {
                    self.at += 1;
                }
                (self.at > start).then_some(Node::Scalar { start, end: self.at })
            }
        }
    }

    /// A string at the cursor; returns where it ends (after the closing quote).
    fn string(&mut self) -> Option<usize> {
        (self.peek()? == b'"').then_some(())?;
        self.at += 1;
        loop {
            match self.peek()? {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    return Some(self.at);
                }
                _ => self.at += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests;
