//! The approval card: the agent asks permission to run a tool (or, with `ExitPlanMode`, to start
//! on its plan), and the person allows it once, always (by one of the rules the agent suggests),
//! or denies it with a message for the agent.
//!
//! What the call will do is worded on the server (`approval::Shows`); the card lays it out once,
//! and only its state changes afterwards. At most four buttons: Allow once, one "always" choice
//! (a menu when the agent offers several scopes), Deny (with the message, when one is typed).
//! Keys: `y` allows once, `n` or Esc denies (with the message, if one is typed; Enter in the
//! message box denies too); Enter on a focus the card placed itself decides nothing.

use leptos::html;
use leptos::prelude::*;

use super::focus::{bring_into_view, focus_in_place};
use super::interaction_card::{CardLife, InteractionFrame, Phase};
use super::kept::Kept;
use super::markdown::markdown;
use super::server_call::ServerCall;
use crate::api::DecideApproval;
use crate::approval::{Approval, Decision, Shows};
use crate::interaction::{InteractionOutcome, InteractionRequest};
use crate::thread::ToolCall;

/// An approval card's state, and what the person's clicks and keys decide.
#[derive(Clone, Copy)]
struct Decider {
    life: CardLife,
    /// The message typed for the agent.
    message: RwSignal<String>,
    root: NodeRef<html::Section>,
    /// The focus is where the card put it as it opened: Enter there decides nothing (a sentence
    /// typed on from elsewhere ends with one).
    placed: StoredValue<bool>,
    /// Letters typed onto the card: a y or n among them is text, not a decision.
    sentence: super::focus::Sentence,
    decide_call: ServerCall<DecideApproval>,
    /// Retry sends the decision that was not sent.
    last: StoredValue<Option<Decision>>,
    /// The agent's suggestions' labels, for the outcome's sentence.
    suggestions: StoredValue<Vec<String>>,
    plan: bool,
}

impl Decider {
    fn decide(self, decision: Decision) {
        let life = self.life;
        if life.answering() || !life.is_open_untracked() {
            return;
        }
        self.last.set_value(Some(decision.clone()));
        let input =
            DecideApproval { session: life.session.get_value(), tool_use_id: life.tool_use_id.get_value(), decision };
        life.send(self.decide_call, input);
    }

    fn retry(self) {
        if let Some(decision) = self.last.get_value() {
            self.decide(decision);
        }
    }

    fn deny(self) {
        let text = self.message.get_untracked().trim().to_string();
        self.decide(Decision::Deny { message: (!text.is_empty()).then_some(text) });
    }

    fn on_click(self, event: leptos::ev::MouseEvent) {
        self.placed.set_value(false);
        let Some(choice) = event
            .target()
            .and_then(|t| wasm_bindgen::JsCast::dyn_into::<leptos::web_sys::Element>(t).ok())
            .and_then(|el| el.closest("[data-d]").ok().flatten())
            .and_then(|el| el.get_attribute("data-d"))
        else {
            return;
        };
        match choice.as_str() {
            "allow" => self.decide(Decision::Allow { always: None }),
            "deny" => self.deny(),
            index => self.decide(Decision::Allow { always: index.parse().ok() }),
        }
    }

    fn on_key(self, event: leptos::ev::KeyboardEvent) {
        if event.ctrl_key() || event.meta_key() || event.alt_key() {
            return;
        }
        let target = event.target().and_then(|t| wasm_bindgen::JsCast::dyn_into::<leptos::web_sys::Element>(t).ok());
        let in_message = target.as_ref().is_some_and(|el| el.tag_name() == "INPUT");
        let on_button = target.as_ref().is_some_and(|el| el.tag_name() == "BUTTON");
        let key = event.key();
        if !in_message && self.sentence.swallows(&key, matches!(key.as_str(), "y" | "Y" | "n" | "N")) {
            event.prevent_default();
            return;
        }
        let placed_here = self.placed.get_value();
        if super::focus::moves_focus(&key) {
            self.placed.set_value(false);
        }
        match key.as_str() {
            "Escape" => self.deny(),
            "Enter" if in_message => self.deny(),
            "Enter" if placed_here && !on_button => {}
            // A focused button takes Enter itself.
            "Enter" if !on_button => self.decide(Decision::Allow { always: None }),
            "y" | "Y" if !in_message => self.decide(Decision::Allow { always: None }),
            "n" | "N" if !in_message => self.deny(),
            _ => return,
        }
        event.prevent_default();
    }

