//! A session's worktree: a new branch from a base, checked out in a folder of AskBridge's own
//! (outside the person's checkout, so that two agents never share a working tree), then committed,
//! merged into its base, or discarded. The git command line, as everywhere in `folder/` (it is
//! what the person's repository already trusts; `git worktree` has no equal in a crate we use).
//!
//! Which base a branch came from is kept in the repository's own config
//! (`branch.<name>.askbridgeBase`): every server that sees the folder reads it, and `git branch
//! -D` takes it away with the branch. No hook runs (`core.hooksPath=/dev/null`): a commit or a
//! merge made from the page cannot wait on a prompt that nobody sees.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use tokio::process::Command;

use super::error::FolderError;
use crate::changes::{Branches, Conflict, Merged, NewWorktree, Worktree};

/// How long one git command may take (a merge of a large tree included).
const GIT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a set-up command may take (`npm ci` of a large project).
pub const SETUP_TIMEOUT: Duration = Duration::from_secs(600);
/// What a failed set-up command's error keeps of its output: the end.
const SETUP_OUTPUT_KEPT: usize = 2_000;
/// What a conflict's diff shows at most.
const CONFLICT_SHOWN: usize = 20_000;
/// The config key that marks a branch as a session's, with its base.
const BASE_KEY: &str = "askbridgeBase";

/// The folder's branches, when it is a git repository's working tree.
pub async fn branches(folder: &Path) -> Option<Branches> {
    git_ok(folder, &["rev-parse", "--is-inside-work-tree"]).await.ok()?;
    let current =
        git_ok(folder, &["symbolic-ref", "--quiet", "--short", "HEAD"]).await.ok().map(|b| b.trim().to_string());
    let all = git_ok(folder, &["for-each-ref", "--format=%(refname:short)", "refs/heads"]).await.ok()?;
    Some(Branches { current, all: all.lines().map(str::to_string).collect() })
}

/// A new branch `new.branch` from `new.base` in `repository`, checked out in a new folder under
/// `under`, where `new.setup` then runs (with `env`). Taken back whole when any step fails.
pub async fn make(
    repository: &Path,
    under: &Path,
    new: &NewWorktree,
    env: &[(OsString, OsString)],
) -> Result<PathBuf, FolderError> {
    let (branch, base) = (new.branch.trim(), new.base.trim());
    check_branch_name(repository, branch).await?;
    if base.is_empty() || base.starts_with('-') {
        return Err(FolderError::Worktree(format!("“{base}” is not a branch to start from")));
    }
    if git_ok(repository, &["rev-parse", "--verify", "--quiet", &format!("{base}^{{commit}}")]).await.is_err() {
        return Err(FolderError::Worktree(format!(
            "there is no branch or commit “{base}” in {}",
            repository.display()
        )));
    }
    if git_ok(repository, &["rev-parse", "--verify", "--quiet", &format!("refs/heads/{branch}")]).await.is_ok() {
        return Err(FolderError::Worktree(format!("a branch “{branch}” already exists")));
    }
    let top = PathBuf::from(git_ok(repository, &["rev-parse", "--show-toplevel"]).await?.trim());
    let name = top.file_name().map_or("repository".into(), |n| n.to_string_lossy().into_owned());
    std::fs::create_dir_all(under).map_err(FolderError::io("make the worktrees' folder"))?;
    let folder =
        under.join(format!("{}-{}-{}", slug(&name), slug(branch), &uuid::Uuid::new_v4().simple().to_string()[..6]));
    let path = folder.to_string_lossy().into_owned();
    git_ok(&top, &["worktree", "add", "--quiet", "-b", branch, &path, base]).await?;
    let made = async {
        git_ok(&top, &["config", &format!("branch.{branch}.{BASE_KEY}"), base]).await?;
        if let Some(setup) = new.setup.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
            set_up(&folder, setup, env).await?;
        }
        Ok(())
    };
    match made.await {
        Ok(()) => Ok(folder),
        Err(error) => {
            remove(&top, &folder, branch, true).await;
            Err(error)
        }
    }
}

