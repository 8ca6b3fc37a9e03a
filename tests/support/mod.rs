//! Helpers shared by the integration tests; each test uses a subset of them.
#![allow(dead_code)]

pub mod claude_code;
pub mod mock_anthropic;
pub mod mock_gemini;
pub mod mock_openai;
pub mod push_service;
pub mod router;
pub mod scripted_model;
pub mod server;
pub mod session;
pub mod terminal;

/// Where an `askbridge serve` started on `--addr 127.0.0.1:0` listens: the address of the link it
/// prints once it does (`http://127.0.0.1:PORT`). No port is chosen by the test and let go for the
/// server to take, which another process could take first. What it prints later is read and
/// dropped, so that it never blocks on a full pipe.
pub async fn listening_at(child: &mut tokio::process::Child) -> String {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(child.stdout.take().expect("stdout piped")).lines();
    let base = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(at) = line.find("http://") {
                return line[at..].splitn(4, '/').take(3).collect::<Vec<_>>().join("/");
            }
        }
        panic!("the server ended without saying where it listens");
    })
    .await
    .expect("the server's link within 60 s");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    base
}
