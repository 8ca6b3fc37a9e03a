//! The command line: `askbridge serve` and its flags, each also read from an environment variable.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

pub use crate::agent::claude::AnswerPath;
use crate::approval::PermissionMode;
use crate::notify::{Detail, Webhook};

/// Why the server could not start: said on the command line as it is.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, Parser)]
#[command(
    name = "askbridge",
    version,
    about = "A self-hosted browser chat UI for coding agents, built around answering their questions.",
    long_about = "AskBridge serves a browser UI for coding agents. When the agent asks a question or \
                  needs permission, the page shows a card; the answer reaches the agent in its own \
                  format. Sessions, messages and events are stored in SQLite under --data-dir, or, for \
                  a team of servers, in Postgres (--database-url)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// `Serve` carries every flag; the value is made once per run and moved, never copied around.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the web UI and drive the agent.
    Serve(ServeArgs),
    /// Answer every `claude` you start in a terminal from AskBridge too: adds AskBridge's hooks to
    /// your Claude Code settings (everything else in them stays as it is), and keeps the server's
    /// address and token in a file only you can read.
    Connect(ConnectArgs),
    /// Takes AskBridge's hooks out of your Claude Code settings again.
    Disconnect,
    /// The program AskBridge's hooks run (Claude Code runs it; you need not).
    #[command(hide = true)]
    Hook,
    /// Runs one ACP agent for the server and keeps it, with what it waits for, through the
    /// server's stops and restarts (the server starts it; you need not).
    #[command(hide = true)]
    AcpHost {
        /// Where the server attaches.
        #[arg(long)]
        socket: PathBuf,
        /// End once no server attached for this long.
        #[arg(long, value_parser = humantime::parse_duration)]
        idle_exit: Option<std::time::Duration>,
        /// The agent's command.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Puts the built site into this binary (what `make release` does last), so that it serves
    /// its pages wherever it is copied.
    #[command(hide = true)]
    BundleSite {
        /// The built site's folder (`target/site`, from `scripts/build-site.mjs`).
        site: PathBuf,
    },
}

#[derive(Debug, Clone, clap::Args)]
pub struct ConnectArgs {
    /// The AskBridge server the hooks hand questions to.
    #[arg(long, env = "ASKBRIDGE_URL", default_value = crate::terminal::connect::DEFAULT_URL)]
    pub url: String,

    /// A file holding the server's access token (default: `token` in --data-dir).
    #[arg(long)]
    pub token_file: Option<PathBuf>,

    /// The server's data folder, where its token is kept.
    #[arg(long, env = "ASKBRIDGE_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,

    /// The server was started with --no-token.
    #[arg(long, conflicts_with = "token_file")]
    pub no_token: bool,
}

