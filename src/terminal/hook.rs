//! `askbridge hook`: the program AskBridge's hooks run in every `claude` on the machine. It reads
//! the hook's JSON on stdin, hands the request to the server named by `askbridge connect`, and for
//! a PermissionRequest waits for the person and prints the reply Claude Code expects.
//!
//! Never in the way (docs/claude-terminal.md): whatever goes wrong — no connection file, no
//! server, a wrong token, a reply it cannot read — it exits 0 with nothing on stdout or stderr,
//! which Claude Code takes as "no decision": the terminal asks as it always did, and nothing is
//! printed into the conversation. Meanwhile the terminal's own prompt stays open (PermissionRequest
//! runs beside it), so the person can answer there instead: the hook sees the call's result in
//! the transcript and tells the server, whose card then says so. Esc in the terminal ends the hook
//! (SIGTERM, then SIGKILL about 1.2 s later): it tells the server first. Before Claude Code's
//! limit for it passes, it lets go by itself.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::connect::{Connection, PERMISSION_TIMEOUT_SECS};
use super::process::claude_of_this_hook;
use super::wire::{HOOK_PATH, HookInput, HookReply, HookRequest, WITHDRAW_PATH, Withdrawal, Withdrawn};

/// Set by AskBridge in the environment of the Claude Code it runs itself: those sessions ask
/// through AskBridge already, and a second card would ask the same thing twice.
pub const OWN_SESSION_ENV: &str = "ASKBRIDGE_SESSION";

/// How long reaching the server may take before the hook gives up, and how long its answer to the
/// hook's first request (`reachable`) may take, connection included: a server on this machine
/// answers in a few milliseconds, and the terminal must not wait for one that is not there. A
/// server that is stopped (SIGSTOP) or hung, or a port that takes connections and never answers,
/// is treated as a server that is down, within the README's 200 ms.
/// `ASKBRIDGE_HOOK_REACH_WITHIN` (e.g. `5s`, in the terminal's environment) allows longer, for a
/// machine so loaded that a live server takes more: the tests of the terminal's UI set it, as on
/// two cores busy compiling a `make test` saw the server's first answer take over 150 ms, and the
/// terminal asked by itself with no card.
const REACH_WITHIN: Duration = Duration::from_millis(150);
const REACH_WITHIN_ENV: &str = "ASKBRIDGE_HOOK_REACH_WITHIN";

/// How long this hook waits for the server's first answer.
fn reach_within() -> Duration {
    std::env::var(REACH_WITHIN_ENV)
        .ok()
        .and_then(|value| humantime::parse_duration(value.trim()).ok())
        .unwrap_or(REACH_WITHIN)
}
/// The hooks that only say what the terminal does get this long in all.
const NOTE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the hook looks for the call in the transcript. The CLI writes the model's message when
/// the message has ended, within half a second of the hook's start as a rule. But a tool starts
/// as soon as its own block has ended, and when the rest of the reply (`message_delta`,
/// `message_stop`) arrives after the hook has started, CLI 2.1.332 writes the message only once
/// the call is decided: seen with the end of the mock's reply held back 4 s (`End::Held`), the
/// call was not in the transcript two minutes later. So the hook looks briefly; not found, the
/// card has an id of its own and works the same (a decision, Esc, an answer in the terminal
/// found in the transcript later). Only the card waits meanwhile, never the terminal's own
/// question. `ASKBRIDGE_HOOK_FIND_CALL_FOR` (e.g. `20s`, in the terminal's environment) sets
/// another wait: the tests of the terminal's UI set it, so that they see the transcript's call
/// whenever the CLI writes it, however loaded the machine.
const FIND_CALL_FOR: Duration = Duration::from_secs(2);
const FIND_CALL_FOR_ENV: &str = "ASKBRIDGE_HOOK_FIND_CALL_FOR";

/// How long this hook looks for the call in the transcript.
fn find_call_for() -> Duration {
    std::env::var(FIND_CALL_FOR_ENV)
        .ok()
        .and_then(|value| humantime::parse_duration(value.trim()).ok())
        .unwrap_or(FIND_CALL_FOR)
}
/// How often the transcript is read while the person decides.
const WATCH_EVERY: Duration = Duration::from_millis(250);
/// How long telling the server "withdrawn" may take: Claude Code kills the hook 1.2 s after its
/// SIGTERM.
const WITHDRAW_TIMEOUT: Duration = Duration::from_millis(700);
/// The hook lets go this long before Claude Code's limit for it.
const BEFORE_THE_LIMIT: Duration = Duration::from_secs(30);
/// The most of a transcript's end that is read to find the call.
const TAIL_BYTES: u64 = 512 * 1024;

