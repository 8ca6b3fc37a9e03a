//! The Messages API agent: Claude through `POST /v1/messages`, with no Claude Code installed. It
//! declares the question tools itself (`tools.rs`), and a question holds nothing but a row in the
//! store: the turn ends at the tool_use (parked), and the person's answer resumes it as a
//! `tool_result`, with the conversation rebuilt from the thread (`conversation.rs`). So a question
//! survives a restart, costs no memory while it waits, and any server can take the answer.
//!
//! Why these crates: Anthropic publishes no Rust SDK, and the community ones lag the API (new
//! event and block types) or pull in their own runtime choices. The API is one POST and an SSE
//! stream, so AskBridge speaks it directly: `reqwest` (rustls on ring: no OpenSSL, nothing for the
//! browser bundle: server-only), `eventsource-stream` for the SSE framing, and serde types that
//! match the wire (`wire.rs`), with room for the types the API will add.

mod client;
mod conversation;
mod tools;
pub mod wire;

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

pub use client::ApiError;
use client::MessagesClient;
use conversation::{OTHER_BLOCK_ID, outcome_result, push, rebuild, with_cache_breakpoint};
pub use tools::ask_user_question_schema;
use wire::{ApiUsage, ContentBlock, Delta, InputMessage, MessagesRequest, Role, StartBlock, StreamEvent, SystemBlock};

use super::{AgentBackend, AgentError, Sink, TurnRequest, TurnSink};
use crate::interaction::{InteractionOutcome, InteractionRequest};
use crate::question::Question;
use crate::thread::{EventBody, Usage};

/// Where the API is unless `ANTHROPIC_BASE_URL` says otherwise.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The model unless `--model` names another (Claude Code's default, in its 2.1.332 model list).
pub const DEFAULT_MODEL: &str = "claude-opus-5-5";
pub const DEFAULT_MAX_TOKENS: u32 = 8192;
/// Requests in one turn, at most: the model answered by a validation error may try again, but
/// not forever.
const MAX_ROUNDS: usize = 12;

#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    pub api_key: String,
    pub base_url: String,
    pub model: String,
    pub max_tokens: u32,
    /// Sent as the system prompt, with a cache breakpoint.
    pub system_prompt: Option<String>,
    /// How often a busy or failing API is tried again before the turn fails.
    pub retries: u32,
    /// The first pause between tries when the API names none (`retry-after`); doubled each time.
    pub retry_base: Duration,
}

impl AnthropicConfig {
    pub fn new(api_key: &str) -> Self {
        Self {
            api_key: api_key.to_string(),
            base_url: DEFAULT_BASE_URL.to_string(),
            model: DEFAULT_MODEL.to_string(),
            max_tokens: DEFAULT_MAX_TOKENS,
            system_prompt: None,
            retries: 4,
            retry_base: Duration::from_secs(1),
        }
    }
}

pub struct AnthropicAgent {
    config: AnthropicConfig,
    client: MessagesClient,
    /// What the turns that parked cost, per session: counted into the turn that resumes them
    /// (a parked turn reports no usage of its own).
    carried: Mutex<HashMap<String, Usage>>,
}

impl AnthropicAgent {
    pub fn new(config: AnthropicConfig) -> Result<Self, String> {
        let client = MessagesClient::new(&config.base_url, &config.api_key)?;
        Ok(Self { config, client, carried: Mutex::default() })
    }

    /// For the session header: "Messages API · claude-opus-5-5".
    fn describe(&self) -> String {
        format!("Messages API · {}", self.config.model)
    }

    fn request(&self, messages: &[InputMessage]) -> MessagesRequest {
        MessagesRequest {
            model: self.config.model.clone(),
            max_tokens: self.config.max_tokens,
            system: self.config.system_prompt.iter().map(|text| SystemBlock::cached(text.clone())).collect(),
            messages: with_cache_breakpoint(messages),
            tools: tools::definitions(),
            stream: true,
        }
    }

