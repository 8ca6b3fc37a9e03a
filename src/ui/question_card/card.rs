//! What the person has chosen on a question card, and what their clicks and keys do to it: pick,
//! choose Other (the focus goes into its box at once), open a note, move between questions,
//! submit, skip. Kept in the browser until the answer is stored.

use leptos::html;
use leptos::prelude::*;

use super::super::focus::{Sentence, bring_into_view, focus_in_place};
use super::super::interaction_card::{CardLife, Phase};
use super::super::kept::Kept;
use super::super::server_call::ServerCall;
use crate::api::{DeclineQuestion, SubmitAnswers};
use crate::interaction::InteractionOutcome;
use crate::question::{Question, QuestionAnswer};

/// How long a first Esc waits for the second that skips the card.
#[cfg(feature = "hydrate")]
const SKIP_ARMED_FOR: std::time::Duration = std::time::Duration::from_secs(4);

/// What the person has chosen so far for one question.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Draft {
    pub(super) labels: Vec<String>,
    pub(super) other_on: bool,
    pub(super) other: String,
    pub(super) notes: String,
    pub(super) notes_open: bool,
}

impl Draft {
    pub(super) fn is_answered(&self) -> bool {
        !self.labels.is_empty() || (self.other_on && !self.other.trim().is_empty())
    }

    pub(super) fn answer(&self, question: &Question) -> QuestionAnswer {
        QuestionAnswer {
            question: question.question.clone(),
            labels: self.labels.clone(),
            other: (self.other_on && !self.other.trim().is_empty()).then(|| self.other.trim().to_string()),
            notes: Some(self.notes.trim().to_string()).filter(|n| !n.is_empty()),
        }
    }

    /// As kept in the browser: an answer, with "Other" chosen but empty as `Some("")`.
    #[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
    pub(super) fn to_saved(&self) -> QuestionAnswer {
        QuestionAnswer {
            question: String::new(),
            labels: self.labels.clone(),
            other: self.other_on.then(|| self.other.clone()),
            notes: self.notes_open.then(|| self.notes.clone()),
        }
    }

    pub(super) fn from_answer(answer: &QuestionAnswer) -> Self {
        Self {
            labels: answer.labels.clone(),
            other_on: answer.other.is_some(),
            other: answer.other.clone().unwrap_or_default(),
            notes: answer.notes.clone().unwrap_or_default(),
            notes_open: answer.notes.is_some(),
        }
    }
}

/// The controls of one question that the keyboard moves the focus to.
#[derive(Clone, Default)]
pub(super) struct Controls {
    pub(super) options: Vec<NodeRef<html::Input>>,
    pub(super) other: NodeRef<html::Input>,
    pub(super) other_text: NodeRef<html::Input>,
    pub(super) note: NodeRef<html::Textarea>,
}

#[derive(Clone, Copy)]
pub(super) struct Card {
    pub(super) life: CardLife,
    pub(super) questions: Memo<Vec<Question>>,
    pub(super) drafts: RwSignal<Vec<Draft>>,
    /// The option whose preview shows, per question.
    pub(super) focused: RwSignal<Vec<Option<usize>>>,
    /// The question that last had the focus: the one the number keys speak to.
    pub(super) current: StoredValue<Option<usize>>,
    pub(super) controls: StoredValue<Vec<Controls>>,
    pub(super) root: NodeRef<html::Section>,
    /// The focus is where the card put it when it opened, not where the person moved it: Space
    /// there chooses nothing, so that a sentence typed on does not pick an option.
    pub(super) placed: StoredValue<bool>,
    /// Esc was pressed once: the next Esc skips the card (`SKIP_ARMED_FOR` at most).
    pub(super) skip_armed: RwSignal<bool>,
    /// Letters typed onto the card: a digit among them is text, not a pick.
    pub(super) sentence: Sentence,
    pub(super) answer: ServerCall<SubmitAnswers>,
    pub(super) skip: ServerCall<DeclineQuestion>,
}

impl Card {
    pub(super) fn new(life: CardLife, questions: Memo<Vec<Question>>) -> Self {
        Self {
            life,
            questions,
            drafts: RwSignal::new(Vec::new()),
            focused: RwSignal::new(Vec::new()),
            current: StoredValue::new(None),
            controls: StoredValue::new(Vec::new()),
            root: NodeRef::new(),
            placed: StoredValue::new(false),
            skip_armed: RwSignal::new(false),
            sentence: Sentence::new(),
            answer: ServerCall::sharing(life.calls),
            skip: ServerCall::sharing(life.calls),
        }
    }

