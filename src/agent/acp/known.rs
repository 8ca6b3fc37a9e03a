//! The ACP agents AskBridge knows by name (acp.md §3): each found on `PATH` or in the project's
//! own install (`node_modules/.bin` of the folder the server starts in, where `make setup` puts
//! the pinned ones), and offered when it can sign in here without a person: a key in the
//! environment, or its own login on this machine. An `--acp` of the same name replaces it.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// One agent AskBridge knows.
pub struct Known {
    /// Its name for `--agent` and the sessions.
    pub name: &'static str,
    /// What people call it, on the new-session page.
    pub label: &'static str,
    /// Its program's name, and the arguments that make it speak ACP.
    pub program: &'static str,
    pub args: &'static [&'static str],
    /// The variables of the server's environment it takes (its keys and addresses): passed to it
    /// alone, beside the allow-list every agent gets.
    pub passes: &'static [&'static str],
    /// Variables it is always given.
    pub sets: &'static [(&'static str, &'static str)],
    /// Its keys (any one will do), and the files of its own login under `$HOME` (any one).
    pub keys: &'static [&'static str],
    pub logins: &'static [&'static str],
}

pub const KNOWN: &[Known] = &[
    Known {
        name: "claude-acp",
        label: "Claude (ACP)",
        program: "claude-agent-acp",
        args: &[],
        // `ANTHROPIC_*` and `CLAUDE_*` pass for every agent.
        passes: &[],
        sets: &[],
        keys: &["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"],
        logins: &[".claude/.credentials.json"],
    },
    Known {
        name: "gemini",
        label: "Gemini CLI",
        program: "gemini",
        args: &["--acp"],
        passes: &[
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "GOOGLE_GEMINI_BASE_URL",
            "GOOGLE_CLOUD_PROJECT",
            "GOOGLE_CLOUD_LOCATION",
            "GOOGLE_GENAI_USE_VERTEXAI",
            "GOOGLE_APPLICATION_CREDENTIALS",
        ],
        sets: &[],
        keys: &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        logins: &[".gemini/oauth_creds.json"],
    },
    Known {
        name: "codex",
        label: "Codex",
        program: "codex-acp",
        args: &[],
        passes: &["OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME"],
        sets: &[],
        keys: &["OPENAI_API_KEY"],
        logins: &[".codex/auth.json"],
    },
    Known {
        name: "opencode",
        label: "OpenCode",
        program: "opencode",
        args: &["acp"],
        passes: &["OPENCODE_CONFIG", "OPENCODE_CONFIG_CONTENT", "OPENAI_API_KEY", "GEMINI_API_KEY"],
        sets: &[("OPENCODE_DISABLE_AUTOUPDATE", "1")],
        keys: &["OPENCODE_CONFIG_CONTENT"],
        logins: &[".local/share/opencode/auth.json"],
    },
    Known {
        name: "cline",
        label: "Cline",
        program: "cline",
        args: &["--acp"],
        passes: &["CLINE_PROVIDER", "CLINE_API_KEY", "CLINE_MODEL"],
        // Else it starts a hub daemon that outlives it (acp.md §3).
        sets: &[("CLINE_SESSION_BACKEND_MODE", "local")],
        keys: &["CLINE_API_KEY"],
        logins: &[".cline/data/settings/providers.json"],
    },
];

/// Where to look for the agents, and what this machine has.
pub struct Search<'a> {
    pub path: Option<&'a OsStr>,
    /// The folder the server started in: its `node_modules/.bin` is searched after `PATH`.
    pub project: &'a Path,
    pub home: Option<&'a Path>,
    pub var: &'a dyn Fn(&str) -> Option<String>,
}

impl Known {
    /// Its program, if this machine has it.
    pub fn find(&self, search: &Search) -> Option<PathBuf> {
        let path = search.path.map(std::env::split_paths).into_iter().flatten();
        path.chain([search.project.join("node_modules/.bin")])
            .map(|dir| dir.join(self.program))
            .find(|program| is_executable(program))
    }

    /// Whether it can sign in here without a person: one of its keys is set, or its login is here.
    pub fn signed_in(&self, search: &Search) -> bool {
        let key = self.keys.iter().any(|key| (search.var)(key).is_some_and(|value| !value.trim().is_empty()));
        key || search.home.is_some_and(|home| self.logins.iter().any(|login| home.join(login).is_file()))
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gemini() -> &'static Known {
        KNOWN.iter().find(|known| known.name == "gemini").unwrap()
    }

    fn executable(path: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn a_known_agent_is_found_on_path_before_the_projects_own_install() {
        let dir = tempfile::tempdir().unwrap();
        let (bin, project) = (dir.path().join("bin"), dir.path().join("project"));
        let none = |_: &str| None;
        let path = std::env::join_paths([&bin]).unwrap();
        let search = Search { path: Some(&path), project: &project, home: None, var: &none };
        assert_eq!(gemini().find(&search), None);
        executable(&project.join("node_modules/.bin/gemini"));
        assert_eq!(gemini().find(&search), Some(project.join("node_modules/.bin/gemini")));
        executable(&bin.join("gemini"));
        assert_eq!(gemini().find(&search), Some(bin.join("gemini")));
    }

    #[test]
    fn a_known_agent_is_signed_in_by_a_key_or_its_own_login() {
        let home = tempfile::tempdir().unwrap();
        let signed_in = |var: &dyn Fn(&str) -> Option<String>| {
            gemini().signed_in(&Search { path: None, project: home.path(), home: Some(home.path()), var })
        };
        assert!(!signed_in(&|_| None));
        assert!(!signed_in(&|name| (name == "GEMINI_API_KEY").then(|| " ".to_string())), "an empty key is none");
        assert!(signed_in(&|name| (name == "GOOGLE_API_KEY").then(|| "k".to_string())));
        std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
        std::fs::write(home.path().join(".gemini/oauth_creds.json"), "{}").unwrap();
        assert!(signed_in(&|_| None));
    }
}
