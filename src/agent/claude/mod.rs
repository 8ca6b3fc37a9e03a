//! The Claude Code CLI as an agent: one CLI process per session, driven over its stream-json
//! and control protocol. Streamed text and tool calls go to the thread; every question goes
//! through the InteractionBridge, answered either through `can_use_tool` (the default) or through
//! a PreToolUse hook (`--answer-path hook`); Stop interrupts; a CLI that exits or dies cancels its
//! questions, says why, and is resumed (`--resume`) by the next message.

mod process;
pub mod protocol;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use self::process::{CliProcess, Launch, Output, RequestError, Requester};
use self::protocol::{
    ApiEvent, CliInfo, CliRequest, ContentBlock, Delta, FromCli, HostRequest, ToCli, allow, deny, hook_allow,
    hook_deny, input_with_answers, question_hooks,
};
use super::{AgentBackend, AgentError, Sink, TurnRequest};
use crate::approval::{Approval, PermissionMode, Shows};
use crate::interaction::InteractionOutcome;
use crate::question::{is_question_tool, words};
use crate::thread::Usage;

/// How long the CLI may take to start and answer `initialize`.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the CLI has to confirm a switch of permission mode.
const MODE_SWITCH_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the CLI may take to end its turn after an interrupt.
const INTERRUPT_TIMEOUT: Duration = Duration::from_secs(15);
/// The id under which our PreToolUse hook is registered.
const HOOK_ID: &str = "askbridge_question_hook";

/// How the person's answer reaches the CLI (`../shared/DESIGN.md` §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AnswerPath {
    /// The CLI asks over the control protocol (`can_use_tool`) and waits: the default.
    CanUseTool,
    /// A PreToolUse hook blocks until the person answers and hands the answers over itself.
    Hook,
}

#[derive(Debug, Clone)]
pub struct ClaudeConfig {
    pub bin: PathBuf,
    pub workdir: PathBuf,
    pub permission_mode: PermissionMode,
    pub model: Option<String>,
    pub answer_path: AnswerPath,
    /// Set for the CLI on top of the server's environment.
    pub env: Vec<(String, String)>,
    /// Whether a session may switch to bypassPermissions (the person still confirms it).
    pub allow_bypass: bool,
}

pub struct ClaudeCliBackend {
    config: ClaudeConfig,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

/// A session's CLI: the process (held by the running turn), and its pid and a requester (usable
/// meanwhile, to switch the permission mode during a turn).
#[derive(Default)]
struct Session {
    slot: tokio::sync::Mutex<Slot>,
    pid: std::sync::atomic::AtomicU32,
    requester: Mutex<Option<Requester>>,
}

/// A session's CLI, while it runs.
#[derive(Default)]
struct Slot {
    process: Option<CliProcess>,
    /// What was last said about the agent in the session header.
    announced: Option<(String, Option<String>)>,
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
        Self { config, sessions: Mutex::new(HashMap::new()) }
    }

