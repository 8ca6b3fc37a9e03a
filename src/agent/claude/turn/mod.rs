//! One turn of the Claude Code CLI: what it streams becomes the thread (`writer.rs`), each
//! question and permission request waits for the person in a task of its own (`waiting.rs`), and
//! the turn ends at a `result` — or later, while a background subagent still works or asks
//! (protocol §13), or earlier, when everything that waits was parked (§12).

mod waiting;
mod writer;

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use self::waiting::{Asking, Waiting};
use self::writer::ThreadWriter;
use super::process::{CliProcess, Output};
use super::protocol::{
    CanUseTool, CliRequest, CompactMetadata, FromCli, HookOutput, HostRequest, Init, Reply, ResultMessage, Status,
    SystemMessage, ToCli, UserEcho, allow, deny, hook_defer, hook_deny,
};
use super::reply::{Answer, HookAnswers};
use crate::agent::messages_api::ContentBlock;
use crate::agent::{AgentError, Sink, TurnRequest};
use crate::approval::PermissionMode;
use crate::question::is_question_tool;
use crate::thread::Usage;

/// One grace period from Stop: the CLI ends its turn (it stops its tools itself) and exits
/// within it, or it is killed with everything it started.
pub(super) const STOP_GRACE: Duration = Duration::from_secs(15);

/// For a CLI that does not report its state (`session_state_changed`, asked for with
/// `CLAUDE_CODE_SDK_READS_SESSION_STATE=1`): how long a turn whose `result` came while subagents
/// were at work waits, once they are done, for the turn the CLI then starts by itself. A CLI
/// that reports its state says when it is idle instead, however slow that turn is.
const SETTLE: Duration = Duration::from_secs(3);

/// Why a turn ended without a `result` of its own.
pub(super) enum Ended {
    /// Stopped: the CLI ended its turn; it has until `by` (the grace from Stop) to exit.
    Interrupted {
        by: Instant,
    },
    /// Stopped, and the CLI did not end its turn within the grace.
    Unresponsive,
    Failed(String),
    /// stdout closed: the CLI exited or died.
    Exited(&'static str),
    /// Everything that waited for the person was parked; `stop` when the CLI cannot go on by
    /// itself (a permission request it still waits for) and must be stopped.
    Parked {
        stop: bool,
    },
    /// A request of the CLI's could not be stored (so no card showed it): the CLI was told so
    /// and interrupted; why, in words for the thread.
    Unstored(String),
    Sink(AgentError),
}

impl From<AgentError> for Ended {
    fn from(error: AgentError) -> Self {
        Self::Sink(error)
    }
}

/// What one thing that happened (a message from the CLI, an answer, Stop, a deadline) means for
/// the turn.
enum Flow {
    /// The turn goes on.
    Continue,
    /// The turn is complete: with its usage, when the CLI reported it.
    Completed(Option<Usage>),
    /// The turn ended without a `result` of its own.
    Ended(Ended),
}

/// A request that could not be stored, answered so: the CLI is interrupted once it has applied
/// that answer, and the turn ends.
struct Unstored {
    tool_use_id: String,
    /// Why the turn ends, in words for the thread.
    reason: String,
    since: Instant,
}

/// One turn's bookkeeping.
pub(super) struct Turn<'a> {
    sink: Sink,
    request: &'a TurnRequest,
    announced: &'a mut Option<(String, Option<String>)>,
    /// Calls decided after a restart, in words: their identical retry is allowed without a card.
    preapproved: &'a mut Vec<(String, Value)>,
    thread: ThreadWriter,
    waiting: Waiting,
    /// Answers the hook delivered, until their tool results come.
    hook_answers: HookAnswers,
    /// Background tasks (subagents) at work, and what each was asked to do.
    tasks: HashMap<String, String>,
    /// A `result` came, and the turn waits for the CLI to be idle (or, for a CLI that does not
    /// say, for its subagents to be done).
    result_seen: Option<Usage>,
    /// The CLI reports its state (`session_state_changed`): it says when it is idle.
    reports_state: bool,
    unstored: Option<Unstored>,
}

impl<'a> Turn<'a> {
    pub(super) fn new(
        sink: Sink,
        request: &'a TurnRequest,
        announced: &'a mut Option<(String, Option<String>)>,
        preapproved: &'a mut Vec<(String, Value)>,
    ) -> Self {
        Self {
            thread: ThreadWriter::new(sink.clone()),
            waiting: Waiting::new(sink.clone(), &request.cancel),
            sink,
            request,
            announced,
            preapproved,
            hook_answers: HookAnswers::default(),
            tasks: HashMap::new(),
            result_seen: None,
            reports_state: false,
            unstored: None,
        }
    }

