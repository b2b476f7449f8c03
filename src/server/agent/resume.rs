//! Finishing the calls a turn had recorded before the process stopped: the part of a turn
//! that makes it resumable from the log alone.
//!
//! For each `tool_call` of the turn without a `tool_result`: a gate already resolved is acted
//! on (unless the answer committed `tool_started` with it: then it counts as started); a gate
//! still pending is re-joined with its original deadline (an expired one resolves
//! `timeout` at once); a call whose run verdict was committed but that never started runs now
//! (nothing of it happened: `tool_started` is committed before a tool runs); a call that had
//! started — gated or not — is reported `interrupted` and never re-run.

use std::collections::{HashMap, HashSet};

use futures::future::join_all;

use super::recovery::INTERRUPTED_OUTPUT;
use super::turn::{Turn, TurnEnd};
use crate::protocol::{
    ApprovalId, ApprovalRequest, ApprovalRequestBody, CallId, EventBody, Resolution, RuleId,
    ToolClass, ToolStatus, Verdict,
};
use crate::server::provider::ToolCallRequest;

/// The key under which the turn's latest budget card sits in `gates` (`None` when it has none).
fn budget_key(gates: &HashMap<CallId, ApprovalRequestBody>) -> Option<CallId> {
    gates
        .iter()
        .filter(|(_, g)| g.kind.is_budget_stop())
        .max_by_key(|(_, g)| g.created_at.unix_ms())
        .map(|(k, _)| k.clone())
}

/// A recorded call that has no result yet, with what the log knows about it.
struct OpenCall {
    call: ToolCallRequest,
    verdict: Verdict,
    /// Its class and the rule that let it run, as recorded (a run is decided again).
    class: ToolClass,
    rule_id: Option<RuleId>,
    started: bool,
    gate: Option<ApprovalRequestBody>,
    resolution: Option<Resolution>,
}

/// A recorded call, with its verdict, class and the rule that let it run.
type RecordedCall = (ToolCallRequest, (Verdict, ToolClass, Option<RuleId>));

/// What the log holds of a turn's calls: each call with its verdict, those finished or
/// started, the cards (by call) and their answers.
#[derive(Default)]
struct TurnRecord {
    calls: Vec<RecordedCall>,
    finished: HashSet<CallId>,
    started: HashSet<CallId>,
    gates: HashMap<CallId, ApprovalRequestBody>,
    resolutions: HashMap<ApprovalId, Resolution>,
}

impl TurnRecord {
    fn read(events: &[crate::protocol::Event]) -> TurnRecord {
        let mut record = TurnRecord::default();
        for event in events {
            match &event.body {
                EventBody::ToolCall {
                    call_id,
                    tool,
                    args,
                    verdict,
                    class,
                    rule_id,
                    ..
                } => record.calls.push((
                    ToolCallRequest {
                        id: call_id.clone(),
                        name: tool.clone(),
                        args: args.clone(),
                    },
                    (*verdict, *class, rule_id.clone()),
                )),
                EventBody::ToolResult { call_id, .. } => {
                    record.finished.insert(call_id.clone());
                }
                EventBody::ToolStarted { call_id } => {
                    record.started.insert(call_id.clone());
                }
                EventBody::ApprovalRequest(body) => {
                    record.gates.insert(body.call_id.clone(), (**body).clone());
                }
                EventBody::ApprovalResolved(resolution) => {
                    record
                        .resolutions
                        .insert(resolution.approval_id.clone(), resolution.clone());
                }
                _ => {}
            }
        }
        record
    }

    /// The calls without a result, each with its card and answer (taken out of the record).
    fn open_calls(&mut self) -> Vec<OpenCall> {
        let calls = std::mem::take(&mut self.calls);
        calls
            .into_iter()
            .filter(|(call, _)| !self.finished.contains(&call.id))
            .map(|(call, (verdict, class, rule_id))| {
                let gate = self.gates.remove(&call.id);
                let resolution = gate
                    .as_ref()
                    .and_then(|g| self.resolutions.remove(&g.approval_id));
                OpenCall {
                    started: self.started.contains(&call.id),
                    call,
                    verdict,
                    class,
                    rule_id,
                    gate,
                    resolution,
                }
            })
            .collect()
    }
}

impl Turn {
    pub(super) async fn finish_open_calls(&self) -> Result<(), TurnEnd> {
        let hub = &self.deps.hub;
        let events = match hub
            .history(&self.session_id, |h| h.current_turn_from())
            .await?
        {
            Some(from) => {
                hub.events_since(&self.session_id, from.saturating_sub(1))
                    .await?
            }
            None => Vec::new(),
        };
        let mut record = TurnRecord::read(&events);
        // A budget card left open: wait for it (or act on its answer) before anything else.
        let budget_gate = budget_key(&record.gates).and_then(|key| record.gates.remove(&key));
        let open = record.open_calls();
        if let Some(body) = budget_gate {
            let answered = record.resolutions.remove(&body.approval_id);
            self.settle_budget_card(body, answered).await?;
        }
        if open.is_empty() {
            return Ok(());
        }
        tracing::info!(session = %self.session_id, calls = open.len(), "resuming a turn's open calls");
        for outcome in join_all(open.into_iter().map(|o| self.finish_open_call(o))).await {
            outcome?;
        }
        Ok(())
    }

    /// A budget card the turn left open: its answer (waited for, when there is none yet)
    /// lets the turn go on, or ends it stopped or cancelled.
    async fn settle_budget_card(
        &self,
        body: ApprovalRequestBody,
        answered: Option<Resolution>,
    ) -> Result<(), TurnEnd> {
        let resolution = match answered {
            Some(resolution) => resolution,
            None => {
                let gate = ApprovalRequest {
                    reviewer_concern: None,
                    route_state: None,
                    turn_id: self.turn_id.clone(),
                    body,
                };
                self.rejoin_gate(&gate).await?
            }
        };
        match resolution.decision {
            d if d.lets_it_run() => Ok(()),
            crate::protocol::Decision::Cancelled => Err(TurnEnd::Cancelled),
            _ => Err(TurnEnd::Stopped),
        }
    }

    async fn finish_open_call(&self, open: OpenCall) -> Result<(), TurnEnd> {
        let call = &open.call;
        // Started means it may have done its work: whatever its gate said, never run it again.
        if open.started {
            self.finish_without_running(
                call,
                Vec::new(),
                ToolStatus::Interrupted,
                INTERRUPTED_OUTPUT.to_owned(),
            )
            .await?;
            return Ok(());
        }
        match (open.gate, open.resolution) {
            (Some(body), resolution) => {
                let gate = ApprovalRequest {
                    reviewer_concern: None,
                    route_state: None,
                    turn_id: self.turn_id.clone(),
                    body,
                };
                let resolution = match resolution {
                    Some(resolution) => resolution,
                    None => self.rejoin_gate(&gate).await?,
                };
                self.after_gate(call, &gate, resolution).await?;
            }
            (None, _) if open.verdict == Verdict::Run => {
                // Decided again: the step-up may have been turned on before this start.
                self.execute_unasked(call, open.class, open.rule_id.as_ref())
                    .await?;
            }
            (None, _) => {
                self.finish_without_running(
                    call,
                    Vec::new(),
                    ToolStatus::Cancelled,
                    "the server stopped before this ran; it was not run".to_owned(),
                )
                .await?;
            }
        }
        Ok(())
    }
}
