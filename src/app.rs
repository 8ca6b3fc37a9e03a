//! The page shell and the routes.

use leptos::prelude::*;

use crate::ui::navigation::{Page, provide_location};
use crate::ui::page_data::{PAGE_DATA_ID, PageData, SESSION_DATA_ID};
use crate::ui::workspace::Workspace;

/// Where the stylesheet is, and the loader of the lazily loaded chunk: their names carry a
/// content hash in release builds.
#[derive(Debug, Clone)]
pub struct AssetPaths {
    pub stylesheet: String,
    /// `__wasm_split.….js`, which the main module imports, in a build split into chunks.
    pub split_loader: Option<String>,
}

impl AssetPaths {
    /// Reads the site's `hash.txt` (lines like `css: 1a2b…`), when the build hashed names.
    #[cfg(feature = "ssr")]
    pub fn read(hash_file: Option<&std::path::Path>) -> Self {
        let text = hash_file.and_then(|path| std::fs::read_to_string(path).ok()).unwrap_or_default();
        let hash = |wanted: &str| {
            text.lines().find_map(|line| {
                let (kind, hash) = line.split_once(':')?;
                (kind.trim() == wanted).then(|| hash.trim().to_string())
            })
        };
        let stylesheet = match hash("css") {
            Some(hash) => format!("/pkg/askbridge.{hash}.css"),
            None => "/pkg/askbridge.css".to_string(),
        };
        Self { stylesheet, split_loader: hash("split").map(|hash| format!("/pkg/__wasm_split.{hash}.js")) }
    }
}

pub fn shell(options: LeptosOptions, assets: AssetPaths) -> impl IntoView {
    let data = use_context::<PageData>();
    let page_data = data.as_ref().map(PageData::to_script_json);
    let session_data = data.as_ref().and_then(PageData::session_script_json);
    // Before the hydration script, whose WebAssembly it holds back until the card is answered.
    #[cfg(feature = "ssr")]
    let early = data.as_ref().is_some_and(PageData::answers_early).then(|| {
        view! { <script nonce=use_nonce() inner_html=crate::ui::early_answer::SCRIPT></script> }
    });
    #[cfg(not(feature = "ssr"))]
    let early: Option<()> = None;
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1, viewport-fit=cover" />
                <meta name="color-scheme" content="light dark" />
                <meta name="theme-color" media="(prefers-color-scheme: light)" content="#f6f7f9" />
                <meta name="theme-color" media="(prefers-color-scheme: dark)" content="#111418" />
                <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
                // Installable (issue 23). The manifest is fetched without cookies unless asked:
                // behind an access token it would be refused.
                <link rel="manifest" href="/manifest.webmanifest" crossorigin="use-credentials" />
                <link rel="apple-touch-icon" href="/icons/apple-touch-icon.png" />
                <link rel="stylesheet" href=assets.stylesheet />
                <title>"AskBridge"</title>
                // The page's data, for the browser to hydrate from (the head is not hydrated).
                {page_data.map(|json| view! { <script type="application/json" id=PAGE_DATA_ID inner_html=json></script> })}
                {session_data.map(|(json, in_terminal)| {
                    let in_terminal = in_terminal.then_some("");
                    view! { <script type="application/json" id=SESSION_DATA_ID data-in-terminal=in_terminal inner_html=json></script> }
                })}
                {early}
                <HydrationScripts options />
                // The main module imports the chunks' loader: fetched with it, not after it (it
                // was a round trip more on the way to a usable page, measured on `/`).
                {assets.split_loader.map(|href| view! { <link rel="modulepreload" href=href nonce=use_nonce() /> })}
            </head>
            <body>
                <App />
            </body>
        </html>
    }
}

#[component]
pub fn App() -> impl IntoView {
    let location = provide_location();
    // Only a page load can land on an unknown path: links in the page lead to known ones.
    if location.page_untracked() == Page::NotFound {
        not_found().into_any()
    } else {
        view! { <Workspace /> }.into_any()
    }
}

fn not_found() -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(axum::http::StatusCode::NOT_FOUND);
    }
    view! {
        <main class="not-found">
            <h1>"Nothing here"</h1>
            <p><a href="/">"Back to your sessions"</a></p>
        </main>
    }
}
