//! One turn of the Claude Code CLI: what it streams becomes the thread, each question and
//! permission request waits for the person in a task of its own, and the turn ends at a `result`
//! — or later, while a background subagent still works or asks (protocol §13), or earlier, when
//! everything that waits was parked (§12).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::config::AnswerPath;
use super::process::{CliProcess, Output};
use super::protocol::{
    self, ApiEvent, CliRequest, ContentBlock, Delta, FromCli, HostRequest, ToCli, allow, deny, hook_defer, hook_deny,
};
use super::reply::{Answer, HookAnswers, approval_reply, question_answer};
use crate::agent::{AgentError, Sink, TurnRequest};
use crate::approval::{Approval, PermissionMode, Shows};
use crate::question::{Question, is_question_tool};
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
        by: tokio::time::Instant,
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

/// A request's answer, as its task sends it back to the turn: (request id, answer).
type Replied = (String, Answer);

/// A question tool's call as the CLI streams it: the tool, its arguments so far, and the
/// questions its card shows of them.
#[derive(Default)]
struct QuestionWritten {
    tool: String,
    json: String,
    shown: Vec<Question>,
}

/// A request of the CLI's that waits for the person.
struct Asking {
    tool_use_id: String,
    /// Through the PreToolUse hook (which can defer) or `can_use_tool` (which cannot).
    hook: bool,
    /// A question, or else a permission request.
    question: bool,
}

/// One turn's bookkeeping: which API message is which of our messages, which tool calls exist.
pub(super) struct Turn<'a> {
    sink: Sink,
    request: &'a TurnRequest,
    announced: &'a mut Option<(String, Option<String>)>,
    /// Calls decided after a restart, in words: their identical retry is allowed without a card.
    preapproved: &'a mut Vec<(String, Value)>,
    /// API message id → our message id.
    messages: HashMap<String, String>,
    current: Option<String>,
    /// API message ids whose text arrived as deltas.
    streamed_text: HashSet<String>,
    /// (API message id, block index) → tool_use id, for argument deltas.
    block_tools: HashMap<(String, usize), String>,
    started_tools: HashSet<String>,
    ready_tools: HashSet<String>,
    /// Question tools being written, by tool_use id.
    questions_written: HashMap<String, QuestionWritten>,
    /// The CLI's pending requests, by its request id.
    asking: HashMap<String, Asking>,
    /// Requests parked, by request id: hooks deferred, or permission requests left unanswered.
    parked: HashMap<String, Asking>,
    /// Answers the hook delivered, until their tool results come.
    hook_answers: HookAnswers,
    /// Background tasks (subagents) at work, and what each was asked to do.
    tasks: HashMap<String, String>,
    /// A `result` came, and the turn waits for the CLI to be idle (or, for a CLI that does not
    /// say, for its subagents to be done).
    result_seen: Option<Usage>,
    /// The conversation's size at the main agent's last request (how full the context is).
    context_tokens: Option<u64>,
    /// The CLI reports its state (`session_state_changed`): it says when it is idle.
    reports_state: bool,
    stream_message: Option<String>,
    /// Requests wait for the person in tasks of their own (so that the CLI's other messages keep
    /// flowing meanwhile); their answers come back here.
    replies: (mpsc::UnboundedSender<Replied>, mpsc::UnboundedReceiver<Replied>),
    /// Ends the waiting tasks with the turn.
    waits_end: CancellationToken,
    /// A request that could not be stored, answered so: (its tool_use id, why the turn ends,
    /// since when). The turn ends once the CLI has applied that answer.
    unstored: Option<(String, String, tokio::time::Instant)>,
}

impl<'a> Turn<'a> {
    pub(super) fn new(
        sink: Sink,
        request: &'a TurnRequest,
        announced: &'a mut Option<(String, Option<String>)>,
        preapproved: &'a mut Vec<(String, Value)>,
    ) -> Self {
        Self {
            sink,
            request,
            announced,
            preapproved,
            messages: HashMap::new(),
            current: None,
            streamed_text: HashSet::new(),
            block_tools: HashMap::new(),
            started_tools: HashSet::new(),
            ready_tools: HashSet::new(),
            questions_written: HashMap::new(),
            asking: HashMap::new(),
            parked: HashMap::new(),
            hook_answers: HookAnswers::default(),
            tasks: HashMap::new(),
            result_seen: None,
            context_tokens: None,
            reports_state: false,
            stream_message: None,
            replies: mpsc::unbounded_channel(),
            waits_end: request.cancel.child_token(),
            unstored: None,
        }
    }

