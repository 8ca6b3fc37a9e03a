//! The server functions of push notifications: the server's public key for the page to subscribe
//! with, subscribing and unsubscribing this browser, and the tab's visibility (so that no push
//! goes out for a question the person is looking at). The page posts `PushSubscription.toJSON()`
//! itself to `/api/push_subscribe`, and `{endpoint}` to `/api/push_unsubscribe`.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use server_fn::codec::Json;

use crate::error::AppError;

/// `keys` of `PushSubscription.toJSON()`: the browser's P-256 public key and its auth secret,
/// base64url.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushKeys {
    pub p256dh: String,
    pub auth: String,
}

#[cfg(feature = "ssr")]
fn notifier() -> Result<crate::notify::Notifier, AppError> {
    use_context::<crate::notify::Notifier>()
        .ok_or_else(|| AppError::Internal { detail: "push notifications are not set up on this server".into() })
}

/// The server's VAPID public key (base64url): the page's `applicationServerKey`.
#[server(input = Json, endpoint = "push_key")]
pub async fn push_key() -> Result<String, AppError> {
    notifier()?.public_key()
}

/// Subscribes this browser: the body is its `PushSubscription.toJSON()`
/// (`{endpoint, expirationTime, keys: {p256dh, auth}}`; `expirationTime` is not needed: a
/// subscription that ends is answered 404 or 410 by its push service, and then forgotten).
#[server(input = Json, endpoint = "push_subscribe")]
pub async fn push_subscribe(endpoint: String, keys: PushKeys) -> Result<(), AppError> {
    let subscription = crate::notify::Subscription::parse(&endpoint, &keys.p256dh, &keys.auth)
        .map_err(|error| AppError::BadRequest { detail: format!("{error}.") })?;
    let headers: axum::http::HeaderMap = leptos_axum::extract().await.unwrap_or_default();
    let user_agent = headers.get(axum::http::header::USER_AGENT).and_then(|agent| agent.to_str().ok());
    notifier()?.subscribe(&subscription, user_agent).await
}

/// Unsubscribes the browser whose push endpoint this is (unknown endpoints are fine: it is gone).
#[server(input = Json, endpoint = "push_unsubscribe")]
pub async fn push_unsubscribe(endpoint: String) -> Result<(), AppError> {
    if endpoint.len() > crate::notify::web_push::MAX_ENDPOINT_BYTES {
        return Err(AppError::BadRequest { detail: "the endpoint is too long.".into() });
    }
    notifier()?.unsubscribe(&endpoint).await.map(drop)
}

/// This tab (an id the page made) shows `session` (or none) and is, or is not, visible. Sent on
/// `visibilitychange` and every so often while visible; `closed` when the page goes away.
#[server(input = Json, endpoint = "tab_visibility")]
pub async fn tab_visibility(
    tab: String,
    session: Option<String>,
    visible: bool,
    #[server(default)] closed: bool,
) -> Result<(), AppError> {
    use crate::notify::presence::MAX_TAB_ID;
    if tab.is_empty() || tab.len() > MAX_TAB_ID || session.as_ref().is_some_and(|s| s.len() > MAX_TAB_ID) {
        return Err(AppError::BadRequest { detail: format!("a tab or session id is 1 to {MAX_TAB_ID} characters.") });
    }
    let notifier = notifier()?;
    if closed {
        notifier.tab_closed(&tab);
    } else {
        notifier.tab_visibility(&tab, session.as_deref(), visible);
    }
    Ok(())
}
