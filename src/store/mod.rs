//! Durable storage: sessions, their messages and their event logs, in SQLite or Postgres through
//! sqlx. One code path serves both databases; where their SQL differs, the two statements sit
//! side by side (`Sql`). This file opens the store; the rest is by what is stored:
//! - `sessions.rs`: the sessions the list shows;
//! - `events.rs`: each session's event log, appended as a compare-and-set; `replay.rs`: its thread
//!   read back;
//! - `leases.rs`: which server runs a session's turns, where several share one Postgres;
//! - `notices.rs`: what one server tells the others (Postgres notifications);
//! - `journal.rs`: what agents stream, in a file per session beside a SQLite database;
//!   `streamed.rs`: the tool calls' arguments it keeps, which their rows then leave out;
//! - `attachments.rs`: files attached to messages, stored once by their hash;
//! - `error.rs`: what can go wrong, in words a person can act on;
//! - `schema.rs`: the migrations (`migrations/sqlite`, `migrations/postgres`), embedded in the
//!   binary and run at start, and the rows queries read back (`row!`).
//!
//! Every event is written, together with the message it changed, before anything is sent
//! to a browser.

use std::path::Path;
use std::str::FromStr;

use sqlx::SqlitePool;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::types::Json;

/// Runs `$body` with `$pool` bound to the store's pool and `$dialect` to its database: one code
/// path, compiled once for each.
macro_rules! on_pool {
    ($store:expr, |$pool:ident, $dialect:ident| $body:expr) => {
        match &$store.pool {
            crate::store::Pool::Sqlite($pool) => {
                #[allow(unused_variables)]
                let $dialect = crate::store::Dialect::Sqlite;
                $body
            }
            crate::store::Pool::Postgres($pool) => {
                #[allow(unused_variables)]
                let $dialect = crate::store::Dialect::Postgres;
                $body
            }
        }
    };
}

/// Runs `$body` with `$connection` bound to the transaction's connection and `$dialect` to its
/// database, as `on_pool!` does with the pool: the steps of one transaction, each a function.
macro_rules! in_transaction {
    ($transaction:expr, |$connection:ident, $dialect:ident| $body:expr) => {
        match $transaction {
            crate::store::Transaction::Sqlite(transaction) => {
                #[allow(unused_variables)]
                let $dialect = crate::store::Dialect::Sqlite;
                let $connection = &mut **transaction;
                $body
            }
            crate::store::Transaction::Postgres(transaction) => {
                #[allow(unused_variables)]
                let $dialect = crate::store::Dialect::Postgres;
                let $connection = &mut **transaction;
                $body
            }
        }
    };
}

// First: their `notify_in!` and `row!` serve the files after them.
#[macro_use]
mod notices;
#[macro_use]
mod schema;
mod attachments;
mod error;
mod events;
mod journal;
mod leases;
mod list;
pub mod private;
mod push;
mod replay;
mod sessions;
mod streamed;
mod terminals;
#[cfg(test)]
mod tests;

pub use error::{StoreError, StoreResult};
pub use events::{Append, Held, input_is_streamed};
pub use notices::{Listener, Notice};
pub use push::{NoticeKind, NoticeOutcome, PushSubscriptionRow};
pub use terminals::TranscriptRead;

/// The page size of a SQLite file this server creates (`open`).
const PAGE_SIZE: u32 = 1024;

/// What a SQLite file's header says of the settings `Store::rewritten_once` makes (SQLite's
/// "Database File Format", 1.3), read from the file so that a start needs no connection of its
/// own to know it has them. In WAL mode the header can lag what the log holds; a header that
/// lags only costs that start a connection. So does every start of a file over the size that
/// takes small pages and still in 4 KiB ones: one connection, two pragmas, no rewrite.
struct SqliteHeader {
    page_size: u32,
    incremental_vacuum: bool,
}

