//! One question of a card, as markup: its options as a radio group or checkboxes, "Other" with
//! its text box, the focused option's preview, and a note, each control bound to the person's
//! choices and with its own handler.

use leptos::html;
use leptos::prelude::*;

use super::super::markdown::render_markdown;
use super::card::{Card, Controls, Draft};
use crate::question::{Choice, OTHER, Question};

/// One question: its options as a radio group or checkboxes, "Other" with its text box, the
/// focused option's preview, and a note. `initial` is its state when drawn, written into the
/// server's HTML (an answered card shows its answer before the page is interactive); the bindings
/// follow the person's choices from then on.
pub(super) fn question_block(
    card: Card,
    editable: Memo<bool>,
    index: usize,
    question: Question,
    initial: Draft,
) -> impl IntoView {
    let draft = Memo::new(move |_| card.drafts.with(|d| d.get(index).cloned().unwrap_or_default()));
    let q = Bound { card, index, draft, editable, multi: question.multi_select };
    let name = format!("{}-q{index}", card.life.tool_use_id.get_value());
    let text_id = format!("{name}-text");
    let labelled_by = text_id.clone();
    let note_label =
        format!("Note on “{}”", if question.header.is_empty() { &question.question } else { &question.header });
    let controls =
        Controls { options: question.options.iter().map(|_| NodeRef::new()).collect(), ..Controls::default() };
    card.controls.update_value(|all| {
        if let Some(slot) = all.get_mut(index) {
            *slot = controls.clone();
        }
    });
    let preview = option_preview(q, &question.options);
    let sends = early_sends(card, &question);
    let options = question
        .options
        .into_iter()
        .enumerate()
        .map(|(o, choice)| {
            let checked = initial.labels.contains(&choice.label);
            let send = sends.get(o).cloned();
            choice_option(q, o, choice, name.clone(), controls.options[o], checked, send)
        })
        .collect_view();
    view! {
        <fieldset
            class="qc-question"
            class:unanswered=move || editable.get() && !draft.with(Draft::is_answered)
            role=if q.multi { "group" } else { "radiogroup" }
            aria-labelledby=labelled_by
            disabled=move || !editable.get()
            on:focusin=move |_| card.current.set_value(Some(index))
        >
            {question_head(q, question.header, question.question, text_id)}
            <div class="qc-options">
                {options}
                {other_answer(q, name, &controls, initial.other_on, initial.other)}
            </div>
            {preview}
            {question_note(q, controls.note, note_label, initial.notes)}
        </fieldset>
    }
}

/// One question as each of its parts reads it: its card, its place on the card, what the person
/// has chosen, whether it can still be answered, and whether it takes several choices.
#[derive(Clone, Copy)]
struct Bound {
    card: Card,
    index: usize,
    draft: Memo<Draft>,
    editable: Memo<bool>,
    multi: bool,
}

impl Bound {
    /// The input type of its options.
    fn kind(self) -> &'static str {
        if self.multi { "checkbox" } else { "radio" }
    }
}

/// The header chip, the question (which names the group: `text_id`), and what is still missing.
fn question_head(q: Bound, header: String, question: String, text_id: String) -> impl IntoView {
    let Bound { card, draft, editable, .. } = q;
    view! {
        <div class="qc-question-head">
            {(!header.is_empty()).then(|| view! { <span class="chip">{header}</span> })}
            <span class="qc-question-text" id=text_id>{question}</span>
            <span
                class="qc-missing"
                hidden=move || !editable.get() || card.auto_submits() || draft.with(Draft::is_answered)
            >
                "Unanswered"
            </span>
            {q.multi.then(|| view! { <span class="qc-hint">"Choose any"</span> })}
        </div>
    }
}

/// What each option of a card that one click answers sends when clicked before the page's code
/// runs (`early_answer.rs`); drawn by the server only, and none on other cards.
fn early_sends(card: Card, question: &Question) -> Vec<String> {
    #[cfg(feature = "ssr")]
    if card.early() {
        let (session, tool_use_id) = (card.life.session.get_value(), card.life.tool_use_id.get_value());
        return question
            .options
            .iter()
            .map(|choice| {
                super::super::early_answer::send_answer(&session, &tool_use_id, &question.question, &choice.label)
            })
            .collect();
    }
    let _ = (card, question);
    Vec::new()
}

