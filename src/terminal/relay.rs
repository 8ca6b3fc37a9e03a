//! The server's side of a terminal's hooks: each hook request finds (or makes) the session that
//! stands for its Claude Code session; a PermissionRequest becomes a card, through the same
//! bridge as an agent's, and the hook's request is what waits for it; the other hooks say what
//! the terminal does (working, waiting, idle, ended) for the session list.
//!
//! The reply is the CLI's own (`question_decision`, `approval_reply` of the Claude Code agent): a
//! question's answers go back as `updatedInput.answers`, a denial with the person's message. When
//! the hook's request goes away first (the person answered in the terminal, pressed Esc, the
//! hook's limit passed, or its connection dropped), the card says so, never "answered".

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::sync::mpsc;
use tracing::{info, warn};

use super::wire::{HookInput, HookReply, HookRequest, Withdrawal, Withdrawn};
use crate::agent::claude::protocol::{PermissionReply, permission_request_reply};
use crate::agent::claude::transcripts::{TranscriptError, follow};
use crate::agent::claude::{approval_reply, question_decision};
use crate::approval::Approval;
use crate::error::AppError;
use crate::interaction::{InteractionOutcome, InteractionRequest};
use crate::question::{is_question_tool, normalize_question_args, words};
use crate::session::SessionManager;
use crate::thread::{TerminalState, TerminalSummary};

/// How often a waiting reply sends a space: a connection that is gone is found out, and a proxy
/// sees traffic.
const HEARTBEAT: Duration = Duration::from_secs(15);

/// What the card says when the hook's connection dropped without a word.
const HOOK_GONE: &str = "the terminal's hook stopped waiting (its connection closed)";
/// What the card says when this server stops while a hook waits.
const SERVER_STOPPED: &str = "AskBridge stopped; the terminal asks by itself";
/// What the card says when the terminal's `claude` exited.
const CLAUDE_EXITED: &str = "the terminal's Claude Code exited";
/// How often the `claude` processes of this machine's terminal sessions are looked at: a session
/// shows "Ended" within this much of its `claude` being killed.
const SWEEP_EVERY: Duration = Duration::from_secs(3);
/// At start: what was left open by a server that stopped.
pub const LEFT_OPEN: &str = "AskBridge stopped while the terminal waited; the terminal asked by itself";

pub struct Relay {
    manager: Arc<SessionManager>,
    /// The hooks waiting here, by session: their calls.
    waiting: Mutex<HashMap<String, Vec<String>>>,
    /// Held while a transcript is read and its lines added: one read at a time (a hook's and the
    /// sweep's would take the same lines; the store's compare-and-set keeps servers apart).
    following: tokio::sync::Mutex<()>,
}

impl Relay {
    pub fn new(manager: Arc<SessionManager>) -> Arc<Self> {
        let relay = Arc::new(Self { manager, waiting: Mutex::default(), following: tokio::sync::Mutex::default() });
        relay.sweep_exited();
        relay
    }

    /// The session of the hook's Claude Code session, made at its first hook.
    async fn session_of(&self, request: &HookRequest) -> Result<String, AppError> {
        let input = &request.input;
        let host = clean(&request.host, 255);
        let folder = clean(&input.cwd, 4096);
        let claude = clean(&input.session_id, 255);
        if host.is_empty() || folder.is_empty() || claude.is_empty() {
            return Err(AppError::BadRequest { detail: "a hook request names its host, folder and session".into() });
        }
        let terminal = TerminalSummary {
            host: host.clone(),
            folder: folder.clone(),
            claude_session_id: claude,
            transcript_path: input.transcript_path.as_deref().map(|p| clean(p, 4096)),
            state: TerminalState::Idle,
            state_at_ms: crate::ids::now_ms(),
            process: request.process.clone().map(|mut process| {
                process.boot_id = clean(&process.boot_id, 64);
                process
            }),
        };
        let name = std::path::Path::new(&folder).file_name().map_or(folder.clone(), |n| n.to_string_lossy().into());
        self.manager.terminal_session(&terminal, &format!("{name} · terminal on {host}")).await
    }