#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on. The access token is asked for on every address; --no-token is for
    /// loopback only.
    #[arg(long, env = "ASKBRIDGE_ADDR", default_value = "127.0.0.1:3000")]
    pub addr: SocketAddr,

    /// Folder for the database (askbridge.db) and the access token; created if missing.
    #[arg(long, env = "ASKBRIDGE_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,

    /// Where sessions are stored: sqlite://PATH (the default: askbridge.db in --data-dir), or
    /// postgres://USER:PASSWORD@HOST/DATABASE for a team: several servers on one Postgres, and a
    /// question answered through any of them.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,

    /// A file holding the database URL (instead of DATABASE_URL): its password then stays out of
    /// the environment and the command line.
    #[arg(long, env = "ASKBRIDGE_DATABASE_URL_FILE")]
    pub database_url_file: Option<PathBuf>,

    /// With Postgres: how long a server's hold on a session's agent lasts unless renewed. After a
    /// server dies, its sessions wait this long before another server takes them (e.g. 15s).
    #[arg(long, env = "ASKBRIDGE_LEASE", value_parser = humantime::parse_duration, default_value = "15s")]
    pub lease: std::time::Duration,

    /// The agent new sessions talk to: auto, scripted, claude, anthropic, or the NAME of an --acp
    /// agent. auto: Claude Code if a working one is installed (on PATH or --claude-bin, logged in
    /// or with an API key), else the Messages API if an API key is set, else the offline demo.
    #[arg(long, env = "ASKBRIDGE_AGENT", default_value = "auto", value_parser = parse_agent)]
    pub agent: String,

    /// An agent that speaks the Agent Client Protocol, offered beside the others: NAME=COMMAND,
    /// the command split as a shell would (no shell runs it), e.g. --acp gemini="gemini --acp".
    /// Repeat it for several. It works in --workdir, and gets the environment Claude Code gets
    /// (plus --agent-env).
    #[arg(long = "acp", value_name = "NAME=COMMAND")]
    pub acp: Vec<String>,

    /// A scenario file (TOML) for the scripted agent; without it, the built-in demo plays.
    #[arg(long, env = "ASKBRIDGE_SCENARIO")]
    pub scenario: Option<PathBuf>,

    /// The Claude Code CLI to run for `--agent claude` (default: `claude` on PATH).
    #[arg(long, env = "ASKBRIDGE_CLAUDE_BIN")]
    pub claude_bin: Option<PathBuf>,

    /// The folder the agent works in by default: Claude Code (default: the folder AskBridge was
    /// started from), an ACP agent, the offline demo (its writes; none without it).
    #[arg(long, env = "ASKBRIDGE_WORKDIR")]
    pub workdir: Option<PathBuf>,

    /// Claude Code's permission mode: default (asks before edits and commands), acceptEdits,
    /// plan, or bypassPermissions. Questions reach you in every mode.
    #[arg(long, env = "ASKBRIDGE_PERMISSION_MODE", default_value = "default", value_parser = parse_mode)]
    pub permission_mode: PermissionMode,

    /// The model: for Claude Code an alias or name (e.g. sonnet; default: the CLI's own choice);
    /// for the Messages API a model id (default: claude-opus-5-5).
    #[arg(long, env = "ASKBRIDGE_MODEL")]
    pub model: Option<String>,

    /// The Anthropic API key for `--agent anthropic` (better kept in the environment or a file
    /// than on the command line).
    #[arg(long, env = "ANTHROPIC_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,

    /// A file holding the Anthropic API key (instead of ANTHROPIC_API_KEY).
    #[arg(long, env = "ASKBRIDGE_API_KEY_FILE")]
    pub api_key_file: Option<PathBuf>,

    /// Where the Messages API is (a proxy, a gateway or a mock).
    #[arg(long, env = "ANTHROPIC_BASE_URL", default_value = crate::agent::anthropic::DEFAULT_BASE_URL)]
    pub base_url: String,

    /// The longest reply the Messages API agent may write, in tokens.
    #[arg(long, env = "ASKBRIDGE_MAX_TOKENS", default_value_t = crate::agent::anthropic::DEFAULT_MAX_TOKENS)]
    pub max_tokens: u32,

    /// A file whose text is the Messages API agent's system prompt (cached between requests).
    #[arg(long, env = "ASKBRIDGE_SYSTEM_PROMPT")]
    pub system_prompt: Option<PathBuf>,

    /// A variable of the server's environment that Claude Code may see too, beyond the ones it
    /// always gets (PATH, HOME, LANG, TERM, the proxies, ANTHROPIC_*, CLAUDE_*, …); NAME* for a
    /// prefix. Repeat the flag or separate with commas. The server's own configuration
    /// (DATABASE_URL, ASKBRIDGE_*, LEPTOS_*) is never passed.
    #[arg(long, env = "ASKBRIDGE_AGENT_ENV", value_delimiter = ',')]
    pub agent_env: Vec<String>,

    /// How answers reach Claude Code: hook (a PreToolUse hook hands your answers over; a
    /// question can then be parked while it waits) or can-use-tool (it asks over its control
    /// protocol; a waiting question keeps its process).
    #[arg(long, env = "ASKBRIDGE_ANSWER_PATH", value_enum, default_value_t = AnswerPath::Hook)]
    pub answer_path: AnswerPath,

    /// Never let a session switch Claude Code to bypassPermissions (by default the person can on
    /// a loopback address, after confirming what it means).
    #[arg(long, env = "ASKBRIDGE_NO_BYPASS")]
    pub no_bypass: bool,

    /// Let sessions switch to bypassPermissions when listening on a network address (off there
    /// by default: anyone holding the token could then run anything without a card).
    #[arg(long, env = "ASKBRIDGE_ALLOW_BYPASS", conflicts_with = "no_bypass")]
    pub allow_bypass: bool,

    /// Session folders must be inside this folder (symlinks and `..` cannot leave it). Default:
    /// your home folder when listening on a network address, anywhere on loopback.
    #[arg(long, env = "ASKBRIDGE_WORKDIR_ROOT")]
    pub workdir_root: Option<PathBuf>,

    /// Keep no checkpoint of a session's folder at each turn's start (the Changes view then shows
    /// nothing). Checkpoints live in the data folder's `checkpoints/`, one git repository per
    /// folder, and never touch the folder's own repository.
    #[arg(long, env = "ASKBRIDGE_NO_CHECKPOINTS")]
    pub no_checkpoints: bool,

    /// Access token, asked for by every page, server function and event stream. Default: the one
    /// in the data folder's `token` file, made at first start. The sign-in link is printed at
    /// start: open `http://HOST/?token=...` once per browser.
    #[arg(long, env = "ASKBRIDGE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,

    /// No access token: anyone on this machine may use the server. Loopback addresses only.
    #[arg(long, env = "ASKBRIDGE_NO_TOKEN", conflicts_with = "token")]
    pub no_token: bool,

    /// A push service subscriptions may name besides the browsers' (Google's, Mozilla's, Apple's,
    /// Microsoft's): a host name or IP address (repeat the flag or separate with commas). The
    /// server posts to it wherever it is, over http too.
    #[arg(long = "push-host", env = "ASKBRIDGE_PUSH_HOSTS", value_delimiter = ',')]
    pub push_host: Vec<String>,

    /// Mark the sign-in cookie Secure whatever the request came over (behind a TLS proxy that is
    /// not a --trusted-proxy).
    #[arg(long, env = "ASKBRIDGE_SECURE_COOKIES")]
    pub secure_cookies: bool,

    /// A reverse proxy whose X-Forwarded-Proto is believed (its IP address; repeat the flag or
    /// separate with commas): the cookie is Secure when it says https.
    #[arg(long, env = "ASKBRIDGE_TRUSTED_PROXY", value_delimiter = ',')]
    pub trusted_proxy: Vec<std::net::IpAddr>,

    /// How long a question waits for an answer (e.g. 10m, 1h); when it passes, the card shows
    /// expired and the agent is told that nobody answered in time. Default: as long as the agent
    /// waits.
    #[arg(long, env = "ASKBRIDGE_QUESTION_TIMEOUT", value_parser = humantime::parse_duration)]
    pub question_timeout: Option<std::time::Duration>,

    /// How long a permission request waits (e.g. 10m); when it passes, the tool is denied with a
    /// message that says nobody answered in time. Default: as long as the agent waits.
    #[arg(long, env = "ASKBRIDGE_APPROVAL_TIMEOUT", value_parser = humantime::parse_duration)]
    pub approval_timeout: Option<std::time::Duration>,

    /// How long an agent waits, running, for an answer before it is parked: it lets go (no
    /// process, no memory) and the card stays; the answer resumes it (e.g. 2m, 30s).
    #[arg(long, env = "ASKBRIDGE_PARK_AFTER", value_parser = humantime::parse_duration, default_value = "2m")]
    pub park_after: std::time::Duration,

    /// The most Claude Code processes alive at once (default: sized for this machine's memory,
    /// about 200 MB each); the least recently active idle or waiting session lets go first.
    #[arg(long, env = "ASKBRIDGE_MAX_AGENTS")]
    pub max_agents: Option<usize>,

    /// The most sessions kept in memory: past it, the least recently used idle ones (no turn, no
    /// open tab) are let go, and read from the store again when opened.
    #[arg(long, env = "ASKBRIDGE_MAX_LOADED_SESSIONS", default_value_t = crate::session::DEFAULT_MAX_LOADED)]
    pub max_loaded_sessions: usize,

    /// A Claude Code session that is neither working nor waiting closes its CLI after this long
    /// (e.g. 10m); the next message resumes it.
    #[arg(long, env = "ASKBRIDGE_IDLE_EXIT", value_parser = humantime::parse_duration, default_value = "10m")]
    pub idle_exit: std::time::Duration,

    /// Where to post each question and permission request that opens, and each that parks: an
    /// address of yours (JSON), an ntfy topic (https://ntfy.sh/TOPIC, or any host named ntfy.*),
    /// or a Slack incoming webhook (https://hooks.slack.com/services/...). Repeat the flag or
    /// separate with commas; ntfy+URL, slack+URL or json+URL choose the shape for another host.
    #[arg(long, env = "ASKBRIDGE_NOTIFY_URL", value_delimiter = ',', hide_env_values = true)]
    pub notify_url: Vec<Webhook>,

    /// What pushes and webhooks say: full (the session, its folder, the question and its
    /// options, the link) or minimal (only "a session needs you" and the link).
    #[arg(long, env = "ASKBRIDGE_NOTIFY_DETAIL", value_enum, default_value_t = Detail::Full)]
    pub notify_detail: Detail,

    /// How long a question waits for one of your tabs to show it before it is pushed to your
    /// phone (e.g. 10s, 1m).
    #[arg(long, env = "ASKBRIDGE_NOTIFY_AFTER", value_parser = humantime::parse_duration, default_value = "10s")]
    pub notify_after: std::time::Duration,

    /// The address people open AskBridge at (e.g. https://askbridge.example.com), for the
    /// links in webhooks. Default: http:// and the address it listens on.
    #[arg(long, env = "ASKBRIDGE_PUBLIC_URL", value_parser = parse_public_url)]
    pub public_url: Option<String>,

    /// A mailto: or https: address at which push services (Google's, Mozilla's, Apple's) may
    /// reach whoever runs this server. Default: --public-url when it is https, else
    /// mailto:askbridge@localhost (which Apple's may refuse).
    #[arg(long, env = "ASKBRIDGE_PUSH_CONTACT", value_parser = parse_push_contact)]
    pub push_contact: Option<String>,

    /// The built site (the WASM bundle, scripts and styles: `make site`). Default: the one
    /// `make release` put in the binary, else `../site` beside the binary's folder.
    #[arg(long, env = "LEPTOS_SITE_ROOT")]
    pub site_root: Option<PathBuf>,
}

