//! The whole server in the test's process, on a loopback port of its own, and what a script or a
//! browser tab does with it: server functions with the access token, and live streams read as
//! Server-Sent Events.

use std::path::{Path, PathBuf};
use std::time::Duration;

use askbridge::error::AppError;
use askbridge::question::QuestionAnswer;
use askbridge::server::cli::{Cli, Command};
use askbridge::thread::{EventBody, SessionEvent, TurnOutcome};
use serde_json::{Value, json};
use tokio::sync::oneshot;

pub const TOKEN: &str = "load-test-token-not-a-secret-0123456789";

/// The question of [`ASK_AND_QUOTE`], and its options.
pub const QUESTION: &str = "Which auth?";
pub const LABELS: [&str; 2] = ["JWT", "Sessions"];

/// A scenario for the scripted agent: every message asks [`QUESTION`] and then quotes the answer
/// it got (`{{answer}}`), which shows what reached the agent.
pub const ASK_AND_QUOTE: &str = r#"
name = "ask and quote"
pace = 2000
[[turn]]
[[turn.step]]
ask = "AskFollowupQuestion"
input = { question = "Which auth?", options = ["JWT", "Sessions"] }
[[turn.step]]
say = "got {{answer}}"
"#;

/// [`ASK_AND_QUOTE`] written to `dir`/scenario.toml, for `--scenario`.
pub fn ask_and_quote_in(dir: &Path) -> String {
    let path = dir.join("scenario.toml");
    std::fs::write(&path, ASK_AND_QUOTE).unwrap();
    path.display().to_string()
}
/// The longest a tab waits for one event before it says what it waited for.
pub const WAIT: Duration = Duration::from_secs(60);

/// The server, in this process, on a port of its own.
pub struct Server {
    pub base: String,
    pub data: PathBuf,
    stop: oneshot::Sender<()>,
    serving: tokio::task::JoinHandle<Result<(), String>>,
}

impl Server {
    /// `askbridge serve` with `flags`, its data in `dir`/data, and the test's access token.
    pub async fn start(dir: &Path, flags: &[&str]) -> Self {
        let data = dir.join("data");
        let path = |p: &Path| p.display().to_string();
        let (data_flag, site) = (path(&data), path(&dir.join("site")));
        let mut all = vec!["askbridge", "serve", "--addr", "127.0.0.1:0", "--data-dir", &data_flag];
        all.extend(["--token", TOKEN, "--site-root", &site]);
        all.extend(flags);
        let Command::Serve(args) = <Cli as clap::Parser>::try_parse_from(all).unwrap().command else { panic!("serve") };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = tokio::spawn(async move {
            let stopped = async move {
                let _ = stopped.await;
            };
            askbridge::server::serve_until(args, Some(listener), stopped).await.map_err(|e| e.to_string())
        });
        Self { base, data, stop, serving }
    }

    pub fn api(&self) -> Api {
        Api::at(&self.base)
    }

    /// Stops it as Ctrl-C would, and returns its data folder.
    pub async fn stop(self) -> PathBuf {
        let _ = self.stop.send(());
        self.serving.await.unwrap().unwrap();
        self.data
    }
}

/// The server's HTTP face, as a script or the browser uses it, with the access token.
#[derive(Clone)]
pub struct Api {
    pub http: reqwest::Client,
    pub base: String,
}

impl Api {
    /// The server at `base` (`http://127.0.0.1:PORT`), with the test's access token.
    pub fn at(base: &str) -> Api {
        // reqwest is built here with rustls but no crypto provider of its own (for the Messages
        // API agent): one must be installed, even for plain HTTP.
        let _ = rustls::crypto::ring::default_provider().install_default();
        // A connection idle for the server's header deadline (10 s) is closed by the server; one
        // reused at that very moment fails the request sent on it ("error sending request", seen
        // in a load test on a busy machine). Idle connections are let go well before.
        let idle = askbridge::server::connections::HEADER_DEADLINE / 2;
        let http = reqwest::Client::builder().no_proxy().pool_idle_timeout(idle).build().unwrap();
        Api { http, base: base.to_string() }
    }

    /// A server function: its JSON result, or the typed error it answered with (whose HTTP
    /// status must be the error's own).
    pub async fn call(&self, function: &str, body: Value) -> Result<Value, AppError> {
        let response = self
            .http
            .post(format!("{}/api/{function}", self.base))
            .bearer_auth(TOKEN)
            .header("accept", "application/json")
            .json(&body)
            .send()
            .await
            .unwrap_or_else(|error| panic!("{function}: {error:?}"));
        Self::read(function, response).await
    }

