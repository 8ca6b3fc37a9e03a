//! Files a person attaches (issue 21): judged and stored once by their hash when uploaded, and
//! found again when a message refers to them (a turn reads their bytes: `turns.rs`).

use sha2::{Digest, Sha256};

use super::manager::SessionManager;
use crate::error::AppError;
use crate::ids::now_ms;
use crate::thread::AttachmentRef;
use crate::thread::attachment::{self, MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS_PER_MESSAGE, Refused};

impl SessionManager {
    /// Judges and stores a file the person uploads (`declared`: its `Content-Type`); storing the
    /// same bytes again changes nothing and answers the same hash.
    pub async fn store_attachment(
        &self,
        declared: &str,
        name: Option<&str>,
        bytes: &[u8],
    ) -> Result<AttachmentRef, AppError> {
        let kind = attachment::check(declared, bytes).map_err(refused)?;
        let name = name.map(str::trim).filter(|n| !n.is_empty()).map(|n| n.chars().take(255).collect());
        let file = AttachmentRef {
            hash: format!("{:x}", Sha256::digest(bytes)),
            media_type: kind.media_type().to_string(),
            name,
            size: bytes.len() as u64,
        };
        self.store().put_attachment(&file, bytes, now_ms()).await?;
        Ok(file)
    }

    /// The stored file `hash`, with its bytes.
    pub async fn attachment(&self, hash: &str) -> Result<(AttachmentRef, Vec<u8>), AppError> {
        let not_found = || AppError::AttachmentNotFound { hash: hash.to_string() };
        if !attachment::is_hash(hash) {
            return Err(not_found());
        }
        self.store().attachment(hash).await?.ok_or_else(not_found)
    }

    /// The stored files a message refers to, in its order, each once; an unknown hash is refused.
    pub(super) async fn attachments_of_message(&self, hashes: &[String]) -> Result<Vec<AttachmentRef>, AppError> {
        if hashes.len() > MAX_ATTACHMENTS_PER_MESSAGE {
            return Err(AppError::BadRequest {
                detail: format!("a message may carry at most {MAX_ATTACHMENTS_PER_MESSAGE} files"),
            });
        }
        let mut files: Vec<AttachmentRef> = Vec::new();
        for hash in hashes {
            if files.iter().any(|file| &file.hash == hash) {
                continue;
            }
            let not_found = || AppError::AttachmentNotFound { hash: hash.clone() };
            if !attachment::is_hash(hash) {
                return Err(not_found());
            }
            files.push(self.store().attachment_ref(hash).await?.ok_or_else(not_found)?);
        }
        Ok(files)
    }
}

fn refused(refusal: Refused) -> AppError {
    match refusal {
        Refused::TooLarge { .. } => AppError::TooLarge { max_kib: MAX_ATTACHMENT_BYTES / 1024 },
        other => AppError::AttachmentRefused { detail: other.to_string() },
    }
}
