//! Which access token the server asks for, as Jupyter and VS Code's server do: one is made at
//! first start and kept in the data folder (readable by its owner only), and the sign-in link
//! that carries it is printed once the server listens.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use super::security::MIN_TOKEN_CHARS;

/// The file in the data folder that keeps the token.
pub const TOKEN_FILE: &str = "token";

/// How the token was chosen, for the start-up message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// `--token` or `ASKBRIDGE_TOKEN`.
    Given,
    /// The data folder's file, made now or at an earlier start.
    File(PathBuf),
    /// `--no-token`.
    Off,
}

/// The token every request must carry, or none with `--no-token` (refused off loopback).
pub fn resolve(
    given: Option<&str>,
    no_token: bool,
    addr: &SocketAddr,
    data_dir: &Path,
) -> Result<(Option<String>, TokenSource), String> {
    if let Some(token) = given {
        check_strength(token)?;
        return Ok((Some(token.to_string()), TokenSource::Given));
    }
    if no_token {
        if !addr.ip().is_loopback() {
            return Err(format!(
                "--no-token is for loopback addresses only: on {addr} anyone who can reach the server \
                 could drive your agent. Leave the token on (the default), or listen on 127.0.0.1."
            ));
        }
        return Ok((None, TokenSource::Off));
    }
    let path = data_dir.join(TOKEN_FILE);
    let token = read_or_make(&path)?;
    Ok((Some(token), TokenSource::File(path)))
}

/// The link that signs a browser in: the token moves to a cookie and out of the address bar.
pub fn sign_in_link(local: &SocketAddr, token: Option<&str>) -> String {
    // A wildcard address is not one a browser can open: this machine's loopback is.
    let host = match local.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => SocketAddr::from(([127, 0, 0, 1], local.port())).to_string(),
        ip if ip.is_unspecified() => SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, local.port())).to_string(),
        _ => local.to_string(),
    };
    match token {
        Some(token) => format!(
            "http://{host}/?token={}",
            percent_encoding::utf8_percent_encode(token, percent_encoding::NON_ALPHANUMERIC)
        ),
        None => format!("http://{host}/"),
    }
}

fn check_strength(token: &str) -> Result<(), String> {
    if token.trim().chars().count() < MIN_TOKEN_CHARS {
        return Err(format!(
            "the access token is too short: use at least {MIN_TOKEN_CHARS} characters \
             (for example the output of `openssl rand -hex 16`)"
        ));
    }
    Ok(())
}

fn read_or_make(path: &Path) -> Result<String, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let token = text.trim().to_string();
            check_strength(&token)
                .map_err(|why| format!("{}: {why}; delete it to have a new one made", path.display()))?;
            keep_private(path)?;
            Ok(token)
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let token = new_token();
            write_private(path, &token)?;
            Ok(token)
        }
        Err(error) => Err(format!("cannot read the access token from {}: {error}", path.display())),
    }
}

/// 244 random bits from the operating system's generator (two version-4 UUIDs, 122 random bits
/// each, as 64 hex digits): `uuid` is here already, and its v4 draws from `getrandom`.
fn new_token() -> String {
    format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())
}

/// Created readable and writable by its owner only, never for a moment by others.
fn write_private(path: &Path, token: &str) -> Result<(), String> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file =
        options.open(path).map_err(|error| format!("cannot keep the access token in {}: {error}", path.display()))?;
    writeln!(file, "{token}")
        .and_then(|()| file.sync_all())
        .map_err(|error| format!("cannot keep the access token in {}: {error}", path.display()))
}

/// A token file others may read is made private again (a copy or an umask may have opened it).
fn keep_private(path: &Path) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let metadata = std::fs::metadata(path).map_err(|error| format!("cannot read {}: {error}", path.display()))?;
        if metadata.permissions().mode() & 0o077 != 0 {
            tracing::warn!(file = %path.display(), "the access token file was readable by others; made private");
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                .map_err(|error| format!("cannot make {} private: {error}", path.display()))?;
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback() -> SocketAddr {
        "127.0.0.1:3000".parse().unwrap()
    }

    #[test]
    fn a_token_is_made_at_first_start_kept_private_and_the_same_at_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let (first, source) = resolve(None, false, &loopback(), dir.path()).unwrap();
        let first = first.unwrap();
        assert_eq!(source, TokenSource::File(dir.path().join(TOKEN_FILE)));
        assert_eq!(first.len(), 64);
        assert!(first.chars().all(|c| c.is_ascii_hexdigit()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(TOKEN_FILE)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let (second, _) = resolve(None, false, &loopback(), dir.path()).unwrap();
        assert_eq!(second.as_deref(), Some(first.as_str()));
        let other = tempfile::tempdir().unwrap();
        assert_ne!(resolve(None, false, &loopback(), other.path()).unwrap().0.unwrap(), first);
    }

    #[cfg(unix)]
    #[test]
    fn a_token_file_others_can_read_is_made_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TOKEN_FILE);
        std::fs::write(&path, "0123456789abcdef0123\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let (token, _) = resolve(None, false, &loopback(), dir.path()).unwrap();
        assert_eq!(token.as_deref(), Some("0123456789abcdef0123"));
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn a_given_token_wins_and_a_short_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (token, source) = resolve(Some("0123456789abcdef0123"), false, &loopback(), dir.path()).unwrap();
        assert_eq!((token.as_deref(), source), (Some("0123456789abcdef0123"), TokenSource::Given));
        assert!(!dir.path().join(TOKEN_FILE).exists(), "no file is made when a token is given");
        assert!(resolve(Some("short"), false, &loopback(), dir.path()).unwrap_err().contains("too short"));
        std::fs::write(dir.path().join(TOKEN_FILE), "abc").unwrap();
        let error = resolve(None, false, &loopback(), dir.path()).unwrap_err();
        assert!(error.contains("too short") && error.contains("delete it"), "{error}");
    }

    #[test]
    fn no_token_is_for_loopback_only() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(resolve(None, true, &loopback(), dir.path()).unwrap(), (None, TokenSource::Off));
        assert!(!dir.path().join(TOKEN_FILE).exists());
        let exposed: SocketAddr = "0.0.0.0:3000".parse().unwrap();
        assert!(resolve(None, true, &exposed, dir.path()).unwrap_err().contains("loopback addresses only"));
    }

    #[test]
    fn the_sign_in_link_opens_in_a_browser_and_carries_the_token() {
        let token = Some("ab+cd/ef0123456789");
        assert_eq!(sign_in_link(&loopback(), token), "http://127.0.0.1:3000/?token=ab%2Bcd%2Fef0123456789");
        assert_eq!(sign_in_link(&"0.0.0.0:80".parse().unwrap(), None), "http://127.0.0.1:80/");
        assert_eq!(sign_in_link(&"[::]:3000".parse().unwrap(), None), "http://[::1]:3000/");
    }
}
