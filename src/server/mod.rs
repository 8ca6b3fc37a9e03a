//! The HTTP server: configuration from the command line, the axum router with the Leptos pages,
//! server functions, the live stream and the built assets, and a graceful stop.

pub mod access_token;
pub mod cli;
pub mod connections;
pub mod security;
pub mod site;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::FromRef;
use axum::handler::Handler;
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use leptos::config::LeptosOptions;
use leptos::nonce::Nonce;
use leptos::prelude::provide_context;
use tower_http::compression::CompressionLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::services::ServeDir;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::TraceLayer;
use tracing::{info, warn};

use crate::agent::anthropic::{AnthropicAgent, AnthropicConfig};
use crate::agent::claude::{AgentEnv, ClaudeCliBackend, ClaudeConfig};
use crate::agent::scripted::{Scenario, ScriptedAgent};
use crate::agent::{AgentBackend, Agents};
use crate::api::WorkspaceView;
use crate::app::{AssetPaths, shell};
use crate::approval::PermissionMode;
use crate::error::{AppError, MAX_BODY_BYTES};
use crate::live::{LIVE_PATH, sse};
use crate::notify::{LazyVapidKey, Notifier, NotifyConfig, VapidKey};
use crate::session::{SessionManager, SessionPolicy, Timeouts};
use crate::store::{Store, without_password};
use crate::ui::navigation::Page;
use crate::ui::page_data::PageData;
use access_token::TokenSource;
use cli::{AgentChoice, ServeArgs};
use security::Access;

#[derive(Clone, FromRef)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    pub manager: Arc<SessionManager>,
    pub access: Access,
}

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

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

/// Every agent that can work on this machine, `--agent`'s the default for new sessions: Claude
/// Code when found and signed in, the Messages API with a key, and the offline demo always.
fn build_agents(args: &ServeArgs) -> Result<Arc<dyn AgentBackend>, BoxError> {
    let environment = Environment::of_this_process();
    let (auto, why) = choose_agent(args, &environment);
    let choice = match args.agent {
        AgentChoice::Auto => {
            info!(agent = ?auto, "--agent auto: {why}");
            auto
        }
        chosen => chosen,
    };
    let default = build_agent(args, choice)?;
    let mut others = Vec::new();
    for other in [AgentChoice::Claude, AgentChoice::Anthropic, AgentChoice::Scripted] {
        if other == choice || !can_work(args, &environment, other) {
            continue;
        }
        match build_agent(args, other) {
            Ok(agent) => others.push(agent),
            Err(error) => info!(agent = ?other, %error, "not offered to new sessions"),
        }
    }
    Ok(Arc::new(Agents::new(default, others)))
}

/// Whether `agent` can work here besides the one `--agent` picked.
fn can_work(args: &ServeArgs, environment: &Environment, agent: AgentChoice) -> bool {
    let key = args.api_key_file.is_some() || args.api_key.as_deref().is_some_and(|k| !k.trim().is_empty());
    match agent {
        AgentChoice::Claude => {
            let claude = match &args.claude_bin {
                Some(bin) => bin.is_file(),
                None => claude_on_path(environment.path.as_deref()).is_some(),
            };
            claude && claude_login(environment, key).is_some()
        }
        AgentChoice::Anthropic => key,
        AgentChoice::Scripted | AgentChoice::Auto => true,
    }
}

