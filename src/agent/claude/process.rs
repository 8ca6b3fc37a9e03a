//! One Claude Code CLI process: started with the stream-json flags, stdin written by one task,
//! stdout read line by line into protocol messages, stderr kept (its last lines explain a crash)
//! and logged.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Child;
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, warn};

use super::protocol::{ControlResponse, FromCli, HostRequest, ToCli};
use crate::agent::AgentEnv;
use crate::agent::process_tree::{Tree, agent_command};

/// Lines of stderr kept to explain an exit.
const STDERR_TAIL: usize = 20;

/// How long a CLI whose stdin was closed has to exit by itself (it writes its transcript) before
/// what is left of it is killed, when nobody is waiting for it.
pub const EXIT_WAIT: Duration = Duration::from_secs(3);

/// How to start the CLI.
#[derive(Debug, Clone)]
pub struct Launch {
    pub bin: PathBuf,
    pub workdir: PathBuf,
    pub permission_mode: crate::approval::PermissionMode,
    pub model: Option<String>,
    /// The conversation to continue (`--resume`).
    pub resume: Option<String>,
    /// Lets the person switch to bypassPermissions later (`--allow-dangerously-skip-permissions`).
    pub allow_bypass: bool,
    /// What the CLI inherits of the server's environment.
    pub inherit: AgentEnv,
    /// Set on top of what it inherits.
    pub env: Vec<(String, String)>,
}

impl Launch {
    /// Where the CLI keeps its configuration and transcripts: `CLAUDE_CONFIG_DIR` or `~/.claude`
    /// as it will see them (what it is given, else what it inherits from the server).
    pub fn config_dir(&self) -> Option<PathBuf> {
        let given =
            |name: &str| self.env.iter().find(|(n, v)| n == name && !v.is_empty()).map(|(_, v)| PathBuf::from(v));
        given("CLAUDE_CONFIG_DIR")
            .or_else(|| given("HOME").map(|home| home.join(".claude")))
            .or_else(super::config::claude_config_dir)
    }

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
        args.push(self.permission_mode.to_string());
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
// One at a time through a channel: boxing the message would allocate once more per line read.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Output {
    Message(FromCli),
    /// stdout closed: the process is exiting.
    Closed,
}

/// Our requests whose answers go to whoever asked, not to the turn.
type Awaiting = Arc<Mutex<HashMap<String, oneshot::Sender<ControlResponse>>>>;

/// Sends control requests to a running CLI and waits for their answers, whether or not a turn
/// holds the process (to switch the permission mode, say).
#[derive(Clone)]
pub struct Requester {
    stdin: mpsc::UnboundedSender<ToCli>,
    awaiting: Awaiting,
}

/// Why a request got no success answer.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("Claude Code is not running")]
    NotRunning,
    #[error("Claude Code refused: {0}")]
    Refused(String),
    #[error("Claude Code did not answer within {0} s")]
    NoAnswer(u64),
}

impl Requester {
    /// Sends `request` and waits up to `timeout` for the CLI's answer: its response, or why not.
    pub async fn request(
        &self,
        request: HostRequest,
        timeout: std::time::Duration,
    ) -> Result<serde_json::Value, RequestError> {
        let request_id = format!("req_host_{}", &crate::ids::new_id()[20..]);
        let (answer, answered) = oneshot::channel();
        self.awaiting.lock().expect("awaiting lock").insert(request_id.clone(), answer);
        if self.stdin.send(ToCli::ControlRequest { request_id: request_id.clone(), request }).is_err() {
            self.awaiting.lock().expect("awaiting lock").remove(&request_id);
            return Err(RequestError::NotRunning);
        }
        let outcome = tokio::time::timeout(timeout, answered).await;
        self.awaiting.lock().expect("awaiting lock").remove(&request_id);
        match outcome {
            Ok(Ok(ControlResponse::Success { response, .. })) => Ok(response),
            Ok(Ok(ControlResponse::Error { error, .. })) => Err(RequestError::Refused(error)),
            // It exited before it answered.
            Ok(Err(_)) => Err(RequestError::NotRunning),
            Err(_) => Err(RequestError::NoAnswer(timeout.as_secs())),
        }
    }
}

