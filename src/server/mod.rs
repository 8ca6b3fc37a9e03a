//! The HTTP server: configuration from the command line, the axum router with the Leptos pages,
//! server functions, the live stream and the built assets, and a graceful stop.

pub mod cli;
pub mod security;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::FromRef;
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use leptos::config::LeptosOptions;
use leptos::prelude::provide_context;
use tower_http::compression::CompressionLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::services::ServeDir;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::TraceLayer;
use tracing::{info, warn};

use crate::agent::AgentBackend;
use crate::agent::claude::{ClaudeCliBackend, ClaudeConfig};
use crate::agent::scripted::{Scenario, ScriptedAgent};
use crate::api::WorkspaceData;
use crate::app::{AssetPaths, shell};
use crate::error::{AppError, MAX_BODY_BYTES};
use crate::live::{LIVE_PATH, sse};
use crate::session::{SessionManager, Timeouts};
use crate::store::Store;
use crate::ui::navigation::Page;
use crate::ui::workspace::PageData;
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
    security::check_exposure(&args.addr, args.token.as_deref())?;
    std::fs::create_dir_all(&args.data_dir)
        .map_err(|error| format!("cannot create the data folder {}: {error}", args.data_dir.display()))?;
    let db_path = args.data_dir.join("askbridge.db");
    let store = Store::open(&db_path).await.map_err(|error| format!("cannot open {}: {error}", db_path.display()))?;
    let agent = build_agent(&args)?;
    let timeouts = Timeouts {
        question: args.question_timeout,
        approval: args.approval_timeout,
        park_after: Some(args.park_after),
    };
    let manager = SessionManager::with_timeouts(store, agent, timeouts);
    manager.recover_unfinished_turns().await?;

    let app = router(&args, manager.clone());
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .map_err(|error| format!("cannot listen on {}: {error}", args.addr))?;
    let local = listener.local_addr()?;
    info!(
        addr = %local,
        data = %db_path.display(),
        agent = manager.agent_name(),
        token = args.token.is_some(),
        "AskBridge is serving on http://{local}"
    );

    let stopping = manager.clone();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown_signal().await;
            info!("stopping: ending turns and closing live streams");
            stopping.shut_down().await;
        })
        .await?;
    info!("stopped");
    Ok(())
}

fn build_agent(args: &ServeArgs) -> Result<Arc<dyn AgentBackend>, BoxError> {
    match args.agent {
        AgentChoice::Scripted => {
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
            info!(bin = %args.claude_bin.display(), workdir = %workdir.display(), mode = %args.permission_mode, "Claude Code agent ready");
            Ok(Arc::new(ClaudeCliBackend::new(ClaudeConfig {
                bin: args.claude_bin.clone(),
                workdir,
                permission_mode: args.permission_mode,
                model: args.model.clone(),
                answer_path: args.answer_path,
                env: Vec::new(),
                allow_bypass: !args.no_bypass,
                max_agents: args.max_agents.unwrap_or_else(ClaudeConfig::default_max_agents),
                idle_exit: Some(args.idle_exit),
            })))
        }
    }
}

/// The whole application as one axum router.
pub fn router(args: &ServeArgs, manager: Arc<SessionManager>) -> Router {
    // Rendering spawns its tasks on tokio (a second call finds it set: fine).
    let _ = any_spawner::Executor::init_tokio();
    let hashed = hash_file_beside_exe().is_some();
    let leptos_options = LeptosOptions::builder()
        .output_name("askbridge")
        .site_root(args.site_root.to_string_lossy().as_ref())
        .site_pkg_dir("pkg")
        .site_addr(args.addr)
        .hash_files(hashed)
        .build();
    let assets = AssetPaths::read(hash_file_beside_exe().as_deref());
    if !args.site_root.join("pkg").is_dir() {
        warn!(site_root = %args.site_root.display(), "no built site here: pages will not hydrate (run `make run`)");
    }
    let access = Access::new(args.token.clone());
    let state = AppState { leptos_options: leptos_options.clone(), manager: manager.clone(), access: access.clone() };

    // What pages and server functions find in their context.
    let context = {
        let manager = manager.clone();
        let options = leptos_options.clone();
        move || {
            provide_context(manager.clone());
            provide_context(options.clone());
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
                let data = PageData(WorkspaceData::load(&manager, session.as_deref()).await);
                let render = leptos_axum::render_app_async_with_context(
                    move || {
                        context();
                        provide_context(data.clone());
                    },
                    move || shell(options.clone(), assets.clone()),
                );
                render(request).await
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
        .nest_service("/pkg", pkg_service(&args.site_root, hashed))
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(move |options| {
            shell(options, fallback_assets.clone())
        }))
        .layer(RequestBodyLimitLayer::new(MAX_BODY_BYTES))
        .layer(axum::middleware::map_response(typed_error_status))
        .layer(CompressionLayer::new())
        .layer(axum::middleware::from_fn_with_state(access, security::guard))
        .layer(TraceLayer::new_for_http())
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

/// cargo-leptos writes the hashes of the bundle's file names next to the server binary.
fn hash_file_beside_exe() -> Option<PathBuf> {
    let path = std::env::current_exe().ok()?.parent()?.join("hash.txt");
    path.is_file().then_some(path)
}

/// Gives server-function errors their HTTP status (from `AppError::status`) and turns the body
/// limit's bare 413 into a typed error, so that every failure reads the same way.
async fn typed_error_status(response: Response<Body>) -> Response<Body> {
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE
        && !response.headers().contains_key(server_fn::error::SERVER_FN_ERROR_HEADER)
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
    tracing_subscriber::fmt().with_env_filter(filter).with_target(false).init();
}
