//! One ACP agent process and the JSON-RPC connection over its stdio: our requests matched to their
//! answers by id, and what the agent sends of its own (its requests and notifications) queued for
//! the turn that reads them. The process runs in a process group of its own and dies with the
//! server; ending it ends everything it started (acp.md §4: killing only the adapter left its
//! `claude` calling the model).

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Child;
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, warn};

use super::host::HOST_KEY;
use super::wire::{self, Id, Incoming, RpcError};
use crate::agent::AgentEnv;
use crate::agent::process_tree::{Tree, agent_command, host_command};

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
    /// Through a host (`host.rs`): dropping the connection lets go of the agent, which goes on
    /// waiting for the next server; only [`Connection::kill`] ends it.
    hosted: bool,
    /// The agent's output (or the host's socket) closed.
    closed: Arc<AtomicBool>,
    reader: tokio::task::JoinHandle<()>,
    /// The host this server started, if it did.
    host: Option<u32>,
}

/// Where a session's host listens, and how to start it.
#[derive(Debug, Clone)]
pub struct Hosting {
    /// The `askbridge` binary, which runs `acp-host`.
    pub exe: std::path::PathBuf,
    pub socket: std::path::PathBuf,
    pub idle_exit: Option<std::time::Duration>,
}

/// A request of the server before, still unanswered when this one attached to the host: its
/// answer comes here.
pub struct Outstanding {
    pub method: String,
    pub answer: oneshot::Receiver<Result<Value, RpcError>>,
}

/// How long a host has to listen once started.
const HOST_START: std::time::Duration = std::time::Duration::from_secs(10);

/// Why a request of ours got no result.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("{0}")]
    Rpc(#[from] RpcError),
    #[error("the agent exited before it answered{0}")]
    Exited(String),
}

