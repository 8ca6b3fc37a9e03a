//! Where the page is, and moving between pages without reloading.
//!
//! AskBridge has three pages, `/`, `/s/<id>` and `/c/<id>` (a Claude Code session), so it routes by hand instead of with a router
//! crate: leptos_router weighed 40 KB (brotli) in the bundle, a sixth of the page's budget. Links
//! are plain `<a href>`; in the browser a click on one of ours is caught and becomes a history
//! entry, as a router would do, and Back and Forward follow.

use leptos::prelude::*;

/// What a path shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Page {
    Home,
    Session(String),
    /// A session Claude Code keeps on this machine, read from its transcript.
    ClaudeSession(String),
    NotFound,
}

impl Page {
    /// Every page's path, as an axum route pattern: the server routes exactly these to the page
    /// renderer, so the UI's list of pages is the only one.
    pub const ROUTES: [&'static str; 3] = ["/", "/s/{id}", "/c/{id}"];

    pub fn of(path: &str) -> Self {
        match path.trim_end_matches('/') {
            "" => Self::Home,
            rest => {
                let id = |prefix| rest.strip_prefix(prefix).filter(|id: &&str| !id.is_empty() && !id.contains('/'));
                match (id("/s/"), id("/c/")) {
                    (Some(id), _) => Self::Session(id.to_string()),
                    (_, Some(id)) => Self::ClaudeSession(id.to_string()),
                    _ => Self::NotFound,
                }
            }
        }
    }
}

pub fn session_path(id: &str) -> String {
    format!("/s/{id}")
}

pub fn claude_session_path(id: &str) -> String {
    format!("/c/{id}")
}

#[derive(Clone, Copy)]
pub struct Location {
    path: RwSignal<String>,
}

impl Location {
    /// The current page (tracked).
    pub fn page(&self) -> Page {
        self.path.with(|path| Page::of(path))
    }

    pub fn page_untracked(&self) -> Page {
        self.path.with_untracked(|path| Page::of(path))
    }

    /// Goes to `path` in this tab, adding a history entry.
    pub fn navigate(&self, path: &str) {
        #[cfg(feature = "hydrate")]
        if let Some(history) = web_sys::window().and_then(|w| w.history().ok()) {
            let _ = history.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(path));
        }
        self.path.set(path.to_string());
    }
}

pub fn use_location() -> Location {
    expect_context::<Location>()
}

/// Provides the location to the page, from the request on the server and from the address bar in
/// the browser, where it also starts following clicks and history.
pub fn provide_location() -> Location {
    let location = Location { path: RwSignal::new(initial_path()) };
    provide_context(location);
    #[cfg(feature = "hydrate")]
    follow_links_and_history(location);
    location
}

fn initial_path() -> String {
    #[cfg(feature = "ssr")]
    if let Some(parts) = use_context::<axum::http::request::Parts>() {
        return parts.uri.path().to_string();
    }
    #[cfg(feature = "hydrate")]
    if let Some(path) = web_sys::window().and_then(|w| w.location().pathname().ok()) {
        return path;
    }
    "/".to_string()
}

#[cfg(feature = "hydrate")]
fn follow_links_and_history(location: Location) {
    use wasm_bindgen::JsCast;
    use wasm_bindgen::closure::Closure;

    let Some(window) = web_sys::window() else { return };
    let on_pop = Closure::<dyn Fn()>::new(move || {
        if let Some(path) = web_sys::window().and_then(|w| w.location().pathname().ok()) {
            location.path.set(path);
        }
    });
    let _ = window.add_event_listener_with_callback("popstate", on_pop.as_ref().unchecked_ref());
    on_pop.forget();

    let on_click = Closure::<dyn Fn(web_sys::MouseEvent)>::new(move |event: web_sys::MouseEvent| {
        if event.default_prevented()
            || event.button() != 0
            || event.meta_key()
            || event.ctrl_key()
            || event.shift_key()
            || event.alt_key()
        {
            return;
        }
        let Some(anchor) = event
            .target()
            .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
            .and_then(|element| element.closest("a[href]").ok().flatten())
            .and_then(|element| element.dyn_into::<web_sys::HtmlAnchorElement>().ok())
        else {
            return;
        };
        let same_origin = web_sys::window().and_then(|w| w.location().origin().ok()) == Some(anchor.origin());
        if !same_origin || !anchor.target().is_empty() || anchor.has_attribute("download") {
            return;
        }
        let path = anchor.pathname();
        if Page::of(&path) == Page::NotFound {
            return; // not one of ours: let the browser load it
        }
        event.prevent_default();
        if location.path.get_untracked() != path {
            location.navigate(&path);
        }
    });
    if let Some(document) = window.document() {
        let _ = document.add_event_listener_with_callback("click", on_click.as_ref().unchecked_ref());
    }
    on_click.forget();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_their_pages() {
        assert_eq!(Page::of("/"), Page::Home);
        assert_eq!(Page::of(""), Page::Home);
        assert_eq!(Page::of("/s/abc"), Page::Session("abc".into()));
        assert_eq!(Page::of("/s/abc/"), Page::Session("abc".into()));
        assert_eq!(Page::of("/s/"), Page::NotFound);
        assert_eq!(Page::of("/s/a/b"), Page::NotFound);
        assert_eq!(Page::of("/pkg/x.js"), Page::NotFound);
        assert_eq!(Page::of("/c/3f1e"), Page::ClaudeSession("3f1e".into()));
        assert_eq!(Page::of("/c/"), Page::NotFound);
    }

    #[test]
    fn every_server_route_is_a_page_and_every_page_has_a_route() {
        let example = |pattern: &str| pattern.replace("{id}", "abc");
        let pages: Vec<Page> = Page::ROUTES.iter().map(|pattern| Page::of(&example(pattern))).collect();
        assert_eq!(pages, [Page::Home, Page::Session("abc".into()), Page::ClaudeSession("abc".into())]);
        // The path a link to a session uses is the route's.
        assert_eq!(session_path("abc"), example(Page::ROUTES[1]));
        assert_eq!(claude_session_path("abc"), example(Page::ROUTES[2]));
    }
}