    pub(super) async fn run(mut self, cli: &mut CliProcess) -> Result<Option<Usage>, Ended> {
        let cancel = self.request.cancel.clone();
        let _end_waits = self.waits_end.clone().drop_guard();
        let mut interrupted_at: Option<tokio::time::Instant> = None;
        loop {
            let deadline = interrupted_at.map(|at| at + STOP_GRACE);
            let unstored_deadline = self.unstored.as_ref().map(|(_, _, since)| *since + STOP_GRACE);
            // A CLI that does not say when it is idle: after the main turn's result, once subagents
            // are done, a short wait for the turn the CLI may start by itself.
            let settled =
                !self.reports_state && self.result_seen.is_some() && self.asking.is_empty() && self.tasks.is_empty();
            tokio::select! {
                output = cli.output.recv() => {
                    let message = match output {
                        Some(Output::Message(message)) => message,
                        Some(Output::Closed) | None => return Err(Ended::Exited("Claude Code exited during the turn")),
                    };
                    if let Some((tool_use_id, reason, _)) = &self.unstored
                        && took_answer(&message, tool_use_id)
                    {
                        // The CLI has taken the answer (or ended its turn): the turn ends here.
                        let request_id = cli.request_id();
                        cli.send(ToCli::ControlRequest { request_id, request: HostRequest::Interrupt });
                        return Err(Ended::Unstored(reason.clone()));
                    }
                    match self.handle(message, cli, deadline).await {
                        Ok(Some(result)) => return result,
                        Ok(None) => {}
                        // The store fails: what ends the turn is the request it could not keep.
                        Err(Ended::Sink(_)) if let Some((_, reason, _)) = &self.unstored => {
                            return Err(Ended::Unstored(reason.clone()));
                        }
                        Err(ended) => return Err(ended),
                    }
                }
                Some((request_id, answer)) = self.replies.1.recv() => {
                    let Some(asking) = self.asking.remove(&request_id) else { continue };
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
                            self.parked.insert(request_id, asking);
                        }
                        Answer::Nothing => {}
                        Answer::Unstored(error) => self.unstored(cli, &request_id, &asking, &error),
                    }
                    // Everything waits parked, and a permission request cannot be deferred: the
                    // CLI would wait for ever, so the turn ends here and the CLI is stopped.
                    if self.asking.is_empty() && self.parked.values().any(|a| !a.hook) {
                        return Err(Ended::Parked { stop: true });
                    }
                }
                () = cancel.cancelled(), if interrupted_at.is_none() => {
                    info!(session = %self.request.session_id, "interrupting Claude Code");
                    let request_id = cli.request_id();
                    cli.send(ToCli::ControlRequest { request_id, request: HostRequest::Interrupt });
                    interrupted_at = Some(tokio::time::Instant::now());
                }
                () = async { tokio::time::sleep_until(deadline.expect("guarded")).await }, if deadline.is_some() => {
                    return Err(Ended::Unresponsive);
                }
                () = async { tokio::time::sleep_until(unstored_deadline.expect("guarded")).await }, if unstored_deadline.is_some() => {
                    let (_, reason, _) = self.unstored.take().expect("guarded");
                    return Err(Ended::Unstored(reason));
                }
                () = tokio::time::sleep(SETTLE), if settled => {
                    return self.finish(self.result_seen.clone()).await;
                }
            }
        }
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
        let reply = if asking.hook { hook_deny(&told) } else { deny(&told) };
        cli.send(ToCli::success(request_id, reply));
        let reason = format!(
            "The agent's {what} could not be stored, so it was never shown ({error}). The agent was told so, \
             and the turn was stopped."
        );
        if self.unstored.is_none() {
            self.unstored = Some((asking.tool_use_id.clone(), reason, tokio::time::Instant::now()));
        }
    }

    /// Ends the turn as completed, with the last message finished.
    async fn finish(&mut self, usage: Option<Usage>) -> Result<Option<Usage>, Ended> {
        if let Some(message) = self.current.take() {
            self.sink.finish_message(&message).await?;
        }
        Ok(usage)
    }

    /// Handles one message; `Some` ends the turn.
    async fn handle(
        &mut self,
        message: FromCli,
        cli: &mut CliProcess,
        stopping_by: Option<tokio::time::Instant>,
    ) -> Result<Option<Result<Option<Usage>, Ended>>, Ended> {
        let interrupted = stopping_by.is_some();
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
                if system.compact_result.as_deref() == Some("failed") {
                    let why = system.compact_error.as_deref().unwrap_or("Claude Code did not say why");
                    sink.notice(&format!("The conversation was not compacted: {why}")).await?;
                }
            }
            FromCli::System(system) if system.subtype == "compact_boundary" => {
                sink.notice(&compacted(system.compact_metadata.as_ref())).await?;
            }
            FromCli::ConversationReset { trigger } => {
                let by = trigger.map(|t| format!(" (/{t})")).unwrap_or_default();
                sink.notice(&format!(
                    "The context was cleared{by}: the agent starts a new conversation and no longer sees \
                     what came before, which stays here."
                ))
                .await?;
            }
            // Idle comes after the last `result`: the main turn's, or that of the turn the CLI
            // starts by itself once its background subagents are done (§13); never in between.
            FromCli::System(system) if system.subtype == "session_state_changed" => {
                self.reports_state = true;
                if system.state.as_deref() == Some("idle") && self.result_seen.is_some() && self.asking.is_empty() {
                    let usage = self.result_seen.clone();
                    return Ok(Some(self.finish(usage).await));
                }
            }
            FromCli::System(system) if system.subtype == "task_started" => {
                if let Some(task) = system.task_id {
                    self.tasks.insert(task, system.description.unwrap_or_default());
                }
            }
            FromCli::System(system) if system.subtype == "task_notification" => {
                // Any status it reports here (completed, failed, stopped) ends the task.
                if let Some(task) = system.task_id {
                    self.tasks.remove(&task);
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
                    if is_question_tool(&name) {
                        self.questions_written.insert(id.clone(), QuestionWritten { tool: name, ..Default::default() });
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
                                // The card fills in as the model writes, options included.
                                if let Some(written) = self.questions_written.get_mut(tool) {
                                    written.json.push_str(&partial_json);
                                    sink.question_preview(tool, &written.tool, &written.json, &mut written.shown)
                                        .await?;
                                }
                            }
                        }
                        Delta::Other => {}
                    }
                }
                _ => {}
            },
            FromCli::Assistant(assistant) if assistant.parent_tool_use_id.is_none() => {
                if let Some(usage) = &assistant.message.usage {
                    self.context_tokens = Some(usage.context_tokens());
                }
                let ours = self.ensure_message(&assistant.message.id).await?;
                for block in assistant.message.content {
                    match block {
                        ContentBlock::Text { text } if !self.streamed_text.contains(&assistant.message.id) => {
                            sink.text(&ours, &text).await?;
                        }
                        ContentBlock::ToolUse { id, name, input } => {
                            self.show_tool_call(&ours, &id, &name, input).await?
                        }
                        _ => {}
                    }
                }
            }
            // A subagent's own tool calls are shown once they ask something (below); their
            // results then land on those cards.
            // What a local command printed (`/context`, `/usage`); `/compact`'s "Compacted" is said
            // by its boundary, with the figures.
            FromCli::User(echo) if echo.local_command_output().is_some() => {
                let output = echo.local_command_output().unwrap_or_default();
                if !output.is_empty() && output != "Compacted" {
                    sink.notice(output).await?;
                }
            }
            FromCli::User(echo) => {
                let subagent = echo.parent_tool_use_id.is_some();
                for block in echo.tool_results() {
                    let ContentBlock::ToolResult { tool_use_id, content, is_error } = block else { continue };
                    if subagent && !self.started_tools.contains(&tool_use_id) {
                        continue;
                    }
                    let text = self.hook_answers.result_text(&tool_use_id, ContentBlock::result_text(&content));
                    sink.tool_result(&tool_use_id, &text, is_error.unwrap_or(false)).await?;
                }
            }
            FromCli::ControlRequest { request_id, request } => match request {
                CliRequest::CanUseTool(ask) if is_question_tool(&ask.tool_name) => {
                    let tool_use_id = ask.tool_use_id.clone().unwrap_or_else(|| request_id.clone());
                    self.ask(request_id, tool_use_id, ask.tool_name, ask.input, false);
                }
                CliRequest::CanUseTool(ask) => {
                    let tool_use_id = ask.tool_use_id.clone().unwrap_or_else(|| request_id.clone());
                    if self.preapproved.iter().any(|(tool, input)| *tool == ask.tool_name && *input == ask.input) {
                        // Decided after a restart, and said to the agent in words: not asked again.
                        info!(session = %self.request.session_id, tool = ask.tool_name, "allowed as decided before the restart");
                        self.preapproved.retain(|(tool, input)| !(*tool == ask.tool_name && *input == ask.input));
                        cli.send(ToCli::success(&request_id, allow(ask.input)));
                    } else {
                        if ask.agent_id.is_some() && !self.started_tools.contains(&tool_use_id) {
                            // A subagent's call: the thread has not seen it yet.
                            let ours = self.current_or_new_message().await?;
                            self.show_tool_call(&ours, &tool_use_id, &ask.tool_name, ask.input.clone()).await?;
                        }
                        let asked_by = ask.agent_id.as_ref().map(|agent| {
                            self.tasks
                                .get(agent)
                                .filter(|d| !d.is_empty())
                                .cloned()
                                .unwrap_or_else(|| "a subagent".into())
                        });
                        self.approve(request_id, tool_use_id, ask, asked_by);
                    }
                }
                CliRequest::HookCallback(hook) if hook.tool_name().is_some_and(is_question_tool) => {
                    let tool = hook.tool_name().unwrap_or_default().to_string();
                    let tool_use_id = hook.tool_use_id.clone().unwrap_or_else(|| request_id.clone());
                    self.ask(request_id, tool_use_id, tool, hook.tool_input(), true);
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
                if let Some(asking) = self.asking.get(&request_id) {
                    let reason = if interrupted { "the turn was stopped" } else { "Claude Code withdrew the question" };
                    sink.withdraw(&asking.tool_use_id, reason).await;
                }
            }
            FromCli::Result(result) => {
                if let Some(by) = stopping_by {
                    if let Some(message) = self.current.take() {
                        sink.finish_message(&message).await?;
                    }
                    return Ok(Some(Err(Ended::Interrupted { by })));
                }
                if result.deferred() {
                    if let Some(message) = self.current.take() {
                        sink.finish_message(&message).await?;
                    }
                    let stop = self.parked.values().any(|a| !a.hook);
                    return Ok(Some(Err(Ended::Parked { stop })));
                }
                if result.is_error {
                    if let Some(message) = self.current.take() {
                        sink.finish_message(&message).await?;
                    }
                    let detail = result.result.clone().filter(|r| !r.is_empty()).unwrap_or(result.subtype.clone());
                    return Ok(Some(Err(Ended::Failed(format!("Claude Code ended the turn with an error: {detail}")))));
                }
                let usage = Usage {
                    input_tokens: result.usage.as_ref().and_then(|u| u.input_tokens),
                    output_tokens: result.usage.as_ref().and_then(|u| u.output_tokens),
                    cost_usd: result.total_cost_usd,
                    duration_ms: result.duration_ms,
                    cache_read_tokens: result.usage.as_ref().and_then(|u| u.cache_read_input_tokens),
                    cache_write_tokens: result.usage.as_ref().and_then(|u| u.cache_creation_input_tokens),
                    context_tokens: self.context_tokens,
                    context_window: result.model_usage.values().filter_map(|m| m.context_window).max(),
                };
                // Subagents still at work (or asking) go on after the main turn's result (§13):
                // the turn stays open until they are done and the CLI's own turn after them ends,
                // which the CLI says by going idle.
                if self.reports_state || !self.tasks.is_empty() || !self.asking.is_empty() {
                    self.result_seen = Some(usage);
                    return Ok(None);
                }
                return Ok(Some(self.finish(Some(usage)).await));
            }
            // Acknowledgements of our own requests, subagents' messages, state notices.
            _ => {}
        }
        Ok(None)
    }

    /// A tool call of the model's, shown once with its arguments.
    async fn show_tool_call(&mut self, message: &str, id: &str, name: &str, input: Value) -> Result<(), AgentError> {
        if self.started_tools.insert(id.to_string()) {
            self.sink.tool_call_started(message, id, name).await?;
        }
        if self.ready_tools.insert(id.to_string()) {
            self.questions_written.remove(id);
            self.sink.tool_call_ready(id, input).await?;
        }
        Ok(())
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

    /// The message being written, or a new one (a subagent asks after the main reply ended).
    async fn current_or_new_message(&mut self) -> Result<String, AgentError> {
        match &self.current {
            Some(current) => Ok(current.clone()),
            None => {
                let ours = self.sink.start_message().await?;
                self.current = Some(ours.clone());
                Ok(ours)
            }
        }
    }

    /// Asks the person's permission, in a task of its own; the answer comes back on `replies`.
    fn approve(
        &mut self,
        request_id: String,
        tool_use_id: String,
        ask: protocol::CanUseTool,
        asked_by: Option<String>,
    ) {
        self.asking
            .insert(request_id.clone(), Asking { tool_use_id: tool_use_id.clone(), hook: false, question: false });
        let approval = Approval {
            description: ask
                .description
                .clone()
                .or_else(|| ask.input.get("description").and_then(Value::as_str).map(str::to_string)),
            reason: ask.decision_reason.clone(),
            blocked_path: ask.blocked_path.clone(),
            asked_by,
            ..Approval::new(&ask.tool_name, ask.input.clone())
        }
        .with_suggestions(&ask.permission_suggestions);
        let sink = self.sink.clone();
        let replies = self.replies.0.clone();
        let cancel = self.waits_end.child_token();
        tokio::spawn(async move {
            let mut approval = approval;
            if approval.is_plan() && !matches!(approval.shows, Shows::Plan { .. }) {
                let written = sink.tool_input(&tool_use_id).await;
                if let Some(plan) = plan_text(&approval.input, written.as_ref()).await {
                    approval.shows = Shows::Plan { markdown: plan };
                }
            }
            // Parkable: a permission request cannot be deferred, but its card can outlive the CLI
            // and the decision reach the resumed agent in words.
            let answer = match sink.ask_approval(&tool_use_id, approval.clone(), true, &cancel).await {
                Ok(outcome) => approval_reply(&outcome, &approval)
                    .map_or(Answer::Nothing, |reply| Answer::Reply { reply, answers: None }),
                Err(AgentError::Parked) => Answer::Parked,
                Err(AgentError::Failed(error)) => Answer::Unstored(error),
                Err(_) => Answer::Nothing,
            };
            let _ = replies.send((request_id, answer));
        });
    }

    /// Puts a question to the person, in a task of its own; the reply for the CLI comes back on
    /// `replies`. Through the hook (`hook`) a question can be parked: the call is deferred.
    fn ask(&mut self, request_id: String, tool_use_id: String, tool: String, input: Value, hook: bool) {
        self.asking.insert(request_id.clone(), Asking { tool_use_id: tool_use_id.clone(), hook, question: true });
        let sink = self.sink.clone();
        let replies = self.replies.0.clone();
        // Stop ends the wait; the turn's end cancels the card.
        let cancel = self.waits_end.child_token();
        let path = if hook { AnswerPath::Hook } else { AnswerPath::CanUseTool };
        tokio::spawn(async move {
            let answer = match sink.ask(&tool_use_id, &tool, &input, hook, &cancel).await {
                Ok(outcome) => question_answer(outcome, &input, path),
                Err(AgentError::Parked) => Answer::Parked,
                Err(AgentError::Failed(error)) => Answer::Unstored(error),
                Err(_) => Answer::Nothing,
            };
            let _ = replies.send((request_id, answer));
        });
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
fn compacted(metadata: Option<&protocol::CompactMetadata>) -> String {
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
fn describe(system: &protocol::SystemMessage) -> String {
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

/// The plan an `ExitPlanMode` request is about. Claude Code fills in `plan` from its plan file
/// and drops what the model wrote when there is none, so look in the request, then in the plan
/// file it names (only inside Claude Code's plans folder: `plan_file`), then in what the model
/// wrote.
async fn plan_text(input: &Value, written: Option<&Value>) -> Option<String> {
    let text = |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    if let Some(plan) = text(input, "plan") {
        return Some(plan);
    }
    if let (Some(path), Some(plans)) = (text(input, "planFilePath"), super::plan_file::plans_dir())
        && let Some(plan) = super::plan_file::read_plan(&path, &plans).await
    {
        return Some(plan);
    }
    written.and_then(|written| text(written, "plan"))
}
