//! The turns nobody ended: those a server left when it stopped or died, which the next start (or
//! the server that takes its sessions over, `Turns::take_over`) ends, saying so in the thread.

use std::path::Path;

use tracing::warn;

use super::runtime::{RuntimeState, SessionRuntime};
use super::turns::Turns;
use crate::ids::new_id;
use crate::interaction::InteractionOutcome;
use crate::store::StoreResult;
use crate::thread::{Block, EventBody, NextTurn, TurnOutcome};

impl Turns {
    /// Ends the turns that a previous run of the server left unfinished, saying so in the thread
    /// (where servers share the store: the turns no live server holds).
    pub(super) async fn recover_unfinished(&self) -> StoreResult<()> {
        self.leases().forget_previous_run().await?;
        for id in self.store().sessions_with_unfinished_turns().await? {
            let runtime = self.log.runtime(&id).await?;
            let mut state = runtime.lock().await;
            // A turn this process runs is no previous run's (an expiry may have resumed one
            // already); another server may be taking it at the same moment: one of them does.
            if state.turn.is_some() || !self.leases().take(&id).await? {
                continue;
            }
            runtime.catch_up_locked(self.store(), &mut state).await?;
            if state.thread.turn.working {
                warn!(session = %id, "the server stopped during a turn; ending it");
                self.end_abandoned(&runtime, &mut state, "The server stopped").await?;
            }
            self.leases().release(&id).await?;
        }
        Ok(())
    }

    /// Ends a turn whose server stopped while it ran. What waited and was not parked: the agent
    /// answered it by itself when its server died; the card says what it was told, never that
    /// the person answered.
    pub(super) async fn end_abandoned(
        &self,
        runtime: &SessionRuntime,
        state: &mut RuntimeState,
        what: &str,
    ) -> StoreResult<()> {
        let agent = self.agent.backend(&self.store().session(runtime.id()).await?.agent).unwrap_or(&*self.agent);
        // An agent that outlived the server (under its host) waits on: its requests park.
        let waits_on = agent.outlived_the_server(runtime.id(), state.thread.turn.agent_host.as_deref().map(Path::new));
        let lost: Vec<(String, Option<String>)> = state
            .thread
            .messages
            .iter()
            .flat_map(|message| message.blocks.iter())
            .filter_map(|block| match block {
                Block::ToolCall(call) => {
                    let interaction = call.interaction.as_ref().filter(|i| i.is_pending() && !i.parked)?;
                    match waits_on {
                        true => Some((call.id.clone(), None)),
                        false => Some((call.id.clone(), Some(agent.told_when_lost(&interaction.request)?))),
                    }
                }
                Block::Text { .. } | Block::Image(_) | Block::File(_) => None,
            })
            .collect();
        let parked = lost.iter().any(|(_, told)| told.is_none());
        for (tool_use_id, told) in lost {
            let event = match told {
                Some(told) => {
                    EventBody::InteractionResolved { tool_use_id, outcome: InteractionOutcome::Lost { told } }
                }
                None => EventBody::InteractionParked { tool_use_id },
            };
            runtime.append_locked(self.store(), state, event).await?;
        }
        if parked {
            // The agent waits on for the person: its turn is paused, not cut short.
            let ended = EventBody::TurnEnded { outcome: TurnOutcome::Parked, usage: None };
            runtime.append_locked(self.store(), state, ended).await?;
            self.log.list_changed();
            return Ok(());
        }
        let ended = EventBody::TurnEnded { outcome: TurnOutcome::Abandoned, usage: None };
        runtime.append_locked(self.store(), state, ended).await?;
        // A resume cut short did not give the agent the person's answers: it starts again.
        let then = match state.thread.next_turn() {
            Some(NextTurn::Resume) => "The agent starts again with your answer.",
            Some(NextTurn::Messages) => "What you queued goes to the agent now.",
            None => "Send a message to continue.",
        };
        let text = format!("{what} while the agent was working, so that turn was cut short. {then}");
        let notice = EventBody::Notice { message_id: new_id(), text };
        runtime.append_locked(self.store(), state, notice).await?;
        self.log.list_changed();
        Ok(())
    }
}
