//! The folders sessions work in, as the Changes view sees them: a checkpoint of the folder at the
//! start of each turn (`shadow.rs`, a git repository of AskBridge's own under the data folder,
//! one per folder, shared by the sessions working there), the diff of a turn or of the whole
//! session (`diff.rs`), a turn undone, and news of each write (`watch.rs`).

mod branch;
mod diff;
mod error;
mod git;
mod read;
mod shadow;
mod watch;
pub mod worktree;
#[cfg(test)]
mod worktree_tests;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::sync::watch as channel;
use tracing::warn;

use crate::changes::{Changes, FileStatus, Scope, TurnMark};
pub use error::FolderError;
use error::MOST_FILES;
pub use read::{inside, read_text};
use shadow::{LARGEST_FILE, Shadow};

/// Files whose lines a diff shows at most; the rest are named with their counts.
const MOST_FILES_SHOWN: usize = 100;

/// Every folder's checkpoints, under one data folder.
pub struct Folders {
    /// `<data>/checkpoints`.
    root: PathBuf,
    folders: Mutex<HashMap<PathBuf, Arc<Folder>>>,
}

/// One folder: its shadow repository, one git command at a time, and its news.
struct Folder {
    shadow: Shadow,
    /// Held for every git command on the shadow (they share its index); whether it was prepared.
    git: tokio::sync::Mutex<Prepared>,
    version: channel::Sender<u64>,
}

#[derive(Default)]
enum Prepared {
    #[default]
    Not,
    Ready,
    Refused(String),
}

impl Folders {
    pub fn new(data: &Path) -> Self {
        // Absolute: git runs in the session's folder, where a relative path means something else.
        let data = std::path::absolute(data).unwrap_or_else(|_| data.to_path_buf());
        Self { root: data.join("checkpoints"), folders: Mutex::default() }
    }

    fn folder(&self, work_tree: &Path) -> Arc<Folder> {
        let mut folders = self.folders.lock().expect("folders lock");
        folders
            .entry(work_tree.to_path_buf())
            .or_insert_with(|| {
                let name = hex(&Sha256::digest(work_tree.as_os_str().as_encoded_bytes())[..12]);
                Arc::new(Folder {
                    shadow: Shadow::new(self.root.join(format!("{name}.git")), work_tree.to_path_buf()),
                    git: tokio::sync::Mutex::default(),
                    version: channel::Sender::new(0),
                })
            })
            .clone()
    }

    /// A checkpoint of `work_tree` as turn `message_id` of `session` begins.
    pub async fn checkpoint(&self, work_tree: &Path, session: &str, message_id: &str) -> Result<u32, FolderError> {
        let folder = self.folder(work_tree);
        let mut prepared = folder.git.lock().await;
        folder.prepare(&mut prepared).await?;
        let number = folder.shadow.marks(session).await?.len() as u32 + 1;
        let tree = folder.shadow.snapshot().await?;
        folder.shadow.mark(&format!("{session}/{number:06}"), &tree, message_id).await?;
        Ok(number)
    }

    /// What changed in `work_tree`, for `session`'s turns: of one turn, or of all of them.
    pub async fn changes(&self, work_tree: &Path, session: &str, scope: &Scope) -> Result<Changes, FolderError> {
        let folder = self.folder(work_tree);
        let version = *folder.version.borrow();
        let base = branch::merge_base(work_tree).await;
        let mut changes = self.checkpointed_changes(&folder, session, scope).await?;
        changes.version = version;
        changes.base = base.as_ref().map(|(name, _)| name.clone());
        if *scope == Scope::Branch {
            changes.unavailable = None;
            match &base {
                Some((_, commit)) => changes.files = branch_diff(work_tree, commit).await?,
                None => changes.unavailable = Some("the folder is no git repository with a main branch".into()),
            }
        }
        Ok(changes)
    }

