//! The Claude Code CLI as an agent: one CLI process per session while it works, driven over its
//! stream-json and control protocol. Streamed text and tool calls go to the thread; every
//! question goes through the InteractionBridge, answered through a PreToolUse hook (the default:
//! it can be parked) or `can_use_tool` (`--answer-path can-use-tool`). A session that waits for
//! the person is parked — the hook answers `defer` and the CLI exits — and the answer resumes it
//! with `--resume` (protocol §12). Stop interrupts; a CLI that exits or dies cancels its
//! questions, says why, and is resumed by the next message. Idle CLIs exit after `--idle-exit`,
//! and no more than `--max-agents` run at once.

mod catalog;
mod config;
mod plan_file;
mod process;
pub mod protocol;
mod reply;
mod start;
pub mod transcripts;
mod turn;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde_json::Value;
use tracing::{debug, info};

use self::catalog::Catalog;
use self::process::{CliProcess, Launch, RequestError, Requester, RunningTotal};
use self::protocol::{CliInfo, HostRequest, TOLD_WHEN_KILLED, ToCli, question_hooks};
use self::start::{exit_report, start_cli};
use self::turn::{Ended, STOP_GRACE, Turn};
use super::{AgentBackend, AgentError, Sink, TurnRequest};
use crate::approval::{PermissionMode, Shows};
use crate::interaction::{InteractionOutcome, InteractionRequest};
use crate::thread::{Block, EventBody, Message, ModelChoice, SlashCommand, Usage};

pub use self::config::{AnswerPath, ClaudeConfig, claude_config_dir};
pub use self::reply::{approval_reply, question_decision, question_reply};

/// The name sessions that Claude Code runs are stored with.
pub const AGENT_NAME: &str = "claude";

/// How long a page waits for the models and commands of a folder no CLI has started in yet.
const CATALOG_WAIT: Duration = Duration::from_secs(3);
/// How long the CLI has to confirm a switch of permission mode or model.
const MODE_SWITCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The id under which our PreToolUse hook is registered.
const HOOK_ID: &str = "askbridge_question_hook";

pub struct ClaudeCliBackend {
    config: ClaudeConfig,
    /// Its models and `/` commands, per folder, from the CLI's own `initialize`.
    catalog: Catalog,
    sessions: Arc<Mutex<HashMap<String, Arc<Session>>>>,
    reaper: std::sync::Once,
}

/// A session's CLI: the process (held by the running turn), and its pid and a requester (usable
/// meanwhile, to switch the permission mode during a turn).
struct Session {
    slot: tokio::sync::Mutex<Slot>,
    pid: std::sync::atomic::AtomicU32,
    requester: Mutex<Option<Requester>>,
    /// When it last started a turn, for --idle-exit and --max-agents.
    active: Mutex<Instant>,
    /// The last turn's sink: to park what waits, and to say the CLI stopped, between turns.
    sink: Mutex<Option<Sink>>,
}

impl Default for Session {
    fn default() -> Self {
        Self {
            slot: Default::default(),
            pid: Default::default(),
            requester: Default::default(),
            active: Mutex::new(Instant::now()),
            sink: Mutex::new(None),
        }
    }
}

/// A session's CLI, while it runs.
#[derive(Default)]
struct Slot {
    process: Option<CliProcess>,
    /// What was last said about the agent in the session header.
    announced: Option<(String, Option<String>)>,
    /// Calls decided after a restart and told to the agent in words: their retry is not asked.
    preapproved: Vec<(String, Value)>,
}

impl Session {
    fn set_process(&self, slot: &mut Slot, process: Option<CliProcess>) {
        let pid = process.as_ref().and_then(CliProcess::pid).unwrap_or(0);
        self.pid.store(pid, std::sync::atomic::Ordering::Relaxed);
        *self.requester.lock().expect("requester lock") = process.as_ref().map(CliProcess::requester);
        slot.process = process;
    }
}