    /// Uploads a file to attach (`POST /api/attachments`): the stored file, or the typed error.
    pub async fn upload(&self, name: &str, media_type: &str, bytes: Vec<u8>) -> Result<Value, AppError> {
        let response = self
            .http
            .post(format!("{}/api/attachments?name={name}", self.base))
            .bearer_auth(TOKEN)
            .header("content-type", media_type)
            .body(bytes)
            .send()
            .await
            .unwrap_or_else(|error| panic!("upload: {error}"));
        Self::read("upload", response).await
    }

    /// A response's JSON, or the typed error it carries (whose HTTP status must be the error's own).
    async fn read(what: &str, response: reqwest::Response) -> Result<Value, AppError> {
        let status = response.status().as_u16();
        let bytes = response.bytes().await.unwrap_or_else(|error| panic!("{what}: {error}"));
        if status == 200 {
            return Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null));
        }
        let error: AppError = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            panic!("{what}: {status} is not a typed error ({e}): {}", String::from_utf8_lossy(&bytes))
        });
        assert_eq!(status, error.status(), "{what}: {error:?}");
        Err(error)
    }

    pub async fn send(&self, session: &str, text: &str) -> Result<(), AppError> {
        self.call("send_message", json!({"session": session, "text": text})).await.map(drop)
    }

    /// The messages typed ahead in the session's queue: their ids and texts.
    pub async fn queue(&self, session: &str) -> Vec<(String, String)> {
        let view = self.call("load_session", json!({"id": session})).await.expect("the session loads");
        let queue = view["thread"]["turn"]["queue"].as_array().cloned().unwrap_or_default();
        queue
            .iter()
            .map(|queued| (queued["id"].as_str().unwrap().into(), queued["text"].as_str().unwrap().into()))
            .collect()
    }

    /// Takes a message typed ahead back out of the queue.
    pub async fn remove_queued(&self, session: &str, message_id: &str) -> Result<(), AppError> {
        let change = json!({"change": "remove", "message_id": message_id});
        self.call("change_queue", json!({"session": session, "change": change})).await.map(drop)
    }

    /// Answers `question` with the option `label`.
    pub async fn answer(&self, session: &str, tool_use_id: &str, question: &str, label: &str) -> Result<(), AppError> {
        let answers = [QuestionAnswer::new(question, &[label], None, None)];
        self.call("submit_answers", json!({"session": session, "tool_use_id": tool_use_id, "answers": answers}))
            .await
            .map(drop)
    }
}

/// One live stream, read as Server-Sent Events: only as far as AskBridge writes them (`event`,
/// `id` and `data` fields, a blank line ends an event). Lines are found by the C library's
/// `memchr` (through `BufRead`), since every tab gets the whole session list every time it
/// changes, and a parser written byte by byte, unoptimized as tests are built, took most of the
/// test's time reading those lists.
pub struct Events {
    response: reqwest::Response,
    buffer: Vec<u8>,
    /// Where the next line starts in `buffer`.
    start: usize,
}

/// One SSE event: its name (`message` when unnamed), id and data.
struct Frame {
    event: String,
    id: String,
    data: Vec<u8>,
}

impl Events {
    /// The next event, or `None` when the server ends the stream.
    async fn next(&mut self) -> Result<Option<Frame>, String> {
        let mut frame = Frame { event: String::new(), id: String::new(), data: Vec::new() };
        let mut has_data = false;
        loop {
            let mut line = Vec::new();
            std::io::BufRead::read_until(&mut &self.buffer[self.start..], b'\n', &mut line).unwrap();
            if line.last() != Some(&b'\n') {
                // Not a whole line yet: read on.
                self.buffer.drain(..self.start);
                self.start = 0;
                match self.response.chunk().await.map_err(|error| error.to_string())? {
                    Some(bytes) => self.buffer.extend_from_slice(&bytes),
                    None => return Ok(None),
                }
                continue;
            }
            self.start += line.len();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if line.is_empty() {
                if has_data {
                    if frame.event.is_empty() {
                        frame.event = "message".to_string();
                    }
                    return Ok(Some(frame));
                }
                // An event without data (the heartbeat) is not one.
                frame = Frame { event: String::new(), id: String::new(), data: Vec::new() };
                continue;
            }
            let colon = line.iter().position(|&b| b == b':').unwrap_or(line.len());
            let mut value = line.get(colon + 1..).unwrap_or_default();
            if value.first() == Some(&b' ') {
                value = &value[1..];
            }
            let text = || String::from_utf8_lossy(value).into_owned();
            match &line[..colon] {
                b"event" => frame.event = text(),
                b"id" => frame.id = text(),
                b"data" => {
                    if has_data {
                        frame.data.push(b'\n');
                    }
                    frame.data.extend_from_slice(value);
                    has_data = true;
                }
                _ => {}
            }
        }
    }
}

