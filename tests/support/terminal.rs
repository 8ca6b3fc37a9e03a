//! The interactive terminal UI of the real Claude Code CLI, driven the way a person drives it:
//! started in a detached tmux session, keys sent with `send-keys`, the screen read with
//! `capture-pane`. It exists so that integration tests can check what a `claude` started in a
//! terminal does with AskBridge's hooks (docs/claude-terminal.md has what was seen by hand).
//!
//! [`ClaudeHome`] is a temporary HOME with the offline environment of protocol §1 and the
//! `.claude.json` that lets the UI start unattended (§14; with `CLAUDE_CONFIG_DIR` set, the CLI
//! reads that file from the config folder, not from HOME). [`Terminal`] is one `claude` in its own
//! tmux server (a private `-L` socket), which is killed when the value is dropped.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The API key the CLI is given. Its last 20 characters go in `customApiKeyResponses.approved`,
/// without which the UI stops at "Detected a custom API key in your environment".
pub const API_KEY: &str = "askbridge-terminal-test-key-not-a-secret-0123456789";

/// Columns and rows of the pane. Wide enough that prompts are not wrapped mid-word.
const COLUMNS: u16 = 160;
const ROWS: u16 = 50;

/// How often `wait_for` reads the screen.
const POLL: Duration = Duration::from_millis(50);

#[derive(Debug, thiserror::Error)]
pub enum TerminalError {
    #[error("could not run {what}: {source}")]
    Spawn { what: String, source: std::io::Error },
    #[error("{what} failed ({status}): {stderr}")]
    Failed { what: String, status: String, stderr: String },
    #[error("waited {waited:?} for {wanted:?} on the screen; it shows:\n{screen}")]
    NotShown { wanted: String, waited: Duration, screen: String },
    #[error("could not write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
}

/// True when a `tmux` binary can be run.
pub fn tmux_available() -> bool {
    Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success())
}

/// The pinned CLI of package.json, from node_modules.
pub fn claude_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("node_modules/.bin/claude")
}

/// A temporary HOME for the CLI: `home/` (HOME), `home/.claude/` (CLAUDE_CONFIG_DIR, with
/// `.claude.json` and `settings.json`), `home/tmp/` (TMPDIR and the messaging sockets) and
/// `home/project/`, a trusted folder to start `claude` in. Removed when dropped.
pub struct ClaudeHome {
    dir: tempfile::TempDir,
    api_base_url: String,
    trusted: Vec<PathBuf>,
}

