//! The session's **Files**: the files of its folder that git would list (its `.gitignore`
//! honoured: the same list as the message box's `@`), as a tree (each folder drawn when opened) or
//! filtered as typed, and one of them shown with its line numbers, coloured by its language
//! (highlight.js, `public/highlight.js`, fetched when a file is first shown). A path that leaves
//! the folder is refused by the server, which says why. Drawn by the `changes` chunk, with the
//! Changes panel.

use leptos::prelude::*;

#[cfg(feature = "hydrate")]
use super::scripts::highlight_file;
use super::server_call::ServerCall;
use super::state::ThreadState;
use crate::api::changes::{FolderFile, FolderTree};
use crate::changes::FileText;

/// Files listed at most while a filter leaves more.
const SHOWN: usize = 300;

pub fn files_panel(thread: ThreadState, open: RwSignal<bool>) -> impl IntoView {
    let session = thread.session_id.get_value();
    let files = RwSignal::new(None::<Vec<String>>);
    let filter = RwSignal::new(String::new());
    let shown = RwSignal::new(None::<FileText>);
    let folder = StoredValue::new(Folder::default());
    let tree = ServerCall::<FolderTree>::new();
    let read = ServerCall::<FolderFile>::sharing(tree.state());
    tree.dispatch(FolderTree { session: session.clone() }, move |listed| {
        folder.set_value(Folder::of(&listed));
        files.set(Some(listed));
    });
    let pick = Callback::new(move |path: String| {
        read.dispatch(FolderFile { session: session.clone(), path }, move |text| shown.set(Some(text)));
    });
    // Filtered: the matching paths, whole. Not: the folder as a tree.
    let list = move || {
        let filter = filter.get().to_lowercase();
        files.with(|files| {
            let files = files.as_deref().unwrap_or_default();
            if filter.is_empty() {
                return folder_entries(folder, Vec::new(), pick);
            }
            let matching = files.iter().filter(|path| path.to_lowercase().contains(&filter)).take(SHOWN);
            matching.map(|path| file_entry(path.clone(), path.clone(), pick)).collect_view().into_any()
        })
    };
    view! {
        <aside id="files-panel" class="changes-panel" aria-label="Files">
            <header class="changes-header">
                <h2>"Files"</h2>
                <input
                    class="files-filter"
                    type="search"
                    aria-label="Filter files"
                    placeholder="Filter files"
                    prop:value=move || filter.get()
                    on:input=move |ev| filter.set(event_target_value(&ev))
                />
                <button class="icon-button" aria-label="Close files" on:click=move |_| open.set(false)>"×"</button>
            </header>
            <p class="changes-problem" role="alert" hidden=move || tree.problem().is_none()>{move || tree.problem()}</p>
            {move || match shown.get() {
                Some(text) => file_text(text, shown).into_any(),
                None => view! { <ul class="files-list" aria-label="Files in the folder">{list}</ul> }.into_any(),
            }}
        </aside>
    }
}

/// A folder of the tree: its folders, then its files, each by name.
#[derive(Default)]
struct Folder {
    folders: std::collections::BTreeMap<String, Folder>,
    /// Names and whole paths.
    files: Vec<(String, String)>,
}

impl Folder {
    fn of(paths: &[String]) -> Self {
        let mut root = Folder::default();
        for path in paths {
            let mut parts: Vec<&str> = path.split('/').collect();
            let name = parts.pop().unwrap_or_default();
            let mut at = &mut root;
            for part in parts {
                at = at.folders.entry(part.to_string()).or_default();
            }
            at.files.push((name.to_string(), path.clone()));
        }
        root
    }
}

/// The entries of the folder at `at` (its parts) in `root`: each folder closed until opened (its
/// entries drawn then: a large folder costs nothing closed), then the files.
fn folder_entries(tree: StoredValue<Folder>, at: Vec<String>, pick: Callback<String>) -> AnyView {
    tree.with_value(|root| {
        let Some(folder) = at.iter().try_fold(root, |folder, part| folder.folders.get(part)) else {
            return ().into_any();
        };
        let folders = folder
            .folders
            .keys()
            .map(|name| {
                let opened = RwSignal::new(false);
                let inner = at.iter().cloned().chain([name.clone()]).collect::<Vec<_>>();
                let entries = move || opened.get().then(|| folder_entries(tree, inner.clone(), pick));
                view! {
                    <li>
                        <details class="files-folder" on:toggle=move |_| opened.set(true)>
                            <summary><bdi>{format!("{name}/")}</bdi></summary>
                            <ul>{entries}</ul>
                        </details>
                    </li>
                }
            })
            .collect_view();
        let files = folder.files.iter().map(|(name, path)| file_entry(name.clone(), path.clone(), pick)).collect_view();
        view! { {folders}{files} }.into_any()
    })
}

/// A file to show: its name in the tree, or its whole path when filtered.
fn file_entry(label: String, path: String, pick: Callback<String>) -> impl IntoView {
    view! { <li><button class="file-entry" title=path.clone() on:click=move |_| pick.run(path.clone())><bdi>{label}</bdi></button></li> }
}

/// One file, line by line, with the way back to the list; coloured once highlight.js is here.
fn file_text(text: FileText, shown: RwSignal<Option<FileText>>) -> impl IntoView {
    let table = NodeRef::<leptos::html::Table>::new();
    #[cfg(feature = "hydrate")]
    {
        let path = text.path.clone();
        Effect::new(move |painted: Option<bool>| {
            if painted == Some(true) {
                return true;
            }
            let Some(element) = table.get() else { return false };
            highlight_file(&element, &path);
            true
        });
    }
    let rows = text
        .lines
        .into_iter()
        .enumerate()
        .map(|(i, line)| view! { <tr><td class="line-no">{i + 1}</td><td class="line-text">{line}</td></tr> })
        .collect_view();
    view! {
        <div class="file-shown">
            <button class="button small" on:click=move |_| shown.set(None)>"All files"</button>
            <h3 class="file-shown-path"><bdi>{text.path.clone()}</bdi></h3>
        </div>
        {text.note.map(|note| view! { <p class="change-note">{note}</p> })}
        <div class="file-view-box">
            <table class="diff file-view" aria-label=text.path node_ref=table>
                <colgroup><col class="col-no" /><col /></colgroup>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
}
