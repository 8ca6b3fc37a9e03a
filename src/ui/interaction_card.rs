//! The frame an interaction card is drawn in: what a question card and a permission card share.
//! It follows the interaction's life (DESIGN §3) from the server and this tab's sending of an
//! answer or decision ("Not sent", with a retry), takes the focus while the card is pending,
//! forgets the person's kept draft once the interaction closes, and draws the head with its
//! status line, the outcome and the error box (`ic-*` classes; each card styles its body).

use leptos::html;
use leptos::prelude::*;
use server_fn::ServerFn;

use super::kept::Kept;
use super::server_call::{CallState, ServerCall};
use crate::error::AppError;
use crate::interaction::{InteractionOutcome, InteractionRequest};
use crate::thread::{ToolCall, ToolStatus};

/// Where a card is in its life; `Sending` and `Unsent` exist only in this tab.
#[derive(Debug, Clone, PartialEq)]
pub enum Phase {
    /// The agent is still writing the question.
    Streaming,
    /// Its turn ended before the agent finished writing it: it was never asked.
    CutShort,
    Pending,
    /// This tab's answer is on its way, or arrived and its outcome not yet.
    Sending,
    /// The answer did not reach the server; the message says why.
    Unsent(String),
    Done(InteractionOutcome),
    Unreadable(String),
    /// Pending in a thread shown here but run elsewhere (a Claude Code transcript): it is answered
    /// where it runs.
    Elsewhere,
}

impl Phase {
    /// The person can still answer.
    pub fn is_open(&self) -> bool {
        matches!(self, Self::Pending | Self::Unsent(_))
    }
}

/// One card's life: the interaction as stored, and this tab's calls that answer it.
#[derive(Clone, Copy)]
pub struct CardLife {
    pub session: StoredValue<String>,
    pub tool_use_id: StoredValue<String>,
    /// The phase as the card draws it: while this tab's answer reaches the agent (`Hold`), the
    /// card is drawn as it was, and its own redraws (sending, then answered) wait with the
    /// thread's, so that the click's task is only the request (BENCHMARKS.md, "Latest figures":
    /// they were 20–29 ms of a traced click). Its keys and clicks are inert meanwhile
    /// (`answering`), and the focus has left it already.
    pub phase: ReadSignal<Phase>,
    /// Shared by every call that answers the card (submit and skip, say).
    pub calls: CallState,
    /// The server took this tab's answer; the outcome is on its way.
    sent: RwSignal<bool>,
    /// Pending, and the agent let go of it: it is paused until the person answers.
    pub parked: Memo<bool>,
    /// The answer could not reach the server: it is sent again once the live stream is back.
    unreachable: RwSignal<bool>,
    /// The thread's redraws, held while an answer from here reaches the agent.
    hold: Option<super::state::Hold>,
    /// Whether the thread follows its end: a card brought into view above it stops that.
    #[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
    following: Option<StoredValue<bool>>,
    /// The card's element, once `let_go_of_focus_when_closed` knows it.
    #[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
    root: StoredValue<Option<NodeRef<html::Section>>>,
}

impl CardLife {
    pub fn new(session: StoredValue<String>, call: Signal<ToolCall>) -> Self {
        let calls = CallState::new();
        let sent = RwSignal::new(false);
        let thread = use_context::<super::state::ThreadState>();
        let read_only = thread.is_some_and(|t| t.read_only);
        let hold = thread.map(|t| t.hold);
        let following = thread.map(|t| t.following);
        let now = Memo::new(move |_| {
            call.with(|c| match &c.interaction {
                None if c.status == ToolStatus::Cancelled => Phase::CutShort,
                None => Phase::Streaming,
                Some(interaction) => match (&interaction.request, &interaction.outcome) {
                    (InteractionRequest::Unreadable { error }, _) => Phase::Unreadable(error.clone()),
                    (_, Some(outcome)) => Phase::Done(outcome.clone()),
                    (_, None) if read_only => Phase::Elsewhere,
                    (_, None) if calls.pending.get() || sent.get() => Phase::Sending,
                    (_, None) => match calls.problem.get() {
                        None => Phase::Pending,
                        Some(error) => Phase::Unsent(error),
                    },
                },
            })
        });
        let drawn = RwSignal::new(now.get_untracked());
        Effect::new(move |_| {
            let phase = now.get();
            let answering = calls.pending.get_untracked() || sent.get_untracked();
            match hold {
                Some(hold) if answering && hold.is_active() => {
                    hold.redraw(true, move || {
                        if let Some(phase) = now.try_get_untracked() {
                            drawn.try_set(phase);
                        }
                    });
                }
                _ if drawn.with_untracked(|d| *d != phase) => drawn.set(phase),
                _ => {}
            }
        });
        let tool_use_id = StoredValue::new(call.with_untracked(|c| c.id.clone()));
        let parked =
            Memo::new(move |_| call.with(|c| c.interaction.as_ref().is_some_and(|i| i.is_pending() && i.parked)));
        Self {
            session,
            tool_use_id,
            phase: drawn.read_only(),
            calls,
            sent,
            parked,
            unreachable: RwSignal::new(false),
            hold,
            following,
            root: StoredValue::new(None),
        }
    }

