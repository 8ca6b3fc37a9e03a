//! The projects folder, and the only way in: names are matched against what the folder lists,
//! never joined onto it from input, and a file is opened read-only and then checked to be what it
//! claims (a regular file, really inside the folder after every symlink). A crafted `../x`, a
//! symlink out of the folder, a FIFO named `x.jsonl`: refused, with a typed error.

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use super::error::TranscriptError;

/// Claude Code's `projects` folder: one folder per working folder, one `<session id>.jsonl` per
/// session in it.
#[derive(Debug, Clone)]
pub struct ProjectsDir {
    root: PathBuf,
}

/// A session transcript found in the projects folder (by listing it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptFile {
    pub id: String,
    /// The folder's name in the projects folder (`-work-project`).
    pub folder: String,
    pub path: PathBuf,
}

impl ProjectsDir {
    /// `$CLAUDE_CONFIG_DIR/projects` if set, else `~/.claude/projects`, as Claude Code does.
    pub fn from_env() -> Option<Self> {
        Some(Self::new(super::super::claude_config_dir()?.join("projects")))
    }

    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether Claude Code keeps any session's folder here (one directory read; the page asks at
    /// every load).
    pub fn holds_any_folder(&self) -> bool {
        std::fs::read_dir(&self.root)
            .is_ok_and(|mut entries| entries.any(|entry| entry.is_ok_and(|e| e.path().is_dir())))
    }

    /// The root with its symlinks resolved: what every file must be inside. `None` while Claude
    /// Code has not created it (no session yet).
    fn real_root(&self) -> Option<PathBuf> {
        std::fs::canonicalize(&self.root).ok()
    }

    /// Every session transcript: `<folder>/<id>.jsonl` with a session id for a name. Subagent
    /// transcripts (`agent-*.jsonl`, and everything in subfolders) are not sessions.
    pub fn transcripts(&self) -> Vec<TranscriptFile> {
        let Some(root) = self.real_root() else { return Vec::new() };
        let mut found = Vec::new();
        let Ok(folders) = std::fs::read_dir(&root) else { return found };
        for folder in folders.flatten() {
            let Some(folder_name) = folder.file_name().to_str().map(str::to_string) else { continue };
            if !is_safe_name(&folder_name) || !folder.path().is_dir() {
                continue;
            }
            let Ok(files) = std::fs::read_dir(folder.path()) else { continue };
            for file in files.flatten() {
                let name = file.file_name();
                let Some(id) = session_id_of(&name) else { continue };
                found.push(TranscriptFile { id: id.to_string(), folder: folder_name.clone(), path: file.path() });
            }
        }
        found
    }

    /// The transcript of session `id`, found by listing. When two folders hold the same id (a copy),
    /// the one written last wins.
    pub fn find(&self, id: &str) -> Result<TranscriptFile, TranscriptError> {
        if !is_session_id(id) {
            return Err(TranscriptError::InvalidId { id: id.chars().take(80).collect() });
        }
        self.transcripts()
            .into_iter()
            .filter(|file| file.id == id)
            .max_by_key(|file| {
                std::fs::metadata(&file.path)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            })
            .ok_or_else(|| TranscriptError::NotFound { id: id.to_string() })
    }

    /// Opens a transcript for reading (never for writing, never created, never locked), and checks
    /// what was opened: a regular file whose real path is inside the projects folder.
    pub fn open(&self, transcript: &TranscriptFile) -> Result<File, TranscriptError> {
        let id = &transcript.id;
        let outside = || TranscriptError::Outside { id: id.clone() };
        let root = self.real_root().ok_or_else(|| TranscriptError::NotFound { id: id.clone() })?;
        let real = std::fs::canonicalize(&transcript.path).map_err(|e| TranscriptError::from_io(id, e))?;
        if !real.starts_with(&root) {
            return Err(outside());
        }
        // O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOFOLLOW: the last part was
        // resolved above and must not have become a symlink since.
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
            .open(&real)
            .map_err(|e| TranscriptError::from_io(id, e))?;
        let metadata = file.metadata().map_err(|e| TranscriptError::from_io(id, e))?;
        if !metadata.is_file() {
            return Err(TranscriptError::Unreadable { id: id.clone(), detail: "it is not a regular file".into() });
        }
        // What was opened, whatever happened to the path in between.
        if let Ok(opened) = std::fs::read_link(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&file)))
            && opened.is_absolute()
            && !opened.starts_with(&root)
        {
            return Err(outside());
        }
        Ok(file)
    }
}

/// The session id of a file in a project folder: `<id>.jsonl`, a session id, not a subagent's.
fn session_id_of(name: &OsStr) -> Option<&str> {
    let id = name.to_str()?.strip_suffix(".jsonl")?;
    (is_session_id(id) && !id.starts_with("agent-")).then_some(id)
}

/// A session id as Claude Code makes them (a UUID), or any name of the same harmless alphabet:
/// letters, digits, `-` and `_`, at most 128 of them. No dots, no separators, nothing to escape.
pub fn is_session_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A project folder's name is Claude Code's encoding of a path (`-work-project`): no separators,
/// and not `.` or `..`.
fn is_safe_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

/// The name Claude Code gives the project folder of a working folder: every character that is
/// not an ASCII letter or digit becomes `-` (`/work/my_app` → `-work-my-app`).
pub fn folder_name_of(cwd: &str) -> String {
    cwd.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

/// The working folder a project folder's name stands for, when no transcript says it: Claude
/// Code turns every `/` (and every other character that is not a letter or digit) into `-`, so
/// this is a guess (`-work-my-app` might be `/work/my/app`).
pub fn folder_guess(folder: &str) -> String {
    folder.replace('-', "/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_names_are_session_ids() {
        assert!(is_session_id("4a3c1c2e-8c9f-4a57-a1b2-0d3e4f5a6b7c"));
        for bad in ["", "../x", "x/y", "..", ".", "a.jsonl", "a b", "x\0", "é", &"a".repeat(129)] {
            assert!(!is_session_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn subagent_transcripts_are_not_sessions() {
        assert_eq!(session_id_of(OsStr::new("agent-1a2b3c4d.jsonl")), None);
        assert_eq!(session_id_of(OsStr::new("abc.json")), None);
        assert_eq!(session_id_of(OsStr::new("abc.jsonl")), Some("abc"));
    }
}
