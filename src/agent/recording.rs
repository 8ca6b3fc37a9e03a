//! A sink that keeps what a backend reports instead of storing it: the events in order, the
//! thread they fold into, and the answers it gave on the person's behalf. For testing a backend
//! without a session, a database or a browser.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{AgentError, Sink, TurnSink};
use crate::approval::PermissionMode;
use crate::interaction::{InteractionOutcome, InteractionRequest};
use crate::thread::{EventBody, SessionEvent, Thread};

/// How the stand-in person answers each request.
type Person = Box<dyn Fn(&InteractionRequest) -> InteractionOutcome + Send + Sync>;

pub struct RecordingSink {
    session: String,
    person: Person,
    recorded: Mutex<Recorded>,
}

#[derive(Default)]
struct Recorded {
    events: Vec<EventBody>,
    thread: Thread,
}

impl RecordingSink {
    /// A sink for session `session` whose person answers every request with `person`.
    pub fn new(
        session: &str,
        person: impl Fn(&InteractionRequest) -> InteractionOutcome + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(Self { session: session.to_string(), person: Box::new(person), recorded: Mutex::default() })
    }

    /// As a backend takes it.
    pub fn sink(self: &Arc<Self>) -> Sink {
        self.clone()
    }

    /// Every event reported so far, in order.
    pub fn events(&self) -> Vec<EventBody> {
        self.recorded.lock().expect("recording lock").events.clone()
    }

    /// The thread the events fold into.
    pub fn thread(&self) -> Thread {
        self.recorded.lock().expect("recording lock").thread.clone()
    }

    fn record(&self, body: EventBody) {
        let mut recorded = self.recorded.lock().expect("recording lock");
        let event = SessionEvent { seq: recorded.thread.seq + 1, at_ms: 0, body };
        recorded.thread.apply(&event);
        recorded.events.push(event.body);
    }
}

impl TurnSink for RecordingSink {
    fn session_id(&self) -> &str {
        &self.session
    }

    fn emit(&self, body: EventBody) -> BoxFuture<'_, Result<(), AgentError>> {
        self.record(body);
        Box::pin(async { Ok(()) })
    }

    fn wait_for_person<'a>(
        &'a self,
        tool_use_id: &'a str,
        request: InteractionRequest,
        _parkable: bool,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<InteractionOutcome, AgentError>> {
        let outcome = (self.person)(&request);
        let tool_use_id = tool_use_id.to_string();
        self.record(EventBody::InteractionOpened { tool_use_id: tool_use_id.clone(), request, expires_at_ms: None });
        self.record(EventBody::InteractionResolved { tool_use_id, outcome: outcome.clone() });
        Box::pin(async move { Ok(outcome) })
    }

    /// Parks it, as the session would: the person answers on the next `wait_for_person` or
    /// `park` for the same id (a resumed turn asks again).
    fn park<'a>(
        &'a self,
        tool_use_id: &'a str,
        request: InteractionRequest,
    ) -> BoxFuture<'a, Result<Option<InteractionOutcome>, AgentError>> {
        let decided = self
            .recorded
            .lock()
            .expect("recording lock")
            .thread
            .tool_call(tool_use_id)
            .and_then(|call| call.interaction.as_ref().filter(|i| i.parked).map(|_| (self.person)(&request)));
        if let Some(outcome) = decided {
            self.record(EventBody::InteractionResolved {
                tool_use_id: tool_use_id.to_string(),
                outcome: outcome.clone(),
            });
            return Box::pin(async move { Ok(Some(outcome)) });
        }
        self.record(EventBody::InteractionOpened {
            tool_use_id: tool_use_id.to_string(),
            request,
            expires_at_ms: None,
        });
        self.record(EventBody::InteractionParked { tool_use_id: tool_use_id.to_string() });
        Box::pin(async { Ok(None) })
    }

    fn park_waiting(&self) -> usize {
        0
    }

    fn withdraw<'a>(&'a self, tool_use_id: &'a str, reason: &'a str) -> BoxFuture<'a, ()> {
        let outcome = InteractionOutcome::Cancelled { reason: reason.to_string() };
        self.record(EventBody::InteractionResolved { tool_use_id: tool_use_id.to_string(), outcome });
        Box::pin(async {})
    }

    fn tool_input<'a>(&'a self, tool_use_id: &'a str) -> BoxFuture<'a, Option<Value>> {
        let input =
            self.recorded.lock().expect("recording lock").thread.tool_call(tool_use_id).and_then(|c| c.input.clone());
        Box::pin(async move { input })
    }

    fn current_permission_mode(&self) -> BoxFuture<'_, Option<PermissionMode>> {
        let mode = self.recorded.lock().expect("recording lock").thread.turn.permission_mode;
        Box::pin(async move { mode })
    }

    fn current_agent_mode(&self) -> BoxFuture<'_, Option<String>> {
        let mode = self.recorded.lock().expect("recording lock").thread.turn.agent_mode.clone();
        Box::pin(async move { mode })
    }
}
