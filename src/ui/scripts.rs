//! The page's own scripts that a click or a panel fetches when first needed: the bell's
//! (public/push.js), the terminal's glue (public/terminal.js, which brings xterm.js) and the file
//! viewer's colours (public/highlight.js). One wasm-bindgen snippet for all of them: each snippet
//! is a module of its own that the glue imports statically, so every one was a request more in the
//! first load of every page, and about 100 bytes on the wire (three made 351 bytes; this one
//! makes fewer: `make size`).

#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen(inline_js = "\
    const warn = (what) => (e) => console.warn('AskBridge ' + what + ':', e); \
    export function bell(what) { import('/push.js').then((m) => m.bell(what)).catch(warn('push')); } \
    export function highlight_file(table, path) { \
        import('/highlight.js').then((m) => m.paint(table, path)).catch(warn('highlight')); } \
    export function start_terminal(element, session, said) { \
        import('/terminal.js').then((m) => m.start(element, session, said)) \
            .catch((e) => said('The terminal could not be loaded: ' + e.message + '. Reload the page.')); } \
    export function stop_terminal(session) { \
        import('/terminal.js').then((m) => m.stop(session)).catch(() => {}); }")]
extern "C" {
    /// Gives public/push.js the bell's click: `on` and `off` turn this browser's push
    /// subscription on or off, `blocked` says how to allow notifications. What goes wrong is said
    /// there, beside the bell (its words live in push.js, not in every page).
    pub fn bell(what: &str);
    /// Colours a file's table; a file it cannot colour stays as it is drawn.
    pub fn highlight_file(table: &web_sys::Element, path: &str);
    /// Starts the terminal in `element`; what goes wrong is said in the panel through `said`.
    pub fn start_terminal(element: &web_sys::Element, session: &str, said: &js_sys::Function);
    pub fn stop_terminal(session: &str);
}
