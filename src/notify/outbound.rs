//! Where the server's own requests may go. A push subscription names its endpoint, and anyone who
//! can sign in can subscribe: left alone, the server would post wherever it says, internal
//! services included. So:
//! - a push endpoint must be on a browser's push service (Google's, Mozilla's, Apple's,
//!   Microsoft's), https; `--push-host` adds hosts (a push service of your own, a test's);
//! - no request of the server's (pushes, webhooks) reaches a loopback, private, link-local or
//!   unique-local address through a name, whatever the name resolves to (`PublicOnly`), but for
//!   the hosts the operator named (`--push-host`, `--notify-url`);
//! - no redirect is followed (a 3xx is the push service's answer, not a new address to post to).

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// The browsers' push services, by domain: each one, and any host under it.
pub const BROWSER_PUSH_SERVICES: &[&str] = &[
    // Chrome, Edge on Android, Opera, Samsung Internet, Brave: Firebase Cloud Messaging.
    "fcm.googleapis.com",
    "android.googleapis.com",
    // Firefox: updates.push.services.mozilla.com.
    "push.services.mozilla.com",
    // Safari: web.push.apple.com.
    "push.apple.com",
    // Edge on Windows: *.notify.windows.com (WNS).
    "notify.windows.com",
];

/// The push services a subscription may name: the browsers', and those the operator added.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PushHosts {
    added: Vec<String>,
}

/// Why an endpoint's destination is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error(
        "the endpoint is not on a browser's push service (Google's, Mozilla's, Apple's or Microsoft's); \
         the server's operator can add a push service with --push-host"
    )]
    NotAPushService,
    #[error("the endpoint must be an https address")]
    NotHttps,
}

impl PushHosts {
    /// The browsers' push services and `added` (host names or IP addresses, as in a URL).
    pub fn with(added: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self { added: added.into_iter().map(|host| normalized(&host.into())).collect() }
    }

    /// The hosts the operator named.
    pub fn added(&self) -> &[String] {
        &self.added
    }

    /// Whether the server may post to `url`: a host the operator added (http too), or an https
    /// host under a browser's push service (never an IP address).
    pub fn check(&self, url: &reqwest::Url) -> Result<(), Refused> {
        let host = normalized(url.host_str().unwrap_or_default());
        if self.added.contains(&host) {
            return Ok(());
        }
        if url.scheme() != "https" {
            return Err(Refused::NotHttps);
        }
        let under = |domain: &&str| host == *domain || host.strip_suffix(domain).is_some_and(|sub| sub.ends_with('.'));
        // An address is never a browser's push service (the URL parser has already read forms
        // like `2130706433` as the address they are).
        if host.parse::<IpAddr>().is_ok() || !BROWSER_PUSH_SERVICES.iter().any(under) {
            return Err(Refused::NotAPushService);
        }
        Ok(())
    }
}

/// A host as compared: lower case, without the brackets of an IPv6 address.
fn normalized(host: &str) -> String {
    host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase()
}

/// Whether `ip` is on the public internet: not loopback, private (10/8, 172.16/12, 192.168/16),
/// shared (100.64/10), link-local (169.254/16, the cloud metadata address among them; fe80::/10),
/// unique-local (fc00::/7), unspecified, broadcast, multicast or documentation; an IPv4 address in
/// IPv6 is judged as itself.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => is_public_v4(ip),
        IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
            Some(v4) => is_public_v4(v4),
            None => is_public_v6(ip),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b)))
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || ip.to_ipv4().is_some_and(|v4| !is_public_v4(v4) && ip.segments()[..6] == [0; 6]))
}

/// The resolver of the server's own requests: a name resolves only to public addresses, unless
/// the operator named it (`--push-host`, `--notify-url`), so that a name pointed at an internal
/// address (or rebinding to one) reaches nothing. An IP address in a URL is not resolved: it is
/// refused before (`PushHosts::check`), or named by the operator.
#[derive(Debug, Clone, Default)]
pub struct PublicOnly {
    named: HashSet<String>,
}

