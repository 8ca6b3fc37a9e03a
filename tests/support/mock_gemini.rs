//! A mock of the Gemini API, as Gemini CLI 0.61 calls it (fixtures/acp/gemini_bash.api.jsonl):
//! `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` answered with server-sent events of
//! `GenerateContentResponse`s, whose parts are text or a `functionCall`; and the router's
//! `:generateContent`, which picks a model for the turn, answered with a fixed choice. Replies are
//! played in order, one per streamed request; every streamed request is recorded (and served at
//! `GET /_requests`).

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

use super::scripted_model::{ModelReply, Script, ScriptedModel};

/// One scripted reply of the model: a text, or a tool call (Gemini CLI's `run_shell_command`)
/// with its arguments.
pub type GeminiReply = ModelReply;

pub struct MockGemini(ScriptedModel);

impl MockGemini {
    pub async fn start(script: Vec<GeminiReply>) -> Self {
        let routes = Router::new().route("/v1beta/models/{call}", post(answer));
        Self(ScriptedModel::serve("mock Gemini", script, routes).await)
    }

    /// For `GOOGLE_GEMINI_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.0.addr)
    }

    /// The streamed requests so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.0.script.requests()
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

async fn answer(State(script): State<Arc<Script>>, Path(call): Path<String>, body: String) -> Response {
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
    script.record(request);
    let reply = script.next_reply();
    let part = match reply {
        GeminiReply::Text(text) => json!({"text": text}),
        GeminiReply::Call(name, args) => json!({"functionCall": {"name": name, "args": args}}),
    };
    let chunk = json!({"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
                       "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 2, "totalTokenCount": 12}});
    ([(header::CONTENT_TYPE, "text/event-stream")], format!("data: {chunk}\r\n\r\n")).into_response()
}
