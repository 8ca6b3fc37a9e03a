//! What the notifier (`notify/`) keeps: the browsers subscribed to Web Push, and which notice
//! went out for which interaction. A notice is claimed before it is sent, with one insert that
//! only one server can win (`claim_notice`): with several servers on one Postgres, each notice
//! is sent once, by the server whose insert went in.

use sqlx::types::Json;

use super::{Sql, Store, StoreResult};
use crate::interaction::InteractionRequest;

row! {
    /// A browser's push subscription, as stored: its keys as the page sent them (base64url).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct PushSubscriptionRow {
        pub endpoint: String,
        pub p256dh: String,
        pub auth: String,
        pub user_agent: Option<String>,
        pub created_at_ms: i64,
    }
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
    /// The key named `name` that the servers sharing this store use: `candidate` if none was
    /// kept yet (the first server to ask keeps its own), else the one kept. One statement each,
    /// so that servers starting at once agree.
    pub async fn shared_key(&self, name: &str, candidate: &str) -> StoreResult<String> {
        Ok(on_pool!(self, |pool, dialect| {
            sqlx::query("INSERT INTO server_keys (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING")
                .bind(name)
                .bind(candidate)
                .execute(pool)
                .await?;
            sqlx::query_scalar("SELECT value FROM server_keys WHERE name = $1").bind(name).fetch_one(pool).await?
        }))
    }

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::InteractionOutcome;
    use crate::question::{Choice, Question};
    use crate::store::Append;
    use crate::thread::{EventBody, SessionEvent, SessionSummary, Thread};

    /// A session with one pending question `t1`, stored as the session log stores it.
    async fn store_with_question() -> (Store, Thread) {
        let store = Store::open_in_memory().await.unwrap();
        let summary = SessionSummary {
            id: "s1".into(),
            title: "t".into(),
            agent: "scripted".into(),
            created_at_ms: 0,
            updated_at_ms: 0,
            working: false,
            waiting: false,
            workdir: None,
            active_at_ms: 0,
            terminal: None,
            matched: None,
        };
        store.create_session(&summary).await.unwrap();
        let mut thread = Thread::default();
        let question = Question {
            header: String::new(),
            question: "Which?".into(),
            options: vec![Choice { label: "A".into(), description: None, preview: None }],
            multi_select: false,
        };
        let bodies = [
            EventBody::AssistantMessageStarted { message_id: "m1".into() },
            EventBody::ToolCallStarted {
                message_id: "m1".into(),
                tool_use_id: "t1".into(),
                name: "AskUserQuestion".into(),
            },
            EventBody::InteractionOpened {
                tool_use_id: "t1".into(),
                request: InteractionRequest::Question { questions: vec![question] },
                expires_at_ms: None,
            },
        ];
        for (seq, body) in bodies.into_iter().enumerate() {
            append(&store, &mut thread, seq as u64 + 1, body).await;
        }
        (store, thread)
    }

    async fn append(store: &Store, thread: &mut Thread, seq: u64, body: EventBody) {
        let event = SessionEvent { seq, at_ms: 0, body };
        let change = thread.apply(&event);
        store.append(Append::of("s1", &event, thread, &change)).await.unwrap();
    }

    #[tokio::test]
    async fn a_notice_is_claimed_once_and_only_while_its_interaction_is_pending() {
        let (store, mut thread) = store_with_question().await;
        assert!(store.pending_request("s1", "t1").await.unwrap().is_some());
        let claim = |kind, outcome| {
            let store = store.clone();
            async move { store.claim_notice("s1", "t1", kind, outcome).await.unwrap() }
        };
        // Nothing was pushed yet: there is nothing to close.
        assert!(!claim(NoticeKind::PushClosed, NoticeOutcome::Sent).await);
        assert!(claim(NoticeKind::PushOpened, NoticeOutcome::Sent).await);
        assert!(!claim(NoticeKind::PushOpened, NoticeOutcome::Sent).await, "a second claim loses");
        assert!(!claim(NoticeKind::PushOpened, NoticeOutcome::Seen).await, "and so does seeing it afterwards");
        assert!(claim(NoticeKind::WebhookOpened, NoticeOutcome::Sent).await, "each kind is claimed on its own");
        assert!(!store.claim_notice("s1", "t-unknown", NoticeKind::PushParked, NoticeOutcome::Seen).await.unwrap());

        let answered = InteractionOutcome::Answered { answers: vec![] };
        append(&store, &mut thread, 4, EventBody::InteractionResolved { tool_use_id: "t1".into(), outcome: answered })
            .await;
        assert_eq!(store.pending_request("s1", "t1").await.unwrap(), None);
        assert!(!claim(NoticeKind::PushParked, NoticeOutcome::Sent).await, "nothing is sent for what is answered");
        assert!(claim(NoticeKind::PushClosed, NoticeOutcome::Sent).await, "a push was sent: it is closed");
        assert!(!claim(NoticeKind::PushClosed, NoticeOutcome::Sent).await);
    }

    #[tokio::test]
    async fn a_subscription_is_kept_replaced_by_its_endpoint_and_forgotten() {
        let store = Store::open_in_memory().await.unwrap();
        let row = |p256dh: &str, at| PushSubscriptionRow {
            endpoint: "https://push.example.com/1".into(),
            p256dh: p256dh.into(),
            auth: "auth".into(),
            user_agent: Some("UA\0".into()),
            created_at_ms: at,
        };
        store.save_push_subscription(&row("k1", 1)).await.unwrap();
        store.save_push_subscription(&row("k2", 2)).await.unwrap();
        let rows = store.push_subscriptions().await.unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].p256dh.as_str(), rows[0].created_at_ms), ("k2", 1), "new keys, the first date");
        assert_eq!(rows[0].user_agent.as_deref(), Some("UA\u{fffd}"));
        assert!(store.delete_push_subscription("https://push.example.com/1").await.unwrap());
        assert!(!store.delete_push_subscription("https://push.example.com/1").await.unwrap());
        assert!(store.push_subscriptions().await.unwrap().is_empty());
    }
}
