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
use super::icons;
use super::lazy::session_pane;
use super::navigation::{Location, Page, use_location};
use super::notify::notify_button;
use super::server_call::ServerCall;
use super::session_list::SessionList;
use super::state::{NewSessionOptions, ThreadState, Workspace, use_document_title, use_workspace};
use super::thread_view::ThreadView;
use crate::api::{LoadSession, SessionView, SetPermissionMode, WorkspaceData};
use crate::approval::PermissionMode;
use crate::error::AppError;
use crate::live::ConnectionStatus;
use crate::thread::{SessionSummary, TurnOutcome};

/// What the pane shows.
#[derive(Clone)]
enum Shown {
    Welcome,
    Session(SessionView),
    Problem(AppError),
}

#[component]
pub fn Workspace() -> impl IntoView {
    let location = use_location();
    let WorkspaceData { agent, sessions, current, problem, default_workdir, default_mode } = initial_data()
        .unwrap_or_else(|error| WorkspaceData {
            agent: String::new(),
            default_workdir: None,
            default_mode: PermissionMode::default(),
            sessions: Vec::new(),
            current: None,
            problem: Some(error),
        });
    let workspace = Workspace {
        sessions: RwSignal::new(sessions),
        connection: RwSignal::new(ConnectionStatus::Connecting),
        drawer_open: RwSignal::new(false),
        hydrated: RwSignal::new(false),
        thread: RwSignal::new(None),
        opening: ServerCall::new(),
        just_opened: StoredValue::new(None),
        new_session: NewSessionOptions {
            workdir: default_workdir.map(RwSignal::new),
            mode: RwSignal::new(default_mode),
            agent: RwSignal::new(agent),
        },
    };
    provide_context(workspace);
    #[cfg(feature = "ssr")]
    if let Some(error) = &problem
        && let Some(response) = use_context::<leptos_axum::ResponseOptions>()
        && let Ok(status) = axum::http::StatusCode::from_u16(error.status())
    {
        response.set_status(status);
    }
    let shown = RwSignal::new(match (current, problem) {
        (Some(view), _) => Shown::Session(view),
        (_, Some(problem)) => Shown::Problem(problem),
        _ => Shown::Welcome,
    });
    let live = Live::new();
    follow_location(location, shown);
    Effect::new(move |_| workspace.hydrated.set(true));
    connect_live(workspace, live);

    let showing_problem = Memo::new(move |_| shown.with(|s| matches!(s, Shown::Problem(_))));
    view! {
        <div class="workspace" class:drawer-open=move || workspace.drawer_open.get()>
            <SessionList />
            <div class="scrim" aria-hidden="true" on:click=move |_| workspace.drawer_open.set(false)></div>
            <main class="pane">
                {move || pane(workspace, live, shown.get())}
                <Composer hidden=showing_problem />
            </main>
        </div>
    }
}

/// Draws what the pane shows, and points the thread state and the live stream at it.
fn pane(workspace: Workspace, live: Live, shown: Shown) -> AnyView {
    match shown {
        Shown::Session(SessionView { summary, thread }) => {
            let thread = ThreadState::new(summary.id.clone(), thread);
            workspace.thread.set(Some(thread));
            live.follow(Some(summary.id.clone()), thread.seq());
            session_pane(thread, summary).into_any()
        }
        Shown::Problem(problem) => {
            workspace.thread.set(None);
            live.follow(None, 0);
            problem_pane(problem).into_any()
        }
        Shown::Welcome => {
            workspace.thread.set(None);
            live.follow(None, 0);
            welcome_pane(workspace.new_session).into_any()
        }
    }
}

/// Switching sessions: the old pane stays until the new one's data is here. Only the latest
/// request counts, so a slow answer cannot overwrite a newer page.
fn follow_location(location: Location, shown: RwSignal<Shown>) {
    let load = ServerCall::<LoadSession>::new();
    let latest = StoredValue::new(0u64);
    Effect::new(move |previous: Option<Page>| {
        let page = location.page();
        if previous.is_some_and(|previous| previous != page) {
            let request = latest.get_value() + 1;
            latest.set_value(request);
            match page.clone() {
                Page::Session(id) => load.dispatch_then(LoadSession { id }, move |loaded| {
                    if latest.get_value() == request {
                        shown.set(match loaded {
                            Ok(view) => Shown::Session(view),
                            Err(error) => Shown::Problem(error),
                        });
                    }
                }),
                _ => shown.set(Shown::Welcome),
            }
        }
        page
    });
}