    fn session(&self, session: &str) -> Arc<Session> {
        self.sessions.lock().expect("sessions lock").entry(session.to_string()).or_default().clone()
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
            model: self.config.model.clone(),
            resume: request.agent_session.clone(),
            allow_bypass: self.bypass_refusal().is_none(),
            env: self.config.env.clone(),
        };
        let mut process = CliProcess::spawn(&launch, &request.session_id).map_err(|error| {
            AgentError::Failed(format!("could not start Claude Code ({}): {error}", self.config.bin.display()))
        })?;
        let hooks = (self.config.answer_path == AnswerPath::Hook).then(|| question_hooks(HOOK_ID));
        let request_id = process.request_id();
        process
            .send(ToCli::ControlRequest { request_id: request_id.clone(), request: HostRequest::Initialize { hooks } });
        let answered = tokio::time::timeout(START_TIMEOUT, async {
            loop {
                match process.output.recv().await {
                    Some(Output::Message(FromCli::ControlResponse(response)))
                        if response.request_id() == request_id =>
                    {
                        return Some(response);
                    }
                    Some(Output::Message(_)) => {}
                    Some(Output::Closed) | None => return None,
                }
            }
        })
        .await;
        match answered {
            Ok(Some(protocol::ControlResponse::Success { response, .. })) => {
                let info = CliInfo::from_initialize(&response);
                info!(session = %request.session_id, version = ?info.version, model = ?info.model, resume = ?launch.resume, "Claude Code is ready");
                Ok(process)
            }
            Ok(Some(protocol::ControlResponse::Error { error, .. })) => {
                process.stop().await;
                Err(AgentError::Failed(format!("Claude Code refused to start: {error}")))
            }
            Ok(None) => Err(AgentError::Failed(exit_report(&mut process, "Claude Code exited while starting").await)),
            Err(_) => {
                process.stop().await;
                Err(AgentError::Failed("Claude Code did not start within a minute".into()))
            }
        }
    }

    async fn turn(&self, request: TurnRequest, sink: Sink) -> Result<Option<Usage>, AgentError> {
        let session = self.session(&request.session_id);
        let mut slot = session.slot.lock().await;
        if slot.process.is_none() {
            let process = self.start(&request).await?;
            session.pid.store(process.pid().unwrap_or(0), std::sync::atomic::Ordering::Relaxed);
            *session.requester.lock().expect("requester lock") = Some(process.requester());
            slot.process = Some(process);
        }
        let Slot { process, announced } = &mut *slot;
        let cli = process.as_mut().expect("started above");
        cli.send(ToCli::user_text(&request.text));
        let result = Turn::new(sink, &request, self.config.answer_path, announced).run(cli).await;
        if let Err(Ended::Exited(what)) = &result {
            let mut cli = process.take().expect("the process ran this turn");
            session.pid.store(0, std::sync::atomic::Ordering::Relaxed);
            *session.requester.lock().expect("requester lock") = None;
            return Err(AgentError::Failed(exit_report(&mut cli, what).await));
        }
        result.map_err(|ended| match ended {
            Ended::Interrupted => AgentError::Interrupted,
            Ended::Failed(error) => AgentError::Failed(error),
            Ended::Sink(error) => error,
            Ended::Exited(_) => unreachable!("handled above"),
        })
    }
}

/// "Claude Code exited (exit code 1). Its last words: …"
/// Whether this server runs as root (Claude Code then refuses to bypass permissions).
fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata("/proc/self") {
        Ok(metadata) => metadata.uid() == 0,
        Err(_) => std::env::var("USER").is_ok_and(|user| user == "root"),
    }
}

async fn exit_report(process: &mut CliProcess, what: &str) -> String {
    let status = process.exit_status().await;
    let tail = process.stderr_tail();
    if tail.is_empty() {
        format!("{what} ({status}).")
    } else {
        format!("{what} ({status}). Its last output: {}", tail.join(" ⏎ "))
    }
}

impl AgentBackend for ClaudeCliBackend {
    fn name(&self) -> &'static str {
        "claude"
    }

    fn run_turn(&self, request: TurnRequest, sink: Sink) -> BoxFuture<'_, Result<Option<Usage>, AgentError>> {
        Box::pin(self.turn(request, sink))
    }

    fn default_workdir(&self) -> Option<PathBuf> {
        Some(self.config.workdir.clone())
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
            if let Some(ended) = ended
                && let Some(process) = ended.slot.lock().await.process.take()
            {
                process.stop().await;
            }
        })
    }

    fn shut_down(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let sessions: Vec<_> = self.sessions.lock().expect("sessions lock").drain().map(|(_, s)| s).collect();
            for session in sessions {
                if let Some(process) = session.slot.lock().await.process.take() {
                    process.stop().await;
                }
            }
        })
    }
}

