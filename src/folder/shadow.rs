//! A folder's checkpoints, in a git repository of AskBridge's own: its objects and its index live
//! in the data folder (`GIT_DIR`), the folder is only its work tree. So a checkpoint never touches
//! the person's branch, index, stash or refs, and a folder that is no repository has them too.
//! The folder's `.gitignore` files are honoured, as git honours them; files over
//! [`LARGEST_FILE`] are left out (written to the shadow's `info/exclude`).
//!
//! Git's command line, not libgit2 (`git2`): git is on every machine that runs a coding agent, its
//! `add -A` keeps a stat cache that makes each next checkpoint of a large folder cheap, and
//! libgit2 would add its C build to every first run (BUILD-NOTES.md).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use super::error::FolderError;

/// How long one git command may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(20);
/// Files larger than this are not kept in checkpoints (nor shown in a diff).
pub const LARGEST_FILE: u64 = 10 * 1024 * 1024;

/// A change between two trees, as `git diff-tree --name-status` says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    pub status: char,
    pub path: String,
    pub old_path: Option<String>,
}

/// The shadow repository of one folder.
#[derive(Debug, Clone)]
pub struct Shadow {
    git_dir: PathBuf,
    work_tree: PathBuf,
}

impl Shadow {
    pub fn new(git_dir: PathBuf, work_tree: PathBuf) -> Self {
        Self { git_dir, work_tree }
    }

    pub fn work_tree(&self) -> &Path {
        &self.work_tree
    }

