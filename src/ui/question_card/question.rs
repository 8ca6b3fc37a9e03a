//! One question of a card, as markup: its options as a radio group or checkboxes, "Other" with
//! its text box, the focused option's preview, and a note, each control bound to the person's
//! choices and with its own handler.

use leptos::prelude::*;

use super::super::markdown::render_markdown;
use super::card::{Card, Controls, Draft};
use crate::question::{OTHER, Question};

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
    let multi = question.multi_select;
    let kind = if multi { "checkbox" } else { "radio" };
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
    let previews: Vec<(String, Option<String>)> =
        question.options.iter().map(|c| (c.label.clone(), c.preview.clone())).collect();
    let preview = Memo::new(move |_| {
        card.focused
            .with(|f| f.get(index).copied().flatten())
            .and_then(|o| previews.get(o).cloned())
            .and_then(|(label, preview)| preview.map(|preview| (label, preview)))
    });
    let options = question
        .options
        .into_iter()
        .enumerate()
        .map(|(o, choice)| {
            let label = choice.label.clone();
            view! {
                <label class="qc-option">
                    <input
                        type=kind
                        name=name.clone()
                        node_ref=controls.options[o]
                        aria-label=choice.label.clone()
                        checked=initial.labels.contains(&choice.label)
                        prop:checked=move || draft.with(|d| d.labels.contains(&label))
                        on:click=move |ev| card.on_option_click(index, Some(o), ev.detail() > 0)
                        on:focus=move |ev| card.on_option_focus(index, Some(o), &ev)
                    />
                    <span class="qc-key" aria-hidden="true">{o + 1}</span>
                    <span class="qc-text">
                        <span class="qc-label">{choice.label}</span>
                        <span class="qc-desc">{choice.description}</span>
                    </span>
                </label>
            }
        })
        .collect_view();
    view! {
        <fieldset
            class="qc-question"
            class:unanswered=move || editable.get() && !draft.with(Draft::is_answered)
            role=if multi { "group" } else { "radiogroup" }
            aria-labelledby=labelled_by
            disabled=move || !editable.get()
            on:focusin=move |_| card.current.set_value(Some(index))
        >
            <div class="qc-question-head">
                {(!question.header.is_empty()).then(|| view! { <span class="chip">{question.header}</span> })}
                <span class="qc-question-text" id=text_id>{question.question}</span>
                <span
                    class="qc-missing"
                    hidden=move || !editable.get() || card.auto_submits() || draft.with(Draft::is_answered)
                >
                    "Unanswered"
                </span>
                {multi.then(|| view! { <span class="qc-hint">"Choose any"</span> })}
            </div>
            <div class="qc-options">
                {options}
                <label class="qc-option qc-other-option">
                    <input
                        type=kind
                        name=name
                        node_ref=controls.other
                        aria-label=OTHER
                        checked=initial.other_on
                        prop:checked=move || draft.with(|d| d.other_on)
                        on:click=move |ev| card.on_option_click(index, None, ev.detail() > 0)
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
                    value=initial.other
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
            </div>
            <figure class="qc-preview" hidden=move || preview.with(Option::is_none)>
                <figcaption class="qc-preview-caption">
                    {move || preview.with(|p| p.as_ref().map(|(label, _)| format!("Preview of “{label}”")))}
                </figcaption>
                <div
                    class="markdown"
                    inner_html=move || preview.with(|p| p.as_ref().map(|(_, text)| render_markdown(text)).unwrap_or_default())
                ></div>
            </figure>
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
                    node_ref=controls.note
                    aria-label=note_label
                    placeholder="A note for the agent (optional)"
                    hidden=move || !draft.with(|d| d.notes_open)
                    prop:value=move || draft.with(|d| d.notes.clone())
                    on:input=move |ev| {
                        let value = event_target_value(&ev);
                        card.update(index, |d| d.notes = value);
                    }
                >
                    {initial.notes}
                </textarea>
            </div>
        </fieldset>
    }
}