/// Runs the hook; the process then exits 0 whatever happened.
pub async fn run() {
    if std::env::var_os(OWN_SESSION_ENV).is_some_and(|v| !v.is_empty()) {
        return;
    }
    let mut stdin = Vec::new();
    if std::io::stdin().read_to_end(&mut stdin).is_err() {
        return;
    }
    let Some(connection) = Connection::load_for_hook() else { return };
    let Ok(input) = serde_json::from_slice::<HookInput>(&stdin) else { return };
    let Some(hook) = Hook::new(connection) else { return };
    if input.hook_event_name == "PermissionRequest" {
        if let Some(stdout) = hook.ask(input).await {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{stdout}");
            let _ = out.flush();
        }
    } else if hook.reachable().await {
        let request = request(input, None);
        let _ = tokio::time::timeout(NOTE_TIMEOUT, hook.post(&request)).await;
    }
}

/// What the hook hands the server: Claude Code's request, this machine, and the `claude` asking.
fn request(input: HookInput, tool_use_id: Option<String>) -> HookRequest {
    HookRequest { input, host: host_name(), tool_use_id, process: claude_of_this_hook() }
}

struct Hook {
    http: reqwest::Client,
    connection: Connection,
}

impl Hook {
    fn new(connection: Connection) -> Option<Self> {
        // reqwest is built with rustls and no crypto provider of its own (the Messages API agent
        // installs one); plain HTTP needs one installed all the same.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut http = reqwest::Client::builder().no_proxy().connect_timeout(reach_within());
        if connection.url.starts_with("http://") {
            // Plain HTTP needs no certificates: loading the system's took about 90 ms of the
            // hook's 200 ms on every run.
            http = http.tls_certs_only([]);
        }
        let http = http.build().ok()?;
        Some(Hook { http, connection })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.connection.url.trim_end_matches('/'))
    }

    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.connection.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    async fn post(&self, request: &HookRequest) -> Option<reqwest::Response> {
        let response = self.authorized(self.http.post(self.url(HOOK_PATH))).json(request).send().await.ok()?;
        response.status().is_success().then_some(response)
    }

    /// The server is there, answers at once, and takes the token. The hook's later requests
    /// reuse the connection.
    async fn reachable(&self) -> bool {
        let ping = self.authorized(self.http.get(self.url("/api/ping"))).timeout(reach_within());
        ping.send().await.is_ok_and(|response| response.status().is_success())
    }

    /// A PermissionRequest: what to print, once the person decided here; `None` when the
    /// terminal is to ask by itself, or the person answered there.
    async fn ask(&self, input: HookInput) -> Option<Value> {
        let started = Instant::now();
        if !self.reachable().await {
            return None;
        }
        let tool = input.tool_name.clone()?;
        let mut transcript = input.transcript_path.as_deref().map(Transcript::open_tail);
        let mut call = input.tool_use_id.clone();
        if call.is_none()
            && let Some(transcript) = transcript.as_mut()
        {
            let give_up = Instant::now() + find_call_for();
            loop {
                transcript.read_new();
                call = transcript.open_call(&tool, input.tool_input.as_ref());
                if call.is_some() || Instant::now() >= give_up {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        let tool_use_id = call.clone().unwrap_or_else(|| format!("terminal-{}", uuid::Uuid::new_v4().simple()));
        let withdrawal = |why| Withdrawal {
            host: host_name(),
            claude_session_id: input.session_id.clone(),
            tool_use_id: tool_use_id.clone(),
            why,
        };
        let request = request(input.clone(), Some(tool_use_id.clone()));
        let limit = Duration::from_secs(PERMISSION_TIMEOUT_SECS).saturating_sub(BEFORE_THE_LIMIT);
        let deadline = tokio::time::Instant::from_std(started + limit);

        let reply = async {
            let response = self.post(&request).await?;
            let bytes = response.bytes().await.ok()?;
            serde_json::from_slice::<HookReply>(&bytes).ok()?.stdout
        };
        tokio::pin!(reply);
        let mut terminate = signal(tokio::signal::unix::SignalKind::terminate());
        let mut hang_up = signal(tokio::signal::unix::SignalKind::hangup());
        let mut watch = tokio::time::interval(WATCH_EVERY);
        loop {
            tokio::select! {
                stdout = &mut reply => {
                    // Closed without a decision here: if the person answered in the terminal, the
                    // server gets the call's result for its thread.
                    if stdout.is_none()
                        && let (Some(transcript), Some(id)) = (transcript.as_mut(), call.as_deref())
                    {
                        transcript.read_new();
                        if let Some((result, is_error)) = transcript.result_of(id) {
                            let why = Withdrawn::AnsweredInTerminal { result: Some(result), is_error };
                            self.withdraw(withdrawal(why)).await;
                        }
                    }
                    return stdout;
                }
                _ = recv(&mut terminate) => {
                    self.withdraw(withdrawal(Withdrawn::TakenBack)).await;
                    return None;
                }
                _ = recv(&mut hang_up) => {
                    self.withdraw(withdrawal(Withdrawn::TakenBack)).await;
                    return None;
                }
                () = tokio::time::sleep_until(deadline) => {
                    self.withdraw(withdrawal(Withdrawn::TimeLimit)).await;
                    return None;
                }
                _ = watch.tick() => {
                    let Some(transcript) = transcript.as_mut() else { continue };
                    transcript.read_new();
                    // Found late (the CLI wrote the call after the hook gave up looking): its
                    // result is watched for all the same.
                    let id = call.clone().or_else(|| transcript.open_call(&tool, input.tool_input.as_ref()));
                    call = id.clone();
                    if let Some((result, is_error)) = id.and_then(|id| transcript.result_of(&id)) {
                        let why = Withdrawn::AnsweredInTerminal { result: Some(result), is_error };
                        self.withdraw(withdrawal(why)).await;
                        return None;
                    }
                }
            }
        }
    }

    async fn withdraw(&self, withdrawal: Withdrawal) {
        let post = self.authorized(self.http.post(self.url(WITHDRAW_PATH))).json(&withdrawal);
        let _ = tokio::time::timeout(WITHDRAW_TIMEOUT, post.send()).await;
    }
}

fn signal(kind: tokio::signal::unix::SignalKind) -> Option<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(kind).ok()
}

async fn recv(signal: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
    match signal {
        Some(signal) => signal.recv().await,
        None => std::future::pending().await,
    }
}

/// This machine's name, for the card ("a terminal on <host>").
pub fn host_name() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: the buffer is valid for its length, and gethostname writes at most that much.
    let done = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
    let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    match std::str::from_utf8(&buffer[..end]) {
        Ok(name) if done == 0 && !name.is_empty() => name.to_string(),
        _ => "this machine".to_string(),
    }
}

