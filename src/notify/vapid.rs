//! VAPID (RFC 8292): how a push service knows that a push comes from the server a browser
//! subscribed to. The server has one P-256 key pair, made when first needed and kept in the data
//! folder (readable by its owner only, as the access token is); the page subscribes with its
//! public key, and every push carries a short-lived ES256 token signed with the private one.
//!
//! "When first needed" (the page asks for the key, or a push goes out) rather than at start: a
//! server nobody subscribes to never runs the elliptic-curve code, whose pages (and ring's
//! 150 KB table of P-256 points) would otherwise count in its idle memory, budgeted at 16 MiB.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};

/// The file in the data folder that keeps the private key (PKCS#8, PEM: the form `openssl` and
/// other web-push tools read too).
pub const KEY_FILE: &str = "vapid-private-key.pem";
/// Its name in the store's `server_keys`, where servers sharing a database keep one for all.
const STORE_KEY: &str = "vapid_private_key";

/// How long a token is valid: RFC 8292 allows at most 24 hours; 12 leaves room for clocks that
/// differ (a push service refuses a token whose `exp` is further away than it allows).
const TOKEN_LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);

const PEM_BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
const PEM_END: &str = "-----END PRIVATE KEY-----";

#[derive(Debug, thiserror::Error)]
pub enum VapidError {
    #[error("cannot read the push key {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("cannot keep the push key in {path}: {error}")]
    Write { path: String, error: std::io::Error },
    #[error("{path} is not a P-256 private key (PKCS#8 PEM); move it away to have a new one made")]
    NotAKey { path: String },
    #[error("the system's random number generator failed")]
    Random,
    #[error("cannot read or keep the team's push key in the database: {0}")]
    Store(String),
}

/// The server's VAPID key pair.
pub struct VapidKey {
    pair: EcdsaKeyPair,
    rng: SystemRandom,
}

impl std::fmt::Debug for VapidKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VapidKey").field("public", &self.public_key()).finish_non_exhaustive()
    }
}

