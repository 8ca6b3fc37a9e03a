//! `POST /v1/messages` with `stream: true`: one attempt at a time, its failures sorted into what a
//! person can act on (a bad key, a busy API worth retrying, a request the API refused), and the
//! reply as a stream of the Messages API's [`Event`]s.

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures::{Stream, StreamExt};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderValue};

use super::wire::MessagesRequest;
use crate::agent::messages_api::{ErrorResponse, Event};

/// The API version this client speaks.
const ANTHROPIC_VERSION: &str = "2023-06-01";
/// Waiting this long for the first byte of a reply means something is wrong.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// A stream silent this long is taken as cut (the API pings every few seconds while it works).
pub const READ_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApiError {
    /// The API refused the request: the status, its error type and message, and when to retry.
    #[error("{}", describe_status(*status, kind, message))]
    Status { status: u16, kind: String, message: String, retry_after: Option<Duration> },
    /// No answer: the address is wrong, the network is down, or the connection dropped.
    #[error("cannot reach the Messages API at {url}: {detail}")]
    Unreachable { url: String, detail: String },
}

impl ApiError {
    /// Worth trying again after a pause: rate limits, an overloaded or failing API, a dropped
    /// connection.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Status { status, .. } => matches!(status, 408 | 409 | 429 | 500..=599),
            Self::Unreachable { .. } => true,
        }
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Status { retry_after, .. } => *retry_after,
            Self::Unreachable { .. } => None,
        }
    }

    /// Why it failed in a few words, for "…; retrying in 2 s".
    pub fn short(&self) -> String {
        match self {
            Self::Status { status: 429, .. } => "The Messages API is rate-limiting this key (429)".into(),
            Self::Status { status: 529, .. } => "The Messages API is overloaded (529)".into(),
            Self::Status { status, .. } => format!("The Messages API failed ({status})"),
            Self::Unreachable { .. } => "The Messages API cannot be reached".into(),
        }
    }
}

fn describe_status(status: u16, kind: &str, message: &str) -> String {
    let said = if message.is_empty() { String::new() } else { format!(" The API said: “{message}”") };
    match status {
        401 => {
            format!("The Anthropic API key was refused (401 {kind}): check ANTHROPIC_API_KEY or --api-key-file.{said}")
        }
        403 => format!("This API key may not use this model or feature (403 {kind}).{said}"),
        404 => format!(
            "The Messages API has no such model or address (404 {kind}): check --model and ANTHROPIC_BASE_URL.{said}"
        ),
        413 => format!("The conversation is too large for one request (413).{said}"),
        429 => format!("The Messages API is rate-limiting this key (429 {kind}).{said}"),
        529 => format!("The Messages API is overloaded (529 {kind}).{said}"),
        400..=499 => format!("The Messages API refused the request ({status} {kind}).{said}"),
        _ => format!("The Messages API failed ({status} {kind}).{said}"),
    }
}

pub struct MessagesClient {
    http: reqwest::Client,
    url: String,
    /// `GET /v1/models`.
    models_url: String,
    api_key: String,
}

/// A model as `GET /v1/models` lists it.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct ListedModel {
    pub id: String,
    #[serde(default)]
    pub display_name: String,
}

#[derive(serde::Deserialize)]
struct ModelPage {
    data: Vec<ListedModel>,
    #[serde(default)]
    has_more: bool,
    #[serde(default)]
    last_id: Option<String>,
}

/// Pages of `GET /v1/models` read at most (a thousand models).
const MODEL_PAGES: usize = 10;

impl MessagesClient {
    /// A client for the API at `base_url` (`https://api.anthropic.com`, or a proxy or mock).
    pub fn new(base_url: &str, api_key: &str) -> Result<Self, String> {
        // reqwest is built without a default crypto provider (no C toolchain beyond ring's):
        // install ring's, unless the process has one already.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .user_agent(concat!("askbridge/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot set up HTTPS: {e}"))?;
        let base = base_url.trim_end_matches('/');
        Ok(Self {
            http,
            url: format!("{base}/v1/messages"),
            models_url: format!("{base}/v1/models"),
            api_key: api_key.to_string(),
        })
    }

