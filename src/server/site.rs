//! Where `serve` finds the built site (the WASM bundle, its scripts and styles, `public/`), so
//! that `target/release/askbridge`, copied alone anywhere, serves pages that hydrate.
//!
//! `make release` appends the site to the binary ([`bundle`]): a tar archive of `target/site` (its
//! `hash.txt` included), then a trailer (the archive's SHA-256, its length, a magic). At
//! start, such a binary unpacks it once into `<data-dir>/site/<hash>/` and serves from there.
//! Unpacked, not served from memory: Leptos reads the split manifest and the hash file from the
//! disk, and the files cost no memory while they wait in the page cache. Appended, not embedded
//! at compile time (`include_bytes!`, rust-embed): the server compiles before the site it would
//! embed is finished, and a second compile would double the release build's slowest step.
//!
//! In order: `--site-root` (or `LEPTOS_SITE_ROOT`), as given; the site bundled in the binary; the
//! `site` folder that `scripts/build-site.mjs` writes beside the binary's folder (`target/site` for
//! `target/release/askbridge` and `target/debug/askbridge`), found from the binary's own path, not
//! the current folder.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tracing::{info, warn};

/// Ends a binary that carries its site.
const MAGIC: &[u8; 16] = b"askbridge-site-1";
/// The archive's SHA-256, its length (u64, little-endian), the magic.
const TRAILER: usize = 32 + 8 + MAGIC.len();
/// The hashes in the bundle's file names, in the site's own folder (`scripts/build-site.mjs`).
const HASH_FILE: &str = "hash.txt";

/// The site a server serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// The folder with `pkg/` and the public files.
    pub root: PathBuf,
    /// The site's `hash.txt`, when the bundle's names are hashed.
    pub hash_file: Option<PathBuf>,
}

/// The site to serve: `explicit` if given, else the binary's own, unpacked into `data_dir`, else
/// the folder beside the binary's.
pub fn find(explicit: Option<&Path>, data_dir: &Path) -> Site {
    let exe = std::env::current_exe().ok();
    if let Some(root) = explicit {
        return Site::at(root.to_path_buf());
    }
    if let Some(exe) = &exe {
        // Absolute: Leptos reads the hash file at the binary's folder joined with its path.
        let sites = std::path::absolute(data_dir.join("site")).unwrap_or_else(|_| data_dir.join("site"));
        match unpack_own(exe, &sites) {
            Ok(Some(root)) => return Site::at(root),
            Ok(None) => {}
            Err(error) => warn!(%error, "could not unpack the site this binary carries"),
        }
    }
    let beside = exe.as_deref().and_then(Path::parent).and_then(Path::parent).map(|target| target.join("site"));
    Site::at(beside.unwrap_or_else(|| PathBuf::from("target/site")))
}

impl Site {
    /// The site in `root`, with the hash file it carries, if any.
    fn at(root: PathBuf) -> Site {
        // Absolute: Leptos reads the hash file at the binary's folder joined with its path.
        let hash_file = Some(root.join(HASH_FILE))
            .filter(|file| file.is_file())
            .map(|file| std::path::absolute(&file).unwrap_or(file));
        Site { root, hash_file }
    }
}

/// Appends `site` (a folder, its hash file included) to the binary `exe`, in place of any site it
/// carried.
/// Written to a new file that then takes the binary's name: a running binary cannot be written to.
pub fn bundle(exe: &Path, site: &Path) -> io::Result<()> {
    let mut archive = tar::Builder::new(Vec::new());
    archive.follow_symlinks(true);
    archive.mode(tar::HeaderMode::Deterministic);
    archive.append_dir_all(".", site)?;
    let archive = archive.into_inner()?;

    let mut binary = File::open(exe)?;
    let length = match carried(&mut binary)? {
        Some(carried) => carried.start,
        None => binary.metadata()?.len(),
    };
    let temporary = exe.with_extension("bundling");
    let mut out = File::create(&temporary)?;
    binary.seek(SeekFrom::Start(0))?;
    io::copy(&mut (&mut binary).take(length), &mut out)?;
    out.write_all(&archive)?;
    out.write_all(&Sha256::digest(&archive))?;
    out.write_all(&(archive.len() as u64).to_le_bytes())?;
    out.write_all(MAGIC)?;
    out.set_permissions(binary.metadata()?.permissions())?;
    out.sync_all()?;
    std::fs::rename(&temporary, exe)
}

/// Where a binary's site archive is, and its hash.
struct Carried {
    start: u64,
    length: u64,
    hash: String,
}

