//! The scripted agent: plays a [`Scenario`] at a person's reading pace, with no network at all.
//! It is the default on a fresh machine and what the tests drive.
//!
//! For questions it records exactly what it received as the question tool's result (the
//! outcome as JSON), and `{{answer}}` in later text quotes it back.
//!
//! Tool steps with `approve = true` ask the person's permission the way Claude Code does, and
//! follow the session's permission mode: `bypassPermissions` asks for nothing (questions still
//! ask), `acceptEdits` lets file edits through, and an "always allow" rule chosen on a card
//! holds for the rest of the session. A denied tool ends the turn, as the agent is told to stop.

mod scenario;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use scenario::{Permission, Scenario, ScenarioError, Step, Turn};

use super::{AgentBackend, AgentError, Sink, TurnRequest, TurnSink};
use crate::approval::{Approval, PermissionMode};
use crate::interaction::InteractionOutcome;
use crate::question::is_question_tool;
use crate::thread::Usage;

/// Tools that only change files: what `acceptEdits` lets through.
const EDIT_TOOLS: &[&str] = &["Edit", "MultiEdit", "Write", "NotebookEdit"];

/// An "always allow" rule: a tool, and the exact command or path if the rule names one.
type Rule = (String, Option<String>);

pub struct ScriptedAgent {
    scenario: Scenario,
    /// The "always allow" rules chosen, per session.
    rules: Mutex<HashMap<String, Vec<Rule>>>,
    /// Where sessions that choose no folder work (`--workdir`), if anywhere.
    workdir: Option<std::path::PathBuf>,
}

impl ScriptedAgent {
    pub fn new(scenario: Scenario) -> Self {
        Self { scenario, rules: Mutex::default(), workdir: None }
    }

    /// Sessions that choose no folder work in `workdir`; the new-session page offers it.
    pub fn in_folder(mut self, workdir: Option<std::path::PathBuf>) -> Self {
        self.workdir = workdir;
        self
    }

    /// Whether the tool runs without asking: by the session's mode or a rule chosen before.
    async fn allowed_without_asking(&self, session: &str, tool: &str, input: &Value, sink: &dyn TurnSink) -> bool {
        if tool != "ExitPlanMode" {
            match sink.current_permission_mode().await {
                Some(PermissionMode::BypassPermissions) => return true,
                Some(PermissionMode::AcceptEdits) if EDIT_TOOLS.contains(&tool) => return true,
                _ => {}
            }
        }
        let content = rule_content(tool, input);
        let rules = self.rules.lock().expect("rules lock");
        rules
            .get(session)
            .is_some_and(|rules| rules.iter().any(|(name, rule)| name == tool && (rule.is_none() || *rule == content)))
    }