fn build_agent(args: &ServeArgs, choice: AgentChoice) -> Result<Arc<dyn AgentBackend>, BoxError> {
    match choice {
        AgentChoice::Auto | AgentChoice::Scripted => {
            let scenario = match &args.scenario {
                Some(path) => Scenario::load(path)?,
                None => Scenario::demo(),
            };
            info!(scenario = %scenario.name, turns = scenario.turns.len(), "scripted agent ready");
            Ok(Arc::new(ScriptedAgent::new(scenario)))
        }
        AgentChoice::Claude => {
            let workdir = match &args.workdir {
                Some(dir) => dir.clone(),
                None => std::env::current_dir()?,
            };
            if !workdir.is_dir() {
                return Err(format!("--workdir {} is not a folder", workdir.display()).into());
            }
            let bin = args.claude_bin.clone().unwrap_or_else(|| PathBuf::from("claude"));
            let agent_env = AgentEnv::new(&args.agent_env)?;
            // A key given as a file reaches the CLI as its variable (the file stays ours).
            let mut env = Vec::new();
            if args.api_key_file.is_some()
                && let Some(key) = api_key(args)?
            {
                env.push(("ANTHROPIC_API_KEY".to_string(), key));
            }
            info!(bin = %bin.display(), workdir = %workdir.display(), mode = %args.permission_mode, "Claude Code agent ready");
            Ok(Arc::new(ClaudeCliBackend::new(ClaudeConfig {
                bin,
                workdir,
                permission_mode: args.permission_mode,
                model: args.model.clone(),
                answer_path: args.answer_path,
                agent_env,
                env,
                allow_bypass: bypass_refused(args).is_none(),
                max_agents: args.max_agents.unwrap_or_else(ClaudeConfig::default_max_agents),
                idle_exit: Some(args.idle_exit),
            })))
        }
        AgentChoice::Anthropic => {
            let api_key = api_key(args)?
                .ok_or("--agent anthropic needs an API key: set ANTHROPIC_API_KEY, or give --api-key-file FILE")?;
            let system_prompt = match &args.system_prompt {
                Some(path) => Some(
                    std::fs::read_to_string(path)
                        .map_err(|e| format!("cannot read --system-prompt {}: {e}", path.display()))?,
                ),
                None => None,
            };
            let mut config = AnthropicConfig::new(&api_key);
            config.base_url = args.base_url.clone();
            config.model = args.model.clone().unwrap_or(config.model);
            config.max_tokens = args.max_tokens;
            config.system_prompt = system_prompt.filter(|p| !p.trim().is_empty());
            info!(base_url = %config.base_url, model = %config.model, max_tokens = config.max_tokens, "Messages API agent ready");
            Ok(Arc::new(AnthropicAgent::new(config)?))
        }
    }
}

/// Why no session may switch to bypassPermissions on this server, if none may.
fn bypass_refused(args: &ServeArgs) -> Option<String> {
    if args.no_bypass {
        Some("this server was started with --no-bypass, so bypassPermissions is not available".into())
    } else if !args.addr.ip().is_loopback() && !args.allow_bypass {
        Some(format!(
            "bypassPermissions is off on a network address ({}): it lets anyone with the token run              anything without a card. Start the server with --allow-bypass to allow it.",
            args.addr
        ))
    } else {
        None
    }
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
    let policy = SessionPolicy { workdir_root, bypass_refused: bypass_refused(args) };
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

/// The API key from `--api-key-file` or `ANTHROPIC_API_KEY`, if either gives one.
fn api_key(args: &ServeArgs) -> Result<Option<String>, BoxError> {
    if let Some(path) = &args.api_key_file {
        let key =
            std::fs::read_to_string(path).map_err(|e| format!("cannot read --api-key-file {}: {e}", path.display()))?;
        let key = key.trim();
        if key.is_empty() {
            return Err(format!("--api-key-file {} is empty", path.display()).into());
        }
        return Ok(Some(key.to_string()));
    }
    Ok(args.api_key.as_deref().map(str::trim).filter(|k| !k.is_empty()).map(str::to_string))
}

/// What `--agent auto` looks at, apart from the flags.
struct Environment {
    path: Option<std::ffi::OsString>,
    home: Option<PathBuf>,
    vars: Vec<(String, String)>,
}

impl Environment {
    fn of_this_process() -> Self {
        let vars = ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR"]
            .iter()
            .filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?)))
            .collect();
        Self { path: std::env::var_os("PATH"), home: std::env::var_os("HOME").map(PathBuf::from), vars }
    }

    fn var(&self, name: &str) -> Option<&str> {
        self.vars.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str()).filter(|v| !v.trim().is_empty())
    }
}

