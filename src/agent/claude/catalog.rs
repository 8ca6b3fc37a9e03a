//! What Claude Code offers a session, as the CLI itself says in its `initialize` response: the
//! models (`models`: `default`, `opus`, `sonnet`, `haiku`, … with their names and prices) and
//! the `/` commands of the folder it runs in (`commands`: built-in ones, the user's and the
//! project's `.claude/commands`, skills). No list is kept by hand.
//!
//! Learned from every CLI a session starts, and, for a folder no CLI has started in yet, from a
//! CLI started only to ask (it answers within a second, calls no API and writes no transcript).
//! Kept per folder; an answer older than [`FRESH`] is still given at once while a newer one is
//! asked for.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tracing::{info, warn};

use super::process::Launch;
use super::start::start_cli;
use crate::thread::{ModelChoice, SlashCommand};

/// How long an answer is taken as it is.
const FRESH: Duration = Duration::from_secs(10 * 60);
/// How long a CLI that could not say is left alone before it is asked again.
const RETRY_AFTER: Duration = Duration::from_secs(60);

/// What the CLI offers in one folder.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Offered {
    pub models: Vec<ModelChoice>,
    pub commands: Vec<SlashCommand>,
}

impl Offered {
    /// Read from an `initialize` response (loosely: entries without a name are skipped).
    pub fn from_initialize(response: &Value) -> Self {
        let text = |entry: &Value, key: &str| entry.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
        let entries = |key: &str| response.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
        let models = entries("models")
            .iter()
            .filter_map(|model| {
                let value = text(model, "value");
                (!value.is_empty()).then(|| ModelChoice {
                    label: Some(text(model, "displayName")).filter(|l| !l.is_empty()).unwrap_or_else(|| value.clone()),
                    description: text(model, "description"),
                    value,
                })
            })
            .collect();
        let commands = entries("commands")
            .iter()
            .filter_map(|command| {
                let name = text(command, "name");
                // `__remote-workflow` and the like are the CLI's own plumbing.
                (!name.is_empty() && !name.starts_with('_')).then(|| SlashCommand {
                    name,
                    description: text(command, "description"),
                    argument_hint: text(command, "argumentHint"),
                })
            })
            .collect();
        Self { models, commands }
    }
}

impl Offered {
    fn is_empty(&self) -> bool {
        self.models.is_empty() && self.commands.is_empty()
    }
}

/// The marker of a CLI started only to ask what it offers.
const ASKING: &str = "catalog";

type Answer = tokio::sync::watch::Receiver<Option<Arc<Offered>>>;

#[derive(Default)]
pub struct Catalog {
    folders: Arc<Mutex<HashMap<PathBuf, Known>>>,
}

#[derive(Default)]
struct Known {
    /// When the CLI last answered (or failed to).
    at: Option<Instant>,
    offered: Option<Arc<Offered>>,
    /// A CLI started to ask, until it answers.
    asking: Option<Answer>,
}

impl Catalog {
    /// A CLI started in `folder` answered `initialize` with `response`.
    pub fn learned(&self, folder: &Path, response: &Value) {
        let offered = Offered::from_initialize(response);
        let mut folders = self.folders.lock().expect("catalog lock");
        let known = folders.entry(folder.to_path_buf()).or_default();
        known.at = Some(Instant::now());
        known.offered = Some(Arc::new(offered));
    }

    /// What the CLI offers in `launch`'s folder: at once when known (asked again in the
    /// background when old), else once a CLI started for it answers, waiting `wait` at most
    /// (nothing, then: the answer still comes, for the next caller).
    pub async fn offered(&self, launch: Launch, wait: Duration) -> Arc<Offered> {
        let mut asking = {
            let mut folders = self.folders.lock().expect("catalog lock");
            let known = folders.entry(launch.workdir.clone()).or_default();
            let keep = if known.offered.is_some() { FRESH } else { RETRY_AFTER };
            if known.at.is_none_or(|at| at.elapsed() >= keep) && known.asking.is_none() {
                known.asking = Some(self.ask(launch));
            }
            match (&known.offered, &known.asking) {
                (Some(offered), _) => return offered.clone(),
                (None, Some(asking)) => asking.clone(),
                // It could not say, a moment ago.
                (None, None) => return Arc::default(),
            }
        };
        match tokio::time::timeout(wait, asking.wait_for(Option::is_some)).await {
            Ok(Ok(offered)) => offered.clone().unwrap_or_default(),
            _ => Arc::default(),
        }
    }

    /// Starts a CLI in `launch`'s folder to ask what it offers; what it says is kept.
    fn ask(&self, launch: Launch) -> Answer {
        let (tell, answer) = tokio::sync::watch::channel(None);
        let folders = self.folders.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let offered = match start_cli(&launch, ASKING, None).await {
                Ok((process, response)) => {
                    process.kill().await;
                    Offered::from_initialize(&response)
                }
                Err(error) => {
                    warn!(folder = %launch.workdir.display(), %error, "could not ask Claude Code for its models and commands");
                    Offered::default()
                }
            };
            info!(folder = %launch.workdir.display(), models = offered.models.len(), commands = offered.commands.len(),
                  ms = started.elapsed().as_millis() as u64, "asked Claude Code what it offers");
            let offered = Arc::new(offered);
            {
                let mut folders = folders.lock().expect("catalog lock");
                let known = folders.entry(launch.workdir.clone()).or_default();
                known.at = Some(Instant::now());
                known.asking = None;
                if !offered.is_empty() {
                    known.offered = Some(offered.clone());
                }
            }
            let _ = tell.send(Some(offered));
        });
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::claude::protocol::traces::initialize_response;

    #[test]
    fn the_initialize_response_lists_the_models_and_commands_to_offer() {
        let response = serde_json::json!({
            "commands": [
                {"name": "compact", "description": "Free up context by summarizing the conversation so far",
                 "argumentHint": "<optional custom summarization instructions>", "builtin": true},
                {"name": "__remote-workflow", "description": "plumbing"},
                {"description": "no name"}
            ],
            "models": [
                {"value": "default", "resolvedModel": "claude-opus-5-5", "displayName": "Default (recommended)",
                 "description": "Use the default model"},
                {"value": "haiku", "resolvedModel": "claude-haiku-5-5"}
            ]
        });
        let offered = Offered::from_initialize(&response);
        assert_eq!(offered.commands.len(), 1);
        assert_eq!(offered.commands[0].name, "compact");
        assert_eq!(offered.commands[0].argument_hint, "<optional custom summarization instructions>");
        let models: Vec<(&str, &str)> = offered.models.iter().map(|m| (m.value.as_str(), m.label.as_str())).collect();
        assert_eq!(models, [("default", "Default (recommended)"), ("haiku", "haiku")]);
    }

    #[test]
    fn a_captured_initialize_response_offers_the_cli_s_models() {
        let offered = Offered::from_initialize(&initialize_response("a_allow.jsonl"));
        let values: Vec<&str> = offered.models.iter().map(|m| m.value.as_str()).collect();
        assert_eq!(values, ["default", "opus", "fable", "sonnet", "haiku"]);
    }
}
