//! Where the person's keys go when a card opens. A card takes the keyboard focus only from nobody:
//! never from a text box in which the person is writing (the message box, another card's Other or
//! note), where the rest of their sentence would land on the card (a space that chose an option,
//! an Enter that sent it), and never from another card that waits. It then says where it is
//! instead (the message box's hint), and Esc in the message box goes to it. A card that takes the
//! focus is brought fully into view first, with its first unanswered question at the top when it
//! is taller than the thread.

#[cfg(feature = "hydrate")]
use std::cell::{Cell, RefCell};

/// How long after the person last typed in a text box it still counts as theirs, even emptied.
#[cfg(feature = "hydrate")]
const TYPING_GRACE_MS: f64 = 3_000.0;

#[cfg(feature = "hydrate")]
thread_local! {
    /// When the person last typed in a text box (ms since the epoch), by the page's one listener.
    static LAST_INPUT_MS: Cell<f64> = const { Cell::new(f64::NEG_INFINITY) };
    /// Text the message box sent and still shows until the server confirms it: it is not being
    /// written any more.
    static SENDING: RefCell<String> = const { RefCell::new(String::new()) };
    static LISTENING: Cell<bool> = const { Cell::new(false) };
    /// A session pane the server drew is being taken over (`taking_over`).
    static TAKING_OVER: Cell<bool> = const { Cell::new(false) };
}

/// Hydrates a session pane the server drew, later than the rest of the page
/// (`lazy::session_pane_in_place`): its cards count as drawn with the page.
#[cfg(feature = "hydrate")]
pub fn taking_over<T>(hydrate: impl FnOnce() -> T) -> T {
    TAKING_OVER.set(true);
    let drawn = hydrate();
    TAKING_OVER.set(false);
    drawn
}

/// Whether what is being drawn now takes the server's markup over: the page's hydration, or a
/// session pane's, later. A card drawn so leaves a focus that the person placed before the page
/// was interactive where it is (`in_a_text_box`).
#[cfg(feature = "hydrate")]
pub fn drawn_by_the_server() -> bool {
    use leptos::prelude::Owner;
    TAKING_OVER.get() || Owner::current_shared_context().is_some_and(|context| context.during_hydration())
}

#[cfg(feature = "hydrate")]
fn now_ms() -> f64 {
    js_sys::Date::now()
}

/// Starts noting when the person types in any text box of the page (once per page).
pub fn watch_typing() {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        use wasm_bindgen::closure::Closure;
        if LISTENING.replace(true) {
            return;
        }
        let on_input = Closure::<dyn Fn()>::new(|| LAST_INPUT_MS.set(now_ms()));
        // Capturing: a box that stops the event still counts.
        let _ = document().add_event_listener_with_callback_and_bool("input", on_input.as_ref().unchecked_ref(), true);
        on_input.forget();
    }
}

