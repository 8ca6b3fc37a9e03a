//! The whole application as one axum router: the Leptos pages (each rendered with its data), the
//! server functions, the live stream, a terminal's hooks, the built assets, and the layers every
//! request passes (the token and Origin checks, safe headers, typed errors, compression).

use std::path::Path;
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
use server_fn::ServerFn;
use tower_http::compression::CompressionLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::services::ServeDir;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::TraceLayer;
use tracing::{Instrument, warn};

use super::cli::ServeArgs;
use super::security::{self, Access};
use super::site;
use crate::api::WorkspaceView;
use crate::api::changes::WaitForChanges;
use crate::app::{AssetPaths, shell};
use crate::error::{AppError, MAX_BODY_BYTES};
use crate::live::{LIVE_PATH, sse};
use crate::notify::Notifier;
use crate::session::SessionManager;
use crate::ui::navigation::Page;
use crate::ui::page_data::PageData;

/// A server function's call runs to its end once it has reached the server, even if the page
/// goes away meanwhile (a tab closed, or a phone's page dropped, right after a tap): hyper drops
/// a handler's future when its connection closes, and an answer dropped between being stored and
/// being handed to the waiting agent would leave the agent waiting for an answer the card shows
/// as given. Only a call that waits for news (`wait_for_changes`, up to 25 s) goes with its page.
async fn to_its_end<R>(call: impl Future<Output = R> + Send + 'static) -> Response<Body>
where
    R: IntoResponse + Send + 'static,
{
    match tokio::spawn(call.in_current_span()).await {
        Ok(response) => response.into_response(),
        Err(error) => {
            tracing::error!(%error, "a server function's call ended without an answer");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

#[derive(Clone, FromRef)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    pub manager: Arc<SessionManager>,
    pub access: Access,
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
    let leptos_options = leptos_options(args, &site);
    let assets = AssetPaths::read(site.hash_file.as_deref());
    if !site.root.join("pkg").is_dir() {
        warn!(site_root = %site.root.display(), "no built site here: pages will not hydrate (run `make run`)");
    }
    let access = Access::new(args.token.clone()).with_cookies(args.cookies_always_secure(), args.trusted_proxy.clone());
    let state = AppState { leptos_options: leptos_options.clone(), manager: manager.clone(), access: access.clone() };

    let context = context(manager.clone(), leptos_options.clone(), notifier);
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
        let waits_for_news = request.uri().path() == <WaitForChanges as ServerFn>::PATH;
        let call = leptos_axum::handle_server_fns_with_context(context, request);
        async move { if waits_for_news { call.await.into_response() } else { to_its_end(call).await } }
    };
    let fallback_assets = assets;

    // The pages are the UI's (`Page::ROUTES`); everything else here is the server's own.
    let pages = Page::ROUTES.into_iter().fold(Router::new(), |router, route| router.route(route, get(page.clone())));
    pages
        .route("/api/{*function}", post(server_fn))
        .route(LIVE_PATH, get(sse::live))
        .route(security::LOGIN_PATH, post(security::login))
        .route(security::PING_PATH, get(|| async { StatusCode::NO_CONTENT }))
        .route(super::shell_socket::SHELL_PATH, get(super::shell_socket::shell_socket))
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

/// Where Leptos finds the built site, and whether its files carry hashes.
fn leptos_options(args: &ServeArgs, site: &site::Site) -> LeptosOptions {
    LeptosOptions::builder()
        .output_name("askbridge")
        .site_root(site.root.to_string_lossy().as_ref())
        .site_pkg_dir("pkg")
        .site_addr(args.addr)
        .hash_files(site.hash_file.is_some())
        // Leptos reads it from the binary's folder joined with this: an absolute path stands.
        .hash_file(site.hash_file.as_deref().map_or("hash.txt".into(), |file| file.to_string_lossy().into()))
        .build()
}

/// What pages and server functions find in their context.
fn context(
    manager: Arc<SessionManager>,
    options: LeptosOptions,
    notifier: Option<Notifier>,
) -> impl Fn() + Clone + Send + Sync + 'static {
    move || {
        provide_context(manager.clone());
        provide_context(options.clone());
        if let Some(notifier) = &notifier {
            provide_context(notifier.clone());
        }
    }
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