    async fn turn(&self, request: &TurnRequest, sink: &dyn TurnSink) -> Result<Option<Usage>, AgentError> {
        let started = Instant::now();
        sink.agent_started(&self.describe(), None).await?;
        let (mut messages, answered) = rebuild(&request.history);
        // The answers to a parked turn's questions: shown on their calls, and sent.
        for result in &answered {
            sink.tool_result(&result.tool_use_id, &result.content, result.is_error).await?;
        }
        if !request.resume {
            push(&mut messages, Role::User, vec![ContentBlock::text(request.text.clone())]);
        }
        if messages.last().is_none_or(|m| m.role != Role::User) {
            return Err(AgentError::Failed("there is nothing new to send to the model".into()));
        }

        let mut spent = Spent::default();
        for _ in 0..MAX_ROUNDS {
            let reply = self.reply(&self.request(&messages), sink, &request.cancel, &mut spent).await;
            let reply = match reply {
                Ok(reply) => reply,
                Err(error) => {
                    self.carry(&request.session_id, &spent);
                    return Err(error);
                }
            };
            push(&mut messages, Role::Assistant, reply.content.clone());
            if let Some(cut) = reply.incomplete_call {
                self.carry(&request.session_id, &spent);
                return Err(incomplete_call(sink, &cut, self.config.max_tokens).await?);
            }
            if reply.calls.is_empty() {
                if reply.stop_reason.as_deref() == Some("max_tokens") {
                    let limit = self.config.max_tokens;
                    sink.notice(&format!(
                        "The reply stopped at the max_tokens limit ({limit}), so it may end mid-sentence. Raise \
                         --max-tokens for longer replies, or ask the agent to go on."
                    ))
                    .await?;
                }
                return Ok(Some(self.usage(&request.session_id, &spent, started)));
            }
            let mut results = Vec::new();
            let mut waiting = false;
            for call in &reply.calls {
                match open_call(sink, call).await? {
                    Some((content, is_error)) => {
                        sink.tool_result(&call.id, &content, is_error).await?;
                        results.push(ContentBlock::tool_result(&call.id, content, is_error));
                    }
                    None => waiting = true,
                }
            }
            if waiting {
                // The turn ends here; the person's answers start the next one, from the store.
                info!(session = %request.session_id, "paused until the person answers");
                self.carry(&request.session_id, &spent);
                return Err(AgentError::Parked);
            }
            push(&mut messages, Role::User, results);
        }
        self.carry(&request.session_id, &spent);
        Err(AgentError::Failed(format!("the model asked {MAX_ROUNDS} times in one turn without getting anywhere")))
    }

    /// One reply, streamed into the thread; a busy or failing API is tried again while nothing
    /// of the reply has been shown.
    async fn reply(
        &self,
        body: &MessagesRequest,
        sink: &dyn TurnSink,
        cancel: &CancellationToken,
        spent: &mut Spent,
    ) -> Result<Reply, AgentError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let sent = tokio::select! {
                sent = self.client.stream(body) => sent,
                () = cancel.cancelled() => return Err(AgentError::Interrupted),
            };
            let failure = match sent {
                Ok(events) => {
                    let mut reading = ReplyReader::new(sink, &self.config.model);
                    match reading.read(events, cancel).await {
                        Ok(reply) => {
                            spent.add(&reply.usage, &reply.model);
                            return Ok(reply);
                        }
                        Err(Stop::Agent(error)) => {
                            spent.add(&reading.usage, &reading.model);
                            return Err(error);
                        }
                        Err(Stop::Cut(reason)) if reading.message_id.is_some() => {
                            spent.add(&reading.usage, &reading.model);
                            return Err(reading.cut(&reason).await?);
                        }
                        // Nothing shown yet: as good as a failed request.
                        Err(Stop::Cut(reason)) => {
                            ApiError::Unreachable { url: self.config.base_url.clone(), detail: reason }
                        }
                        Err(Stop::Api(error)) => error,
                    }
                }
                Err(error) => error,
            };
            if !failure.is_retryable() || attempt > self.config.retries {
                warn!(session = sink.session_id(), %failure, attempt, "the Messages API request failed");
                return Err(AgentError::Failed(failure.to_string()));
            }
            let pause = failure
                .retry_after()
                .unwrap_or_else(|| self.config.retry_base.saturating_mul(1 << (attempt - 1).min(6)));
            let seconds = (pause.as_secs_f64().ceil() as u64).max(1);
            let left = self.config.retries + 1 - attempt;
            sink.notice(&format!(
                "{}: retrying in {seconds} s ({left} {} left).",
                failure.short(),
                if left == 1 { "try" } else { "tries" }
            ))
            .await?;
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = cancel.cancelled() => return Err(AgentError::Interrupted),
            }
        }
    }

    /// Keeps what a turn that did not complete cost, for the next one to report.
    fn carry(&self, session: &str, spent: &Spent) {
        if spent.replies == 0 {
            return;
        }
        let usage = spent.usage(None);
        let mut carried = self.carried.lock().expect("carried lock");
        let total = carried.entry(session.to_string()).or_default();
        *total = add_usage(total, &usage);
    }

    /// This turn's usage, with what the turns before it left uncounted.
    fn usage(&self, session: &str, spent: &Spent, started: Instant) -> Usage {
        let usage = spent.usage(Some(started.elapsed()));
        match self.carried.lock().expect("carried lock").remove(session) {
            Some(carried) => add_usage(&carried, &usage),
            None => usage,
        }
    }
}

