//! Leases: which server runs a session's turns. Several servers sharing one Postgres each take a
//! session's lease before running its turn and renew it while they live; a server that stops
//! lets its leases expire, and another finds their sessions and takes them over. Expiry is by the
//! database's clock (Postgres's `now()`, SQLite's `unixepoch`), the one clock all servers share.
//! A single SQLite server clears every lease at start.

use std::time::Duration;

use super::{Sql, Store, StoreError, StoreResult};

impl Store {
    /// Takes (or renews) `session`'s lease for `server` for `ttl`: its fencing token if `server`
    /// holds it now (it was free, expired, or already its own), `None` if another server holds
    /// it. One statement, a compare-and-set: of servers taking it at once, exactly one gets it.
    /// The token is `fence` when the lease changes hands (or was free), and stays what it was
    /// while the same server keeps it, so that a turn's writes go on across renewals.
    pub async fn take_lease(
        &self,
        session: &str,
        server: &str,
        fence: &str,
        ttl: Duration,
    ) -> StoreResult<Option<String>> {
        let taken = on_pool!(self, |pool, dialect| {
            sqlx::query_scalar(
                Sql {
                    sqlite: "INSERT INTO session_leases (session_id, server_id, expires_at_ms, fence)
                             VALUES ($1, $2, CAST(unixepoch('subsec') * 1000 AS INTEGER) + $3, $4)
                             ON CONFLICT (session_id) DO UPDATE SET
                               server_id = excluded.server_id, expires_at_ms = excluded.expires_at_ms,
                               fence = CASE WHEN session_leases.server_id = excluded.server_id
                                         THEN session_leases.fence ELSE excluded.fence END
                             WHERE session_leases.server_id = excluded.server_id
                               OR session_leases.expires_at_ms <= CAST(unixepoch('subsec') * 1000 AS INTEGER)
                             RETURNING fence",
                    postgres: "INSERT INTO session_leases (session_id, server_id, expires_at, fence)
                               VALUES ($1, $2, now() + $3 * interval '1 millisecond', $4)
                               ON CONFLICT (session_id) DO UPDATE SET
                                 server_id = excluded.server_id, expires_at = excluded.expires_at,
                                 fence = CASE WHEN session_leases.server_id = excluded.server_id
                                           THEN session_leases.fence ELSE excluded.fence END
                               WHERE session_leases.server_id = excluded.server_id
                                 OR session_leases.expires_at <= now()
                               RETURNING fence",
                }
                .on(dialect),
            )
            .bind(session)
            .bind(server)
            .bind(millis(ttl))
            .bind(fence)
            .fetch_optional(pool)
            .await
        });
        match taken {
            Ok(fence) => Ok(fence),
            Err(error) if error.as_database_error().is_some_and(|e| e.is_foreign_key_violation()) => {
                Err(StoreError::SessionNotFound(session.to_string()))
            }
            Err(error) => Err(error.into()),
        }
    }

    /// Of `sessions`, those whose lease `server` no longer holds (another server took it, or it
    /// was let go): their agents here must stop.
    pub async fn leases_lost(&self, server: &str, sessions: &[String]) -> StoreResult<Vec<String>> {
        if sessions.is_empty() {
            return Ok(Vec::new());
        }
        let held: Vec<String> = on_pool!(self, |pool, dialect| {
            sqlx::query_scalar("SELECT session_id FROM session_leases WHERE server_id = $1")
                .bind(server)
                .fetch_all(pool)
                .await?
        });
        Ok(sessions.iter().filter(|session| !held.contains(session)).cloned().collect())
    }

    /// Lets go of `session`'s lease, if `server` holds it.
    pub async fn release_lease(&self, session: &str, server: &str) -> StoreResult<()> {
        on_pool!(self, |pool, dialect| {
            sqlx::query("DELETE FROM session_leases WHERE session_id = $1 AND server_id = $2")
                .bind(session)
                .bind(server)
                .execute(pool)
                .await?;
        });
        Ok(())
    }

    /// Lets go of every lease `server` holds (it is stopping).
    pub async fn release_leases(&self, server: &str) -> StoreResult<()> {
        on_pool!(self, |pool, dialect| {
            sqlx::query("DELETE FROM session_leases WHERE server_id = $1").bind(server).execute(pool).await?;
        });
        Ok(())
    }

