//! The mock Responses API (`tests/support/mock_openai.rs`) as a program, for Playwright: what
//! Codex's adapter and OpenCode call.
//!
//! ```sh
//! mock_openai SCRIPT.json
//! ```
//!
//! The script is a list of the model's replies, one per request: a string is a text, an object
//! `{"call": NAME, "args": {...}}` a function call. It prints one line, `mock-openai listening on
//! http://127.0.0.1:PORT/v1`, and serves until it is killed; `GET /_requests` returns what was
//! sent.

#[path = "../tests/support/mock_openai.rs"]
#[allow(dead_code)]
mod mock_openai;

#[path = "../tests/support/scripted_model.rs"]
#[allow(dead_code)]
mod scripted_model;

#[path = "common/scripted_calls.rs"]
mod scripted_calls;

use std::process::ExitCode;

use mock_openai::MockOpenAi;

#[tokio::main]
async fn main() -> ExitCode {
    scripted_calls::run("mock_openai", MockOpenAi::start, MockOpenAi::base_url).await
}
