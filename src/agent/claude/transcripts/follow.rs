//! A transcript read forward as it grows, for a session that runs elsewhere (a `claude` in a
//! terminal): the person's prompts and the agent's words since the last read, and where the next
//! read starts. Tool calls are left out: the ones the terminal asks about are the hooks' to show
//! (with their cards), and the rest run in the terminal, where their output is.

use std::path::Path;

use super::entry::Entry;
use super::error::TranscriptError;
use super::history::Fold;
use super::lines::Forwards;
use super::projects::{ProjectsDir, TranscriptFile, is_session_id};
use crate::thread::{Block, Message};

/// The most one read takes in: a session joined with a long history is read over several.
const READ_BUDGET: usize = 8 * 1024 * 1024;

/// What a transcript said after an offset.
#[derive(Debug, Default, PartialEq)]
pub struct Followed {
    /// The prompts and words, oldest first, finished.
    pub messages: Vec<Message>,
    /// Where the next read starts: after the last whole line read.
    pub next: u64,
}

/// The transcript at `path`, if it is where Claude Code keeps session `id`'s:
/// `<config>/projects/<folder>/<id>.jsonl`. The path comes from a hook, so it is checked as a
/// name from the browser would be: the file opened must be inside that projects folder after every
/// symlink ([`ProjectsDir::open`]).
pub fn transcript_at(path: &Path, id: &str) -> Result<(ProjectsDir, TranscriptFile), TranscriptError> {
    let invalid = || TranscriptError::Outside { id: id.chars().take(80).collect() };
    if !is_session_id(id) {
        return Err(TranscriptError::InvalidId { id: id.chars().take(80).collect() });
    }
    if !path.is_absolute() || path.file_name() != Some(format!("{id}.jsonl").as_ref()) {
        return Err(invalid());
    }
    let folder = path.parent().ok_or_else(invalid)?;
    let root = folder.parent().filter(|root| root.file_name() == Some("projects".as_ref())).ok_or_else(invalid)?;
    let folder = folder.file_name().and_then(|name| name.to_str()).ok_or_else(invalid)?;
    let transcript = TranscriptFile { id: id.to_string(), folder: folder.to_string(), path: path.to_path_buf() };
    Ok((ProjectsDir::new(root), transcript))
}

/// The prompts and words of the transcript at `path` (session `id`'s) after byte `from`.
/// A last line still being written is left for the next read. A file shorter than `from` was
/// replaced: nothing is read again.
pub fn follow(path: &Path, id: &str, from: u64) -> Result<Followed, TranscriptError> {
    let (projects, transcript) = transcript_at(path, id)?;
    let file = projects.open(&transcript)?;
    let len = file.metadata().map_err(|e| TranscriptError::from_io(id, e))?.len();
    if len <= from {
        return Ok(Followed { messages: Vec::new(), next: from.max(len) });
    }
    let mut fold = Fold::default();
    let mut next = from;
    for line in Forwards::new(&file, from, READ_BUDGET) {
        let line = line.map_err(|e| TranscriptError::from_io(id, e))?;
        let bytes = line.bytes.unwrap_or_default();
        next = line.offset + bytes.len() as u64 + 1;
        if let Some(entry) = Entry::parse(&bytes) {
            fold.push(&entry, line.offset);
        }
    }
    if next == from && len - from > READ_BUDGET as u64 {
        // One line longer than a read (a pasted image): passed over, with the line that ends it.
        if let Some(Ok(tail)) = Forwards::new(&file, from + READ_BUDGET as u64, READ_BUDGET).next() {
            next = tail.offset + tail.bytes.map_or(0, |b| b.len() as u64) + 1;
        }
    }
    let messages = fold.finish(true).into_iter().filter_map(words_only).collect();
    Ok(Followed { messages, next })
}

