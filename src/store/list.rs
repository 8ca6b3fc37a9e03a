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

    /// Sessions whose title or folder holds `query`, or whose messages hold all its words (each as
    /// a word's start), in the list's order, at most `limit`; each says why, unless by its title.
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
                "SELECT * FROM ({}) AS s
                  WHERE s.title {like} $1 ESCAPE '\\' OR s.workdir {like} $1 ESCAPE '\\' OR {by_text}{ORDER} LIMIT $3",
                SUMMARY.on(dialect)
            ))
            .bind(&title)
            .bind(&text)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?
        });
        let lowered = query.trim().to_lowercase();
        let mut found = Vec::new();
        for mut summary in rows.into_iter().map(SessionSummary::from) {
            if !summary.title.to_lowercase().contains(&lowered) {
                // Why it was found: its folder's name, else the words of a message. A folder
                // matched higher up its path (`/home/me` for "me") is no reason.
                let name = summary.workdir.as_deref().and_then(|f| f.rsplit('/').find(|part| !part.is_empty()));
                summary.matched = match (name, &summary.workdir) {
                    (Some(name), Some(folder)) if name.to_lowercase().contains(&lowered) => {
                        Some(format!("in {folder}"))
                    }
                    _ if words.is_empty() => continue,
                    _ => match self.matched_message(&summary.id, &words).await? {
                        Some(message) => snippet(&message, &words),
                        None => continue,
                    },
                };
            }
            found.push(summary);
        }
        Ok(found)
    }

    /// The blocks (JSON) of session `id`'s newest message that holds all `words`, as the search
    /// found it.
    async fn matched_message(&self, id: &str, words: &[String]) -> StoreResult<Option<String>> {
        let blocks: Option<String> = on_pool!(self, |pool, dialect| {
            let (sql, text) = match dialect {
                super::Dialect::Sqlite => (
                    "SELECT m.blocks FROM messages AS m JOIN sessions AS s ON s.id = m.session_id
                      WHERE m.session_id = $1
                        AND s.rowid * 1048576 + m.position IN (
                            SELECT rowid FROM message_search WHERE message_search MATCH $2
                               AND rowid BETWEEN s.rowid * 1048576 AND s.rowid * 1048576 + 1048575)
                      ORDER BY m.position DESC LIMIT 1",
                    words.iter().map(|w| format!("\"{w}\"*")).collect::<Vec<_>>().join(" "),
                ),
                super::Dialect::Postgres => (
                    "SELECT m.blocks::text FROM messages AS m
                      WHERE m.session_id = $1
                        AND to_tsvector('simple', askbridge_message_text(m.blocks)) @@ to_tsquery('simple', $2)
                      ORDER BY m.position DESC LIMIT 1",
                    words.iter().map(|w| format!("{w}:*")).collect::<Vec<_>>().join(" & "),
                ),
            };
            sqlx::query_scalar(sql).bind(id).bind(&text).fetch_optional(pool).await?
        });
        Ok(blocks)
    }
}

/// How much of a message a search result shows around the first word found, in characters.
const SNIPPET_BEFORE: usize = 30;
const SNIPPET_LENGTH: usize = 110;

/// The words of `blocks` (a message's, JSON) around the first of `words` found at a word's start,
/// as the indexes read it (the same fields), on one line, cut with "…".
fn snippet(blocks: &str, words: &[String]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(blocks).ok()?;
    let mut texts = Vec::new();
    collect_text(&value, &mut texts);
    let text: Vec<char> = texts.join(" ").split_whitespace().collect::<Vec<_>>().join(" ").chars().collect();
    let lowered: Vec<char> = text.iter().map(|c| c.to_lowercase().next().unwrap_or(*c)).collect();
    let found = (0..lowered.len()).find(|&at| {
        (at == 0 || !lowered[at - 1].is_alphanumeric())
            && words.iter().any(|word| lowered[at..].iter().take(word.chars().count()).copied().eq(word.chars()))
    })?;
    let mut start = found.saturating_sub(SNIPPET_BEFORE);
    // From a word's start, unless that word is the found one's.
    while start > 0 && start < found && text[start - 1] != ' ' {
        start += 1;
    }
    let end = (start + SNIPPET_LENGTH).min(text.len());
    let mut shown: String = text[start..end].iter().collect();
    if start > 0 {
        shown.insert(0, '…');
    }
    if end < text.len() {
        shown.push('…');
    }
    Some(shown)
}

/// The strings of the fields the search indexes (`migrations/*/0009_session_search.sql`).
fn collect_text(value: &serde_json::Value, into: &mut Vec<String>) {
    const FIELDS: [&str; 9] =
        ["text", "result", "command", "description", "question", "label", "other", "notes", "plan"];
    match value {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                match value {
                    // A label is often its description's first words, or a call's description: once.
                    serde_json::Value::String(text) if FIELDS.contains(&key.as_str()) => {
                        if !into.contains(text) {
                            into.push(text.clone());
                        }
                    }
                    _ => collect_text(value, into),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|item| collect_text(item, into)),
        _ => {}
    }
}

/// The words of a search, as the indexes cut text: letters and digits, lower-cased, at most eight
/// (so that no query can be made of the indexes' own syntax).
fn search_words(query: &str) -> Vec<String> {
    query.split(|c: char| !c.is_alphanumeric()).filter(|word| !word.is_empty()).take(8).map(str::to_lowercase).collect()
}

#[cfg(test)]
mod tests {
    use super::{search_words, snippet};

    #[test]
    fn a_search_is_words_and_nothing_of_the_index_syntax() {
        assert_eq!(search_words("  JWT auth-flow "), ["jwt", "auth", "flow"]);
        assert_eq!(search_words("\"x\" OR * NEAR(a b) :* & |"), ["x", "or", "near", "a", "b"]);
        assert!(search_words("*** ''").is_empty());
        assert_eq!(search_words(&"w ".repeat(20)).len(), 8);
    }

    #[test]
    fn a_search_result_shows_the_words_around_the_match_from_a_words_start() {
        let words = |q: &str| search_words(q);
        let blocks = serde_json::json!([{"text": {"text": "We could use   JWT tokens.\nOr sessions."}},
            {"tool_call": {"id": "t", "name": "Bash", "input": {"path": "ignored: not a field of the index"}}}])
        .to_string();
        assert_eq!(snippet(&blocks, &words("sess")).as_deref(), Some("We could use JWT tokens. Or sessions."));
        assert_eq!(snippet(&blocks, &words("okens")), None, "only at a word's start");
        let long = format!("{} needle {}", "hay ".repeat(40), "straw ".repeat(40));
        let shown = snippet(&serde_json::json!([{"text": {"text": long}}]).to_string(), &words("Needle")).unwrap();
        assert!(shown.starts_with("…hay ") && shown.contains("needle") && shown.ends_with('…'), "{shown}");
        assert!(shown.chars().count() <= 112, "{shown}");
    }
}
