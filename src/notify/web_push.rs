//! Sending one push message to one browser (RFC 8030): the subscription the browser gave, the
//! payload encrypted to it (`ece`), the server's VAPID token (`vapid`), and what the push
//! service's answer means — delivered, gone for good (404, 410: the subscription is to be
//! deleted), refused, or worth another try after a while (429, 5xx, no answer), a bounded number
//! of times.
//!
//! Logs name a push service by its origin only: an endpoint's path is what lets anyone push to
//! that browser.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use tracing::{debug, warn};

use super::LazyClient;
use super::ece::{self, AUTH_BYTES, P256DH_BYTES};
use super::vapid::LazyVapidKey;

/// The longest endpoint accepted. Push services' endpoints are a few hundred bytes (FCM's about
/// 200, Mozilla's about 250); a longer one is no browser's.
pub const MAX_ENDPOINT_BYTES: usize = 2048;

/// Why a subscription the page sent is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubscriptionError {
    #[error("the endpoint is longer than {MAX_ENDPOINT_BYTES} bytes")]
    EndpointTooLong,
    #[error("the endpoint is not a URL")]
    EndpointNotUrl,
    #[error("the endpoint must be an https address (http only on this machine's loopback, for tests)")]
    EndpointNotHttps,
    #[error("the endpoint must not carry a user name or password")]
    EndpointWithCredentials,
    #[error("keys.p256dh is not a P-256 public key (65 bytes, base64url)")]
    BadP256dh,
    #[error("keys.auth is not a 16-byte secret (base64url)")]
    BadAuth,
}

/// A browser's push subscription (`PushSubscription.toJSON()`), checked.
#[derive(Clone, PartialEq, Eq)]
pub struct Subscription {
    endpoint: reqwest::Url,
    p256dh: Vec<u8>,
    auth: [u8; AUTH_BYTES],
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription").field("push_service", &self.push_service()).finish_non_exhaustive()
    }
}

impl Subscription {
    /// The subscription of `endpoint` with the browser's keys as `toJSON()` gives them
    /// (base64url; padding and the standard alphabet are accepted too).
    pub fn parse(endpoint: &str, p256dh: &str, auth: &str) -> Result<Self, SubscriptionError> {
        if endpoint.len() > MAX_ENDPOINT_BYTES {
            return Err(SubscriptionError::EndpointTooLong);
        }
        let url = reqwest::Url::parse(endpoint).map_err(|_| SubscriptionError::EndpointNotUrl)?;
        let host = url.host_str().filter(|host| !host.is_empty()).ok_or(SubscriptionError::EndpointNotUrl)?;
        let loopback = host.eq_ignore_ascii_case("localhost")
            || host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        // A browser's push service is always https. Plain http is for a push service on this
        // machine (the tests'); a person who can sign in could make the server post encrypted
        // pushes to its own loopback, which is less than the agent they drive can do.
        if !(url.scheme() == "https" || (url.scheme() == "http" && loopback)) {
            return Err(SubscriptionError::EndpointNotHttps);
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(SubscriptionError::EndpointWithCredentials);
        }
        let p256dh = decode_key(p256dh, P256DH_BYTES).ok_or(SubscriptionError::BadP256dh)?;
        if !ece::is_usable_key(&p256dh) {
            return Err(SubscriptionError::BadP256dh);
        }
        let auth = decode_key(auth, AUTH_BYTES).ok_or(SubscriptionError::BadAuth)?;
        let auth = auth.try_into().map_err(|_| SubscriptionError::BadAuth)?;
        Ok(Self { endpoint: url, p256dh, auth })
    }

    pub fn endpoint(&self) -> &str {
        self.endpoint.as_str()
    }

    pub fn url(&self) -> &reqwest::Url {
        &self.endpoint
    }

    /// The keys as stored: base64url without padding.
    pub fn p256dh_base64(&self) -> String {
        URL_SAFE_NO_PAD.encode(&self.p256dh)
    }

    pub fn auth_base64(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.auth)
    }

    /// The push service, for logs: the endpoint's origin, never its path.
    pub fn push_service(&self) -> String {
        self.endpoint.origin().ascii_serialization()
    }
}

/// A key in base64url (or standard base64, padded or not) of exactly `len` bytes.
fn decode_key(text: &str, len: usize) -> Option<Vec<u8>> {
    // Four characters per three bytes, and a little room for padding.
    if text.len() > len * 4 / 3 + 4 {
        return None;
    }
    let unpadded = text.trim_end_matches('=').replace('+', "-").replace('/', "_");
    let bytes = URL_SAFE_NO_PAD.decode(unpadded).ok()?;
    (bytes.len() == len).then_some(bytes)
}

/// RFC 8030 §5.3: how soon the push service should wake the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Urgency {
    Normal,
    High,
}

impl Urgency {
    fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::High => "high",
        }
    }
}

