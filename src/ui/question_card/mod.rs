//! The question card: the agent's `AskUserQuestion` / `AskFollowupQuestion`, answered in place.
//!
//! One card holds every question of the call, each a radio group (single-select) or a group of
//! checkboxes (multi-select) with an "Other" answer and an optional note. A card with one
//! single-select question submits on a click or on an option's number; every other card says what
//! is still unanswered and submits once. Number keys pick options (`0` is Other, and puts the
//! focus in its text box, where digits and spaces are text), Enter submits what was chosen or
//! moves on, Esc asks once and then skips the card (in a text box, Esc only leaves it). A focus
//! the card placed itself (`ui::focus`) chooses nothing. What the person has chosen is kept in the
//! browser until the answer is stored, so a reload loses nothing; the answered card shows what
//! was chosen, in every tab.
//!
//! Every control is bound to the person's choices (`prop:checked`, `hidden`, `prop:value`) and has
//! its own handler. An earlier version drew the markup once and kept it in step from one effect
//! with selectors and `data-*` strings, to save 0.5 KB of the first load; the card has since moved
//! into the session pane's lazily loaded chunk, which `/` does not load, and the bindings cost the
//! chunk what docs/size.md says ("The question card").

mod card;
mod question;
mod status;

use leptos::prelude::*;

use super::interaction_card::{CardLife, InteractionFrame, Phase};
use super::state::ThreadState;
use crate::interaction::InteractionOutcome;
use crate::question::{Question, question_texts_so_far};
use crate::thread::ToolCall;
use card::{Card, Controls, Draft};
use question::question_block;
use status::Status;

/// A question's state when its markup is drawn: the answer once there is one (so that the
/// server's HTML shows it), else what this tab holds.
fn initial_draft(card: Card, life: CardLife, index: usize) -> Draft {
    let answered = life.phase.with_untracked(|phase| match phase {
        Phase::Done(InteractionOutcome::Answered { answers }) => answers.get(index).map(Draft::from_answer),
        _ => None,
    });
    answered.unwrap_or_else(|| card.drafts.with_untracked(|d| d.get(index).cloned().unwrap_or_default()))
}

/// The questions as the card shows them. While the agent writes, the question texts show as they
/// arrive; the options once the question is complete and checked.
fn questions_of(call: Signal<ToolCall>) -> Memo<Vec<Question>> {
    Memo::new(move |_| {
        call.with(|c| match &c.interaction {
            Some(interaction) => interaction.questions().to_vec(),
            // The server read the arguments as they streamed: questions and options so far (or
            // all of them, until the card opens).
            None if !c.preview.is_empty() => c.preview.clone(),
            None => {
                let text = match &c.input {
                    Some(input) => input.to_string(),
                    None => c.partial_input.clone(),
                };
                question_texts_so_far(&text)
                    .into_iter()
                    .map(|question| Question {
                        header: String::new(),
                        question,
                        options: Vec::new(),
                        multi_select: false,
                    })
                    .collect()
            }
        })
    })
}

#[component]
pub fn QuestionCard(#[prop(into)] call: Signal<ToolCall>) -> impl IntoView {
    let thread = expect_context::<ThreadState>();
    let questions = questions_of(call);
    let life = CardLife::new(thread.session_id, call);
    let phase = life.phase;
    let card = Card::new(life, questions);
    // An answered card shows the answer; a pending one what this browser kept.
    Effect::new(move |_| {
        if let Phase::Done(InteractionOutcome::Answered { answers }) = phase.get() {
            card.drafts.set(answers.iter().map(Draft::from_answer).collect());
        }
    });
    life.forget_when_closed(card.kept());
    restore(card);
    life.take_focus_when_pending(card.root, move || card.take_focus());
    life.let_go_of_focus_when_closed(card.root);
    life.retry_when_back(move || card.submit());

    let status = Memo::new(move |_| {
        let mut status = phase.with(Status::of);
        if status.key == "pending" && life.parked.get() {
            status.status = "Paused";
        }
        status
    });
    let editable = Memo::new(move |_| card.editable());
    view! {
        <InteractionFrame
            life=life
            kind="question-card"
            label="The agent asks you"
            mark="?"
            title="The agent asks you"
            sends="answer"
            root=card.root
            state=move || status.with(|s| s.key)
            status=move || status.with(|s| s.status.to_string())
            outcome=move || status.with(|s| s.outcome.clone())
            retry=move || card.submit()
            on_key=move |ev| card.on_key(ev)
            on_click=|_| {}
            actions=question_actions(card, call, status, editable).into_any()
            early=early(card)
        >
            // Redrawn only when the questions change, while the agent writes them: the card opens
            // with the questions of its last preview, so opening it redraws nothing (the memo holds
            // equal values).
            {move || {
                let questions = questions.get();
                card.controls.set_value(vec![Controls::default(); questions.len()]);
                questions
                    .into_iter()
                    .enumerate()
                    .map(|(index, question)| question_block(card, editable, index, question, initial_draft(card, life, index)))
                    .collect_view()
            }}
        </InteractionFrame>
    }
}