    pub(super) async fn run(mut self, cli: &mut CliProcess) -> Result<Option<Usage>, Ended> {
        let cancel = self.request.cancel.clone();
        let _end_waits = self.waiting.end_with_the_turn();
        let mut interrupted_at: Option<Instant> = None;
        loop {
            let deadline = interrupted_at.map(|at| at + STOP_GRACE);
            let unstored_deadline = self.unstored.as_ref().map(|unstored| unstored.since + STOP_GRACE);
            // A CLI that does not say when it is idle: after the main turn's result, once subagents
            // are done, a short wait for the turn the CLI may start by itself.
            let settled = !self.reports_state
                && self.result_seen.is_some()
                && self.waiting.asking.is_empty()
                && self.tasks.is_empty();
            let flow = tokio::select! {
                output = cli.output.recv() => self.on_output(output, cli, deadline).await,
                Some((request_id, answer)) = self.waiting.next_reply() => self.on_answer(cli, request_id, answer),
                () = cancel.cancelled(), if interrupted_at.is_none() => {
                    info!(session = %self.request.session_id, "interrupting Claude Code");
                    interrupt(cli);
                    interrupted_at = Some(Instant::now());
                    Flow::Continue
                }
                () = async { tokio::time::sleep_until(deadline.expect("guarded")).await }, if deadline.is_some() => {
                    Flow::Ended(Ended::Unresponsive)
                }
                () = async { tokio::time::sleep_until(unstored_deadline.expect("guarded")).await }, if unstored_deadline.is_some() => {
                    let unstored = self.unstored.take().expect("guarded");
                    Flow::Ended(Ended::Unstored(unstored.reason))
                }
                () = tokio::time::sleep(SETTLE), if settled => {
                    let usage = self.result_seen.clone();
                    self.finish(usage).await.unwrap_or_else(|error| Flow::Ended(Ended::Sink(error)))
                }
            };
            match flow {
                Flow::Continue => {}
                Flow::Completed(usage) => return Ok(usage),
                Flow::Ended(ended) => return Err(ended),
            }
        }
    }

    /// What the CLI wrote, or that its stdout closed.
    async fn on_output(&mut self, output: Option<Output>, cli: &mut CliProcess, stopping_by: Option<Instant>) -> Flow {
        let message = match output {
            Some(Output::Message(message)) => message,
            Some(Output::Closed) | None => return Flow::Ended(Ended::Exited("Claude Code exited during the turn")),
        };
        if let Some(unstored) = &self.unstored
            && took_answer(&message, &unstored.tool_use_id)
        {
            // The CLI has taken the answer (or ended its turn): the turn ends here.
            interrupt(cli);
            return Flow::Ended(Ended::Unstored(unstored.reason.clone()));
        }
        match self.handle(message, cli, stopping_by).await {
            Ok(flow) => flow,
            // The store fails: what ends the turn is the request it could not keep.
            Err(_) if let Some(unstored) = &self.unstored => Flow::Ended(Ended::Unstored(unstored.reason.clone())),
            Err(error) => Flow::Ended(Ended::Sink(error)),
        }
    }

    /// Handles one message, by its kind.
    async fn handle(
        &mut self,
        message: FromCli,
        cli: &mut CliProcess,
        stopping_by: Option<Instant>,
    ) -> Result<Flow, AgentError> {
        tracing::trace!(session = %self.request.session_id, ?message, "from Claude Code");
        match message {
            FromCli::System(system) => return self.on_system(system).await,
            FromCli::ConversationReset { trigger } => self.on_conversation_reset(trigger).await?,
            FromCli::StreamEvent(stream) if stream.parent_tool_use_id.is_none() => {
                self.thread.stream_event(stream.event).await?;
            }
            FromCli::Assistant(assistant) if assistant.parent_tool_use_id.is_none() => {
                self.thread.assistant(assistant.message).await?;
            }
            FromCli::User(echo) => self.on_echo(echo).await?,
            FromCli::ControlRequest { request_id, request } => self.on_request(cli, request_id, request).await?,
            FromCli::ControlCancelRequest { request_id } => self.on_cancel(&request_id, stopping_by.is_some()).await,
            FromCli::Result(result) => return self.on_result(&result, stopping_by).await,
            // Acknowledgements of our own requests, subagents' messages, progress reports.
            FromCli::StreamEvent(_)
            | FromCli::Assistant(_)
            | FromCli::ControlResponse { .. }
            | FromCli::Progress(_)
            | FromCli::Unknown(_) => {}
        }
        Ok(Flow::Continue)
    }