impl ServeArgs {
    /// The sign-in cookie is `Secure` for every request: `--secure-cookies`, or a public address
    /// that is https (the browser reaches the server over TLS, whatever the proxy in front says).
    pub fn cookies_always_secure(&self) -> bool {
        self.secure_cookies || self.public_url.as_deref().is_some_and(|url| url.starts_with("https://"))
    }
}

fn parse_mode(name: &str) -> Result<PermissionMode, String> {
    name.parse()
}

fn parse_public_url(address: &str) -> Result<String, String> {
    let url = reqwest::Url::parse(address).map_err(|error| format!("not an address ({error})"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return Err("the address must start with https:// (or http://)".into());
    }
    Ok(address.trim_end_matches('/').to_string())
}

fn parse_push_contact(contact: &str) -> Result<String, String> {
    let valid = contact.strip_prefix("mailto:").is_some_and(|mail| mail.contains('@'))
        || reqwest::Url::parse(contact).is_ok_and(|url| url.scheme() == "https");
    if !valid {
        return Err("a push contact is a mailto: address (mailto:you@example.com) or an https: one".into());
    }
    Ok(contact.to_string())
}

/// `--agent`: one of [`AgentChoice`], or a name an `--acp` agent may have.
fn parse_agent(name: &str) -> Result<String, String> {
    let name = name.trim();
    if AgentChoice::from_str(name, true).is_ok() {
        return Ok(name.to_ascii_lowercase());
    }
    if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Ok(name.to_string());
    }
    Err(format!("“{name}” is not an agent: auto, scripted, claude, anthropic, or the NAME of an --acp agent"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AgentChoice {
    /// Claude Code if a working one is found, else the Messages API with a key, else scripted.
    Auto,
    /// Plays a scenario offline: the demo, or --scenario FILE.
    Scripted,
    /// The Claude Code CLI (`--claude-bin`), logged in or with ANTHROPIC_API_KEY set.
    Claude,
    /// The Anthropic Messages API directly (ANTHROPIC_API_KEY or --api-key-file), no Claude Code.
    Anthropic,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serve_defaults_to_loopback_and_the_agent_chosen_by_what_is_installed() {
        let cli = Cli::try_parse_from(["askbridge", "serve"]).unwrap();
        let Command::Serve(args) = cli.command else { panic!("serve") };
        assert_eq!(args.addr, "127.0.0.1:3000".parse().unwrap());
        assert_eq!(args.agent, "auto");
        assert_eq!(args.data_dir, PathBuf::from("data"));
        assert_eq!(args.question_timeout, None);
    }

    #[test]
    fn question_timeout_reads_human_durations() {
        let cli = Cli::try_parse_from(["askbridge", "serve", "--question-timeout", "90s"]).unwrap();
        let Command::Serve(args) = cli.command else { panic!("serve") };
        assert_eq!(args.question_timeout, Some(std::time::Duration::from_secs(90)));
        assert!(Cli::try_parse_from(["askbridge", "serve", "--question-timeout", "soon"]).is_err());
    }

    #[test]
    fn notify_urls_are_read_from_repeated_flags_or_a_comma_separated_variable() {
        let cli = Cli::try_parse_from([
            "askbridge",
            "serve",
            "--notify-url",
            "https://ntfy.sh/me,https://example.com/hook",
            "--notify-url",
            "https://hooks.slack.com/services/T/B/X",
            "--notify-detail",
            "minimal",
            "--public-url",
            "https://ab.example.com/",
        ])
        .unwrap();
        let Command::Serve(args) = cli.command else { panic!("serve") };
        let kinds: Vec<_> = args.notify_url.iter().map(Webhook::kind).collect();
        use crate::notify::WebhookKind::{Json, Ntfy, Slack};
        assert_eq!(kinds, [Ntfy, Json, Slack]);
        assert_eq!(args.notify_detail, Detail::Minimal);
        assert_eq!(args.public_url.as_deref(), Some("https://ab.example.com"));
        assert_eq!(args.notify_after, std::time::Duration::from_secs(10));
        assert!(Cli::try_parse_from(["askbridge", "serve", "--notify-url", "https://ntfy.sh/"]).is_err());
        assert!(Cli::try_parse_from(["askbridge", "serve", "--push-contact", "me"]).is_err());
        assert!(Cli::try_parse_from(["askbridge", "serve", "--push-contact", "mailto:me@example.com"]).is_ok());
        assert!(Cli::try_parse_from(["askbridge", "serve", "--public-url", "ab.example.com"]).is_err());
    }

    #[test]
    fn an_https_public_address_makes_the_sign_in_cookie_secure() {
        let serve = |flags: &[&str]| {
            let cli = Cli::try_parse_from([&["askbridge", "serve"], flags].concat()).unwrap();
            let Command::Serve(args) = cli.command else { panic!("serve") };
            args.cookies_always_secure()
        };
        assert!(serve(&["--public-url", "https://ab.example.com"]));
        assert!(serve(&["--secure-cookies"]));
        assert!(!serve(&["--public-url", "http://10.0.0.5:3000"]));
        assert!(!serve(&[]));
    }

    #[test]
    fn agent_env_is_repeated_or_comma_separated() {
        let flags = ["askbridge", "serve", "--agent-env", "GITHUB_TOKEN,AWS_*", "--agent-env", "GOPATH"];
        let Command::Serve(args) = Cli::try_parse_from(flags).unwrap().command else { panic!("serve") };
        assert_eq!(args.agent_env, ["GITHUB_TOKEN", "AWS_*", "GOPATH"]);
    }

    #[test]
    fn help_explains_every_flag_and_the_readme_lists_it() {
        let mut command = <Cli as clap::CommandFactory>::command();
        let serve = command.find_subcommand_mut("serve").unwrap();
        let mut help = Vec::new();
        serve.write_long_help(&mut help).unwrap();
        let help = String::from_utf8(help).unwrap();
        let readme = include_str!("../../README.md");
        let flags: Vec<_> = serve.get_arguments().filter(|arg| arg.get_long().is_some_and(|l| l != "help")).collect();
        assert!(flags.len() >= 14, "every flag of serve: {}", flags.len());
        for arg in flags {
            let flag = format!("--{}", arg.get_long().unwrap());
            assert!(help.contains(&flag), "{flag} missing from the help");
            assert!(arg.get_help().is_some_and(|h| !h.to_string().trim().is_empty()), "{flag} has no help text");
            let env = arg.get_env().map(|env| env.to_string_lossy().to_string());
            if let Some(env) = &env {
                assert!(help.contains(env.as_str()), "{env} missing from the help");
            }
            assert!(readme.contains(&format!("| `{flag}`")), "{flag} is not in the README's table of flags");
        }
    }
}