/// What the CLI is told as a turn starts: the person's message (with its files), or on a resume
/// the decisions taken after a restart in words, or the words that go on after answers it already
/// had. A resume with nothing to say is told nothing: the CLI asks its parked call again by itself.
async fn tell(
    cli: &mut CliProcess,
    request: &TurnRequest,
    words: &[(String, String)],
    sink: &Sink,
) -> Result<(), AgentError> {
    if !request.resume && !request.attachments.new.is_empty() {
        let files = &request.attachments;
        let content = crate::agent::messages_api::message_content(&request.text, &files.new, &files.bytes);
        cli.send(ToCli::user_content(serde_json::to_value(content).unwrap_or_default()));
    } else if !request.resume {
        cli.send(ToCli::user_text(&request.text));
    } else if !words.is_empty() {
        for (tool_use_id, told) in words {
            sink.tool_result(tool_use_id, &format!("Decided after a restart; the agent was told: {told}"), false)
                .await?;
        }
        let told: Vec<&str> = words.iter().map(|(_, told)| told.as_str()).collect();
        cli.send(ToCli::user_text(&told.join("\n\n")));
    } else if !has_parked_call(&request.history) {
        // A resume cut short after the CLI had the answers (their results are in its
        // transcript): nothing is asked again, and the turn goes on with the words the CLI
        // itself adds after an answer (protocol §12).
        cli.send(ToCli::user_text(crate::agent::CONTINUE));
    }
    Ok(())
}

