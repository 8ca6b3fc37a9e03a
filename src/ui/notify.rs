//! Telling the person that an agent waits for them when they are looking elsewhere: a `●` in the
//! tab's title while any session waits, and, with their permission, a browser notification for
//! each new question or permission request, in any session, while the tab is hidden.
//!
//! The bell (on every page) asks the browser for permission, then turns notifications on and off
//! for this browser (the browser's permission cannot be taken back by a page, so "off" is kept in
//! `localStorage`). Its state follows the permission when it changes elsewhere (the browser's
//! settings, another tab): it is read again whenever the tab comes back into view.
//!
//! Turning it on also subscribes this browser to the server's pushes, which reach it with every
//! tab closed (issue 23); off unsubscribes. That work is in public/push.js, fetched at the first
//! click: the WASM holds only the call (no service worker or push bindings, which the first load
//! of every page would carry).

use leptos::prelude::*;

use super::icons;
#[cfg(feature = "hydrate")]
use super::scripts::bell;

/// Whether this browser notifies: shared by every bell of the page and the announcements.
#[derive(Clone, Copy)]
pub struct Bell {
    /// The browser's permission: `default`, `granted`, `denied`, or `unsupported`.
    permission: RwSignal<&'static str>,
    /// Turned off by the person, though permitted.
    off: RwSignal<bool>,
}

/// Where "off" is kept.
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
const OFF_KEY: &str = "askbridge:notify";

impl Bell {
    /// Made once per page, and provided as context. The browser's permission is read once the
    /// page is `interactive`, not before: a session page's bell is taken over from the server's
    /// markup after the rest of the page (`lazy::session_pane_in_place`), and a value that had
    /// changed meanwhile would never reach it.
    #[allow(unused_variables)]
    pub fn provide(interactive: RwSignal<bool>) -> Self {
        let bell = Self { permission: RwSignal::new("default"), off: RwSignal::new(false) };
        provide_context(bell);
        #[cfg(feature = "hydrate")]
        {
            let read = move || {
                if interactive.get() {
                    bell.read_permission();
                }
            };
            Effect::new(read);
            let again = wasm_bindgen::closure::Closure::<dyn Fn()>::new(move || untrack(read));
            if let Some(window) = web_sys::window() {
                use wasm_bindgen::JsCast;
                let _ = window.add_event_listener_with_callback("focus", again.as_ref().unchecked_ref());
                let _ = document().add_event_listener_with_callback("visibilitychange", again.as_ref().unchecked_ref());
            }
            again.forget();
        }
        bell
    }

    /// Whether a notification may be shown now (tracked only where it matters: in the button).
    fn notifies(&self) -> bool {
        self.permission.get() == "granted" && !self.off.get()
    }

    #[cfg(feature = "hydrate")]
    fn read_permission(&self) {
        let supported =
            web_sys::window().is_some_and(|w| js_sys::Reflect::has(&w, &"Notification".into()).unwrap_or(false));
        self.permission.set(if !supported {
            "unsupported"
        } else {
            match web_sys::Notification::permission() {
                web_sys::NotificationPermission::Granted => "granted",
                web_sys::NotificationPermission::Denied => "denied",
                _ => "default",
            }
        });
        let off = web_sys::window()
            .and_then(|w| w.local_storage().ok().flatten())
            .and_then(|s| s.get_item(OFF_KEY).ok().flatten())
            .is_some_and(|v| v == "off");
        self.off.set(off);
    }

    fn click(&self) {
        match self.permission.get_untracked() {
            "granted" => {
                let off = !self.off.get_untracked();
                self.off.set(off);
                #[cfg(feature = "hydrate")]
                {
                    if let Some(storage) = web_sys::window().and_then(|w| w.local_storage().ok().flatten()) {
                        let _ = if off { storage.set_item(OFF_KEY, "off") } else { storage.remove_item(OFF_KEY) };
                    }
                    bell(if off { "off" } else { "on" });
                }
            }
            #[cfg(feature = "hydrate")]
            "default" => {
                let bell = *self;
                if let Ok(promise) = web_sys::Notification::request_permission() {
                    leptos::task::spawn_local(async move {
                        let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
                        bell.read_permission();
                        match bell.permission.get_untracked() {
                            "granted" if !bell.off.get_untracked() => self::bell("on"),
                            "denied" => self::bell("blocked"),
                            _ => {}
                        }
                    });
                }
            }
            // Blocked in the browser's settings, which a page cannot change: it says where.
            #[cfg(feature = "hydrate")]
            "denied" => bell("blocked"),
            _ => {}
        }
    }

    /// Shows a notification for something that waits for the person, if they allowed it and
    /// this tab is not in front. `tag` replaces an earlier notification about the same thing.
    #[allow(unused_variables)]
    pub fn announce(&self, title: &str, body: &str, tag: &str) {
        #[cfg(feature = "hydrate")]
        {
            let hidden = document().hidden();
            if hidden && untrack(|| self.notifies()) {
                let options = web_sys::NotificationOptions::new();
                options.set_body(body);
                options.set_tag(tag);
                let _ = web_sys::Notification::new_with_options(title, &options);
            }
        }
    }
}

pub fn use_bell() -> Bell {
    expect_context::<Bell>()
}

/// The bell: asks for permission to notify, then turns notifications on and off.
pub fn notify_button() -> impl IntoView {
    let bell = use_bell();
    let label = move || match bell.permission.get() {
        "granted" if bell.off.get() => "Notifications are off: turn them on",
        "granted" => "Notifications are on for new questions: turn them off",
        "denied" => "Notifications are blocked in this browser's settings",
        _ => "Notify me when the agent asks something",
    };
    view! {
        <button
            class="icon-button notify-button"
            aria-label=label
            title=label
            aria-pressed=move || bell.notifies().to_string()
            hidden=move || bell.permission.get() == "unsupported"
            on:click=move |_| bell.click()
        >
            {icons::bell()}
        </button>
    }
}
