//! The host: a small process of AskBridge's own that runs one ACP agent and owns its stdio, so
//! that the agent, and whatever it waits for, outlive the server. The agent's pipes die with the
//! process that holds them, and an agent whose pipe closes records its pending request as failed
//! and goes on (acp.md §4): the host holds them instead, and the server talks to the agent through
//! the host's socket. A server that stops, restarts or crashes attaches again, and every request
//! of the agent's still unanswered is put to it again.
//!
//! `askbridge acp-host --socket PATH [--idle-exit 10m] -- COMMAND [ARGS…]`, started by the server
//! in a session of its own. On the socket, one line per message: the agent's JSON-RPC as it is,
//! both ways, and the host's own lines, objects with the one key `askbridgeHost`:
//! - to the server, first on each attach: `{"askbridgeHost":{"hello":{"agentPid":…,"outstanding":
//!   [{"id":7,"method":"session/prompt"}],"stderr":[…]}}}`: the server's requests whose answer no
//!   server has had yet, and the agent's last words on stderr. Then every request of the agent's
//!   still unanswered (again, though an earlier server had it), then what the agent said while no
//!   server listened, in order;
//! - to the server, later: `{"askbridgeHost":{"stderr":"…"}}`, each line the agent writes there;
//! - from the server: `{"askbridgeHost":"end"}`: end the agent, and the host.
//!
//! One server at a time: one that attaches replaces the one before. The host ends with its agent
//! (its output closed), on `end`, once no server attached for `--idle-exit` while the agent asks
//! nothing of the person, or once its socket is gone (its data folder deleted); and it ends the
//! agent's whole tree with it (it is their subreaper: what the agent leaves behind is its). The
//! agent shares the host's session and process group: a signal to the group ends them all.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::mpsc;

use crate::agent::process_tree::Tree;

/// The longest line relayed (as the server reads them: `connection.rs`).
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// The agent's last lines of stderr kept for a server that attaches.
const STDERR_TAIL: usize = 20;
/// How often the host checks that its socket is still its own.
const SOCKET_CHECK: Duration = Duration::from_secs(2);
/// The key of the host's own lines.
pub const HOST_KEY: &str = "askbridgeHost";

pub struct HostArgs {
    pub socket: PathBuf,
    pub idle_exit: Option<Duration>,
    pub program: String,
    pub args: Vec<String>,
}

/// What the host keeps of the conversation between its agent and whichever server is attached.
#[derive(Debug, Default)]
struct Relay {
    /// The agent's requests not answered yet, in order: (their id as JSON, their line).
    asked: Vec<(String, String)>,
    /// The server's requests whose answer no server has had, by their id as JSON: (id, method).
    outstanding: BTreeMap<String, (Value, String)>,
    /// What the agent said while no server was attached (but its requests: those are in `asked`).
    backlog: Vec<String>,
    stderr: VecDeque<String>,
}

/// A JSON-RPC line, as far as the relay needs to know it.
enum Kind {
    Request { id: Value, method: String },
    Response { id: Value },
    Other,
}

fn kind(line: &str) -> Kind {
    #[derive(serde::Deserialize)]
    struct Raw {
        id: Option<Value>,
        method: Option<String>,
    }
    match serde_json::from_str::<Raw>(line) {
        Ok(Raw { id: Some(id), method: Some(method) }) => Kind::Request { id, method },
        Ok(Raw { id: Some(id), method: None }) => Kind::Response { id },
        _ => Kind::Other,
    }
}

impl Relay {
    /// A line from the agent; what to send the attached server now (if one is).
    fn agent_said(&mut self, line: String, attached: bool) -> Option<String> {
        match kind(&line) {
            Kind::Request { id, .. } => self.asked.push((id.to_string(), line.clone())),
            Kind::Response { id } if attached => {
                self.outstanding.remove(&id.to_string());
            }
            Kind::Response { .. } | Kind::Other => {}
        }
        if attached {
            return Some(line);
        }
        if !matches!(kind(&line), Kind::Request { .. }) {
            self.backlog.push(line);
        }
        None
    }

    /// A line from the server, on its way to the agent.
    fn server_said(&mut self, line: &str) {
        match kind(line) {
            Kind::Request { id, method } => {
                self.outstanding.insert(id.to_string(), (id, method));
            }
            Kind::Response { id } => {
                let id = id.to_string();
                self.asked.retain(|(asked, _)| *asked != id);
            }
            Kind::Other => {}
        }
    }

    /// What a server that attaches is sent first: the hello, the agent's open requests, the
    /// backlog (whose answers the server has had from then on).
    fn greeting(&mut self, agent_pid: Option<u32>) -> Vec<String> {
        let outstanding: Vec<Value> =
            self.outstanding.values().map(|(id, method)| json!({"id": id, "method": method})).collect();
        let hello =
            json!({HOST_KEY: {"hello": {"agentPid": agent_pid, "outstanding": outstanding, "stderr": self.stderr}}});
        let mut lines = vec![hello.to_string()];
        lines.extend(self.asked.iter().map(|(_, line)| line.clone()));
        for line in std::mem::take(&mut self.backlog) {
            if let Kind::Response { id } = kind(&line) {
                self.outstanding.remove(&id.to_string());
            }
            lines.push(line);
        }
        lines
    }