impl ClaudeCliBackend {
    /// Why sessions cannot switch to bypassPermissions here, if they cannot.
    fn bypass_refusal(&self) -> Option<&'static str> {
        // Claude Code's own test: IS_SANDBOX=1 exactly (ours overrides the inherited one).
        let sandboxed = match self.config.env.iter().rev().find(|(name, _)| name == "IS_SANDBOX") {
            Some((_, value)) => value == "1",
            None => std::env::var("IS_SANDBOX").is_ok_and(|value| value == "1"),
        };
        if !self.config.allow_bypass {
            Some("this server was started with --no-bypass, so bypassPermissions is not available")
        } else if running_as_root() && !sandboxed {
            Some(
                "Claude Code refuses bypassPermissions when it runs as root, unless IS_SANDBOX=1 is set \
                 (set it only on a throwaway machine or container)",
            )
        } else {
            None
        }
    }

    pub fn new(config: ClaudeConfig) -> Self {
        Self { config, catalog: Catalog::default(), sessions: Arc::default(), reaper: std::sync::Once::new() }
    }

    fn session(&self, session: &str) -> Arc<Session> {
        self.sessions.lock().expect("sessions lock").entry(session.to_string()).or_default().clone()
    }

    /// How a CLI is started only to ask what it offers in `workdir` (the default folder if none).
    fn asking_launch(&self, workdir: Option<&std::path::Path>) -> Launch {
        Launch {
            bin: self.config.bin.clone(),
            workdir: workdir.map_or_else(|| self.config.workdir.clone(), std::path::Path::to_path_buf),
            permission_mode: self.config.permission_mode,
            model: None,
            resume: None,
            allow_bypass: false,
            inherit: self.config.agent_env.clone(),
            env: self.config.env.clone(),
        }
    }

    /// The CLI's process id for a session, while it runs (tests use it to kill it).
    pub fn pid(&self, session: &str) -> Option<u32> {
        let pid = self.session(session).pid.load(std::sync::atomic::Ordering::Relaxed);
        (pid != 0).then_some(pid)
    }

    async fn start(&self, request: &TurnRequest) -> Result<CliProcess, AgentError> {
        let launch = Launch {
            bin: self.config.bin.clone(),
            workdir: request.workdir.clone().unwrap_or_else(|| self.config.workdir.clone()),
            permission_mode: request.permission_mode.unwrap_or(self.config.permission_mode),
            model: request.model.clone().or_else(|| self.config.model.clone()),
            resume: request.agent_session.clone(),
            allow_bypass: self.bypass_refusal().is_none(),
            inherit: self.config.agent_env.clone(),
            env: self.config.env.clone(),
        };
        let hooks = (self.config.answer_path == AnswerPath::Hook).then(|| question_hooks(HOOK_ID));
        let (mut process, response) = start_cli(&launch, &request.session_id, hooks).await?;
        if let Some(id) = &launch.resume {
            let counted = request.history.iter().filter_map(|m| m.usage.as_ref()?.cost_usd).sum();
            process.spent = RunningTotal::resumed(restored_cost(&launch, id).await, counted);
        }
        let info = CliInfo::from_initialize(&response);
        info!(session = %request.session_id, version = ?info.version, model = ?info.model, resume = ?launch.resume, "Claude Code is ready");
        self.catalog.learned(&launch.workdir, &response);
        Ok(process)
    }

    async fn turn(&self, request: TurnRequest, sink: Sink) -> Result<Option<Usage>, AgentError> {
        self.start_reaper();
        let session = self.session(&request.session_id);
        *session.active.lock().expect("active lock") = Instant::now();
        *session.sink.lock().expect("sink lock") = Some(sink.clone());
        let mut slot = session.slot.lock().await;
        // Permission requests that could not be parked were decided meanwhile: the resumed agent
        // is told in words (and its identical retry is not asked again).
        let words = if request.resume { decided_in_words(&request.history, &mut slot.preapproved) } else { Vec::new() };
        if slot.process.as_mut().is_some_and(CliProcess::has_exited) {
            // It died between turns (or with a turn that was dropped): a new one resumes.
            session.set_process(&mut slot, None);
        }
        if slot.process.is_none() {
            self.make_room(&request.session_id).await;
            let process = self.start(&request).await?;
            session.set_process(&mut slot, Some(process));
            sink.emit(EventBody::AgentRunning { running: true }).await?;
        }
        let Slot { process, announced, preapproved } = &mut *slot;
        let cli = process.as_mut().expect("started above");
        tell(cli, &request, &words, &sink).await?;
        // A resume with nothing to say lets the CLI ask its parked call again by itself.
        // Should the session drop this turn before it ends, the CLI goes with it, and all it started.
        let dropped = KillTreeOnDrop(cli.pid());
        let result = Turn::new(sink.clone(), &request, announced, preapproved).run(cli).await;
        std::mem::forget(dropped);
        let ended = match result {
            Ok(mut usage) => {
                if let Some(usage) = usage.as_mut() {
                    usage.cost_usd = usage.cost_usd.map(|total| cli.spent.turn_cost(total));
                }
                return Ok(usage);
            }
            Err(ended) => ended,
        };
        let cli = process.take().expect("the process ran this turn");
        session.set_process(&mut slot, None);
        let error = match ended {
            Ended::Parked { stop } => {
                info!(session = %request.session_id, "parked: Claude Code exits until the person answers");
                if stop {
                    cli.kill().await
                } else {
                    cli.stop().await
                }
                AgentError::Parked
            }
            Ended::Exited(what) => {
                let mut cli = cli;
                let report = exit_report(&mut cli, what).await;
                cli.kill().await;
                AgentError::Failed(report)
            }
            // A CLI that was stopped is not trusted with the next turn: it may still be busy. It
            // exits within the grace from Stop, or is killed with all it started.
            Ended::Interrupted { by } => {
                cli.stop_by(by).await;
                AgentError::Interrupted
            }
            Ended::Unresponsive => {
                cli.kill().await;
                AgentError::Failed(format!(
                    "Claude Code did not stop within {} s of Stop: it was killed, with everything it had started",
                    STOP_GRACE.as_secs()
                ))
            }
            // The CLI ended the turn with an error of its own, and goes on.
            Ended::Failed(error) => {
                session.set_process(&mut slot, Some(cli));
                return Err(AgentError::Failed(error));
            }
            // Interrupted already; told why.
            Ended::Unstored(reason) => {
                cli.stop().await;
                AgentError::Failed(reason)
            }
            Ended::Sink(error) => {
                cli.stop().await;
                error
            }
        };
        let _ = sink.emit(EventBody::AgentRunning { running: false }).await;
        Err(error)
    }

    /// Lets go of CLIs beyond `--max-agents` before one more starts: idle ones exit, waiting
    /// ones park, the least recently active first.
    async fn make_room(&self, starting: &str) {
        let mut others: Vec<(Instant, String, Arc<Session>)> = {
            let sessions = self.sessions.lock().expect("sessions lock");
            sessions
                .iter()
                .filter(|(id, session)| *id != starting && session.pid.load(std::sync::atomic::Ordering::Relaxed) != 0)
                .map(|(id, session)| (*session.active.lock().expect("active lock"), id.clone(), session.clone()))
                .collect()
        };
        if others.len() < self.config.max_agents {
            return;
        }
        others.sort_by_key(|(active, _, _)| *active);
        let mut excess = others.len() + 1 - self.config.max_agents;
        for (_, id, session) in others {
            if excess == 0 {
                break;
            }
            if let Ok(mut slot) = session.slot.try_lock() {
                if let Some(process) = slot.process.take() {
                    info!(session = %id, "idle Claude Code exits to make room (--max-agents)");
                    session.set_process(&mut slot, None);
                    process.stop().await;
                    say_stopped(&session).await;
                    excess -= 1;
                }
            } else if let Some(sink) = session.sink.lock().expect("sink lock").clone()
                && sink.park_waiting() > 0
            {
                info!(session = %id, "a waiting session parks to make room (--max-agents)");
                excess -= 1;
            }
        }
    }

    /// Stops the CLIs of sessions idle for longer than `--idle-exit`, every so often.
    fn start_reaper(&self) {
        let Some(idle_exit) = self.config.idle_exit else { return };
        let sessions = Arc::downgrade(&self.sessions);
        self.reaper.call_once(|| {
            tokio::spawn(reap_idle(sessions, idle_exit));
        });
    }
}