/// The end of a transcript, read as it grows: the calls the model made and the results they got.
struct Transcript {
    path: PathBuf,
    offset: u64,
    /// A line the CLI has not finished writing.
    partial: Vec<u8>,
    /// The first line read may start mid-line (the file's end was read, not its start).
    skip_first: bool,
    calls: Vec<(String, String, Value)>,
    results: std::collections::HashMap<String, (String, bool)>,
}

impl Transcript {
    fn open_tail(path: &str) -> Self {
        let path = PathBuf::from(path);
        let length = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let offset = length.saturating_sub(TAIL_BYTES);
        Transcript {
            path,
            offset,
            partial: Vec::new(),
            skip_first: offset > 0,
            calls: Vec::new(),
            results: Default::default(),
        }
    }

    fn read_new(&mut self) {
        let Ok(new) = read_from(&self.path, self.offset) else { return };
        self.offset += new.len() as u64;
        self.partial.extend_from_slice(&new);
        let Some(last_newline) = self.partial.iter().rposition(|&b| b == b'\n') else { return };
        let complete: Vec<u8> = self.partial.drain(..=last_newline).collect();
        for (index, line) in complete.split(|&b| b == b'\n').enumerate() {
            if index == 0 && std::mem::take(&mut self.skip_first) {
                continue;
            }
            if let Ok(entry) = serde_json::from_slice::<Value>(line) {
                self.take(&entry);
            }
        }
    }

    fn take(&mut self, entry: &Value) {
        let Some(blocks) = entry.pointer("/message/content").and_then(Value::as_array) else { return };
        for block in blocks {
            match block["type"].as_str() {
                Some("tool_use") => {
                    let (Some(id), Some(name)) = (block["id"].as_str(), block["name"].as_str()) else { continue };
                    self.calls.push((id.to_string(), name.to_string(), block["input"].clone()));
                }
                Some("tool_result") => {
                    let Some(id) = block["tool_use_id"].as_str() else { continue };
                    let is_error = block["is_error"].as_bool().unwrap_or(false);
                    self.results.insert(id.to_string(), (result_text(&block["content"]), is_error));
                }
                _ => {}
            }
        }
    }

    /// The call of `tool` still waiting for its result: the last with this input, else the last
    /// whose input is within this one (the CLI may have filled in defaults the model left out).
    /// Never another call of the tool: the one asked about may not be written yet, and an earlier
    /// call still open (its result not written yet) would take its card, and its decision (seen:
    /// `touch y` allowed by the answer to `touch x`).
    fn open_call(&self, tool: &str, input: Option<&Value>) -> Option<String> {
        let input = input?;
        let open = || self.calls.iter().rev().filter(|(id, name, _)| name == tool && !self.results.contains_key(id));
        open()
            .find(|(_, _, call_input)| call_input == input)
            .or_else(|| open().find(|(_, _, call_input)| within(call_input, input)))
            .map(|(id, _, _)| id.clone())
    }

