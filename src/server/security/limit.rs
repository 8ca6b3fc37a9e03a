//! Wrong tokens per client address: after `MAX_WRONG_TOKENS` within `WRONG_TOKEN_WINDOW`, the
//! address's wrong tokens are answered 429 until the window passes, one every `GUESS_PACE` at
//! most, however many connections they come on (each waits its turn, `pace`). The log says
//! when an address starts sending wrong tokens and when it is blocked, not every guess. A generated token cannot be
//! guessed anyway; this guards the shorter ones people choose, and keeps guessing out of the log.
//!
//! What it never does is lock the person out: the right token or cookie is always let in, and
//! only requests a person could have made count (see `counts_as_guess`), so ten `<img
//! src=".../?token=x">` on a page elsewhere count for nothing. The price: a blocked guesser can
//! still tell a right guess from a wrong one, at the pace of its own requests.
//!
//! Hand-written rather than `governor`: a limiter there is asked by spending a cell, and here the
//! spending comes only on a failure, after the comparison.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use axum::http::HeaderMap;

#[derive(Default)]
pub struct WrongTokens {
    pub(super) by_client: HashMap<IpAddr, (u32, Instant)>,
    /// When each blocked address's next wrong token may be answered.
    paced: HashMap<IpAddr, Instant>,
}

/// What a wrong token just noted means for the log: the first of a burst, or the one that blocks.
#[derive(Debug, PartialEq, Eq)]
pub enum Burst {
    Started,
    Blocked,
    Quiet,
}

/// A blocked address's wrong tokens are answered one per this, at most.
pub const GUESS_PACE: Duration = Duration::from_secs(1);

pub const MAX_WRONG_TOKENS: u32 = 10;
pub const WRONG_TOKEN_WINDOW: Duration = Duration::from_secs(60);
/// Addresses remembered at most; those whose window passed are forgotten first.
pub(super) const MAX_CLIENTS_REMEMBERED: usize = 4096;

impl WrongTokens {
    /// How long the address's wrong tokens are still refused, if they are.
    pub fn blocked_for(&mut self, client: IpAddr, now: Instant) -> Option<Duration> {
        let (count, since) = *self.by_client.get(&client)?;
        let elapsed = now.duration_since(since);
        if elapsed >= WRONG_TOKEN_WINDOW {
            self.by_client.remove(&client);
            self.paced.remove(&client);
            return None;
        }
        (count >= MAX_WRONG_TOKENS).then(|| WRONG_TOKEN_WINDOW - elapsed)
    }

    pub fn note(&mut self, client: IpAddr, now: Instant) -> Burst {
        if self.by_client.len() >= MAX_CLIENTS_REMEMBERED {
            self.by_client.retain(|_, (_, since)| now.duration_since(*since) < WRONG_TOKEN_WINDOW);
            self.paced.retain(|client, _| self.by_client.contains_key(client));
            if self.by_client.len() >= MAX_CLIENTS_REMEMBERED {
                return Burst::Quiet; // a flood of addresses: each still meets the comparison, at full cost to it
            }
        }
        let entry = self.by_client.entry(client).or_insert((0, now));
        if now.duration_since(entry.1) >= WRONG_TOKEN_WINDOW {
            *entry = (0, now);
        }
        entry.0 += 1;
        match entry.0 {
            1 => Burst::Started,
            MAX_WRONG_TOKENS => Burst::Blocked,
            _ => Burst::Quiet,
        }
    }

    /// When a blocked address's wrong token may be answered: `GUESS_PACE` after the one before.
    pub fn pace(&mut self, client: IpAddr, now: Instant) -> Instant {
        let next = self.paced.entry(client).or_insert(now);
        *next = (*next).max(now) + GUESS_PACE;
        *next
    }
}

/// Whether a wrong token in this request counts against its address: only when a person could
/// have sent it. Browsers say where a request comes from (`Sec-Fetch-Site`): typed into the
/// address bar or opened from a bookmark (`none`), or from one of this server's own pages
/// (`same-origin`). A request from another site's page (`cross-site`, or `same-site` for another
/// port of localhost or a sibling subdomain) is that page's doing, not the person's. Programs
/// (curl, scripts) send no such header, and count.
pub fn counts_as_guess(headers: &HeaderMap) -> bool {
    match headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        None => true,
        Some(site) => matches!(site.trim(), "none" | "same-origin"),
    }
}

