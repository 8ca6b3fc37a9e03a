//! The real Claude Code CLI, offline (protocol §1): the pinned binary from node_modules, a
//! temporary home of its own, and the environment that points it at the mock Messages API and
//! stops the rest of its traffic. For the tests that run it in the test's process
//! (`claude_cli.rs`) and under the real server (`claude_crash.rs`).

use std::path::{Path, PathBuf};

use super::mock_anthropic::MockAnthropic;

/// The pinned CLI (`package.json`), installed by `make setup` (npm ci).
pub fn claude_bin() -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("node_modules/.bin/claude");
    assert!(bin.exists(), "the pinned Claude Code CLI is missing: run `make setup` (npm ci) first");
    bin
}

/// A home for the CLI, removed with it: its configuration (`.claude`), its temporary files
/// (`tmp`), the folder the agent works in (`project`) and the server's data (`data`).
pub struct ClaudeHome {
    dir: tempfile::TempDir,
}

impl ClaudeHome {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for folder in [".claude", "tmp", "project", "data"] {
            std::fs::create_dir_all(dir.path().join(folder)).unwrap();
        }
        Self { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Where the agent works.
    pub fn project(&self) -> PathBuf {
        self.path().join("project")
    }

    /// The CLI's environment: this home, `mock` as the API, and no traffic of its own.
    pub fn env(&self, mock: &MockAnthropic) -> Vec<(String, String)> {
        let path = |p: &str| self.path().join(p).display().to_string();
        [
            ("HOME", path("")),
            ("CLAUDE_CONFIG_DIR", path(".claude")),
            ("TMPDIR", path("tmp")),
            ("XDG_RUNTIME_DIR", path("tmp")),
            ("CLAUDE_CODE_TMPDIR", path("tmp")),
            ("ANTHROPIC_BASE_URL", mock.base_url()),
            ("ANTHROPIC_API_KEY", "dummy".to_string()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_string()),
            ("DISABLE_TELEMETRY", "1".to_string()),
            ("DISABLE_AUTOUPDATER", "1".to_string()),
            ("DISABLE_ERROR_REPORTING", "1".to_string()),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_string(), value))
        .collect()
    }
}
