//! A mock of the Gemini API, as Gemini CLI 0.61 calls it (fixtures/acp/gemini_bash.api.jsonl):
//! `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` answered with server-sent events of
//! `GenerateContentResponse`s, whose parts are text or a `functionCall`; and the router's
//! `:generateContent`, which picks a model for the turn, answered with a fixed choice. Replies are
//! played in order, one per streamed request; every streamed request is recorded (and served at
//! `GET /_requests`).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// One scripted reply of the model.
#[derive(Debug, Clone)]
pub enum GeminiReply {
    Text(String),
    /// A tool call: Gemini CLI's tool name (`run_shell_command`) and its arguments.
    Call(String, Value),
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<GeminiReply>>,
    requests: Mutex<Vec<Value>>,
}

pub struct MockGemini {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _shutdown: oneshot::Sender<()>,
}

impl MockGemini {
    pub async fn start(script: Vec<GeminiReply>) -> Self {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.expect("mock Gemini: cannot listen");
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared { script: Mutex::new(script.into()), requests: Mutex::default() });
        let app = Router::new()
            .route("/v1beta/models/{call}", post(answer))
            .route("/_requests", axum::routing::get(recorded))
            .with_state(shared.clone());
        let (shutdown, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Self { addr, shared, _shutdown: shutdown }
    }

    /// For `GOOGLE_GEMINI_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The streamed requests so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// The `functionResponse` parts the model was sent, in order.
    pub fn function_responses(&self) -> Vec<Value> {
        let requests = self.requests();
        let mut seen: Vec<Value> = Vec::new();
        for request in &requests {
            for content in request["contents"].as_array().into_iter().flatten() {
                for part in content["parts"].as_array().into_iter().flatten() {
                    if let Some(response) = part.get("functionResponse")
                        && !seen.contains(response)
                    {
                        seen.push(response.clone());
                    }
                }
            }
        }
        seen
    }
}

/// `GET /_requests`: the streamed requests so far (for a test in another process).
async fn recorded(State(shared): State<Arc<Shared>>) -> axum::Json<Vec<Value>> {
    axum::Json(shared.requests.lock().unwrap().clone())
}

async fn answer(State(shared): State<Arc<Shared>>, Path(call): Path<String>, body: String) -> Response {
    let Ok(request) = serde_json::from_str::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    if call.ends_with(":generateContent") {
        // The router: which model takes the turn.
        let choice = json!({"reasoning": "a simple request", "model_choice": "flash"}).to_string();
        let response = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": choice}]}, "finishReason": "STOP"}],
                              "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2, "totalTokenCount": 7}});
        return ([(header::CONTENT_TYPE, "application/json")], response.to_string()).into_response();
    }
    if !call.ends_with(":streamGenerateContent") {
        return (StatusCode::NOT_FOUND, "unknown method").into_response();
    }
    shared.requests.lock().unwrap().push(request);
    let reply = shared.script.lock().unwrap().pop_front().unwrap_or(GeminiReply::Text("(no more replies)".into()));
    let part = match reply {
        GeminiReply::Text(text) => json!({"text": text}),
        GeminiReply::Call(name, args) => json!({"functionCall": {"name": name, "args": args}}),
    };
    let chunk = json!({"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
                       "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 2, "totalTokenCount": 12}});
    ([(header::CONTENT_TYPE, "text/event-stream")], format!("data: {chunk}\r\n\r\n")).into_response()
}