/// One push, before it is encrypted for each browser.
#[derive(Debug, Clone)]
pub struct PushMessage {
    /// The JSON the service worker reads.
    pub payload: Vec<u8>,
    /// How long the push service keeps it for a device that is offline (RFC 8030 §5.2).
    pub ttl: Duration,
    pub urgency: Urgency,
    /// A push with the same topic replaces one the push service still holds (RFC 8030 §5.4): a
    /// question's "answered" replaces its "asked" on a phone that was offline. At most 32
    /// characters of the base64url alphabet.
    pub topic: Option<String>,
}

/// How many times, how far apart, and how long each try may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries in all (the first included).
    pub attempts: u32,
    /// The wait before the second try; it doubles for each further one.
    pub first_delay: Duration,
    /// The longest wait between tries (a push service's `Retry-After` included).
    pub max_delay: Duration,
    /// The longest one try may take, from connecting to the answer's end.
    pub timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 4,
            first_delay: Duration::from_secs(2),
            max_delay: Duration::from_secs(60),
            timeout: Duration::from_secs(15),
        }
    }
}

impl RetryPolicy {
    /// The wait after failed try `attempt` (1-based): doubling from `first_delay`, or what the
    /// other side asked for, never more than `max_delay`.
    pub fn delay(&self, attempt: u32, asked: Option<Duration>) -> Duration {
        let doubled = self.first_delay.saturating_mul(1u32 << (attempt - 1).min(16));
        asked.unwrap_or(doubled).min(self.max_delay)
    }
}

/// What became of one push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// The push service took it (2xx).
    Delivered,
    /// 404 or 410: the subscription is gone for good (RFC 8030 §7.3).
    Gone,
    /// An answer that another try would not change (400, 401, 403, 413…).
    Refused { status: u16 },
    /// Every try failed (5xx, 429, no answer).
    GaveUp { last: String },
}

/// What one try came to.
enum Attempt {
    Done(Delivery),
    Again { why: String, after: Option<Duration> },
}

/// Sends pushes: the HTTPS client shared by every push and webhook, the server's VAPID key.
#[derive(Clone)]
pub struct PushSender {
    http: Arc<LazyClient>,
    vapid: Arc<LazyVapidKey>,
    contact: String,
    retry: RetryPolicy,
}

impl PushSender {
    /// `contact` is VAPID's subject: a `mailto:` or `https:` address of whoever runs the server.
    pub fn new(vapid: Arc<LazyVapidKey>, contact: &str, retry: RetryPolicy) -> Self {
        Self::with_client(Arc::default(), vapid, contact, retry)
    }

    pub(crate) fn with_client(
        http: Arc<LazyClient>,
        vapid: Arc<LazyVapidKey>,
        contact: &str,
        retry: RetryPolicy,
    ) -> Self {
        Self { http, vapid, contact: contact.to_string(), retry }
    }

    pub fn vapid(&self) -> &LazyVapidKey {
        &self.vapid
    }

    /// Sends `message` to `subscription`, trying again (with a growing wait) while the push
    /// service fails in a way that may pass.
    pub async fn send(&self, subscription: &Subscription, message: &PushMessage) -> Delivery {
        let body = match ece::encrypt(&subscription.p256dh, &subscription.auth, &message.payload) {
            Ok(body) => body,
            Err(error) => {
                warn!(push_service = %subscription.push_service(), %error, "could not encrypt a push");
                return Delivery::GaveUp { last: error.to_string() };
            }
        };
        let mut attempt = 1;
        loop {
            match self.attempt(subscription, message, body.clone()).await {
                Attempt::Done(delivery) => return delivery,
                Attempt::Again { why, after } => {
                    if attempt >= self.retry.attempts {
                        warn!(push_service = %subscription.push_service(), attempts = attempt, last = %why, "gave up on a push");
                        return Delivery::GaveUp { last: why };
                    }
                    let wait = self.retry.delay(attempt, after);
                    debug!(push_service = %subscription.push_service(), attempt, ?wait, %why, "push failed; trying again");
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
            }
        }
    }

    async fn attempt(&self, subscription: &Subscription, message: &PushMessage, body: Vec<u8>) -> Attempt {
        let (http, vapid) = match (self.http.get(), self.vapid.get()) {
            (Ok(http), Ok(vapid)) => (http, vapid),
            (Err(error), _) | (_, Err(error)) => return Attempt::Done(Delivery::GaveUp { last: error }),
        };
        let mut request = http
            .post(subscription.endpoint.clone())
            .timeout(self.retry.timeout)
            .header("TTL", message.ttl.as_secs().to_string())
            .header("Urgency", message.urgency.as_str())
            .header("Content-Encoding", "aes128gcm")
            .header("Content-Type", "application/octet-stream")
            .header("Authorization", vapid.authorization(&subscription.endpoint, &self.contact))
            .body(body);
        if let Some(topic) = &message.topic {
            request = request.header("Topic", topic);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => return Attempt::Again { why: error.to_string(), after: None },
        };
        let status = response.status().as_u16();
        let after = retry_after(response.headers());
        // The body only for the log; its end is awaited so that the connection can be reused.
        let text = response.text().await.unwrap_or_default();
        match status {
            200..=299 => Attempt::Done(Delivery::Delivered),
            404 | 410 => Attempt::Done(Delivery::Gone),
            429 | 500..=599 => Attempt::Again { why: format!("{status} {}", first_line(&text)), after },
            _ => {
                warn!(push_service = %subscription.push_service(), status, answer = first_line(&text), "a push was refused");
                Attempt::Done(Delivery::Refused { status })
            }
        }
    }
}

/// `Retry-After` in seconds (the HTTP-date form is rare from push services, and then the
/// doubling wait applies).
pub(super) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let seconds = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim().parse::<u64>().ok()?;
    Some(Duration::from_secs(seconds))
}

