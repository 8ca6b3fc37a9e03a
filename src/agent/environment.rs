//! What an agent's process (the Claude Code CLI, an ACP agent) inherits from the server's
//! environment: an allow-list, so that the server's own configuration (the database URL with its
//! password, the access token) never reaches the agent, its tools, the model's context or a
//! transcript. What a user's setup needs beyond the list is named with `--agent-env`.

use std::ffi::OsString;

/// Passed as they are: what a shell, Node and Claude Code need to run as in a terminal.
const NAMES: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "COLORTERM",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    // Where TLS is intercepted (a company proxy), Node and the tools need its certificate.
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    // Claude Code's own test before it allows bypassPermissions as root.
    "IS_SANDBOX",
];

/// Passed with any name that starts so: locale, XDG folders, Claude Code's and the API's own
/// settings (`DISABLE_TELEMETRY`, `DISABLE_AUTOUPDATER`, … are Claude Code's too).
const PREFIXES: &[&str] = &["LC_", "XDG_", "ANTHROPIC_", "CLAUDE_", "DISABLE_"];

/// The proxy variables, in whatever case they are written.
const PROXIES: &[&str] = &["http_proxy", "https_proxy", "no_proxy", "all_proxy"];

/// The server's configuration: never passed, even when `--agent-env` names it.
const SERVER_NAMES: &[&str] = &["DATABASE_URL"];
const SERVER_PREFIXES: &[&str] = &["ASKBRIDGE_", "LEPTOS_"];

/// The variable that marks a CLI as one of AskBridge's (its value is the session's id), so that
/// a user-level `askbridge hook` can step aside for it. Ours to set, never inherited.
pub const SESSION_MARKER: &str = "ASKBRIDGE_SESSION";

/// Which variables of the server's environment the CLI inherits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentEnv {
    /// `--agent-env`: names, or prefixes written `NAME*`.
    extra: Vec<String>,
}

/// Why an `--agent-env` entry is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AgentEnvError {
    #[error("--agent-env {0}: that is the server's own configuration, which the agent never gets")]
    ServerOwn(String),
    #[error("--agent-env {0:?}: give a variable's name, or a prefix followed by * (AWS_*)")]
    NotAName(String),
}

impl AgentEnv {
    /// The allow-list, and the variables (or prefixes, `NAME*`) that `--agent-env` adds.
    pub fn new(extra: &[String]) -> Result<Self, AgentEnvError> {
        let mut names = Vec::new();
        for entry in extra.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
            let name = entry.strip_suffix('*').unwrap_or(entry);
            let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(AgentEnvError::NotAName(entry.to_string()));
            }
            // A prefix may cover some of the server's own names (they stay out all the same); a
            // name, or a prefix that only covers the server's own, is refused as a mistake.
            if server_own(name) {
                return Err(AgentEnvError::ServerOwn(entry.to_string()));
            }
            names.push(entry.to_string());
        }
        Ok(Self { extra: names })
    }

    /// Whether the CLI inherits the variable `name`.
    pub fn passes(&self, name: &str) -> bool {
        if server_own(name) {
            return false;
        }
        NAMES.contains(&name)
            || PREFIXES.iter().any(|prefix| name.starts_with(prefix))
            || PROXIES.iter().any(|proxy| name.eq_ignore_ascii_case(proxy))
            || self.extra.iter().any(|extra| match extra.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => extra == name,
            })
    }

    /// What of `vars` (the server's environment) the CLI inherits.
    pub fn inherited(&self, vars: impl IntoIterator<Item = (OsString, OsString)>) -> Vec<(OsString, OsString)> {
        vars.into_iter().filter(|(name, _)| name.to_str().is_some_and(|name| self.passes(name))).collect()
    }
}

/// Whether `name` is (or, as a prefix, only covers) the server's own configuration.
fn server_own(name: &str) -> bool {
    SERVER_NAMES.contains(&name) || SERVER_PREFIXES.iter().any(|own| name.starts_with(own))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        vars.iter().map(|(n, v)| (OsString::from(n), OsString::from(v))).collect()
    }

    fn names(vars: Vec<(OsString, OsString)>) -> Vec<String> {
        vars.into_iter().map(|(n, _)| n.into_string().unwrap()).collect()
    }

    #[test]
    fn the_servers_configuration_never_reaches_the_agent() {
        let server = env(&[
            ("DATABASE_URL", "postgres://askbridge:secret@db/askbridge"),
            ("ASKBRIDGE_TOKEN", "t0ken"),
            ("ASKBRIDGE_DATA_DIR", "/srv/data"),
            ("LEPTOS_SITE_ROOT", "target/site"),
            ("AWS_SECRET_ACCESS_KEY", "aws"),
            ("GITHUB_TOKEN", "gh"),
            ("PATH", "/usr/bin"),
            ("HOME", "/home/me"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C.UTF-8"),
            ("XDG_RUNTIME_DIR", "/run/user/1000"),
            ("HTTPS_PROXY", "http://proxy:3128"),
            ("no_proxy", "localhost"),
            ("ANTHROPIC_API_KEY", "sk"),
            ("CLAUDE_CONFIG_DIR", "/home/me/.claude"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("DISABLE_TELEMETRY", "1"),
        ]);
        let passed = names(AgentEnv::default().inherited(server));
        assert_eq!(
            passed,
            [
                "PATH",
                "HOME",
                "LANG",
                "LC_ALL",
                "XDG_RUNTIME_DIR",
                "HTTPS_PROXY",
                "no_proxy",
                "ANTHROPIC_API_KEY",
                "CLAUDE_CONFIG_DIR",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
                "DISABLE_TELEMETRY"
            ]
        );
    }

    #[test]
    fn agent_env_adds_names_and_prefixes() {
        let agent = AgentEnv::new(&["GITHUB_TOKEN".into(), "AWS_*".into(), " ".into()]).unwrap();
        let server = env(&[("GITHUB_TOKEN", "gh"), ("AWS_PROFILE", "dev"), ("GITHUB_USER", "me")]);
        assert_eq!(names(agent.inherited(server)), ["GITHUB_TOKEN", "AWS_PROFILE"]);
    }

    #[test]
    fn agent_env_cannot_name_the_servers_configuration() {
        for refused in ["DATABASE_URL", "ASKBRIDGE_TOKEN", "ASKBRIDGE_*", "LEPTOS_SITE_ROOT", "LEPTOS_*"] {
            assert_eq!(
                AgentEnv::new(&[refused.to_string()]),
                Err(AgentEnvError::ServerOwn(refused.to_string())),
                "{refused}"
            );
        }
        for nonsense in ["*", "A B", "X=1", "$HOME"] {
            assert!(matches!(AgentEnv::new(&[nonsense.to_string()]), Err(AgentEnvError::NotAName(_))), "{nonsense}");
        }
        // A wider prefix is taken, and the server's own names stay out all the same.
        let wide = AgentEnv::new(&["DATA*".into(), "ASK*".into()]).unwrap();
        assert!(wide.passes("DATABASE_HOST") && wide.passes("ASKPASS"));
        assert!(!wide.passes("DATABASE_URL") && !wide.passes("ASKBRIDGE_TOKEN"));
    }

    #[test]
    fn the_session_marker_is_not_inherited() {
        // It is set for each CLI, with its own session's id: another one's never leaks through.
        assert!(!AgentEnv::default().passes(SESSION_MARKER));
    }
}