/// A browser tab on one session: it follows the live stream, drops it every few events (or when
/// told), and reconnects from the last event it saw — `?after=seq`, or every third time the
/// standard `Last-Event-ID` header. Each event it gets must be the one after the last.
pub struct Tab {
    api: Api,
    pub session: String,
    stream: Option<Events>,
    /// Every session event received, over all connections.
    pub log: Vec<SessionEvent>,
    pub connections: usize,
    /// Events until the stream is dropped.
    drop_in: u64,
    /// Where the drops come from (`None`: the stream is never dropped).
    seed: Option<u64>,
}

impl Tab {
    pub fn new(api: Api, session: &str, seed: Option<u64>) -> Self {
        let mut tab =
            Self { api, session: session.to_string(), stream: None, log: Vec::new(), connections: 0, drop_in: 0, seed };
        tab.drop_in = tab.next_drop();
        tab
    }

    pub fn last(&self) -> u64 {
        self.log.last().map_or(0, |event| event.seq)
    }

    /// 1 to 24 events from now (splitmix64 on the seed: the same every run).
    fn next_drop(&mut self) -> u64 {
        let Some(seed) = &mut self.seed else { return u64::MAX };
        *seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        1 + (z ^ (z >> 31)) % 24
    }

    pub fn disconnect(&mut self) {
        self.stream = None;
    }

    pub async fn connect(&mut self) {
        let after = self.last();
        let mut url = format!("{}/api/live?session={}", self.api.base, self.session);
        let request = if self.connections % 3 == 2 {
            self.api.http.get(&url).header("last-event-id", after.to_string())
        } else {
            url.push_str(&format!("&after={after}"));
            self.api.http.get(&url)
        };
        let request = request.bearer_auth(TOKEN);
        let response = request.send().await.unwrap_or_else(|error| panic!("{url}: {error}"));
        assert_eq!(response.status(), 200, "{url}");
        self.stream = Some(Events { response, buffer: Vec::new(), start: 0 });
        self.connections += 1;
    }

    /// Reads on until the server ends the stream with a problem (the session was deleted, say):
    /// that error.
    pub async fn until_problem(&mut self) -> AppError {
        if self.stream.is_none() {
            self.connect().await;
        }
        let stream = self.stream.as_mut().unwrap();
        loop {
            let Ok(frame) = tokio::time::timeout(WAIT, stream.next()).await else {
                panic!("session {}: waited {WAIT:?} for the stream to end with a problem", self.session);
            };
            match frame {
                Ok(Some(frame)) if frame.event == "problem" => return serde_json::from_slice(&frame.data).unwrap(),
                Ok(Some(_)) => continue,
                Ok(None) => panic!("session {}: the stream ended without saying why", self.session),
                Err(error) => panic!("session {}: the live stream broke: {error}", self.session),
            }
        }
    }

    /// The session's next event: exactly the one after the last this tab saw.
    pub async fn next(&mut self) -> SessionEvent {
        loop {
            if self.stream.is_none() {
                self.connect().await;
            }
            let stream = self.stream.as_mut().unwrap();
            let event = match stream.next().await {
                Ok(Some(event)) => event,
                Err(error) => panic!("session {}: the live stream broke: {error}", self.session),
                Ok(None) => panic!("session {}: the server ended the live stream", self.session),
            };
            match event.event.as_str() {
                "session" => {}
                "sessions" | "ping" => continue,
                other => {
                    panic!(
                        "session {}: unexpected {other} event: {}",
                        self.session,
                        String::from_utf8_lossy(&event.data)
                    )
                }
            }
            let received: SessionEvent = serde_json::from_slice(&event.data).unwrap();
            assert_eq!(event.id, received.seq.to_string(), "session {}: the SSE id is the seq", self.session);
            assert_eq!(
                received.seq,
                self.last() + 1,
                "session {}: after event {} came event {} (connection {}, {:?})",
                self.session,
                self.last(),
                received.seq,
                self.connections,
                received.body
            );
            self.log.push(received.clone());
            self.drop_in -= 1;
            if self.drop_in == 0 {
                self.disconnect();
                self.drop_in = self.next_drop();
            }
            return received;
        }
    }

    /// Reads events until `found` picks one out.
    pub async fn until<T>(&mut self, what: &str, found: impl Fn(&SessionEvent) -> Option<T>) -> T {
        loop {
            let Ok(event) = tokio::time::timeout(WAIT, self.next()).await else {
                panic!(
                    "session {}: waited {WAIT:?} for {what}; the last event was {:?}",
                    self.session,
                    self.log.last()
                );
            };
            if let Some(value) = found(&event) {
                return value;
            }
            if let EventBody::TurnEnded {
                outcome: outcome @ (TurnOutcome::Failed { .. } | TurnOutcome::Interrupted | TurnOutcome::Abandoned),
                ..
            } = &event.body
            {
                panic!("session {}: waiting for {what}, the turn ended {outcome:?}", self.session);
            }
        }
    }
}
