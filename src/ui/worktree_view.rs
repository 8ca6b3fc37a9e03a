//! The session's **Worktree**: the branch it works on and the base it came from; the uncommitted
//! files, chosen one by one, committed with a message; **Merge into <base>** (a conflict lists its
//! files with git's view of each, and nothing is merged); **Discard…** after a confirmation that
//! says what would be lost. Drawn by the `changes` chunk, with the other panels.

use leptos::prelude::*;

use super::server_call::{CallState, ServerCall};
use super::state::ThreadState;
use crate::api::worktree::{WorktreeCommit, WorktreeDiscard, WorktreeMerge, WorktreeStatus};
use crate::changes::{Conflict, Merged, Worktree};

pub fn worktree_panel(
    thread: ThreadState,
    open: RwSignal<bool>,
    worktree: RwSignal<Option<Worktree>>,
) -> impl IntoView {
    let session = thread.session_id.get_value();
    let status = ServerCall::<WorktreeStatus>::new();
    status.dispatch(WorktreeStatus { session: session.clone() }, move |now| worktree.set(now));
    // What the last action did, in words.
    let said = RwSignal::new(None::<String>);
    let calls = Calls { session, state: status.state(), worktree, said };
    view! {
        <aside id="worktree-panel" class="changes-panel" aria-label="Worktree">
            <header class="changes-header">
                <h2>"Worktree"</h2>
                <span class="worktree-branch">{move || worktree.with(|w| w.as_ref().map(|w| format!("{} from {}", w.branch, w.base)))}</span>
                <button class="icon-button" aria-label="Close worktree" on:click=move |_| open.set(false)>"×"</button>
            </header>
            <p class="changes-problem" role="alert" hidden=move || status.problem().is_none()>{move || status.problem()}</p>
            <p class="worktree-said" role="status">{move || said.get()}</p>
            <div class="worktree-body" hidden=move || worktree.with(Option::is_none)>
                {commit_section(calls.clone())}
                {merge_section(calls.clone())}
                {discard_section(calls)}
            </div>
        </aside>
    }
}

