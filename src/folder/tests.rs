use std::process::Command;

use super::*;

fn git(folder: &Path, args: &[&str]) -> String {
    let output = Command::new("git").args(args).current_dir(folder).output().expect("git runs");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn repository() -> tempfile::TempDir {
    let folder = tempfile::tempdir().unwrap();
    git(folder.path(), &["init", "--quiet", "-b", "main"]);
    git(folder.path(), &["config", "user.email", "me@example.com"]);
    git(folder.path(), &["config", "user.name", "Me"]);
    std::fs::write(folder.path().join("README.md"), "hello\n").unwrap();
    std::fs::write(folder.path().join(".gitignore"), "target/\n").unwrap();
    git(folder.path(), &["add", "."]);
    git(folder.path(), &["commit", "--quiet", "-m", "first"]);
    folder
}

fn paths(changes: &Changes) -> Vec<(&str, FileStatus)> {
    changes.files.iter().map(|file| (file.path.as_str(), file.status)).collect()
}

#[tokio::test]
async fn each_turn_shows_what_it_changed_and_the_session_shows_all_of_it() {
    let (data, folder) = (tempfile::tempdir().unwrap(), repository());
    let (work, folders) = (folder.path(), Folders::new(data.path()));
    assert_eq!(folders.checkpoint(work, "s1", "m1").await.unwrap(), 1);
    std::fs::write(work.join("README.md"), "hello\nworld\n").unwrap();
    std::fs::write(work.join("new.txt"), "new\n").unwrap();
    std::fs::create_dir(work.join("target")).unwrap();
    std::fs::write(work.join("target/out.bin"), "ignored").unwrap();
    assert_eq!(folders.checkpoint(work, "s1", "m2").await.unwrap(), 2);
    std::fs::remove_file(work.join("new.txt")).unwrap();
    std::fs::write(work.join("second.txt"), "2\n").unwrap();

    let first = folders.changes(work, "s1", &Scope::Turn { number: 1 }).await.unwrap();
    assert_eq!(paths(&first), vec![("README.md", FileStatus::Modified), ("new.txt", FileStatus::Added)]);
    assert_eq!(first.turns.iter().map(|t| t.message_id.as_str()).collect::<Vec<_>>(), ["m1", "m2"]);
    let readme = &first.files[0];
    assert_eq!((readme.added, readme.removed), (1, 0));
    assert!(readme.hunks[0].lines.iter().any(|l| l.text == "world" && l.kind == crate::changes::LineKind::Added));

    let second = folders.changes(work, "s1", &Scope::Turn { number: 2 }).await.unwrap();
    assert_eq!(paths(&second), vec![("new.txt", FileStatus::Deleted), ("second.txt", FileStatus::Added)]);
    let session = folders.changes(work, "s1", &Scope::Session).await.unwrap();
    assert_eq!(paths(&session), vec![("README.md", FileStatus::Modified), ("second.txt", FileStatus::Added)]);
    // Another session in the same folder has turns of its own.
    assert!(folders.changes(work, "s2", &Scope::Session).await.unwrap().turns.is_empty());
}

#[tokio::test]
async fn checkpoints_leave_the_persons_branch_index_and_stash_as_they_were() {
    let (data, folder) = (tempfile::tempdir().unwrap(), repository());
    let (work, folders) = (folder.path(), Folders::new(data.path()));
    std::fs::write(work.join("README.md"), "staged\n").unwrap();
    git(work, &["add", "README.md"]);
    std::fs::write(work.join("README.md"), "staged, then changed\n").unwrap();
    let before =
        (git(work, &["status", "--porcelain"]), git(work, &["rev-parse", "HEAD"]), git(work, &["stash", "list"]));
    folders.checkpoint(work, "s", "m1").await.unwrap();
    std::fs::write(work.join("other.txt"), "x").unwrap();
    folders.changes(work, "s", &Scope::Session).await.unwrap();
    std::fs::remove_file(work.join("other.txt")).unwrap();
    let after =
        (git(work, &["status", "--porcelain"]), git(work, &["rev-parse", "HEAD"]), git(work, &["stash", "list"]));
    assert_eq!(before, after);
    assert_eq!(
        git(work, &["diff", "--cached", "--name-only"]),
        "README.md\n",
        "the person's index keeps what they staged"
    );
    assert!(git(work, &["for-each-ref"]).lines().all(|line| !line.contains("askbridge")));
}

#[tokio::test]
async fn after_the_agent_commits_its_turn_still_shows_what_it_changed() {
    let (data, folder) = (tempfile::tempdir().unwrap(), repository());
    let (work, folders) = (folder.path(), Folders::new(data.path()));
    folders.checkpoint(work, "s", "m1").await.unwrap();
    std::fs::write(work.join("feature.rs"), "fn main() {}\n").unwrap();
    git(work, &["add", "."]);
    git(work, &["commit", "--quiet", "-m", "the agent's commit"]);
    let turn = folders.changes(work, "s", &Scope::Turn { number: 1 }).await.unwrap();
    assert_eq!(paths(&turn), vec![("feature.rs", FileStatus::Added)]);
}

#[tokio::test]
async fn undoing_a_turn_puts_back_its_files_and_removes_those_it_added() {
    let (data, folder) = (tempfile::tempdir().unwrap(), repository());
    let (work, folders) = (folder.path(), Folders::new(data.path()));
    folders.checkpoint(work, "s", "m1").await.unwrap();
    std::fs::write(work.join("README.md"), "rewritten\n").unwrap();
    std::fs::create_dir_all(work.join("src/deep")).unwrap();
    std::fs::write(work.join("src/deep/added.rs"), "x").unwrap();
    std::fs::remove_file(work.join(".gitignore")).unwrap();
    let mut preview = folders.undo_preview(work, "s", 1).await.unwrap();
    preview.sort();
    assert_eq!(preview, [".gitignore", "README.md", "src/deep/added.rs"]);
    folders.undo(work, "s", 1).await.unwrap();
    assert_eq!(std::fs::read_to_string(work.join("README.md")).unwrap(), "hello\n");
    assert_eq!(std::fs::read_to_string(work.join(".gitignore")).unwrap(), "target/\n");
    assert!(!work.join("src").exists(), "the folders the turn made, emptied, are gone too");
    assert_eq!(git(work, &["status", "--porcelain"]), "");
    assert!(matches!(folders.undo(work, "s", 7).await, Err(FolderError::NoSuchTurn(7))));
}

#[tokio::test]
async fn a_relative_data_folder_is_taken_from_where_the_server_runs() {
    let folder = repository();
    let data = tempfile::tempdir_in(".").unwrap();
    let relative = data.path().strip_prefix(std::env::current_dir().unwrap()).unwrap();
    let folders = Folders::new(relative);
    folders.checkpoint(folder.path(), "s", "m1").await.unwrap();
    assert!(data.path().join("checkpoints").is_dir());
}

#[tokio::test]
async fn a_folder_that_is_no_repository_has_checkpoints_too() {
    let (data, folder) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (work, folders) = (folder.path(), Folders::new(data.path()));
    std::fs::write(work.join("notes.txt"), "a\n").unwrap();
    folders.checkpoint(work, "s", "m1").await.unwrap();
    std::fs::write(work.join("notes.txt"), "b\n").unwrap();
    let turn = folders.changes(work, "s", &Scope::Turn { number: 1 }).await.unwrap();
    assert_eq!(paths(&turn), vec![("notes.txt", FileStatus::Modified)]);
    assert!(!work.join(".git").exists(), "nothing of the shadow is in the folder");
}

#[tokio::test]
async fn a_file_too_large_is_left_out_of_checkpoints() {
    let (data, folder) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (work, folders) = (folder.path(), Folders::new(data.path()));
    let big = std::fs::File::create(work.join("big.bin")).unwrap();
    big.set_len(LARGEST_FILE + 1).unwrap();
    folders.checkpoint(work, "s", "m1").await.unwrap();
    std::fs::write(work.join("small.txt"), "x\n").unwrap();
    std::fs::OpenOptions::new().append(true).open(work.join("big.bin")).unwrap().set_len(LARGEST_FILE + 2).unwrap();
    let turn = folders.changes(work, "s", &Scope::Session).await.unwrap();
    assert_eq!(paths(&turn), vec![("small.txt", FileStatus::Added)]);
}

#[tokio::test]
async fn a_write_in_a_watched_folder_moves_its_version() {
    let (data, folder) = (tempfile::tempdir().unwrap(), repository());
    let (work, folders) = (folder.path().to_path_buf(), Arc::new(Folders::new(data.path())));
    let waiter = {
        let (work, folders) = (work.clone(), folders.clone());
        tokio::spawn(async move { folders.wait(&work, 0, Duration::from_secs(30)).await })
    };
    // Written until the watch (started by the first waiter) has seen one.
    crate::testing::wait_until("the watch sees a write", Duration::from_secs(20), || {
        std::fs::write(work.join("README.md"), format!("{:?}\n", std::time::Instant::now())).unwrap();
        let seen = waiter.is_finished().then_some(());
        async move {
            if seen.is_none() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            seen
        }
    })
    .await;
    assert_eq!(waiter.await.unwrap(), 1);
}

#[tokio::test]
async fn a_link_that_points_out_of_the_folder_is_shown_as_a_link_never_read_through() {
    let (data, folder, outside) = (tempfile::tempdir().unwrap(), repository(), tempfile::tempdir().unwrap());
    let (work, folders) = (folder.path(), Folders::new(data.path()));
    std::fs::write(outside.path().join("secret.txt"), "a secret\n").unwrap();
    folders.checkpoint(work, "s", "m1").await.unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), work.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(outside.path(), work.join("linked-folder")).unwrap();
    let turn = folders.changes(work, "s", &Scope::Session).await.unwrap();
    assert_eq!(paths(&turn), vec![("link.txt", FileStatus::Added), ("linked-folder", FileStatus::Added)]);
    let shown: String =
        turn.files.iter().flat_map(|f| &f.hunks).flat_map(|h| &h.lines).map(|l| l.text.clone()).collect();
    assert!(!shown.contains("a secret"), "the link's target is not read: {shown}");
    assert!(shown.contains("secret.txt"), "the link shows where it points: {shown}");
    // Undone, the links go, and what they pointed at stays.
    folders.undo(work, "s", 1).await.unwrap();
    assert!(work.join("link.txt").symlink_metadata().is_err());
    assert_eq!(std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(), "a secret\n");
}