pub struct CliProcess {
    child: Leader,
    stdin: mpsc::UnboundedSender<ToCli>,
    awaiting: Awaiting,
    pub output: mpsc::UnboundedReceiver<Output>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    next_request: u64,
    pub spent: RunningTotal,
}

/// A process's running total of dollars (`result.total_cost_usd`) at its last turn's end, or
/// where it started counting: each turn's own cost is the difference.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct RunningTotal {
    spent: f64,
    /// Spent by earlier processes of the conversation and never counted here (a turn that parked
    /// ends without its figures): the next turn's.
    carried: f64,
}

impl RunningTotal {
    /// A `--resume`d process: it starts from `restored` (what the CLI restores, see
    /// `ProjectsDir::restored_cost`), of which AskBridge had counted `counted` in the session's
    /// turns. More was spent than counted when a turn parked (its cost is in the CLI's, not in a
    /// turn's figures): that goes with the next turn. Less was when a process was killed before
    /// it could write down its total: it counted then, and nothing is carried.
    pub fn resumed(restored: f64, counted: f64) -> Self {
        let uncounted = restored - counted;
        // Sums of floats differ in their last digits: less than a cent's hundredth is nothing.
        Self { spent: restored, carried: if uncounted > 1e-6 { uncounted } else { 0.0 } }
    }

    /// A turn's own cost, from the running total its `result` reports (cumulative per process:
    /// two $0.066 turns report $0.066, then $0.133). A total that fell was reset (`/clear`
    /// starts a conversation at $0, seen with CLI 2.1.332): it is all this turn's.
    pub fn turn_cost(&mut self, total: f64) -> f64 {
        let cost = if total < self.spent { total } else { total - self.spent };
        self.spent = total;
        cost + std::mem::take(&mut self.carried)
    }
}

/// Reads the CLI's stdout, line by line: an answer to a control request goes to whoever asked
/// (`answers`), every other message to the turn, in order, and then `Output::Closed`.
fn read_stdout(
    stdout: tokio::process::ChildStdout,
    session: &str,
    answers: Awaiting,
) -> mpsc::UnboundedReceiver<Output> {
    let (output_tx, output_rx) = mpsc::unbounded_channel();
    let reader_session = session.to_string();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if line.trim().is_empty() {
                continue;
            }
            match FromCli::parse(&line) {
                Ok(FromCli::ControlResponse { response })
                    if answers.lock().expect("awaiting lock").contains_key(response.request_id()) =>
                {
                    let asked = answers.lock().expect("awaiting lock").remove(response.request_id());
                    if let Some(asked) = asked {
                        let _ = asked.send(response);
                    }
                }
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
        // Whoever still waits learns that no answer is coming.
        answers.lock().expect("awaiting lock").clear();
        let _ = output_tx.send(Output::Closed);
    });
    output_rx
}

impl CliProcess {
    pub fn spawn(launch: &Launch, session: &str) -> std::io::Result<Self> {
        let mut command = agent_command(&launch.bin, &launch.inherit, &launch.env, session, &launch.workdir);
        // As the official SDK asks: the CLI says when it is idle (`session_state_changed`),
        // which is how a turn knows that no subagent's follow-up is still to come.
        command.env("CLAUDE_CODE_SDK_READS_SESSION_STATE", "1").args(launch.args());
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

        let awaiting = Awaiting::default();
        let output_rx = read_stdout(child.stdout.take().expect("stdout is piped"), session, awaiting.clone());

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

        Ok(Self {
            child: Leader(child),
            stdin: stdin_tx,
            awaiting,
            output: output_rx,
            stderr: stderr_tail,
            next_request: 0,
            spent: RunningTotal::default(),
        })
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.0.id()
    }

    pub fn send(&self, message: ToCli) -> bool {
        self.stdin.send(message).is_ok()
    }

    /// A handle for asking the CLI things while a turn holds the process.
    pub fn requester(&self) -> Requester {
        Requester { stdin: self.stdin.clone(), awaiting: self.awaiting.clone() }
    }

    /// A fresh id for a request of ours (the CLI's own ids are UUIDs).
    pub fn request_id(&mut self) -> String {
        self.next_request += 1;
        format!("req_{}_{}", self.next_request, &crate::ids::new_id()[24..])
    }

