//! The `Provider` trait: one model call, streamed. The agent loop knows nothing else about models.
//!
//! Implementations: `demo` (the offline command language), `openai` (any OpenAI-compatible
//! chat-completions endpoint), `scripted` (tests drive a turn step by step).

pub mod demo;
pub mod openai;
#[cfg(test)]
mod openai_tests;
pub mod scripted;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

// The conversation types, where provider code has always found them.
pub use crate::server::conversation::tokens::Tokenizer;
pub use crate::server::conversation::{
    ChatMessage, Completion, CompletionRequest, ToolCallRequest, ToolSpec,
};

/// What one request to a provider's model may hold: its context window and how its tokens
/// are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub context_tokens: u64,
    pub tokenizer: Tokenizer,
}

impl Window {
    /// The tokens a request may take: the window less room for the answer.
    pub fn budget(&self) -> u64 {
        let reserve = crate::server::conversation::tokens::answer_reserve(self.context_tokens);
        self.context_tokens.saturating_sub(reserve)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("the model call was cancelled")]
    Cancelled,
    #[error("the model endpoint could not be reached: {0}")]
    Transport(String),
    #[error("the model endpoint answered {status}: {body}")]
    Http { status: u16, body: String },
    #[error("the model's answer could not be read: {0}")]
    Protocol(String),
    #[error("provider misconfigured: {0}")]
    Config(String),
    /// The endpoint refused the request as longer than the model's context window (`limit`:
    /// the window it named, if it did). The turn compacts and tries once more.
    #[error("the conversation is too long for the model: {message}")]
    ContextTooLong { limit: Option<u64>, message: String },
}

/// Receives streamed assistant text as it arrives (becomes transient `assistant_delta` events).
pub type DeltaSink<'a> = &'a (dyn Fn(&str) + Send + Sync);

#[async_trait]
pub trait Provider: Send + Sync {
    /// A short name for logs and the config page.
    fn name(&self) -> &str;

    /// The model's context window, when what is sent must be fitted to one (`None`: the
    /// conversation goes whole, as to the demo, which reads only the current turn).
    fn window(&self) -> Option<Window> {
        None
    }

    /// Runs one model call over the conversation it is given. Streams text through `deltas`;
    /// returns promptly with `ProviderError::Cancelled` once `cancel` fires.
    async fn complete(
        &self,
        request: &CompletionRequest,
        deltas: DeltaSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError>;
}
