//! A mock of the Anthropic Messages API that the real Claude Code CLI can be pointed at with
//! `ANTHROPIC_BASE_URL`. It answers each `POST /v1/messages` with the next scripted reply, streamed
//! in the same server-sent-event sequence api.anthropic.com uses, and records every request body so
//! tests can assert what the model was sent (above all the `tool_result` blocks).
//!
//! Shared by the integration tests (`tests/support`) and the `mock_anthropic` example that
//! Playwright starts; the example reads its script from a JSON file (see [`script_from_json`]).

use std::collections::{HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};

/// What the mock says once the script has run out.
pub const NO_MORE_REPLIES: &str = "(the mock has no more scripted replies)";

/// The pause between two streamed events: enough to make the stream arrive in pieces, short
/// enough to keep a many-turn test fast.
const EVENT_GAP: Duration = Duration::from_millis(5);

/// How many words go in one `text_delta`, and how many characters of tool input JSON in one
/// `input_json_delta`.
const WORDS_PER_DELTA: usize = 3;
const JSON_CHARS_PER_DELTA: usize = 16;

/// Used when a request names no model.
const DEFAULT_MODEL: &str = "claude-mock";

/// One content block of a scripted assistant reply.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    Text(String),
    ToolUse { id: String, name: String, input: Value },
}

/// One scripted assistant message. Its `stop_reason` is `tool_use` if it has a tool call,
/// otherwise `end_turn` (`max_tokens` when it ends [`End::MaxTokens`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reply {
    pub blocks: Vec<Block>,
    /// How the streamed reply ends.
    pub end: End,
    /// Instead of a reply, this error response (the request is still recorded).
    pub error: Option<ApiFailure>,
    /// Served only to a request whose messages contain this text (when conversations run side
    /// by side, as a subagent's does beside the main one); `None` serves any request.
    pub when: Option<String>,
    /// How long the mock waits before it answers (a slow model, or a slow network).
    pub delay: Duration,
}

/// How a streamed reply ends.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum End {
    /// `message_delta` and `message_stop`, as a finished reply.
    #[default]
    Complete,
    /// The connection breaks after this many events (`message_start` is the first): no
    /// `message_stop`, and the body ends in an error.
    CutAfter(usize),
    /// The reply reaches max_tokens in the middle of its last block, a tool call's arguments:
    /// half the JSON arrives, then `content_block_stop` and `stop_reason: "max_tokens"`.
    MaxTokens,
    /// A finished reply whose last block ends at once, and the `message_delta` and
    /// `message_stop` after it only this long later, as a network can split the end of a reply.
    /// The real API writes the three together, as [`End::Complete`] does.
    Held(Duration),
}

/// An error response: `{"type":"error","error":{"type": kind, "message": message}}`.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiFailure {
    pub status: u16,
    pub kind: String,
    pub message: String,
    /// The `retry-after` header, in seconds.
    pub retry_after: Option<u64>,
}

impl Reply {
    pub fn text(t: &str) -> Self {
        Reply { blocks: vec![Block::Text(t.to_owned())], ..Reply::default() }
    }

    pub fn tool_use(id: &str, name: &str, input: Value) -> Self {
        Reply { blocks: vec![Block::ToolUse { id: id.to_owned(), name: name.to_owned(), input }], ..Reply::default() }
    }

    /// An error response instead of a reply: `Reply::error(529, "overloaded_error", "Overloaded", None)`.
    pub fn error(status: u16, kind: &str, message: &str, retry_after: Option<u64>) -> Self {
        let error = ApiFailure { status, kind: kind.to_owned(), message: message.to_owned(), retry_after };
        Reply { error: Some(error), ..Reply::default() }
    }

    /// Ends the reply as `end` says.
    pub fn ending(mut self, end: End) -> Self {
        self.end = end;
        self
    }

    /// Serves this reply only to a request whose messages contain `text`.
    pub fn when(mut self, text: &str) -> Self {
        self.when = Some(text.to_owned());
        self
    }

    /// Answers only after `delay`.
    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Appends a block: `Reply::text("Let me check.").with(Block::ToolUse { … })`.
    pub fn with(mut self, block: Block) -> Self {
        self.blocks.push(block);
        self
    }

    pub fn stop_reason(&self) -> &'static str {
        if self.end == End::MaxTokens {
            return "max_tokens";
        }
        if self.blocks.iter().any(|b| matches!(b, Block::ToolUse { .. })) { "tool_use" } else { "end_turn" }
    }
}

/// Reads a script in the file format of the `mock_anthropic` example:
///
/// ```json
/// [
///   "a text reply",
///   {"content": [{"type": "text", "text": "Let me ask."},
///                {"type": "tool_use", "id": "toolu_1", "name": "AskUserQuestion", "input": {"questions": []}}]},
///   [{"type": "text", "text": "a reply given as its list of blocks"}]
/// ]
/// ```
///
/// The top level may also be `{"replies": [...]}`; `blocks` may stand for `content`; a block may be
/// a bare string (a text block). An object reply may add `"cut_after": N` (the connection breaks
/// after N events) or `"stop": "max_tokens"` (see [`End`]), `"when": "text"` (served only to a
/// request whose messages hold the text) and `"delay_ms": N` (answered after N ms); `{"error": {"status": 529, "type":
/// "overloaded_error", "message": "…", "retry_after": 1}}` is an error response instead. A `tool_use` without `id` gets `toolu_mock_0001`, `toolu_mock_0002`…
/// (counted over the script), without `input` gets `{}`.
pub fn script_from_json(script: &Value) -> Result<Vec<Reply>, String> {
    let replies = match script {
        Value::Array(replies) => replies,
        Value::Object(o) => match o.get("replies") {
            Some(Value::Array(replies)) => replies,
            _ => return Err("a script is an array of replies, or an object with a \"replies\" array".into()),
        },
        _ => return Err("a script is an array of replies, or an object with a \"replies\" array".into()),
    };
    let mut tool_ids = 0;
    replies
        .iter()
        .enumerate()
        .map(|(i, reply)| reply_from_json(reply, &mut tool_ids).map_err(|e| format!("reply {}: {e}", i + 1)))
        .collect()
}

