//! The scripted agent: plays a [`Scenario`] at a person's reading pace, with no network at all.
//! It is the default on a fresh machine and what the tests drive.
//!
//! For questions it records exactly what it received as the question tool's result (the
//! outcome as JSON), and `{{answer}}` in later text quotes it back.

mod scenario;

use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use scenario::{Scenario, ScenarioError, Step, Turn};

use super::{AgentBackend, AgentError, TurnRequest, TurnSink};
use crate::question::InteractionOutcome;
use crate::thread::Usage;

/// Tool arguments stream in pieces of about this many bytes.
const ARGUMENT_CHUNK: usize = 16;

pub struct ScriptedAgent {
    scenario: Scenario,
}

impl ScriptedAgent {
    pub fn new(scenario: Scenario) -> Self {
        Self { scenario }
    }

    async fn play(&self, request: &TurnRequest, sink: &TurnSink) -> Result<Option<Usage>, AgentError> {
        let started = std::time::Instant::now();
        let cancel = &request.cancel;
        let word_pause = Duration::from_secs_f64(1.0 / self.scenario.pace);
        let no_reply =
            [Step::Say { text: "This scenario has no reply for that message (it has no turn without `when`).".into() }];
        let steps = self.scenario.turn_for(&request.text).map_or(&no_reply[..], |turn| &turn.steps);

        let message_id = sink.start_message().await?;
        let mut words = 0u64;
        let mut last_answer = "nothing: nobody was asked".to_string();
        for step in steps {
            match step {
                Step::Say { text } => {
                    let text = text.trim().replace("{{message}}", &request.text).replace("{{answer}}", &last_answer);
                    // Separate this text from what came before, as a new paragraph.
                    let mut first = words > 0;
                    for word in split_words(&text) {
                        wait(word_pause, cancel).await?;
                        if first {
                            sink.text(&message_id, "\n\n").await?;
                            first = false;
                        }
                        sink.text(&message_id, word).await?;
                        words += 1;
                    }
                }
                Step::Tool { name, input, output, is_error, duration } => {
                    let tool_use_id = stream_tool_call(sink, &message_id, name, input, word_pause, cancel).await?;
                    wait(*duration, cancel).await?;
                    sink.tool_result(&tool_use_id, output, *is_error).await?;
                    words = words.max(1);
                }
                Step::Ask { tool, input } => {
                    let tool_use_id = stream_tool_call(sink, &message_id, tool, input, word_pause, cancel).await?;
                    let outcome = sink.ask(&tool_use_id, tool, input, cancel).await?;
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
        Ok(Some(Usage {
            input_tokens: Some(request.text.split_whitespace().count() as u64),
            output_tokens: Some(words),
            cost_usd: Some(0.0),
            duration_ms: Some(started.elapsed().as_millis() as u64),
        }))
    }
}

impl AgentBackend for ScriptedAgent {
    fn name(&self) -> &'static str {
        "scripted"
    }

    fn run_turn<'a>(
        &'a self,
        request: TurnRequest,
        sink: &'a TurnSink,
    ) -> BoxFuture<'a, Result<Option<Usage>, AgentError>> {
        Box::pin(async move { self.play(&request, sink).await })
    }
}

/// Streams a tool call's arguments the way a model writes them, then marks them complete.
async fn stream_tool_call(
    sink: &TurnSink,
    message_id: &str,
    name: &str,
    input: &Value,
    pause: Duration,
    cancel: &CancellationToken,
) -> Result<String, AgentError> {
    let tool_use_id = format!("toolu_scripted_{}", crate::session::new_id());
    sink.tool_call_started(message_id, &tool_use_id, name).await?;
    // Arguments given as raw text stream as that text.
    let json = match input {
        Value::String(raw) => raw.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    };
    for piece in split_at_char_boundaries(&json, ARGUMENT_CHUNK) {
        wait(pause, cancel).await?;
        sink.tool_input_delta(&tool_use_id, piece).await?;
    }
    sink.tool_call_ready(&tool_use_id, input.clone()).await?;
    Ok(tool_use_id)
}

/// What the person answered, in words, for `{{answer}}`: `"Which auth?"="JWT"` per question.
fn quote(outcome: &InteractionOutcome) -> String {
    match outcome {
        InteractionOutcome::Answered { answers } => answers
            .iter()
            .map(|answer| {
                let mut part = format!("\"{}\"=\"{}\"", answer.question, answer.summary());
                if let Some(notes) = &answer.notes {
                    part.push_str(&format!(" (note: {notes})"));
                }
                part
            })
            .collect::<Vec<_>>()
            .join(", "),
        InteractionOutcome::Declined { reason: None } => "nothing: you skipped the question".into(),
        InteractionOutcome::Declined { reason: Some(reason) } => {
            format!("nothing: you skipped the question ({reason})")
        }
        InteractionOutcome::Expired => "nothing: nobody answered in time".into(),
        InteractionOutcome::Cancelled { reason } => format!("nothing: the question was cancelled ({reason})"),
        InteractionOutcome::Failed { error } => format!("nothing: my question could not be read ({error})"),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
