//! The notifier: told of every interaction that opens, parks or closes (`observe`, fed from the
//! session's events) and of which tabs are visible (`tab_visibility`), it decides what goes out,
//! by one rule for pushes and webhooks alike, **only what nobody sees**:
//!
//! - **opened**: a push and a post to each webhook after the grace period (10 s), unless a tab
//!   showed the session meanwhile, or it was answered;
//! - **parked**: a push and a post, unless a tab showed the session within the grace period;
//! - **closed** (answered, declined, expired, cancelled): a push that closes the notification,
//!   if one was shown.
//!
//! Every notice is claimed in the store before it is sent (`Store::claim_notice`): with several
//! servers on one Postgres, the one whose insert went in sends it, and nothing is sent for an
//! interaction that is no longer pending. A tab that showed a question claims its push as seen,
//! so that no server sends it. Everything runs on tasks of its own: `observe` and
//! `tab_visibility` return at once, and an agent never waits for a push service or a webhook.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::notice::{Ask, AskEvent, close_payload, tag_of};
use super::outbound::PushHosts;
use super::presence::Presence;
use super::vapid::LazyVapidKey;
use super::web_push::{Delivery, PushMessage, PushSender, RetryPolicy, Subscription, Urgency};
use super::webhook::{DEFAULT_TIMEOUT, Webhook, WebhookSender};
use super::{Detail, LazyClient};
use crate::error::AppError;
use crate::ids::now_ms;
use crate::interaction::InteractionRequest;
use crate::store::{NoticeKind, NoticeOutcome, PushSubscriptionRow, Store};
use crate::thread::EventBody;

/// The most browsers subscribed at once: one person's phones, laptops and browsers, with room.
pub const MAX_SUBSCRIPTIONS: usize = 100;
/// The longest user agent kept with a subscription (to tell them apart on a settings page).
const MAX_USER_AGENT: usize = 256;
/// The most open interactions followed; past it (sessions deleted while they waited, which end
/// no interaction), the one open longest is forgotten. Its "answered" push is still sent.
const MAX_OPEN: usize = 10_000;

/// How the notifier behaves; `NotifyConfig::new` gives the defaults.
#[derive(Debug, Clone)]
pub struct NotifyConfig {
    /// `--notify-detail`.
    pub detail: Detail,
    /// `--notify-url`.
    pub webhooks: Vec<Webhook>,
    /// The server's address for people (`--public-url`, else `http://ADDR`): the links in
    /// webhooks. A push carries the card's path only; the service worker knows its origin.
    pub public_url: String,
    /// VAPID's subject, for the push services: a `mailto:` or `https:` address of whoever runs
    /// the server. Apple's refuses a push whose subject is not one.
    pub contact: String,
    /// How long after a question opens its push waits for a tab to show it.
    pub grace: Duration,
    /// A tab that has not reported for this long no longer counts as visible.
    pub stale_tab: Duration,
    /// How long a push service keeps an undelivered push for an offline device.
    pub push_ttl: Duration,
    pub push_retry: RetryPolicy,
    pub webhook_retry: RetryPolicy,
    /// The push services subscriptions may name (`--push-host` adds to the browsers').
    pub push_hosts: PushHosts,
}

impl NotifyConfig {
    pub fn new(public_url: &str) -> Self {
        let contact = if public_url.starts_with("https://") {
            public_url.trim_end_matches('/').to_string()
        } else {
            "mailto:askbridge@localhost".to_string()
        };
        Self {
            detail: Detail::Full,
            webhooks: Vec::new(),
            public_url: public_url.trim_end_matches('/').to_string(),
            contact,
            grace: Duration::from_secs(10),
            stale_tab: Duration::from_secs(45),
            push_ttl: Duration::from_secs(24 * 60 * 60),
            push_retry: RetryPolicy::default(),
            webhook_retry: RetryPolicy { timeout: DEFAULT_TIMEOUT, attempts: 3, ..RetryPolicy::default() },
            push_hosts: PushHosts::default(),
        }
    }
}

