//! Any agent that speaks the Agent Client Protocol (`protocol/acp.md`): Claude's adapter, Gemini
//! CLI, the Codex adapter, OpenCode, Cline. AskBridge is the client: it starts the agent's command,
//! one process per session kept between turns, and answers what the agent asks on the same cards
//! as Claude Code's: a form elicitation on the question card (`form.rs`), a permission request on
//! the approval card (`permission.rs`). The wire is typed in `wire.rs`; the process and its
//! JSON-RPC in `connection.rs`; a turn in `turn.rs`.
//!
//! Why no crate: the ACP's Rust SDK (`agent-client-protocol`) brings its own runtime adapters and
//! schema types for the whole protocol, and lags what the agents send (elicitation is newer than
//! its release here); AskBridge acts on a dozen messages, and reads the rest as `Other`.

mod connection;
mod form;
pub mod host;
pub mod known;
mod leftovers;
mod modes;
mod opening;
mod permission;
mod turn;
pub mod wire;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tracing::{info, warn};

pub use connection::Launch;
use connection::{Connection, Hosting, Inbound, Outstanding};
use leftovers::Leftovers;
use modes::AgentModes;
use turn::Turn;
use wire::SessionStarted;

use super::{AgentBackend, AgentError, Sink, TurnRequest};
use crate::approval::PermissionMode;
use crate::interaction::InteractionRequest;
use crate::thread::{AgentMode, ModelChoice, SlashCommand, Usage};

/// What an agent is told of a request that AskBridge stopped before it was answered.
pub const TOLD_WHEN_LOST: &str = "The request failed: its connection to AskBridge closed before it was answered";

/// How long an agent may take to start (initialize, authenticate and open its session): the
/// adapters start Node and, for Claude's, the CLI inside it.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// One ACP agent, as `--acp NAME=COMMAND` names it.
#[derive(Debug, Clone)]
pub struct AcpConfig {
    /// What `--agent` and the sessions call it.
    pub name: &'static str,
    /// What people call it, on the new-session page.
    pub label: &'static str,
    pub launch: Launch,
    /// Where sessions work unless they choose a folder.
    pub workdir: PathBuf,
    /// Where the running agents' process groups are written down, to end what a killed server
    /// left running when it starts again (`leftovers.rs`), and their hosts listen; `None`: nowhere.
    pub groups_dir: Option<PathBuf>,
    /// Each agent runs under a host that outlives the server (`host.rs`), when set and
    /// `groups_dir` is.
    pub host: Option<HostSettings>,
}

/// How agents are hosted.
#[derive(Debug, Clone)]
pub struct HostSettings {
    /// The `askbridge` binary (its `acp-host` command).
    pub exe: PathBuf,
    /// A host no server attached to, with nothing asked of the person, ends after this long.
    pub idle_exit: Option<Duration>,
}

/// The longest path a Unix socket takes (`sun_path`, less its final zero).
const MAX_SOCKET_PATH: usize = 107;

impl AcpConfig {
    /// Reads `NAME=COMMAND`, the command split as a shell would (quotes, escapes), without a shell.
    pub fn parse(spec: &str, workdir: PathBuf, inherit: super::AgentEnv) -> Result<Self, String> {
        let (name, command) = spec.split_once('=').ok_or_else(|| format!("--acp {spec}: write it NAME=COMMAND"))?;
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(format!("--acp {spec}: the name is letters, digits, - and _"));
        }
        let words = shlex::split(command).ok_or_else(|| format!("--acp {name}: the command's quotes do not close"))?;
        let (program, args) = words.split_first().ok_or_else(|| format!("--acp {name}: the command is empty"))?;
        // Agents are named once, at start-up, and live as long as the server.
        let name: &'static str = Box::leak(name.to_string().into_boxed_str());
        Ok(Self {
            name,
            label: name,
            launch: Launch { program: program.clone(), args: args.to_vec(), inherit, env: Vec::new() },
            workdir,
            groups_dir: None,
            host: None,
        })
    }
}

