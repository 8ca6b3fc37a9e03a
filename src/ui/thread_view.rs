//! The thread: messages as they stream in, each block rendered by what it is.

use leptos::html;
use leptos::prelude::*;

use super::approval_card::ApprovalCard;
use super::markdown::markdown;
use super::question_card::QuestionCard;
use super::state::ThreadState;
use super::tool_card::ToolCard;
use crate::interaction::InteractionRequest;
use crate::question::is_question_tool;
use crate::thread::{Block, Message, Role, ToolCall, TurnOutcome};

#[component]
pub fn ThreadView(thread: ThreadState) -> impl IntoView {
    let scroller = NodeRef::<html::Div>::new();
    follow_newest(scroller, thread);
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
            </div>
        </div>
    }
}

/// Keeps the newest message in view while the person is at the bottom; leaves them alone once
/// they scroll up to read.
///
/// The scroll waits for the next frame, once per frame however many events arrived: reading
/// `scrollHeight` as each event is applied made the browser lay the page out there and then, and
/// again for the frame (about 4 ms a time on the bench's machine, on the path from an event to a
/// card the person can click). In a frame callback the layout it asks for is the frame's own.
#[allow(unused_variables)]
fn follow_newest(scroller: NodeRef<html::Div>, thread: ThreadState) {
    #[cfg(feature = "hydrate")]
    {
        let pinned = StoredValue::new(true);
        let scheduled = StoredValue::new(false);
        let on_scroll = move || {
            if let Some(el) = scroller.get_untracked() {
                let from_bottom = el.scroll_height() - el.scroll_top() - el.client_height();
                pinned.set_value(from_bottom < 80);
            }
        };
        Effect::new(move |_| {
            if let Some(el) = scroller.get() {
                el.set_scroll_top(el.scroll_height());
                let handler = wasm_bindgen::closure::Closure::<dyn Fn()>::new(on_scroll);
                let _ = el
                    .add_event_listener_with_callback("scroll", wasm_bindgen::JsCast::unchecked_ref(handler.as_ref()));
                handler.forget();
            }
        });
        Effect::new(move |_| {
            thread.version.track();
            if scheduled.get_value() {
                return;
            }
            scheduled.set_value(true);
            request_animation_frame(move || {
                // The pane may be gone by the next frame.
                if scheduled.try_set_value(false).is_some() {
                    return;
                }
                if pinned.get_value()
                    && let Some(el) = scroller.get_untracked()
                {
                    el.set_scroll_top(el.scroll_height());
                }
            });
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
        </article>
    }
}

/// A block keeps its kind for life, so the branch is taken once and its content updates in place
/// (an open tool card stays open while its result arrives).
#[component]
fn BlockView(message: Signal<Message>, index: usize, role: Role) -> impl IntoView {
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
            _ if turn.working && thread.waiting.get() => ("waiting", "Waiting for your answer…".to_string()),
            _ if turn.working => ("working", "Agent is working…".to_string()),
            _ if thread.waiting.get() => ("waiting", "The agent is paused until you answer above.".to_string()),
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
