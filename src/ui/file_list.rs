//! The message box's `@` list: `@` at the start of a word lists the files of the session's folder
//! (git's own list where it is a repository), matched fuzzily as the rest of the word is typed, on
//! the server (`folder_files`). ↑/↓ move, Enter or Tab put the path in place of the word, Esc
//! closes the list. All of it is the session pane chunk's (`lazy::box_list`): the box, on the
//! first load, only knows to draw it.

use leptos::html;
use leptos::prelude::*;

#[cfg(feature = "hydrate")]
use super::slash::INPUT_ID;
use super::slash::Key;
use super::state::use_workspace;

/// The word being typed at the caret, when it starts with `@`: where the `@` is (a byte offset
/// in `text`) and what follows it up to the caret. `caret` counts UTF-16 units, as the browser
/// does.
pub fn at_word(text: &str, caret: usize) -> Option<(usize, String)> {
    let mut units = 0;
    let end = text.char_indices().find_map(|(at, c)| {
        let here = (units >= caret).then_some(at);
        units += c.len_utf16();
        here
    });
    let before = &text[..end.unwrap_or(text.len())];
    let start =
        before.rfind(char::is_whitespace).map_or(0, |at| at + before[at..].chars().next().map_or(1, char::len_utf8));
    let word = &before[start..];
    word.strip_prefix('@').filter(|rest| !rest.contains('@')).map(|rest| (start, rest.to_string()))
}

/// `text` with the `@` word at `start` (as far as the caret, `typed` after the `@`) made `@path `;
/// and where the caret goes (in UTF-16 units): after the space.
fn with_path(text: &str, start: usize, typed: &str, path: &str) -> (String, usize) {
    let end = start + 1 + typed.len();
    let inserted = format!("@{path} ");
    let rest = text[end..].trim_start_matches(|c: char| !c.is_whitespace());
    let rest = rest.strip_prefix(' ').unwrap_or(rest);
    let caret = text[..start].encode_utf16().count() + inserted.encode_utf16().count();
    (format!("{}{inserted}{rest}", &text[..start]), caret)
}

/// The list, above the box, while `open`; the box's keys go through `keys` first.
pub fn file_list(
    draft: RwSignal<String>,
    input: NodeRef<html::Textarea>,
    whose: Signal<(Option<String>, String)>,
    keys: StoredValue<Option<Callback<String, Key>>>,
    take: Callback<Key>,
    open: RwSignal<bool>,
) -> impl IntoView {
    let list = FileList::new(draft, input, open);
    list.ask_as_typed(whose);
    keys.set_value(Some(Callback::new(move |key: String| list.on_key(&key))));
    on_cleanup(move || keys.set_value(None));
    list.name_the_active_option();
    list.view(take)
}

/// The `@` list's state: the word it lists files for, what the server found for it, and the
/// option the keys have moved to.
#[derive(Clone, Copy)]
struct FileList {
    draft: RwSignal<String>,
    open: RwSignal<bool>,
    /// The `@` word at the caret, read again as the box's text changes.
    word: Memo<Option<(usize, String)>>,
    found: RwSignal<Vec<String>>,
    problem: RwSignal<Option<String>>,
    active: RwSignal<usize>,
}

impl FileList {
    fn new(draft: RwSignal<String>, input: NodeRef<html::Textarea>, open: RwSignal<bool>) -> Self {
        let word = Memo::new(move |_| {
            let text = draft.get();
            let caret = input
                .get_untracked()
                .and_then(|el| el.selection_start().ok().flatten())
                .map_or(text.encode_utf16().count(), |at| at as usize);
            at_word(&text, caret)
        });
        Self {
            draft,
            open,
            word,
            found: RwSignal::new(Vec::new()),
            problem: RwSignal::new(None),
            active: RwSignal::new(0),
        }
    }

    /// Asks the server for the files at every change of the word; an answer to a word no longer
    /// typed is dropped. A word no longer there closes the list.
    fn ask_as_typed(self, whose: Signal<(Option<String>, String)>) {
        let workspace = use_workspace();
        let Self { open, word, found, problem, active, .. } = self;
        Effect::new(move |_| {
            let Some((_, query)) = word.get() else {
                open.set(false);
                return;
            };
            active.set(0);
            let (session, agent) = whose.get_untracked();
            let workdir = session.is_none().then(|| workspace.new_session.workdir.get_untracked());
            let agent = session.is_none().then_some(agent);
            #[cfg(feature = "hydrate")]
            leptos::task::spawn_local(async move {
                let listed = crate::api::folder_files(session, workdir, agent, query.clone()).await;
                if word.with_untracked(|w| w.as_ref().map(|(_, q)| q) != Some(&query)) {
                    return;
                }
                match listed {
                    Ok(files) => {
                        problem.set(None);
                        found.set(files);
                    }
                    Err(error) => {
                        found.set(Vec::new());
                        problem.set(Some(error.to_string()));
                    }
                }
            });
            #[cfg(not(feature = "hydrate"))]
            let _ = (session, workdir, agent, query, found, problem);
        });
    }