    /// The turns with a checkpoint, and the diff `scope` asks of them (none for `Scope::Branch`).
    async fn checkpointed_changes(
        &self,
        folder: &Folder,
        session: &str,
        scope: &Scope,
    ) -> Result<Changes, FolderError> {
        let mut prepared = folder.git.lock().await;
        if let Prepared::Refused(why) = &*prepared {
            return Ok(Changes { unavailable: Some(why.clone()), ..Changes::default() });
        }
        let marks = folder.shadow.marks(session).await?;
        let turns: Vec<TurnMark> = marks
            .iter()
            .enumerate()
            .map(|(i, (_, _, at, message_id))| TurnMark {
                number: i as u32 + 1,
                message_id: message_id.clone(),
                at_ms: at * 1000,
            })
            .collect();
        if marks.is_empty() || *scope == Scope::Branch {
            return Ok(Changes { turns, ..Changes::default() });
        }
        folder.prepare(&mut prepared).await?;
        let (from, to) = match scope {
            // (The branch's diff is read from the person's repository, by the caller.)
            Scope::Session | Scope::Branch => (marks[0].1.clone(), None),
            Scope::Turn { number } => {
                let at = (*number as usize).checked_sub(1).filter(|at| *at < marks.len());
                let at = at.ok_or(FolderError::NoSuchTurn(*number))?;
                (marks[at].1.clone(), marks.get(at + 1).map(|next| next.1.clone()))
            }
        };
        let to = match to {
            Some(tree) => tree,
            None => folder.shadow.snapshot().await?,
        };
        let files = folder.diff(&from, &to).await?;
        Ok(Changes { turns, files, ..Changes::default() })
    }

    /// The files undoing turn `number` would put back: what changed since it began.
    pub async fn undo_preview(&self, work_tree: &Path, session: &str, number: u32) -> Result<Vec<String>, FolderError> {
        let folder = self.folder(work_tree);
        let mut prepared = folder.git.lock().await;
        folder.prepare(&mut prepared).await?;
        let tree = folder.turn_tree(session, number).await?;
        let now = folder.shadow.snapshot().await?;
        Ok(folder.shadow.changed(&tree, &now, false).await?.into_iter().map(|change| change.path).collect())
    }

    /// Puts `work_tree` back as it was when turn `number` began; the paths it touched.
    pub async fn undo(&self, work_tree: &Path, session: &str, number: u32) -> Result<Vec<String>, FolderError> {
        let folder = self.folder(work_tree);
        let mut prepared = folder.git.lock().await;
        folder.prepare(&mut prepared).await?;
        let tree = folder.turn_tree(session, number).await?;
        let touched = folder.shadow.restore(&tree).await?;
        folder.version.send_modify(|v| *v += 1);
        Ok(touched)
    }

    /// Deletes `session`'s checkpoints of `work_tree` (the session was deleted).
    pub async fn forget(&self, work_tree: &Path, session: &str) -> Result<(), FolderError> {
        let folder = self.folder(work_tree);
        let _git = folder.git.lock().await;
        folder.shadow.forget(session).await
    }

    /// Waits until something in `work_tree` changes after `seen` (or `longest` passes); the
    /// version then. The folder is watched while anyone waits, and a minute after.
    pub async fn wait(&self, work_tree: &Path, seen: u64, longest: Duration) -> u64 {
        let folder = self.folder(work_tree);
        let mut news = folder.version.subscribe();
        if folder.version.receiver_count() == 1 {
            let (root, version) = (work_tree.to_path_buf(), folder.version.clone());
            // The first walk of the folder's tree reads the disk: off the async threads.
            let started = tokio::task::spawn_blocking(move || watch::watch(root, version)).await;
            if let Ok(Err(error)) = started {
                warn!(folder = %work_tree.display(), %error, "cannot watch the folder; its changes show when asked");
            }
        }
        let _ = tokio::time::timeout(longest, news.wait_for(|now| *now != seen)).await;
        *news.borrow()
    }
}

impl Folder {
    /// Before the first checkpoint: the shadow repository made, and the folder measured (too
    /// many files refuses it, files too large are left out).
    async fn prepare(&self, prepared: &mut Prepared) -> Result<(), FolderError> {
        match prepared {
            Prepared::Ready => return Ok(()),
            Prepared::Refused(why) => return Err(FolderError::Io { what: "checkpoint", message: why.clone() }),
            Prepared::Not => {}
        }
        let root = self.shadow.work_tree().to_path_buf();
        let measured = tokio::task::spawn_blocking(move || measure(&root))
            .await
            .map_err(|error| FolderError::Io { what: "measure the folder", message: error.to_string() })?;
        let large = match measured {
            Ok(large) => large,
            Err(refused) => {
                *prepared = Prepared::Refused(refused.to_string());
                return Err(refused);
            }
        };
        self.shadow.init().await?;
        self.shadow.exclude(&large)?;
        *prepared = Prepared::Ready;
        Ok(())
    }

