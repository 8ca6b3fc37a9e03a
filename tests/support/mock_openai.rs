//! A mock of OpenAI's Responses API, as Codex (0.166, through its ACP adapter) and OpenCode
//! (1.18, its `@ai-sdk/openai` provider) call it: `POST /v1/responses` with `stream: true`,
//! answered with the server-sent events of one response (`response.created`, an output item per
//! reply part, `response.output_text.delta` / `response.function_call_arguments.delta`,
//! `response.completed` with its usage). Replies are played in order, one per request; a request
//! that only names the conversation (OpenCode's title) takes the side reply instead. Every
//! request is recorded (and served at `GET /_requests`).

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use super::scripted_model::{ModelReply, Script, ScriptedModel};

/// One scripted reply of the model: a text, or a function call (`exec_command`,
/// `request_user_input`, `bash`) with its arguments.
pub type OpenAiReply = ModelReply;

pub struct MockOpenAi(ScriptedModel);

impl MockOpenAi {
    pub async fn start(script: Vec<OpenAiReply>) -> Self {
        let routes = Router::new()
            .route("/v1/responses", post(answer))
            .route("/v1/models", get(|| async { axum::Json(json!({"object": "list", "data": []})) }));
        Self(ScriptedModel::serve("mock OpenAI", script, routes).await)
    }

    /// The API's base, with its `/v1` (Codex's `base_url`, OpenCode's `baseURL`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.0.addr)
    }

    /// The requests so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.0.script.requests()
    }

    /// The `function_call_output` items the model was sent (each once), in order.
    pub fn function_outputs(&self) -> Vec<Value> {
        let mut seen: Vec<Value> = Vec::new();
        for request in self.requests() {
            for item in request["input"].as_array().into_iter().flatten() {
                if item["type"] == "function_call_output" {
                    let output = json!({"call_id": item["call_id"], "output": item["output"]});
                    if !seen.contains(&output) {
                        seen.push(output);
                    }
                }
            }
        }
        seen
    }
}

async fn answer(State(script): State<Arc<Script>>, body: String) -> Response {
    let Ok(request) = serde_json::from_str::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    // OpenCode asks its small model for the session's title with no tools: not the conversation.
    let side = request["tools"].as_array().is_none_or(Vec::is_empty);
    let number = script.record(request);
    let reply = match side {
        true => OpenAiReply::Text("Mock title".into()),
        false => script.next_reply(),
    };
    let events = response_events(number, reply);
    ([(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")], events).into_response()
}

/// The stream of one response with one output item.
fn response_events(number: usize, reply: OpenAiReply) -> String {
    let id = format!("resp_{number}");
    let item_id = format!("item_{number}");
    let (added, delta, done) = match reply {
        OpenAiReply::Text(text) => (
            json!({"type": "message", "id": item_id, "role": "assistant", "status": "in_progress", "content": []}),
            json!({"type": "response.output_text.delta", "item_id": item_id, "output_index": 0,
                   "content_index": 0, "delta": text}),
            json!({"type": "message", "id": item_id, "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": text, "annotations": []}]}),
        ),
        OpenAiReply::Call(name, arguments) => {
            let arguments = arguments.to_string();
            let call = |arguments: &str, status: &str| {
                json!({"type": "function_call", "id": item_id, "call_id": format!("call_{number}"),
                       "name": name, "arguments": arguments, "status": status})
            };
            (
                call("", "in_progress"),
                json!({"type": "response.function_call_arguments.delta", "item_id": item_id,
                       "output_index": 0, "delta": arguments}),
                call(&arguments, "completed"),
            )
        }
    };
    let usage = json!({"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                       "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15});
    let events = [
        json!({"type": "response.created", "response": {"id": id, "object": "response", "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": added}),
        delta,
        json!({"type": "response.output_item.done", "output_index": 0, "item": done.clone()}),
        json!({"type": "response.completed", "response": {"id": id, "object": "response", "status": "completed",
                                                           "output": [done], "usage": usage}}),
    ];
    events.iter().map(|event| format!("event: {}\ndata: {event}\n\n", event["type"].as_str().unwrap_or(""))).collect()
}
