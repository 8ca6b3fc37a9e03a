//! The list of keys that `?` opens: the question card's, the permission card's and the message
//! box's. Drawn by the session pane's chunk (`lazy::keys_dialog`).

use leptos::prelude::*;

/// Each key, and what it does.
const KEYS: &[(&str, &str)] = &[
    ("1 – 9", "pick an option of the question the focus is in (a single question is then answered)"),
    ("0", "Other: type your own answer (digits and spaces are text there)"),
    ("Enter", "submit the card, or move to the next unanswered question"),
    ("Space or ↑ ↓", "choose the option the focus is on (not where the card put the focus itself)"),
    ("Esc Esc", "skip the question card: the first Esc says what the second skips (in a text box: leave the box)"),
    ("y", "allow a permission request once (Enter: the button the focus is on)"),
    ("n or Esc", "deny it (with the message, if you typed one)"),
    ("Enter", "in the message box: send; Shift+Enter: a new line"),
    ("Esc", "in the message box, while a card waits: go to the card (what you typed stays)"),
    ("Esc", "in the message box, while the agent works and nothing waits: stop it"),
    ("↑ ↓", "in the message box, empty or on its first line: bring back your earlier messages"),
    ("Shift+Tab", "in the message box: switch the permission mode (never to bypass)"),
    ("@", "in the message box: pick a file of the session's folder by name, as a path"),
    ("?", "show these keys"),
];

/// The list of keys, with its close button (which takes the focus).
pub fn keys_dialog(open: RwSignal<bool>) -> impl IntoView {
    let close = NodeRef::<leptos::html::Button>::new();
    request_animation_frame(move || {
        if let Some(button) = close.get_untracked() {
            let _ = button.focus();
        }
    });
    let rows = KEYS
        .iter()
        .map(|(key, what)| view! { <tr><th scope="row"><kbd>{*key}</kbd></th><td>{*what}</td></tr> })
        .collect_view();
    view! {
        <div class="keys-help" role="dialog" aria-modal="true" aria-label="Keyboard shortcuts">
            <div class="keys-help-box">
                <h2>"Keyboard shortcuts"</h2>
                // `tbody` written out: the browser adds it to a table that lacks it.
                <table><tbody>{rows}</tbody></table>
                <button class="button" node_ref=close on:click=move |_| open.set(false)>"Close"</button>
            </div>
        </div>
    }
}
