//! The traces of real runs of the CLI (`tests/fixtures/claude-cli`, a copy of
//! `../shared/fixtures/claude-cli`), read for the protocol's tests: both directions are checked
//! against them.

use serde_json::Value;

/// A copy of `../shared/fixtures/claude-cli`, kept in the repository so that CI has it.
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/claude-cli");

/// Every line of every trace, with its direction.
pub(crate) fn trace_lines() -> Vec<(String, String, Value)> {
    let dir = std::path::Path::new(FIXTURES);
    let mut lines = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("the shared fixtures are missing at {FIXTURES}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(files.len() >= 30, "expected the shared traces, found {}", files.len());
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            let record: Value = serde_json::from_str(line).unwrap();
            let direction = record["direction"].as_str().unwrap_or_default().to_string();
            if let Some(msg) = record.get("msg") {
                lines.push((name.clone(), direction, msg.clone()));
            }
        }
    }
    lines
}

/// The CLI's answer to `initialize` in a trace (its commands, models, version, mode).
pub(crate) fn initialize_response(file: &str) -> Value {
    trace_lines()
        .into_iter()
        .find_map(|(f, d, m)| {
            (f == file && d == "from_cli" && m["type"] == "control_response").then(|| m["response"]["response"].clone())
        })
        .unwrap()
}

/// The first `(request, response)` pair of a trace: the CLI's can_use_tool or hook_callback
/// and the host's answer to it.
pub(crate) fn first_exchange(file: &str, subtype: &str) -> (Value, Value) {
    let lines: Vec<_> = trace_lines().into_iter().filter(|(f, _, _)| f == file).collect();
    let (request_id, request) = lines
        .iter()
        .find_map(|(_, d, m)| {
            (d == "from_cli" && m["type"] == "control_request" && m["request"]["subtype"] == subtype)
                .then(|| (m["request_id"].clone(), m["request"].clone()))
        })
        .unwrap();
    let response = lines
        .iter()
        .find_map(|(_, d, m)| {
            (d == "to_cli" && m["type"] == "control_response" && m["response"]["request_id"] == request_id)
                .then(|| m["response"]["response"].clone())
        })
        .unwrap();
    (request, response)
}