/// The session's worktree as it stands; None when its folder is no worktree of AskBridge's.
pub async fn status(folder: &Path) -> Result<Option<Worktree>, FolderError> {
    let Some((top, branch, base)) = ours(folder).await? else { return Ok(None) };
    let counts = git_ok(folder, &["rev-list", "--left-right", "--count", &format!("{base}...HEAD")]).await?;
    let mut counts = counts.split_whitespace().map(|n| n.parse::<u32>().unwrap_or(0));
    let (behind, ahead) = (counts.next().unwrap_or(0), counts.next().unwrap_or(0));
    Ok(Some(Worktree {
        branch,
        base,
        repository: top.display().to_string(),
        uncommitted: uncommitted(folder).await?,
        ahead,
        behind,
    }))
}

/// Commits `paths` (of the uncommitted files) on the session's branch with `message`.
pub async fn commit(folder: &Path, message: &str, paths: &[String]) -> Result<(), FolderError> {
    ours(folder).await?.ok_or(FolderError::NotAWorktree)?;
    let message = message.trim();
    if message.is_empty() {
        return Err(FolderError::Worktree("a commit needs a message".into()));
    }
    if paths.is_empty() {
        return Err(FolderError::Worktree("choose the files to commit".into()));
    }
    let changed = uncommitted(folder).await?;
    if let Some(stray) = paths.iter().find(|path| !changed.contains(path)) {
        return Err(FolderError::Worktree(format!("“{stray}” has no change to commit")));
    }
    let mut add = vec!["add", "-A", "--"];
    add.extend(paths.iter().map(String::as_str));
    git_ok(folder, &add).await?;
    git_ok(folder, &["commit", "--quiet", "-m", message]).await?;
    Ok(())
}

