//! The workspace page: the session list beside the open session (or a welcome when none is
//! open), loaded on the server, then kept live in the browser.
//!
//! The workspace is built once per page load. Moving to another session swaps only the pane
//! (what shows the session); the session list, the composer with what is typed in it, and the
//! live connection stay, and the connection follows the new session.
//!
//! The server loads the page's data before it renders and puts it in the page as JSON; the
//! browser hydrates from that, and loads the next session itself when the person switches.
//! (A `Resource` with `Suspense` would do the same at 17 KB more in the bundle.)

use leptos::prelude::*;

use super::composer::Composer;
use super::keys_help::keys_help;
use super::lazy::{pane_slot, session_pane};
use super::navigation::{Location, Page, use_location};
use super::notify::Bell;
#[cfg(feature = "ssr")]
use super::page_data::PageData;
#[cfg(not(feature = "ssr"))]
use super::page_data::{IN_TERMINAL, PAGE_DATA_ID, SESSION_DATA_ID};
use super::pane::pane_header;
use super::server_call::ServerCall;
use super::session_list::SessionList;
use super::state::{NewSessionOptions, ThreadState, Workspace, use_document_title};
#[cfg(feature = "ssr")]
use crate::api::WorkspaceView;
use crate::api::{SessionView, WorkspaceData};
use crate::approval::PermissionMode;
use crate::error::AppError;
use crate::live::ConnectionStatus;

/// What the pane shows.
// One value per page, replaced when the person moves: boxing the session would gain nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
enum Shown {
    Welcome,
    Session(SessionView),
    Problem(AppError),
    /// The session pane's chunk could not be fetched.
    ChunkMissing,
    /// A Claude Code session's page (read from its transcript).
    ClaudeSession(String),
    /// The session the server drew in the page, as the browser first sees it: its pane is taken
    /// over where it stands when the session pane's chunk lands (`lazy::session_pane_in_place`).
    /// Only whether a terminal's `claude` runs it is read before the chunk comes.
    #[cfg_attr(feature = "ssr", allow(dead_code))]
    Drawn {
        in_terminal: bool,
    },
}

#[component]
pub fn Workspace() -> impl IntoView {
    let location = use_location();
    let (data, current) = initial_data().unwrap_or_else(|error| (WorkspaceData::failed(error), None));
    let drawn = matches!(current, Some(Shown::Drawn { .. }));
    let problem = data.problem.clone();
    let workspace = Workspace::from_data(data);
    provide_context(workspace);
    Bell::provide(workspace.hydrated);
    #[cfg(feature = "ssr")]
    if let Some(error) = &problem
        && let Some(response) = use_context::<leptos_axum::ResponseOptions>()
        && let Ok(status) = axum::http::StatusCode::from_u16(error.status())
    {
        response.set_status(status);
    }
    let shown = RwSignal::new(match (current, problem, location.page_untracked()) {
        (Some(shown), _, _) => shown,
        (_, Some(problem), _) => Shown::Problem(problem),
        (_, _, Page::ClaudeSession(id)) => Shown::ClaudeSession(id),
        _ => Shown::Welcome,
    });
    let live = Live::new();
    follow_location(location, shown, workspace.connection);
    // A session the server drew: once its pane is live too.
    Effect::new(move |_| {
        if !drawn {
            workspace.hydrated.set(true);
        }
    });
    connect_live(workspace, live);

    // No message box where there is nothing to write to (a Claude Code session is continued first).
    let showing_problem = Memo::new(move |_| {
        shown.with(|s| matches!(s, Shown::Problem(_) | Shown::ChunkMissing | Shown::ClaudeSession(_)))
    });
    // A `claude` in a terminal takes its messages there; here, its questions are answered.
    let in_terminal = Memo::new(move |_| {
        shown.with(|s| match s {
            Shown::Session(SessionView { summary, .. }) => summary.terminal.is_some(),
            Shown::Drawn { in_terminal } => *in_terminal,
            _ => false,
        })
    });
    let no_box = Signal::derive(move || showing_problem.get() || in_terminal.get());
    view! {
        <div class="workspace" class:drawer-open=move || workspace.drawer_open.get()>
            <SessionList />
            <div class="scrim" aria-hidden="true" on:click=move |_| workspace.drawer_open.set(false)></div>
            <main class="pane">
                {move || pane(workspace, live, shown)}
                <Composer hidden=no_box />
                <p class="composer composer-elsewhere" role="note" hidden=move || !in_terminal.get()>
                    "This conversation runs in a terminal: type your messages there. Its questions and permission requests are answered here."
                </p>
            </main>
            {keys_help()}
        </div>
    }
}