async fn reap_idle(sessions: Weak<Mutex<HashMap<String, Arc<Session>>>>, idle_exit: Duration) {
    let every = (idle_exit / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
    loop {
        tokio::time::sleep(every).await;
        let Some(sessions) = sessions.upgrade() else { return };
        let idle: Vec<(String, Arc<Session>)> = sessions
            .lock()
            .expect("sessions lock")
            .iter()
            .filter(|(_, session)| session.active.lock().expect("active lock").elapsed() >= idle_exit)
            .map(|(id, session)| (id.clone(), session.clone()))
            .collect();
        drop(sessions);
        for (id, session) in idle {
            // A turn holds the slot while it runs: only a CLI nobody uses is stopped.
            let Ok(mut slot) = session.slot.try_lock() else { continue };
            if let Some(process) = slot.process.take() {
                info!(session = %id, "Claude Code was idle; it exits until the next message (--idle-exit)");
                session.set_process(&mut slot, None);
                process.stop().await;
                say_stopped(&session).await;
            }
        }
    }
}

/// Kills a CLI and all it started when dropped (`mem::forget` it to keep the CLI).
struct KillTreeOnDrop(Option<u32>);

impl Drop for KillTreeOnDrop {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            crate::agent::process_tree::Tree::of(pid).kill();
        }
    }
}

/// Tells the session's header that its CLI no longer runs.
async fn say_stopped(session: &Session) {
    let sink = session.sink.lock().expect("sink lock").clone();
    if let Some(sink) = sink {
        let _ = sink.emit(EventBody::AgentRunning { running: false }).await;
    }
}

/// Where a `--resume`d CLI's running total starts: what it restores from its transcript
/// ([`transcripts::ProjectsDir::restored_cost`]); $0 when that cannot be read.
async fn restored_cost(launch: &Launch, id: &str) -> f64 {
    let Some(dir) = launch.config_dir() else { return 0.0 };
    let projects = transcripts::ProjectsDir::new(dir.join("projects"));
    let id = id.to_string();
    match tokio::task::spawn_blocking(move || projects.restored_cost(&id)).await {
        Ok(Ok(spent)) => spent.unwrap_or(0.0),
        Ok(Err(error)) => {
            debug!(%error, "the resumed session's cost so far could not be read: its first turn may count it again");
            0.0
        }
        Err(_) => 0.0,
    }
}