    async fn on_system(&mut self, system: SystemMessage) -> Result<Flow, AgentError> {
        match system {
            SystemMessage::Init(init) => self.on_init(init).await?,
            SystemMessage::Status(status) => self.on_status(status).await?,
            SystemMessage::CompactBoundary { compact_metadata } => {
                self.sink.notice(&compacted(compact_metadata.as_ref())).await?;
            }
            // Idle comes after the last `result`: the main turn's, or that of the turn the CLI
            // starts by itself once its background subagents are done (§13); never in between.
            SystemMessage::SessionStateChanged { state } => {
                self.reports_state = true;
                if state.as_deref() == Some("idle") && self.result_seen.is_some() && self.waiting.asking.is_empty() {
                    let usage = self.result_seen.clone();
                    return self.finish(usage).await;
                }
            }
            SystemMessage::TaskStarted { task_id, description } => {
                if let Some(task) = task_id {
                    self.tasks.insert(task, description.unwrap_or_default());
                }
            }
            // Any status it reports here (completed, failed, stopped) ends the task.
            SystemMessage::TaskNotification { task_id, .. } => {
                if let Some(task) = task_id {
                    self.tasks.remove(&task);
                }
            }
            SystemMessage::TaskProgress | SystemMessage::TaskUpdated | SystemMessage::BackgroundTasksChanged => {}
            SystemMessage::Other(message) => {
                debug!(session = %self.request.session_id, %message, "a system message this build does not know");
            }
        }
        Ok(Flow::Continue)
    }

    async fn on_init(&mut self, init: Init) -> Result<(), AgentError> {
        if let Some(mode) = known_mode(init.permission_mode.as_deref()) {
            self.sink.permission_mode(mode).await?;
        }
        let info = describe(&init);
        let announced = Some((info.clone(), init.session_id.clone()));
        if *self.announced != announced {
            self.sink.agent_started(&info, init.session_id.clone()).await?;
            *self.announced = announced;
        }
        Ok(())
    }

    async fn on_status(&mut self, status: Status) -> Result<(), AgentError> {
        if let Some(mode) = known_mode(status.permission_mode.as_deref()) {
            self.sink.permission_mode(mode).await?;
        }
        if status.compact_result.as_deref() == Some("failed") {
            let why = status.compact_error.as_deref().unwrap_or("Claude Code did not say why");
            self.sink.notice(&format!("The conversation was not compacted: {why}")).await?;
        }
        Ok(())
    }

    async fn on_conversation_reset(&mut self, trigger: Option<String>) -> Result<(), AgentError> {
        let by = trigger.map(|t| format!(" (/{t})")).unwrap_or_default();
        self.sink
            .notice(&format!(
                "The context was cleared{by}: the agent starts a new conversation and no longer sees what came \
                 before, which stays here."
            ))
            .await
    }

    /// The CLI's echo of a user turn: what a local command printed, or tool results. A
    /// subagent's own tool calls are shown once they ask something; their results then land on
    /// those cards.
    async fn on_echo(&mut self, echo: UserEcho) -> Result<(), AgentError> {
        // What a local command printed (`/context`, `/usage`); `/compact`'s "Compacted" is said
        // by its boundary, with the figures.
        if let Some(output) = echo.local_command_output() {
            if !output.is_empty() && output != "Compacted" {
                self.sink.notice(output).await?;
            }
            return Ok(());
        }
        let subagent = echo.parent_tool_use_id.is_some();
        for block in echo.tool_results() {
            let ContentBlock::ToolResult { tool_use_id, content, is_error, .. } = block else { continue };
            if subagent && !self.thread.shows(&tool_use_id) {
                continue;
            }
            let text = self.hook_answers.result_text(&tool_use_id, ContentBlock::result_text(&content));
            self.sink.tool_result(&tool_use_id, &text, is_error.unwrap_or(false)).await?;
        }
        Ok(())
    }

    /// A request of the CLI's: a question or a permission request waits for the person.
    async fn on_request(
        &mut self,
        cli: &mut CliProcess,
        request_id: String,
        request: CliRequest,
    ) -> Result<(), AgentError> {
        match request {
            CliRequest::CanUseTool(ask) if is_question_tool(&ask.tool_name) => {
                let tool_use_id = ask.tool_use_id.clone().unwrap_or_else(|| request_id.clone());
                self.waiting.ask(request_id, tool_use_id, ask.tool_name, ask.input, false);
            }
            CliRequest::CanUseTool(ask) => self.on_permission_request(cli, request_id, ask).await?,
            CliRequest::HookCallback(hook) if hook.tool_name().is_some_and(is_question_tool) => {
                let tool = hook.tool_name().unwrap_or_default().to_string();
                let tool_use_id = hook.tool_use_id.clone().unwrap_or_else(|| request_id.clone());
                self.waiting.ask(request_id, tool_use_id, tool, hook.tool_input(), true);
            }
            // A hook we did not register for a question: no decision.
            CliRequest::HookCallback(_) => {
                cli.send(ToCli::success(&request_id, HookOutput::none()));
            }
            CliRequest::Other(request) => {
                warn!(session = %self.request.session_id, %request, "Claude Code asked something this build does not know");
                cli.send(ToCli::error(&request_id, "AskBridge does not support this request"));
            }
        }
        Ok(())
    }

