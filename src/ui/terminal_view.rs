//! The session's **Terminal**: a shell on the server in the session's folder (`shell/`), shown by
//! xterm.js, which `public/terminal.js` imports when a terminal is first opened (the page carries
//! none of it before). Closing the panel leaves the shell running: opening it again, reloading,
//! or another tab shows the same screen. Drawn by the `changes` chunk, with the other panels.

use leptos::prelude::*;

use super::state::ThreadState;

#[cfg(feature = "hydrate")]
use super::scripts::{start_terminal, stop_terminal};

pub fn terminal_panel(thread: ThreadState, open: RwSignal<bool>) -> impl IntoView {
    let session = thread.session_id.get_value();
    let screen = NodeRef::<leptos::html::Div>::new();
    let problem = RwSignal::new(String::new());
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        use wasm_bindgen::closure::Closure;
        Effect::new(move |started: Option<bool>| {
            if started == Some(true) {
                return true;
            }
            let Some(element) = screen.get() else { return false };
            let said = Closure::<dyn Fn(String)>::new(move |text: String| problem.set(text));
            start_terminal(&element, &session, said.as_ref().unchecked_ref());
            // Called for as long as the terminal lives, which is the page's.
            said.forget();
            let session = session.clone();
            on_cleanup(move || stop_terminal(&session));
            true
        });
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = session;
    view! {
        <aside id="terminal-panel" class="changes-panel terminal-panel" aria-label="Terminal">
            <header class="changes-header">
                <h2>"Terminal"</h2>
                <span class="terminal-hint">"Ctrl+Shift+C copies, Ctrl+Shift+V pastes"</span>
                <button class="icon-button" aria-label="Close terminal" on:click=move |_| open.set(false)>"×"</button>
            </header>
            <p class="changes-problem" role="alert" hidden=move || problem.with(String::is_empty)>{move || problem.get()}</p>
            <div class="terminal-screen" node_ref=screen></div>
        </aside>
    }
}
