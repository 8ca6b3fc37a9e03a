//! The bridge's ledger is the session's log: an interaction is opened, parked and settled by an
//! event appended under the session's lock, judged against the thread as stored, so that two
//! answers to one card (two tabs, two servers) make one outcome.

use futures::future::BoxFuture;

use super::log::SessionLog;
use super::runtime::Judged;
use crate::bridge::{Deadlines, Elsewhere, Ledger, Verdict};
use crate::error::AppError;
use crate::interaction::{Interaction, InteractionOutcome, InteractionRequest};
use crate::thread::{EventBody, Thread};

impl Ledger for SessionLog {
    fn open<'a>(
        &'a self,
        session: &'a str,
        tool_use_id: &'a str,
        request: InteractionRequest,
        expires_at_ms: Option<i64>,
    ) -> BoxFuture<'a, Result<Option<InteractionOutcome>, AppError>> {
        Box::pin(async move {
            let runtime = self.runtime(session).await?;
            let mut state = runtime.lock().await;
            let decided = runtime
                .append_judged(self.store(), &mut state, |thread| {
                    let existing = thread.tool_call(tool_use_id).and_then(|call| call.interaction.as_ref());
                    Ok::<_, AppError>(match existing.and_then(|interaction| interaction.outcome.clone()) {
                        Some(decided) => Judged::Done(Some(decided)),
                        // New, or asked again by a resumed agent (then it is no longer parked,
                        // and keeps the deadline it had).
                        None => Judged::Append(
                            EventBody::InteractionOpened {
                                tool_use_id: tool_use_id.to_string(),
                                request: request.clone(),
                                expires_at_ms: existing.map_or(expires_at_ms, |open| open.expires_at_ms),
                            },
                            None,
                        ),
                    })
                })
                .await?;
            drop(state);
            if decided.is_none() {
                self.list_changed();
            }
            Ok(decided)
        })
    }

    fn park<'a>(
        &'a self,
        session: &'a str,
        tool_use_id: &'a str,
        parked: &'a (dyn Fn() + Send + Sync),
    ) -> BoxFuture<'a, Result<Option<InteractionOutcome>, AppError>> {
        Box::pin(async move {
            let runtime = self.runtime(session).await?;
            let mut state = runtime.lock().await;
            let decided = runtime
                .append_judged(self.store(), &mut state, |thread| {
                    Ok::<_, AppError>(match &interaction_of(thread, tool_use_id)?.outcome {
                        Some(decided) => Judged::Done(Some(decided.clone())),
                        None => {
                            Judged::Append(EventBody::InteractionParked { tool_use_id: tool_use_id.to_string() }, None)
                        }
                    })
                })
                .await?;
            if decided.is_none() {
                // Still under the lock: an answer finds either the waiter or the park.
                parked();
            }
            Ok(decided)
        })
    }

    fn settle<'a>(
        &'a self,
        session: &'a str,
        tool_use_id: &'a str,
        judge: &'a (dyn Fn(&Interaction, Elsewhere) -> Verdict + Send + Sync),
        recorded: &'a (dyn Fn(&InteractionOutcome) + Send + Sync),
    ) -> BoxFuture<'a, Result<Verdict, AppError>> {
        Box::pin(async move {
            let elsewhere = Elsewhere(self.leases().held_elsewhere(session).await?);
            let runtime = self.runtime(session).await?;
            let mut state = runtime.lock().await;
            // Judged against the log as this server has it, and written only if the log is still
            // there; else judged again with what came. Across servers, exactly one outcome is
            // recorded.
            let verdict = runtime
                .append_judged(self.store(), &mut state, |thread| {
                    let verdict = judge(interaction_of(thread, tool_use_id)?, elsewhere);
                    Ok::<_, AppError>(match &verdict.record {
                        Some(outcome) => Judged::Append(
                            EventBody::InteractionResolved {
                                tool_use_id: tool_use_id.to_string(),
                                outcome: outcome.clone(),
                            },
                            verdict,
                        ),
                        None => Judged::Done(verdict),
                    })
                })
                .await?;
            if let Some(outcome) = &verdict.record {
                recorded(outcome);
                drop(state);
                self.list_changed();
            }
            Ok(verdict)
        })
    }

    fn deadlines(&self, now_ms: i64, limit: u32) -> BoxFuture<'_, Result<Deadlines, AppError>> {
        Box::pin(async move { Ok(self.store().interaction_deadlines(now_ms, limit).await?) })
    }
}

/// The interaction of tool call `tool_use_id`, or why there is none.
fn interaction_of<'t>(thread: &'t Thread, tool_use_id: &str) -> Result<&'t Interaction, AppError> {
    thread
        .tool_call(tool_use_id)
        .and_then(|call| call.interaction.as_ref())
        .ok_or_else(|| AppError::InteractionNotFound { tool_use_id: tool_use_id.to_string() })
}
