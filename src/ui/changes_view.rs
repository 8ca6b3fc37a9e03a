//! The session's **Changes**: what the agent changed in its folder, of one turn or of the whole
//! session, a diff per file (side by side on a wide screen, unified on a narrow one, switchable),
//! kept up to date while it is open (the server answers `wait_for_changes` at each write), and a
//! turn undone after a confirmation that lists its files. Drawn by the session pane's chunk.

use leptos::prelude::*;

use super::server_call::ServerCall;
use super::state::ThreadState;
use crate::api::changes::{SessionChanges, UndoPreview, UndoTurn, WaitForChanges};
use crate::changes::{Changes, DiffLine, FileDiff, Hunk, LineKind, Scope, side_by_side};

/// A header button that opens and closes the panel `controls` (Changes, Files).
pub fn panel_button(label: &'static str, controls: &'static str, open: RwSignal<bool>) -> impl IntoView {
    view! {
        <button
            class="button small changes-button"
            aria-expanded=move || open.get().to_string()
            aria-controls=controls
            on:click=move |_| open.update(|o| *o = !*o)
        >
            {label}
        </button>
    }
}

/// The panel: what is shown of which turn, and the files.
pub fn changes_panel(thread: ThreadState, open: RwSignal<bool>) -> impl IntoView {
    let session = thread.session_id.get_value();
    let scope = RwSignal::new(Scope::Session);
    let changes = RwSignal::new(None::<Changes>);
    // The folder's version as the server last told it; None until the first answer.
    let version = RwSignal::new(None::<u64>);
    let split = RwSignal::new(wide_screen());
    let load = ServerCall::<SessionChanges>::new();
    let alive = StoredValue::new(true);
    on_cleanup(move || alive.set_value(false));
    follow(session.clone(), u64::MAX, version, alive);
    {
        let session = session.clone();
        Effect::new(move |_| {
            let scope = scope.get();
            if version.get().is_none() {
                return;
            }
            load.dispatch(SessionChanges { session: session.clone(), scope }, move |got| changes.set(Some(got)));
        });
    }
    let close = move |_| open.set(false);
    view! {
        <aside id="changes-panel" class="changes-panel" aria-label="Changes">
            <header class="changes-header">
                <h2>"Changes"</h2>
                {scope_select(thread, changes, scope)}
                <button class="button small" aria-pressed=move || split.get().to_string() on:click=move |_| split.update(|s| *s = !*s)>
                    "Side by side"
                </button>
                <button class="icon-button" aria-label="Close changes" on:click=close>"×"</button>
            </header>
            <p class="changes-problem" role="alert" hidden=move || load.problem().is_none()>{move || load.problem()}</p>
            {undo_bar(session, scope)}
            {move || changes.with(|c| c.as_ref().map(|c| body(c, &scope.get(), split.get())))}
        </aside>
    }
}

/// Asks the server for news of the folder, again and again while the panel is open: each answer
/// with a new version makes the panel ask for the changes again.
fn follow(session: String, seen: u64, version: RwSignal<Option<u64>>, alive: StoredValue<bool>) {
    if !alive.try_get_value().unwrap_or(false) {
        return;
    }
    let call = ServerCall::<WaitForChanges>::new();
    call.dispatch_then(WaitForChanges { session: session.clone(), seen }, move |result| match result {
        Ok(now) => {
            if now != seen {
                version.try_set(Some(now));
            }
            follow(session, now, version, alive);
        }
        // The server is away: asked again a little later.
        Err(_) => {
            set_timeout(move || follow(session, seen, version, alive), std::time::Duration::from_secs(2));
        }
    });
}

