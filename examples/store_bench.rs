//! What durability costs per stored event: the same turn appended to a SQLite store with
//! `synchronous=FULL` (what the server uses: a commit is on disk before it is acknowledged) and
//! with `NORMAL` (which could lose the last commits on power loss), one event after another as a
//! turn writes them. Part of `make bench`; BENCHMARKS.md, "Store durability", has the figures.
//!
//! ```sh
//! cargo run --release --no-default-features --features ssr --example store_bench [TURNS]
//! ```

use std::time::{Duration, Instant};

use askbridge::store::{Append, Store};
use askbridge::thread::{EventBody, SessionEvent, SessionSummary, Thread, TurnOutcome};

/// One turn as the Messages API agent writes it: a message, 400 streamed pieces of text, five
/// tool calls with their results, the end.
fn a_turn(n: usize) -> Vec<EventBody> {
    let message = format!("a{n}");
    let mut turn = vec![
        EventBody::UserMessage {
            message_id: format!("u{n}"),
            text: "Refactor the parser, please.".into(),
            attachments: Vec::new(),
        },
        EventBody::TurnStarted,
        EventBody::AssistantMessageStarted { message_id: message.clone() },
    ];
    for piece in 0..400 {
        turn.push(EventBody::TextDelta { message_id: message.clone(), text: format!("word{piece} and ") });
    }
    for call in 0..5 {
        let id = format!("t{n}-{call}");
        turn.push(EventBody::ToolCallStarted {
            message_id: message.clone(),
            tool_use_id: id.clone(),
            name: "Bash".into(),
        });
        turn.push(EventBody::ToolCallReady {
            tool_use_id: id.clone(),
            input: serde_json::json!({"command": "cargo test"}),
        });
        turn.push(EventBody::ToolResult {
            tool_use_id: id,
            output: "test result: ok. 42 passed".into(),
            is_error: false,
        });
    }
    turn.push(EventBody::MessageFinished { message_id: message });
    turn.push(EventBody::TurnEnded { outcome: TurnOutcome::Completed, usage: None });
    turn
}

struct Figures {
    events: usize,
    total: Duration,
    each: Vec<Duration>,
}

async fn run(store: Store, turns: usize) -> Figures {
    let summary = SessionSummary {
        id: "bench".into(),
        title: "bench".into(),
        agent: "bench".into(),
        created_at_ms: 1,
        updated_at_ms: 1,
        active_at_ms: 1,
        working: false,
        waiting: false,
        workdir: None,
        terminal: None,
        matched: None,
    };
    store.create_session(&summary).await.expect("session");
    let mut thread = Thread::default();
    let mut each = Vec::new();
    let start = Instant::now();
    for n in 0..turns {
        for body in a_turn(n) {
            let event = SessionEvent { seq: thread.seq + 1, at_ms: 1, body };
            let change = thread.apply(&event);
            let one = Instant::now();
            store.append(Append::of("bench", &event, &thread, &change)).await.expect("append");
            each.push(one.elapsed());
        }
    }
    Figures { events: each.len(), total: start.elapsed(), each }
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q) as usize]
}

#[tokio::main]
async fn main() {
    let turns: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut lines = Vec::new();
    let mut means = Vec::new();
    for (name, full) in [("synchronous=FULL (the server's)", true), ("synchronous=NORMAL", false)] {
        let path = dir.path().join(format!("{full}.db"));
        let store = if full { Store::open(&path).await } else { Store::open_less_durable(&path).await }.expect("store");
        let mut figures = run(store, turns).await;
        figures.each.sort();
        let mean = figures.total / figures.events as u32;
        means.push(mean);
        lines.push(format!(
            "{name:<32} {} events: {:>8.1} µs each (mean), p50 {:>7.1} µs, p99 {:>8.1} µs",
            figures.events,
            mean.as_secs_f64() * 1e6,
            quantile(&figures.each, 0.5).as_secs_f64() * 1e6,
            quantile(&figures.each, 0.99).as_secs_f64() * 1e6,
        ));
    }
    for line in &lines {
        println!("{line}");
    }
    println!("FULL costs {:.2}× NORMAL per event", means[0].as_secs_f64() / means[1].as_secs_f64());
    println!(
        "{}",
        serde_json::json!({"full_us": means[0].as_secs_f64() * 1e6, "normal_us": means[1].as_secs_f64() * 1e6})
    );
}
