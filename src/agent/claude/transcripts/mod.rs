//! The sessions Claude Code keeps on this machine, read from its own transcripts
//! (`~/.claude/projects/<folder>/<session id>.jsonl`, or under `$CLAUDE_CONFIG_DIR`): the list,
//! one session's history as the app's thread (newest first, a page at a time), the folder to
//! continue it in, and whether a `claude` in a terminal is writing it right now.
//!
//! Read-only by construction: files are opened for reading, never created, written or locked.
//! Names from the browser are never joined onto a path: a session is found by listing the folder,
//! and a file whose real path leaves the folder is refused. Everything here blocks on the file
//! system: call it from `tokio::task::spawn_blocking`.
//!
//! - `projects`: the folder, and the only way into it.
//! - `lines`: a file's head, and its lines backwards from the end.
//! - `entry`: one line of the format, read leniently.
//! - `history`: entries → `thread::Message`s; `answers`: how a question was answered.
//! - `listing`: the session list; `page`: the thread, a page at a time.
//! - `live`: which transcripts a running `claude` writes.
//! - `follow`: a transcript read forward as it grows (a terminal's `claude`).
//! - `error`: what can go wrong reading one.

mod answers;
mod entry;
mod error;
mod follow;
mod history;
mod lines;
mod listing;
pub mod live;
mod page;
mod projects;

use std::path::PathBuf;

use serde::Serialize;

pub use error::TranscriptError;
pub use follow::{Followed, follow};
pub use listing::{ProjectGroup, TranscriptSummary};
pub use page::{Cursor, TranscriptPage};
pub use projects::{ProjectsDir, TranscriptFile, is_session_id};

/// How many messages a page holds when the caller does not say.
pub const DEFAULT_PAGE: usize = 50;
/// The most a page may hold: a browser asking for more gets this many.
pub const MAX_PAGE: usize = 500;

/// Where and how to go on with a session: `claude --resume <id>` in `folder`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResumeTarget {
    pub id: String,
    /// The working folder of its last entries (it exists: checked).
    pub folder: PathBuf,
    /// The command for a terminal, quoted for a POSIX shell: `cd '/work/my app' && claude --resume <id>`.
    pub command: String,
}

impl ProjectsDir {
    /// Every session, grouped by working folder, newest first, each with the `claude` process
    /// that writes it right now, if any (see [`listing::list`], [`live::scan`]).
    pub fn list(&self) -> Vec<ProjectGroup> {
        let mut groups = listing::list(self);
        let running = live::scan(self);
        for session in groups.iter_mut().flat_map(|g| g.sessions.iter_mut()) {
            session.running = running.writer(&session.id).cloned();
        }
        groups
    }

    /// One session's summary, as the list shows it.
    pub fn summary(&self, id: &str) -> Result<TranscriptSummary, TranscriptError> {
        let transcript = self.find(id)?;
        let mut summary =
            listing::summarize(self, &transcript).ok_or_else(|| TranscriptError::NotFound { id: id.to_string() })?;
        summary.running = live::scan(self).writer(id).cloned();
        Ok(summary)
    }

    /// The last `limit` messages of session `id` before the cursor `before` (a page's `older`;
    /// from the end when `None`), at most [`MAX_PAGE`].
    pub fn page(&self, id: &str, before: Option<&Cursor>, limit: usize) -> Result<TranscriptPage, TranscriptError> {
        let transcript = self.find(id)?;
        let file = self.open(&transcript)?;
        match page::read(&file, before, limit.min(MAX_PAGE)) {
            Ok(Ok(page)) => Ok(page),
            Ok(Err(page::BadCursor)) => Err(TranscriptError::BadCursor { id: id.to_string() }),
            Err(error) => Err(TranscriptError::from_io(id, error)),
        }
    }

    /// What Claude Code had counted as spent in session `id` when a process of it last exited:
    /// the `totalCostUSD` of the transcript's last `cost-state` entry. CLI 2.1.332 writes one as it
    /// exits and starts a `--resume`d process's running total (`result.total_cost_usd`) there
    /// (seen: $0.1326 after two turns, then $0.1996 after the resumed process's first); a
    /// process that was killed wrote none, and its total starts from the entry before.
    pub fn restored_cost(&self, id: &str) -> Result<Option<f64>, TranscriptError> {
        let transcript = self.find(id)?;
        let file = self.open(&transcript)?;
        let end = file.metadata().map_err(|e| TranscriptError::from_io(id, e))?.len();
        for line in lines::Backwards::new(&file, end) {
            let line = line.map_err(|e| TranscriptError::from_io(id, e))?;
            // Most lines are not it: parse only a line that names the kind.
            let Some(bytes) = line.bytes.filter(|b| b.windows(12).any(|w| w == b"\"cost-state\"")) else { continue };
            if let Some(entry) = entry::Entry::parse(&bytes).filter(|e| e.kind() == "cost-state") {
                return Ok(entry.f64_field("totalCostUSD"));
            }
        }
        Ok(None)
    }

    /// The folder to continue session `id` in, with the command for a terminal. Claude Code
    /// files a session under the folder it was started in, and `--resume` looks there: of the
    /// working folders its entries name, the last one that matches its project folder, else
    /// the last one.
    pub fn resume_target(&self, id: &str) -> Result<ResumeTarget, TranscriptError> {
        let transcript = self.find(id)?;
        let file = self.open(&transcript)?;
        let cwds = listing::recent_cwds(&file).map_err(|e| TranscriptError::from_io(id, e))?;
        let folder = cwds
            .iter()
            .find(|cwd| projects::folder_name_of(cwd) == transcript.folder)
            .or(cwds.first())
            .cloned()
            .ok_or_else(|| TranscriptError::FolderGone { id: id.to_string(), folder: "(unknown)".into() })?;
        let folder = PathBuf::from(folder);
        if !folder.is_dir() {
            return Err(TranscriptError::FolderGone { id: id.to_string(), folder: folder.display().to_string() });
        }
        let command = format!("cd {} && claude --resume {id}", shell_quote(&folder.display().to_string()));
        Ok(ResumeTarget { id: id.to_string(), folder, command })
    }
}

/// `text` as one word for a POSIX shell.
fn shell_quote(text: &str) -> String {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%".contains(&b)) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests;