/// The permission requests a parked turn left, decided since, as what the resumed agent is told:
/// (tool_use id, words). An allowed one is remembered, so that its identical retry runs.
/// Whether the thread has a parked call the agent has no result for: the CLI asks it again
/// when it resumes.
fn has_parked_call(history: &[Message]) -> bool {
    history.iter().flat_map(|message| &message.blocks).any(|block| {
        matches!(block, Block::ToolCall(call) if call.result.is_none() && call.interaction.as_ref().is_some_and(|i| i.parked))
    })
}

fn decided_in_words(history: &[Message], preapproved: &mut Vec<(String, Value)>) -> Vec<(String, String)> {
    let mut told = Vec::new();
    for message in history {
        for block in &message.blocks {
            let Block::ToolCall(call) = block else { continue };
            let Some(interaction) = call.interaction.as_ref().filter(|i| i.parked && call.result.is_none()) else {
                continue;
            };
            let (InteractionRequest::Approval(approval), Some(outcome)) = (&interaction.request, &interaction.outcome)
            else {
                continue;
            };
            let what = match &approval.shows {
                Shows::Command { command } => format!("`{command}`"),
                Shows::File { path, .. } => format!("{} on `{path}`", approval.tool),
                Shows::Url { url, .. } => format!("{} on {url}", approval.tool),
                _ => approval.tool.clone(),
            };
            let words = match outcome {
                InteractionOutcome::Allowed { .. } => {
                    preapproved.push((approval.tool.clone(), approval.input.clone()));
                    format!("While you were stopped, I decided on your request: you may now run {what}.")
                }
                InteractionOutcome::Denied { message: Some(message) } => {
                    format!("While you were stopped, I decided on your request: do not run {what}: {message}")
                }
                InteractionOutcome::Denied { message: None } => {
                    format!("While you were stopped, I decided on your request: do not run {what}.")
                }
                other => format!("Your request to run {what} was not allowed: {}.", other.why_closed()),
            };
            told.push((call.id.clone(), words));
        }
    }
    told
}

/// Whether this server runs as root (Claude Code then refuses to bypass permissions).
fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata("/proc/self") {
        Ok(metadata) => metadata.uid() == 0,
        Err(_) => std::env::var("USER").is_ok_and(|user| user == "root"),
    }
}