/// The header of the SQLite file at `path`, or `None` for a file too short to be a database (or
/// none).
fn sqlite_header(path: &Path) -> Option<SqliteHeader> {
    use std::io::Read;
    let mut header = [0u8; 68];
    std::fs::File::open(path).ok()?.read_exact(&mut header).ok()?;
    let word = |at: usize| u32::from_be_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]]);
    Some(SqliteHeader {
        // Bytes 16–17, big-endian; 1 for 65,536.
        page_size: match u16::from_be_bytes([header[16], header[17]]) {
            1 => 65_536,
            size => u32::from(size),
        },
        // Auto-vacuum keeps the largest root page (bytes 52–55); incremental sets bytes 64–67.
        incremental_vacuum: word(52) != 0 && word(64) != 0,
    })
}

#[derive(Clone)]
pub struct Store {
    pool: Pool,
    /// Where a server alone on its SQLite file keeps what agents stream (`journal`).
    journal: Option<std::sync::Arc<journal::Journal>>,
    /// How tests inject a storage failure.
    failing: std::sync::Arc<Failing>,
    /// Transactions of events committed since the start (`append_all`): what tests count to
    /// see which events were stored together.
    commits: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// Writes that fail on purpose, for tests.
#[derive(Default)]
struct Failing {
    /// Every write fails while set.
    now: std::sync::atomic::AtomicBool,
    /// Every write fails from the next card's (`InteractionOpened`) on.
    from_next_card: std::sync::atomic::AtomicBool,
}

#[derive(Clone)]
enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// A transaction on the store's database, whichever it is (`in_transaction!`). Dropped
/// uncommitted, it rolls back.
enum Transaction {
    Sqlite(sqlx::Transaction<'static, sqlx::Sqlite>),
    Postgres(sqlx::Transaction<'static, sqlx::Postgres>),
}

impl Transaction {
    async fn begin(pool: &Pool) -> StoreResult<Self> {
        Ok(match pool {
            Pool::Sqlite(pool) => Self::Sqlite(pool.begin().await?),
            Pool::Postgres(pool) => Self::Postgres(pool.begin().await?),
        })
    }

    async fn commit(self) -> StoreResult<()> {
        match self {
            Self::Sqlite(transaction) => transaction.commit().await?,
            Self::Postgres(transaction) => transaction.commit().await?,
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    Sqlite,
    Postgres,
}

/// One statement in each database's SQL, for where they differ. Both take `$1`-style parameters
/// in the same order. Times are milliseconds in SQLite and `timestamptz` in Postgres, converted
/// in the statement: the API speaks milliseconds on both.
struct Sql {
    sqlite: &'static str,
    postgres: &'static str,
}

impl Sql {
    fn on(&self, dialect: Dialect) -> &'static str {
        match dialect {
            Dialect::Sqlite => self.sqlite,
            Dialect::Postgres => self.postgres,
        }
    }
}

impl Store {
    /// Opens the database at `url` and brings its schema up to date: `sqlite://PATH` (or
    /// `sqlite:PATH`; `sqlite::memory:` for a private one) as `open` does, or `postgres://…` /
    /// `postgresql://…`. A database that has tables but none of AskBridge's is refused as it is.
    pub async fn connect(url: &str) -> StoreResult<Self> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Self::connect_postgres(url).await;
        }
        match url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")) {
            Some(":memory:") => Self::open_in_memory().await,
            Some(path) if !path.is_empty() => Self::open(Path::new(path)).await,
            _ => Err(StoreError::UnknownUrl(without_password(url))),
        }
    }

    async fn connect_postgres(url: &str) -> StoreResult<Self> {
        let options = PgConnectOptions::from_str(url)?;
        let pool = PgPoolOptions::new().max_connections(8).connect_with(options).await?;
        // Tables, but none of ours: someone else's database, which the migrations would change.
        let tables: Vec<String> = sqlx::query_scalar(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public'
             ORDER BY table_name",
        )
        .fetch_all(&pool)
        .await?;
        if !tables.is_empty() && !tables.iter().any(|t| t == "_sqlx_migrations") {
            return Err(StoreError::Foreign { path: without_password(url), tables: tables.join(", ") });
        }
        // Several servers starting at once: sqlx takes an advisory lock around the migrations.
        schema::POSTGRES.migrator().await?.run(&pool).await?;
        Ok(Self { pool: Pool::Postgres(pool), journal: None, failing: Default::default(), commits: Default::default() })
    }