impl Workspace {
    /// The page's state, from the data it was rendered with.
    fn from_data(data: WorkspaceData) -> Self {
        let WorkspaceData {
            agent,
            sessions,
            default_workdir,
            default_mode,
            examples,
            claude_sessions,
            agent_label,
            ..
        } = data;
        Workspace {
            sessions: RwSignal::new(sessions),
            connection: RwSignal::new(ConnectionStatus::Connecting),
            drawer_open: RwSignal::new(false),
            hydrated: RwSignal::new(false),
            thread: RwSignal::new(None),
            opening: ServerCall::new(),
            just_opened: StoredValue::new(None),
            compose: RwSignal::new(None),
            examples: StoredValue::new(examples),
            claude_sessions,
            default_workdir: StoredValue::new(default_workdir.clone()),
            box_keys: StoredValue::new(None),
            new_session: NewSessionOptions {
                works_in_folder: RwSignal::new(default_workdir.is_some()),
                workdir: RwSignal::new(default_workdir.unwrap_or_default()),
                mode: RwSignal::new(default_mode),
                agent: RwSignal::new(agent.clone()),
                agent_label: RwSignal::new(if agent_label.is_empty() { agent } else { agent_label }),
                model: RwSignal::new(String::new()),
                worktree: RwSignal::new(None),
            },
        }
    }
}

impl WorkspaceData {
    /// What a page whose data could not be read is drawn from: nothing but the problem.
    fn failed(error: AppError) -> Self {
        WorkspaceData {
            agent: String::new(),
            default_workdir: None,
            default_mode: PermissionMode::default(),
            sessions: Vec::new(),
            problem: Some(error),
            examples: Vec::new(),
            claude_sessions: false,
            agent_label: String::new(),
        }
    }
}

/// Draws what the pane shows, and points the thread state and the live stream at it.
fn pane(workspace: Workspace, live: Live, shown: RwSignal<Shown>) -> AnyView {
    match shown.get() {
        // In a slot of its own: the element that the browser's first view of a session page
        // hydrates, leaving the server's pane in it as it is (`Shown::Drawn`).
        Shown::Session(view) => {
            pane_slot(session_pane(view, Box::new(move |thread| show(workspace, live, thread))).into_any())
        }
        // Nothing follows the session before its pane is live: its events are read by the chunk.
        #[cfg(feature = "hydrate")]
        Shown::Drawn { .. } => super::lazy::session_pane_in_place(move |taken| {
            match taken {
                Ok(thread) => show(workspace, live, thread),
                Err(super::lazy::ChunkMissing) => shown.set(Shown::ChunkMissing),
            }
            workspace.hydrated.set(true);
        }),
        #[cfg(not(feature = "hydrate"))]
        Shown::Drawn { .. } => ().into_any(),
        Shown::Problem(problem) => {
            workspace.thread.set(None);
            live.follow(None, 0);
            problem_pane(problem).into_any()
        }
        Shown::ClaudeSession(id) => {
            workspace.thread.set(None);
            live.follow(None, 0);
            super::lazy::transcript_pane(id).into_any()
        }
        Shown::ChunkMissing => {
            workspace.thread.set(None);
            live.follow(None, 0);
            super::lazy::chunk_missing().into_any()
        }
        Shown::Welcome => {
            workspace.thread.set(None);
            live.follow(None, 0);
            welcome_pane(workspace).into_any()
        }
    }
}

/// Points the message box and the live stream at the session a pane shows.
fn show(workspace: Workspace, live: Live, thread: ThreadState) {
    workspace.thread.set(Some(thread));
    live.follow(thread.session(), thread.seq());
}

