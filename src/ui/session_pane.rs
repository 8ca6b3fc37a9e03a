//! The open session's pane: its header (title, agent, status, model, permission mode, the bell) and
//! its thread. Drawn through `lazy::session_pane`, so it lives in the WASM chunk that the welcome
//! page loads only when idle (docs/size.md).

use leptos::prelude::*;

use super::agent_choice::{ask_offers_again, models_of, modes_of};
use super::changes_view::panel_button;
use super::claude_sessions::resume_command;
use super::notify::Bell;
use super::pane::{agent_mode_select, mode_select, model_select, pane_header};
use super::panels::{changes_panel, files_panel, terminal_panel, worktree_panel};
use super::server_call::ServerCall;
use super::state::{ThreadState, use_document_title, use_workspace};
use super::thread_view::ThreadView;
use super::time::local_time;
use super::usage::{context_line, session_tokens};
use crate::api::worktree::WorktreeStatus;
use crate::api::{SetAgentMode, SetModel, SetPermissionMode};
use crate::approval::PermissionMode;
use crate::changes::Worktree;
use crate::interaction::InteractionRequest;
use crate::thread::{EventBody, SessionEvent, SessionStatus, SessionSummary, TurnOutcome};

/// A live event of the open session, as JSON: read, folded into its thread, and announced when it
/// asks the person something. Reached from the first load through `lazy::read_live_event`, so that
/// the code that reads events stays in this chunk.
pub fn apply_live_event(thread: ThreadState, bell: Bell, json: &str) -> bool {
    let Ok(event) = serde_json::from_str::<SessionEvent>(json) else { return true };
    thread.apply(&event);
    if let EventBody::InteractionOpened { tool_use_id, request, .. } = &event.body {
        match request {
            InteractionRequest::Question { questions } if !questions.is_empty() => {
                bell.announce("The agent asks you something", &questions[0].question, tool_use_id);
            }
            InteractionRequest::Approval(approval) => {
                let what = approval.description.clone().unwrap_or_else(|| approval.tool.clone());
                bell.announce("The agent asks your permission", &what, tool_use_id);
            }
            _ => {}
        }
    }
    true
}

#[component]
pub fn SessionPane(thread: ThreadState, initial: SessionSummary) -> impl IntoView {
    let workspace = use_workspace();
    super::box_keys::install();
    super::presence::report_while_shown(initial.id.clone());
    let id = initial.id.clone();
    // The title and state follow the live session list.
    let summary = Memo::new(move |_| {
        workspace.sessions.with(|list| list.iter().find(|s| s.id == id).cloned()).unwrap_or_else(|| initial.clone())
    });
    let title = move || summary.with(|s| s.title.clone());
    use_document_title(title);
    let default_workdir = workspace.default_workdir.get_value();
    let run_here = Memo::new(move |_| summary.with(|s| s.terminal.is_none()));
    let changes_open = RwSignal::new(false);
    let files_open = RwSignal::new(false);
    let terminal_open = RwSignal::new(false);
    let worktree_open = RwSignal::new(false);
    one_at_a_time([changes_open, files_open, terminal_open, worktree_open]);
    let worktree = worktree_of(thread);
    let info = move || thread.turn.with(|t| t.agent_info.clone().unwrap_or_default());
    // For an agent with a process: whether it runs now (a message starts it again), in the
    // info's tooltip: beside the status it read as a second status.
    let info_title = move || {
        thread.turn.with(|t| match t.agent_running {
            Some(true) => format!("{} (its process is running)", info()),
            Some(false) => format!("{} (its process has exited; a message starts it again)", info()),
            None => info(),
        })
    };
    let heading = view! {
        <div class="session-heading">
            <h1 class="session-title" title=title>{title}</h1>
            <span class="session-meta">
                {turn_status(thread, summary)}
                <span class="agent-badge">{move || summary.with(|s| s.agent.clone())}</span>
                {move || worktree.with(|w| w.as_ref().map(|w| view! {
                    <span class="session-branch" title=format!("Works in a worktree of its own, on the branch {} from {}", w.branch, w.base)>
                        {format!("⎇ {}", w.branch)}
                    </span>
                }))}
                <span class="agent-info" title=info_title><bdi>{info}</bdi></span>
                <span class="session-cost" title="What this session has cost so far">
                    {move || thread.turn.with(|t| t.total_cost_usd.filter(|c| *c > 0.0).map(|c| format!("${c:.4}")))}
                </span>
                <span class="session-tokens" title="Tokens this session used so far (in, out and cached)">
                    {move || thread.turn.with(|t| t.total_usage.as_ref().and_then(session_tokens))}
                </span>
                <span class="session-context" title="How full the model's context window was at the last turn">
                    {move || thread.turn.with(|t| t.total_usage.as_ref().and_then(context_line)).map(|c| format!("context {c}"))}
                </span>
                // Claude Code's session, also the one Claude's ACP adapter runs; another agent's id
                // is no `claude --resume`'s.
                {move || summary.with(|s| s.agent.starts_with("claude")).then(|| terminal_command(summary.get().workdir.or(default_workdir.clone()), thread.turn.with(|t| t.agent_session.clone())))}
            </span>
        </div>
        // The terminal's own mode and model rule there. Drawn again only when that changes, not at
        // every change of the session's summary (a select open at the time closed).
        {move || run_here.get().then(|| view! {
            <div class="session-switches">
                {model_switcher(thread, summary.with_untracked(|s| s.agent.clone()))}
                {mode_switcher(thread, summary.with_untracked(|s| s.agent.clone()))}
                {panel_button("Changes", "changes-panel", changes_open)}
                {panel_button("Files", "files-panel", files_open)}
                {panel_button("Terminal", "terminal-panel", terminal_open)}
                {move || worktree.with(Option::is_some).then(|| panel_button("Worktree", "worktree-panel", worktree_open))}
            </div>
        })}
    };
    view! {
        {pane_header(heading)}
        <ThreadView thread />
        {move || changes_open.get().then(|| changes_panel(thread, changes_open))}
        {move || files_open.get().then(|| files_panel(thread, files_open))}
        {move || terminal_open.get().then(|| terminal_panel(thread, terminal_open))}
        {move || worktree_open.get().then(|| worktree_panel(thread, worktree_open, worktree))}
    }
}

