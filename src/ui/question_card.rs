//! The question card: the agent's `AskUserQuestion` / `AskFollowupQuestion`, answered in place.
//!
//! One card holds every question of the call, each a radio group (single-select) or a group of
//! checkboxes (multi-select) with an "Other" answer and an optional note. A card with one
//! single-select question submits on the click; every other card says what is still unanswered
//! and submits once. Number keys pick options (`0` is Other), Enter submits or moves on, Esc skips
//! the card. What the person has chosen is kept in the browser until the answer is stored, so a
//! reload loses nothing; the answered card shows what was chosen, in every tab.
//!
//! The question markup is drawn once per question, in the state it has then, and one effect
//! (`sync_controls`) keeps the controls in step with the person's choices. The same card written
//! with a reactive binding per control (checked, hidden, value, disabled, a handler per control,
//! node refs instead of selectors) was built and measured, release WASM after wasm-opt, brotli:
//! 321,053 bytes against 320,567 for this one, 0.5 KB more (not the ~20 KB once assumed). Small,
//! but the first page load may not grow, and the rest of this change leaves no room for it.

use leptos::html;
use leptos::prelude::*;

use super::interaction_card::{CardLife, FrameText, Phase, interaction_frame};
use super::kept::Kept;
#[cfg(feature = "hydrate")]
use super::markdown::render_markdown;
use super::server_call::ServerCall;
use super::state::ThreadState;
use crate::api::{DeclineQuestion, SubmitAnswers};
use crate::interaction::InteractionOutcome;
use crate::question::{OTHER, Question, QuestionAnswer, question_texts_so_far};
use crate::thread::ToolCall;

/// What the person has chosen so far for one question.
#[derive(Debug, Clone, Default, PartialEq)]
struct Draft {
    labels: Vec<String>,
    other_on: bool,
    other: String,
    notes: String,
    notes_open: bool,
}

impl Draft {
    fn is_answered(&self) -> bool {
        !self.labels.is_empty() || (self.other_on && !self.other.trim().is_empty())
    }

    fn answer(&self, question: &Question) -> QuestionAnswer {
        QuestionAnswer {
            question: question.question.clone(),
            labels: self.labels.clone(),
            other: (self.other_on && !self.other.trim().is_empty()).then(|| self.other.trim().to_string()),
            notes: Some(self.notes.trim().to_string()).filter(|n| !n.is_empty()),
        }
    }

    /// As kept in the browser: an answer, with "Other" chosen but empty as `Some("")`.
    #[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
    fn to_saved(&self) -> QuestionAnswer {
        QuestionAnswer {
            question: String::new(),
            labels: self.labels.clone(),
            other: self.other_on.then(|| self.other.clone()),
            notes: self.notes_open.then(|| self.notes.clone()),
        }
    }

    fn from_answer(answer: &QuestionAnswer) -> Self {
        Self {
            labels: answer.labels.clone(),
            other_on: answer.other.is_some(),
            other: answer.other.clone().unwrap_or_default(),
            notes: answer.notes.clone().unwrap_or_default(),
            notes_open: answer.notes.is_some(),
        }
    }
}

#[derive(Clone, Copy)]
struct Card {
    life: CardLife,
    questions: Memo<Vec<Question>>,
    drafts: RwSignal<Vec<Draft>>,
    /// The option whose preview shows, per question.
    focused: RwSignal<Vec<Option<usize>>>,
    root: NodeRef<html::Section>,
    answer: ServerCall<SubmitAnswers>,
    skip: ServerCall<DeclineQuestion>,
}

impl Card {
    fn editable(&self) -> bool {
        // A lost one until this tab sent its answer.
        self.life.phase.with(Phase::is_open) || (self.is_lost() && !self.life.was_sent())
    }

    fn editable_untracked(&self) -> bool {
        untrack(|| self.editable())
    }

    /// The agent was told something else when the server died while it waited; the person may
    /// still answer, and the answer goes to the agent as a message.
    fn is_lost(&self) -> bool {
        self.life.phase.with(|p| matches!(p, Phase::Done(InteractionOutcome::Lost { .. })))
    }

    /// One single-select question: a click answers it. A lost one waits for its button: a message
    /// to the agent is sent on purpose, not by picking.
    fn auto_submits(&self) -> bool {
        self.questions.with(|q| q.len() == 1 && !q[0].multi_select) && !self.is_lost()
    }

