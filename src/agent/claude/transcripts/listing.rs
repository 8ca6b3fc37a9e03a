//! The session list: every transcript in the projects folder with its working folder, title, time
//! and size, grouped by working folder, newest first. Cheap for hundreds of files: each costs its
//! metadata, its first 64 KiB and its last 64 KiB, never a whole read.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::UNIX_EPOCH;

use serde::Serialize;

use super::entry::{ContentBlock, Entry};
use super::lines::{self, Backwards};
use super::live::Writer;
use super::projects::{ProjectsDir, TranscriptFile, folder_guess};

/// What is read from each end of a file.
const HEAD_BYTES: usize = 64 * 1024;
const TAIL_BYTES: u64 = 64 * 1024;
/// The longest title kept, in characters.
const TITLE_CHARS: usize = 200;

/// One Claude Code session, as the list shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TranscriptSummary {
    /// Claude Code's session id (`claude --resume <id>`).
    pub id: String,
    /// The project's folder name in the projects folder (`-work-project`).
    pub folder: String,
    /// The working folder the session ran in, from its entries' `cwd`; guessed from `folder`
    /// when no entry says (`project_known` false).
    pub project: String,
    pub project_known: bool,
    /// The conversation's summary (a `summary` entry, or the title set with `/rename`), if any.
    pub summary: Option<String>,
    /// The first thing the person wrote, trimmed to one line.
    pub first_prompt: Option<String>,
    /// When the transcript was last written, ms since the epoch.
    pub modified_ms: i64,
    pub size_bytes: u64,
    /// The number of entries (lines), when the whole file was read anyway (small files).
    pub entries: Option<u64>,
    /// The `claude` process writing it right now, if any (see `live`): a session a terminal
    /// runs (`ours` false) is read-only here until that process ends.
    pub running: Option<Writer>,
}

impl TranscriptSummary {
    /// What the list shows as the session's name.
    pub fn title(&self) -> &str {
        self.summary.as_deref().or(self.first_prompt.as_deref()).unwrap_or("(no prompt)")
    }
}

/// The sessions of one working folder, newest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProjectGroup {
    pub project: String,
    pub project_known: bool,
    pub sessions: Vec<TranscriptSummary>,
}

/// Every session in the projects folder, grouped by working folder; the group with the newest
/// session first, and newest first within each group. Files that cannot be read, that lie
/// outside the folder, or that hold no conversation (a subagent's, an empty one) are left out.
pub fn list(dir: &ProjectsDir) -> Vec<ProjectGroup> {
    let mut sessions: Vec<TranscriptSummary> =
        dir.transcripts().into_iter().filter_map(|transcript| summarize(dir, &transcript)).collect();
    sessions.sort_by(|a, b| b.modified_ms.cmp(&a.modified_ms).then_with(|| a.id.cmp(&b.id)));
    let mut groups: Vec<ProjectGroup> = Vec::new();
    for session in sessions {
        match groups.iter_mut().find(|g| g.project == session.project) {
            Some(group) => {
                group.project_known |= session.project_known;
                group.sessions.push(session);
            }
            None => groups.push(ProjectGroup {
                project: session.project.clone(),
                project_known: session.project_known,
                sessions: vec![session],
            }),
        }
    }
    groups
}

/// One transcript's summary, or `None` when it is no session worth listing.
pub fn summarize(dir: &ProjectsDir, transcript: &TranscriptFile) -> Option<TranscriptSummary> {
    let file = match dir.open(transcript) {
        Ok(file) => file,
        Err(error) => {
            tracing::debug!(id = %transcript.id, %error, "transcript left out of the list");
            return None;
        }
    };
    let metadata = file.metadata().ok()?;
    let size = metadata.len();
    let modified_ms = metadata
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let found = read_ends(&file, size).ok()?;
    if !found.conversation {
        return None;
    }
    let (project, project_known) = match found.cwd {
        Some(cwd) => (cwd, true),
        None => (folder_guess(&transcript.folder), false),
    };
    Some(TranscriptSummary {
        id: transcript.id.clone(),
        folder: transcript.folder.clone(),
        project,
        project_known,
        summary: found.summary.map(|s| one_line(&s)),
        first_prompt: found.first_prompt.map(|s| one_line(&s)),
        modified_ms,
        size_bytes: size,
        entries: found.entries,
        running: None,
    })
}

#[derive(Default)]
struct Ends {
    /// The latest `cwd`: where the session was last (where `--resume` continues it).
    cwd: Option<String>,
    summary: Option<String>,
    first_prompt: Option<String>,
    /// A user or assistant entry of the session's own (not a subagent's) was seen.
    conversation: bool,
    entries: Option<u64>,
}