    /// The models this key may use, newest first, as the API lists them (every page).
    pub async fn models(&self) -> Result<Vec<ListedModel>, ApiError> {
        let mut models = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..MODEL_PAGES {
            let mut url = reqwest::Url::parse(&self.models_url)
                .map_err(|e| ApiError::Unreachable { url: self.models_url.clone(), detail: e.to_string() })?;
            url.query_pairs_mut().append_pair("limit", "100");
            if let Some(after) = &after {
                url.query_pairs_mut().append_pair("after_id", after);
            }
            let response = self
                .http
                .get(url)
                .header("x-api-key", &self.api_key)
                .header("anthropic-version", ANTHROPIC_VERSION)
                .send()
                .await
                .map_err(|e| ApiError::Unreachable { url: self.models_url.clone(), detail: error_chain(&e) })?;
            let status = response.status();
            let body = response.text().await.unwrap_or_default();
            if !status.is_success() {
                let (kind, message) = match serde_json::from_str::<ErrorResponse>(&body) {
                    Ok(error) => (error.error.kind, error.error.message),
                    Err(_) => (status.canonical_reason().unwrap_or("error").to_string(), String::new()),
                };
                return Err(ApiError::Status { status: status.as_u16(), kind, message, retry_after: None });
            }
            let page: ModelPage = serde_json::from_str(&body).map_err(|e| ApiError::Unreachable {
                url: self.models_url.clone(),
                detail: format!("the model list could not be read: {e}"),
            })?;
            models.extend(page.data);
            match page.last_id {
                Some(last) if page.has_more => after = Some(last),
                _ => break,
            }
        }
        Ok(models)
    }

    /// One attempt: sends the request and returns the reply's events once the API accepted it.
    pub async fn stream(
        &self,
        request: &MessagesRequest,
    ) -> Result<impl Stream<Item = Result<Event, String>> + Send + use<>, ApiError> {
        let response = self
            .http
            .post(&self.url)
            .header("x-api-key", &self.api_key)
            .header("anthropic-version", ANTHROPIC_VERSION)
            .header("accept", "text/event-stream")
            .json(request)
            .send()
            .await
            .map_err(|e| ApiError::Unreachable { url: self.url.clone(), detail: error_chain(&e) })?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = retry_after(response.headers());
            let body = response.text().await.unwrap_or_default();
            let (kind, message) = match serde_json::from_str::<ErrorResponse>(&body) {
                Ok(error) => (error.error.kind, error.error.message),
                Err(_) => {
                    (status.canonical_reason().unwrap_or("error").to_string(), body.trim().chars().take(300).collect())
                }
            };
            return Err(ApiError::Status { status: status.as_u16(), kind, message, retry_after });
        }
        if status != StatusCode::OK {
            tracing::debug!(%status, "unusual success status from the Messages API");
        }
        let events = response.bytes_stream().eventsource().map(|event| match event {
            Ok(event) => Event::parse(&event.data),
            Err(error) => Err(format!("the connection was cut ({error})")),
        });
        Ok(events)
    }
}

/// `retry-after` in seconds (or `retry-after-ms`), as the API sends it with 429 and 529.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |value: &HeaderValue| value.to_str().ok()?.trim().parse::<f64>().ok().filter(|n| *n >= 0.0);
    if let Some(ms) = headers.get("retry-after-ms").and_then(number) {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    headers.get(reqwest::header::RETRY_AFTER).and_then(number).map(Duration::from_secs_f64)
}

/// The error and its causes, which is where reqwest says what really happened.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_milliseconds() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(3)));
        headers.insert("retry-after-ms", HeaderValue::from_static("1500"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(1500)));
    }

    #[test]
    fn a_refused_key_is_said_plainly_and_not_retried() {
        let error = ApiError::Status {
            status: 401,
            kind: "authentication_error".into(),
            message: "invalid x-api-key".into(),
            retry_after: None,
        };
        assert!(!error.is_retryable());
        let text = error.to_string();
        assert!(text.starts_with("The Anthropic API key was refused (401 authentication_error)"), "{text}");
        assert!(text.contains("ANTHROPIC_API_KEY") && text.contains("invalid x-api-key"), "{text}");
        for status in [429, 529, 500, 503] {
            let error = ApiError::Status { status, kind: "x".into(), message: String::new(), retry_after: None };
            assert!(error.is_retryable(), "{status}");
        }
        assert!(
            !ApiError::Status { status: 400, kind: "x".into(), message: String::new(), retry_after: None }
                .is_retryable()
        );
    }
}