    fn unanswered(&self) -> usize {
        self.drafts.with(|drafts| {
            (0..self.questions.with(Vec::len)).filter(|&i| !drafts.get(i).is_some_and(Draft::is_answered)).count()
        })
    }

    fn update(&self, index: usize, change: impl FnOnce(&mut Draft)) {
        self.update_quietly(index, change);
        self.drafts.notify();
    }

    /// Changes a draft without redrawing anything yet: the caller notifies `drafts`.
    fn update_quietly(&self, index: usize, change: impl FnOnce(&mut Draft)) {
        let count = self.questions.with_untracked(Vec::len);
        self.drafts.update_untracked(|drafts| {
            drafts.resize(count, Draft::default());
            if let Some(draft) = drafts.get_mut(index) {
                change(draft);
            }
        });
        self.save();
    }

    /// Picks an option; with `submits`, that answers the card. The answer leaves before the card
    /// redraws: the redraw (the choice checked, the controls disabled) is work the page queues,
    /// and it ran before the request when the choice came first (7 to 20 ms on the bench's
    /// machine, on the way from the click to the agent).
    fn pick_and_submit(&self, index: usize, label: &str, multi: bool, submits: bool) {
        self.pick_quietly(index, label, multi);
        if submits {
            self.submit();
        }
        self.drafts.notify();
    }

    fn pick_quietly(&self, index: usize, label: &str, multi: bool) {
        let label = label.to_string();
        self.update_quietly(index, |draft| {
            if multi {
                if let Some(at) = draft.labels.iter().position(|l| *l == label) {
                    draft.labels.remove(at);
                } else {
                    draft.labels.push(label);
                }
            } else {
                draft.labels = vec![label];
                draft.other_on = false;
            }
        });
    }

    fn choose_other(&self, index: usize, multi: bool) {
        self.update(index, |draft| {
            draft.other_on = if multi { !draft.other_on } else { true };
            if !multi {
                draft.labels.clear();
            }
        });
        self.focus(&format!("[data-q='{index}'] .qc-other-text"));
    }

    fn submit(&self) {
        if !self.editable() || self.unanswered() > 0 {
            return;
        }
        let answers: Vec<QuestionAnswer> = self.questions.with_untracked(|questions| {
            self.drafts.with_untracked(|drafts| questions.iter().zip(drafts).map(|(q, d)| d.answer(q)).collect())
        });
        let life = self.life;
        let input = SubmitAnswers {
            session: life.session.get_value(),
            tool_use_id: life.tool_use_id.get_value(),
            answers,
            // A lost question's answer goes to the agent as a message.
            as_message: untrack(|| self.is_lost()),
        };
        self.answer.dispatch_then(input, move |result| life.settle(result));
    }

    fn decline(&self) {
        if !self.life.is_open_untracked() {
            return;
        }
        let life = self.life;
        let input = DeclineQuestion {
            session: life.session.get_value(),
            tool_use_id: life.tool_use_id.get_value(),
            reason: None,
        };
        self.skip.dispatch_then(input, move |result| life.settle(result));
    }

    fn kept(&self) -> Kept {
        Kept::answer_draft(&self.life.session.get_value(), &self.life.tool_use_id.get_value())
    }

    fn save(&self) {
        #[cfg(feature = "hydrate")]
        {
            let saved: Vec<QuestionAnswer> = self.drafts.with_untracked(|d| d.iter().map(Draft::to_saved).collect());
            if let Ok(json) = serde_json::to_string(&saved) {
                self.kept().save(&json);
            }
        }
    }

    fn focus(&self, selector: &str) {
        #[cfg(feature = "hydrate")]
        if let Some(el) =
            self.root.try_get_untracked().flatten().and_then(|root| root.query_selector(selector).ok().flatten())
        {
            let _ = wasm_bindgen::JsCast::unchecked_ref::<web_sys::HtmlElement>(&el).focus();
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = selector;
    }

    /// The question the keyboard speaks to: the one holding the focus, else the first unanswered.
    fn current_question(&self) -> usize {
        #[cfg(feature = "hydrate")]
        if let Some(index) = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.active_element())
            .and_then(|el| el.closest("[data-q]").ok().flatten())
            .and_then(|el| el.get_attribute("data-q"))
            .and_then(|q| q.parse().ok())
        {
            return index;
        }
        self.drafts.with_untracked(|drafts| {
            (0..self.questions.with_untracked(Vec::len))
                .find(|&i| !drafts.get(i).is_some_and(Draft::is_answered))
                .unwrap_or(0)
        })
    }

