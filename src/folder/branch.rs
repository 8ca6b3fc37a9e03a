//! The folder against its branch's base: what differs between the working tree and the commit
//! where the current branch left its base branch (`git merge-base HEAD <base>`), committed or not,
//! untracked files included. It stays right when the agent commits, and it is read from the
//! person's own repository without writing to it (`GIT_OPTIONAL_LOCKS=0`, no index refresh).
//!
//! The base is the remote's default branch (`origin/HEAD`), else `main`, else `master`.

use std::path::Path;
use std::time::Duration;

use super::error::FolderError;
use super::shadow::{Changed, LARGEST_FILE, parse_name_status};

/// How long one git command may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(20);

/// The base branch and the commit the current branch left it at; None when the folder is no
/// repository, or has no such branch.
pub async fn merge_base(folder: &Path) -> Option<(String, String)> {
    let base = base_branch(folder).await?;
    let commit = git(folder, &["merge-base", "HEAD", &base]).await.ok()?;
    Some((base, String::from_utf8_lossy(&commit).trim().to_string()))
}

async fn base_branch(folder: &Path) -> Option<String> {
    if let Ok(remote) = git(folder, &["symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"]).await {
        return Some(String::from_utf8_lossy(&remote).trim().to_string());
    }
    for name in ["main", "master"] {
        if git(folder, &["rev-parse", "--verify", "--quiet", &format!("refs/heads/{name}")]).await.is_ok() {
            return Some(name.to_string());
        }
    }
    None
}

/// What differs from `commit` to the working tree: tracked files as git diffs them, and the
/// untracked ones git does not ignore, as added.
pub async fn changed_since(folder: &Path, commit: &str) -> Result<Vec<Changed>, FolderError> {
    let listed = git(folder, &["diff", "-z", "--name-status", "-M", commit, "--"]).await?;
    let mut changes = parse_name_status(&String::from_utf8_lossy(&listed));
    let untracked = git(folder, &["ls-files", "-z", "--others", "--exclude-standard"]).await?;
    for path in String::from_utf8_lossy(&untracked).split('\0').filter(|path| !path.is_empty()) {
        changes.push(Changed { status: 'A', path: path.to_string(), old_path: None });
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(changes)
}

/// The file at `path` in `commit`; None when too large to read.
pub async fn blob_at(folder: &Path, commit: &str, path: &str) -> Result<Option<Vec<u8>>, FolderError> {
    let object = format!("{commit}:{path}");
    let size = match git(folder, &["cat-file", "-s", &object]).await {
        Ok(size) => String::from_utf8_lossy(&size).trim().parse::<u64>().unwrap_or(u64::MAX),
        Err(FolderError::Git { .. }) => return Ok(Some(Vec::new())),
        Err(other) => return Err(other),
    };
    if size > LARGEST_FILE {
        return Ok(None);
    }
    git(folder, &["cat-file", "blob", &object]).await.map(Some)
}

/// The file at `path` in the working tree, as it is now (a link as where it points, as git
/// keeps it); None when too large.
pub fn in_working_tree(folder: &Path, path: &str) -> Option<Vec<u8>> {
    let full = folder.join(path);
    let meta = std::fs::symlink_metadata(&full).ok()?;
    if meta.file_type().is_symlink() {
        return std::fs::read_link(&full).ok().map(|target| target.as_os_str().as_encoded_bytes().to_vec());
    }
    if meta.len() > LARGEST_FILE {
        return None;
    }
    Some(std::fs::read(&full).unwrap_or_default())
}

/// git in the person's repository, reading only: no optional lock either.
async fn git(folder: &Path, args: &[&str]) -> Result<Vec<u8>, FolderError> {
    super::git::ok(folder, args, &[("GIT_OPTIONAL_LOCKS", "0")], GIT_TIMEOUT).await
}