pub(super) fn first_line(text: &str) -> &str {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(200) {
        Some((at, _)) => &line[..at],
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn browser_key() -> String {
        let rng = ring::rand::SystemRandom::new();
        let key = ring::agreement::EphemeralPrivateKey::generate(&ring::agreement::ECDH_P256, &rng).unwrap();
        URL_SAFE_NO_PAD.encode(key.compute_public_key().unwrap().as_ref())
    }

    const AUTH: &str = "BTBZMqHH6r4Tts7J_aSIgg";

    #[test]
    fn a_browsers_subscription_is_accepted_and_its_keys_kept_as_given() {
        let p256dh = browser_key();
        let endpoint = "https://fcm.googleapis.com/fcm/send/dpH5lCsTSSM:APA91bH";
        let subscription = Subscription::parse(endpoint, &p256dh, AUTH).unwrap();
        assert_eq!(subscription.endpoint(), endpoint);
        assert_eq!(subscription.p256dh_base64(), p256dh);
        assert_eq!(subscription.auth_base64(), AUTH);
        assert_eq!(subscription.push_service(), "https://fcm.googleapis.com");
        // Padded, or in the standard alphabet: the same keys.
        let padded = Subscription::parse(endpoint, &p256dh, "BTBZMqHH6r4Tts7J/aSIgg==").unwrap();
        assert_eq!(padded, subscription);
    }

    #[test]
    fn only_https_endpoints_are_accepted_but_for_loopback() {
        let key = browser_key();
        for refused in ["http://push.example.com/x", "ftp://push.example.com/x", "http://10.0.0.1/x", "/relative", ""] {
            assert!(Subscription::parse(refused, &key, AUTH).is_err(), "{refused}");
        }
        assert_eq!(
            Subscription::parse("https://user:pw@push.example.com/x", &key, AUTH),
            Err(SubscriptionError::EndpointWithCredentials)
        );
        for loopback in ["http://127.0.0.1:9/push/1", "http://[::1]:9/p", "http://localhost:9/p"] {
            assert!(Subscription::parse(loopback, &key, AUTH).is_ok(), "{loopback}");
        }
        let long = format!("https://push.example.com/{}", "a".repeat(MAX_ENDPOINT_BYTES));
        assert_eq!(Subscription::parse(&long, &key, AUTH), Err(SubscriptionError::EndpointTooLong));
    }

    #[test]
    fn keys_of_the_wrong_length_or_off_the_curve_are_refused() {
        let endpoint = "https://push.example.com/x";
        let key = browser_key();
        assert_eq!(Subscription::parse(endpoint, &key[..80], AUTH), Err(SubscriptionError::BadP256dh));
        assert_eq!(
            Subscription::parse(endpoint, &URL_SAFE_NO_PAD.encode([4u8; 65]), AUTH),
            Err(SubscriptionError::BadP256dh)
        );
        assert_eq!(Subscription::parse(endpoint, &key, "c2hvcnQ"), Err(SubscriptionError::BadAuth));
        assert_eq!(Subscription::parse(endpoint, &key, &"A".repeat(10_000)), Err(SubscriptionError::BadAuth));
    }

    #[test]
    fn the_wait_doubles_honours_retry_after_and_is_capped() {
        let policy = RetryPolicy {
            attempts: 5,
            first_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(10),
            timeout: Duration::from_secs(1),
        };
        let waits: Vec<_> = (1..=5).map(|attempt| policy.delay(attempt, None).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 10]);
        assert_eq!(policy.delay(1, Some(Duration::from_secs(3))), Duration::from_secs(3));
        assert_eq!(policy.delay(1, Some(Duration::from_secs(3600))), Duration::from_secs(10));
    }

    proptest! {
        /// Whatever a page sends, parsing answers (never panics), and what it accepts is https or
        /// loopback.
        #[test]
        fn parsing_any_subscription_never_panics(endpoint in ".{0,300}", p256dh in ".{0,100}", auth in ".{0,30}") {
            if let Ok(subscription) = Subscription::parse(&endpoint, &p256dh, &auth) {
                prop_assert!(subscription.endpoint().starts_with("https://") || subscription.endpoint().starts_with("http://"));
            }
        }

        #[test]
        fn any_url_like_endpoint_with_good_keys_never_panics(host in "[a-z0-9.:\\[\\]-]{0,40}", path in "[ -~]{0,80}") {
            let key = browser_key();
            let _ = Subscription::parse(&format!("https://{host}/{path}"), &key, AUTH);
            let _ = Subscription::parse(&format!("http://{host}/{path}"), &key, AUTH);
        }
    }
}