    /// Opens (creating if needed) the SQLite database file and brings its schema up to date. A
    /// file that is not a database, or is another program's, is refused and left as it is.
    pub async fn open(path: &Path) -> StoreResult<Self> {
        Self::open_with_page_limit(path, None).await
    }

    /// As `open`, with the database limited to `pages` pages (of the file's page size): a full
    /// disk, for tests.
    #[doc(hidden)]
    pub async fn open_with_page_limit(path: &Path, pages: Option<u32>) -> StoreResult<Self> {
        Self::open_sqlite(path, pages, SqliteSynchronous::Full).await
    }

    /// As `open`, with SQLite's `synchronous=NORMAL`, which the server never uses: what FULL
    /// costs is measured against it (`examples/store_bench.rs`).
    #[doc(hidden)]
    pub async fn open_less_durable(path: &Path) -> StoreResult<Self> {
        Self::open_sqlite(path, None, SqliteSynchronous::Normal).await
    }

    async fn open_sqlite(path: &Path, pages: Option<u32>, synchronous: SqliteSynchronous) -> StoreResult<Self> {
        // Made private before SQLite opens it: SQLite gives its -wal and -shm files the database
        // file's mode, whatever the umask.
        private::database_files(path)?;
        let mut options = SqliteConnectOptions::from_str("sqlite://")?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // SQLite's `unix-excl` file system: this process holds the file's lock for as long as
            // it has it open, so the write-ahead log's index lives in this process's memory, not
            // in a `-shm` file mapped by every connection. That file's pages were dirtied again
            // by every transaction after each of the kernel's write-backs (every 30 s): pages the
            // disk took for nothing, since SQLite rebuilds the index from the log at every open.
            // The pool's connections share the lock; another process (a second server on the
            // same file, the `sqlite3` shell) is refused while the server runs.
            .vfs("unix-excl")
            // FULL: every commit reaches the disk before it is acknowledged; with NORMAL, the
            // last commits (an answer the person was told is stored) could roll back on power
            // loss. What it costs per event: BENCHMARKS.md, "Store durability".
            .synchronous(synchronous)
            .foreign_keys(true)
            .busy_timeout(std::time::Duration::from_secs(10))
            // The write-ahead log is cut back to this after a checkpoint, rather than staying at
            // its largest size for good.
            .pragma("journal_size_limit", (64 << 20).to_string())
            // Pages of 1 KiB in a new file (one made before is rewritten once,
            // `rewritten_once`): each event is a transaction that writes whole pages to
            // the log, most of them a few bytes changed in a session's row, an index or a small
            // event. Against SQLite's 4 KiB, a reply at a reading pace wrote 140–160 KiB to the
            // disk instead of 256 (12.7×, 11.1× its text, against 20.3×; 2 KiB gave 15.5×, 512 B
            // 10.5×) and one at full speed 0.7 MiB instead of 1.0 (`make bench`'s disk and
            // streaming sections, 3 Dec; BENCHMARKS.md, "Pages of 1 KiB").
            .page_size(PAGE_SIZE)
            // A checkpoint after as many bytes of log as with 4 KiB pages (SQLite counts pages).
            .pragma("wal_autocheckpoint", (4 << 20 >> PAGE_SIZE.trailing_zeros()).to_string());
        if let Some(pages) = pages {
            options = options.pragma("max_page_count", pages.to_string());
        }
        Self::rewritten_once(&options, path).await;
        let named = |error: StoreError| match error {
            StoreError::NotADatabase { .. } => StoreError::NotADatabase { path: path.display().to_string() },
            // SQLITE_BUSY at the first read: another process holds the file's lock.
            StoreError::Database(sqlx::Error::Database(database)) if database.code().as_deref() == Some("5") => {
                StoreError::InUse { path: path.display().to_string() }
            }
            other => other,
        };
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .after_release(|connection, _| Box::pin(Self::out_of_transaction(connection)))
            .connect_with(options)
            .await
            .map_err(|e| named(e.into()))?;
        // Tables, but none of ours: someone else's database, which the migrations would change.
        let tables: Vec<String> =
            sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
                .fetch_all(&pool)
                .await
                .map_err(|e| named(e.into()))?;
        if !tables.is_empty() && !tables.iter().any(|t| t == "_sqlx_migrations") {
            return Err(StoreError::Foreign { path: path.display().to_string(), tables: tables.join(", ") });
        }
        // The log's index file an older version kept (`-shm`): no process but this one can have
        // it open now that this one holds the file's lock, and SQLite no longer reads it.
        let mut index = path.as_os_str().to_owned();
        index.push("-shm");
        if let Err(error) = std::fs::remove_file(&index)
            && error.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(%error, "the write-ahead log's old index file stays beside the database");
        }
        Self::migrated_sqlite(pool, journal::Journal::beside(path)).await
    }

