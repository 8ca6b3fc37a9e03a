//! For tests of the server, unit and integration alike: waiting until something is true, with a
//! deadline and a message that says what never happened; a private Postgres server (`postgres`).

pub mod postgres;
pub mod small_disk;

use std::future::Future;
use std::time::Duration;

/// How often a condition is checked.
const POLL: Duration = Duration::from_millis(10);

/// Checks `check` until it gives `Some`, and returns that; fails the test with `what` once
/// `timeout` has passed.
pub async fn wait_until<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "waited {timeout:?} for {what}");
        tokio::time::sleep(POLL).await;
    }
}
