//! Who may use the server: the Host check that stops DNS rebinding on loopback, the Origin check
//! that stops other sites from driving the agent, the access token (see `access_token` for which
//! one), its cookie, and the limit on wrong tokens.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;

use axum::extract::{Form, FromRequest, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;

use crate::error::AppError;

pub const TOKEN_COOKIE: &str = "askbridge_token";
pub const LOGIN_PATH: &str = "/login";
/// Shorter tokens are refused: they could be guessed over a network.
pub const MIN_TOKEN_CHARS: usize = 16;

#[derive(Clone)]
pub struct Access {
    token: Option<Arc<str>>,
    /// The cookie is always `Secure` (`--secure-cookies`).
    secure_cookies: bool,
    /// Proxies whose `X-Forwarded-Proto` is believed (`--trusted-proxy`).
    trusted_proxies: Arc<[IpAddr]>,
    wrong_tokens: Arc<Mutex<WrongTokens>>,
}

impl Access {
    pub fn new(token: Option<String>) -> Self {
        Self {
            token: token.map(Into::into),
            secure_cookies: false,
            trusted_proxies: Arc::new([]),
            wrong_tokens: Arc::default(),
        }
    }

    /// Whether the sign-in cookie is `Secure`: always, or when the request came over HTTPS as a
    /// trusted proxy says (AskBridge itself serves plain HTTP).
    pub fn with_cookies(mut self, always_secure: bool, trusted_proxies: Vec<IpAddr>) -> Self {
        self.secure_cookies = always_secure;
        self.trusted_proxies = trusted_proxies.into();
        self
    }

    fn token_matches(&self, candidate: &str) -> bool {
        self.token
            .as_deref()
            .is_some_and(|token| constant_time_eq::constant_time_eq(token.as_bytes(), candidate.as_bytes()))
    }

    fn cookie_is_secure(&self, request: &Request) -> bool {
        if self.secure_cookies {
            return true;
        }
        let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|info| info.0.ip());
        let https = request
            .headers()
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .and_then(|protos| protos.split(',').next())
            .is_some_and(|proto| proto.trim().eq_ignore_ascii_case("https"));
        https && peer.is_some_and(|peer| self.trusted_proxies.contains(&peer))
    }

    fn blocked_for(&self, client: IpAddr) -> Option<Duration> {
        self.wrong_tokens.lock().ok()?.blocked_for(client, Instant::now())
    }

    fn note_wrong_token(&self, request: &Request) {
        let client = client_of(request);
        tracing::warn!(%client, path = %request.uri().path(), "a wrong access token was presented");
        self.note_wrong_token_from(client);
    }

    fn note_wrong_token_from(&self, client: IpAddr) {
        if let Ok(mut wrong) = self.wrong_tokens.lock() {
            wrong.note(client, Instant::now());
        }
    }
}

/// Wrong tokens per client address: after `MAX_WRONG_TOKENS` within `WRONG_TOKEN_WINDOW`, the
/// address is refused (429) until the window passes. A generated token cannot be guessed anyway;
/// this guards the shorter ones people choose.
///
/// Hand-written rather than `governor`: a limiter there is asked by spending a cell, and here the
/// question comes first ("is this address blocked?", before any comparison, so that a blocked
/// guesser learns nothing) and the spending only on a failure.
#[derive(Default)]
struct WrongTokens {
    by_client: HashMap<IpAddr, (u32, Instant)>,
}

pub const MAX_WRONG_TOKENS: u32 = 10;
pub const WRONG_TOKEN_WINDOW: Duration = Duration::from_secs(60);
/// Addresses remembered at most; those whose window passed are forgotten first.
const MAX_CLIENTS_REMEMBERED: usize = 4096;

impl WrongTokens {
    fn blocked_for(&mut self, client: IpAddr, now: Instant) -> Option<Duration> {
        let (count, since) = *self.by_client.get(&client)?;
        let elapsed = now.duration_since(since);
        if elapsed >= WRONG_TOKEN_WINDOW {
            self.by_client.remove(&client);
            return None;
        }
        (count >= MAX_WRONG_TOKENS).then(|| WRONG_TOKEN_WINDOW - elapsed)
    }