    fn on_key(&self, event: leptos::ev::KeyboardEvent) {
        if !self.editable() || event.ctrl_key() || event.meta_key() || event.alt_key() {
            return;
        }
        let typing = event
            .target()
            .and_then(|t| wasm_bindgen::JsCast::dyn_into::<leptos::web_sys::Element>(t).ok())
            .is_some_and(|el| {
                matches!(el.tag_name().as_str(), "TEXTAREA") || el.get_attribute("type").as_deref() == Some("text")
            });
        let key = event.key();
        match key.as_str() {
            "Escape" => {
                event.prevent_default();
                self.decline();
            }
            "Enter" if !(typing && event.shift_key()) && !event.target().is_some_and(|t| is_textarea(&t)) => {
                event.prevent_default();
                if self.unanswered() == 0 {
                    self.submit();
                } else {
                    let next = self.drafts.with_untracked(|drafts| {
                        (0..self.questions.with_untracked(Vec::len))
                            .find(|&i| !drafts.get(i).is_some_and(Draft::is_answered))
                    });
                    if let Some(next) = next {
                        self.focus(&format!("[data-q='{next}'] input"));
                    }
                }
            }
            digit if !typing && digit.len() == 1 && digit.as_bytes()[0].is_ascii_digit() => {
                let index = self.current_question();
                let Some(question) = self.questions.with_untracked(|q| q.get(index).cloned()) else { return };
                event.prevent_default();
                let n = (digit.as_bytes()[0] - b'0') as usize;
                if n == 0 {
                    self.choose_other(index, question.multi_select);
                } else if let Some(choice) = question.options.get(n - 1) {
                    self.pick_and_submit(index, &choice.label, question.multi_select, self.auto_submits());
                    self.focus(&format!("[data-q='{index}'] [data-o='{}']", n - 1));
                }
            }
            _ => {}
        }
    }
}

fn is_textarea(target: &leptos::web_sys::EventTarget) -> bool {
    wasm_bindgen::JsCast::dyn_ref::<leptos::web_sys::Element>(target).is_some_and(|el| el.tag_name() == "TEXTAREA")
}

/// What the card says in each phase: its state for the styles, the status line, the outcome.
#[derive(PartialEq)]
struct Status {
    key: &'static str,
    status: &'static str,
    outcome: Option<String>,
}

impl Status {
    fn of(phase: &Phase) -> Self {
        let (key, status, outcome) = match phase {
            Phase::Streaming => ("streaming", "The agent is writing a question…", None),
            Phase::Pending => ("pending", "Waiting for your answer", None),
            Phase::Sending => ("submitting", "Sending your answer…", None),
            Phase::Unsent(_) => ("error", "Not sent", None),
            Phase::Done(InteractionOutcome::Answered { .. } | InteractionOutcome::Allowed { .. }) => {
                ("answered", "Answered", None)
            }
            // Not an outcome a question gets; shown as what it is.
            Phase::Done(InteractionOutcome::Denied { .. }) => ("declined", "Denied", None),
            Phase::Done(InteractionOutcome::Declined { reason }) => (
                "declined",
                "Skipped",
                Some(match reason {
                    Some(reason) => {
                        format!("You skipped this question ({reason}). The agent was told that you declined to answer.")
                    }
                    None => "You skipped this question. The agent was told that you declined to answer.".to_string(),
                }),
            ),
            Phase::Done(InteractionOutcome::Expired) => {
                ("expired", "Expired", Some("Not answered in time. The agent was told that you did not answer.".into()))
            }
            Phase::Done(InteractionOutcome::Cancelled { reason }) => (
                "cancelled",
                "Cancelled",
                Some(format!("Cancelled: {reason}. The agent is no longer waiting for an answer.")),
            ),
            Phase::Done(InteractionOutcome::Lost { told }) => (
                "lost",
                "Not answered",
                Some(format!(
                    "The server stopped before you answered, and the agent was told: “{told}”. \
                     You can still answer, as a message."
                )),
            ),
            Phase::Done(InteractionOutcome::Failed { error }) | Phase::Unreadable(error) => (
                "unreadable",
                "Could not be read",
                Some(format!("The agent's question could not be read: {error}. The agent was told so.")),
            ),
        };
        Self { key, status, outcome }
    }
}

