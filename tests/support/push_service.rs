//! A push service on a loopback port, playing the browser vendor's part (Google's FCM, Mozilla's
//! autopush, Apple's): it takes the server's pushes, checks each VAPID token and decrypts each
//! payload with an implementation that is not the project's (`push_browser.cjs`: npm
//! `http_ece` and Node's crypto), records what it got, and answers as the test scripted it (201
//! by default; 410 for a subscription that is gone; 500 for a service that fails).
//!
//! And a webhook receiver: records every POST (path, headers, JSON body) and answers as scripted,
//! or never (a receiver that hangs).

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use base64::Engine;
use serde_json::Value;
use tokio::sync::Notify;

/// What the service answers to one push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Status(u16),
    /// Never answers (the connection stays open until the test ends).
    Hang,
}

/// A browser's subscription: what the page would post to `/api/push_subscribe`.
#[derive(Debug, Clone)]
pub struct BrowserKeys {
    pub endpoint: String,
    pub p256dh: String,
    pub auth: String,
    private_key: String,
}

/// One push as the service received it.
#[derive(Debug, Clone)]
pub struct Received {
    pub browser: String,
    pub at: Instant,
    /// What the service answered.
    pub answer: Answer,
    pub ttl: Option<String>,
    pub urgency: Option<String>,
    pub topic: Option<String>,
    /// The decrypted payload and the token's claims, or why a browser vendor would refuse it.
    pub checked: Result<(Value, Value), String>,
}

impl Received {
    /// The decrypted payload; fails the test if the push was not a valid one.
    pub fn payload(&self) -> &Value {
        match &self.checked {
            Ok((payload, _)) => payload,
            Err(why) => panic!("the push to {} was not valid: {why}", self.browser),
        }
    }

    pub fn claims(&self) -> &Value {
        match &self.checked {
            Ok((_, claims)) => claims,
            Err(why) => panic!("the push to {} was not valid: {why}", self.browser),
        }
    }
}

#[derive(Default)]
struct ServiceState {
    browsers: Mutex<HashMap<String, BrowserKeys>>,
    answers: Mutex<HashMap<String, VecDeque<Answer>>>,
    received: Mutex<Vec<Received>>,
    changed: Notify,
    /// The server's VAPID public key: every push's `k=` must be it.
    server_key: Mutex<Option<String>>,
    base: Mutex<String>,
}

pub struct PushService {
    pub base: String,
    state: Arc<ServiceState>,
}

/// The browser's side in Node (`push_browser.cjs`).
fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/push_browser.cjs")
}

async fn node(args: &[&str], input: Option<String>) -> Result<String, String> {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new("node")
        .arg(script())
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|error| format!("cannot run node: {error}"))?;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.unwrap_or_default().as_bytes()).await.map_err(|e| e.to_string())?;
    drop(stdin);
    let output = child.wait_with_output().await.map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    if output.status.code() == Some(3) {
        panic!("{stderr}");
    }
    if !output.status.success() {
        return Err(stderr);
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

impl PushService {
    pub async fn start() -> Self {
        let state = Arc::new(ServiceState::default());
        let app = axum::Router::new().route("/push/{browser}", post(receive)).with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        *state.base.lock().unwrap() = base.clone();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { base, state }
    }

    /// The server's VAPID public key, which every push must be signed with.
    pub fn expect_server_key(&self, key: &str) {
        *self.state.server_key.lock().unwrap() = Some(key.to_string());
    }

    /// A new browser (its keys made by Node), subscribed at `/push/<name>`.
    pub async fn browser(&self, name: &str) -> BrowserKeys {
        let made: Value = serde_json::from_str(&node(&["keys"], None).await.unwrap()).unwrap();
        let text = |key: &str| made[key].as_str().unwrap().to_string();
        let keys = BrowserKeys {
            endpoint: format!("{}/push/{name}", self.base),
            p256dh: text("p256dh"),
            auth: text("auth"),
            private_key: text("private_key"),
        };
        self.state.browsers.lock().unwrap().insert(name.to_string(), keys.clone());
        keys
    }

    /// The next answers to `browser`'s pushes, in order (then 201 again).
    pub fn answer(&self, browser: &str, answers: &[Answer]) {
        self.state.answers.lock().unwrap().entry(browser.to_string()).or_default().extend(answers);
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.received.lock().unwrap().clone()
    }

    /// Waits until `count` pushes were received, and returns them all.
    pub async fn wait_for(&self, count: usize, what: &str) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let changed = self.state.changed.notified();
            let received = self.received();
            if received.len() >= count {
                return received;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                panic!("waited 30 s for {what}: {} pushes received: {received:#?}", received.len());
            }
        }
    }
}

