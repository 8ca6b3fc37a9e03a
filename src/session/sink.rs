//! The session's side of a backend's output port: each event the backend reports goes into the
//! session's log (stored, then broadcast), and each question or approval to the bridge.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::log::SessionLog;
use super::runtime::SessionRuntime;
use crate::agent::{AgentError, TurnSink};
use crate::approval::PermissionMode;
use crate::bridge::{InteractionBridge, NoOutcome};
use crate::error::AppError;
use crate::interaction::{InteractionOutcome, InteractionRequest};
use crate::store::StoreError;
use crate::thread::EventBody;

pub(super) struct SessionSink {
    pub log: Arc<SessionLog>,
    pub bridge: Arc<InteractionBridge>,
    pub runtime: Arc<SessionRuntime>,
}

impl TurnSink for SessionSink {
    fn session_id(&self) -> &str {
        self.runtime.id()
    }

    fn emit(&self, body: EventBody) -> BoxFuture<'_, Result<(), AgentError>> {
        Box::pin(async move {
            let stored = match self.runtime.stream_failure() {
                Some(error) => Err(error),
                None if body.is_delta() => self.runtime.stream(self.log.store(), body).await,
                None if SessionRuntime::held_back(&body) => self.runtime.hold(self.log.store(), body).await,
                None => self.runtime.append(self.log.store(), body).await,
            };
            match stored {
                Ok(_) => Ok(()),
                Err(StoreError::SessionNotFound(_)) => Err(AgentError::SessionGone),
                Err(error) => Err(AgentError::Failed(format!("could not store the agent's output: {error}"))),
            }
        })
    }

    fn wait_for_person<'a>(
        &'a self,
        tool_use_id: &'a str,
        request: InteractionRequest,
        parkable: bool,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<InteractionOutcome, AgentError>> {
        Box::pin(async move {
            match self.bridge.wait_for_person(self.session_id(), tool_use_id, request, parkable, cancel).await {
                Ok(outcome) => Ok(outcome),
                Err(NoOutcome::Stopped) => Err(AgentError::Interrupted),
                Err(NoOutcome::Parked) => Err(AgentError::Parked),
                Err(NoOutcome::NotRecorded(AppError::SessionNotFound { .. })) => Err(AgentError::SessionGone),
                Err(NoOutcome::NotRecorded(error)) => {
                    Err(AgentError::Failed(format!("could not store the agent's request: {error}")))
                }
            }
        })
    }

    fn park<'a>(
        &'a self,
        tool_use_id: &'a str,
        request: InteractionRequest,
    ) -> BoxFuture<'a, Result<Option<InteractionOutcome>, AgentError>> {
        Box::pin(async move {
            self.bridge.open_parked(self.session_id(), tool_use_id, request).await.map_err(|error| match error {
                AppError::SessionNotFound { .. } => AgentError::SessionGone,
                error => AgentError::Failed(format!("could not store the agent's request: {error}")),
            })
        })
    }

    fn park_waiting(&self) -> usize {
        self.bridge.park_waiting(Some(self.session_id())).len()
    }

    fn withdraw<'a>(&'a self, tool_use_id: &'a str, reason: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(self.bridge.cancel(self.runtime.id(), tool_use_id, reason))
    }

    fn tool_input<'a>(&'a self, tool_use_id: &'a str) -> BoxFuture<'a, Option<Value>> {
        Box::pin(
            async move { self.runtime.lock().await.thread.tool_call(tool_use_id).and_then(|call| call.input.clone()) },
        )
    }

    fn current_permission_mode(&self) -> BoxFuture<'_, Option<PermissionMode>> {
        Box::pin(async move { self.runtime.lock().await.thread.turn.permission_mode })
    }

    fn current_agent_mode(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move { self.runtime.lock().await.thread.turn.agent_mode.clone() })
    }
}