    /// Every [`SWEEP_EVERY`] until the server stops: the terminal sessions whose `claude` exited
    /// without a word end, and their cards close saying so.
    fn sweep_exited(self: &Arc<Self>) {
        let relay = Arc::downgrade(self);
        let stop = self.manager.shutdown_token();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(SWEEP_EVERY) => {}
                }
                let Some(relay) = relay.upgrade() else { return };
                match relay.manager.running_terminals(super::process::is_alive).await {
                    Ok(running) => {
                        for (session, terminal) in running {
                            relay.follow(&session).await;
                            relay.take_registry_status(&session, &terminal).await;
                        }
                    }
                    Err(error) => warn!(%error, "could not list the terminals that run here"),
                }
                if let Err(error) = relay.manager.end_exited_terminals(super::process::is_alive, CLAUDE_EXITED).await {
                    warn!(%error, "could not look for terminals whose claude exited");
                }
            }
        });
    }

    /// The prompts and the agent's words the session's transcript gained since it was last read
    /// join the session's thread, when the transcript is on this machine (a terminal elsewhere
    /// shows its cards only). Never in a hook's way: a failure is logged.
    async fn follow(&self, session: &str) {
        let _one_at_a_time = self.following.lock().await;
        let read = match self.manager.terminal_transcript(session).await {
            Ok(Some(read)) => read,
            Ok(None) => return,
            Err(error) => return warn!(%session, %error, "could not find the terminal's transcript"),
        };
        let (path, id, from) = (read.path.clone(), read.claude_session_id.clone(), read.offset);
        let followed = tokio::task::spawn_blocking(move || follow(std::path::Path::new(&path), &id, from)).await;
        let followed = match followed {
            Ok(Ok(followed)) if followed.next != from => followed,
            Ok(Ok(_)) | Ok(Err(TranscriptError::NotFound { .. })) => return,
            Ok(Err(error)) => return warn!(%session, %error, "could not read the terminal's transcript"),
            Err(error) => return warn!(%session, %error, "reading the terminal's transcript failed"),
        };
        if let Err(error) =
            self.manager.add_terminal_conversation(session, &read, followed.next, followed.messages).await
        {
            warn!(%session, %error, "could not add the terminal's conversation");
        }
    }

    /// What the terminal's `claude` says it does (Claude Code's registry), when it said so after
    /// the hooks last did and no hook waits here (a card waiting says what the terminal does).
    async fn take_registry_status(&self, session: &str, terminal: &TerminalSummary) {
        if self.waiting.lock().expect("relay lock").contains_key(session) {
            return;
        }
        let (Some(path), Some(process)) = (&terminal.transcript_path, &terminal.process) else { return };
        let Some((state, at_ms)) =
            super::process::registry_status(std::path::Path::new(path), process, &terminal.claude_session_id)
        else {
            return;
        };
        if state != terminal.state && at_ms > terminal.state_at_ms {
            info!(%session, state = state.as_str(), "the terminal's claude says what it does");
            if let Err(error) = self.manager.set_terminal_state(session, state, None).await {
                warn!(%session, %error, "could not record what the terminal does");
            }
        }
    }

    /// A hook that only tells what the terminal does.
    async fn note(&self, session: &str, input: &HookInput) -> Result<(), AppError> {
        let state = match (input.hook_event_name.as_str(), input.notification_type.as_deref()) {
            ("SessionStart" | "Stop", _) | ("Notification", Some("idle_prompt")) => TerminalState::Idle,
            ("UserPromptSubmit", _) => TerminalState::Working,
            ("Notification", Some("permission_prompt" | "elicitation_dialog")) => TerminalState::Waiting,
            ("SessionEnd", _) => TerminalState::Ended,
            _ => return Ok(()),
        };
        self.manager.set_terminal_state(session, state, input.transcript_path.as_deref()).await?;
        // The turn ended (or `claude` did): what still waits here was settled in the terminal.
        let why = match input.hook_event_name.as_str() {
            "Stop" | "UserPromptSubmit" => Some("answered in the terminal"),
            "SessionEnd" => Some(CLAUDE_EXITED),
            _ => None,
        };
        if let Some(why) = why {
            let calls = self.waiting.lock().expect("relay lock").get(session).cloned().unwrap_or_default();
            for call in calls {
                self.manager.withdraw_terminal_request(session, &call, why).await;
            }
        }
        Ok(())
    }

    /// Starts waiting for the person on a PermissionRequest: the reply's stream, or `None` when
    /// there is nothing to ask here (the terminal asks by itself).
    async fn ask(self: &Arc<Self>, session: String, request: HookRequest) -> Result<Option<Body>, AppError> {
        let input = request.input;
        let (Some(tool), Some(tool_input)) = (input.tool_name.clone(), input.tool_input.clone()) else {
            return Ok(None);
        };
        let tool_use_id = match request.tool_use_id.as_deref().map(|id| clean(id, 200)) {
            Some(id) if !id.is_empty() => id,
            _ => format!("terminal-{}", crate::ids::new_id()),
        };
        let host = clean(&request.host, 255);
        let folder = clean(&input.cwd, 4096);
        let (asked, request) = if is_question_tool(&tool) {
            let Ok(questions) = normalize_question_args(&tool, &tool_input) else {
                warn!(%session, tool, "a terminal's question could not be read; left to the terminal");
                return Ok(None);
            };
            (Asked::Question(tool_input.clone()), InteractionRequest::Question { questions })
        } else {
            let approval = Approval::new(&tool, tool_input.clone()).with_suggestions(&input.permission_suggestions);
            (Asked::Approval(approval.clone()), InteractionRequest::Approval(approval))
        };
        let line = match &asked {
            Asked::Question(_) => format!("Claude Code in a terminal on **{host}**, in `{folder}`, asks you:"),
            Asked::Approval(_) => {
                format!("Claude Code in a terminal on **{host}**, in `{folder}`, asks to use {tool}:")
            }
        };
        let tool_use_id = self.manager.show_terminal_call(&session, &tool_use_id, &tool, tool_input, &line).await?;
        self.manager.set_terminal_state(&session, TerminalState::Waiting, input.transcript_path.as_deref()).await?;

        let first = {
            let mut waiting = self.waiting.lock().expect("relay lock");
            let calls = waiting.entry(session.clone()).or_default();
            calls.push(tool_use_id.clone());
            calls.len() == 1
        };
        if first {
            self.manager.hold_terminal_session(&session).await;
        }
        info!(%session, tool_use_id, tool, "a terminal waits for the person");
        let (replies, body) = mpsc::channel::<Result<String, std::convert::Infallible>>(4);
        let relay = self.clone();
        tokio::spawn(async move { relay.wait(session, tool_use_id, request, asked, replies).await });
        let stream = tokio_stream::wrappers::ReceiverStream::new(body);
        Ok(Some(Body::from_stream(stream)))
    }

    /// The hook's request, waiting: the outcome as the CLI's reply, spaces meanwhile.
    async fn wait(
        self: Arc<Self>,
        session: String,
        tool_use_id: String,
        request: InteractionRequest,
        asked: Asked,
        replies: mpsc::Sender<Result<String, std::convert::Infallible>>,
    ) {
        let manager = &self.manager;
        let stop = manager.shutdown_token();
        let waiting = manager.wait_for_terminal_answer(&session, &tool_use_id, request);
        tokio::pin!(waiting);
        // While the bridge still counts this request as waiting, its cancellation is recorded
        // with the reason given (not as an agent that is gone).
        let withdrawn = |why: &'static str| {
            let (session, tool_use_id) = (session.clone(), tool_use_id.clone());
            async move { manager.withdraw_terminal_request(&session, &tool_use_id, why).await }
        };
        let outcome = loop {
            tokio::select! {
                outcome = &mut waiting => break outcome,
                () = replies.closed() => {
                    let why = if self.claude_exited(&session).await { CLAUDE_EXITED } else { HOOK_GONE };
                    break tokio::join!(withdrawn(why), &mut waiting).1;
                }
                () = stop.cancelled() => break tokio::join!(withdrawn(SERVER_STOPPED), &mut waiting).1,
                () = tokio::time::sleep(HEARTBEAT) => {
                    let _ = replies.send(Ok(" ".into())).await;
                }
            }
        };
        let reply = match &outcome {
            Ok(outcome) => self.reply(&session, &tool_use_id, outcome, &asked).await,
            Err(error) => {
                warn!(%session, tool_use_id, ?error, "a terminal's request ended without an outcome");
                None
            }
        };
        let text = serde_json::to_string(&HookReply { stdout: reply }).unwrap_or_else(|_| "{}".into());
        let _ = replies.send(Ok(text)).await;

        let last = {
            let mut waiting = self.waiting.lock().expect("relay lock");
            let calls = waiting.entry(session.clone()).or_default();
            calls.retain(|call| *call != tool_use_id);
            let last = calls.is_empty();
            if last {
                waiting.remove(&session);
            }
            last
        };
        if last {
            self.manager.let_go_of_terminal_session(&session).await;
            let state = if outcome.as_ref().is_ok_and(InteractionOutcome::is_decision) {
                TerminalState::Working
            } else if self.claude_exited(&session).await {
                // Closed because its `claude` is gone: it stays ended.
                TerminalState::Ended
            } else {
                TerminalState::Idle
            };
            if let Err(error) = self.manager.set_terminal_state(&session, state, None).await {
                warn!(%session, %error, "could not record what the terminal does");
            }
        }
    }

    /// Whether the session's `claude` is known to have exited (this machine can see it).
    async fn claude_exited(&self, session: &str) -> bool {
        let process = self.manager.terminal_process(session).await;
        process.as_ref().and_then(super::process::is_alive) == Some(false)
    }

    /// The hook's stdout for `outcome`, and the result the thread shows for the call.
    async fn reply(
        &self,
        session: &str,
        tool_use_id: &str,
        outcome: &InteractionOutcome,
        asked: &Asked,
    ) -> Option<Value> {
        let decision = match asked {
            Asked::Question(input) => question_decision(outcome, input),
            Asked::Approval(approval) => approval_reply(outcome, approval),
        }?;
        // What the model reads, so that the thread shows it (the terminal runs the tool).
        let result = match (&decision, outcome) {
            (PermissionReply::Deny { message }, _) => Some((message.clone(), true)),
            (_, InteractionOutcome::Answered { answers }) => Some((words::as_tool_result(answers), false)),
            (_, InteractionOutcome::Allowed { .. }) => {
                Some(("Allowed here; the tool runs in the terminal, where its output is.".to_string(), false))
            }
            _ => None,
        };
        if let Some((output, is_error)) = result
            && let Err(error) = self.manager.record_terminal_result(session, tool_use_id, &output, is_error).await
        {
            warn!(session, tool_use_id, %error, "could not record the call's result");
        }
        serde_json::to_value(permission_request_reply(decision)).ok()
    }

    /// The hook's request went away before the person decided here.
    async fn withdraw(&self, withdrawal: Withdrawal) -> Result<(), AppError> {
        let Some(session) = self.manager.find_terminal_session(&withdrawal.host, &withdrawal.claude_session_id).await?
        else {
            return Ok(());
        };
        let waits_here = self
            .waiting
            .lock()
            .expect("relay lock")
            .get(&session)
            .is_some_and(|calls| calls.contains(&withdrawal.tool_use_id));
        // Not waiting any more (the turn's end closed the card first): the result still goes in.
        if waits_here {
            info!(%session, tool_use_id = withdrawal.tool_use_id, why = withdrawal.why.reason(), "a terminal took its request back");
            self.manager.withdraw_terminal_request(&session, &withdrawal.tool_use_id, withdrawal.why.reason()).await;
        }
        let result = match withdrawal.why {
            Withdrawn::AnsweredInTerminal { result: Some(result), is_error } => Some((result, is_error)),
            Withdrawn::TakenBack => Some(("Declined in the terminal.".to_string(), true)),
            _ => None,
        };
        if let Some((output, is_error)) = result {
            let output: String = output.chars().take(64 * 1024).collect();
            self.manager.record_terminal_result(&session, &withdrawal.tool_use_id, &output, is_error).await?;
        }
        Ok(())
    }
}