/// A question's state when its markup is drawn: the answer once there is one (so that the
/// server's HTML shows it), else what this tab holds.
fn initial_draft(card: Card, life: CardLife, index: usize) -> Draft {
    let answered = life.phase.with_untracked(|phase| match phase {
        Phase::Done(InteractionOutcome::Answered { answers }) => answers.get(index).map(Draft::from_answer),
        _ => None,
    });
    answered.unwrap_or_else(|| card.drafts.with_untracked(|d| d.get(index).cloned().unwrap_or_default()))
}

#[component]
pub fn QuestionCard(#[prop(into)] call: Signal<ToolCall>) -> impl IntoView {
    let thread = expect_context::<ThreadState>();
    // While the agent writes, the question texts show as they arrive; the options once the
    // question is complete and checked.
    let questions = Memo::new(move |_| {
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
    });
    let life = CardLife::new(thread.session_id, call);
    let phase = life.phase;
    let card = Card {
        life,
        questions,
        drafts: RwSignal::new(Vec::new()),
        focused: RwSignal::new(Vec::new()),
        root: NodeRef::new(),
        answer: ServerCall::sharing(life.calls),
        skip: ServerCall::sharing(life.calls),
    };
    // An answered card shows the answer; a pending one what this browser kept.
    Effect::new(move |_| {
        if let Phase::Done(InteractionOutcome::Answered { answers }) = phase.get() {
            card.drafts.set(answers.iter().map(Draft::from_answer).collect());
        }
    });
    life.forget_when_closed(card.kept());
    restore(card);
    sync_controls(card);
    life.take_focus_when_pending(move || card.focus("input"));

    let status = Memo::new(move |_| phase.with(Status::of));
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

    let text = FrameText {
        kind: "question-card",
        label: "The agent asks you".into(),
        mark: "?",
        title: "The agent asks you".into(),
        sends: "answer",
    };
    let body = view! {
        // Redrawn only when the questions change, while the agent writes them: the card opens
        // with the questions of its last preview, so opening it redraws nothing (the memo holds
        // equal values).
        {move || {
            let questions = questions.get();
            let shows_missing = card.editable_untracked() && !untrack(|| card.auto_submits());
            questions
                .into_iter()
                .enumerate()
                .map(|(index, question)| {
                    question_block(card, index, question, initial_draft(card, life, index), shows_missing)
                })
                .collect_view()
        }}
    };
    let actions = view! {
        <details class="qc-raw" hidden=move || status.with(|s| s.key != "unreadable")>
            <summary>"What the agent sent"</summary>
            <pre class="tool-pre">{raw_arguments}</pre>
        </details>
        <fieldset
            class="qc-actions"
            hidden=move || !(matches!(status.with(|s| s.key), "pending" | "submitting" | "error") || card.editable())
            disabled=move || status.with(|s| s.key == "submitting") || card.life.calls.pending.get()
        >
            <span class="qc-progress" hidden=move || card.auto_submits()>{progress}</span>
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
    };
    interaction_frame(
        life,
        text,
        card.root,
        move || status.with(|s| s.key),
        move || status.with(|s| s.status.to_string()),
        move || status.with(|s| s.outcome.clone()),
        move || card.submit(),
        move |ev| card.on_key(ev),
        move |ev| card.on_click(ev),
        body,
        actions,
    )
}

impl Card {
    /// The card's one click handler: the control clicked (its `data-q`, `data-o`, `data-action`)
    /// says what to do.
    fn on_click(&self, event: leptos::ev::MouseEvent) {
        let Some((index, target)) = question_target(&event) else { return };
        let multi = self.questions.with_untracked(|q| q.get(index).is_some_and(|q| q.multi_select));
        if target.get_attribute("data-action").as_deref() == Some("note") {
            self.update(index, |d| d.notes_open = true);
            self.focus(&format!("[data-q='{index}'] textarea"));
            return;
        }
        let Some(option) = target.get_attribute("data-o") else { return };
        // Previews change after the click, not on the press (see `on_focus`).
        if option == "other" {
            self.show_preview(index, None);
            self.choose_other(index, multi);
            return;
        }
        let label = option.parse::<usize>().ok().and_then(|o| {
            self.questions.with_untracked(|q| q.get(index).and_then(|q| q.options.get(o)).map(|c| c.label.clone()))
        });
        if let Some(label) = label {
            // A pointer click (not arrow keys) on the only question answers it.
            self.pick_and_submit(index, &label, multi, event.detail() > 0 && self.auto_submits());
            self.show_preview(index, option.parse().ok());
        }
    }