    /// Brings the card into view and the focus onto it, where its keys work.
    fn take_focus(self) -> Option<bool> {
        let root = self.root.try_get_untracked().flatten()?;
        let at_end = bring_into_view(&root, None);
        focus_in_place(&root);
        self.placed.set_value(true);
        at_end
    }

    fn status(self) -> String {
        match self.life.phase.get() {
            Phase::Sending => "Sending…".to_string(),
            Phase::Unsent(_) => "Not sent".to_string(),
            Phase::Done(outcome) => outcome_status(&outcome, self.plan).to_string(),
            Phase::Elsewhere => "Asked in the terminal".to_string(),
            // As the header and the session list say it.
            _ if self.life.parked.get() => "Paused".to_string(),
            _ => "Waiting for you".to_string(),
        }
    }

    /// The card's `data-state`.
    fn state(self) -> &'static str {
        match self.life.phase.get() {
            Phase::Sending => "submitting",
            Phase::Unsent(_) => "error",
            Phase::Done(InteractionOutcome::Allowed { .. }) => "allowed",
            Phase::Done(InteractionOutcome::Denied { .. }) => "denied",
            Phase::Done(InteractionOutcome::Expired) => "expired",
            Phase::Done(_) | Phase::Elsewhere => "cancelled",
            _ => "pending",
        }
    }

    fn outcome(self) -> Option<String> {
        match self.life.phase.get() {
            Phase::Done(outcome) => self.suggestions.with_value(|labels| outcome_text(&outcome, labels, self.plan)),
            _ => None,
        }
    }
}

/// What the agent asks to do; an approval that cannot be read shows as the tool's name.
fn approval_of(call: &ToolCall) -> Approval {
    match call.interaction.as_ref().map(|i| &i.request) {
        Some(InteractionRequest::Approval(approval)) => approval.clone(),
        _ => Approval {
            tool: call.name.clone(),
            input: serde_json::Value::Null,
            description: None,
            reason: None,
            blocked_path: None,
            suggestions: Vec::new(),
            asked_by: None,
            shows: Shows::Json { pretty: String::new() },
        },
    }
}

#[component]
pub fn ApprovalCard(#[prop(into)] call: Signal<ToolCall>) -> impl IntoView {
    let thread = expect_context::<super::state::ThreadState>();
    let approval = call.with_untracked(approval_of);
    let life = CardLife::new(thread.session_id, call);
    let card = Decider {
        life,
        message: RwSignal::new(String::new()),
        root: NodeRef::new(),
        placed: StoredValue::new(false),
        sentence: super::focus::Sentence::new(),
        decide_call: ServerCall::sharing(life.calls),
        last: StoredValue::new(None),
        suggestions: StoredValue::new(approval.suggestions.iter().map(|s| s.label.clone()).collect()),
        plan: approval.is_plan(),
    };
    let input = NodeRef::<html::Input>::new();
    // The message typed for the agent survives a reload, until the decision is stored.
    let kept = Kept::decision_message(&life.session.get_value(), &life.tool_use_id.get_value());
    life.forget_when_closed(kept.clone());
    restore_message(input, card.message, kept.clone());
    life.take_focus_when_pending(card.root, move || card.take_focus());
    life.let_go_of_focus_when_closed(card.root);
    life.retry_when_back(move || card.retry());

    let title = title_of(&approval);
    let always =
        always_choice(&approval.suggestions, |index| early_send(card, Decision::Allow { always: Some(index) }));
    let Approval { description, reason, blocked_path, shows, asked_by, .. } = approval;
    view! {
        <InteractionFrame
            life=life
            kind="approval-card"
            label=title.clone()
            mark=if card.plan { "✓" } else { "!" }
            title=title
            sends="decision"
            root=card.root
            state=move || card.state()
            status=move || card.status()
            outcome=move || card.outcome()
            retry=move || card.retry()
            on_key=move |ev| card.on_key(ev)
            on_click=move |ev| card.on_click(ev)
            actions=approval_actions(card, input, kept, always).into_any()
            early=early_send(card, Decision::Deny { message: None }).is_some()
        >
            // Kept once decided: the card is the record of what was allowed or denied.
            <div class="ac-body">
                {description.map(|text| view! { <p class="ac-desc">{text}</p> })}
                {shows_view(shows)}
                {asked_by.map(|who| view! { <p class="ac-reason">"Asked by the subagent working on “" {who} "”"</p> })}
                {reason.map(|text| view! { <p class="ac-reason">"Why it asks: " {text}</p> })}
                {blocked_path.map(|path| view! { <p class="ac-reason">"Path: " <code>{path}</code></p> })}
            </div>
        </InteractionFrame>
    }
}