    /// Applies the "always allow" suggestion the person chose.
    async fn remember(&self, session: &str, suggestion: &Value, sink: &dyn TurnSink) -> Result<(), AgentError> {
        let text = |key: &str| suggestion.get(key).and_then(Value::as_str);
        match text("type") {
            Some("addRules" | "replaceRules") if text("behavior").unwrap_or("allow") == "allow" => {
                let rules = suggestion.get("rules").and_then(Value::as_array).cloned().unwrap_or_default();
                let mut known = self.rules.lock().expect("rules lock");
                let known = known.entry(session.to_string()).or_default();
                for rule in rules {
                    if let Some(tool) = rule.get("toolName").and_then(Value::as_str) {
                        let content = rule.get("ruleContent").and_then(Value::as_str).map(str::to_string);
                        known.push((tool.to_string(), content));
                    }
                }
                Ok(())
            }
            Some("setMode") => match text("mode").and_then(|mode| mode.parse().ok()) {
                Some(mode) => sink.permission_mode(mode).await,
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }

    /// Asks to run a tool step; `Ok(None)` when it may run, else what the agent is told instead.
    async fn ask_permission(
        &self,
        request: &TurnRequest,
        sink: &dyn TurnSink,
        tool_use_id: &str,
        (tool, input, permission): (&str, &Value, &Permission),
    ) -> Result<Option<(String, String)>, AgentError> {
        if self.allowed_without_asking(&request.session_id, tool, input, sink).await {
            return Ok(None);
        }
        let suggestions = if permission.suggestions.is_empty() {
            usual_suggestions(tool, input)
        } else {
            permission.suggestions.clone()
        };
        let approval = Approval { reason: permission.reason.clone(), ..Approval::new(tool, input.clone()) }
            .with_suggestions(&suggestions);
        let plan = approval.is_plan();
        // As offered on the card (a plan's "accept every edit" is added there).
        let offered: Vec<Value> = approval.suggestions.iter().map(|s| s.value.clone()).collect();
        let outcome = sink.ask_approval(tool_use_id, approval, true, &request.cancel).await?;
        let refusal = match outcome {
            InteractionOutcome::Allowed { always } => {
                if let Some(suggestion) = always.and_then(|index| offered.get(index)) {
                    self.remember(&request.session_id, suggestion, sink).await?;
                }
                if plan && sink.current_permission_mode().await == Some(PermissionMode::Plan) {
                    sink.permission_mode(PermissionMode::Default).await?;
                }
                return Ok(None);
            }
            InteractionOutcome::Denied { message } => {
                let said = message.map(|m| format!(" You said: “{m}”")).unwrap_or_default();
                let reply = if plan {
                    format!("All right, I will keep planning.{said}")
                } else {
                    format!("All right, I did not run {tool}, and I stopped there.{said}")
                };
                ("The user denied this.".to_string(), reply)
            }
            InteractionOutcome::Expired => (
                crate::approval::EXPIRED_MESSAGE.to_string(),
                format!("Nobody answered in time, so I did not run {tool}."),
            ),
            InteractionOutcome::Cancelled { .. } => return Err(AgentError::Interrupted),
            other => {
                (format!("Not allowed: {}.", other.why_closed()), format!("I could not get permission to run {tool}."))
            }
        };
        Ok(Some(refusal))
    }

    async fn play(&self, request: &TurnRequest, sink: &dyn TurnSink) -> Result<Option<Usage>, AgentError> {
        let started = std::time::Instant::now();
        let cancel = &request.cancel;
        let word_pause = Duration::from_secs_f64(1.0 / self.scenario.pace);
        let no_reply =
            [Step::Say { text: "This scenario has no reply for that message (it has no turn without `when`).".into() }];
        // A resumed turn goes on from the step it was parked at, for the message it answers; a
        // turn after one whose question was cut short asks that question again.
        let place = if request.resume { resume_point(&request.history) } else { cut_short_point(&request.history) };
        let answered_before = place.as_ref().and_then(|place| place.last_answer.clone());
        let message = place.as_ref().map_or(request.text.as_str(), |place| place.message.as_str());
        let steps = self.scenario.turn_for(message).map_or(&no_reply[..], |turn| &turn.steps);
        let (first_step, mut parked_call) = match &place {
            Some(place) => place.first_step(steps)?,
            None => (0, None),
        };

        let message_id = sink.start_message().await?;
        let mut words = 0u64;
        let mut last_answer = answered_before.unwrap_or_else(|| "nothing: nobody was asked".to_string());
        // Streams text word by word, as a new paragraph after what came before.
        let say = async |text: &str, words: &mut u64| -> Result<(), AgentError> {
            let mut first = *words > 0;
            for word in split_words(text) {
                wait(word_pause, cancel).await?;
                if first {
                    sink.text(&message_id, "\n\n").await?;
                    first = false;
                }
                sink.text(&message_id, word).await?;
                *words += 1;
            }
            Ok(())
        };
        for step in &steps[first_step..] {
            // The call a resumed turn answers was streamed before the pause.
            let mut call = async |name: &str, input: &Value| match parked_call.take() {
                Some(tool_use_id) => Ok(tool_use_id),
                None => {
                    let pace = Pace { pause: word_pause, chunk: self.scenario.argument_chunk };
                    stream_tool_call(sink, &message_id, name, input, pace, cancel).await
                }
            };
            match step {
                Step::Say { text } => {
                    let text = text.trim().replace("{{message}}", message).replace("{{answer}}", &last_answer);
                    say(&text, &mut words).await?;
                }
                Step::Tool { name, input, output, is_error, duration, permission, writes } => {
                    let tool_use_id = call(name, input).await?;
                    if let Some(permission) = permission
                        && let Some((result, reply)) =
                            self.ask_permission(request, sink, &tool_use_id, (name, input, permission)).await?
                    {
                        sink.tool_result(&tool_use_id, &result, true).await?;
                        say(&reply, &mut words).await?;
                        break;
                    }
                    wait(*duration, cancel).await?;
                    match writes.then(|| write_file(request.workdir.as_deref(), input)) {
                        Some(Err(problem)) => sink.tool_result(&tool_use_id, &problem, true).await?,
                        _ => sink.tool_result(&tool_use_id, output, *is_error).await?,
                    }
                    words = words.max(1);
                }
                Step::Ask { tool, input } => {
                    let tool_use_id = call(tool, input).await?;
                    let outcome = sink.ask(&tool_use_id, tool, input, true, cancel).await?;
                    let record = serde_json::to_string_pretty(&outcome).unwrap_or_default();
                    let refused = !matches!(outcome, InteractionOutcome::Answered { .. });
                    sink.tool_result(&tool_use_id, &record, refused).await?;
                    last_answer = quote(&outcome);
                    words = words.max(1);
                }
                Step::Pause { duration } => wait(*duration, cancel).await?,
            }
        }
        sink.finish_message(&message_id).await?;
        Ok(Some(turn_usage(request, words, started)))
    }
}

/// What a scripted turn used: the person's words in, the agent's words out, and no cost.
fn turn_usage(request: &TurnRequest, words: u64, started: std::time::Instant) -> Usage {
    Usage {
        input_tokens: Some(request.text.split_whitespace().count() as u64),
        output_tokens: Some(words),
        cost_usd: Some(0.0),
        duration_ms: Some(started.elapsed().as_millis() as u64),
        ..Usage::default()
    }
}

impl AgentBackend for ScriptedAgent {
    fn default_workdir(&self) -> Option<std::path::PathBuf> {
        self.workdir.clone()
    }

    fn name(&self) -> &'static str {
        "scripted"
    }

    fn label(&self) -> &'static str {
        "Offline demo"
    }

