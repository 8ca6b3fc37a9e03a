//! git's command line in a person's folder, as `branch.rs` and `worktree.rs` run it: nothing of
//! the server's own `GIT_*` environment (a `GIT_DIR` would point git elsewhere), no hook, no
//! fsmonitor, no prompt, paths as they are; the person's own config (global and system) as in
//! their terminal. The shadow repository (`shadow.rs`) adds its own directories to the same clean
//! environment, and leaves the system's config out.

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use tokio::process::Command;

use super::error::FolderError;

/// Takes every `GIT_*` variable of the server's environment out of `command`'s.
pub(super) fn clean_environment(command: &mut Command) {
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("GIT_") {
            command.env_remove(name);
        }
    }
}

/// `git args…` in `folder`, within `timeout`: its output, whatever its status.
pub(super) async fn run(
    folder: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    timeout: Duration,
) -> Result<Output, FolderError> {
    let mut command = Command::new("git");
    clean_environment(&mut command);
    command
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_LITERAL_PATHSPECS", "1")
        .envs(env.iter().copied())
        .args(["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.quotepath=false"])
        .args(args)
        .current_dir(folder)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    tokio::time::timeout(timeout, command.output())
        .await
        .map_err(|_| FolderError::TooSlow { command: args.first().map(|a| a.to_string()).unwrap_or_default() })?
        .map_err(|error| match error.kind() {
            std::io::ErrorKind::NotFound => FolderError::GitMissing,
            _ => FolderError::io("run git")(error),
        })
}

/// What a failed git said: its error output, else its output, at most 500 characters.
pub(super) fn said(output: &Output) -> String {
    let mut said = String::from_utf8_lossy(&output.stderr).trim().to_string();
    if said.is_empty() {
        said = String::from_utf8_lossy(&output.stdout).trim().to_string();
    }
    said.chars().take(500).collect()
}

/// [`run`], failing with what git said when it fails.
pub(super) async fn ok(
    folder: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    timeout: Duration,
) -> Result<Vec<u8>, FolderError> {
    let output = run(folder, args, env, timeout).await?;
    if !output.status.success() {
        let command = args.first().map(|a| a.to_string()).unwrap_or_default();
        return Err(FolderError::Git { command, message: said(&output) });
    }
    Ok(output.stdout)
}
