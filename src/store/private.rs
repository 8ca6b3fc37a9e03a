//! The data folder and every file in it are the person's only: conversations, attachments and
//! keys are not for other local users to read. Folders 0700, files 0600, whatever the umask, for
//! files made later too (SQLite's journal files take the database file's mode).

use std::fs::{DirBuilder, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// A folder (and its parents) made private; an existing one made private again.
pub fn create_dir(path: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(0o700).create(path)?;
    tighten(path, 0o700)
}

/// Options that make a new file private.
pub fn options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.mode(0o600);
    options
}

/// The SQLite database at `path`: made (empty) if missing, and it and its `-wal`, `-shm` and
/// `-journal` files made private if they exist.
pub fn database_files(path: &Path) -> io::Result<()> {
    if let Some(folder) = path.parent().filter(|f| !f.as_os_str().is_empty()) {
        create_dir(folder)?;
    }
    options().create(true).append(true).open(path)?;
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut file = path.as_os_str().to_owned();
        file.push(suffix);
        match tighten(Path::new(&file), 0o600) {
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            other => other?,
        }
    }
    Ok(())
}

/// `path` no more open than `mode` (a copy, an older version or an umask may have opened it).
fn tighten(path: &Path, mode: u32) -> io::Result<()> {
    let permissions = std::fs::metadata(path)?.permissions();
    if permissions.mode() & 0o777 & !mode != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    /// The usual umask, which leaves new files readable by everyone: set here so that the tests
    /// mean it (it is the process's, and every test here wants the same).
    fn open_umask() {
        // SAFETY: umask only swaps the process's file-creation mask; it cannot fail.
        unsafe { libc::umask(0o022) };
    }

    #[tokio::test]
    async fn the_database_and_the_files_sqlite_makes_beside_it_are_private_under_umask_022() {
        open_umask();
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        create_dir(&data).unwrap();
        let store = crate::store::Store::open(&data.join("askbridge.db")).await.unwrap();
        assert!(data.join("askbridge.db-wal").exists(), "WAL mode, and the migrations wrote");
        for name in ["askbridge.db", "askbridge.db-wal"] {
            assert_eq!(mode(&data.join(name)), 0o600, "{name}");
        }
        assert!(!data.join("askbridge.db-shm").exists(), "the log's index is in memory (`unix-excl`)");
        assert_eq!(mode(&data), 0o700);
        store.close().await;
    }

    #[test]
    fn a_folder_and_database_an_older_version_left_open_are_made_private_again() {
        open_umask();
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
        let database = data.join("askbridge.db");
        for name in ["askbridge.db", "askbridge.db-wal"] {
            std::fs::write(data.join(name), "").unwrap();
            std::fs::set_permissions(data.join(name), std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        create_dir(&data).unwrap();
        database_files(&database).unwrap();
        assert_eq!(mode(&data), 0o700);
        assert_eq!(mode(&database), 0o600);
        assert_eq!(mode(&data.join("askbridge.db-wal")), 0o600);
    }

    #[test]
    fn files_made_later_are_private_too() {
        open_umask();
        let dir = tempfile::tempdir().unwrap();
        let streams = dir.path().join("askbridge.db-streams");
        create_dir(&streams).unwrap();
        let file = streams.join("session");
        options().create(true).append(true).open(&file).unwrap();
        assert_eq!((mode(&streams), mode(&file)), (0o700, 0o600));
    }
}