    fn run_turn(&self, request: TurnRequest, sink: Sink) -> BoxFuture<'_, Result<Option<Usage>, AgentError>> {
        Box::pin(async move { self.play(&request, &*sink).await })
    }

    fn end_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, ()> {
        self.rules.lock().expect("rules lock").remove(session);
        Box::pin(async {})
    }

    fn example_prompts(&self) -> Vec<String> {
        self.scenario.examples.clone()
    }
}

/// Where a parked turn stopped: the message it answers, its `tool_call`-th tool call (the one
/// parked), and what the person answered to the question before it, for `{{answer}}`.
struct ResumePoint {
    message: String,
    tool_call: usize,
    /// The parked call the turn goes on with; `None` when that call has its result already (a
    /// resume cut short after it), and the turn goes on after it.
    tool_use_id: Option<String>,
    last_answer: Option<String>,
    /// The call was cut short while it was written: it is made again, from its step.
    again: bool,
}

impl ResumePoint {
    /// The step among `steps` the resumed turn goes on from, and the parked call it answers when
    /// that call has no result yet.
    fn first_step(&self, steps: &[Step]) -> Result<(usize, Option<String>), AgentError> {
        match (tool_step(steps, self.tool_call), &self.tool_use_id) {
            (Some(step), _) if self.again => Ok((step, None)),
            (Some(step), Some(parked)) => Ok((step, Some(parked.clone()))),
            (Some(step), None) => Ok((step + 1, None)),
            (None, _) => Err(AgentError::Failed("this scenario cannot resume where it paused".into())),
        }
    }
}

