//! How long a big Claude Code transcript takes to open: writes a 20 MB transcript (turns of a
//! prompt, tool calls with results of a few KB, replies, now and then a pasted image) into a
//! temporary projects folder beside SESSIONS other transcripts of about 200 KB in 20 project
//! folders, then times the session list, the newest page, and paging back.
//!
//! ```sh
//! cargo run --release --no-default-features --features ssr --example transcript_bench [MB] [PAGE] [SESSIONS]
//! ```
//!
//! Prints one line per step, `name: N ms`, and the same as JSON on the last line for `make bench`.

use std::io::Write;
use std::time::Instant;

use askbridge::agent::claude::transcripts::ProjectsDir;
use serde_json::json;

const ID: &str = "5e55f00d-0000-4000-8000-000000000020";

fn main() {
    let mut args = std::env::args().skip(1);
    let megabytes: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let page_size: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(50);
    let others: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(300);
    let home = tempfile::tempdir().expect("a temporary folder");
    let folder = home.path().join("projects/-work-project");
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join(format!("{ID}.jsonl"));
    let (turns, bytes) = write_transcript(&path, megabytes * 1024 * 1024);
    for n in 0..others {
        let folder = home.path().join(format!("projects/-work-project-{}", n % 20));
        std::fs::create_dir_all(&folder).unwrap();
        write_transcript(&folder.join(format!("0the0000-0000-4000-8000-{n:012}.jsonl")), 200 * 1024);
    }
    let dir = ProjectsDir::new(home.path().join("projects"));

    let mut figures = Vec::new();
    let mut time = |name: &str, run: &mut dyn FnMut() -> String| {
        let started = Instant::now();
        let detail = run();
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        println!("{name}: {ms:.1} ms ({detail})");
        figures.push((name.to_string(), ms));
    };
    time("list", &mut || format!("{} session(s)", dir.list().iter().map(|g| g.sessions.len()).sum::<usize>()));
    let mut older = None;
    time("newest_page", &mut || {
        let page = dir.page(ID, None, page_size).expect("the newest page");
        older = page.older;
        format!("{} messages", page.messages.len())
    });
    time("previous_page", &mut || {
        let page = dir.page(ID, older.as_ref(), page_size).expect("the page before");
        format!("{} messages", page.messages.len())
    });
    time("whole_transcript_paged", &mut || {
        let (mut before, mut pages, mut messages) = (None, 0, 0);
        loop {
            let page = dir.page(ID, before.as_ref(), page_size).expect("a page");
            pages += 1;
            messages += page.messages.len();
            match page.older {
                Some(cursor) => before = Some(cursor),
                None => break,
            }
        }
        format!("{pages} pages, {messages} messages")
    });
    let fields: Vec<String> = figures.iter().map(|(name, ms)| format!("\"{name}_ms\": {ms:.1}")).collect();
    println!(
        "{{\"transcript_bytes\": {bytes}, \"turns\": {turns}, \"page\": {page_size}, \"sessions\": {}, {}}}",
        others + 1,
        fields.join(", ")
    );
}

/// Writes turns until the file holds `target` bytes; returns the turns and bytes written.
fn write_transcript(path: &std::path::Path, target: u64) -> (usize, u64) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let output = "drwxr-xr-x  2 user user 4096 Nov 26 10:00 src\n".repeat(60);
    let image = "iVBORw0KGgo".repeat(40_000);
    let (mut written, mut turn) = (0u64, 0usize);
    let line = |out: &mut std::io::BufWriter<std::fs::File>, value: serde_json::Value| {
        let text = value.to_string();
        writeln!(out, "{text}").unwrap();
        text.len() as u64 + 1
    };
    let common = |uuid: String| {
        json!({"uuid": uuid, "sessionId": ID, "cwd": "/work/project", "isSidechain": false, "userType": "external",
               "version": "2.1.332", "gitBranch": "main", "timestamp": "2026-11-26T10:00:00.000Z"})
    };
    let with = |mut base: serde_json::Value, extra: serde_json::Value| {
        base.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        base
    };
    while written < target {
        let content = if turn % 25 == 7 {
            json!([{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": image}},
                   {"type": "text", "text": format!("What is wrong in this screenshot? ({turn})")}])
        } else {
            json!(format!("Please look at the build output and fix step {turn}."))
        };
        written += line(
            &mut out,
            with(common(format!("p{turn}")), json!({"type": "user", "message": {"role": "user", "content": content}})),
        );
        for step in 0..4 {
            let id = format!("toolu_{turn}_{step}");
            let message = json!({"id": format!("msg_{turn}_{step}"), "role": "assistant", "model": "claude-sonnet",
                "content": [{"type": "tool_use", "id": id, "name": "Bash", "input": {"command": format!("ls -la src/{step}")}}]});
            written += line(
                &mut out,
                with(common(format!("a{turn}_{step}")), json!({"type": "assistant", "message": message})),
            );
            let result =
                json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": output}]});
            written += line(
                &mut out,
                with(
                    common(format!("r{turn}_{step}")),
                    json!({"type": "user", "message": result,
                "toolUseResult": {"stdout": output, "stderr": "", "interrupted": false}}),
                ),
            );
        }
        let reply = json!({"id": format!("msg_{turn}_end"), "role": "assistant",
            "content": [{"type": "text", "text": format!("Step {turn} is fixed: the build passes again. {}", "Details follow. ".repeat(20))}]});
        written += line(&mut out, with(common(format!("b{turn}")), json!({"type": "assistant", "message": reply})));
        turn += 1;
    }
    out.flush().unwrap();
    (turn, written)
}
