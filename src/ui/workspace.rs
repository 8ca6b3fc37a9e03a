//! The workspace page: the session list beside the open session (or a welcome when none is
//! open), loaded on the server, then kept live in the browser.

use leptos::prelude::*;

use super::composer::Composer;
use super::icons;
use super::navigation::{Page, use_location};
use super::session_list::SessionList;
use super::state::{ThreadState, Workspace, use_document_title, use_workspace};
use super::thread_view::ThreadView;
use crate::error::AppError;
use crate::live::ConnectionStatus;
use crate::session::{WorkspaceData, load_workspace};
use crate::thread::{SessionSummary, TurnOutcome};

#[component]
pub fn Workspace() -> impl IntoView {
    let location = use_location();
    let session_id = Memo::new(move |_| match location.page() {
        Page::Session(id) => Some(id),
        _ => None,
    });
    // One request for the list and the open session, on the server for the first page and on
    // each switch after.
    let data = Resource::new(move || session_id.get(), load_workspace);
    view! {
        <Transition fallback=|| view! { <div class="page-loading" role="status">"Loading…"</div> }>
            {move || Suspend::new(async move { view! { <WorkspaceView data=data.await /> } })}
        </Transition>
    }
}

#[component]
fn WorkspaceView(data: Result<WorkspaceData, AppError>) -> impl IntoView {
    let WorkspaceData { sessions, current, problem } =
        data.unwrap_or_else(|error| WorkspaceData { sessions: Vec::new(), current: None, problem: Some(error) });
    let workspace = Workspace {
        sessions: RwSignal::new(sessions),
        connection: RwSignal::new(ConnectionStatus::Connecting),
        drawer_open: RwSignal::new(false),
        hydrated: RwSignal::new(false),
    };
    provide_context(workspace);

    let (thread, summary) = match current {
        Some(view) => (Some(ThreadState::new(view.summary.id.clone(), view.thread)), Some(view.summary)),
        None => (None, None),
    };
    #[cfg(feature = "ssr")]
    if let Some(error) = &problem
        && let Some(response) = use_context::<leptos_axum::ResponseOptions>()
        && let Ok(status) = axum::http::StatusCode::from_u16(error.status())
    {
        response.set_status(status);
    }

    Effect::new(move |_| workspace.hydrated.set(true));
    connect_live(workspace, thread);

    let current_id = summary.as_ref().map(|s| s.id.clone());
    let pane = match (thread, summary, problem) {
        (Some(thread), Some(summary), _) => view! { <SessionPane thread initial=summary /> }.into_any(),
        (_, _, Some(problem)) => problem_pane(problem).into_any(),
        _ => welcome_pane().into_any(),
    };
    view! {
        <div class="workspace" class:drawer-open=move || workspace.drawer_open.get()>
            <SessionList current=current_id />
            <div class="scrim" aria-hidden="true" on:click=move |_| workspace.drawer_open.set(false)></div>
            <main class="pane">{pane}</main>
        </div>
    }
}

/// Opens the tab's live stream once the page is interactive, and closes it with the page.
#[allow(unused_variables)]
fn connect_live(workspace: Workspace, thread: Option<ThreadState>) {
    #[cfg(feature = "hydrate")]
    {
        use crate::live::client::{Handlers, LiveConnection};
        let connection = StoredValue::new_local(None::<LiveConnection>);
        Effect::new(move |_| {
            let session = thread.map(|t| t.session_id.get_value());
            let after = thread.map(|t| t.seq()).unwrap_or(0);
            let handlers = Handlers {
                on_event: Box::new(move |event| {
                    if let Some(thread) = thread {
                        thread.apply(&event);
                    }
                }),
                on_sessions: Box::new(move |list| workspace.sessions.set(list)),
                on_status: Box::new(move |status| workspace.connection.set(status)),
            };
            connection.set_value(Some(LiveConnection::start(session, after, handlers)));
        });
    }
}

