//! Reaching the person when the agent asks and nobody is looking (DESIGN §8, issue 23): Web Push
//! to the browsers they subscribed, sent by the server itself, and webhooks (generic JSON, ntfy,
//! Slack). The `Notifier` follows interactions as they open, park and close, and decides what to
//! send; the rest are its parts:
//!
//! - `notifier`: the decisions (a push unless a tab showed the question, once more when it parks,
//!   a closing push once it is answered), each notice claimed in the store first so that of
//!   several servers exactly one sends it;
//! - `presence`: which tabs are visible, as the page reports;
//! - `notice`: what a notice says (what the card shows, no more);
//! - `web_push` (RFC 8030), `vapid` (RFC 8292), `ece` (RFC 8291 and 8188): one push to one
//!   browser;
//! - `webhook`: one POST to one `--notify-url`.
//!
//! Nothing here ever holds up an agent or a request: every notice is sent on a task of its own.
//!
//! What it costs (measured 2026-11-27, `cargo build --release --features ssr`, before and after
//! this module, its server functions, its store and its flags): `target/release/askbridge`
//! 29,103,352 → 29,586,728 bytes (+483 KB; stripped 22,297,864 → 22,612,424, +315 KB). The crypto
//! is ring's, which TLS already links (see `ece` for why no crate); boxing the notices' tasks
//! (`notifier::detach`) saved 214 KB of it. At idle it allocates next to nothing: no HTTPS
//! client and no key until the first push or webhook (RssAnon unchanged, about 1.6 MB). Idle
//! VmRSS, which counts the executable's pages the kernel maps around the code that runs at
//! start, went from about 15.1 to 16.9 MB, the same with the notifier off at run time: the
//! binary's size and layout, not this module's work.

pub mod ece;
pub mod notice;
pub mod notifier;
pub mod outbound;
pub mod presence;
pub mod vapid;
pub mod web_push;
pub mod webhook;

use std::sync::OnceLock;
use std::time::Duration;

pub use notice::{Ask, AskEvent, AskKind};
pub use notifier::{Notifier, NotifyConfig, Report, Reported};
pub use presence::Presence;
pub use vapid::{LazyVapidKey, VapidKey};
pub use web_push::{Delivery, PushMessage, PushSender, RetryPolicy, Subscription, SubscriptionError};
pub use webhook::{Webhook, WebhookKind};

/// How much a notice says (`--notify-detail`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Detail {
    /// The session, its folder, the question and its options, the link; a push adds answer
    /// buttons.
    #[default]
    Full,
    /// Only "a session needs you" and the link.
    Minimal,
}

/// The HTTPS client of every push and webhook, made at the first one: a server that sends none
/// never loads the TLS roots (idle memory is budgeted at 16 MiB). rustls on ring, as the Messages
/// API agent's; each request sets its own timeout. It follows no redirect, and reaches no
/// internal address through a name but those the operator named (`outbound`).
#[derive(Default)]
pub(crate) struct LazyClient {
    client: OnceLock<Result<reqwest::Client, String>>,
    /// The hosts the operator named (`--push-host`, `--notify-url`), resolved as they are.
    named: Vec<String>,
}

impl LazyClient {
    pub(crate) fn reaching(named: Vec<String>) -> Self {
        Self { client: OnceLock::new(), named }
    }

    fn get(&self) -> Result<&reqwest::Client, String> {
        self.client
            .get_or_init(|| {
                // reqwest is built without a default crypto provider: install ring's, unless the
                // process has one already.
                let _ = rustls::crypto::ring::default_provider().install_default();
                reqwest::Client::builder()
                    .connect_timeout(Duration::from_secs(10))
                    .user_agent(concat!("askbridge/", env!("CARGO_PKG_VERSION")))
                    .redirect(reqwest::redirect::Policy::none())
                    .dns_resolver(std::sync::Arc::new(outbound::PublicOnly::new(self.named.clone())))
                    .build()
                    .map_err(|error| format!("cannot set up HTTPS: {error}"))
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}
