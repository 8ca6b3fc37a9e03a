//! The browser side of the live stream: an `EventSource` that resumes after the last event it
//! applied, reconnects by itself within a second of the server being back (at once when the
//! browser comes back online, when the person asks, and on a session's page when the tab is shown
//! again), and never applies an event twice or out of order.
//!
//! A connection can die without an error: a laptop lid closes, a phone changes networks. So the
//! browser's `offline` event drops it at once, and a watchdog drops it when even the server's
//! heartbeat (`ping`, every 15 s) has stopped arriving.
//!
//! One `LiveConnection` lives as long as the page. The stream follows one session at a time;
//! `follow` moves it to another (a new `EventSource`, the same handlers, listeners and watchdog).

use std::cell::RefCell;
use std::rc::{Rc, Weak};
use std::time::Duration;

use leptos::prelude::{IntervalHandle, TimeoutHandle, set_interval_with_handle, set_timeout_with_handle};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::Closure;
use web_sys::{EventSource, MessageEvent};

use super::{ConnectionStatus, HEARTBEAT_EVENT, LIVE_PATH, PING_PATH, PROBLEM_EVENT, SESSION_EVENT, SESSIONS_EVENT};
use crate::error::AppError;
use crate::thread::SessionSummary;

thread_local! {
    /// The page's connection, for [`retry_now`].
    static CURRENT: RefCell<Weak<RefCell<Inner>>> = const { RefCell::new(Weak::new()) };
}

/// A stream waiting to reconnect tries at once: the banner's **Retry now**, and a session's tab
/// shown again.
pub fn retry_now() {
    if let Some(inner) = CURRENT.with(|current| current.borrow().upgrade()) {
        try_now(&inner);
    }
}

/// Tries at once if a try is scheduled.
fn try_now(inner: &Rc<RefCell<Inner>>) {
    let waiting = inner.borrow_mut().retry.take();
    if let Some(timer) = waiting {
        timer.clear();
        open(inner);
    }
}
/// Silence longer than this (three heartbeats) means the connection is dead.
const SILENCE_MS: f64 = 45_000.0;

/// What the page does with what arrives.
pub struct Handlers {
    /// A session event: its sequence number and its JSON, which the open session's pane reads
    /// (its types are decoded in that chunk, not in the first load: docs/size.md). False when
    /// nothing could read it yet: it is then asked for again.
    pub on_event: Box<dyn Fn(u64, String) -> bool>,
    pub on_sessions: Box<dyn Fn(Vec<SessionSummary>)>,
    pub on_status: Box<dyn Fn(ConnectionStatus)>,
}

/// An open live stream; dropping it closes the connection.
pub struct LiveConnection {
    inner: Rc<RefCell<Inner>>,
}

type Listener = Closure<dyn FnMut(web_sys::Event)>;

