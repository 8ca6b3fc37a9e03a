//! Notices writes in a folder (inotify, through the `notify` crate), so that the Changes view
//! shows a change within a second of it. Only the folders git would list are watched: those its
//! `.gitignore` files leave in (the `ignore` crate's walk), not `.git`, `target` or
//! `node_modules`, each watched alone (a recursive watch would take a watch per ignored folder
//! too, and a large `node_modules` exhausts the kernel's). A folder made later is watched as it
//! appears. Changes come in bursts (a formatter, a `git checkout`): the version moves once the
//! folder has been quiet for [`QUIET`], or [`LONGEST`] after the first write at the latest.

use std::path::{Path, PathBuf};
use std::time::Duration;

use fs_notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::{mpsc, watch};
use tracing::debug;

/// Quiet after a write before the view is told.
const QUIET: Duration = Duration::from_millis(150);
/// The longest a burst of writes holds the news back.
const LONGEST: Duration = Duration::from_millis(600);
/// Folders watched at most; past them, a change deeper down is seen at the next look.
const MOST_FOLDERS: usize = 5_000;
/// How long a watch is kept once nobody waits for its news.
const LINGER: Duration = Duration::from_secs(60);

/// Watches `root` while someone follows `version`, moving it at each burst of writes; ends by
/// itself [`LINGER`] after the last follower left.
pub fn watch(root: PathBuf, version: watch::Sender<u64>) -> Result<(), fs_notify::Error> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Event>();
    let mut watcher = fs_notify::recommended_watcher(move |event: fs_notify::Result<Event>| {
        if let Ok(event) = event {
            let _ = tx.send(event);
        }
    })?;
    for folder in folders(&root) {
        // A folder gone meanwhile, or a watch refused (the kernel's limit): seen at the next look.
        let _ = watcher.watch(&folder, RecursiveMode::NonRecursive);
    }
    tokio::spawn(async move {
        let mut alone_since: Option<tokio::time::Instant> = None;
        loop {
            let first = tokio::select! {
                event = rx.recv() => match event { Some(event) => event, None => return },
                () = tokio::time::sleep(Duration::from_secs(5)) => {
                    if version.receiver_count() > 0 {
                        alone_since = None;
                    } else if alone_since.get_or_insert_with(tokio::time::Instant::now).elapsed() > LINGER {
                        debug!(folder = %root.display(), "no one follows the folder's changes; watch ended");
                        return;
                    }
                    continue;
                }
            };
            let mut counts = add_new_folders(&mut watcher, &root, &first);
            let burst_ends = tokio::time::Instant::now() + LONGEST;
            loop {
                let quiet = tokio::time::sleep(QUIET);
                tokio::select! {
                    event = rx.recv() => match event {
                        Some(event) => counts |= add_new_folders(&mut watcher, &root, &event),
                        None => return,
                    },
                    () = quiet => break,
                    () = tokio::time::sleep_until(burst_ends) => break,
                }
            }
            if counts {
                version.send_modify(|v| *v += 1);
            }
        }
    });
    Ok(())
}

/// Watches the folders an event made; whether the event counts (it is not inside `.git`).
fn add_new_folders(watcher: &mut RecommendedWatcher, root: &Path, event: &Event) -> bool {
    let counts = event.paths.iter().any(|path| !in_git_folder(root, path));
    if matches!(event.kind, EventKind::Create(_)) {
        for path in &event.paths {
            if path.is_dir() && !in_git_folder(root, path) {
                for folder in folders(path) {
                    let _ = watcher.watch(&folder, RecursiveMode::NonRecursive);
                }
            }
        }
    }
    counts && !matches!(event.kind, EventKind::Access(_))
}

fn in_git_folder(root: &Path, path: &Path) -> bool {
    path.strip_prefix(root).is_ok_and(|inside| inside.components().any(|part| part.as_os_str() == ".git"))
}

/// `root` and the folders under it that git would look into, at most [`MOST_FOLDERS`].
fn folders(root: &Path) -> Vec<PathBuf> {
    ignore::WalkBuilder::new(root)
        .hidden(false)
        .follow_links(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|kind| kind.is_dir()))
        .map(|entry| entry.into_path())
        .take(MOST_FOLDERS)
        .collect()
}