    /// Extends `server`'s live leases to `ttl` from now; how many. An expired one is not renewed:
    /// another server may be taking it over, and `take_lease` settles who gets it.
    pub async fn renew_leases(&self, server: &str, ttl: Duration) -> StoreResult<u64> {
        let renewed = on_pool!(self, |pool, dialect| {
            sqlx::query(
                Sql {
                    sqlite: "UPDATE session_leases
                             SET expires_at_ms = CAST(unixepoch('subsec') * 1000 AS INTEGER) + $2
                             WHERE server_id = $1
                               AND expires_at_ms > CAST(unixepoch('subsec') * 1000 AS INTEGER)",
                    postgres: "UPDATE session_leases SET expires_at = now() + $2 * interval '1 millisecond'
                               WHERE server_id = $1 AND expires_at > now()",
                }
                .on(dialect),
            )
            .bind(server)
            .bind(millis(ttl))
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(renewed)
    }

    /// Forgets every lease: for a single server at its start, when no other server can hold one.
    pub async fn clear_leases(&self) -> StoreResult<()> {
        on_pool!(self, |pool, dialect| {
            sqlx::query("DELETE FROM session_leases").execute(pool).await?;
        });
        Ok(())
    }

    /// The server that holds `session`'s lease, unless it is free or expired.
    pub async fn lease_holder(&self, session: &str) -> StoreResult<Option<String>> {
        Ok(on_pool!(self, |pool, dialect| {
            sqlx::query_scalar(
                Sql {
                    sqlite: "SELECT server_id FROM session_leases WHERE session_id = $1
                             AND expires_at_ms > CAST(unixepoch('subsec') * 1000 AS INTEGER)",
                    postgres: "SELECT server_id FROM session_leases WHERE session_id = $1 AND expires_at > now()",
                }
                .on(dialect),
            )
            .bind(session)
            .fetch_optional(pool)
            .await?
        }))
    }

    /// Sessions whose lease expired: their server stopped (or lost the database) without letting
    /// go, and their turns may need taking over.
    pub async fn sessions_with_expired_leases(&self) -> StoreResult<Vec<String>> {
        Ok(on_pool!(self, |pool, dialect| {
            sqlx::query_scalar(
                Sql {
                    sqlite: "SELECT session_id FROM session_leases
                             WHERE expires_at_ms <= CAST(unixepoch('subsec') * 1000 AS INTEGER) ORDER BY session_id",
                    postgres: "SELECT session_id FROM session_leases WHERE expires_at <= now() ORDER BY session_id",
                }
                .on(dialect),
            )
            .fetch_all(pool)
            .await?
        }))
    }

    /// Sessions whose last turn never ended and that no live server holds: the server running
    /// them stopped while their agent was working.
    pub async fn sessions_with_unfinished_turns(&self) -> StoreResult<Vec<String>> {
        Ok(on_pool!(self, |pool, dialect| {
            sqlx::query_scalar(
                Sql {
                    sqlite: "SELECT id FROM sessions WHERE json_extract(turn, '$.working') = 1
                             AND NOT EXISTS (SELECT 1 FROM session_leases l WHERE l.session_id = sessions.id
                               AND l.expires_at_ms > CAST(unixepoch('subsec') * 1000 AS INTEGER))
                             ORDER BY id",
                    postgres: "SELECT id FROM sessions WHERE (turn ->> 'working')::boolean
                               AND NOT EXISTS (SELECT 1 FROM session_leases l WHERE l.session_id = sessions.id
                                 AND l.expires_at > now())
                               ORDER BY id",
                }
                .on(dialect),
            )
            .fetch_all(pool)
            .await?
        }))
    }

    /// Sessions that may owe the person a turn and that no live server holds: no turn runs and
    /// nothing waits for the person, and a message of theirs has no turn yet (typed ahead or
    /// not), or the last turn
    /// parked, failed or was cut short (its agent may not have had their answers). The thread
    /// says for sure (`Thread::next_turn`).
    pub async fn sessions_owed_a_turn(&self) -> StoreResult<Vec<String>> {
        Ok(on_pool!(self, |pool, dialect| {
            sqlx::query_scalar(
                Sql {
                    sqlite: "SELECT id FROM sessions WHERE json_extract(turn, '$.working') = 0
                             AND (json_extract(turn, '$.queued_messages') IS NOT NULL
                               OR json_extract(turn, '$.queue') IS NOT NULL
                               OR json_extract(turn, '$.last_outcome') IN ('parked', 'abandoned')
                               OR json_extract(turn, '$.last_outcome.failed') IS NOT NULL)
                             AND NOT EXISTS (SELECT 1 FROM interactions i
                               WHERE i.session_id = sessions.id AND i.state = 'pending')
                             AND NOT EXISTS (SELECT 1 FROM session_leases l WHERE l.session_id = sessions.id
                               AND l.expires_at_ms > CAST(unixepoch('subsec') * 1000 AS INTEGER))
                             ORDER BY id",
                    postgres: "SELECT id FROM sessions WHERE NOT (turn ->> 'working')::boolean
                               AND (turn -> 'queued_messages' IS NOT NULL
                                 OR turn -> 'queue' IS NOT NULL
                                 OR turn ->> 'last_outcome' IN ('parked', 'abandoned')
                                 OR turn -> 'last_outcome' -> 'failed' IS NOT NULL)
                               AND NOT EXISTS (SELECT 1 FROM interactions i
                                 WHERE i.session_id = sessions.id AND i.state = 'pending')
                               AND NOT EXISTS (SELECT 1 FROM session_leases l WHERE l.session_id = sessions.id
                                 AND l.expires_at > now())
                               ORDER BY id",
                }
                .on(dialect),
            )
            .fetch_all(pool)
            .await?
        }))
    }
}

fn millis(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)
}