/// A message without its tool calls; none when nothing else was in it.
fn words_only(mut message: Message) -> Option<Message> {
    message.blocks.retain(|block| !matches!(block, Block::ToolCall(_)));
    (!message.blocks.is_empty()).then_some(message)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use serde_json::json;

    use super::*;
    use crate::thread::Role;

    const ID: &str = "0b6c3f2e-8a51-4c2d-9d7e-2f1a4b5c6d7e";

    fn transcript() -> (tempfile::TempDir, std::path::PathBuf) {
        let home = tempfile::tempdir().unwrap();
        let folder = home.path().join("projects").join("-work-app");
        std::fs::create_dir_all(&folder).unwrap();
        let path = folder.join(format!("{ID}.jsonl"));
        std::fs::write(&path, "").unwrap();
        (home, path)
    }

    fn append(path: &Path, lines: &[serde_json::Value], last_whole: bool) {
        let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
        let text: Vec<String> = lines.iter().map(ToString::to_string).collect();
        let mut text = text.join("\n");
        if last_whole {
            text.push('\n');
        }
        file.write_all(text.as_bytes()).unwrap();
    }

    fn prompt(text: &str) -> serde_json::Value {
        json!({"type": "user", "uuid": format!("u-{text}"), "message": {"role": "user", "content": text}})
    }

    fn said(id: &str, block: serde_json::Value) -> serde_json::Value {
        json!({"type": "assistant", "uuid": format!("a-{block}"), "message": {"id": id, "role": "assistant", "content": [block]}})
    }

    #[test]
    fn the_prompt_and_the_agents_words_are_read_without_its_tool_calls_and_each_line_once() {
        let (_home, path) = transcript();
        append(
            &path,
            &[
                prompt("add a login page"),
                said("msg_1", json!({"type": "text", "text": "I'll ask you first."})),
                said("msg_1", json!({"type": "tool_use", "id": "toolu_1", "name": "AskUserQuestion", "input": {}})),
            ],
            true,
        );
        let first = follow(&path, ID, 0).unwrap();
        let shown: Vec<_> = first.messages.iter().map(|m| (m.role, m.text())).collect();
        assert_eq!(
            shown,
            vec![(Role::User, "add a login page".to_string()), (Role::Assistant, "I'll ask you first.".to_string())]
        );
        assert_eq!(first.next, std::fs::metadata(&path).unwrap().len());

        // A line being written waits for its end; the rest is read once.
        append(&path, &[said("msg_2", json!({"type": "text", "text": "Done: the page is at /login."}))], false);
        let waiting = follow(&path, ID, first.next).unwrap();
        assert_eq!(waiting, Followed { messages: Vec::new(), next: first.next });
        append(&path, &[], true);
        let second = follow(&path, ID, first.next).unwrap();
        assert_eq!(second.messages.len(), 1);
        assert_eq!(second.messages[0].text(), "Done: the page is at /login.");
        assert_eq!(follow(&path, ID, second.next).unwrap().messages, Vec::new());
    }

    #[test]
    fn a_path_that_is_not_the_sessions_transcript_in_a_projects_folder_is_refused() {
        let (home, path) = transcript();
        let other = "1b6c3f2e-8a51-4c2d-9d7e-2f1a4b5c6d7e";
        let outside = home.path().join("secret.jsonl");
        std::fs::write(&outside, "{\"type\":\"user\"}\n").unwrap();
        let link = path.with_file_name(format!("{other}.jsonl"));
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        let not_projects = home.path().join("elsewhere").join("-work-app").join(format!("{ID}.jsonl"));

        for (path, id) in [
            (link.as_path(), other),
            (not_projects.as_path(), ID),
            (path.as_path(), other),
            (Path::new("relative/projects/x/y.jsonl"), ID),
        ] {
            assert!(
                matches!(follow(path, id, 0), Err(TranscriptError::Outside { .. } | TranscriptError::NotFound { .. })),
                "{path:?} was read"
            );
        }
        assert!(matches!(follow(&path, "../../etc/passwd", 0), Err(TranscriptError::InvalidId { .. })));
    }
}