    async fn on_permission_request(
        &mut self,
        cli: &mut CliProcess,
        request_id: String,
        ask: CanUseTool,
    ) -> Result<(), AgentError> {
        let tool_use_id = ask.tool_use_id.clone().unwrap_or_else(|| request_id.clone());
        if self.preapproved.iter().any(|(tool, input)| *tool == ask.tool_name && *input == ask.input) {
            // Decided after a restart, and said to the agent in words: not asked again.
            info!(session = %self.request.session_id, tool = ask.tool_name, "allowed as decided before the restart");
            self.preapproved.retain(|(tool, input)| !(*tool == ask.tool_name && *input == ask.input));
            cli.send(ToCli::success(&request_id, allow(ask.input)));
            return Ok(());
        }
        if ask.agent_id.is_some() {
            // A subagent's call: the thread may not have seen it yet.
            self.thread.show_subagent_call(&tool_use_id, &ask.tool_name, ask.input.clone()).await?;
        }
        let asked_by = ask.agent_id.as_ref().map(|agent| {
            self.tasks.get(agent).filter(|d| !d.is_empty()).cloned().unwrap_or_else(|| "a subagent".into())
        });
        self.waiting.approve(request_id, tool_use_id, ask, asked_by);
        Ok(())
    }

    /// The CLI withdrew a request (or the turn was stopped): its card says so.
    async fn on_cancel(&mut self, request_id: &str, interrupted: bool) {
        if let Some(asking) = self.waiting.asking.get(request_id) {
            let reason = if interrupted { "the turn was stopped" } else { "Claude Code withdrew the question" };
            self.sink.withdraw(&asking.tool_use_id, reason).await;
        }
    }

    /// The end of a turn of the CLI's.
    async fn on_result(&mut self, result: &ResultMessage, stopping_by: Option<Instant>) -> Result<Flow, AgentError> {
        if let Some(by) = stopping_by {
            self.thread.finish_current().await?;
            return Ok(Flow::Ended(Ended::Interrupted { by }));
        }
        if result.deferred() {
            self.thread.finish_current().await?;
            let stop = self.waiting.parked_a_permission_request();
            return Ok(Flow::Ended(Ended::Parked { stop }));
        }
        if result.is_error {
            self.thread.finish_current().await?;
            let detail = result.result.clone().filter(|r| !r.is_empty()).unwrap_or(result.subtype.clone());
            return Ok(Flow::Ended(Ended::Failed(format!("Claude Code ended the turn with an error: {detail}"))));
        }
        let usage = usage(result, self.thread.context_tokens());
        // Subagents still at work (or asking) go on after the main turn's result (§13):
        // the turn stays open until they are done and the CLI's own turn after them ends,
        // which the CLI says by going idle.
        if self.reports_state || !self.tasks.is_empty() || !self.waiting.asking.is_empty() {
            self.result_seen = Some(usage);
            return Ok(Flow::Continue);
        }
        self.finish(Some(usage)).await
    }

    /// A waiting request's answer, as its task sends it back: the CLI hears it.
    fn on_answer(&mut self, cli: &mut CliProcess, request_id: String, answer: Answer) -> Flow {
        let Some(asking) = self.waiting.asking.remove(&request_id) else { return Flow::Continue };
        match answer {
            Answer::Reply { reply, answers } => {
                // Kept before the CLI hears the answer, so before it can echo the result.
                if let Some(answers) = answers {
                    self.hook_answers.keep(&asking.tool_use_id, answers);
                }
                cli.send(ToCli::success(&request_id, reply));
            }
            Answer::Parked => {
                if asking.hook {
                    cli.send(ToCli::success(&request_id, hook_defer()));
                }
                self.waiting.parked.insert(request_id, asking);
            }
            Answer::Nothing => {}
            Answer::Unstored(error) => self.unstored(cli, &request_id, &asking, &error),
        }
        // Everything waits parked, and a permission request cannot be deferred: the
        // CLI would wait for ever, so the turn ends here and the CLI is stopped.
        if self.waiting.asking.is_empty() && self.waiting.parked_a_permission_request() {
            return Flow::Ended(Ended::Parked { stop: true });
        }
        Flow::Continue
    }

