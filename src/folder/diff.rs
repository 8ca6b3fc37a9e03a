//! A file's two versions as the Changes view shows them: hunks of lines with three lines of
//! context (`similar`, the diff behind `insta`), or why no lines are shown.

use similar::{ChangeTag, TextDiff};

use crate::changes::{DiffLine, FileDiff, FileStatus, Hunk, LineKind};

/// Lines shown of one file at most: past them, its counts alone.
const MOST_LINES: usize = 5_000;
/// Lines of context around a change.
const CONTEXT: usize = 3;

/// The diff of one file from `old` to `new` (None: too large to read).
pub fn file_diff(
    path: String,
    old_path: Option<String>,
    status: FileStatus,
    old: Option<&[u8]>,
    new: Option<&[u8]>,
) -> FileDiff {
    let mut diff = FileDiff { path, old_path, status, added: 0, removed: 0, note: None, hunks: Vec::new() };
    let (Some(old), Some(new)) = (old, new) else {
        diff.note = Some("too large to show".into());
        return diff;
    };
    if is_binary(old) || is_binary(new) {
        diff.note = Some("a binary file".into());
        return diff;
    }
    let (old, new) = (String::from_utf8_lossy(old), String::from_utf8_lossy(new));
    let text = TextDiff::from_lines(old.as_ref(), new.as_ref());
    let mut shown = 0;
    for group in text.grouped_ops(CONTEXT) {
        let mut hunk = Hunk { lines: Vec::new() };
        for op in &group {
            for change in text.iter_changes(op) {
                let kind = match change.tag() {
                    ChangeTag::Equal => LineKind::Context,
                    ChangeTag::Insert => {
                        diff.added += 1;
                        LineKind::Added
                    }
                    ChangeTag::Delete => {
                        diff.removed += 1;
                        LineKind::Removed
                    }
                };
                shown += 1;
                if shown <= MOST_LINES {
                    hunk.lines.push(DiffLine {
                        kind,
                        old: change.old_index().map(|i| i as u32 + 1),
                        new: change.new_index().map(|i| i as u32 + 1),
                        text: change.value().trim_end_matches(['\n', '\r']).to_string(),
                    });
                }
            }
        }
        if !hunk.lines.is_empty() {
            diff.hunks.push(hunk);
        }
    }
    if shown > MOST_LINES {
        diff.note = Some(format!("only the first {MOST_LINES} lines are shown"));
    }
    diff
}

/// As git decides it: a NUL in the first 8,000 bytes.
fn is_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8000).any(|&b| b == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_line_is_a_removed_and_an_added_line_with_context_and_numbers() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\ni\n";
        let diff = file_diff("x".into(), None, FileStatus::Modified, Some(old.as_bytes()), Some(new.as_bytes()));
        assert_eq!((diff.added, diff.removed), (2, 1));
        assert_eq!(diff.hunks.len(), 1, "the two changes are within each other's context");
        let lines: Vec<(LineKind, Option<u32>, Option<u32>, &str)> =
            diff.hunks[0].lines.iter().map(|l| (l.kind, l.old, l.new, l.text.as_str())).collect();
        assert_eq!(lines[0], (LineKind::Context, Some(2), Some(2), "b"));
        assert!(lines.contains(&(LineKind::Removed, Some(5), None, "e")));
        assert!(lines.contains(&(LineKind::Added, None, Some(5), "E")));
        assert_eq!(lines.last(), Some(&(LineKind::Added, None, Some(9), "i")));
    }

    #[test]
    fn a_binary_or_unreadable_file_says_why_it_has_no_lines() {
        let binary = file_diff("img".into(), None, FileStatus::Added, Some(b""), Some(b"\x89PNG\0\0"));
        assert_eq!(binary.note.as_deref(), Some("a binary file"));
        let large = file_diff("big".into(), None, FileStatus::Modified, None, Some(b"x"));
        assert_eq!(large.note.as_deref(), Some("too large to show"));
        assert!(binary.hunks.is_empty() && large.hunks.is_empty());
    }
}
