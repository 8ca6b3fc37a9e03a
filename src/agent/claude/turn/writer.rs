//! What the CLI streams, as the thread shows it: the main agent's API messages become our
//! messages (text as it is written, tool calls with their arguments, a question's card filling
//! in), whether the stream events or the whole `assistant` lines come first (§5).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::agent::messages_api::{ContentBlock, Delta, Event, Message};
use crate::agent::{AgentError, Sink};
use crate::question::{Question, is_question_tool};

/// A question tool's call as the CLI streams it: the tool, its arguments so far, and the
/// questions its card shows of them.
#[derive(Default)]
struct QuestionWritten {
    tool: String,
    json: String,
    shown: Vec<Question>,
}

/// Which API message is which of our messages, which tool calls exist.
pub(super) struct ThreadWriter {
    sink: Sink,
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
    stream_message: Option<String>,
    /// The conversation's size at the main agent's last request (how full the context is).
    context_tokens: Option<u64>,
}

impl ThreadWriter {
    pub(super) fn new(sink: Sink) -> Self {
        Self {
            sink,
            messages: HashMap::new(),
            current: None,
            streamed_text: HashSet::new(),
            block_tools: HashMap::new(),
            started_tools: HashSet::new(),
            ready_tools: HashSet::new(),
            questions_written: HashMap::new(),
            stream_message: None,
            context_tokens: None,
        }
    }

    /// The conversation's size at the main agent's last request.
    pub(super) fn context_tokens(&self) -> Option<u64> {
        self.context_tokens
    }

    /// Whether the thread shows the tool call `tool_use_id`.
    pub(super) fn shows(&self, tool_use_id: &str) -> bool {
        self.started_tools.contains(tool_use_id)
    }

    /// One of the main agent's raw Messages API events (`--include-partial-messages`).
    pub(super) async fn stream_event(&mut self, event: Event) -> Result<(), AgentError> {
        match event {
            Event::MessageStart { message } => {
                self.ensure_message(&message.id).await?;
                self.stream_message = Some(message.id);
            }
            Event::ContentBlockStart { index, content_block: ContentBlock::ToolUse { id, name, .. } } => {
                let message = self.stream_message.clone().unwrap_or_default();
                let ours = self.ensure_message(&message).await?;
                if self.started_tools.insert(id.clone()) {
                    self.sink.tool_call_started(&ours, &id, &name).await?;
                }
                if is_question_tool(&name) {
                    self.questions_written.insert(id.clone(), QuestionWritten { tool: name, ..Default::default() });
                }
                self.block_tools.insert((message, index), id);
            }
            Event::ContentBlockDelta { index, delta } => self.block_delta(index, delta).await?,
            _ => {}
        }
        Ok(())
    }

    async fn block_delta(&mut self, index: usize, delta: Delta) -> Result<(), AgentError> {
        let message = self.stream_message.clone().unwrap_or_default();
        match delta {
            Delta::Text { text } => {
                let ours = self.ensure_message(&message).await?;
                self.streamed_text.insert(message);
                self.sink.text(&ours, &text).await?;
            }
            Delta::InputJson { partial_json } => {
                if let Some(tool) = self.block_tools.get(&(message, index))
                    && !self.ready_tools.contains(tool)
                    && !partial_json.is_empty()
                {
                    self.sink.tool_input_delta(tool, &partial_json).await?;
                    // The card fills in as the model writes, options included.
                    if let Some(written) = self.questions_written.get_mut(tool) {
                        written.json.push_str(&partial_json);
                        self.sink.question_preview(tool, &written.tool, &written.json, &mut written.shown).await?;
                    }
                }
            }
            Delta::Other(_) => {}
        }
        Ok(())
    }

    /// One of the main agent's `assistant` lines: its text (unless it streamed), its tool calls.
    pub(super) async fn assistant(&mut self, message: Message) -> Result<(), AgentError> {
        // A local command's reply (`/context`: model `<synthetic>`, all counts 0) says nothing
        // of the conversation's size.
        if let Some(tokens) = message.usage.as_ref().map(|u| u.context_tokens()).filter(|n| *n > 0) {
            self.context_tokens = Some(tokens);
        }
        let ours = self.ensure_message(&message.id).await?;
        for block in message.content {
            match block {
                ContentBlock::Text { text, .. } if !self.streamed_text.contains(&message.id) => {
                    self.sink.text(&ours, &text).await?;
                }
                ContentBlock::ToolUse { id, name, input, .. } => self.show_tool_call(&ours, &id, &name, input).await?,
                _ => {}
            }
        }
        Ok(())
    }

    /// A subagent's call, which the thread has not seen yet: shown once it asks something (its
    /// result then lands on that card).
    pub(super) async fn show_subagent_call(&mut self, id: &str, name: &str, input: Value) -> Result<(), AgentError> {
        if self.shows(id) {
            return Ok(());
        }
        let ours = self.current_or_new_message().await?;
        self.show_tool_call(&ours, id, name, input).await
    }

    /// Finishes the message being written, if any.
    pub(super) async fn finish_current(&mut self) -> Result<(), AgentError> {
        if let Some(message) = self.current.take() {
            self.sink.finish_message(&message).await?;
        }
        Ok(())
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
}
