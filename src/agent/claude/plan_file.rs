//! The plan file an `ExitPlanMode` request names (`planFilePath`), read for the plan card. The
//! path comes from the agent's process, which the model drives: it is read only where Claude Code
//! writes its plans (`$CLAUDE_CONFIG_DIR/plans`, else `~/.claude/plans`), once every link in it is
//! resolved, and only a regular file within a size limit. Never `/proc`, never elsewhere: a path
//! like `/proc/self/environ` would put the server's own environment (its token) on the card.

use std::path::{Path, PathBuf};

use tokio::io::AsyncReadExt;
use tracing::warn;

/// A plan longer than this is not shown from its file (the model's own copy may still be).
pub const MAX_PLAN_BYTES: u64 = 256 * 1024;

/// Where Claude Code writes its plans by default, as it finds its configuration folder.
pub fn plans_dir() -> Option<PathBuf> {
    Some(super::claude_config_dir()?.join("plans"))
}

/// The plan in `path`, if it is a regular file inside `plans` (links resolved) of at most
/// [`MAX_PLAN_BYTES`], in UTF-8; else `None`, and the refusal is logged.
pub async fn read_plan(path: &str, plans: &Path) -> Option<String> {
    let (Ok(file), Ok(plans)) = (tokio::fs::canonicalize(path).await, tokio::fs::canonicalize(plans).await) else {
        return None;
    };
    if !file.starts_with(&plans) {
        warn!(path, "the plan file is not in Claude Code's plans folder: not read");
        return None;
    }
    let metadata = tokio::fs::metadata(&file).await.ok()?;
    if !metadata.is_file() || metadata.len() > MAX_PLAN_BYTES {
        warn!(path, bytes = metadata.len(), "the plan file is not a regular file within the size limit: not read");
        return None;
    }
    // Read no more than the limit, whatever the file grew to since.
    let mut bytes = Vec::new();
    tokio::fs::File::open(&file).await.ok()?.take(MAX_PLAN_BYTES + 1).read_to_end(&mut bytes).await.ok()?;
    if bytes.len() as u64 > MAX_PLAN_BYTES {
        return None;
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plans() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let plans = dir.path().join(".claude/plans");
        std::fs::create_dir_all(&plans).unwrap();
        (dir, plans)
    }

    #[tokio::test]
    async fn a_plan_in_the_plans_folder_is_read() {
        let (_dir, plans) = plans();
        let file = plans.join("calm-river.md");
        std::fs::write(&file, "# Plan\n1. Add the table").unwrap();
        assert_eq!(read_plan(file.to_str().unwrap(), &plans).await.as_deref(), Some("# Plan\n1. Add the table"));
    }

    #[tokio::test]
    async fn proc_and_files_outside_the_plans_folder_are_never_read() {
        let (dir, plans) = plans();
        assert_eq!(read_plan("/proc/self/environ", &plans).await, None);
        let outside = dir.path().join("secret.txt");
        std::fs::write(&outside, "token").unwrap();
        assert_eq!(read_plan(outside.to_str().unwrap(), &plans).await, None);
        // Through `..`, and through a link inside the folder.
        let dotted = format!("{}/../../secret.txt", plans.display());
        assert_eq!(read_plan(&dotted, &plans).await, None);
        let link = plans.join("link.md");
        std::os::unix::fs::symlink("/proc/self/environ", &link).unwrap();
        assert_eq!(read_plan(link.to_str().unwrap(), &plans).await, None);
    }

    #[tokio::test]
    async fn a_plan_past_the_size_limit_or_not_a_file_is_not_read() {
        let (_dir, plans) = plans();
        let big = plans.join("big.md");
        std::fs::write(&big, "x".repeat(MAX_PLAN_BYTES as usize + 1)).unwrap();
        assert_eq!(read_plan(big.to_str().unwrap(), &plans).await, None);
        assert_eq!(read_plan(plans.to_str().unwrap(), &plans).await, None, "a folder");
    }
}