    /// Typing in a question's "Other" box or note.
    fn on_input(&self, event: leptos::ev::Event) {
        let Some((index, target)) = question_target(&event) else { return };
        let multi = self.questions.with_untracked(|q| q.get(index).is_some_and(|q| q.multi_select));
        let value = event_target_value(&event);
        let class = target.class_name();
        if class.contains("qc-note") {
            self.update(index, |d| d.notes = value);
        } else if class.contains("qc-other-text") {
            self.update(index, |d| {
                d.other = value;
                d.other_on = true;
                if !multi {
                    d.labels.clear();
                }
            });
        }
    }

    /// An option got the focus from the keyboard: its preview shows.
    ///
    /// Not when a pointer pressed it: the press focuses the option before the release clicks it,
    /// and a preview that opened or closed in between moved the options under the pointer (the
    /// thread, scrolled to its end, follows its height), so that the release landed beside the
    /// option and the click was lost. A click shows its option's preview once it is done.
    fn on_focus(&self, event: leptos::ev::FocusEvent) {
        let Some((index, target)) = question_target(&event) else { return };
        if !target.matches(":focus-visible").unwrap_or(true) {
            return;
        }
        self.show_preview(index, target.get_attribute("data-o").and_then(|o| o.parse().ok()));
    }

    fn show_preview(&self, index: usize, option: Option<usize>) {
        self.focused.update(|f| {
            f.resize(index + 1, None);
            f[index] = option;
        });
    }
}

/// The control an event is about, and the index of the question it belongs to.
fn question_target(event: &leptos::web_sys::Event) -> Option<(usize, leptos::web_sys::Element)> {
    let target = wasm_bindgen::JsCast::dyn_into::<leptos::web_sys::Element>(event.target()?).ok()?;
    let index = target.closest("[data-q]").ok()??.get_attribute("data-q")?.parse().ok()?;
    Some((index, target))
}

/// Brings back what was chosen in this browser before a reload.
fn restore(card: Card) {
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        if card.life.phase.with_untracked(|p| matches!(p, Phase::Pending | Phase::Streaming))
            && let Some(saved) = card.kept().load()
            && let Ok(saved) = serde_json::from_str::<Vec<QuestionAnswer>>(&saved)
        {
            card.drafts.set(saved.iter().map(Draft::from_answer).collect());
        }
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = card;
}