fn carried(binary: &mut File) -> io::Result<Option<Carried>> {
    let size = binary.metadata()?.len();
    if size < TRAILER as u64 {
        return Ok(None);
    }
    let mut trailer = [0u8; TRAILER];
    binary.seek(SeekFrom::Start(size - TRAILER as u64))?;
    binary.read_exact(&mut trailer)?;
    if &trailer[40..] != MAGIC {
        return Ok(None);
    }
    let length = u64::from_le_bytes(trailer[32..40].try_into().expect("eight bytes"));
    let start = (size - TRAILER as u64)
        .checked_sub(length)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "the site's length runs past the binary's start"))?;
    let hash = trailer[..32].iter().map(|byte| format!("{byte:02x}")).collect();
    Ok(Some(Carried { start, length, hash }))
}

/// Unpacks the site `exe` carries into `sites/<hash>` (once: a folder already there is used as it
/// is), and removes other versions' folders. `None` for a binary without a site.
fn unpack_own(exe: &Path, sites: &Path) -> io::Result<Option<PathBuf>> {
    let mut binary = File::open(exe)?;
    let Some(carried) = carried(&mut binary)? else { return Ok(None) };
    let root = sites.join(&carried.hash);
    if !root.is_dir() {
        std::fs::create_dir_all(sites)?;
        binary.seek(SeekFrom::Start(carried.start))?;
        let mut archive = Vec::with_capacity(carried.length as usize);
        (&mut binary).take(carried.length).read_to_end(&mut archive)?;
        if format!("{:x}", Sha256::digest(&archive)) != carried.hash {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "the site in the binary is damaged"));
        }
        // Unpacked beside, then renamed: a server killed half-way leaves no half site.
        let unpacking = sites.join(format!(".{}-{}", carried.hash, std::process::id()));
        tar::Archive::new(archive.as_slice()).unpack(&unpacking)?;
        match std::fs::rename(&unpacking, &root) {
            Ok(()) => info!(site = %root.display(), "unpacked the site this binary carries"),
            // Another server on the same data folder did it first.
            Err(_) if root.is_dir() => std::fs::remove_dir_all(&unpacking)?,
            Err(error) => return Err(error),
        }
    }
    for entry in std::fs::read_dir(sites)?.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name != carried.hash && !name.starts_with('.') {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    Ok(Some(root))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(dir: &Path, wasm: &str) -> PathBuf {
        let site = dir.join("site");
        std::fs::create_dir_all(site.join("pkg")).unwrap();
        std::fs::write(site.join("pkg/askbridge.abc.wasm"), wasm).unwrap();
        std::fs::write(site.join("favicon.svg"), "<svg/>").unwrap();
        std::fs::write(site.join(HASH_FILE), format!("wasm: abc\n{wasm}\n")).unwrap();
        site
    }

    #[test]
    fn a_bundled_binary_unpacks_its_site_once_and_bundling_again_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("askbridge");
        std::fs::write(&exe, b"\x7fELF the program itself").unwrap();
        let sites = dir.path().join("data/site");
        assert_eq!(unpack_own(&exe, &sites).unwrap(), None, "a binary without a site");

        bundle(&exe, &site(dir.path(), "first")).unwrap();
        let first = unpack_own(&exe, &sites).unwrap().unwrap();
        assert_eq!(std::fs::read_to_string(first.join("pkg/askbridge.abc.wasm")).unwrap(), "first");
        assert_eq!(std::fs::read_to_string(first.join("favicon.svg")).unwrap(), "<svg/>");
        assert_eq!(std::fs::read_to_string(first.join(HASH_FILE)).unwrap(), "wasm: abc\nfirst\n");

        // Built again: the old site is replaced, not appended to, and its folder goes.
        bundle(&exe, &site(dir.path(), "second")).unwrap();
        let second = unpack_own(&exe, &sites).unwrap().unwrap();
        assert_ne!(first, second);
        assert_eq!(std::fs::read_to_string(second.join("pkg/askbridge.abc.wasm")).unwrap(), "second");
        assert!(!first.exists(), "the previous version's folder is removed");
        let binary = std::fs::read(&exe).unwrap();
        assert!(binary.starts_with(b"\x7fELF the program itself"));
        assert_eq!(binary.windows(5).filter(|w| w == b"first").count(), 0, "one site only");
    }

    #[test]
    fn a_damaged_site_is_refused_and_nothing_is_unpacked() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("askbridge");
        std::fs::write(&exe, b"program").unwrap();
        bundle(&exe, &site(dir.path(), "the wasm")).unwrap();
        let mut binary = std::fs::read(&exe).unwrap();
        let at = binary.windows(8).position(|w| w == b"the wasm").unwrap();
        binary[at] ^= 1;
        std::fs::write(&exe, &binary).unwrap();
        let error = unpack_own(&exe, &dir.path().join("site-cache")).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert_eq!(std::fs::read_dir(dir.path().join("site-cache")).unwrap().count(), 0);
    }
}