impl VapidKey {
    /// The key in `data_dir`, made (and kept there) if there is none yet.
    pub fn load_or_create(data_dir: &Path) -> Result<Self, VapidError> {
        let path = data_dir.join(KEY_FILE);
        let named = || path.display().to_string();
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                keep_private(&path)?;
                let der = pem_body(&text).ok_or_else(|| VapidError::NotAKey { path: named() })?;
                Self::from_pkcs8(&der).ok_or_else(|| VapidError::NotAKey { path: named() })
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                let rng = SystemRandom::new();
                let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
                    .map_err(|_| VapidError::Random)?;
                match write_private(&path, &pem(pkcs8.as_ref())) {
                    // Another process made it meanwhile: that one is the key.
                    Err(VapidError::Write { error, .. }) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                        return Self::load_or_create(data_dir);
                    }
                    other => other?,
                }
                tracing::info!(file = %path.display(), "made the server's push (VAPID) key");
                Self::from_pkcs8(pkcs8.as_ref()).ok_or(VapidError::NotAKey { path: named() })
            }
            Err(error) => Err(VapidError::Read { path: named(), error }),
        }
    }

    /// The key of a team of servers sharing `store` (Postgres): the one the first server kept in
    /// the store, which every browser subscribed with, whatever each server's own file holds (a
    /// server whose file differs says so, and signs with the team's). Alone on its store (SQLite),
    /// a server's key is its file's.
    pub async fn of_team(store: &crate::store::Store, data_dir: &Path) -> Result<Self, VapidError> {
        let own = Self::load_or_create_pem(data_dir)?;
        if !store.is_shared() {
            return Self::from_pem(&own)
                .ok_or_else(|| VapidError::NotAKey { path: data_dir.join(KEY_FILE).display().to_string() });
        }
        let team = store.shared_key(STORE_KEY, &own).await.map_err(|error| VapidError::Store(error.to_string()))?;
        if team != own {
            tracing::warn!(
                file = %data_dir.join(KEY_FILE).display(),
                "this server's push key file differs from the key its team keeps in the database; pushes are signed with the team's"
            );
        }
        Self::from_pem(&team).ok_or_else(|| VapidError::NotAKey { path: format!("the database's {STORE_KEY}") })
    }

    /// The key file's PEM text in `data_dir`, made (and kept there) if there is none yet.
    fn load_or_create_pem(data_dir: &Path) -> Result<String, VapidError> {
        let path = data_dir.join(KEY_FILE);
        Self::load_or_create(data_dir)?;
        std::fs::read_to_string(&path).map_err(|error| VapidError::Read { path: path.display().to_string(), error })
    }

    fn from_pem(text: &str) -> Option<Self> {
        Self::from_pkcs8(&pem_body(text)?)
    }

    /// A key of its own, kept nowhere: for tests.
    pub fn generate() -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("random numbers");
        Self::from_pkcs8(pkcs8.as_ref()).expect("a key ring made")
    }

    fn from_pkcs8(der: &[u8]) -> Option<Self> {
        let rng = SystemRandom::new();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng).ok()?;
        Some(Self { pair, rng })
    }

    /// The public key as the page's `applicationServerKey` and the `k=` of every push: the
    /// uncompressed point, base64url without padding.
    pub fn public_key(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.pair.public_key().as_ref())
    }

    /// The `Authorization` header of a push to `endpoint`: `vapid t=<ES256 JWT>, k=<public key>`
    /// (RFC 8292 §3), the token's audience the endpoint's origin, its subject `contact` (a
    /// `mailto:` or `https:` address the push service may write to).
    pub fn authorization(&self, endpoint: &reqwest::Url, contact: &str) -> String {
        let exp = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default() + TOKEN_LIFETIME;
        let claims = serde_json::json!({
            "aud": endpoint.origin().ascii_serialization(),
            "exp": exp.as_secs(),
            "sub": contact,
        });
        let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let signing_input = format!("{header}.{}", URL_SAFE_NO_PAD.encode(claims.to_string()));
        // ring signs with fresh randomness; only a failing random source makes this fail, and
        // then the push goes unsigned and the push service refuses it (logged there).
        let signature = match self.pair.sign(&self.rng, signing_input.as_bytes()) {
            Ok(signature) => URL_SAFE_NO_PAD.encode(signature.as_ref()),
            Err(_) => {
                tracing::error!("could not sign a push token: the random number generator failed");
                String::new()
            }
        };
        format!("vapid t={signing_input}.{signature}, k={}", self.public_key())
    }
}

/// The server's key, read (or made) at its first use.
pub struct LazyVapidKey {
    folder: Option<PathBuf>,
    key: OnceLock<Result<VapidKey, String>>,
}

impl LazyVapidKey {
    /// The key kept in `data_dir` (`KEY_FILE`), made there at its first use.
    pub fn in_folder(data_dir: &Path) -> Self {
        Self { folder: Some(data_dir.to_path_buf()), key: OnceLock::new() }
    }