/// Option `o` (its key is `o + 1`), `checked` when drawn; `send`: what a click sends before the
/// page's code runs.
fn choice_option(
    q: Bound,
    o: usize,
    choice: Choice,
    name: String,
    input: NodeRef<html::Input>,
    checked: bool,
    send: Option<String>,
) -> impl IntoView {
    let Bound { card, index, draft, .. } = q;
    let kind = q.kind();
    let label = choice.label.clone();
    view! {
        <label class="qc-option" data-send=send>
            <input
                type=kind
                name=name
                node_ref=input
                aria-label=choice.label.clone()
                checked=checked
                prop:checked=move || draft.with(|d| d.labels.contains(&label))
                on:click=move |ev| card.on_option_click(index, Some(o), &ev)
                on:focus=move |ev| card.on_option_focus(index, Some(o), &ev)
            />
            <span class="qc-key" aria-hidden="true">{o + 1}</span>
            <span class="qc-text">
                <span class="qc-label">{choice.label}</span>
                <span class="qc-desc">{choice.description}</span>
            </span>
        </label>
    }
}

/// "Other" (key 0), and the box its answer is typed in, shown while it is chosen; `on` and
/// `other` are its state when drawn.
fn other_answer(q: Bound, name: String, controls: &Controls, on: bool, other: String) -> impl IntoView {
    let Bound { card, index, draft, multi, .. } = q;
    let kind = q.kind();
    view! {
        <label class="qc-option qc-other-option">
            <input
                type=kind
                name=name
                node_ref=controls.other
                aria-label=OTHER
                checked=on
                prop:checked=move || draft.with(|d| d.other_on)
                on:click=move |ev| card.on_option_click(index, None, &ev)
                on:focus=move |ev| card.on_option_focus(index, None, &ev)
            />
            <span class="qc-key" aria-hidden="true">"0"</span>
            <span class="qc-text"><span class="qc-label">{OTHER}</span></span>
        </label>
        <input
            type="text"
            class="qc-other-text"
            node_ref=controls.other_text
            aria-label="Other answer"
            placeholder="Type your answer"
            maxlength="4000"
            hidden=move || !draft.with(|d| d.other_on)
            value=other
            prop:value=move || draft.with(|d| d.other.clone())
            on:input=move |ev| {
                let value = event_target_value(&ev);
                card.update(index, |d| {
                    d.other = value;
                    d.other_on = true;
                    if !multi {
                        d.labels.clear();
                    }
                });
            }
        />
    }
}

/// The preview of the option that has the focus, for an option that has one.
fn option_preview(q: Bound, options: &[Choice]) -> impl IntoView + use<> {
    let Bound { card, index, .. } = q;
    let previews: Vec<(String, Option<String>)> =
        options.iter().map(|c| (c.label.clone(), c.preview.clone())).collect();
    let preview = Memo::new(move |_| {
        card.focused
            .with(|f| f.get(index).copied().flatten())
            .and_then(|o| previews.get(o).cloned())
            .and_then(|(label, preview)| preview.map(|preview| (label, preview)))
    });
    view! {
        <figure class="qc-preview" hidden=move || preview.with(Option::is_none)>
            <figcaption class="qc-preview-caption">
                {move || preview.with(|p| p.as_ref().map(|(label, _)| format!("Preview of “{label}”")))}
            </figcaption>
            <div
                class="markdown"
                inner_html=move || preview.with(|p| p.as_ref().map(|(_, text)| render_markdown(text)).unwrap_or_default())
            ></div>
        </figure>
    }
}

/// "Add a note", and the note's box once opened; `initial` is the note when drawn.
fn question_note(q: Bound, note: NodeRef<html::Textarea>, label: String, initial: String) -> impl IntoView {
    let Bound { card, index, draft, editable, .. } = q;
    view! {
        <div class="qc-notes">
            <button
                type="button"
                class="link-button"
                hidden=move || !editable.get() || draft.with(|d| d.notes_open)
                on:click=move |_| card.open_note(index)
            >
                "Add a note"
            </button>
            <textarea
                class="qc-note"
                rows="2"
                maxlength="4000"
                node_ref=note
                aria-label=label
                placeholder="A note for the agent (optional)"
                hidden=move || !draft.with(|d| d.notes_open)
                prop:value=move || draft.with(|d| d.notes.clone())
                on:input=move |ev| {
                    let value = event_target_value(&ev);
                    card.update(index, |d| d.notes = value);
                }
            >
                {initial}
            </textarea>
        </div>
    }
}