/// The client a request comes from: the socket's peer, or, when the peer is a trusted proxy,
/// the address that proxy reports in `X-Forwarded-For` (the last one not itself a trusted proxy:
/// what is to its left, the client could have written).
pub fn client_address(peer: IpAddr, headers: &HeaderMap, trusted_proxies: &[IpAddr]) -> IpAddr {
    if !trusted_proxies.contains(&peer) {
        return peer;
    }
    let forwarded = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|hop| hop.trim().parse::<IpAddr>().ok())
        .collect::<Vec<_>>();
    forwarded.into_iter().rev().find(|hop| !trusted_proxies.contains(hop)).unwrap_or(peer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn a_blocked_address_is_let_go_when_its_window_passes() {
        let mut wrong = WrongTokens::default();
        let client: IpAddr = "10.0.0.7".parse().unwrap();
        let start = Instant::now();
        let bursts: Vec<Burst> = (0..MAX_WRONG_TOKENS).map(|_| wrong.note(client, start)).collect();
        assert_eq!(
            bursts.iter().filter(|b| **b != Burst::Quiet).count(),
            2,
            "logged when it starts and when it blocks"
        );
        let paced = [wrong.pace(client, start), wrong.pace(client, start)];
        assert_eq!(paced, [start + GUESS_PACE, start + 2 * GUESS_PACE], "one answer a second, side by side or not");
        assert!(wrong.blocked_for(client, start + Duration::from_secs(1)).is_some());
        assert_eq!(wrong.blocked_for(client, start + WRONG_TOKEN_WINDOW), None);
        assert!(wrong.by_client.is_empty());
    }

    #[test]
    fn the_memory_of_wrong_tokens_is_bounded() {
        let mut wrong = WrongTokens::default();
        let now = Instant::now();
        for n in 0..(MAX_CLIENTS_REMEMBERED as u32 + 100) {
            let _ = wrong.note(IpAddr::from(n.to_be_bytes()), now);
        }
        assert_eq!(wrong.by_client.len(), MAX_CLIENTS_REMEMBERED);
    }

    #[test]
    fn only_what_a_person_could_have_sent_counts_as_a_guess() {
        let with = |site: &str| {
            let mut headers = HeaderMap::new();
            headers.insert("sec-fetch-site", HeaderValue::from_str(site).unwrap());
            headers
        };
        assert!(counts_as_guess(&HeaderMap::new()), "a program");
        assert!(counts_as_guess(&with("none")), "the address bar");
        assert!(counts_as_guess(&with("same-origin")), "our own page");
        assert!(!counts_as_guess(&with("cross-site")), "another site's page");
        assert!(!counts_as_guess(&with("same-site")), "another port of localhost");
    }

    #[test]
    fn behind_a_trusted_proxy_the_client_is_the_one_it_reports() {
        let proxy: IpAddr = "10.0.0.2".parse().unwrap();
        let inner: IpAddr = "10.0.0.3".parse().unwrap();
        let forwarded = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert("x-forwarded-for", HeaderValue::from_str(value).unwrap());
            headers
        };
        let client = |peer: IpAddr, value: &str| client_address(peer, &forwarded(value), &[proxy, inner]);
        assert_eq!(client(proxy, "203.0.113.9"), "203.0.113.9".parse::<IpAddr>().unwrap());
        // What the client wrote itself on the left is not believed; proxies on the right skipped.
        assert_eq!(client(proxy, "1.2.3.4, 203.0.113.9, 10.0.0.3"), "203.0.113.9".parse::<IpAddr>().unwrap());
        assert_eq!(client(proxy, "garbage"), proxy, "nothing usable: the proxy itself");
        let stranger: IpAddr = "192.0.2.1".parse().unwrap();
        assert_eq!(client(stranger, "203.0.113.9"), stranger, "only a trusted proxy is believed");
    }
}
