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

use super::provider::ToolCallRequest;
use super::recovery::INTERRUPTED_OUTPUT;
use super::turn::{Turn, TurnEnd};
use crate::protocol::{
    ApprovalId, ApprovalRequest, ApprovalRequestBody, CallId, EventBody, Resolution, RuleId,
    ToolClass, ToolStatus, Verdict,
};

/// The key under which the turn's latest budget card sits in `gates` (`None` when it has none).
fn budget_key(gates: &HashMap<CallId, ApprovalRequestBody>) -> Option<CallId> {
    gates
        .iter()
        .filter(|(_, g)| g.kind == crate::protocol::GateKind::Budget)
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
        let mut calls = Vec::new();
        let mut finished = HashSet::new();
        let mut started = HashSet::new();
        let mut gates: HashMap<CallId, ApprovalRequestBody> = HashMap::new();
        let mut resolutions: HashMap<ApprovalId, Resolution> = HashMap::new();
        for event in &events {
            match &event.body {
                EventBody::ToolCall {
                    call_id,
                    tool,
                    args,
                    verdict,
                    class,
                    rule_id,
                    ..
                } => calls.push((
                    ToolCallRequest {
                        id: call_id.clone(),
                        name: tool.clone(),
                        args: args.clone(),
                    },
                    (*verdict, *class, rule_id.clone()),
                )),
                EventBody::ToolResult { call_id, .. } => {
                    finished.insert(call_id.clone());
                }
                EventBody::ToolStarted { call_id } => {
                    started.insert(call_id.clone());
                }
                EventBody::ApprovalRequest(body) => {
                    gates.insert(body.call_id.clone(), (**body).clone());
                }
                EventBody::ApprovalResolved(resolution) => {
                    resolutions.insert(resolution.approval_id.clone(), resolution.clone());
                }
                _ => {}
            }
        }
        // A budget card left open: wait for it (or act on its answer) before anything else.
        let budget_gate = budget_key(&gates).and_then(|key| gates.remove(&key));
        let open: Vec<OpenCall> = calls
            .into_iter()
            .filter(|(call, _)| !finished.contains(&call.id))
            .map(|(call, (verdict, class, rule_id))| {
                let gate = gates.remove(&call.id);
                let resolution = gate
                    .as_ref()
                    .and_then(|g| resolutions.remove(&g.approval_id));
                OpenCall {
                    started: started.contains(&call.id),
                    call,
                    verdict,
                    class,
                    rule_id,
                    gate,
                    resolution,
                }
            })
            .collect();
        if let Some(body) = budget_gate {
            let resolution = match resolutions.remove(&body.approval_id) {
                Some(resolution) => resolution,
                None => {
                    let gate = ApprovalRequest {
                        turn_id: self.turn_id.clone(),
                        body,
                    };
                    self.rejoin_gate(&gate).await?
                }
            };
            match resolution.decision {
                d if d.lets_it_run() => {}
                crate::protocol::Decision::Cancelled => return Err(TurnEnd::Cancelled),
                _ => return Err(TurnEnd::Stopped),
            }
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