/// `--agent auto`: Claude Code when a working one is found (given with `--claude-bin`, or
/// `claude` on PATH — not the copy a project's `node_modules/.bin` holds for its own tests —
/// and logged in or given a key); else the Messages API when a key is set; else the offline demo.
/// Returns the choice and why, for the log.
fn choose_agent(args: &ServeArgs, env: &Environment) -> (AgentChoice, String) {
    let claude = match &args.claude_bin {
        Some(bin) => bin.is_file().then(|| bin.clone()),
        None => claude_on_path(env.path.as_deref()),
    };
    let key = args.api_key_file.is_some() || args.api_key.as_deref().is_some_and(|k| !k.trim().is_empty());
    if let Some(bin) = &claude
        && let Some(login) = claude_login(env, key)
    {
        return (AgentChoice::Claude, format!("Claude Code at {} ({login})", bin.display()));
    }
    let found = match &claude {
        Some(bin) => format!("Claude Code at {} is not logged in; ", bin.display()),
        None => "no Claude Code found; ".to_string(),
    };
    if key {
        (AgentChoice::Anthropic, format!("{found}an API key is set: the Messages API"))
    } else {
        (AgentChoice::Scripted, format!("{found}no API key: the offline scripted demo"))
    }
}

/// `claude` on PATH, skipping `node_modules/.bin` folders (`make` puts the project's own there).
fn claude_on_path(path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .filter(|dir| !dir.ends_with("node_modules/.bin"))
        .map(|dir| dir.join("claude"))
        .find(|bin| is_executable(bin))
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// How Claude Code would sign in, if it can: a key or token in the environment, or a login
/// stored in its config folder.
fn claude_login(env: &Environment, key: bool) -> Option<&'static str> {
    if key || env.var("ANTHROPIC_API_KEY").is_some() {
        return Some("with an API key");
    }
    if env.var("ANTHROPIC_AUTH_TOKEN").is_some() || env.var("CLAUDE_CODE_OAUTH_TOKEN").is_some() {
        return Some("with a token");
    }
    let config = match env.var("CLAUDE_CONFIG_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => env.home.as_ref()?.join(".claude"),
    };
    if config.join(".credentials.json").is_file() {
        return Some("logged in");
    }
    let state = env.home.as_ref().map(|home| home.join(".claude.json"));
    let logged_in = state
        .and_then(|file| std::fs::read_to_string(file).ok())
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .is_some_and(|state| state.get("oauthAccount").is_some_and(|a| !a.is_null()));
    logged_in.then_some("logged in")
}

/// The whole application as one axum router.
pub fn router(args: &ServeArgs, manager: Arc<SessionManager>) -> Router {
    router_with(args, manager, None)
}

