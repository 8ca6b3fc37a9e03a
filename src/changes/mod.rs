//! What the agent changed in a session's folder, as the Changes view shows it: the turns that have
//! a checkpoint, and a diff per file, of one turn or of the whole session. The server takes the
//! checkpoints and reads the diffs (`folder/`); these are the shapes both faces share.

use serde::{Deserialize, Serialize};

mod worktree;
pub use worktree::{Branches, Conflict, Merged, NewWorktree, Worktree};

/// The Changes of a session, at a moment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Changes {
    /// The turns that began with a checkpoint, oldest first.
    pub turns: Vec<TurnMark>,
    /// The files that differ, in path order.
    pub files: Vec<FileDiff>,
    /// Why there is nothing to show, when the folder has no checkpoints (no folder, too many
    /// files, git missing).
    pub unavailable: Option<String>,
    /// Moves at every change seen in the folder: the view asks again when it does.
    pub version: u64,
    /// The base branch (`main`, `origin/main`, …), when the folder is a git repository that has
    /// one: `Scope::Branch` diffs against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
}

/// A file of the session's folder, as the Files view shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileText {
    /// Relative to the folder, `/` between its parts.
    pub path: String,
    pub lines: Vec<String>,
    /// Why no lines are shown (a binary file, a file too large).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What a diff is taken of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "scope", rename_all = "snake_case")]
pub enum Scope {
    /// Everything since the session's first checkpoint.
    Session,
    /// From the turn's checkpoint to the next turn's (or to the folder as it is now, for the
    /// last one).
    Turn { number: u32 },
    /// Everything since the current branch left its base branch (their merge-base), committed or
    /// not: right however the agent committed.
    Branch,
}

/// A turn that began with a checkpoint of the folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnMark {
    /// 1 for the session's first turn.
    pub number: u32,
    /// The person's message that began it, as the thread has it.
    pub message_id: String,
    /// When the checkpoint was taken (ms since the epoch).
    pub at_ms: i64,
}

/// How a file differs between two moments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    Added,
    Modified,
    Deleted,
    Renamed,
}

impl FileStatus {
    /// One letter, as git says it.
    pub fn letter(self) -> &'static str {
        match self {
            Self::Added => "A",
            Self::Modified => "M",
            Self::Deleted => "D",
            Self::Renamed => "R",
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Self::Added => "added",
            Self::Modified => "modified",
            Self::Deleted => "deleted",
            Self::Renamed => "renamed",
        }
    }
}

/// One file's diff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileDiff {
    /// Relative to the folder, `/` between its parts.
    pub path: String,
    /// Where a renamed file was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    pub status: FileStatus,
    pub added: u32,
    pub removed: u32,
    /// Why the lines are not shown (a binary file, a file too large to show).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub hunks: Vec<Hunk>,
}

/// A run of changed lines with their context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hunk {
    pub lines: Vec<DiffLine>,
}

/// A line of a hunk: its number on either side, where it has one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffLine {
    pub kind: LineKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new: Option<u32>,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineKind {
    Context,
    Added,
    Removed,
}

/// A hunk's rows side by side: the removed lines beside the added ones that replaced them,
/// context on both sides.
pub fn side_by_side(hunk: &Hunk) -> Vec<(Option<&DiffLine>, Option<&DiffLine>)> {
    let mut rows = Vec::new();
    let lines = &hunk.lines;
    let mut at = 0;
    while at < lines.len() {
        if lines[at].kind == LineKind::Context {
            rows.push((Some(&lines[at]), Some(&lines[at])));
            at += 1;
            continue;
        }
        // A run of changes: its removed lines beside its added ones, in order.
        let end = lines[at..].iter().position(|line| line.kind == LineKind::Context).map_or(lines.len(), |n| at + n);
        let run = &lines[at..end];
        let removed: Vec<&DiffLine> = run.iter().filter(|line| line.kind == LineKind::Removed).collect();
        let added: Vec<&DiffLine> = run.iter().filter(|line| line.kind == LineKind::Added).collect();
        for i in 0..removed.len().max(added.len()) {
            rows.push((removed.get(i).copied(), added.get(i).copied()));
        }
        at = end;
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(kind: LineKind, text: &str) -> DiffLine {
        DiffLine { kind, old: None, new: None, text: text.into() }
    }

    #[test]
    fn removed_lines_sit_beside_the_lines_that_replaced_them() {
        let hunk = Hunk {
            lines: vec![
                line(LineKind::Context, "a"),
                line(LineKind::Removed, "b"),
                line(LineKind::Removed, "c"),
                line(LineKind::Added, "B"),
                line(LineKind::Context, "d"),
                line(LineKind::Added, "e"),
            ],
        };
        let rows: Vec<(Option<&str>, Option<&str>)> = side_by_side(&hunk)
            .into_iter()
            .map(|(l, r)| (l.map(|l| l.text.as_str()), r.map(|r| r.text.as_str())))
            .collect();
        assert_eq!(
            rows,
            vec![
                (Some("a"), Some("a")),
                (Some("b"), Some("B")),
                (Some("c"), None),
                (Some("d"), Some("d")),
                (None, Some("e")),
            ]
        );
    }
}
