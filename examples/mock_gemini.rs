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

use std::io::Write;
use std::process::ExitCode;

use mock_gemini::{GeminiReply, MockGemini};
use serde_json::Value;

fn script(json: &Value) -> Result<Vec<GeminiReply>, String> {
    let replies = json.as_array().ok_or("the script is a list of replies")?;
    replies
        .iter()
        .map(|reply| match reply {
            Value::String(text) => Ok(GeminiReply::Text(text.clone())),
            Value::Object(call) => {
                let name = call.get("call").and_then(Value::as_str).ok_or("a call names its function: \"call\"")?;
                Ok(GeminiReply::Call(name.to_string(), call.get("args").cloned().unwrap_or_default()))
            }
            other => Err(format!("not a reply: {other}")),
        })
        .collect()
}

#[tokio::main]
async fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: mock_gemini SCRIPT.json");
        return ExitCode::from(2);
    };
    let read = std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str::<Value>(&text).map_err(|e| e.to_string()))
        .and_then(|json| script(&json));
    let replies = match read {
        Ok(replies) => replies,
        Err(error) => {
            eprintln!("mock_gemini: {path}: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mock = MockGemini::start(replies).await;
    println!("mock-gemini listening on {}", mock.base_url());
    let _ = std::io::stdout().flush();
    let _ = tokio::signal::ctrl_c().await;
    ExitCode::SUCCESS
}