impl AgentBackend for AnthropicAgent {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn run_turn(&self, request: TurnRequest, sink: Sink) -> BoxFuture<'_, Result<Option<Usage>, AgentError>> {
        Box::pin(async move { self.turn(&request, &*sink).await })
    }

    fn end_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, ()> {
        self.carried.lock().expect("carried lock").remove(session);
        Box::pin(async {})
    }
}

/// Puts one tool call of the model's to the person. `None` when it now waits for them (parked);
/// otherwise the tool result to send at once.
async fn open_call(sink: &dyn TurnSink, call: &Call) -> Result<Option<(String, bool)>, AgentError> {
    if !tools::is_declared(&call.name) {
        let error = format!("Error: No such tool available: {}", call.name);
        return Ok(Some((tools::tool_use_error(&error), true)));
    }
    if let Err(error) = tools::check(&call.name, &call.input) {
        warn!(session = sink.session_id(), tool_use_id = %call.id, %error, "the model's question failed its schema");
        failed_card(sink, &call.id, &error).await?;
        return Ok(Some((tools::tool_use_error(&error), true)));
    }
    Ok(sink.park_question(&call.id, &call.name, &call.input).await?.map(|outcome| outcome_result(&outcome)))
}

/// A question card that says what was wrong with the question, closed at once.
async fn failed_card(sink: &dyn TurnSink, tool_use_id: &str, error: &str) -> Result<(), AgentError> {
    let request = InteractionRequest::Unreadable { error: error.to_string() };
    sink.emit(EventBody::InteractionOpened { tool_use_id: tool_use_id.to_string(), request }).await?;
    let outcome = InteractionOutcome::Failed { error: error.to_string() };
    sink.emit(EventBody::InteractionResolved { tool_use_id: tool_use_id.to_string(), outcome }).await
}

/// The reply stopped at max_tokens while the model was writing a tool call's arguments: the card
/// says the question arrived incomplete, and the turn fails with what to do about it.
async fn incomplete_call(sink: &dyn TurnSink, call: &IncompleteCall, limit: u32) -> Result<AgentError, AgentError> {
    let error = format!(
        "the question arrived incomplete: the reply reached its max_tokens limit ({limit}) while the agent was \
         still writing it"
    );
    if tools::is_declared(&call.name) {
        failed_card(sink, &call.id, &error).await?;
    }
    Ok(AgentError::Failed(format!(
        "the reply reached the max_tokens limit ({limit}) in the middle of {}'s arguments, so it arrived \
         incomplete. Raise --max-tokens, then send a message to try again.",
        call.name
    )))
}

/// A complete tool call of the model's.
#[derive(Debug, Clone)]
struct Call {
    id: String,
    name: String,
    input: Value,
}