/// What the notifier decided about one notice: for logs and tests (`Notifier::reports`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub session: String,
    pub tool_use_id: String,
    pub notice: NoticeKind,
    pub what: Reported,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reported {
    /// This server claimed it and sent it to `to` browsers or webhooks.
    Sent { to: usize },
    /// A tab showed the interaction: its push is not needed (and claimed as seen).
    Seen,
    /// It ended before the push was due.
    Closed,
    /// Already claimed (by another server, or earlier here), or the interaction is no longer
    /// pending: this server sends nothing.
    NotClaimed,
    /// No browser is subscribed: nothing to send, nothing claimed.
    NoSubscribers,
    /// The store failed; nothing was sent.
    Failed(String),
}

/// Tells the person; cheap to clone (one shared state).
#[derive(Clone)]
pub struct Notifier {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    config: NotifyConfig,
    push: PushSender,
    webhooks: WebhookSender,
    presence: Presence,
    /// The interactions this server heard open and not yet close.
    open: Mutex<HashMap<(String, String), Open>>,
    reports: broadcast::Sender<Report>,
    stop: CancellationToken,
}

struct Open {
    request: InteractionRequest,
    opened_at: Instant,
    /// This server claimed its push as seen already (a tab reports every so often).
    seen_claimed: bool,
    /// The end of this question's last announcement (its push sent, or given up): the next one
    /// waits for it (`in_line`).
    last_announcement: Option<oneshot::Receiver<()>>,
}

/// An announcement's place in its question's line: the one before it to wait for, if any, and
/// what it drops when it is done.
struct InLine {
    before: Option<oneshot::Receiver<()>>,
    _done: oneshot::Sender<()>,
}

impl InLine {
    async fn wait_turn(&mut self) {
        if let Some(before) = self.before.take() {
            // Sent or dropped, it is over either way.
            let _ = before.await;
        }
    }
}

impl Notifier {
    /// `vapid`: the server's key, or where it is kept (`LazyVapidKey::in_folder`).
    pub fn new(store: Store, vapid: impl Into<LazyVapidKey>, config: NotifyConfig) -> Self {
        let named = config.push_hosts.added().iter().cloned();
        let http =
            Arc::new(LazyClient::reaching(named.chain(config.webhooks.iter().filter_map(Webhook::host)).collect()));
        let push = PushSender::with_client(http.clone(), Arc::new(vapid.into()), &config.contact, config.push_retry);
        let webhooks = WebhookSender::with_client(http, config.webhook_retry);
        for hook in &config.webhooks {
            info!(webhook = %hook.describe(), detail = ?config.detail, "questions will be posted to a webhook");
        }
        Self {
            inner: Arc::new(Inner {
                store,
                presence: Presence::new(config.stale_tab),
                config,
                push,
                webhooks,
                open: Mutex::new(HashMap::new()),
                // Slots are allocated with the channel; reports are few, and read at once.
                reports: broadcast::channel(64).0,
                stop: CancellationToken::new(),
            }),
        }
    }

    /// The server's VAPID public key: the page subscribes with it (`applicationServerKey`).
    pub fn public_key(&self) -> Result<String, AppError> {
        let key = self.inner.push.vapid().get().map_err(|detail| AppError::Internal { detail })?;
        Ok(key.public_key())
    }

    /// Every decision from now on.
    pub fn reports(&self) -> broadcast::Receiver<Report> {
        self.inner.reports.subscribe()
    }

    /// Ends the waits for pushes not yet due (the server is stopping).
    pub fn shut_down(&self) {
        self.inner.stop.cancel();
    }

    /// Follows one event of `session` (the seam: every event a session's log appends or takes
    /// from another server). Only interactions' events matter; returns at once.
    pub fn observe(&self, session: &str, event: &EventBody) {
        match event {
            EventBody::InteractionOpened { tool_use_id, request, .. } => self.opened(session, tool_use_id, request),
            EventBody::InteractionParked { tool_use_id } => self.parked(session, tool_use_id),
            EventBody::InteractionResolved { tool_use_id, .. } => self.closed(session, tool_use_id),
            _ => {}
        }
    }

