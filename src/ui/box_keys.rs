//! The message box's keys beyond Enter, as in Claude Code's terminal: ↑/↓ bring back the
//! session's earlier messages, Shift+Tab switches the permission mode, Esc goes to the card that
//! waits, `@` opens the list of the folder's files (`file_list`). The session pane's chunk gives them to the box (`install`, from the session pane and the
//! new-session choices), so that the first load of `/` carries none of them (docs/size.md).

use leptos::html;
use leptos::prelude::*;

use super::state::{BoxKey, ThreadState, use_workspace};

/// Gives the message box its keys (again: each pane that draws starts the recall afresh).
pub fn install() {
    let workspace = use_workspace();
    let recall = Recall::new();
    let keys = Callback::new(move |key: BoxKey| {
        let BoxKey { event, draft, input, files } = key;
        let Some(event) = event else {
            recall.forget();
            // `@` at the start of a word: the folder's files (`file_list`).
            if let Some(el) = input.get_untracked() {
                let caret = el.selection_start().ok().flatten().unwrap_or(0) as usize;
                if super::file_list::at_word(&el.value(), caret).is_some() {
                    files.set(true);
                }
            }
            return false;
        };
        let thread = workspace.thread.get_untracked();
        match event.key().as_str() {
            // To the card that waits; what was typed stays in the box.
            "Escape" => match thread.filter(|t| t.waiting.try_get_untracked().unwrap_or(false)) {
                Some(thread) => match super::focus::go_to_waiting_card(None) {
                    Some(at_end) => {
                        thread.following.try_set_value(at_end);
                        true
                    }
                    None => false,
                },
                None => false,
            },
            "Tab" if event.shift_key() => next_permission_mode(),
            "ArrowUp" | "ArrowDown" if !event.shift_key() => {
                recall.step(event.key() == "ArrowUp", input, draft, thread)
            }
            _ => false,
        }
    });
    workspace.box_keys.set_value(Some(keys));
}

/// ↑ and ↓ in the message box, as in a terminal: earlier messages of the session come back, when
/// the box is empty or the caret is on its first line (↑) or last line (↓); past the newest, what
/// was being typed comes back.
#[derive(Clone, Copy)]
struct Recall {
    /// How far back (1 = the newest message), and what the box held before the first ↑.
    at: StoredValue<Option<(usize, String)>>,
}

impl Recall {
    fn new() -> Self {
        Self { at: StoredValue::new(None) }
    }

    /// The person typed: the next ↑ starts again from the newest.
    fn forget(&self) {
        self.at.set_value(None);
    }

    /// One step back (`older`) or forward; false when the key is the caret's to move.
    fn step(
        &self,
        older: bool,
        input: NodeRef<html::Textarea>,
        draft: RwSignal<String>,
        thread: Option<ThreadState>,
    ) -> bool {
        let Some(el) = input.get_untracked() else { return false };
        let text = draft.get_untracked();
        let caret = el.selection_start().ok().flatten().unwrap_or(0) as usize;
        let before: String = text.chars().take(caret).collect();
        let edge = if older { !before.contains('\n') } else { !text.chars().skip(caret).any(|c| c == '\n') };
        // Once recalling, ↑ and ↓ go on through the messages whatever their lines.
        let recalling = self.at.with_value(Option::is_some);
        if !(text.is_empty() || edge || recalling) || (!older && !recalling) {
            return false;
        }
        let sent: Vec<String> = thread.map(|t| t.user_texts()).unwrap_or_default();
        let (back, typed) = self.at.get_value().unwrap_or((0, text));
        let back = if older { (back + 1).min(sent.len()) } else { back.saturating_sub(1) };
        if back == 0 {
            self.at.set_value(None);
            draft.set(typed);
        } else {
            let Some(message) = sent.get(sent.len() - back) else { return false };
            draft.set(message.clone());
            self.at.set_value(Some((back, typed)));
        }
        true
    }
}

/// Switches the page's permission mode (the header's, or the new session's) to the next one
/// offered, as Shift+Tab does in Claude Code; never to bypass, which is confirmed first and chosen
/// from the list. False when the page has no mode to switch.
fn next_permission_mode() -> bool {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let Some(select) = document()
            .query_selector("select[aria-label='Permission mode']")
            .ok()
            .flatten()
            .and_then(|el| el.dyn_into::<web_sys::HtmlSelectElement>().ok())
        else {
            return false;
        };
        let Ok(options) = select.query_selector_all("option") else { return false };
        // An agent's own mode that stands for bypass is marked so (`pane::agent_mode_select`).
        let modes: Vec<String> = (0..options.length())
            .filter_map(|i| options.item(i)?.dyn_into::<web_sys::Element>().ok())
            .filter(|o| !o.has_attribute("data-bypass"))
            .filter_map(|o| o.get_attribute("value"))
            .filter(|mode| mode != crate::approval::PermissionMode::BypassPermissions.as_str())
            .collect();
        let now = modes.iter().position(|m| *m == select.value());
        let Some(next) = modes.get(now.map_or(0, |at| (at + 1) % modes.len().max(1))) else { return false };
        select.set_value(next);
        if let Ok(changed) = web_sys::Event::new("change") {
            let _ = select.dispatch_event(&changed);
        }
        true
    }
    #[cfg(not(feature = "hydrate"))]
    false
}
