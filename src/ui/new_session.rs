//! The new-session page's folder and options: the working folder (with the folders of recent
//! sessions), and the Permissions select beside the agent's choices. Drawn by the session pane's
//! chunk once the page is interactive (`lazy::new_session_choices`), so that the first load of
//! `/` carries none of their code (docs/size.md).

use leptos::prelude::*;

use super::pane::mode_select;
use super::state::{NewSessionOptions, Workspace};

/// The new session's folder and options: the folder (with the recent ones), the agent and its
/// model, the permission mode. Drawn by the session pane's chunk (`lazy::new_session_choices`).
pub fn new_session_options(workspace: Workspace, choices: impl IntoView) -> impl IntoView {
    let mode = workspace.new_session.mode;
    view! {
        {working_folder(workspace)}
        <div class="session-options">
            {choices}
            {mode_select(mode.get_untracked(), move |chosen| mode.set(chosen))}
        </div>
    }
}

/// The new session's working folder, with the folders of the sessions the person was last active
/// in, newest first, without repeats, one click each.
fn working_folder(workspace: Workspace) -> impl IntoView {
    let NewSessionOptions { workdir, works_in_folder, .. } = workspace.new_session;
    let recent_folders = Memo::new(move |_| {
        let mut folders: Vec<String> = Vec::new();
        workspace.sessions.with(|list| {
            for folder in list.iter().filter_map(|s| s.workdir.clone()) {
                if !folders.contains(&folder) && folders.len() < 5 {
                    folders.push(folder);
                }
            }
        });
        folders
    });
    let recent = move || {
        recent_folders
            .get()
            .into_iter()
            .map(|folder| {
                let chosen = folder.clone();
                let name = folder.rsplit('/').find(|p| !p.is_empty()).unwrap_or("/").to_string();
                view! {
                    <button
                        type="button"
                        class="chip-button"
                        title=folder.clone()
                        aria-pressed=move || (workdir.get() == folder).to_string()
                        on:click=move |_| workdir.set(chosen.clone())
                    >
                        {name}
                    </button>
                }
            })
            .collect_view()
    };
    view! {
        <div class="workdir-options" hidden=move || !works_in_folder.get()>
        <label class="workdir-field">
            <span>"Working folder"</span>
            <input
                type="text"
                spellcheck="false"
                prop:value=move || workdir.get()
                on:input=move |ev| workdir.set(event_target_value(&ev))
            />
        </label>
        <div class="recent-folders" role="group" aria-label="Recent folders" hidden=move || recent_folders.with(Vec::is_empty)>
            <span class="recent-head">"Recent:"</span>
            {recent}
        </div>
        </div>
    }
}