/// What an agent offers sessions, learnt from the sessions it opened.
#[derive(Debug, Default)]
struct Offer {
    models: Vec<ModelChoice>,
    /// The config option that sets the model.
    model_option: Option<String>,
    commands: Vec<SlashCommand>,
    /// Its own permission modes.
    modes: Option<AgentModes>,
}

/// A running agent, as a mode switch reaches it while a turn holds its slot.
#[derive(Clone)]
struct Live {
    connection: Arc<Connection>,
    acp_session: String,
}

/// A running agent for one session: its process, and its id for the conversation.
struct Running {
    connection: Arc<Connection>,
    acp_session: String,
    /// The agent's running total of the session's cost, at the end of the last turn.
    cost: f64,
    /// The model set for it, if AskBridge set one.
    model: Option<String>,
    /// The folder its host's records are in when another server of this machine started it.
    foreign: Option<Leftovers>,
}

pub struct AcpAgent {
    config: AcpConfig,
    leftovers: Option<Leftovers>,
    /// What the agent offers, as its last session said: its models and its `/` commands.
    offer: std::sync::Mutex<Offer>,
    running: tokio::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<Running>>>>>,
    /// The running agents by session, outside their slots.
    live: std::sync::Mutex<HashMap<String, Live>>,
}

impl AcpAgent {
    /// The agent, once what a killed server left running of it is ended.
    pub fn new(config: AcpConfig) -> Self {
        let leftovers = config.groups_dir.clone().map(Leftovers::new);
        if let Some(leftovers) = &leftovers {
            leftovers.end_previous();
        }
        Self { config, leftovers, offer: Default::default(), running: Default::default(), live: Default::default() }
    }

    /// Ends `agent` and forgets its group.
    fn end(&self, session: &str, agent: Running) {
        self.live.lock().expect("live lock").remove(session);
        agent.connection.kill();
        for leftovers in self.leftovers.iter().chain(&agent.foreign) {
            leftovers.forget(session);
        }
    }

    async fn slot(&self, session: &str) -> Arc<tokio::sync::Mutex<Option<Running>>> {
        self.running.lock().await.entry(session.to_string()).or_default().clone()
    }

    /// The agent of `request`'s session: the one its host kept through the server's restart, or
    /// one started now; and the requests the server before made of it and had no answer to.
    async fn start(&self, request: &TurnRequest, sink: &Sink) -> Result<(Running, Vec<Outstanding>), AgentError> {
        if let Some(attached) = self.reattach(request).await {
            return Ok(attached);
        }
        Ok((self.spawn(request, sink).await?, Vec::new()))
    }

    /// Where the host of `session`'s agent listens, if it still runs on this machine: in this
    /// server's folder, or in that of the server that started it (`recorded`, from the thread:
    /// another server of a team, on the same machine).
    fn live_host(&self, session: &str, recorded: Option<&Path>) -> Option<(Leftovers, PathBuf)> {
        self.config.host.as_ref()?;
        let own = self.leftovers.as_ref().map(|own| own.dir().to_path_buf());
        let theirs = recorded.and_then(Path::parent).map(Path::to_path_buf);
        [own, theirs].into_iter().flatten().map(Leftovers::new).find(|folder| folder.host_alive(session)).map(
            |folder| {
                let socket = folder.socket(session);
                (folder, socket)
            },
        )
    }