/// Whether a click answers the card before the page's code runs (drawn by the server).
fn early(card: Card) -> bool {
    #[cfg(feature = "ssr")]
    return card.early();
    #[cfg(not(feature = "ssr"))]
    {
        let _ = card;
        false
    }
}

/// What the agent sent when it cannot be read; how far the answers are, the keys, Skip and Submit.
fn question_actions(card: Card, call: Signal<ToolCall>, status: Memo<Status>, editable: Memo<bool>) -> impl IntoView {
    let questions = card.questions;
    let progress = move || {
        let total = questions.with(Vec::len);
        match card.unanswered() {
            0 => "Ready to submit".to_string(),
            left => format!("{} of {total} answered", total - left),
        }
    };
    // Exactly what the agent sent: raw text stays raw text. Written out only when it shows.
    let raw_arguments = move || {
        if status.with(|s| s.key != "unreadable") {
            return String::new();
        }
        call.with(|c| match &c.input {
            Some(serde_json::Value::String(raw)) => raw.clone(),
            Some(input) => serde_json::to_string_pretty(input).unwrap_or_default(),
            None => c.partial_input.clone(),
        })
    };
    view! {
        <details class="qc-raw" hidden=move || status.with(|s| s.key != "unreadable")>
            <summary>"What the agent sent"</summary>
            <pre class="tool-pre">{raw_arguments}</pre>
        </details>
        <fieldset
            class="qc-actions"
            hidden=move || !(matches!(status.with(|s| s.key), "pending" | "submitting" | "error") || editable.get())
            disabled=move || status.with(|s| s.key == "submitting") || card.life.calls.pending.get()
        >
            <span class="qc-progress" hidden=move || card.auto_submits()>{progress}</span>
            <span class="qc-keys" class:armed=move || card.skip_armed.get() hidden=move || !editable.get() aria-live="polite">
                {move || keys_line(card)}
            </span>
            <button class="button" hidden=move || card.is_lost() on:click=move |_| card.decline()>"Skip"</button>
            <button
                class="button primary"
                hidden=move || card.auto_submits() && !card.drafts.with(|d| d.first().is_some_and(|d| d.other_on))
                disabled=move || { card.unanswered() > 0 }
                on:click=move |_| card.submit()
            >
                {move || if card.is_lost() { "Send my answer as a message" } else { "Submit" }}
            </button>
        </fieldset>
    }
}

/// The card's keys, in a line; after a first Esc, what the second does.
fn keys_line(card: Card) -> String {
    let questions = card.questions;
    if card.skip_armed.get() {
        let skipped = match questions.with(Vec::len) {
            1 => "the question".to_string(),
            2 => "both questions".to_string(),
            n => format!("all {n} questions"),
        };
        return format!("Esc again to skip {skipped} · any other key to stay");
    }
    let options = questions.with(|q| q.get(card.current_question()).map_or(0, |q| q.options.len()));
    let enter = if card.auto_submits() { "" } else { " · Enter submit" };
    format!("Keys: 1–{options} pick · 0 Other{enter} · Esc Esc skip · ? all keys")
}

/// Brings back what was chosen in this browser before a reload.
fn restore(card: Card) {
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        if card.life.phase.with_untracked(|p| matches!(p, Phase::Pending | Phase::Streaming))
            && let Some(saved) = card.kept().load()
            && let Ok(saved) = serde_json::from_str::<Vec<crate::question::QuestionAnswer>>(&saved)
        {
            card.drafts.set(saved.iter().map(Draft::from_answer).collect());
        }
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = card;
}
