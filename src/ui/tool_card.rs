//! The generic tool card: any tool name, its arguments as they stream, its status and result.
//! Tools with their own card (questions, approvals) are drawn elsewhere; every other tool,
//! including ones nobody has heard of, lands here.

use leptos::prelude::*;

use crate::thread::{ToolCall, ToolStatus, summarize_tool_input};

#[component]
pub fn ToolCard(#[prop(into)] call: Signal<ToolCall>) -> impl IntoView {
    let status = Memo::new(move |_| call.with(|c| c.status));
    // Waiting for the person's permission, before it runs.
    let asking = Memo::new(move |_| call.with(|c| c.interaction.as_ref().is_some_and(|i| i.is_pending())));
    let name = Memo::new(move |_| call.with(|c| c.name.clone()));
    let summary = Memo::new(move |_| {
        call.with(|c| match &c.input {
            Some(input) => summarize_tool_input(&c.name, input),
            None => String::new(),
        })
    });
    let arguments = Memo::new(move |_| {
        call.with(|c| match &c.input {
            Some(input) => serde_json::to_string_pretty(input).unwrap_or_default(),
            None => c.partial_input.clone(),
        })
    });
    // The person said no: the tool never ran, it did not fail.
    let denied = Memo::new(move |_| call.with(|c| c.interaction.as_ref().is_some_and(|i| i.is_denied())));
    let result = Memo::new(move |_| call.with(|c| c.result.clone()));
    // Its state for the styles, and in words.
    let shown = move || match (asking.get(), denied.get()) {
        (true, _) => ("waiting", "waiting"),
        (_, true) => ("denied", "denied"),
        _ => (status_key(status.get()), status_label(status.get())),
    };
    let status_text = move || shown().1;
    let label = move || {
        let summary = summary.get();
        if summary.is_empty() {
            format!("{}, {}", name.get(), status_text())
        } else {
            format!("{}: {}, {}", name.get(), summary, status_text())
        }
    };

    view! {
        <div
            class="tool-card"
            data-status=move || shown().0
            role="group"
            aria-label=label
        >
            <details>
                <summary>
                    <span class="tool-status-icon" aria-hidden="true"></span>
                    <span class="tool-name">{name}</span>
                    <code class="tool-summary">{summary}</code>
                    <span class="tool-state">{status_text}</span>
                </summary>
                <div class="tool-body">
                    <section class="tool-section">
                        <h4>"Arguments"</h4>
                        <pre class="tool-pre">{arguments}</pre>
                    </section>
                    {move || {
                        result
                            .get()
                            .map(|result| {
                                let heading = match (denied.get(), status.get()) {
                                    (true, _) => "Told the agent",
                                    (_, ToolStatus::Failed) => "Error",
                                    _ => "Result",
                                };
                                view! {
                                    <section class="tool-section">
                                        <h4>{heading}</h4>
                                        <pre class="tool-pre tool-result">
                                            {if result.is_empty() { "(no output)".to_string() } else { result }}
                                        </pre>
                                    </section>
                                }
                            })
                    }}
                </div>
            </details>
        </div>
    }
}

fn status_key(status: ToolStatus) -> &'static str {
    match status {
        ToolStatus::Streaming => "streaming",
        ToolStatus::Running => "running",
        ToolStatus::Done => "done",
        ToolStatus::Failed => "failed",
        ToolStatus::Cancelled => "cancelled",
    }
}

fn status_label(status: ToolStatus) -> &'static str {
    match status {
        ToolStatus::Streaming => "preparing",
        ToolStatus::Running => "running",
        ToolStatus::Done => "done",
        ToolStatus::Failed => "failed",
        ToolStatus::Cancelled => "cancelled",
    }
}