/// Merges the session's branch into its base: where the base is checked out (the person's
/// checkout, when it has no uncommitted changes), else in a checkout of its own under `under`.
/// A conflict takes the merge back: the base is left exactly as it was.
pub async fn merge(folder: &Path, under: &Path) -> Result<Merged, FolderError> {
    let (top, branch, base) = ours(folder).await?.ok_or(FolderError::NotAWorktree)?;
    if let Some(there) = checked_out_at(&top, &base).await? {
        let dirty = git_ok(&there, &["status", "--porcelain", "--untracked-files=no"]).await?;
        if !dirty.trim().is_empty() {
            return Err(FolderError::Worktree(format!(
                "{base} is checked out in {} with uncommitted changes: commit or stash them there first",
                there.display()
            )));
        }
        return merge_in(&there, &branch).await;
    }
    // The base is checked out nowhere: a checkout of it for the merge, removed after.
    let scratch = under.join(format!(".merge-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]));
    std::fs::create_dir_all(under).map_err(FolderError::io("make the worktrees' folder"))?;
    git_ok(&top, &["worktree", "add", "--quiet", &scratch.to_string_lossy(), &base]).await?;
    let merged = merge_in(&scratch, &branch).await;
    let _ = git_ok(&top, &["worktree", "remove", "--force", &scratch.to_string_lossy()]).await;
    merged
}

/// Removes the session's worktree and its branch; refused while it has uncommitted changes,
/// unless `even_uncommitted`.
pub async fn discard(folder: &Path, even_uncommitted: bool) -> Result<(), FolderError> {
    let (top, branch, _) = ours(folder).await?.ok_or(FolderError::NotAWorktree)?;
    let changed = uncommitted(folder).await?;
    if !changed.is_empty() && !even_uncommitted {
        return Err(FolderError::Uncommitted(changed));
    }
    remove(&top, folder, &branch, even_uncommitted).await;
    if folder.exists() {
        return Err(FolderError::Worktree(format!("{} could not be removed", folder.display())));
    }
    Ok(())
}

/// Removes the session's worktree and its branch when nothing of them would be lost: no
/// uncommitted change, and every commit of the branch already in its base (merged, or none made).
/// Whether it was removed; a worktree not AskBridge's, or with work left in it, stays.
pub async fn remove_if_merged(folder: &Path) -> Result<bool, FolderError> {
    let Some((top, branch, base)) = ours(folder).await? else { return Ok(false) };
    if !uncommitted(folder).await?.is_empty() {
        return Ok(false);
    }
    let merged = git(&top, &["merge-base", "--is-ancestor", &branch, &base]).await?;
    if !merged.status.success() {
        return Ok(false);
    }
    remove(&top, folder, &branch, false).await;
    Ok(!folder.exists())
}

/// The merge, in `there` (which has the base checked out); taken back on a conflict.
async fn merge_in(there: &Path, branch: &str) -> Result<Merged, FolderError> {
    let before = git_ok(there, &["rev-parse", "HEAD"]).await?;
    let merging = git(there, &["merge", "--no-edit", "--quiet", branch]).await?;
    if merging.status.success() {
        let (head, tip) = (git_ok(there, &["rev-parse", "HEAD"]).await?, git_ok(there, &["rev-parse", branch]).await?);
        return Ok(Merged::Merged { fast_forward: head == tip });
    }
    if git_ok(there, &["rev-parse", "--verify", "--quiet", "MERGE_HEAD"]).await.is_err() {
        // Refused before it began (a file in the way, say): nothing to take back.
        return Err(FolderError::Git { command: "merge".into(), message: super::git::said(&merging) });
    }
    let unmerged = git_ok(there, &["diff", "--name-only", "--diff-filter=U", "-z"]).await?;
    let mut files = Vec::new();
    for path in unmerged.split('\0').filter(|p| !p.is_empty()) {
        let diff = git_ok(there, &["diff", "--", path]).await.unwrap_or_default();
        files.push(Conflict { path: path.to_string(), diff: diff.chars().take(CONFLICT_SHOWN).collect() });
    }
    git_ok(there, &["merge", "--abort"]).await?;
    let after = git_ok(there, &["rev-parse", "HEAD"]).await?;
    if after != before {
        return Err(FolderError::Worktree("the merge could not be taken back completely".into()));
    }
    Ok(Merged::Conflicts { files })
}

/// The person's checkout, the session's branch and its base, when `folder` is a worktree that
/// AskBridge made.
async fn ours(folder: &Path) -> Result<Option<(PathBuf, String, String)>, FolderError> {
    let Ok(dirs) = git_ok(folder, &["rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir"]).await
    else {
        return Ok(None);
    };
    let mut dirs = dirs.lines();
    let (own, common) = (dirs.next().unwrap_or_default(), dirs.next().unwrap_or_default());
    if own == common {
        return Ok(None);
    }
    let Ok(branch) = git_ok(folder, &["symbolic-ref", "--quiet", "--short", "HEAD"]).await else { return Ok(None) };
    let branch = branch.trim().to_string();
    let Ok(base) = git_ok(folder, &["config", "--get", &format!("branch.{branch}.{BASE_KEY}")]).await else {
        return Ok(None);
    };
    let listed = git_ok(folder, &["worktree", "list", "--porcelain"]).await?;
    let top = listed.lines().find_map(|line| line.strip_prefix("worktree ")).map(PathBuf::from);
    Ok(top.map(|top| (top, branch, base.trim().to_string())))
}

/// Where `branch` is checked out, if anywhere.
async fn checked_out_at(top: &Path, branch: &str) -> Result<Option<PathBuf>, FolderError> {
    let listed = git_ok(top, &["worktree", "list", "--porcelain"]).await?;
    let wanted = format!("branch refs/heads/{branch}");
    let mut at = None;
    for line in listed.lines() {
        if let Some(path) = line.strip_prefix("worktree ") {
            at = Some(PathBuf::from(path));
        } else if line == wanted {
            return Ok(at);
        }
    }
    Ok(None)
}

/// The files `git status` lists as changed or new (renames by their new path).
async fn uncommitted(folder: &Path) -> Result<Vec<String>, FolderError> {
    let listed = git_ok(folder, &["status", "--porcelain=v1", "-z", "--untracked-files=all"]).await?;
    let mut entries = listed.split('\0').filter(|e| !e.is_empty());
    let mut files = Vec::new();
    while let Some(entry) = entries.next() {
        let (status, path) = entry.split_at(entry.len().min(3));
        if status.starts_with('R') || status.starts_with('C') {
            entries.next(); // the old path
        }
        files.push(path.to_string());
    }
    Ok(files)
}

async fn remove(top: &Path, folder: &Path, branch: &str, force: bool) {
    let path = folder.to_string_lossy();
    let mut args = vec!["worktree", "remove"];
    if force {
        args.push("--force");
    }
    args.push(&path);
    if let Err(error) = git_ok(top, &args).await {
        tracing::warn!(%error, folder = %path, "a worktree could not be removed");
    }
    let _ = git_ok(top, &["worktree", "prune"]).await;
    if let Err(error) = git_ok(top, &["branch", "-D", "--", branch]).await {
        tracing::warn!(%error, branch, "a worktree's branch could not be deleted");
    }
}

/// A branch name git takes, that no command could read as an option, and that names no folder
/// outside ours (the folder's name is made of it, `slug`).
async fn check_branch_name(repository: &Path, branch: &str) -> Result<(), FolderError> {
    let refused = || FolderError::Worktree(format!("“{branch}” cannot be a branch's name"));
    if branch.is_empty() || branch.starts_with('-') || branch.contains("..") {
        return Err(refused());
    }
    git_ok(repository, &["check-ref-format", "--branch", branch]).await.map_err(|_| refused())?;
    Ok(())
}

/// `name` as a part of a folder's name: letters, digits, `.`, `_` and `-`, at most 40.
fn slug(name: &str) -> String {
    let slug: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' })
        .take(40)
        .collect();
    slug.trim_matches(['.', '-']).to_string()
}

/// Runs the set-up command in the new worktree, as the person would in a terminal there.
async fn set_up(folder: &Path, setup: &str, env: &[(OsString, OsString)]) -> Result<(), FolderError> {
    let mut command = Command::new("sh");
    command
        .args(["-c", setup])
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(folder)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let output = tokio::time::timeout(SETUP_TIMEOUT, command.output())
        .await
        .map_err(|_| {
            FolderError::Worktree(format!("the set-up command took over {} minutes", SETUP_TIMEOUT.as_secs() / 60))
        })?
        .map_err(FolderError::io("run the set-up command"))?;
    if output.status.success() {
        return Ok(());
    }
    let mut said = String::from_utf8_lossy(&output.stdout).into_owned();
    said.push_str(&String::from_utf8_lossy(&output.stderr));
    let tail: String = said.chars().rev().take(SETUP_OUTPUT_KEPT).collect::<Vec<_>>().into_iter().rev().collect();
    Err(FolderError::Worktree(format!("the set-up command failed ({}): {}", output.status, tail.trim())))
}

async fn git_ok(folder: &Path, args: &[&str]) -> Result<String, FolderError> {
    let stdout = super::git::ok(folder, args, &[("GIT_EDITOR", "true")], GIT_TIMEOUT).await?;
    Ok(String::from_utf8_lossy(&stdout).into_owned())
}

/// git in the person's repository, writing (a worktree, a commit, a merge).
async fn git(folder: &Path, args: &[&str]) -> Result<Output, FolderError> {
    super::git::run(folder, args, &[("GIT_EDITOR", "true")], GIT_TIMEOUT).await
}
