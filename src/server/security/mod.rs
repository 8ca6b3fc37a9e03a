//! Who may use the server: the Host check that stops DNS rebinding on loopback, the Origin check
//! that stops other sites from driving the agent, the access token (see `access_token` for which
//! one), its cookie (`cookie.rs`), the limit on wrong tokens (`limit.rs`), and the headers that
//! keep every page out of other sites' frames.

mod cookie;
pub mod limit;
#[cfg(test)]
mod tests;

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

use limit::WrongTokens;
pub use limit::{MAX_WRONG_TOKENS, WRONG_TOKEN_WINDOW};

pub const LOGIN_PATH: &str = "/login";
/// Answers 204 to a signed-in browser and 401 to one that is not: how a tab whose live stream
/// failed tells "the server is down" from "signed out" (an `EventSource` cannot see the status).
pub const PING_PATH: &str = "/api/ping";
/// Shorter tokens are refused: they could be guessed over a network.
pub const MIN_TOKEN_CHARS: usize = 16;

#[derive(Clone)]
pub struct Access {
    token: Option<Arc<str>>,
    /// The sign-in cookie's name, which depends on the token (`cookie::name_for`).
    cookie: Arc<str>,
    /// The cookie is always `Secure` (`--secure-cookies`).
    secure_cookies: bool,
    /// Proxies whose `X-Forwarded-Proto` is believed (`--trusted-proxy`).
    trusted_proxies: Arc<[IpAddr]>,
    wrong_tokens: Arc<Mutex<WrongTokens>>,
}

impl Access {
    pub fn new(token: Option<String>) -> Self {
        Self {
            cookie: token.as_deref().map(cookie::name_for).unwrap_or_default().into(),
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

    /// The client a request comes from (behind a trusted proxy, the one the proxy names).
    fn client_of(&self, request: &Request) -> IpAddr {
        let peer = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map_or(IpAddr::from([127, 0, 0, 1]), |info| info.0.ip());
        limit::client_address(peer, request.headers(), &self.trusted_proxies)
    }

    /// A wrong token: counted against its client when a person could have sent it. Then 429 if
    /// the client is over the limit, else `otherwise`.
    fn wrong_token(&self, request: &Request, otherwise: impl FnOnce() -> Response) -> Paced {
        let client = self.client_of(request);
        // Judged before this one counts: the tenth wrong token is still answered 401.
        let blocked = self.blocked_for(client);
        if limit::counts_as_guess(request.headers()) {
            let burst =
                self.wrong_tokens.lock().map_or(limit::Burst::Quiet, |mut wrong| wrong.note(client, Instant::now()));
            let path = request.uri().path();
            match burst {
                limit::Burst::Started => tracing::warn!(%client, path, "a wrong access token was presented"),
                limit::Burst::Blocked => tracing::warn!(
                    %client,
                    path,
                    "{} wrong access tokens: this address's next ones are refused, one a second, for {} s, and not logged",
                    limit::MAX_WRONG_TOKENS,
                    limit::WRONG_TOKEN_WINDOW.as_secs()
                ),
                limit::Burst::Quiet => {}
            }
        }
        let Some(retry_after) = blocked else { return Paced { response: otherwise(), at: None } };
        // Guessing slowed to one a second per address, on however many connections; the right
        // token never comes here.
        let at = self.wrong_tokens.lock().ok().map(|mut wrong| wrong.pace(client, Instant::now()));
        Paced { response: too_many_wrong_tokens(retry_after), at }
    }

    /// Signs the browser in with `token` (already checked), and takes away the cookie of the
    /// old, shared name if it came with one.
    fn sign_in(&self, response: &mut Response, token: &str, secure: bool, legacy: bool) {
        cookie::set(response, &self.cookie, token, secure);
        if legacy {
            cookie::clear(response, cookie::LEGACY_NAME);
        }
    }
}

/// The answer to a wrong token, and when it may be sent.
struct Paced {
    response: Response,
    at: Option<Instant>,
}

impl Paced {
    async fn answer(self) -> Response {
        if let Some(at) = self.at {
            tokio::time::sleep_until(at.into()).await;
        }
        self.response
    }
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
        proven(&request);
        return next.run(request).await;
    }

    let linked = token_from_query(request.uri());
    // The old, shared cookie, if it holds this server's token: it goes once the new one is set.
    let legacy = cookie::read(headers, cookie::LEGACY_NAME).is_some_and(|old| access.token_matches(&old));
    if let Some(token) = linked {
        if access.token_matches(&token) {
            proven(&request);
            // Move the token from the link to a cookie, and take it out of the address bar.
            let mut response = redirect(&uri_without_token(request.uri()));
            access.sign_in(&mut response, &token, access.cookie_is_secure(&request), legacy);
            return response;
        }
        let path = request.uri().path().to_string();
        return access
            .wrong_token(&request, || {
                login_page(StatusCode::UNAUTHORIZED, &path, Some("That access token is not right."))
            })
            .answer()
            .await;
    }
    // The right token is let in whatever the limit says: wrong ones never lock the person out.
    let presented = bearer_token(headers).or_else(|| cookie::read(headers, &access.cookie));
    if presented.as_deref().is_some_and(|token| access.token_matches(token)) {
        proven(&request);
        return next.run(request).await;
    }
    // A cookie of the name every server used before: accepted once, and moved to this server's
    // name. One that does not match is another server's (it shared the name), not a guess.
    if presented.is_none()
        && let Some(old) = cookie::read(headers, cookie::LEGACY_NAME).filter(|old| access.token_matches(old))
    {
        let secure = access.cookie_is_secure(&request);
        proven(&request);
        let mut response = next.run(request).await;
        access.sign_in(&mut response, &old, secure, true);
        return response;
    }
    if request.method() == Method::POST && request.uri().path() == LOGIN_PATH {
        // `login` compares the form's token (and counts a wrong one).
        return next.run(request).await;
    }
    let wants_page = request.method() == Method::GET
        && headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|v| v.contains("text/html"));
    let path = request.uri().path().to_string();
    let unauthorized = move || {
        if wants_page {
            login_page(StatusCode::UNAUTHORIZED, &path, None)
        } else {
            refuse(StatusCode::UNAUTHORIZED, AppError::Unauthorized)
        }
    };
    if presented.is_some() { access.wrong_token(&request, unauthorized).answer().await } else { unauthorized() }
}

