//! The mock Anthropic Messages API as a program, for Playwright and for trying the Claude Code
//! CLI by hand:
//!
//! ```sh
//! mock_anthropic SCRIPT.json [--port N]
//! ```
//!
//! It prints one line, `mock-anthropic listening on http://127.0.0.1:PORT`, and serves until it
//! is killed. The script format is described at `script_from_json`; `GET /_requests` returns what
//! was sent, `GET /_usage` the tokens each reply said it used; a script `{"replies": [...], "side": "text"}` answers the requests an agent makes
//! beside the conversation (titles, suggestions) with the text. Logs go to stderr (`RUST_LOG=mock_anthropic=debug` adds request headers).

#[path = "../tests/support/mock_anthropic.rs"]
#[allow(dead_code)]
mod mock_anthropic;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use mock_anthropic::{MockAnthropic, script_from_json};

const USAGE: &str = "usage: mock_anthropic SCRIPT.json [--port N]";

fn parse_args() -> Result<(String, u16), String> {
    let mut script = None;
    let mut port = 0;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let port_text = match arg.strip_prefix("--port") {
            Some("") => Some(args.next().ok_or("--port needs a number")?),
            Some(rest) if rest.starts_with('=') => Some(rest[1..].to_owned()),
            _ => None,
        };
        match port_text {
            Some(text) => port = text.parse().map_err(|_| format!("--port {text}: not a port number"))?,
            None if arg == "-h" || arg == "--help" => return Err(String::new()),
            None if arg.starts_with('-') => return Err(format!("unknown flag {arg}")),
            None if script.is_none() => script = Some(arg),
            None => return Err(format!("unexpected argument {arg}")),
        }
    }
    Ok((script.ok_or("the script file is missing")?, port))
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "mock_anthropic=info".into()),
        )
        .init();
    let (script_path, port) = match parse_args() {
        Ok(args) => args,
        Err(error) => {
            if !error.is_empty() {
                eprintln!("mock_anthropic: {error}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let json = std::fs::read_to_string(&script_path)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).map_err(|e| e.to_string()));
    // `{"replies": [...], "side": "text"}`: requests beside the conversation get the text
    // (`MockAnthropic::answer_side_requests`).
    let side = json.as_ref().ok().and_then(|json| json.get("side")).and_then(|side| side.as_str()).map(str::to_owned);
    let script = match json.and_then(|json| script_from_json(&json)) {
        Ok(script) => script,
        Err(error) => {
            eprintln!("mock_anthropic: {script_path}: {error}");
            return ExitCode::FAILURE;
        }
    };
    let replies = script.len();
    let mock = match MockAnthropic::start_on(port, script).await {
        Ok(mock) => mock,
        Err(error) => {
            eprintln!("mock_anthropic: cannot listen on 127.0.0.1:{port}: {error}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(side) = &side {
        mock.answer_side_requests(side);
    }
    println!("mock-anthropic listening on {}", mock.base_url());
    let _ = std::io::stdout().flush();
    tracing::info!(target: "mock_anthropic", replies, script = %script_path, "serving");
    let _ = tokio::signal::ctrl_c().await;
    ExitCode::SUCCESS
}