    /// Creates the repository if it is not there yet.
    pub async fn init(&self) -> Result<(), FolderError> {
        if self.git_dir.join("HEAD").exists() {
            return Ok(());
        }
        crate::store::private::create_dir(&self.git_dir).map_err(FolderError::io("create the checkpoints' folder"))?;
        let mut init = Command::new("git");
        super::git::clean_environment(&mut init);
        init.env("GIT_CONFIG_NOSYSTEM", "1");
        let made = init.arg("init").arg("--quiet").arg("--bare").arg(&self.git_dir).output().await;
        match made {
            Ok(output) if output.status.success() => {}
            Ok(output) => {
                let message = String::from_utf8_lossy(&output.stderr).trim().to_string();
                return Err(FolderError::Git { command: "init".into(), message });
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Err(FolderError::GitMissing),
            Err(error) => return Err(FolderError::io("run git")(error)),
        }
        // A bare repository given a work tree: git works in it with the index in the git dir.
        self.git(["config", "core.bare", "false"]).await?;
        Ok(())
    }

    /// Leaves `paths` (relative, `/` between parts) out of every next snapshot.
    pub fn exclude(&self, paths: &[String]) -> Result<(), FolderError> {
        let info = self.git_dir.join("info");
        std::fs::create_dir_all(&info).map_err(FolderError::io("write the checkpoints' excludes"))?;
        let mut text = String::from("# Files too large to checkpoint (AskBridge)\n");
        for path in paths {
            // Anchored, every special character escaped: the line names this one file.
            text.push('/');
            for c in path.chars() {
                if matches!(c, '*' | '?' | '[' | ']' | '\\' | '!' | '#' | ' ') {
                    text.push('\\');
                }
                text.push(c);
            }
            text.push('\n');
        }
        std::fs::write(info.join("exclude"), text).map_err(FolderError::io("write the checkpoints' excludes"))
    }

    /// The folder as it is now, as a tree in the shadow repository.
    pub async fn snapshot(&self) -> Result<String, FolderError> {
        self.git(["add", "--all", "--ignore-errors", "--", "."]).await?;
        Ok(self.git(["write-tree"]).await?.trim().to_string())
    }

    /// Records `tree` as checkpoint `name` (a ref under `refs/askbridge/`), with `subject` as its
    /// commit's subject.
    pub async fn mark(&self, name: &str, tree: &str, subject: &str) -> Result<(), FolderError> {
        let commit = self.git(["commit-tree", tree, "-m", subject]).await?;
        let commit = commit.trim();
        self.git(["update-ref", &format!("refs/askbridge/{name}"), commit]).await?;
        Ok(())
    }

    /// The checkpoints under `refs/askbridge/<prefix>`: each one's name after the prefix, its tree,
    /// when it was taken (seconds) and its subject.
    pub async fn marks(&self, prefix: &str) -> Result<Vec<(String, String, i64, String)>, FolderError> {
        if !self.git_dir.join("HEAD").exists() {
            return Ok(Vec::new());
        }
        let listed = self
            .git([
                "for-each-ref",
                "--format=%(refname)%00%(tree)%00%(committerdate:unix)%00%(subject)",
                &format!("refs/askbridge/{prefix}"),
            ])
            .await?;
        let full = format!("refs/askbridge/{prefix}");
        Ok(listed
            .lines()
            .filter_map(|line| {
                let mut fields = line.split('\0');
                let name = fields.next()?.strip_prefix(&full)?.trim_start_matches('/').to_string();
                let tree = fields.next()?.to_string();
                let at = fields.next()?.parse().ok()?;
                let subject = fields.next().unwrap_or_default().to_string();
                Some((name, tree, at, subject))
            })
            .collect())
    }

    /// Deletes the checkpoints under `refs/askbridge/<prefix>/`, then lets git pack and prune
    /// what nothing refers to any more, when there is enough of it (`gc --auto`).
    pub async fn forget(&self, prefix: &str) -> Result<(), FolderError> {
        let names: Vec<String> = self.marks(prefix).await?.into_iter().map(|(name, ..)| name).collect();
        if names.is_empty() {
            return Ok(());
        }
        let deletions: String = names.iter().map(|name| format!("delete refs/askbridge/{prefix}/{name}\n")).collect();
        self.git_bytes(["update-ref", "--stdin"], Some(deletions.into_bytes())).await?;
        self.git(["-c", "gc.auto=6700", "gc", "--auto", "--quiet"]).await?;
        Ok(())
    }

    /// What differs from tree `from` to tree `to`, renames found (`renames`) or not.
    pub async fn changed(&self, from: &str, to: &str, renames: bool) -> Result<Vec<Changed>, FolderError> {
        let renames = if renames { "-M" } else { "--no-renames" };
        let listed = self.git(["diff-tree", "-r", "-z", "--name-status", renames, from, to]).await?;
        Ok(parse_name_status(&listed))
    }

    /// The file at `path` in `tree`, if it is there; None for a file too large to read.
    pub async fn blob(&self, tree: &str, path: &str) -> Result<Option<Vec<u8>>, FolderError> {
        let object = format!("{tree}:{path}");
        let size = match self.git(["cat-file", "-s", &object]).await {
            Ok(size) => size.trim().parse::<u64>().unwrap_or(u64::MAX),
            Err(FolderError::Git { .. }) => return Ok(Some(Vec::new())),
            Err(other) => return Err(other),
        };
        if size > LARGEST_FILE {
            return Ok(None);
        }
        self.git_bytes(["cat-file", "blob", &object], None).await.map(Some)
    }

    /// The files at each `(tree, path)`, as [`Shadow::blob`] reads one, in two git processes
    /// whatever their number: a process per read made a Changes view of 50 files take 0.9 s on
    /// two cores (`make bench`, views), four spawns of git per file.
    pub async fn blobs(&self, wanted: &[(&str, &str)]) -> Result<Vec<Option<Vec<u8>>>, FolderError> {
        // The batch's protocol is a line per object: a path with a line break in it is read alone.
        if wanted.iter().any(|(_, path)| path.contains('\n')) {
            let mut read = Vec::with_capacity(wanted.len());
            for (tree, path) in wanted {
                read.push(self.blob(tree, path).await?);
            }
            return Ok(read);
        }
        let asked: String = wanted.iter().map(|(tree, path)| format!("{tree}:{path}\n")).collect();
        let checked =
            self.git_bytes(["cat-file", "--batch-check=%(objectname) %(objectsize)"], Some(asked.into_bytes())).await?;
        let checked = String::from_utf8_lossy(&checked);
        // Per object: its id and size, or None where it is not there (an empty file, as `blob`).
        let found: Vec<Option<(&str, u64)>> = checked
            .lines()
            .map(|line| {
                let (id, size) = line.rsplit_once(' ')?;
                if size == "missing" {
                    return None;
                }
                Some((id, size.parse().unwrap_or(u64::MAX)))
            })
            .collect();
        if found.len() != wanted.len() {
            return Err(FolderError::Git {
                command: "cat-file".into(),
                message: "the batch answered another count".into(),
            });
        }
        let readable: Vec<&str> =
            found.iter().flatten().filter(|(_, size)| *size <= LARGEST_FILE).map(|(id, _)| *id).collect();
        let mut contents = std::collections::HashMap::new();
        if !readable.is_empty() {
            let asked: String = readable.iter().map(|id| format!("{id}\n")).collect();
            let batch = self.git_bytes(["cat-file", "--batch"], Some(asked.into_bytes())).await?;
            contents = parse_batch(&batch)?;
        }
        Ok(found
            .into_iter()
            .map(|object| match object {
                None => Some(Vec::new()),
                Some((_, size)) if size > LARGEST_FILE => None,
                Some((id, _)) => Some(contents.get(id).cloned().unwrap_or_default()),
            })
            .collect())
    }

    /// Puts the folder back as `tree` has it: files changed or removed since are written again,
    /// files added since are removed. Returns the paths it touched.
    pub async fn restore(&self, tree: &str) -> Result<Vec<String>, FolderError> {
        let now = self.snapshot().await?;
        let changed = self.changed(tree, &now, false).await?;
        let mut back = Vec::new();
        for change in &changed {
            if change.status == 'A' {
                let path = self.work_tree.join(&change.path);
                match std::fs::remove_file(&path) {
                    Ok(()) => remove_empty_parents(&self.work_tree, &path),
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                    Err(error) => return Err(FolderError::io("remove a file the turn added")(error)),
                }
            } else {
                back.push(change.path.clone());
            }
        }
        if !back.is_empty() {
            let list: Vec<u8> = back.iter().flat_map(|path| path.bytes().chain([0])).collect();
            self.git_bytes(["checkout", tree, "--pathspec-from-file=-", "--pathspec-file-nul"], Some(list)).await?;
        }
        self.snapshot().await?;
        Ok(changed.into_iter().map(|change| change.path).collect())
    }

    async fn git<const N: usize>(&self, args: [&str; N]) -> Result<String, FolderError> {
        let bytes = self.git_bytes(args, None).await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Runs git on the shadow repository, with nothing of the server's own git settings in its
    /// way (no `GIT_*` of its environment, no hooks, no fsmonitor, literal paths).
    async fn git_bytes<const N: usize>(&self, args: [&str; N], input: Option<Vec<u8>>) -> Result<Vec<u8>, FolderError> {
        let mut command = Command::new("git");
        super::git::clean_environment(&mut command);
        command
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_DIR", &self.git_dir)
            .env("GIT_WORK_TREE", &self.work_tree)
            .env("GIT_INDEX_FILE", self.git_dir.join("index"))
            .env("GIT_LITERAL_PATHSPECS", "1")
            .env("GIT_AUTHOR_NAME", "AskBridge")
            .env("GIT_AUTHOR_EMAIL", "askbridge@localhost")
            .env("GIT_COMMITTER_NAME", "AskBridge")
            .env("GIT_COMMITTER_EMAIL", "askbridge@localhost")
            .args(["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.autocrlf=false"])
            .args(["-c", "core.quotepath=false", "-c", "advice.addEmbeddedRepo=false", "-c", "gc.auto=0"])
            .args(args.iter().map(OsStr::new))
            .current_dir(&self.work_tree)
            .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|error| match error.kind() {
            std::io::ErrorKind::NotFound => FolderError::GitMissing,
            _ => FolderError::io("run git")(error),
        })?;
        if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin.write_all(&input).await.map_err(FolderError::io("write to git"))?;
        }
        let output = tokio::time::timeout(GIT_TIMEOUT, child.wait_with_output())
            .await
            .map_err(|_| FolderError::TooSlow { command: args.first().map(|a| a.to_string()).unwrap_or_default() })?
            .map_err(FolderError::io("run git"))?;
        if !output.status.success() {
            return Err(FolderError::Git {
                command: args.first().map(|a| a.to_string()).unwrap_or_default(),
                message: String::from_utf8_lossy(&output.stderr).trim().chars().take(500).collect(),
            });
        }
        Ok(output.stdout)
    }
}

