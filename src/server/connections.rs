//! The server's connections, accepted here rather than by `axum::serve`, which sets no deadline on
//! any of them: a connection that never finishes its headers, or sends nothing at all, or sits
//! idle between requests, was held open for good, and without a token (issue 33).
//!
//! - Every connection has `HEADER_DEADLINE` to send a request's headers, the first request's and
//!   every next one's (hyper's header-read timeout, which runs from the moment the server waits
//!   for a request, bytes or none): a silent socket, a slow one and an idle keep-alive one are
//!   all closed. A response being written (a live stream, with its heartbeat) is not a wait.
//! - A client address may hold at most `MAX_UNPROVEN_PER_CLIENT` connections that have not yet
//!   carried the access token (`Proof`, set by `security::guard`); past that, its new
//!   connections are closed at once. Once a connection's request has the token, it no longer
//!   counts: a person's tabs never meet the limit.
//! - HTTP/1.1 only: browsers speak HTTP/2 only over TLS, which a proxy in front ends.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tower::ServiceExt;
use tracing::{debug, warn};

/// How long a connection has to send a request's headers once the server waits for one.
pub const HEADER_DEADLINE: Duration = Duration::from_secs(10);
/// Connections one client address may hold open before any of them carried the token.
pub const MAX_UNPROVEN_PER_CLIENT: usize = 64;

/// Whether a connection has carried the access token, in each of its requests' extensions: the
/// guard sets it, and the connection then stops counting against its client's limit.
#[derive(Clone)]
pub struct Proof {
    proven: Arc<AtomicBool>,
    client: IpAddr,
    unproven: Unproven,
}

impl Proof {
    /// The connection carried the right token (or the server needs none).
    pub fn set(&self) {
        if !self.proven.swap(true, Ordering::AcqRel) {
            self.unproven.release(self.client);
        }
    }
}

/// How many connections each client address holds that have not carried the token.
#[derive(Clone, Default)]
struct Unproven(Arc<Mutex<HashMap<IpAddr, usize>>>);

impl Unproven {
    /// Counts a new connection from `client`, unless it already holds the most it may.
    fn admit(&self, client: IpAddr) -> bool {
        let mut counts = self.0.lock().expect("connection counts");
        let count = counts.entry(client).or_default();
        if *count >= MAX_UNPROVEN_PER_CLIENT {
            return false;
        }
        *count += 1;
        true
    }

    fn release(&self, client: IpAddr) {
        let mut counts = self.0.lock().expect("connection counts");
        if let Some(count) = counts.get_mut(&client) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&client);
            }
        }
    }
}

/// Serves `app` on `listener` until `stop` completes; then `stopping` runs (the live streams end
/// there), and the connections still serving a request finish it.
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    stop: impl Future<Output = ()>,
    stopping: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let graceful = GracefulShutdown::new();
    let unproven = Unproven::default();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(HEADER_DEADLINE);
    tokio::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of descriptors, or a connection reset before it was taken: the
                    // listener itself is fine. A pause, so that a full table is not spun on.
                    warn!(%error, "a connection could not be accepted");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let client = peer.ip();
        if !unproven.admit(client) {
            debug!(%client, "a connection refused: its address holds too many without the token");
            drop(stream);
            continue;
        }
        let _ = stream.set_nodelay(true);
        let proof = Proof { proven: Arc::new(AtomicBool::new(false)), client, unproven: unproven.clone() };
        let service = {
            let (app, proof) = (app.clone(), proof.clone());
            hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
                request.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
                request.extensions_mut().insert(proof.clone());
                app.clone().oneshot(request.map(Body::new))
            })
        };
        let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                debug!(%error, "a connection ended with an error");
            }
            // A connection that never carried the token stops counting when it closes.
            if !proof.proven.swap(true, Ordering::AcqRel) {
                proof.unproven.release(proof.client);
            }
        });
    }
    drop(listener);
    stopping.await;
    graceful.shutdown().await;
    Ok(())
}