/// The session's worktree, when it works in one of its own: asked when the pane opens, and again
/// as each turn ends (the agent may have committed).
fn worktree_of(thread: ThreadState) -> RwSignal<Option<Worktree>> {
    let worktree = RwSignal::new(None);
    let status = ServerCall::<WorktreeStatus>::new();
    let session = thread.session_id.get_value();
    Effect::new(move |_| {
        if !thread.turn.with(|t| t.working) {
            status.dispatch(WorktreeStatus { session: session.clone() }, move |now| worktree.set(now));
        }
    });
    worktree
}

/// The side panels: opening one closes the others.
fn one_at_a_time<const N: usize>(panels: [RwSignal<bool>; N]) {
    for (i, panel) in panels.into_iter().enumerate() {
        Effect::new(move |_| {
            if panel.get() {
                panels.iter().enumerate().filter(|(j, _)| *j != i).for_each(|(_, other)| other.set(false));
            }
        });
    }
}

/// The Claude session this one runs (its id), and the command that goes on with it in a
/// terminal, to copy: the new turns land in Claude Code's own transcript, which `claude --resume`
/// reads.
fn terminal_command(folder: Option<String>, agent_session: Option<String>) -> Option<impl IntoView> {
    let (folder, id) = (folder?, agent_session?);
    let short = id.chars().take(8).collect::<String>();
    let command = format!("cd {} && claude --resume {}", shell_quoted(&folder), shell_quoted(&id));
    Some(view! {
        <details class="terminal-command">
            <summary title=format!("Claude session {id}")>{format!("Claude session {short}…")}</summary>
            <div class="terminal-command-box">{resume_command(command)}</div>
        </details>
    })
}