/// Switching sessions: the old pane stays until the new one's data is here. Only the latest
/// request counts, so a slow answer cannot overwrite a newer page. A session that could not be
/// loaded because the server was away is loaded again once the page is connected again.
fn follow_location(location: Location, shown: RwSignal<Shown>, connection: RwSignal<ConnectionStatus>) {
    let latest = StoredValue::new(0u64);
    let fetch = move |page: Page| {
        let request = latest.get_value() + 1;
        latest.set_value(request);
        match page {
            // Loaded (and read) by the session pane's chunk, fetched first if need be.
            Page::Session(id) => leptos::task::spawn_local(async move {
                let loaded = super::lazy::load_session(id).await;
                if latest.try_get_value() == Some(request) {
                    shown.set(match loaded {
                        Ok(Ok(view)) => Shown::Session(view),
                        Ok(Err(error)) => Shown::Problem(error),
                        Err(super::lazy::ChunkMissing) => Shown::ChunkMissing,
                    });
                }
            }),
            Page::ClaudeSession(id) => shown.set(Shown::ClaudeSession(id)),
            _ => shown.set(Shown::Welcome),
        }
    };
    Effect::new(move |previous: Option<Page>| {
        let page = location.page();
        if previous.is_some_and(|previous| previous != page) {
            fetch(page.clone());
        }
        page
    });
    Effect::new(move |_| {
        let back = connection.get() == ConnectionStatus::Live;
        if back && shown.with_untracked(|s| matches!(s, Shown::Problem(AppError::Unreachable { .. }))) {
            fetch(location.page_untracked());
        }
    });
}

/// What the page was rendered with: the server's context, or the JSON it put in the page; and
/// the session it shows, if any.
fn initial_data() -> Result<(WorkspaceData, Option<Shown>), AppError> {
    let missing = || AppError::Internal { detail: "the page came without its data".into() };
    #[cfg(feature = "ssr")]
    {
        let WorkspaceView { workspace, current } = use_context::<PageData>().ok_or_else(missing)?.0?;
        Ok((workspace, current.map(Shown::Session)))
    }
    #[cfg(not(feature = "ssr"))]
    {
        let text = leptos::prelude::document()
            .get_element_by_id(PAGE_DATA_ID)
            .and_then(|script| script.text_content())
            .ok_or_else(missing)?;
        let workspace: Result<WorkspaceData, AppError> =
            serde_json::from_str(&text).map_err(|error| AppError::Internal { detail: error.to_string() })?;
        // The open session's own script: what it holds is the chunk's to read (the code that
        // decodes a session is there); the script says whether a terminal runs the session.
        let drawn = leptos::prelude::document()
            .get_element_by_id(SESSION_DATA_ID)
            .map(|script| Shown::Drawn { in_terminal: script.has_attribute(IN_TERMINAL) });
        Ok((workspace?, drawn))
    }
}

/// The tab's one live connection (in the browser, once the page is interactive).
#[derive(Clone, Copy)]
struct Live {
    #[cfg(feature = "hydrate")]
    connection: StoredValue<Option<crate::live::client::LiveConnection>, LocalStorage>,
}

impl Live {
    fn new() -> Self {
        Self {
            #[cfg(feature = "hydrate")]
            connection: StoredValue::new_local(None),
        }
    }

    /// Points the connection at `session` (or at the session list alone), from after `after`.
    #[allow(unused_variables)]
    fn follow(&self, session: Option<String>, after: u64) {
        #[cfg(feature = "hydrate")]
        self.connection.with_value(|connection| {
            if let Some(connection) = connection {
                connection.follow(session, after);
            }
        });
    }
}

/// Opens the tab's live stream once the page is interactive; it applies events to whichever
/// thread the pane shows.
#[allow(unused_variables)]
fn connect_live(workspace: Workspace, live: Live) {
    #[cfg(feature = "hydrate")]
    {
        use crate::live::client::{Handlers, LiveConnection};
        use crate::thread::SessionSummary;
        let bell = super::notify::use_bell();
        Effect::new(move |_| {
            let thread = workspace.thread.get_untracked();
            let session = thread.and_then(|t| t.session());
            let after = thread.map(|t| t.seq()).unwrap_or(0);
            // The sessions that waited in the last list: a session that starts waiting is
            // announced (the open one by its own event, which says what is asked).
            let waited: StoredValue<Option<Vec<String>>> = StoredValue::new(None);
            let held: StoredValue<Option<Vec<SessionSummary>>> = StoredValue::new(None);
            Effect::new(move |_| {
                if workspace.hydrated.get()
                    && let Some(list) = held.try_update_value(Option::take).flatten()
                {
                    workspace.sessions.set(list);
                }
            });
            let handlers = Handlers {
                // Read by the session pane's chunk, which also announces what the event asks.
                on_event: Box::new(move |_seq, json| match workspace.thread.get_untracked() {
                    Some(thread) => super::lazy::read_live_event(thread, bell, &json),
                    None => true,
                }),
                on_sessions: Box::new(move |list| {
                    let open = workspace.thread.get_untracked().and_then(|t| t.session());
                    let now: Vec<String> = list.iter().filter(|s| s.waiting).map(|s| s.id.clone()).collect();
                    if let Some(before) = waited.get_value() {
                        for summary in list.iter().filter(|s| s.waiting && !before.contains(&s.id)) {
                            if open.as_ref() != Some(&summary.id) {
                                let title = format!("“{}” needs you", summary.title);
                                bell.announce(&title, "The agent is waiting for your answer.", &summary.id);
                            }
                        }
                    }
                    waited.set_value(Some(now));
                    // Drawn once an answer sent from here has landed (`Hold`); on a session page,
                    // once its pane is taken over (its header reads the list: `Bell::provide`).
                    let sessions = workspace.sessions;
                    match workspace.thread.get_untracked() {
                        Some(thread) => thread.hold.redraw(true, move || sessions.set(list)),
                        None if !workspace.hydrated.get_untracked() => held.set_value(Some(list)),
                        None => sessions.set(list),
                    }
                }),
                on_status: Box::new(move |status| workspace.connection.set(status)),
            };
            live.connection.set_value(Some(LiveConnection::start(session, after, handlers)));
        });
    }
}

