//! A session's worktree on real git: made from a base, committed, merged, a conflict taken back,
//! discarded; names and set-up commands that must not get through.

use std::path::Path;
use std::process::Command;

use super::error::FolderError;
use super::worktree::{branches, commit, discard, make, merge, remove_if_merged, status};
use crate::changes::{Merged, NewWorktree};

fn git(folder: &Path, args: &[&str]) -> String {
    let output = Command::new("git").args(args).current_dir(folder).output().unwrap();
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// A repository on `main` with one commit, and a folder for worktrees beside it.
fn repository() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let repo = root.path().join("project");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "--quiet", "-b", "main"]);
    git(&repo, &["config", "user.email", "me@example.com"]);
    git(&repo, &["config", "user.name", "Me"]);
    std::fs::write(repo.join("notes.md"), "one\ntwo\nthree\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "--quiet", "-m", "first"]);
    let under = root.path().join("worktrees");
    (root, repo, under)
}

fn new(branch: &str) -> NewWorktree {
    NewWorktree { base: "main".into(), branch: branch.into(), setup: None }
}

#[tokio::test]
async fn a_worktree_is_made_committed_and_merged_into_its_base_leaving_the_checkout_alone_until_then() {
    let (_root, repo, under) = repository();
    assert_eq!(branches(&repo).await.unwrap().current.as_deref(), Some("main"));
    let setup = NewWorktree { setup: Some("echo ready > set-up.txt".into()), ..new("askbridge/notes") };
    let folder = make(&repo, &under, &setup, &[("PATH".into(), std::env::var_os("PATH").unwrap())]).await.unwrap();
    assert!(folder.starts_with(&under));
    assert_eq!(std::fs::read_to_string(folder.join("set-up.txt")).unwrap(), "ready\n");

    std::fs::write(folder.join("notes.md"), "one\ntwo\nthree\nfour\n").unwrap();
    let worktree = status(&folder).await.unwrap().unwrap();
    assert_eq!((worktree.branch.as_str(), worktree.base.as_str()), ("askbridge/notes", "main"));
    assert_eq!(worktree.uncommitted, ["notes.md", "set-up.txt"]);
    assert_eq!(
        std::fs::read_to_string(repo.join("notes.md")).unwrap(),
        "one\ntwo\nthree\n",
        "the checkout is untouched"
    );

    commit(&folder, "Four", &["notes.md".into()]).await.unwrap();
    let worktree = status(&folder).await.unwrap().unwrap();
    assert_eq!((worktree.ahead, worktree.uncommitted), (1, vec!["set-up.txt".to_string()]));
    assert_eq!(merge(&folder, &under).await.unwrap(), Merged::Merged { fast_forward: true });
    assert_eq!(std::fs::read_to_string(repo.join("notes.md")).unwrap(), "one\ntwo\nthree\nfour\n");
    assert_eq!(git(&repo, &["log", "-1", "--format=%s"]), "Four");
}

#[tokio::test]
async fn a_conflict_is_shown_and_the_base_is_left_exactly_as_it_was() {
    let (_root, repo, under) = repository();
    let folder = make(&repo, &under, &new("askbridge/edit"), &[]).await.unwrap();
    std::fs::write(folder.join("notes.md"), "one\nTWO by the agent\nthree\n").unwrap();
    commit(&folder, "Agent's two", &["notes.md".into()]).await.unwrap();
    std::fs::write(repo.join("notes.md"), "one\nTWO by hand\nthree\n").unwrap();
    git(&repo, &["commit", "--quiet", "-am", "My two"]);
    let before = git(&repo, &["rev-parse", "HEAD"]);

    let Merged::Conflicts { files } = merge(&folder, &under).await.unwrap() else { panic!("no conflict") };
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].path, "notes.md");
    assert!(files[0].diff.contains("TWO by the agent") && files[0].diff.contains("TWO by hand"), "{}", files[0].diff);
    assert_eq!(git(&repo, &["rev-parse", "HEAD"]), before);
    assert_eq!(git(&repo, &["status", "--porcelain"]), "", "nothing half-merged");
    assert!(!repo.join(".git/MERGE_HEAD").exists());
}

#[tokio::test]
async fn a_base_checked_out_nowhere_is_merged_in_a_checkout_of_its_own() {
    let (_root, repo, under) = repository();
    git(&repo, &["branch", "release"]);
    let folder =
        make(&repo, &under, &NewWorktree { base: "release".into(), ..new("askbridge/fix") }, &[]).await.unwrap();
    std::fs::write(folder.join("fix.txt"), "fixed\n").unwrap();
    commit(&folder, "Fix", &["fix.txt".into()]).await.unwrap();
    assert_eq!(merge(&folder, &under).await.unwrap(), Merged::Merged { fast_forward: true });
    assert_eq!(git(&repo, &["log", "-1", "--format=%s", "release"]), "Fix");
    assert_eq!(git(&repo, &["worktree", "list"]).lines().count(), 2, "the merge's own checkout is gone");
}

