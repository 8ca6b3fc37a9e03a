//! The sessions Claude Code keeps on this machine, for the browser: the list (grouped by working
//! folder, newest first) and one session's history, a page at a time, newest first. Read-only:
//! `agent::claude::transcripts` reads the CLI's own files and never writes them, and names from
//! the browser are only ever looked up among the files it lists.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use server_fn::codec::Json;

use crate::error::AppError;
use crate::thread::Message;

/// One Claude Code session, as the list shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaudeSession {
    /// Claude Code's session id (`claude --resume <id>`).
    pub id: String,
    /// Its summary, or the first thing the person wrote.
    pub title: String,
    /// The folder it ran in.
    pub project: String,
    /// When its transcript was last written, ms since the epoch.
    pub modified_ms: i64,
    pub size_bytes: u64,
    /// A `claude` outside AskBridge (in a terminal) is writing it right now: read-only here until
    /// that process ends.
    pub in_terminal: bool,
}

/// The sessions of one working folder, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaudeProject {
    pub project: String,
    pub sessions: Vec<ClaudeSession>,
    /// Older sessions of the folder that the list leaves out.
    pub more: usize,
}

/// Sessions shown per folder; older ones are counted in `ClaudeProject::more`.
pub const SESSIONS_PER_PROJECT: usize = 20;

/// A page of a session's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranscriptView {
    pub session: ClaudeSession,
    /// Oldest first; the newest page comes first.
    pub messages: Vec<Message>,
    /// Pass as `before` for the page before this one; `None` at the transcript's start.
    pub older: Option<String>,
    /// Where to go on with it in a terminal: `cd <folder> && claude --resume <id>`.
    pub resume_command: Option<String>,
}

/// Every Claude Code session on this machine, grouped by working folder, but those AskBridge's
/// own sessions hold (it runs them, or they were continued here: they are in the session list).
/// Empty where Claude Code keeps none (no `~/.claude/projects`).
#[server(input = Json, endpoint = "list_claude_sessions")]
pub async fn list_claude_sessions() -> Result<Vec<ClaudeProject>, AppError> {
    use crate::agent::claude::transcripts::ProjectsDir;
    let Some(dir) = ProjectsDir::from_env() else { return Ok(Vec::new()) };
    let ours = super::manager()?.agent_sessions().await?;
    let groups = blocking(move || Ok(dir.list())).await?;
    Ok(groups
        .into_iter()
        .filter_map(|group| {
            let sessions: Vec<_> = group.sessions.iter().filter(|s| !ours.contains(&s.id)).collect();
            (!sessions.is_empty()).then(|| ClaudeProject {
                project: group.project,
                more: sessions.len().saturating_sub(SESSIONS_PER_PROJECT),
                sessions: sessions.into_iter().take(SESSIONS_PER_PROJECT).map(ssr::session_of).collect(),
            })
        })
        .collect())
}

/// The newest `limit` messages of Claude Code session `id` (at most 500; 50 when not given), or
/// those before `before` (a page's `older`).
#[server(input = Json, endpoint = "load_transcript")]
pub async fn load_transcript(
    id: String,
    #[server(default)] before: Option<String>,
    #[server(default)] limit: Option<usize>,
) -> Result<TranscriptView, AppError> {
    use crate::agent::claude::transcripts::{Cursor, DEFAULT_PAGE, ProjectsDir};
    let dir = ProjectsDir::from_env().ok_or_else(|| AppError::SessionNotFound { id: id.chars().take(80).collect() })?;
    let before = match before {
        Some(cursor) => Some(
            cursor
                .parse::<Cursor>()
                .map_err(|_| AppError::BadRequest { detail: "not a place in a transcript".into() })?,
        ),
        None => None,
    };
    blocking(move || {
        let summary = dir.summary(&id)?;
        let page = dir.page(&id, before.as_ref(), limit.unwrap_or(DEFAULT_PAGE))?;
        let resume_command = dir.resume_target(&id).ok().map(|target| target.command);
        Ok(TranscriptView {
            session: ssr::session_of(&summary),
            messages: page.messages,
            older: page.older.map(|cursor| cursor.to_string()),
            resume_command,
        })
    })
    .await
}