/// The router, with the notifier for the push server functions (`api::push`), when there is one.
pub fn router_with(args: &ServeArgs, manager: Arc<SessionManager>, notifier: Option<Notifier>) -> Router {
    // Rendering spawns its tasks on tokio (a second call finds it set: fine).
    let _ = any_spawner::Executor::init_tokio();
    let site = site::find(args.site_root.as_deref(), &args.data_dir);
    let hashed = site.hash_file.is_some();
    let leptos_options = LeptosOptions::builder()
        .output_name("askbridge")
        .site_root(site.root.to_string_lossy().as_ref())
        .site_pkg_dir("pkg")
        .site_addr(args.addr)
        .hash_files(hashed)
        // Leptos reads it from the binary's folder joined with this: an absolute path stands.
        .hash_file(site.hash_file.as_deref().map_or("hash.txt".into(), |file| file.to_string_lossy().into()))
        .build();
    let assets = AssetPaths::read(site.hash_file.as_deref());
    if !site.root.join("pkg").is_dir() {
        warn!(site_root = %site.root.display(), "no built site here: pages will not hydrate (run `make run`)");
    }
    let access = Access::new(args.token.clone()).with_cookies(args.cookies_always_secure(), args.trusted_proxy.clone());
    let state = AppState { leptos_options: leptos_options.clone(), manager: manager.clone(), access: access.clone() };

    // What pages and server functions find in their context.
    let context = {
        let manager = manager.clone();
        let options = leptos_options.clone();
        move || {
            provide_context(manager.clone());
            provide_context(options.clone());
            if let Some(notifier) = &notifier {
                provide_context(notifier.clone());
            }
        }
    };
    // A page's data is loaded first, then the page renders with it (and carries it, for the
    // browser to hydrate from).
    let page = {
        let context = context.clone();
        let options = leptos_options.clone();
        let assets = assets.clone();
        let manager = manager.clone();
        move |request: Request<Body>| {
            let (context, options, assets, manager) =
                (context.clone(), options.clone(), assets.clone(), manager.clone());
            async move {
                let session = match Page::of(request.uri().path()) {
                    Page::Session(id) => Some(id),
                    _ => None,
                };
                let data = PageData(WorkspaceView::load(&manager, session.as_deref()).await);
                // A page runs only the scripts it was rendered with: each carries this nonce.
                let nonce = Nonce::new();
                let policy = security::page_policy(&nonce);
                let render = leptos_axum::render_app_async_with_context(
                    move || {
                        context();
                        provide_context(data.clone());
                        provide_context(nonce.clone());
                    },
                    move || shell(options.clone(), assets.clone()),
                );
                let mut response = render(request).await;
                response.headers_mut().insert(header::CONTENT_SECURITY_POLICY, policy);
                response
            }
        }
    };
    let server_fn = move |request: Request<Body>| {
        let context = context.clone();
        async move { leptos_axum::handle_server_fns_with_context(context, request).await }
    };
    let fallback_assets = assets;

    // The pages are the UI's (`Page::ROUTES`); everything else here is the server's own.
    let pages = Page::ROUTES.into_iter().fold(Router::new(), |router, route| router.route(route, get(page.clone())));
    pages
        .route("/api/{*function}", post(server_fn))
        .route(LIVE_PATH, get(sse::live))
        .route(security::LOGIN_PATH, post(security::login))
        .route(security::PING_PATH, get(|| async { StatusCode::NO_CONTENT }))
        // A terminal's Claude Code, through `askbridge hook` (with the token, as every `/api/`).
        .merge(crate::terminal::routes(manager.clone()))
        .nest_service("/pkg", pkg_service(&site.root, hashed))
        // The site's other files (`public/`: the service worker, the push script, the manifest,
        // icons) have fixed names: a browser asks again each time, so an upgrade reaches it.
        .fallback(
            leptos_axum::file_and_error_handler::<AppState, _>(move |options| shell(options, fallback_assets.clone()))
                .layer(SetResponseHeaderLayer::if_not_present(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"))),
        )
        .layer(RequestBodyLimitLayer::new(MAX_BODY_BYTES))
        // Files attached to messages: up to 5 MB, bounded by the upload itself (`api::attachments`).
        .merge(crate::api::attachments::routes(manager.clone()))
        .layer(axum::middleware::map_response(typed_error_status))
        .layer(CompressionLayer::new())
        .layer(axum::middleware::from_fn_with_state(access, security::guard))
        .layer(axum::middleware::map_response(security::safe_headers))
        // Spans name the path, never the query: a sign-in link carries the token there.
        .layer(TraceLayer::new_for_http().make_span_with(|request: &Request<Body>| {
            tracing::debug_span!("request", method = %request.method(), path = %request.uri().path())
        }))
        .with_state(state)
}

/// The built bundle: hashed names never change content, so browsers may keep them for a year.
/// Files are served pre-compressed (`.br`, `.gz`) when the build made them.
fn pkg_service(site_root: &Path, hashed: bool) -> Router {
    let cache = if hashed { "public, max-age=31536000, immutable" } else { "no-cache" };
    Router::new()
        .fallback_service(ServeDir::new(site_root.join("pkg")).precompressed_br().precompressed_gzip())
        .layer(SetResponseHeaderLayer::overriding(header::CACHE_CONTROL, HeaderValue::from_static(cache)))
}

/// Gives server-function errors their HTTP status (from `AppError::status`) and turns the body
/// limit's bare 413 into a typed error, so that every failure reads the same way.
async fn typed_error_status(response: Response<Body>) -> Response<Body> {
    let typed = |response: &Response<Body>| {
        response.headers().get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"application/json"))
    };
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE
        && !response.headers().contains_key(server_fn::error::SERVER_FN_ERROR_HEADER)
        && !typed(&response)
    {
        let error = AppError::TooLarge { max_kib: MAX_BODY_BYTES / 1024 };
        return (StatusCode::PAYLOAD_TOO_LARGE, axum::Json(error)).into_response();
    }
    if !response.headers().contains_key(server_fn::error::SERVER_FN_ERROR_HEADER) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        parts.status = StatusCode::INTERNAL_SERVER_ERROR;
        return Response::from_parts(parts, Body::empty());
    };
    if let Ok(error) = serde_json::from_slice::<AppError>(&bytes) {
        parts.status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    }
    Response::from_parts(parts, Body::from(bytes))
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