/// The message box sends `text` (it stays in the box until the server has it): it no longer counts
/// as being written, and neither does the typing that wrote it.
pub fn sending(text: &str) {
    #[cfg(feature = "hydrate")]
    {
        SENDING.replace(text.to_string());
        LAST_INPUT_MS.set(f64::NEG_INFINITY);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = text;
}

/// The message box's send is over (taken or refused).
pub fn sent() {
    #[cfg(feature = "hydrate")]
    SENDING.take();
}

/// The focus is in a text box outside `card` that the person is writing in: it holds text they
/// have not sent, or they typed in it a moment ago.
#[cfg(feature = "hydrate")]
fn writing_outside(card: &web_sys::Element) -> bool {
    use wasm_bindgen::JsCast;
    let Some(active) = document().active_element() else { return false };
    if card.contains(Some(&active)) {
        return false;
    }
    let value = if let Some(area) = active.dyn_ref::<web_sys::HtmlTextAreaElement>() {
        area.value()
    } else if let Some(input) = active.dyn_ref::<web_sys::HtmlInputElement>() {
        if !matches!(input.type_().as_str(), "text" | "search" | "email" | "url" | "") {
            return false;
        }
        input.value()
    } else if active.dyn_ref::<web_sys::HtmlElement>().is_some_and(|el| el.is_content_editable()) {
        active.text_content().unwrap_or_default()
    } else {
        return false;
    };
    let unsent = SENDING.with_borrow(|sending| {
        let rest =
            if sending.is_empty() { value.as_str() } else { value.strip_prefix(sending.as_str()).unwrap_or(&value) };
        !rest.trim().is_empty()
    });
    unsent || now_ms() - LAST_INPUT_MS.get() < TYPING_GRACE_MS
}

/// The focus is in a text box outside `card`, written in or not: where a person who opened the
/// page put it, before a card drawn with the page could take it (`CardLife::take_focus_when_pending`).
#[cfg(feature = "hydrate")]
pub fn in_a_text_box(card: &web_sys::Element) -> bool {
    use wasm_bindgen::JsCast;
    let Some(active) = document().active_element() else { return false };
    let text = active.dyn_ref::<web_sys::HtmlTextAreaElement>().is_some()
        || active
            .dyn_ref::<web_sys::HtmlInputElement>()
            .is_some_and(|i| matches!(i.type_().as_str(), "text" | "search" | ""));
    text && !card.contains(Some(&active))
}

/// The focus is on another card that waits for the person.
#[cfg(feature = "hydrate")]
fn on_another_card(card: &web_sys::Element) -> bool {
    document()
        .active_element()
        .and_then(|active| active.closest(".interaction-card").ok().flatten())
        .is_some_and(|other| &other != card && other.get_attribute("data-state").as_deref() == Some("pending"))
}

/// Whether `card`, opening now, may take the keyboard focus.
pub fn may_take_focus(card: &leptos::web_sys::Element) -> bool {
    #[cfg(feature = "hydrate")]
    {
        !writing_outside(card) && !on_another_card(card)
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = card;
        false
    }
}

/// The person moves the focus with this key (so that where it lands is theirs): letters typed on
/// do not, nor does Space or Enter.
pub fn moves_focus(key: &str) -> bool {
    matches!(key, "Tab" | "ArrowUp" | "ArrowDown" | "ArrowLeft" | "ArrowRight" | "Home" | "End" | "PageUp" | "PageDown")
        || (key.len() == 1 && key.as_bytes()[0].is_ascii_digit())
}

/// How soon after a letter typed onto a card a card's own key (a digit, `y`, `n`) still belongs
/// to the sentence being typed.
#[cfg(feature = "hydrate")]
const SENTENCE_GAP_MS: f64 = 1_000.0;

/// Letters typed onto a card mean a person writing a sentence who did not see the card take the
/// keyboard: a card's own one-key answer (a digit, `y`, `n`) that comes in the middle of one is
/// part of the sentence, not a choice.
#[derive(Clone, Copy)]
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
pub struct Sentence(leptos::prelude::StoredValue<f64>);

impl Sentence {
    pub fn new() -> Self {
        Self(leptos::prelude::StoredValue::new(f64::NEG_INFINITY))
    }

    /// Notes `key` pressed on the card; true when it is one of the card's answer keys (`answers`)
    /// typed within a sentence, which must then do nothing.
    pub fn swallows(&self, key: &str, answers: bool) -> bool {
        #[cfg(feature = "hydrate")]
        {
            use leptos::prelude::{GetValue, SetValue};
            // Letters and signs make a sentence; a space or a key like Enter alone does not.
            if key.chars().count() != 1 || key.trim().is_empty() {
                return false;
            }
            let now = now_ms();
            let within = now - self.0.get_value() < SENTENCE_GAP_MS;
            if !answers || within {
                self.0.set_value(now);
            }
            answers && within
        }
        #[cfg(not(feature = "hydrate"))]
        {
            let _ = (key, answers);
            false
        }
    }
}

impl Default for Sentence {
    fn default() -> Self {
        Self::new()
    }
}

/// Scrolls the thread so that `card` is wholly in view; a card taller than the thread shows
/// `first` (its first unanswered question) at the top instead. Says whether the thread now shows
/// its end, so that it goes on following what comes (or leaves the person reading).
pub fn bring_into_view(card: &leptos::web_sys::Element, first: Option<&leptos::web_sys::Element>) -> Option<bool> {
    #[cfg(feature = "hydrate")]
    {
        let scroller = card.closest(".thread").ok().flatten()?;
        let view = scroller.get_bounding_client_rect();
        let rect = card.get_bounding_client_rect();
        // Where the thread's top goes, and whether the card's bottom edge is what sets it.
        let (top, to_bottom) = if rect.height() <= view.height() {
            if rect.top() < view.top() {
                (rect.top(), false)
            } else if rect.bottom() > view.bottom() {
                (rect.bottom() - view.height(), true)
            } else {
                (view.top(), false)
            }
        } else {
            (first.unwrap_or(card).get_bounding_client_rect().top(), false)
        };
        // In whole pixels (the scroll offset is whole pixels here, and a card's edges need not
        // be), rounded towards the edge kept in view: rounded to the nearest, a card brought up
        // from below could end a fraction of a pixel under the message box (a browser test saw
        // 0.4 px).
        let by = top - view.top();
        let by = if to_bottom { by.ceil() } else { by.floor() } as i32;
        if by != 0 {
            scroller.set_scroll_top(scroller.scroll_top() + by);
        }
        Some(scroller.scroll_height() - scroller.scroll_top() - scroller.client_height() < 80)
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = (card, first);
        None
    }
}

/// The first card that waits for the person, in the thread's order, except `but`.
#[cfg(feature = "hydrate")]
fn waiting_card(but: Option<&web_sys::Element>) -> Option<web_sys::HtmlElement> {
    use wasm_bindgen::JsCast;
    let cards = document().query_selector_all(".interaction-card[data-state='pending']").ok()?;
    (0..cards.length())
        .filter_map(|i| cards.item(i)?.dyn_into::<web_sys::HtmlElement>().ok())
        .find(|card| but.is_none_or(|but| but != &**card))
}

/// Moves the focus to the first card that waits (other than `but`), brought into view: Esc in the
/// message box, or the card before it was answered. Its first unanswered question's option gets
/// the focus on a question card, the card itself on a permission card. `None` when no card waits;
/// else whether the thread's end is in view (`bring_into_view`), for the thread to follow it or not.
pub fn go_to_waiting_card(but: Option<&leptos::web_sys::Element>) -> Option<bool> {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let card = waiting_card(but)?;
        let question = card.query_selector(".qc-question.unanswered").ok().flatten();
        let at_end = bring_into_view(&card, question.as_ref()).unwrap_or(true);
        let target = question
            .as_ref()
            .and_then(|q| q.query_selector("input:checked, input").ok().flatten())
            .and_then(|el| el.dyn_into::<web_sys::HtmlElement>().ok())
            .unwrap_or(card);
        focus_in_place(&target);
        Some(at_end)
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = but;
        None
    }
}

/// Focuses `element` without scrolling to it: the caller has brought it into view as it should be
/// (a browser's own scroll to a focused option left a long card's first question, or its Submit
/// row, out of view).
pub fn focus_in_place(element: &leptos::web_sys::HtmlElement) {
    #[cfg(feature = "hydrate")]
    {
        let options = web_sys::FocusOptions::new();
        options.set_prevent_scroll(true);
        let _ = element.focus_with_options(&options);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = element;
}

#[cfg(feature = "hydrate")]
fn document() -> web_sys::Document {
    leptos::prelude::document()
}
