//! Files attached to messages, over plain HTTP rather than server functions (issue 21): a file
//! goes up as its own bytes, not base64 in JSON, and comes down as itself, cached for good (its
//! address is its hash). Both routes sit behind the same access checks as every `/api/` route.
//!
//! - `POST /api/attachments?name=<file name>`, the bytes as the body and their `Content-Type`:
//!   judged (`thread::attachment::check`: the bytes of an image must be that image), stored once,
//!   and answered with the stored file (`AttachmentRef`, its `hash` included). Idempotent.
//! - `GET /api/attachments/<hash>`: the bytes, with the stored media type (an image the agent
//!   reads, or `text/plain`: never anything a browser would run), `nosniff`, a sandboxing policy.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use crate::error::AppError;
use crate::session::SessionManager;
use crate::thread::attachment::{Kind, MAX_ATTACHMENT_BYTES};

pub const UPLOAD_PATH: &str = "/api/attachments";
/// The largest request body the upload takes: a file at the limit, and room to say it is over.
pub const MAX_UPLOAD_BODY: usize = MAX_ATTACHMENT_BYTES + 64 * 1024;

/// The routes; the router gives the upload its own body limit (every other route keeps 1 MiB).
pub fn routes<S: Clone + Send + Sync + 'static>(manager: Arc<SessionManager>) -> Router<S> {
    Router::new().route(UPLOAD_PATH, post(upload)).route("/api/attachments/{hash}", get(download)).with_state(manager)
}

#[derive(Deserialize)]
struct UploadQuery {
    #[serde(default)]
    name: Option<String>,
}

async fn upload(
    State(manager): State<Arc<SessionManager>>,
    Query(query): Query<UploadQuery>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let too_large = || refuse(AppError::TooLarge { max_kib: MAX_ATTACHMENT_BYTES / 1024 });
    let declared_length = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    if declared_length.is_some_and(|length| length > MAX_ATTACHMENT_BYTES) {
        return too_large();
    }
    let Ok(bytes) = axum::body::to_bytes(body, MAX_ATTACHMENT_BYTES).await else {
        return too_large();
    };
    let declared = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    match manager.store_attachment(declared, query.name.as_deref(), &bytes).await {
        Ok(file) => (StatusCode::OK, axum::Json(file)).into_response(),
        Err(error) => refuse(error),
    }
}

async fn download(State(manager): State<Arc<SessionManager>>, Path(hash): Path<String>) -> Response {
    let (file, bytes) = match manager.attachment(&hash).await {
        Ok(found) => found,
        Err(error) => return refuse(error),
    };
    // Only what the upload let in is served as itself; anything else (a row written by hand) as
    // bytes to save.
    let (content_type, disposition) = match Kind::of_media_type(&file.media_type) {
        Some(Kind::Image(media_type)) => (media_type.to_string(), "inline"),
        Some(Kind::Text) => ("text/plain; charset=utf-8".to_string(), "attachment"),
        None => ("application/octet-stream".to_string(), "attachment"),
    };
    let name = file.name.as_deref().unwrap_or("attachment");
    let encoded = percent_encoding::utf8_percent_encode(name, percent_encoding::NON_ALPHANUMERIC);
    let disposition = format!("{disposition}; filename*=UTF-8''{encoded}");
    let mut response = Response::new(Body::from(bytes));
    let headers = response.headers_mut();
    let set = |headers: &mut HeaderMap, name, value: &str| {
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.insert(name, value);
        }
    };
    set(headers, header::CONTENT_TYPE, &content_type);
    set(headers, header::CONTENT_DISPOSITION, &disposition);
    // The address is the content's hash: it never changes. Private: it is behind the sign-in.
    set(headers, header::CACHE_CONTROL, "private, max-age=31536000, immutable");
    set(headers, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    // Opened on its own, the file runs nothing and reaches nothing.
    set(
        headers,
        header::CONTENT_SECURITY_POLICY,
        "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox",
    );
    response
}

fn refuse(error: AppError) -> Response {
    let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, axum::Json(error)).into_response()
}