    /// Attaches to the host that kept `request`'s agent, if one still runs.
    async fn reattach(&self, request: &TurnRequest) -> Option<(Running, Vec<Outstanding>)> {
        let session = &request.session_id;
        let (leftovers, socket) = self.live_host(session, request.agent_host.as_deref())?;
        match (Connection::attach(&socket, session).await, &request.agent_session) {
            (Ok((connection, outstanding)), Some(acp_session)) => {
                info!(session, "attached to the ACP agent that outlived the server");
                // What the agent counted so far is what the thread counted of it.
                let cost = request.history.iter().filter_map(|m| m.usage.as_ref()?.cost_usd).sum();
                let own = self.leftovers.as_ref().is_some_and(|own| own.dir() == leftovers.dir());
                let foreign = (!own).then_some(leftovers);
                let running = Running { connection, acp_session: acp_session.clone(), cost, model: None, foreign };
                Some((running, outstanding))
            }
            (Ok((connection, _)), None) => {
                connection.kill();
                leftovers.forget(session);
                None
            }
            (Err(error), _) => {
                warn!(session, %error, "could not attach to the ACP agent's host; starting it again");
                leftovers.end(session);
                None
            }
        }
    }

    /// How `session`'s agent is hosted, if it is.
    fn hosting(&self, session: &str) -> Option<Hosting> {
        let (host, leftovers) = (self.config.host.as_ref()?, self.leftovers.as_ref()?);
        let socket = leftovers.socket(session);
        if socket.as_os_str().len() > MAX_SOCKET_PATH {
            warn!(socket = %socket.display(), "the data folder's path is too long for a socket: the agent is not hosted");
            return None;
        }
        Some(Hosting { exe: host.exe.clone(), socket, idle_exit: host.idle_exit })
    }

    /// Starts the agent for `request`'s session: `initialize`, then its earlier conversation
    /// (`session/load` or `session/resume`, when it has one and the agent offers them) or a new
    /// one, in the permission mode the session asks for.
    async fn spawn(&self, request: &TurnRequest, sink: &Sink) -> Result<Running, AgentError> {
        let workdir = request.workdir.clone().unwrap_or_else(|| self.config.workdir.clone());
        let session = &request.session_id;
        let launch = &self.config.launch;
        let hosting = self.hosting(session);
        let hosted_at = hosting.as_ref().map(|hosting| hosting.socket.clone());
        let started = match &hosting {
            Some(hosting) => {
                let _ = std::fs::create_dir_all(hosting.socket.parent().unwrap_or(Path::new(".")));
                Connection::spawn_hosted(launch, hosting, &workdir, session).await
            }
            None => Connection::spawn(launch, &workdir, session),
        };
        let connection = started.map_err(|error| {
            AgentError::Failed(format!("could not start {} ({}): {error}", self.config.name, launch.program))
        })?;
        if let Some(leftovers) = &self.leftovers {
            match (connection.hosted(), connection.host_pid(), connection.pid()) {
                (true, Some(host), _) => leftovers.record_host(session, host),
                (false, _, Some(pid)) => leftovers.record(session, pid),
                _ => {}
            }
        }
        let opened =
            tokio::time::timeout(START_TIMEOUT, opening::open(&connection, &workdir, request.agent_session.as_deref()));
        let (initialized, started, acp_session, loaded) = match opened.await {
            Ok(Ok(opened)) => opened,
            Ok(Err(error)) => return Err(AgentError::Failed(format!("{} did not start: {error}", self.config.name))),
            Err(_) => {
                return Err(AgentError::Failed(format!("{} did not start within {START_TIMEOUT:?}", self.config.name)));
            }
        };
        // What the agent replayed of a loaded conversation is in the thread already.
        self.learn_commands(opening::drain(&connection).await);
        if request.agent_session.is_some() && !loaded {
            sink.notice("The agent could not reopen its earlier conversation: this turn starts a new one.").await?;
        }
        if let Some(modes) = AgentModes::of(&started) {
            opening::put_in_mode(&connection, &acp_session, &modes, request, sink).await?;
        }
        self.learn(&started);
        let info = match &initialized.agent_info {
            Some(agent) => {
                let title = agent.title.as_deref().unwrap_or(&agent.name);
                format!("{title} {} (ACP)", agent.version.as_deref().unwrap_or_default()).replace("  ", " ")
            }
            None => format!("{} (ACP)", self.config.name),
        };
        match hosted_at {
            Some(socket) => sink.agent_started_in(&info, acp_session.clone(), socket.display().to_string()).await?,
            None => sink.agent_started(&info, Some(acp_session.clone())).await?,
        }
        Ok(Running { connection, acp_session, cost: 0.0, model: None, foreign: None })
    }
}