    fn stderr(&mut self, line: String) {
        if self.stderr.len() == STDERR_TAIL {
            self.stderr.pop_front();
        }
        self.stderr.push_back(line);
    }
}

/// Reads `reader` line by line into `lines` (`None` once it ends), each line at most
/// [`MAX_LINE_BYTES`]: a longer one ends it.
fn read_lines(reader: impl tokio::io::AsyncRead + Unpin + Send + 'static, lines: mpsc::Sender<Option<String>>) {
    tokio::spawn(async move {
        let mut reader = BufReader::new(reader);
        let mut line = Vec::new();
        loop {
            line.clear();
            match (&mut reader).take(MAX_LINE_BYTES as u64 + 1).read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) if line.len() > MAX_LINE_BYTES && !line.ends_with(b"\n") => break,
                Ok(_) => {}
            }
            let text = String::from_utf8_lossy(&line).trim().to_string();
            if !text.is_empty() && lines.send(Some(text)).await.is_err() {
                return;
            }
        }
        let _ = lines.send(None).await;
    });
}

/// The server attached now: its writing half, and which attach it is.
struct Attached {
    writer: OwnedWriteHalf,
    generation: u64,
    reader: tokio::task::JoinHandle<()>,
}

async fn send(writer: &mut OwnedWriteHalf, lines: &[String]) -> std::io::Result<()> {
    for line in lines {
        writer.write_all(line.as_bytes()).await?;
        writer.write_all(b"\n").await?;
    }
    writer.flush().await
}

/// The host's state between events.
struct Host {
    relay: Relay,
    agent_pid: Option<u32>,
    agent_in: tokio::process::ChildStdin,
    attached: Option<Attached>,
    /// How many servers attached so far: a line of one that was replaced is dropped.
    generation: u64,
    from_servers: mpsc::Sender<(u64, Option<String>)>,
    detached_since: tokio::time::Instant,
}

/// Why the host ends.
type End = &'static str;

impl Host {
    /// Sends `lines` to the attached server, if one is; one that cannot take them is let go.
    async fn tell_server(&mut self, lines: &[String]) {
        if let Some(server) = &mut self.attached
            && send(&mut server.writer, lines).await.is_err()
        {
            self.detach();
        }
    }

    fn detach(&mut self) {
        if let Some(server) = self.attached.take() {
            server.reader.abort();
            self.detached_since = tokio::time::Instant::now();
        }
    }

    async fn agent_said(&mut self, line: Option<String>) -> Result<(), End> {
        let line = line.ok_or("the agent closed its output")?;
        if let Some(line) = self.relay.agent_said(line, self.attached.is_some()) {
            self.tell_server(&[line]).await;
        }
        Ok(())
    }

    async fn agent_wrote_stderr(&mut self, line: String) {
        self.relay.stderr(line.clone());
        self.tell_server(&[json!({HOST_KEY: {"stderr": line}}).to_string()]).await;
    }

    /// A server attached: it replaces the one before, and is greeted.
    async fn attach(&mut self, stream: tokio::net::UnixStream) {
        self.detach();
        self.generation += 1;
        let (read, mut writer) = stream.into_split();
        let (tx, mut rx) = mpsc::channel(64);
        read_lines(read, tx);
        let (servers, this) = (self.from_servers.clone(), self.generation);
        let reader = tokio::spawn(async move {
            while let Some(line) = rx.recv().await {
                let end = line.is_none();
                if servers.send((this, line)).await.is_err() || end {
                    return;
                }
            }
        });
        if send(&mut writer, &self.relay.greeting(self.agent_pid)).await.is_ok() {
            self.attached = Some(Attached { writer, generation: this, reader });
        } else {
            reader.abort();
        }
    }

    /// A line from server `from`, on its way to the agent (or for the host: `end`).
    async fn server_said(&mut self, from: u64, line: Option<String>) -> Result<(), End> {
        if self.attached.as_ref().is_none_or(|server| server.generation != from) {
            return Ok(());
        }
        let Some(line) = line else {
            self.detach();
            return Ok(());
        };
        if line.contains(HOST_KEY)
            && serde_json::from_str::<Value>(&line).is_ok_and(|v| v.get(HOST_KEY).is_some_and(|w| w == "end"))
        {
            return Err("the server ended it");
        }
        self.relay.server_said(&line);
        let written = async {
            self.agent_in.write_all(line.as_bytes()).await?;
            self.agent_in.write_all(b"\n").await?;
            self.agent_in.flush().await
        };
        written.await.map_err(|_| "the agent closed its input")
    }

