//! Files attached to messages, through the whole router (issue 21): uploaded once by their hash,
//! served back as themselves with headers that keep them from ever running, refused with a typed
//! error when they are too large, of a kind the agent cannot read, or not what they say; and a
//! message that names a file the server does not hold is refused before anything is stored.

use crate::support;

use std::time::Duration;

use askbridge::error::AppError;
use askbridge::testing::wait_until;
use askbridge::thread::attachment::MAX_ATTACHMENT_BYTES;
use askbridge::thread::{AttachmentRef, Block};
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use serde_json::json;
use support::router::{Harness, harness};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR-and-the-rest";

impl Harness {
    async fn upload(&self, media_type: &str, name: &str, bytes: Vec<u8>) -> (StatusCode, Vec<u8>) {
        let request = Request::post(format!("/api/attachments?name={name}"))
            .header(header::HOST, "127.0.0.1:3000")
            .header(header::ORIGIN, "http://127.0.0.1:3000")
            .header(header::CONTENT_TYPE, media_type)
            .body(Body::from(bytes))
            .unwrap();
        let (status, _, body) = self.call(request).await;
        (status, body)
    }

    async fn download(&self, hash: &str) -> (StatusCode, HeaderMap, Vec<u8>) {
        self.call(
            Request::get(format!("/api/attachments/{hash}"))
                .header(header::HOST, "127.0.0.1:3000")
                .body(Body::empty())
                .unwrap(),
        )
        .await
    }

    async fn send(&self, session: &str, text: &str, attachments: Vec<String>) -> (StatusCode, Vec<u8>) {
        let body = json!({"session": session, "text": text, "attachments": attachments});
        let request = Request::post("/api/send_message")
            .header(header::HOST, "127.0.0.1:3000")
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap();
        let (status, _, body) = self.call(request).await;
        (status, body)
    }
}

fn error(body: &[u8]) -> AppError {
    serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("not a typed error ({e}): {}", String::from_utf8_lossy(body)))
}

#[tokio::test]
async fn an_uploaded_image_is_stored_once_and_served_back_as_itself_never_as_a_page() {
    let h = harness().await;
    let (status, body) = h.upload("image/png", "shot.png", PNG.to_vec()).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let file: AttachmentRef = serde_json::from_slice(&body).unwrap();
    assert_eq!(file.hash.len(), 64);
    assert_eq!(
        (file.media_type.as_str(), file.name.as_deref(), file.size),
        ("image/png", Some("shot.png"), PNG.len() as u64)
    );
    // The same bytes again: the same file.
    let (status, again) = h.upload("image/png", "shot.png", PNG.to_vec()).await;
    assert_eq!((status, serde_json::from_slice::<AttachmentRef>(&again).unwrap()), (StatusCode::OK, file.clone()));

    let (status, headers, bytes) = h.download(&file.hash).await;
    assert_eq!((status, bytes.as_slice()), (StatusCode::OK, PNG));
    assert_eq!(headers[header::CONTENT_TYPE], "image/png");
    assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    assert!(headers[header::CACHE_CONTROL].to_str().unwrap().contains("immutable"));
    assert!(headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap().contains("sandbox"));

    // A text file, even an HTML one, comes back as plain text to save, never as a page.
    let (status, body) = h.upload("text/html", "page.html", b"<script>alert(1)</script>".to_vec()).await;
    assert_eq!(status, StatusCode::OK);
    let page: AttachmentRef = serde_json::from_slice(&body).unwrap();
    let (_, headers, _) = h.download(&page.hash).await;
    assert_eq!(headers[header::CONTENT_TYPE], "text/plain; charset=utf-8");
    assert!(headers[header::CONTENT_DISPOSITION].to_str().unwrap().starts_with("attachment"));

    let (status, _, body) = h.download(&"0".repeat(64)).await;
    assert_eq!((status, error(&body)), (StatusCode::NOT_FOUND, AppError::AttachmentNotFound { hash: "0".repeat(64) }));
    let (status, _, _) = h.download("..%2F..%2Fetc%2Fpasswd").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn oversized_mislabelled_and_unknown_files_are_refused_with_a_typed_error() {
    let h = harness().await;
    let (status, body) = h.upload("image/png", "big.png", [PNG, &vec![0; MAX_ATTACHMENT_BYTES]].concat()).await;
    assert_eq!((status, error(&body)), (StatusCode::PAYLOAD_TOO_LARGE, AppError::TooLarge { max_kib: 5 * 1024 }));

    let (status, body) = h.upload("image/png", "fake.png", b"this is text, not a picture".to_vec()).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(error(&body), AppError::AttachmentRefused { detail: "its content is not image/png".into() });

    let (status, body) = h.upload("application/pdf", "paper.pdf", b"%PDF-1.7".to_vec()).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert!(matches!(error(&body), AppError::AttachmentRefused { .. }));

    let (status, body) = h.upload("image/svg+xml", "logo.svg", b"<svg onload=alert(1)/>".to_vec()).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{}", String::from_utf8_lossy(&body));
}

#[tokio::test]
async fn a_message_naming_an_unknown_file_is_refused_and_one_with_a_stored_file_shows_it_by_hash() {
    let h = harness().await;
    let session = h.manager.create_session(None).await.unwrap().id;
    let unknown = "ab".repeat(32);
    let (status, body) = h.send(&session, "look", vec![unknown.clone()]).await;
    assert_eq!((status, error(&body)), (StatusCode::NOT_FOUND, AppError::AttachmentNotFound { hash: unknown }));
    assert!(h.manager.snapshot(&session).await.unwrap().1.messages.is_empty(), "nothing was stored");

    let (_, body) = h.upload("image/png", "shot.png", PNG.to_vec()).await;
    let file: AttachmentRef = serde_json::from_slice(&body).unwrap();
    let (status, body) = h.send(&session, "look", vec![file.hash.clone()]).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    // The old call shape, without attachments, still works.
    wait_until("the turn to end", Duration::from_secs(5), || async {
        (!h.manager.snapshot(&session).await.unwrap().1.turn.working).then_some(())
    })
    .await;
    let body = json!({"session": session, "text": "and this"}).to_string();
    let request = Request::post("/api/send_message")
        .header(header::HOST, "127.0.0.1:3000")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .unwrap();
    assert_eq!(h.call(request).await.0, StatusCode::OK);

    let thread = h.manager.snapshot(&session).await.unwrap().1;
    let Block::Image(image) = &thread.messages[0].blocks[1] else { panic!("{:?}", thread.messages[0]) };
    assert_eq!(image.hash.as_deref(), Some(file.hash.as_str()));
    assert_eq!(image.name.as_deref(), Some("shot.png"));
    assert!(image.data.is_empty(), "the thread carries no bytes");
    assert_eq!(image.src(), format!("/api/attachments/{}", file.hash));
}