    /// A file made before in SQLite's 4 KiB pages, or without incremental auto-vacuum, is
    /// rewritten once at a start, on a connection of its own before the pool opens any: each
    /// event then writes a quarter of the bytes (see `open_sqlite`), and a deleted session's pages
    /// go back to the file system (`give_back_space`) rather than to a free list only this file
    /// can use again. Before the pool, because a connection that was open across the rewrite
    /// keeps reading the file's old settings until its next transaction (an idle one of the pool
    /// answered `PRAGMA auto_vacuum` with 0 after the rewrite had set it, and a store test failed
    /// so on a loaded machine). Auto-vacuum is set once in the file, not by every connection:
    /// setting it writes the file's header. A new file takes it before its first table; one made
    /// before is rewritten (`VACUUM`, which needs about the file's size free on the disk and takes
    /// about a second per 100 MB here). Its page size changes only out of WAL mode, so only for a
    /// file up to `SMALL_PAGES_UP_TO`; a larger one keeps its pages. A file that cannot be
    /// rewritten now (a full disk) is used as it is and tried again at the next start.
    async fn rewritten_once(options: &SqliteConnectOptions, path: &Path) {
        use sqlx::{ConnectOptions, Connection};
        const SMALL_PAGES_UP_TO: u64 = 64 << 20;
        // Every start after the first: the file's header says so, and no connection is needed.
        if sqlite_header(path).is_some_and(|header| header.page_size == PAGE_SIZE && header.incremental_vacuum) {
            return;
        }
        let small_pages = std::fs::metadata(path).is_ok_and(|file| file.len() <= SMALL_PAGES_UP_TO);
        // Not a database: left to the pool's checks, which say so.
        let Ok(mut connection) = options.connect().await else { return };
        let settings = async {
            let tables: Vec<String> =
                sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
                    .fetch_all(&mut connection)
                    .await?;
            // Ours, or new: someone else's database is left to the pool's checks, which refuse it.
            let ours = tables.is_empty() || tables.iter().any(|table| table == "_sqlx_migrations");
            let page_size = Self::pragma(&mut connection, "page_size").await?;
            let auto_vacuum = Self::pragma(&mut connection, "auto_vacuum").await?;
            Ok::<_, sqlx::Error>((ours, page_size, auto_vacuum))
        };
        const INCREMENTAL: i64 = 2;
        let settings = settings.await;
        let pages = matches!(settings, Ok((true, page_size, _)) if small_pages && page_size != i64::from(PAGE_SIZE));
        if pages || matches!(settings, Ok((true, _, auto_vacuum)) if auto_vacuum != INCREMENTAL) {
            let rewritten = async {
                if pages {
                    tracing::info!("rewriting the database once, in pages of {PAGE_SIZE} bytes");
                    // Leaving WAL mode copies the log into the file first.
                    sqlx::query("PRAGMA journal_mode = DELETE").execute(&mut connection).await?;
                }
                let vacuumed = async {
                    if pages {
                        sqlx::query(&format!("PRAGMA page_size = {PAGE_SIZE}")).execute(&mut connection).await?;
                    }
                    sqlx::query("PRAGMA auto_vacuum = INCREMENTAL").execute(&mut connection).await?;
                    // A new file has it now; one with tables takes it (and its pages) by a rewrite.
                    if pages || Self::pragma(&mut connection, "auto_vacuum").await? != INCREMENTAL {
                        tracing::info!("rewriting the database once, so that deleted sessions give their space back");
                        sqlx::query("VACUUM").execute(&mut connection).await?;
                    }
                    Ok::<_, sqlx::Error>(())
                }
                .await;
                // Back to WAL whatever the rewrite did (every connection of the pool asks for it too).
                if pages {
                    sqlx::query("PRAGMA journal_mode = WAL").execute(&mut connection).await?;
                }
                vacuumed
            };
            if let Err(error) = rewritten.await {
                tracing::warn!(%error, "the database could not be rewritten now: it keeps its pages, and deleted sessions their space");
            }
        }
        _ = connection.close().await;
    }

