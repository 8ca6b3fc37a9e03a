//! The page's data, as the server writes it into the page for the browser to hydrate from: the
//! workspace's part (read by the first load) and the open session's (read by the session pane's
//! chunk, `lazy.rs`), each in a `<script type="application/json">` of its own.

use crate::api::WorkspaceView;
use crate::error::AppError;

/// The ids of the `<script type="application/json">` elements that carry the page's data: the
/// workspace's, read by the first load, and the open session's, read by the session pane's chunk.
pub const PAGE_DATA_ID: &str = "askbridge-page-data";
pub const SESSION_DATA_ID: &str = "askbridge-session-data";
/// The attribute of the session's script that says a terminal's `claude` runs it (the message
/// box is not shown), read before the session pane's chunk is here.
pub const IN_TERMINAL: &str = "data-in-terminal";

/// The page's data on the server, provided as context by the page handler.
#[derive(Clone)]
pub struct PageData(pub Result<WorkspaceView, AppError>);

impl PageData {
    /// The workspace's part, as JSON safe inside a `<script>` element (no `</script>` can close it
    /// early).
    pub fn to_script_json(&self) -> String {
        let workspace = self.0.as_ref().map(|view| &view.workspace);
        safe_in_script(serde_json::to_string(&workspace).unwrap_or_else(|_| "null".into()))
    }

    /// Whether the open session has a card waiting that a click answers before the page's code
    /// runs (`early_answer.rs`).
    #[cfg(feature = "ssr")]
    pub fn answers_early(&self) -> bool {
        let Some(current) = self.0.as_ref().ok().and_then(|view| view.current.as_ref()) else { return false };
        current.thread.messages.iter().flat_map(|m| &m.blocks).any(|block| match block {
            crate::thread::Block::ToolCall(call) => call
                .interaction
                .as_ref()
                .is_some_and(|i| i.is_pending() && super::early_answer::answers_early(&i.request)),
            _ => false,
        })
    }

    /// The open session's part, if a session is shown, and whether a terminal runs it.
    pub fn session_script_json(&self) -> Option<(String, bool)> {
        let current = self.0.as_ref().ok()?.current.as_ref()?;
        let json = serde_json::to_string(current).ok().map(safe_in_script)?;
        Some((json, current.summary.terminal.is_some()))
    }
}

fn safe_in_script(json: String) -> String {
    json.replace('<', "\\u003c")
}