/// Messages of a continued session's history taken into the new session: the newest ones (the
/// whole transcript stays readable on its own page).
pub const CONTINUED_MESSAGES: usize = 200;

/// Continues Claude Code session `id` in AskBridge: a new session in its folder, with its history
/// (the newest `CONTINUED_MESSAGES` messages), whose next message runs `claude --resume <id>` so
/// that the new turns land in the same transcript (and `claude --resume` in a terminal goes on
/// from them). Refused while a `claude` in a terminal is writing it.
#[server(input = Json, endpoint = "continue_claude_session")]
pub async fn continue_claude_session(id: String) -> Result<crate::thread::SessionSummary, AppError> {
    use crate::agent::claude::transcripts::ProjectsDir;
    let manager = super::manager()?;
    if manager.agent_name() != "claude" {
        return Err(AppError::BadRequest {
            detail: "continuing a Claude Code session needs the Claude Code agent (start the server with \
                     --agent claude, or with claude installed and logged in)"
                .into(),
        });
    }
    let dir = ProjectsDir::from_env().ok_or_else(|| AppError::SessionNotFound { id: id.chars().take(80).collect() })?;
    let read = id.clone();
    let (summary, folder, messages) = blocking(move || {
        let summary = dir.summary(&read)?;
        let target = dir.resume_target(&read)?;
        let mut messages = Vec::new();
        let mut before = None;
        while messages.len() < CONTINUED_MESSAGES {
            let page = dir.page(&read, before.as_ref(), CONTINUED_MESSAGES - messages.len())?;
            let older = page.older;
            messages.splice(0..0, page.messages);
            match older {
                Some(cursor) => before = Some(cursor),
                None => break,
            }
        }
        Ok((summary, target.folder, messages))
    })
    .await?;
    if summary.running.as_ref().is_some_and(|writer| !writer.ours) {
        return Err(AppError::AgentBusy);
    }
    let history = Some((id, ssr::finished(messages)));
    let folder = folder.display().to_string();
    // Claude Code's own transcript goes on with Claude Code, whatever new sessions get here.
    let title = crate::thread::title_from_message(summary.title());
    let new = crate::session::NewSession {
        workdir: Some(&folder),
        agent: Some(crate::agent::claude::AGENT_NAME),
        history,
        title: Some(&title),
        ..Default::default()
    };
    manager.create_session_with(new).await
}

/// Runs the transcripts reader, which blocks on the file system, off the async threads.
#[cfg(feature = "ssr")]
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, crate::agent::claude::transcripts::TranscriptError> + Send + 'static,
) -> Result<T, AppError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result.map_err(AppError::from),
        Err(error) => Err(AppError::Internal { detail: format!("reading Claude Code's transcripts failed: {error}") }),
    }
}

#[cfg(feature = "ssr")]
mod ssr {
    use super::ClaudeSession;
    use crate::agent::claude::transcripts::TranscriptSummary;
    use crate::interaction::InteractionOutcome;
    use crate::thread::{Block, Message, ToolStatus};

    /// A transcript's messages as a continued session's history: nothing in it is still open
    /// here. A question or a tool call left unfinished at the transcript's end belonged to the
    /// `claude` that wrote it; the resumed one decides anew.
    pub fn finished(mut messages: Vec<Message>) -> Vec<Message> {
        for message in &mut messages {
            message.streaming = false;
            for block in &mut message.blocks {
                let Block::ToolCall(call) = block else { continue };
                if !call.status.is_finished() {
                    call.status = ToolStatus::Cancelled;
                }
                if let Some(interaction) = call.interaction.as_mut().filter(|i| i.outcome.is_none()) {
                    interaction.outcome = Some(InteractionOutcome::Cancelled {
                        reason: "it was left unanswered in the transcript this session continues".into(),
                    });
                }
            }
        }
        messages
    }

    pub fn session_of(summary: &TranscriptSummary) -> ClaudeSession {
        ClaudeSession {
            id: summary.id.clone(),
            title: summary.title().to_string(),
            project: summary.project.clone(),
            modified_ms: summary.modified_ms,
            size_bytes: summary.size_bytes,
            // AskBridge's own CLIs are not "in a terminal": their sessions are ours to continue.
            in_terminal: summary.running.as_ref().is_some_and(|writer| !writer.ours),
        }
    }
}
