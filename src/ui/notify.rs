//! Telling the person that the agent waits for them when they are looking elsewhere: a marker in
//! the tab's title, and, with their permission, a browser notification for each new question.

use leptos::prelude::*;

use super::icons;

/// The bell in the session header: asks for permission to notify, and says when it has it.
pub fn notify_button() -> impl IntoView {
    let permission = RwSignal::new(String::from("default"));
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        if web_sys::window().is_some_and(|w| js_sys::Reflect::has(&w, &"Notification".into()).unwrap_or(false)) {
            permission.set(permission_name(web_sys::Notification::permission()));
        } else {
            permission.set("unsupported".into());
        }
    });
    let ask = move |_| {
        #[cfg(feature = "hydrate")]
        if let Ok(promise) = web_sys::Notification::request_permission() {
            leptos::task::spawn_local(async move {
                let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
                permission.set(permission_name(web_sys::Notification::permission()));
            });
        }
    };
    let label = move || match permission.get().as_str() {
        "granted" => "Notifications are on for new questions",
        "denied" => "Notifications are blocked in this browser's settings",
        _ => "Notify me when the agent asks something",
    };
    view! {
        <button
            class="icon-button notify-button"
            aria-label=label
            title=label
            aria-pressed=move || (permission.get() == "granted").to_string()
            hidden=move || permission.get() == "unsupported"
            disabled=move || permission.get() != "default"
            on:click=ask
        >
            {icons::bell()}
        </button>
    }
}

#[cfg(feature = "hydrate")]
fn permission_name(permission: web_sys::NotificationPermission) -> String {
    match permission {
        web_sys::NotificationPermission::Granted => "granted",
        web_sys::NotificationPermission::Denied => "denied",
        _ => "default",
    }
    .to_string()
}

/// Announces a new question, when the person allowed it and this tab is not in front.
#[allow(unused_variables)]
pub fn announce_question(title: &str, question: &str, tag: &str) {
    #[cfg(feature = "hydrate")]
    {
        let hidden = web_sys::window().and_then(|w| w.document()).is_some_and(|d| d.hidden());
        // Asked only for a tab in the background: in front, it is work on the way to the card.
        let allowed = || {
            web_sys::window().is_some_and(|w| js_sys::Reflect::has(&w, &"Notification".into()).unwrap_or(false))
                && web_sys::Notification::permission() == web_sys::NotificationPermission::Granted
        };
        if hidden && allowed() {
            let options = web_sys::NotificationOptions::new();
            options.set_body(question);
            options.set_tag(tag);
            let _ = web_sys::Notification::new_with_options(title, &options);
        }
    }
}