    async fn turn_tree(&self, session: &str, number: u32) -> Result<String, FolderError> {
        let marks = self.shadow.marks(session).await?;
        let at = (number as usize).checked_sub(1).and_then(|at| marks.get(at));
        at.map(|mark| mark.1.clone()).ok_or(FolderError::NoSuchTurn(number))
    }

    async fn diff(&self, from: &str, to: &str) -> Result<Vec<crate::changes::FileDiff>, FolderError> {
        let changed = self.shadow.changed(from, to, true).await?;
        let shown = &changed[..changed.len().min(MOST_FILES_SHOWN)];
        // Both versions of every file shown, read at once: an added file has no old one, a
        // deleted file no new one.
        let mut wanted = Vec::with_capacity(shown.len() * 2);
        for change in shown {
            let status = status_of(change.status);
            if status != FileStatus::Added {
                wanted.push((from, change.old_path.as_deref().unwrap_or(&change.path)));
            }
            if status != FileStatus::Deleted {
                wanted.push((to, change.path.as_str()));
            }
        }
        let mut read = self.shadow.blobs(&wanted).await?.into_iter();
        let mut files = Vec::with_capacity(changed.len());
        for (i, change) in changed.into_iter().enumerate() {
            let status = status_of(change.status);
            if i >= MOST_FILES_SHOWN {
                files.push(unread(change.path, change.old_path, status));
                continue;
            }
            let old = if status == FileStatus::Added { Some(Vec::new()) } else { read.next().flatten() };
            let new = if status == FileStatus::Deleted { Some(Vec::new()) } else { read.next().flatten() };
            files.push(diff::file_diff(change.path, change.old_path, status, old.as_deref(), new.as_deref()));
        }
        Ok(files)
    }
}

/// The diff of the working tree against `commit` of the person's repository.
async fn branch_diff(work_tree: &Path, commit: &str) -> Result<Vec<crate::changes::FileDiff>, FolderError> {
    let mut files = Vec::new();
    for (i, change) in branch::changed_since(work_tree, commit).await?.into_iter().enumerate() {
        let status = status_of(change.status);
        let old_path = change.old_path.clone().unwrap_or_else(|| change.path.clone());
        if i >= MOST_FILES_SHOWN {
            files.push(unread(change.path, change.old_path, status));
            continue;
        }
        let old = match status {
            FileStatus::Added => Some(Vec::new()),
            _ => branch::blob_at(work_tree, commit, &old_path).await?,
        };
        let new = match status {
            FileStatus::Deleted => Some(Vec::new()),
            _ => branch::in_working_tree(work_tree, &change.path),
        };
        files.push(diff::file_diff(change.path, change.old_path, status, old.as_deref(), new.as_deref()));
    }
    Ok(files)
}

fn status_of(letter: char) -> FileStatus {
    match letter {
        'A' => FileStatus::Added,
        'D' => FileStatus::Deleted,
        'R' => FileStatus::Renamed,
        _ => FileStatus::Modified,
    }
}

/// A file named with its status, its lines not read (too many files changed).
fn unread(path: String, old_path: Option<String>, status: FileStatus) -> crate::changes::FileDiff {
    let mut diff = diff::file_diff(path, old_path, status, Some(b""), Some(b""));
    diff.note = Some("not read: too many files changed".into());
    diff
}

/// The files git would list in `root`: refused past [`MOST_FILES`]; those over [`LARGEST_FILE`],
/// to leave out.
fn measure(root: &Path) -> Result<Vec<String>, FolderError> {
    let mut count = 0;
    let mut large = Vec::new();
    let walk = ignore::WalkBuilder::new(root)
        .hidden(false)
        .follow_links(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .build();
    for entry in walk.filter_map(Result::ok) {
        if !entry.file_type().is_some_and(|kind| kind.is_file()) {
            continue;
        }
        count += 1;
        if count > MOST_FILES {
            return Err(FolderError::TooManyFiles);
        }
        if entry.metadata().is_ok_and(|meta| meta.len() > LARGEST_FILE)
            && let Ok(relative) = entry.path().strip_prefix(root)
        {
            large.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
    Ok(large)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests;