/// `git diff-tree -z --name-status`'s output: `M\0path\0`, `R100\0old\0new\0`.
pub fn parse_name_status(listed: &str) -> Vec<Changed> {
    let mut fields = listed.split('\0').filter(|field| !field.is_empty());
    let mut changes = Vec::new();
    while let Some(status) = fields.next() {
        let Some(letter) = status.chars().next() else { continue };
        let Some(first) = fields.next() else { break };
        if matches!(letter, 'R' | 'C') {
            let Some(second) = fields.next() else { break };
            changes.push(Changed { status: letter, path: second.to_string(), old_path: Some(first.to_string()) });
        } else {
            changes.push(Changed { status: letter, path: first.to_string(), old_path: None });
        }
    }
    changes
}

/// `git cat-file --batch`'s output: per object `<id> <type> <size>\n<size bytes>\n`, by id.
fn parse_batch(mut batch: &[u8]) -> Result<std::collections::HashMap<String, Vec<u8>>, FolderError> {
    let torn = || FolderError::Git { command: "cat-file".into(), message: "the batch's answer was cut short".into() };
    let mut contents = std::collections::HashMap::new();
    while !batch.is_empty() {
        let end = batch.iter().position(|&b| b == b'\n').ok_or_else(torn)?;
        let header = String::from_utf8_lossy(&batch[..end]).into_owned();
        let mut fields = header.split(' ');
        let (Some(id), Some(_kind), Some(size)) = (fields.next(), fields.next(), fields.next()) else {
            return Err(torn());
        };
        let size: usize = size.parse().map_err(|_| torn())?;
        let body = batch.get(end + 1..end + 1 + size).ok_or_else(torn)?;
        contents.insert(id.to_string(), body.to_vec());
        batch = batch.get(end + 2 + size..).unwrap_or_default();
    }
    Ok(contents)
}