/// Why a turn ended without a `result`.
enum Ended {
    Interrupted,
    Failed(String),
    /// stdout closed: the CLI exited or died.
    Exited(&'static str),
    Sink(AgentError),
}

impl From<AgentError> for Ended {
    fn from(error: AgentError) -> Self {
        Self::Sink(error)
    }
}

/// What the person's decision means to the CLI, or `None` when the CLI withdrew the question.
type Reply = (String, Option<Value>);

/// One turn's bookkeeping: which API message is which of our messages, which tool calls exist.
struct Turn<'a> {
    sink: Sink,
    request: &'a TurnRequest,
    answer_path: AnswerPath,
    announced: &'a mut Option<(String, Option<String>)>,
    /// API message id → our message id.
    messages: HashMap<String, String>,
    current: Option<String>,
    /// API message ids whose text arrived as deltas.
    streamed_text: HashSet<String>,
    /// (API message id, block index) → tool_use id, for argument deltas.
    block_tools: HashMap<(String, usize), String>,
    started_tools: HashSet<String>,
    ready_tools: HashSet<String>,
    /// The CLI's pending questions: its request id → the tool_use id.
    asking: HashMap<String, String>,
    stream_message: Option<String>,
    /// Questions wait for the person in tasks of their own (so that the CLI's other messages keep
    /// flowing meanwhile); their replies come back here.
    replies: (mpsc::UnboundedSender<Reply>, mpsc::UnboundedReceiver<Reply>),
    /// Ends the question tasks with the turn.
    questions_end: CancellationToken,
}

impl<'a> Turn<'a> {
    fn new(
        sink: Sink,
        request: &'a TurnRequest,
        answer_path: AnswerPath,
        announced: &'a mut Option<(String, Option<String>)>,
    ) -> Self {
        Self {
            sink,
            request,
            answer_path,
            announced,
            messages: HashMap::new(),
            current: None,
            streamed_text: HashSet::new(),
            block_tools: HashMap::new(),
            started_tools: HashSet::new(),
            ready_tools: HashSet::new(),
            asking: HashMap::new(),
            stream_message: None,
            replies: mpsc::unbounded_channel(),
            questions_end: request.cancel.child_token(),
        }
    }

    async fn run(mut self, cli: &mut CliProcess) -> Result<Option<Usage>, Ended> {
        let cancel = self.request.cancel.clone();
        let _end_questions = self.questions_end.clone().drop_guard();
        let mut interrupted_at: Option<tokio::time::Instant> = None;
        loop {
            let deadline = interrupted_at.map(|at| at + INTERRUPT_TIMEOUT);
            tokio::select! {
                output = cli.output.recv() => {
                    let message = match output {
                        Some(Output::Message(message)) => message,
                        Some(Output::Closed) | None => return Err(Ended::Exited("Claude Code exited during the turn")),
                    };
                    if let Some(result) = self.handle(message, cli, interrupted_at.is_some()).await? {
                        return result;
                    }
                }
                Some((request_id, reply)) = self.replies.1.recv() => {
                    self.asking.remove(&request_id);
                    if let Some(reply) = reply {
                        cli.send(ToCli::success(&request_id, reply));
                    }
                }
                () = cancel.cancelled(), if interrupted_at.is_none() => {
                    info!(session = %self.request.session_id, "interrupting Claude Code");
                    let request_id = cli.request_id();
                    cli.send(ToCli::ControlRequest { request_id, request: HostRequest::Interrupt });
                    interrupted_at = Some(tokio::time::Instant::now());
                }
                () = async { tokio::time::sleep_until(deadline.expect("guarded")).await }, if deadline.is_some() => {
                    return Err(Ended::Exited("Claude Code did not stop after the interrupt"));
                }
            }
        }
    }

