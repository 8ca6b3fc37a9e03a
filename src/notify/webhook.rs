//! Webhooks (`--notify-url`): for people who live in ntfy, Slack or a script. Each question and
//! permission request that opens, and each that parks, is POSTed to every address, in the shape
//! the address calls for:
//!
//! - **ntfy**: an address on `ntfy.sh`, or on a host whose name starts with `ntfy.` (how
//!   self-hosted ntfy servers are usually named), whose path is one topic name; or any address
//!   written `ntfy+https://…/TOPIC`. Sent in ntfy's JSON publishing format (to the server's root,
//!   `{topic, title, message, click, tags, priority}`), which carries any text, where headers
//!   carry only ASCII.
//! - **Slack**: an incoming webhook, `https://hooks.slack.com/services/…` (or `slack+https://…`):
//!   `{text, blocks}` with the link.
//! - **anything else** (or `json+https://…`): `{event, session, title, folder, kind, question,
//!   options, url}`.
//!
//! Each try has a timeout, failures that may pass are tried again a bounded number of times, and
//! all of it runs on its own task: a slow or dead receiver never holds up an agent. An address is
//! logged by its host only: a Slack webhook's path is its secret.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tracing::{debug, warn};

use super::notice::Ask;
use super::web_push::{RetryPolicy, first_line, retry_after};
use super::{Detail, LazyClient};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookKind {
    Json,
    Ntfy,
    Slack,
}

/// One `--notify-url`.
#[derive(Clone, PartialEq, Eq)]
pub struct Webhook {
    url: reqwest::Url,
    kind: WebhookKind,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl std::str::FromStr for Webhook {
    type Err = String;

    fn from_str(address: &str) -> Result<Self, String> {
        Self::parse(address)
    }
}

/// ntfy's topic names: letters, digits, `-` and `_`, at most 64.
fn is_ntfy_topic(segment: &str) -> bool {
    (1..=64).contains(&segment.len()) && segment.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl Webhook {
    /// Reads an address, and which kind of receiver it is (see the module's rules).
    pub fn parse(address: &str) -> Result<Self, String> {
        let address = address.trim();
        let (forced, rest) = match address.split_once('+') {
            Some(("ntfy", rest)) => (Some(WebhookKind::Ntfy), rest),
            Some(("slack", rest)) => (Some(WebhookKind::Slack), rest),
            Some(("json", rest)) => (Some(WebhookKind::Json), rest),
            _ => (None, address),
        };
        let url = reqwest::Url::parse(rest).map_err(|error| format!("--notify-url: not an address ({error})"))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
            return Err("--notify-url: the address must start with https:// (or http://)".into());
        }
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        let segments: Vec<&str> =
            url.path_segments().map(|s| s.filter(|s| !s.is_empty()).collect()).unwrap_or_default();
        let one_topic = segments.len() == 1 && is_ntfy_topic(segments[0]);
        let kind = forced.unwrap_or_else(|| {
            let ntfy_host = host == "ntfy.sh" || host.ends_with(".ntfy.sh") || host.starts_with("ntfy.");
            if ntfy_host && one_topic {
                WebhookKind::Ntfy
            } else if host == "hooks.slack.com" && url.path().starts_with("/services/") {
                WebhookKind::Slack
            } else {
                WebhookKind::Json
            }
        });
        if kind == WebhookKind::Ntfy && !segments.last().is_some_and(|topic| is_ntfy_topic(topic)) {
            return Err("--notify-url: an ntfy address ends with its topic: https://ntfy.sh/TOPIC".into());
        }
        if host == "ntfy.sh" && kind == WebhookKind::Json && !one_topic {
            return Err(
                "--notify-url: an ntfy address is https://ntfy.sh/TOPIC (a topic name of letters, digits, - and _)"
                    .into(),
            );
        }
        Ok(Self { url, kind })
    }

    pub fn kind(&self) -> WebhookKind {
        self.kind
    }

    /// The receiver, for logs: its kind and host, never its path or query.
    /// Its host: the operator named it, so the server's requests may reach it wherever it is.
    pub fn host(&self) -> Option<String> {
        self.url.host_str().map(str::to_string)
    }

    pub fn describe(&self) -> String {
        format!("{:?} webhook at {}", self.kind, self.url.host_str().unwrap_or_default()).to_lowercase()
    }

    /// Where to POST, and what, for `ask`; `base_url` is the server's address for people.
    pub fn request(&self, ask: &Ask, detail: Detail, base_url: &str) -> (reqwest::Url, Value) {
        let link = format!("{}{}", base_url.trim_end_matches('/'), ask.path());
        match self.kind {
            WebhookKind::Json => (self.url.clone(), ask.webhook_json(detail, base_url)),
            WebhookKind::Ntfy => {
                // JSON is published to the server's root, the topic in the body.
                let mut root = self.url.clone();
                let topic =
                    root.path_segments().and_then(|mut s| s.rfind(|s| !s.is_empty())).unwrap_or_default().to_string();
                if let Ok(mut path) = root.path_segments_mut() {
                    path.pop_if_empty().pop().push("");
                }
                let (title, message) = ask.words(detail);
                let tags = match (detail, ask.kind) {
                    (Detail::Minimal, _) => "bell",
                    (Detail::Full, super::notice::AskKind::Question) => "question",
                    (Detail::Full, super::notice::AskKind::Permission) => "lock",
                };
                let body = json!({
                    "topic": topic, "title": title, "message": message, "click": link, "tags": [tags], "priority": 4,
                    "actions": [{"action": "view", "label": "Open", "url": link}],
                });
                (root, body)
            }
            WebhookKind::Slack => {
                let (title, message) = ask.words(detail);
                let text = format!("*{}*\n{}\n<{}|Open the card>", slack_escape(&title), slack_escape(&message), link);
                let blocks = json!([{"type": "section", "text": {"type": "mrkdwn", "text": text}}]);
                (self.url.clone(), json!({"text": text, "blocks": blocks}))
            }
        }
    }
}

/// Slack's mrkdwn gives `&`, `<` and `>` meaning: they are written as entities.
fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// Posts notices to webhooks.
#[derive(Clone)]
pub struct WebhookSender {
    http: Arc<LazyClient>,
    retry: RetryPolicy,
}

impl WebhookSender {
    pub fn new(retry: RetryPolicy) -> Self {
        Self::with_client(Arc::default(), retry)
    }

