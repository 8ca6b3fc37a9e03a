//! The message box's `/` menu: typing `/` at the start of the box lists the commands the agent
//! takes (for Claude Code, what the CLI itself lists: built-in commands, the user's and the
//! project's `.claude/commands`, skills), filtered as the name is typed. ↑/↓ move, Tab fills the
//! command in (for its arguments), Enter sends it, Esc closes the list. The list is asked for once
//! per session (or, on the welcome page, per agent). All of it but `Key` and `BoxList` is the
//! session pane chunk's (`lazy::box_list`): the box, on the first load, only knows to draw it
//! once `/` is typed.

use leptos::prelude::*;

use crate::thread::SlashCommand;

/// The message box's id.
pub const INPUT_ID: &str = "composer-input";

/// Commands shown at once, at most (Claude Code lists about fifty).
const SHOWN: usize = 60;

/// What a key did to the menu.
pub enum Key {
    /// Not the menu's: the box handles it.
    Pass,
    /// Moved, or closed.
    Handled,
    /// The box now holds this text; `send` it now (Enter) or let the person go on (Tab). The
    /// caret goes to `caret` (UTF-16 units), or after the text.
    Take { text: String, send: bool, caret: Option<u32> },
}

#[derive(Clone, Copy)]
pub struct SlashMenu {
    draft: RwSignal<String>,
    matches: Memo<Vec<SlashCommand>>,
    pub active: RwSignal<usize>,
    /// The box's text when Esc closed the menu: it stays closed until the text changes.
    dismissed: RwSignal<Option<String>>,
}

impl SlashMenu {
    /// A menu for the box holding `draft`, listing the commands of `whose` (a session's id, or
    /// `None` and the agent's name on the welcome page).
    pub fn new(draft: RwSignal<String>, whose: Signal<(Option<String>, String)>) -> Self {
        // Whose commands were asked for (a session's id, or `new:<agent>`), and what came.
        let loaded = RwSignal::new(None::<(String, Vec<SlashCommand>)>);
        let query = Memo::new(move |_| draft.with(|d| typed_name(d)));
        let matches = Memo::new(move |_| {
            let Some(query) = query.get() else { return Vec::new() };
            loaded.with(|loaded| loaded.as_ref().map(|(_, commands)| matching(commands, &query)).unwrap_or_default())
        });
        let menu = Self { draft, matches, active: RwSignal::new(0), dismissed: RwSignal::new(None) };
        // Asked for when first wanted: the first `/` typed for this session or agent.
        Effect::new(move |_| {
            if query.with(Option::is_none) {
                return;
            }
            let (session, agent) = whose.get();
            let key = session.clone().unwrap_or_else(|| format!("new:{agent}"));
            if loaded.with_untracked(|l| l.as_ref().is_some_and(|(k, _)| *k == key)) {
                return;
            }
            loaded.set(Some((key.clone(), Vec::new())));
            #[cfg(feature = "hydrate")]
            leptos::task::spawn_local(async move {
                let agent = session.is_none().then_some(agent);
                if let Ok(commands) = crate::api::slash_commands(session, agent).await
                    && loaded.with_untracked(|l| l.as_ref().is_some_and(|(k, _)| *k == key))
                {
                    loaded.set(Some((key, commands)));
                }
            });
        });
        // A new name typed: the best match is the one Enter takes.
        Effect::new(move |_| {
            query.track();
            menu.active.set(0);
        });
        menu
    }

    pub fn is_open(&self) -> bool {
        !self.matches.with(Vec::is_empty) && self.dismissed.with(|d| d.as_ref() != Some(&self.draft.get()))
    }

    /// The id of the highlighted option, for the box's `aria-activedescendant`.
    pub fn active_id(&self) -> Option<String> {
        self.is_open().then(|| option_id(self.active.get()))
    }

    pub fn on_key(&self, key: &str) -> Key {
        if !self.is_open() {
            return Key::Pass;
        }
        let count = self.matches.with_untracked(Vec::len);
        match key {
            "ArrowDown" => self.active.update(|a| *a = (*a + 1) % count),
            "ArrowUp" => self.active.update(|a| *a = (*a + count - 1) % count),
            "Escape" => self.dismissed.set(Some(self.draft.get_untracked())),
            "Tab" | "Enter" => {
                let chosen = self.matches.with_untracked(|m| m.get(self.active.get_untracked()).cloned());
                let Some(chosen) = chosen else { return Key::Pass };
                return self.take(&chosen, key == "Enter");
            }
            _ => return Key::Pass,
        }
        Key::Handled
    }

