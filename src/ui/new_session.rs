//! The new-session page's folder and options: the working folder (with the folders of recent
//! sessions), and the Permissions select beside the agent's choices. Drawn by the session pane's
//! chunk once the page is interactive (`lazy::new_session_choices`), so that the first load of
//! `/` carries none of their code (docs/size.md).

use leptos::prelude::*;

use super::pane::mode_select;
use super::server_call::ServerCall;
use super::state::{NewSessionOptions, Workspace};
use crate::api::worktree::FolderBranches;
use crate::changes::{Branches, NewWorktree};

/// The new session's folder and options: the folder (with the recent ones), the agent and its
/// model, the permission mode. Drawn by the session pane's chunk (`lazy::new_session_choices`).
pub fn new_session_options(workspace: Workspace, choices: impl IntoView) -> impl IntoView {
    let mode = workspace.new_session.mode;
    view! {
        {working_folder(workspace)}
        {worktree_choice(workspace)}
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

/// "In a new worktree", for a folder that is a git repository: the branch to start from, the new
/// branch's name, and a command to set the worktree up. What is chosen goes with the first message
/// (`NewSessionOptions::worktree`).
fn worktree_choice(workspace: Workspace) -> impl IntoView {
    let NewSessionOptions { workdir, works_in_folder, worktree, .. } = workspace.new_session;
    let branches = RwSignal::new(None::<Branches>);
    let wanted = RwSignal::new(false);
    let base = RwSignal::new(String::new());
    let branch = RwSignal::new(default_branch_name());
    let setup = RwSignal::new(String::new());
    let ask = ServerCall::<FolderBranches>::new();
    // The folder's branches, once typing in the field has paused.
    let asked = StoredValue::new(0_u32);
    Effect::new(move |_| {
        let folder = workdir.get();
        let turn = asked.get_value().wrapping_add(1);
        asked.set_value(turn);
        set_timeout(
            move || {
                if asked.try_get_value() != Some(turn) {
                    return;
                }
                if !folder.starts_with('/') {
                    branches.set(None);
                    return;
                }
                ask.dispatch_then(FolderBranches { folder }, move |found| {
                    let found = found.ok().flatten();
                    if let Some(found) = &found {
                        base.set(found.current.clone().or_else(|| found.all.first().cloned()).unwrap_or_default());
                    }
                    branches.set(found);
                });
            },
            std::time::Duration::from_millis(300),
        );
    });
    Effect::new(move |_| {
        let chosen = (wanted.get() && works_in_folder.get() && branches.with(Option::is_some)).then(|| NewWorktree {
            base: base.get(),
            branch: branch.get(),
            setup: Some(setup.get()).filter(|s| !s.trim().is_empty()),
        });
        worktree.set(chosen);
    });
    let options = move || {
        branches
            .with(|b| b.as_ref().map(|b| b.all.clone()).unwrap_or_default())
            .into_iter()
            .map(|name| {
                let (selected, value) = (name.clone(), name.clone());
                view! { <option value=value selected=move || base.get() == selected>{name}</option> }
            })
            .collect_view()
    };
    view! {
        <div class="worktree-options" hidden=move || !works_in_folder.get() || branches.with(Option::is_none)>
            <label class="worktree-wanted">
                <input type="checkbox" prop:checked=move || wanted.get() on:change=move |ev| wanted.set(event_target_checked(&ev)) />
                "In a new worktree"
            </label>
            <div class="worktree-fields" hidden=move || !wanted.get()>
                <label>
                    <span>"From"</span>
                    <select on:change=move |ev| base.set(event_target_value(&ev))>{options}</select>
                </label>
                <label>
                    <span>"New branch"</span>
                    <input type="text" spellcheck="false" prop:value=move || branch.get() on:input=move |ev| branch.set(event_target_value(&ev)) />
                </label>
                <label>
                    <span>"Set-up command"</span>
                    <input type="text" spellcheck="false" placeholder="npm ci (optional)" prop:value=move || setup.get() on:input=move |ev| setup.set(event_target_value(&ev)) />
                </label>
            </div>
        </div>
    }
}

/// `askbridge/` and the time, a name no earlier session's branch has taken.
fn default_branch_name() -> String {
    #[cfg(feature = "hydrate")]
    let now = js_sys::Date::now() as u64;
    #[cfg(not(feature = "hydrate"))]
    let now = 0_u64;
    format!("askbridge/{}", base36(now / 1000))
}

fn base36(mut n: u64) -> String {
    let mut digits = Vec::new();
    loop {
        digits.push(char::from_digit((n % 36) as u32, 36).unwrap_or('0'));
        n /= 36;
        if n == 0 {
            break;
        }
    }
    digits.iter().rev().collect()
}