    /// A tab reports what it shows and whether it is visible. A visible tab on a session with an
    /// open question claims that question's push as seen, for every server.
    pub fn tab_visibility(&self, tab: &str, session: Option<&str>, visible: bool) {
        self.inner.presence.report(tab, session, visible);
        let Some(session) = session.filter(|_| visible) else { return };
        let newly_seen: Vec<String> = {
            let mut open = self.inner.open.lock().expect("open lock");
            open.iter_mut()
                .filter(|((s, _), open)| s == session && !open.seen_claimed)
                .map(|((_, tool_use_id), open)| {
                    open.seen_claimed = true;
                    tool_use_id.clone()
                })
                .collect()
        };
        for tool_use_id in newly_seen {
            let this = self.clone();
            let session = session.to_string();
            detach(async move { this.claim_seen(&session, &tool_use_id, AskEvent::Opened).await });
        }
    }

    /// The tab was closed.
    pub fn tab_closed(&self, tab: &str) {
        self.inner.presence.forget(tab);
    }

    /// Keeps a browser's subscription (the page's `PushSubscription.toJSON()`, checked).
    pub async fn subscribe(&self, subscription: &Subscription, user_agent: Option<&str>) -> Result<(), AppError> {
        if let Err(refused) = self.inner.config.push_hosts.check(subscription.url()) {
            warn!(push_service = %subscription.push_service(), %refused, "refused a push subscription");
            return Err(AppError::BadRequest { detail: format!("{refused}.") });
        }
        let store = &self.inner.store;
        let existing = store.push_subscriptions().await?;
        if existing.len() >= MAX_SUBSCRIPTIONS && !existing.iter().any(|row| row.endpoint == subscription.endpoint()) {
            return Err(AppError::BadRequest {
                detail: format!(
                    "this server already keeps {MAX_SUBSCRIPTIONS} browsers' subscriptions: unsubscribe one first"
                ),
            });
        }
        let row = PushSubscriptionRow {
            endpoint: subscription.endpoint().to_string(),
            p256dh: subscription.p256dh_base64(),
            auth: subscription.auth_base64(),
            user_agent: user_agent.map(|agent| super::notice::clip(agent, MAX_USER_AGENT)),
            created_at_ms: now_ms(),
        };
        store.save_push_subscription(&row).await?;
        info!(push_service = %subscription.push_service(), "a browser subscribed to push");
        Ok(())
    }

    /// Forgets a browser's subscription; whether there was one.
    pub async fn unsubscribe(&self, endpoint: &str) -> Result<bool, AppError> {
        Ok(self.inner.store.delete_push_subscription(endpoint).await?)
    }

    fn opened(&self, session: &str, tool_use_id: &str, request: &InteractionRequest) {
        if matches!(request, InteractionRequest::Unreadable { .. }) {
            return;
        }
        let key = (session.to_string(), tool_use_id.to_string());
        let (opened_at, mut line) = {
            let mut open = self.inner.open.lock().expect("open lock");
            if open.len() >= MAX_OPEN && !open.contains_key(&key) {
                let oldest = open.iter().min_by_key(|(_, open)| open.opened_at).map(|(key, _)| key.clone());
                if let Some(oldest) = oldest {
                    open.remove(&oldest);
                }
            }
            // Asked again by a resumed agent: the same question, still from when it first opened.
            let entry = open.entry(key).or_insert_with(|| Open {
                request: request.clone(),
                opened_at: Instant::now(),
                seen_claimed: false,
                last_announcement: None,
            });
            (entry.opened_at, in_line(entry))
        };
        let this = self.clone();
        let (session, tool_use_id) = (session.to_string(), tool_use_id.to_string());
        detach(async move {
            line.wait_turn().await;
            if !this.inner.presence.visible_now(&session) {
                tokio::select! {
                    () = this.inner.stop.cancelled() => return,
                    () = tokio::time::sleep(this.inner.config.grace) => {}
                }
            }
            this.announce_opened(&session, &tool_use_id, opened_at).await;
        });
    }