fn reply_from_json(reply: &Value, tool_ids: &mut usize) -> Result<Reply, String> {
    if let Some(error) = reply.get("error") {
        let status = error.get("status").and_then(Value::as_u64).ok_or("an error needs a numeric \"status\"")?;
        let kind = error.get("type").and_then(Value::as_str).unwrap_or("api_error");
        let message = error.get("message").and_then(Value::as_str).unwrap_or("");
        let retry_after = error.get("retry_after").and_then(Value::as_u64);
        return Ok(Reply::error(status as u16, kind, message, retry_after));
    }
    let end = match (reply.get("cut_after").and_then(Value::as_u64), reply.get("stop").and_then(Value::as_str)) {
        (Some(n), _) => End::CutAfter(n as usize),
        (None, Some("max_tokens")) => End::MaxTokens,
        (None, Some(other)) => return Err(format!("\"stop\": {other:?} is not a stop this mock can play")),
        (None, None) => End::Complete,
    };
    let when = reply.get("when").and_then(Value::as_str).map(str::to_owned);
    let delay = Duration::from_millis(reply.get("delay_ms").and_then(Value::as_u64).unwrap_or(0));
    let blocks = match reply {
        Value::String(text) => return Ok(Reply::text(text)),
        Value::Array(blocks) => blocks,
        Value::Object(o) => match o.get("content").or_else(|| o.get("blocks")) {
            Some(Value::Array(blocks)) => blocks,
            _ => return Err("an object reply needs a \"content\" array of blocks".into()),
        },
        _ => return Err("a reply is a string, an array of blocks or {\"content\": [...]}".into()),
    };
    let blocks = blocks
        .iter()
        .enumerate()
        .map(|(i, block)| block_from_json(block, tool_ids).map_err(|e| format!("block {}: {e}", i + 1)))
        .collect::<Result<Vec<_>, _>>()?;
    if blocks.is_empty() {
        return Err("a reply needs at least one block".into());
    }
    Ok(Reply { blocks, end, error: None, when, delay })
}

fn block_from_json(block: &Value, tool_ids: &mut usize) -> Result<Block, String> {
    if let Value::String(text) = block {
        return Ok(Block::Text(text.clone()));
    }
    match block.get("type").and_then(Value::as_str) {
        Some("text") => match block.get("text").and_then(Value::as_str) {
            Some(text) => Ok(Block::Text(text.to_owned())),
            None => Err("a text block needs a \"text\" string".into()),
        },
        Some("tool_use") => {
            let name = block.get("name").and_then(Value::as_str).ok_or("a tool_use block needs a \"name\" string")?;
            let id = match block.get("id").and_then(Value::as_str) {
                Some(id) => id.to_owned(),
                None => {
                    *tool_ids += 1;
                    format!("toolu_mock_{:04}", *tool_ids)
                }
            };
            let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
            if !input.is_object() {
                return Err("a tool_use block's \"input\" must be an object".into());
            }
            Ok(Block::ToolUse { id, name: name.to_owned(), input })
        }
        _ => Err("a block is a string or has \"type\": \"text\" or \"tool_use\"".into()),
    }
}

/// A running mock. The server stops when this is dropped.
pub struct MockAnthropic {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
}

impl MockAnthropic {
    /// Listens on a free port of 127.0.0.1 and serves `script` in order, one reply per
    /// `POST /v1/messages`.
    pub async fn start(script: Vec<Reply>) -> Self {
        Self::start_on(0, script).await.expect("mock Anthropic: cannot listen on 127.0.0.1")
    }

    pub async fn start_on(port: u16, script: Vec<Reply>) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::new(script));
        let (shutdown, stopped) = oneshot::channel::<()>();
        let app = router(shared.clone());
        tokio::spawn(async move {
            let served = axum::serve(listener, app).with_graceful_shutdown(async {
                // A dropped sender stops the server as well.
                let _ = stopped.await;
            });
            if let Err(error) = served.await {
                tracing::warn!(target: "mock_anthropic", %error, "mock Anthropic server failed");
            }
        });
        Ok(MockAnthropic { addr, shared, shutdown: Some(shutdown) })
    }

    /// `http://127.0.0.1:PORT`, for `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The bodies of every `POST /v1/messages` so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.shared.requests()
    }

    /// What each reply served so far said it used: `{model, input_tokens, output_tokens, side}`.
    pub fn usage(&self) -> Vec<Value> {
        self.shared.lock().usage.clone()
    }

    /// From now on, answers the requests an agent makes beside the conversation with `text`,
    /// leaving the script and the recorded requests to the conversation: requests that offer no
    /// tools (Claude's title for a session) and Claude Code's prompt suggestions ("[SUGGESTION
    /// MODE: …"), which Claude's ACP adapter makes around each turn (fixtures/acp/*.api.jsonl).
    pub fn answer_side_requests(&self, text: &str) {
        self.shared.lock().side = Some(text.to_string());
    }

    /// Appends a reply to the script.
    pub fn push(&self, reply: Reply) {
        self.shared.lock().script.push_back(reply);
    }

    /// Waits until at least `n` requests have been recorded and returns them all; panics after
    /// `timeout`, saying how many came.
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> Vec<Value> {
        let mut seen = self.shared.seen.subscribe();
        if tokio::time::timeout(timeout, seen.wait_for(|count| *count >= n)).await.is_err() {
            let requests = self.requests();
            let last = requests.last().map(describe_last_message).unwrap_or_else(|| "none".into());
            panic!(
                "mock Anthropic: waited {timeout:?} for {n} POST /v1/messages request(s) but got {}; \
                 the last message of the last request: {last}",
                requests.len()
            );
        }
        self.requests()
    }

    /// Every `tool_result` block the model was sent, across all requests, once per
    /// `tool_use_id` (first occurrence wins), in order: (tool_use_id, content, is_error).
    pub fn tool_results(&self) -> Vec<(String, String, bool)> {
        tool_results_in(&self.requests())
    }
}