    /// The last lines the CLI wrote to stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.stderr.lock().expect("stderr lock").iter().cloned().collect()
    }

    /// Waits (5 s at most) for the process to exit and says how it ended; then ends whatever it
    /// left running. One that does not exit is killed, with everything it started.
    pub async fn exit_status(&mut self) -> String {
        let tree = self.tree().await;
        let status = tokio::time::timeout(Duration::from_secs(5), self.child.0.wait()).await;
        let said = match status {
            Ok(Ok(status)) => match status.code() {
                Some(code) => format!("exit code {code}"),
                None => "killed by a signal".to_string(),
            },
            Ok(Err(error)) => format!("unknown exit ({error})"),
            Err(_) => {
                kill(tree).await;
                let _ = self.child.0.wait().await;
                return "it stopped answering and was killed".to_string();
            }
        };
        kill(tree.without_root()).await;
        said
    }

    /// Closes stdin (the CLI then finishes and exits by itself) and waits until `by`; then kills
    /// whatever is left of it and of what it started.
    pub async fn stop_by(mut self, by: tokio::time::Instant) {
        let tree = self.tree().await;
        drop(self.stdin);
        let exited = matches!(tokio::time::timeout_at(by, self.child.0.wait()).await, Ok(Ok(_)));
        // Exited or not, the commands it ran (in sessions of their own) may still run.
        kill(if exited { tree.without_root() } else { tree }).await;
        if !exited {
            let _ = self.child.0.wait().await;
        }
    }

    /// `stop_by`, giving it [`EXIT_WAIT`] to exit by itself.
    pub async fn stop(self) {
        self.stop_by(tokio::time::Instant::now() + EXIT_WAIT).await;
    }

    /// Kills the CLI and everything it started, at once (a CLI that did not stop in time).
    pub async fn kill(mut self) {
        let tree = self.tree().await;
        kill(tree).await;
        let _ = self.child.0.wait().await;
    }

    /// What the CLI started, as it is now (nothing once the CLI is reaped).
    async fn tree(&self) -> Tree {
        let Some(pid) = self.child.0.id() else { return Tree::default() };
        tokio::task::spawn_blocking(move || Tree::of(pid)).await.unwrap_or_default()
    }

    /// Whether the process has exited (it died between turns, or its turn was dropped).
    pub fn has_exited(&mut self) -> bool {
        !matches!(self.child.0.try_wait(), Ok(None))
    }
}

/// Kills `tree`, off the async threads (it reads the process table).
async fn kill(tree: Tree) {
    let _ = tokio::task::spawn_blocking(move || tree.kill()).await;
}

/// The CLI's process: whatever drops it (a turn dropped by the session, a server that stops)
/// ends it and everything it started, not only the CLI.
struct Leader(Child);