    fn take(&self, command: &SlashCommand, send: bool) -> Key {
        let text = if send { format!("/{}", command.name) } else { format!("/{} ", command.name) };
        Key::Take { text, send, caret: None }
    }

    /// The list, above the box; while it is drawn, the box's keys go through `keys` first, and
    /// the box names the highlighted option (`aria-activedescendant`).
    pub fn view(self, keys: StoredValue<Option<Callback<String, Key>>>, take: Callback<Key>) -> impl IntoView {
        keys.set_value(Some(Callback::new(move |key: String| self.on_key(&key))));
        on_cleanup(move || keys.set_value(None));
        #[cfg(feature = "hydrate")]
        Effect::new(move |_| {
            let active = self.active_id();
            if let Some(input) = document().get_element_by_id(INPUT_ID) {
                let _ = match active {
                    Some(id) => input.set_attribute("aria-activedescendant", &id),
                    None => input.remove_attribute("aria-activedescendant"),
                };
            }
        });
        let options = move || {
            self.matches
                .get()
                .into_iter()
                .take(SHOWN)
                .enumerate()
                .map(|(i, command)| {
                    let name = format!("/{}", command.name);
                    view! {
                        <li
                            id=option_id(i)
                            role="option"
                            class="slash-option"
                            aria-selected=move || (self.active.get() == i).to_string()
                            // The box keeps the focus (and the keyboard) while an option is clicked.
                            on:mousedown=|ev| ev.prevent_default()
                            on:click=move |_| take.run(self.take(&command, false))
                        >
                            <span class="slash-name">{name}</span>
                            <span class="slash-hint">{command.argument_hint.clone()}</span>
                            <span class="slash-description">{command.description.clone()}</span>
                        </li>
                    }
                })
                .collect_view()
        };
        view! {
            <ul id="slash-list" class="slash-list" role="listbox" aria-label="Commands" hidden=move || !self.is_open()>
                {options}
            </ul>
        }
    }
}

/// What the box's lists (the `/` commands, the `@` files) need of the message box: its text and
/// its element, whose commands or folder to list, where the box's keys go while a list is drawn,
/// what takes a command or a path, and whether the `@` list is open.
pub struct BoxList {
    pub draft: RwSignal<String>,
    pub input: leptos::prelude::NodeRef<leptos::html::Textarea>,
    pub whose: Signal<(Option<String>, String)>,
    pub keys: StoredValue<Option<Callback<String, Key>>>,
    pub take: Callback<Key>,
    pub files: RwSignal<bool>,
}

fn option_id(i: usize) -> String {
    format!("slash-option-{i}")
}

/// The command name being typed: the box holds `/` and a name, and nothing else yet.
fn typed_name(draft: &str) -> Option<String> {
    let name = draft.strip_prefix('/')?;
    (!name.contains(char::is_whitespace)).then(|| name.to_lowercase())
}

/// The commands whose names start with `query`, then those that hold it, each in the agent's order.
fn matching(commands: &[SlashCommand], query: &str) -> Vec<SlashCommand> {
    let starts = commands.iter().filter(|c| c.name.to_lowercase().starts_with(query));
    let holds = commands.iter().filter(|c| {
        let name = c.name.to_lowercase();
        !name.starts_with(query) && name.contains(query)
    });
    starts.chain(holds).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(name: &str) -> SlashCommand {
        SlashCommand { name: name.into(), ..SlashCommand::default() }
    }

    #[test]
    fn only_a_slash_and_a_name_open_the_menu() {
        assert_eq!(typed_name("/"), Some(String::new()));
        assert_eq!(typed_name("/Comp"), Some("comp".into()));
        assert_eq!(typed_name("/compact keep the plan"), None, "arguments: the list has done its work");
        assert_eq!(typed_name("see /compact"), None);
        assert_eq!(typed_name(""), None);
    }

    #[test]
    fn names_that_start_with_what_was_typed_come_before_names_that_hold_it() {
        let commands = [command("context"), command("compact"), command("autocompact"), command("clear")];
        let names = |query: &str| matching(&commands, query).into_iter().map(|c| c.name).collect::<Vec<_>>();
        assert_eq!(names("comp"), ["compact", "autocompact"]);
        assert_eq!(names("c"), ["context", "compact", "clear", "autocompact"]);
        assert_eq!(names(""), ["context", "compact", "autocompact", "clear"]);
        assert!(names("zzz").is_empty());
    }
}