async fn receive(
    State(state): State<Arc<ServiceState>>,
    Path(browser): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let at = Instant::now();
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let keys = state.browsers.lock().unwrap().get(&browser).cloned();
    let checked = match keys {
        None => Err(format!("no browser {browser}")),
        Some(keys) => {
            let input = serde_json::json!({
                "private_key": keys.private_key,
                "auth": keys.auth,
                "endpoint": keys.endpoint,
                "authorization": header("authorization"),
                "server_key": state.server_key.lock().unwrap().clone(),
                "content_encoding": header("content-encoding"),
                "ttl": header("ttl"),
                "body": base64::engine::general_purpose::STANDARD.encode(&body),
            });
            node(&["receive"], Some(input.to_string())).await.and_then(|out| {
                let out: Value = serde_json::from_str(&out).map_err(|e| e.to_string())?;
                Ok((out["payload"].clone(), out["claims"].clone()))
            })
        }
    };
    let answer =
        state.answers.lock().unwrap().get_mut(&browser).and_then(VecDeque::pop_front).unwrap_or(Answer::Status(201));
    state.received.lock().unwrap().push(Received {
        browser,
        at,
        answer,
        ttl: header("ttl"),
        urgency: header("urgency"),
        topic: header("topic"),
        checked,
    });
    state.changed.notify_waiters();
    match answer {
        Answer::Status(status) => StatusCode::from_u16(status).unwrap(),
        Answer::Hang => std::future::pending().await,
    }
}

/// One POST a webhook receiver got.
#[derive(Debug, Clone)]
pub struct Hook {
    pub path: String,
    pub query: Option<String>,
    pub at: Instant,
    pub content_type: Option<String>,
    pub body: Value,
}

#[derive(Default)]
struct ReceiverState {
    answers: Mutex<VecDeque<Answer>>,
    received: Mutex<Vec<Hook>>,
    changed: Notify,
}

/// A webhook receiver on a loopback port: every path is taken.
pub struct WebhookReceiver {
    pub base: String,
    state: Arc<ReceiverState>,
}

impl WebhookReceiver {
    pub async fn start() -> Self {
        let state = Arc::new(ReceiverState::default());
        let app = axum::Router::new().fallback(hook).with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { base, state }
    }

    /// The next answers, in order (then 200 again).
    pub fn answer(&self, answers: &[Answer]) {
        self.state.answers.lock().unwrap().extend(answers);
    }

    pub fn received(&self) -> Vec<Hook> {
        self.state.received.lock().unwrap().clone()
    }

    pub async fn wait_for(&self, count: usize, what: &str) -> Vec<Hook> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let changed = self.state.changed.notified();
            let received = self.received();
            if received.len() >= count {
                return received;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                panic!("waited 30 s for {what}: {received:#?}");
            }
        }
    }
}

async fn hook(State(state): State<Arc<ReceiverState>>, request: axum::extract::Request) -> StatusCode {
    let at = Instant::now();
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap_or_default();
    let answer = state.answers.lock().unwrap().pop_front().unwrap_or(Answer::Status(200));
    state.received.lock().unwrap().push(Hook {
        path: parts.uri.path().to_string(),
        query: parts.uri.query().map(str::to_string),
        at,
        content_type: parts.headers.get("content-type").and_then(|v| v.to_str().ok()).map(str::to_string),
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    });
    state.changed.notify_waiters();
    match answer {
        Answer::Status(status) => StatusCode::from_u16(status).unwrap(),
        Answer::Hang => std::future::pending().await,
    }
}
