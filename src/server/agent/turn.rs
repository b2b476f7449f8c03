//! One turn of the agent loop: ask the model, record what it says, run the tools it calls,
//! feed the results back, until it answers without tool calls, fails, or is cancelled.
//!
//! **Invariant:** a tool runs only after its `tool_call` and `tool_started` are committed, so a
//! crash mid-tool leaves evidence in the log rather than a silent re-run on restart.

use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use tokio_util::sync::CancellationToken;

use super::gates_text;
use super::provider::{ChatMessage, CompletionRequest, ProviderError, ToolCallRequest};
use super::running::TurnLease;
use super::tools::{self, ToolContext};
use super::{
    CHECKPOINT_PROMPT, SYSTEM_PROMPT, checkpoint_spec, class_of, conversation_from_log,
    tool_result_text,
};
use crate::protocol::{
    AnsweredBy, ApprovalRequest, Decision, EventBody, GateKind, Mode, Resolution, ToolClass,
    ToolStatus, TurnStatus, Verdict,
};
use crate::server::core::Core;
use crate::server::gate::policy::{self, Outcome};
use crate::server::gate::request;
use crate::server::markdown;
use crate::server::store::{Commit, GateChange, NewEvent, StoreError};

/// The agent's checkpoint tool: a decision put to the person.
pub const CHECKPOINT_TOOL: &str = "request_approval";

/// A safety stop for runaway loops until the budget kill-switch lands.
const MAX_MODEL_CALLS: usize = 200;

/// Why a turn ended other than by completing.
#[derive(Debug, thiserror::Error)]
enum TurnEnd {
    #[error("cancelled")]
    Cancelled,
    #[error("{0}")]
    Failed(String),
}

impl From<StoreError> for TurnEnd {
    fn from(err: StoreError) -> Self {
        TurnEnd::Failed(format!("could not record the turn: {err}"))
    }
}

impl From<ProviderError> for TurnEnd {
    fn from(err: ProviderError) -> Self {
        match err {
            ProviderError::Cancelled => TurnEnd::Cancelled,
            other => TurnEnd::Failed(other.to_string()),
        }
    }
}

/// Starts the turn task. It owns the lease, so the session is released however it ends.
pub fn spawn(core: Arc<Core>, session_id: String, lease: TurnLease, mode: Mode) {
    tokio::spawn(async move {
        let turn = Turn {
            core: core.clone(),
            session_id: session_id.clone(),
            turn_id: lease.turn_id.clone(),
            cancel: lease.cancel.clone(),
            mode,
        };
        let outcome = turn.drive().await;
        let cancel_requested = core.turns.seal(&session_id, &lease.turn_id);
        let (status, error) = match outcome {
            Ok(()) if cancel_requested => (TurnStatus::Cancelled, None),
            Ok(()) => (TurnStatus::Completed, None),
            Err(TurnEnd::Cancelled) => (TurnStatus::Cancelled, None),
            Err(TurnEnd::Failed(message)) => {
                tracing::warn!(session = %session_id, turn = %lease.turn_id, %message, "turn failed");
                (TurnStatus::Failed, Some(message))
            }
        };
        let finished = NewEvent::new(
            Some(&lease.turn_id),
            EventBody::TurnFinished { status, error },
        );
        let release = || core.turns.finish(&session_id, &lease.turn_id);
        if let Err(err) = core
            .log
            .commit(&session_id, vec![finished], Commit::default(), release)
            .await
        {
            tracing::error!(session = %session_id, error = %err, "could not record turn_finished");
            core.turns.finish(&session_id, &lease.turn_id);
        }
        drop(lease);
    });
}

struct Turn {
    core: Arc<Core>,
    session_id: String,
    turn_id: String,
    cancel: CancellationToken,
    mode: Mode,
}

impl Turn {
    async fn append(&self, bodies: Vec<EventBody>) -> Result<(), TurnEnd> {
        self.commit(bodies, Commit::default()).await
    }

    async fn commit(&self, bodies: Vec<EventBody>, commit: Commit) -> Result<(), TurnEnd> {
        let events = bodies
            .into_iter()
            .map(|b| NewEvent::new(Some(&self.turn_id), b))
            .collect();
        self.core
            .log
            .commit(&self.session_id, events, commit, || ())
            .await?;
        Ok(())
    }