    /// A pragma's value as the file has it now: never from a statement prepared before (SQLite
    /// computes a setting's value when the statement is prepared).
    async fn pragma(connection: &mut sqlx::SqliteConnection, name: &str) -> Result<i64, sqlx::Error> {
        sqlx::query_scalar(&format!("PRAGMA {name}")).persistent(false).fetch_one(connection).await
    }

    /// After a delete: the pages it freed go back to the file system. SQLite only, best effort (a
    /// failure leaves them free inside the file, used again by later writes). Postgres reuses a
    /// deleted row's space after its own autovacuum.
    pub(crate) async fn give_back_space(&self) {
        let Pool::Sqlite(pool) = &self.pool else { return };
        let freed = async {
            sqlx::query("PRAGMA incremental_vacuum").execute(pool).await?;
            // The file shrinks when the write-ahead log is copied into it; PASSIVE never waits
            // for a reader (a tab's stream), and the next automatic checkpoint finishes the rest.
            sqlx::query("PRAGMA wal_checkpoint(PASSIVE)").execute(pool).await
        };
        if let Err(error) = freed.await {
            tracing::warn!(%error, "a deleted session's space stays inside the database file for now");
        }
    }

    /// A private SQLite database that lives as long as the store: for tests.
    pub async fn open_in_memory() -> StoreResult<Self> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:")?.foreign_keys(true);
        // One connection: each in-memory connection would otherwise be its own database.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await?;
        Self::migrated_sqlite(pool, journal::Journal::in_memory()).await
    }

    /// Whether a SQLite connection going back to the pool holds nothing: no transaction open, in
    /// SQLite's view or in sqlx's. When a write fails (a full disk, an I/O error), SQLite may roll
    /// the transaction back by itself; sqlx's ROLLBACK then fails and sqlx still counts a
    /// transaction, so the connection's next `begin` is a SAVEPOINT, whose failure rolls back to
    /// it and leaves a transaction open holding the write lock: every other writer then waits
    /// out the busy timeout and fails "database is locked", until a restart. A connection found
    /// so is closed instead of kept (SQLite rolls back and frees its locks on close), and the pool
    /// opens a fresh one when it needs it.
    async fn out_of_transaction(connection: &mut sqlx::SqliteConnection) -> Result<bool, sqlx::Error> {
        use sqlx::Connection;
        // After the rollback a dropped transaction queued on the connection.
        connection.ping().await?;
        if connection.is_in_transaction() {
            tracing::warn!("a store connection was left inside a transaction after a failed write: closed");
            return Ok(false);
        }
        let mut handle = connection.lock_handle().await?;
        // SAFETY: the handle is this connection's open `sqlite3`, locked for our use while `handle`
        // lives; sqlite3_get_autocommit only reads its state. Hand-written because sqlx has no
        // safe way to ask SQLite itself, and its own count is what goes wrong here.
        let autocommit = unsafe { libsqlite3_sys::sqlite3_get_autocommit(handle.as_raw_handle().as_ptr()) };
        if autocommit == 0 {
            tracing::warn!("a store connection was left inside a transaction SQLite kept open: closed");
        }
        Ok(autocommit != 0)
    }

    async fn migrated_sqlite(pool: SqlitePool, journal: journal::Journal) -> StoreResult<Self> {
        schema::SQLITE.migrator().await?.run(&pool).await?;
        Ok(Self {
            pool: Pool::Sqlite(pool),
            journal: Some(std::sync::Arc::new(journal)),
            failing: Default::default(),
            commits: Default::default(),
        })
    }

    /// Closes the store's connections, once each has finished what it was given.
    pub async fn close(&self) {
        match &self.pool {
            Pool::Sqlite(pool) => pool.close().await,
            Pool::Postgres(pool) => pool.close().await,
        }
    }

    /// Whether other servers may share this database (Postgres): then leases and notifications
    /// matter. SQLite has one server, which holds every session.
    pub fn is_shared(&self) -> bool {
        matches!(self.pool, Pool::Postgres(_))
    }

    /// How many transactions of events were committed since the start.
    #[doc(hidden)]
    pub fn commits(&self) -> u64 {
        self.commits.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Makes every write fail (as a failing disk would) until called with `false`: for tests.
    #[doc(hidden)]
    pub fn fail_writes(&self, failing: bool) {
        self.failing.now.store(failing, std::sync::atomic::Ordering::SeqCst);
        self.failing.from_next_card.store(false, std::sync::atomic::Ordering::SeqCst);
    }

    /// Makes every write fail from the next card on (the write that opens it included), as a
    /// disk that fails just as the agent asks something, until `fail_writes(false)`: for tests.
    #[doc(hidden)]
    pub fn fail_writes_from_next_card(&self) {
        self.failing.from_next_card.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn check_writable(&self) -> StoreResult<()> {
        if self.failing.now.load(std::sync::atomic::Ordering::SeqCst) { Err(StoreError::ReadOnly) } else { Ok(()) }
    }

    /// `check_writable`, for an event's append.
    fn check_appendable(&self, body: &crate::thread::EventBody) -> StoreResult<()> {
        use std::sync::atomic::Ordering::SeqCst;
        if matches!(body, crate::thread::EventBody::InteractionOpened { .. })
            && self.failing.from_next_card.swap(false, SeqCst)
        {
            self.failing.now.store(true, SeqCst);
        }
        self.check_writable()
    }
}

/// A database URL fit for logs and messages: its password, if it has one, shown as `…`
/// (`postgres://team:…@db/askbridge`).
pub fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((user_info, host)) if user_info.contains(':') => {
            let user = user_info.split_once(':').map_or(user_info, |(user, _password)| user);
            format!("{scheme}://{user}:…@{host}{path}")
        }
        _ => url.to_string(),
    }
}

