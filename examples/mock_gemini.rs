//! The mock Gemini API (`tests/support/mock_gemini.rs`) as a program, for Playwright:
//!
//! ```sh
//! mock_gemini SCRIPT.json
//! ```
//!
//! The script is a list of the model's replies, one per streamed request: a string is a text, an
//! object `{"call": NAME, "args": {...}}` a function call. It prints one line, `mock-gemini
//! listening on http://127.0.0.1:PORT`, and serves until it is killed; `GET /_requests` returns
//! what was sent.

#[path = "../tests/support/mock_gemini.rs"]
#[allow(dead_code)]
mod mock_gemini;

#[path = "../tests/support/scripted_model.rs"]
#[allow(dead_code)]
mod scripted_model;

#[path = "common/scripted_calls.rs"]
mod scripted_calls;

use std::process::ExitCode;

use mock_gemini::MockGemini;

#[tokio::main]
async fn main() -> ExitCode {
    scripted_calls::run("mock_gemini", MockGemini::start, MockGemini::base_url).await
}
