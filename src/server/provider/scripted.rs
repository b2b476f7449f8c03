//! A provider that replays a script, for tests that need exact model behaviour (a stalled
//! call, a failure, chosen tool calls) through the same trait the real providers implement.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{
    ChatMessage, Completion, CompletionRequest, DeltaSink, Provider, ProviderError, Window,
};

#[derive(Clone, Debug)]
pub enum ScriptStep {
    /// Stream the text as one delta, then return the completion.
    Reply(Completion),
    /// Never answer; only cancellation ends the call.
    Stall,
    /// Fail with a transport error carrying this message.
    Fail(String),
    /// Refuse the request as too long for the model, as an endpoint does (naming its window,
    /// or not).
    TooLong(Option<u64>),
}

#[derive(Default)]
pub struct ScriptedProvider {
    steps: Mutex<VecDeque<ScriptStep>>,
    /// What each call was sent, in call order.
    seen: Mutex<Vec<Vec<Arc<ChatMessage>>>>,
    /// The window it says its model has (none: it is sent the whole conversation).
    window: Option<Window>,
}

impl ScriptedProvider {
    pub fn new(steps: impl IntoIterator<Item = ScriptStep>) -> Self {
        ScriptedProvider {
            steps: Mutex::new(steps.into_iter().collect()),
            seen: Mutex::new(Vec::new()),
            window: None,
        }
    }

    /// The same script, with a model whose requests are fitted to `window`.
    pub fn with_window(mut self, window: Window) -> Self {
        self.window = Some(window);
        self
    }

    /// The number of messages each call received, in call order.
    pub fn calls(&self) -> Vec<usize> {
        self.requests().iter().map(Vec::len).collect()
    }

    /// The messages each call received, in call order.
    pub fn requests(&self) -> Vec<Vec<Arc<ChatMessage>>> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

#[async_trait]
impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    fn window(&self) -> Option<Window> {
        self.window
    }

    async fn complete(
        &self,
        request: &CompletionRequest,
        deltas: DeltaSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        if let Ok(mut seen) = self.seen.lock() {
            seen.push(request.messages.clone());
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
            ScriptStep::TooLong(limit) => Err(ProviderError::ContextTooLong {
                limit,
                message: "the request exceeds the model's context (scripted)".into(),
            }),
        }
    }
}
