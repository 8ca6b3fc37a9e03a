//! The server's connections, accepted here rather than by `axum::serve`, which sets no deadline on
//! any of them: a connection that never finishes its headers, or sends nothing at all, or sits
//! idle between requests, was held open for good, and without a token (issue 33).
//!
//! - Every connection has `HEADER_DEADLINE` to send a request's headers, the first request's and
//!   every next one's (hyper's header-read timeout, which runs from the moment the server waits
//!   for a request, bytes or none): a silent socket, a slow one and an idle keep-alive one are
//!   all closed. A response being written (a live stream, with its heartbeat) is not a wait.
//! - A client address may hold at most `MAX_UNPROVEN_PER_CLIENT` connections that are older than
//!   `GRACE` and have not carried the access token (`Proof`, set by `security::guard`); one past
//!   that is closed when its grace ends. Once a connection's request has the token, it no longer
//!   counts: a person's tabs never meet the limit, nor does a script's burst of connections.
//! - HTTP/1.1 only: browsers speak HTTP/2 only over TLS, which a proxy in front ends.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;
use tracing::{debug, warn};

/// How long a connection has to send a request's headers once the server waits for one.
pub const HEADER_DEADLINE: Duration = Duration::from_secs(10);
/// Connections one client address may keep open without the token, once they are older than
/// `GRACE`: a script's or a page's burst of new connections is never counted, since each carries
/// its token (or gets its answer) within milliseconds; sockets that linger silent are.
pub const MAX_UNPROVEN_PER_CLIENT: usize = 64;
/// How long a new connection has before it counts against its client's limit.
pub const GRACE: Duration = Duration::from_secs(1);

/// Whether a connection has carried the access token, in each of its requests' extensions: the
/// guard sets it, and the connection then stops counting against its client's limit.
#[derive(Clone)]
pub struct Proof {
    state: Arc<Mutex<Standing>>,
    client: IpAddr,
    unproven: Unproven,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Standing {
    /// Younger than `GRACE`, no token yet.
    New,
    /// Older, no token yet: counted against its client.
    Counted,
    /// Carried the token (or closed): counts for nothing.
    Proven,
}

impl Proof {
    /// The connection carried the right token (or the server needs none).
    pub fn set(&self) {
        self.settle(Standing::Proven);
    }

    /// Its grace is over: counted, unless it carried the token; `false` when its client holds
    /// too many already, and it is to be closed.
    fn grace_over(&self) -> bool {
        let mut state = self.state.lock().expect("connection standing");
        match *state {
            Standing::New if self.unproven.admit(self.client) => {
                *state = Standing::Counted;
                true
            }
            Standing::New => false,
            Standing::Counted | Standing::Proven => true,
        }
    }

    fn settle(&self, to: Standing) {
        let mut state = self.state.lock().expect("connection standing");
        if *state == Standing::Counted {
            self.unproven.release(self.client);
        }
        *state = to;
    }
}

/// How many connections each client address holds that are past their grace without the token.
#[derive(Clone, Default)]
struct Unproven(Arc<Mutex<HashMap<IpAddr, usize>>>);

impl Unproven {
    /// Counts one more of `client`'s, unless it holds the most it may.
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
    // Each connection's task, and the word that they should finish their request and close
    // (hyper's graceful shutdown of a connection; a WebSocket, once upgraded, is the terminal's to
    // end, `shell_socket.rs`).
    let (open, closing) = (TaskTracker::new(), CancellationToken::new());
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
        let _ = stream.set_nodelay(true);
        let proof = Proof { state: Arc::new(Mutex::new(Standing::New)), client, unproven: unproven.clone() };
        let service = {
            let (app, proof) = (app.clone(), proof.clone());
            hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
                request.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
                request.extensions_mut().insert(proof.clone());
                app.clone().oneshot(request.map(Body::new))
            })
        };
        let connection = http.serve_connection(TokioIo::new(stream), service).with_upgrades();
        let closing = closing.clone();
        open.spawn(async move {
            tokio::pin!(connection);
            let grace = tokio::time::sleep(GRACE);
            tokio::pin!(grace);
            let (mut graced, mut told) = (false, false);
            let ended = loop {
                tokio::select! {
                    ended = &mut connection => break ended,
                    () = &mut grace, if !graced => {
                        graced = true;
                        if !proof.grace_over() {
                            debug!(%client, "a connection closed: its address holds too many without the token");
                            break Ok(());
                        }
                    }
                    () = closing.cancelled(), if !told => {
                        told = true;
                        connection.as_mut().graceful_shutdown();
                    }
                }
            };
            if let Err(error) = ended {
                debug!(%error, "a connection ended with an error");
            }
            // Closed: it counts no more.
            proof.settle(Standing::Proven);
        });
    }
    drop(listener);
    stopping.await;
    closing.cancel();
    open.close();
    open.wait().await;
    Ok(())
}