/// What was asked, to word the reply.
enum Asked {
    /// A question tool's input, to which the answers are added.
    Question(Value),
    Approval(Approval),
}

/// Outside text, cut to a length and without control characters.
fn clean(text: &str, max: usize) -> String {
    text.chars().filter(|c| !c.is_control()).take(max).collect::<String>().trim().to_string()
}

/// `POST /api/terminal/hook`: a hook's request. A PermissionRequest is answered once the person
/// decided (spaces until then); everything else at once.
pub async fn hook(State(relay): State<Arc<Relay>>, body: Bytes) -> Response {
    let request: HookRequest = match read(&body) {
        Ok(request) => request,
        Err(error) => return refuse(error),
    };
    let session = match relay.session_of(&request).await {
        Ok(session) => session,
        Err(error) => return refuse(error),
    };
    // What was said before this hook comes before what it shows.
    relay.follow(&session).await;
    if request.input.hook_event_name != "PermissionRequest" {
        return match relay.note(&session, &request.input).await {
            Ok(()) => Json(HookReply { stdout: None }).into_response(),
            Err(error) => refuse(error),
        };
    }
    match relay.ask(session, request).await {
        Ok(Some(body)) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Ok(None) => Json(HookReply { stdout: None }).into_response(),
        Err(error) => refuse(error),
    }
}

/// `POST /api/terminal/withdraw`: a hook's request went away before the person decided.
pub async fn withdraw(State(relay): State<Arc<Relay>>, body: Bytes) -> Response {
    let withdrawal: Withdrawal = match read(&body) {
        Ok(withdrawal) => withdrawal,
        Err(error) => return refuse(error),
    };
    match relay.withdraw(withdrawal).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(error) => refuse(error),
    }
}

/// A hook's JSON, or the typed error every route answers with (axum's `Json` answers in plain
/// text).
fn read<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, AppError> {
    serde_json::from_slice(body)
        .map_err(|error| AppError::BadRequest { detail: format!("the hook's request: {error}") })
}

fn refuse(error: AppError) -> Response {
    let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, Json(error)).into_response()
}