    /// Whether `--idle-exit` may end the host now: no server attached, nothing asked of the person.
    fn idle(&self) -> bool {
        self.attached.is_none() && self.relay.asked.is_empty()
    }
}

/// Listens on `socket` (readable by its owner only), in place of whatever was there.
fn listen(socket: &std::path::Path) -> Result<UnixListener, String> {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::remove_file(socket);
    let listener = UnixListener::bind(socket).map_err(|e| format!("cannot listen on {}: {e}", socket.display()))?;
    let _ = std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600));
    Ok(listener)
}

/// Runs the host until its agent ends, it is told to end, or no server attached for `idle_exit`.
pub async fn run(args: HostArgs) -> Result<(), String> {
    // What the agent leaves running when it exits is reparented here, to be ended with the rest.
    // SAFETY: prctl only sets a flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    let socket = &args.socket;
    let listener = listen(socket)?;
    // A host whose socket is gone (its data folder deleted) or is another's can never be reached.
    let ours = socket_inode(socket);
    let mut check_socket = tokio::time::interval(SOCKET_CHECK);
    let mut command = tokio::process::Command::new(&args.program);
    command
        .args(&args.args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    crate::agent::process_tree::die_with_the_server(&mut command);
    let mut agent = command.spawn().map_err(|e| format!("cannot start {}: {e}", args.program))?;
    let (out_tx, mut agent_out) = mpsc::channel(64);
    read_lines(agent.stdout.take().expect("stdout is piped"), out_tx);
    let (err_tx, mut agent_err) = mpsc::channel(64);
    read_lines(agent.stderr.take().expect("stderr is piped"), err_tx);
    let (from_servers, mut servers) = mpsc::channel::<(u64, Option<String>)>(64);
    let mut host = Host {
        relay: Relay::default(),
        agent_pid: agent.id(),
        agent_in: agent.stdin.take().expect("stdin is piped"),
        attached: None,
        generation: 0,
        from_servers,
        detached_since: tokio::time::Instant::now(),
    };
    let idle_exit = args.idle_exit.unwrap_or(Duration::from_secs(86_400 * 365));

    let why: End = loop {
        let ended = tokio::select! {
            line = agent_out.recv() => host.agent_said(line.flatten()).await,
            Some(Some(line)) = agent_err.recv() => {
                host.agent_wrote_stderr(line).await;
                Ok(())
            }
            Ok((stream, _)) = listener.accept() => {
                host.attach(stream).await;
                Ok(())
            }
            Some((from, line)) = servers.recv() => host.server_said(from, line).await,
            _ = tokio::time::sleep_until(host.detached_since + idle_exit), if host.idle() && args.idle_exit.is_some() => {
                Err("no server attached for --idle-exit")
            }
            _ = check_socket.tick() => match socket_inode(socket) == ours {
                true => Ok(()),
                false => Err("its socket is gone"),
            },
        };
        if let Err(why) = ended {
            break why;
        }
    };
    let _ = std::fs::remove_file(socket);
    tracing::debug!(why, "ACP host ending");
    // The agent and everything it started: its descendants, the groups and sessions they made,
    // and what it left behind (reparented here).
    Tree::of(std::process::id()).kill();
    let _ = agent.wait().await;
    Ok(())
}

fn socket_inode(socket: &std::path::Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(socket).ok().map(|metadata| metadata.ino())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_that_attaches_gets_the_open_requests_again_and_what_it_missed() {
        let mut relay = Relay::default();
        relay.server_said(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#);
        assert!(relay.agent_said(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.into(), true).is_some());
        relay.server_said(r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{}}"#);
        let ask = r#"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{}}"#;
        assert!(relay.agent_said(ask.into(), true).is_some());
        // The server dies; the agent goes on talking.
        let update = r#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#;
        assert!(relay.agent_said(update.into(), false).is_none());
        let lines = relay.greeting(Some(42));
        let hello: Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(hello[HOST_KEY]["hello"]["outstanding"], json!([{"id": 2, "method": "session/prompt"}]));
        assert_eq!(lines[1..], [ask.to_string(), update.to_string()]);
        // Answered by the new server: not asked again.
        relay.server_said(r#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}"#);
        assert_eq!(relay.greeting(Some(42)).len(), 1);
    }

    #[test]
    fn an_answer_no_server_had_stays_outstanding_until_one_has_it() {
        let mut relay = Relay::default();
        relay.server_said(r#"{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{}}"#);
        let done = r#"{"jsonrpc":"2.0","id":5,"result":{"stopReason":"end_turn"}}"#;
        assert!(relay.agent_said(done.into(), false).is_none());
        let lines = relay.greeting(None);
        let hello: Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(hello[HOST_KEY]["hello"]["outstanding"][0]["id"], 5, "the waiter is made before the answer comes");
        assert_eq!(lines[1], done);
        let again: Value = serde_json::from_str(&relay.greeting(None)[0]).unwrap();
        assert_eq!(again[HOST_KEY]["hello"]["outstanding"], json!([]));
    }
}
