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
pub use crate::server::conversation::{
    ChatMessage, Completion, CompletionRequest, ToolCallRequest, ToolSpec,
};

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
}

/// Receives streamed assistant text as it arrives (becomes transient `assistant_delta` events).
pub type DeltaSink<'a> = &'a (dyn Fn(&str) + Send + Sync);

#[async_trait]
pub trait Provider: Send + Sync {
    /// A short name for logs and the config page.
    fn name(&self) -> &str;

    /// Runs one model call over the whole conversation so far. Streams text through `deltas`;
    /// returns promptly with `ProviderError::Cancelled` once `cancel` fires.
    async fn complete(
        &self,
        request: &CompletionRequest,
        deltas: DeltaSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError>;
}