#[tokio::test]
async fn against_its_base_a_branch_shows_what_it_committed_and_what_it_did_not() {
    let (data, folder) = (tempfile::tempdir().unwrap(), repository());
    let (work, folders) = (folder.path(), Folders::new(data.path()));
    git(work, &["checkout", "--quiet", "-b", "feature"]);
    std::fs::write(work.join("committed.txt"), "on the branch\n").unwrap();
    git(work, &["add", "."]);
    git(work, &["commit", "--quiet", "-m", "the agent's commit"]);
    std::fs::write(work.join("untracked.txt"), "new\n").unwrap();
    std::fs::write(work.join("README.md"), "hello, changed\n").unwrap();
    let status = git(work, &["status", "--porcelain"]);
    let branch = folders.changes(work, "s", &Scope::Branch).await.unwrap();
    assert_eq!(branch.base.as_deref(), Some("main"));
    assert_eq!(
        paths(&branch),
        vec![
            ("README.md", FileStatus::Modified),
            ("committed.txt", FileStatus::Added),
            ("untracked.txt", FileStatus::Added)
        ]
    );
    assert_eq!(git(work, &["status", "--porcelain"]), status, "the person's repository is only read");
    // Every other scope names the base too, for the view to offer it.
    assert_eq!(folders.changes(work, "s", &Scope::Session).await.unwrap().base.as_deref(), Some("main"));
}

#[tokio::test]
async fn a_folder_with_no_base_branch_says_why_it_has_no_branch_diff() {
    let (data, folder) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let folders = Folders::new(data.path());
    let branch = folders.changes(folder.path(), "s", &Scope::Branch).await.unwrap();
    assert_eq!(branch.base, None);
    assert!(branch.unavailable.unwrap().contains("no git repository"));
}

#[tokio::test]
async fn a_deleted_sessions_checkpoints_go_and_another_sessions_stay() {
    let (data, folder) = (tempfile::tempdir().unwrap(), repository());
    let (work, folders) = (folder.path(), Folders::new(data.path()));
    folders.checkpoint(work, "gone", "m1").await.unwrap();
    folders.checkpoint(work, "gone", "m2").await.unwrap();
    folders.checkpoint(work, "kept", "m3").await.unwrap();
    folders.forget(work, "gone").await.unwrap();
    assert!(folders.changes(work, "gone", &Scope::Session).await.unwrap().turns.is_empty());
    assert_eq!(folders.changes(work, "kept", &Scope::Session).await.unwrap().turns.len(), 1);
    folders.forget(work, "never-had-any").await.unwrap();
}