    /// Handles one message; `Some` ends the turn.
    async fn handle(
        &mut self,
        message: FromCli,
        cli: &mut CliProcess,
        interrupted: bool,
    ) -> Result<Option<Result<Option<Usage>, Ended>>, Ended> {
        let sink = self.sink.clone();
        tracing::trace!(session = %self.request.session_id, ?message, "from Claude Code");
        match message {
            FromCli::System(system) if system.subtype == "init" => {
                if let Some(mode) = known_mode(system.permission_mode.as_deref()) {
                    sink.permission_mode(mode).await?;
                }
                let info = describe(&system);
                let announced = Some((info.clone(), system.session_id.clone()));
                if *self.announced != announced {
                    sink.agent_started(&info, system.session_id.clone()).await?;
                    *self.announced = announced;
                }
            }
            FromCli::System(system) if system.subtype == "status" => {
                if let Some(mode) = known_mode(system.permission_mode.as_deref()) {
                    sink.permission_mode(mode).await?;
                }
            }
            FromCli::StreamEvent(stream) if stream.parent_tool_use_id.is_none() => match stream.event {
                ApiEvent::MessageStart { message } => {
                    self.ensure_message(&message.id).await?;
                    self.stream_message = Some(message.id);
                }
                ApiEvent::ContentBlockStart { index, content_block: ContentBlock::ToolUse { id, name, .. } } => {
                    let message = self.stream_message.clone().unwrap_or_default();
                    let ours = self.ensure_message(&message).await?;
                    if self.started_tools.insert(id.clone()) {
                        sink.tool_call_started(&ours, &id, &name).await?;
                    }
                    self.block_tools.insert((message, index), id);
                }
                ApiEvent::ContentBlockDelta { index, delta } => {
                    let message = self.stream_message.clone().unwrap_or_default();
                    match delta {
                        Delta::TextDelta { text } => {
                            let ours = self.ensure_message(&message).await?;
                            self.streamed_text.insert(message);
                            sink.text(&ours, &text).await?;
                        }
                        Delta::InputJsonDelta { partial_json } => {
                            if let Some(tool) = self.block_tools.get(&(message, index))
                                && !self.ready_tools.contains(tool)
                                && !partial_json.is_empty()
                            {
                                sink.tool_input_delta(tool, &partial_json).await?;
                            }
                        }
                        Delta::Other => {}
                    }
                }
                _ => {}
            },
            FromCli::Assistant(assistant) if assistant.parent_tool_use_id.is_none() => {
                let ours = self.ensure_message(&assistant.message.id).await?;
                for block in assistant.message.content {
                    match block {
                        ContentBlock::Text { text } if !self.streamed_text.contains(&assistant.message.id) => {
                            sink.text(&ours, &text).await?;
                        }
                        ContentBlock::ToolUse { id, name, input } => {
                            if self.started_tools.insert(id.clone()) {
                                sink.tool_call_started(&ours, &id, &name).await?;
                            }
                            if self.ready_tools.insert(id.clone()) {
                                sink.tool_call_ready(&id, input).await?;
                            }
                        }
                        _ => {}
                    }
                }
            }
            FromCli::User(echo) if echo.parent_tool_use_id.is_none() => {
                for block in echo.tool_results() {
                    let ContentBlock::ToolResult { tool_use_id, content, is_error } = block else { continue };
                    let mut text = ContentBlock::result_text(&content);
                    // The override step: where the result was filled in without the person (the
                    // hook path), the stored transcript shows the answer they really gave.
                    if let Some(answers) = sink.take_answer(&tool_use_id)
                        && self.answer_path == AnswerPath::Hook
                    {
                        text = words::as_tool_result(&answers);
                    }
                    sink.tool_result(&tool_use_id, &text, is_error.unwrap_or(false)).await?;
                }
            }
            FromCli::ControlRequest { request_id, request } => match request {
                CliRequest::CanUseTool(ask) if is_question_tool(&ask.tool_name) => {
                    let tool_use_id = ask.tool_use_id.clone().unwrap_or_else(|| request_id.clone());
                    self.ask(request_id, tool_use_id, ask.tool_name, ask.input, AnswerPath::CanUseTool);
                }
                CliRequest::CanUseTool(ask) => {
                    let tool_use_id = ask.tool_use_id.clone().unwrap_or_else(|| request_id.clone());
                    self.approve(request_id, tool_use_id, ask);
                }
                CliRequest::HookCallback(hook) if hook.tool_name().is_some_and(is_question_tool) => {
                    let tool = hook.tool_name().unwrap_or_default().to_string();
                    let tool_use_id = hook.tool_use_id.clone().unwrap_or_else(|| request_id.clone());
                    self.ask(request_id, tool_use_id, tool, hook.tool_input(), AnswerPath::Hook);
                }
                // A hook we did not register for a question: no decision.
                CliRequest::HookCallback(_) => {
                    cli.send(ToCli::success(&request_id, json!({})));
                }
                CliRequest::Other(request) => {
                    warn!(session = %self.request.session_id, %request, "Claude Code asked something this build does not know");
                    cli.send(ToCli::error(&request_id, "AskBridge does not support this request"));
                }
            },
            FromCli::ControlCancelRequest { request_id } => {
                if let Some(tool_use_id) = self.asking.get(&request_id).cloned() {
                    let reason = if interrupted { "the turn was stopped" } else { "Claude Code withdrew the question" };
                    sink.withdraw(&tool_use_id, reason).await;
                }
            }
            FromCli::Result(result) => {
                if let Some(message) = self.current.take() {
                    sink.finish_message(&message).await?;
                }
                if interrupted {
                    return Ok(Some(Err(Ended::Interrupted)));
                }
                if result.is_error {
                    let detail = result.result.clone().filter(|r| !r.is_empty()).unwrap_or(result.subtype.clone());
                    return Ok(Some(Err(Ended::Failed(format!("Claude Code ended the turn with an error: {detail}")))));
                }
                let usage = Usage {
                    input_tokens: result.usage.as_ref().and_then(|u| u.input_tokens),
                    output_tokens: result.usage.as_ref().and_then(|u| u.output_tokens),
                    cost_usd: result.total_cost_usd,
                    duration_ms: result.duration_ms,
                };
                return Ok(Some(Ok(Some(usage))));
            }
            // Acknowledgements of our own requests, sub-agent traffic, state notices.
            _ => {}
        }
        Ok(None)
    }

