//! The approval card: the agent asks permission to run a tool (or, with `ExitPlanMode`, to start
//! on its plan), and the person allows it once, always (by one of the rules the agent suggests),
//! or denies it with a message for the agent.
//!
//! What the call will do is worded on the server (`approval::Shows`); the card lays it out once,
//! and only its state changes afterwards. Keys: `y` or Enter allows once, `n` or Esc denies
//! (with the message, if one is typed; Enter in the message box denies too).

use leptos::html;
use leptos::prelude::*;
use leptos::task::spawn_local;

use super::markdown::markdown;
use crate::api::decide_approval;
use crate::approval::{Approval, Decision, Shows};
use crate::error::AppError;
use crate::interaction::{InteractionOutcome, InteractionRequest};
use crate::thread::ToolCall;

/// Where the card is in its life; `Sending` and `Unsent` exist only in this tab.
#[derive(Debug, Clone, PartialEq)]
enum Phase {
    Pending,
    Sending,
    Unsent(String),
    Done(InteractionOutcome),
}

#[component]
pub fn ApprovalCard(#[prop(into)] call: Signal<ToolCall>) -> impl IntoView {
    let thread = expect_context::<super::state::ThreadState>();
    let approval = call.with_untracked(|c| match c.interaction.as_ref().map(|i| &i.request) {
        Some(InteractionRequest::Approval(approval)) => approval.clone(),
        _ => Approval {
            tool: c.name.clone(),
            input: serde_json::Value::Null,
            description: None,
            reason: None,
            blocked_path: None,
            suggestions: Vec::new(),
            asked_by: None,
            shows: Shows::Json { pretty: String::new() },
        },
    });
    let local = RwSignal::new(None::<Phase>);
    let phase = Memo::new(move |_| match call.with(|c| c.interaction.as_ref().and_then(|i| i.outcome.clone())) {
        Some(outcome) => Phase::Done(outcome),
        None => local.get().unwrap_or(Phase::Pending),
    });
    let message = RwSignal::new(String::new());
    let root = NodeRef::<html::Section>::new();
    let input = NodeRef::<html::Input>::new();
    let session = thread.session_id;
    let tool_use_id = StoredValue::new(call.with_untracked(|c| c.id.clone()));
    let suggestions = StoredValue::new(approval.suggestions.iter().map(|s| s.label.clone()).collect::<Vec<_>>());
    let plan = approval.is_plan();
    // The message typed for the agent survives a reload, until the decision is stored.
    #[cfg(feature = "hydrate")]
    {
        let key = format!("askbridge:deny:{}:{}", session.get_value(), tool_use_id.get_value());
        let storage = super::question_card::local_storage;
        let restore_key = key.clone();
        Effect::new(move |_| {
            if let (Some(el), Some(saved)) =
                (input.get(), storage().and_then(|s| s.get_item(&restore_key).ok().flatten()))
            {
                el.set_value(&saved);
                message.set(saved);
            }
        });
        Effect::new(move |ran: Option<()>| {
            let text = message.get();
            let done = matches!(phase.get(), Phase::Done(_));
            // The first run leaves what is saved alone: the restore above reads it.
            let Some(storage) = storage().filter(|_| ran.is_some() || done) else { return };
            let _ = if done || text.is_empty() { storage.remove_item(&key) } else { storage.set_item(&key, &text) };
        });
    }

    let open = move || matches!(phase.get(), Phase::Pending | Phase::Unsent(_));
    let decide = move |decision: Decision| {
        if !phase.with_untracked(|p| matches!(p, Phase::Pending | Phase::Unsent(_))) {
            return;
        }
        local.set(Some(Phase::Sending));
        spawn_local(async move {
            match decide_approval(session.get_value(), tool_use_id.get_value(), decision).await {
                Ok(()) => {}
                // Another tab or the timeout decided first: the card shows that outcome.
                Err(AppError::AlreadyAnswered | AppError::NotWaiting { .. }) => local.set(None),
                Err(error) => local.set(Some(Phase::Unsent(error.to_string()))),
            }
        });
    };
    let deny = move || {
        let text = message.get_untracked().trim().to_string();
        decide(Decision::Deny { message: (!text.is_empty()).then_some(text) });
    };
    let on_click = move |event: leptos::ev::MouseEvent| {
        let Some(choice) = event
            .target()
            .and_then(|t| wasm_bindgen::JsCast::dyn_into::<leptos::web_sys::Element>(t).ok())
            .and_then(|el| el.closest("[data-d]").ok().flatten())
            .and_then(|el| el.get_attribute("data-d"))
        else {
            return;
        };
        match choice.as_str() {
            "allow" => decide(Decision::Allow { always: None }),
            "deny" => deny(),
            index => decide(Decision::Allow { always: index.parse().ok() }),
        }
    };
    let on_key = move |event: leptos::ev::KeyboardEvent| {
        if event.ctrl_key() || event.meta_key() || event.alt_key() {
            return;
        }
        let target = event.target().and_then(|t| wasm_bindgen::JsCast::dyn_into::<leptos::web_sys::Element>(t).ok());
        let in_message = target.as_ref().is_some_and(|el| el.tag_name() == "INPUT");
        let on_button = target.as_ref().is_some_and(|el| el.tag_name() == "BUTTON");
        match event.key().as_str() {
            "Escape" => deny(),
            "Enter" if in_message => deny(),
            // A focused button takes Enter itself.
            "Enter" if !on_button => decide(Decision::Allow { always: None }),
            "y" | "Y" if !in_message => decide(Decision::Allow { always: None }),
            "n" | "N" if !in_message => deny(),
            _ => return,
        }
        event.prevent_default();
    };
    // A pending card takes the focus when it appears, so that its keys work at once.
    #[cfg(feature = "hydrate")]
    Effect::new(move |was_open: Option<bool>| {
        let now = phase.with(|p| *p == Phase::Pending);
        if now && was_open != Some(true) {
            request_animation_frame(move || {
                if let Some(root) = root.get_untracked() {
                    let _ = root.focus();
                }
            });
        }
        now
    });

    let title = title_of(&approval);
    let label = title.clone();
    let status = move || match phase.get() {
        Phase::Pending => "Waiting for your decision".to_string(),
        Phase::Sending => "Sending…".to_string(),
        Phase::Unsent(_) => "Not sent".to_string(),
        Phase::Done(outcome) => outcome_status(&outcome, plan).to_string(),
    };
    let state = move || match phase.get() {
        Phase::Pending => "pending",
        Phase::Sending => "submitting",
        Phase::Unsent(_) => "error",
        Phase::Done(InteractionOutcome::Allowed { .. }) => "allowed",
        Phase::Done(InteractionOutcome::Denied { .. }) => "denied",
        Phase::Done(InteractionOutcome::Expired) => "expired",
        Phase::Done(_) => "cancelled",
    };
    let outcome = move || match phase.get() {
        Phase::Done(outcome) => suggestions.with_value(|labels| outcome_text(&outcome, labels, plan)),
        _ => None,
    };
    let unsent = move || match phase.get() {
        Phase::Unsent(message) => Some(message),
        _ => None,
    };
    let suggestion_buttons = approval
        .suggestions
        .iter()
        .enumerate()
        .map(|(index, suggestion)| view! { <button class="button" data-d=index>{suggestion.label.clone()}</button> })
        .collect_view();
    let Approval { description, reason, blocked_path, shows, .. } = approval;

    view! {
        <section
            class="approval-card"
            data-state=state
            role="group"
            aria-label=label
            tabindex="-1"
            node_ref=root
            on:keydown=on_key
            on:click=on_click
        >
            <header class="qc-head">
                <span class="qc-mark" aria-hidden="true">{if plan { "✓" } else { "!" }}</span>
                <span class="qc-title">{title}</span>
                <span class="qc-status" role="status">{status}</span>
            </header>
            <div class="ac-body" hidden=move || !plan && !open()>
                {description.map(|text| view! { <p class="ac-desc">{text}</p> })}
                {shows_view(shows)}
                {reason.map(|text| view! { <p class="ac-reason">"Why it asks: " {text}</p> })}
                {blocked_path.map(|path| view! { <p class="ac-reason">"Path: " <code>{path}</code></p> })}
            </div>
            <p class="qc-outcome" hidden=move || outcome().is_none()>{outcome}</p>
            <div class="qc-problem" role="alert" hidden=move || unsent().is_none()>
                "Your decision was not sent: "
                {unsent}
            </div>
            <fieldset class="ac-actions" hidden=move || !open() && phase.get() != Phase::Sending disabled=move || !open()>
                <button class="button primary" data-d="allow" aria-keyshortcuts="y">
                    {if plan { "Approve plan" } else { "Allow once" }}
                </button>
                {suggestion_buttons}
                <div class="ac-deny">
                    <input
                        node_ref=input
                        type="text"
                        maxlength="4000"
                        aria-label="Message for the agent"
                        placeholder=if plan { "What should change? (optional)" } else { "Tell the agent why, or what to do instead (optional)" }
                        on:input=move |ev| message.set(event_target_value(&ev))
                    />
                    <button class=if plan { "button" } else { "button danger" } data-d="deny" aria-keyshortcuts="n">
                        {if plan { "Keep planning" } else { "Deny" }}
                    </button>
                </div>
            </fieldset>
        </section>
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