    /// The path of option `index` in place of the word; the list closes.
    fn choose(self, index: usize) -> Key {
        let Some((start, typed)) = self.word.get_untracked() else { return Key::Pass };
        let Some(path) = self.found.with_untracked(|files| files.get(index).cloned()) else { return Key::Pass };
        let (text, caret) = with_path(&self.draft.get_untracked(), start, &typed, &path);
        self.open.set(false);
        Key::Take { text, send: false, caret: Some(caret as u32) }
    }

    fn on_key(self, key: &str) -> Key {
        let count = self.found.with_untracked(Vec::len);
        match key {
            "Escape" => self.open.set(false),
            "ArrowDown" if count > 0 => self.active.update(|a| *a = (*a + 1) % count),
            "ArrowUp" if count > 0 => self.active.update(|a| *a = (*a + count - 1) % count),
            "Enter" | "Tab" if count > 0 => return self.choose(self.active.get_untracked()),
            _ => return Key::Pass,
        }
        Key::Handled
    }

    /// While the list is drawn, the box controls it and names its highlighted option
    /// (`aria-activedescendant`); the `/` list is the box's again after.
    fn name_the_active_option(self) {
        #[cfg(feature = "hydrate")]
        {
            let Self { found, active, .. } = self;
            Effect::new(move |_| {
                let active = (!found.with(Vec::is_empty)).then(|| option_id(active.get()));
                if let Some(input) = document().get_element_by_id(INPUT_ID) {
                    let _ = input.set_attribute("aria-controls", "file-list");
                    let _ = match active {
                        Some(id) => input.set_attribute("aria-activedescendant", &id),
                        None => input.remove_attribute("aria-activedescendant"),
                    };
                }
            });
            on_cleanup(|| {
                if let Some(input) = document().get_element_by_id(INPUT_ID) {
                    let _ = input.set_attribute("aria-controls", "slash-list");
                    let _ = input.remove_attribute("aria-activedescendant");
                }
            });
        }
    }

    fn view(self, take: Callback<Key>) -> impl IntoView {
        let Self { found, problem, .. } = self;
        let options =
            move || found.get().into_iter().enumerate().map(|(i, path)| self.option(i, path, take)).collect_view();
        view! {
            <ul id="file-list" class="slash-list" role="listbox" aria-label="Files">
                {options}
                <li class="file-list-note" role="presentation" hidden=move || problem.with(Option::is_none) && !found.with(Vec::is_empty)>
                    {move || problem.get().unwrap_or_else(|| "No file matches".into())}
                </li>
            </ul>
        }
    }

    /// Option `i`: the file's name, then its folder.
    fn option(self, i: usize, path: String, take: Callback<Key>) -> impl IntoView {
        let (folder, name) = match path.rsplit_once('/') {
            Some((folder, name)) => (format!("{folder}/"), name.to_string()),
            None => (String::new(), path.clone()),
        };
        let active = self.active;
        view! {
            <li
                id=option_id(i)
                role="option"
                class="slash-option file-option"
                aria-selected=move || (active.get() == i).to_string()
                // The box keeps the focus (and the keyboard) while an option is clicked.
                on:mousedown=|ev| ev.prevent_default()
                on:click=move |_| take.run(self.choose(i))
            >
                <span class="slash-name">{name}</span>
                <span class="slash-hint">{folder}</span>
            </li>
        }
    }
}

fn option_id(i: usize) -> String {
    format!("file-option-{i}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_at_sign_opens_a_word_only_at_its_start() {
        assert_eq!(at_word("@", 1), Some((0, String::new())));
        assert_eq!(at_word("look at @src/ma", 15), Some((8, "src/ma".into())));
        assert_eq!(at_word("look at @src/ma and more", 15), Some((8, "src/ma".into())), "the word as far as the caret");
        assert_eq!(at_word("mail me@example.com", 19), None, "inside a word");
        assert_eq!(at_word("@src done", 9), None, "the caret left the word");
        assert_eq!(at_word("line\n@rea", 9), Some((5, "rea".into())));
        // The caret counts UTF-16 units: an emoji is two.
        assert_eq!(at_word("😀 @ab", 6), Some((5, "ab".into())));
    }

    #[test]
    fn a_path_taken_replaces_the_word_and_the_caret_follows_it() {
        assert_eq!(with_path("see @ma", 4, "ma", "src/main.rs"), ("see @src/main.rs ".into(), 17));
        assert_eq!(with_path("see @ma please", 4, "ma", "src/main.rs"), ("see @src/main.rs please".into(), 17));
        assert_eq!(with_path("@mai and", 0, "ma", "src/main.rs"), ("@src/main.rs and".into(), 13));
    }
}
