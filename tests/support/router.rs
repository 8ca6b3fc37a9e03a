//! The server's router in the test's process, called without a socket: an in-memory store, and
//! a scripted agent that answers "ok" (slowly, so that a test sees its turn at work).

use std::sync::Arc;

use askbridge::agent::scripted::{Scenario, ScriptedAgent};
use askbridge::server::cli::{Cli, Command};
use askbridge::server::router;
use askbridge::session::SessionManager;
use askbridge::store::Store;
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use tower::ServiceExt;

pub struct Harness {
    pub app: axum::Router,
    pub manager: Arc<SessionManager>,
    /// The manager's store, to read what it stored (the same in-memory database).
    pub store: Store,
}

/// The router as `askbridge serve` builds it with its default flags.
pub async fn harness() -> Harness {
    harness_with("pace = 1000\n[[turn]]\n[[turn.step]]\nsay = \"ok\"\n").await
}

/// [`harness`], its scripted agent playing `scenario` (TOML) instead.
pub async fn harness_with(scenario: &str) -> Harness {
    let Command::Serve(args) = <Cli as clap::Parser>::try_parse_from(["askbridge", "serve"]).unwrap().command else {
        panic!("serve")
    };
    let scenario = Scenario::parse(scenario, "test").unwrap();
    let store = Store::open_in_memory().await.unwrap();
    let manager = SessionManager::new(store.clone(), Arc::new(ScriptedAgent::new(scenario)));
    Harness { app: router(&args, manager.clone()), manager, store }
}

impl Harness {
    /// One request through the router: its status, headers and whole body.
    pub async fn call(&self, request: Request<Body>) -> (StatusCode, HeaderMap, Vec<u8>) {
        let response = self.app.clone().oneshot(request).await.unwrap();
        let (status, headers) = (response.status(), response.headers().clone());
        (status, headers, response.into_body().collect().await.unwrap().to_bytes().to_vec())
    }

    /// [`Harness::call`] without the headers.
    pub async fn call_for_body(&self, request: Request<Body>) -> (StatusCode, Vec<u8>) {
        let (status, _, body) = self.call(request).await;
        (status, body)
    }
}
