//! `askbridge connect` and `askbridge disconnect`: AskBridge's hooks in the user's Claude Code
//! settings (`$CLAUDE_CONFIG_DIR/settings.json`, else `~/.claude/settings.json`), so that every
//! `claude` on the machine asks through AskBridge, and out again. The server's address and token
//! go in a file of AskBridge's own beside them, readable by the user only, never in the settings
//! (which people share and paste). What `connect` changed in the settings is kept there too, so
//! that `disconnect` gives the file back byte for byte (`settings.rs`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::settings::{self, HookEntry, Record};

/// AskBridge's file in Claude Code's config folder: the server, its token, what was changed.
pub const CONNECTION_FILE: &str = "askbridge.json";
/// How long Claude Code lets the PermissionRequest hook wait for the person: a day. Its prompt
/// stays open in the terminal all along, so a long wait costs the person nothing (the hook lets
/// go 30 s before it; docs/claude-terminal.md §3: an explicit `timeout` is honoured).
pub const PERMISSION_TIMEOUT_SECS: u64 = 86_400;
/// The hooks that only say what the terminal does answer at once; this is a bound.
pub const NOTE_TIMEOUT_SECS: u64 = 10;
pub const DEFAULT_URL: &str = "http://127.0.0.1:3000";

/// The events AskBridge's hook runs for: PermissionRequest for questions and permission prompts
/// (it runs beside the terminal's own prompt, and the first answer wins); the others say whether
/// the terminal works, waits or is idle, for the session list.
const EVENTS: [(&str, Option<&str>, u64); 6] = [
    ("PermissionRequest", Some("*"), PERMISSION_TIMEOUT_SECS),
    ("Notification", None, NOTE_TIMEOUT_SECS),
    ("Stop", None, NOTE_TIMEOUT_SECS),
    ("UserPromptSubmit", None, NOTE_TIMEOUT_SECS),
    ("SessionStart", None, NOTE_TIMEOUT_SECS),
    ("SessionEnd", None, NOTE_TIMEOUT_SECS),
];

/// What `askbridge.json` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connection {
    /// The server, e.g. `http://127.0.0.1:3000`.
    pub url: String,
    /// Its access token (`None` for a server started with `--no-token`).
    #[serde(default)]
    pub token: Option<String>,
    /// What `connect` changed in the settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<Record>,
}

impl Connection {
    /// The connection the hook uses, if `connect` was run for this Claude Code config folder.
    pub fn load_for_hook() -> Option<Self> {
        let text = std::fs::read_to_string(claude_config_dir()?.join(CONNECTION_FILE)).ok()?;
        serde_json::from_str(&text).ok()
    }
}

pub use crate::agent::claude::claude_config_dir;

/// What `connect` is given.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    pub url: String,
    pub token_file: Option<PathBuf>,
    /// The server's data folder, whose `token` is used when no token file is given.
    pub data_dir: PathBuf,
    pub no_token: bool,
}

/// `askbridge connect`: the lines it says.
pub async fn connect(options: &ConnectOptions) -> Result<Vec<String>, String> {
    let url = check_url(&options.url)?;
    let token = access_token(options)?;
    let dir =
        claude_config_dir().ok_or("neither CLAUDE_CONFIG_DIR nor HOME is set: where are Claude Code's settings?")?;
    std::fs::create_dir_all(&dir).map_err(|error| format!("cannot create {}: {error}", dir.display()))?;
    let settings_path = dir.join("settings.json");
    let connection_path = dir.join(CONNECTION_FILE);
    let exe = std::env::current_exe().map_err(|error| format!("where is this program? {error}"))?;
    let exe = exe.canonicalize().unwrap_or(exe);
    let command = format!("{} hook", shell_quoted(&exe.display().to_string()));
    let entries: Vec<HookEntry> = EVENTS
        .iter()
        .map(|&(event, matcher, timeout)| HookEntry { event, matcher, command: command.clone(), timeout })
        .collect();

    let original = read_optional(&settings_path)?;
    let connected = settings::connect(original.as_deref(), &entries)
        .map_err(|error| format!("{}: {error}", settings_path.display()))?;
    let previous: Option<Connection> =
        read_optional(&connection_path)?.and_then(|text| serde_json::from_str(&text).ok());
    let previous_record = previous.and_then(|p| p.settings);
    let record = if connected.record.edits.is_empty() {
        previous_record
    } else {
        match previous_record {
            // Entries added to what an earlier connect left as it was: both undone together.
            Some(mut earlier) if original.as_deref().is_some_and(|text| settings::digest(text) == earlier.digest) => {
                earlier.edits.extend(connected.record.edits.clone());
                earlier.digest = connected.record.digest.clone();
                Some(earlier)
            }
            _ => Some(connected.record.clone()),
        }
    };
    let mut said = Vec::new();
    if connected.added.is_empty() {
        said.push(format!("AskBridge's hooks are in {} already: it is unchanged.", settings_path.display()));
    } else {
        std::fs::write(&settings_path, &connected.text)
            .map_err(|error| format!("cannot write {}: {error}", settings_path.display()))?;
        said.push(format!(
            "Added AskBridge's hook to {} for {}; everything else in it is as it was.",
            settings_path.display(),
            connected.added.join(", ")
        ));
    }
    let connection = Connection { url: url.clone(), token, settings: record };
    write_private(&connection_path, &serde_json::to_string_pretty(&connection).unwrap_or_default())?;
    said.push(format!(
        "The server's address ({url}) and token are in {}, readable by you only.",
        connection_path.display()
    ));
    said.push(match ping(&connection).await {
        Ping::Ok => format!(
            "The server at {url} answers and takes the token: questions and permission prompts of every \
                             `claude` you start from now on also show in AskBridge."
        ),
        Ping::WrongToken => format!(
            "The server at {url} does not take this token: the hooks will do nothing until it \
                                     does (run connect again with the right --token-file)."
        ),
        Ping::Unreachable => format!(
            "The server at {url} does not answer now: until it does, `claude` asks in the \
                                      terminal only, as before."
        ),
    });
    Ok(said)
}