/// Shows the person's choices on the card's controls: checked options, the "Other" box and the
/// note, disabled once the card is no longer open, the preview of the focused option.
///
/// The question markup is rendered once, from the state at that moment (so that the server's
/// HTML already shows an answered card); from then on this one effect keeps it in step (see the
/// module's note for what the reactive alternative weighs).
fn sync_controls(card: Card) {
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        use wasm_bindgen::JsCast;
        use web_sys::{HtmlInputElement, HtmlTextAreaElement};

        let editable = card.editable();
        let drafts = card.drafts.get();
        let focused = card.focused.get();
        let questions = card.questions.get();
        let Some(root) = card.root.get() else { return };
        for (index, question) in questions.iter().enumerate() {
            let Ok(Some(fieldset)) = root.query_selector(&format!("fieldset[data-q='{index}']")) else { continue };
            let draft = drafts.get(index).cloned().unwrap_or_default();
            let _ = fieldset.toggle_attribute_with_force("disabled", !editable);
            let _ = fieldset.class_list().toggle_with_force("unanswered", editable && !draft.is_answered());
            if let Ok(inputs) = fieldset.query_selector_all("input[data-o]") {
                for i in 0..inputs.length() {
                    let Some(input) = inputs.item(i).and_then(|n| n.dyn_into::<HtmlInputElement>().ok()) else {
                        continue;
                    };
                    let checked = match input.get_attribute("data-o").as_deref() {
                        Some("other") => draft.other_on,
                        Some(o) => o
                            .parse::<usize>()
                            .ok()
                            .and_then(|o| question.options.get(o))
                            .is_some_and(|c| draft.labels.contains(&c.label)),
                        None => false,
                    };
                    input.set_checked(checked);
                }
            }
            let set = |selector: &str, hidden: bool, value: &str| {
                let Ok(Some(el)) = fieldset.query_selector(selector) else { return };
                let _ = el.toggle_attribute_with_force("hidden", hidden);
                if let Some(input) = el.dyn_ref::<HtmlInputElement>().filter(|i| i.value() != value) {
                    input.set_value(value);
                } else if let Some(area) = el.dyn_ref::<HtmlTextAreaElement>().filter(|a| a.value() != value) {
                    area.set_value(value);
                }
            };
            set(".qc-other-text", !draft.other_on, &draft.other);
            set(".qc-note", !draft.notes_open, &draft.notes);
            set("[data-action='note']", draft.notes_open || !editable, "");
            set(".qc-missing", !editable || draft.is_answered() || card.auto_submits(), "");
            let preview = focused
                .get(index)
                .copied()
                .flatten()
                .and_then(|o| question.options.get(o))
                .and_then(|c| c.preview.as_deref());
            if let Ok(Some(el)) = fieldset.query_selector(".qc-preview") {
                let _ = el.toggle_attribute_with_force("hidden", preview.is_none());
                el.set_inner_html(&preview.map(render_markdown).unwrap_or_default());
            }
        }
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = card;
}

/// One question, as markup fixed for the question and drawn in the state `draft` it has now:
/// its options as a radio group or checkboxes, "Other", a preview and a note.
fn question_block(card: Card, index: usize, question: Question, draft: Draft, shows_missing: bool) -> impl IntoView {
    let editable = card.editable_untracked();
    let multi = question.multi_select;
    let kind = if multi { "checkbox" } else { "radio" };
    let name = format!("{}-q{index}", card.life.tool_use_id.get_value());
    let text_id = format!("{name}-text");
    let labelled_by = text_id.clone();
    let note_label =
        format!("Note on “{}”", if question.header.is_empty() { &question.question } else { &question.header });
    let options = question
        .options
        .into_iter()
        .enumerate()
        .map(|(o, choice)| {
            view! {
                <label class="qc-option">
                    <input
                        type=kind
                        name=name.clone()
                        data-o=o
                        aria-label=choice.label.clone()
                        checked=draft.labels.contains(&choice.label)
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
    let answered = draft.is_answered();
    view! {
        <fieldset
            class="qc-question"
            class:unanswered=editable && !answered
            data-q=index
            on:input=move |ev| card.on_input(ev)
            on:focusin=move |ev| card.on_focus(ev)
            role=if multi { "group" } else { "radiogroup" }
            aria-labelledby=labelled_by
            disabled=!editable
        >
            <div class="qc-question-head">
                {(!question.header.is_empty()).then(|| view! { <span class="chip">{question.header}</span> })}
                <span class="qc-question-text" id=text_id>{question.question}</span>
                <span class="qc-missing" hidden=!shows_missing || answered>"Unanswered"</span>
                {multi.then(|| view! { <span class="qc-hint">"Choose any"</span> })}
            </div>
            <div class="qc-options">
                {options}
                <label class="qc-option qc-other-option">
                    <input type=kind name=name data-o="other" aria-label=OTHER checked=draft.other_on />
                    <span class="qc-key" aria-hidden="true">"0"</span>
                    <span class="qc-text"><span class="qc-label">{OTHER}</span></span>
                </label>
                <input
                    type="text"
                    class="qc-other-text"
                    aria-label="Other answer"
                    placeholder="Type your answer"
                    maxlength="4000"
                    hidden=!draft.other_on
                    value=draft.other
                />
            </div>
            <div class="qc-preview markdown" hidden></div>
            <div class="qc-notes">
                <button type="button" class="link-button" data-action="note" hidden=draft.notes_open || !editable>
                    "Add a note"
                </button>
                <textarea
                    class="qc-note"
                    rows="2"
                    maxlength="4000"
                    aria-label=note_label
                    placeholder="A note for the agent (optional)"
                    hidden=!draft.notes_open
                >
                    {draft.notes}
                </textarea>
            </div>
        </fieldset>
    }
}
