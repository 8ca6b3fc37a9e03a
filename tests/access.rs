//! The access token, with the real `askbridge` binary as a person starts it: a token is made at
//! first start and kept private in the data folder, the sign-in link is printed (and never
//! logged), every page and server function asks for it, and `--no-token` is for loopback only.
//! And a data folder is one server's at a time.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, COOKIE, LOCATION, SET_COOKIE};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

struct Server {
    child: Child,
    url: String,
    /// The link printed at start.
    link: String,
}

fn askbridge(data: &Path, log: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_askbridge"));
    command
        .args(["serve", "--agent", "scripted", "--data-dir"])
        .arg(data)
        .args(args)
        .env_remove("ASKBRIDGE_TOKEN")
        .env_remove("ASKBRIDGE_NO_TOKEN")
        // Everything the server logs, requests included, to look for the token in.
        .env("RUST_LOG", "debug")
        .stdout(Stdio::piped())
        .stderr(std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap())
        .kill_on_drop(true);
    command
}

/// Starts the server on a port the system picks, and reads the sign-in link it prints once it
/// listens (which names that port: no port is chosen here and let go for the server to take).
async fn start(data: &Path, log: &Path, args: &[&str]) -> Server {
    let mut child = askbridge(data, log, &[&["--addr", "127.0.0.1:0"], args].concat()).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let link = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(at) = line.find("http://") {
                return line[at..].split_whitespace().next().unwrap().to_string();
            }
        }
        panic!("the server ended without printing its link: {}", std::fs::read_to_string(log).unwrap());
    })
    .await
    .expect("the sign-in link within 30 s");
    let url = link.splitn(4, '/').take(3).collect::<Vec<_>>().join("/");
    Server { child, url, link }
}

fn client() -> reqwest::Client {
    // reqwest is built without a default crypto provider (see the Messages API client).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

#[tokio::test]
async fn a_token_is_made_at_first_start_and_every_route_asks_for_it_but_the_log_never_shows_it() {
    let home = tempfile::tempdir().unwrap();
    let (data, log) = (home.path().join("data"), home.path().join("server.log"));
    let mut server = start(&data, &log, &[]).await;

    // The token is in the data folder, readable by its owner only, and in the printed link.
    let token = std::fs::read_to_string(data.join("token")).unwrap().trim().to_string();
    assert_eq!(token.len(), 64, "{token}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(data.join("token")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert_eq!(server.link, format!("{}/?token={token}", server.url));

    let http = client();
    let page = http.get(format!("{}/", server.url)).header("Accept", "text/html").send().await.unwrap();
    assert_eq!(page.status(), StatusCode::UNAUTHORIZED);
    assert!(page.text().await.unwrap().contains("access token"), "the sign-in page");
    let api = http.post(format!("{}/api/list_sessions", server.url)).json(&serde_json::json!({})).send().await.unwrap();
    assert_eq!(api.status(), StatusCode::UNAUTHORIZED);
    let live = http.get(format!("{}/api/live?session=x", server.url)).send().await.unwrap();
    assert_eq!(live.status(), StatusCode::UNAUTHORIZED);

    // The link signs in: the token moves to a cookie, out of the address bar.
    let signed_in = http.get(&server.link).send().await.unwrap();
    assert_eq!(signed_in.status(), StatusCode::SEE_OTHER);
    assert_eq!(signed_in.headers()[LOCATION], "/");
    let cookie = signed_in.headers()[SET_COOKIE].to_str().unwrap().split(';').next().unwrap().to_string();
    let page = http.get(format!("{}/", server.url)).header(COOKIE, &cookie).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let api = http
        .post(format!("{}/api/list_sessions", server.url))
        .header(AUTHORIZATION, format!("Bearer {token}"))
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(api.status(), StatusCode::OK);

    // The next start asks for the same token.
    server.child.kill().await.unwrap();
    let mut again = start(&data, &log, &[]).await;
    assert_eq!(again.link, format!("{}/?token={token}", again.url));
    again.child.kill().await.unwrap();

    // Requests were logged (at debug), the link's among them; the token never was.
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("path=/api/list_sessions"), "requests are in the log: {logged}");
    assert!(!logged.contains(&token), "the token is in the log");
}

#[tokio::test]
async fn no_token_opens_loopback_only_and_a_network_address_refuses_it() {
    let home = tempfile::tempdir().unwrap();
    let (data, log) = (home.path().join("data"), home.path().join("server.log"));
    let mut server = start(&data, &log, &["--no-token"]).await;
    assert_eq!(server.link, format!("{}/", server.url));
    assert!(!data.join("token").exists(), "no token file is made with --no-token");
    let api =
        client().post(format!("{}/api/list_sessions", server.url)).json(&serde_json::json!({})).send().await.unwrap();
    assert_eq!(api.status(), StatusCode::OK);
    server.child.kill().await.unwrap();

    let refused = askbridge(&data, &log, &["--no-token", "--addr", "0.0.0.0:0"]).status().await.unwrap();
    assert!(!refused.success());
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(said.contains("--no-token is for loopback addresses only"), "{said}");
}

/// A SQLite file is one server's: the pieces it journals beside the file would be torn by a
/// second writer. A second server on the same data folder waits for the first to let go (a
/// restart), then stops and says why; the first one goes on serving.
#[tokio::test]
async fn a_second_server_on_the_same_data_folder_is_refused_and_says_why() {
    let home = tempfile::tempdir().unwrap();
    let (data, log) = (home.path().join("data"), home.path().join("server.log"));
    let mut first = start(&data, &log, &["--no-token"]).await;

    let second = askbridge(&data, &log, &["--no-token", "--addr", "127.0.0.1:0"]).status().await.unwrap();
    assert!(!second.success());
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(said.contains("is in use by another process"), "{said}");
    assert!(!data.join("askbridge.db-shm").exists(), "the log's index is in the server's memory, not in a file");

    let api =
        client().post(format!("{}/api/list_sessions", first.url)).json(&serde_json::json!({})).send().await.unwrap();
    assert_eq!(api.status(), StatusCode::OK, "the first server serves on");
    first.child.kill().await.unwrap();
}

/// A raw connection to the server from `from` (any 127/8 address reaches a loopback server).
async fn connect_from(from: &str, url: &str) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    socket.connect(url.trim_start_matches("http://").parse().unwrap()).await.unwrap()
}