struct Inner {
    session: Option<String>,
    last_seq: u64,
    attempt: u32,
    source: Option<(EventSource, Vec<Listener>)>,
    retry: Option<TimeoutHandle>,
    /// The `online` and `offline` listeners on the window.
    network: Vec<(&'static str, Listener)>,
    watchdog: Option<IntervalHandle>,
    /// When anything last arrived (ms since the epoch).
    last_heard: f64,
    stopped: bool,
    handlers: Rc<Handlers>,
}

impl LiveConnection {
    /// Follows `session` (or only the session list) from the event after `after`.
    pub fn start(session: Option<String>, after: u64, handlers: Handlers) -> Self {
        let inner = Rc::new(RefCell::new(Inner {
            session,
            last_seq: after,
            attempt: 0,
            source: None,
            retry: None,
            network: Vec::new(),
            watchdog: None,
            last_heard: js_sys::Date::now(),
            stopped: false,
            handlers: Rc::new(handlers),
        }));
        let weak = Rc::downgrade(&inner);
        CURRENT.with(|current| *current.borrow_mut() = weak.clone());
        let online: Listener = Closure::new(move |_: web_sys::Event| {
            if let Some(inner) = weak.upgrade() {
                try_now(&inner);
            }
        });
        let weak = Rc::downgrade(&inner);
        let offline: Listener = Closure::new(move |_: web_sys::Event| {
            if let Some(inner) = weak.upgrade() {
                drop_connection(&inner);
            }
        });
        if let Some(window) = web_sys::window() {
            let _ = window.add_event_listener_with_callback("online", online.as_ref().unchecked_ref());
            let _ = window.add_event_listener_with_callback("offline", offline.as_ref().unchecked_ref());
        }
        let weak = Rc::downgrade(&inner);
        let watchdog = set_interval_with_handle(
            move || {
                if let Some(inner) = weak.upgrade() {
                    let silent = {
                        let state = inner.borrow();
                        state.source.is_some() && js_sys::Date::now() - state.last_heard > SILENCE_MS
                    };
                    if silent {
                        drop_connection(&inner);
                    }
                }
            },
            Duration::from_secs(10),
        )
        .ok();
        {
            let mut state = inner.borrow_mut();
            state.network = vec![("online", online), ("offline", offline)];
            state.watchdog = watchdog;
        }
        open(&inner);
        Self { inner }
    }
}

impl LiveConnection {
    /// Follows `session` (or only the session list) from the event after `after`, instead of what
    /// it followed. A stream the server had ended (its session deleted) starts again too.
    pub fn follow(&self, session: Option<String>, after: u64) {
        {
            let mut inner = self.inner.borrow_mut();
            if inner.session == session && inner.last_seq == after && !inner.stopped {
                return;
            }
            close(&mut inner);
            if let Some(timer) = inner.retry.take() {
                timer.clear();
            }
            inner.session = session;
            inner.last_seq = after;
            inner.attempt = 0;
            inner.stopped = false;
            inner.last_heard = js_sys::Date::now();
        }
        status(&self.inner, ConnectionStatus::Connecting);
        open(&self.inner);
    }
}

impl Drop for LiveConnection {
    fn drop(&mut self) {
        let mut inner = self.inner.borrow_mut();
        inner.stopped = true;
        close(&mut inner);
        if let Some(timer) = inner.retry.take() {
            timer.clear();
        }
        if let Some(watchdog) = inner.watchdog.take() {
            watchdog.clear();
        }
        if let Some(window) = web_sys::window() {
            for (name, listener) in inner.network.drain(..) {
                let _ = window.remove_event_listener_with_callback(name, listener.as_ref().unchecked_ref());
            }
        }
    }
}

fn close(inner: &mut Inner) {
    if let Some((source, _listeners)) = inner.source.take() {
        source.close();
    }
}

/// The connection is dead although the browser has not said so: start again.
fn drop_connection(this: &Rc<RefCell<Inner>>) {
    close(&mut this.borrow_mut());
    schedule_retry(this);
}

fn open(this: &Rc<RefCell<Inner>>) {
    let url = {
        let inner = this.borrow();
        if inner.stopped {
            return;
        }
        let mut url = format!("{LIVE_PATH}?after={}", inner.last_seq);
        if let Some(session) = &inner.session {
            url.push_str("&session=");
            url.push_str(&String::from(js_sys::encode_uri_component(session)));
        }
        url
    };
    let Ok(source) = EventSource::new(&url) else {
        schedule_retry(this);
        return;
    };
    let weak = Rc::downgrade(this);
    let listeners = vec![
        listen(&source, "open", &weak, |this, _| {
            this.borrow_mut().attempt = 0;
            status(this, ConnectionStatus::Live);
        }),
        listen(&source, "error", &weak, |this, _| {
            close(&mut this.borrow_mut());
            ask_why(this);
        }),
        listen(&source, HEARTBEAT_EVENT, &weak, |_, _| {}),
        listen_with_id(&source, SESSION_EVENT, &weak, |this, seq, data| {
            // The event's number is its SSE id: no need to read the event here.
            let Some(seq) = seq else { return };
            let last = this.borrow().last_seq;
            if seq <= last {
                return; // already applied
            }
            if seq != last + 1 {
                // A gap would lose events: start again from the last one applied.
                close(&mut this.borrow_mut());
                open(this);
                return;
            }
            let handlers = this.borrow().handlers.clone();
            if (handlers.on_event)(seq, data) {
                this.borrow_mut().last_seq = seq;
            } else {
                drop_connection(this);
            }
        }),
        listen(&source, SESSIONS_EVENT, &weak, |this, data| {
            if let Ok(list) = serde_json::from_str::<Vec<SessionSummary>>(&data) {
                let handlers = this.borrow().handlers.clone();
                (handlers.on_sessions)(list);
            }
        }),
        listen(&source, PROBLEM_EVENT, &weak, |this, data| {
            let error = serde_json::from_str::<AppError>(&data)
                .unwrap_or_else(|_| AppError::Internal { detail: "the live stream ended".into() });
            // Only a session the server says is gone ends the stream for good; anything else is
            // tried again.
            if !matches!(error, AppError::SessionNotFound { .. }) {
                drop_connection(this);
                return;
            }
            {
                let mut inner = this.borrow_mut();
                inner.stopped = true;
                close(&mut inner);
            }
            status(this, ConnectionStatus::Closed(error));
        }),
    ];
    this.borrow_mut().source = Some((source, listeners));
}

/// The stream failed: asks the server whether this browser is still signed in. 401: signed out,
/// and nothing more is tried (the person must sign in again, and every retry would be a wrong
/// token); no answer: the server is down, tried again with back-off; else tried again.
fn ask_why(this: &Rc<RefCell<Inner>>) {
    let weak = Rc::downgrade(this);
    wasm_bindgen_futures::spawn_local(async move {
        let reply = match web_sys::window() {
            Some(window) => wasm_bindgen_futures::JsFuture::from(window.fetch_with_str(PING_PATH)).await.ok(),
            None => None,
        };
        let signed_out = reply.and_then(|r| r.dyn_into::<web_sys::Response>().ok()).is_some_and(|r| r.status() == 401);
        let Some(this) = weak.upgrade() else { return };
        if signed_out {
            this.borrow_mut().stopped = true;
            status(&this, ConnectionStatus::SignedOut);
        } else {
            schedule_retry(&this);
        }
    });
}

/// As `listen`, with the event's SSE id (`lastEventId`) read as a number.
fn listen_with_id(
    source: &EventSource,
    name: &str,
    weak: &Weak<RefCell<Inner>>,
    handle: impl Fn(&Rc<RefCell<Inner>>, Option<u64>, String) + 'static,
) -> Listener {
    let weak = weak.clone();
    let listener: Listener = Closure::new(move |event: web_sys::Event| {
        let Some(this) = weak.upgrade() else { return };
        this.borrow_mut().last_heard = js_sys::Date::now();
        let Some(message) = event.dyn_ref::<MessageEvent>() else { return };
        let seq = message.last_event_id().parse().ok();
        handle(&this, seq, message.data().as_string().unwrap_or_default());
    });
    let _ = source.add_event_listener_with_callback(name, listener.as_ref().unchecked_ref());
    listener
}

fn listen(
    source: &EventSource,
    name: &str,
    weak: &Weak<RefCell<Inner>>,
    handle: impl Fn(&Rc<RefCell<Inner>>, String) + 'static,
) -> Listener {
    let weak = weak.clone();
    let listener: Listener = Closure::new(move |event: web_sys::Event| {
        let Some(this) = weak.upgrade() else { return };
        this.borrow_mut().last_heard = js_sys::Date::now();
        let data = event.dyn_ref::<MessageEvent>().and_then(|m| m.data().as_string()).unwrap_or_default();
        handle(&this, data);
    });
    let _ = source.add_event_listener_with_callback(name, listener.as_ref().unchecked_ref());
    listener
}

fn status(this: &Rc<RefCell<Inner>>, status: ConnectionStatus) {
    let handlers = this.borrow().handlers.clone();
    (handlers.on_status)(status);
}

fn schedule_retry(this: &Rc<RefCell<Inner>>) {
    let (attempt, delay) = {
        let mut inner = this.borrow_mut();
        if inner.stopped || inner.retry.is_some() {
            return;
        }
        close(&mut inner);
        inner.attempt += 1;
        (inner.attempt, backoff(inner.attempt))
    };
    status(this, ConnectionStatus::Reconnecting { attempt });
    let weak = Rc::downgrade(this);
    let timer = set_timeout_with_handle(
        move || {
            if let Some(this) = weak.upgrade() {
                this.borrow_mut().retry = None;
                open(&this);
            }
        },
        delay,
    );
    if let Ok(timer) = timer {
        this.borrow_mut().retry = Some(timer);
    }
}

/// [`super::retry_delay`] with ±20 % jitter, so that many tabs do not reconnect in step after a
/// server restart.
fn backoff(attempt: u32) -> Duration {
    super::retry_delay(attempt).mul_f64(0.8 + 0.4 * js_sys::Math::random())
}