/// The request's connection carried the token: it no longer counts against its client's limit
/// on connections without it (`connections`).
fn proven(request: &Request) {
    if let Some(proof) = request.extensions().get::<crate::server::connections::Proof>() {
        proof.set();
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
    let legacy = cookie::read(request.headers(), cookie::LEGACY_NAME).is_some_and(|old| access.token_matches(&old));
    let (parts, body) = request.into_parts();
    let counted = Request::from_parts(parts.clone(), axum::body::Body::empty());
    let Ok(Form(form)) = Form::<LoginForm>::from_request(Request::from_parts(parts, body), &()).await else {
        return login_page(StatusCode::BAD_REQUEST, "/", Some("The sign-in form could not be read."));
    };
    let next = safe_next(&form.next);
    if access.token_matches(form.token.trim()) {
        proven(&counted);
        let mut response = redirect(next);
        access.sign_in(&mut response, form.token.trim(), secure, legacy);
        response
    } else {
        access
            .wrong_token(&counted, || {
                login_page(StatusCode::UNAUTHORIZED, next, Some("That access token is not right."))
            })
            .answer()
            .await
    }
}

/// The policy of every response: no frames, no `<base>`, no plugins, forms to this server only.
const POLICY: &str = "frame-ancestors 'none'; base-uri 'none'; object-src 'none'; form-action 'self'";

/// A page's policy: [`POLICY`], and only the scripts the page was rendered with run (those that
/// carry `nonce`, and what they load: the app's module, its WASM and its chunks); injected markup
/// runs nothing. The service worker is this server's. The browser bundle does not change.
pub fn page_policy(nonce: &str) -> HeaderValue {
    let policy = format!("{POLICY}; script-src 'nonce-{nonce}' 'strict-dynamic' 'wasm-unsafe-eval'; worker-src 'self'");
    HeaderValue::from_str(&policy).expect("a nonce is URL-safe base64")
}

/// Headers on every response: no other site may put these pages in a frame (a page in a frame on
/// another port of localhost is same-site, gets the cookie, and could trick the person into
/// approving with `y`), no content is guessed at, and no address leaves with a `Referer` (a
/// sign-in link would take its token along).
pub async fn safe_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in [
        ("content-security-policy", POLICY),
        ("x-frame-options", "DENY"),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
    ] {
        if !headers.contains_key(name) {
            headers.insert(name, HeaderValue::from_static(value));
        }
    }
    response
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
    let fetch_site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    if let Some(origin) = headers.get(header::ORIGIN) {
        // With `Referrer-Policy: no-referrer` (ours), a browser sends `Origin: null` when a form of
        // this very site is posted (the sign-in form); `Sec-Fetch-Site`, which no page can set,
        // says whose it was. Any other `null` (a sandboxed frame, say) stays refused.
        if origin.as_bytes() == b"null" {
            return fetch_site == Some("same-origin");
        }
        let Some(origin) = origin.to_str().ok().and_then(|o| o.parse::<Uri>().ok()) else {
            return false;
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