    /// The grace period is over: the push and the posts go out, unless a tab showed the
    /// question meanwhile or it closed.
    async fn announce_opened(&self, session: &str, tool_use_id: &str, opened_at: Instant) {
        let request = {
            let open = self.inner.open.lock().expect("open lock");
            open.get(&(session.to_string(), tool_use_id.to_string())).map(|open| open.request.clone())
        };
        let Some(request) = request else {
            return self.report_each(session, tool_use_id, AskEvent::Opened, Reported::Closed);
        };
        if self.inner.presence.seen_since(session, opened_at) {
            return self.claim_seen(session, tool_use_id, AskEvent::Opened).await;
        }
        self.webhook(session, tool_use_id, AskEvent::Opened, Some(request.clone()));
        self.push_ask(session, tool_use_id, AskEvent::Opened, request).await;
    }

    fn parked(&self, session: &str, tool_use_id: &str) {
        let (request, line) = {
            let mut open = self.inner.open.lock().expect("open lock");
            match open.get_mut(&(session.to_string(), tool_use_id.to_string())) {
                Some(open) => (Some(open.request.clone()), Some(in_line(open))),
                None => (None, None),
            }
        };
        let this = self.clone();
        let (session, tool_use_id) = (session.to_string(), tool_use_id.to_string());
        let since = Instant::now().checked_sub(self.inner.config.grace).unwrap_or_else(Instant::now);
        detach(async move {
            if let Some(mut line) = line {
                line.wait_turn().await;
            }
            if this.inner.presence.seen_since(&session, since) {
                return this.claim_seen(&session, &tool_use_id, AskEvent::Parked).await;
            }
            let Some(request) = this.request(&session, &tool_use_id, request).await else { return };
            this.webhook(&session, &tool_use_id, AskEvent::Parked, Some(request.clone()));
            this.push_ask(&session, &tool_use_id, AskEvent::Parked, request).await;
        });
    }

    fn closed(&self, session: &str, tool_use_id: &str) {
        let before = (self.inner.open.lock().expect("open lock"))
            .remove(&(session.to_string(), tool_use_id.to_string()))
            .and_then(|open| open.last_announcement);
        let this = self.clone();
        let (session, tool_use_id) = (session.to_string(), tool_use_id.to_string());
        detach(async move {
            if let Some(before) = before {
                let _ = before.await;
            }
            let kind = NoticeKind::PushClosed;
            match this.inner.store.claim_notice(&session, &tool_use_id, kind, NoticeOutcome::Sent).await {
                Ok(true) => {
                    let tag = tag_of(&session, &tool_use_id);
                    let message = PushMessage {
                        payload: close_payload(&tag),
                        ttl: this.inner.config.push_ttl,
                        urgency: Urgency::Normal,
                        topic: Some(tag),
                    };
                    let to = this.push_to_all(message).await;
                    this.report(&session, &tool_use_id, kind, Reported::Sent { to });
                }
                Ok(false) => this.report(&session, &tool_use_id, kind, Reported::NotClaimed),
                Err(error) => this.report(&session, &tool_use_id, kind, Reported::Failed(error.to_string())),
            }
        });
    }

    /// What the interaction asks: as heard here, else as stored (it opened on another server,
    /// or before this one started). `None` once it is no longer pending.
    async fn request(
        &self,
        session: &str,
        tool_use_id: &str,
        heard: Option<InteractionRequest>,
    ) -> Option<InteractionRequest> {
        if heard.is_some() {
            return heard;
        }
        match self.inner.store.pending_request(session, tool_use_id).await {
            Ok(request) => request,
            Err(error) => {
                warn!(%session, %tool_use_id, %error, "could not read the interaction to notify about");
                None
            }
        }
    }

