//! The agents this server offers: each one that can work on this machine (Claude Code when found
//! and signed in, the Messages API with a key, the offline demo always), and which one new sessions
//! get by default (`--agent`, or `auto`'s choice); and whether any may bypass permissions here.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::ValueEnum;
use tracing::info;

use super::cli::{AgentChoice, BoxError, ServeArgs};
use crate::agent::AgentEnv;
use crate::agent::acp::known::{KNOWN, Search};
use crate::agent::acp::{AcpAgent, AcpConfig, HostSettings, Launch};
use crate::agent::anthropic::{AnthropicAgent, AnthropicConfig};
use crate::agent::claude::{ClaudeCliBackend, ClaudeConfig};
use crate::agent::scripted::{Scenario, ScriptedAgent};
use crate::agent::{AgentBackend, Agents};

/// Every agent that can work on this machine, `--agent`'s the default for new sessions: Claude
/// Code when found and signed in, the Messages API with a key, the offline demo always, and each
/// `--acp` agent.
pub(super) fn build_agents(args: &ServeArgs) -> Result<Arc<dyn AgentBackend>, BoxError> {
    let environment = Environment::of_this_process();
    let mut acp = acp_agents(args, &environment)?;
    let chosen = match AgentChoice::from_str(&args.agent, true) {
        Ok(AgentChoice::Auto) => {
            let (auto, why) = choose_agent(args, &environment);
            info!(agent = ?auto, "--agent auto: {why}");
            Some(auto)
        }
        Ok(chosen) => Some(chosen),
        Err(_) => None,
    };
    let default = match chosen {
        Some(choice) => build_agent(args, choice)?,
        None => {
            let at = acp.iter().position(|agent| agent.name() == args.agent).ok_or_else(|| {
                format!("--agent {}: no such agent (give it with --acp {}=COMMAND)", args.agent, args.agent)
            })?;
            acp.remove(at)
        }
    };
    let mut others = Vec::new();
    for other in [AgentChoice::Claude, AgentChoice::Anthropic, AgentChoice::Scripted] {
        if Some(other) == chosen || !can_work(args, &environment, other) {
            continue;
        }
        match build_agent(args, other) {
            Ok(agent) => others.push(agent),
            Err(error) => info!(agent = ?other, %error, "not offered to new sessions"),
        }
    }
    others.extend(acp);
    Ok(Arc::new(Agents::new(default, others)))
}

/// The `--acp` agents, then the well-known ones found here and signed in (`acp/known.rs`), each
/// working in `--workdir`, under a host that outlives the server.
fn acp_agents(args: &ServeArgs, environment: &Environment) -> Result<Vec<Arc<dyn AgentBackend>>, BoxError> {
    let workdir = match &args.workdir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()?,
    };
    let mut configs: Vec<AcpConfig> = Vec::new();
    for spec in &args.acp {
        let config = AcpConfig::parse(spec, workdir.clone(), AgentEnv::new(&args.agent_env)?)?;
        if ["auto", "scripted", "claude", "anthropic"].contains(&config.name)
            || configs.iter().any(|other| other.name == config.name)
        {
            return Err(format!("--acp {spec}: the name {} is taken", config.name).into());
        }
        configs.push(config);
    }
    let project = std::env::current_dir()?;
    let var = |name: &str| std::env::var(name).ok();
    let search =
        Search { path: environment.path.as_deref(), project: &project, home: environment.home.as_deref(), var: &var };
    let key_file = args.api_key_file.is_some();
    let given: Vec<&'static str> = configs.iter().map(|config| config.name).collect();
    for known in KNOWN.iter().filter(|known| !given.contains(&known.name)) {
        let Some(program) = known.find(&search) else { continue };
        if !(known.signed_in(&search) || (known.name == "claude-acp" && key_file)) {
            info!(agent = known.name, program = %program.display(), "found, but not signed in here: not offered");
            continue;
        }
        let mut passes = args.agent_env.clone();
        passes.extend(known.passes.iter().map(|name| name.to_string()));
        configs.push(AcpConfig {
            name: known.name,
            label: known.label,
            launch: Launch {
                program: program.display().to_string(),
                args: known.args.iter().map(|arg| arg.to_string()).collect(),
                inherit: AgentEnv::new(&passes)?,
                env: known.sets.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect(),
            },
            workdir: workdir.clone(),
            groups_dir: None,
            host: None,
        });
    }
    let mut agents: Vec<Arc<dyn AgentBackend>> = Vec::new();
    for mut config in configs {
        config.groups_dir = Some(args.data_dir.join("acp"));
        // Each agent under a host of this binary's, so that what it asks outlives the server.
        config.host = std::env::current_exe().ok().map(|exe| HostSettings { exe, idle_exit: Some(args.idle_exit) });
        // A key given as a file reaches the agent as its variable (the file stays ours), but not
        // an agent known to talk to another provider.
        let other_provider = KNOWN.iter().any(|known| known.name == config.name && known.name != "claude-acp");
        if args.api_key_file.is_some()
            && !other_provider
            && let Some(key) = api_key(args)?
        {
            config.launch.env.push(("ANTHROPIC_API_KEY".to_string(), key));
        }
        info!(agent = config.name, program = config.launch.program, "ACP agent offered");
        agents.push(Arc::new(AcpAgent::new(config)));
    }
    Ok(agents)
}

