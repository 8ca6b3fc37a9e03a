//! Whether the person is looking: which of their tabs show which session, and whether each is
//! visible. The page reports it (on `visibilitychange`, and every so often while visible); a push
//! for a question goes out only if no tab showed its session during the grace period after it
//! opened. A tab that stops reporting (closed, asleep, offline) stops counting as visible after
//! `stale_after`.
//!
//! This is one server's knowledge. With several servers, the tab's server records what it saw
//! in the store (`Notifier::tab_visibility` claims the question's push as seen), and that
//! compare-and-set is what the other servers respect.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The most tabs followed at once; past it, the one heard from longest ago is forgotten.
const MAX_TABS: usize = 1024;
/// The longest tab id kept (the page makes its own, a UUID).
pub const MAX_TAB_ID: usize = 64;

#[derive(Debug, Clone)]
struct Tab {
    session: Option<String>,
    visible: bool,
    /// The last moment the tab was known to be visible (a report saying so).
    last_visible: Option<Instant>,
    last_report: Instant,
}

/// The tabs this server has heard from.
#[derive(Debug)]
pub struct Presence {
    tabs: Mutex<HashMap<String, Tab>>,
    stale_after: Duration,
}

impl Presence {
    /// A visible tab counts as visible until `stale_after` passes without a report from it.
    pub fn new(stale_after: Duration) -> Self {
        Self { tabs: Mutex::new(HashMap::new()), stale_after }
    }

    /// Tab `tab` shows `session` (or no session: the list, a settings page) and is, or is not,
    /// visible.
    pub fn report(&self, tab: &str, session: Option<&str>, visible: bool) {
        self.report_at(tab, session, visible, Instant::now());
    }

    fn report_at(&self, tab: &str, session: Option<&str>, visible: bool, now: Instant) {
        let tab: String = tab.chars().take(MAX_TAB_ID).collect();
        let mut tabs = self.tabs.lock().expect("presence lock");
        if tabs.len() >= MAX_TABS && !tabs.contains_key(&tab) {
            let oldest = tabs.iter().min_by_key(|(_, tab)| tab.last_report).map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                tabs.remove(&oldest);
            }
        }
        let previous = tabs.get(&tab).and_then(|tab| tab.last_visible);
        // A tab that was visible until now was visible until now.
        let was_visible = tabs.get(&tab).is_some_and(|tab| tab.visible && !self.stale(tab, now));
        let last_visible = if visible || was_visible { Some(now) } else { previous };
        let session = session.map(|session| session.chars().take(MAX_TAB_ID).collect());
        tabs.insert(tab, Tab { session, visible, last_visible, last_report: now });
    }

    /// The tab was closed (the page said so on `pagehide`).
    pub fn forget(&self, tab: &str) {
        let tab: String = tab.chars().take(MAX_TAB_ID).collect();
        let now = Instant::now();
        let mut tabs = self.tabs.lock().expect("presence lock");
        // What it saw until now still counts for questions open meanwhile.
        if let Some(tab) = tabs.get_mut(&tab) {
            if tab.visible && now.duration_since(tab.last_report) <= self.stale_after {
                tab.last_visible = Some(now);
            }
            tab.visible = false;
        }
    }

    /// Whether a tab showing `session` is visible now.
    pub fn visible_now(&self, session: &str) -> bool {
        let now = Instant::now();
        let tabs = self.tabs.lock().expect("presence lock");
        tabs.values().any(|tab| tab.session.as_deref() == Some(session) && tab.visible && !self.stale(tab, now))
    }

    /// Whether a tab showed `session`, visible, at any moment since `since`.
    pub fn seen_since(&self, session: &str, since: Instant) -> bool {
        let now = Instant::now();
        let tabs = self.tabs.lock().expect("presence lock");
        tabs.values()
            .filter(|tab| tab.session.as_deref() == Some(session))
            .any(|tab| (tab.visible && !self.stale(tab, now)) || tab.last_visible.is_some_and(|at| at >= since))
    }

    fn stale(&self, tab: &Tab, now: Instant) -> bool {
        now.duration_since(tab.last_report) > self.stale_after
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_visible_tab_on_the_session_counts_and_one_on_another_session_does_not() {
        let presence = Presence::new(Duration::from_secs(60));
        let start = Instant::now();
        presence.report("tab-a", Some("s1"), true);
        presence.report("tab-b", Some("s2"), false);
        assert!(presence.visible_now("s1"));
        assert!(presence.seen_since("s1", start));
        assert!(!presence.visible_now("s2"));
        assert!(!presence.seen_since("s2", start));
        assert!(!presence.seen_since("s3", start));
    }

    #[test]
    fn a_tab_hidden_after_the_question_opened_had_seen_it() {
        let presence = Presence::new(Duration::from_secs(60));
        presence.report("tab", Some("s1"), true);
        let opened = Instant::now();
        presence.report("tab", Some("s1"), false);
        assert!(!presence.visible_now("s1"));
        assert!(presence.seen_since("s1", opened), "visible at the moment it opened");
        let later = Instant::now() + Duration::from_millis(1);
        assert!(!presence.seen_since("s1", later));
    }

    #[test]
    fn a_tab_that_stops_reporting_stops_counting() {
        let presence = Presence::new(Duration::from_secs(30));
        let Some(long_ago) = Instant::now().checked_sub(Duration::from_secs(120)) else { return };
        presence.report_at("tab", Some("s1"), true, long_ago);
        assert!(!presence.visible_now("s1"));
        assert!(!presence.seen_since("s1", long_ago + Duration::from_secs(1)));
    }

    #[test]
    fn a_closed_tab_no_longer_counts_as_visible() {
        let presence = Presence::new(Duration::from_secs(60));
        presence.report("tab", Some("s1"), true);
        presence.forget("tab");
        assert!(!presence.visible_now("s1"));
    }

    #[test]
    fn the_number_of_tabs_followed_is_bounded() {
        let presence = Presence::new(Duration::from_secs(60));
        for i in 0..(MAX_TABS + 10) {
            presence.report(&format!("tab-{i}"), Some("s"), false);
        }
        assert_eq!(presence.tabs.lock().unwrap().len(), MAX_TABS);
        presence.report(&"x".repeat(10_000), Some(&"y".repeat(10_000)), true);
        assert!(presence.tabs.lock().unwrap().keys().all(|id| id.len() <= MAX_TAB_ID));
    }
}
