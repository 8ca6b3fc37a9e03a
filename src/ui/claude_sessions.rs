//! The sessions Claude Code keeps on this machine: the sidebar's list of them, grouped by folder,
//! and the page of one (`/c/<id>`), its history read from its transcript a page at a time,
//! newest first, with the command that goes on with it in a terminal and **Continue**, which goes
//! on with it here. Read-only: a card in a transcript is answered where its `claude` runs. Drawn
//! through `lazy.rs`, in the session pane's chunk (it shares the thread view and the cards).

use leptos::prelude::*;

use super::navigation::{claude_session_path, session_path, use_location};
use super::pane::pane_header;
use super::server_call::ServerCall;
use super::state::{ThreadState, use_document_title, use_workspace};
use super::thread_view::ThreadView;
use super::time::local_time;
use crate::api::claude_sessions::{
    ClaudeProject, ClaudeSession, ContinueClaudeSession, ListClaudeSessions, LoadTranscript, TranscriptView,
};
use crate::thread::Thread;

/// The list of Claude Code's sessions, loaded when it is first shown.
#[component]
pub fn ClaudeSessionsList() -> impl IntoView {
    let load = ServerCall::<ListClaudeSessions>::new();
    let projects = RwSignal::new(None::<Vec<ClaudeProject>>);
    Effect::new(move |_| load.dispatch(ListClaudeSessions {}, move |list| projects.set(Some(list))));
    let body = move || match projects.get() {
        None if load.problem().is_none() => {
            view! { <p class="empty-list">"Reading Claude Code's sessions…"</p> }.into_any()
        }
        None => view! { <p class="list-problem" role="alert">{load.problem()}</p> }.into_any(),
        Some(list) if list.is_empty() => {
            view! { <p class="empty-list">"Claude Code keeps no sessions on this machine."</p> }.into_any()
        }
        Some(list) => list.into_iter().map(project_view).collect_view().into_any(),
    };
    view! { <div class="claude-list">{body}</div> }
}

fn project_view(project: ClaudeProject) -> impl IntoView {
    let name = folder_name(&project.project);
    let more = (project.more > 0).then(|| {
        view! { <p class="claude-more">{format!("and {} older", project.more)}</p> }
    });
    let items = project
        .sessions
        .into_iter()
        .map(|session| {
            let size = human_size(session.size_bytes);
            view! {
                <li class="session-item">
                    <a class="session-link" href=claude_session_path(&session.id)>
                        <span class="session-name">{session.title}</span>
                        <span class="session-sub">
                            {session.in_terminal.then(|| view! {
                                <span class="status-badge" data-status="working" title="A claude in a terminal is writing it now">
                                    <span class="status-dot" aria-hidden="true"></span>
                                    "In a terminal"
                                </span>
                            })}
                            <span class="session-time">{local_time(session.modified_ms)}</span>
                            <span class="session-size">{size}</span>
                        </span>
                    </a>
                </li>
            }
        })
        .collect_view();
    let (label, path) = (project.project.clone(), project.project);
    view! {
        <section class="claude-project" aria-label=label>
            <h3 class="claude-project-name" title=path>{name}</h3>
            <ul class="session-items">{items}</ul>
            {more}
        </section>
    }
}