impl ClaudeHome {
    /// A fresh HOME whose CLI talks to the mock API at `api_base_url`
    /// (`MockAnthropic::base_url`), and nothing else.
    pub fn new(api_base_url: &str) -> Result<Self, TerminalError> {
        let dir = tempfile::Builder::new()
            .prefix("askbridge-terminal-")
            .tempdir()
            .map_err(|source| TerminalError::Write { path: std::env::temp_dir(), source })?;
        let home = ClaudeHome { dir, api_base_url: api_base_url.to_owned(), trusted: Vec::new() };
        for sub in [".claude", "tmp", "project"] {
            let path = home.home().join(sub);
            std::fs::create_dir_all(&path).map_err(|source| TerminalError::Write { path, source })?;
        }
        let mut home = home;
        home.trust(&home.project())?;
        home.write_settings(&json!({}))?;
        Ok(home)
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn config_dir(&self) -> PathBuf {
        self.home().join(".claude")
    }

    /// The folder `claude` starts in by default.
    pub fn project(&self) -> PathBuf {
        self.home().join("project")
    }

    /// Where the CLI writes the transcripts of sessions started in `folder`.
    pub fn transcripts_of(&self, folder: &Path) -> PathBuf {
        let slug: String =
            folder.display().to_string().chars().map(|c| if c.is_alphanumeric() { c } else { '-' }).collect();
        self.config_dir().join("projects").join(slug)
    }

    /// Marks `folder` as trusted, so the UI starts there without the trust dialog.
    pub fn trust(&mut self, folder: &Path) -> Result<(), TerminalError> {
        self.trusted.push(folder.to_owned());
        self.write_global_config()
    }

    /// Writes the user settings (`$CLAUDE_CONFIG_DIR/settings.json`). Unless `settings` sets
    /// `permissions.defaultMode`, the UI starts in "default" (manual) mode: this CLI version's
    /// own default is "auto", which lets a classifier decide many prompts.
    pub fn write_settings(&self, settings: &Value) -> Result<(), TerminalError> {
        let mut settings = settings.clone();
        if settings.pointer("/permissions/defaultMode").is_none() {
            settings["permissions"]["defaultMode"] = json!("default");
        }
        self.write_json(&self.config_dir().join("settings.json"), &settings)
    }

    /// The environment of protocol §1: no traffic but to the mock API.
    pub fn env(&self) -> Vec<(String, String)> {
        let path = |p: PathBuf| p.display().to_string();
        let tmp = path(self.home().join("tmp"));
        vec![
            ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
            ("TERM".into(), "xterm-256color".into()),
            ("LANG".into(), "C.UTF-8".into()),
            ("HOME".into(), path(self.home())),
            ("CLAUDE_CONFIG_DIR".into(), path(self.config_dir())),
            ("TMPDIR".into(), tmp.clone()),
            ("XDG_RUNTIME_DIR".into(), tmp.clone()),
            ("CLAUDE_CODE_TMPDIR".into(), tmp),
            ("ANTHROPIC_BASE_URL".into(), self.api_base_url.clone()),
            ("ANTHROPIC_API_KEY".into(), API_KEY.into()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(), "1".into()),
            ("DISABLE_TELEMETRY".into(), "1".into()),
            ("DISABLE_AUTOUPDATER".into(), "1".into()),
            ("DISABLE_ERROR_REPORTING".into(), "1".into()),
            // Test machines run as root; bypassPermissions is refused there outside a sandbox.
            ("IS_SANDBOX".into(), "1".into()),
        ]
    }

    /// `$CLAUDE_CONFIG_DIR/.claude.json`: onboarding done, the auto-mode offer seen, the API key
    /// approved, and the trusted folders.
    fn write_global_config(&self) -> Result<(), TerminalError> {
        let key_tail: String = API_KEY.chars().skip(API_KEY.chars().count() - 20).collect();
        let projects: serde_json::Map<String, Value> = self
            .trusted
            .iter()
            .map(|f| {
                (
                    f.display().to_string(),
                    json!({"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}),
                )
            })
            .collect();
        let config = json!({
            "hasCompletedOnboarding": true,
            "theme": "dark",
            "hasSeenAutoDefaultNudge": true,
            "customApiKeyResponses": {"approved": [key_tail], "rejected": []},
            "projects": projects,
        });
        self.write_json(&self.config_dir().join(".claude.json"), &config)
    }

    fn write_json(&self, path: &Path, value: &Value) -> Result<(), TerminalError> {
        let text = serde_json::to_string_pretty(value).unwrap_or_default();
        std::fs::write(path, text).map_err(|source| TerminalError::Write { path: path.to_owned(), source })
    }
}

/// One `claude` in the interactive UI, in a tmux server of its own. Dropping it kills that server
/// (and with it the CLI, which gets SIGHUP).
pub struct Terminal {
    socket: String,
    server_pid: Option<u32>,
    /// tmux leaves its socket file behind after kill-server.
    socket_path: Option<PathBuf>,
}

static SOCKETS: AtomicUsize = AtomicUsize::new(0);

impl Terminal {
    /// Starts `claude args…` in `folder` with `home`'s environment plus `extra_env`, in a
    /// detached tmux session. Returns once tmux runs it; wait for the UI with [`Terminal::wait_for`]
    /// (it shows "manual mode on" when ready for input in default mode).
    pub fn start(
        home: &ClaudeHome,
        folder: &Path,
        args: &[&str],
        extra_env: &[(&str, &str)],
    ) -> Result<Terminal, TerminalError> {
        let socket = format!("askbridge-test-{}-{}", std::process::id(), SOCKETS.fetch_add(1, Ordering::Relaxed));
        // A config file of our own: the test runner's ~/.tmux.conf must not change the pane, and a
        // CLI that exits leaves its last screen to read.
        let conf = home.dir.path().join(format!("{socket}.tmux.conf"));
        std::fs::write(&conf, "set -g remain-on-exit on\nset -g history-limit 10000\nset -g status off\n")
            .map_err(|source| TerminalError::Write { path: conf.clone(), source })?;
        let mut env: Vec<(String, String)> = home.env();
        for (k, v) in extra_env {
            env.retain(|(key, _)| key != k);
            env.push(((*k).to_owned(), (*v).to_owned()));
        }
        let mut command: Vec<String> = vec!["env".into(), "-i".into()];
        command.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
        command.push(claude_bin().display().to_string());
        command.extend(args.iter().map(|a| (*a).to_owned()));

        let mut tmux = Command::new("tmux");
        tmux.args(["-L", &socket, "-f"]).arg(&conf);
        tmux.args(["new-session", "-d", "-s", "main", "-x", &COLUMNS.to_string(), "-y", &ROWS.to_string(), "-c"]);
        tmux.arg(folder).args(&command);
        let mut terminal = Terminal { socket, server_pid: None, socket_path: None };
        check("tmux new-session", tmux.output())?;
        let server = terminal.tmux(&["display-message", "-p", "-t", "main", "#{pid} #{socket_path}"])?;
        if let Some((pid, path)) = server.trim().split_once(' ') {
            terminal.server_pid = pid.parse().ok();
            terminal.socket_path = Some(PathBuf::from(path));
        }
        Ok(terminal)
    }

    /// Sends tmux key names (`"Enter"`, `"Escape"`, `"Down"`, `"C-c"`).
    pub fn send_keys(&self, keys: &[&str]) -> Result<(), TerminalError> {
        let mut args = vec!["send-keys", "-t", "main"];
        args.extend(keys);
        self.tmux(&args).map(drop)
    }

    /// Types `text` literally (no key names), without pressing Enter.
    pub fn type_text(&self, text: &str) -> Result<(), TerminalError> {
        self.tmux(&["send-keys", "-t", "main", "-l", text]).map(drop)
    }

    /// The visible screen as text.
    pub fn capture(&self) -> Result<String, TerminalError> {
        self.tmux(&["capture-pane", "-p", "-t", "main"])
    }

    /// Waits until `text` is on the screen and returns the screen; after `timeout`, an error
    /// with what the screen showed.
    pub async fn wait_for(&self, text: &str, timeout: Duration) -> Result<String, TerminalError> {
        let start = Instant::now();
        loop {
            let screen = self.capture()?;
            if screen.contains(text) {
                return Ok(screen);
            }
            if start.elapsed() >= timeout {
                return Err(TerminalError::NotShown { wanted: text.to_owned(), waited: timeout, screen });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The pid of the process in the pane (`claude` itself: `env` execs it).
    pub fn claude_pid(&self) -> Result<u32, TerminalError> {
        let pid = self.tmux(&["display-message", "-p", "-t", "main", "#{pane_pid}"])?;
        pid.trim().parse().map_err(|_| TerminalError::Failed {
            what: "tmux display-message #{pane_pid}".into(),
            status: "ok".into(),
            stderr: format!("not a pid: {pid:?}"),
        })
    }

    fn tmux(&self, args: &[&str]) -> Result<String, TerminalError> {
        let what = format!("tmux {}", args.first().unwrap_or(&""));
        let output = check(&what, Command::new("tmux").args(["-L", &self.socket]).args(args).output())?;
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        // The CLI saves its config as it exits (a backup under ~/.claude): had the test's home been
        // removed by then, the save would make it again, left behind in /tmp. So the drop returns
        // once the pane's process has ended, as the end of kill-server's hang-up.
        let claude = self.claude_pid().ok();
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).output();
        // If kill-server could not reach it, end the server by its pid: ours alone.
        if let Some(pid) = self.server_pid
            && std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|comm| comm.starts_with("tmux"))
        {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).output();
        }
        if let Some(path) = &self.socket_path {
            let _ = std::fs::remove_file(path);
        }
        if let Some(pid) = claude {
            wait_for_exit(pid, EXIT_WAIT);
        }
    }
}

/// How long a drop waits for the hung-up CLI to end (it takes well under a second).
const EXIT_WAIT: Duration = Duration::from_secs(10);

/// Returns once process `pid` has ended (or become a zombie), or after `at_most`.
fn wait_for_exit(pid: u32, at_most: Duration) {
    let start = Instant::now();
    while start.elapsed() < at_most {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            // The state follows the command's closing parenthesis: Z is a zombie, ended.
            Ok(stat) if !stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')) => {
                std::thread::sleep(Duration::from_millis(20));
            }
            _ => return,
        }
    }
}

fn check(what: &str, output: std::io::Result<Output>) -> Result<Output, TerminalError> {
    let output = output.map_err(|source| TerminalError::Spawn { what: what.to_owned(), source })?;
    if !output.status.success() {
        return Err(TerminalError::Failed {
            what: what.to_owned(),
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(output)
}