/// Waits until the server closes `stream` (a read gives its end, or the connection is reset),
/// reading and dropping whatever it answers first.
async fn closed_by_server(mut stream: tokio::net::TcpStream) {
    use tokio::io::AsyncReadExt;
    let mut buffer = [0u8; 1024];
    loop {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_slow_and_idle_connections_are_closed_and_one_address_cannot_hold_the_rest() {
    use askbridge::server::connections::{HEADER_DEADLINE, MAX_UNPROVEN_PER_CLIENT};
    use tokio::io::AsyncWriteExt;
    let home = tempfile::tempdir().unwrap();
    let (data, log) = (home.path().join("data"), home.path().join("server.log"));
    let mut server = start(&data, &log, &["--token", "connections-test-token-0123456789"]).await;

    // From one address: 200 that send nothing, 200 that never finish their headers, and one
    // that sends a request and then sits idle on its kept-alive connection.
    let mut held = Vec::new();
    for n in 0..400 {
        let mut stream = connect_from("127.0.0.1", &server.url).await;
        if n % 2 == 1 {
            stream.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ").await.unwrap();
        }
        held.push(stream);
    }
    let mut idle = connect_from("127.0.0.2", &server.url).await;
    idle.write_all(
        b"GET /api/ping HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer connections-test-token-0123456789\r\n\r\n",
    )
    .await
    .unwrap();

    // Another address is served meanwhile, at once: the limit is per address.
    let http =
        reqwest::Client::builder().local_address("127.0.0.3".parse::<std::net::IpAddr>().unwrap()).build().unwrap();
    let ping = http
        .get(format!("{}/api/ping", server.url))
        .bearer_auth("connections-test-token-0123456789")
        .send()
        .await
        .unwrap();
    assert_eq!(ping.status(), StatusCode::NO_CONTENT);

    // Every one of them is closed by the server: those past the address's limit once their
    // second of grace is over (long before any deadline), the rest at the header deadline (the
    // idle one too, after its answer).
    let closed = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let all = futures::future::join_all(held.into_iter().chain([idle]).map(|stream| {
        let closed = closed.clone();
        async move {
            closed_by_server(stream).await;
            closed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }));
    let all = tokio::spawn(all);
    let past_the_limit = 400 - MAX_UNPROVEN_PER_CLIENT;
    askbridge::testing::wait_until("the connections past the limit to be closed", HEADER_DEADLINE / 2, || async {
        (closed.load(std::sync::atomic::Ordering::SeqCst) >= past_the_limit).then_some(())
    })
    .await;
    tokio::time::timeout(HEADER_DEADLINE * 3, all).await.expect("the server closed every connection").unwrap();
    server.child.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_tokens_are_slowed_per_address_logged_once_per_burst_and_never_delay_the_right_one() {
    use askbridge::server::security::limit::{GUESS_PACE, MAX_WRONG_TOKENS};
    const TOKEN: &str = "guessing-test-token-0123456789";
    let home = tempfile::tempdir().unwrap();
    let (data, log) = (home.path().join("data"), home.path().join("server.log"));
    let mut server = start(&data, &log, &["--token", TOKEN]).await;
    let http = client();
    let guess = |token: String| {
        let (http, url) = (http.clone(), server.url.clone());
        async move { http.get(format!("{url}/api/ping")).bearer_auth(token).send().await.unwrap().status() }
    };
    for n in 0..MAX_WRONG_TOKENS {
        assert_eq!(guess(format!("wrong-{n}")).await, StatusCode::UNAUTHORIZED);
    }
    // Blocked now: three guesses side by side are answered one a second, not at once.
    let started = std::time::Instant::now();
    let statuses = futures::future::join_all((0..3).map(|n| guess(format!("again-{n}")))).await;
    assert!(statuses.iter().all(|s| *s == StatusCode::TOO_MANY_REQUESTS), "{statuses:?}");
    assert!(started.elapsed() >= GUESS_PACE * 2, "three blocked guesses took {:?}", started.elapsed());

    // The right token, sent while a guess waits for its turn, is answered first.
    let waiting = tokio::spawn(guess("one-more".into()));
    assert_eq!(guess(TOKEN.into()).await, StatusCode::NO_CONTENT);
    assert!(!waiting.is_finished(), "the right token did not wait behind the guess");
    assert_eq!(waiting.await.unwrap(), StatusCode::TOO_MANY_REQUESTS);

    server.child.kill().await.unwrap();
    let logged = std::fs::read_to_string(&log).unwrap();
    let lines = logged.lines().filter(|line| line.contains("wrong access token")).count();
    assert_eq!(lines, 2, "the burst is logged when it starts and when it is blocked: {logged}");
}