    async fn drive(&self) -> Result<(), TurnEnd> {
        let history = self.core.log.all_events(&self.session_id).await?;
        let checkpoints = self.mode != Mode::Yolo;
        let mut prompt = SYSTEM_PROMPT.to_owned();
        let mut tools = tools::specs();
        if checkpoints {
            prompt.push_str(CHECKPOINT_PROMPT);
            tools.push(checkpoint_spec());
        }
        let mut messages = vec![ChatMessage::System(prompt)];
        messages.extend(conversation_from_log(&history));
        for _ in 0..MAX_MODEL_CALLS {
            if self.cancel.is_cancelled() {
                return Err(TurnEnd::Cancelled);
            }
            let request = CompletionRequest {
                messages: messages.clone(),
                tools: tools.clone(),
            };
            let sink = |text: &str| {
                self.core.log.publish_transient(
                    &self.session_id,
                    Some(&self.turn_id),
                    EventBody::AssistantDelta {
                        text: text.to_owned(),
                    },
                )
            };
            let completion = self
                .core
                .provider
                .complete(&request, &sink, &self.cancel)
                .await?;
            if !completion.text.trim().is_empty() {
                let html = markdown::render(&completion.text);
                self.append(vec![EventBody::AssistantMessage {
                    text: completion.text.clone(),
                    html,
                }])
                .await?;
            }
            messages.push(ChatMessage::Assistant {
                text: completion.text.clone(),
                tool_calls: completion.tool_calls.clone(),
            });
            if completion.tool_calls.is_empty() {
                return Ok(());
            }
            let results = self.run_batch(&completion.tool_calls).await?;
            messages.extend(results);
            if self.cancel.is_cancelled() {
                return Err(TurnEnd::Cancelled);
            }
        }
        Err(TurnEnd::Failed(format!(
            "the agent made {MAX_MODEL_CALLS} model calls in one turn without finishing"
        )))
    }

    /// Runs the batch's calls (in parallel when the model asked for several: several gates
    /// then wait side by side, one card each).
    async fn run_batch(&self, calls: &[ToolCallRequest]) -> Result<Vec<ChatMessage>, TurnEnd> {
        let outcomes = join_all(calls.iter().map(|call| self.run_one(call))).await;
        let mut messages = Vec::with_capacity(calls.len());
        for (call, outcome) in calls.iter().zip(outcomes) {
            let (status, output) = outcome?;
            messages.push(ChatMessage::Tool {
                call_id: call.id.clone(),
                output: tool_result_text(status, &output),
            });
        }
        Ok(messages)
    }

    /// One call: the policy decides; a gated call waits for its resolution first.
    async fn run_one(&self, call: &ToolCallRequest) -> Result<(ToolStatus, String), TurnEnd> {
        let class = class_of(&call.name);
        let record_call = |verdict: Verdict, rule_id: Option<String>| EventBody::ToolCall {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            args: call.args.clone(),
            class,
            verdict,
            rule_id,
        };
        if self.cancel.is_cancelled() {
            return self
                .finish_without_running(
                    call,
                    vec![record_call(Verdict::Refuse, None)],
                    ToolStatus::Cancelled,
                    "the turn was cancelled before this ran".into(),
                )
                .await;
        }
        let checkpoint = if call.name == CHECKPOINT_TOOL {
            Some(request::parse_checkpoint(&call.args))
        } else {
            None
        };
        let invalid = match &checkpoint {
            Some(parsed) => parsed.as_ref().err().cloned(),
            None if tools::class_of(&call.name).is_none() => Some(unavailable(&call.name)),
            None => tools::validate(&call.name, &call.args, &self.core.workspace)
                .err()
                .map(|e| e.to_string()),
        };
        if let Some(problem) = invalid {
            return self
                .finish_without_running(
                    call,
                    vec![record_call(Verdict::Refuse, None)],
                    ToolStatus::Error,
                    problem,
                )
                .await;
        }
        let floor = match class {
            ToolClass::Decision => None,
            _ => self.core.floor.check(&call.name, &call.args),
        };
        let rule = match (floor.is_some(), class, self.mode) {
            (
                false,
                ToolClass::Edit | ToolClass::Exec | ToolClass::Config,
                Mode::Ask | Mode::AutoEdit,
            ) => {
                self.core
                    .matching_rule(&self.session_id, &call.name, &call.args)
                    .await?
            }
            _ => None,
        };
        let outcome = policy::decide(&policy::Call {
            mode: self.mode,
            class,
            floor: floor.as_deref(),
            rule_id: rule.as_ref().map(|r| r.id.as_str()),
        });
        match outcome {
            Outcome::Refuse { why } => {
                self.finish_without_running(
                    call,
                    vec![record_call(Verdict::Refuse, None)],
                    ToolStatus::Refused,
                    why,
                )
                .await
            }
            Outcome::Run { rule_id } => {
                let commit = Commit {
                    rule_used: rule_id.clone(),
                    ..Commit::default()
                };
                self.commit(vec![record_call(Verdict::Run, rule_id)], commit)
                    .await?;
                self.execute(call, &call.args).await
            }
            Outcome::Ask { reason } => {
                let detail = policy::reason_detail(reason, self.mode, class, floor.as_deref());
                let common = request::Common {
                    approval_id: uuid::Uuid::new_v4().to_string(),
                    session_id: self.session_id.clone(),
                    reason,
                    reason_detail: detail,
                    created_at: chrono::Utc::now(),
                    timeout: Duration::from_secs(self.core.config.approvals.timeout_secs),
                };
                let body = match checkpoint {
                    Some(Ok(checkpoint)) => request::decision_gate(
                        common,
                        call,
                        &checkpoint,
                        self.core.config.approvals.decision_timeout,
                    ),
                    _ => request::tool_gate(common, call, class, &self.core.workspace),
                };
                let gate = ApprovalRequest {
                    turn_id: self.turn_id.clone(),
                    body,
                };
                let resolution = self
                    .wait_for_gate(record_call(Verdict::Ask, None), gate.clone())
                    .await?;
                self.after_gate(call, &gate, resolution).await
            }
        }
    }

