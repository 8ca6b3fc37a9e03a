//! The session list a page at a time, what the tabs follow live, and search: the list can hold
//! thousands of sessions, and no page reads them all.

use super::sessions::{SUMMARY, SummaryRow};
use super::{Sql, Store, StoreResult};
use crate::thread::{SessionCursor, SessionSummary};

/// The list's order: the person's activity, newest first (ties by creation, then id).
const ORDER: &str = " ORDER BY s.active_at_ms DESC, s.created_at_ms DESC, s.id DESC";

impl Store {
    /// The `limit` sessions after `after` in the list's order (from its top without it).
    pub async fn list_sessions_page(
        &self,
        after: Option<&SessionCursor>,
        limit: u32,
    ) -> StoreResult<Vec<SessionSummary>> {
        let rows: Vec<SummaryRow> = on_pool!(self, |pool, dialect| {
            let base = format!("SELECT * FROM ({}) AS s", SUMMARY.on(dialect));
            match after {
                None => {
                    sqlx::query_as(&format!("{base}{ORDER} LIMIT $1")).bind(i64::from(limit)).fetch_all(pool).await?
                }
                Some(after) => {
                    sqlx::query_as(&format!(
                        "{base} WHERE (s.active_at_ms, s.created_at_ms, s.id) < ($1, $2, $3){ORDER} LIMIT $4"
                    ))
                    .bind(after.active_at_ms)
                    .bind(after.created_at_ms)
                    .bind(&after.id)
                    .bind(i64::from(limit))
                    .fetch_all(pool)
                    .await?
                }
            }
        });
        Ok(rows.into_iter().map(SessionSummary::from).collect())
    }

    /// What every tab's list follows live: the first `first` sessions, and any other that works
    /// or waits for the person (the title's `●` and the bell hear of those too), in the list's
    /// order.
    pub async fn list_for_tabs(&self, first: u32) -> StoreResult<Vec<SessionSummary>> {
        let rows: Vec<SummaryRow> = on_pool!(self, |pool, dialect| {
            sqlx::query_as(&format!(
                // Three short lists of ids, each read through its index (the first page by
                // activity, the pending interactions, the working sessions), rather than every
                // session's summary computed to be filtered: 10 ms → 1 ms with 10,000 sessions.
                "SELECT * FROM ({}) AS s WHERE s.id IN (
                   SELECT id FROM ({}) AS first_page
                   UNION SELECT session_id FROM interactions WHERE state = 'pending'
                   UNION SELECT id FROM sessions WHERE {}){ORDER}",
                SUMMARY.on(dialect),
                Sql {
                    sqlite: "SELECT id FROM sessions ORDER BY active_at_ms DESC, created_at_ms DESC, id DESC LIMIT $1",
                    postgres: "SELECT id FROM sessions ORDER BY active_at DESC, created_at DESC, id DESC LIMIT $1",
                }
                .on(dialect),
                // As the partial indexes of migration 0014 say it, word for word.
                Sql { sqlite: "json_extract(turn, '$.working') = 1", postgres: "(turn ->> 'working') = 'true'" }
                    .on(dialect),
            ))
            .bind(i64::from(first))
            .fetch_all(pool)
            .await?
        });
        Ok(rows.into_iter().map(SessionSummary::from).collect())
    }

    /// Sessions whose title holds `query`, or whose messages hold all its words (each as a
    /// word's start), in the list's order, at most `limit`.
    pub async fn search_sessions(&self, query: &str, limit: u32) -> StoreResult<Vec<SessionSummary>> {
        let words = search_words(query);
        let title = format!("%{}%", query.trim().replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"));
        let rows: Vec<SummaryRow> = on_pool!(self, |pool, dialect| {
            let (matching, text) = match dialect {
                super::Dialect::Sqlite => (
                    "SELECT ss.id FROM message_search JOIN sessions AS ss ON ss.rowid = message_search.rowid / 1048576
                      WHERE message_search MATCH $2",
                    words.iter().map(|w| format!("\"{w}\"*")).collect::<Vec<_>>().join(" "),
                ),
                super::Dialect::Postgres => (
                    "SELECT m.session_id FROM messages AS m
                      WHERE to_tsvector('simple', askbridge_message_text(m.blocks)) @@ to_tsquery('simple', $2)",
                    words.iter().map(|w| format!("{w}:*")).collect::<Vec<_>>().join(" & "),
                ),
            };
            let like = Sql { sqlite: "LIKE", postgres: "ILIKE" }.on(dialect);
            let by_text = if words.is_empty() { "FALSE".to_string() } else { format!("s.id IN ({matching})") };
            sqlx::query_as(&format!(
                "SELECT * FROM ({}) AS s WHERE s.title {like} $1 ESCAPE '\\' OR {by_text}{ORDER} LIMIT $3",
                SUMMARY.on(dialect)
            ))
            .bind(&title)
            .bind(&text)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?
        });
        Ok(rows.into_iter().map(SessionSummary::from).collect())
    }
}

/// The words of a search, as the indexes cut text: letters and digits, lower-cased, at most eight
/// (so that no query can be made of the indexes' own syntax).
fn search_words(query: &str) -> Vec<String> {
    query.split(|c: char| !c.is_alphanumeric()).filter(|word| !word.is_empty()).take(8).map(str::to_lowercase).collect()
}

#[cfg(test)]
mod tests {
    use super::search_words;

    #[test]
    fn a_search_is_words_and_nothing_of_the_index_syntax() {
        assert_eq!(search_words("  JWT auth-flow "), ["jwt", "auth", "flow"]);
        assert_eq!(search_words("\"x\" OR * NEAR(a b) :* & |"), ["x", "or", "near", "a", "b"]);
        assert!(search_words("*** ''").is_empty());
        assert_eq!(search_words(&"w ".repeat(20)).len(), 8);
    }
}
