//! What the notifier (`notify/`) keeps: the browsers subscribed to Web Push, and which notice
//! went out for which interaction. A notice is claimed before it is sent, with one insert that
//! only one server can win (`claim_notice`): with several servers on one Postgres, each notice
//! is sent once, by the server whose insert went in.

use sqlx::types::Json;

use super::{Sql, Store, StoreResult};
use crate::interaction::InteractionRequest;

/// A browser's push subscription, as stored: its keys as the page sent them (base64url).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PushSubscriptionRow {
    pub endpoint: String,
    pub p256dh: String,
    pub auth: String,
    pub user_agent: Option<String>,
    pub created_at_ms: i64,
}

/// The notices sent about one interaction, each at most once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoticeKind {
    /// The push for a question or permission request that opened (unless a tab showed it).
    PushOpened,
    /// The push when it parked.
    PushParked,
    /// The push that closes the notification, once it was answered; only after one of the above.
    PushClosed,
    WebhookOpened,
    WebhookParked,
}

impl NoticeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PushOpened => "push_opened",
            Self::PushParked => "push_parked",
            Self::PushClosed => "push_closed",
            Self::WebhookOpened => "webhook_opened",
            Self::WebhookParked => "webhook_parked",
        }
    }
}

/// What became of a claimed notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeOutcome {
    /// The claimer sends it.
    Sent,
    /// A tab showed the interaction: nobody sends it.
    Seen,
}

impl Store {
    /// Keeps a browser's subscription; the same endpoint again replaces its keys (a browser
    /// that subscribed anew).
    pub async fn save_push_subscription(&self, row: &PushSubscriptionRow) -> StoreResult<()> {
        self.check_writable()?;
        on_pool!(self, |pool, dialect| {
            sqlx::query(
                Sql {
                    sqlite: "INSERT INTO push_subscriptions (endpoint, p256dh, auth, user_agent, created_at_ms)
                             VALUES ($1, $2, $3, $4, $5)
                             ON CONFLICT (endpoint) DO UPDATE SET
                               p256dh = excluded.p256dh, auth = excluded.auth, user_agent = excluded.user_agent",
                    postgres: "INSERT INTO push_subscriptions (endpoint, p256dh, auth, user_agent, created_at)
                               VALUES ($1, $2, $3, $4, to_timestamp($5 / 1000.0))
                               ON CONFLICT (endpoint) DO UPDATE SET
                                 p256dh = excluded.p256dh, auth = excluded.auth, user_agent = excluded.user_agent",
                }
                .on(dialect),
            )
            .bind(&row.endpoint)
            .bind(&row.p256dh)
            .bind(&row.auth)
            .bind(row.user_agent.as_deref().map(super::without_nul))
            .bind(row.created_at_ms)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// Forgets a subscription; whether there was one.
    pub async fn delete_push_subscription(&self, endpoint: &str) -> StoreResult<bool> {
        let deleted = on_pool!(self, |pool, dialect| {
            sqlx::query("DELETE FROM push_subscriptions WHERE endpoint = $1")
                .bind(endpoint)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(deleted > 0)
    }

    /// Every subscription, the oldest first.
    pub async fn push_subscriptions(&self) -> StoreResult<Vec<PushSubscriptionRow>> {
        Ok(on_pool!(self, |pool, dialect| {
            sqlx::query_as(
                Sql {
                    sqlite: "SELECT endpoint, p256dh, auth, user_agent, created_at_ms FROM push_subscriptions
                             ORDER BY created_at_ms, endpoint",
                    postgres: "SELECT endpoint, p256dh, auth, user_agent,
                                 (extract(epoch FROM created_at) * 1000)::bigint AS created_at_ms
                               FROM push_subscriptions ORDER BY created_at, endpoint",
                }
                .on(dialect),
            )
            .fetch_all(pool)
            .await?
        }))
    }

    /// Claims notice `kind` about interaction `tool_use_id` of `session`: true if this call
    /// recorded it (and its caller is the one to send it, or `Seen`: to send nothing), false if
    /// it was claimed before, by this server or another. One insert, a compare-and-set.
    ///
    /// What may be claimed: a `Sent` push or webhook only while the interaction is pending
    /// (nothing goes out for what is already answered); `PushClosed` only after a push about it
    /// was sent; `Seen` for any interaction that exists.
    pub async fn claim_notice(
        &self,
        session: &str,
        tool_use_id: &str,
        kind: NoticeKind,
        outcome: NoticeOutcome,
    ) -> StoreResult<bool> {
        self.check_writable()?;
        let condition = match (kind, outcome) {
            (_, NoticeOutcome::Seen) => {
                "EXISTS (SELECT 1 FROM interactions WHERE session_id = $1 AND tool_use_id = $2)"
            }
            (NoticeKind::PushClosed, NoticeOutcome::Sent) => {
                "EXISTS (SELECT 1 FROM notices_sent WHERE session_id = $1 AND tool_use_id = $2
                           AND kind IN ('push_opened', 'push_parked') AND outcome = 'sent')"
            }
            (_, NoticeOutcome::Sent) => {
                "EXISTS (SELECT 1 FROM interactions WHERE session_id = $1 AND tool_use_id = $2
                           AND state = 'pending')"
            }
        };
        let outcome = match outcome {
            NoticeOutcome::Sent => "sent",
            NoticeOutcome::Seen => "seen",
        };
        let claimed = on_pool!(self, |pool, dialect| {
            let insert = match dialect {
                super::Dialect::Sqlite => format!(
                    "INSERT INTO notices_sent (session_id, tool_use_id, kind, outcome, at_ms)
                     SELECT $1, $2, $3, $4, CAST(unixepoch('subsec') * 1000 AS INTEGER) WHERE {condition}
                     ON CONFLICT DO NOTHING"
                ),
                super::Dialect::Postgres => format!(
                    "INSERT INTO notices_sent (session_id, tool_use_id, kind, outcome)
                     SELECT $1, $2, $3, $4 WHERE {condition}
                     ON CONFLICT DO NOTHING"
                ),
            };
            sqlx::query(&insert)
                .bind(session)
                .bind(tool_use_id)
                .bind(kind.as_str())
                .bind(outcome)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(claimed == 1)
    }

    /// What interaction `tool_use_id` of `session` asks, while it is pending.
    pub async fn pending_request(&self, session: &str, tool_use_id: &str) -> StoreResult<Option<InteractionRequest>> {
        let request: Option<Json<InteractionRequest>> = on_pool!(self, |pool, dialect| {
            sqlx::query_scalar(
                "SELECT request FROM interactions WHERE session_id = $1 AND tool_use_id = $2 AND state = 'pending'",
            )
            .bind(session)
            .bind(tool_use_id)
            .fetch_optional(pool)
            .await?
        });
        Ok(request.map(|request| request.0))
    }
}