impl AcpAgent {
    /// Puts `session`'s agent in mode `id` now, if it runs.
    async fn switch_live(&self, session: &str, modes: &AgentModes, id: &str) -> Result<(), String> {
        let live = self.live.lock().expect("live lock").get(session).cloned();
        let Some(live) = live else { return Ok(()) };
        let (method, params) = modes.switch(&live.acp_session, id);
        live.connection
            .call(method, params)
            .await
            .map(drop)
            .map_err(|error| format!("{} did not take the mode “{id}”: {error}", self.config.label))
    }

    /// Keeps what a session's start says the agent offers (its models).
    fn learn(&self, started: &SessionStarted) {
        let mut offer = self.offer.lock().expect("offer lock");
        if let Some(modes) = AgentModes::of(started) {
            offer.modes = Some(modes);
        }
        let Some(option) = started.model_option() else { return };
        offer.models = option
            .choices()
            .into_iter()
            .map(|(value, label, description)| ModelChoice { value, label, description })
            .collect();
        offer.model_option = Some(option.id.clone());
    }

    /// Sets the model the session chose, when the agent runs another.
    async fn switch_model(&self, agent: &mut Running, request: &TurnRequest, sink: &Sink) -> Result<(), AgentError> {
        let Some(model) = request.model.clone().filter(|model| agent.model.as_ref() != Some(model)) else {
            return Ok(());
        };
        let Some(option) = self.offer.lock().expect("offer lock").model_option.clone() else { return Ok(()) };
        let params = json!({"sessionId": agent.acp_session, "configId": option, "value": model});
        match agent.connection.call("session/set_config_option", params).await {
            Ok(_) => agent.model = Some(model),
            Err(error) => sink.notice(&format!("The agent did not take the model “{model}”: {error}")).await?,
        }
        Ok(())
    }

    fn learn_commands(&self, commands: Option<Vec<SlashCommand>>) {
        if let Some(commands) = commands {
            self.offer.lock().expect("offer lock").commands = commands;
        }
    }
}

/// The prompt: the message's text (files are named in it; ACP resources come later).
fn prompt(request: &TurnRequest) -> Vec<Value> {
    let text = if request.resume && request.text.is_empty() { super::CONTINUE } else { &request.text };
    vec![json!({"type": "text", "text": text})]
}