fn read_ends(file: &File, size: u64) -> std::io::Result<Ends> {
    let mut ends = Ends::default();
    let (head, whole) = lines::head(file, HEAD_BYTES)?;
    let mut head_cwd = None;
    for line in &head {
        let Some(bytes) = line.bytes.as_deref() else { continue };
        // Parsing is what a listing costs: once the head has told what it can, only title
        // entries are parsed (the cwd kept is then the first one; the tail has the newest).
        let known = ends.first_prompt.is_some() && head_cwd.is_some();
        if known && !looks_like_title(bytes) {
            continue;
        }
        let Some(entry) = Entry::parse(bytes) else { continue };
        note(&mut ends, &entry);
        if head_cwd.is_none() && !entry.is_sidechain() {
            head_cwd = entry.cwd().map(str::to_string);
        }
    }
    if ends.first_prompt.is_none() && !whole {
        ends.first_prompt = prompt_in_cut_line(file, &head)?;
    }
    if whole {
        ends.cwd = head_cwd;
        ends.entries = Some(head.len() as u64);
        return Ok(ends);
    }
    // The tail: the newest cwd and summary. Lines are read backwards until the tail budget is
    // spent (the newest first: a half-written last line is simply not an entry).
    let mut tail_cwd = None;
    for line in Backwards::bounded(file, size, size.saturating_sub(TAIL_BYTES)) {
        let line = line?;
        let Some(bytes) = line.bytes.as_deref() else { continue };
        if tail_cwd.is_some() && !looks_like_title(bytes) {
            continue;
        }
        let Some(entry) = Entry::parse(bytes) else { continue };
        if tail_cwd.is_none() && !entry.is_sidechain() {
            tail_cwd = entry.cwd().map(str::to_string);
        }
        if let Some(summary) = title_of(&entry) {
            ends.summary.get_or_insert_with(|| summary.to_string());
        }
        ends.conversation |= is_conversation(&entry);
    }
    ends.cwd = tail_cwd.or(head_cwd);
    Ok(ends)
}

/// What one head entry tells: a summary, the first prompt, whether the file is a conversation.
fn note(ends: &mut Ends, entry: &Entry) {
    if let Some(summary) = title_of(entry) {
        // The newest summary wins: a later one is the one Claude Code wrote last.
        ends.summary = Some(summary.to_string());
    }
    ends.conversation |= is_conversation(entry);
    if ends.first_prompt.is_none()
        && entry.is_prompt()
        && !entry.is_compact_summary()
        && let Some(text) = entry.blocks().iter().find_map(|b| match b {
            ContentBlock::Text(text) => prompt_text(text),
            _ => None,
        })
    {
        ends.first_prompt = Some(text);
    }
}

/// Whether a line may be a title entry, without parsing it: a short line (a title is a few
/// words; the conversation's lines are long) that says its type (Claude Code writes compact JSON).
fn looks_like_title(line: &[u8]) -> bool {
    if line.len() > 1024 {
        return false;
    }
    let has = |needle: &[u8]| line.windows(needle.len()).any(|w| w == needle);
    has(b"\"type\":\"summary\"") || has(b"\"type\":\"custom-title\"")
}

fn is_conversation(entry: &Entry) -> bool {
    matches!(entry.kind(), "user" | "assistant") && !entry.is_sidechain()
}

/// A title entry's text: `summary` (older CLIs, and `/compact`), `custom-title` (`/rename`).
fn title_of(entry: &Entry) -> Option<&str> {
    match entry.kind() {
        "summary" => entry.summary(),
        "custom-title" => entry.str_field("customTitle"),
        _ => None,
    }
    .map(str::trim)
    .filter(|s| !s.is_empty())
}

/// The words of a prompt worth a title: not Claude Code's wrappers (`<command-name>` is shown as
/// the command; a caveat or a local command's output is no prompt).
fn prompt_text(text: &str) -> Option<String> {
    let text = text.trim();
    if text.is_empty() || text.starts_with("<local-command") || text.starts_with("[Request interrupted") {
        return None;
    }
    if let Some(start) = text.find("<command-name>") {
        let rest = &text[start + "<command-name>".len()..];
        return rest.find("</command-name>").map(|end| rest[..end].trim().to_string());
    }
    Some(text.to_string())
}

/// The first prompt of a line too long for the head (a prompt with a pasted image): the first
/// `"text":"…"` string in the first 64 KiB of it, unless it is the assistant's.
fn prompt_in_cut_line(file: &File, head: &[lines::Line]) -> std::io::Result<Option<String>> {
    let start = head.last().map_or(0, |line| line.offset + line.bytes.as_ref().map_or(0, |b| b.len() as u64) + 1);
    let mut buf = vec![0; HEAD_BYTES];
    let n = file.read_at(&mut buf, start)?;
    let cut = String::from_utf8_lossy(&buf[..n]);
    if cut.contains("\"type\":\"assistant\"") {
        return Ok(None);
    }
    let Some(at) = cut.find("\"text\":\"") else { return Ok(None) };
    let quoted = &cut[at + "\"text\":".len()..];
    // The string ends at the first quote not escaped.
    let mut escaped = false;
    for (i, c) in quoted.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return Ok(serde_json::from_str::<String>(&quoted[..=i]).ok().and_then(|t| prompt_text(&t))),
            _ => {}
        }
    }
    Ok(None)
}

fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > TITLE_CHARS {
        let cut: String = line.chars().take(TITLE_CHARS - 1).collect();
        format!("{cut}…")
    } else {
        line
    }
}

/// The working folders a transcript's entries name, the newest first: from its last 256 KiB,
/// else from its head.
pub fn recent_cwds(file: &File) -> std::io::Result<Vec<String>> {
    let size = file.metadata()?.len();
    let mut cwds: Vec<String> = Vec::new();
    for line in Backwards::bounded(file, size, size.saturating_sub(4 * TAIL_BYTES)) {
        if let Some(entry) = line?.bytes.as_deref().and_then(Entry::parse) {
            add_cwd(&mut cwds, &entry);
        }
    }
    if cwds.is_empty() {
        let (head, _) = lines::head(file, HEAD_BYTES)?;
        for line in head.iter().rev() {
            if let Some(entry) = line.bytes.as_deref().and_then(Entry::parse) {
                add_cwd(&mut cwds, &entry);
            }
        }
    }
    Ok(cwds)
}

fn add_cwd(cwds: &mut Vec<String>, entry: &Entry) {
    if let Some(cwd) = entry.cwd().filter(|_| !entry.is_sidechain())
        && !cwds.iter().any(|c| c == cwd)
    {
        cwds.push(cwd.to_string());
    }
}