impl Drop for Leader {
    fn drop(&mut self) {
        if let Some(pid) = self.0.id() {
            Tree::of(pid).kill();
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
    fn a_turn_costs_what_the_running_total_grew_by_and_all_of_it_after_a_reset() {
        let mut spent = super::RunningTotal::default();
        assert_eq!(spent.turn_cost(0.065718), 0.065718);
        assert_eq!(spent.turn_cost(0.065718), 0.0, "a local command (/context) costs nothing");
        assert!((spent.turn_cost(0.132576) - 0.066858).abs() < 1e-9);
        assert_eq!(spent.turn_cost(0.0), 0.0, "/clear");
        assert_eq!(spent.turn_cost(0.066048), 0.066048);
        // Resumed after two counted turns: only its own turn.
        let mut resumed = super::RunningTotal::resumed(0.132576, 0.065718 + 0.066858);
        assert!((resumed.turn_cost(0.19959) - 0.067014).abs() < 1e-9);
        // Resumed after a turn that parked ($0.05 never counted): the next turn carries it, once.
        let mut after_park = super::RunningTotal::resumed(0.182576, 0.132576);
        assert!((after_park.turn_cost(0.25) - (0.067424 + 0.05)).abs() < 1e-9);
        assert!((after_park.turn_cost(0.3) - 0.05).abs() < 1e-9);
        // Resumed from an older total (the last process was killed): nothing is carried.
        let mut after_kill = super::RunningTotal::resumed(0.1, 0.3);
        assert!((after_kill.turn_cost(0.16) - 0.06).abs() < 1e-9);
    }

    use std::time::Duration;

    use super::*;

    /// A stand-in CLI: a shell script that gets Claude Code's arguments and ignores them.
    fn fake_cli(dir: &std::path::Path, script: &str) -> Launch {
        use std::os::unix::fs::PermissionsExt;
        let bin = dir.join("fake-claude");
        std::fs::write(&bin, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        Launch {
            bin,
            workdir: dir.to_path_buf(),
            permission_mode: crate::approval::PermissionMode::Default,
            model: None,
            resume: None,
            allow_bypass: false,
            inherit: AgentEnv::default(),
            env: Vec::new(),
        }
    }

    fn switch() -> HostRequest {
        HostRequest::SetPermissionMode { mode: crate::approval::PermissionMode::Plan }
    }

    #[tokio::test]
    async fn a_request_gets_its_own_answer_and_the_turn_never_sees_it() {
        let dir = tempfile::tempdir().unwrap();
        // Refuses every request, by its id.
        let launch = fake_cli(
            dir.path(),
            r#"while read line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"request_id":"\([^"]*\)".*/\1/p')
  printf '{"type":"control_response","response":{"subtype":"error","request_id":"%s","error":"no such mode"}}\n' "$id"
done"#,
        );
        let mut process = CliProcess::spawn(&launch, "test").unwrap();
        let answer = process.requester().request(switch(), Duration::from_secs(10)).await;
        assert!(matches!(&answer, Err(RequestError::Refused(error)) if error == "no such mode"), "{answer:?}");
        assert!(
            matches!(process.output.try_recv(), Err(mpsc::error::TryRecvError::Empty)),
            "not forwarded to the turn"
        );
        process.stop().await;
    }

    #[tokio::test]
    async fn a_silent_or_exiting_cli_is_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let silent = CliProcess::spawn(&fake_cli(dir.path(), "cat > /dev/null"), "test").unwrap();
        let answer = silent.requester().request(switch(), Duration::from_millis(200)).await;
        assert!(matches!(answer, Err(RequestError::NoAnswer(_))), "{answer:?}");
        silent.stop().await;

        let dir = tempfile::tempdir().unwrap();
        let exiting = CliProcess::spawn(&fake_cli(dir.path(), "read line; exit 3"), "test").unwrap();
        let answer = exiting.requester().request(switch(), Duration::from_secs(10)).await;
        assert!(matches!(answer, Err(RequestError::NotRunning)), "{answer:?}");
    }

    /// The pid a script wrote to `file`, once it is there.
    async fn written_pid(file: &std::path::Path) -> u32 {
        crate::testing::wait_until("the script to start its command", Duration::from_secs(10), || async {
            std::fs::read_to_string(file).ok().and_then(|text| text.trim().parse().ok())
        })
        .await
    }

    fn running(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "))
    }

    async fn gone(pid: u32) {
        crate::testing::wait_until("the command to end", Duration::from_secs(10), || async {
            (!running(pid)).then_some(())
        })
        .await
    }

    #[tokio::test]
    async fn a_cli_stopped_or_dropped_leaves_nothing_running_even_in_sessions_of_its_own() {
        for dropped in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let pid_file = dir.path().join("command");
            // Like Claude Code with a command running: stdin's end does not stop it, and the
            // command runs in a session of its own.
            let script =
                format!("setsid sh -c 'echo $$ > {}; exec sleep 600' & cat > /dev/null; sleep 600", pid_file.display());
            let process = CliProcess::spawn(&fake_cli(dir.path(), &script), "test").unwrap();
            let command = written_pid(&pid_file).await;
            let cli = process.pid().unwrap();
            if dropped {
                drop(process);
            } else {
                process.stop().await;
            }
            gone(command).await;
            gone(cli).await;
        }
    }

    #[test]
    fn stderr_loses_its_colours() {
        let line = "\u{1b}[0m\u{1b}[31m--dangerously-skip-permissions cannot be used with root\u{1b}[0m";
        assert_eq!(super::plain_text(line), "--dangerously-skip-permissions cannot be used with root");
    }
}