    pub(super) fn editable(&self) -> bool {
        // A lost one until this tab sent its answer.
        self.life.phase.with(Phase::is_open) || (self.is_lost() && !self.life.was_sent())
    }

    /// The agent was told something else when the server died while it waited; the person may
    /// still answer, and the answer goes to the agent as a message.
    pub(super) fn is_lost(&self) -> bool {
        self.life.phase.with(|p| matches!(p, Phase::Done(InteractionOutcome::Lost { .. })))
    }

    /// One single-select question: a click answers it. A lost one waits for its button: a message
    /// to the agent is sent on purpose, not by picking.
    /// A click answers it before the page's code runs: open, and one click answers it
    /// (`early_answer.rs`). Asked by the server only, as it draws the card.
    #[cfg(feature = "ssr")]
    pub(super) fn early(&self) -> bool {
        untrack(|| self.life.is_open_untracked() && self.auto_submits())
            && self.questions.with_untracked(|q| q.first().is_some_and(|q| !q.options.is_empty()))
    }

    pub(super) fn auto_submits(&self) -> bool {
        self.questions.with(|q| q.len() == 1 && !q[0].multi_select) && !self.is_lost()
    }

    pub(super) fn unanswered(&self) -> usize {
        self.drafts.with(|drafts| {
            (0..self.questions.with(Vec::len)).filter(|&i| !drafts.get(i).is_some_and(Draft::is_answered)).count()
        })
    }

    pub(super) fn first_unanswered(&self) -> Option<usize> {
        self.drafts.with_untracked(|drafts| {
            (0..self.questions.with_untracked(Vec::len)).find(|&i| !drafts.get(i).is_some_and(Draft::is_answered))
        })
    }

    pub(super) fn is_multi(&self, index: usize) -> bool {
        self.questions.with_untracked(|q| q.get(index).is_some_and(|q| q.multi_select))
    }

    pub(super) fn update(&self, index: usize, change: impl FnOnce(&mut Draft)) {
        self.update_quietly(index, change);
        self.drafts.notify();
    }