    fn note(&mut self, client: IpAddr, now: Instant) {
        if self.by_client.len() >= MAX_CLIENTS_REMEMBERED {
            self.by_client.retain(|_, (_, since)| now.duration_since(*since) < WRONG_TOKEN_WINDOW);
            if self.by_client.len() >= MAX_CLIENTS_REMEMBERED {
                return; // a flood of addresses: each still meets the comparison, at full cost to it
            }
        }
        let entry = self.by_client.entry(client).or_insert((0, now));
        if now.duration_since(entry.1) >= WRONG_TOKEN_WINDOW {
            *entry = (0, now);
        }
        entry.0 += 1;
    }
}

/// The client's address: the socket's peer (behind a proxy, the proxy's).
fn client_of(request: &Request) -> IpAddr {
    request.extensions().get::<ConnectInfo<SocketAddr>>().map_or(IpAddr::from([127, 0, 0, 1]), |info| info.0.ip())
}

/// 429 in the shape of every error the API sends (`error`, `message`), with `Retry-After`.
fn too_many_wrong_tokens(retry_after: Duration) -> Response {
    let seconds = retry_after.as_secs().max(1);
    let body = serde_json::json!({
        "error": "too_many_wrong_tokens",
        "message": format!("Too many wrong access tokens from this address: try again in {seconds} s."),
    });
    let mut response = (StatusCode::TOO_MANY_REQUESTS, axum::Json(body)).into_response();
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    response
}

/// The middleware in front of every route.
pub async fn guard(State(access): State<Access>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let Some(host) = request_host(&request) else {
        return refuse(StatusCode::BAD_REQUEST, AppError::BadRequest { detail: "the request has no Host".into() });
    };
    // Without a token, only the names of this machine may reach it: a page on another site that
    // rebinds its DNS name to 127.0.0.1 gets refused here.
    if access.token.is_none() && !is_loopback_host(&host) {
        return refuse(StatusCode::FORBIDDEN, AppError::ForbiddenOrigin);
    }
    if !same_origin(request.method(), headers, &host) {
        tracing::warn!(host, origin = ?headers.get(header::ORIGIN), path = %request.uri().path(), "cross-origin request refused");
        return refuse(StatusCode::FORBIDDEN, AppError::ForbiddenOrigin);
    }
    if access.token.is_none() {
        return next.run(request).await;
    }

    let linked = token_from_query(request.uri());
    let presented = bearer_token(headers).or_else(|| cookie_token(headers));
    let signing_in = request.method() == Method::POST && request.uri().path() == LOGIN_PATH;
    if linked.is_some() || presented.is_some() || signing_in {
        // A blocked address learns nothing: its token is not even compared.
        if let Some(retry_after) = access.blocked_for(client_of(&request)) {
            return too_many_wrong_tokens(retry_after);
        }
    }
    if let Some(token) = linked {
        return if access.token_matches(&token) {
            // Move the token from the link to a cookie, and take it out of the address bar.
            let mut response = redirect(&uri_without_token(request.uri()));
            set_cookie(&mut response, &token, access.cookie_is_secure(&request));
            response
        } else {
            access.note_wrong_token(&request);
            login_page(StatusCode::UNAUTHORIZED, request.uri().path(), Some("That access token is not right."))
        };
    }
    if presented.as_deref().is_some_and(|token| access.token_matches(token)) {
        return next.run(request).await;
    }
    if signing_in {
        // `login` compares the form's token (and counts a wrong one).
        return next.run(request).await;
    }
    if presented.is_some() {
        access.note_wrong_token(&request);
    }
    let wants_page = request.method() == Method::GET
        && headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|v| v.contains("text/html"));
    if wants_page {
        login_page(StatusCode::UNAUTHORIZED, request.uri().path(), None)
    } else {
        refuse(StatusCode::UNAUTHORIZED, AppError::Unauthorized)
    }
}