/// The question of the last turn, when that turn was cut short while writing it (the server
/// stopped or crashed: its card says so, and the agent was told nothing): the next turn asks it
/// again, from its step of that turn, for that turn's message.
fn cut_short_point(history: &[crate::thread::Message]) -> Option<ResumePoint> {
    use crate::thread::ToolStatus;
    let (message, calls) = calls_since_message(history)?;
    let (cut, before) = calls.split_last()?;
    let cut_short = is_question_tool(&cut.name)
        && cut.input.is_none()
        && cut.interaction.is_none()
        && cut.status == ToolStatus::Cancelled;
    cut_short.then(|| ResumePoint {
        message,
        tool_call: before.len(),
        tool_use_id: None,
        last_answer: last_answer(before),
        again: true,
    })
}

/// The person's last message, and the tool calls of every reply since it, in order.
fn calls_since_message(history: &[crate::thread::Message]) -> Option<(String, Vec<&crate::thread::ToolCall>)> {
    use crate::thread::{Block, Role};
    let asked = history.iter().rposition(|m| m.role == Role::User)?;
    let calls = history[asked + 1..]
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.blocks.iter())
        .filter_map(|block| match block {
            Block::ToolCall(call) => Some(call),
            Block::Text { .. } | Block::Image(_) | Block::File(_) => None,
        })
        .collect();
    Some((history[asked].text(), calls))
}

/// What the person answered to the last question among `calls`, quoted for `{{answer}}`.
fn last_answer(calls: &[&crate::thread::ToolCall]) -> Option<String> {
    calls
        .iter()
        .rev()
        .find_map(|call| call.interaction.as_ref().filter(|i| !i.request.is_approval())?.outcome.as_ref())
        .map(quote)
}

/// Finds the call a parked turn stopped at: the last tool call, since the person's message, that
/// asked the person and got no result yet. Its place among the calls of every reply since that
/// message (a turn resumed twice has two) is its place among the turn's tool steps.
fn resume_point(history: &[crate::thread::Message]) -> Option<ResumePoint> {
    let (message, calls) = calls_since_message(history)?;
    let Some(tool_call) = calls.iter().rposition(|call| call.interaction.is_some() && call.result.is_none()) else {
        // A resume cut short after its call had its result: on from the step after it.
        let done = calls.iter().rposition(|call| call.interaction.is_some())?;
        return Some(ResumePoint {
            message,
            tool_call: done,
            tool_use_id: None,
            last_answer: last_answer(&calls[..=done]),
            again: false,
        });
    };
    let last_answer = last_answer(&calls[..tool_call]);
    Some(ResumePoint { message, tool_call, tool_use_id: Some(calls[tool_call].id.clone()), last_answer, again: false })
}

/// The index of the `n`-th step that makes a tool call (tool and ask steps, in order).
fn tool_step(steps: &[Step], n: usize) -> Option<usize> {
    steps
        .iter()
        .enumerate()
        .filter(|(_, step)| matches!(step, Step::Tool { .. } | Step::Ask { .. }))
        .nth(n)
        .map(|(index, _)| index)
}

/// How a tool call's arguments stream: a pause, then a piece of about `chunk` bytes.
#[derive(Clone, Copy)]
struct Pace {
    pause: Duration,
    chunk: usize,
}

