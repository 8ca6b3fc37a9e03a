//! Turns a tool call's arguments into what a person judges it by (server side: the diff and the
//! wording stay out of the browser's bundle).

use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use super::{DiffLine, Shows};

/// The most lines of a change shown on a card; the rest are counted.
pub const MAX_DIFF_LINES: usize = 400;

impl Shows {
    pub fn of(tool: &str, input: &Value) -> Self {
        let text = |key: &str| input.get(key).and_then(Value::as_str);
        match tool {
            "Bash" if text("command").is_some() => {
                Self::Command { command: text("command").unwrap_or_default().into() }
            }
            "Edit" | "MultiEdit" | "Write" | "NotebookEdit" => {
                let Some(path) = text("file_path").or_else(|| text("notebook_path")) else { return json(input) };
                let mut lines = Vec::new();
                match tool {
                    "Write" => diff_lines("", text("content").unwrap_or_default(), &mut lines),
                    "NotebookEdit" => diff_lines("", text("new_source").unwrap_or_default(), &mut lines),
                    "MultiEdit" => {
                        for edit in input.get("edits").and_then(Value::as_array).into_iter().flatten() {
                            let side = |key: &str| edit.get(key).and_then(Value::as_str).unwrap_or_default();
                            if !lines.is_empty() {
                                lines.push(DiffLine { sign: ' ', text: "…".into() });
                            }
                            diff_lines(side("old_string"), side("new_string"), &mut lines);
                        }
                    }
                    _ => diff_lines(
                        text("old_string").unwrap_or_default(),
                        text("new_string").unwrap_or_default(),
                        &mut lines,
                    ),
                }
                let more = lines.len().saturating_sub(MAX_DIFF_LINES);
                lines.truncate(MAX_DIFF_LINES);
                Self::File { path: path.into(), diff: lines, more }
            }
            "WebFetch" if text("url").is_some() => {
                Self::Url { url: text("url").unwrap_or_default().into(), prompt: text("prompt").map(str::to_string) }
            }
            "ExitPlanMode" if text("plan").is_some() => {
                Self::Plan { markdown: text("plan").unwrap_or_default().into() }
            }
            _ => json(input),
        }
    }
}

impl Shows {
    /// A file's change from `old` to `new` (a file that is new when `old` is `None`), as agents
    /// that send the texts rather than the edit (ACP's `diff` content) give it.
    pub fn file_change(path: &str, old: Option<&str>, new: &str) -> Self {
        let mut lines = Vec::new();
        diff_lines(old.unwrap_or_default(), new, &mut lines);
        let more = lines.len().saturating_sub(MAX_DIFF_LINES);
        lines.truncate(MAX_DIFF_LINES);
        Self::File { path: path.into(), diff: lines, more }
    }
}

fn json(input: &Value) -> Shows {
    Shows::Json { pretty: serde_json::to_string_pretty(input).unwrap_or_default() }
}

/// The change from `old` to `new`, line by line.
fn diff_lines(old: &str, new: &str, out: &mut Vec<DiffLine>) {
    for change in TextDiff::from_lines(old, new).iter_all_changes() {
        let sign = match change.tag() {
            ChangeTag::Delete => '-',
            ChangeTag::Insert => '+',
            ChangeTag::Equal => ' ',
        };
        out.push(DiffLine { sign, text: change.value().trim_end_matches(['\n', '\r']).to_string() });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn signs(shows: &Shows) -> String {
        match shows {
            Shows::File { diff, .. } => {
                diff.iter().map(|l| format!("{}{}", l.sign, l.text)).collect::<Vec<_>>().join("|")
            }
            other => panic!("not a file: {other:?}"),
        }
    }

    #[test]
    fn an_edit_shows_the_lines_it_changes() {
        let shows =
            Shows::of("Edit", &json!({"file_path": "/p/a.rs", "old_string": "a\nb\nc", "new_string": "a\nB\nc"}));
        assert_eq!(signs(&shows), " a|-b|+B| c");
    }

    #[test]
    fn a_write_shows_every_line_added_and_counts_what_it_leaves_out() {
        let content: String = (0..MAX_DIFF_LINES + 5).map(|i| format!("{i}\n")).collect();
        let Shows::File { path, diff, more } = Shows::of("Write", &json!({"file_path": "/p/b", "content": content}))
        else {
            panic!()
        };
        assert_eq!(path, "/p/b");
        assert_eq!((diff.len(), more), (MAX_DIFF_LINES, 5));
        assert!(diff.iter().all(|l| l.sign == '+'));
    }

    #[test]
    fn commands_urls_plans_and_other_tools() {
        assert_eq!(
            Shows::of("Bash", &json!({"command": "npm test", "description": "Run"})),
            Shows::Command { command: "npm test".into() }
        );
        assert_eq!(
            Shows::of("WebFetch", &json!({"url": "https://x.dev", "prompt": "Summarize"})),
            Shows::Url { url: "https://x.dev".into(), prompt: Some("Summarize".into()) }
        );
        assert_eq!(Shows::of("ExitPlanMode", &json!({"plan": "# P"})), Shows::Plan { markdown: "# P".into() });
        assert_eq!(Shows::of("Mystery", &json!({"a": 1})), Shows::Json { pretty: "{\n  \"a\": 1\n}".into() });
        // Arguments of an unexpected shape fall back to JSON rather than failing.
        assert!(matches!(Shows::of("Bash", &json!({"cmd": 1})), Shows::Json { .. }));
        assert!(matches!(Shows::of("Edit", &json!({})), Shows::Json { .. }));
    }
}