#[tokio::test]
async fn discarding_asks_before_uncommitted_work_goes_then_removes_the_worktree_and_its_branch() {
    let (_root, repo, under) = repository();
    let folder = make(&repo, &under, &new("askbridge/try"), &[]).await.unwrap();
    std::fs::write(folder.join("draft.txt"), "draft\n").unwrap();
    assert!(matches!(discard(&folder, false).await, Err(FolderError::Uncommitted(files)) if files == ["draft.txt"]));
    assert!(folder.join("draft.txt").exists());
    discard(&folder, true).await.unwrap();
    assert!(!folder.exists());
    assert_eq!(git(&repo, &["branch", "--list", "askbridge/try"]), "");
    let config =
        Command::new("git").args(["config", "--get-regexp", "askbridgeBase"]).current_dir(&repo).output().unwrap();
    assert!(config.stdout.is_empty(), "the branch's base went with it");
}

#[tokio::test]
async fn names_that_leave_the_folder_or_read_as_options_are_refused_and_a_failed_set_up_leaves_nothing() {
    let (_root, repo, under) = repository();
    for bad in ["../../evil", "-f", "a..b", "with space", "", "refs/../x"] {
        let refused = make(&repo, &under, &new(bad), &[]).await;
        assert!(matches!(refused, Err(FolderError::Worktree(_))), "{bad:?}: {refused:?}");
    }
    let refused = make(&repo, &under, &NewWorktree { base: "--output=x".into(), ..new("ok") }, &[]).await;
    assert!(matches!(refused, Err(FolderError::Worktree(_))));
    let failing = NewWorktree { setup: Some("echo installing; exit 4".into()), ..new("askbridge/setup") };
    let error = make(&repo, &under, &failing, &[]).await.unwrap_err().to_string();
    assert!(error.contains("installing") && error.contains('4'), "{error}");
    assert_eq!(git(&repo, &["branch", "--list", "askbridge/setup"]), "");
    assert_eq!(git(&repo, &["worktree", "list"]).lines().count(), 1);
    assert!(status(&repo).await.unwrap().is_none(), "the checkout itself is no session's worktree");
}

#[tokio::test]
async fn after_a_merge_a_later_conflict_still_merges_nothing() {
    let (_root, repo, under) = repository();
    let folder = make(&repo, &under, &new("askbridge/again"), &[]).await.unwrap();
    std::fs::write(folder.join("notes.md"), "# Notes\n\nfirst line\n").unwrap();
    commit(&folder, "First", &["notes.md".into()]).await.unwrap();
    assert_eq!(merge(&folder, &under).await.unwrap(), Merged::Merged { fast_forward: true });
    std::fs::write(folder.join("notes.md"), "# Notes\n\nfirst line\nsecond line\n").unwrap();
    commit(&folder, "Second", &["notes.md".into()]).await.unwrap();
    std::fs::write(repo.join("notes.md"), "# Notes\n\nfirst line\nmy own second line\n").unwrap();
    git(&repo, &["commit", "--quiet", "-am", "Mine"]);
    assert!(matches!(merge(&folder, &under).await.unwrap(), Merged::Conflicts { .. }));
}

#[tokio::test]
async fn a_worktree_goes_by_itself_only_when_nothing_in_it_would_be_lost() {
    let (_root, repo, under) = repository();
    let folder = make(&repo, &under, &new("askbridge/tidy"), &[]).await.unwrap();
    std::fs::write(folder.join("notes.md"), "one\ntwo\nthree\nfour\n").unwrap();
    assert!(!remove_if_merged(&folder).await.unwrap(), "an uncommitted change keeps it");
    commit(&folder, "Four", &["notes.md".into()]).await.unwrap();
    assert!(!remove_if_merged(&folder).await.unwrap(), "a commit the base has not keeps it");
    assert!(folder.exists() && git(&repo, &["branch", "--list", "askbridge/tidy"]).contains("askbridge/tidy"));

    merge(&folder, &under).await.unwrap();
    assert!(remove_if_merged(&folder).await.unwrap(), "merged: nothing is lost");
    assert!(!folder.exists());
    assert_eq!(git(&repo, &["branch", "--list", "askbridge/tidy"]), "", "its branch went with it");
    assert_eq!(git(&repo, &["log", "-1", "--format=%s"]), "Four", "the base keeps the work");

    // A plain checkout is the person's own: never removed.
    assert!(!remove_if_merged(&repo).await.unwrap());
    assert!(repo.join("notes.md").exists());
}