    /// `redraw` once the agent has this tab's answer (with the card's own redraws, see `phase`),
    /// or now when no answer from here is on its way.
    pub fn redraw_later(&self, redraw: impl FnOnce() + Send + Sync + 'static) {
        match self.hold {
            Some(hold) if self.answering() => hold.redraw(true, redraw),
            _ => redraw(),
        }
    }

    /// This tab's answer is on its way, or the server took it: the card takes no other.
    /// Untracked, and true from the click on, before the card is drawn so.
    pub fn answering(&self) -> bool {
        self.calls.pending.get_untracked() || self.sent.get_untracked()
    }

    /// Sends an answer, a decision or a skip with `call`: until it lands, the page redraws only
    /// this card (`Hold`), and the outcome settles the card.
    pub fn send<S>(&self, call: ServerCall<S>, input: S)
    where
        S: ServerFn<Error = AppError, Output = ()> + 'static,
    {
        if let Some(hold) = self.hold {
            hold.begin();
        }
        let life = *self;
        call.dispatch_then(input, move |result| life.settle(result));
        // Now, not once the card is drawn as sending: keys typed on go where they will go then.
        // Queued after the request's task, which starts the request: the focus's move costs a
        // style pass, which the request need not wait for.
        if let Some(root) = self.root.get_value() {
            leptos::task::spawn_local(async move { life.let_go_of_focus(root) });
        }
    }

    /// For the `done` of a call that answers the card.
    pub fn settle(&self, result: Result<(), AppError>) {
        match result {
            Ok(()) => self.sent.set(true),
            // Another tab, or an expiry, got there first: its outcome is on its way.
            Err(AppError::AlreadyAnswered | AppError::NotWaiting { .. }) => self.calls.problem.set(None),
            // The server is away (stopped, restarting, or the network is down): the choice stays
            // on the card, and goes out again once the page is connected (`retry_when_back`).
            Err(AppError::Unreachable { .. }) => {
                self.unreachable.set(true);
                self.calls.problem.set(Some(
                    "the server cannot be reached. Your choice is kept, and is sent when the server is back".into(),
                ));
            }
            Err(_) => {}
        }
    }

    /// Sends the answer again (`retry`) once the page is connected again, if it could not reach
    /// the server, so that nothing clicked while the server was down waits on the person.
    pub fn retry_when_back(&self, retry: impl Fn() + Copy + 'static) {
        let Some(workspace) = use_context::<super::state::Workspace>() else { return };
        let (unreachable, phase) = (self.unreachable, self.phase);
        Effect::new(move |_| {
            let live = workspace.connection.get() == crate::live::ConnectionStatus::Live;
            if live && unreachable.get_untracked() {
                unreachable.set(false);
                if phase.with_untracked(Phase::is_open) {
                    retry();
                }
            }
        });
    }

    /// The server took this tab's answer (tracked).
    pub fn was_sent(&self) -> bool {
        self.sent.get()
    }

    pub fn is_open_untracked(&self) -> bool {
        self.phase.with_untracked(Phase::is_open)
    }

