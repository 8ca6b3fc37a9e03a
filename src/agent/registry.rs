//! Several agents behind one: each session talks to the agent it was created with (its `agent`
//! name), and the server's `--agent` only picks the one new sessions get unless the person picks
//! another on the new-session page.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use super::{AgentBackend, AgentError, Sink, TurnRequest};
use crate::approval::PermissionMode;
use crate::interaction::InteractionRequest;
use crate::thread::{ModelChoice, SlashCommand, Usage};

pub struct Agents {
    /// New sessions get this one unless they pick another; first in `all`.
    default: Arc<dyn AgentBackend>,
    all: Vec<Arc<dyn AgentBackend>>,
}

impl Agents {
    /// `default` first, then `others` (an agent already there, by name, is left out).
    pub fn new(default: Arc<dyn AgentBackend>, others: Vec<Arc<dyn AgentBackend>>) -> Self {
        let mut all = vec![default.clone()];
        for other in others {
            if !all.iter().any(|agent| agent.name() == other.name()) {
                all.push(other);
            }
        }
        Self { default, all }
    }

    fn find(&self, name: &str) -> Option<&Arc<dyn AgentBackend>> {
        self.all.iter().find(|agent| agent.name() == name)
    }
}

impl AgentBackend for Agents {
    fn name(&self) -> &'static str {
        self.default.name()
    }

    fn label(&self) -> &'static str {
        self.default.label()
    }

    fn names(&self) -> Vec<&'static str> {
        self.all.iter().map(|agent| agent.name()).collect()
    }

    fn backend(&self, name: &str) -> Option<&dyn AgentBackend> {
        self.find(name).map(|agent| &**agent)
    }

    fn run_turn(&self, request: TurnRequest, sink: Sink) -> BoxFuture<'_, Result<Option<Usage>, AgentError>> {
        let agent = if request.agent.is_empty() { Some(&self.default) } else { self.find(&request.agent) };
        match agent {
            Some(agent) => agent.run_turn(request, sink),
            None => {
                let names = self.names().join(", ");
                let error = format!(
                    "this session talks to the agent “{}”, which this server does not run (it runs: {names}); \
                     start the server with it, or start a new session",
                    request.agent
                );
                Box::pin(async move { Err(AgentError::Failed(error)) })
            }
        }
    }

    fn interrupt_grace(&self) -> Duration {
        self.all.iter().map(|agent| agent.interrupt_grace()).max().unwrap_or(Duration::from_secs(5))
    }

    fn told_when_lost(&self, request: &InteractionRequest) -> Option<String> {
        self.default.told_when_lost(request)
    }

    fn default_workdir(&self) -> Option<std::path::PathBuf> {
        self.default.default_workdir()
    }

    fn default_permission_mode(&self) -> PermissionMode {
        self.default.default_permission_mode()
    }

    fn example_prompts(&self) -> Vec<String> {
        self.default.example_prompts()
    }

    fn models(&self) -> BoxFuture<'_, Vec<ModelChoice>> {
        self.default.models()
    }

    fn commands<'a>(&'a self, workdir: Option<&'a std::path::Path>) -> BoxFuture<'a, Vec<SlashCommand>> {
        self.default.commands(workdir)
    }

    /// Every agent checks the mode; only the one running `session` has anything to switch.
    fn set_permission_mode<'a>(&'a self, session: &'a str, mode: PermissionMode) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            // Only checked (a new session's): the default agent's, the one it gets.
            if session.is_empty() {
                return self.default.set_permission_mode(session, mode).await;
            }
            for agent in &self.all {
                agent.set_permission_mode(session, mode).await?;
            }
            Ok(())
        })
    }

    fn set_model<'a>(&'a self, session: &'a str, model: Option<&'a str>) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            for agent in &self.all {
                agent.set_model(session, model).await?;
            }
            Ok(())
        })
    }

    fn end_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            for agent in &self.all {
                agent.end_session(session).await;
            }
        })
    }

    fn shut_down(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            for agent in &self.all {
                agent.shut_down().await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::RecordingSink;
    use crate::agent::scripted::{Scenario, ScriptedAgent};

    struct Named(&'static str);

    impl AgentBackend for Named {
        fn name(&self) -> &'static str {
            self.0
        }
        fn run_turn(&self, _: TurnRequest, _: Sink) -> BoxFuture<'_, Result<Option<Usage>, AgentError>> {
            let name = self.0;
            Box::pin(async move { Err(AgentError::Failed(format!("ran by {name}"))) })
        }
    }

    fn request(agent: &str) -> TurnRequest {
        TurnRequest {
            session_id: "s".into(),
            agent: agent.into(),
            model: None,
            text: "hi".into(),
            resume: false,
            history: Vec::new(),
            agent_session: None,
            workdir: None,
            permission_mode: None,
            agent_mode: None,
            agent_host: None,
            cancel: Default::default(),
            attachments: Default::default(),
        }
    }

    #[tokio::test]
    async fn each_turn_runs_on_its_sessions_agent_and_an_unknown_one_is_named_in_the_error() {
        let agents = Agents::new(Arc::new(Named("first")), vec![Arc::new(Named("second")), Arc::new(Named("first"))]);
        assert_eq!(agents.names(), ["first", "second"]);
        let sink = || RecordingSink::new("s", |_| unreachable!("no question")).sink();
        let ran = |result: Result<Option<Usage>, AgentError>| match result {
            Err(AgentError::Failed(said)) => said,
            other => panic!("{other:?}"),
        };
        assert_eq!(ran(agents.run_turn(request("second"), sink()).await), "ran by second");
        assert_eq!(ran(agents.run_turn(request(""), sink()).await), "ran by first");
        let unknown = ran(agents.run_turn(request("gone"), sink()).await);
        assert!(unknown.contains("“gone”") && unknown.contains("first, second"), "{unknown}");
    }

    #[test]
    fn the_default_agent_speaks_for_the_server() {
        let demo: Arc<dyn AgentBackend> = Arc::new(ScriptedAgent::new(Scenario::demo()));
        let agents = Agents::new(Arc::new(Named("first")), vec![demo]);
        assert_eq!(agents.name(), "first");
        assert!(agents.example_prompts().is_empty(), "the demo's examples are the demo's");
        assert_eq!(agents.backend("scripted").map(|a| a.name()), Some("scripted"));
    }
}