impl Drop for MockAnthropic {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

/// Collects the `tool_result` blocks of `requests` (see [`MockAnthropic::tool_results`]). A
/// `content` given as an array of text blocks is joined with newlines.
pub fn tool_results_in(requests: &[Value]) -> Vec<(String, String, bool)> {
    let mut seen = HashSet::new();
    let mut results = Vec::new();
    let blocks = requests
        .iter()
        .filter_map(|r| r.get("messages").and_then(Value::as_array))
        .flatten()
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"));
    for block in blocks {
        let id = block.get("tool_use_id").and_then(Value::as_str).unwrap_or_default().to_owned();
        if !seen.insert(id.clone()) {
            continue;
        }
        let content = match block.get("content") {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        };
        let is_error = block.get("is_error").and_then(Value::as_bool).unwrap_or(false);
        results.push((id, content, is_error));
    }
    results
}

fn describe_last_message(request: &Value) -> String {
    let last = request.get("messages").and_then(Value::as_array).and_then(|m| m.last());
    let text = last.map(Value::to_string).unwrap_or_else(|| "none".into());
    if text.chars().count() > 400 { format!("{}…", text.chars().take(400).collect::<String>()) } else { text }
}

/// What the server and its handle share.
struct Shared {
    inner: Mutex<Inner>,
    /// How many requests have been recorded, for `wait_for_requests`.
    seen: watch::Sender<usize>,
}

struct Inner {
    script: VecDeque<Reply>,
    requests: Vec<Value>,
    /// Replies served so far (scripted or not), for the message ids.
    served: usize,
    /// The reply to requests beside the conversation, when they are answered apart.
    side: Option<String>,
    /// The usage of every reply served, in order: `{model, input_tokens, output_tokens, side}`.
    usage: Vec<Value>,
}

impl Shared {
    fn new(script: Vec<Reply>) -> Self {
        Shared {
            inner: Mutex::new(Inner {
                script: script.into(),
                requests: Vec::new(),
                served: 0,
                side: None,
                usage: Vec::new(),
            }),
            seen: watch::Sender::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A test that panicked while holding the lock must not hide what was recorded.
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn requests(&self) -> Vec<Value> {
        self.lock().requests.clone()
    }

    /// Records a request (of `input_tokens`) and takes the reply for it, with its message number.
    fn answer(&self, request: Value, input_tokens: u64) -> (Reply, usize) {
        let (reply, number, count) = {
            let mut inner = self.lock();
            // The first reply meant for this request: one without a condition, or whose text is
            // in the request's messages.
            let messages = request.get("messages").map(Value::to_string).unwrap_or_default();
            if let Some(side) = inner.side.clone().filter(|_| is_side_request(&request, &messages)) {
                inner.served += 1;
                let reply = Reply::text(&side);
                inner.usage.push(served_usage(&request, input_tokens, &reply, true));
                return (reply, inner.served);
            }
            let fits = |reply: &Reply| reply.when.as_ref().is_none_or(|when| messages.contains(when.as_str()));
            let position = inner.script.iter().position(fits);
            inner.requests.push(request);
            inner.served += 1;
            let reply = position.and_then(|at| inner.script.remove(at)).unwrap_or_else(|| Reply::text(NO_MORE_REPLIES));
            if reply.error.is_none() {
                let usage = served_usage(inner.requests.last().expect("pushed above"), input_tokens, &reply, false);
                inner.usage.push(usage);
            }
            (reply, inner.served, inner.requests.len())
        };
        self.seen.send_replace(count);
        (reply, number)
    }
}

/// What a reply told the agent it used, as `GET /_usage` lists it.
fn served_usage(request: &Value, input_tokens: u64, reply: &Reply, side: bool) -> Value {
    let model = request.get("model").and_then(Value::as_str).unwrap_or(DEFAULT_MODEL);
    json!({ "model": model, "input_tokens": input_tokens, "output_tokens": output_tokens(reply), "side": side })
}

/// A request an agent makes beside the conversation (see [`MockAnthropic::answer_side_requests`]).
fn is_side_request(request: &Value, messages: &str) -> bool {
    let no_tools = request.get("tools").and_then(Value::as_array).is_none_or(Vec::is_empty);
    no_tools || messages.contains("[SUGGESTION MODE:")
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/messages", post(messages).fallback(not_found))
        .route("/v1/messages/count_tokens", post(count_tokens).fallback(not_found))
        .route("/v1/models", get(list_models).fallback(not_found))
        .route("/_requests", get(recorded_requests).fallback(not_found))
        .route("/_usage", get(served_usages).fallback(not_found))
        .fallback(not_found)
        .layer(middleware::from_fn(log_request))
        // The CLI sends its whole system prompt, tool list and history every time.
        .layer(DefaultBodyLimit::max(64 << 20))
        .with_state(shared)
}

async fn log_request(request: Request, next: Next) -> Response {
    tracing::info!(target: "mock_anthropic", method = %request.method(), uri = %request.uri(), "request");
    if tracing::enabled!(target: "mock_anthropic", tracing::Level::DEBUG) {
        let mut headers = request.headers().clone();
        for secret in [header::AUTHORIZATION.as_str(), "x-api-key"] {
            if headers.contains_key(secret) {
                headers.insert(secret, HeaderValue::from_static("(redacted)"));
            }
        }
        tracing::debug!(target: "mock_anthropic", ?headers, "request headers");
    }
    next.run(request).await
}

async fn messages(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let request: Value = match serde_json::from_slice(&body) {
        Ok(request @ Value::Object(_)) => request,
        _ => return api_error(StatusCode::BAD_REQUEST, "invalid_request_error", "the body is not a JSON object"),
    };
    let stream = request.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let model = request.get("model").and_then(Value::as_str).unwrap_or(DEFAULT_MODEL).to_owned();
    let input_tokens = rough_tokens(body.len());
    let (reply, number) = shared.answer(request, input_tokens);
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    if let Some(error) = &reply.error {
        tracing::info!(target: "mock_anthropic", status = error.status, "error reply");
        let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = api_error(status, &error.kind, &error.message);
        if let Some(seconds) = error.retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        return response;
    }
    let id = format!("msg_mock_{number:04}");
    tracing::info!(target: "mock_anthropic", %id, stream, stop_reason = reply.stop_reason(), "reply");
    let mut response = if stream {
        // Each event after its gap.
        let mut events: Vec<(Duration, Result<String, std::io::Error>)> =
            sse_events(&reply, &id, &model, input_tokens).into_iter().map(|event| (EVENT_GAP, Ok(event))).collect();
        match reply.end {
            End::CutAfter(n) => {
                events.truncate(n);
                let cut = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "the mock cut the stream");
                events.push((EVENT_GAP, Err(cut)));
            }
            // The real API writes the last block's end, `message_delta` and `message_stop`
            // together: one chunk, which a client reads at once.
            End::Complete | End::MaxTokens => join_the_end(&mut events, 3, EVENT_GAP),
            End::Held(gap) => join_the_end(&mut events, 2, gap),
        }
        if let Some((gap, _)) = events.first_mut() {
            *gap = Duration::ZERO;
        }
        let paced = futures::stream::iter(events).then(|(gap, event)| async move {
            tokio::time::sleep(gap).await;
            event
        });
        let mut response = Response::new(Body::from_stream(paced));
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        response
    } else {
        axum::Json(complete_message(&reply, &id, &model, input_tokens)).into_response()
    };
    if let Ok(request_id) = HeaderValue::from_str(&format!("req_mock_{number:04}")) {
        response.headers_mut().insert("request-id", request_id);
    }
    response
}

async fn count_tokens(body: Bytes) -> Response {
    axum::Json(json!({ "input_tokens": rough_tokens(body.len()) })).into_response()
}

/// The models the mock lists (`GET /v1/models`), newest first, as the real API names them.
pub const MODELS: [(&str, &str); 3] = [
    ("claude-opus-5-5", "Claude Opus 5.5"),
    ("claude-sonnet-5-5", "Claude Sonnet 5.5"),
    ("claude-haiku-5-5", "Claude Haiku 5.5"),
];

/// `GET /v1/models?limit=&after_id=`, a page at a time as the API pages it.
async fn list_models(uri: Uri) -> Response {
    let query: Vec<(String, String)> = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .filter_map(|pair| pair.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect();
    let param = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let limit = param("limit").and_then(|l| l.parse::<usize>().ok()).unwrap_or(20).clamp(1, 1000);
    let start = match param("after_id") {
        Some(after) => MODELS.iter().position(|(id, _)| *id == after).map_or(MODELS.len(), |at| at + 1),
        None => 0,
    };
    let page: Vec<Value> = MODELS
        .iter()
        .skip(start)
        .take(limit)
        .map(
            |(id, name)| json!({"type": "model", "id": id, "display_name": name, "created_at": "2026-09-01T00:00:00Z"}),
        )
        .collect();
    let has_more = start + page.len() < MODELS.len();
    axum::Json(json!({
        "data": page,
        "has_more": has_more,
        "first_id": page.first().map(|m| m["id"].clone()),
        "last_id": page.last().map(|m| m["id"].clone()),
    }))
    .into_response()
}

async fn served_usages(State(shared): State<Arc<Shared>>) -> Response {
    axum::Json(Value::Array(shared.lock().usage.clone())).into_response()
}

async fn recorded_requests(State(shared): State<Arc<Shared>>) -> Response {
    axum::Json(Value::Array(shared.requests())).into_response()
}

async fn not_found(method: Method, uri: Uri) -> Response {
    tracing::warn!(target: "mock_anthropic", %method, %uri, "no such endpoint in the mock");
    api_error(StatusCode::NOT_FOUND, "not_found_error", &format!("the mock Anthropic API has no {method} {uri}"))
}

fn api_error(status: StatusCode, kind: &str, message: &str) -> Response {
    (status, axum::Json(json!({ "type": "error", "error": { "type": kind, "message": message } }))).into_response()
}

/// About four bytes of JSON per token: good enough for usage numbers nobody bills.
fn rough_tokens(bytes: usize) -> u64 {
    (bytes as u64 / 4).max(1)
}

fn output_tokens(reply: &Reply) -> u64 {
    let bytes = reply
        .blocks
        .iter()
        .map(|b| match b {
            Block::Text(text) => text.len(),
            Block::ToolUse { name, input, .. } => name.len() + input.to_string().len(),
        })
        .sum();
    rough_tokens(bytes)
}

fn block_json(block: &Block) -> Value {
    match block {
        Block::Text(text) => json!({ "type": "text", "text": text }),
        Block::ToolUse { id, name, input } => json!({ "type": "tool_use", "id": id, "name": name, "input": input }),
    }
}

/// The answer to a request without `"stream": true`.
fn complete_message(reply: &Reply, id: &str, model: &str, input_tokens: u64) -> Value {
    json!({
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": reply.blocks.iter().map(block_json).collect::<Vec<_>>(),
        "stop_reason": reply.stop_reason(),
        "stop_sequence": null,
        "usage": {
            "input_tokens": input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": output_tokens(reply),
        },
    })
}

fn sse(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// The event sequence api.anthropic.com streams for `reply`, each event a finished
/// `event: …\ndata: …\n\n` string.
fn sse_events(reply: &Reply, id: &str, model: &str, input_tokens: u64) -> Vec<String> {
    let mut events = vec![
        sse(
            "message_start",
            json!({
                "type": "message_start",
                "message": {
                    "id": id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": null,
                    "stop_sequence": null,
                    "usage": {
                        "input_tokens": input_tokens,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0,
                        "output_tokens": 1,
                    },
                },
            }),
        ),
        sse("ping", json!({ "type": "ping" })),
    ];
    let last = reply.blocks.len().saturating_sub(1);
    for (index, block) in reply.blocks.iter().enumerate() {
        let (start, mut deltas) = match block {
            Block::Text(text) => (
                json!({ "type": "text", "text": "" }),
                text_pieces(text).into_iter().map(|t| json!({ "type": "text_delta", "text": t })).collect::<Vec<_>>(),
            ),
            Block::ToolUse { id, name, input } => (
                json!({ "type": "tool_use", "id": id, "name": name, "input": {} }),
                // The real API opens a tool's input with an empty chunk.
                std::iter::once(String::new())
                    .chain(json_pieces(&input.to_string()))
                    .map(|j| json!({ "type": "input_json_delta", "partial_json": j }))
                    .collect(),
            ),
        };
        if reply.end == End::MaxTokens && index == last {
            // Cut off halfway through: the API stops the block where the tokens ran out.
            deltas.truncate(deltas.len().div_ceil(2));
        }
        events.push(sse(
            "content_block_start",
            json!({ "type": "content_block_start", "index": index, "content_block": start }),
        ));
        for delta in deltas {
            events.push(sse(
                "content_block_delta",
                json!({ "type": "content_block_delta", "index": index, "delta": delta }),
            ));
        }
        events.push(sse("content_block_stop", json!({ "type": "content_block_stop", "index": index })));
    }
    events.push(sse(
        "message_delta",
        json!({
            "type": "message_delta",
            "delta": { "stop_reason": reply.stop_reason(), "stop_sequence": null },
            "usage": { "output_tokens": output_tokens(reply) },
        }),
    ));
    events.push(sse("message_stop", json!({ "type": "message_stop" })));
    events
}

/// The last `n` events as one write, after `gap`.
fn join_the_end(events: &mut Vec<(Duration, Result<String, std::io::Error>)>, n: usize, gap: Duration) {
    let end: String = events.drain(events.len().saturating_sub(n)..).filter_map(|(_, event)| event.ok()).collect();
    events.push((gap, Ok(end)));
}

/// Splits text into pieces of a few words that concatenate back to exactly `text`.
fn text_pieces(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_inclusive(char::is_whitespace).collect();
    words.chunks(WORDS_PER_DELTA).map(|c| c.concat()).collect()
}

/// Splits JSON text into short pieces, anywhere (as the real API does), on char boundaries.
fn json_pieces(json_text: &str) -> Vec<String> {
    let chars: Vec<char> = json_text.chars().collect();
    chars.chunks(JSON_CHARS_PER_DELTA).map(|c| c.iter().collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    async fn call(app: &Router, method: &str, uri: &str, body: &str) -> (StatusCode, Option<String>, String) {
        let request = Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", "application/json")
            .body(Body::from(body.to_owned()))
            .unwrap();
        let response = app.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let content_type = response.headers().get(header::CONTENT_TYPE).map(|v| v.to_str().unwrap().to_owned());
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, content_type, String::from_utf8(body.to_vec()).unwrap())
    }

    /// Parses an SSE body into (event name, data) pairs, checking the framing on the way.
    fn parse_sse(body: &str) -> Vec<(String, Value)> {
        assert!(body.ends_with("\n\n"), "the stream ends with a blank line: {body:?}");
        body.trim_end_matches('\n')
            .split("\n\n")
            .map(|event| {
                let mut lines = event.lines();
                let name = lines.next().unwrap().strip_prefix("event: ").expect("event line").to_owned();
                let data = lines.next().unwrap().strip_prefix("data: ").expect("data line");
                assert!(lines.next().is_none(), "one data line per event: {event:?}");
                let data: Value = serde_json::from_str(data).unwrap();
                assert_eq!(data["type"], name.as_str(), "the data's type is the event's name");
                (name, data)
            })
            .collect()
    }

    fn streaming_request(model: &str) -> String {
        json!({ "model": model, "max_tokens": 1024, "stream": true,
                "messages": [{ "role": "user", "content": "hi" }] })
        .to_string()
    }

    #[tokio::test]
    async fn streamed_reply_has_the_real_event_sequence_and_tool_input_round_trips() {
        let input = json!({ "questions": [{ "question": "Which auth method — JWT or sessions?", "header": "Auth",
                                            "options": [{ "label": "JWT" }, { "label": "Sessions" }] }] });
        let text = "Let me ask you a couple of things before I start.\nFirst: auth.";
        let script = vec![Reply::text(text).with(Block::ToolUse {
            id: "toolu_01".into(),
            name: "AskUserQuestion".into(),
            input: input.clone(),
        })];
        let shared = Arc::new(Shared::new(script));
        let app = router(shared.clone());

        let (status, content_type, body) =
            call(&app, "POST", "/v1/messages?beta=true", &streaming_request("claude-opus-5-5")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(content_type.as_deref(), Some("text/event-stream"));
        let events = parse_sse(&body);

        let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
        let mut expected = vec!["message_start", "ping", "content_block_start"];
        expected.extend(std::iter::repeat_n("content_block_delta", text_pieces(text).len()));
        expected.extend(["content_block_stop", "content_block_start"]);
        expected.extend(std::iter::repeat_n("content_block_delta", 1 + json_pieces(&input.to_string()).len()));
        expected.extend(["content_block_stop", "message_delta", "message_stop"]);
        assert_eq!(names, expected);

        let start = &events[0].1["message"];
        assert_eq!(start["id"], "msg_mock_0001");
        assert_eq!(start["model"], "claude-opus-5-5");
        assert_eq!(start["role"], "assistant");
        assert_eq!(start["content"], json!([]));
        assert!(start["stop_reason"].is_null());
        assert!(start["usage"]["input_tokens"].as_u64().unwrap() > 0);

        let of_block = |i: usize| events.iter().filter(move |(_, d)| d["index"] == i).map(|(_, d)| d);
        let text_events: Vec<&Value> = of_block(0).collect();
        assert_eq!(text_events[0]["content_block"], json!({ "type": "text", "text": "" }));
        assert!(text_events.len() > 3, "the text arrives in several deltas");
        let streamed_text: String = text_events
            .iter()
            .filter(|d| d["type"] == "content_block_delta")
            .map(|d| {
                assert_eq!(d["delta"]["type"], "text_delta");
                d["delta"]["text"].as_str().unwrap()
            })
            .collect();
        assert_eq!(streamed_text, text);

        let tool_events: Vec<&Value> = of_block(1).collect();
        assert_eq!(
            tool_events[0]["content_block"],
            json!({ "type": "tool_use", "id": "toolu_01", "name": "AskUserQuestion", "input": {} })
        );
        let partial: Vec<&str> = tool_events
            .iter()
            .filter(|d| d["type"] == "content_block_delta")
            .map(|d| {
                assert_eq!(d["delta"]["type"], "input_json_delta");
                d["delta"]["partial_json"].as_str().unwrap()
            })
            .collect();
        assert!(partial.len() > 2, "the tool input arrives in several chunks");
        assert_eq!(serde_json::from_str::<Value>(&partial.concat()).unwrap(), input);
        assert_eq!(tool_events.last().unwrap()["type"], "content_block_stop");

        let (_, delta) = &events[events.len() - 2];
        assert_eq!(delta["delta"], json!({ "stop_reason": "tool_use", "stop_sequence": null }));
        assert!(delta["usage"]["output_tokens"].as_u64().unwrap() > 0);
    }

    #[tokio::test]
    async fn requests_are_recorded_in_order_and_message_ids_count_up() {
        let shared = Arc::new(Shared::new(vec![Reply::text("one"), Reply::text("two")]));
        let app = router(shared.clone());
        let first = streaming_request("m1");
        let second = json!({ "model": "m2", "max_tokens": 10, "messages": [] });

        let (_, _, body) = call(&app, "POST", "/v1/messages?beta=true", &first).await;
        assert_eq!(parse_sse(&body)[0].1["message"]["id"], "msg_mock_0001");
        let (_, _, body) = call(&app, "POST", "/v1/messages", &second.to_string()).await;
        let message: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(message["id"], "msg_mock_0002");

        assert_eq!(shared.requests(), vec![serde_json::from_str::<Value>(&first).unwrap(), second.clone()]);
        let (status, _, body) = call(&app, "GET", "/_requests", "").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(serde_json::from_str::<Value>(&body).unwrap()[1], second);

        // What each reply said it used, as the agent was told it.
        let (_, _, body) = call(&app, "GET", "/_usage", "").await;
        let usage: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(usage[1]["model"], "m2");
        assert_eq!(usage[1]["input_tokens"], message["usage"]["input_tokens"]);
        assert_eq!(usage[1]["output_tokens"], message["usage"]["output_tokens"]);
        assert_eq!(usage[1]["side"], false);
    }

    #[tokio::test]
    async fn unstreamed_request_gets_the_complete_message() {
        let input = json!({ "command": "ls" });
        let shared = Arc::new(Shared::new(vec![Reply::text("Listing.").with(Block::ToolUse {
            id: "toolu_02".into(),
            name: "Bash".into(),
            input: input.clone(),
        })]));
        let app = router(shared);
        let request = json!({ "model": "claude-x", "max_tokens": 5, "messages": [] });
        let (status, content_type, body) = call(&app, "POST", "/v1/messages", &request.to_string()).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(content_type.as_deref(), Some("application/json"));
        let message: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(message["type"], "message");
        assert_eq!(message["role"], "assistant");
        assert_eq!(message["model"], "claude-x");
        assert_eq!(
            message["content"],
            json!([{ "type": "text", "text": "Listing." },
                   { "type": "tool_use", "id": "toolu_02", "name": "Bash", "input": input }])
        );
        assert_eq!(message["stop_reason"], "tool_use");
        assert!(message["stop_sequence"].is_null());
        assert!(message["usage"]["output_tokens"].as_u64().unwrap() > 0);
    }

    #[tokio::test]
    async fn exhausted_script_falls_back_to_a_fixed_text() {
        let shared = Arc::new(Shared::new(vec![Reply::text("only one")]));
        let app = router(shared.clone());
        call(&app, "POST", "/v1/messages", &streaming_request("m")).await;
        let (status, _, body) = call(&app, "POST", "/v1/messages", &streaming_request("m")).await;
        assert_eq!(status, StatusCode::OK);
        let events = parse_sse(&body);
        let text: String = events
            .iter()
            .filter(|(n, _)| n == "content_block_delta")
            .map(|(_, d)| d["delta"]["text"].as_str().unwrap())
            .collect();
        assert_eq!(text, NO_MORE_REPLIES);
        assert_eq!(events[events.len() - 2].1["delta"]["stop_reason"], "end_turn");
        assert_eq!(shared.requests().len(), 2, "the fallback's request is recorded too");
    }

    #[tokio::test]
    async fn count_tokens_answers_without_recording() {
        let shared = Arc::new(Shared::new(vec![]));
        let app = router(shared.clone());
        let body = json!({ "model": "m", "messages": [{ "role": "user", "content": "hello there" }] }).to_string();
        let (status, _, answer) = call(&app, "POST", "/v1/messages/count_tokens?beta=true", &body).await;
        assert_eq!(status, StatusCode::OK);
        let answer: Value = serde_json::from_str(&answer).unwrap();
        assert!(answer["input_tokens"].as_u64().unwrap() > 0);
        assert!(shared.requests().is_empty());
    }

    #[tokio::test]
    async fn the_model_list_comes_a_page_at_a_time_and_is_not_recorded() {
        let shared = Arc::new(Shared::new(vec![]));
        let app = router(shared.clone());
        let (status, _, first) = call(&app, "GET", "/v1/models?limit=2", "").await;
        assert_eq!(status, StatusCode::OK);
        let first: Value = serde_json::from_str(&first).unwrap();
        assert_eq!(first["data"].as_array().unwrap().len(), 2);
        assert_eq!((first["has_more"].clone(), first["last_id"].clone()), (json!(true), json!("claude-sonnet-5-5")));
        let (_, _, rest) = call(&app, "GET", "/v1/models?limit=2&after_id=claude-sonnet-5-5", "").await;
        let rest: Value = serde_json::from_str(&rest).unwrap();
        assert_eq!(rest["data"][0]["id"], "claude-haiku-5-5");
        assert_eq!(rest["has_more"], false);
        assert!(shared.requests().is_empty());
    }

    #[tokio::test]
    async fn unknown_endpoints_get_a_json_not_found() {
        let shared = Arc::new(Shared::new(vec![Reply::text("kept")]));
        let app = router(shared.clone());
        for (method, uri) in [("POST", "/v1/models"), ("GET", "/v1/messages"), ("POST", "/_requests")] {
            let (status, content_type, body) = call(&app, method, uri, "").await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{method} {uri}");
            assert_eq!(content_type.as_deref(), Some("application/json"));
            let error: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(error["type"], "error");
            assert_eq!(error["error"]["type"], "not_found_error");
            assert!(error["error"]["message"].as_str().unwrap().contains(uri));
        }
        assert!(shared.requests().is_empty());
        assert_eq!(shared.lock().script.len(), 1, "no reply was used up");
    }

    #[tokio::test]
    async fn a_body_that_is_not_json_is_refused_and_not_recorded() {
        let shared = Arc::new(Shared::new(vec![Reply::text("kept")]));
        let app = router(shared.clone());
        let (status, _, body) = call(&app, "POST", "/v1/messages", "not json").await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["error"]["type"], "invalid_request_error");
        assert!(shared.requests().is_empty());
    }

    #[test]
    fn tool_results_join_text_blocks_and_keep_the_first_of_each_id() {
        let turn = |blocks: Value| json!({ "role": "user", "content": blocks });
        let requests = vec![
            json!({ "messages": [turn(json!([{ "type": "tool_result", "tool_use_id": "a", "content": "plain" }]))] }),
            json!({ "messages": [
                turn(json!([{ "type": "tool_result", "tool_use_id": "a", "content": "plain" }])),
                { "role": "assistant", "content": "no blocks here" },
                turn(json!([
                    { "type": "text", "text": "not a result" },
                    { "type": "tool_result", "tool_use_id": "b", "is_error": true,
                      "content": [{ "type": "text", "text": "line 1" }, { "type": "image" },
                                  { "type": "text", "text": "line 2" }] },
                    { "type": "tool_result", "tool_use_id": "c", "is_error": false, "content": "ok",
                      "cache_control": { "type": "ephemeral" } },
                ])),
            ] }),
            json!({ "messages": [turn(json!([{ "type": "tool_result", "tool_use_id": "b", "content": "later" }]))] }),
        ];
        assert_eq!(
            tool_results_in(&requests),
            vec![
                ("a".to_owned(), "plain".to_owned(), false),
                ("b".to_owned(), "line 1\nline 2".to_owned(), true),
                ("c".to_owned(), "ok".to_owned(), false),
            ]
        );
    }

    #[test]
    fn text_and_json_pieces_concatenate_back() {
        for text in ["", "one", "a b c d e f g", "  lead and trail  ", "multi\nline\n\ntext — ünïcödé ✓"] {
            let pieces = text_pieces(text);
            assert_eq!(pieces.concat(), text);
            assert!(pieces.iter().all(|p| !p.is_empty()));
        }
        let json_text = json!({ "é": "ünïcödé ✓".repeat(9) }).to_string();
        assert_eq!(json_pieces(&json_text).concat(), json_text);
    }

    #[test]
    fn script_file_format_is_read() {
        let script = json!([
            "plain",
            { "content": [{ "type": "text", "text": "ask" },
                          { "type": "tool_use", "name": "AskUserQuestion", "input": { "questions": [] } }] },
            [{ "type": "tool_use", "id": "toolu_x", "name": "Bash", "input": { "command": "ls" } },
             { "type": "tool_use", "name": "Read" }],
        ]);
        let replies = script_from_json(&script).unwrap();
        assert_eq!(
            replies,
            vec![
                Reply::text("plain"),
                Reply::text("ask").with(Block::ToolUse {
                    id: "toolu_mock_0001".into(),
                    name: "AskUserQuestion".into(),
                    input: json!({ "questions": [] })
                }),
                Reply::tool_use("toolu_x", "Bash", json!({ "command": "ls" })).with(Block::ToolUse {
                    id: "toolu_mock_0002".into(),
                    name: "Read".into(),
                    input: json!({})
                }),
            ]
        );
        assert_eq!(script_from_json(&json!({ "replies": ["x"] })).unwrap(), vec![Reply::text("x")]);
        let slow = script_from_json(&json!([{ "content": ["late"], "when": "ping", "delay_ms": 1500 }])).unwrap();
        assert_eq!(slow, vec![Reply::text("late").when("ping").after(Duration::from_millis(1500))]);
        assert!(script_from_json(&json!({ "nope": 1 })).is_err());
        let error = script_from_json(&json!(["ok", [{ "type": "tool_use" }]])).unwrap_err();
        assert!(error.contains("reply 2") && error.contains("name"), "{error}");
        assert!(script_from_json(&json!([[]])).is_err());
    }

    #[test]
    fn script_file_format_plays_errors_cuts_and_max_tokens() {
        let script = json!([
            { "error": { "status": 529, "type": "overloaded_error", "message": "Overloaded", "retry_after": 2 } },
            { "content": ["cut"], "cut_after": 3 },
            { "content": [{ "type": "tool_use", "id": "t", "name": "AskUserQuestion" }], "stop": "max_tokens" },
        ]);
        let replies = script_from_json(&script).unwrap();
        assert_eq!(replies[0], Reply::error(529, "overloaded_error", "Overloaded", Some(2)));
        assert_eq!(replies[1], Reply::text("cut").ending(End::CutAfter(3)));
        assert_eq!(replies[2].end, End::MaxTokens);
        assert_eq!(replies[2].stop_reason(), "max_tokens");
        assert!(script_from_json(&json!([{ "content": ["x"], "stop": "pause_turn" }])).is_err());
    }

    #[tokio::test]
    async fn an_error_reply_is_an_api_error_with_retry_after_and_is_recorded() {
        let shared = Arc::new(Shared::new(vec![Reply::error(429, "rate_limit_error", "slow down", Some(3))]));
        let app = router(shared.clone());
        let request =
            Request::builder().method("POST").uri("/v1/messages").body(Body::from(streaming_request("m"))).unwrap();
        let response = app.oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "3");
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let error: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(error, json!({ "type": "error", "error": { "type": "rate_limit_error", "message": "slow down" } }));
        assert_eq!(shared.requests().len(), 1);
    }

    #[test]
    fn max_tokens_cuts_the_last_tool_calls_arguments_in_half() {
        let input = json!({ "questions": [{ "question": "A long enough question to need several chunks?" }] });
        let reply = Reply::tool_use("t", "AskUserQuestion", input.clone()).ending(End::MaxTokens);
        let events = sse_events(&reply, "msg", "m", 1);
        let partial: String = events
            .iter()
            .filter_map(|e| e.split_once("data: ").map(|(_, d)| serde_json::from_str::<Value>(d.trim()).unwrap()))
            .filter(|d| d["type"] == "content_block_delta")
            .map(|d| d["delta"]["partial_json"].as_str().unwrap().to_owned())
            .collect();
        let whole = input.to_string();
        assert!(!partial.is_empty() && whole.starts_with(&partial) && partial != whole);
        assert!(events.iter().any(|e| e.contains("\"stop_reason\":\"max_tokens\"")));
    }
}
