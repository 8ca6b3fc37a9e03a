//! One Claude Code CLI process: started with the stream-json flags, stdin written by one task,
//! stdout read line by line into protocol messages, stderr kept (its last lines explain a crash)
//! and logged.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use tracing::{debug, warn};

use super::protocol::{FromCli, ToCli};

/// Lines of stderr kept to explain an exit.
const STDERR_TAIL: usize = 20;

/// How to start the CLI.
#[derive(Debug, Clone)]
pub struct Launch {
    pub bin: PathBuf,
    pub workdir: PathBuf,
    pub permission_mode: String,
    pub model: Option<String>,
    /// The conversation to continue (`--resume`).
    pub resume: Option<String>,
    /// Lets the person switch to bypassPermissions later (`--allow-dangerously-skip-permissions`).
    pub allow_bypass: bool,
    /// Set on top of the server's own environment (which the CLI inherits, ANTHROPIC_* included).
    pub env: Vec<(String, String)>,
}

impl Launch {
    pub fn args(&self) -> Vec<String> {
        let mut args: Vec<String> = [
            "--output-format",
            "stream-json",
            "--verbose",
            "--input-format",
            "stream-json",
            "--permission-prompt-tool",
            "stdio",
            "--include-partial-messages",
            "--permission-mode",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push(self.permission_mode.clone());
        if let Some(model) = &self.model {
            args.extend(["--model".to_string(), model.clone()]);
        }
        if let Some(session) = &self.resume {
            args.extend(["--resume".to_string(), session.clone()]);
        }
        if self.allow_bypass {
            args.push("--allow-dangerously-skip-permissions".to_string());
        }
        args
    }
}

/// What the stdout reader hands over.
#[derive(Debug)]
pub enum Output {
    Message(FromCli),
    /// stdout closed: the process is exiting.
    Closed,
}

pub struct CliProcess {
    child: Child,
    stdin: mpsc::UnboundedSender<ToCli>,
    pub output: mpsc::UnboundedReceiver<Output>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    next_request: u64,
}

impl CliProcess {
    pub fn spawn(launch: &Launch, session: &str) -> std::io::Result<Self> {
        let mut command = Command::new(&launch.bin);
        command
            .args(launch.args())
            .current_dir(&launch.workdir)
            .envs(launch.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // No CLI outlives the server, whatever way the server stops.
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        debug!(session, pid = child.id(), args = ?launch.args(), "Claude Code started");

        let (stdin_tx, mut stdin_rx) = mpsc::unbounded_channel::<ToCli>();
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let writer_session = session.to_string();
        tokio::spawn(async move {
            while let Some(message) = stdin_rx.recv().await {
                if let Err(error) = stdin.write_all(message.to_line().as_bytes()).await {
                    warn!(session = writer_session, %error, "could not write to Claude Code");
                    return;
                }
                let _ = stdin.flush().await;
            }
            // Dropping stdin closes it: the CLI finishes and exits.
        });

        let (output_tx, output_rx) = mpsc::unbounded_channel();
        let stdout = child.stdout.take().expect("stdout is piped");
        let reader_session = session.to_string();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if line.trim().is_empty() {
                    continue;
                }
                match FromCli::parse(&line) {
                    Ok(message) => {
                        if let FromCli::Unknown(value) = &message {
                            debug!(session = reader_session, %value, "a message this build does not know");
                        }
                        if output_tx.send(Output::Message(message)).is_err() {
                            return;
                        }
                    }
                    Err(error) => {
                        warn!(session = reader_session, %error, line, "Claude Code wrote a line that is not JSON")
                    }
                }
            }
            let _ = output_tx.send(Output::Closed);
        });

        let stderr_tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL)));
        let tail = stderr_tail.clone();
        let stderr = child.stderr.take().expect("stderr is piped");
        let stderr_session = session.to_string();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            // Colours and cursor moves mean nothing in a log or on a page.
            while let Ok(Some(line)) = lines.next_line().await {
                let line = plain_text(&line);
                warn!(session = stderr_session, "claude: {line}");
                let mut tail = tail.lock().expect("stderr lock");
                if tail.len() == STDERR_TAIL {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
        });

        Ok(Self { child, stdin: stdin_tx, output: output_rx, stderr: stderr_tail, next_request: 0 })
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    pub fn send(&self, message: ToCli) -> bool {
        self.stdin.send(message).is_ok()
    }

    /// A handle for writing to the CLI while a turn holds the process.
    pub fn sender(&self) -> mpsc::UnboundedSender<ToCli> {
        self.stdin.clone()
    }

    /// A fresh id for a request of ours (the CLI's own ids are UUIDs).
    pub fn request_id(&mut self) -> String {
        self.next_request += 1;
        format!("req_{}_{}", self.next_request, &crate::session::new_id()[24..])
    }

    /// The last lines the CLI wrote to stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.stderr.lock().expect("stderr lock").iter().cloned().collect()
    }

    /// Waits for the process to exit and says how it ended.
    pub async fn exit_status(&mut self) -> String {
        let status = tokio::time::timeout(std::time::Duration::from_secs(5), self.child.wait()).await;
        match status {
            Ok(Ok(status)) => match status.code() {
                Some(code) => format!("exit code {code}"),
                None => "killed by a signal".to_string(),
            },
            Ok(Err(error)) => format!("unknown exit ({error})"),
            Err(_) => {
                let _ = self.child.start_kill();
                "it stopped answering and was killed".to_string()
            }
        }
    }

    /// Closes stdin (the CLI then exits by itself) and makes sure it is gone.
    pub async fn stop(mut self) {
        drop(self.stdin);
        if tokio::time::timeout(std::time::Duration::from_secs(3), self.child.wait()).await.is_err() {
            let _ = self.child.kill().await;
        }
    }
}

/// `line` without terminal escape sequences (colours, cursor moves).
fn plain_text(line: &str) -> String {
    String::from_utf8_lossy(&strip_ansi_escapes::strip(line)).into_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn stderr_loses_its_colours() {
        let line = "\u{1b}[0m\u{1b}[31m--dangerously-skip-permissions cannot be used with root\u{1b}[0m";
        assert_eq!(super::plain_text(line), "--dangerously-skip-permissions cannot be used with root");
    }
}