    pub(crate) fn with_client(http: Arc<LazyClient>, retry: RetryPolicy) -> Self {
        Self { http, retry }
    }

    /// POSTs `body` to `url` until the receiver takes it (2xx), refuses it for good (4xx other
    /// than 408 and 429), or the tries run out. True when it was taken.
    pub async fn send(&self, hook: &Webhook, url: reqwest::Url, body: &Value) -> bool {
        let http = match self.http.get() {
            Ok(http) => http,
            Err(error) => {
                warn!(webhook = %hook.describe(), %error, "cannot send webhooks");
                return false;
            }
        };
        for attempt in 1..=self.retry.attempts {
            let sent = http.post(url.clone()).timeout(self.retry.timeout).json(body).send().await;
            let (why, after) = match sent {
                Ok(response) => {
                    let status = response.status().as_u16();
                    let after = retry_after(response.headers());
                    let text = response.text().await.unwrap_or_default();
                    match status {
                        200..=299 => return true,
                        408 | 429 | 500..=599 => (format!("{status} {}", first_line(&text)), after),
                        _ => {
                            warn!(webhook = %hook.describe(), status, answer = first_line(&text), "a webhook refused a notice");
                            return false;
                        }
                    }
                }
                Err(error) if error.is_timeout() => (format!("no answer within {:?}", self.retry.timeout), None),
                Err(error) => (error.to_string(), None),
            };
            if attempt == self.retry.attempts {
                warn!(webhook = %hook.describe(), attempts = attempt, last = %why, "gave up on a webhook");
                return false;
            }
            let wait = self.retry.delay(attempt, after);
            debug!(webhook = %hook.describe(), attempt, ?wait, %why, "webhook failed; trying again");
            tokio::time::sleep(wait).await;
        }
        false
    }
}

/// The longest one webhook try may take by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::InteractionRequest;
    use crate::notify::notice::AskEvent;
    use crate::question::{Choice, Question};
    use crate::thread::SessionSummary;
    use proptest::prelude::*;

    fn ask() -> Ask {
        let session = SessionSummary {
            id: "s1".into(),
            title: "Fix <login> & co".into(),
            agent: "scripted".into(),
            created_at_ms: 0,
            updated_at_ms: 0,
            working: true,
            waiting: true,
            workdir: Some("/srv/app".into()),
            active_at_ms: 0,
            terminal: None,
            matched: None,
        };
        let question = Question {
            header: String::new(),
            question: "Which auth?".into(),
            options: vec![
                Choice { label: "JWT".into(), description: None, preview: None },
                Choice { label: "Sessions".into(), description: None, preview: None },
            ],
            multi_select: false,
        };
        Ask::of(AskEvent::Opened, &session, "t1", &InteractionRequest::Question { questions: vec![question] }).unwrap()
    }