/// The page of one Claude Code session.
#[component]
pub fn TranscriptPane(id: String) -> impl IntoView {
    let workspace = use_workspace();
    let location = use_location();
    let id = StoredValue::new(id);
    let load = ServerCall::<LoadTranscript>::new();
    let earlier = ServerCall::<LoadTranscript>::new();
    let go_on = ServerCall::<ContinueClaudeSession>::new();
    let shown = RwSignal::new(None::<(ThreadState, ClaudeSession)>);
    let older = RwSignal::new(None::<String>);
    let command = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        let request = LoadTranscript { id: id.get_value(), before: None, limit: None };
        load.dispatch(request, move |view: TranscriptView| {
            let thread = Thread { messages: view.messages, ..Thread::default() };
            older.set(view.older);
            command.set(view.resume_command);
            shown.set(Some((ThreadState::read_only(view.session.id.clone(), thread), view.session)));
        });
    });
    let show_earlier = move |_| {
        let (Some((thread, _)), Some(before)) = (shown.get_untracked(), older.get_untracked()) else { return };
        let request = LoadTranscript { id: id.get_value(), before: Some(before), limit: None };
        earlier.dispatch(request, move |view: TranscriptView| {
            older.set(view.older);
            thread.prepend(view.messages);
        });
    };
    let continue_here = move |_| {
        go_on.dispatch(ContinueClaudeSession { id: id.get_value() }, move |summary| {
            workspace.drawer_open.set(false);
            location.navigate(&session_path(&summary.id));
        });
    };
    let title = move || shown.with(|s| s.as_ref().map(|(_, session)| session.title.clone()).unwrap_or_default());
    use_document_title(title);
    let in_terminal = move || shown.with(|s| s.as_ref().is_some_and(|(_, session)| session.in_terminal));
    let heading = transcript_heading(shown, title);
    let problem = move || load.problem().or_else(|| earlier.problem()).or_else(|| go_on.problem());
    view! {
        {pane_header(heading)}
        <div class="transcript-bar">
            <p class="transcript-note">
                {move || if in_terminal() {
                    "Read-only: a claude in a terminal is writing this session now. Its questions are answered there."
                } else {
                    "Claude Code's own record of this session, read-only. Continue it here, or in a terminal:"
                }}
            </p>
            {move || command.get().map(resume_command)}
            <button
                class="button primary"
                disabled=move || shown.with(Option::is_none) || in_terminal() || go_on.pending()
                on:click=continue_here
            >
                "Continue here"
            </button>
            <p class="list-problem" role="alert" hidden=move || problem().is_none()>{problem}</p>
        </div>
        {move || match shown.get() {
            None => view! { <section class="welcome"><p>"Reading the transcript…"</p></section> }.into_any(),
            Some((thread, _)) => view! {
                <div class="transcript-earlier" hidden=move || older.with(Option::is_none)>
                    <button class="button small" disabled=move || earlier.pending() on:click=show_earlier>
                        "Show earlier messages"
                    </button>
                </div>
                <ThreadView thread />
            }
            .into_any(),
        }}
    }
}

/// The transcript's heading: its title, and where it runs.
fn transcript_heading(
    shown: RwSignal<Option<(ThreadState, ClaudeSession)>>,
    title: impl Fn() -> String + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let in_terminal = move || shown.with(|s| s.as_ref().is_some_and(|(_, session)| session.in_terminal));
    view! {
        <div class="session-heading">
            <h1 class="session-title" title=title>
                {move || if shown.with(Option::is_some) { title() } else { "Claude Code session".into() }}
            </h1>
            <span class="session-meta">
                <span class="agent-badge">"claude code"</span>
                <span class="status-badge" data-status="working" hidden=move || !in_terminal()>
                    <span class="status-dot" aria-hidden="true"></span>
                    "Running in a terminal"
                </span>
                <span class="agent-info" title=move || shown.with(|s| s.as_ref().map(|(_, s)| s.project.clone()))>
                    // Isolated left-to-right: the box cuts at the start (`rtl`), and a path's
                    // leading slash stays where it is.
                    <bdi>{move || shown.with(|s| s.as_ref().map(|(_, s)| s.project.clone()))}</bdi>
                </span>
            </span>
        </div>
    }
}

/// The command that goes on with a session in a terminal, selectable, with a button that copies it.
pub fn resume_command(command: String) -> impl IntoView {
    let copied = RwSignal::new(false);
    let text = command.clone();
    let copy = move |_| {
        #[cfg(feature = "hydrate")]
        if let Some(window) = web_sys::window() {
            let _ = window.navigator().clipboard().write_text(&text);
            copied.set(true);
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = &text;
    };
    view! {
        <span class="resume-command">
            <input type="text" readonly aria-label="Command to continue in a terminal" value=command spellcheck="false" />
            <button class="button small" on:click=copy>{move || if copied.get() { "Copied" } else { "Copy" }}</button>
        </span>
    }
}

fn folder_name(path: &str) -> String {
    path.rsplit('/').find(|part| !part.is_empty()).unwrap_or("/").to_string()
}

fn human_size(bytes: u64) -> String {
    match bytes {
        0..1_000 => format!("{bytes} B"),
        1_000..1_000_000 => format!("{} kB", bytes / 1_000),
        _ => format!("{:.1} MB", bytes as f64 / 1_000_000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(20_480), "20 kB");
        assert_eq!(human_size(20_971_520), "21.0 MB");
        assert_eq!(folder_name("/home/me/app/"), "app");
        assert_eq!(folder_name("/"), "/");
    }
}