/// Streams a tool call's arguments the way a model writes them, then marks them complete.
async fn stream_tool_call(
    sink: &dyn TurnSink,
    message_id: &str,
    name: &str,
    input: &Value,
    pace: Pace,
    cancel: &CancellationToken,
) -> Result<String, AgentError> {
    let tool_use_id = format!("toolu_scripted_{}", crate::ids::new_id());
    sink.tool_call_started(message_id, &tool_use_id, name).await?;
    // Arguments given as raw text stream as that text.
    let json = match input {
        Value::String(raw) => raw.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    };
    // A question's card fills in as it is written, options included, as with a real agent.
    let (mut written, mut shown) = (String::new(), Vec::new());
    for piece in split_at_char_boundaries(&json, pace.chunk) {
        wait(pace.pause, cancel).await?;
        sink.tool_input_delta(&tool_use_id, piece).await?;
        if is_question_tool(name) {
            written.push_str(piece);
            sink.question_preview(&tool_use_id, name, &written, &mut shown).await?;
        }
    }
    sink.tool_call_ready(&tool_use_id, input.clone()).await?;
    Ok(tool_use_id)
}

/// What the person answered, in words, for `{{answer}}`: `"Which auth?"="JWT"` per question.
fn quote(outcome: &InteractionOutcome) -> String {
    match outcome {
        InteractionOutcome::Answered { answers } => crate::question::words::as_quote(answers),
        InteractionOutcome::Declined { reason: None } => "nothing: you skipped the question".into(),
        InteractionOutcome::Declined { reason: Some(reason) } => {
            format!("nothing: you skipped the question ({reason})")
        }
        InteractionOutcome::Expired => "nothing: nobody answered in time".into(),
        InteractionOutcome::Cancelled { reason } => format!("nothing: the question was cancelled ({reason})"),
        InteractionOutcome::Failed { error } => format!("nothing: my question could not be read ({error})"),
        InteractionOutcome::Lost { .. } => "nothing: the server stopped before you answered".into(),
        InteractionOutcome::Allowed { .. } => "allowed".into(),
        InteractionOutcome::Denied { .. } => "denied".into(),
    }
}

/// What a rule for this call holds: the command, the path or the address.
fn rule_content(tool: &str, input: &Value) -> Option<String> {
    let key = match tool {
        "Bash" => "command",
        "WebFetch" => "url",
        _ => "file_path",
    };
    input.get(key).and_then(Value::as_str).map(str::to_string)
}

/// The "always allow" choices Claude Code offers for a call like this one.
fn usual_suggestions(tool: &str, input: &Value) -> Vec<Value> {
    if tool == "ExitPlanMode" {
        return Vec::new();
    }
    let rule = match rule_content(tool, input) {
        Some(content) => serde_json::json!({"toolName": tool, "ruleContent": content}),
        None => serde_json::json!({"toolName": tool}),
    };
    let mut suggestions =
        vec![serde_json::json!({"type": "addRules", "rules": [rule], "behavior": "allow", "destination": "session"})];
    if EDIT_TOOLS.contains(&tool) {
        suggestions.push(serde_json::json!({"type": "setMode", "mode": "acceptEdits", "destination": "session"}));
    }
    suggestions
}

/// Sleeps, unless the turn is stopped first.
async fn wait(duration: Duration, cancel: &CancellationToken) -> Result<(), AgentError> {
    tokio::select! {
        () = tokio::time::sleep(duration) => Ok(()),
        () = cancel.cancelled() => Err(AgentError::Interrupted),
    }
}

