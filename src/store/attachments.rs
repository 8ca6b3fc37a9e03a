//! Files attached to messages, stored once by the SHA-256 of their bytes (`thread::attachment`).
//! Storing a file again is a no-op: the first name it was stored under stays.

use super::{Sql, Store, StoreResult, without_nul};
use crate::thread::AttachmentRef;

impl Store {
    /// Stores the file `file` describes, unless one with its hash is stored already.
    pub async fn put_attachment(&self, file: &AttachmentRef, bytes: &[u8], at_ms: i64) -> StoreResult<()> {
        self.check_writable()?;
        on_pool!(self, |pool, dialect| {
            sqlx::query(
                Sql {
                    sqlite: "INSERT INTO attachments (hash, media_type, name, size, bytes, created_at_ms)
                             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (hash) DO NOTHING",
                    postgres: "INSERT INTO attachments (hash, media_type, name, size, bytes, created_at)
                               VALUES ($1, $2, $3, $4, $5, to_timestamp($6 / 1000.0)) ON CONFLICT (hash) DO NOTHING",
                }
                .on(dialect),
            )
            .bind(&file.hash)
            .bind(&file.media_type)
            .bind(file.name.as_deref().map(without_nul).as_deref())
            .bind(file.size as i64)
            .bind(bytes)
            .bind(at_ms)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// What is stored under `hash`, without its bytes.
    pub async fn attachment_ref(&self, hash: &str) -> StoreResult<Option<AttachmentRef>> {
        let row: Option<FileRow> = on_pool!(self, |pool, dialect| {
            sqlx::query_as("SELECT hash, media_type, name, size, NULL AS bytes FROM attachments WHERE hash = $1")
                .bind(hash)
                .fetch_optional(pool)
                .await?
        });
        Ok(row.map(|row| row.split().0))
    }

    /// The file stored under `hash`, with its bytes.
    pub async fn attachment(&self, hash: &str) -> StoreResult<Option<(AttachmentRef, Vec<u8>)>> {
        let row: Option<FileRow> = on_pool!(self, |pool, dialect| {
            sqlx::query_as("SELECT hash, media_type, name, size, bytes FROM attachments WHERE hash = $1")
                .bind(hash)
                .fetch_optional(pool)
                .await?
        });
        Ok(row.map(FileRow::split))
    }
}

row! {
    struct FileRow {
        hash: String,
        media_type: String,
        name: Option<String>,
        size: i64,
        bytes: Option<Vec<u8>>,
    }
}

impl FileRow {
    fn split(self) -> (AttachmentRef, Vec<u8>) {
        let file =
            AttachmentRef { hash: self.hash, media_type: self.media_type, name: self.name, size: self.size as u64 };
        (file, self.bytes.unwrap_or_default())
    }
}
