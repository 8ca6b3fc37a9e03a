//! A session's opening with an ACP agent: `initialize`, the sign-in where the agent asks for one,
//! the session itself (the earlier conversation reopened with `session/resume` or `session/load`
//! where the agent offers them, else a new one), and the mode it is to work in.

use std::path::Path;

use serde_json::json;
use tracing::warn;

use super::connection::{CallError, Connection, Inbound};
use super::modes::{self, AgentModes};
use super::turn;
use super::wire::{self, Initialized, SessionStarted};
use crate::agent::{AgentError, Sink, TurnRequest};
use crate::thread::SlashCommand;

/// `initialize`, authentication where the agent asks for it, and the session.
pub(super) async fn open(
    connection: &Connection,
    workdir: &Path,
    earlier: Option<&str>,
) -> Result<(Initialized, SessionStarted, String, bool), CallError> {
    let initialized: Initialized =
        serde_json::from_value(connection.call("initialize", wire::initialize_params()).await?).unwrap_or_default();
    let cwd = workdir.display().to_string();
    if let Some(earlier) = earlier {
        let capabilities = &initialized.agent_capabilities;
        let method = match (capabilities.load_session, capabilities.resumes()) {
            (_, true) => Some("session/resume"),
            (true, false) => Some("session/load"),
            _ => None,
        };
        if let Some(method) = method {
            let params = json!({"sessionId": earlier, "cwd": cwd, "mcpServers": []});
            match connection.call(method, params).await {
                Ok(result) => {
                    let started = serde_json::from_value(result).unwrap_or_default();
                    return Ok((initialized, started, earlier.to_string(), true));
                }
                Err(error) => warn!(%error, method, "the ACP agent could not reopen its conversation"),
            }
        }
    }
    let new = json!({"cwd": cwd, "mcpServers": []});
    let result = match connection.call("session/new", new.clone()).await {
        Ok(result) => result,
        Err(CallError::Rpc(refused)) if !initialized.auth_methods.is_empty() => {
            authenticate(connection, &initialized).await.map_err(|_| CallError::Rpc(refused))?;
            connection.call("session/new", new).await?
        }
        Err(error) => return Err(error),
    };
    let started: SessionStarted = serde_json::from_value(result).unwrap_or_default();
    let id = started.session_id.clone().unwrap_or_default();
    if id.is_empty() {
        return Err(CallError::Exited(": its session/new named no session".into()));
    }
    Ok((initialized, started, id, false))
}

/// Signs in with the first method that works without a person: those the agent marks as taking
/// a key or a gateway from the environment (Gemini's `gateway`, `gemini-api-key`; Codex's
/// `api-key`), never a browser login.
async fn authenticate(connection: &Connection, initialized: &Initialized) -> Result<(), CallError> {
    let mut last = Err(CallError::Exited(": it asks for a login AskBridge cannot do".into()));
    for method in &initialized.auth_methods {
        let unattended = method.id.contains("key") || method.id.contains("gateway");
        if !unattended {
            continue;
        }
        last = connection.call("authenticate", json!({"methodId": method.id})).await.map(drop);
        if last.is_ok() {
            return Ok(());
        }
    }
    last
}

/// Reads away what the agent sent while its session opened (the replay of a loaded one), but its
/// `/` commands.
pub(super) async fn drain(connection: &Connection) -> Option<Vec<SlashCommand>> {
    let mut inbox = connection.inbox.lock().await;
    let mut commands = None;
    while let Ok(inbound) = inbox.try_recv() {
        match inbound {
            Inbound::Request { id, .. } => connection.respond(
                &id,
                Err(wire::RpcError { code: wire::METHOD_NOT_FOUND, message: "not now".into(), data: None }),
            ),
            Inbound::Notification { method, params } if method == "session/update" => {
                commands = turn::commands_in(params).or(commands);
            }
            Inbound::Notification { .. } | Inbound::Closed(_) => {}
        }
    }
    commands
}

/// Puts the agent's new session in the mode the session asks for (its own choice among the
/// agent's, else the agent's like of AskBridge's), and tells the thread which mode it is in.
pub(super) async fn put_in_mode(
    connection: &Connection,
    acp_session: &str,
    modes: &AgentModes,
    request: &TurnRequest,
    sink: &Sink,
) -> Result<(), AgentError> {
    let mut now = modes.current.clone();
    let wanted = modes.chosen(request.agent_mode.as_deref(), request.permission_mode.unwrap_or_default());
    if let Some(target) = wanted.filter(|target| *target != now) {
        let (method, params) = modes.switch(acp_session, &target);
        match connection.call(method, params).await {
            Ok(_) => now = target,
            Err(error) => warn!(%error, target, "the ACP agent did not take the session's permission mode"),
        }
    }
    if modes.has(&now) {
        sink.agent_mode(modes::acts_as(&now), &now).await?;
    }
    Ok(())
}
