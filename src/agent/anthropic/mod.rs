//! The Messages API agent: Claude through `POST /v1/messages`, with no Claude Code installed. It
//! declares the question tools itself (`tools.rs`), and a question holds nothing but a row in the
//! store: the turn ends at the tool_use (parked), and the person's answer resumes it as a
//! `tool_result`, with the conversation rebuilt from the thread (`conversation.rs`). So a question
//! survives a restart, costs no memory while it waits, and any server can take the answer. Each
//! streamed reply is read into the thread by `reply.rs`; what a turn cost is `cost.rs`.
//!
//! Why these crates: Anthropic publishes no Rust SDK, and the community ones lag the API (new
//! event and block types) or pull in their own runtime choices. The API is one POST and an SSE
//! stream, so AskBridge speaks it directly: `reqwest` (rustls on ring: no OpenSSL, nothing for the
//! browser bundle: server-only), `eventsource-stream` for the SSE framing, and serde types that
//! match the wire, with room for the types the API will add: the request in `wire.rs`, the
//! content blocks and the reply's events in `agent::messages_api` (shared with Claude Code).

mod client;
mod conversation;
mod cost;
mod reply;
mod tools;
pub mod wire;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

pub use client::ApiError;
use client::MessagesClient;
use conversation::{outcome_result, push, rebuild, with_cache_breakpoint};
use cost::Spent;
use reply::{Call, IncompleteCall, Reply, ReplyReader, Stop};
pub use tools::ask_user_question_schema;
use wire::{InputMessage, MessagesRequest, Role, SystemBlock};

use super::messages_api::{ContentBlock, message_content};
use super::{AgentBackend, AgentError, Sink, TurnRequest, TurnSink};
use crate::interaction::{InteractionOutcome, InteractionRequest};
use crate::thread::{EventBody, ModelChoice, Usage};

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
    /// What `GET /v1/models` last listed, and when.
    models: tokio::sync::Mutex<Option<(Instant, Vec<ModelChoice>)>>,
}

/// How long the API's model list is kept.
const MODELS_KEPT: Duration = Duration::from_secs(60 * 60);
/// How long a list that could not be fetched is left alone.
const MODELS_RETRY: Duration = Duration::from_secs(60);

impl AnthropicAgent {
    pub fn new(config: AnthropicConfig) -> Result<Self, String> {
        let client = MessagesClient::new(&config.base_url, &config.api_key)?;
        Ok(Self { config, client, carried: Mutex::default(), models: Default::default() })
    }

    /// The model of `request`'s session: its own pick, else `--model`.
    fn model_of<'a>(&'a self, request: &'a TurnRequest) -> &'a str {
        request.model.as_deref().unwrap_or(&self.config.model)
    }

    /// For the session header: "Messages API · claude-opus-5-5".
    fn describe(&self, model: &str) -> String {
        format!("Messages API · {model}")
    }

    fn request(&self, model: &str, messages: &[InputMessage]) -> MessagesRequest {
        MessagesRequest {
            model: model.to_string(),
            max_tokens: self.config.max_tokens,
            system: self.config.system_prompt.iter().map(|text| SystemBlock::cached(text.clone())).collect(),
            messages: with_cache_breakpoint(messages),
            tools: tools::definitions(),
            stream: true,
        }
    }

    async fn turn(&self, request: &TurnRequest, sink: &dyn TurnSink) -> Result<Option<Usage>, AgentError> {
        let started = Instant::now();
        let model = self.model_of(request);
        sink.agent_started(&self.describe(model), None).await?;
        let (mut messages, answered) = rebuild(&request.history, &request.attachments.bytes);
        // The answers to a parked turn's questions: shown on their calls, and sent.
        for result in &answered {
            sink.tool_result(&result.tool_use_id, &result.content, result.is_error).await?;
        }
        if !request.resume {
            let files = &request.attachments;
            push(&mut messages, Role::User, message_content(&request.text, &files.new, &files.bytes));
        } else if answered.is_empty() && messages.last().is_some_and(|m| m.role == Role::Assistant) {
            // A resume cut short after the model had the answers, in the middle of its reply.
            push(&mut messages, Role::User, vec![ContentBlock::text(crate::agent::CONTINUE)]);
        }
        if messages.last().is_none_or(|m| m.role != Role::User) {
            return Err(AgentError::Failed("there is nothing new to send to the model".into()));
        }

        let mut spent = Spent::default();
        for _ in 0..MAX_ROUNDS {
            let reply = self.reply(&self.request(model, &messages), sink, &request.cancel, &mut spent).await;
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
                    let mut reading = ReplyReader::new(sink, &body.model);
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
        *total = total.plus(&usage);
    }

    /// This turn's usage, with what the turns before it left uncounted.
    fn usage(&self, session: &str, spent: &Spent, started: Instant) -> Usage {
        let usage = spent.usage(Some(started.elapsed()));
        match self.carried.lock().expect("carried lock").remove(session) {
            Some(carried) => carried.plus(&usage),
            None => usage,
        }
    }
}

impl AgentBackend for AnthropicAgent {
    /// The conversation is rebuilt from the thread each turn, earlier images included.
    fn resends_history(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn label(&self) -> &'static str {
        "Messages API"
    }

    fn run_turn(&self, request: TurnRequest, sink: Sink) -> BoxFuture<'_, Result<Option<Usage>, AgentError>> {
        Box::pin(async move { self.turn(&request, &*sink).await })
    }

    /// `GET /v1/models`, kept for an hour (a list that cannot be fetched offers none, and is
    /// asked for again a minute later; a session keeps `--model` then).
    fn models(&self) -> BoxFuture<'_, Vec<ModelChoice>> {
        Box::pin(async move {
            let mut kept = self.models.lock().await;
            if let Some((at, models)) = &*kept
                && at.elapsed() < if models.is_empty() { MODELS_RETRY } else { MODELS_KEPT }
            {
                return models.clone();
            }
            let listed = match self.client.models().await {
                Ok(listed) => listed,
                Err(error) => {
                    warn!(%error, "could not list the Messages API's models");
                    Vec::new()
                }
            };
            let models: Vec<ModelChoice> = listed
                .into_iter()
                .map(|m| ModelChoice {
                    label: if m.display_name.is_empty() { m.id.clone() } else { m.display_name },
                    value: m.id,
                    description: String::new(),
                })
                .collect();
            *kept = Some((Instant::now(), models.clone()));
            models
        })
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
    sink.emit(EventBody::InteractionOpened { tool_use_id: tool_use_id.to_string(), request, expires_at_ms: None })
        .await?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::messages_api;

    #[test]
    fn turns_that_parked_are_paid_by_the_turn_that_completes() {
        let agent = AnthropicAgent::new(AnthropicConfig::new("k")).unwrap();
        let mut spent = Spent::default();
        spent.add(
            &messages_api::Usage { input_tokens: Some(10), output_tokens: Some(5), ..Default::default() },
            "claude-haiku",
        );
        agent.carry("s", &spent);
        let usage = agent.usage("s", &spent, Instant::now());
        assert_eq!((usage.input_tokens, usage.output_tokens), (Some(20), Some(10)));
        assert!(agent.carried.lock().unwrap().is_empty());
    }
}
