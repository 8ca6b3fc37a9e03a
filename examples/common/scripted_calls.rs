//! What the mocks of the Gemini API and of the Responses API share as programs, for Playwright:
//! the script of the model's replies, read from the file the command line names (a string is a
//! text, an object `{"call": NAME, "args": {...}}` a function call), and serving until killed.

use std::io::Write;
use std::process::ExitCode;

use serde_json::Value;

use crate::scripted_model::ModelReply;

fn parse(json: &Value) -> Result<Vec<ModelReply>, String> {
    let replies = json.as_array().ok_or("the script is a list of replies")?;
    replies
        .iter()
        .map(|reply| match reply {
            Value::String(text) => Ok(ModelReply::Text(text.clone())),
            Value::Object(call) => {
                let name = call.get("call").and_then(Value::as_str).ok_or("a call names its function: \"call\"")?;
                Ok(ModelReply::Call(name.to_string(), call.get("args").cloned().unwrap_or_default()))
            }
            other => Err(format!("not a reply: {other}")),
        })
        .collect()
}

/// The script of the file named first on the command line; what to exit with when it cannot be
/// read (said on stderr, as `program` says it).
fn read(program: &str) -> Result<Vec<ModelReply>, ExitCode> {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: {program} SCRIPT.json");
        return Err(ExitCode::from(2));
    };
    std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str::<Value>(&text).map_err(|e| e.to_string()))
        .and_then(|json| parse(&json))
        .map_err(|error| {
            eprintln!("{program}: {path}: {error}");
            ExitCode::FAILURE
        })
}

/// The program: the script of the file named on the command line, given to `start`, and the
/// line Playwright waits for, `<name> listening on <url>` (`name` as `mock-gemini`), once the mock
/// listens at `url`; then it serves until killed.
pub async fn run<M, F>(program: &str, start: impl FnOnce(Vec<ModelReply>) -> F, url: impl Fn(&M) -> String) -> ExitCode
where
    F: std::future::Future<Output = M>,
{
    let replies = match read(program) {
        Ok(replies) => replies,
        Err(code) => return code,
    };
    let mock = start(replies).await;
    println!("{} listening on {}", program.replace('_', "-"), url(&mock));
    let _ = std::io::stdout().flush();
    let _ = tokio::signal::ctrl_c().await;
    ExitCode::SUCCESS
}