    /// Moves the focus into the card (with `focus`, which brings it into view, focuses without
    /// scrolling and says whether the thread's end is in view) when it turns pending, so that its
    /// keys work at once; after the frame in which its controls are drawn. Not when the person is
    /// writing elsewhere or is on another card that waits (`focus::may_take_focus`): the message
    /// box's hint then says where the card is. A card brought into view above the thread's end
    /// stops the thread following its end (which would scroll it away again).
    pub fn take_focus_when_pending(
        &self,
        root: NodeRef<html::Section>,
        focus: impl Fn() -> Option<bool> + Copy + 'static,
    ) {
        #[cfg(feature = "hydrate")]
        {
            let (phase, following) = (self.phase, self.following);
            // Drawn by the server with the page: the person may have put the focus somewhere
            // before the page was interactive (`early_answer.rs`).
            let hydrated = super::focus::drawn_by_the_server();
            Effect::new(move |was_pending: Option<bool>| {
                let pending = phase.with(|p| *p == Phase::Pending);
                let drawn_pending = hydrated && was_pending.is_none();
                if pending && was_pending != Some(true) {
                    request_animation_frame(move || {
                        let takes = |card: &web_sys::Element| {
                            super::focus::may_take_focus(card) && !(drawn_pending && super::focus::in_a_text_box(card))
                        };
                        if root.try_get_untracked().flatten().is_some_and(|card| takes(&card))
                            && let (Some(at_end), Some(following)) = (focus(), following)
                        {
                            following.try_set_value(at_end);
                        }
                    });
                }
                pending
            });
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (root, focus);
    }

    /// Once the card is answered or sent (here or in another tab), the focus leaves it if it was
    /// inside, or was lost when the card's controls were disabled (the browser then drops it on the
    /// page): for the next card that waits, else the message box. An answered card kept a focus
    /// ring, and its keys no longer do anything.
    pub fn let_go_of_focus_when_closed(&self, root: NodeRef<html::Section>) {
        self.root.set_value(Some(root));
        let (life, phase) = (*self, self.phase);
        Effect::new(move |was_open: Option<bool>| {
            let open = phase.with(Phase::is_open);
            if was_open == Some(true) && !open {
                life.let_go_of_focus(root);
            }
            open
        });
    }

    /// The focus leaves the card if it is inside, or was lost (see above).
    fn let_go_of_focus(&self, root: NodeRef<html::Section>) {
        #[cfg(feature = "hydrate")]
        {
            use wasm_bindgen::JsCast;
            let active = document().active_element();
            let card = root.get_untracked();
            let in_card = card.as_ref().zip(active.as_ref()).is_some_and(|(root, el)| root.contains(Some(el)));
            let lost = active.is_none_or(|el| el.tag_name() == "BODY");
            if in_card || lost {
                match super::focus::go_to_waiting_card(card.as_deref()) {
                    Some(at_end) => {
                        if let Some(following) = self.following {
                            following.try_set_value(at_end);
                        }
                    }
                    None => {
                        if let Some(composer) = document().query_selector(".composer-input").ok().flatten() {
                            _ = composer.unchecked_ref::<web_sys::HtmlElement>().focus();
                        }
                    }
                }
            }
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = root;
    }

    /// What the person typed or chose is kept in the browser only while the card is open.
    pub fn forget_when_closed(&self, kept: Kept) {
        let phase = self.phase;
        Effect::new(move |_| {
            if phase.with(|p| matches!(p, Phase::Done(_) | Phase::Unreadable(_) | Phase::CutShort)) {
                kept.forget();
            }
        });
    }
}

/// The card: head with status line, its body (`children`), the outcome, "Not sent" with Retry,
/// then `actions`.
#[component]
pub fn InteractionFrame(
    life: CardLife,
    /// `question-card` or `approval-card`: the body's own styles.
    kind: &'static str,
    /// The card's accessible name.
    #[prop(into)]
    label: String,
    mark: &'static str,
    #[prop(into)] title: String,
    /// What is sent: "answer" or "decision".
    sends: &'static str,
    root: NodeRef<html::Section>,
    /// The card's `data-state`.
    state: impl Fn() -> &'static str + Send + Sync + 'static,
    /// The status line, in words.
    status: impl Fn() -> String + Send + Sync + 'static,
    /// The outcome in a sentence, once there is one to say.
    outcome: impl Fn() -> Option<String> + Copy + Send + Sync + 'static,
    /// Sends again what was not sent.
    retry: impl Fn() + 'static,
    on_key: impl Fn(leptos::ev::KeyboardEvent) + 'static,
    on_click: impl Fn(leptos::ev::MouseEvent) + 'static,
    /// Below the outcome: the card's buttons.
    actions: AnyView,
    children: Children,
    /// A click answers it before the page's code runs (`early_answer.rs`): drawn by the server.
    #[prop(optional)]
    early: bool,
) -> impl IntoView {
    // The card is the page's own now: `early_answer.js` leaves it be.
    Effect::new(move |_| {
        if let Some(root) = root.get() {
            let _ = root.set_attribute("data-live", "");
        }
    });
    let unsent = move || match life.phase.get() {
        Phase::Unsent(message) => Some(message),
        _ => None,
    };
    view! {
        <section
            class=format!("interaction-card {kind}")
            data-state=state
            data-send-early=early.then_some("")
            role="group"
            aria-label=label
            tabindex="-1"
            node_ref=root
            on:keydown=on_key
            on:click=on_click
        >
            <header class="ic-head">
                <span class="ic-mark" aria-hidden="true">{mark}</span>
                <span class="ic-title">{title}</span>
                <span class="ic-status" role="status">{status}</span>
            </header>
            {children()}
            <p class="ic-paused" hidden=move || !life.parked.get()>
                "The agent is paused until you answer. Your answer resumes it."
            </p>
            <p class="ic-outcome" hidden=move || outcome().is_none()>{outcome}</p>
            <div class="ic-problem" role="alert" hidden=move || unsent().is_none()>
                {format!("Your {sends} was not sent: ")}
                {unsent}
                <button class="button small" on:click=move |_| retry()>"Retry"</button>
            </div>
            {actions}
        </section>
    }
}
