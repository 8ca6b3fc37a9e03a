//! What every pane shares: its header (with the drawer's button on a phone and the bell), the
//! banner that says the live stream is down, and the selects of the permission mode and the model
//! (the welcome page's and the session header's).

use leptos::prelude::*;

use super::icons;
use super::notify::notify_button;
use super::state::use_workspace;
use crate::approval::PermissionMode;
use crate::live::ConnectionStatus;
use crate::thread::{AgentMode, ModelChoice};

pub fn pane_header(heading: impl IntoView) -> impl IntoView {
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
            {notify_button()}
        </header>
        {connection_banner()}
    }
}

/// What bypassPermissions means, asked before it is chosen.
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
const BYPASS_WARNING: &str = "Bypass permissions?\n\nThe agent will run every command and change every file \
without asking you first. Its questions still come to you. Choose this only for work you could \
throw away.";

/// A `<select>` of the permission modes, showing `current`; `chosen` hears of a choice (bypass
/// only once confirmed).
pub fn mode_select(
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
        if confirmed(value, &event, current.as_str()) {
            chosen(value);
        }
    };
    view! {
        <label class="mode-field">
            <span class="mode-label">"Permissions"</span>
            <select aria-label="Permission mode" on:change=on_change>{options}</select>
        </label>
    }
}

/// Whether a choice of `mode` stands: bypass only once the person confirmed it; otherwise the
/// select is put back to `current`, what holds.
fn confirmed(mode: PermissionMode, event: &leptos::ev::Event, current: &str) -> bool {
    #[cfg(feature = "hydrate")]
    {
        let confirmed = mode != PermissionMode::BypassPermissions
            || web_sys::window().and_then(|w| w.confirm_with_message(BYPASS_WARNING).ok()).unwrap_or(false);
        if !confirmed
            && let Some(select) =
                event.target().and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlSelectElement>(t).ok())
        {
            select.set_value(current);
        }
        confirmed
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = (mode, event, current);
        true
    }
}

/// A `<select>` of the agent's own permission modes (an ACP agent's, by its names), showing
/// `current`; `chosen` hears of a choice (one that stands for bypass only once confirmed).
pub fn agent_mode_select(
    modes: Vec<AgentMode>,
    current: String,
    chosen: impl Fn(String) + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let acts_as: Vec<(String, PermissionMode)> = modes.iter().map(|m| (m.id.clone(), m.acts_as)).collect();
    let options = modes
        .into_iter()
        .map(|mode| {
            let selected = mode.id == current;
            let bypass = (mode.acts_as == PermissionMode::BypassPermissions).then_some("");
            view! { <option value=mode.id title=mode.description selected=selected data-bypass=bypass>{mode.label}</option> }
        })
        .collect_view();
    let on_change = move |event: leptos::ev::Event| {
        let id = event_target_value(&event);
        let mode = acts_as.iter().find(|(known, _)| *known == id).map_or(PermissionMode::Default, |(_, m)| *m);
        if confirmed(mode, &event, &current) {
            chosen(id);
        }
    };
    view! {
        <label class="mode-field">
            <span class="mode-label">"Permissions"</span>
            <select aria-label="Permission mode" on:change=on_change>{options}</select>
        </label>
    }
}

/// A `<select>` of `models` (what the agent listed), showing `current` (`""`: the agent's
/// default; a model the session got elsewhere is shown though not listed); `chosen` hears of a
/// choice. Claude Code's own `default` is the same as none.
pub fn model_select(
    models: Vec<ModelChoice>,
    current: String,
    chosen: impl Fn(String) + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let current = if current == "default" { String::new() } else { current };
    let mut options: Vec<(String, String, String)> = vec![(String::new(), "Default".into(), String::new())];
    for model in models {
        match model.value.as_str() {
            "default" => options[0].2 = model.description,
            _ => options.push((model.value, model.label, model.description)),
        }
    }
    if !options.iter().any(|(value, ..)| *value == current) {
        options.push((current.clone(), current.clone(), String::new()));
    }
    let options = options
        .into_iter()
        .map(|(value, label, hint)| {
            let selected = value == current;
            view! { <option value=value title=hint selected=selected>{label}</option> }
        })
        .collect_view();
    view! {
        <label class="mode-field">
            <span class="mode-label">"Model"</span>
            <select aria-label="Model" on:change=move |event| chosen(event_target_value(&event))>{options}</select>
        </label>
    }
}

/// Says when the live stream is down, so that nobody mistakes a quiet thread for an idle agent:
/// reconnecting (the server is away; nothing is lost meanwhile), the session gone, or signed out.
fn connection_banner() -> impl IntoView {
    let workspace = use_workspace();
    let state = move || match workspace.connection.get() {
        ConnectionStatus::Reconnecting { attempt } if attempt > 0 => (
            "reconnecting",
            "Reconnecting… The server cannot be reached. This page catches up when it is back, and \
             answers given meanwhile are sent then."
                .to_string(),
        ),
        ConnectionStatus::Closed(error) => ("closed", error.to_string()),
        ConnectionStatus::SignedOut => (
            "signed-out",
            "Signed out: the server's access token has changed. Open the new sign-in link (or reload to \
             enter the token)."
                .to_string(),
        ),
        _ => ("", String::new()),
    };
    // Tries at once instead of at the next try (shown while reconnecting only: the stylesheet).
    let retry_now = move |_| {
        #[cfg(feature = "hydrate")]
        crate::live::client::retry_now();
    };
    view! {
        <div class="connection-banner-slot" role="status" aria-live="polite">
            <div class="connection-banner" data-kind=move || state().0 hidden=move || state().0.is_empty()>
                <span class="spinner" aria-hidden="true"></span>
                {move || state().1}
                <button type="button" class="button small" on:click=retry_now>"Retry now"</button>
            </div>
        </div>
    }
}