/// What the panel's sections share: the session, one in-flight state and problem for all their
/// calls, the worktree as last told, and what the last action did.
#[derive(Clone)]
struct Calls {
    session: String,
    state: CallState,
    worktree: RwSignal<Option<Worktree>>,
    said: RwSignal<Option<String>>,
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The uncommitted files, each with its checkbox, a message, Commit.
fn commit_section(calls: Calls) -> impl IntoView {
    let Calls { session, state, worktree, said } = calls;
    let commit = ServerCall::<WorktreeCommit>::sharing(state);
    // The files the person left out of the commit: every other uncommitted file is in it, as each
    // list arrives (the agent may have written more since).
    let left_out = RwSignal::new(Vec::<String>::new());
    let chosen = Memo::new(move |_| {
        let all = worktree.with(|w| w.as_ref().map(|w| w.uncommitted.clone()).unwrap_or_default());
        left_out.with(|out| all.into_iter().filter(|path| !out.contains(path)).collect::<Vec<_>>())
    });
    let message = RwSignal::new(String::new());
    let do_commit = move |_| {
        let input = WorktreeCommit {
            session: session.clone(),
            message: message.get_untracked(),
            paths: chosen.get_untracked(),
        };
        commit.dispatch(input, move |now| {
            let count = chosen.with_untracked(Vec::len);
            said.set(Some(format!("Committed {count} file{} on {}.", plural(count), now.branch)));
            message.set(String::new());
            worktree.set(Some(now));
        });
    };
    let files = move || {
        let listed = worktree.with(|w| w.as_ref().map(|w| w.uncommitted.clone()).unwrap_or_default());
        listed
            .into_iter()
            .map(|path| {
                let (is, toggle) = (path.clone(), path.clone());
                let flip = move |_| {
                    left_out.update(|out| match out.iter().position(|p| *p == toggle) {
                        Some(at) => drop(out.remove(at)),
                        None => out.push(toggle.clone()),
                    })
                };
                view! {
                    <li>
                        <label class="worktree-file">
                            <input type="checkbox" prop:checked=move || chosen.with(|c| c.contains(&is)) on:change=flip />
                            <bdi>{path}</bdi>
                        </label>
                    </li>
                }
            })
            .collect_view()
    };
    let nothing_uncommitted = move || worktree.with(|w| w.as_ref().is_none_or(|w| w.uncommitted.is_empty()));
    view! {
        <section aria-label="Commit">
            <h3>"Uncommitted changes"</h3>
            <p class="changes-empty" hidden=move || !nothing_uncommitted()>"None: everything is committed."</p>
            <ul class="worktree-files" aria-label="Files to commit" hidden=nothing_uncommitted>{files}</ul>
            <textarea
                class="worktree-message"
                aria-label="Commit message"
                placeholder="What these changes do"
                rows="2"
                hidden=nothing_uncommitted
                prop:value=move || message.get()
                on:input=move |ev| message.set(event_target_value(&ev))
            ></textarea>
            <button
                class="button small"
                hidden=nothing_uncommitted
                disabled=move || state.pending.get() || message.with(|m| m.trim().is_empty()) || chosen.with(Vec::is_empty)
                on:click=do_commit
            >
                "Commit"
            </button>
        </section>
    }
}

/// How far the branch and its base are apart, Merge, and a merge's conflicts.
fn merge_section(calls: Calls) -> impl IntoView {
    let Calls { session, state, worktree, said } = calls;
    let merge = ServerCall::<WorktreeMerge>::sharing(state);
    let status = ServerCall::<WorktreeStatus>::sharing(state);
    let conflicts = RwSignal::new(Vec::<Conflict>::new());
    let base = move || worktree.with(|w| w.as_ref().map(|w| w.base.clone()).unwrap_or_default());
    let do_merge = move |_| {
        let session = session.clone();
        let base = base();
        merge.dispatch(WorktreeMerge { session: session.clone() }, move |merged| {
            match merged {
                Merged::Merged { fast_forward } => {
                    conflicts.set(Vec::new());
                    let how = if fast_forward { "moved forward to the branch" } else { "with a merge commit" };
                    said.set(Some(format!("Merged into {base}, {how}.")));
                }
                Merged::Conflicts { files } => {
                    said.set(Some(format!(
                        "Not merged: {base} and this branch changed the same lines in {} file{}. {base} is as it was.",
                        files.len(),
                        plural(files.len())
                    )));
                    conflicts.set(files);
                }
            }
            status.dispatch(WorktreeStatus { session }, move |now| worktree.set(now));
        });
    };
    let standing = move || {
        worktree.with(|w| {
            w.as_ref().map(|w| {
                let ahead = match w.ahead {
                    0 => format!("Nothing to merge yet: no commit that {} has not.", w.base),
                    n => format!("{n} commit{} not yet in {}.", plural(n as usize), w.base),
                };
                let behind = (w.behind > 0)
                    .then(|| format!(" {} has {} new commit{} since.", w.base, w.behind, plural(w.behind as usize)));
                format!("{ahead}{}", behind.unwrap_or_default())
            })
        })
    };
    let shown = move || {
        conflicts
            .get()
            .into_iter()
            .map(|conflict| {
                view! {
                    <li>
                        <details open>
                            <summary><bdi>{conflict.path}</bdi></summary>
                            <pre class="worktree-conflict">{conflict.diff}</pre>
                        </details>
                    </li>
                }
            })
            .collect_view()
    };
    view! {
        <section aria-label="Merge">
            <p>{standing}</p>
            <button
                class="button small"
                disabled=move || state.pending.get() || worktree.with(|w| w.as_ref().is_none_or(|w| w.ahead == 0))
                on:click=do_merge
            >
                {move || format!("Merge into {}", base())}
            </button>
            <ul class="worktree-conflicts" aria-label="Conflicts" hidden=move || conflicts.with(Vec::is_empty)>{shown}</ul>
        </section>
    }
}

/// Discard…, then what would be lost and the confirmation.
fn discard_section(calls: Calls) -> impl IntoView {
    let Calls { session, state, worktree, said } = calls;
    let discard = ServerCall::<WorktreeDiscard>::sharing(state);
    let confirming = RwSignal::new(false);
    let do_discard = move |_| {
        let even_uncommitted = worktree.with_untracked(|w| w.as_ref().is_some_and(|w| !w.uncommitted.is_empty()));
        discard.dispatch(WorktreeDiscard { session: session.clone(), even_uncommitted }, move |()| {
            confirming.set(false);
            said.set(Some("The worktree and its branch were removed.".into()));
            worktree.set(None);
        });
    };
    let lost = move || {
        worktree.with(|w| {
            let w = w.as_ref()?;
            let mut lost = Vec::new();
            if !w.uncommitted.is_empty() {
                let n = w.uncommitted.len();
                lost.push(format!("{n} uncommitted file{} ({})", plural(n), w.uncommitted.join(", ")));
            }
            if w.ahead > 0 {
                lost.push(format!("{} commit{} not merged into {}", w.ahead, plural(w.ahead as usize), w.base));
            }
            Some(if lost.is_empty() {
                "Nothing unmerged is lost.".to_string()
            } else {
                format!("This loses {}.", lost.join(" and "))
            })
        })
    };
    view! {
        <section aria-label="Discard">
            <button class="button small danger" hidden=move || confirming.get() on:click=move |_| confirming.set(true)>"Discard…"</button>
            <div class="worktree-confirm" role="group" aria-label="Discard the worktree" hidden=move || !confirming.get()>
                <p>{move || format!("Remove this worktree and its branch? {}", lost().unwrap_or_default())}</p>
                <button class="button small danger" disabled=move || state.pending.get() on:click=do_discard>"Discard the worktree"</button>
                <button class="button small" on:click=move |_| confirming.set(false)>"Cancel"</button>
            </div>
        </section>
    }
}