    /// A tab showed the question: its push and its posts are claimed as seen, for every server.
    async fn claim_seen(&self, session: &str, tool_use_id: &str, event: AskEvent) {
        let (push, webhook) = kinds(event);
        // With no browser subscribed there is no push to hold back (the list is the same for
        // every server); with no webhook, no post.
        let mut kinds = Vec::with_capacity(2);
        if self.has_subscribers().await {
            kinds.push(push);
        } else {
            self.report(session, tool_use_id, push, Reported::Seen);
        }
        if !self.inner.config.webhooks.is_empty() {
            kinds.push(webhook);
        }
        for kind in kinds {
            let what = match self.inner.store.claim_notice(session, tool_use_id, kind, NoticeOutcome::Seen).await {
                Ok(_) => Reported::Seen,
                Err(error) => Reported::Failed(error.to_string()),
            };
            self.report(session, tool_use_id, kind, what);
        }
    }

    /// Claims the push about `request` and, if this server won it, sends it to every browser.
    async fn push_ask(&self, session: &str, tool_use_id: &str, event: AskEvent, request: InteractionRequest) {
        let (kind, _) = kinds(event);
        let store = &self.inner.store;
        if !self.has_subscribers().await {
            return self.report(session, tool_use_id, kind, Reported::NoSubscribers);
        }
        match store.claim_notice(session, tool_use_id, kind, NoticeOutcome::Sent).await {
            Ok(true) => {}
            Ok(false) => return self.report(session, tool_use_id, kind, Reported::NotClaimed),
            Err(error) => return self.report(session, tool_use_id, kind, Reported::Failed(error.to_string())),
        }
        let summary = match store.session(session).await {
            Ok(summary) => summary,
            Err(error) => return self.report(session, tool_use_id, kind, Reported::Failed(error.to_string())),
        };
        let Some(ask) = Ask::of(event, &summary, tool_use_id, &request) else { return };
        let tag = tag_of(session, tool_use_id);
        let message = PushMessage {
            payload: ask.push_payload(self.inner.config.detail, &tag),
            ttl: self.inner.config.push_ttl,
            urgency: Urgency::High,
            topic: Some(tag),
        };
        let to = self.push_to_all(message).await;
        debug!(%session, %tool_use_id, notice = kind.as_str(), browsers = to, "pushed");
        self.report(session, tool_use_id, kind, Reported::Sent { to });
    }

    /// Whether any browser is subscribed (a failing read counts as yes: the claim decides).
    async fn has_subscribers(&self) -> bool {
        self.inner.store.push_subscriptions().await.map_or(true, |rows| !rows.is_empty())
    }

    /// Sends `message` to every subscribed browser, side by side, and returns once each push is
    /// delivered, refused or given up: how many browsers. A browser whose push service says it is
    /// gone is unsubscribed.
    async fn push_to_all(&self, message: PushMessage) -> usize {
        let rows = match self.inner.store.push_subscriptions().await {
            Ok(rows) => rows,
            Err(error) => {
                warn!(%error, "could not read the push subscriptions");
                return 0;
            }
        };
        let mut deliveries = Vec::new();
        for row in rows {
            let subscription = match Subscription::parse(&row.endpoint, &row.p256dh, &row.auth) {
                Ok(subscription) => subscription,
                Err(error) => {
                    warn!(%error, "skipped a stored push subscription that no longer reads");
                    continue;
                }
            };
            // Stored before the push services were checked, or before --push-host changed:
            // nothing is sent there, and it is forgotten.
            if let Err(refused) = self.inner.config.push_hosts.check(subscription.url()) {
                warn!(push_service = %subscription.push_service(), %refused, "forgot a stored push subscription");
                if let Err(error) = self.inner.store.delete_push_subscription(subscription.endpoint()).await {
                    warn!(%error, "could not forget a push subscription");
                }
                continue;
            }
            let message = &message;
            deliveries.push(async move {
                match self.inner.push.send(&subscription, message).await {
                    Delivery::Gone => {
                        info!(push_service = %subscription.push_service(), "a browser's subscription is gone: forgotten");
                        if let Err(error) = self.inner.store.delete_push_subscription(subscription.endpoint()).await {
                            warn!(%error, "could not forget a push subscription that is gone");
                        }
                    }
                    Delivery::Delivered | Delivery::Refused { .. } | Delivery::GaveUp { .. } => {}
                }
            });
        }
        let sent = deliveries.len();
        futures::future::join_all(deliveries).await;
        sent
    }