    /// A request that could not be stored: the CLI gets an answer that says so (never an
    /// answer of the person's); once it has taken it, the turn ends with the reason (the CLI is
    /// interrupted then, not before: an interrupt would replace the answer with its own words).
    fn unstored(&mut self, cli: &mut CliProcess, request_id: &str, asking: &Asking, error: &str) {
        warn!(session = %self.request.session_id, tool_use_id = %asking.tool_use_id, %error, "a request could not be stored");
        let (what, consequence) = if asking.question {
            ("question", "There is no answer: do not assume one.")
        } else {
            ("permission request", "The tool was not run.")
        };
        let told = format!(
            "AskBridge could not store this {what}, so the user never saw it ({error}). {consequence} \
             The turn ends here."
        );
        let reply: Reply = if asking.hook { hook_deny(&told).into() } else { deny(&told).into() };
        cli.send(ToCli::success(request_id, reply));
        let reason = format!(
            "The agent's {what} could not be stored, so it was never shown ({error}). The agent was told so, \
             and the turn was stopped."
        );
        if self.unstored.is_none() {
            self.unstored = Some(Unstored { tool_use_id: asking.tool_use_id.clone(), reason, since: Instant::now() });
        }
    }

    /// Ends the turn as completed, with the last message finished.
    async fn finish(&mut self, usage: Option<Usage>) -> Result<Flow, AgentError> {
        self.thread.finish_current().await?;
        Ok(Flow::Completed(usage))
    }
}

/// Asks the CLI to stop its turn.
fn interrupt(cli: &mut CliProcess) {
    let request_id = cli.request_id();
    cli.send(ToCli::ControlRequest { request_id, request: HostRequest::Interrupt });
}

/// The turn's figures, from its `result` and the conversation's size at its last request.
fn usage(result: &ResultMessage, context_tokens: Option<u64>) -> Usage {
    Usage {
        input_tokens: result.usage.as_ref().and_then(|u| u.input_tokens),
        output_tokens: result.usage.as_ref().and_then(|u| u.output_tokens),
        cost_usd: result.total_cost_usd,
        duration_ms: result.duration_ms,
        cache_read_tokens: result.usage.as_ref().and_then(|u| u.cache_read_input_tokens),
        cache_write_tokens: result.usage.as_ref().and_then(|u| u.cache_creation_input_tokens),
        context_tokens,
        context_window: result.model_usage.values().filter_map(|m| m.context_window).max(),
    }
}

/// Whether `message` says the CLI has taken its answer to `tool_use_id`'s request: the tool's
/// result, or the end of the turn.
fn took_answer(message: &FromCli, tool_use_id: &str) -> bool {
    match message {
        FromCli::Result(_) => true,
        FromCli::User(echo) => echo
            .tool_results()
            .iter()
            .any(|block| matches!(block, ContentBlock::ToolResult { tool_use_id: id, .. } if id == tool_use_id)),
        _ => false,
    }
}

/// What the thread says when the conversation was compacted: by whom, and from how many tokens
/// of context to how many.
fn compacted(metadata: Option<&CompactMetadata>) -> String {
    let who = match metadata.and_then(|m| m.trigger.as_deref()) {
        Some("auto") => "Claude Code compacted the conversation to free up context",
        _ => "The conversation was compacted (/compact)",
    };
    match metadata.and_then(|m| m.pre_tokens.zip(m.post_tokens)) {
        Some((before, after)) => format!(
            "{who}: {} → {} tokens of context.",
            crate::thread::thousands(before),
            crate::thread::thousands(after)
        ),
        None => format!("{who}."),
    }
}

/// "Claude Code 2.1.332 · claude-opus-5-5 · default mode · /home/me/project"
fn describe(system: &Init) -> String {
    let mut parts = vec![format!("Claude Code {}", system.claude_code_version.as_deref().unwrap_or("?"))];
    parts.extend(system.model.clone());
    parts.extend(system.permission_mode.as_ref().map(|m| format!("{m} mode")));
    parts.extend(system.cwd.clone());
    parts.join(" · ")
}

/// A permission mode the CLI reports, if this build knows it (a newer CLI may have more).
fn known_mode(name: Option<&str>) -> Option<PermissionMode> {
    let name = name?;
    name.parse().map_err(|_| warn!(mode = name, "Claude Code reports a permission mode this build does not know")).ok()
}