impl PublicOnly {
    pub fn new(named: impl IntoIterator<Item = String>) -> Self {
        Self { named: named.into_iter().map(|host| normalized(&host)).collect() }
    }
}

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let host = normalized(name.as_str());
        let named = self.named.contains(&host);
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let kept: Vec<SocketAddr> = found.into_iter().filter(|addr| named || is_public(addr.ip())).collect();
            if kept.is_empty() {
                let refused = format!("{host} resolves to no public address: the server posts only to those");
                return Err(refused.into());
            }
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    fn url(text: &str) -> reqwest::Url {
        reqwest::Url::parse(text).unwrap()
    }

    #[test]
    fn the_browsers_push_services_are_taken_and_nothing_else() {
        let hosts = PushHosts::default();
        for ok in [
            "https://fcm.googleapis.com/fcm/send/abc",
            "https://updates.push.services.mozilla.com/wpush/v2/abc",
            "https://web.push.apple.com/QAbc",
            "https://wns2-par02p.notify.windows.com/w/?token=abc",
        ] {
            assert_eq!(hosts.check(&url(ok)), Ok(()), "{ok}");
        }
        for refused in [
            "https://example.com/push",
            "https://evilfcm.googleapis.com.attacker.net/x",
            "https://notfcm.googleapis.com/x",
            "https://10.0.0.1/x",
            "https://169.254.169.254/latest/meta-data",
            "https://192.168.1.1/x",
            "https://[fd00::1]/x",
            "https://127.0.0.1/x",
            "https://2130706433/x",
        ] {
            assert_eq!(hosts.check(&url(refused)), Err(Refused::NotAPushService), "{refused}");
        }
        assert_eq!(hosts.check(&url("http://fcm.googleapis.com/x")), Err(Refused::NotHttps));
        assert_eq!(hosts.check(&url("http://127.0.0.1:9/push")), Err(Refused::NotHttps));
    }

    #[test]
    fn a_host_the_operator_added_is_taken_http_too() {
        let hosts = PushHosts::with(["127.0.0.1", "Push.Example.Org"]);
        assert_eq!(hosts.check(&url("http://127.0.0.1:4000/push/1")), Ok(()));
        assert_eq!(hosts.check(&url("https://push.example.org/x")), Ok(()));
        assert_eq!(hosts.check(&url("http://[::1]:4000/push")), Err(Refused::NotHttps), "only what was named");
    }

    #[test]
    fn internal_addresses_are_not_public() {
        for internal in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.0.10",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fd00::1",
            "fc12::3",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
        ] {
            assert!(!is_public(internal.parse().unwrap()), "{internal}");
        }
        for public in ["142.250.74.74", "1.1.1.1", "2a00:1450:4007:80f::200a", "::ffff:8.8.8.8"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[tokio::test]
    async fn a_name_that_resolves_only_inside_is_refused_unless_named() {
        let resolver = PublicOnly::new(Vec::new());
        let refused = resolver.resolve(Name::from_str("localhost").unwrap()).await;
        assert!(refused.is_err(), "localhost resolves to loopback only");
        let named = PublicOnly::new(vec!["localhost".to_string()]);
        let addrs: Vec<SocketAddr> = named.resolve(Name::from_str("localhost").unwrap()).await.unwrap().collect();
        assert!(addrs.iter().all(|addr| addr.ip().is_loopback()) && !addrs.is_empty());
    }

    #[tokio::test]
    async fn a_redirect_is_the_answer_and_is_not_followed() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let followed = std::sync::Arc::new(AtomicUsize::new(0));
        let hits = followed.clone();
        let app = axum::Router::new()
            .route(
                "/push",
                axum::routing::post(|| async {
                    (axum::http::StatusCode::TEMPORARY_REDIRECT, [("location", "/elsewhere")])
                }),
            )
            .route(
                "/elsewhere",
                axum::routing::post(move || {
                    hits.fetch_add(1, Ordering::SeqCst);
                    async { axum::http::StatusCode::CREATED }
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let client = super::super::LazyClient::reaching(Vec::new());
        let response = client.get().unwrap().post(format!("http://{address}/push")).body("x").send().await.unwrap();
        assert_eq!(response.status(), reqwest::StatusCode::TEMPORARY_REDIRECT);
        assert_eq!(followed.load(Ordering::SeqCst), 0);
    }
}