    /// Records the call and a result without running anything.
    async fn finish_without_running(
        &self,
        call: &ToolCallRequest,
        mut events: Vec<EventBody>,
        status: ToolStatus,
        output: String,
    ) -> Result<(ToolStatus, String), TurnEnd> {
        events.push(EventBody::ToolResult {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            status,
            output: output.clone(),
        });
        self.append(events).await?;
        Ok((status, output))
    }

    /// Runs a tool: `tool_started` is committed first, so a crash leaves evidence.
    async fn execute(
        &self,
        call: &ToolCallRequest,
        args: &serde_json::Value,
    ) -> Result<(ToolStatus, String), TurnEnd> {
        self.append(vec![EventBody::ToolStarted {
            call_id: call.id.clone(),
        }])
        .await?;
        let output = tools::execute(&call.name, args, &self.tool_context()).await;
        self.append(vec![EventBody::ToolResult {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            status: output.status,
            output: output.output.clone(),
        }])
        .await?;
        Ok((output.status, output.output))
    }

    /// Opens the gate (call + request in one commit) and waits for the resolution that stands:
    /// a person's, the deadline's, or the cancel's — whichever wins the compare-and-set.
    async fn wait_for_gate(
        &self,
        call_event: EventBody,
        gate: ApprovalRequest,
    ) -> Result<Resolution, TurnEnd> {
        // Park before the request is visible, so an instant answer finds the waiter.
        let (_parked, answer) = self.core.gates.park(&gate.body.approval_id);
        let deadline = tokio::time::Instant::now()
            + Duration::from_secs(self.core.config.approvals.timeout_secs);
        let commit = Commit {
            gate: Some(GateChange::Open(Box::new(gate.clone()))),
            ..Commit::default()
        };
        self.commit(
            vec![
                call_event,
                EventBody::ApprovalRequest(Box::new(gate.body.clone())),
            ],
            commit,
        )
        .await?;
        let resolution = tokio::select! {
            answered = answer => match answered {
                Ok(resolution) => resolution,
                // The sender went away without an answer; read what the store says.
                Err(_) => self.core.resolve_by_server(&self.session_id, &gate, Decision::Cancelled, AnsweredBy::System).await?,
            },
            _ = tokio::time::sleep_until(deadline) => {
                self.core.resolve_by_server(&self.session_id, &gate, Decision::Timeout, AnsweredBy::Timeout).await?
            }
            _ = self.cancel.cancelled() => {
                self.core.resolve_by_server(&self.session_id, &gate, Decision::Cancelled, AnsweredBy::System).await?
            }
        };
        Ok(resolution)
    }

    /// Acts on a gate's resolution: run (as shown or as edited), or say why not.
    async fn after_gate(
        &self,
        call: &ToolCallRequest,
        gate: &ApprovalRequest,
        resolution: Resolution,
    ) -> Result<(ToolStatus, String), TurnEnd> {
        let minutes = self.core.config.approvals.timeout_secs.div_ceil(60);
        let no_run = |status: ToolStatus, output: String| async move {
            self.finish_without_running(call, Vec::new(), status, output)
                .await
        };
        if gate.body.kind == GateKind::Decision {
            let (status, output) = gates_text::decision_outcome(gate, &resolution, minutes);
            return no_run(status, output).await;
        }
        match resolution.decision {
            Decision::Approve | Decision::AllowAlways => self.execute(call, &call.args).await,
            Decision::Edit => {
                let edited = resolution
                    .edits
                    .clone()
                    .unwrap_or_else(|| call.args.clone());
                self.execute(call, &edited).await
            }
            Decision::Deny => {
                no_run(
                    ToolStatus::Denied,
                    gates_text::denied(resolution.reason.as_deref()),
                )
                .await
            }
            Decision::Timeout => {
                no_run(
                    ToolStatus::Timeout,
                    format!("no answer within {minutes} min; the call was not run"),
                )
                .await
            }
            Decision::Cancelled => {
                no_run(
                    ToolStatus::Cancelled,
                    "the turn was cancelled while this waited for approval; it was not run".into(),
                )
                .await
            }
        }
    }

    fn tool_context(&self) -> ToolContext {
        let config = &self.core.config.tools;
        ToolContext {
            workspace: self.core.workspace.clone(),
            shell_timeout: Duration::from_secs(config.shell_timeout_secs),
            output_limit: config.output_limit_bytes,
            cancel: self.cancel.clone(),
        }
    }
}

fn unavailable(tool: &str) -> String {
    format!(
        "unknown tool `{tool}`; available tools: read_file, list_files, search, write_file, edit_file, shell"
    )
}