/// The page with no session open; for an agent that works in a folder, the new session's folder
/// can be chosen here.
/// The page with no session open: what AskBridge does, what to try (the demo's messages, as
/// buttons), and for an agent that works in a folder, the new session's folder, with the folders
/// of recent sessions one click away.
fn welcome_pane(workspace: Workspace) -> impl IntoView {
    let options = workspace.new_session;
    let NewSessionOptions { agent, agent_label, .. } = options;
    use_document_title(String::new);
    // The examples are the default agent's (the demo's): shown while it is the one picked.
    let default_agent = agent.get_untracked();
    let other_agent = Signal::derive(move || agent.with(|picked| *picked != default_agent));
    view! {
        {pane_header(view! { <div class="session-heading"><h1 class="session-title">"New session"</h1></div> })}
        <section class="welcome">
            <h2>"Work with your coding agent from the browser"</h2>
            <p>
                "Write a message to start a session. When the agent asks you something or needs \
                 permission, a card appears here and your answer goes straight back to it."
            </p>
            <p class="welcome-agent">"New sessions talk to " <span class="agent-badge">{move || agent_label.get()}</span></p>
            {try_these(workspace, other_agent)}
        </section>
        // The folder, the agent, its model and the permission mode come with the session pane's
        // chunk, once the page is interactive: the first load of `/` carries none of their code.
        {move || workspace.hydrated.get().then(|| super::lazy::new_session_choices(options))}
    }
}

/// The example messages, one click to put one in the message box; hidden while another agent
/// than the demo is picked.
fn try_these(workspace: Workspace, other_agent: Signal<bool>) -> Option<impl IntoView> {
    let examples = workspace.examples.get_value();
    (!examples.is_empty()).then(|| {
        let buttons = examples
            .into_iter()
            .map(|text| {
                let message = text.clone();
                view! {
                    <button
                        type="button"
                        class="button example"
                        disabled=move || !workspace.hydrated.get()
                        on:click=move |_| workspace.compose.set(Some(message.clone()))
                    >
                        {text}
                    </button>
                }
            })
            .collect_view();
        view! {
            <div class="examples" role="group" aria-label="Try a message" hidden=other_agent>
                <p class="examples-head">"Try one of these (the offline demo answers them):"</p>
                <div class="example-buttons">{buttons}</div>
            </div>
        }
    })
}

fn problem_pane(problem: AppError) -> impl IntoView {
    let heading = match problem {
        AppError::SessionNotFound { .. } => "This session does not exist",
        AppError::Unreachable { .. } => "The server cannot be reached",
        _ => "This page could not be loaded",
    };
    let problem = match problem {
        AppError::Unreachable { .. } => "This session is shown as soon as the server is back.".to_string(),
        other => other.to_string(),
    };
    use_document_title(move || heading.to_string());
    view! {
        {pane_header(view! { <div class="session-heading"><h1 class="session-title">{heading}</h1></div> })}
        <section class="welcome problem-pane" role="alert">
            <h2>{heading}</h2>
            <p>{problem}</p>
            <p><a href="/">"Start a new session"</a></p>
        </section>
    }
}
