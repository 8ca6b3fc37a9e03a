//! The schema's migrations (`migrations/sqlite`, `migrations/postgres`), carried in the binary and
//! run at start, and the row types read back from queries (`row!`).
//!
//! Both are written here rather than by sqlx's macros (`migrate!`, `#[derive(FromRow)]`): those
//! macros compile sqlx a second time for the compiler's own use, its drivers with tokio and rustls
//! (sqlx-macros-core), which cost every fresh build 68 CPU-seconds of the tests' 558 in
//! dependencies (29 Nov, BENCHMARKS.md §7), and `make run`'s release build the same. What the
//! macros wrote is what this writes: each file's version, description and SQL, whose checksum
//! sqlx computes alike, so that a database migrated before still validates (a test holds both to
//! sqlx's own reading of the folders).

use std::borrow::Cow;

use futures::future::BoxFuture;
use sqlx::error::BoxDynError;
use sqlx::migrate::{MigrateError, Migration, MigrationSource, MigrationType, Migrator};

/// The files of one folder of `migrations/`, by name, with their SQL.
#[derive(Debug)]
pub(super) struct Migrations(&'static [(&'static str, &'static str)]);

/// The files of `migrations/$dir`, in the order they run. A file added to the folder and not here
/// fails `the_embedded_migrations_are_the_folders_files_as_sqlx_reads_them`.
macro_rules! migrations {
    ($dir:literal: $($file:literal),* $(,)?) => {
        Migrations(&[$(($file, include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/", $dir, "/", $file)))),*])
    };
}

pub(super) const SQLITE: Migrations = migrations!("sqlite":
    "0001_sessions_messages_events.sql",
    "0002_interactions.sql",
    "0003_session_workdir.sql",
    "0004_session_leases.sql",
    "0005_session_activity.sql",
    "0006_push.sql",
    "0007_interaction_deadlines.sql",
    "0008_terminal_sessions.sql",
    "0009_session_search.sql",
    "0010_message_usage.sql",
    "0011_lease_fence.sql",
    "0012_server_keys.sql",
    "0013_attachments.sql",
    "0014_sessions_working.sql",
    "0015_terminal_process.sql",
    "0016_terminal_transcript_offset.sql",
    "0017_search_reindex_on_change.sql",
    "0018_message_usage_apart.sql",
    "0019_streamed_inputs.sql",
);

pub(super) const POSTGRES: Migrations = migrations!("postgres":
    "0001_sessions_messages_events.sql",
    "0002_interactions.sql",
    "0003_session_workdir.sql",
    "0004_session_leases.sql",
    "0005_session_activity.sql",
    "0006_push.sql",
    "0007_interaction_deadlines.sql",
    "0008_terminal_sessions.sql",
    "0009_session_search.sql",
    "0010_message_usage.sql",
    "0011_lease_fence.sql",
    "0012_server_keys.sql",
    "0013_attachments.sql",
    "0014_sessions_working.sql",
    "0015_terminal_process.sql",
    "0016_terminal_transcript_offset.sql",
    "0017_message_usage_apart.sql",
);

impl Migrations {
    /// sqlx's migrator over these files (it takes an advisory lock around them on Postgres).
    pub(super) async fn migrator(self) -> Result<Migrator, MigrateError> {
        Migrator::new(self).await
    }
}

impl MigrationSource<'static> for Migrations {
    fn resolve(self) -> BoxFuture<'static, Result<Vec<Migration>, BoxDynError>> {
        Box::pin(async move { self.0.iter().map(|&(file, sql)| migration(file, sql)).collect() })
    }
}

/// One file as sqlx reads a folder: `<version>_<description>.sql`, the description's underscores
/// as spaces, and no transaction around it if it starts with `-- no-transaction`.
fn migration(file: &'static str, sql: &'static str) -> Result<Migration, BoxDynError> {
    let (version, rest) = file.split_once('_').ok_or_else(|| format!("{file}: not <version>_<description>.sql"))?;
    let version = version.parse().map_err(|_| format!("{file}: its version is not a number"))?;
    let kind = MigrationType::from_filename(rest);
    let description = rest.trim_end_matches(kind.suffix()).replace('_', " ");
    Ok(Migration::new(version, Cow::Owned(description), kind, Cow::Borrowed(sql), sql.starts_with("-- no-transaction")))
}

/// A row a query reads, field by field, by its columns' names: what `#[derive(sqlx::FromRow)]`
/// wrote, for SQLite's rows and Postgres's alike.
macro_rules! row {
    ($(#[$attr:meta])* $vis:vis struct $name:ident { $($(#[$field_attr:meta])* $field_vis:vis $field:ident: $ty:ty),* $(,)? }) => {
        $(#[$attr])*
        $vis struct $name { $($(#[$field_attr])* $field_vis $field: $ty),* }

        impl<'r, R: sqlx::Row> sqlx::FromRow<'r, R> for $name
        where
            &'r str: sqlx::ColumnIndex<R>,
            $($ty: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,)*
        {
            fn from_row(row: &'r R) -> sqlx::Result<Self> {
                Ok(Self { $($field: row.try_get(stringify!($field))?),* })
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    async fn as_sqlx_reads(folder: &str) -> Vec<(i64, String, Vec<u8>, bool)> {
        let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations").join(folder);
        let migrator = Migrator::new(folder).await.expect("sqlx reads the folder");
        summary(&migrator)
    }

    impl Migrations {
        /// The migrations that run before the file `name`.
        fn before(&self, name: &str) -> Migrations {
            let all: &'static [(&str, &str)] = self.0;
            let at = all.iter().position(|(file, _)| *file == name).expect("a migration of the folder");
            Migrations(&all[..at])
        }
    }

    fn summary(migrator: &Migrator) -> Vec<(i64, String, Vec<u8>, bool)> {
        migrator.iter().map(|m| (m.version, m.description.to_string(), m.checksum.to_vec(), m.no_tx)).collect()
    }

    /// A message's usage stored before `message_usage` was (on the message's row), read after the
    /// migrations that moved it, on both databases.
    #[tokio::test]
    async fn a_usage_stored_on_its_message_moves_to_its_own_row() {
        let insert = [
            "INSERT INTO sessions (id, title, agent, created_at_ms, updated_at_ms) VALUES ('s1', 't', 'scripted', 1, 1)",
            "INSERT INTO messages (session_id, position, id, role, blocks, streaming, created_at_ms, updated_seq, usage)
             VALUES ('s1', 1, 'a1', 'assistant', '[]', 0, 1, 5, '{\"output_tokens\":7}')",
        ];
        let folder = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}?mode=rwc", folder.path().join("old.db").display());
        let sqlite = sqlx::SqlitePool::connect(&url).await.unwrap();
        let before = SQLITE.before("0018_message_usage_apart.sql");
        before.migrator().await.unwrap().run(&sqlite).await.unwrap();
        for sql in insert {
            sqlx::query(sql).execute(&sqlite).await.unwrap();
        }
        SQLITE.migrator().await.unwrap().run(&sqlite).await.unwrap();
        let moved: String =
            sqlx::query_scalar("SELECT usage FROM message_usage WHERE session_id = 's1' AND position = 1")
                .fetch_one(&sqlite)
                .await
                .unwrap();
        assert_eq!(moved, r#"{"output_tokens":7}"#);

        let postgres =
            sqlx::PgPool::connect(&crate::testing::postgres::TestPostgres::shared().database().await).await.unwrap();
        let before = POSTGRES.before("0017_message_usage_apart.sql");
        before.migrator().await.unwrap().run(&postgres).await.unwrap();
        sqlx::query(
            "INSERT INTO sessions (id, title, agent, created_at, updated_at) VALUES ('s1', 't', 'scripted', now(), now())",
        )
        .execute(&postgres)
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO messages (session_id, position, id, role, blocks, streaming, created_at, updated_seq, usage)
             VALUES ('s1', 1, 'a1', 'assistant', '[]', false, now(), 5, '{\"output_tokens\":7}')",
        )
        .execute(&postgres)
        .await
        .unwrap();
        POSTGRES.migrator().await.unwrap().run(&postgres).await.unwrap();
        let moved: serde_json::Value =
            sqlx::query_scalar("SELECT usage FROM message_usage WHERE session_id = 's1' AND position = 1")
                .fetch_one(&postgres)
                .await
                .unwrap();
        assert_eq!(moved, serde_json::json!({"output_tokens": 7}));
    }

    #[tokio::test]
    async fn the_embedded_migrations_are_the_folders_files_as_sqlx_reads_them() {
        for (folder, embedded) in [("sqlite", SQLITE), ("postgres", POSTGRES)] {
            let embedded = summary(&embedded.migrator().await.expect("the embedded files parse"));
            assert_eq!(embedded, as_sqlx_reads(folder).await, "migrations/{folder}");
        }
    }
}