/// What the button for `decision` sends when clicked before the page's code runs
/// (`early_answer.rs`): drawn by the server, on a card still open.
fn early_send(card: Decider, decision: Decision) -> Option<String> {
    #[cfg(feature = "ssr")]
    if card.life.is_open_untracked() {
        let (session, tool_use_id) = (card.life.session.get_value(), card.life.tool_use_id.get_value());
        return Some(super::early_answer::send_decision(&session, &tool_use_id, decision));
    }
    let _ = (card, decision);
    None
}

/// Brings back the message typed before a reload.
fn restore_message(input: NodeRef<html::Input>, message: RwSignal<String>, kept: Kept) {
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        if let (Some(el), Some(saved)) = (input.get(), kept.load()) {
            el.set_value(&saved);
            message.set(saved);
        }
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = (input, message, kept);
}

/// Allow once, the "always" choice, and Deny with the message box.
fn approval_actions(card: Decider, input: NodeRef<html::Input>, kept: Kept, always: Option<AnyView>) -> impl IntoView {
    let Decider { life, message, plan, .. } = card;
    let phase = life.phase;
    let open = move || phase.with(Phase::is_open);
    view! {
        <fieldset class="ac-actions" hidden=move || !open() && phase.get() != Phase::Sending disabled=move || !open()>
            <button
                class="button primary"
                data-d="allow"
                aria-keyshortcuts="y"
                data-send=early_send(card, Decision::Allow { always: None })
            >
                {if plan { "Approve plan" } else { "Allow once" }}
                <kbd class="button-key" aria-hidden="true">"Y"</kbd>
            </button>
            {always}
            <div class="ac-deny">
                <input
                    node_ref=input
                    type="text"
                    maxlength="4000"
                    aria-label="Message for the agent"
                    placeholder=if plan { "What should change? (optional)" } else { "Tell the agent why, or what to do instead (optional)" }
                    on:input=move |ev| {
                        let text = event_target_value(&ev);
                        kept.save(&text);
                        message.set(text);
                    }
                />
                <button
                    class=if plan { "button" } else { "button danger" }
                    data-d="deny"
                    aria-keyshortcuts="n"
                    data-send=early_send(card, Decision::Deny { message: None })
                >
                    {move || match (plan, message.with(|m| m.trim().is_empty())) {
                        (true, _) => "Keep planning",
                        (false, true) => "Deny",
                        (false, false) => "Deny with message",
                    }}
                    <kbd class="button-key" aria-hidden="true">"N"</kbd>
                </button>
            </div>
        </fieldset>
    }
}

/// The one "always" choice: the agent's suggestion as a button, or, when it offers several
/// scopes, a button that opens them as a menu. Each the same suggestion once; a long rule is
/// shortened on its button (the card shows the call whole, and the title the label whole).
/// `send`: what a suggestion's button sends when clicked before the page's code runs.
fn always_choice(
    suggestions: &[crate::approval::Suggestion],
    send: impl Fn(usize) -> Option<String>,
) -> Option<AnyView> {
    use crate::approval::{distinct_suggestions, short_label};
    let choices: Vec<(usize, String, String)> = distinct_suggestions(suggestions)
        .into_iter()
        .map(|(index, suggestion)| (index, short_label(&suggestion.label), suggestion.label.clone()))
        .collect();
    match choices.as_slice() {
        [] => None,
        [(index, short, label)] => {
            let send = send(*index);
            Some(view! { <button class="button" data-d=*index title=label.clone() data-send=send>{short.clone()}</button> }.into_any())
        }
        _ => {
            let open = RwSignal::new(false);
            let items = choices
                .into_iter()
                .map(|(index, short, label)| {
                    view! { <button class="button ac-always-item" role="menuitem" data-d=index title=label>{short}</button> }
                })
                .collect_view();
            Some(
                view! {
                    // Esc closes the menu, and only the menu (on the card, Esc denies).
                    <div
                        class="ac-always"
                        on:keydown=move |ev| {
                            if ev.key() == "Escape" && open.get_untracked() {
                                ev.prevent_default();
                                ev.stop_propagation();
                                open.set(false);
                            }
                        }
                    >
                        <button
                            type="button"
                            class="button"
                            aria-haspopup="menu"
                            aria-expanded=move || open.get().to_string()
                            on:click=move |_| open.update(|o| *o = !*o)
                        >
                            "Always allow…"
                        </button>
                        <div class="ac-always-menu" role="menu" aria-label="Always allow" hidden=move || !open.get()>
                            {items}
                        </div>
                    </div>
                }
                .into_any(),
            )
        }
    }
}