/// Whether `agent` can work here besides the one `--agent` picked.
fn can_work(args: &ServeArgs, environment: &Environment, agent: AgentChoice) -> bool {
    let key = args.api_key_file.is_some() || args.api_key.as_deref().is_some_and(|k| !k.trim().is_empty());
    match agent {
        AgentChoice::Claude => {
            let claude = match &args.claude_bin {
                Some(bin) => bin.is_file(),
                None => claude_on_path(environment.path.as_deref()).is_some(),
            };
            claude && claude_login(environment, key).is_some()
        }
        AgentChoice::Anthropic => key,
        AgentChoice::Scripted | AgentChoice::Auto => true,
    }
}

fn build_agent(args: &ServeArgs, choice: AgentChoice) -> Result<Arc<dyn AgentBackend>, BoxError> {
    match choice {
        AgentChoice::Auto | AgentChoice::Scripted => {
            let scenario = match &args.scenario {
                Some(path) => Scenario::load(path)?,
                None => Scenario::demo(),
            };
            info!(scenario = %scenario.name, turns = scenario.turns.len(), "scripted agent ready");
            // Its writes (`writes = true` steps) land in `--workdir` for a session that chose no
            // folder; the new-session page then offers one, with a worktree.
            let workdir = match &args.workdir {
                Some(dir) => Some(dir.canonicalize().map_err(|error| format!("--workdir {}: {error}", dir.display()))?),
                None => None,
            };
            Ok(Arc::new(ScriptedAgent::new(scenario).in_folder(workdir)))
        }
        AgentChoice::Claude => {
            let workdir = match &args.workdir {
                Some(dir) => dir.clone(),
                None => std::env::current_dir()?,
            };
            if !workdir.is_dir() {
                return Err(format!("--workdir {} is not a folder", workdir.display()).into());
            }
            let bin = args.claude_bin.clone().unwrap_or_else(|| PathBuf::from("claude"));
            let agent_env = AgentEnv::new(&args.agent_env)?;
            // A key given as a file reaches the CLI as its variable (the file stays ours).
            let mut env = Vec::new();
            if args.api_key_file.is_some()
                && let Some(key) = api_key(args)?
            {
                env.push(("ANTHROPIC_API_KEY".to_string(), key));
            }
            info!(bin = %bin.display(), workdir = %workdir.display(), mode = %args.permission_mode, "Claude Code agent ready");
            Ok(Arc::new(ClaudeCliBackend::new(ClaudeConfig {
                bin,
                workdir,
                permission_mode: args.permission_mode,
                model: args.model.clone(),
                answer_path: args.answer_path,
                agent_env,
                env,
                allow_bypass: bypass_refused(args).is_none(),
                max_agents: args.max_agents.unwrap_or_else(ClaudeConfig::default_max_agents),
                idle_exit: Some(args.idle_exit),
            })))
        }
        AgentChoice::Anthropic => {
            let api_key = api_key(args)?
                .ok_or("--agent anthropic needs an API key: set ANTHROPIC_API_KEY, or give --api-key-file FILE")?;
            let system_prompt = match &args.system_prompt {
                Some(path) => Some(
                    std::fs::read_to_string(path)
                        .map_err(|e| format!("cannot read --system-prompt {}: {e}", path.display()))?,
                ),
                None => None,
            };
            let mut config = AnthropicConfig::new(&api_key);
            config.base_url = args.base_url.clone();
            config.model = args.model.clone().unwrap_or(config.model);
            config.max_tokens = args.max_tokens;
            config.system_prompt = system_prompt.filter(|p| !p.trim().is_empty());
            info!(base_url = %config.base_url, model = %config.model, max_tokens = config.max_tokens, "Messages API agent ready");
            Ok(Arc::new(AnthropicAgent::new(config)?))
        }
    }
}