#[derive(Deserialize)]
pub struct LoginForm {
    token: String,
    #[serde(default)]
    next: String,
}

/// `POST /login` from the sign-in page.
pub async fn login(State(access): State<Access>, request: Request) -> Response {
    let secure = access.cookie_is_secure(&request);
    let client = client_of(&request);
    let Ok(Form(form)) = Form::<LoginForm>::from_request(request, &()).await else {
        return login_page(StatusCode::BAD_REQUEST, "/", Some("The sign-in form could not be read."));
    };
    let next = safe_next(&form.next);
    if access.token_matches(form.token.trim()) {
        let mut response = redirect(next);
        set_cookie(&mut response, form.token.trim(), secure);
        response
    } else {
        tracing::warn!(%client, "a wrong access token was entered");
        access.note_wrong_token_from(client);
        login_page(StatusCode::UNAUTHORIZED, next, Some("That access token is not right."))
    }
}

fn request_host(request: &Request) -> Option<String> {
    request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| request.uri().authority().map(|a| a.to_string()))
        .map(|host| host.to_ascii_lowercase())
}

fn host_name(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    authority.rsplit_once(':').map_or(authority, |(name, _)| name)
}

fn is_loopback_host(authority: &str) -> bool {
    let name = host_name(authority);
    name == "localhost"
        || name.ends_with(".localhost")
        || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// A request is same-origin when its `Origin` names the host it was sent to. Browsers send
/// `Origin` on every cross-origin request and on every POST; a request without it (curl, a
/// same-origin GET) is judged by `Sec-Fetch-Site` when that is present.
fn same_origin(method: &Method, headers: &HeaderMap, host: &str) -> bool {
    if let Some(origin) = headers.get(header::ORIGIN) {
        let Some(origin) = origin.to_str().ok().and_then(|o| o.parse::<Uri>().ok()) else {
            return false; // includes the opaque origin "null"
        };
        let Some(authority) = origin.authority() else { return false };
        let default_port = if origin.scheme_str() == Some("https") { 443 } else { 80 };
        let origin_port = authority.port_u16().unwrap_or(default_port);
        let host_port = host
            .rsplit_once(':')
            .filter(|(_, port)| !port.contains(']'))
            .and_then(|(_, port)| port.parse().ok())
            .unwrap_or(default_port);
        return authority.host().eq_ignore_ascii_case(host_name_with_brackets(host)) && origin_port == host_port;
    }
    let safe = matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    let fetch_site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    safe || !matches!(fetch_site, Some("cross-site" | "same-site"))
}

fn host_name_with_brackets(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority.split_inclusive(']').next().unwrap_or(authority);
    }
    authority.rsplit_once(':').map_or(authority, |(name, _)| name)
}

fn token_from_query(uri: &Uri) -> Option<String> {
    form_urlencoded::parse(uri.query()?.as_bytes())
        .find_map(|(key, value)| (key == "token").then(|| value.into_owned()))
}

fn uri_without_token(uri: &Uri) -> String {
    let rest: Vec<&str> = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|pair| !pair.is_empty() && !pair.starts_with("token="))
        .collect();
    if rest.is_empty() { uri.path().to_string() } else { format!("{}?{}", uri.path(), rest.join("&")) }
}

fn bearer_token(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    value.strip_prefix("Bearer ").map(|token| token.trim().to_string())
}

fn cookie_token(headers: &HeaderMap) -> Option<String> {
    headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).find_map(|cookies| {
        cookies.split(';').find_map(|cookie| {
            let (name, value) = cookie.trim().split_once('=')?;
            (name == TOKEN_COOKIE).then(|| percent_decode(value))
        })
    })
}

fn set_cookie(response: &mut Response, token: &str, secure: bool) {
    let secure = if secure { "; Secure" } else { "" };
    let cookie =
        format!("{TOKEN_COOKIE}={}; Path=/; HttpOnly; SameSite=Lax; Max-Age=31536000{secure}", percent_encode(token));
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
}