#[derive(Debug, Clone)]
struct IncompleteCall {
    id: String,
    name: String,
}

/// One reply of the model's, read to its end.
struct Reply {
    /// The assistant's blocks, as they go back to the model.
    content: Vec<ContentBlock>,
    calls: Vec<Call>,
    incomplete_call: Option<IncompleteCall>,
    stop_reason: Option<String>,
    usage: ApiUsage,
    model: String,
}

/// Why reading a reply stopped early.
enum Stop {
    /// The stream was cut (or the API sent an `error` event): the reason.
    Cut(String),
    /// The API refused before anything was shown (an `error` event first): maybe worth a retry.
    Api(ApiError),
    /// The turn was stopped or the session is gone.
    Agent(AgentError),
}

impl From<AgentError> for Stop {
    fn from(error: AgentError) -> Self {
        Self::Agent(error)
    }
}

/// A content block as it streams in.
enum Building {
    Text(String),
    /// A tool call; for a question, `preview` is what its card shows so far.
    Tool {
        id: String,
        name: String,
        json: String,
        stopped: bool,
        preview: Vec<Question>,
    },
    /// A block of a type AskBridge does not use: shown as a generic tool card, never sent back.
    Other {
        id: String,
        kind: String,
        block: Value,
        deltas: Vec<Value>,
    },
}

/// Reads one streamed reply into the thread: the assistant message starts with the first block.
struct ReplyReader<'a> {
    sink: &'a dyn TurnSink,
    message_id: Option<String>,
    blocks: BTreeMap<usize, Building>,
    stop_reason: Option<String>,
    usage: ApiUsage,
    model: String,
}

impl<'a> ReplyReader<'a> {
    fn new(sink: &'a dyn TurnSink, model: &str) -> Self {
        Self {
            sink,
            message_id: None,
            blocks: BTreeMap::new(),
            stop_reason: None,
            usage: ApiUsage::default(),
            model: model.to_string(),
        }
    }

    async fn message(&mut self) -> Result<String, AgentError> {
        if let Some(id) = &self.message_id {
            return Ok(id.clone());
        }
        let id = self.sink.start_message().await?;
        self.message_id = Some(id.clone());
        Ok(id)
    }

    async fn read(
        &mut self,
        events: impl futures::Stream<Item = Result<StreamEvent, String>>,
        cancel: &CancellationToken,
    ) -> Result<Reply, Stop> {
        let mut events = std::pin::pin!(events);
        loop {
            let event = tokio::select! {
                event = events.next() => event,
                () = cancel.cancelled() => {
                    if let Some(id) = &self.message_id {
                        self.sink.finish_message(id).await?;
                    }
                    return Err(Stop::Agent(AgentError::Interrupted));
                }
            };
            let event = match event {
                None => return Err(Stop::Cut("the connection closed before the reply was complete".into())),
                Some(Err(error)) => return Err(Stop::Cut(error)),
                Some(Ok(event)) => event,
            };
            match event {
                StreamEvent::MessageStart { message } => {
                    if !message.model.is_empty() {
                        self.model = message.model;
                    }
                    self.usage.update(&message.usage);
                }
                StreamEvent::ContentBlockStart { index, content_block } => self.start(index, content_block).await?,
                StreamEvent::ContentBlockDelta { index, delta } => self.delta(index, delta).await?,
                StreamEvent::ContentBlockStop { index } => self.stop(index).await?,
                StreamEvent::MessageDelta { delta, usage } => {
                    self.stop_reason = delta.stop_reason.or(self.stop_reason.take());
                    if let Some(usage) = usage {
                        self.usage.update(&usage);
                    }
                }
                StreamEvent::MessageStop => return Ok(self.finish().await?),
                StreamEvent::Ping => {}
                StreamEvent::Error { error } => {
                    let status = match error.kind.as_str() {
                        "overloaded_error" => 529,
                        "rate_limit_error" => 429,
                        "api_error" => 500,
                        _ => 400,
                    };
                    let api = ApiError::Status { status, kind: error.kind, message: error.message, retry_after: None };
                    return Err(if self.message_id.is_some() { Stop::Cut(api.to_string()) } else { Stop::Api(api) });
                }
                StreamEvent::Unknown { kind, data } => {
                    debug!(session = self.sink.session_id(), %kind, %data, "an event type this version does not know");
                }
            }
        }
    }