    #[test]
    fn receivers_are_recognised_by_their_address() {
        let kind = |address: &str| Webhook::parse(address).unwrap().kind();
        assert_eq!(kind("https://ntfy.sh/askbridge-me"), WebhookKind::Ntfy);
        assert_eq!(kind("https://ntfy.example.org/alerts"), WebhookKind::Ntfy);
        assert_eq!(kind("ntfy+https://push.example.org/ntfy/alerts"), WebhookKind::Ntfy);
        assert_eq!(kind("https://hooks.slack.com/services/T000/B000/XXXX"), WebhookKind::Slack);
        assert_eq!(kind("slack+http://127.0.0.1:9/hook"), WebhookKind::Slack);
        assert_eq!(kind("https://example.com/hooks/askbridge"), WebhookKind::Json);
        assert_eq!(kind("https://example.com/alerts"), WebhookKind::Json, "one segment on another host is not ntfy");
        assert_eq!(kind("json+https://ntfy.example.org/alerts"), WebhookKind::Json);
        assert!(Webhook::parse("https://ntfy.sh/").is_err());
        assert!(Webhook::parse("https://ntfy.sh/a/b").is_err());
        assert!(Webhook::parse("ftp://example.com/x").is_err());
        assert!(Webhook::parse("not a url").is_err());
    }

    #[test]
    fn a_webhook_is_described_without_its_secret_path() {
        let hook = Webhook::parse("https://hooks.slack.com/services/T000/B000/SECRET").unwrap();
        assert_eq!(hook.describe(), "slack webhook at hooks.slack.com");
        assert!(!format!("{hook:?}").contains("SECRET"));
    }

    #[test]
    fn the_generic_shape_carries_what_the_card_shows() {
        let hook = Webhook::parse("https://example.com/hook").unwrap();
        let (url, body) = hook.request(&ask(), Detail::Full, "https://ab.example.com");
        assert_eq!(url.as_str(), "https://example.com/hook");
        assert_eq!(
            body,
            json!({"event": "opened", "session": "s1", "title": "Fix <login> & co", "folder": "/srv/app",
                   "kind": "question", "question": "Which auth?", "options": ["JWT", "Sessions"],
                   "url": "https://ab.example.com/s/s1#t1"})
        );
    }

    #[test]
    fn ntfy_gets_its_json_publishing_format_at_the_servers_root() {
        let hook = Webhook::parse("https://ntfy.sh/askbridge-me?auth=tk").unwrap();
        let (url, body) = hook.request(&ask(), Detail::Full, "https://ab.example.com/");
        assert_eq!(url.as_str(), "https://ntfy.sh/?auth=tk");
        assert_eq!(body["topic"], "askbridge-me");
        assert_eq!(body["title"], "Question · Fix <login> & co");
        assert_eq!(body["message"], "Which auth?\nJWT · Sessions");
        assert_eq!(body["click"], "https://ab.example.com/s/s1#t1");
        assert_eq!(body["tags"], json!(["question"]));
        let hosted = Webhook::parse("ntfy+https://example.org/ntfy/alerts").unwrap();
        assert_eq!(hosted.request(&ask(), Detail::Minimal, "http://x").0.as_str(), "https://example.org/ntfy/");
    }

    #[test]
    fn slack_gets_text_and_blocks_with_the_link_and_its_characters_escaped() {
        let hook = Webhook::parse("https://hooks.slack.com/services/T/B/X").unwrap();
        let (_, body) = hook.request(&ask(), Detail::Full, "https://ab.example.com");
        let text = body["text"].as_str().unwrap();
        assert!(text.starts_with("*Question · Fix &lt;login&gt; &amp; co*\nWhich auth?"), "{text}");
        assert!(text.ends_with("<https://ab.example.com/s/s1#t1|Open the card>"), "{text}");
        assert_eq!(body["blocks"][0]["text"]["text"], text);
        let (_, minimal) = hook.request(&ask(), Detail::Minimal, "https://ab.example.com");
        assert!(!minimal["text"].as_str().unwrap().contains("Which auth"));
    }

    proptest! {
        #[test]
        fn any_address_is_read_or_refused_without_panicking(address in ".{0,200}") {
            let _ = Webhook::parse(&address);
        }

        #[test]
        fn any_url_like_address_is_read_or_refused_without_panicking(
            prefix in "(ntfy\\+|slack\\+|json\\+)?", scheme in "https?", host in "[a-z0-9.-]{0,30}", path in "[ -~]{0,60}"
        ) {
            if let Ok(hook) = Webhook::parse(&format!("{prefix}{scheme}://{host}/{path}")) {
                let _ = hook.request(&ask(), Detail::Full, "https://x");
            }
        }
    }
}