impl AgentBackend for AcpAgent {
    fn name(&self) -> &'static str {
        self.config.name
    }

    fn label(&self) -> &'static str {
        self.config.label
    }

    fn default_workdir(&self) -> Option<PathBuf> {
        Some(self.config.workdir.clone())
    }

    fn models(&self) -> BoxFuture<'_, Vec<ModelChoice>> {
        Box::pin(async { self.offer.lock().expect("offer lock").models.clone() })
    }

    fn commands<'a>(&'a self, workdir: Option<&'a Path>) -> BoxFuture<'a, Vec<SlashCommand>> {
        let _ = workdir;
        Box::pin(async { self.offer.lock().expect("offer lock").commands.clone() })
    }

    /// The model is set (`session/set_config_option`) as the session's next turn starts: the
    /// agent runs one turn at a time, and a turn under way keeps the model it began with.
    fn set_model<'a>(&'a self, session: &'a str, model: Option<&'a str>) -> BoxFuture<'a, Result<(), String>> {
        let _ = session;
        Box::pin(async move {
            let offer = self.offer.lock().expect("offer lock");
            match model {
                Some(model) if !offer.models.is_empty() && !offer.models.iter().any(|m| m.value == model) => {
                    Err(format!("{} offers no model “{model}”", self.config.name))
                }
                _ => Ok(()),
            }
        })
    }

    /// Without a host (or once it is gone: a reboot), the agent died with the server; its request
    /// was never answered, and the conversation it reopens records the call as failed (Claude's
    /// adapter: "Tool permission stream closed before response received", acp.md §4). Nothing of
    /// the person's reaches it: the card says so, and an answer given now goes as a message.
    fn told_when_lost(&self, request: &InteractionRequest) -> Option<String> {
        let _ = request;
        Some(TOLD_WHEN_LOST.to_string())
    }

    /// A mode the agent has no like of is refused, naming those it has; a running agent switches
    /// now (mid-turn too), one that does not at its start.
    fn set_permission_mode<'a>(&'a self, session: &'a str, mode: PermissionMode) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let modes = self.offer.lock().expect("offer lock").modes.clone();
            let Some(modes) = modes else { return Ok(()) };
            let Some(target) = modes.like(mode) else {
                let (label, names) = (self.config.label, modes.names());
                return Err(format!("{label} has no mode like “{}”: it offers {names}", mode.label().0));
            };
            self.switch_live(session, &modes, target).await
        })
    }

    fn modes(&self) -> BoxFuture<'_, Vec<AgentMode>> {
        Box::pin(async {
            self.offer.lock().expect("offer lock").modes.as_ref().map(|m| m.list.clone()).unwrap_or_default()
        })
    }

    /// One of the agent's own modes (`modes`): a running agent switches now, one that does not
    /// at its start.
    fn set_agent_mode<'a>(&'a self, session: &'a str, id: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let modes = self.offer.lock().expect("offer lock").modes.clone();
            match modes {
                Some(modes) if modes.has(id) => self.switch_live(session, &modes, id).await,
                Some(modes) => Err(format!("{} has no mode “{id}”: it offers {}", self.config.label, modes.names())),
                None => Err(format!("{} names no modes of its own", self.config.label)),
            }
        })
    }

    fn outlived_the_server(&self, session: &str, host: Option<&Path>) -> bool {
        self.live_host(session, host).is_some()
    }

    fn run_turn(&self, request: TurnRequest, sink: Sink) -> BoxFuture<'_, Result<Option<Usage>, AgentError>> {
        Box::pin(async move {
            let slot = self.slot(&request.session_id).await;
            let mut running = slot.lock().await;
            let mut outstanding = Vec::new();
            if running.is_none() {
                let (agent, unanswered) = self.start(&request, &sink).await?;
                let live = Live { connection: agent.connection.clone(), acp_session: agent.acp_session.clone() };
                self.live.lock().expect("live lock").insert(request.session_id.clone(), live);
                *running = Some(agent);
                outstanding = unanswered;
            }
            let Some(agent) = running.as_mut() else { unreachable!("started above") };
            let grace = self.interrupt_grace();
            let earlier = outstanding.into_iter().find(|o| o.method == "session/prompt").map(|o| o.answer);
            let earlier = match earlier {
                Some(answer) if request.resume => Some(answer),
                Some(answer) => {
                    // The turn the server before was cut short in: stopped, as the thread says.
                    stop_cut_short(agent, answer, grace).await;
                    None
                }
                None => None,
            };
            self.switch_model(agent, &request, &sink).await?;
            let mut turn = Turn::new(
                &agent.connection,
                &agent.acp_session,
                &sink,
                &request.cancel,
                grace,
                agent.cost,
                &request.history,
            );
            let result = match earlier {
                Some(answer) => turn.resume(answer).await,
                None => turn.run(prompt(&request)).await,
            };
            let (cost, commands) = (turn.cost_now, turn.commands.take());
            drop(turn);
            self.learn_commands(commands);
            agent.cost = cost.unwrap_or(agent.cost);
            if let Err(AgentError::Parked) = &result {
                // Its host keeps it waiting; the answer attaches again (`reattach`).
                self.live.lock().expect("live lock").remove(&request.session_id);
                running.take();
            } else if let Err(AgentError::Failed(_) | AgentError::Interrupted) = &result
                && !is_alive(&agent.connection).await
                && let Some(gone) = running.take()
            {
                // Its next turn starts it again, with its conversation.
                self.end(&request.session_id, gone);
            }
            result
        })
    }

    fn end_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let slot = self.running.lock().await.remove(session);
            if let Some(slot) = slot
                && let Some(agent) = slot.lock().await.take()
            {
                self.end(session, agent);
            } else if let Some(leftovers) = &self.leftovers {
                // Parked in its host, or kept by it through a restart.
                leftovers.end(session);
            }
        })
    }

    fn shut_down(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let slots: Vec<_> = self.running.lock().await.drain().collect();
            for (session, slot) in slots {
                if let Some(agent) = slot.lock().await.take() {
                    self.end(&session, agent);
                }
            }
            info!(agent = self.config.name, "ACP agents ended");
        })
    }
}