/// Splits text into words, each with the whitespace that follows it, so that joining the pieces
/// gives the text back exactly.
fn split_words(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut in_space = false;
    for (index, c) in text.char_indices() {
        if c.is_whitespace() {
            in_space = true;
        } else if in_space {
            pieces.push(&text[start..index]);
            start = index;
            in_space = false;
        }
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

fn split_at_char_boundaries(text: &str, size: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        pieces.push(&text[start..end]);
        start = end;
    }
    pieces
}

/// Scenarios shared by the crate's tests.
#[cfg(test)]
pub(crate) mod fixtures {
    /// One turn: asks "Which auth?" (JWT or Sessions), then quotes the answer.
    pub const ASKS_WHICH_AUTH: &str = r#"
pace = 1000
[[turn]]
[[turn.step]]
ask = "AskUserQuestion"
input = { questions = [{ question = "Which auth?", header = "Auth", options = [{ label = "JWT", description = "t" }, { label = "Sessions", description = "s" }] }] }
[[turn.step]]
say = "got {{answer}}"
"#;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::InteractionRequest;
    use crate::thread::EventBody;

    #[test]
    fn words_keep_their_whitespace_and_join_back_to_the_text() {
        let text = "Hello,  world!\n\n```rust\nfn main() {}\n```";
        let pieces = split_words(text);
        assert_eq!(pieces[0], "Hello,  ");
        assert_eq!(pieces.concat(), text);
    }

    #[test]
    fn argument_chunks_never_split_a_character() {
        let text = "{\"a\":\"ééééééééééééé→→→\"}";
        let pieces = split_at_char_boundaries(text, 3);
        assert_eq!(pieces.concat(), text);
    }

    /// The shared question, then a command that asks permission.
    fn asks_then_runs() -> Scenario {
        let runs = "[[turn.step]]\ntool = \"Bash\"\ninput = { command = \"rm -rf target\" }\noutput = \"removed\"\n\
                    approve = true\n[[turn.step]]\nsay = \"cleaned\"\n";
        Scenario::parse(&format!("{}{runs}", fixtures::ASKS_WHICH_AUTH), "test").unwrap()
    }

    fn request(text: &str) -> TurnRequest {
        TurnRequest {
            session_id: "s".into(),
            agent: "scripted".into(),
            model: None,
            text: text.into(),
            resume: false,
            history: Vec::new(),
            agent_session: None,
            workdir: None,
            permission_mode: None,
            agent_mode: None,
            agent_host: None,
            cancel: CancellationToken::new(),
            attachments: Default::default(),
        }
    }

    /// The person of a recording sink: answers questions with the first option, decides
    /// approvals as told.
    fn person(allow: bool) -> impl Fn(&InteractionRequest) -> InteractionOutcome + Send + Sync {
        move |request| match request {
            InteractionRequest::Question { questions } => InteractionOutcome::Answered {
                answers: vec![crate::question::QuestionAnswer::new(
                    &questions[0].question,
                    &[&questions[0].options[0].label],
                    None,
                    None,
                )],
            },
            InteractionRequest::Approval(_) if allow => InteractionOutcome::Allowed { always: None },
            _ => InteractionOutcome::Denied { message: Some("not now".into()) },
        }
    }

    #[tokio::test]
    async fn a_turn_asks_through_its_sink_and_uses_what_the_person_said() {
        let agent = ScriptedAgent::new(asks_then_runs());
        let recording = super::super::RecordingSink::new("s", person(true));
        agent.run_turn(request("go"), recording.sink()).await.unwrap();
        let thread = recording.thread();
        let reply = thread.messages[0].text();
        assert!(reply.trim().starts_with("got \"Which auth?\"=\"JWT\""), "{reply}");
        assert!(reply.ends_with("cleaned"), "the allowed command ran: {reply}");
        let kinds: Vec<_> = recording.events().iter().map(EventBody::kind).collect();
        let opened = kinds.iter().filter(|kind| **kind == "interaction_opened").count();
        assert_eq!(opened, 2, "one question, one approval: {kinds:?}");
        assert_eq!(kinds.last(), Some(&"message_finished"));
    }

    #[tokio::test]
    async fn a_question_cut_short_while_written_is_asked_again_by_the_next_turn() {
        use crate::thread::{Block, Message, ToolCall, ToolStatus};
        let scenario = Scenario::parse(
            "pace = 1000\n[[turn]]\nwhen = [\"plan\"]\n[[turn.step]]\nsay = \"First, a question.\"\n\
             [[turn.step]]\nask = \"AskUserQuestion\"\ninput = { questions = [{ question = \"Which auth?\", \
             header = \"Auth\", options = [{ label = \"JWT\", description = \"t\" }, { label = \"Sessions\", \
             description = \"s\" }] }] }\n[[turn.step]]\nsay = \"got {{answer}}\"\n\
             [[turn]]\n[[turn.step]]\nsay = \"no idea\"\n",
            "test",
        )
        .unwrap();
        let agent = ScriptedAgent::new(scenario);
        // The turn of "plan auth" was cut short (a stop) while its question was being written.
        let mut cut = Message {
            id: "a1".into(),
            role: crate::thread::Role::Assistant,
            blocks: vec![Block::Text { text: "First, a question.".into() }],
            streaming: false,
            created_at_ms: 0,
            usage: None,
        };
        cut.blocks.push(Block::ToolCall(ToolCall {
            id: "toolu_cut".into(),
            name: "AskUserQuestion".into(),
            input: None,
            partial_input: "{\"questions\": [{\"question\": \"Which au".into(),
            preview: Vec::new(),
            status: ToolStatus::Cancelled,
            result: None,
            interaction: None,
        }));
        let history = vec![Message::from_person("u1", "plan auth", &[], 0), cut];
        let recording = super::super::RecordingSink::new("s", person(true));
        agent.run_turn(TurnRequest { history, ..request("go on") }, recording.sink()).await.unwrap();
        let reply = recording.thread().messages[0].text();
        assert_eq!(reply.trim(), "got \"Which auth?\"=\"JWT\"", "asked again, and nothing said twice");
        let opened = recording.events().iter().filter(|e| e.kind() == "interaction_opened").count();
        assert_eq!(opened, 1);
    }

    #[tokio::test]
    async fn a_denied_tool_does_not_run_and_ends_the_turn() {
        let agent = ScriptedAgent::new(asks_then_runs());
        let recording = super::super::RecordingSink::new("s", person(false));
        agent.run_turn(request("go"), recording.sink()).await.unwrap();
        let thread = recording.thread();
        let bash = thread.messages[0]
            .blocks
            .iter()
            .find_map(|block| match block {
                crate::thread::Block::ToolCall(call) if call.name == "Bash" => Some(call),
                _ => None,
            })
            .expect("the command was asked for");
        assert_eq!(bash.result.as_deref(), Some("The user denied this."));
        let reply = thread.messages[0].text();
        assert!(reply.contains("I did not run Bash") && reply.contains("“not now”"), "{reply}");
        assert!(!reply.contains("cleaned"), "the turn stops at a denied tool: {reply}");
    }
}

/// A `writes` tool step's effect: its `content` written to its `file_path`, which must be in the
/// session's folder (relative to it, or absolute inside it; no `..`, no link that leads out).
fn write_file(folder: Option<&std::path::Path>, input: &Value) -> Result<(), String> {
    use std::path::{Component, Path};
    let folder = folder.ok_or("this session works in no folder")?;
    let path = input.get("file_path").and_then(Value::as_str).ok_or("the call names no file_path")?;
    let content = input.get("content").and_then(Value::as_str).unwrap_or_default();
    let relative = Path::new(path).strip_prefix(folder).unwrap_or(Path::new(path));
    let outside = || format!("{path} is outside the session's folder");
    if relative.components().any(|part| !matches!(part, Component::Normal(_))) {
        return Err(outside());
    }
    let target = folder.join(relative);
    let parent = target.parent().ok_or_else(outside)?;
    std::fs::create_dir_all(parent).map_err(|error| format!("cannot make the folder of {path}: {error}"))?;
    let (real_folder, real_parent) = (folder.canonicalize(), parent.canonicalize());
    if !matches!((real_folder, real_parent), (Ok(root), Ok(at)) if at.starts_with(&root))
        || target.symlink_metadata().is_ok_and(|meta| meta.file_type().is_symlink())
    {
        return Err(outside());
    }
    std::fs::write(&target, content).map_err(|error| format!("cannot write {path}: {error}"))
}
