//! Starting a CLI: spawned with its launch, then asked `initialize` (with our hooks, if any),
//! whose response says what the CLI is and what it offers (models, `/` commands).

use std::time::Duration;

use serde_json::Value;

use super::process::{CliProcess, Launch, Output};
use super::protocol::{self, FromCli, HostRequest, ToCli};
use crate::agent::AgentError;

/// How long the CLI may take to start and answer `initialize`.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A CLI that answered `initialize`, and its answer.
pub async fn start_cli(
    launch: &Launch,
    session: &str,
    hooks: Option<Value>,
) -> Result<(CliProcess, Value), AgentError> {
    let mut process = CliProcess::spawn(launch, session).map_err(|error| {
        AgentError::Failed(format!("could not start Claude Code ({}): {error}", launch.bin.display()))
    })?;
    let request_id = process.request_id();
    process.send(ToCli::ControlRequest { request_id: request_id.clone(), request: HostRequest::Initialize { hooks } });
    let answered = tokio::time::timeout(START_TIMEOUT, async {
        loop {
            match process.output.recv().await {
                Some(Output::Message(FromCli::ControlResponse { response })) if response.request_id() == request_id => {
                    return Some(response);
                }
                Some(Output::Message(_)) => {}
                Some(Output::Closed) | None => return None,
            }
        }
    })
    .await;
    match answered {
        Ok(Some(protocol::ControlResponse::Success { response, .. })) => Ok((process, response)),
        Ok(Some(protocol::ControlResponse::Error { error, .. })) => {
            process.stop().await;
            Err(AgentError::Failed(format!("Claude Code refused to start: {error}")))
        }
        Ok(None) => Err(AgentError::Failed(exit_report(&mut process, "Claude Code exited while starting").await)),
        Err(_) => {
            process.stop().await;
            Err(AgentError::Failed("Claude Code did not start within a minute".into()))
        }
    }
}

/// "Claude Code exited (exit status: 1). Its last output: …"
pub async fn exit_report(process: &mut CliProcess, what: &str) -> String {
    let status = process.exit_status().await;
    let tail = process.stderr_tail();
    if tail.is_empty() {
        format!("{what} ({status}).")
    } else {
        format!("{what} ({status}). Its last output: {}", tail.join(" ⏎ "))
    }
}