/// The card's heading: what the agent wants, in words.
fn title_of(approval: &Approval) -> String {
    match (&approval.shows, approval.tool.as_str()) {
        (Shows::Plan { .. }, _) => "The agent's plan is ready".into(),
        (Shows::Command { .. }, _) => "The agent wants to run a command".into(),
        (Shows::File { .. }, "Write") => "The agent wants to write a file".into(),
        (Shows::File { .. }, _) => "The agent wants to edit a file".into(),
        (Shows::Url { .. }, _) => "The agent wants to fetch a web page".into(),
        (_, tool) => format!("The agent wants to use {tool}"),
    }
}

fn outcome_status(outcome: &InteractionOutcome, plan: bool) -> &'static str {
    match outcome {
        InteractionOutcome::Allowed { .. } if plan => "Approved",
        InteractionOutcome::Allowed { always: Some(_) } => "Always allowed",
        InteractionOutcome::Allowed { always: None } => "Allowed once",
        InteractionOutcome::Denied { .. } if plan => "Kept planning",
        InteractionOutcome::Denied { .. } => "Denied",
        InteractionOutcome::Expired => "Expired",
        _ => "Cancelled",
    }
}

/// The decision in a sentence, for a card that is no longer open.
fn outcome_text(outcome: &InteractionOutcome, suggestions: &[String], plan: bool) -> Option<String> {
    Some(match outcome {
        InteractionOutcome::Allowed { always: Some(index) } => {
            format!("You chose: {}.", suggestions.get(*index).map_or("always allow", String::as_str))
        }
        InteractionOutcome::Allowed { always: None } => return None,
        InteractionOutcome::Denied { message } => {
            let what = if plan { "You asked the agent to keep planning." } else { "You denied this." };
            match message {
                Some(message) => format!("{what} Your message: “{message}”"),
                None => what.to_string(),
            }
        }
        InteractionOutcome::Expired => "Not decided in time: the agent was told it was not allowed.".into(),
        InteractionOutcome::Cancelled { reason } => {
            format!("Cancelled: {reason}. The agent no longer waits for a decision.")
        }
        other => format!("Closed: {}.", other.why_closed()),
    })
}

/// What the call will do, laid out once.
fn shows_view(shows: Shows) -> AnyView {
    match shows {
        Shows::Command { command } => view! { <pre class="ac-command"><code>{command}</code></pre> }.into_any(),
        Shows::File { path, diff, more } => {
            let lines = diff
                .into_iter()
                .map(|line| {
                    let text = format!("{} {}\n", line.sign, line.text);
                    view! { <span class="ac-line" data-sign=line.sign.to_string()>{text}</span> }
                })
                .collect_view();
            view! {
                <p class="ac-path"><code>{path}</code></p>
                <pre class="ac-diff" aria-label="The change">{lines}</pre>
                {(more > 0).then(|| view! { <p class="ac-more">{format!("… and {more} more lines")}</p> })}
            }
            .into_any()
        }
        Shows::Url { url, prompt } => {
            // Only web addresses become links (never `javascript:` and the like).
            let web = url.starts_with("https://") || url.starts_with("http://");
            let href = url.clone();
            view! {
                <p class="ac-path">
                    {if web {
                        view! { <a href=href target="_blank" rel="noopener noreferrer nofollow">{url}</a> }.into_any()
                    } else {
                        view! { <code>{url}</code> }.into_any()
                    }}
                </p>
                {prompt.map(|prompt| view! { <p class="ac-desc">{prompt}</p> })}
            }
            .into_any()
        }
        Shows::Plan { markdown: text } => {
            view! { <div class="ac-plan">{markdown(Signal::stored(text))}</div> }.into_any()
        }
        Shows::Json { pretty } => view! { <pre class="tool-pre">{pretty}</pre> }.into_any(),
    }
}
