//! The thread: messages as they stream in, each block rendered by what it is.

use leptos::html;
use leptos::prelude::*;

use super::approval_card::ApprovalCard;
use super::attachments::{attached_file, attached_image};
use super::markdown::markdown;
use super::question_card::QuestionCard;
use super::state::ThreadState;
use super::tool_card::ToolCard;
use super::usage::{context_line, turn_line};
use crate::interaction::InteractionRequest;
use crate::question::is_question_tool;
use crate::thread::{Block, Message, Role, ToolCall, TurnOutcome};

#[component]
pub fn ThreadView(thread: ThreadState) -> impl IntoView {
    let scroller = NodeRef::<html::Div>::new();
    follow_newest(scroller, thread.following);
    provide_context(thread);
    let empty = move || thread.messages.with(Vec::is_empty);
    view! {
        <div class="thread" node_ref=scroller>
            <div class="thread-inner" role="log" aria-label="Conversation" aria-live="off">
                <p class="thread-empty" hidden=move || !empty()>"Send a message to start."</p>
                <For each=move || thread.messages.get() key=|entry| entry.id.clone() let:entry>
                    <MessageView message=entry.message.into() />
                </For>
                {turn_footer(thread)}
                {super::queued::queued_messages(thread, scroller)}
            </div>
        </div>
    }
}

/// Keeps the newest message in view while the person is at the bottom; leaves them alone once
/// they scroll up to read.
///
/// It follows the size of the thread's content, not its events: a `ResizeObserver` is told once a
/// frame, after layout, that the content grew (a streamed word, a card that opened, a preview or a
/// text box shown on a card), so it reads `scrollHeight` from the frame's own layout. Reading it
/// as each event was applied made the browser lay the page out there and then (about 4 ms a time
/// on the bench's machine, on the path from an event to a card the person can click); following
/// events missed what grew without one (a card's preview left the thread 37 px above its end).
#[allow(unused_variables)]
fn follow_newest(scroller: NodeRef<html::Div>, pinned: StoredValue<bool>) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        use wasm_bindgen::closure::Closure;

        Effect::new(move |_| {
            let Some(el) = scroller.get() else { return };
            el.set_scroll_top(el.scroll_height());
            let on_scroll = Closure::<dyn Fn()>::new(move || {
                if let Some(el) = scroller.try_get_untracked().flatten() {
                    let from_bottom = el.scroll_height() - el.scroll_top() - el.client_height();
                    pinned.try_set_value(from_bottom < 80);
                }
            });
            let _ = el.add_event_listener_with_callback("scroll", on_scroll.as_ref().unchecked_ref());
            on_scroll.forget();
            // The pane may be gone when the observer speaks last (its content detached).
            let on_resize = Closure::<dyn Fn()>::new(move || {
                if pinned.try_get_value() == Some(true)
                    && let Some(el) = scroller.try_get_untracked().flatten()
                {
                    el.set_scroll_top(el.scroll_height());
                }
            });
            // The content, as it grows; and the thread itself, as the message box below it grows
            // or shrinks (its hint's lines, the text being written): the end stays in view.
            if let (Some(content), Ok(observer)) =
                (el.first_element_child(), web_sys::ResizeObserver::new(on_resize.as_ref().unchecked_ref()))
            {
                observer.observe(&content);
                observer.observe(&el);
            }
            on_resize.forget();
        });
    }
}

#[component]
fn MessageView(message: Signal<Message>) -> impl IntoView {
    let role = message.with_untracked(|m| m.role);
    let (role_name, label) = match role {
        Role::User => ("user", "You"),
        Role::Assistant => ("assistant", "Agent"),
        Role::Notice => ("notice", "Notice"),
    };
    let block_count = move || message.with(|m| m.blocks.len());
    view! {
        <article class="message" data-role=role_name class:streaming=move || message.with(|m| m.streaming) aria-label=label>
            <For each=move || 0..block_count() key=|index| *index let:index>
                <BlockView message index role />
            </For>
            {move || message.with(|m| m.usage.clone()).map(|usage| {
                let context = context_line(&usage).map(|c| format!(" · context {c}"));
                view! { <p class="turn-usage" title="What this turn used">{turn_line(&usage)}{context}</p> }
            })}
        </article>
    }
}

/// A block keeps its kind for life, so the branch is taken once and its content updates in place
/// (an open tool card stays open while its result arrives).
#[component]
fn BlockView(message: Signal<Message>, index: usize, role: Role) -> impl IntoView {
    let attached = message.with_untracked(|m| match m.blocks.get(index) {
        Some(Block::Image(image)) => Some(attached_image(image).into_any()),
        Some(Block::File(file)) => Some(attached_file(file).into_any()),
        _ => None,
    });
    if let Some(attached) = attached {
        return attached;
    }
    let is_text = message.with_untracked(|m| matches!(m.blocks.get(index), Some(Block::Text { .. })));
    if is_text {
        let text = Memo::new(move |_| {
            message.with(|m| match m.blocks.get(index) {
                Some(Block::Text { text }) => text.clone(),
                _ => String::new(),
            })
        });
        return match role {
            Role::Assistant => markdown(text.into()).into_any(),
            // What people type is shown as they typed it; notices are plain text too.
            Role::User | Role::Notice => view! { <p class="plain-text">{text}</p> }.into_any(),
        };
    }
    let call = Memo::new(move |_| {
        message.with(|m| match m.blocks.get(index) {
            Some(Block::ToolCall(call)) => Some(call.clone()),
            _ => None,
        })
    });
    let is_question = call.with_untracked(|c| c.as_ref().is_some_and(|c| is_question_tool(&c.name)));
    let call = Signal::derive(move || call.get().unwrap_or_else(placeholder_call));
    if is_question {
        return view! { <QuestionCard call /> }.into_any();
    }
    // A permission request arrives after its tool call: its card appears above the tool's.
    let asks = Memo::new(move |_| {
        call.with(|c| c.interaction.as_ref().is_some_and(|i| matches!(i.request, InteractionRequest::Approval(_))))
    });
    view! {
        {move || asks.get().then(|| view! { <ApprovalCard call /> })}
        <ToolCard call />
    }
    .into_any()
}

fn placeholder_call() -> ToolCall {
    ToolCall {
        id: String::new(),
        name: String::new(),
        input: None,
        partial_input: String::new(),
        preview: Vec::new(),
        status: crate::thread::ToolStatus::Cancelled,
        result: None,
        interaction: None,
    }
}

/// Under the last message: the agent is working, or how its turn ended when that is news.
fn turn_footer(thread: ThreadState) -> impl IntoView {
    let state = move || {
        thread.turn.with(|turn| match &turn.last_outcome {
            // In the words of the header and the session list.
            _ if turn.working && thread.waiting.get() => ("waiting", "Waiting for you: answer above".to_string()),
            _ if turn.working => ("working", "Working…".to_string()),
            _ if thread.waiting.get() => ("paused", "Paused until you answer above".to_string()),
            Some(TurnOutcome::Interrupted) if !turn.queue.is_empty() => {
                ("stopped", "Stopped. What you queued waits below: Send now, or write on.".to_string())
            }
            Some(TurnOutcome::Interrupted) => ("stopped", "Stopped. Send a message to go on.".to_string()),
            Some(TurnOutcome::Failed { error }) => ("failed", format!("The agent failed: {error}")),
            _ => ("", String::new()),
        })
    };
    view! {
        <div class="turn-footer" data-state=move || state().0 role="status" hidden=move || state().0.is_empty()>
            <span class="typing" aria-hidden="true"><i></i><i></i><i></i></span>
            {move || state().1}
        </div>
    }
}