/// Only paths on this server: `//evil.example` would leave it.
fn safe_next(next: &str) -> &str {
    if next.starts_with('/') && !next.starts_with("//") && !next.starts_with("/\\") { next } else { "/" }
}

fn redirect(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

fn refuse(status: StatusCode, error: AppError) -> Response {
    (status, axum::Json(error)).into_response()
}

fn login_page(status: StatusCode, next: &str, problem: Option<&str>) -> Response {
    let next = html_escape(safe_next(next));
    let problem =
        problem.map(|p| format!(r#"<p class="problem" role="alert">{}</p>"#, html_escape(p))).unwrap_or_default();
    let page = format!(include_str!("login.html"), next = next, problem = problem);
    let mut response = (status, Html(page)).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text).decode_utf8_lossy().into_owned()
}

fn percent_encode(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::body::Body;
    use axum::routing::{get, post};
    use tower::ServiceExt;

    const TOKEN: &str = "0123456789abcdef0123";

    fn app(token: Option<&str>) -> Router {
        let access = Access::new(token.map(str::to_string));
        Router::new()
            .route("/", get(|| async { "home" }))
            .route("/api/thing", post(|| async { "done" }))
            .route(LOGIN_PATH, post(login))
            .layer(axum::middleware::from_fn_with_state(access.clone(), guard))
            .with_state(access)
    }

    async fn send(app: Router, request: axum::http::Request<Body>) -> Response {
        app.oneshot(request).await.unwrap()
    }

    fn request(method: &str, path: &str) -> axum::http::request::Builder {
        axum::http::Request::builder().method(method).uri(path).header(header::HOST, "127.0.0.1:3000")
    }

    #[tokio::test]
    async fn loopback_without_a_token_is_open_to_same_origin_requests() {
        let response = send(app(None), request("GET", "/").body(Body::empty()).unwrap()).await;
        assert_eq!(response.status(), StatusCode::OK);
        let response = send(
            app(None),
            request("POST", "/api/thing").header(header::ORIGIN, "http://127.0.0.1:3000").body(Body::empty()).unwrap(),
        )
        .await;
        assert_eq!(response.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn a_cross_origin_request_is_refused_with_403() {
        for origin in ["http://evil.example", "http://127.0.0.1:4000", "null"] {
            let response = send(
                app(None),
                request("POST", "/api/thing").header(header::ORIGIN, origin).body(Body::empty()).unwrap(),
            )
            .await;
            assert_eq!(response.status(), StatusCode::FORBIDDEN, "{origin}");
        }
        let response = send(
            app(None),
            request("POST", "/api/thing").header("sec-fetch-site", "cross-site").body(Body::empty()).unwrap(),
        )
        .await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
    }

    #[tokio::test]
    async fn a_rebound_host_name_is_refused_without_a_token() {
        let response = send(
            app(None),
            axum::http::Request::get("/").header(header::HOST, "evil.example:3000").body(Body::empty()).unwrap(),
        )
        .await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
    }

    #[tokio::test]
    async fn a_request_without_the_token_is_refused_with_401() {
        let response = send(app(Some(TOKEN)), request("POST", "/api/thing").body(Body::empty()).unwrap()).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        let body = axum::body::to_bytes(response.into_body(), 10_000).await.unwrap();
        assert_eq!(serde_json::from_slice::<AppError>(&body).unwrap(), AppError::Unauthorized);

        let page = send(
            app(Some(TOKEN)),
            request("GET", "/").header(header::ACCEPT, "text/html").body(Body::empty()).unwrap(),
        )
        .await;
        assert_eq!(page.status(), StatusCode::UNAUTHORIZED);
        let body = axum::body::to_bytes(page.into_body(), 100_000).await.unwrap();
        assert!(String::from_utf8_lossy(&body).contains("<form"));
    }

    #[tokio::test]
    async fn a_wrong_token_is_refused() {
        let response = send(
            app(Some(TOKEN)),
            request("POST", "/api/thing").header(header::AUTHORIZATION, "Bearer nope").body(Body::empty()).unwrap(),
        )
        .await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    }

    #[tokio::test]
    async fn the_token_is_accepted_as_bearer_or_cookie() {
        let bearer = send(
            app(Some(TOKEN)),
            request("POST", "/api/thing")
                .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(bearer.status(), StatusCode::OK);
        let cookie = send(
            app(Some(TOKEN)),
            request("GET", "/")
                .header(header::COOKIE, format!("a=b; {TOKEN_COOKIE}={TOKEN}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(cookie.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn a_token_link_sets_the_cookie_and_leaves_the_address_bar() {
        let response =
            send(app(Some(TOKEN)), request("GET", &format!("/?x=1&token={TOKEN}")).body(Body::empty()).unwrap()).await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER);
        assert_eq!(response.headers()[header::LOCATION], "/?x=1");
        let cookie = response.headers()[header::SET_COOKIE].to_str().unwrap();
        assert!(cookie.starts_with(&format!("{TOKEN_COOKIE}={TOKEN};")) && cookie.contains("HttpOnly"), "{cookie}");
    }

    #[tokio::test]
    async fn the_login_form_signs_in_and_redirects_only_within_the_site() {
        let form = |token: &str, next: &str| {
            request("POST", LOGIN_PATH)
                .header(header::ORIGIN, "http://127.0.0.1:3000")
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(Body::from(format!("token={token}&next={next}")))
                .unwrap()
        };
        let ok = send(app(Some(TOKEN)), form(TOKEN, "/s/abc")).await;
        assert_eq!(ok.status(), StatusCode::SEE_OTHER);
        assert_eq!(ok.headers()[header::LOCATION], "/s/abc");
        let away = send(app(Some(TOKEN)), form(TOKEN, "//evil.example")).await;
        assert_eq!(away.headers()[header::LOCATION], "/");
        let wrong = send(app(Some(TOKEN)), form("nope", "/")).await;
        assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    }

    fn app_with(access: Access) -> Router {
        Router::new()
            .route("/", get(|| async { "home" }))
            .route(LOGIN_PATH, post(login))
            .layer(axum::middleware::from_fn_with_state(access.clone(), guard))
            .with_state(access)
    }

    fn from(request: axum::http::request::Builder, peer: &str) -> axum::http::Request<Body> {
        let peer: SocketAddr = peer.parse().unwrap();
        request.extension(ConnectInfo(peer)).body(Body::empty()).unwrap()
    }

    #[tokio::test]
    async fn wrong_tokens_from_one_address_are_refused_for_a_while_even_the_right_one_then() {
        let app = app_with(Access::new(Some(TOKEN.into())));
        let guess = |token: &str, peer: &str| {
            from(request("GET", "/").header(header::AUTHORIZATION, format!("Bearer {token}")), peer)
        };
        for attempt in 0..MAX_WRONG_TOKENS {
            let response = send(app.clone(), guess(&format!("wrong-{attempt}"), "10.0.0.7:5000")).await;
            assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "attempt {attempt}");
        }
        // The guesser learns nothing more, not even from the right token.
        let blocked = send(app.clone(), guess(TOKEN, "10.0.0.7:5001")).await;
        assert_eq!(blocked.status(), StatusCode::TOO_MANY_REQUESTS);
        let retry_after: u64 = blocked.headers()[header::RETRY_AFTER].to_str().unwrap().parse().unwrap();
        assert!((1..=WRONG_TOKEN_WINDOW.as_secs()).contains(&retry_after));
        let link = send(app.clone(), from(request("GET", &format!("/?token={TOKEN}")), "10.0.0.7:5002")).await;
        assert_eq!(link.status(), StatusCode::TOO_MANY_REQUESTS);
        // Another address is not held back by it.
        assert_eq!(send(app.clone(), guess(TOKEN, "10.0.0.8:5000")).await.status(), StatusCode::OK);
    }

    #[test]
    fn a_blocked_address_is_let_go_when_its_window_passes() {
        let mut wrong = WrongTokens::default();
        let client: IpAddr = "10.0.0.7".parse().unwrap();
        let start = Instant::now();
        for _ in 0..MAX_WRONG_TOKENS {
            wrong.note(client, start);
        }
        assert!(wrong.blocked_for(client, start + Duration::from_secs(1)).is_some());
        assert_eq!(wrong.blocked_for(client, start + WRONG_TOKEN_WINDOW), None);
        assert!(wrong.by_client.is_empty());
    }

    #[test]
    fn the_memory_of_wrong_tokens_is_bounded() {
        let mut wrong = WrongTokens::default();
        let now = Instant::now();
        for n in 0..(MAX_CLIENTS_REMEMBERED as u32 + 100) {
            wrong.note(IpAddr::from(n.to_be_bytes()), now);
        }
        assert_eq!(wrong.by_client.len(), MAX_CLIENTS_REMEMBERED);
    }

    #[tokio::test]
    async fn wrong_tokens_at_the_sign_in_form_count_too() {
        let app = app_with(Access::new(Some(TOKEN.into())));
        let form = |token: &str| {
            let request = request("POST", LOGIN_PATH)
                .header(header::ORIGIN, "http://127.0.0.1:3000")
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .extension(ConnectInfo("10.0.0.9:4000".parse::<SocketAddr>().unwrap()));
            request.body(Body::from(format!("token={token}&next=/"))).unwrap()
        };
        for _ in 0..MAX_WRONG_TOKENS {
            assert_eq!(send(app.clone(), form("nope-nope-nope")).await.status(), StatusCode::UNAUTHORIZED);
        }
        assert_eq!(send(app.clone(), form(TOKEN)).await.status(), StatusCode::TOO_MANY_REQUESTS);
    }

    fn cookie_of(response: &Response) -> String {
        response.headers()[header::SET_COOKIE].to_str().unwrap().to_string()
    }

    #[tokio::test]
    async fn the_cookie_is_secure_over_https_from_a_trusted_proxy_or_when_forced() {
        let link = format!("/?token={TOKEN}");
        let proxied = |peer: &str| from(request("GET", &link).header("x-forwarded-proto", "https"), peer);
        let plain = app_with(Access::new(Some(TOKEN.into())));
        assert!(!cookie_of(&send(plain.clone(), proxied("10.0.0.1:1")).await).contains("Secure"));

        let behind_proxy =
            app_with(Access::new(Some(TOKEN.into())).with_cookies(false, vec!["10.0.0.1".parse().unwrap()]));
        assert!(cookie_of(&send(behind_proxy.clone(), proxied("10.0.0.1:1")).await).contains("; Secure"));
        // Anyone else saying https is not believed, and plain HTTP through the proxy is plain.
        assert!(!cookie_of(&send(behind_proxy.clone(), proxied("10.0.0.2:1")).await).contains("Secure"));
        let http = from(request("GET", &link).header("x-forwarded-proto", "http"), "10.0.0.1:1");
        assert!(!cookie_of(&send(behind_proxy, http).await).contains("Secure"));

        let forced = app_with(Access::new(Some(TOKEN.into())).with_cookies(true, Vec::new()));
        assert!(cookie_of(&send(forced, from(request("GET", &link), "127.0.0.1:1")).await).contains("; Secure"));
    }

    #[test]
    fn hosts_and_origins_compare_by_name_and_port() {
        assert!(is_loopback_host("localhost:3000"));
        assert!(is_loopback_host("[::1]:3000"));
        assert!(is_loopback_host("127.0.0.2"));
        assert!(!is_loopback_host("192.168.1.5:3000"));
        let headers = |origin: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::ORIGIN, HeaderValue::from_str(origin).unwrap());
            h
        };
        assert!(same_origin(&Method::POST, &headers("http://example.com"), "example.com:80"));
        assert!(same_origin(&Method::POST, &headers("http://[::1]:3000"), "[::1]:3000"));
        assert!(!same_origin(&Method::POST, &headers("https://example.com"), "example.com:80"));
    }

    #[test]
    fn percent_coding_round_trips() {
        assert_eq!(percent_decode(&percent_encode("a b+c/é%;=")), "a b+c/é%;=");
    }
}