/// What the page was rendered with: the server's context, or the JSON it put in the page.
fn initial_data() -> Result<WorkspaceData, AppError> {
    let missing = || AppError::Internal { detail: "the page came without its data".into() };
    #[cfg(feature = "ssr")]
    {
        use_context::<PageData>().ok_or_else(missing)?.0
    }
    #[cfg(not(feature = "ssr"))]
    {
        let text = leptos::prelude::document()
            .get_element_by_id(PAGE_DATA_ID)
            .and_then(|script| script.text_content())
            .ok_or_else(missing)?;
        serde_json::from_str(&text).map_err(|error| AppError::Internal { detail: error.to_string() })?
    }
}

/// The id of the `<script type="application/json">` that carries the page's data.
pub const PAGE_DATA_ID: &str = "askbridge-page-data";

/// The page's data on the server, provided as context by the page handler.
#[derive(Clone)]
pub struct PageData(pub Result<WorkspaceData, AppError>);

impl PageData {
    /// As JSON safe inside a `<script>` element (no `</script>` can close it early).
    pub fn to_script_json(&self) -> String {
        serde_json::to_string(&self.0).unwrap_or_else(|_| "null".into()).replace('<', "\\u003c")
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
        use super::notify::announce_question;
        use crate::interaction::InteractionRequest;
        use crate::live::client::{Handlers, LiveConnection};
        use crate::thread::EventBody;
        Effect::new(move |_| {
            let thread = workspace.thread.get_untracked();
            let session = thread.and_then(|t| t.session());
            let after = thread.map(|t| t.seq()).unwrap_or(0);
            let handlers = Handlers {
                on_event: Box::new(move |event| {
                    if let Some(thread) = workspace.thread.get_untracked() {
                        thread.apply(&event);
                    }
                    if let EventBody::InteractionOpened { tool_use_id, request } = &event.body {
                        match request {
                            InteractionRequest::Question { questions } if !questions.is_empty() => {
                                announce_question("The agent asks you something", &questions[0].question, tool_use_id);
                            }
                            InteractionRequest::Approval(approval) => {
                                let what = approval.description.clone().unwrap_or_else(|| approval.tool.clone());
                                announce_question("The agent asks your permission", &what, tool_use_id);
                            }
                            _ => {}
                        }
                    }
                }),
                on_sessions: Box::new(move |list| workspace.sessions.set(list)),
                on_status: Box::new(move |status| workspace.connection.set(status)),
            };
            live.connection.set_value(Some(LiveConnection::start(session, after, handlers)));
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

/// Drawn through `lazy::session_pane`: the welcome page loads without it.
#[component]
pub fn SessionPane(thread: ThreadState, initial: SessionSummary) -> impl IntoView {
    let workspace = use_workspace();
    let id = initial.id.clone();
    // The title and state follow the live session list.
    let summary = Memo::new(move |_| {
        workspace.sessions.with(|list| list.iter().find(|s| s.id == id).cloned()).unwrap_or_else(|| initial.clone())
    });
    let title = move || summary.with(|s| s.title.clone());
    // A marker in the tab's title while a question waits, for a tab in the background.
    use_document_title(move || if thread.waiting.get() { format!("● {}", title()) } else { title() });
    let heading = view! {
        <div class="session-heading">
            <h1 class="session-title">{title}</h1>
            <span class="session-meta">
                <span class="agent-badge">{move || summary.with(|s| s.agent.clone())}</span>
                <span class="agent-info">{move || thread.turn.with(|t| t.agent_info.clone())}</span>
                // For an agent with a process: whether it runs now (a message starts it again).
                <span class="agent-process">
                    {move || thread.turn.with(|t| match t.agent_running {
                        Some(true) => "agent running",
                        Some(false) => "agent stopped",
                        None => "",
                    })}
                </span>
                <span class="session-cost" title="What this session has cost so far">
                    {move || thread.turn.with(|t| t.total_cost_usd.filter(|c| *c > 0.0).map(|c| format!("${c:.4}")))}
                </span>
                {turn_status(thread)}
            </span>
        </div>
        {mode_switcher(thread)}
        {notify_button()}
    };
    view! {
        {pane_header(heading)}
        <ThreadView thread />
    }
}

/// What bypassPermissions means, asked before it is chosen.
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
const BYPASS_WARNING: &str = "Bypass permissions?\n\nThe agent will run every command and change every file \
without asking you first. Its questions still come to you. Choose this only for work you could \
throw away.";

/// The session's permission mode, switchable while it runs.
fn mode_switcher(thread: ThreadState) -> impl IntoView {
    let current = Memo::new(move |_| thread.turn.with(|t| t.permission_mode.unwrap_or_default()));
    let call = ServerCall::<SetPermissionMode>::new();
    // Redraws the select when a switch fails, so that it shows the mode that holds.
    let redraw = RwSignal::new(0u32);
    let session = thread.session_id;
    let switch = move |chosen: PermissionMode| {
        // `mode_select` asked the person before bypass could be chosen.
        let input = SetPermissionMode { session: session.get_value(), mode: chosen, confirm_bypass: true };
        call.dispatch_then(input, move |result| {
            if result.is_err() {
                redraw.update(|n| *n += 1);
            }
        });
    };
    let problem = move || call.problem();
    view! {
        <div class="mode-switcher">
            {move || {
                redraw.track();
                mode_select(current.get(), switch)
            }}
            <span class="mode-problem" role="alert" hidden=move || problem().is_none()>
                {problem}
            </span>
        </div>
    }
}

/// A `<select>` of the permission modes, showing `current`; `chosen` hears of a choice (bypass
/// only once confirmed).
fn mode_select(
    current: PermissionMode,
    chosen: impl Fn(PermissionMode) + Copy + Send + Sync + 'static,
) -> impl IntoView {
    // A mode the session got elsewhere (Claude Code's `auto`, say) is shown, though not offered.
    let shown = PermissionMode::ALL.into_iter().filter(move |mode| mode.is_choosable() || *mode == current);
    let options = shown
        .map(|mode| {
            let (label, hint) = mode.label();
            view! { <option value=mode.as_str() title=hint selected=mode == current>{label}</option> }
        })
        .collect_view();
    let on_change = move |event: leptos::ev::Event| {
        let Ok(value) = event_target_value(&event).parse::<PermissionMode>() else { return };
        #[cfg(feature = "hydrate")]
        let confirmed = value != PermissionMode::BypassPermissions
            || web_sys::window().and_then(|w| w.confirm_with_message(BYPASS_WARNING).ok()).unwrap_or(false);
        #[cfg(not(feature = "hydrate"))]
        let confirmed = true;
        if confirmed {
            chosen(value);
        } else {
            // Back to what holds.
            #[cfg(feature = "hydrate")]
            if let Some(select) =
                event.target().and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlSelectElement>(t).ok())
            {
                select.set_value(current.as_str());
            }
        }
    };
    view! {
        <label class="mode-field">
            <span class="mode-label">"Permissions"</span>
            <select aria-label="Permission mode" on:change=on_change>{options}</select>
        </label>
    }
}

fn turn_status(thread: ThreadState) -> impl IntoView {
    let label = move || {
        thread.turn.with(|turn| {
            if turn.working {
                return ("working", "Working…".to_string());
            }
            // Not working, yet waiting: the agent let go of its question (parked).
            if thread.waiting.get() {
                return ("paused", "Paused".to_string());
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

/// The page with no session open; for an agent that works in a folder, the new session's folder
/// can be chosen here.
fn welcome_pane(options: NewSessionOptions) -> impl IntoView {
    let NewSessionOptions { workdir, mode, agent } = options;
    use_document_title(String::new);
    view! {
        {pane_header(view! { <div class="session-heading"><h1 class="session-title">"New session"</h1></div> })}
        <section class="welcome">
            <h2>"Work with your coding agent from the browser"</h2>
            <p>
                "Write a message to start a session. When the agent asks you something or needs \
                 permission, a card appears here and your answer goes straight back to it."
            </p>
            <p class="welcome-agent">"New sessions talk to " <span class="agent-badge">{move || agent.get()}</span></p>
        </section>
        {workdir.map(|workdir| {
            view! {
                <label class="workdir-field">
                    <span>"Working folder"</span>
                    <input
                        type="text"
                        spellcheck="false"
                        prop:value=move || workdir.get()
                        on:input=move |ev| workdir.set(event_target_value(&ev))
                    />
                </label>
            }
        })}
        <div class="session-options">
            {mode_select(mode.get_untracked(), move |chosen| mode.set(chosen))}
        </div>
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
