//! One turn of the agent loop: ask the model, record what it says, run the tools it calls,
//! feed the results back, until it answers without tool calls, fails, or is cancelled.
//!
//! **Invariant:** a tool runs only after its `tool_call` and `tool_started` are committed, so a
//! crash mid-tool leaves evidence in the log rather than a silent re-run on restart.

use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use tokio_util::sync::CancellationToken;

use super::provider::{ChatMessage, CompletionRequest, ProviderError, ToolCallRequest};
use super::running::TurnLease;
use super::tools::{self, ToolContext};
use super::{SYSTEM_PROMPT, class_of, conversation_from_log, tool_result_text};
use crate::protocol::{EventBody, Mode, ToolStatus, TurnStatus, Verdict};
use crate::server::core::Core;
use crate::server::markdown;
use crate::server::store::{NewEvent, StoreError};

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
        let (status, error) = match outcome {
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
            .append_then(&session_id, vec![finished], None, release)
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
    #[allow(dead_code)] // the policy reads it once gates land
    mode: Mode,
}

impl Turn {
    async fn append(&self, bodies: Vec<EventBody>) -> Result<(), TurnEnd> {
        let events = bodies
            .into_iter()
            .map(|b| NewEvent::new(Some(&self.turn_id), b))
            .collect();
        self.core.log.append(&self.session_id, events, None).await?;
        Ok(())
    }

    async fn drive(&self) -> Result<(), TurnEnd> {
        let history = self.core.log.all_events(&self.session_id).await?;
        let mut messages = vec![ChatMessage::System(SYSTEM_PROMPT.to_owned())];
        messages.extend(conversation_from_log(&history));
        let tools = tools::specs();
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

    /// Records the batch's calls, then runs them (in parallel when the model asked for several).
    async fn run_batch(&self, calls: &[ToolCallRequest]) -> Result<Vec<ChatMessage>, TurnEnd> {
        self.append(
            calls
                .iter()
                .map(|call| EventBody::ToolCall {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    args: call.args.clone(),
                    class: class_of(&call.name),
                    verdict: Verdict::Run,
                    rule_id: None,
                })
                .collect(),
        )
        .await?;
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

    async fn run_one(&self, call: &ToolCallRequest) -> Result<(ToolStatus, String), TurnEnd> {
        let (status, output) = if self.cancel.is_cancelled() {
            (
                ToolStatus::Cancelled,
                "the turn was cancelled before this ran".to_owned(),
            )
        } else if tools::class_of(&call.name).is_none() {
            (ToolStatus::Error, unavailable(&call.name))
        } else {
            self.append(vec![EventBody::ToolStarted {
                call_id: call.id.clone(),
            }])
            .await?;
            let output = tools::execute(&call.name, &call.args, &self.tool_context()).await;
            (output.status, output.output)
        };
        self.append(vec![EventBody::ToolResult {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            status,
            output: output.clone(),
        }])
        .await?;
        Ok((status, output))
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
