//! The HTTP server: configuration from the command line, the axum router with the Leptos pages,
//! server functions, the live stream and the built assets, and a graceful stop.

pub mod access_token;
mod agents;
pub mod cli;
pub mod connections;
mod router;
pub mod security;
mod shell_socket;
pub mod site;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tracing::{info, warn};

use crate::agent::AgentEnv;
use crate::approval::PermissionMode;
use crate::notify::{LazyVapidKey, Notifier, NotifyConfig, VapidKey};
use crate::session::{SessionManager, SessionPolicy, Timeouts};
use crate::store::{Store, without_password};
use access_token::TokenSource;
use agents::{build_agents, bypass_refused};
pub use cli::BoxError;
use cli::ServeArgs;
pub use router::{AppState, router, router_with};

/// `askbridge serve`: runs until Ctrl-C or SIGTERM.
pub async fn serve(args: ServeArgs) -> Result<(), BoxError> {
    serve_until(args, None, shutdown_signal()).await
}

/// What `serve` does, on `listener` when one is given (else on `--addr`), until `stop` completes:
/// how a test runs the whole server in-process, on a port of its own (`127.0.0.1:0`).
pub async fn serve_until(
    mut args: ServeArgs,
    listener: Option<tokio::net::TcpListener>,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<(), BoxError> {
    // A listener from the caller is held to the same rules as `--addr` (token, bypass, folders).
    if let Some(listener) = &listener {
        args.addr = listener.local_addr()?;
    }
    crate::store::private::create_dir(&args.data_dir)
        .map_err(|error| format!("cannot create the data folder {}: {error}", args.data_dir.display()))?;
    let (token, token_source) =
        access_token::resolve(args.token.as_deref(), args.no_token, &args.addr, &args.data_dir)?;
    args.token = token;
    let database = database_url(&args)?;
    let store = Store::connect(&database)
        .await
        .map_err(|error| format!("cannot open the database {}: {error}", without_password(&database)))?;
    let agent = build_agents(&args)?;
    let timeouts = Timeouts {
        question: args.question_timeout,
        approval: args.approval_timeout,
        park_after: Some(args.park_after),
        lease: Some(args.lease),
        ..Timeouts::default()
    };
    let policy = session_policy(&args, agent.default_workdir().as_deref())?;
    // The notifier reads the store on its own (subscriptions, the team's VAPID key): a handle of
    // its own, the same pool.
    let notifier_store = store.clone();
    let manager = SessionManager::with_policy(store, agent, timeouts, policy);
    manager.set_max_loaded_sessions(args.max_loaded_sessions);
    // The models the new-session page offers, asked for now (a CLI started to ask, the API's
    // list), so that the first page has them.
    let asking = manager.clone();
    tokio::spawn(async move { asking.agent_offers().await });
    let listener = match listener {
        Some(listener) => listener,
        None => tokio::net::TcpListener::bind(args.addr)
            .await
            .map_err(|error| format!("cannot listen on {}: {error}", args.addr))?,
    };
    let local = listener.local_addr()?;
    // Told of every session's events from the start, recovered turns included.
    let notifier = notifier(&args, notifier_store, &manager, &local).await?;
    manager.recover_unfinished_turns().await?;
    // Cards of terminals whose hooks waited on a server that stopped: those hooks let go.
    match manager.close_orphaned_terminal_cards(crate::terminal::relay::LEFT_OPEN).await {
        Ok(0) => {}
        Ok(closed) => info!(closed, "closed the cards of terminals that a stopped server left open"),
        Err(error) => warn!(%error, "could not close the cards a stopped server left open"),
    }
    // With Postgres: the other servers' events, answers and leases.
    manager.join_team().await?;

    let app = router_with(&args, manager.clone(), Some(notifier.clone()));
    info!(
        addr = %local,
        database = %without_password(&database),
        agent = manager.agent_name(),
        token = ?token_source,
        "AskBridge is serving on http://{local}"
    );
    // The link goes to the terminal, never to the log (a log may be kept or shipped elsewhere).
    let link = access_token::sign_in_link(&local, args.token.as_deref());
    match &token_source {
        TokenSource::Off => println!("\n    AskBridge: {link}  (no access token: --no-token)\n"),
        _ => println!("\n    AskBridge: open {link}\n"),
    }

    let stopping = manager.clone();
    // Deadlines and limits on every connection (`connections`); each request carries its peer's
    // address, for the limit on wrong tokens and to know a --trusted-proxy.
    connections::serve(listener, app, stop, async move {
        info!("stopping: ending turns and closing live streams");
        notifier.shut_down();
        stopping.shut_down().await;
    })
    .await?;
    info!("stopped");
    Ok(())
}

/// The notifier (Web Push and `--notify-url`), fed every session's events: the VAPID key from
/// the data folder (made at its first use), or where servers share a database the team's, kept
/// there; links to `--public-url` (else this server's address).
async fn notifier(
    args: &ServeArgs,
    store: Store,
    manager: &SessionManager,
    local: &std::net::SocketAddr,
) -> Result<Notifier, BoxError> {
    let vapid = if store.is_shared() {
        LazyVapidKey::from(VapidKey::of_team(&store, &args.data_dir).await?)
    } else {
        LazyVapidKey::in_folder(&args.data_dir)
    };
    let public_url = match &args.public_url {
        Some(url) => url.clone(),
        None => access_token::sign_in_link(local, None).trim_end_matches('/').to_string(),
    };
    let mut config = NotifyConfig::new(&public_url);
    config.detail = args.notify_detail;
    config.webhooks = args.notify_url.clone();
    config.grace = args.notify_after;
    config.push_hosts = crate::notify::outbound::PushHosts::with(args.push_host.clone());
    if let Some(contact) = &args.push_contact {
        config.contact = contact.clone();
    }
    let notifier = Notifier::new(store, vapid, config);
    let fed = notifier.clone();
    manager.observe_events(Arc::new(move |session, event| fed.observe(session, &event.body)));
    Ok(notifier)
}

/// What sessions may do here: the folders they may work in (`--workdir-root`, by default the
/// home folder on a network address), and whether bypassPermissions is allowed.
fn session_policy(args: &ServeArgs, default_workdir: Option<&Path>) -> Result<SessionPolicy, BoxError> {
    let root = match &args.workdir_root {
        Some(root) => Some(root.clone()),
        None if !args.addr.ip().is_loopback() => Some(std::env::var_os("HOME").map(PathBuf::from).ok_or(
            "on a network address, sessions are kept to your home folder, but HOME is not set: give --workdir-root",
        )?),
        None => None,
    };
    let workdir_root = match root {
        Some(root) => Some(root.canonicalize().map_err(|error| format!("--workdir-root {}: {error}", root.display()))?),
        None => None,
    };
    let checkpoints = (!args.no_checkpoints).then(|| args.data_dir.clone());
    let shell_env = AgentEnv::new(&args.agent_env)?;
    let worktrees = std::path::absolute(args.data_dir.join("worktrees"))?;
    // Compared with canonical folders: the data folder's own links resolved (it may not exist yet).
    let worktrees = Some(match args.data_dir.canonicalize() {
        Ok(data) => data.join("worktrees"),
        Err(_) => worktrees,
    });
    let policy =
        SessionPolicy { workdir_root, bypass_refused: bypass_refused(args), checkpoints, shell_env, worktrees };
    // The agent's own default folder must obey the root too, or a session without one escapes it.
    if let Some(dir) = default_workdir {
        policy.check_workdir(&dir.display().to_string()).map_err(|error| format!("the agent's folder: {error}"))?;
    }
    if args.permission_mode == PermissionMode::BypassPermissions
        && let Some(why) = &policy.bypass_refused
    {
        return Err(format!("--permission-mode bypassPermissions: {why}").into());
    }
    Ok(policy)
}

/// Where sessions are stored: `--database-url-file`, `--database-url` (`DATABASE_URL`), or the
/// SQLite file in the data folder.
fn database_url(args: &ServeArgs) -> Result<String, BoxError> {
    let Some(path) = &args.database_url_file else {
        return Ok(match &args.database_url {
            Some(url) => url.clone(),
            None => format!("sqlite://{}", args.data_dir.join("askbridge.db").display()),
        });
    };
    if args.database_url.is_some() {
        return Err("give the database once: --database-url-file, or --database-url (DATABASE_URL), not both".into());
    }
    let url = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read --database-url-file {}: {e}", path.display()))?;
    let url = url.trim();
    if url.is_empty() {
        return Err(format!("--database-url-file {} is empty", path.display()).into());
    }
    Ok(url.to_string())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}

/// Logs to stderr; `RUST_LOG` overrides the default level.
pub fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("askbridge=info,tower_http=warn"));
    use std::io::IsTerminal;
    // Logs to stderr (colored only on a terminal); stdout carries only the sign-in link.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

#[cfg(test)]
mod tests;
