//! What the mocks of the other model APIs share (Gemini's, `mock_gemini.rs`; OpenAI's Responses
//! API, `mock_openai.rs`): the model's replies as a script, played one per request, every request
//! recorded (and served at `GET /_requests`, for a test in another process), and the server on a
//! loopback port the system picks, until the mock is dropped. Each mock adds its API's routes and
//! wire format.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use serde_json::Value;
use tokio::sync::oneshot;

/// One scripted reply of the model.
#[derive(Debug, Clone)]
pub enum ModelReply {
    Text(String),
    /// A call of a tool: its name (Gemini CLI's `run_shell_command`, Codex's `exec_command`,
    /// `request_user_input`, OpenCode's `bash`) and its arguments.
    Call(String, Value),
}

/// The replies still to play, and the requests so far.
pub struct Script {
    replies: Mutex<VecDeque<ModelReply>>,
    requests: Mutex<Vec<Value>>,
}

impl Script {
    /// Records `request`; its number, from 1.
    pub fn record(&self, request: Value) -> usize {
        let mut requests = self.requests.lock().unwrap();
        requests.push(request);
        requests.len()
    }

    /// The next reply, or a text that says the script ran out.
    pub fn next_reply(&self) -> ModelReply {
        self.replies.lock().unwrap().pop_front().unwrap_or(ModelReply::Text("(no more replies)".into()))
    }

    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }
}

/// A mock serving its routes: where it listens, and its script; it stops when dropped.
pub struct ScriptedModel {
    pub addr: SocketAddr,
    pub script: Arc<Script>,
    _shutdown: oneshot::Sender<()>,
}

impl ScriptedModel {
    /// Serves `routes` (with `GET /_requests`) over `replies`; `what` names the mock in a panic.
    pub async fn serve(what: &str, replies: Vec<ModelReply>, routes: Router<Arc<Script>>) -> Self {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .unwrap_or_else(|error| panic!("{what}: cannot listen: {error}"));
        let addr = listener.local_addr().unwrap();
        let script = Arc::new(Script { replies: Mutex::new(replies.into()), requests: Mutex::default() });
        let app = routes.route("/_requests", get(recorded)).with_state(script.clone());
        let (shutdown, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Self { addr, script, _shutdown: shutdown }
    }
}

/// `GET /_requests`: the requests so far.
async fn recorded(State(script): State<Arc<Script>>) -> axum::Json<Vec<Value>> {
    axum::Json(script.requests())
}
