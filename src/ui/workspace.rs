//! The workspace page: the session list beside the open session (or a welcome when none is
//! open), loaded on the server, then kept live in the browser.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use super::composer::Composer;
use super::icons;
use super::session_list::SessionList;
use super::state::{ThreadState, Workspace, use_workspace};
use super::thread_view::ThreadView;
use crate::error::AppError;
use crate::live::ConnectionStatus;
use crate::session::{SessionView, list_sessions, load_session};
use crate::thread::{SessionSummary, TurnOutcome};

#[component]
pub fn Workspace() -> impl IntoView {
    let params = use_params_map();
    let session_id = Memo::new(move |_| params.read().get("id"));
    let sessions = Resource::new(|| (), |()| list_sessions());
    let current = Resource::new(
        move || session_id.get(),
        |id| async move {
            match id {
                Some(id) => load_session(id).await.map(Some),
                None => Ok(None),
            }
        },
    );
    view! {
        <Transition fallback=|| view! { <div class="page-loading" role="status">"Loading…"</div> }>
            {move || Suspend::new(async move {
                let list = sessions.await;
                let current = current.await;
                view! { <WorkspaceView list current /> }
            })}
        </Transition>
    }
}

#[component]
fn WorkspaceView(list: Result<Vec<SessionSummary>, AppError>, current: Result<Option<SessionView>, AppError>) -> impl IntoView {
    let list_problem = list.as_ref().err().cloned();
    let workspace = Workspace {
        sessions: RwSignal::new(list.unwrap_or_default()),
        connection: RwSignal::new(ConnectionStatus::Connecting),
        drawer_open: RwSignal::new(false),
        hydrated: RwSignal::new(false),
    };
    provide_context(workspace);

    let (thread, summary, problem) = match current {
        Ok(Some(view)) => (Some(ThreadState::new(view.summary.id.clone(), view.thread)), Some(view.summary), None),
        Ok(None) => (None, None, list_problem),
        Err(error) => (None, None, Some(error)),
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
        (_, _, Some(problem)) => view! { <ProblemPane problem /> }.into_any(),
        _ => view! { <WelcomePane /> }.into_any(),
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

#[component]
fn PaneHeader(children: Children) -> impl IntoView {
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
            {children()}
        </header>
        <ConnectionBanner />
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
    view! {
        <Title text=title />
        <PaneHeader>
            <div class="session-heading">
                <h1 class="session-title">{title}</h1>
                <span class="session-meta">
                    <span class="agent-badge">{move || summary.with(|s| s.agent.clone())}</span>
                    <TurnStatus thread />
                </span>
            </div>
        </PaneHeader>
        <ThreadView thread />
        <Composer session=Some(thread.session_id.get_value()) thread=Some(thread) />
    }
}

#[component]
fn TurnStatus(thread: ThreadState) -> impl IntoView {
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

#[component]
fn WelcomePane() -> impl IntoView {
    view! {
        <Title text="" />
        <PaneHeader>
            <div class="session-heading">
                <h1 class="session-title">"New session"</h1>
            </div>
        </PaneHeader>
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

#[component]
fn ProblemPane(problem: AppError) -> impl IntoView {
    let heading = match problem {
        AppError::SessionNotFound { .. } => "This session does not exist",
        _ => "This page could not be loaded",
    };
    view! {
        <Title text=heading />
        <PaneHeader>
            <div class="session-heading">
                <h1 class="session-title">{heading}</h1>
            </div>
        </PaneHeader>
        <section class="welcome problem-pane" role="alert">
            <h2>{heading}</h2>
            <p>{problem.to_string()}</p>
            <p><a href="/">"Start a new session"</a></p>
        </section>
    }
}

/// Says when the live stream is down, so that nobody mistakes a quiet thread for an idle agent.
#[component]
fn ConnectionBanner() -> impl IntoView {
    let workspace = use_workspace();
    let message = move || match workspace.connection.get() {
        ConnectionStatus::Reconnecting { attempt } if attempt > 0 => Some((
            "reconnecting",
            "Connection lost. Reconnecting… Events that arrive meanwhile are not lost.".to_string(),
        )),
        ConnectionStatus::Closed(error) => Some(("closed", error.to_string())),
        _ => None,
    };
    view! {
        <div class="connection-banner-slot" role="status" aria-live="polite">
            {move || {
                message()
                    .map(|(kind, text)| {
                        view! {
                            <div class="connection-banner" data-kind=kind>
                                <span class="spinner" aria-hidden="true"></span>
                                {text}
                            </div>
                        }
                    })
            }}
        </div>
    }
}