/// The API key from `--api-key-file` or `ANTHROPIC_API_KEY`, if either gives one.
pub(super) fn api_key(args: &ServeArgs) -> Result<Option<String>, BoxError> {
    if let Some(path) = &args.api_key_file {
        let key =
            std::fs::read_to_string(path).map_err(|e| format!("cannot read --api-key-file {}: {e}", path.display()))?;
        let key = key.trim();
        if key.is_empty() {
            return Err(format!("--api-key-file {} is empty", path.display()).into());
        }
        return Ok(Some(key.to_string()));
    }
    Ok(args.api_key.as_deref().map(str::trim).filter(|k| !k.is_empty()).map(str::to_string))
}

/// What `--agent auto` looks at, apart from the flags.
pub(super) struct Environment {
    pub(super) path: Option<std::ffi::OsString>,
    pub(super) home: Option<PathBuf>,
    pub(super) vars: Vec<(String, String)>,
}

impl Environment {
    fn of_this_process() -> Self {
        let vars = ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR"]
            .iter()
            .filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?)))
            .collect();
        Self { path: std::env::var_os("PATH"), home: std::env::var_os("HOME").map(PathBuf::from), vars }
    }

    fn var(&self, name: &str) -> Option<&str> {
        self.vars.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str()).filter(|v| !v.trim().is_empty())
    }
}

/// `--agent auto`: Claude Code when a working one is found (given with `--claude-bin`, or
/// `claude` on PATH — not the copy a project's `node_modules/.bin` holds for its own tests —
/// and logged in or given a key); else the Messages API when a key is set; else the offline demo.
/// Returns the choice and why, for the log.
pub(super) fn choose_agent(args: &ServeArgs, env: &Environment) -> (AgentChoice, String) {
    let claude = match &args.claude_bin {
        Some(bin) => bin.is_file().then(|| bin.clone()),
        None => claude_on_path(env.path.as_deref()),
    };
    let key = args.api_key_file.is_some() || args.api_key.as_deref().is_some_and(|k| !k.trim().is_empty());
    if let Some(bin) = &claude
        && let Some(login) = claude_login(env, key)
    {
        return (AgentChoice::Claude, format!("Claude Code at {} ({login})", bin.display()));
    }
    let found = match &claude {
        Some(bin) => format!("Claude Code at {} is not logged in; ", bin.display()),
        None => "no Claude Code found; ".to_string(),
    };
    if key {
        (AgentChoice::Anthropic, format!("{found}an API key is set: the Messages API"))
    } else {
        (AgentChoice::Scripted, format!("{found}no API key: the offline scripted demo"))
    }
}

/// `claude` on PATH, skipping `node_modules/.bin` folders (`make` puts the project's own there).
fn claude_on_path(path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .filter(|dir| !dir.ends_with("node_modules/.bin"))
        .map(|dir| dir.join("claude"))
        .find(|bin| is_executable(bin))
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// How Claude Code would sign in, if it can: a key or token in the environment, or a login
/// stored in its config folder.
fn claude_login(env: &Environment, key: bool) -> Option<&'static str> {
    if key || env.var("ANTHROPIC_API_KEY").is_some() {
        return Some("with an API key");
    }
    if env.var("ANTHROPIC_AUTH_TOKEN").is_some() || env.var("CLAUDE_CODE_OAUTH_TOKEN").is_some() {
        return Some("with a token");
    }
    let config = match env.var("CLAUDE_CONFIG_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => env.home.as_ref()?.join(".claude"),
    };
    if config.join(".credentials.json").is_file() {
        return Some("logged in");
    }
    let state = env.home.as_ref().map(|home| home.join(".claude.json"));
    let logged_in = state
        .and_then(|file| std::fs::read_to_string(file).ok())
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .is_some_and(|state| state.get("oauthAccount").is_some_and(|a| !a.is_null()));
    logged_in.then_some("logged in")
}

/// Why no session may switch to bypassPermissions on this server, if none may.
pub(super) fn bypass_refused(args: &ServeArgs) -> Option<String> {
    if args.no_bypass {
        Some("this server was started with --no-bypass, so bypassPermissions is not available".into())
    } else if !args.addr.ip().is_loopback() && !args.allow_bypass {
        Some(format!(
            "bypassPermissions is off on a network address ({}): it lets anyone with the token run              anything without a card. Start the server with --allow-bypass to allow it.",
            args.addr
        ))
    } else {
        None
    }
}