impl AgentBackend for ClaudeCliBackend {
    fn name(&self) -> &'static str {
        AGENT_NAME
    }

    fn run_turn(&self, request: TurnRequest, sink: Sink) -> BoxFuture<'_, Result<Option<Usage>, AgentError>> {
        Box::pin(self.turn(request, sink))
    }

    fn interrupt_grace(&self) -> Duration {
        // The turn ends by itself at STOP_GRACE, having killed what did not stop: the session's
        // own limit comes after, so that the turn always says how it ended.
        STOP_GRACE + Duration::from_secs(5)
    }

    fn told_when_lost(&self, request: &InteractionRequest) -> Option<String> {
        // The CLI died with the server, the call unanswered in its transcript: the next message
        // after `--resume` tells the model that it was interrupted (on either answer path).
        let _ = request;
        Some(TOLD_WHEN_KILLED.to_string())
    }

    fn default_workdir(&self) -> Option<PathBuf> {
        Some(self.config.workdir.clone())
    }

    fn label(&self) -> &'static str {
        "Claude Code"
    }

    fn models(&self) -> BoxFuture<'_, Vec<ModelChoice>> {
        Box::pin(async move { self.catalog.offered(self.asking_launch(None), CATALOG_WAIT).await.models.clone() })
    }

    fn commands<'a>(&'a self, workdir: Option<&'a std::path::Path>) -> BoxFuture<'a, Vec<SlashCommand>> {
        Box::pin(async move { self.catalog.offered(self.asking_launch(workdir), CATALOG_WAIT).await.commands.clone() })
    }

    fn set_model<'a>(&'a self, session: &'a str, model: Option<&'a str>) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            // A running CLI switches now and confirms; otherwise the next start takes `--model`.
            let requester = self.session(session).requester.lock().expect("requester lock").clone();
            let Some(requester) = requester else { return Ok(()) };
            let request = HostRequest::SetModel { model: model.unwrap_or("default").to_string() };
            match requester.request(request, MODE_SWITCH_TIMEOUT).await {
                Ok(_) | Err(RequestError::NotRunning) => Ok(()),
                Err(error) => Err(format!("Claude Code did not switch the model: {error}")),
            }
        })
    }

    fn default_permission_mode(&self) -> PermissionMode {
        self.config.permission_mode
    }

    fn set_permission_mode<'a>(&'a self, session: &'a str, mode: PermissionMode) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            if mode == PermissionMode::BypassPermissions
                && let Some(refusal) = self.bypass_refusal()
            {
                return Err(refusal.into());
            }
            if session.is_empty() {
                return Ok(());
            }
            // A running CLI switches now; otherwise the next start uses the session's mode.
            // The CLI confirms the switch (or says why not) before the session records it.
            let requester = self.session(session).requester.lock().expect("requester lock").clone();
            let Some(requester) = requester else { return Ok(()) };
            let request = HostRequest::SetPermissionMode { mode };
            match requester.request(request, MODE_SWITCH_TIMEOUT).await {
                // Not running (any more): the next start uses the session's mode.
                Ok(_) | Err(RequestError::NotRunning) => Ok(()),
                Err(error) => Err(error.to_string()),
            }
        })
    }

    fn end_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let ended = self.sessions.lock().expect("sessions lock").remove(session);
            if let Some(ended) = ended {
                let mut slot = ended.slot.lock().await;
                if let Some(process) = slot.process.take() {
                    ended.set_process(&mut slot, None);
                    process.stop().await;
                }
            }
        })
    }

    fn shut_down(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let sessions: Vec<_> = self.sessions.lock().expect("sessions lock").drain().map(|(_, s)| s).collect();
            for session in sessions {
                let mut slot = session.slot.lock().await;
                if let Some(process) = slot.process.take() {
                    session.set_process(&mut slot, None);
                    process.stop().await;
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use self::reply::question_reply;
    use serde_json::json;

    #[test]
    fn a_decline_or_an_expiry_is_never_an_answer() {
        let input = json!({"questions": []});
        for outcome in [InteractionOutcome::Declined { reason: None }, InteractionOutcome::Expired] {
            let reply = serde_json::to_value(question_reply(&outcome, &input, AnswerPath::CanUseTool)).unwrap();
            assert_eq!(reply["behavior"], "deny");
            assert!(reply["message"].as_str().unwrap().contains("Do not assume"));
            let hook = serde_json::to_value(question_reply(&outcome, &input, AnswerPath::Hook)).unwrap();
            assert_eq!(hook["hookSpecificOutput"]["permissionDecision"], "deny");
        }
        let cancelled = InteractionOutcome::Cancelled { reason: "x".into() };
        assert_eq!(question_reply(&cancelled, &input, AnswerPath::CanUseTool), None);
    }

    #[test]
    fn the_cli_is_started_with_the_stream_json_flags_mode_and_resume() {
        let launch = Launch {
            bin: "claude".into(),
            workdir: ".".into(),
            permission_mode: PermissionMode::AcceptEdits,
            model: Some("sonnet".into()),
            resume: Some("abc".into()),
            allow_bypass: true,
            inherit: crate::agent::AgentEnv::default(),
            env: vec![],
        };
        assert_eq!(
            launch.args().join(" "),
            "--output-format stream-json --verbose --input-format stream-json --permission-prompt-tool stdio \
             --include-partial-messages --permission-mode acceptEdits --model sonnet --resume abc \
             --allow-dangerously-skip-permissions"
        );
    }
}
