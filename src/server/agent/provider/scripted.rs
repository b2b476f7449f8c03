//! A provider that replays a script, for tests that need exact model behaviour (a stalled
//! call, a failure, chosen tool calls) through the same trait the real providers implement.

use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{Completion, CompletionRequest, DeltaSink, Provider, ProviderError};

#[derive(Clone, Debug)]
pub enum ScriptStep {
    /// Stream the text as one delta, then return the completion.
    Reply(Completion),
    /// Never answer; only cancellation ends the call.
    Stall,
    /// Fail with a transport error carrying this message.
    Fail(String),
}

#[derive(Default)]
pub struct ScriptedProvider {
    steps: Mutex<VecDeque<ScriptStep>>,
    /// How many calls were made, and what each one was sent (message count).
    seen: Mutex<Vec<usize>>,
}

impl ScriptedProvider {
    pub fn new(steps: impl IntoIterator<Item = ScriptStep>) -> Self {
        ScriptedProvider {
            steps: Mutex::new(steps.into_iter().collect()),
            seen: Mutex::new(Vec::new()),
        }
    }

    /// The number of messages each call received, in call order.
    pub fn calls(&self) -> Vec<usize> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

#[async_trait]
impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn complete(
        &self,
        request: &CompletionRequest,
        deltas: DeltaSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        if let Ok(mut seen) = self.seen.lock() {
            seen.push(request.messages.len());
        }
        let step = self
            .steps
            .lock()
            .ok()
            .and_then(|mut s| s.pop_front())
            .unwrap_or(ScriptStep::Reply(Completion {
                text: "(script finished)".into(),
                ..Completion::default()
            }));
        match step {
            ScriptStep::Reply(completion) => {
                if !completion.text.is_empty() {
                    deltas(&completion.text);
                }
                Ok(completion)
            }
            ScriptStep::Stall => {
                cancel.cancelled().await;
                Err(ProviderError::Cancelled)
            }
            ScriptStep::Fail(message) => Err(ProviderError::Transport(message)),
        }
    }
}