    /// The key, or why it cannot be had (the file is unreadable or no key; logged once).
    pub fn get(&self) -> Result<&VapidKey, String> {
        self.key
            .get_or_init(|| {
                let folder = self.folder.as_deref().ok_or("no push key")?;
                VapidKey::load_or_create(folder).map_err(|error| {
                    tracing::error!(%error, "push notifications cannot be sent");
                    error.to_string()
                })
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl From<VapidKey> for LazyVapidKey {
    fn from(key: VapidKey) -> Self {
        Self { folder: None, key: OnceLock::from(Ok(key)) }
    }
}

fn pem(der: &[u8]) -> String {
    let body = STANDARD.encode(der);
    let lines: Vec<&str> = body.as_bytes().chunks(64).map(|line| std::str::from_utf8(line).unwrap_or("")).collect();
    format!("{PEM_BEGIN}\n{}\n{PEM_END}\n", lines.join("\n"))
}

fn pem_body(text: &str) -> Option<Vec<u8>> {
    let start = text.find(PEM_BEGIN)? + PEM_BEGIN.len();
    let end = text[start..].find(PEM_END)? + start;
    let base64: String = text[start..end].chars().filter(|c| !c.is_whitespace()).collect();
    STANDARD.decode(base64).ok()
}

/// Created readable and writable by its owner only, never for a moment by others.
fn write_private(path: &PathBuf, text: &str) -> Result<(), VapidError> {
    let failed = |error| VapidError::Write { path: path.display().to_string(), error };
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(failed)?;
    file.write_all(text.as_bytes()).and_then(|()| file.sync_all()).map_err(failed)
}

/// A key file others may read is made private again (a copy or an umask may have opened it).
fn keep_private(path: &Path) -> Result<(), VapidError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let failed = |error| VapidError::Write { path: path.display().to_string(), error };
        let mode = std::fs::metadata(path).map_err(failed)?.permissions().mode();
        if mode & 0o077 != 0 {
            tracing::warn!(file = %path.display(), "the push key file was readable by others; made private");
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(failed)?;
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};

    #[test]
    fn a_key_is_made_at_first_start_kept_private_and_the_same_at_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let first = VapidKey::load_or_create(dir.path()).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(KEY_FILE)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let again = VapidKey::load_or_create(dir.path()).unwrap();
        assert_eq!(first.public_key(), again.public_key());
        assert_eq!(URL_SAFE_NO_PAD.decode(first.public_key()).unwrap().len(), 65);
        let other = tempfile::tempdir().unwrap();
        assert_ne!(VapidKey::load_or_create(other.path()).unwrap().public_key(), first.public_key());
    }

    #[test]
    fn the_lazy_key_is_made_at_its_first_use_only() {
        let dir = tempfile::tempdir().unwrap();
        let lazy = LazyVapidKey::in_folder(dir.path());
        assert!(!dir.path().join(KEY_FILE).exists());
        let public = lazy.get().unwrap().public_key();
        assert!(dir.path().join(KEY_FILE).exists());
        assert_eq!(VapidKey::load_or_create(dir.path()).unwrap().public_key(), public);
        let broken = tempfile::tempdir().unwrap();
        std::fs::write(broken.path().join(KEY_FILE), "not a key").unwrap();
        assert!(LazyVapidKey::in_folder(broken.path()).get().unwrap_err().contains("not a P-256 private key"));
    }

    #[test]
    fn a_file_that_is_no_key_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(KEY_FILE), "not a key").unwrap();
        let error = VapidKey::load_or_create(dir.path()).unwrap_err();
        assert!(matches!(error, VapidError::NotAKey { .. }), "{error}");
        assert_eq!(std::fs::read_to_string(dir.path().join(KEY_FILE)).unwrap(), "not a key");
    }

    #[test]
    fn the_token_is_signed_for_the_endpoints_origin_and_expires_within_a_day() {
        let key = VapidKey::generate();
        let endpoint = reqwest::Url::parse("https://push.example.net:8443/wpush/v2/abc?x=1").unwrap();
        let header = key.authorization(&endpoint, "mailto:ops@example.com");
        let (token, k) = header.strip_prefix("vapid t=").unwrap().split_once(", k=").unwrap();
        assert_eq!(k, key.public_key());
        let (signed, signature) = token.rsplit_once('.').unwrap();
        let public = URL_SAFE_NO_PAD.decode(k).unwrap();
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &public)
            .verify(signed.as_bytes(), &URL_SAFE_NO_PAD.decode(signature).unwrap())
            .expect("the signature verifies with k");
        let (head, claims) = signed.split_once('.').unwrap();
        let head: serde_json::Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(head).unwrap()).unwrap();
        assert_eq!(head["alg"], "ES256");
        let claims: serde_json::Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap();
        assert_eq!(claims["aud"], "https://push.example.net:8443");
        assert_eq!(claims["sub"], "mailto:ops@example.com");
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
        let exp = claims["exp"].as_u64().unwrap();
        assert!(exp > now && exp <= now + 24 * 3600, "exp {exp}, now {now}");
    }
}