impl Connection {
    /// Starts the agent in `workdir`, its stdio ours: it dies with the server.
    pub fn spawn(launch: &Launch, workdir: &Path, session: &str) -> std::io::Result<Arc<Self>> {
        let mut command = agent_command(&launch.program, &launch.inherit, &launch.env, session, workdir);
        let mut child = command.args(&launch.args).spawn()?;
        let pid = child.id();
        debug!(session, pid, program = launch.program, "ACP agent started");
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL)));
        let tail = stderr.clone();
        let mut err_lines = BufReader::new(child.stderr.take().expect("stderr is piped")).lines();
        tokio::spawn(async move {
            while let Ok(Some(line)) = err_lines.next_line().await {
                remember(&tail, line);
            }
        });
        let parts = Parts { stderr, session, child: Some(child), pid, hosted: false, last_id: 0 };
        Ok(Self::over(stdout, stdin, parts))
    }

    /// Starts the agent under a host of its own (`host.rs`), which outlives the server, and
    /// attaches to it.
    pub async fn spawn_hosted(
        launch: &Launch,
        hosting: &Hosting,
        workdir: &Path,
        session: &str,
    ) -> std::io::Result<Arc<Self>> {
        let mut command = host_command(&hosting.exe, &launch.inherit, &launch.env, session, workdir);
        command.arg("acp-host").arg("--socket").arg(&hosting.socket);
        if let Some(idle) = hosting.idle_exit {
            command.arg("--idle-exit").arg(humantime::format_duration(idle).to_string());
        }
        // A socket left by an earlier host is not this one's.
        let _ = std::fs::remove_file(&hosting.socket);
        let mut host = command.arg("--").arg(&launch.program).args(&launch.args).spawn()?;
        debug!(session, pid = host.id(), program = launch.program, "ACP host started");
        let deadline = tokio::time::Instant::now() + HOST_START;
        loop {
            if let Ok(stream) = tokio::net::UnixStream::connect(&hosting.socket).await {
                let (mut connection, outstanding) = Self::greeted(stream, session).await?;
                drop(outstanding);
                if let Some(only) = Arc::get_mut(&mut connection) {
                    only.host = host.id();
                }
                return Ok(connection);
            }
            if let Ok(Some(status)) = host.try_wait() {
                return Err(std::io::Error::other(format!("its host exited ({status})")));
            }
            if tokio::time::Instant::now() > deadline {
                let _ = host.start_kill();
                return Err(std::io::Error::other(format!("its host did not listen within {HOST_START:?}")));
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// Attaches to the host listening on `socket`: the agent it runs, and the requests the
    /// server before made of it and had no answer to.
    pub async fn attach(socket: &Path, session: &str) -> std::io::Result<(Arc<Self>, Vec<Outstanding>)> {
        let stream = tokio::net::UnixStream::connect(socket).await?;
        Self::greeted(stream, session).await
    }

    /// Reads the host's hello on `stream`, then talks to the agent through it.
    async fn greeted(stream: tokio::net::UnixStream, session: &str) -> std::io::Result<(Arc<Self>, Vec<Outstanding>)> {
        #[derive(serde::Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct Hello {
            agent_pid: Option<u32>,
            #[serde(default)]
            outstanding: Vec<Pending>,
            #[serde(default)]
            stderr: Vec<String>,
        }
        #[derive(serde::Deserialize)]
        struct Pending {
            id: Id,
            method: String,
        }
        let (read, write) = stream.into_split();
        let mut read = BufReader::new(read);
        let mut first = String::new();
        let said = tokio::time::timeout(HOST_START, read.read_line(&mut first)).await;
        if !matches!(said, Ok(Ok(n)) if n > 0) {
            return Err(std::io::Error::other("its host did not say hello"));
        }
        let hello: Hello = serde_json::from_str::<Value>(&first)
            .ok()
            .and_then(|line| serde_json::from_value(line.get(HOST_KEY)?.get("hello")?.clone()).ok())
            .ok_or_else(|| std::io::Error::other("its host's hello could not be read"))?;
        let stderr = Arc::new(Mutex::new(hello.stderr.into_iter().collect::<VecDeque<_>>()));
        let numbers: Vec<(i64, String)> = hello
            .outstanding
            .into_iter()
            .filter_map(|pending| match pending.id {
                Id::Number(id) => Some((id, pending.method)),
                Id::Text(_) => None,
            })
            .collect();
        let next_id = numbers.iter().map(|(id, _)| *id).max().unwrap_or_default();
        let parts = Parts { stderr, session, child: None, pid: hello.agent_pid, hosted: true, last_id: next_id };
        let connection = Self::over(read, write, parts);
        let outstanding = numbers
            .into_iter()
            .map(|(id, method)| {
                let (tx, answer) = oneshot::channel();
                connection.answers.lock().expect("answers lock").insert(id, tx);
                Outstanding { method, answer }
            })
            .collect();
        debug!(session, pid = hello.agent_pid, "attached to the ACP host");
        Ok((connection, outstanding))
    }

    /// The connection over the agent's output and input.
    fn over(
        output: impl tokio::io::AsyncRead + Unpin + Send + 'static,
        mut input: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
        parts: Parts,
    ) -> Arc<Self> {
        let Parts { stderr, session, child, pid, hosted, last_id } = parts;
        let (writer, mut lines) = mpsc::unbounded_channel::<String>();
        tokio::spawn(async move {
            while let Some(line) = lines.recv().await {
                if input.write_all(line.as_bytes()).await.is_err() || input.write_all(b"\n").await.is_err() {
                    return;
                }
                let _ = input.flush().await;
            }
            let _ = input.shutdown().await;
        });
        let answers = Answers::default();
        let (inbox_tx, inbox) = mpsc::unbounded_channel();
        let closed = Arc::new(AtomicBool::new(false));
        let reader = read_messages(
            output,
            Reader {
                session: session.to_string(),
                answers: answers.clone(),
                inbox: inbox_tx,
                stderr: stderr.clone(),
                closed: closed.clone(),
            },
        );
        Arc::new(Self {
            writer,
            next_id: AtomicI64::new(last_id + 1),
            answers,
            inbox: tokio::sync::Mutex::new(inbox),
            child: Mutex::new(child),
            pid,
            stderr,
            hosted,
            closed,
            reader,
            host: None,
        })
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
        if self.hosted {
            return !self.closed.load(Ordering::Relaxed);
        }
        let mut child = self.child.lock().expect("child lock");
        child.as_mut().is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// The process id of the host this server started for the agent.
    pub fn host_pid(&self) -> Option<u32> {
        self.host
    }

    /// Whether the agent runs under a host, and outlives this connection.
    pub fn hosted(&self) -> bool {
        self.hosted
    }

    /// Ends the agent and everything it started (and its host).
    pub fn kill(&self) {
        if self.hosted {
            let _ = self.writer.send(json!({HOST_KEY: "end"}).to_string());
            if let Some(pid) = self.pid {
                let killed = Tree::of(pid).kill();
                debug!(pid, killed, "hosted ACP agent ended");
            }
            return;
        }
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
        self.reader.abort();
        if !self.hosted {
            self.kill();
        }
    }
}

fn remember(tail: &Mutex<VecDeque<String>>, line: String) {
    let mut tail = tail.lock().expect("stderr lock");
    if tail.len() == STDERR_TAIL {
        tail.pop_front();
    }
    tail.push_back(line);
}

/// What a connection is made of besides the agent's output and input.
struct Parts<'a> {
    stderr: Arc<Mutex<VecDeque<String>>>,
    session: &'a str,
    child: Option<Child>,
    pid: Option<u32>,
    hosted: bool,
    /// Our ids start past it (past those of the server before, through a host).
    last_id: i64,
}

/// Where [`read_messages`] puts what it reads.
struct Reader {
    session: String,
    answers: Answers,
    inbox: mpsc::UnboundedSender<Inbound>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    closed: Arc<AtomicBool>,
}

/// Reads the agent's output: answers to their waiters, the rest to the inbox, a host's own lines
/// (its agent's stderr) to the tail. A line that is not a message is logged and skipped (the
/// agent's own stray output must not end the session).
fn read_messages(
    output: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    to: Reader,
) -> tokio::task::JoinHandle<()> {
    let Reader { session, answers, inbox, stderr, closed } = to;
    tokio::spawn(async move {
        let mut reader = BufReader::new(output);
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
            if text.contains(HOST_KEY)
                && let Ok(Value::Object(mut host)) = serde_json::from_str::<Value>(text)
                && let Some(said) = host.remove(HOST_KEY)
            {
                if let Some(Value::String(line)) = said.get("stderr") {
                    remember(&stderr, line.clone());
                }
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
        closed.store(true, Ordering::Relaxed);
        // Whoever still waits for an answer learns that none is coming.
        answers.lock().expect("answers lock").clear();
        let _ = inbox.send(Inbound::Closed(why));
    })
}