    async fn start(&mut self, index: usize, block: StartBlock) -> Result<(), AgentError> {
        let message_id = self.message().await?;
        let building = match block {
            StartBlock::Text { text } => {
                if !text.is_empty() {
                    self.sink.text(&message_id, &text).await?;
                }
                Building::Text(text)
            }
            StartBlock::ToolUse { id, name } => {
                self.sink.tool_call_started(&message_id, &id, &name).await?;
                Building::Tool { id, name, json: String::new(), stopped: false, preview: Vec::new() }
            }
            StartBlock::Other { kind, block } => {
                let id = format!("{OTHER_BLOCK_ID}{message_id}_{index}");
                self.sink.tool_call_started(&message_id, &id, &kind).await?;
                Building::Other { id, kind, block, deltas: Vec::new() }
            }
        };
        self.blocks.insert(index, building);
        Ok(())
    }

    async fn delta(&mut self, index: usize, delta: Delta) -> Result<(), AgentError> {
        let Some(message_id) = self.message_id.clone() else { return Ok(()) };
        match (self.blocks.get_mut(&index), delta) {
            (Some(Building::Text(text)), Delta::Text { text: more }) => {
                text.push_str(&more);
                self.sink.text(&message_id, &more).await?;
            }
            (Some(Building::Tool { id, name, json, preview, .. }), Delta::InputJson { partial_json }) => {
                json.push_str(&partial_json);
                if partial_json.is_empty() {
                    return Ok(());
                }
                self.sink.tool_input_delta(id, &partial_json).await?;
                // The card fills in as the model writes, options included.
                if tools::is_declared(name) {
                    self.sink.question_preview(id, name, json, preview).await?;
                }
            }
            (Some(Building::Other { deltas, .. }), delta) => deltas.push(delta_value(delta)),
            (_, delta) => {
                debug!(session = self.sink.session_id(), index, ?delta, "a delta for no block it fits");
            }
        }
        Ok(())
    }

    async fn stop(&mut self, index: usize) -> Result<(), AgentError> {
        match self.blocks.get_mut(&index) {
            Some(Building::Tool { id, json, stopped, .. }) => {
                *stopped = true;
                if let Ok(input) = parse_input(json) {
                    self.sink.tool_call_ready(id, input).await?;
                }
            }
            Some(Building::Other { id, kind, block, deltas }) => {
                let shown = serde_json::json!({"block": block, "deltas": deltas});
                self.sink.tool_call_ready(id, shown).await?;
                let note = format!("A {kind} block: shown here, not used by AskBridge.");
                self.sink.tool_result(id, &note, false).await?;
            }
            Some(Building::Text(_)) | None => {}
        }
        Ok(())
    }

    /// The reply is complete: what goes back to the model, and the calls to answer.
    async fn finish(&mut self) -> Result<Reply, AgentError> {
        let mut content = Vec::new();
        let mut calls = Vec::new();
        let mut incomplete_call = None;
        let cut_short = self.stop_reason.as_deref() == Some("max_tokens");
        for building in std::mem::take(&mut self.blocks).into_values() {
            match building {
                Building::Text(text) if !text.trim().is_empty() => content.push(ContentBlock::text(text)),
                Building::Text(_) | Building::Other { .. } => {}
                Building::Tool { id, name, json, stopped, .. } => match parse_input(&json) {
                    Ok(input) if stopped && !(cut_short && json.is_empty()) => {
                        content.push(ContentBlock::tool_use(&id, &name, input.clone()));
                        calls.push(Call { id, name, input });
                    }
                    _ if cut_short => incomplete_call = Some(IncompleteCall { id, name }),
                    // Complete but not JSON: the model is told, the card shows what arrived.
                    _ => {
                        self.sink.tool_call_ready(&id, Value::String(json.clone())).await?;
                        content.push(ContentBlock::tool_use(&id, &name, serde_json::json!({})));
                        calls.push(Call { id, name, input: Value::String(json) });
                    }
                },
            }
        }
        if let Some(id) = &self.message_id {
            self.sink.finish_message(id).await?;
        }
        Ok(Reply {
            content,
            calls,
            incomplete_call,
            stop_reason: self.stop_reason.clone(),
            usage: self.usage.clone(),
            model: self.model.clone(),
        })
    }