/// The turn whose changes are shown, or the whole session.
fn scope_select(thread: ThreadState, changes: RwSignal<Option<Changes>>, scope: RwSignal<Scope>) -> impl IntoView {
    let options = move || {
        let turns = changes.with(|c| c.as_ref().map(|c| c.turns.clone()).unwrap_or_default());
        turns
            .into_iter()
            .map(|turn| {
                let words = thread.messages.with(|messages| {
                    messages.iter().find(|m| m.id == turn.message_id).map(|m| m.message.with(|m| m.text()))
                });
                let words: String = words.unwrap_or_default().chars().take(48).collect();
                let label = format!("Turn {}: {words}", turn.number);
                let value = turn.number.to_string();
                let selected = move || scope.get() == Scope::Turn { number: turn.number };
                view! { <option value=value selected=selected>{label}</option> }
            })
            .collect_view()
    };
    let pick = move |ev: leptos::ev::Event| {
        let value = event_target_value(&ev);
        scope.set(match value.as_str() {
            "branch" => Scope::Branch,
            other => other.parse().map_or(Scope::Session, |number| Scope::Turn { number }),
        });
    };
    // Against the base branch, where the folder's repository has one.
    let base = move || {
        let base = changes.with(|c| c.as_ref().and_then(|c| c.base.clone()))?;
        let selected = move || scope.get() == Scope::Branch;
        Some(
            view! { <option value="branch" selected=selected>{format!("Against {base} (all of this branch)")}</option> },
        )
    };
    view! {
        <select class="changes-scope" aria-label="Changes of" on:change=pick>
            <option value="session" selected=move || scope.get() == Scope::Session>"The whole session"</option>
            {base}
            {options}
        </select>
    }
}

/// "Undo this turn…", then the files it would put back and the confirmation.
fn undo_bar(session: String, scope: RwSignal<Scope>) -> impl IntoView {
    let preview = ServerCall::<UndoPreview>::new();
    let undo = ServerCall::<UndoTurn>::sharing(preview.state());
    let asked = RwSignal::new(None::<(u32, Vec<String>)>);
    let done = RwSignal::new(None::<String>);
    let turn = move || match scope.get() {
        Scope::Turn { number } => Some(number),
        Scope::Session | Scope::Branch => None,
    };
    let ask = {
        let session = session.clone();
        move |_| {
            let Some(number) = turn() else { return };
            done.set(None);
            preview.dispatch(UndoPreview { session: session.clone(), turn: number }, move |files| {
                asked.set(Some((number, files)));
            });
        }
    };
    let confirm = move |_| {
        let Some((number, _)) = asked.get_untracked() else { return };
        undo.dispatch(UndoTurn { session: session.clone(), turn: number }, move |files| {
            asked.set(None);
            done.set(Some(format!("Turn {number} undone: {} files put back.", files.len())));
        });
    };
    view! {
        <div class="undo-bar" hidden=move || turn().is_none()>
            <button class="button small" on:click=ask disabled=move || preview.pending()>
                "Undo this turn…"
            </button>
            <span class="undo-done" role="status">{move || done.get()}</span>
        </div>
        {move || asked.get().map(|(number, files)| {
            let count = files.len();
            view! {
                <div class="undo-confirm" role="alertdialog" aria-label=format!("Undo turn {number}")>
                    <p>
                        {if count == 0 {
                            "Nothing changed since this turn began.".to_string()
                        } else {
                            format!("Put the folder back as it was when turn {number} began? These {count} files change:")
                        }}
                    </p>
                    <ul class="undo-files">{files.into_iter().map(|f| view! { <li><bdi>{f}</bdi></li> }).collect_view()}</ul>
                    <button class="button small danger" on:click=confirm.clone() disabled=move || count == 0>
                        {format!("Undo turn {number}")}
                    </button>
                    <button class="button small" on:click=move |_| asked.set(None)>"Cancel"</button>
                </div>
            }
        })}
    }
}

fn body(changes: &Changes, scope: &Scope, split: bool) -> AnyView {
    if let Some(why) = &changes.unavailable {
        return view! { <p class="changes-empty">"No changes to show: " {why.clone()}</p> }.into_any();
    }
    if changes.turns.is_empty() && *scope != Scope::Branch {
        return view! { <p class="changes-empty">"Nothing yet: a checkpoint of the folder is taken as each turn begins."</p> }
            .into_any();
    }
    if changes.files.is_empty() {
        return view! { <p class="changes-empty">"No file changed."</p> }.into_any();
    }
    let files = changes.files.iter().map(|file| file_view(file, split)).collect_view();
    view! { <ul class="changes-files" aria-label="Changed files">{files}</ul> }.into_any()
}

