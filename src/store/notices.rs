//! Notifications between servers that share one Postgres: what was appended, that the session
//! list changed, that a session's turn should stop. Sent with `pg_notify` on the channel
//! `askbridge`, from within the transaction that made the change, so they arrive at its commit and
//! in commit order. SQLite has a single server: nothing is sent, and there is nothing to hear.

use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};

use super::{Pool, Store, StoreResult};

/// Sends `$notice` from within the transaction `$tx` on Postgres (delivered at its commit); on
/// SQLite, with a single server, there is no one to tell.
macro_rules! notify_in {
    ($tx:expr, $dialect:expr, $notice:expr) => {
        if $dialect == crate::store::Dialect::Postgres {
            sqlx::query(crate::store::notices::NOTIFY).bind(serde_json::to_string($notice)?).execute($tx).await?;
        }
    };
}

const CHANNEL: &str = "askbridge";

/// Sends one notice (its JSON) on the channel.
pub(super) const NOTIFY: &str = "SELECT pg_notify('askbridge', $1)";

/// What one server tells the others, as the JSON of a notification's payload.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Notice {
    /// Event `seq` of `session` was stored.
    Appended { session: String, seq: u64 },
    /// A session was created, renamed or deleted.
    ListChanged,
    /// `session` was deleted: every server lets go of it (its turn, its tabs).
    Deleted { session: String },
    /// The server that runs `session`'s turn should stop it.
    Interrupt { session: String },
}

impl Store {
    /// Tells every listening server `notice` (on SQLite, nobody: a no-op).
    pub async fn notify(&self, notice: &Notice) -> StoreResult<()> {
        if let Pool::Postgres(pool) = &self.pool {
            sqlx::query(NOTIFY).bind(serde_json::to_string(notice)?).execute(pool).await?;
        }
        Ok(())
    }

    /// Starts hearing every server's notices, on a connection of its own; `None` on SQLite.
    pub async fn listen(&self) -> StoreResult<Option<Listener>> {
        let Pool::Postgres(pool) = &self.pool else { return Ok(None) };
        let options = PgConnectOptions::clone(&pool.connect_options());
        let listener = subscribe(&options).await?;
        Ok(Some(Listener { options, listener: Some(listener) }))
    }
}

/// The notices of every server sharing the database, in the order their changes committed.
pub struct Listener {
    options: PgConnectOptions,
    /// None after its connection failed, until `next` makes a new one.
    listener: Option<PgListener>,
}

impl Listener {
    /// The next notice; `Ok(None)` when some may have been missed (the connection was lost and is
    /// made again), so the caller reads what it follows from the store again. An error (the
    /// database cannot be reached) can be retried: the next `Ok` after it is a `None`.
    pub async fn next(&mut self) -> StoreResult<Option<Notice>> {
        loop {
            let Some(listener) = self.listener.as_mut() else {
                self.listener = Some(subscribe(&self.options).await?);
                return Ok(None);
            };
            // try_recv (unlike recv) says when its connection was lost: Ok(None), after making a
            // new one and listening again on it.
            match listener.try_recv().await {
                Ok(Some(notification)) => match serde_json::from_str(notification.payload()) {
                    Ok(notice) => return Ok(Some(notice)),
                    Err(error) => {
                        tracing::warn!(%error, payload = notification.payload(), "skipped a notice that is not ours")
                    }
                },
                Ok(None) => return Ok(None),
                Err(error) => {
                    // Whatever state its connection is in, the next call starts a new one.
                    self.listener = None;
                    return Err(error.into());
                }
            }
        }
    }
}

/// A listener on a one-connection pool of its own (its connection is held for as long as it
/// listens; the store's pool stays whole).
async fn subscribe(options: &PgConnectOptions) -> Result<PgListener, sqlx::Error> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .max_lifetime(None)
        .idle_timeout(None)
        .connect_with(options.clone())
        .await?;
    let mut listener = PgListener::connect_with(&pool).await?;
    listener.ignore_pool_close_event(true);
    listener.listen(CHANNEL).await?;
    Ok(listener)
}