    /// Our message for an API message, starting it (and finishing the one before) as needed.
    async fn ensure_message(&mut self, api_id: &str) -> Result<String, AgentError> {
        if let Some(ours) = self.messages.get(api_id) {
            return Ok(ours.clone());
        }
        if let Some(previous) = self.current.take() {
            self.sink.finish_message(&previous).await?;
        }
        let ours = self.sink.start_message().await?;
        self.messages.insert(api_id.to_string(), ours.clone());
        self.current = Some(ours.clone());
        Ok(ours)
    }

    /// Asks the person's permission, in a task of its own; the reply comes back on `replies`.
    fn approve(&mut self, request_id: String, tool_use_id: String, ask: protocol::CanUseTool) {
        self.asking.insert(request_id.clone(), tool_use_id.clone());
        let approval = Approval {
            description: ask
                .description
                .clone()
                .or_else(|| ask.input.get("description").and_then(Value::as_str).map(str::to_string)),
            reason: ask.decision_reason.clone(),
            blocked_path: ask.blocked_path.clone(),
            ..Approval::new(&ask.tool_name, ask.input.clone())
        }
        .with_suggestions(&ask.permission_suggestions);
        let sink = self.sink.clone();
        let replies = self.replies.0.clone();
        let cancel = self.questions_end.child_token();
        tokio::spawn(async move {
            let mut approval = approval;
            if approval.is_plan() && !matches!(approval.shows, Shows::Plan { .. }) {
                let written = sink.tool_input(&tool_use_id).await;
                if let Some(plan) = plan_text(&approval.input, written.as_ref()).await {
                    approval.shows = Shows::Plan { markdown: plan };
                }
            }
            let reply = match sink.ask_approval(&tool_use_id, approval.clone(), false, &cancel).await {
                Ok(outcome) => approval_reply(&outcome, &approval),
                Err(_) => None,
            };
            let _ = replies.send((request_id, reply));
        });
    }

    /// Puts a question to the person, in a task of its own; the reply for the CLI comes back on
    /// `replies`.
    fn ask(&mut self, request_id: String, tool_use_id: String, tool: String, input: Value, path: AnswerPath) {
        self.asking.insert(request_id.clone(), tool_use_id.clone());
        let sink = self.sink.clone();
        let replies = self.replies.0.clone();
        // Stop ends the wait; the turn's end cancels the card.
        let cancel = self.questions_end.child_token();
        tokio::spawn(async move {
            let reply = match sink.ask(&tool_use_id, &tool, &input, false, &cancel).await {
                Ok(outcome) => question_reply(&outcome, &input, path),
                Err(_) => None,
            };
            let _ = replies.send((request_id, reply));
        });
    }
}

