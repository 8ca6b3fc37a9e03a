//! A session's settings, switchable while it runs: the permission mode (AskBridge's, or one of
//! its agent's own), and the model of its next turns. Each is checked by the policy and the agent,
//! recorded in the session's log, and sent to the agent now if it runs.

use tracing::info;

use super::SessionManager;
use super::manager::checked_model;
use crate::approval::PermissionMode;
use crate::error::AppError;
use crate::thread::EventBody;

impl SessionManager {
    /// Switches the session's permission mode: recorded for the next start, and sent to the
    /// agent now if it runs.
    pub async fn set_permission_mode(&self, session_id: &str, mode: PermissionMode) -> Result<(), AppError> {
        self.turns.policy.check_mode(mode)?;
        let runtime = self.runtime(session_id).await?;
        // The agent may refuse (bypass not allowed here); a running one switches now.
        let agent = self.store().session(session_id).await?.agent;
        let agent = self.agent.backend(&agent).unwrap_or(&*self.agent);
        agent.set_permission_mode(session_id, mode).await.map_err(|detail| AppError::BadRequest { detail })?;
        let mut state = runtime.lock().await;
        if state.thread.turn.permission_mode != Some(mode) || state.thread.turn.agent_mode.is_some() {
            let changed = EventBody::PermissionModeChanged { mode, agent_mode: None };
            runtime.append_locked(self.store(), &mut state, changed).await?;
        }
        info!(session = %session_id, %mode, "permission mode set");
        Ok(())
    }

    /// Puts the session in one of its agent's own modes (`AgentBackend::modes`), judged as the
    /// AskBridge mode it stands for: the server's policy, and bypass only once `confirmed`.
    pub async fn set_agent_mode(&self, session_id: &str, id: &str, confirmed: bool) -> Result<(), AppError> {
        let summary = self.store().session(session_id).await?;
        let agent = self.agent_named(&summary.agent)?;
        let modes = agent.modes().await;
        let Some(chosen) = modes.iter().find(|mode| mode.id == id) else {
            let names: Vec<&str> = modes.iter().map(|mode| mode.label.as_str()).collect();
            let detail = match names.is_empty() {
                true => format!("{} names no modes of its own", agent.label()),
                false => format!("{} has no mode “{id}”: it offers {}", agent.label(), names.join(", ")),
            };
            return Err(AppError::BadRequest { detail });
        };
        let mode = chosen.acts_as;
        if mode == PermissionMode::BypassPermissions && !confirmed {
            return Err(AppError::BadRequest {
                detail: format!(
                    "“{}” lets the agent act without asking: it needs the person's confirmation (confirm_bypass: true)",
                    chosen.label
                ),
            });
        }
        self.turns.policy.check_mode(mode)?;
        let runtime = self.runtime(session_id).await?;
        agent.set_agent_mode(session_id, id).await.map_err(|detail| AppError::BadRequest { detail })?;
        let mut state = runtime.lock().await;
        if state.thread.turn.agent_mode.as_deref() != Some(id) || state.thread.turn.permission_mode != Some(mode) {
            let changed = EventBody::PermissionModeChanged { mode, agent_mode: Some(id.to_string()) };
            runtime.append_locked(self.store(), &mut state, changed).await?;
        }
        info!(session = %session_id, %mode, agent_mode = id, "agent mode set");
        Ok(())
    }

    /// Switches the session's model for its next turn (`None`: the agent's default): recorded
    /// for every later start, and sent to the agent now if it runs (it may refuse: the switch is
    /// then not recorded, and the error says why).
    pub async fn set_model(&self, session_id: &str, model: Option<&str>) -> Result<(), AppError> {
        let model = match model.map(str::trim).filter(|m| !m.is_empty()) {
            Some(model) => Some(checked_model(model)?),
            None => None,
        };
        let summary = self.store().session(session_id).await?;
        if summary.is_terminal() {
            return Err(AppError::BadRequest {
                detail: "this conversation runs in a terminal: switch its model there (/model)".into(),
            });
        }
        let runtime = self.runtime(session_id).await?;
        let agent = self.agent_named(&summary.agent)?;
        agent.set_model(session_id, model.as_deref()).await.map_err(|detail| AppError::BadRequest { detail })?;
        let mut state = runtime.lock().await;
        if state.thread.turn.model != model {
            runtime.append_locked(self.store(), &mut state, EventBody::ModelChanged { model: model.clone() }).await?;
        }
        info!(session = %session_id, model = model.as_deref().unwrap_or("default"), "model set");
        Ok(())
    }
}