fn pane_header(heading: impl IntoView) -> impl IntoView {
    let workspace = use_workspace();
    view! {
        <header class="pane-header">
            <button
                class="icon-button menu-button"
                aria-label="Sessions"
                aria-expanded=move || workspace.drawer_open.get().to_string()
                on:click=move |_| workspace.drawer_open.update(|open| *open = !*open)
            >
                {icons::menu()}
            </button>
            {heading}
        </header>
        {connection_banner()}
    }
}

#[component]
fn SessionPane(thread: ThreadState, initial: SessionSummary) -> impl IntoView {
    let workspace = use_workspace();
    let id = initial.id.clone();
    // The title and state follow the live session list.
    let summary = Memo::new(move |_| {
        workspace.sessions.with(|list| list.iter().find(|s| s.id == id).cloned()).unwrap_or_else(|| initial.clone())
    });
    let title = move || summary.with(|s| s.title.clone());
    use_document_title(title);
    let heading = view! {
        <div class="session-heading">
            <h1 class="session-title">{title}</h1>
            <span class="session-meta">
                <span class="agent-badge">{move || summary.with(|s| s.agent.clone())}</span>
                {turn_status(thread)}
            </span>
        </div>
    };
    view! {
        {pane_header(heading)}
        <ThreadView thread />
        <Composer session=Some(thread.session_id.get_value()) thread=Some(thread) />
    }
}

fn turn_status(thread: ThreadState) -> impl IntoView {
    let label = move || {
        thread.turn.with(|turn| {
            if turn.working {
                return ("working", "Working…".to_string());
            }
            match &turn.last_outcome {
                Some(TurnOutcome::Interrupted) => ("stopped", "Stopped".to_string()),
                Some(TurnOutcome::Failed { .. }) => ("failed", "Failed".to_string()),
                Some(TurnOutcome::Abandoned) => ("stopped", "Cut short".to_string()),
                _ => ("idle", "Ready".to_string()),
            }
        })
    };
    view! {
        <span class="turn-status" data-state=move || label().0>
            <span class="status-dot" aria-hidden="true"></span>
            {move || label().1}
        </span>
    }
}

fn welcome_pane() -> impl IntoView {
    use_document_title(String::new);
    view! {
        {pane_header(view! { <div class="session-heading"><h1 class="session-title">"New session"</h1></div> })}
        <section class="welcome">
            <h2>"Work with your coding agent from the browser"</h2>
            <p>
                "Write a message to start a session. When the agent asks you something or needs \
                 permission, a card appears here and your answer goes straight back to it."
            </p>
        </section>
        <Composer session=None thread=None />
    }
}

fn problem_pane(problem: AppError) -> impl IntoView {
    let heading = match problem {
        AppError::SessionNotFound { .. } => "This session does not exist",
        _ => "This page could not be loaded",
    };
    use_document_title(move || heading.to_string());
    view! {
        {pane_header(view! { <div class="session-heading"><h1 class="session-title">{heading}</h1></div> })}
        <section class="welcome problem-pane" role="alert">
            <h2>{heading}</h2>
            <p>{problem.to_string()}</p>
            <p><a href="/">"Start a new session"</a></p>
        </section>
    }
}

/// Says when the live stream is down, so that nobody mistakes a quiet thread for an idle agent.
fn connection_banner() -> impl IntoView {
    let workspace = use_workspace();
    let state = move || match workspace.connection.get() {
        ConnectionStatus::Reconnecting { attempt } if attempt > 0 => {
            ("reconnecting", "Connection lost. Reconnecting… Events that arrive meanwhile are not lost.".to_string())
        }
        ConnectionStatus::Closed(error) => ("closed", error.to_string()),
        _ => ("", String::new()),
    };
    view! {
        <div class="connection-banner-slot" role="status" aria-live="polite">
            <div class="connection-banner" data-kind=move || state().0 hidden=move || state().0.is_empty()>
                <span class="spinner" aria-hidden="true"></span>
                {move || state().1}
            </div>
        </div>
    }
}
