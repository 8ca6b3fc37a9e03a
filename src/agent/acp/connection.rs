//! One ACP agent process and the JSON-RPC connection over its stdio: our requests matched to their
//! answers by id, and what the agent sends of its own (its requests and notifications) queued for
//! the turn that reads them. The process runs in a process group of its own and dies with the
//! server; ending it ends everything it started (acp.md §4: killing only the adapter left its
//! `claude` calling the model).

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Child;
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, warn};

use super::wire::{self, Id, Incoming, RpcError};
use crate::agent::AgentEnv;
use crate::agent::process_tree::{Tree, agent_command};

/// The longest line read from an agent: a line past it is an agent gone wrong, not a message.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// The agent's last lines of stderr kept, for the error when it dies.
const STDERR_TAIL: usize = 20;

/// What the agent sends of its own accord.
#[derive(Debug)]
pub enum Inbound {
    Request {
        id: Id,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// The agent closed its output (it exited); why, in words.
    Closed(String),
}

/// How to start an agent.
#[derive(Debug, Clone)]
pub struct Launch {
    pub program: String,
    pub args: Vec<String>,
    pub inherit: AgentEnv,
    pub env: Vec<(String, String)>,
}

type Answers = Arc<Mutex<HashMap<i64, oneshot::Sender<Result<Value, RpcError>>>>>;

pub struct Connection {
    writer: mpsc::UnboundedSender<String>,
    next_id: AtomicI64,
    answers: Answers,
    pub inbox: tokio::sync::Mutex<mpsc::UnboundedReceiver<Inbound>>,
    child: Mutex<Option<Child>>,
    pid: Option<u32>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

/// Why a request of ours got no result.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("{0}")]
    Rpc(#[from] RpcError),
    #[error("the agent exited before it answered{0}")]
    Exited(String),
}

impl Connection {
    /// Starts the agent in `workdir`.
    pub fn spawn(launch: &Launch, workdir: &Path, session: &str) -> std::io::Result<Arc<Self>> {
        let mut command = agent_command(&launch.program, &launch.inherit, &launch.env, session, workdir);
        let mut child = command.args(&launch.args).spawn()?;
        let pid = child.id();
        debug!(session, pid, program = launch.program, "ACP agent started");

        let (writer, mut lines) = mpsc::unbounded_channel::<String>();
        let mut stdin = child.stdin.take().expect("stdin is piped");
        tokio::spawn(async move {
            while let Some(line) = lines.recv().await {
                if stdin.write_all(line.as_bytes()).await.is_err() || stdin.write_all(b"\n").await.is_err() {
                    return;
                }
                let _ = stdin.flush().await;
            }
        });

        let stderr = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL)));
        let tail = stderr.clone();
        let mut err_lines = BufReader::new(child.stderr.take().expect("stderr is piped")).lines();
        tokio::spawn(async move {
            while let Ok(Some(line)) = err_lines.next_line().await {
                let mut tail = tail.lock().expect("stderr lock");
                if tail.len() == STDERR_TAIL {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
        });

        let answers = Answers::default();
        let (inbox_tx, inbox) = mpsc::unbounded_channel();
        read_stdout(child.stdout.take().expect("stdout is piped"), session.to_string(), answers.clone(), inbox_tx);
        Ok(Arc::new(Self {
            writer,
            next_id: AtomicI64::new(1),
            answers,
            inbox: tokio::sync::Mutex::new(inbox),
            child: Mutex::new(Some(child)),
            pid,
            stderr,
        }))
    }

    /// Sends a request; the receiver gets its result.
    pub fn send(&self, method: &str, params: Value) -> oneshot::Receiver<Result<Value, RpcError>> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.answers.lock().expect("answers lock").insert(id, tx);
        let _ = self.writer.send(wire::request(id, method, params));
        rx
    }

    /// Sends a request and waits for its result.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, CallError> {
        match self.send(method, params).await {
            Ok(result) => Ok(result?),
            Err(_) => Err(CallError::Exited(self.last_words())),
        }
    }

    pub fn notify(&self, method: &str, params: Value) {
        let _ = self.writer.send(wire::notification(method, params));
    }

    /// Answers the agent's request `id`.
    pub fn respond(&self, id: &Id, result: Result<Value, RpcError>) {
        let _ = self.writer.send(wire::response(id, result));
    }

    /// The agent's last lines of stderr, as the end of a sentence (": …"), or nothing.
    pub fn last_words(&self) -> String {
        let tail = self.stderr.lock().expect("stderr lock");
        let said: Vec<&str> = tail.iter().map(String::as_str).filter(|l| !l.trim().is_empty()).collect();
        match said.len() {
            0 => String::new(),
            n => format!(": {}", said[n.saturating_sub(3)..].join(" / ")),
        }
    }

    /// The agent's process id (its process group's too).
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The agent's process has not exited.
    pub fn running(&self) -> bool {
        let mut child = self.child.lock().expect("child lock");
        child.as_mut().is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// Ends the agent and everything it started.
    pub fn kill(&self) {
        let Some(mut child) = self.child.lock().expect("child lock").take() else { return };
        let Some(pid) = self.pid else { return };
        if matches!(child.try_wait(), Ok(None)) {
            let killed = Tree::of(pid).kill();
            debug!(pid, killed, "ACP agent ended");
        } else {
            // Reaped: its pid may be another process's now, but not its process group's id
            // while anything it left in that group lives.
            // SAFETY: kill only sends a signal; an empty group gives ESRCH, ignored.
            unsafe {
                libc::kill(-(pid as libc::pid_t), libc::SIGKILL);
            }
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads the agent's stdout: answers to their waiters, the rest to the inbox. A line that is not a
/// message is logged and skipped (the agent's own stray output must not end the session).
fn read_stdout(
    stdout: tokio::process::ChildStdout,
    session: String,
    answers: Answers,
    inbox: mpsc::UnboundedSender<Inbound>,
) {
    tokio::spawn(async move {
        let mut reader = BufReader::new(stdout);
        let mut line = Vec::new();
        let why = loop {
            line.clear();
            match (&mut reader).take(MAX_LINE_BYTES as u64 + 1).read_until(b'\n', &mut line).await {
                Ok(0) => break "it closed its output".to_string(),
                Err(error) => break format!("its output could not be read: {error}"),
                Ok(_) if line.len() > MAX_LINE_BYTES && !line.ends_with(b"\n") => {
                    break format!("it wrote a line of more than {MAX_LINE_BYTES} bytes");
                }
                Ok(_) => {}
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            match Incoming::parse(text) {
                Ok(Incoming::Response { id: Id::Number(id), result }) => {
                    match answers.lock().expect("answers lock").remove(&id) {
                        Some(waiter) => {
                            let _ = waiter.send(result);
                        }
                        None => warn!(session, id, "the ACP agent answered a request nobody made"),
                    }
                }
                Ok(Incoming::Response { id, .. }) => warn!(session, %id, "the ACP agent answered an id we never use"),
                Ok(Incoming::Request { id, method, params }) => {
                    let _ = inbox.send(Inbound::Request { id, method, params });
                }
                Ok(Incoming::Notification { method, params }) => {
                    let _ = inbox.send(Inbound::Notification { method, params });
                }
                Err(error) => {
                    warn!(session, %error, line = %text.chars().take(200).collect::<String>(), "the ACP agent wrote a line that is not a message")
                }
            }
        };
        // Whoever still waits for an answer learns that none is coming.
        answers.lock().expect("answers lock").clear();
        let _ = inbox.send(Inbound::Closed(why));
    });
}
