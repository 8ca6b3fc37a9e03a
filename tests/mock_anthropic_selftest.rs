//! The mock Anthropic API over a real socket, through the API the integration tests use. The
//! router-level checks of the wire format are the module's own unit tests, which run here too.

use crate::support;

use std::time::Duration;

use askbridge::testing::wait_until;
use serde_json::{Value, json};
use support::mock_anthropic::{Block, MockAnthropic, NO_MORE_REPLIES, Reply};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A bare HTTP/1.1 exchange: no HTTP client crate is among the dependencies.
async fn http(base_url: &str, method: &str, path: &str, body: &str) -> (u16, String, String) {
    let addr = base_url.strip_prefix("http://").unwrap();
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let response = String::from_utf8(response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_ascii_lowercase(), body.to_owned())
}

/// The payload of a chunked body (hyper streams the SSE response chunked).
fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    loop {
        let (size, after) = rest.split_once("\r\n").unwrap();
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
}

/// The data of each event of an SSE body.
fn events(sse: &str) -> Vec<Value> {
    sse.lines().filter_map(|l| l.strip_prefix("data: ")).map(|d| serde_json::from_str(d).unwrap()).collect()
}

fn streaming_request(text: &str) -> String {
    json!({ "model": "claude-opus-5-5", "max_tokens": 100, "stream": true,
            "messages": [{ "role": "user", "content": [{ "type": "text", "text": text }] }] })
    .to_string()
}

#[tokio::test]
async fn serves_the_script_in_order_over_tcp_and_records_each_request() {
    let mock = MockAnthropic::start(vec![Reply::tool_use("toolu_a", "Bash", json!({ "command": "ls" }))]).await;
    assert!(mock.base_url().starts_with("http://127.0.0.1:"));
    mock.push(Reply::text("pushed at run time"));

    let (status, head, body) =
        http(&mock.base_url(), "POST", "/v1/messages?beta=true", &streaming_request("one")).await;
    assert_eq!(status, 200);
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    assert!(head.contains("cache-control: no-cache"), "{head}");
    let sse = dechunk(&body);
    assert!(sse.starts_with("event: message_start\ndata: {"), "{sse}");
    let data = events(&sse);
    assert_eq!(data[2]["content_block"], json!({ "type": "tool_use", "id": "toolu_a", "name": "Bash", "input": {} }));
    assert_eq!(data[data.len() - 2]["delta"]["stop_reason"], "tool_use");
    assert!(sse.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));

    let (_, _, body) = http(&mock.base_url(), "POST", "/v1/messages?beta=true", &streaming_request("two")).await;
    assert!(dechunk(&body).contains("msg_mock_0002"));
    let (_, _, body) = http(&mock.base_url(), "POST", "/v1/messages", &streaming_request("three")).await;
    let text: String = events(&dechunk(&body)).iter().filter_map(|d| d["delta"]["text"].as_str()).collect();
    assert_eq!(text, NO_MORE_REPLIES);

    let requests = mock.wait_for_requests(3, Duration::from_secs(5)).await;
    let texts: Vec<&str> = requests.iter().map(|r| r["messages"][0]["content"][0]["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["one", "two", "three"]);

    let (status, _, body) = http(&mock.base_url(), "GET", "/_requests", "").await;
    assert_eq!(status, 200);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), Value::Array(requests));
    let (status, _, _) = http(&mock.base_url(), "POST", "/v1/messages/count_tokens", &streaming_request("x")).await;
    assert_eq!(status, 200);
    let (status, _, body) = http(&mock.base_url(), "GET", "/v1/models", "").await;
    assert_eq!(status, 200);
    assert!(body.contains("claude-haiku-5-5"), "{body}");
    let (status, _, body) = http(&mock.base_url(), "GET", "/v1/files", "").await;
    assert_eq!(status, 404);
    assert!(body.contains("not_found_error"));
    assert_eq!(mock.requests().len(), 3, "only POST /v1/messages is recorded");
}

#[tokio::test]
async fn wait_for_requests_returns_once_the_request_arrives() {
    let mock = MockAnthropic::start(vec![]).await;
    let base_url = mock.base_url();
    let client = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        http(&base_url, "POST", "/v1/messages", &streaming_request("late")).await
    });
    let requests = mock.wait_for_requests(1, Duration::from_secs(5)).await;
    assert_eq!(requests[0]["messages"][0]["content"][0]["text"], "late");
    client.await.unwrap();
}

#[tokio::test]
#[should_panic(expected = "waited 50ms for 2 POST /v1/messages request(s) but got 1")]
async fn wait_for_requests_panics_with_what_it_saw() {
    let mock = MockAnthropic::start(vec![]).await;
    http(&mock.base_url(), "POST", "/v1/messages", &streaming_request("only")).await;
    mock.wait_for_requests(2, Duration::from_millis(50)).await;
}

#[tokio::test]
async fn tool_results_come_from_every_request() {
    let mock = MockAnthropic::start(vec![Reply::text("a"), Reply::text("b")]).await;
    let with_results = |results: Value| {
        json!({ "model": "m", "max_tokens": 5, "stream": true,
                "messages": [{ "role": "user", "content": results }] })
        .to_string()
    };
    let first = with_results(json!([{ "type": "tool_result", "tool_use_id": "t1", "content": "Your answer" }]));
    let second = with_results(json!([
        { "type": "tool_result", "tool_use_id": "t1", "content": "Your answer" },
        { "type": "tool_result", "tool_use_id": "t2", "is_error": true,
          "content": [{ "type": "text", "text": "denied" }] },
    ]));
    http(&mock.base_url(), "POST", "/v1/messages", &first).await;
    http(&mock.base_url(), "POST", "/v1/messages", &second).await;
    assert_eq!(
        mock.tool_results(),
        vec![("t1".into(), "Your answer".into(), false), ("t2".into(), "denied".into(), true)]
    );
}

#[tokio::test]
async fn reply_builder_sets_the_stop_reason() {
    assert_eq!(Reply::text("x").stop_reason(), "end_turn");
    let mixed = Reply::text("x").with(Block::ToolUse { id: "t".into(), name: "Bash".into(), input: json!({}) });
    assert_eq!(mixed.stop_reason(), "tool_use");
    assert_eq!(mixed.blocks.len(), 2);
}

#[tokio::test]
async fn dropping_the_mock_stops_the_server() {
    let mock = MockAnthropic::start_on(0, vec![]).await.unwrap();
    let addr = mock.base_url().strip_prefix("http://").unwrap().to_owned();
    TcpStream::connect(&addr).await.expect("listening while alive");
    drop(mock);
    wait_until("the mock to stop listening after the drop", Duration::from_secs(5), || async {
        TcpStream::connect(&addr).await.is_err().then_some(())
    })
    .await;
}
