//! The files of a session's folder, for the message box's `@` list. Where the folder is in a git
//! repository, git's own list: the tracked files and the untracked ones it does not ignore. Else a
//! walk that honours `.gitignore` and `.ignore` files as git and ripgrep would (the `ignore`
//! crate, ripgrep's own). Either is bounded, and kept for a few seconds: a list is asked for at
//! every key typed after `@`. What is typed is matched fuzzily (`nucleo-matcher`, the matcher of
//! the helix editor, scoring as a path), best first.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};
use tracing::warn;

/// Files listed at most: beyond, a folder is not one a person picks files from by name.
const MOST_FILES: usize = 50_000;
/// Paths the `@` list shows at most.
pub const SHOWN: usize = 50;
/// How long a folder's list is reused (the keys typed after one `@`).
const KEPT: Duration = Duration::from_secs(10);
/// How long git may take to list a folder.
const GIT_TIMEOUT: Duration = Duration::from_secs(5);

/// A folder's list of files, as read at a moment.
type Listed = (Instant, Arc<Vec<String>>);

/// The lists of the folders asked for lately.
#[derive(Default)]
pub struct FileLists {
    kept: Mutex<HashMap<PathBuf, Listed>>,
}

impl FileLists {
    /// The files of `folder` that best match `query` (all of them, in git's order, for an empty
    /// one), at most [`SHOWN`], as paths relative to it with `/` between their parts.
    pub async fn matching(&self, folder: &Path, query: &str) -> Vec<String> {
        let files = self.of(folder).await;
        best_matches(&files, query, SHOWN)
    }

    /// Every file of `folder` that git would list (at most 50,000), in git's order.
    pub async fn of(&self, folder: &Path) -> Arc<Vec<String>> {
        let now = Instant::now();
        {
            let mut kept = self.kept.lock().expect("file lists lock");
            kept.retain(|_, (at, _)| now.duration_since(*at) < KEPT);
            if let Some((_, files)) = kept.get(folder) {
                return files.clone();
            }
        }
        let files = Arc::new(list(folder).await);
        self.kept.lock().expect("file lists lock").insert(folder.to_path_buf(), (now, files.clone()));
        files
    }
}

/// The folder's files: git's list, or (not a repository, or git missing) the walk.
async fn list(folder: &Path) -> Vec<String> {
    if let Some(files) = git_files(folder).await {
        return files;
    }
    let folder = folder.to_path_buf();
    tokio::task::spawn_blocking(move || walk(&folder)).await.unwrap_or_default()
}

/// `git ls-files` in the folder: `None` when it is not in a repository (or git cannot run).
/// The repository is the person's, but its configuration is not trusted to run anything: the
/// one setting that makes listing files start a program (an fsmonitor hook) is turned off.
async fn git_files(folder: &Path) -> Option<Vec<String>> {
    let mut git = tokio::process::Command::new("git");
    git.args(["-c", "core.fsmonitor=false", "ls-files", "-z", "--cached", "--others", "--exclude-standard"])
        .current_dir(folder)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = match tokio::time::timeout(GIT_TIMEOUT, git.output()).await {
        Ok(Ok(output)) if output.status.success() => output,
        Ok(_) => return None,
        Err(_) => {
            warn!(folder = %folder.display(), "git took too long to list the folder's files");
            return None;
        }
    };
    let mut files: Vec<String> = output
        .stdout
        .split(|byte| *byte == 0)
        .filter(|path| !path.is_empty())
        .filter_map(|path| std::str::from_utf8(path).ok().map(str::to_string))
        .take(MOST_FILES)
        .collect();
    // A file both tracked and changed can be listed twice.
    files.dedup();
    Some(files)
}

/// The files under `folder`, ignored ones left out, hidden ones too (`.env`, `.git`), at most
/// [`MOST_FILES`].
fn walk(folder: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for entry in ignore::WalkBuilder::new(folder).require_git(false).build().flatten() {
        if !entry.file_type().is_some_and(|kind| kind.is_file()) {
            continue;
        }
        let Ok(path) = entry.path().strip_prefix(folder) else { continue };
        let Some(path) = path.to_str() else { continue };
        files.push(path.replace(std::path::MAIN_SEPARATOR, "/"));
        if files.len() == MOST_FILES {
            break;
        }
    }
    files.sort();
    files
}

/// The `limit` paths that match `query` best (its letters in order, as a path: the file's name
/// counts most), ties to the shorter path; with no query, the first `limit` in their order.
pub fn best_matches(files: &[String], query: &str, limit: usize) -> Vec<String> {
    let query = query.trim();
    if query.is_empty() {
        return files.iter().take(limit).cloned().collect();
    }
    let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
    let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
    let mut buffer = Vec::new();
    let mut scored: Vec<(u32, &String)> = files
        .iter()
        .filter_map(|file| Some((pattern.score(Utf32Str::new(file, &mut buffer), &mut matcher)?, file)))
        .collect();
    scored.sort_by(|(a, a_path), (b, b_path)| b.cmp(a).then(a_path.len().cmp(&b_path.len())).then(a_path.cmp(b_path)));
    scored.into_iter().take(limit).map(|(_, file)| file.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(list: &[&str]) -> Vec<String> {
        list.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn letters_in_order_match_and_the_file_name_counts_most() {
        let files = paths(&["src/main.rs", "src/session/manager.rs", "docs/maintenance.md", "README.md"]);
        let found = best_matches(&files, "man", 10);
        assert_eq!(found.first().map(String::as_str), Some("src/session/manager.rs"), "{found:?}");
        assert!(!found.contains(&"README.md".to_string()));
        assert_eq!(best_matches(&files, "srcmain", 10).first().map(String::as_str), Some("src/main.rs"));
        assert!(best_matches(&files, "zzz", 10).is_empty());
    }

    #[test]
    fn no_query_lists_the_files_in_their_order_up_to_the_limit() {
        let files = paths(&["a", "b", "c"]);
        assert_eq!(best_matches(&files, "", 2), ["a", "b"]);
        assert_eq!(best_matches(&files, "  ", 5), ["a", "b", "c"]);
    }

    #[tokio::test]
    async fn a_repository_lists_what_git_tracks_and_what_it_does_not_ignore() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let git = |args: &[&str]| {
            let status = std::process::Command::new("git").args(args).current_dir(root).output().unwrap().status;
            assert!(status.success(), "git {args:?}");
        };
        git(&["init", "-q"]);
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::write(root.join("src/lib.rs"), "").unwrap();
        std::fs::write(root.join("target/out.bin"), "").unwrap();
        std::fs::write(root.join("notes.md"), "").unwrap();
        git(&["add", "src/lib.rs", ".gitignore"]);
        let mut files = list(root).await;
        files.sort();
        assert_eq!(files, [".gitignore", "notes.md", "src/lib.rs"]);
    }

    #[tokio::test]
    async fn a_folder_outside_any_repository_is_walked_with_its_ignore_files_honoured() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("node_modules/x")).unwrap();
        std::fs::create_dir_all(root.join("app")).unwrap();
        std::fs::write(root.join(".ignore"), "node_modules/\n").unwrap();
        std::fs::write(root.join("node_modules/x/index.js"), "").unwrap();
        std::fs::write(root.join("app/page.tsx"), "").unwrap();
        std::fs::write(root.join(".env"), "SECRET=1").unwrap();
        assert_eq!(list(root).await, ["app/page.tsx"]);
    }
}