    /// The stream broke after part of the reply was shown: it stays, marked as cut, and the turn
    /// fails with what to do.
    async fn cut(&mut self, reason: &str) -> Result<AgentError, AgentError> {
        if let Some(id) = &self.message_id {
            self.sink.finish_message(id).await?;
        }
        warn!(session = self.sink.session_id(), reason, "the reply was cut off");
        self.sink
            .notice(&format!(
                "The reply above was cut off before it was complete ({reason}). What arrived is kept; send a \
                 message to try again."
            ))
            .await?;
        Ok(AgentError::Failed(format!("the reply was cut off ({reason})")))
    }
}

/// A tool call's arguments once complete: `{}` for none at all (a tool without parameters).
fn parse_input(json: &str) -> Result<Value, serde_json::Error> {
    if json.trim().is_empty() { Ok(Value::Object(Default::default())) } else { serde_json::from_str(json) }
}

fn delta_value(delta: Delta) -> Value {
    match delta {
        Delta::Text { text } => serde_json::json!({"type": "text_delta", "text": text}),
        Delta::InputJson { partial_json } => {
            serde_json::json!({"type": "input_json_delta", "partial_json": partial_json})
        }
        Delta::Other { delta, .. } => delta,
    }
}

/// Tokens and dollars over a turn's requests.
#[derive(Debug, Default)]
struct Spent {
    replies: u32,
    input_tokens: u64,
    output_tokens: u64,
    cost_usd: Option<f64>,
}

impl Spent {
    fn add(&mut self, usage: &ApiUsage, model: &str) {
        self.replies += 1;
        let n = |v: Option<u64>| v.unwrap_or(0);
        self.input_tokens +=
            n(usage.input_tokens) + n(usage.cache_creation_input_tokens) + n(usage.cache_read_input_tokens);
        self.output_tokens += n(usage.output_tokens);
        if let Some(cost) = cost_usd(model, usage) {
            self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + cost);
        }
    }

    fn usage(&self, elapsed: Option<Duration>) -> Usage {
        Usage {
            input_tokens: Some(self.input_tokens),
            output_tokens: Some(self.output_tokens),
            cost_usd: self.cost_usd,
            duration_ms: elapsed.map(|e| e.as_millis() as u64),
        }
    }
}

fn add_usage(a: &Usage, b: &Usage) -> Usage {
    let sum = |x: Option<u64>, y: Option<u64>| {
        if x.is_none() && y.is_none() { None } else { Some(x.unwrap_or(0) + y.unwrap_or(0)) }
    };
    Usage {
        input_tokens: sum(a.input_tokens, b.input_tokens),
        output_tokens: sum(a.output_tokens, b.output_tokens),
        cost_usd: match (a.cost_usd, b.cost_usd) {
            (None, None) => None,
            (x, y) => Some(x.unwrap_or(0.0) + y.unwrap_or(0.0)),
        },
        duration_ms: b.duration_ms,
    }
}

/// List prices in dollars per million tokens, (input, output), by model family, as Claude Code
/// 2.1.332 lists them. Cache writes cost 1.25× input, cache reads 0.1×. `None` for a model this
/// table does not know: the header then shows no cost rather than a wrong one.
fn prices(model: &str) -> Option<(f64, f64)> {
    let families = [("opus", (4.0, 20.0)), ("fable", (8.0, 40.0)), ("sonnet", (2.0, 10.0)), ("haiku", (0.10, 0.50))];
    families.iter().find(|(family, _)| model.contains(family)).map(|(_, prices)| *prices)
}

