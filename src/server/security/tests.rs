//! The guard as a browser or a program meets it: tokens, links, cookies, the limit, origins.

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
        let response =
            send(app(None), request("POST", "/api/thing").header(header::ORIGIN, origin).body(Body::empty()).unwrap())
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

    let page =
        send(app(Some(TOKEN)), request("GET", "/").header(header::ACCEPT, "text/html").body(Body::empty()).unwrap())
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
            .header(header::COOKIE, format!("a=b; {}={TOKEN}", cookie::name_for(TOKEN)))
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
    assert!(
        cookie.starts_with(&format!("{}={TOKEN};", cookie::name_for(TOKEN))) && cookie.contains("HttpOnly"),
        "{cookie}"
    );
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
async fn wrong_tokens_from_one_address_are_refused_for_a_while_but_never_the_right_one() {
    let app = app_with(Access::new(Some(TOKEN.into())));
    let guess = |token: &str, peer: &str| {
        from(request("GET", "/").header(header::AUTHORIZATION, format!("Bearer {token}")), peer)
    };
    for attempt in 0..MAX_WRONG_TOKENS {
        let response = send(app.clone(), guess(&format!("wrong-{attempt}"), "10.0.0.7:5000")).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "attempt {attempt}");
    }
    let blocked = send(app.clone(), guess("wrong-again", "10.0.0.7:5001")).await;
    assert_eq!(blocked.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry_after: u64 = blocked.headers()[header::RETRY_AFTER].to_str().unwrap().parse().unwrap();
    assert!((1..=WRONG_TOKEN_WINDOW.as_secs()).contains(&retry_after));
    // The person's own cookie, and the sign-in link, still get in from that address.
    let cookie = request("GET", "/").header(header::COOKIE, format!("{}={TOKEN}", cookie::name_for(TOKEN)));
    assert_eq!(send(app.clone(), from(cookie, "10.0.0.7:5002")).await.status(), StatusCode::OK);
    assert_eq!(send(app.clone(), guess(TOKEN, "10.0.0.7:5003")).await.status(), StatusCode::OK);
    let link = send(app.clone(), from(request("GET", &format!("/?token={TOKEN}")), "10.0.0.7:5004")).await;
    assert_eq!(link.status(), StatusCode::SEE_OTHER);
    // Another address is not held back by it.
    assert_eq!(send(app.clone(), guess("wrong", "10.0.0.8:5000")).await.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn another_sites_requests_with_wrong_tokens_count_for_nothing() {
    let app = app_with(Access::new(Some(TOKEN.into())));
    // Ten `<img src="http://127.0.0.1:3000/?token=x">` on a page elsewhere, and ten from another
    // port of localhost, which is the same site.
    for site in ["cross-site", "same-site"] {
        for attempt in 0..MAX_WRONG_TOKENS * 2 {
            let image = request("GET", &format!("/?token=x{attempt}")).header("sec-fetch-site", site);
            assert_eq!(send(app.clone(), from(image, "127.0.0.1:5000")).await.status(), StatusCode::UNAUTHORIZED);
        }
    }
    // A wrong token typed into the address bar still counts, and is not yet over the limit.
    let typed = request("GET", "/?token=typo").header("sec-fetch-site", "none");
    assert_eq!(send(app.clone(), from(typed, "127.0.0.1:5000")).await.status(), StatusCode::UNAUTHORIZED);
    let program = request("GET", "/").header(header::AUTHORIZATION, "Bearer wrong");
    assert_eq!(send(app.clone(), from(program, "127.0.0.1:5000")).await.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn behind_a_trusted_proxy_one_clients_guesses_block_only_that_client() {
    let proxy = "10.0.0.2";
    let app = app_with(Access::new(Some(TOKEN.into())).with_cookies(false, vec![proxy.parse().unwrap()]));
    let via_proxy = |client: &str, token: &str| {
        from(
            request("GET", "/")
                .header("x-forwarded-for", client)
                .header(header::AUTHORIZATION, format!("Bearer {token}")),
            &format!("{proxy}:443"),
        )
    };
    for _ in 0..MAX_WRONG_TOKENS {
        send(app.clone(), via_proxy("203.0.113.5", "wrong")).await;
    }
    assert_eq!(send(app.clone(), via_proxy("203.0.113.5", "wrong")).await.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(send(app.clone(), via_proxy("203.0.113.6", "wrong")).await.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn the_old_shared_cookie_works_once_and_moves_to_this_servers_name() {
    let app = app_with(Access::new(Some(TOKEN.into())));
    let old = send(
        app.clone(),
        request("GET", "/").header(header::COOKIE, format!("askbridge_token={TOKEN}")).body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(old.status(), StatusCode::OK);
    let set: Vec<String> =
        old.headers().get_all(header::SET_COOKIE).iter().map(|v| v.to_str().unwrap().to_string()).collect();
    assert!(set.iter().any(|c| c.starts_with(&format!("{}={TOKEN};", cookie::name_for(TOKEN)))), "{set:?}");
    assert!(set.iter().any(|c| c.starts_with("askbridge_token=;") && c.contains("Max-Age=0")), "{set:?}");
    // Another server's old cookie (another token) is neither accepted nor counted as a guess.
    for _ in 0..MAX_WRONG_TOKENS * 2 {
        let other = request("GET", "/").header(header::COOKIE, "askbridge_token=another-servers-token-000");
        assert_eq!(send(app.clone(), from(other, "127.0.0.1:1")).await.status(), StatusCode::UNAUTHORIZED);
    }
    let typed = request("GET", &format!("/?token={TOKEN}"));
    assert_eq!(send(app.clone(), from(typed, "127.0.0.1:1")).await.status(), StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn every_response_keeps_out_of_frames_and_sends_no_referrer() {
    let app = app_with(Access::new(Some(TOKEN.into()))).layer(axum::middleware::map_response(safe_headers));
    for request in [
        request("GET", "/").body(Body::empty()).unwrap(),
        request("GET", &format!("/?token={TOKEN}")).body(Body::empty()).unwrap(),
    ] {
        let response = send(app.clone(), request).await;
        let header = |name: &str| response.headers().get(name).map(|v| v.to_str().unwrap().to_string());
        assert!(header("content-security-policy").unwrap().contains("frame-ancestors 'none'"));
        assert_eq!(header("x-frame-options").as_deref(), Some("DENY"));
        assert_eq!(header("x-content-type-options").as_deref(), Some("nosniff"));
        assert_eq!(header("referrer-policy").as_deref(), Some("no-referrer"));
    }
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
    assert_eq!(send(app.clone(), form("nope-again")).await.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(send(app.clone(), form(TOKEN)).await.status(), StatusCode::SEE_OTHER, "the right one signs in");
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

    let behind_proxy = app_with(Access::new(Some(TOKEN.into())).with_cookies(false, vec!["10.0.0.1".parse().unwrap()]));
    assert!(cookie_of(&send(behind_proxy.clone(), proxied("10.0.0.1:1")).await).contains("; Secure"));
    // Anyone else saying https is not believed, and plain HTTP through the proxy is plain.
    assert!(!cookie_of(&send(behind_proxy.clone(), proxied("10.0.0.2:1")).await).contains("Secure"));
    let http = from(request("GET", &link).header("x-forwarded-proto", "http"), "10.0.0.1:1");
    assert!(!cookie_of(&send(behind_proxy, http).await).contains("Secure"));

    let forced = app_with(Access::new(Some(TOKEN.into())).with_cookies(true, Vec::new()));
    assert!(cookie_of(&send(forced, from(request("GET", &link), "127.0.0.1:1")).await).contains("; Secure"));
}

#[tokio::test]
async fn our_own_sign_in_form_posted_with_origin_null_is_let_through_and_no_one_elses() {
    // What Chrome sends for a form of this site under `Referrer-Policy: no-referrer`.
    let form = |site: &str| {
        request("POST", LOGIN_PATH)
            .header(header::ORIGIN, "null")
            .header("sec-fetch-site", site)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(format!("token={TOKEN}&next=/")))
            .unwrap()
    };
    assert_eq!(send(app(Some(TOKEN)), form("same-origin")).await.status(), StatusCode::SEE_OTHER);
    assert_eq!(send(app(Some(TOKEN)), form("cross-site")).await.status(), StatusCode::FORBIDDEN);
    let no_site = request("POST", "/api/thing").header(header::ORIGIN, "null").body(Body::empty()).unwrap();
    assert_eq!(send(app(Some(TOKEN)), no_site).await.status(), StatusCode::FORBIDDEN);
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