    fn result_of(&self, id: &str) -> Option<(String, bool)> {
        self.results.get(id).cloned()
    }
}

/// Whether `part` is `whole` but for what `whole` adds: every field of an object (at any depth)
/// the same, arrays of the same length element by element, anything else equal.
fn within(part: &Value, whole: &Value) -> bool {
    match (part, whole) {
        (Value::Object(part), Value::Object(whole)) => {
            part.iter().all(|(key, value)| whole.get(key).is_some_and(|other| within(value, other)))
        }
        (Value::Array(part), Value::Array(whole)) => {
            part.len() == whole.len() && part.iter().zip(whole).all(|(a, b)| within(a, b))
        }
        _ => part == whole,
    }
}

fn read_from(path: &Path, offset: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Seek;
    let mut file = std::fs::File::open(path)?;
    file.seek(std::io::SeekFrom::Start(offset))?;
    let mut bytes = Vec::new();
    file.take(8 * 1024 * 1024).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A tool result's text: a string, or the text of its blocks.
fn result_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(value: Value) -> String {
        format!("{value}\n")
    }

    #[test]
    fn the_call_is_found_in_the_transcript_and_its_result_once_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let input = json!({"command": "touch x", "description": "Create x"});
        let earlier =
            json!({"message": {"content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": input}]}});
        let done =
            json!({"message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]}});
        let now =
            json!({"message": {"content": [{"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": input}]}});
        std::fs::write(&path, line(earlier) + &line(done)).unwrap();
        let mut transcript = Transcript::open_tail(path.to_str().unwrap());
        transcript.read_new();
        assert_eq!(transcript.open_call("Bash", Some(&input)), None, "the earlier one has its result");
        // Written in two pieces: the half line waits for its end.
        let text = line(now);
        let (a, b) = text.split_at(20);
        std::fs::write(&path, std::fs::read_to_string(&path).unwrap() + a).unwrap();
        transcript.read_new();
        assert_eq!(transcript.open_call("Bash", Some(&input)), None);
        std::fs::write(&path, std::fs::read_to_string(&path).unwrap() + b).unwrap();
        transcript.read_new();
        assert_eq!(transcript.open_call("Bash", Some(&input)).as_deref(), Some("toolu_2"));
        let defaulted = json!({"command": "touch x", "description": "Create x", "timeout": 120000});
        assert_eq!(transcript.open_call("Bash", Some(&defaulted)).as_deref(), Some("toolu_2"), "with a default");
        let result = json!({"message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_2",
            "content": [{"type": "text", "text": "denied"}], "is_error": true}]}});
        std::fs::write(&path, std::fs::read_to_string(&path).unwrap() + &line(result)).unwrap();
        transcript.read_new();
        assert_eq!(transcript.result_of("toolu_2"), Some(("denied".into(), true)));
    }

    /// Two commands in a row: while the first's result is not written and the second's call not
    /// yet either, the hook asked about the second must not take the first's call (and with it
    /// the first's decision).
    #[test]
    fn a_call_still_open_is_not_taken_for_another_of_the_same_tool() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let x = json!({"command": "touch x", "description": "Create x"});
        let y = json!({"command": "touch y", "description": "Create y"});
        let first =
            json!({"message": {"content": [{"type": "tool_use", "id": "toolu_x", "name": "Bash", "input": x}]}});
        std::fs::write(&path, line(first)).unwrap();
        let mut transcript = Transcript::open_tail(path.to_str().unwrap());
        transcript.read_new();
        assert_eq!(transcript.open_call("Bash", Some(&y)), None);
        let second =
            json!({"message": {"content": [{"type": "tool_use", "id": "toolu_y", "name": "Bash", "input": y}]}});
        std::fs::write(&path, std::fs::read_to_string(&path).unwrap() + &line(second)).unwrap();
        transcript.read_new();
        assert_eq!(transcript.open_call("Bash", Some(&y)).as_deref(), Some("toolu_y"));
        assert_eq!(transcript.open_call("Bash", Some(&x)).as_deref(), Some("toolu_x"));
        let question = json!({"questions": [{"question": "Which?", "options": [{"label": "A"}]}]});
        let asked = json!({"questions": [{"question": "Which?", "options": [{"label": "A"}], "multiSelect": false}]});
        let ask = json!({"message": {"content": [{"type": "tool_use", "id": "toolu_q", "name": "AskUserQuestion", "input": question}]}});
        std::fs::write(&path, std::fs::read_to_string(&path).unwrap() + &line(ask)).unwrap();
        transcript.read_new();
        assert_eq!(
            transcript.open_call("AskUserQuestion", Some(&asked)).as_deref(),
            Some("toolu_q"),
            "defaults inside"
        );
    }

    #[test]
    fn the_host_has_a_name() {
        assert!(!host_name().is_empty());
    }
}