/// The plan an `ExitPlanMode` request is about. Claude Code fills in `plan` from its plan file
/// and drops what the model wrote when there is none, so look in the request, then in the plan
/// file it names, then in what the model wrote.
async fn plan_text(input: &Value, written: Option<&Value>) -> Option<String> {
    const MAX_PLAN_BYTES: u64 = 256 * 1024;
    let text = |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    if let Some(plan) = text(input, "plan") {
        return Some(plan);
    }
    if let Some(path) = text(input, "planFilePath") {
        let readable = tokio::fs::metadata(&path).await.is_ok_and(|m| m.is_file() && m.len() <= MAX_PLAN_BYTES);
        if readable && let Ok(plan) = tokio::fs::read_to_string(&path).await {
            return Some(plan);
        }
    }
    written.and_then(|written| text(written, "plan"))
}

/// The person's decision on a permission request, as the CLI expects it.
fn approval_reply(outcome: &InteractionOutcome, approval: &Approval) -> Option<Value> {
    Some(match outcome {
        InteractionOutcome::Allowed { always } => {
            let mut reply = allow(approval.input.clone());
            if let Some(suggestion) = always.and_then(|i| approval.suggestions.get(i)) {
                reply["updatedPermissions"] = json!([suggestion.value]);
            }
            reply
        }
        InteractionOutcome::Denied { message: Some(message) } => deny(message),
        InteractionOutcome::Denied { message: None } => {
            deny(if approval.is_plan() { "The user wants to keep planning." } else { "The user denied this." })
        }
        InteractionOutcome::Expired => deny(crate::approval::EXPIRED_MESSAGE),
        InteractionOutcome::Cancelled { .. } => return None,
        other => deny(&format!("The permission request ended without a decision ({}).", other.why_closed())),
    })
}

/// What the CLI is told, in the agent's own format, or `None` when nobody will read it.
fn question_reply(outcome: &InteractionOutcome, input: &Value, path: AnswerPath) -> Option<Value> {
    let refusal = match outcome {
        InteractionOutcome::Answered { answers } => {
            let updated = input_with_answers(input, answers);
            return Some(match path {
                AnswerPath::CanUseTool => allow(updated),
                AnswerPath::Hook => hook_allow(updated, &words::as_context(answers)),
            });
        }
        InteractionOutcome::Cancelled { .. } => return None,
        InteractionOutcome::Declined { reason } => {
            let mut message = "The user declined to answer these questions: they chose none of the options and \
                               gave no answer. Do not assume one."
                .to_string();
            if let Some(reason) = reason {
                message.push_str(&format!(" Their reason: {reason}"));
            }
            message
        }
        InteractionOutcome::Expired => "The user did not answer these questions in time, so there is no answer. \
                                        Do not assume one."
            .to_string(),
        InteractionOutcome::Failed { error } => format!("The questions could not be shown to the user: {error}"),
        // Approval outcomes: not an answer to a question.
        InteractionOutcome::Allowed { .. } | InteractionOutcome::Denied { .. } => {
            "The questions were not answered.".to_string()
        }
    };
    Some(match path {
        AnswerPath::CanUseTool => deny(&refusal),
        AnswerPath::Hook => hook_deny(&refusal),
    })
}

/// A permission mode the CLI reports, if this build knows it (a newer CLI may have more).
fn known_mode(name: Option<&str>) -> Option<PermissionMode> {
    let name = name?;
    name.parse().map_err(|_| warn!(mode = name, "Claude Code reports a permission mode this build does not know")).ok()
}

/// "Claude Code 2.1.332 · claude-opus-5-5 · default mode · /home/me/project"
fn describe(system: &protocol::SystemMessage) -> String {
    let mut parts = vec![format!("Claude Code {}", system.claude_code_version.as_deref().unwrap_or("?"))];
    parts.extend(system.model.clone());
    parts.extend(system.permission_mode.as_ref().map(|m| format!("{m} mode")));
    parts.extend(system.cwd.clone());
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decline_or_an_expiry_is_never_an_answer() {
        let input = json!({"questions": []});
        for outcome in [InteractionOutcome::Declined { reason: None }, InteractionOutcome::Expired] {
            let reply = question_reply(&outcome, &input, AnswerPath::CanUseTool).unwrap();
            assert_eq!(reply["behavior"], "deny");
            assert!(reply["message"].as_str().unwrap().contains("Do not assume"));
            let hook = question_reply(&outcome, &input, AnswerPath::Hook).unwrap();
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
