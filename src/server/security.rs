//! Who may use the server: the Host check that stops DNS rebinding on loopback, the Origin check
//! that stops other sites from driving the agent, and the access token for exposed servers.

use std::sync::Arc;

use axum::extract::{Form, Request, State};
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
}

impl Access {
    pub fn new(token: Option<String>) -> Self {
        Self { token: token.map(Into::into) }
    }

    fn token_matches(&self, candidate: &str) -> bool {
        self.token
            .as_deref()
            .is_some_and(|token| constant_time_eq::constant_time_eq(token.as_bytes(), candidate.as_bytes()))
    }
}

/// Refuses to listen where others can reach the server unless a token protects it.
pub fn check_exposure(addr: &std::net::SocketAddr, token: Option<&str>) -> Result<(), String> {
    match token {
        Some(token) if token.chars().count() < MIN_TOKEN_CHARS => Err(format!(
            "the access token is too short: use at least {MIN_TOKEN_CHARS} characters \
             (for example the output of `openssl rand -hex 16`)"
        )),
        None if !addr.ip().is_loopback() => Err(format!(
            "refusing to listen on {addr} without an access token: anyone who can reach it could \
             drive your agent. Set --token (or ASKBRIDGE_TOKEN), or listen on 127.0.0.1."
        )),
        _ => Ok(()),
    }
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

    if let Some(token) = token_from_query(request.uri()) {
        return if access.token_matches(&token) {
            // Move the token from the link to a cookie, and take it out of the address bar.
            let mut response = redirect(&uri_without_token(request.uri()));
            set_cookie(&mut response, &token);
            response
        } else {
            login_page(StatusCode::UNAUTHORIZED, request.uri().path(), Some("That access token is not right."))
        };
    }
    let presented = bearer_token(headers).or_else(|| cookie_token(headers));
    if presented.as_deref().is_some_and(|token| access.token_matches(token)) {
        return next.run(request).await;
    }
    if request.method() == Method::POST && request.uri().path() == LOGIN_PATH {
        return next.run(request).await;
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
pub async fn login(State(access): State<Access>, Form(form): Form<LoginForm>) -> Response {
    let next = safe_next(&form.next);
    if access.token_matches(form.token.trim()) {
        let mut response = redirect(next);
        set_cookie(&mut response, form.token.trim());
        response
    } else {
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

fn set_cookie(response: &mut Response, token: &str) {
    let cookie = format!("{TOKEN_COOKIE}={}; Path=/; HttpOnly; SameSite=Lax; Max-Age=31536000", percent_encode(token));
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

    #[test]
    fn exposure_needs_a_long_enough_token() {
        let lan: std::net::SocketAddr = "0.0.0.0:3000".parse().unwrap();
        let local: std::net::SocketAddr = "127.0.0.1:3000".parse().unwrap();
        assert!(check_exposure(&lan, None).is_err());
        assert!(check_exposure(&lan, Some("short")).is_err());
        assert!(check_exposure(&lan, Some(TOKEN)).is_ok());
        assert!(check_exposure(&local, None).is_ok());
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
