//! A file of a session's folder, read for the Files view, and the one check every path from the
//! browser goes through: it must name a file inside the folder, after every link. `..`, an
//! absolute path, and a link that leads out are refused, with why.

use std::path::{Component, Path, PathBuf};

use super::error::FolderError;
use crate::changes::FileText;

/// The largest file shown: past it, the view says so.
const LARGEST_SHOWN: u64 = 1024 * 1024;

/// `relative` (with `/` between its parts) inside `folder`, as it is on the disk with its links
/// followed; refused when it would leave the folder.
pub fn inside(folder: &Path, relative: &str) -> Result<PathBuf, FolderError> {
    let outside = || FolderError::Outside { path: relative.to_string() };
    let path = Path::new(relative);
    if relative.is_empty() || path.components().any(|part| !matches!(part, Component::Normal(_))) {
        return Err(outside());
    }
    let root = folder.canonicalize().map_err(FolderError::io("open the session's folder"))?;
    let real = match root.join(path).canonicalize() {
        Ok(real) => real,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(FolderError::NotFound { path: relative.to_string() });
        }
        Err(error) => return Err(FolderError::io("open the file")(error)),
    };
    if !real.starts_with(&root) {
        return Err(outside());
    }
    Ok(real)
}

/// The text of the file at `relative` in `folder`, line by line; a binary or very large file
/// says so instead.
pub fn read_text(folder: &Path, relative: &str) -> Result<FileText, FolderError> {
    let real = inside(folder, relative)?;
    let meta = std::fs::metadata(&real).map_err(FolderError::io("open the file"))?;
    let mut shown = FileText { path: relative.to_string(), lines: Vec::new(), note: None };
    if !meta.is_file() {
        return Err(FolderError::NotAFile { path: relative.to_string() });
    }
    if meta.len() > LARGEST_SHOWN {
        shown.note = Some(format!("too large to show ({} KiB)", meta.len() / 1024));
        return Ok(shown);
    }
    let bytes = std::fs::read(&real).map_err(FolderError::io("read the file"))?;
    if bytes.iter().take(8000).any(|&b| b == 0) {
        shown.note = Some("a binary file".into());
        return Ok(shown);
    }
    shown.lines = String::from_utf8_lossy(&bytes).lines().map(str::to_string).collect();
    Ok(shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_inside_is_read_line_by_line() {
        let folder = tempfile::tempdir().unwrap();
        std::fs::create_dir(folder.path().join("src")).unwrap();
        std::fs::write(folder.path().join("src/a.rs"), "fn a() {}\n\nfn b() {}\n").unwrap();
        let read = read_text(folder.path(), "src/a.rs").unwrap();
        assert_eq!(read.lines, ["fn a() {}", "", "fn b() {}"]);
        assert_eq!(read.note, None);
    }

    #[test]
    fn paths_that_leave_the_folder_are_refused() {
        let (folder, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), folder.path().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path(), folder.path().join("away")).unwrap();
        let secret = outside.path().join("secret").display().to_string();
        for path in ["../secret", "/etc/passwd", "link", "away/secret", "a/../../secret", secret.as_str(), ""] {
            assert!(matches!(read_text(folder.path(), path), Err(FolderError::Outside { .. })), "{path:?} is refused");
        }
        assert!(matches!(read_text(folder.path(), "missing.txt"), Err(FolderError::NotFound { .. })));
    }

    #[test]
    fn a_link_inside_the_folder_is_followed() {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join("real.txt"), "here\n").unwrap();
        std::os::unix::fs::symlink(folder.path().join("real.txt"), folder.path().join("alias.txt")).unwrap();
        assert_eq!(read_text(folder.path(), "alias.txt").unwrap().lines, ["here"]);
    }

    #[test]
    fn a_binary_or_large_file_says_so() {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join("image.png"), b"\x89PNG\0\0\0").unwrap();
        assert_eq!(read_text(folder.path(), "image.png").unwrap().note.as_deref(), Some("a binary file"));
        let big = std::fs::File::create(folder.path().join("big.log")).unwrap();
        big.set_len(LARGEST_SHOWN + 1).unwrap();
        assert!(read_text(folder.path(), "big.log").unwrap().note.unwrap().starts_with("too large"));
    }
}
