//! One streamed reply of the model's, read into the thread as it comes: text as it is written,
//! tool calls with their arguments (a question's card filling in), blocks of types AskBridge
//! does not use shown generically; and, at its end, what goes back to the model and which tool
//! calls to answer.

use std::collections::BTreeMap;

use futures::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::client::ApiError;
use super::conversation::OTHER_BLOCK_ID;
use super::tools;
use crate::agent::messages_api::{self, ContentBlock, Delta, Event};
use crate::agent::{AgentError, TurnSink};
use crate::question::Question;

/// A complete tool call of the model's.
#[derive(Debug, Clone)]
pub(super) struct Call {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) input: Value,
}

#[derive(Debug, Clone)]
pub(super) struct IncompleteCall {
    pub(super) id: String,
    pub(super) name: String,
}

/// One reply of the model's, read to its end.
pub(super) struct Reply {
    /// The assistant's blocks, as they go back to the model.
    pub(super) content: Vec<ContentBlock>,
    pub(super) calls: Vec<Call>,
    pub(super) incomplete_call: Option<IncompleteCall>,
    pub(super) stop_reason: Option<String>,
    pub(super) usage: messages_api::Usage,
    pub(super) model: String,
}

/// Why reading a reply stopped early.
pub(super) enum Stop {
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
pub(super) struct ReplyReader<'a> {
    sink: &'a dyn TurnSink,
    pub(super) message_id: Option<String>,
    blocks: BTreeMap<usize, Building>,
    stop_reason: Option<String>,
    pub(super) usage: messages_api::Usage,
    pub(super) model: String,
}

impl<'a> ReplyReader<'a> {
    pub(super) fn new(sink: &'a dyn TurnSink, model: &str) -> Self {
        Self {
            sink,
            message_id: None,
            blocks: BTreeMap::new(),
            stop_reason: None,
            usage: messages_api::Usage::default(),
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

    pub(super) async fn read(
        &mut self,
        events: impl futures::Stream<Item = Result<Event, String>>,
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
                Event::MessageStart { message } => {
                    if let Some(model) = message.model.filter(|model| !model.is_empty()) {
                        self.model = model;
                    }
                    if let Some(usage) = &message.usage {
                        self.usage.update(usage);
                    }
                }
                Event::ContentBlockStart { index, content_block } => self.start(index, content_block).await?,
                Event::ContentBlockDelta { index, delta } => self.delta(index, delta).await?,
                Event::ContentBlockStop { index } => self.stop(index).await?,
                Event::MessageDelta { delta, usage } => {
                    self.stop_reason = delta.stop_reason.or(self.stop_reason.take());
                    if let Some(usage) = usage {
                        self.usage.update(&usage);
                    }
                }
                Event::MessageStop => return Ok(self.finish().await?),
                Event::Ping => {}
                Event::Error { error } => {
                    let status = match error.kind.as_str() {
                        "overloaded_error" => 529,
                        "rate_limit_error" => 429,
                        "api_error" => 500,
                        _ => 400,
                    };
                    let api = ApiError::Status { status, kind: error.kind, message: error.message, retry_after: None };
                    return Err(if self.message_id.is_some() { Stop::Cut(api.to_string()) } else { Stop::Api(api) });
                }
                Event::Other(data) => {
                    let kind = data.get("type").and_then(Value::as_str).unwrap_or_default();
                    debug!(session = self.sink.session_id(), %kind, %data, "an event type this version does not know");
                }
            }
        }
    }

    async fn start(&mut self, index: usize, block: ContentBlock) -> Result<(), AgentError> {
        let message_id = self.message().await?;
        let building = match block {
            ContentBlock::Text { text, .. } => {
                if !text.is_empty() {
                    self.sink.text(&message_id, &text).await?;
                }
                Building::Text(text)
            }
            ContentBlock::ToolUse { id, name, .. } => {
                self.sink.tool_call_started(&message_id, &id, &name).await?;
                Building::Tool { id, name, json: String::new(), stopped: false, preview: Vec::new() }
            }
            // Thinking, a server tool, whatever comes next (or a block no reply holds).
            block => {
                let kind = block.kind().to_string();
                let block = block.into_value();
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
            (Some(Building::Other { deltas, .. }), delta) => deltas.push(delta.into_value()),
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
    pub(super) async fn cut(&mut self, reason: &str) -> Result<AgentError, AgentError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::RecordingSink;
    use crate::agent::anthropic::conversation::rebuild;
    use crate::interaction::InteractionOutcome;
    use crate::thread::Block;

    fn events(lines: &[&str]) -> impl futures::Stream<Item = Result<Event, String>> {
        let parsed: Vec<_> = lines.iter().map(|line| Event::parse(line)).collect();
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
        let (messages, _) = rebuild(&thread.messages, &Default::default());
        assert_eq!(messages[0].content, vec![ContentBlock::text("Hello.")]);
    }
}