/// The token `connect` keeps for the hooks: read from `--token-file`, or the server's data folder;
/// none with `--no-token`.
fn access_token(options: &ConnectOptions) -> Result<Option<String>, String> {
    if options.no_token {
        return Ok(None);
    }
    let path = options.token_file.clone().unwrap_or_else(|| options.data_dir.join(TOKEN_FILE));
    let text = std::fs::read_to_string(&path).map_err(|error| {
        format!(
            "cannot read the server's access token from {} ({error}). Start the server once (askbridge \
             serve) to make it, run this where its --data-dir is, or give --token-file FILE (or --no-token \
             for a server started with --no-token)",
            path.display()
        )
    })?;
    let token = text.trim().to_string();
    if token.is_empty() {
        return Err(format!("{} is empty", path.display()));
    }
    Ok(Some(token))
}

/// `askbridge disconnect`: the lines it says.
pub fn disconnect() -> Result<Vec<String>, String> {
    let dir =
        claude_config_dir().ok_or("neither CLAUDE_CONFIG_DIR nor HOME is set: where are Claude Code's settings?")?;
    let settings_path = dir.join("settings.json");
    let connection_path = dir.join(CONNECTION_FILE);
    let connection: Option<Connection> =
        read_optional(&connection_path)?.and_then(|text| serde_json::from_str(&text).ok());
    let mut said = Vec::new();
    match read_optional(&settings_path)? {
        None => said.push(format!("There is no {}: nothing to take out.", settings_path.display())),
        Some(text) => {
            let result = settings::disconnect(&text, connection.as_ref().and_then(|c| c.settings.as_ref()))
                .map_err(|error| format!("{}: {error}", settings_path.display()))?;
            match &result.text {
                Some(after) if *after == text => {
                    said.push(format!("AskBridge's hooks are not in {}: it is unchanged.", settings_path.display()))
                }
                Some(after) => {
                    std::fs::write(&settings_path, after)
                        .map_err(|error| format!("cannot write {}: {error}", settings_path.display()))?;
                    said.push(if result.searched {
                        format!(
                            "Took AskBridge's hooks ({}) out of {}; it had changed since connect, so the rest of it is \
                             as you left it.",
                            result.removed,
                            settings_path.display()
                        )
                    } else {
                        format!(
                            "Took AskBridge's hooks out of {}: it is as it was before connect.",
                            settings_path.display()
                        )
                    });
                }
                None => {
                    std::fs::remove_file(&settings_path)
                        .map_err(|error| format!("cannot remove {}: {error}", settings_path.display()))?;
                    said.push(format!("Removed {}, which connect had made.", settings_path.display()));
                }
            }
        }
    }
    match std::fs::remove_file(&connection_path) {
        Ok(()) => said.push(format!("Removed {} (the server's address and token).", connection_path.display())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(format!("cannot remove {}: {error}", connection_path.display())),
    }
    Ok(said)
}

/// The file in the server's data folder that holds its token (`server::access_token`).
const TOKEN_FILE: &str = "token";

fn check_url(url: &str) -> Result<String, String> {
    let parsed = reqwest::Url::parse(url).map_err(|error| format!("--url {url}: not an address ({error})"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("--url {url}: give http://HOST:PORT (or https://…)"));
    }
    Ok(url.trim_end_matches('/').to_string())
}

fn read_optional(path: &Path) -> Result<Option<String>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(format!("cannot read {}: {error}", path.display())),
    }
}

/// Written readable and writable by its owner only, never for a moment by others.
fn write_private(path: &Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    let fail = |error: std::io::Error| format!("cannot write {}: {error}", path.display());
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        // A file made earlier with other rights is made private before the token goes in.
        if path.exists() {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(fail)?;
        }
    }
    let mut file = options.open(path).map_err(fail)?;
    file.write_all(text.as_bytes()).and_then(|()| file.sync_all()).map_err(fail)
}

/// `'…'` for `sh`: the path as one word, whatever it holds.
fn shell_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

enum Ping {
    Ok,
    WrongToken,
    Unreachable,
}

async fn ping(connection: &Connection) -> Ping {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let Ok(http) = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(3)).build() else {
        return Ping::Unreachable;
    };
    let mut request = http.get(format!("{}/api/ping", connection.url));
    if let Some(token) = &connection.token {
        request = request.bearer_auth(token);
    }
    match request.send().await {
        Ok(response) if response.status().is_success() => Ping::Ok,
        Ok(response) if response.status() == reqwest::StatusCode::UNAUTHORIZED => Ping::WrongToken,
        _ => Ping::Unreachable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_one_word_for_the_shell() {
        assert_eq!(shell_quoted("/opt/ask bridge/it's/askbridge"), r"'/opt/ask bridge/it'\''s/askbridge'");
    }

    #[test]
    fn the_server_address_must_be_http() {
        assert_eq!(check_url("http://127.0.0.1:3000/").unwrap(), "http://127.0.0.1:3000");
        assert!(check_url("127.0.0.1:3000").is_err());
        assert!(check_url("ftp://host").is_err());
    }
}
