//! The real `askbridge` binary on a full disk: its data folder on a 2 MiB tmpfs of its own
//! (`testing::small_disk`), filled while it runs. Every kind of write (a message, a new session, a
//! rename, an upload) fails with the disk's own words, several times over; once space is back,
//! the very next write of each kind succeeds, and nothing acknowledged before is lost.

use crate::support;

use std::process::Stdio;
use std::time::Duration;

use askbridge::error::AppError;
use askbridge::testing::small_disk::SmallDisk;
use askbridge::testing::wait_until;
use serde_json::{Value, json};
use support::server::{Api, TOKEN};

/// The binary, its data on the small disk; its API (`support::server::Api`, with the test's token)
/// through `Deref`.
struct Server {
    _child: tokio::process::Child,
    api: Api,
}

impl std::ops::Deref for Server {
    type Target = Api;
    fn deref(&self) -> &Api {
        &self.api
    }
}

impl Server {
    async fn start(disk: &SmallDisk) -> Server {
        let data = disk.inside().join("data");
        let mut command = disk.command(env!("CARGO_BIN_EXE_askbridge"));
        // On a port the system picks: the link it prints says which.
        command
            .args(["serve", "--addr", "127.0.0.1:0", "--data-dir", &data.display().to_string()])
            .env("ASKBRIDGE_TOKEN", TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = tokio::process::Command::from(command).kill_on_drop(true).spawn().unwrap();
        let base = support::listening_at(&mut child).await;
        Server { _child: child, api: Api::at(&base) }
    }

    /// The texts of the session's messages, once its turn has ended.
    async fn texts_when_idle(&self, session: &str) -> Vec<String> {
        wait_until("the turn to end", Duration::from_secs(30), || async {
            let view = self.call("load_session", json!({"id": session})).await.ok()?;
            let thread = &view["thread"];
            (thread["turn"]["working"] == false).then(|| {
                let messages = thread["messages"].as_array().cloned().unwrap_or_default();
                messages
                    .iter()
                    .flat_map(|m| m["blocks"].as_array().cloned().unwrap_or_default())
                    .filter_map(|b| b["text"]["text"].as_str().map(str::to_string))
                    .collect()
            })
        })
        .await
    }
}

fn session_id(created: &Value) -> String {
    created["id"].as_str().or(created["session"]["id"].as_str()).expect("a created session's id").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_full_disk_every_kind_of_write_succeeds_again_as_soon_as_space_is_back() {
    let disk = SmallDisk::new(2 << 20);
    let server = Server::start(&disk).await;
    let session = session_id(&server.call("create_session", json!({"workdir": null})).await.unwrap());
    server.call("send_message", json!({"session": session, "text": "before the disk filled"})).await.unwrap();
    let before = server.texts_when_idle(&session).await;
    assert!(before.iter().any(|t| t == "before the disk filled"), "{before:?}");

    disk.fill();
    // A person keeps trying, every kind of write, while the disk stays full. Some may still fit
    // in pages SQLite already has; the rest fail, saying why.
    let mut refused = Vec::new();
    for round in 0..4 {
        let big = format!("{round} {}", "words ".repeat(8_000));
        let results = [
            server.call("send_message", json!({"session": session, "text": big})).await.map(drop),
            server.call("create_session", json!({"workdir": null})).await.map(drop),
            server.call("rename_session", json!({"id": session, "title": format!("title {round}")})).await.map(drop),
            server.upload("notes.txt", "text/plain", big.repeat(4).into_bytes()).await.map(drop),
        ];
        refused.extend(results.into_iter().filter_map(Result::err));
    }
    assert!(refused.len() >= 4, "a full disk refused writes: {refused:?}");
    for error in &refused {
        assert!(
            matches!(error, AppError::Storage { detail } if detail.contains("the disk is full")),
            "said plainly: {error:?}"
        );
    }

    disk.free();
    // No waiting for a lock a failed write left behind: the very next write of each kind works.
    server.call("rename_session", json!({"id": session, "title": "after the disk filled"})).await.unwrap();
    server.call("create_session", json!({"workdir": null})).await.unwrap();
    server.upload("notes.txt", "text/plain", b"a note".to_vec()).await.unwrap();
    server.call("send_message", json!({"session": session, "text": "after space came back"})).await.unwrap();
    let after = server.texts_when_idle(&session).await;
    assert_eq!(after.first().map(String::as_str), Some("before the disk filled"), "{after:?}");
    assert!(after.iter().any(|t| t == "after space came back"), "{after:?}");
}
