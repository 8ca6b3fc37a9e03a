//! `?` anywhere but in a text box lists the keys (`keys_dialog.rs`, drawn by the session pane's
//! chunk); Esc or its close button hides it.

use leptos::prelude::*;

pub fn keys_help() -> impl IntoView {
    let open = RwSignal::new(false);
    let _ = window_event_listener(leptos::ev::keydown, move |event| {
        let typing = event
            .target()
            .and_then(|t| wasm_bindgen::JsCast::dyn_into::<leptos::web_sys::Element>(t).ok())
            .is_some_and(|el| matches!(el.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT"));
        match event.key().as_str() {
            "?" if !typing && !event.ctrl_key() && !event.meta_key() => {
                event.prevent_default();
                open.set(true);
            }
            "Escape" if open.get_untracked() => {
                event.prevent_default();
                event.stop_propagation();
                open.set(false);
            }
            _ => {}
        }
    });
    // The dialog is the session pane chunk's: the first load carries only the key that opens it.
    move || open.get().then(|| super::lazy::keys_dialog(open))
}