/// Removes the folders above `path` that it left empty, up to `root` (not included).
fn remove_empty_parents(root: &Path, path: &Path) {
    let mut at = path.parent();
    while let Some(folder) = at {
        if folder == root || !folder.starts_with(root) || std::fs::remove_dir(folder).is_err() {
            return;
        }
        at = folder.parent();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_of_blobs_is_read_by_its_sizes_whatever_their_bytes() {
        let batch = b"aa blob 4\na\nb\n\nbb blob 0\n\ncc blob 3\n\0\n\0\n";
        let read = parse_batch(batch).unwrap();
        assert_eq!(read["aa"], b"a\nb\n");
        assert_eq!(read["bb"], b"");
        assert_eq!(read["cc"], b"\0\n\0");
        assert!(parse_batch(b"aa blob 9\nshort\n").is_err(), "a torn answer is an error, not a file");
    }

    #[test]
    fn name_status_reads_renames_and_plain_changes() {
        let listed = "M\0src/a.rs\0R087\0old name.txt\0new name.txt\0A\0b\0D\0c\0";
        assert_eq!(
            parse_name_status(listed),
            vec![
                Changed { status: 'M', path: "src/a.rs".into(), old_path: None },
                Changed { status: 'R', path: "new name.txt".into(), old_path: Some("old name.txt".into()) },
                Changed { status: 'A', path: "b".into(), old_path: None },
                Changed { status: 'D', path: "c".into(), old_path: None },
            ]
        );
    }
}