    /// Claims the webhooks' notice and posts it to each `--notify-url`, on its own task.
    fn webhook(&self, session: &str, tool_use_id: &str, event: AskEvent, heard: Option<InteractionRequest>) {
        if self.inner.config.webhooks.is_empty() {
            return;
        }
        let this = self.clone();
        let (session, tool_use_id) = (session.to_string(), tool_use_id.to_string());
        detach(async move {
            let (_, kind) = kinds(event);
            let store = &this.inner.store;
            match store.claim_notice(&session, &tool_use_id, kind, NoticeOutcome::Sent).await {
                Ok(true) => {}
                Ok(false) => return this.report(&session, &tool_use_id, kind, Reported::NotClaimed),
                Err(error) => return this.report(&session, &tool_use_id, kind, Reported::Failed(error.to_string())),
            }
            let Some(request) = this.request(&session, &tool_use_id, heard).await else { return };
            let summary = match store.session(&session).await {
                Ok(summary) => summary,
                Err(error) => return this.report(&session, &tool_use_id, kind, Reported::Failed(error.to_string())),
            };
            let Some(ask) = Ask::of(event, &summary, &tool_use_id, &request) else { return };
            let config = &this.inner.config;
            for hook in &config.webhooks {
                let (url, body) = hook.request(&ask, config.detail, &config.public_url);
                let (sender, hook) = (this.inner.webhooks.clone(), hook.clone());
                detach(async move {
                    sender.send(&hook, url, &body).await;
                });
            }
            this.report(&session, &tool_use_id, kind, Reported::Sent { to: config.webhooks.len() });
        });
    }

    /// The same decision about the push and, if there are webhooks, the posts.
    fn report_each(&self, session: &str, tool_use_id: &str, event: AskEvent, what: Reported) {
        let (push, webhook) = kinds(event);
        if !self.inner.config.webhooks.is_empty() {
            self.report(session, tool_use_id, webhook, what.clone());
        }
        self.report(session, tool_use_id, push, what);
    }

    fn report(&self, session: &str, tool_use_id: &str, notice: NoticeKind, what: Reported) {
        if let Reported::Failed(error) = &what {
            warn!(%session, %tool_use_id, notice = notice.as_str(), %error, "could not notify");
        }
        let report = Report { session: session.to_string(), tool_use_id: tool_use_id.to_string(), notice, what };
        let _ = self.inner.reports.send(report);
    }
}

/// The next announcement of a question takes its place in line: after the one before it, so
/// that a phone gets a question's pushes in the order of its events (opened, parked, closed)
/// even when the first one's push takes longer than the park (a slow push service, a busy
/// machine); with the same tag, the later notification replaces the earlier one.
fn in_line(open: &mut Open) -> InLine {
    let (done, next) = oneshot::channel();
    InLine { before: open.last_announcement.replace(next), _done: done }
}

/// The notices of an event: its push's, its webhooks'.
fn kinds(event: AskEvent) -> (NoticeKind, NoticeKind) {
    match event {
        AskEvent::Opened => (NoticeKind::PushOpened, NoticeKind::WebhookOpened),
        AskEvent::Parked => (NoticeKind::PushParked, NoticeKind::WebhookParked),
    }
}

/// Runs `work` on a task of its own. Boxed, so that tokio's task machinery is compiled once for
/// every kind of notice rather than once per kind (about 60 KB of the release binary).
fn detach(work: impl Future<Output = ()> + Send + 'static) {
    let work: futures::future::BoxFuture<'static, ()> = Box::pin(work);
    tokio::spawn(work);
}