/// Stops the turn a server before left the agent in (it was cut short: the thread says so), and
/// refuses what the agent asked in it, before the person's new message goes.
async fn stop_cut_short(agent: &Running, answer: turn::Answer, grace: Duration) {
    agent.connection.notify("session/cancel", json!({"sessionId": agent.acp_session}));
    let cancelled = async {
        let mut answer = answer;
        loop {
            tokio::select! {
                _ = &mut answer => return,
                _ = tokio::time::sleep(Duration::from_millis(50)) => turn::refuse_all(&agent.connection).await,
            }
        }
    };
    if tokio::time::timeout(grace, cancelled).await.is_err() {
        warn!("the ACP agent did not end the turn it was cut short in");
    }
    turn::refuse_all(&agent.connection).await;
}

/// Whether the agent's process still answers: its output is open.
async fn is_alive(connection: &Connection) -> bool {
    let mut inbox = connection.inbox.lock().await;
    loop {
        match inbox.try_recv() {
            Ok(Inbound::Closed(_)) | Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => return false,
            Ok(_) => continue,
            Err(tokio::sync::mpsc::error::TryRecvError::Empty) => return !inbox.is_closed() && connection.running(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_acp_agent_is_named_and_its_command_split_as_a_shell_would() {
        let config =
            AcpConfig::parse(r#"gemini=node "/opt/my tools/gemini.js" --acp"#, "/w".into(), Default::default())
                .unwrap();
        assert_eq!(config.name, "gemini");
        assert_eq!(config.launch.program, "node");
        assert_eq!(config.launch.args, ["/opt/my tools/gemini.js", "--acp"]);
        assert!(AcpConfig::parse("gemini", "/w".into(), Default::default()).unwrap_err().contains("NAME=COMMAND"));
        assert!(AcpConfig::parse("x=", "/w".into(), Default::default()).unwrap_err().contains("empty"));
        assert!(AcpConfig::parse("a b=c", "/w".into(), Default::default()).is_err());
        assert!(AcpConfig::parse(r#"x=node "open"#, "/w".into(), Default::default()).unwrap_err().contains("quotes"));
    }

    #[tokio::test]
    async fn a_mode_the_agent_lacks_is_refused_naming_those_it_has() {
        let agent = AcpAgent::new(AcpConfig::parse("cline=cline --acp", "/w".into(), Default::default()).unwrap());
        let modes = json!({"currentModeId": "act", "availableModes": [{"id": "plan", "name": "Plan"}, {"id": "act", "name": "Act"}]});
        agent.learn(&serde_json::from_value(json!({"sessionId": "s", "modes": modes})).unwrap());
        let refused = agent.set_permission_mode("s1", PermissionMode::AcceptEdits).await.unwrap_err();
        assert!(refused.contains("“Accept edits”") && refused.contains("it offers Plan, Act"), "{refused}");
        assert!(agent.set_permission_mode("s1", PermissionMode::Plan).await.is_ok(), "not running: taken at its start");
    }
}