/// `text` as one word for a POSIX shell.
fn shell_quoted(text: &str) -> String {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+=:@".contains(&b)) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// The model of the session's next turns, from what its agent lists; a running Claude Code
/// switches at once. None for an agent that lists no models.
fn model_switcher(thread: ThreadState, agent: String) -> impl IntoView {
    let current = Memo::new(move |_| thread.turn.with(|t| t.model.clone().unwrap_or_default()));
    let call = ServerCall::<SetModel>::new();
    // Redraws the select when a switch fails, so that it shows the model that holds.
    let redraw = RwSignal::new(0u32);
    let session = thread.session_id;
    let switch = move |picked: String| {
        let input = SetModel { session: session.get_value(), model: Some(picked) };
        call.dispatch_then(input, move |result| {
            if result.is_err() {
                redraw.update(|n| *n += 1);
            }
        });
    };
    let problem = move || call.problem();
    // Drawn once the agents' models are known, for an agent that lists some.
    let select = move || {
        redraw.track();
        let models = models_of(&agent).filter(|models| !models.is_empty())?;
        Some(model_select(models, current.get(), switch))
    };
    view! {
        <div class="mode-switcher">
            {select}
            <span class="mode-problem" role="alert" hidden=move || problem().is_none()>
                {problem}
            </span>
        </div>
    }
}

/// The session's permission mode, switchable while it runs: the agent's own modes for an agent
/// that names its own (an ACP agent), else AskBridge's.
fn mode_switcher(thread: ThreadState, agent: String) -> impl IntoView {
    let current = Memo::new(move |_| thread.turn.with(|t| t.permission_mode.unwrap_or_default()));
    let current_own = Memo::new(move |_| thread.turn.with(|t| t.agent_mode.clone()));
    let call = ServerCall::<SetPermissionMode>::new();
    let own_call = ServerCall::<SetAgentMode>::new();
    // Redraws the select when a switch fails, so that it shows the mode that holds.
    let redraw = RwSignal::new(0u32);
    let failed = move |result: Result<(), crate::error::AppError>| {
        if result.is_err() {
            redraw.update(|n| *n += 1);
        }
    };
    let session = thread.session_id;
    let switch = move |chosen: PermissionMode| {
        // `mode_select` asked the person before bypass could be chosen.
        let input = SetPermissionMode { session: session.get_value(), mode: chosen, confirm_bypass: true };
        call.dispatch_then(input, failed);
    };
    let switch_own = move |chosen: String| {
        let input = SetAgentMode { session: session.get_value(), mode: chosen, confirm_bypass: true };
        own_call.dispatch_then(input, failed);
    };
    let problem = move || call.problem().or_else(|| own_call.problem());
    // The agent says it is in a mode of its own that this page was not offered: it started after
    // the page asked what the agents offer.
    let asked_again = StoredValue::new(false);
    let named = agent.clone();
    Effect::new(move |_| {
        if current_own.with(Option::is_some) && modes_of(&named).is_empty() && !asked_again.get_value() {
            asked_again.set_value(true);
            ask_offers_again();
        }
    });
    let select = move || {
        redraw.track();
        let modes = modes_of(&agent);
        if modes.is_empty() {
            return mode_select(current.get(), switch).into_any();
        }
        // Before the agent said which of its modes it is in: the one like the session's.
        let own = current_own.get().filter(|id| modes.iter().any(|m| m.id == *id));
        let own = own.or_else(|| modes.iter().find(|m| m.acts_as == current.get()).map(|m| m.id.clone()));
        agent_mode_select(modes, own.unwrap_or_default(), switch_own).into_any()
    };
    view! {
        <div class="mode-switcher">
            {select}
            <span class="mode-problem" role="alert" hidden=move || problem().is_none()>
                {problem}
            </span>
        </div>
    }
}

/// The session's status in the vocabulary the list and the cards share, and how its last turn
/// ended when that is worth knowing.
fn turn_status(thread: ThreadState, summary: Memo<SessionSummary>) -> impl IntoView {
    // A terminal's session stands where its `claude` does, as the list says.
    let terminal = move || summary.with(|s| s.terminal.is_some());
    let status = Memo::new(move |_| match terminal() {
        true => summary.with(SessionSummary::status),
        false => SessionStatus::of(thread.turn.with(|t| t.working), thread.waiting.get()),
    });
    let last = move || {
        if terminal() {
            return None;
        }
        thread.turn.with(|turn| match (&turn.last_outcome, turn.working) {
            (_, true) => None,
            (Some(TurnOutcome::Interrupted), _) => Some("last turn stopped"),
            (Some(TurnOutcome::Failed { .. }), _) => Some("last turn failed"),
            (Some(TurnOutcome::Abandoned), _) => Some("last turn cut short"),
            _ => None,
        })
    };
    view! {
        <span class="turn-status" data-status=move || status.get().key() data-last=move || last().unwrap_or_default() role="status" aria-label="Session status">
            <span class="status-dot" aria-hidden="true"></span>
            <span class="status-label" aria-hidden="true">{move || status.get().label()}</span>
            <span class="status-note" aria-hidden="true">{move || last().map(|note| format!(" · {note}"))}</span>
            {move || (status.get() == SessionStatus::Ended).then(|| {
                let at = summary.with(|s| s.terminal.as_ref().map_or(0, |t| t.state_at_ms));
                view! { <span class="status-note">" at "{local_time(at)}</span> }
            })}
            <span class="sr-only">{move || status.get().explained()} {move || last().map(|note| format!(" ({note})"))}</span>
        </span>
    }
}

#[cfg(test)]
mod tests {
    use super::shell_quoted;

    #[test]
    fn folders_and_ids_are_one_word_for_the_shell() {
        assert_eq!(shell_quoted("/home/me/app"), "/home/me/app");
        assert_eq!(shell_quoted("/home/me/my app"), "'/home/me/my app'");
        assert_eq!(shell_quoted("it's"), "'it'\\''s'");
        assert_eq!(shell_quoted("$(rm -rf ~)"), "'$(rm -rf ~)'");
        assert_eq!(shell_quoted(""), "''");
    }
}
