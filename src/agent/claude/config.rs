//! How a server runs Claude Code: the CLI to start, where and how, and the path by which the
//! person's answers reach it (`--answer-path`, `--max-agents`, `--idle-exit`, … in
//! `server/cli.rs`).

use std::path::PathBuf;
use std::time::Duration;

use crate::approval::PermissionMode;

/// Claude Code's config folder, as it finds it: `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
pub fn claude_config_dir() -> Option<PathBuf> {
    match std::env::var_os("CLAUDE_CONFIG_DIR").filter(|dir| !dir.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => {
            std::env::var_os("HOME").filter(|home| !home.is_empty()).map(|home| PathBuf::from(home).join(".claude"))
        }
    }
}

/// How the person's answer reaches the CLI (`../shared/DESIGN.md` §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AnswerPath {
    /// A PreToolUse hook waits for the person and hands the answers over with `updatedInput`;
    /// it can park the question (`defer`): the default.
    Hook,
    /// The CLI asks over the control protocol (`can_use_tool`) and waits; cannot be parked.
    CanUseTool,
}

#[derive(Debug, Clone)]
pub struct ClaudeConfig {
    pub bin: PathBuf,
    pub workdir: PathBuf,
    pub permission_mode: PermissionMode,
    pub model: Option<String>,
    pub answer_path: AnswerPath,
    /// What the CLI inherits of the server's environment (an allow-list, and `--agent-env`).
    pub agent_env: crate::agent::AgentEnv,
    /// Set for the CLI on top of what it inherits.
    pub env: Vec<(String, String)>,
    /// Whether a session may switch to bypassPermissions (the person still confirms it).
    pub allow_bypass: bool,
    /// The most CLI processes alive at once; the least recently active idle or waiting session
    /// lets go of its process first.
    pub max_agents: usize,
    /// An idle session's CLI exits after this long; the next message resumes it.
    pub idle_exit: Option<Duration>,
}

impl ClaudeConfig {
    /// As many CLIs as the machine's memory holds comfortably (each takes about 200 MB).
    pub fn default_max_agents() -> usize {
        let total_mib = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|info| {
                let line = info.lines().find(|line| line.starts_with("MemTotal:"))?;
                line.split_whitespace().nth(1)?.parse::<usize>().ok()
            })
            .map_or(4096, |kib| kib / 1024);
        (total_mib / 800).clamp(2, 32)
    }
}
