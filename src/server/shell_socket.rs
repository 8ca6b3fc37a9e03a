//! `GET /api/shell/{session}`: a session's terminal over a WebSocket, for `public/terminal.js`.
//! Behind the same guard as every route (the token, Host, and Origin when a browser sends one);
//! here a browser's Origin is also required, so that only a page of this server opens it.
//!
//! The server sends the screen so far as the first binary message, then the shell's output as
//! it comes, each a binary message, and `{"ended": "…"}` when the shell ends. The page sends
//! `{"input": "…"}` for what was typed and `{"resize": [cols, rows]}`.

use std::sync::Arc;

use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use tokio::sync::broadcast::error::RecvError;

use crate::error::AppError;
use crate::session::SessionManager;
use crate::shell::{Output, Shell, Size};

pub const SHELL_PATH: &str = "/api/shell/{session}";

/// Where the terminal starts, and its size.
#[derive(Deserialize)]
pub struct Opening {
    #[serde(default = "default_cols")]
    cols: u16,
    #[serde(default = "default_rows")]
    rows: u16,
    /// A folder inside the session's, relative to it.
    folder: Option<String>,
}

fn default_cols() -> u16 {
    80
}

fn default_rows() -> u16 {
    24
}

/// What the page sends.
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum FromPage {
    Input(String),
    Resize(u16, u16),
}

pub async fn shell_socket(
    State(manager): State<Arc<SessionManager>>,
    Path(session): Path<String>,
    Query(opening): Query<Opening>,
    headers: HeaderMap,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    // Checked before the upgrade is: a page whose socket would not open asks again without one,
    // to read why (`public/terminal.js`).
    let folder = match manager.shell_folder(&session, opening.folder.as_deref()).await {
        Ok(folder) => folder,
        Err(error) => return refused(&error),
    };
    let Ok(upgrade) = upgrade else {
        return refused(&AppError::BadRequest { detail: "the terminal opens over a WebSocket".into() });
    };
    if !headers.contains_key(header::ORIGIN) {
        let error = AppError::BadRequest { detail: "the terminal opens from this server's page only".into() };
        return (StatusCode::FORBIDDEN, axum::Json(error)).into_response();
    }
    let size = Size::bounded(opening.cols, opening.rows);
    let shell = match manager.session_shell(&session, &folder, size) {
        Ok(shell) => shell,
        Err(error) => return refused(&error),
    };
    shell.resize(size);
    let stop = manager.shutdown_token();
    upgrade.on_upgrade(move |socket| async move {
        tokio::select! {
            () = relay(socket, &shell) => {}
            () = stop.cancelled() => {}
        }
    })
}

/// The shell's screen and output to the page, and the page's keys and size to the shell, until
/// either ends.
async fn relay(mut socket: WebSocket, shell: &Shell) {
    let (screen, mut news, ended) = shell.attach();
    if socket.send(Message::Binary(screen.into())).await.is_err() {
        return;
    }
    if let Some(how) = ended {
        let _ = socket.send(ended_message(&how)).await;
        return;
    }
    loop {
        tokio::select! {
            heard = news.recv() => match heard {
                Ok(Output::Bytes(bytes)) => {
                    if socket.send(Message::Binary(bytes.to_vec().into())).await.is_err() {
                        return;
                    }
                }
                Ok(Output::Ended(how)) => {
                    let _ = socket.send(ended_message(&how)).await;
                    return;
                }
                // Too far behind to follow: the page opens again and gets the whole screen.
                Err(RecvError::Lagged(_)) | Err(RecvError::Closed) => return,
            },
            sent = socket.recv() => match sent {
                Some(Ok(Message::Text(text))) => match serde_json::from_str::<FromPage>(&text) {
                    Ok(FromPage::Input(keys)) => {
                        if shell.write(keys.as_bytes()).is_err() {
                            return;
                        }
                    }
                    Ok(FromPage::Resize(cols, rows)) => shell.resize(Size::bounded(cols, rows)),
                    Err(error) => tracing::debug!(%error, "a terminal message that is not one"),
                },
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return,
            },
        }
    }
}

fn refused(error: &AppError) -> Response {
    let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, axum::Json(error)).into_response()
}

fn ended_message(how: &str) -> Message {
    Message::Text(serde_json::json!({ "ended": how }).to_string().into())
}