fn cost_usd(model: &str, usage: &ApiUsage) -> Option<f64> {
    let (input, output) = prices(model)?;
    let n = |v: Option<u64>| v.unwrap_or(0) as f64 / 1_000_000.0;
    Some(
        n(usage.input_tokens) * input
            + n(usage.cache_creation_input_tokens) * input * 1.25
            + n(usage.cache_read_input_tokens) * input * 0.1
            + n(usage.output_tokens) * output,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::RecordingSink;
    use crate::thread::Block;

    fn events(lines: &[&str]) -> impl futures::Stream<Item = Result<StreamEvent, String>> {
        let parsed: Vec<_> = lines.iter().map(|line| StreamEvent::parse(line)).collect();
        futures::stream::iter(parsed)
    }

    #[tokio::test]
    async fn blocks_of_unknown_types_are_shown_generically_and_never_sent_back() {
        let recording = RecordingSink::new("s", |_| InteractionOutcome::Expired);
        let sink = recording.sink();
        let mut reader = ReplyReader::new(&*sink, "claude-sonnet-5-5");
        let reply = reader
            .read(
                events(&[
                    r#"{"type":"message_start","message":{"id":"msg_1","model":"claude-sonnet-5-5","usage":{"input_tokens":9}}}"#,
                    r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
                    r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Hmm."}}"#,
                    r#"{"type":"content_block_stop","index":0}"#,
                    r#"{"type":"brand_new_event","what":"ever"}"#,
                    r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
                    r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello."}}"#,
                    r#"{"type":"content_block_stop","index":1}"#,
                    r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":4}}"#,
                    r#"{"type":"message_stop"}"#,
                ]),
                &CancellationToken::new(),
            )
            .await
            .ok()
            .expect("a complete reply");
        assert_eq!(reply.content, vec![ContentBlock::text("Hello.")]);
        assert!(reply.calls.is_empty());
        assert_eq!((reply.usage.input_tokens, reply.usage.output_tokens), (Some(9), Some(4)));
        let thread = recording.thread();
        let Block::ToolCall(thinking) = &thread.messages[0].blocks[0] else { panic!("{:?}", thread.messages[0]) };
        assert_eq!(thinking.name, "thinking");
        assert!(thinking.id.starts_with(OTHER_BLOCK_ID));
        assert_eq!(thinking.input.as_ref().unwrap()["deltas"][0]["thinking"], "Hmm.");
        assert_eq!(thread.messages[0].text(), "Hello.");
        assert!(!thread.messages[0].streaming);
        // Rebuilt from the thread, the conversation leaves the thinking block out.
        let (messages, _) = rebuild(&thread.messages);
        assert_eq!(messages[0].content, vec![ContentBlock::text("Hello.")]);
    }

    #[test]
    fn cost_follows_the_model_family_and_counts_the_cache() {
        let usage = ApiUsage {
            input_tokens: Some(1_000_000),
            output_tokens: Some(100_000),
            cache_creation_input_tokens: Some(1_000_000),
            cache_read_input_tokens: Some(1_000_000),
        };
        let cost = cost_usd("claude-sonnet-5-5", &usage).unwrap();
        assert!((cost - (2.0 + 1.0 + 2.5 + 0.2)).abs() < 1e-9, "{cost}");
        assert_eq!(cost_usd("some-other-model", &usage), None);
    }

    #[test]
    fn turns_that_parked_are_paid_by_the_turn_that_completes() {
        let agent = AnthropicAgent::new(AnthropicConfig::new("k")).unwrap();
        let mut spent = Spent::default();
        spent.add(&ApiUsage { input_tokens: Some(10), output_tokens: Some(5), ..Default::default() }, "claude-haiku");
        agent.carry("s", &spent);
        let usage = agent.usage("s", &spent, Instant::now());
        assert_eq!((usage.input_tokens, usage.output_tokens), (Some(20), Some(10)));
        assert!(agent.carried.lock().unwrap().is_empty());
    }
}