    /// Changes a draft without redrawing anything yet: the caller notifies `drafts`.
    pub(super) fn update_quietly(&self, index: usize, change: impl FnOnce(&mut Draft)) {
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
    /// redraws: the redraw (the choice checked) is work the page queues, and it ran before the
    /// request when the choice came first (7 to 20 ms on the bench's machine, on the way from the
    /// click to the agent). The card drawn as sent, its controls disabled, waits until the agent
    /// has the answer (`CardLife::phase`).
    pub(super) fn pick_and_submit(&self, index: usize, label: &str, submits: bool) {
        let multi = self.is_multi(index);
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
        if submits {
            self.submit();
        }
        // The browser shows the choice checked already: the card's redraw of it waits with the
        // rest of the card's while the answer reaches the agent.
        let drafts = self.drafts;
        self.life.redraw_later(move || drafts.notify());
    }

    /// Chooses "Other" (or, on a multi-select question, turns it off again). The focus goes into
    /// its text box at once, in this handler: the box's `hidden` binding changes only once the
    /// page redraws, and typing that came before would go to the option that had the focus (a
    /// space there ticked it, a digit picked and sent another answer).
    pub(super) fn choose_other(&self, index: usize) {
        let multi = self.is_multi(index);
        let mut on = true;
        self.update(index, |draft| {
            draft.other_on = if multi { !draft.other_on } else { true };
            on = draft.other_on;
            if !multi {
                draft.labels.clear();
            }
        });
        if on {
            reveal_and_focus(self.control(index, |c| c.other_text.get_untracked().map(Into::into)));
        }
    }

    /// Opens the question's note and puts the focus in it.
    pub(super) fn open_note(&self, index: usize) {
        self.update(index, |draft| draft.notes_open = true);
        reveal_and_focus(self.control(index, |c| c.note.get_untracked().map(Into::into)));
    }

    fn control<T>(&self, index: usize, get: impl FnOnce(&Controls) -> Option<T>) -> Option<T> {
        self.controls.with_value(|controls| controls.get(index).and_then(get))
    }

    pub(super) fn focus_option(&self, index: usize, option: usize) {
        if let Some(input) = self.control(index, |c| c.options.get(option).and_then(NodeRef::get_untracked)) {
            let _ = input.focus();
        }
    }

    /// Moves the focus to the question's chosen option, or its first.
    pub(super) fn focus_question(&self, index: usize) {
        let chosen = self.questions.with_untracked(|q| {
            let labels = self.drafts.with_untracked(|d| d.get(index).map(|d| d.labels.clone()).unwrap_or_default());
            q.get(index).and_then(|q| q.options.iter().position(|o| labels.contains(&o.label)))
        });
        self.focus_option(index, chosen.unwrap_or(0));
    }

    /// The card opened: it is brought into view (its first unanswered question at the top when it
    /// is taller than the thread), and the focus goes to that question's chosen option, or its
    /// first. That focus chooses nothing (`placed`). Says whether the thread's end is in view.
    pub(super) fn take_focus(&self) -> Option<bool> {
        let index = self.current_question();
        let chosen = self.questions.with_untracked(|q| {
            let labels = self.drafts.with_untracked(|d| d.get(index).map(|d| d.labels.clone()).unwrap_or_default());
            q.get(index).and_then(|q| q.options.iter().position(|o| labels.contains(&o.label)))
        });
        let input = self.control(index, |c| c.options.get(chosen.unwrap_or(0)).and_then(|r| r.get_untracked()))?;
        let at_end = self.root.get_untracked().and_then(|root| {
            let question = input.closest("fieldset").ok().flatten();
            bring_into_view(&root, question.as_ref())
        });
        focus_in_place(&input);
        self.placed.set_value(true);
        at_end
    }

    pub(super) fn submit(&self) {
        if self.life.answering() || !self.editable() || self.unanswered() > 0 {
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
        life.send(self.answer, input);
    }

    pub(super) fn decline(&self) {
        if self.life.answering() || !self.life.is_open_untracked() {
            return;
        }
        let life = self.life;
        let input = DeclineQuestion {
            session: life.session.get_value(),
            tool_use_id: life.tool_use_id.get_value(),
            reason: None,
        };
        life.send(self.skip, input);
    }

    pub(super) fn kept(&self) -> Kept {
        Kept::answer_draft(&self.life.session.get_value(), &self.life.tool_use_id.get_value())
    }

    pub(super) fn save(&self) {
        #[cfg(feature = "hydrate")]
        {
            let saved: Vec<QuestionAnswer> = self.drafts.with_untracked(|d| d.iter().map(Draft::to_saved).collect());
            if let Ok(json) = serde_json::to_string(&saved) {
                self.kept().save(&json);
            }
        }
    }

    /// The question the keyboard speaks to: the one that last had the focus, else the first
    /// unanswered.
    pub(super) fn current_question(&self) -> usize {
        let count = self.questions.with_untracked(Vec::len);
        self.current.get_value().filter(|&i| i < count).or_else(|| self.first_unanswered()).unwrap_or(0)
    }

    pub(super) fn on_key(&self, event: leptos::ev::KeyboardEvent) {
        if self.life.answering()
            || !untrack(|| self.editable())
            || event.ctrl_key()
            || event.meta_key()
            || event.alt_key()
        {
            return;
        }
        let target = event.target().and_then(|t| wasm_bindgen::JsCast::dyn_into::<leptos::web_sys::Element>(t).ok());
        let in_textarea = target.as_ref().is_some_and(|el| el.tag_name() == "TEXTAREA");
        let typing =
            in_textarea || target.as_ref().is_some_and(|el| el.get_attribute("type").as_deref() == Some("text"));
        let key = event.key();
        if key != "Escape" {
            self.skip_armed.set(false);
        }
        let digit = key.len() == 1 && key.as_bytes()[0].is_ascii_digit();
        if !typing && self.sentence.swallows(&key, digit) {
            event.prevent_default();
            return;
        }
        if key == " " && self.placed.get_value() && !typing {
            // The card put the focus here: a space typed on from elsewhere picks nothing.
            event.prevent_default();
            return;
        }
        if super::super::focus::moves_focus(&key) {
            self.placed.set_value(false);
        }
        match key.as_str() {
            // In a text box, Esc leaves the box; elsewhere it asks first, and the second Esc skips.
            "Escape" if typing => {
                event.prevent_default();
                self.focus_question(self.current_question());
            }
            "Escape" => {
                event.prevent_default();
                if self.skip_armed.get_untracked() {
                    self.skip_armed.set(false);
                    self.decline();
                } else {
                    self.arm_skip();
                }
            }
            "Enter" if !in_textarea && !event.is_composing() => {
                event.prevent_default();
                match self.first_unanswered() {
                    None => self.submit(),
                    Some(next) => self.focus_question(next),
                }
            }
            digit if !typing && digit.len() == 1 && digit.as_bytes()[0].is_ascii_digit() => {
                let index = self.current_question();
                let Some(question) = self.questions.with_untracked(|q| q.get(index).cloned()) else { return };
                event.prevent_default();
                let n = (digit.as_bytes()[0] - b'0') as usize;
                if n == 0 {
                    self.show_preview(index, None);
                    self.choose_other(index);
                } else if let Some(choice) = question.options.get(n - 1) {
                    self.pick_and_submit(index, &choice.label, untrack(|| self.auto_submits()));
                    self.focus_option(index, n - 1);
                }
            }
            _ => {}
        }
    }

    /// The first Esc on a card says what the next one does; it is forgotten after a few seconds,
    /// or at any other key.
    fn arm_skip(&self) {
        self.skip_armed.set(true);
        #[cfg(feature = "hydrate")]
        {
            let armed = self.skip_armed;
            set_timeout(move || _ = armed.try_set(false), SKIP_ARMED_FOR);
        }
    }

    /// An option was clicked: `option` is its index, `None` for Other. Only a pointer's click
    /// answers a card by itself: a space or an arrow key on a focused radio clicks it too, and
    /// that must not send an answer the person did not pick.
    pub(super) fn on_option_click(&self, index: usize, option: Option<usize>, event: &leptos::ev::MouseEvent) {
        // Its answer is on its way, drawn or not yet (`CardLife::phase`): the browser takes the
        // check back, so that the card never shows a choice that was not sent.
        if self.life.answering() {
            event.prevent_default();
            return;
        }
        let pointer = event.detail() > 0;
        self.current.set_value(Some(index));
        self.placed.set_value(false);
        // Previews change after the click, not on the press (see `on_option_focus`); after the
        // answer it sends, if it sends one (`pick_and_submit`).
        let card = *self;
        let preview = move || card.show_preview(index, option);
        match option {
            None => {
                preview();
                self.choose_other(index);
            }
            Some(o) => {
                let label = self
                    .questions
                    .with_untracked(|q| q.get(index).and_then(|q| q.options.get(o)).map(|c| c.label.clone()));
                if let Some(label) = label {
                    self.pick_and_submit(index, &label, pointer && untrack(|| self.auto_submits()));
                }
                self.life.redraw_later(preview);
            }
        }
    }

    /// An option got the focus from the keyboard: its preview shows.
    ///
    /// Not when a pointer pressed it: the press focuses the option before the release clicks it,
    /// and a preview that opened or closed in between moved the options under the pointer (the
    /// thread, scrolled to its end, follows its height), so that the release landed beside the
    /// option and the click was lost. A click shows its option's preview once it is done.
    pub(super) fn on_option_focus(&self, index: usize, option: Option<usize>, event: &leptos::ev::FocusEvent) {
        self.current.set_value(Some(index));
        let visible = event
            .target()
            .and_then(|t| wasm_bindgen::JsCast::dyn_into::<leptos::web_sys::Element>(t).ok())
            .is_none_or(|el| el.matches(":focus-visible").unwrap_or(true));
        if visible {
            self.show_preview(index, option);
        }
    }

    pub(super) fn show_preview(&self, index: usize, option: Option<usize>) {
        self.focused.update(|f| {
            f.resize(f.len().max(index + 1), None);
            f[index] = option;
        });
    }
}

/// Shows a control the page has not redrawn yet, and focuses it.
fn reveal_and_focus(element: Option<leptos::web_sys::HtmlElement>) {
    if let Some(element) = element {
        element.set_hidden(false);
        let _ = element.focus();
    }
}
