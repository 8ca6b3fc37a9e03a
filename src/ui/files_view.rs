//! The session's **Files**: the files of its folder that git would list (its `.gitignore`
//! honoured: the same list as the message box's `@`), filtered as typed, and one of them shown
//! with its line numbers, coloured by its language (highlight.js, `public/highlight.js`, fetched
//! when a file is first shown). A path that leaves the folder is refused by the server, which says why.
//! Drawn by the `changes` chunk, with the Changes panel.

use leptos::prelude::*;

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
    let tree = ServerCall::<FolderTree>::new();
    let read = ServerCall::<FolderFile>::sharing(tree.state());
    tree.dispatch(FolderTree { session: session.clone() }, move |listed| files.set(Some(listed)));
    let pick = move |path: String| {
        read.dispatch(FolderFile { session: session.clone(), path }, move |text| shown.set(Some(text)));
    };
    let listed = move || {
        let filter = filter.get().to_lowercase();
        files.with(|files| {
            let files = files.as_deref().unwrap_or_default();
            files.iter().filter(|path| path.to_lowercase().contains(&filter)).take(SHOWN).cloned().collect::<Vec<_>>()
        })
    };
    let list = move || {
        let pick = pick.clone();
        listed()
            .into_iter()
            .map(|path| {
                let pick = pick.clone();
                let chosen = path.clone();
                view! { <li><button class="file-entry" on:click=move |_| pick(chosen.clone())><bdi>{path}</bdi></button></li> }
            })
            .collect_view()
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
                None => view! { <ul class="files-list" aria-label="Files in the folder">{list.clone()}</ul> }.into_any(),
            }}
        </aside>
    }
}

// The viewer's colours (public/highlight.js), fetched when a file is first shown; a file it cannot
// colour stays as it is drawn.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen(inline_js = "export function highlight_file(table, path) { \
    import('/highlight.js').then((m) => m.paint(table, path)).catch((e) => console.warn('AskBridge highlight:', e)); }")]
extern "C" {
    fn highlight_file(table: &web_sys::Element, path: &str);
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