fn file_view(file: &FileDiff, split: bool) -> impl IntoView {
    let name = match &file.old_path {
        Some(old) => format!("{old} → {}", file.path),
        None => file.path.clone(),
    };
    let hunks = file.hunks.iter().map(|hunk| hunk_rows(hunk, split)).collect_view();
    view! {
        <li class="change-file">
            <details open>
                <summary>
                    <span class="change-status" data-status=file.status.letter() title=file.status.word()>
                        {file.status.letter()}
                    </span>
                    <bdi class="change-path">{name}</bdi>
                    <span class="change-count">
                        <span class="added">{format!("+{}", file.added)}</span>
                        " "
                        <span class="removed">{format!("−{}", file.removed)}</span>
                    </span>
                </summary>
                {file.note.clone().map(|note| view! { <p class="change-note">{note}</p> })}
                <table class="diff" data-layout=if split { "split" } else { "unified" }>
                    // The columns' widths, which a fixed table takes from here (its first row
                    // spans them all).
                    {if split {
                        view! { <colgroup><col class="col-no" /><col /><col class="col-no" /><col /></colgroup> }.into_any()
                    } else {
                        view! { <colgroup><col class="col-no" /><col class="col-no" /><col class="col-sign" /><col /></colgroup> }.into_any()
                    }}
                    <tbody>{hunks}</tbody>
                </table>
            </details>
        </li>
    }
}

fn hunk_rows(hunk: &Hunk, split: bool) -> impl IntoView {
    let separator = view! { <tr class="diff-hunk"><td colspan="4">"⋯"</td></tr> };
    let rows = if split {
        side_by_side(hunk).into_iter().map(|(left, right)| split_row(left, right).into_any()).collect_view()
    } else {
        hunk.lines.iter().map(|line| unified_row(line).into_any()).collect_view()
    };
    view! { {separator} {rows} }
}

fn unified_row(line: &DiffLine) -> impl IntoView {
    view! {
        <tr class=kind_class(line.kind)>
            <td class="line-no">{line.old}</td>
            <td class="line-no">{line.new}</td>
            <td class="line-sign" aria-label=kind_word(line.kind)>{kind_sign(line.kind)}</td>
            <td class="line-text">{line.text.clone()}</td>
        </tr>
    }
}

fn split_row(left: Option<&DiffLine>, right: Option<&DiffLine>) -> impl IntoView {
    let side = |line: Option<&DiffLine>, old: bool| match line {
        Some(line) => {
            let number = if old { line.old } else { line.new };
            view! {
                <td class=format!("line-no {}", kind_class(line.kind))>{number}</td>
                <td class=format!("line-text {}", kind_class(line.kind))>{line.text.clone()}</td>
            }
            .into_any()
        }
        None => view! { <td class="line-no empty"></td><td class="line-text empty"></td> }.into_any(),
    };
    view! { <tr>{side(left, true)}{side(right, false)}</tr> }
}

fn kind_class(kind: LineKind) -> &'static str {
    match kind {
        LineKind::Context => "diff-line",
        LineKind::Added => "diff-line added",
        LineKind::Removed => "diff-line removed",
    }
}

fn kind_sign(kind: LineKind) -> &'static str {
    match kind {
        LineKind::Context => " ",
        LineKind::Added => "+",
        LineKind::Removed => "−",
    }
}

fn kind_word(kind: LineKind) -> &'static str {
    match kind {
        LineKind::Context => "unchanged",
        LineKind::Added => "added",
        LineKind::Removed => "removed",
    }
}

/// Wide enough for two columns of code.
fn wide_screen() -> bool {
    #[cfg(feature = "hydrate")]
    {
        window().inner_width().ok().and_then(|w| w.as_f64()).is_some_and(|w| w >= 1100.0)
    }
    #[cfg(not(feature = "hydrate"))]
    false
}
