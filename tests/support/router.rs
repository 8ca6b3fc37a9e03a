//! The server's router in the test's process, called without a socket: an in-memory store, and
//! a scripted agent that answers "ok" (slowly, so that a test sees its turn at work).

use std::sync::Arc;

use askbridge::agent::scripted::{Scenario, ScriptedAgent};
use askbridge::server::cli::{Cli, Command};
use askbridge::server::router;
use askbridge::session::SessionManager;
use askbridge::store::Store;

pub struct Harness {
    pub app: axum::Router,
    pub manager: Arc<SessionManager>,
    /// The manager's store, to read what it stored (the same in-memory database).
    pub store: Store,
}

/// The router as `askbridge serve` builds it with its default flags.
pub async fn harness() -> Harness {
    let Command::Serve(args) = <Cli as clap::Parser>::try_parse_from(["askbridge", "serve"]).unwrap().command else {
        panic!("serve")
    };
    let scenario = Scenario::parse("pace = 1000\n[[turn]]\n[[turn.step]]\nsay = \"ok\"\n", "test").unwrap();
    let store = Store::open_in_memory().await.unwrap();
    let manager = SessionManager::new(store.clone(), Arc::new(ScriptedAgent::new(scenario)));
    Harness { app: router(&args, manager.clone()), manager, store }
}
