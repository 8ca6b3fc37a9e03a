//! Telling the server what this tab shows: the open session, and whether the tab is visible. The
//! notifier pushes and posts a question only if no tab showed its session (`notify::presence`),
//! so a card on screen is never announced elsewhere. Reported when a session opens, when the tab
//! is hidden or shown, every [`EVERY`] while visible (the server forgets a tab after 45 s of
//! silence), and as the session closes. Only the session pane reports (its lazy chunk): a page
//! without a session shows no question.

#[cfg(feature = "hydrate")]
use leptos::prelude::*;

/// How often a visible tab says it still is: well within the server's 45 s.
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
const EVERY: std::time::Duration = std::time::Duration::from_secs(20);

/// Reports that this tab shows `session` while the calling component lives.
pub fn report_while_shown(session: String) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        use wasm_bindgen::closure::Closure;

        let shown = StoredValue::new(Some(session));
        let report = move || {
            let session = shown.get_value();
            let visible = !document().hidden();
            leptos::task::spawn_local(async move {
                // A failed report costs a notification at worst: nothing to tell the person.
                let _ = crate::api::push::tab_visibility(tab_id(), session, visible, false).await;
            });
        };
        report();
        let on_change = Closure::<dyn Fn()>::new(move || {
            report();
            // Back in view: a stream waiting to reconnect tries now, not at its next try.
            if !document().hidden() {
                crate::live::client::retry_now();
            }
        });
        let _ = document().add_event_listener_with_callback("visibilitychange", on_change.as_ref().unchecked_ref());
        let interval = set_interval_with_handle(
            move || {
                if !document().hidden() {
                    report();
                }
            },
            EVERY,
        )
        .ok();
        let on_change = StoredValue::new_local(on_change);
        on_cleanup(move || {
            on_change.with_value(|on_change| {
                let _ = document()
                    .remove_event_listener_with_callback("visibilitychange", on_change.as_ref().unchecked_ref());
            });
            if let Some(interval) = interval {
                interval.clear();
            }
            shown.set_value(None);
            report();
        });
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = session;
}

/// This tab's id, made once per page load.
#[cfg(feature = "hydrate")]
fn tab_id() -> String {
    thread_local! {
        static ID: String = format!("{:016x}{:016x}", random_u64(), random_u64());
    }
    ID.with(Clone::clone)
}

#[cfg(feature = "hydrate")]
fn random_u64() -> u64 {
    (js_sys::Math::random() * u64::MAX as f64) as u64
}