/// JSON as the store keeps it, the same on both databases. Postgres refuses the NUL character
/// (U+0000) in `jsonb` and `text`, and an agent's output may hold one (a binary file read by a
/// tool): it is kept as U+FFFD, the replacement character, as an editor shows it. The check is a
/// search of the serialized text, which is written once either way.
pub(super) fn storable<T: serde::Serialize>(value: &T) -> StoreResult<Json<Box<serde_json::value::RawValue>>> {
    let mut text = serde_json::to_string(value)?;
    if text.contains("\\u0000") {
        let mut cleaned: serde_json::Value = serde_json::from_str(&text)?;
        replace_nul(&mut cleaned);
        text = serde_json::to_string(&cleaned)?;
    }
    Ok(Json(serde_json::value::RawValue::from_string(text)?))
}

fn replace_nul(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(text) if text.contains('\0') => *text = text.replace('\0', "\u{fffd}"),
        Value::Array(items) => items.iter_mut().for_each(replace_nul),
        Value::Object(fields) => {
            // Keys too: tool arguments are the model's JSON.
            let taken = std::mem::take(fields);
            for (key, mut item) in taken {
                replace_nul(&mut item);
                fields.insert(without_nul(&key).into_owned(), item);
            }
        }
        _ => {}
    }
}

/// Text for a `text` column, without NUL characters (see `storable`).
pub(super) fn without_nul(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\0') { text.replace('\0', "\u{fffd}").into() } else { text.into() }
}
